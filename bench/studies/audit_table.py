"""Claimed epsilon vs audited epsilon lower bound, per method, epsilon and mode; and the mutant check.

    nice -n 10 python -m scripts.audit_table --grid --output /tmp/audit_grid.json
    nice -n 10 python -m scripts.audit_table --mutants --output /tmp/audit_mutants.json

``--grid``: every private method family (small "audit" hyperparameters below, so a fit takes seconds) at
epsilon 1, 4, 8 in both modes on a small csbm graph; ``--canary-types input,gradient`` adds the white-box
gradient canaries for the DP-SGD methods (dp-mlp, drw, dpgnn). Multi-run trains ``--trials`` models per world
(default 50: with fewer than ~20 even perfect separation bounds nothing, see the README). ``--mutants``: every
mutant of ``tests/plugins/mutants.py`` next to its correct method at the configuration documented in
``MUTANT_CONFIGS`` (the same one the tests use). Every audit is one :func:`bench.api.audit` call, untracked unless
``--experiment`` is given. Prints a table; ``--output`` writes all results as JSON (atomically).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from bench import api
from bench.io import format_table, write_json_atomic
from methods import get_method

DATASET = "csbm:nodes=1000,classes=3,features=32,degree=4"

# small but faithful configurations (fewer epochs / widths than the papers' defaults) so one fit takes seconds
AUDIT_METHODS: dict[str, dict] = {
    "dp-mlp": {},
    "drw": {"hidden": 16, "max_steps": 300, "batch_size": 32},
    "dpgnn": {"hidden": 16, "batch_size": 256, "epochs": 5},
    "gap-edge": {"encoder_epochs": 30, "epochs": 30},
    "gap-node": {"encoder_epochs": 2, "epochs": 2},
    "progap-edge": {"epochs": 30},
    "progap-node": {"epochs": 2},
    "edgerand": {},
    "privgnn": {"queries": 40, "k": 40, "epochs": 20, "hidden": 16, "teacher_batch": 8},
}
SPLITS = {"privgnn": "private-public"}
#: node-level methods audited under their default relation, input-graph: max_degree is a declared public bound the
#: run refuses to exceed, so the grid declares the dataset's own largest degree (:func:`declared_bound`; the audits
#: keep the canaries within it, audits.canaries.within_declared_bound)
DECLARED = ("dpgnn", "gap-node", "progap-node")


def declared_bound(dataset: str) -> int:
    """The largest degree of ``dataset``'s whole graph: a bound every split's graph (and, for DP-GNN, every node's
    number of training in-neighbours) is within."""
    from bench.datasets import load_dataset
    from methods.gap.nap import max_out_degree

    data = load_dataset(dataset).data
    return max(1, max_out_degree(data.edge_index, int(data.num_nodes)))

#: mutant -> (correct method, shared hyperparameters, dataset, target epsilon, canaries, canary design)
MUTANT_CONFIGS: dict[str, dict] = {
    "mutant-dp-mlp-noise": {"correct": "dp-mlp", "set": {}, "dataset": "csbm:nodes=600,classes=3,features=32,degree=4",
                            "epsilon": 1.0, "canaries": 100, "canary": {"degree": 1, "hops": 2, "scale": 3.0}},
    "mutant-gap-edge-nonorm": {"correct": "gap-edge", "set": {},
                               "dataset": "csbm:nodes=600,classes=8,features=32,degree=4", "epsilon": 1.0,
                               "canaries": 100, "canary": {"degree": 30, "scale": 1.0}},
    # white box: the black-box audit (30 anchors, 30 epochs) sees the leak (canary AUC ~0.6 vs ~0.5) but cannot
    # bound it at epsilon 1. Each canary node gets 500 fresh anchors, so without the degree bound it enters 501
    # training subgraphs where the ledger assumes N(K=1, r=1) = 2; flat clipping puts the whole threshold on the
    # canary coordinate (per-layer clipping would give it C / sqrt(6)). The paper's relation (Algorithm 1), where
    # the bound is the sampler's: under the default input-graph K is declared and a canary above it is refused
    "mutant-dpgnn-nobound": {"correct": "dpgnn", "set": {"relation": "in-edges", "max_degree": 1, "batch_size": 256,
                                                         "epochs": 2, "lr": 0.05, "per_layer_clipping": False},
                             "dataset": "csbm:nodes=1000,classes=8,features=32,degree=3", "epsilon": 1.0,
                             "canaries": 100, "canary_type": "gradient",
                             "canary": {"degree": 500, "hops": 0, "scale": 1.0, "fresh_anchors": True}},
    "mutant-drw-overlap": {"correct": "drw", "set": {"hidden": 16, "batch_size": 64, "noise_multiplier": 4.0,
                                                     "max_steps": 3000, "lr": 0.05, "layers": 1},
                           "dataset": "csbm:nodes=1000,classes=8,features=32,degree=3", "epsilon": 1.0,
                           "canaries": 50, "canary": {"degree": 30, "hops": 0, "scale": 1.0, "fresh_anchors": True}},
    "mutant-privgnn-laplace": {"correct": "privgnn", "set": {"queries": 100, "k": 5, "epochs": 100, "hidden": 16,
                                                             "dropout": 0.0, "teacher_batch": 8, "sampling_rate": 1.0},
                               "dataset": "csbm:nodes=1000,classes=8,features=32,degree=4", "split": "private-public",
                               "epsilon": 1.0, "canaries": 100, "canary": {"degree": 1, "hops": 1, "scale": 1.0}},
}


def run_audit(method: str, overrides: dict, dataset: str, split: str, epsilon: float, mode: str, trials: int,
              canaries: int, canary: dict, seed: int = 0, delta: float | None = None, canary_type: str = "input",
              experiment: str | None = None) -> dict:
    """One audit (``canary``: CanaryConfig fields: degree, hops, scale, pattern, fresh_anchors) as a plain dict."""
    design = {"degree": "canary_degree", "hops": "hops", "scale": "canary_scale", "pattern": "canary_pattern",
              "fresh_anchors": "fresh_anchors"}
    out = api.audit(method, dataset, split=split, epsilon=epsilon, delta=delta, mode=mode, trials=trials,
                    canaries=canaries, seed=seed, overrides=overrides, canary_type=canary_type,
                    **{design[k]: v for k, v in canary.items()}, track=experiment is not None,
                    **({"experiment": experiment} if experiment else {}))
    return {**out.result.to_dict(), "dataset": dataset, "split": split, "wall_seconds": out.result.seconds,
            "overrides": overrides, "canary_type": canary_type, "run_id": out.run_id}


def _fmt(x) -> str:
    return x if isinstance(x, str) else ("inf" if not math.isfinite(x) else f"{x:.3f}")


def table(rows: list[dict]) -> str:
    header = ["method", "unit", "mode", "canary", "target eps", "claimed eps", "eps_lb (95%)", "verdict", "fits",
              "canaries", "seconds"]
    return format_table(header, [[r["method"], r["privacy_unit"], r["mode"], r.get("canary_type", "input"),
                                  _fmt(r["target_epsilon"]), _fmt(r["claimed_epsilon"]), _fmt(r["epsilon_lb"]),
                                  r["verdict"], str(r["trials"]), str(r["canaries"]), f"{r['wall_seconds']:.1f}"]
                                 for r in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", action="store_true", help="methods x epsilons x modes")
    ap.add_argument("--mutants", action="store_true", help="each mutant next to its correct method")
    ap.add_argument("--methods", default=",".join(AUDIT_METHODS), help="grid: comma-separated methods")
    ap.add_argument("--mutant-list", default=",".join(MUTANT_CONFIGS), help="mutants: comma-separated mutants")
    ap.add_argument("--epsilons", default="1,4,8")
    ap.add_argument("--modes", default="one-run,multi-run")
    ap.add_argument("--canary-types", default="input",
                    help="grid: comma-separated input,gradient (gradient: the DP-SGD methods only)")
    ap.add_argument("--trials", type=int, default=50, help="multi-run: models per world")
    ap.add_argument("--canaries", type=int, default=100, help="one-run: canaries")
    ap.add_argument("--canary-degree", type=int, default=1, help="grid: anchor edges per canary node")
    ap.add_argument("--hops", type=int, default=2, help="grid: receptive field the canaries are hop-disjoint for")
    ap.add_argument("--dataset", default=DATASET)
    ap.add_argument("--experiment", help="also track every audit in this MLflow experiment")
    ap.add_argument("--output", "-o")
    args = ap.parse_args(argv)
    rows: list[dict] = []

    def done(row: dict) -> None:
        rows.append(row)
        print(f"  {row['method']} {row['mode']} {row['canary_type']} eps={row['target_epsilon']}: claimed "
              f"{_fmt(row['claimed_epsilon'])}, lb {_fmt(row['epsilon_lb'])}, {row['verdict']} "
              f"({row['wall_seconds']:.1f}s)", file=sys.stderr, flush=True)
        if args.output:
            write_json_atomic(args.output, rows)

    if args.mutants:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "plugins"))
        import mutants  # noqa: F401  (registers the mutants)

        for name in [m for m in args.mutant_list.split(",") if m]:
            cfg = MUTANT_CONFIGS[name]
            for method in (name, cfg["correct"]):
                done(run_audit(method, cfg["set"], cfg["dataset"], cfg.get("split", "random-75-10-15"),
                               cfg["epsilon"], "one-run", 0, cfg["canaries"], cfg["canary"],
                               canary_type=cfg.get("canary_type", "input"), experiment=args.experiment))
    if args.grid:
        bound = None
        for method in [m for m in args.methods.split(",") if m]:
            for kind in [k for k in args.canary_types.split(",") if k]:
                if kind == "gradient" and not get_method(method).gradient_canaries:
                    continue
                for eps in [float(e) for e in args.epsilons.split(",")]:
                    for mode in args.modes.split(","):
                        overrides = dict(AUDIT_METHODS.get(method, {}))
                        if method in DECLARED and "max_degree" not in overrides:
                            bound = declared_bound(args.dataset) if bound is None else bound
                            overrides["max_degree"] = bound
                        if "queries" in overrides:  # the probes are the whole query set (audits/canaries.py)
                            overrides["queries"] = args.canaries if mode == "one-run" else 1
                        done(run_audit(method, overrides, args.dataset, SPLITS.get(method, "random-75-10-15"), eps,
                                       mode, args.trials, args.canaries, {"degree": args.canary_degree,
                                                                          "hops": args.hops},
                                       canary_type=kind, experiment=args.experiment))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
