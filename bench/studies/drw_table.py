"""The DRW table: DRW, DRW-R, DRW-D beside DP-MLP, the non-private GCN and RW at epsilon 8 (delta 1e-5, as
Ayle et al.) on Cora and CiteSeer (public split, transductive) and Computers and Physics (disjoint, inductive).

    python -m scripts.drw_table [--seeds 0 1 2] [--datasets cora citeseer computers physics] [--out drw_table.md]

On the inductive graphs the batch is 512 subgraphs (the paper's 20%-of-training-nodes rule gives ~5,000 on
Physics: 700 MB of padded features per batch, and a sampling rate m/M_min near 1). The table is the experiment's
leaderboard (test accuracy with 95% bootstrap intervals, spent epsilon from the ledgers).
"""

from __future__ import annotations

import argparse
import sys

from bench import api
from bench.studies._common import common_args, save, sweep

DATASETS = {"cora": "public", "citeseer": "public", "computers": "disjoint", "physics": "disjoint"}
PRIVATE = ["drw", "drw-r", "drw-d", "dp-mlp"]  # DP-GNN (FDP): see scripts/dpgnn_grid.py
PLAIN = ["gcn", "rw"]
INDUCTIVE_SET = {"drw": {"batch_size": 512}, "drw-r": {"batch_size": 512}, "drw-d": {"batch_size": 512}}


def config(datasets: list[str], methods: list[str], seeds: list[int], epsilon: float, delta: float,
           experiment: str) -> dict:
    entries = []
    for method in methods:
        for split in ("public", "disjoint"):
            ds = [d for d in datasets if DATASETS[d] == split]
            if ds:
                extra = INDUCTIVE_SET.get(method, {}) if split == "disjoint" else {}
                entries.append({"name": method, "datasets": ds, "splits": [split], **({"set": extra} if extra else {})})
    return {"experiment": experiment, "datasets": datasets, "epsilons": [epsilon], "delta": delta, "seeds": seeds,
            "methods": entries}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--methods", nargs="+", default=PRIVATE + PLAIN)
    ap.add_argument("--out", default="drw_table.md")
    common_args(ap, "paper-drw-table")
    args = ap.parse_args(argv)
    ok = sweep(config(args.datasets, args.methods, args.seeds, args.epsilon, args.delta, args.experiment), args)
    if not args.dry_run:
        save(args.out, api.leaderboard(args.experiment, "md")[0])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
