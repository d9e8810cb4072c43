"""The leaderboard on an accelerator, measured on a sample: refit a stratified sample of the published cells on a
device (``--device cuda``), record each fit's seconds, accuracy and ledger, then (``--report``) extrapolate the
whole grid's wall time on that device and check the refits against the CPU grid.

    python -m scripts.device_sample --device cuda --out docs/scale/device_sample.jsonl [--budget-seconds 240]
    python -m scripts.device_sample --report [--out docs/scale/device_sample.jsonl]

The sample: for every (method, dataset, split) row group of ``configs/leaderboard.yaml``'s current records, the
seed-0 run at the group's median target epsilon, visited round-robin over methods (cheapest CPU fit first within
a method) so that a time budget still covers every method. A refit runs the record's method, hyperparameters,
budget and seed exactly as recorded, on the device, and must spend the recorded ledger (the ledger depends only on
public quantities, never on the device). Floating-point reductions differ between devices, so the refit's
predictions are a different draw of the same randomised training: its accuracy is compared with the CPU grid's
five seeds of the same row through a 95% prediction interval for one more run (mean +- t * sd * sqrt(1 + 1/n)).

The extrapolation scales every current record's recorded CPU fit seconds by its (method, dataset) device/CPU ratio
(the method's median ratio where the pair was not sampled): one process, one cell at a time, so an upper bound on
what concurrent cells sharing the device would take.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

DEFAULT_OUT = "docs/scale/device_sample.jsonl"



#: how far a refit's noise multipliers may sit from the record's: calibration inverts the accountant, whose outward
#: rounding (1e-10 relative, ``methods.privacy.accountant``) moves the calibrated noise in its last digits between
#: code versions; a different mechanism differs by far more
LEDGER_RTOL = 1e-8

def groups(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """The current run records by (method, dataset, split)."""
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("kind", "run") != "run" or r.get("status", "FINISHED") != "FINISHED":
            continue
        p = r["params"]
        out[(p["method"], p["dataset"], p["split"])].append(r)
    return out


def _eps(r: dict[str, Any]) -> float:
    return float(r["params"]["target_epsilon"])


def select(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (method, dataset, split): seed 0 (else the lowest seed) at the median target epsilon;
    ordered round-robin over methods, each method's groups by recorded CPU fit time."""
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (method, _, _), recs in sorted(groups(records).items()):
        epsilons = sorted({_eps(r) for r in recs})
        mid = epsilons[(len(epsilons) - 1) // 2]
        at = sorted((r for r in recs if _eps(r) == mid), key=lambda r: int(r["params"]["seed"]))
        by_method[method].append(at[0])
    for recs in by_method.values():
        recs.sort(key=lambda r: float(r["metrics"].get("fit_seconds", 0.0)))
    out, queues = [], [list(v) for _, v in sorted(by_method.items())]
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def refit(record: dict[str, Any], device: str, commit: str, datasets: dict) -> dict[str, Any]:
    """Fit ``record``'s run on ``device`` as recorded; the compact sample record."""
    import torch

    from bench.datasets import load_dataset
    from bench.provenance import host_description
    from bench.records import ledger_of, spent_epsilon
    from bench.splits import make_task
    from methods import Budget, get_method
    from methods.base import fit_method
    from methods.streams import RunStreams

    p = record["params"]
    cls = get_method(p["method"])
    known = set(getattr(cls.Config, "__dataclass_fields__", {}))
    method = cls(**{k[3:]: v for k, v in p.items() if k.startswith("hp.") and k[3:] in known})
    if p["dataset"] not in datasets:
        datasets[p["dataset"]] = load_dataset(p["dataset"])
    seed = int(p["seed"])
    task = make_task(datasets[p["dataset"]], p["split"], seed)
    budget = Budget(_eps(record), float(p.get("delta") or 0.0)) if method.is_private else Budget(math.inf, 0.0)
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.perf_counter()
    from bench.records import accountant_of
    from methods.privacy.accountant import parse_accountant, using_accountant

    accounted = parse_accountant(accountant_of(record))
    with using_accountant(accountant_of(record)):  # the refit calibrates as the record did
        fitted = fit_method(method, task, budget, RunStreams(seed), device=dev, progress=False)
    proba = fitted.predict_proba()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    seconds = time.perf_counter() - t0
    proba = proba.cpu()
    test = task.test_mask
    acc = float((proba.argmax(1)[test] == task.data.y[test]).float().mean())
    recorded = ledger_of(record)
    same = bool(recorded.same_events(fitted.ledger, rtol=LEDGER_RTOL)) if recorded is not None else \
        fitted.ledger is None
    delta = float(p.get("delta") or 0.0)
    return {"kind": "device-sample", "cell_id": f"{record['cell_id']}@{dev.type}", "target_cell_id": record["cell_id"],
            "target_run_id": record.get("run_id"), "name": record.get("name"), "git_commit": commit,
            "status": "FINISHED", "start_time": int(time.time() * 1000),
            "params": {k: p[k] for k in ("method", "dataset", "split", "seed", "privacy_unit", "target_epsilon",
                                         "delta", "config_hash") if k in p},
            "device": str(dev), "host": host_description(dev), "threads": torch.get_num_threads(),
            "device_fit_seconds": round(seconds, 3), "cpu_fit_seconds": float(record["metrics"].get("fit_seconds", 0)),
            "cpu_threads": int(p.get("threads", 1)), "cpu_host": p.get("host"),
            "peak_device_bytes": int(torch.cuda.max_memory_allocated(dev)) if dev.type == "cuda" else None,
            "test_acc": acc, "cpu_test_acc": float(record["metrics"]["test_acc"]),
            "ledger_equal": same,
            "epsilon": float(fitted.ledger.epsilon(delta, *accounted)) if method.is_private else None,
            "cpu_epsilon": spent_epsilon(record) if method.is_private else None}


def warm_up(methods: list[str], device: str) -> None:
    """One untimed smoke fit per method on a tiny graph: the device context, the BLAS handles and the samplers'
    JIT compilation are not any cell's fit time."""
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods import Budget, get_method
    from methods.base import fit_method
    from methods.streams import RunStreams

    ds = load_dataset("csbm:nodes=200,classes=3,features=8,degree=6")
    tasks = {s: make_task(ds, s, 0) for s in ("random-75-10-15", "private-public")}
    for name in dict.fromkeys(methods):
        cls = get_method(name)
        task = tasks["random-75-10-15"] if tasks["random-75-10-15"].setting in cls.settings else tasks["private-public"]
        budget = Budget(4.0, 1e-4) if cls.privacy_unit != "none" else Budget(math.inf, 0.0)
        fit_method(cls(**cls.smoke_config), task, budget, RunStreams(0), device=device).predict_proba()


def prediction_interval(xs: list[float], level: float = 0.95) -> tuple[float, float]:
    """Two-sided ``level`` prediction interval for one more draw, from ``xs`` (normal model)."""
    from scipy import stats

    n = len(xs)
    m = statistics.fmean(xs)
    if n < 2:
        return m, m
    half = stats.t.ppf(0.5 + level / 2, n - 1) * statistics.stdev(xs) * math.sqrt(1 + 1 / n)
    return m - half, m + half


def report(sample: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per sampled cell: inside the CPU row's prediction interval or not; per method: median device/CPU ratio;
    the whole grid's estimated device seconds against its recorded CPU seconds."""
    rows: dict[tuple, list[float]] = defaultdict(list)
    for r in records:
        if r.get("kind", "run") == "run" and r.get("status", "FINISHED") == "FINISHED":
            p = r["params"]
            rows[(p["method"], p["dataset"], p["split"], _eps(r))].append(float(r["metrics"]["test_acc"]))
    cells, ratio_pair, ratio_method = [], {}, defaultdict(list)
    for s in sample:
        p = s["params"]
        lo, hi = prediction_interval(rows.get((p["method"], p["dataset"], p["split"], float(p["target_epsilon"])),
                                              [s["cpu_test_acc"]]))
        inside = lo - 1e-12 <= s["test_acc"] <= hi + 1e-12
        cells.append({"name": s["name"], "acc": s["test_acc"], "interval": (lo, hi), "inside": inside,
                      "ledger_equal": s["ledger_equal"]})
        if s["cpu_fit_seconds"] > 0:
            r = s["device_fit_seconds"] / s["cpu_fit_seconds"]
            ratio_pair[(p["method"], p["dataset"])] = r
            ratio_method[p["method"]].append(r)
    med = {m: statistics.median(v) for m, v in ratio_method.items()}
    cpu_total = dev_total = 0.0
    unestimated = 0
    for r in records:
        if r.get("kind", "run") != "run":
            continue
        p, cpu = r["params"], float(r["metrics"].get("fit_seconds", 0.0))
        ratio = ratio_pair.get((p["method"], p["dataset"]), med.get(p["method"]))
        cpu_total += cpu
        if ratio is None:
            unestimated += 1
            dev_total += cpu  # no device figure for this method: counted at its CPU time
        else:
            dev_total += cpu * ratio
    return {"cells": cells, "inside": sum(c["inside"] for c in cells), "sampled": len(cells),
            "ledgers_equal": sum(c["ledger_equal"] for c in cells), "ratio_by_method": med,
            "cpu_seconds": cpu_total, "device_seconds_estimate": dev_total, "records": len(records),
            "records_without_device_figure": unestimated}


def format_report(rep: dict[str, Any], sample: list[dict[str, Any]]) -> str:
    dev = sorted({s["host"] for s in sample})
    lines = [f"device: {', '.join(dev)}; {rep['sampled']} cells refit, ledgers equal to the CPU records' in "
             f"{rep['ledgers_equal']}, accuracy inside the CPU row's 95% prediction interval in {rep['inside']}",
             f"grid: {rep['records']} records, recorded CPU fit time {rep['cpu_seconds'] / 3600:.2f} h; estimated on "
             f"the device {rep['device_seconds_estimate'] / 3600:.2f} h (one cell at a time; "
             f"{rep['records_without_device_figure']} records of unsampled methods counted at CPU time)", "",
             "| method | cells | device / CPU fit time (median) |", "|---|---|---|"]
    per = defaultdict(int)
    for s in sample:
        per[s["params"]["method"]] += 1
    for m, r in sorted(rep["ratio_by_method"].items()):
        lines.append(f"| `{m}` | {per[m]} | {r:.2f} |")
    out = [c for c in rep["cells"] if not c["inside"] or not c["ledger_equal"]]
    if out:
        lines += ["", "outside (or ledger differs):"]
        lines += [f"- {c['name']}: {c['acc']:.3f} not in [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}]"
                  + ("" if c["ledger_equal"] else " LEDGER DIFFERS") for c in out]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.device_sample", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/leaderboard.yaml")
    p.add_argument("--runs", default="docs/leaderboard/runs/", help="the CPU grid's export")
    p.add_argument("--out", default=DEFAULT_OUT, help="the sample's records (appended; default %(default)s)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--budget-seconds", type=float, default=math.inf, help="start no cell after this long")
    p.add_argument("--methods", nargs="*", help="only these methods")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default 0: torch's default)")
    p.add_argument("--commit", help="the commit to record (default: HEAD of a clean work tree)")
    p.add_argument("--report", action="store_true", help="report on --out instead of refitting")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)

    from pathlib import Path

    from bench import api, records, tracking

    if not Path(args.runs).exists():
        print(f"error: {args.runs} not found", file=sys.stderr)
        return 2
    current = api.config_records(args.config, records.load(args.runs))
    if args.report:
        if not Path(args.out).exists():
            print(f"error: {args.out} not found", file=sys.stderr)
            return 2
        sample = records.load(args.out)
        print(format_report(report(sample, current), sample))
        return 0
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("error: --device cuda but no CUDA device is visible", file=sys.stderr)
        return 2
    todo = [r for r in select(current) if not args.methods or r["params"]["method"] in args.methods]
    done = {r["target_cell_id"] for r in records.load(args.out)} if Path(args.out).exists() else set()
    todo = [r for r in todo if r["cell_id"] not in done]
    print(f"# {len(todo)} cells to refit on {args.device}", file=sys.stderr)
    if args.dry_run:
        for r in todo:
            print(r["name"])
        return 0
    if args.commit:
        commit = args.commit
    else:
        from bench.studies._common import clean_commit

        commit = clean_commit()
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    warm_up([r["params"]["method"] for r in todo], args.device)
    print(f"# warm-up fits: {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    cache: dict = {}
    t_all = time.perf_counter()
    for i, r in enumerate(todo, 1):
        if time.perf_counter() - t_all > args.budget_seconds:
            print(f"# budget spent: {len(todo) - i + 1} cells left", file=sys.stderr)
            break
        try:
            rec = refit(r, args.device, commit, cache)
        except Exception as e:  # one cell's failure is a finding, not the end of the sample
            print(f"[{i}/{len(todo)}] {r['name']}: error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            continue
        if not args.commit and tracking.code_tree():  # the tree a manifest-named commit's files hash to
            rec.setdefault("code_tree", tracking.code_tree())
        records.append(args.out, rec)
        print(f"[{i}/{len(todo)}] {r['name']}: {rec['device_fit_seconds']:.2f}s (cpu {rec['cpu_fit_seconds']:.1f}s) "
              f"acc {rec['test_acc']:.3f} (cpu {rec['cpu_test_acc']:.3f}) ledger {'=' if rec['ledger_equal'] else '!='}",
              file=sys.stderr, flush=True)
    print(f"# done in {time.perf_counter() - t_all:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
