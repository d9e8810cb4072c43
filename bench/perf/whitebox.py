"""``bench perf whitebox``: the pooled white-box DP-SGD audit with its runs fitted in worker processes against the
same audit fitted run after run in this process, back to back in one invocation.

    bench perf whitebox [--method dp-mlp] [--dataset cora] [--split random-75-10-15] [--epsilon 4] [--runs 8]
                        [--canaries 1000] [--workers 2] [--device cpu] [--threads 0] [--json]

The reference is the audit as ``--workers 1`` runs it (torch's threads, ``--threads``, in this process); the variant
fits the runs in ``--workers`` processes of one torch thread each (:func:`audits.pooled.pooled_fits`). Reported:
both wall seconds, their ratio, both bounds (Clopper-Pearson and f-DP) of each, which must be equal (the runs draw
from the same streams wherever they are fitted), and the realised pair's epsilon against the claim.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.perf import benchmark, common_args, emit, format_table, machine, set_threads


def perf_whitebox(method: str = "dp-mlp", dataset: str = "cora", split: str | None = "random-75-10-15",
                  epsilon: float = 4.0, runs: int = 8, canaries: int = 1000, workers: int = 2, device: str = "cpu",
                  data_root: str | None = None) -> dict:
    from bench import api

    out: dict = {"benchmark": "whitebox-audit", "method": method, "dataset": dataset, "split": split,
                 "epsilon": epsilon, "runs": runs, "canaries": canaries, "workers": workers, "device": device}
    results = {}
    for key, w in (("in-process", 1), (f"{workers} workers", workers)):
        t0 = time.perf_counter()
        r = api.audit(method, dataset, split=split, epsilon=epsilon, mode="pooled", trials=runs, canaries=canaries,
                      canary_type="gradient", device=device, data_root=data_root, track=False, workers=w).result
        seconds = time.perf_counter() - t0
        b = r.details["bound"]
        results[key] = {"seconds": seconds, "epsilon_lb_cp": b["epsilon_lb_cp"], "epsilon_lb_fdp": b["epsilon_lb_fdp"],
                        "claimed": r.claimed_epsilon, "pair_epsilon": r.details["pair_epsilon"], "verdict": r.verdict}
    ref, var = results["in-process"], results[f"{workers} workers"]
    out["results"] = results
    out["ratio"] = {f"{workers} workers / in-process": var["seconds"] / ref["seconds"]}
    out["same_bounds"] = all(ref[k] == var[k] for k in ("epsilon_lb_cp", "epsilon_lb_fdp", "pair_epsilon", "claimed"))
    return out


@benchmark("whitebox", "the pooled white-box DP-SGD audit: runs in worker processes vs run after run in this process")
def _args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--method", default="dp-mlp")
    q.add_argument("--dataset", default="cora")
    q.add_argument("--split", default="random-75-10-15")
    q.add_argument("--epsilon", type=float, default=4.0)
    q.add_argument("--runs", type=int, default=8, help="pooled runs (the audit's --trials; default %(default)s)")
    q.add_argument("--canaries", type=int, default=1000, help="canaries per run (default %(default)s)")
    q.add_argument("--workers", type=int, default=2, help="processes of the variant (default %(default)s)")
    q.add_argument("--device", default="cpu")
    q.add_argument("--data-root")
    common_args(q, baseline=False)
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    if args.runs < 1 or args.canaries < 4:
        raise ConfigError("--runs must be >= 1 and --canaries >= 4")
    set_threads(args.threads)
    start = machine()
    out = perf_whitebox(args.method, args.dataset, args.split, args.epsilon, args.runs, args.canaries, args.workers,
                        args.device, args.data_root)
    out["machine"] = start
    return emit(out, args, _render)


def _render(out: dict) -> None:
    print(f"# pooled white-box audit of {out['method']} on {out['dataset']}/{out['split']} at epsilon "
          f"{out['epsilon']:g}: {out['runs']} runs x {out['canaries']} canaries, {out['device']}", file=sys.stderr)
    rows = [[k, f"{r['seconds']:.1f}", f"{r['epsilon_lb_cp']:.4g}", f"{r['epsilon_lb_fdp']:.4g}",
             f"{r['pair_epsilon']:.4g}", f"{r['claimed']:.4g}", r["verdict"]] for k, r in out["results"].items()]
    print(format_table(["fits", "seconds", "lb CP", "lb f-DP", "pair", "claim", "verdict"], rows))
    (name, ratio), = out["ratio"].items()
    print(f"\n{name}: {ratio:.2f}x the time; bounds {'identical' if out['same_bounds'] else 'DIFFER'}")
