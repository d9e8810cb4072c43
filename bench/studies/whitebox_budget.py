"""How many runs the white-box pooled audit needs before a bound alone flags a method: the bounds of the first R
runs of one pooled audit, for every R.

    nice -n 10 python -m scripts.whitebox_budget --plugin tests/plugins/hidden_bugs.py --method dp-mlp-overspent \\
        --dataset csbm:nodes=300,classes=2,features=16,degree=4 --epsilon 2 --runs 24 --canaries 1000

Run r of a pooled audit draws from the audit streams' child ("run", r) (:func:`audits.pooled.pooled_fits`), so the
first R fits here are exactly those of ``bench audit --level whitebox --trials R`` with the same seed, and the
line printed after the R-th fit is that audit's outcome: claimed, the realised pair's exact epsilon (and at the lower-bounded draw rates,
which decides its verdict), the Clopper-Pearson and f-DP lower bounds, and the verdict of each. One JSON line per R.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    from audits.pooled import pooled_fits, pooled_outcome, worst_case_design
    from audits.runner import verdict
    from bench.cli import load_plugin
    from bench.datasets import load_dataset
    from bench.splits import default_split, make_task
    from methods import Budget, get_method
    from methods.base import default_delta

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plugin", action="append", default=[])
    p.add_argument("--method", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--split")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, help="default: as bench run (the largest power of ten below 1/#nodes)")
    p.add_argument("--runs", type=int, default=8)
    p.add_argument("--workers", type=int, default=1, help="runs fitted at once, one process and torch thread each")
    p.add_argument("--canaries", type=int, default=1000)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--out", help="append JSON lines here")
    a = p.parse_args(argv)
    for f in a.plugin:
        load_plugin(f)
    cls = get_method(a.method)
    over = dict(item.split("=", 1) for item in a.overrides)  # typed by the method's config
    task = make_task(load_dataset(a.dataset), a.split or default_split(a.dataset), a.seed)
    # bench run's default delta for the node and feature units a pooled audit takes
    units = task.num_nodes if task.setting == "transductive" else int(task.train_mask.sum())
    budget = Budget(a.epsilon, a.delta if a.delta is not None else default_delta(units))
    t0, c0 = time.perf_counter(), time.process_time()

    def report(fits) -> None:
        r = len(fits)
        out = pooled_outcome(fits, budget.delta, a.confidence, worst_case_design(cls(**over)))
        b = out.bound
        row = {"method": a.method, "dataset": a.dataset, "epsilon": a.epsilon, "overrides": a.overrides, "runs": r,
               "canaries": out.canaries, "seed": a.seed, "claimed": out.claimed, "pair_epsilon": out.pair_epsilon,
               "pair_epsilon_low": out.pair_epsilon_low, "epsilon_lb_cp": b.epsilon_lb_cp,
               "epsilon_lb_fdp": b.epsilon_lb_fdp, "auc": b.auc,
               "cp_verdict": verdict(out.claimed, b.epsilon_lb_cp),
               "pair_verdict": "VIOLATION" if out.pair_exceeds_claim else "PASS",
               "seconds": round(time.perf_counter() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1)}
        print(json.dumps(row), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")

    pooled_fits(functools.partial(cls, **over), task, budget, runs=a.runs, canaries=a.canaries, seed=a.seed,
                progress=sys.stderr.isatty(), on_fit=report, workers=a.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
