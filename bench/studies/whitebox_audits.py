"""White-box lower bounds for the leaderboard's private rows: what its "white-box eps_lb" column reads.

    python -m scripts.whitebox_audits [--datasets cora ...] [--pooled-datasets cora] [--out FILE] [--dry-run]
    python -m scripts.whitebox_audits --summary   # the ratio table of docs/audits.md, from the records

Per private cell of the config (its seed-0 run record, current settings only), one of:

* ``composed`` (GAP/ProGAP at edge and node level, EdgeRand, PrivGNN, PATE: every dataset): the mechanism-level
  audits of the record's own ledger events, composed as privacy-loss distributions
  (:func:`audits.composed.ledger_bound`); its claim is the record's own ledger's epsilon; events no composed bound
  covers (GAP's DP-SGD heads at node level) are named and left out, so the bound is for a subset of what the
  ledger pays for;
* ``pooled`` (the DP-SGD methods, on ``--pooled-datasets`` only: each is several full fits with a thousand
  canaries): the whole-run white-box audit (:mod:`audits.pooled`) of fresh runs of the method at the record's
  hyperparameters (its relation among them: DP-GNN's declared bound under ``input-graph``, with the canaries within
  it; a record older than the ``relation`` field ran Algorithm 1, ``in-edges``), dataset, split and budget; its ``claimed`` is those runs' ledgers' epsilon, and ``row_claimed``
  the recorded run's, which the page reads it against (saying which runs it measured);

Both bounds are recorded, each named for what it assumes: ``epsilon_lb_cp`` (assumption-free, Clopper-Pearson) and
``epsilon_lb_fdp`` (f-DP, ``fdp_assumes``), with their ratios to ``claimed``. One compact record per cell (kind
``whitebox-audit``) goes to ``--out``; resumable; the records name the clean commit that ran them.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import time
import uuid
from typing import Any

DEFAULT_OUT = "docs/leaderboard/attacks/whitebox.jsonl"
COMPOSED = ("gap-edge", "progap-edge", "gap-node", "progap-node", "edgerand", "privgnn", "pate-m", "pate-g")
POOLED = ("dp-mlp", "dp-mlp-feature", "drw", "drw-r", "drw-d", "dpgnn", "dpgnn-adam")
#: the record format: a new one re-audits every cell (2: both bounds named, composed as privacy-loss distributions)
SCHEMA = 2
#: pooled audit size per method: (runs, canaries per run); under DP-GNN's default relation (input-graph) each canary
#: gets K fresh anchors (audits.pooled.worst_case_design), K the declared bound (Cora: 168)
POOLED_SIZE = {"dpgnn": (4, 1000), "dpgnn-adam": (4, 1000)}
DEFAULT_POOLED_SIZE = (8, 1000)


def targets(config: str, runs: str, datasets: list[str] | None, pooled_datasets: list[str]) -> list[dict[str, Any]]:
    """The seed-0 run record of every private cell this script covers."""
    from bench import api, records

    recs = api.config_records(config, records.load(runs))
    out = []
    for r in recs:
        p = r.get("params", {})
        if (r.get("kind", "run") != "run" or r.get("status", "FINISHED") != "FINISHED" or r.get("previous_setting")
                or str(p.get("seed")) != "0" or p.get("target_epsilon") in (None, "inf") or not r.get("ledger")):
            continue
        m, d = p.get("method"), p.get("dataset")
        if datasets and d not in datasets:
            continue
        if m in COMPOSED or (m in POOLED and d in pooled_datasets):
            out.append(r)
    order = {d: i for i, d in enumerate(datasets or [])}
    return sorted(out, key=lambda r: (order.get(r["params"]["dataset"], 0), r["params"]["method"] in POOLED,
                                      r.get("name", "")))


def record_id(run: dict[str, Any]) -> str:
    """The record's id: the cell, and for a pooled audit its size (a larger audit is a new record)."""
    m = run["params"]["method"]
    key = json.dumps({"cell": run["cell_id"], "size": POOLED_SIZE.get(m, DEFAULT_POOLED_SIZE) if m in POOLED
                      else None, "schema": SCHEMA}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def audit_run(run: dict[str, Any], commit: str, datasets: dict) -> dict:
    """The white-box record of the recorded ``run``: its claim and the audit's fits under the accountant the run
    names (``bench.records.accountant_of``), so the bounds face the epsilon it published."""
    from bench.records import accountant_of
    from methods.privacy.accountant import using_accountant

    with using_accountant(accountant_of(run)):
        return _audit_run(run, commit, datasets)


def _audit_run(run: dict[str, Any], commit: str, datasets: dict) -> dict:
    import math

    from audits.composed import ledger_bound
    from audits.runner import audit
    from bench.datasets import load_dataset
    from bench.provenance import host_description
    from bench.splits import make_task
    from methods import Budget, get_method
    from methods.privacy.ledger import PrivacyLedger

    p = run["params"]
    name, seed = p["method"], int(p["seed"])
    eps, delta = float(p["target_epsilon"]), float(p.get("delta") or 0.0)
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    ledger = PrivacyLedger.from_dict(run["ledger"]) if run.get("ledger") else None
    if name in COMPOSED:
        b = ledger_bound(ledger, delta, seed=0)
        out = {"source": "composed", "epsilon_lb_cp": b.epsilon_lb_cp, "epsilon_lb_fdp": b.epsilon_lb_fdp,
               "cp_assumes": b.cp_assumes, "fdp_assumes": b.fdp_assumes, "claimed": b.claimed,
               "covered": b.covered, "left_out": b.left_out}
    else:
        from bench.recorded import recorded_hparams

        cls = get_method(name)
        hp = recorded_hparams(cls, p)  # a record older than the relation field: the papers' relation, as it ran
        if p["dataset"] not in datasets:
            datasets[p["dataset"]] = load_dataset(p["dataset"])
        task = make_task(datasets[p["dataset"]], p["split"], seed)
        runs, canaries = POOLED_SIZE.get(name, DEFAULT_POOLED_SIZE)
        from bench.plan import pooled_workers

        r = audit(functools.partial(cls, **hp), task, Budget(eps, delta), "pooled", trials=runs, canaries=canaries,
                  canary_type="gradient", seed=seed, workers=pooled_workers(runs))
        bnd = r.details["bound"]
        out = {"source": "pooled", "epsilon_lb_cp": bnd["epsilon_lb_cp"], "epsilon_lb_fdp": bnd["epsilon_lb_fdp"],
               "cp_assumes": "nothing (Clopper-Pearson rates)",
               "fdp_assumes": "a Gaussian (GDP) trade-off of the whole run", "claimed": r.claimed_epsilon,
               "row_claimed": float(ledger.epsilon(delta)) if ledger else math.nan, "pair_epsilon": r.details["pair_epsilon"], "runs": runs,
               "pair_epsilon_low": r.details["pair_epsilon_low"], "canaries": r.canaries, "auc": bnd["auc"],
               "verdict": r.verdict, **({"reason": r.reason} if r.reason else {})}
    c = out["claimed"]
    for key, ratio in (("epsilon_lb_cp", "ratio_cp"), ("epsilon_lb_fdp", "ratio_fdp")):
        out[ratio] = out[key] / c if c > 0 and math.isfinite(c) else math.nan
    return {"kind": "whitebox-audit", "cell_id": record_id(run), "run_id": uuid.uuid4().hex,
            "target_cell_id": run["cell_id"], "target_run_id": run["run_id"],
            "target_config_hash": p.get("config_hash"), "name": f"whitebox/{run.get('name', '')}",
            "status": "FINISHED", "git_commit": commit, "start_time": int(time.time() * 1000),
            "params": {k: p[k] for k in ("method", "dataset", "split", "seed", "privacy_unit", "target_epsilon",
                                         "delta", "config_hash") if k in p},
            "whitebox": out, "seconds": round(time.perf_counter() - t0, 2),
            "host": host_description("cpu")}


def summary(path: str) -> str:
    """The ratio table of ``docs/audits.md`` ("On the leaderboard"): per method and target epsilon, the min-max over
    cells (datasets and splits) of each bound over its record's claim, assumption-free / f-DP."""
    from bench import records

    cells: dict[tuple[str, float], dict[str, list]] = {}
    for r in records.load(path):
        w, p = r["whitebox"], r["params"]
        if "ratio_cp" not in w:  # an older format's record, not yet re-audited
            continue
        c = cells.setdefault((p["method"], float(p["target_epsilon"])), {"cp": [], "fdp": []})
        c["cp"].append(w["ratio_cp"])
        c["fdp"].append(w["ratio_fdp"])

    def span(xs: list[float]) -> str:
        lo, hi = min(xs), max(xs)
        return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"

    rows = ["| method | target eps | cells | assumption-free (CP) / claim | f-DP / claim |",
            "| --- | --- | --- | --- | --- |"]
    for (m, e), c in sorted(cells.items()):
        rows.append(f"| `{m}` | {e:g} | {len(c['cp'])} | {span(c['cp'])} | {span(c['fdp'])} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    from bench.studies._common import append_records, record_args
    from bench.studies.unit_attacks import _preload

    ap = argparse.ArgumentParser(prog="python -m scripts.whitebox_audits", description=__doc__.split("\n\n")[0])
    record_args(ap, "the export whose cells are audited", "the white-box records", DEFAULT_OUT)
    ap.add_argument("--pooled-datasets", nargs="*", default=["cora"],
                    help="datasets whose DP-SGD rows get the pooled audit (default: %(default)s)")
    ap.add_argument("--summary", action="store_true",
                    help="print the ratio table (min-max over datasets of each bound over its claim) of --out; run nothing")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary(args.out))
        return 0
    import torch

    torch.set_num_threads(args.threads)
    cache: dict = {}

    def preload() -> None:
        _preload()
        import audits.composed
        import audits.pooled  # noqa: F401

    def line(rec: dict) -> str:
        w = rec["whitebox"]
        return (f"{w['source']} {w['epsilon_lb_cp']:.3g} (assumption-free) / {w['epsilon_lb_fdp']:.3g} (f-DP) of "
                f"{w['claimed']:.3g}" + (f" [{w['verdict']}]" if w.get("verdict", "PASS") != "PASS" else ""))

    todo = [r for r in targets(args.config, args.runs, args.datasets, args.pooled_datasets)
            if not args.methods or r["params"]["method"] in args.methods]
    return append_records(todo, args.out, record_id, lambda r, commit: audit_run(r, commit, cache), line,
                          "cells need a white-box bound", args.dry_run, preload, args.superseded, args.methods)


if __name__ == "__main__":
    raise SystemExit(main())
