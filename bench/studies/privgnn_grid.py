"""PrivGNN's Amazon Computers grid: PrivGNN, PATE-M, PATE-G, B1, B2 over |Q| and lambda.

    python -m scripts.privgnn_grid --out DIR [--seeds 0 1 2] [--queries 500 1000] [--lams 0.1 0.2 0.4 0.8 1.0]
        [--gamma 0.3] [--k 750]

One resumable sweep at target epsilon inf with lambda fixed per cell, so every run spends what the accountant
computes for its ledger (delta = 1e-4, the paper's stated value for Amazon). Teachers do not depend on lambda, and
|Q| = 500 answers the first 500 of the 1000 queries with the same teachers, so each seed's teachers are trained
once (``teacher_cache`` under ``DIR/cache``; results are identical to separate fits; cells run in-process, the
largest |Q| first). ``DIR/table.md``: the leaderboard (public-test accuracy, spent epsilon, one row per
``[lam=..., queries=...]``), the pseudo-label accuracy of the released labels, and the epsilon the paper's own
formulas give for each (|Q|, lambda) at the stated delta and at the delta its tables used (1e-3).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import api
from bench.studies._common import common_args, markdown, mean_std, save, sweep

DELTA = 1e-4
PRIVATE = ("privgnn", "pate-m", "pate-g")


def config(seeds: list[int], queries: list[int], lams: list[float], gamma: float, k: int, teacher_batch: int,
           experiment: str, dataset: str = "computers", skip: tuple[str, ...] = ()) -> dict:
    privgnn_hp = {"sampling_rate": gamma, "k": k, "teacher_batch": teacher_batch}
    entries: list = [m for m in ("privgnn-b1", "privgnn-b2", "sage") if m not in skip]
    for name in (n for n in PRIVATE if n not in skip):
        for q in queries:  # the largest first: the smaller reuse its teachers
            entries += [{"name": name, "set": {"queries": q, "lam": lam, **(privgnn_hp if name == "privgnn" else {})}}
                        for lam in lams]
    if "privgnn[log-posterior]" not in skip:  # the authors' code: noise on log-probabilities (not private)
        entries += [{"name": "privgnn", "set": {"queries": max(queries), "lam": lam, "noise_on": "log_posterior",
                                                **privgnn_hp}} for lam in lams]
    return {"experiment": experiment, "datasets": [dataset], "splits": ["private-public"], "epsilons": ["inf"],
            "delta": DELTA, "seeds": seeds, "methods": entries}


def extra_tables(experiment: str, queries: list[int], lams: list[float], gamma: float) -> str:
    """Pseudo-label accuracy per (method, |Q|, lambda) from the runs, and the paper's formulas' epsilons."""
    from methods.privgnn import paper_accounting as PA

    groups: dict[tuple, list[float]] = {}
    for r in api.runs(experiment):
        p = r["params"]
        if "info.pseudo_label_accuracy" in r["metrics"]:
            name = p["method"] + ("[log-posterior]" if p.get("hp.noise_on") == "log_posterior" else "")
            key = (name, int(p["hp.queries"]), float(p["hp.lam"]))
            groups.setdefault(key, []).append(r["metrics"]["info.pseudo_label_accuracy"])
    rows = [[name, str(q)] + [mean_std(groups.get((name, q, lam), [])) for lam in lams]
            for name in dict.fromkeys(k[0] for k in groups) for q in queries]
    paper = [[str(q), f"δ={d:g}"] + [f"{PA.privgnn_epsilon(q, lam, gamma, d)[0]:.3g}" for lam in lams]
             for q in queries for d in (DELTA, 1e-3)]
    lam_cols = [f"λ={lam:g}" for lam in lams]
    return ("## Pseudo-label accuracy (mean ± std over seeds)\n\n" + markdown(["method", "|Q|"] + lam_cols, rows)
            + "\n\n## privgnn epsilon by the paper's formulas (sensitivity 1, standard conversion)\n\n"
            + markdown(["|Q|", "delta"] + lam_cols, paper))


def main(argv: list[str] | None = None) -> int:
    from methods.privgnn.common import teacher_cache

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for table.md and the teacher cache")
    p.add_argument("--dataset", default="computers")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--queries", type=int, nargs="+", default=[1000, 500])
    p.add_argument("--lams", type=float, nargs="+", default=[0.1, 0.2, 0.4, 0.8, 1.0])
    p.add_argument("--gamma", type=float, default=0.3)
    p.add_argument("--k", type=int, default=750)
    p.add_argument("--teacher-batch", type=int, default=32)
    p.add_argument("--skip", nargs="*", default=[], help="methods to leave out (privgnn[log-posterior] too)")
    common_args(p, "paper-privgnn-grid")
    args = p.parse_args(argv)
    out = Path(args.out)
    queries = sorted(args.queries, reverse=True)
    cfg = config(args.seeds, queries, args.lams, args.gamma, args.k, args.teacher_batch, args.experiment,
                 args.dataset, tuple(args.skip))
    with teacher_cache(str(out / "cache")):
        ok = sweep(cfg, args)
    if not args.dry_run:
        save(out / "table.md", api.leaderboard(args.experiment, "md")[0] + "\n"
             + extra_tables(args.experiment, queries, args.lams, args.gamma))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
