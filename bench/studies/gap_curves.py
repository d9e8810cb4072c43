"""The GAP measurements: accuracy-privacy curves of GAP, ProGAP and their baselines, and ProGAP's per-stage
convergence.

    python -m scripts.gap_curves [--datasets facebook-wisconsin87 computers] [--seeds 0 1 2]
                                 [--levels edge node] [--out-dir DIR] [--convergence]

Edge level: epsilon in {0.25, 0.5, 1, 2, 4, inf} for edgerand, gap-edge, progap-edge (mlp and sage at epsilon inf
as references). Node level: epsilon in {2, 4, 8, 16, 32} for dp-mlp, gap-node, progap-node, dpgnn-adam. All on
``random-75-10-15``; delta is the harness default (the largest power of ten below 1/#units). One resumable sweep;
the leaderboard goes to ``DIR/gap_curves.md`` and, with the privacy-utility plots, ``DIR/gap_curves.html``.
``--convergence`` trains progap-edge with K=3 at epsilon 1: its per-stage plot goes to
``DIR/progap_convergence.png`` and the stage table to ``DIR/progap_convergence.md``.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from pathlib import Path

from bench import api
from bench.studies._common import common_args, markdown, save, sweep

SPLIT = "random-75-10-15"
EDGE_EPS = [0.25, 0.5, 1.0, 2.0, 4.0, math.inf]
NODE_EPS = [2.0, 4.0, 8.0, 16.0, 32.0]
EDGE_METHODS = ["edgerand", "gap-edge", "progap-edge"]
NODE_METHODS = ["dp-mlp", "gap-node", "progap-node", "dpgnn-adam"]
REFERENCES = ["mlp", "sage"]
#: DP-GNN settings chosen on validation by its own grid (scripts/dpgnn_grid.py)
OVERRIDES = {"dpgnn-adam": {"max_degree": 3, "batch_size": 2000, "epochs": 30, "hidden": 32, "max_children": 10,
                            "lr": 0.03}}


def config(datasets: list[str], seeds: list[int], levels: list[str], experiment: str, methods: list[str] | None = None,
           edge_eps: list[float] | None = None, node_eps: list[float] | None = None) -> dict:
    entries: list = list(REFERENCES)
    for level, names, grid in (("edge", EDGE_METHODS, edge_eps or EDGE_EPS), ("node", NODE_METHODS, node_eps or NODE_EPS)):
        if level in levels:
            entries += [{"name": m, "epsilons": grid, **({"set": OVERRIDES[m]} if m in OVERRIDES else {})}
                        for m in names]
    if methods is not None:
        entries = [e for e in entries if (e if isinstance(e, str) else e["name"]) in methods]
    return {"experiment": experiment, "datasets": datasets, "splits": [SPLIT], "seeds": seeds, "methods": entries}


def convergence(dataset: str, seed: int, experiment: str, out: Path, threads: int) -> None:
    (r,) = api.run("progap-edge", dataset, split=SPLIT, seeds=[seed], epsilon=1.0, overrides={"depth": 3, "plot": True},
                   experiment=experiment, diagnostics=True, threads=threads)
    shutil.copy(r.info["figures"][0], out / "progap_convergence.png")
    stages: dict[int, list[dict]] = {}
    for h in r.history:
        stages.setdefault(int(h["stage"]), []).append(h)
    rows = [[str(s), str(len(hs)), f"{100 * hs[-1]['diagnostic.train_acc']:.1f}",
             f"{100 * max(h.get('diagnostic.val_acc', math.nan) for h in hs):.1f}"] for s, hs in sorted(stages.items())]
    save(out / "progap_convergence.md",
         f"progap-edge K=3, {dataset}, edge eps 1, seed {seed}: test {100 * r.metrics['test_acc']:.1f}% (run {r.run_id})"
         "\n\n" + markdown(["stage", "epochs", "final train acc % (diagnostic)", "best val acc % (diagnostic)"], rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["facebook-wisconsin87", "computers"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--levels", nargs="+", default=["edge", "node"], choices=["edge", "node"])
    ap.add_argument("--methods", nargs="+", default=None, help="only these methods (default: all of the levels)")
    ap.add_argument("--edge-eps", type=float, nargs="+", default=None, help=f"default {EDGE_EPS}")
    ap.add_argument("--node-eps", type=float, nargs="+", default=None, help=f"default {NODE_EPS}")
    ap.add_argument("--convergence", action="store_true", help="also the K=3 per-stage convergence plot")
    ap.add_argument("--out-dir", default="results")
    common_args(ap, "paper-gap-curves")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    cfg = config(args.datasets, args.seeds, args.levels, args.experiment, args.methods, args.edge_eps, args.node_eps)
    ok = sweep(cfg, args) if cfg["methods"] else True
    if args.dry_run:
        return 0
    if args.convergence:
        convergence(args.datasets[0], args.seeds[0], args.experiment + "-convergence", out, args.threads)
    if cfg["methods"]:
        save(out / "gap_curves.md", api.leaderboard(args.experiment, "md")[0])
        save(out / "gap_curves.html", api.leaderboard(args.experiment, "html")[0], echo=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
