"""``bench perf fit``: whole fits of each method family on a device against the same fits on a reference device.

    bench perf fit [--methods dp-mlp dpgnn-adam ...] [--datasets facebook-wisconsin87 computers physics]
                   [--device cuda] [--reference cpu] [--reference-threads 2] [--rounds 1] [--json]

For every (dataset, method) the fit (``Method.fit``, the checked-in hyperparameters of the dataset, the unit's
headline budget: edge 1, node 8, feature 8) is timed on ``--device`` and, unless ``--reference none``, on the
reference device with ``--reference-threads`` torch threads, alternating, medians over ``--rounds``. Loading the data
is not timed; a first small fit on each device warms it up (CUDA context, kernels). The table gives both times and
the speed-up (reference / device), and checks what must not depend on the device: the same ledger events and the
same epsilon.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from bench.cliargs import list_arg
from bench.perf import benchmark, common_args, emit, format_table, machine, set_threads

#: one method per family (the paper configs' representatives)
FAMILIES = ("mlp", "sage", "dp-mlp", "dpgnn-adam", "drw", "gap-edge", "gap-node", "progap-edge", "progap-node",
            "edgerand", "privgnn")
DATASETS = ("facebook-wisconsin87", "computers", "physics")
HEADLINE = {"edge": 1.0, "node": 8.0, "feature": 8.0}


def _fit(cls, task, budget, seed: int, device: str, threads: int, overrides: dict[str, str]):
    import torch

    from methods.base import fit_method
    from methods.streams import RunStreams

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        fitted = fit_method(cls(**overrides), task, budget, RunStreams(seed), device=device)
        proba = fitted.predict_proba()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t
    finally:
        torch.set_num_threads(before)
    acc = float((proba[task.test_mask].argmax(1) == task.data.y[task.test_mask]).float().mean())
    return seconds, fitted, acc


def perf_fit(methods: list[str], datasets: list[str], device: str = "cuda", reference: str | None = "cpu",
             reference_threads: int = 2, rounds: int = 1, seed: int = 0, data_root: str | None = None,
             log=lambda s: None) -> dict[str, Any]:
    import torch

    from bench import hparams as H
    from bench.datasets import load_dataset
    from bench.splits import default_split, make_task
    from methods.base import Budget, default_delta, get_method

    roles = [("device", device, 0)] + ([("reference", reference, reference_threads)] if reference else [])
    warm = make_task(load_dataset("csbm:nodes=300,classes=3,features=8,degree=4"), "random-75-10-15", 0)
    for _, dev, threads in roles:  # CUDA context, cuBLAS handles, first kernels: not the fit's cost
        _fit(get_method("dp-mlp"), warm, Budget(8.0, 1e-4), 0, dev, threads, {"epochs": 1})
    rows = []
    for ds_name in datasets:
        ds = load_dataset(ds_name, data_root)
        for name in methods:
            cls = get_method(name)
            split = default_split(ds.name) if "transductive" in cls.settings else "private-public"
            task = make_task(ds, split, seed)
            units = task.num_nodes if task.setting == "transductive" else int(task.train_mask.sum())
            budget = (Budget(HEADLINE[cls.privacy_unit], default_delta(units)) if cls.privacy_unit in HEADLINE
                      else Budget())
            entry = H.lookup(name, ds.name, split, budget.epsilon)
            known = set(cls.Config.__dataclass_fields__)
            overrides = {k: v for k, v in (entry.values if entry else {}).items() if k in known}
            times: dict[str, list[float]] = {role: [] for role, _, _ in roles}
            eps, events, accs = {}, {}, {}
            for _ in range(rounds):
                for role, dev, threads in roles:
                    s, fitted, acc = _fit(cls, task, budget, seed, dev, threads, overrides)
                    times[role].append(s)
                    eps[role] = fitted.epsilon(budget.delta) if cls.privacy_unit != "none" else float("inf")
                    events[role] = fitted.ledger
                    accs[role] = acc
            row = {"dataset": ds.name, "method": name, "split": split, "epsilon": budget.epsilon,
                   "hparams": entry.label if entry else "defaults",
                   "seconds": {d: statistics.median(v) for d, v in times.items()},
                   "test_acc": accs, "spent_epsilon": eps}
            if reference:
                row["speedup"] = row["seconds"]["reference"] / max(row["seconds"]["device"], 1e-9)
                row["same_ledger"] = bool(events["device"].same_events(events["reference"]))
                row["same_epsilon"] = eps["device"] == eps["reference"]
            rows.append(row)
            log(f"{ds.name} {name}: " + ", ".join(f"{r} {s:.1f}s" for r, s in row["seconds"].items()))
    gpu = torch.cuda.get_device_name(0) if device.startswith("cuda") and torch.cuda.is_available() else None
    return {"benchmark": "fit", "device": device, "gpu": gpu, "reference": reference,
            "reference_threads": reference_threads, "rounds": rounds, "seed": seed, "rows": rows}


@benchmark("fit", "whole fits per method family on a device vs a reference device (e.g. cuda vs 2-thread cpu)")
def _args(q: argparse.ArgumentParser) -> None:
    list_arg(q, "--methods", default=list(FAMILIES), help="default: one per family")
    list_arg(q, "--datasets", default=list(DATASETS), help="default: %(default)s")
    q.add_argument("--device", default="cuda", help="the device timed (default: %(default)s)")
    q.add_argument("--reference", default="cpu", help="the reference device, or 'none' (default: %(default)s)")
    q.add_argument("--reference-threads", type=int, default=2,
                   help="torch threads on the reference device (default 2: the reference machine's cores)")
    q.add_argument("--rounds", type=int, default=1, help="alternating rounds; medians reported (default 1)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--data-root")
    common_args(q, baseline=False)
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    if args.rounds < 1:
        raise ConfigError("--rounds must be >= 1")
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("--device cuda: no CUDA device here (use --device cpu)")
    set_threads(args.threads)
    start = machine()
    ref = None if args.reference in ("none", "") else args.reference
    out = perf_fit(args.methods, args.datasets, args.device, ref, args.reference_threads, args.rounds, args.seed, args.data_root,
                   log=lambda s: print(s, file=sys.stderr, flush=True))
    out["machine"] = start
    return emit(out, args, _render)


def _render(out: dict) -> None:
    ref, dev = out["reference"], out["device"]
    header = ["dataset", "method", "target eps", f"{dev} s"] + ([f"{ref} ({out['reference_threads']} thr) s",
                                                                "speed-up", "same ledger/eps"] if ref else [])
    rows = []
    for r in out["rows"]:
        cells = [r["dataset"], r["method"], f"{r['epsilon']:g}", f"{r['seconds']['device']:.1f}"]
        if ref:
            cells += [f"{r['seconds']['reference']:.1f}", f"{r['speedup']:.1f}x",
                      "yes" if r["same_ledger"] and r["same_epsilon"] else "NO"]
        rows.append(cells)
    print(format_table(header, rows))
