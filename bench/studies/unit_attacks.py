"""Unit-matched attacks for the leaderboard's edge- and feature-level rows: what the "strongest attack on <unit>"
columns read.

    python -m scripts.unit_attacks [--level edge|feature] [--datasets cora citeseer] [--out FILE]
        [--config configs/leaderboard.yaml] [--runs docs/leaderboard/runs] [--rerun-missing | --refit] [--dry-run]

For every run of the config's attack seeds that a row of ``--level`` or a non-private reference on the same split
holds (the records in ``--runs``, current settings only), the script loads the run's released model from the
tracking store (:mod:`bench.release`: the artefact the run logged, checked against its recorded posteriors) and plays
the level's game against it: edge (``attacks.edges``): ``link-stealing`` (He et al. 2021) and ``linkteller`` (Wu et
al. 2022, where the released model answers feature queries); feature (``attacks.features``): the weights-only game
``attribute-inference`` (Yeom et al. 2018's loss-based attribute inference as a replace-one test; with
``--lira-references N`` also ``attribute-lira``, its LiRA calibration against N reference fits) and the
``released-prediction`` game (the node's served posterior, which a feature-level claim does not cover). One compact
record per run (kind ``edge-attack`` or ``feature-attack``) goes to ``--out`` (default
``docs/leaderboard/attacks/<level>.jsonl``): per variant its AUC, TPR at 1% FPR and the counts at that ROC point --
no epsilon: an attack on one model is not a game between neighbouring datasets -- ``attacked_model``, which
model it saw, and ``attacked_state`` (:data:`bench.release.SERVED_MODEL`): the attack queried the served model,
whose serving state (raw rows, a served graph) is not a release.

A run whose artefact the store does not hold (a record from before runs logged their model, or a store on another
machine) is an error, unless ``--rerun-missing`` (move such records to ``docs/leaderboard/superseded/``, so that
``python -m scripts.build_leaderboard --datasets D --no-tune`` re-runs their cells, node attacks included, and logs
their models; then run this script again) or ``--refit`` (attack a refit, labelled ``refit (not the recorded run)``
in the record and on the page). Resumable: a run already in ``--out`` with the same attack options is skipped. The
records name the commit that ran them, which must be clean (``bench leaderboard --check``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
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
        out = {"attribute-inference": {"targets": args.targets}, "released-prediction": {"targets": args.targets}}
        if args.lira_references:
            out["attribute-lira"] = {"targets": args.targets, "references": args.lira_references}
        return out
    return {"link-stealing": {"pairs": args.pairs}, "linkteller": {"pairs": args.linkteller_pairs}}


#: the record format: a new one attacks every run again (2: the recorded run's released model, no epsilon)
SCHEMA = 2


def record_id(run: dict[str, Any], options: dict[str, Any]) -> str:
    """The record's id: the run's cell (a re-run cell keeps its id), the attack options and :data:`SCHEMA`."""
    from methods.base import stable_hash

    return stable_hash({"run": run["cell_id"], "attacks": options, "schema": SCHEMA})


def attack_run(run: dict[str, Any], options: dict[str, dict[str, Any]], commit: str, datasets: dict,
               level: str = "edge", refit: bool = False) -> dict:
    """Play the ``level`` game of each attack of ``options`` against the released model ``run`` logged (a refit,
    labelled so, when ``refit`` and the store holds none); the compact record."""
    from bench.recorded import recorded_setting
    from methods.privacy.accountant import using_accountant

    setting = recorded_setting(run["params"], datasets=datasets)
    with using_accountant(setting.accountant):  # a refit and the attacks' own fits spend as the record did
        return _attack_setting(run, setting, level, options, refit, commit)


def _attack_setting(run: dict[str, Any], setting: Any, level: str, options: dict[str, Any], refit: bool,
                    commit: str) -> dict[str, Any]:
    import torch

    from attacks import Target, get_attack, run_attack
    from attacks import metrics as M
    from bench import release
    from bench.provenance import host_description, predictions_hash
    from methods.base import fit_method
    from methods.streams import RunStreams

    task, method, budget, seed = setting.task, setting.method, setting.budget, setting.seed
    t0 = time.perf_counter()
    try:
        fitted, _ = release.load(run["run_id"], task, "cpu")
        source = release.SOURCE_RECORDED
    except release.ReleaseMissing as e:
        if not refit:
            raise SystemExit(f"error: {e}. Its record predates released-model artefacts or the store is another "
                             "machine's: --rerun-missing re-runs such cells, --refit attacks a labelled refit") from None
        fitted = fit_method(method, task, budget, RunStreams(seed), device="cpu", progress=False)
        source = release.SOURCE_REFIT
    load_seconds = time.perf_counter() - t0
    proba = fitted.predict_proba()
    recorded = (run.get("tags") or {}).get("predictions_hash")
    test_acc = float((proba.argmax(1)[task.test_mask] == task.data.y[task.test_mask]).float().mean())
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
                                  "tp": tp, "members": n_pos, "fp": fp, "non_members": n_neg}
    p = run["params"]
    return {"kind": f"{level}-attack", "cell_id": record_id(run, options), "run_id": uuid.uuid4().hex,
            "target_cell_id": run["cell_id"], "target_run_id": run["run_id"],
            "target_config_hash": p.get("config_hash"), "name": f"{level}-attacks/{run.get('name', '')}",
            "status": "FINISHED", "git_commit": commit, "start_time": int(time.time() * 1000),
            "params": {k: p[k] for k in ("method", "dataset", "split", "seed", "privacy_unit", "target_epsilon",
                                         "delta", "config_hash") if k in p},
            "attack_options": options, "attacks": attacks, "not_applicable": not_applicable,
            "attacked_model": source, "attacked_state": release.SERVED_MODEL,
            "reproduces_run": bool(predictions_hash(task, proba) == recorded) if recorded else None,
            "refit_test_acc": test_acc,
            "seconds": {("fit" if source == release.SOURCE_REFIT else "load"): round(load_seconds, 2),
                        **attack_seconds},
            "host": host_description("cpu"), "threads": torch.get_num_threads()}


def rerun_missing(todo: list[dict[str, Any]], runs: str, superseded: str) -> int:
    """Move the records of ``todo`` whose released model the tracking store does not hold from the ``runs`` export to
    ``superseded`` (:mod:`bench.superseded`; each marked with why), so that the sweep re-runs their cells and logs
    their models; how many."""
    from bench import release, tracking
    from bench.superseded import append_lines
    from bench.io import write_text_atomic

    missing = {r["cell_id"] for r in todo if not tracking.has_artifacts(r["run_id"], release.ARTIFACT_DIR)}
    if not missing:
        return 0
    path = Path(runs)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    moved = 0
    for f in files:
        stay, gone = [], []
        for line in (x for x in f.read_text().splitlines() if x.strip()):
            rec = json.loads(line)
            (gone if rec.get("cell_id") in missing and rec.get("kind", "run") == "run" else stay).append(line)
        if gone:
            why = "re-run so that its released model is logged and the unit attacks hit it (not a refit)"
            append_lines(superseded, (json.dumps({**json.loads(x), "superseded_because": why}, sort_keys=True,
                                                 separators=(",", ":")) for x in gone))
            write_text_atomic(f, "\n".join(stay) + "\n" if stay else "")
            moved += len(gone)
    return moved


def _preload() -> None:
    """Import every module a fit or an attack may import lazily, so that edits to the work tree while the script
    runs cannot change the code its records say ran (the commit it names)."""
    import attacks
    import attacks.edges
    import attacks.features  # noqa: F401
    import bench.datasets
    import bench.provenance
    import bench.splits  # noqa: F401
    import methods
    import methods.progress  # noqa: F401
    import scipy.stats  # noqa: F401
    import sklearn.metrics  # noqa: F401
    from methods.base import available_methods

    available_methods()


def main(argv: list[str] | None = None) -> int:
    from bench import records
    from bench.studies._common import append_records, record_args

    p = argparse.ArgumentParser(prog="python -m scripts.unit_attacks", description=__doc__.split("\n\n")[0])
    p.add_argument("--level", choices=LEVELS, default="edge", help="which rows' unit to attack (default: %(default)s)")
    record_args(p, "the export whose runs are refit", "the attack records",
                "docs/leaderboard/attacks/<level>.jsonl")
    p.add_argument("--pairs", type=int, default=1000, help="link-stealing: member edges (and as many non-edges)")
    p.add_argument("--linkteller-pairs", type=int, default=500, help="linkteller: member edges (and non-edges)")
    p.add_argument("--targets", type=int, default=500,
                   help="feature attacks: target training nodes (each with its own row and a decoy)")
    p.add_argument("--lira-references", type=int, default=0,
                   help="feature attacks: also attribute-lira with this many reference fits per run (even; 0 = not "
                        "run: each reference is a full fit of the target's method)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--rerun-missing", action="store_true",
                     help="move the records of runs whose released model the store lacks to --superseded (the "
                          "sweep then re-runs their cells) and stop")
    how.add_argument("--refit", action="store_true",
                     help="attack a refit, labelled as such, where the store holds no released model")
    args = p.parse_args(argv)
    if args.out == "docs/leaderboard/attacks/<level>.jsonl":
        args.out = f"docs/leaderboard/attacks/{args.level}.jsonl"
    import torch

    torch.set_num_threads(args.threads)
    options = attack_options(args)
    cache: dict = {}

    def line(rec: dict) -> str:
        best = {a: max(v["auc"] for k, v in vs.items() if not k.startswith("ref-")) for a, vs in rec["attacks"].items()}
        return json.dumps({a: round(x, 3) for a, x in best.items()}) + f" ({rec['attacked_model']})"

    todo = [r for r in targets(args.config, args.runs, args.datasets, args.level)
            if not args.methods or r["params"]["method"] in args.methods]
    if args.rerun_missing:
        done = {r["cell_id"] for r in records.load(args.out)} if Path(args.out).exists() else set()
        todo = [r for r in todo if record_id(r, options) not in done]
        moved = 0 if args.dry_run else rerun_missing(todo, args.runs, args.superseded)
        print(f"# moved {moved} run records without a logged model to {args.superseded}; re-run their cells "
              "(python -m scripts.build_leaderboard --datasets ... --no-tune), then this script", file=sys.stderr)
        return 0
    return append_records(todo, args.out, lambda r: record_id(r, options),
                          lambda r, commit: attack_run(r, options, commit, cache, args.level, args.refit),
                          line, f"runs need {args.level} attacks", args.dry_run, _preload, args.superseded,
                          args.methods)


if __name__ == "__main__":
    sys.exit(main())
