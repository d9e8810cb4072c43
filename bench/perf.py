"""``bench perf``: speed benchmarks, reported as ratios against a reference measured in the same run.

    bench perf dpsgd [--batch 256] [--nodes 10] [--features 1433] [--hidden 64] [--layers 2] [--device cpu]

``dpsgd`` times one DP-SGD step (per-example gradients, clipping, noise, Adam) over a batch of padded
subgraphs against the non-private step (mean loss, backward, Adam) on the same batch and model, for
each per-example-gradient route. Timings are medians of repeated runs (torch.utils.benchmark).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Callable

import torch

from bench.cliargs import COMMANDS, command
from bench.run import format_table


def _subgraph_batch(batch: int, nodes: int, features: int, classes: int, gen: torch.Generator, device):
    """Padded subgraphs with 60-100% of ``nodes`` real nodes, random symmetric edges, GCN normalisation."""
    sizes = torch.randint(max(1, int(0.6 * nodes)), nodes + 1, (batch,), generator=gen)
    mask = (torch.arange(nodes)[None, :] < sizes[:, None]).float()
    x = (torch.rand(batch, nodes, features, generator=gen) < 0.05).float() * mask[..., None]
    a = (torch.rand(batch, nodes, nodes, generator=gen) < 0.3).float()
    a = ((a + a.transpose(1, 2)) > 0).float() * (1 - torch.eye(nodes)) + torch.eye(nodes)
    a = a * mask[:, :, None] * mask[:, None, :]
    deg = a.sum(-1).clamp(min=1)
    adj = a / torch.sqrt(deg[:, :, None] * deg[:, None, :])
    y = torch.randint(0, classes, (batch,), generator=gen)
    return x.to(device), adj.to(device), y.to(device)


def perf_dpsgd(batch: int = 256, nodes: int = 10, features: int = 1433, hidden: int = 64, layers: int = 2,
               classes: int = 7, device: str = "cpu", min_run_time: float = 2.0, rounds: int = 7) -> dict:
    from torch.utils.benchmark import Timer

    from methods.dpsgd import DPOptimizer
    from methods.models import DenseGCN
    from methods.training import resolve_device

    dev = resolve_device(device)
    gen = torch.Generator().manual_seed(0)
    x, adj, y = _subgraph_batch(batch, nodes, features, classes, gen, dev)
    torch.manual_seed(0)
    model = DenseGCN(features, classes, hidden=hidden, layers=layers).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def plain_step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x, adj), y).backward()
        opt.step()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    dps = {mode: DPOptimizer(model, torch.optim.Adam(model.parameters(), lr=1e-3), clip=1.0, mode=mode,
                             generator=torch.Generator(device=dev).manual_seed(0)) for mode in ("bookkeeping", "vmap")}
    variants = {"non-private": plain_step}
    for mode, dp in dps.items():
        variants[mode] = (lambda d: (lambda: d.step((x, adj), y, noise_std=1.0, denominator=batch)))(dp)
    # interleaved rounds: each round times every variant back to back, so drifting machine load
    # hits all of them alike; report the median time and the median of the per-round ratios
    timers = {k: Timer(stmt="fn(); sync()", globals={"fn": fn, "sync": sync}) for k, fn in variants.items()}
    numbers = {}
    for k, fn in variants.items():
        for _ in range(3):
            fn()
        sync()
        per_call = timers[k].timeit(3).median
        numbers[k] = max(1, int(min_run_time / rounds / max(per_call, 1e-6)))
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for k in variants:
            times[k].append(float(timers[k].timeit(numbers[k]).median))
    results = {k: statistics.median(v) for k, v in times.items()}
    ratios = {k: statistics.median(t / b for t, b in zip(v, times["non-private"])) for k, v in times.items()}
    params = sum(p.numel() for p in model.parameters())
    return {"benchmark": "dpsgd-step", "device": str(dev), "threads": torch.get_num_threads(), "batch": batch,
            "nodes": nodes, "features": features, "hidden": hidden, "layers": layers, "parameters": params,
            "rounds": rounds, "seconds": results, "ratio": ratios}


BENCHMARKS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {}


def benchmark(name: str, help_text: str):
    """Register ``configure(parser)`` (adds arguments, sets ``func``) as ``bench perf NAME``.

    Benchmarks of a method family live in their own ``bench/perf_<family>.py`` module; every such
    module is imported when the ``perf`` command is built.
    """

    def deco(configure):
        BENCHMARKS[name] = (help_text, configure)
        return configure

    return deco


@command("perf", "speed benchmarks (ratios against a reference measured in the same run)")
def _perf_parser(sub) -> argparse.ArgumentParser:
    import importlib
    import pkgutil

    import bench

    for mod in pkgutil.iter_modules(bench.__path__):
        if mod.name.startswith("perf_"):
            importlib.import_module(f"bench.{mod.name}")
    p = sub.add_parser("perf", help=COMMANDS["perf"][1], description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", title="benchmarks")
    which.required = True
    for name, (help_text, configure) in BENCHMARKS.items():
        configure(which.add_parser(name, help=help_text))
    return p


@benchmark("dpsgd", "one DP-SGD step over padded subgraphs vs the non-private step")
def _dpsgd_args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--batch", type=int, default=256)
    q.add_argument("--nodes", type=int, default=10, help="padded subgraph size")
    q.add_argument("--features", type=int, default=1433, help="input features (default: Cora's 1433)")
    q.add_argument("--hidden", type=int, default=64)
    q.add_argument("--layers", type=int, default=2)
    q.add_argument("--device", default="cpu")
    q.add_argument("--min-run-time", type=float, default=2.0, help="seconds of timing per variant")
    q.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_perf)


def cmd_perf(args: argparse.Namespace) -> int:
    out = perf_dpsgd(args.batch, args.nodes, args.features, args.hidden, args.layers, device=args.device,
                     min_run_time=args.min_run_time, rounds=args.rounds)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"# one step, {out['batch']} subgraphs of <= {out['nodes']} nodes, {out['features']} features, "
          f"{out['layers']}-layer GCN ({out['parameters']} parameters), {out['device']}, {out['threads']} threads",
          file=sys.stderr)
    rows = [[k, f"{v * 1000:.2f}", f"{out['ratio'][k]:.2f}x"] for k, v in out["seconds"].items()]
    print(format_table(["step", "ms (median)", "vs non-private (median of interleaved rounds)"], rows))
    return 0
