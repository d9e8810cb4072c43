"""``bench perf drw-sampler``: the compiled disjoint-random-walk sampler vs the paper's pseudo-code in pure Python,
on the same graph in one run (both build their own adjacency structure from ``edge_index``).

    bench perf drw-sampler [--dataset csbm:nodes=1000000,degree=10] [--walk-length 3] [--restarts 1]
                           [--orders coalesced,shuffled] [--repeats 3] [--no-naive] [--baseline-rev REV] [--json]

``coalesced`` is the loader's ``edge_index`` (sorted by source, then target, no duplicate); ``shuffled`` the same
edges in a random column order (the same graph, uncoalesced: what a user-built ``edge_index`` may look like).
Both samplers see the same input per order; the fast one is the median of ``--repeats`` runs (CSR build
included), the pseudo-code one run. The speed-up is pseudo-code / fast, per order.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


from bench.cliargs import list_arg
from bench.perf import benchmark, common_args, emit, format_table, machine, run_baseline, set_threads

ORDERS = ("coalesced", "shuffled")


def perf_drw_sampler(dataset: str = "csbm:nodes=1000000,degree=10", walk_length: int = 3, restarts: int = 1,
                     data_root: str | None = None, repeats: int = 3, naive: bool = True,
                     orders: tuple[str, ...] = ORDERS) -> dict:
    import torch
    from bench.datasets import load_dataset
    from methods.samplers.random_walks import disjoint_random_walks, naive_disjoint_random_walks

    d = load_dataset(dataset, data_root).data
    ei, n = d.edge_index, int(d.num_nodes)
    t = time.perf_counter()
    disjoint_random_walks(torch.tensor([[0, 1], [1, 0]]), 2, 1)  # JIT compile (cached on disk afterwards)
    compile_s = time.perf_counter() - t
    out = {"benchmark": "drw-sampler", "dataset": dataset, "nodes": n, "directed_edges": int(ei.size(1)),
           "walk_length": walk_length, "restarts": restarts, "threads": torch.get_num_threads(),
           "jit_compile_seconds": compile_s, "orders": {}}
    for order in orders:
        if order == "shuffled":
            e = ei[:, torch.randperm(ei.size(1), generator=torch.Generator().manual_seed(0))]
        elif order == "coalesced":
            e = ei
        else:
            raise ValueError(f"unknown edge order {order!r} (coalesced, shuffled)")
        fast = []
        subgraphs = 0
        for r in range(repeats):
            t = time.perf_counter()
            nodes, ptr = disjoint_random_walks(e, n, walk_length, restarts, generator=torch.Generator().manual_seed(r))
            fast.append(time.perf_counter() - t)
            subgraphs = int(ptr.numel() - 1)
        row = {"fast_seconds": statistics.median(fast), "subgraphs": subgraphs}
        if naive:
            t = time.perf_counter()
            naive_disjoint_random_walks(e, n, walk_length, restarts, seed=0)
            row["naive_seconds"] = time.perf_counter() - t
            row["speedup"] = row["naive_seconds"] / row["fast_seconds"]
        out["orders"][order] = row
    # the former output's top-level keys (the first order's figures)
    first = out["orders"][orders[0]]
    out.update(fast_seconds=first["fast_seconds"], subgraphs=first["subgraphs"])
    if naive:
        out.update(naive_seconds=first["naive_seconds"], speedup=first["speedup"])
    return out


@benchmark("drw-sampler", "disjoint random walks: compiled sampler vs the pure-Python pseudo-code")
def _args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--dataset", default="csbm:nodes=1000000,degree=10",
                   help="any dataset name (default: a 1,000,000-node csbm of average degree ~10)")
    q.add_argument("--walk-length", type=int, default=3)
    q.add_argument("--restarts", type=int, default=1)
    list_arg(q, "--orders", default=list(ORDERS), metavar="ORDER",
             help="edge orders to time: coalesced (as loaded), shuffled (uncoalesced)")
    q.add_argument("--repeats", type=int, default=3, help="runs of the fast sampler (median reported)")
    q.add_argument("--no-naive", action="store_true", help="skip the (slow) pure-Python reference")
    q.add_argument("--data-root")
    common_args(q)
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    orders = tuple(args.orders)
    if not orders or any(o not in ORDERS for o in orders):
        raise ConfigError(f"--orders takes a comma-separated subset of {', '.join(ORDERS)} (got {','.join(orders)!r})")
    if args.repeats < 1:
        raise ConfigError("--repeats must be >= 1")
    set_threads(args.threads)
    start = machine()
    base = None
    if args.baseline_rev:  # the former benchmark times the loader's (coalesced) order, fast sampler only
        argv = ["perf", "drw-sampler", "--dataset", args.dataset, "--walk-length", str(args.walk_length),
                "--restarts", str(args.restarts), "--repeats", str(args.repeats), "--no-naive", "--json"]
        base = run_baseline(args.baseline_rev, argv + (["--data-root", args.data_root] if args.data_root else []))
    out = perf_drw_sampler(args.dataset, args.walk_length, args.restarts, args.data_root, args.repeats,
                           naive=not args.no_naive, orders=orders)
    out["machine"] = start
    if base is not None:
        out["baseline"] = base
    return emit(out, args, _render)


def _render(out: dict) -> None:
    print(f"# {out['dataset']}: {out['nodes']:,} nodes, {out['directed_edges']:,} directed edges, "
          f"L={out['walk_length']}, R={out['restarts']}; JIT compile {out['jit_compile_seconds']:.2f}s (once)",
          file=sys.stderr)
    rows = []
    for order, r in out["orders"].items():
        rows.append([order, f"{r['fast_seconds']:.3f}", f"{r['naive_seconds']:.2f}" if "naive_seconds" in r else "-",
                     f"{r['speedup']:.1f}x" if "speedup" in r else "-", str(r["subgraphs"])])
    base = out.get("baseline")
    if base and "fast_seconds" in base:
        rows.append([f"coalesced @ {base['rev']}", f"{base['fast_seconds']:.3f}", "-", "-", str(base["subgraphs"])])
    elif base:
        print(f"# baseline {base.get('rev')} failed: {base.get('error')}", file=sys.stderr)
    print(format_table(["edge order", "fast s (CSR included)", "pseudo-code s", "speed-up", "subgraphs"], rows))
