"""``bench perf privgnn-teachers``: PrivGNN teacher throughput (teachers/s), batched vs one by one.

    bench perf privgnn-teachers [--teachers 16] [--nodes 750] [--features 767] [--classes 10]
                                [--private 2500] [--degree 6.3] [--epochs 50] [--rounds 3] [--threads 0]

Each teacher is PrivGNN's: a 2-layer GraphSAGE (hidden 64, batch norm, dropout 0.5, Adam lr 0.01) trained
full batch on the subgraph induced by ``--nodes`` random private nodes. Defaults mimic Amazon Computers
(2500 private nodes, 767 binary bag-of-words features with density 0.35, average degree 6.3, K = 750).
Variants, timed in interleaved rounds on the same teachers:

* ``one-by-one (PyG)``: the straightforward loop -- per teacher a PyG ``GraphSAGE(norm="batch_norm")``
  on its subgraph (sparse CSR adjacency), trained alone;
* ``one-by-one (batched code)``: our batched trainer with one teacher per batch;
* ``batched``: our trainer with all ``--teachers`` teachers in one batch.

Reported: seconds per teacher for ``--epochs`` epochs (time is linear in epochs), teachers/s, and the
median over rounds of each variant's speed-up over the PyG loop. Inference (one query per teacher) is
included in every variant.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from bench.perf import benchmark


def _synthetic(private: int, features: int, classes: int, degree: float, gen: torch.Generator):
    x = (torch.rand(private, features, generator=gen) < 0.35).float()
    y = torch.randint(0, classes, (private,), generator=gen)
    m = int(private * degree / 2)
    ei = torch.randint(0, private, (2, m), generator=gen)
    ei = ei[:, ei[0] != ei[1]]
    ei = torch.unique(torch.cat([ei, ei.flip(0)], 1), dim=1)
    return x, y, ei


def perf_privgnn_teachers(teachers: int = 16, nodes: int = 750, features: int = 767, classes: int = 10,
                          private: int = 2500, degree: float = 6.3, epochs: int = 50, rounds: int = 3,
                          hidden: int = 64) -> dict:
    import torch.nn.functional as F
    from torch_geometric.utils import subgraph

    from methods.models import Backbone, prepare_graph
    from methods.privgnn.teachers import BatchedSAGE, build_batch, mean_aggregate, train_teachers

    gen = torch.Generator().manual_seed(0)
    x, y, ei = _synthetic(private, features, classes, degree, gen)
    sets = [torch.randperm(private, generator=gen)[:nodes] for _ in range(teachers)]
    # a public "query" graph: the same synthetic graph serves, one query node per teacher
    deg = torch.zeros(private).index_add_(0, ei[1], torch.ones(ei.size(1)))
    agg_x = mean_aggregate(x, ei[0], ei[1], torch.where(deg > 0, 1 / deg.clamp(min=1), torch.zeros_like(deg)))
    queries = torch.randint(0, private, (teachers,), generator=gen)

    g_query = prepare_graph("sage", x, ei, private)

    def pyg_loop() -> None:
        for i, s in enumerate(sets):
            torch.manual_seed(i)
            model = Backbone("sage", features, classes, hidden=hidden, layers=2, dropout=0.5, norm="batch_norm")
            sub, _ = subgraph(s, ei, relabel_nodes=True, num_nodes=private)
            g = prepare_graph("sage", x[s], sub, s.numel())
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            model.train()
            for _ in range(epochs):
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(g), y[s]).backward()
                opt.step()
            model.eval()
            with torch.no_grad():
                model(g_query)[queries[i]]

    def batched(size: int):
        def run() -> None:
            for start in range(0, teachers, size):
                idx = list(range(start, min(teachers, start + size)))
                gens = [torch.Generator().manual_seed(i) for i in idx]
                batch = build_batch(x, y, ei, [sets[i] for i in idx])
                model = BatchedSAGE(gens, features, hidden, classes, dropout=0.5)
                train_teachers(model, batch, gens, epochs=epochs, lr=0.01)
                for j, i in enumerate(idx):
                    model.predict_graph(j, x, agg_x, ei, queries[i:i + 1])
        return run

    variants = {"one-by-one (PyG)": pyg_loop, "one-by-one (batched code)": batched(1),
                f"batched ({teachers} at once)": batched(teachers)}
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    ref = "one-by-one (PyG)"
    seconds = {k: statistics.median(v) for k, v in times.items()}
    speedup = {k: statistics.median(r / t for r, t in zip(times[ref], v)) for k, v in times.items()}
    return {"benchmark": "privgnn-teachers", "threads": torch.get_num_threads(), "teachers": teachers,
            "nodes": nodes, "features": features, "classes": classes, "private_nodes": private,
            "average_degree": degree, "epochs": epochs, "rounds": rounds, "seconds": seconds,
            "seconds_per_teacher": {k: v / teachers for k, v in seconds.items()},
            "teachers_per_second": {k: teachers / v for k, v in seconds.items()},
            "speedup_vs_pyg_loop": speedup}


@benchmark("privgnn-teachers", "PrivGNN teachers per second: batched trainer vs one-by-one PyG GraphSAGE")
def _args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--teachers", type=int, default=16)
    q.add_argument("--nodes", type=int, default=750, help="private nodes per teacher (K)")
    q.add_argument("--features", type=int, default=767)
    q.add_argument("--classes", type=int, default=10)
    q.add_argument("--private", type=int, default=2500, help="private nodes to draw teachers from")
    q.add_argument("--degree", type=float, default=6.3)
    q.add_argument("--epochs", type=int, default=50, help="epochs per teacher (the paper's 200 scale linearly)")
    q.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (medians reported)")
    q.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    if min(args.teachers, args.nodes, args.features, args.classes, args.epochs, args.rounds) < 1:
        raise ConfigError("teachers, nodes, features, classes, epochs and rounds must be >= 1")
    if args.nodes > args.private:
        raise ConfigError(f"--nodes ({args.nodes}) cannot exceed --private ({args.private})")
    if args.threads:
        torch.set_num_threads(args.threads)
    out = perf_privgnn_teachers(args.teachers, args.nodes, args.features, args.classes, args.private, args.degree,
                                args.epochs, args.rounds)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    from bench.run import format_table

    print(f"# {out['teachers']} teachers of {out['nodes']} nodes, {out['features']} features, {out['epochs']} epochs, "
          f"{out['threads']} threads, median of {out['rounds']} interleaved rounds", file=sys.stderr)
    rows = [[k, f"{out['seconds_per_teacher'][k]:.3f}", f"{out['teachers_per_second'][k]:.3f}",
             f"{out['speedup_vs_pyg_loop'][k]:.2f}x"] for k in out["seconds"]]
    print(format_table(["variant", "s / teacher", "teachers / s", "vs one-by-one PyG"], rows))
    return 0
