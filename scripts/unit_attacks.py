"""Unit-matched attacks for the leaderboard's edge- and feature-level rows (issue 31): what the "strongest attack on
<unit>" columns read.

    python -m scripts.unit_attacks [--level edge|feature] [--datasets cora citeseer] [--out FILE]
        [--config configs/leaderboard.yaml] [--runs docs/leaderboard/runs] [--dry-run]

For every run of the config's attack seeds that a row of ``--level`` or a non-private reference on the same split
holds (the records in ``--runs``, current settings only), the script refits the run exactly as it ran (method,
recorded hyperparameters, budget, seed), checks that the refit releases the recorded predictions, and plays the
level's game against it: edge (``attacks.edges``): ``link-stealing`` (He et al. 2021) and ``linkteller`` (Wu et
al. 2022, where the released model answers feature queries); feature (``attacks.features``):
``attribute-inference`` (Yeom et al. 2018's loss-based attribute inference as a replace-one test). One compact
record per run (kind ``edge-attack`` or ``feature-attack``) goes to ``--out`` (default
``docs/leaderboard/attacks/<level>.jsonl``): per variant its AUC, TPR at 1% FPR, the counts at that ROC point and
the epsilon they imply (:func:`attacks.metrics.epsilon_from_counts`). Resumable: a run already in ``--out`` with
the same attack options is skipped. The records name the commit that ran them, which must be clean (``bench
leaderboard --check``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from typing import Any

LEVELS = ("edge", "feature")


def targets(config: str, runs: str, datasets: list[str] | None, level: str = "edge") -> list[dict[str, Any]]:
    """The run records a level's column needs: the config's attack-seed runs of ``level`` methods, and of the
    non-private references on the splits those rows use."""
    from bench import api, records

    attack_cells = {c.cell_id for c in api.cells(config) if c.kind == "run" and c.attacks and not c.skip}
    recs = api.config_records(config, records.load(runs))
    recs = [r for r in recs if r.get("kind", "run") == "run" and r.get("status", "FINISHED") == "FINISHED"
            and r.get("cell_id") in attack_cells and not r.get("previous_setting")]
    splits = {(r["params"]["dataset"], r["params"]["split"]) for r in recs
              if r["params"].get("privacy_unit") == level}
    out = [r for r in recs if (r["params"]["dataset"], r["params"]["split"]) in splits
           and r["params"].get("privacy_unit") in (level, "none")]
    if datasets:
        out = [r for r in out if r["params"]["dataset"] in datasets]
    order = {d: i for i, d in enumerate(datasets or [])}
    return sorted(out, key=lambda r: (order.get(r["params"]["dataset"], 99), r["params"]["dataset"],
                                      r["params"]["privacy_unit"] == "none", r["params"]["method"],
                                      float(r["params"]["target_epsilon"]), int(r["params"]["seed"])))


def attack_options(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    if args.level == "feature":
        return {"attribute-inference": {"targets": args.targets}}
    return {"link-stealing": {"pairs": args.pairs}, "linkteller": {"pairs": args.linkteller_pairs}}


def record_id(run: dict[str, Any], options: dict[str, Any]) -> str:
    from methods.base import stable_hash

    return stable_hash({"run": run["cell_id"], "attacks": options})


def attack_run(run: dict[str, Any], options: dict[str, dict[str, Any]], commit: str, datasets: dict,
               level: str = "edge") -> dict:
    """Refit ``run`` and play the ``level`` game of each attack of ``options`` against it; the compact record."""
    import math

    import torch

    from attacks import Target, get_attack, run_attack
    from attacks import metrics as M
    from bench.datasets import load_dataset
    from bench.provenance import host_description, predictions_hash
    from bench.splits import make_task
    from methods import Budget, get_method
    from methods.base import fit_method
    from methods.streams import RunStreams

    p = run["params"]
    name, seed = p["method"], int(p["seed"])
    cls = get_method(name)
    known = {f for f in cls.Config.__dataclass_fields__} if hasattr(cls.Config, "__dataclass_fields__") else set()
    method = cls(**{k[3:]: v for k, v in p.items() if k.startswith("hp.") and k[3:] in known})
    if p["dataset"] not in datasets:
        datasets[p["dataset"]] = load_dataset(p["dataset"])
    task = make_task(datasets[p["dataset"]], p["split"], seed)
    eps, delta = float(p["target_epsilon"]), float(p.get("delta") or 0.0)
    budget = Budget(eps, delta) if method.is_private else Budget(math.inf, 0.0)
    t0 = time.perf_counter()
    fitted = fit_method(method, task, budget, RunStreams(seed), device="cpu", progress=False)
    fit_seconds = time.perf_counter() - t0
    proba = fitted.predict_proba()
    recorded = (run.get("tags") or {}).get("predictions_hash")
    refit = predictions_hash(task, proba)
    test_acc = float((proba.argmax(1)[task.test_mask] == task.data.y[task.test_mask]).float().mean())
    reproduces = refit == recorded if recorded else math.isclose(test_acc, float(run["metrics"]["test_acc"]),
                                                                  abs_tol=1e-9)
    target = Target(task, method, budget, fitted, RunStreams(seed), "cpu")
    attacks: dict[str, Any] = {}
    not_applicable: dict[str, str] = {}
    attack_seconds = {}
    for a, opts in options.items():
        report = run_attack(get_attack(a)(**opts), target, n_bootstrap=0)
        attack_seconds[a] = round(report.seconds, 2)
        if report.status != "ok":
            not_applicable[a] = report.reason
            continue
        attacks[a] = {}
        for v in report.variants:
            tp, n_pos, fp, n_neg = M.roc_point_at_fpr(v.labels, v.scores, 0.01)
            attacks[a][v.name] = {"auc": v.metrics["auc"].value, "tpr_at_1pct_fpr": v.metrics["tpr_at_1pct_fpr"].value,
                                  "tp": tp, "members": n_pos, "fp": fp, "non_members": n_neg,
                                  "implied_epsilon": M.epsilon_from_counts(tp, n_pos, fp, n_neg, delta)}
    return {"kind": f"{level}-attack", "cell_id": record_id(run, options), "run_id": uuid.uuid4().hex,
            "target_cell_id": run["cell_id"], "target_run_id": run["run_id"],
            "target_config_hash": p.get("config_hash"), "name": f"{level}-attacks/{run.get('name', '')}",
            "status": "FINISHED", "git_commit": commit, "start_time": int(time.time() * 1000),
            "params": {k: p[k] for k in ("method", "dataset", "split", "seed", "privacy_unit", "target_epsilon",
                                         "delta", "config_hash") if k in p},
            "attack_options": options, "attacks": attacks, "not_applicable": not_applicable,
            "reproduces_run": bool(reproduces), "refit_test_acc": test_acc,
            "seconds": {"fit": round(fit_seconds, 2), **attack_seconds},
            "host": host_description("cpu"), "threads": torch.get_num_threads(),
            "implied_epsilon_rule": "Clopper-Pearson 95% (2.5% per rate) at the ROC point of TPR@1%FPR, minus the "
                                    "run's delta"}


def _preload() -> None:
    """Import every module a fit or an attack may import lazily, so that edits to the work tree while the script
    runs cannot change the code its records say ran (the commit it names)."""
    import attacks  # noqa: F401
    import attacks.edges  # noqa: F401
    import attacks.features  # noqa: F401
    import bench.datasets  # noqa: F401
    import bench.provenance  # noqa: F401
    import bench.splits  # noqa: F401
    import methods  # noqa: F401
    import methods.progress  # noqa: F401
    import scipy.stats  # noqa: F401
    import sklearn.metrics  # noqa: F401
    from methods.base import available_methods

    available_methods()


def main(argv: list[str] | None = None) -> int:
    from scripts._common import append_records, record_args

    p = argparse.ArgumentParser(prog="python -m scripts.unit_attacks", description=__doc__.split("\n\n")[0])
    p.add_argument("--level", choices=LEVELS, default="edge", help="which rows' unit to attack (default: %(default)s)")
    record_args(p, "the export whose runs are refit", "the attack records",
                "docs/leaderboard/attacks/<level>.jsonl")
    p.add_argument("--pairs", type=int, default=1000, help="link-stealing: member edges (and as many non-edges)")
    p.add_argument("--linkteller-pairs", type=int, default=500, help="linkteller: member edges (and non-edges)")
    p.add_argument("--targets", type=int, default=500,
                   help="attribute-inference: target training nodes (each with its own row and a decoy)")
    args = p.parse_args(argv)
    if args.out == "docs/leaderboard/attacks/<level>.jsonl":
        args.out = f"docs/leaderboard/attacks/{args.level}.jsonl"
    import torch

    torch.set_num_threads(args.threads)
    options = attack_options(args)
    cache: dict = {}

    def line(rec: dict) -> str:
        best = {a: max(v["auc"] for k, v in vs.items() if not k.startswith("ref-")) for a, vs in rec["attacks"].items()}
        return (json.dumps({a: round(x, 3) for a, x in best.items()})
                + ("" if rec["reproduces_run"] else " (refit differs from the recorded run)"))

    return append_records(targets(args.config, args.runs, args.datasets, args.level), args.out,
                          lambda r: record_id(r, options),
                          lambda r, commit: attack_run(r, options, commit, cache, args.level),
                          line, f"runs need {args.level} attacks", args.dry_run, _preload)


if __name__ == "__main__":
    sys.exit(main())
