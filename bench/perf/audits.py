"""``bench perf audits``: the mechanism-level audits (nine kinds at four epsilons by default), their total seconds
and every bound, optionally against a former revision run back to back in the same invocation.

    bench perf audits [--mechanism NAME ...] [--epsilons 0.5 1 2 4] [--trials N] [--workers 2]
                      [--baseline-rev REV] [--json]

Reported: the wall seconds of the whole set (the target: 36 audits in 5 minutes on 2 cores), each audit's seconds,
and each kind's lower bounds (Clopper-Pearson / f-DP) at each epsilon. With ``--baseline-rev`` the same audits run
first from revision REV (serially, in a subprocess, as that revision's ``audit_mechanism``), then this code; the
table shows both totals, their ratio, and whether every bound is bit-identical (or which moved, by how much).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from bench.cliargs import list_arg
from bench.perf import baseline_tree, benchmark, common_args, emit, format_table, machine, set_threads

EPSILONS = (0.5, 1.0, 2.0, 4.0)

#: what a former revision runs: its own audit_mechanism on each job, timed the same way, one JSON line out
_BASELINE = """
import json, sys, time
from audits.mechanism import audit_mechanism
jobs, trials = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out, t0 = [], time.perf_counter()
for name, eps in jobs:
    a = audit_mechanism(name, eps, trials=trials)
    out.append({"mechanism": name, "epsilon": eps, "cp": a.epsilon_lb_cp, "fdp": a.epsilon_lb_fdp,
                "claim": a.epsilon_claimed, "trials": a.trials, "seconds": a.seconds})
print(json.dumps({"audits": out, "seconds": time.perf_counter() - t0}))
"""


def perf_audits(mechanisms: list[str] | None = None, epsilons=EPSILONS, trials: int | None = None,
                workers: int = 1) -> dict:
    """Run the audits with this code (:func:`audits.mechanism.run_audits`) and time the whole set."""
    from audits.mechanism import MECHANISMS, run_audits

    jobs = [(n, float(e)) for n in (mechanisms or list(MECHANISMS)) for e in epsilons]
    t0 = time.perf_counter()
    results = run_audits(jobs, workers=workers, trials=trials)
    seconds = time.perf_counter() - t0
    return {"audits": [{"mechanism": r.mechanism, "epsilon": e, "cp": r.epsilon_lb_cp, "fdp": r.epsilon_lb_fdp,
                        "claim": r.epsilon_claimed, "trials": r.trials, "seconds": r.seconds}
                       for r, (_, e) in zip(results, jobs)],
            "seconds": seconds, "workers": workers, "jobs": jobs}


def run_baseline_audits(rev: str, jobs: list, trials: int | None, timeout: float | None = None) -> dict:
    """The same audits from revision ``rev`` (its files extracted by :func:`bench.perf.baseline_tree`)."""
    import os

    tree = baseline_tree(rev)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    try:
        res = subprocess.run([sys.executable, "-c", _BASELINE, json.dumps(jobs), json.dumps(trials)], cwd=str(tree),
                             env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "rev": rev}
    if res.returncode != 0:
        return {"error": (res.stderr or res.stdout).strip().splitlines()[-1:] or ["failed"], "rev": rev}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["rev"] = rev
    return out


def _args(q: argparse.ArgumentParser) -> None:
    list_arg(q, "--mechanism", metavar="NAME", help="which kinds (default: every registered one)")
    list_arg(q, "--epsilons", item=float, default=list(EPSILONS), metavar="EPS",
             help="claims to audit at (default: 0.5 1 2 4)")
    q.add_argument("--trials", type=int, default=None,
                   help="trials per world in each half (default: each mechanism's own, the published table's)")
    q.add_argument("--workers", type=int, default=1, help="audit processes (default: %(default)s)")
    common_args(q)
    q.set_defaults(func=_run)


@benchmark("audits", "the mechanism-level audits (nine kinds x four epsilons): total seconds and every bound")
def _configure(q: argparse.ArgumentParser) -> None:
    _args(q)


def _run(args: argparse.Namespace) -> int:
    from audits.mechanism import MECHANISMS, validate_audit
    from audits.mechanisms import Mutation
    from methods.errors import ConfigError
    names = args.mechanism or list(MECHANISMS)
    unknown = [n for n in names if n not in MECHANISMS]
    if unknown:
        raise ConfigError(f"unknown mechanism {unknown[0]!r} (known: {', '.join(MECHANISMS)})")
    for n in names:
        for e in args.epsilons:
            validate_audit(n, e, delta=1e-5, trials=MECHANISMS[n].trials if args.trials is None else args.trials,
                           mutation=Mutation(), confidence=0.95)
    set_threads(args.threads)
    out: dict = {"benchmark": "audits", "machine": machine()}
    jobs = [[n, float(e)] for n in names for e in args.epsilons]
    if args.baseline_rev:  # before, then after, back to back
        out["baseline"] = run_baseline_audits(args.baseline_rev, jobs, args.trials)
    out["current"] = perf_audits(names, args.epsilons, args.trials, args.workers)
    base = out.get("baseline")
    if base and "error" not in base:
        out["speedup"] = base["seconds"] / out["current"]["seconds"]
        moved = [{"mechanism": a["mechanism"], "epsilon": a["epsilon"], "cp": (b["cp"], a["cp"]),
                  "fdp": (b["fdp"], a["fdp"])}
                 for a, b in zip(out["current"]["audits"], base["audits"])
                 if (a["cp"], a["fdp"]) != (b["cp"], b["fdp"])]
        out["bounds_identical"] = not moved
        out["bounds_moved"] = moved
    return emit(out, args, _render)


def _table(res: dict) -> str:
    eps = sorted({a["epsilon"] for a in res["audits"]})
    rows = []
    for name in dict.fromkeys(a["mechanism"] for a in res["audits"]):
        mine = {a["epsilon"]: a for a in res["audits"] if a["mechanism"] == name}
        secs = [mine[e]["seconds"] for e in eps if e in mine]
        rows.append([name] + [f"{mine[e]['cp']:.3f} / {mine[e]['fdp']:.3f}" if e in mine else "" for e in eps]
                    + [f"{min(secs):.0f}-{max(secs):.0f}", f"{sum(secs):.0f}"])
    return format_table(["mechanism"] + [f"claim {e:g}" for e in eps] + ["s/audit", "s (sum)"], rows)


def _render(out: dict) -> None:
    base, cur = out.get("baseline"), out["current"]
    if base and "error" in base:
        print(f"# baseline {base.get('rev')} failed: {base.get('error')}", file=sys.stderr)
        base = None
    if base:
        print(f"baseline {base['rev']}: {len(base['audits'])} audits in {base['seconds']:.0f} s (serial)")
        print(_table(base))
        print()
    print(f"this code: {len(cur['audits'])} audits in {cur['seconds']:.0f} s ({cur['workers']} worker(s))")
    print(_table(cur))
    if base:
        print(f"\nspeed-up {out['speedup']:.2f}x ({base['seconds']:.0f} s -> {cur['seconds']:.0f} s); bounds "
              + ("bit-identical" if out["bounds_identical"] else
                 "moved: " + "; ".join(f"{m['mechanism']} at {m['epsilon']:g}: CP {m['cp'][0]:.4f} -> "
                                       f"{m['cp'][1]:.4f}, f-DP {m['fdp'][0]:.4f} -> {m['fdp'][1]:.4f}"
                                       for m in out["bounds_moved"])))
