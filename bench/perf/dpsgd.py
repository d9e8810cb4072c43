"""``bench perf dpsgd``: one DP-SGD step against the non-private step on the same batch and model.

    bench perf dpsgd [--model benchmark|gcn] [--batch B] [--nodes P] [--features 1433] [--hidden H] [--layers 2]
                     [--density 0.05] [--input dense|sparse] [--opacus] [--device cpu] [--baseline-rev REV] [--json]

The batch is ``--batch`` padded subgraphs of <= ``--nodes`` nodes (60-100% real), bag-of-words-like features with
``--density`` non-zeros, a ``--layers``-layer DenseGCN. ``--model`` picks the sizes (each overridable by its flag):
``benchmark`` (256 subgraphs of 10 nodes, hidden 64) or ``gcn``, a GCN of the published DP-GNN runs' size (DP-GNN's
2,000 trees per step of 1 + K = 11 nodes, hidden 256; the vmap route, which would hold 2,000 per-example
gradients of the whole model, is left out). Variants, timed in interleaved rounds (each round times every variant
back to back, so drifting load hits all alike): the non-private step (mean loss, backward, Adam), and the DP-SGD
step (per-example gradients, clipping, noise, Adam) for each per-example-gradient route (``bookkeeping``,
``vmap``); on CUDA also both steps replayed from a CUDA graph (``(graph)``: the private one is
:class:`methods.dpsgd_graph.CapturedStep`, what DP-MLP fits use on a GPU). With ``--input sparse`` every variant
reads the features as :class:`methods.models.SparseRows` (the sparse first layer; vmap densifies) carrying each
subgraph's Gram matrix, computed once before timing as DP-GNN and DRW do for their fixed subgraphs;
``--input sparse-uncached`` makes every private step compute them.

``--opacus`` adds Opacus's step on the same model and batch (its hooks and its ghost clipping, same clipping, noise
and Adam step; dense input) and reports the suite's step over each (``vs_opacus``).

Reported first, the like-for-like ratios (``like_for_like``): the eager book-keeping step / the eager non-private
step and, on CUDA, the captured private step / the captured non-private step (the targets in docs/performance.md
compare these). Then every variant's median time per step and the median over rounds of its time / the eager non-private
time (``ratio``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    import torch

from bench.perf import benchmark, common_args, emit, format_table, machine, run_baseline, set_threads


def _subgraph_batch(batch: int, nodes: int, features: int, classes: int, gen: torch.Generator, device,
                    density: float = 0.05):
    """Padded subgraphs with 60-100% of ``nodes`` real nodes, random symmetric edges, GCN normalisation."""
    import torch
    sizes = torch.randint(max(1, int(0.6 * nodes)), nodes + 1, (batch,), generator=gen)
    mask = (torch.arange(nodes)[None, :] < sizes[:, None]).float()
    x = (torch.rand(batch, nodes, features, generator=gen) < density).float() * mask[..., None]
    a = (torch.rand(batch, nodes, nodes, generator=gen) < 0.3).float()
    a = ((a + a.transpose(1, 2)) > 0).float() * (1 - torch.eye(nodes)) + torch.eye(nodes)
    a = a * mask[:, :, None] * mask[:, None, :]
    deg = a.sum(-1).clamp(min=1)
    adj = a / torch.sqrt(deg[:, :, None] * deg[:, None, :])
    y = torch.randint(0, classes, (batch,), generator=gen)
    return x.to(device), adj.to(device), y.to(device)


#: ``--model`` presets: (batch, nodes, hidden, vmap route timed)
MODELS = {"benchmark": (256, 10, 64, True), "gcn": (2000, 11, 256, False)}

#: like-for-like pairs: (DP-SGD step, the non-private step it is compared with)
LIKE_FOR_LIKE = {"eager": ("bookkeeping", "non-private"), "graph": ("bookkeeping (graph)", "non-private (graph)")}
#: the side-by-side pairs with Opacus (``--opacus``): (the suite's DP-SGD step, Opacus's on the same model and batch)
VS_OPACUS = {"opacus-hooks": ("bookkeeping", "opacus hooks"), "opacus-ghost": ("bookkeeping", "opacus ghost clipping")}


def perf_dpsgd(batch: int = 256, nodes: int = 10, features: int = 1433, hidden: int = 64, layers: int = 2,
               classes: int = 7, device: str = "cpu", min_run_time: float = 2.0, rounds: int = 7,
               density: float = 0.05, sparse: bool = False, modes: tuple[str, ...] = ("bookkeeping", "vmap"),
               cached_grams: bool = True, graphs: bool = True, opacus: bool = False) -> dict:
    import torch
    from torch.utils.benchmark import Timer

    from methods.dpsgd import DPOptimizer
    from methods.models import DenseGCN, SparseFeatures
    from methods.training import resolve_device

    dev = resolve_device(device)
    gen = torch.Generator().manual_seed(0)
    x, adj, y = _subgraph_batch(batch, nodes, features, classes, gen, dev, density)
    if sparse:
        feats = SparseFeatures.from_dense(x.reshape(batch * nodes, features))
        index = torch.arange(batch * nodes, device=dev).view(batch, nodes)
        x = feats.rows(index, feats.gram(index) if cached_grams else None)
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
                             generator=torch.Generator(device=dev).manual_seed(0)) for mode in modes}
    variants = {"non-private": plain_step}
    for mode, dp in dps.items():
        variants[mode] = (lambda d: (lambda: d.step((x, adj), y, noise_std=1.0, denominator=batch)))(dp)
    if dev.type == "cuda" and graphs and not sparse:
        variants.update(_graphed_variants(model, x, adj, y, batch, dev))
    if opacus and not sparse:
        variants.update(_opacus_variants(model, x, adj, y, batch))
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
    like = {name: statistics.median(t / b for t, b in zip(times[dp], times[plain]))
            for name, (dp, plain) in LIKE_FOR_LIKE.items() if dp in times and plain in times}
    vs_opacus = {name: statistics.median(t / b for t, b in zip(times[ours], times[theirs]))
                 for name, (ours, theirs) in VS_OPACUS.items() if ours in times and theirs in times}
    params = sum(p.numel() for p in model.parameters())
    return {"benchmark": "dpsgd-step", "device": str(dev), "threads": torch.get_num_threads(), "batch": batch,
            "nodes": nodes, "features": features, "density": density,
            "input": ("sparse" if cached_grams else "sparse-uncached") if sparse else "dense",
            "hidden": hidden, "layers": layers, "parameters": params, "rounds": rounds, "like_for_like": like,
            **({"vs_opacus": vs_opacus} if vs_opacus else {}),
            "seconds": results, "ratio": ratios}


def _opacus_variants(model, x, adj, y, batch: int) -> dict:
    """Opacus's DP-SGD step on copies of the same model and batch, with the same clipping (1.0, flat), noise
    (multiplier 1.0, mean over ``batch``) and Adam step: its hooks (``GradSampleModule``: per-example gradients
    materialised) and its ghost clipping (``GradSampleModuleFastGradientClipping``: per-example norms, then a
    second backward pass)."""
    import copy
    import warnings

    import torch
    from opacus import GradSampleModule
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizer as OpacusOptimizer, DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

    # the inputs need no gradient, so torch says every full backward hook fires on the outputs: what both modes use
    warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
    hooks = GradSampleModule(copy.deepcopy(model))
    hooks_opt = OpacusOptimizer(torch.optim.Adam(hooks.parameters(), lr=1e-3), noise_multiplier=1.0,
                                max_grad_norm=1.0, expected_batch_size=batch, loss_reduction="mean")
    ghost = GradSampleModuleFastGradientClipping(copy.deepcopy(model), max_grad_norm=1.0, use_ghost_clipping=True)
    ghost_opt = DPOptimizerFastGradientClipping(torch.optim.Adam(ghost.parameters(), lr=1e-3), noise_multiplier=1.0,
                                                max_grad_norm=1.0, expected_batch_size=batch, loss_reduction="mean")
    criterion = DPLossFastGradientClipping(ghost, ghost_opt, torch.nn.CrossEntropyLoss(reduction="mean"),
                                           loss_reduction="mean")

    def hooks_step():
        hooks_opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(hooks(x, adj), y).backward()
        hooks_opt.step()

    def ghost_step():
        ghost_opt.zero_grad(set_to_none=True)
        criterion(ghost(x, adj), y).backward()
        ghost_opt.step()

    return {"opacus hooks": hooks_step, "opacus ghost clipping": ghost_step}


def _graphed_variants(model, x, adj, y, batch: int, dev) -> dict:
    """On CUDA: the book-keeping step replayed from one CUDA graph (:class:`methods.dpsgd_graph.CapturedStep`, as
    DP-MLP fits run on a GPU) and, for a like-for-like reference, the non-private step captured the same way: it too
    reads its batch through an index that each step copies to the device and the graph gathers by (a fit draws a
    new batch every step), as the captured private step does."""
    import torch

    from methods.dpsgd import DPOptimizer
    from methods.dpsgd_graph import CapturedStep, make_capturable

    dp = DPOptimizer(model, torch.optim.Adam(model.parameters(), lr=1e-3), clip=1.0, mode="bookkeeping",
                     generator=torch.Generator(device=dev).manual_seed(1))
    make_capturable(dp.optimizer)
    captured = CapturedStep(dp, (x, adj), y, batch, noise_std=1.0, denominator=batch)
    every = torch.arange(batch)

    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    index = torch.zeros(batch, dtype=torch.long, device=dev)  # the graph's input: this step's batch

    def body():
        xb, ab, yb = (t.index_select(0, index) for t in (x, adj, y))
        torch.nn.functional.cross_entropy(model(xb, ab), yb).backward()
        opt.step()

    side = torch.cuda.Stream(dev)  # warm-up and capture on one stream (its cuBLAS workspace exists before capture)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            body()
    side.synchronize()
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph, stream=side):
        body()
    torch.cuda.current_stream(dev).wait_stream(side)

    def plain_step():
        index.copy_(every)
        graph.replay()

    return {"non-private (graph)": plain_step, "bookkeeping (graph)": lambda: captured.step(every)}


@benchmark("dpsgd", "one DP-SGD step over padded subgraphs vs the non-private step")
def _args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--model", choices=sorted(MODELS), default="benchmark",
                   help="sizes: benchmark (256 subgraphs of <= 10 nodes, hidden 64) or gcn (DP-GNN's 2,000 trees of "
                        "<= 11 nodes per step, hidden 256; no vmap route)")
    q.add_argument("--batch", type=int, help="subgraphs per step (default: the --model's)")
    q.add_argument("--nodes", type=int, help="padded subgraph size (default: the --model's)")
    q.add_argument("--features", type=int, default=1433, help="input features (default: Cora's 1433)")
    q.add_argument("--density", type=float, default=0.05, help="fraction of non-zero features (default 0.05)")
    q.add_argument("--hidden", type=int, help="hidden width (default: the --model's)")
    q.add_argument("--layers", type=int, default=2)
    q.add_argument("--input", choices=["dense", "sparse", "sparse-uncached"], default="dense",
                   help="feature tensor the steps read: dense, or sparse rows (methods.models.SparseRows) with the "
                        "subgraphs' Gram matrices precomputed (as DP-GNN and DRW do) or computed every step")
    q.add_argument("--no-vmap", action="store_true", help="skip the (slow) vmap route")
    q.add_argument("--opacus", action="store_true",
                   help="also time Opacus's DP-SGD step on the same model and batch (hooks and ghost clipping; "
                        "dense input), side by side with the suite's")
    q.add_argument("--device", default="cpu")
    q.add_argument("--min-run-time", type=float, default=2.0, help="seconds of timing per variant")
    q.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    common_args(q)
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    batch, nodes, hidden, vmap = MODELS[args.model]
    args.batch = batch if args.batch is None else args.batch
    args.nodes = nodes if args.nodes is None else args.nodes
    args.hidden = hidden if args.hidden is None else args.hidden
    if min(args.batch, args.nodes, args.features, args.hidden, args.layers, args.rounds) < 1:
        raise ConfigError("batch, nodes, features, hidden, layers and rounds must be >= 1")
    if not 0 < args.density <= 1:
        raise ConfigError(f"--density must be in (0, 1] (got {args.density})")
    set_threads(args.threads)
    start = machine()
    base = None
    if args.baseline_rev:  # the former code times dense input with both routes
        argv = ["perf", "dpsgd", "--batch", str(args.batch), "--nodes", str(args.nodes), "--features",
                str(args.features), "--hidden", str(args.hidden), "--layers", str(args.layers), "--device",
                args.device, "--min-run-time", str(args.min_run_time), "--rounds", str(args.rounds),
                "--threads", str(args.threads), "--json"] + (["--no-vmap"] if args.no_vmap or not vmap else [])
        base = run_baseline(args.baseline_rev, argv)
    modes = ("bookkeeping",) if args.no_vmap or not vmap else ("bookkeeping", "vmap")
    out = perf_dpsgd(args.batch, args.nodes, args.features, args.hidden, args.layers, device=args.device,
                     min_run_time=args.min_run_time, rounds=args.rounds, density=args.density,
                     sparse=args.input != "dense", modes=modes, cached_grams=args.input == "sparse",
                     opacus=args.opacus)
    out["model"] = args.model
    out["machine"] = start
    if base is not None:
        out["baseline"] = base
    return emit(out, args, _render)


def _like_for_like(out: dict) -> dict:
    """The like-for-like ratios of a result; for one from a revision that did not report them, from its ratios (the
    graph pair as a ratio of the two medians)."""
    if "like_for_like" in out:
        return out["like_for_like"]
    like, ratio, sec = {}, out.get("ratio", {}), out.get("seconds", {})
    if "bookkeeping" in ratio:
        like["eager"] = ratio["bookkeeping"]
    dp, plain = LIKE_FOR_LIKE["graph"]
    if dp in sec and plain in sec:
        like["graph"] = sec[dp] / sec[plain]
    return like


LIKE_LABELS = {"eager": "eager DP-SGD step / eager non-private step",
               "graph": "captured DP-SGD step / captured non-private step (CUDA graphs)"}


def _render(out: dict) -> None:
    print(f"# one step, {out['batch']} subgraphs of <= {out['nodes']} nodes, {out['features']} {out['input']} "
          f"features ({out['density']:g} non-zero), {out['layers']}-layer GCN, hidden {out['hidden']} "
          f"({out['parameters']} parameters), {out['device']}, {out['threads']} threads", file=sys.stderr)
    base = out.get("baseline")
    if base and "ratio" not in base:
        print(f"# baseline {base.get('rev')} failed: {base.get('error')}", file=sys.stderr)
        base = None
    like, base_like = _like_for_like(out), _like_for_like(base) if base else {}
    rows = [[LIKE_LABELS[k], f"{v:.2f}x"] + ([f"{base_like[k]:.2f}x" if k in base_like else "-"] if base else [])
            for k, v in like.items()]
    print(format_table(["like for like (median of interleaved rounds)", "this tree"]
                       + ([f"@ {base['rev']}"] if base else []), rows))
    print()
    rows = [[k, f"{v * 1000:.2f}", f"{out['ratio'][k]:.2f}x"] for k, v in out["seconds"].items()]
    if base:
        rows += [[f"{k} @ {base['rev']}", f"{v * 1000:.2f}", f"{base['ratio'][k]:.2f}x"]
                 for k, v in base["seconds"].items()]
    print(format_table(["step", "ms (median)", "vs eager non-private (median of interleaved rounds)"], rows))
    if out.get("vs_opacus"):
        print()
        print(format_table(["side by side (median of interleaved rounds)", "the suite's step / Opacus's"],
                           [[f"book-keeping / {VS_OPACUS[k][1]}", f"{v:.2f}x"] for k, v in out["vs_opacus"].items()]))
