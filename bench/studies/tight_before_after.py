"""Before/after the ``tight`` accountant, at equal target epsilon: noise, spent epsilon and test accuracy per family.

    python -m scripts.tight_before_after [--datasets cora] [--methods M ...] [--seeds 0 1 2 3 4] [--workers 2]
                                         [--out docs/accountants/tight_before_after.jsonl] [--table]

Every private cell of ``configs/leaderboard.yaml`` on the given datasets and seeds is fitted twice in this run, on
this machine, with the same streams: once calibrated and reported with the accountant runs used before version
1.0.0 (``rdp/improved``) and once with ``tight`` (``methods.privacy.accountant``). One JSON line per fit is appended
to ``--out`` (a killed run resumes: fits already there are skipped); ``--table`` prints the Markdown table of the
means per method and target epsilon from that file. Untracked fits (no MLflow run, no released model): a
measurement for the accountants' page, not leaderboard records.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

ACCOUNTANTS = ("rdp/improved", "tight")
#: the info key that holds each family's calibrated noise (or, for DRW, the steps the budget bought)
NOISE_KEYS = ("noise_multiplier", "sigma", "lam", "scale", "steps")


def _fit(cell: dict[str, Any], accountant: str, threads: int, device: str = "cpu") -> dict[str, Any]:
    import torch

    from bench import api
    from methods.privacy import accountant as A

    torch.set_num_threads(threads)
    with A.using_accountant(accountant):  # what the calibration and the report read
        (r,) = api.run(cell["method"], cell["dataset"], split=cell["split"], seeds=[cell["seed"]],
                       epsilon=cell["epsilon"], device=device, track=False, threads=threads)
    return {**cell, "accountant": accountant, "device": device, "epsilon_spent": r.epsilon, "delta": r.delta,
            "test_acc": r.metrics.get("test_acc"), "seconds": r.seconds,
            "info": {k: v for k, v in r.info.items() if isinstance(v, (int, float, str, bool))}}


def _key(row: dict[str, Any]) -> tuple:
    return (row["method"], row["dataset"], row["split"], float(row["epsilon"]), int(row["seed"]), row["accountant"])


def plan(datasets: list[str], methods: list[str] | None, seeds: list[int]) -> list[dict[str, Any]]:
    from bench import api

    out, seen = [], set()
    for c in api.cells("configs/leaderboard.yaml"):
        if c.kind != "run" or not math.isfinite(c.epsilon) or c.dataset not in datasets or c.seed not in seeds:
            continue
        if methods and c.method not in methods:
            continue
        cell = {"method": c.method, "dataset": c.dataset, "split": c.split, "epsilon": float(c.epsilon),
                "seed": int(c.seed)}
        k = tuple(cell.values())
        if k not in seen:
            seen.add(k)
            out.append(cell)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    from bench.studies._common import markdown

    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[(r["method"], r["dataset"], r["split"], r["epsilon"])][r["accountant"]].append(r)
    body = []
    for (method, dataset, split, eps), by in sorted(groups.items()):
        if not all(a in by for a in ACCOUNTANTS):
            continue
        b, a = by["rdp/improved"], by["tight"]
        present = [k for k in NOISE_KEYS if k in b[0]["info"] and k in a[0]["info"]]
        # the parameter the calibration moved (DRW keeps its noise and buys steps), else the first one present
        key = next((k for k in present if b[0]["info"][k] != a[0]["info"][k]), present[0] if present else None)

        def mean(rs: list, f) -> float:
            vals = [f(r) for r in rs if f(r) is not None]
            return sum(vals) / len(vals) if vals else math.nan

        def acc(rs: list) -> str:
            vals = [r["test_acc"] for r in rs if r["test_acc"] is not None]
            m = sum(vals) / len(vals)
            sd = (sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else 0.0
            return f"{100 * m:.1f} ± {100 * sd:.1f}"

        noise = (f"{key}: {mean(b, lambda r: r['info'].get(key)):.4g} → {mean(a, lambda r: r['info'].get(key)):.4g}"  # noqa: B023 - called within this iteration
                 if key else "-")
        body.append([method, dataset, split, f"{eps:g}", noise,
                     f"{mean(b, lambda r: r['epsilon_spent']):.3f} → {mean(a, lambda r: r['epsilon_spent']):.3f}",
                     f"{acc(b)} → {acc(a)}", f"{len(a)}"])
    return markdown(["method", "dataset", "split", "target ε", "noise (or DRW's steps), before → after",
                     "spent ε before → after", "test accuracy % (mean ± sd) before → after", "seeds"], body)


def family_summary(rows: list[dict[str, Any]]) -> str:
    """Per method over its cells (dataset x split x target): the calibrated parameter's ratio after / before (lam is
    1 / noise: its inverse), and the test accuracy's change in points, mean over the cells' seed means."""
    from bench.studies._common import markdown

    by: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[(r["method"], r["dataset"], r["split"], r["epsilon"])][r["accountant"]].append(r)
    fam: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for (method, *_), got in by.items():
        if not all(a in got for a in ACCOUNTANTS):
            continue
        b, a = got["rdp/improved"], got["tight"]
        for key in ("noise_multiplier", "lam", "steps"):
            vb = [r["info"][key] for r in b if key in r["info"]]
            va = [r["info"][key] for r in a if key in r["info"]]
            if vb and va and sum(vb) != sum(va):
                ratio = (sum(va) / len(va)) / (sum(vb) / len(vb))
                fam[method][key].append(1 / ratio if key == "lam" else ratio)
                break
        acc = lambda rs: sum(r["test_acc"] for r in rs) / len(rs)  # noqa: E731
        fam[method]["acc"].append(100 * (acc(a) - acc(b)))
        fam[method]["seeds"].append(min(len(a), len(b)))
    body = []
    for method, d in sorted(fam.items()):
        moved = next((k for k in ("noise_multiplier", "lam", "steps") if d.get(k)), None)
        what = "-" if moved is None else (
            f"{'steps' if moved == 'steps' else 'noise'} x{min(d[moved]):.3f}-{max(d[moved]):.3f}")
        body.append([method, str(len(d["acc"])), what, f"{sum(d['acc']) / len(d['acc']):+.2f}",
                     f"{min(d['acc']):+.1f} / {max(d['acc']):+.1f}", f"{min(d['seeds'])}-{max(d['seeds'])}"])
    return markdown(["method", "cells", "calibrated after / before", "accuracy change, mean (points)",
                     "min / max", "seeds per cell"], body)


def reaccount(paths: list[str]) -> str:
    """The published records' own ledgers (their noise, as calibrated) under ``tight`` against the epsilon they
    published (``rdp/improved``): the ratio per method, min-median-max."""
    import glob
    import statistics

    from bench.records import accountant_of
    from methods.privacy import PrivacyLedger
    from bench.studies._common import markdown

    ratios: dict[str, list[float]] = defaultdict(list)
    for path in paths:
        for f in sorted(glob.glob(os.path.join(path, "*.jsonl")) if os.path.isdir(path) else [path]):
            with open(f) as fh:
                for line in fh:
                    r = json.loads(line)
                    led = r.get("ledger")
                    if r.get("kind", "run") != "run" or not led or led.get("non_private_use") or not led["events"]:
                        continue
                    ledger, delta = PrivacyLedger.from_dict(led), float(r["params"]["delta"])
                    before = ledger.epsilon(delta, *accountant_of(r).split("/"))
                    after = ledger.epsilon(delta, "tight")
                    ratios[(r["params"]["method"], r["params"]["split"] == "public")].append(after / before)
    body = [[m + (" (public split)" if pub else ""), str(len(v)), f"{min(v):.3f}", f"{statistics.median(v):.3f}",
             f"{max(v):.3f}"] for (m, pub), v in sorted(ratios.items())]
    return markdown(["method", "records", "tight / published, min", "median", "max"], body)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["cora"])
    p.add_argument("--methods", nargs="+")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cpu (default: like for like with the published CPU records) or cuda")
    p.add_argument("--out", default="docs/accountants/tight_before_after.jsonl")
    p.add_argument("--table", action="store_true", help="print the tables from --out and stop")
    p.add_argument("--reaccount", nargs="+", metavar="EXPORT",
                   help="print the published records' epsilons under tight against their own, and stop")
    args = p.parse_args(argv)
    done = []
    if os.path.exists(args.out):
        with open(args.out) as f:
            done = [json.loads(line) for line in f if line.strip()]
    if args.reaccount:
        print(reaccount(args.reaccount))
        return 0
    if args.table:
        print(family_summary(done) + "\n\n" + table(done))
        return 0
    have = {_key(r) for r in done}
    jobs = [(c, a) for c in plan(args.datasets, args.methods, args.seeds) for a in ACCOUNTANTS
            if _key({**c, "accountant": a}) not in have]
    print(f"{len(jobs)} fits to run ({len(have)} already in {args.out})", file=sys.stderr)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    # fresh processes: a forked worker cannot use a CUDA context its parent opened
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool, open(args.out, "a") as out:
        futures = {pool.submit(_fit, c, a, args.threads, args.device): (c, a) for c, a in jobs}
        for i, fut in enumerate(as_completed(futures), 1):
            c, a = futures[fut]
            try:
                row = fut.result()
            except Exception as e:
                print(f"error: {c} {a}: {e}", file=sys.stderr)
                continue
            out.write(json.dumps(row, sort_keys=True) + "\n")
            out.flush()
            print(f"[{i}/{len(jobs)}] {c['method']} {c['dataset']} eps={c['epsilon']:g} s{c['seed']} {a}: "
                  f"eps {row['epsilon_spent']:.3f} acc {row['test_acc']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
