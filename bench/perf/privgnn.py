"""``bench perf privgnn``: PrivGNN teacher throughput (teachers/s).

    bench perf privgnn [--teachers 16] [--nodes 750] [--features 767] [--classes 10] [--private 2500]
                       [--degree 6.3] [--epochs 50] [--rounds 3] [--threads 0] [--baseline-rev REV] [--json]
    bench perf privgnn --dataset computers [--queries 64] [--epochs 200] [--teacher-batch 32] [--baseline-rev REV]

Synthetic mode (default; ``privgnn-teachers`` is an alias). Each teacher is PrivGNN's: a 2-layer GraphSAGE (hidden
64, batch norm, dropout 0.5, Adam lr 0.01) trained full batch on the subgraph induced by ``--nodes`` random private
nodes. Defaults mimic Amazon Computers (2500 private nodes, 767 binary bag-of-words features with density 0.35,
average degree 6.3, K = 750). Variants, timed in interleaved rounds on the same teachers:

* ``one-by-one (PyG)``: the straightforward loop -- per teacher a PyG ``GraphSAGE(norm="batch_norm")``
  on its subgraph (sparse CSR adjacency), trained alone;
* ``one-by-one (batched code)``: our batched trainer with one teacher per batch;
* ``batched``: our trainer with all ``--teachers`` teachers in one batch.

Reported: seconds per teacher for ``--epochs`` epochs (time is linear in epochs), teachers/s, and the median
over rounds of each variant's speed-up over the PyG loop. Inference (one query per teacher) is included.

Task mode (``--dataset``): PrivGNN's own teacher pipeline on a private-public split -- per query the Poisson
subsample, the KNN, the induced subgraph, the teacher's training and its answer -- for the first ``--queries``
queries of seed 0, in a subprocess of this tree (and of ``--baseline-rev`` when given, alternating ``--rounds``
times); teachers/s, and how far the baseline's noise-free log-posteriors are from this tree's (floating-point
rounding through 200 Adam epochs, not different algorithms) with the share of equal argmaxes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import TYPE_CHECKING
import tempfile
import time


if TYPE_CHECKING:
    import torch

from bench.perf import REPO, baseline_tree, benchmark, common_args, emit, format_table, machine, run_baseline, \
    set_threads


def _synthetic(private: int, features: int, classes: int, degree: float, gen: torch.Generator):
    import torch
    x = (torch.rand(private, features, generator=gen) < 0.35).float()
    y = torch.randint(0, classes, (private,), generator=gen)
    m = int(private * degree / 2)
    ei = torch.randint(0, private, (2, m), generator=gen)
    ei = ei[:, ei[0] != ei[1]]
    ei = torch.unique(torch.cat([ei, ei.flip(0)], 1), dim=1)
    return x, y, ei


def perf_privgnn_teachers(teachers: int = 16, nodes: int = 750, features: int = 767, classes: int = 10,
                          private: int = 2500, degree: float = 6.3, epochs: int = 50, rounds: int = 3,
                          hidden: int = 64, pyg: bool = True) -> dict:
    import torch
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

    variants = {"one-by-one (PyG)": pyg_loop} if pyg else {}
    variants.update({"one-by-one (batched code)": batched(1), f"batched ({teachers} at once)": batched(teachers)})
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    ref = "one-by-one (PyG)" if pyg else "one-by-one (batched code)"
    seconds = {k: statistics.median(v) for k, v in times.items()}
    speedup = {k: statistics.median(r / t for r, t in zip(times[ref], v)) for k, v in times.items()}
    return {"benchmark": "privgnn-teachers", "mode": "synthetic", "threads": torch.get_num_threads(),
            "teachers": teachers, "nodes": nodes, "features": features, "classes": classes, "private_nodes": private,
            "average_degree": degree, "epochs": epochs, "rounds": rounds, "seconds": seconds,
            "seconds_per_teacher": {k: v / teachers for k, v in seconds.items()},
            "teachers_per_second": {k: teachers / v for k, v in seconds.items()},
            "speedup_vs_pyg_loop" if pyg else "speedup_vs_one_by_one": speedup}


#: the task-mode measurement, run as ``python -c`` in a tree (this one or a baseline): the same text in both
_TASK_SNIPPET = r"""
import json, sys, time, torch
args = json.loads(sys.argv[1])
if args["threads"]:
    torch.set_num_threads(args["threads"])
from bench.datasets import load_dataset
from bench.splits import make_task
from methods.privgnn.common import choose_queries, split_graphs
from methods.privgnn.privgnn import PrivGNN
task = make_task(load_dataset(args["dataset"], args["data_root"]), args["split"], 0)
method = PrivGNN(queries=args["queries"], teacher_epochs=args["epochs"], teacher_batch=args["teacher_batch"])
graphs = split_graphs(task, method.config.features)
queries = choose_queries(graphs, args["queries"], 0)
device = torch.device(args.get("device") or "cpu")
if device.type == "cuda":  # the context and the BLAS handles are not the teachers' time
    (torch.ones(8, 8, device=device) @ torch.ones(8, 8, device=device)).sum().item()
t = time.perf_counter()
out = method.teacher_log_posteriors(graphs, queries, 0, device)
if device.type == "cuda":
    torch.cuda.synchronize(device)
seconds = time.perf_counter() - t
if args["save"]:
    torch.save(out, args["save"])
print(json.dumps({"seconds": seconds, "teachers": int(queries.numel())}))
"""


def _task_run(tree, args: dict, save: str | None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", _TASK_SNIPPET, json.dumps({**args, "save": save})], cwd=str(tree),
                         env=env, capture_output=True, text=True)
    if res.returncode != 0:
        return {"error": (res.stderr or res.stdout).strip().splitlines()[-1:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def perf_privgnn_task(dataset: str, split: str, queries: int, epochs: int, teacher_batch: int, rounds: int,
                      threads: int, data_root: str | None, baseline_rev: str | None, device: str = "cpu",
                      sequential: bool = False) -> dict:
    """Task mode. Variants (each a subprocess, alternating over ``rounds``): this tree with ``teacher_batch``
    teachers at once; with ``sequential``, this tree training them one at a time (the batched/sequential ratio and
    the votes' agreement, same run); with ``baseline_rev``, that revision."""
    import torch
    args = {"dataset": dataset, "split": split, "queries": queries, "epochs": epochs, "teacher_batch": teacher_batch,
            "threads": threads, "data_root": data_root, "device": device}
    variants = {"this tree": (REPO, teacher_batch)}
    if sequential:
        variants["this tree, one at a time"] = (REPO, 1)
    if baseline_rev:
        variants[f"@ {baseline_rev}"] = (baseline_tree(baseline_rev), teacher_batch)
    times: dict[str, list[float]] = {k: [] for k in variants}
    errors: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        saved = {k: os.path.join(tmp, f"post{i}.pt") for i, k in enumerate(variants)}
        for r in range(rounds):
            for k, (tree, size) in variants.items():
                res = _task_run(tree, {**args, "teacher_batch": size}, saved[k] if r == 0 else None)
                if "error" in res:
                    errors[k] = res["error"]
                else:
                    times[k].append(res["seconds"])
        out = {"benchmark": "privgnn-teachers", "mode": "task", "dataset": dataset, "split": split, "device": device,
               "queries": queries, "teacher_epochs": epochs, "teacher_batch": teacher_batch, "rounds": rounds,
               "seconds": {k: statistics.median(v) for k, v in times.items() if v},
               "teachers_per_second": {k: queries / statistics.median(v) for k, v in times.items() if v}}
        if errors:
            out["errors"] = errors
        ref = saved["this tree"]
        for k, path in saved.items():
            if k == "this tree" or not (os.path.exists(ref) and os.path.exists(path)):
                continue
            a, b = torch.load(ref), torch.load(path)
            key = "sequential_agreement" if k == "this tree, one at a time" else "baseline_agreement"
            out[key] = {"max_abs_log_posterior_diff": float((a - b).abs().max()),
                        "argmax_equal": float((a.argmax(1) == b.argmax(1)).float().mean())}
        if "this tree, one at a time" in out["seconds"] and "this tree" in out["seconds"]:
            out["batched_speedup_vs_sequential"] = out["seconds"]["this tree, one at a time"] / out["seconds"]["this tree"]
    return out


@benchmark("privgnn", "PrivGNN teachers per second: batched trainer vs one-by-one PyG GraphSAGE (or on a task)",
           aliases=("privgnn-teachers",))
def _args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--teachers", type=int, default=16)
    q.add_argument("--nodes", type=int, default=750, help="private nodes per teacher (K)")
    q.add_argument("--features", type=int, default=767)
    q.add_argument("--classes", type=int, default=10)
    q.add_argument("--private", type=int, default=2500, help="private nodes to draw teachers from")
    q.add_argument("--degree", type=float, default=6.3)
    q.add_argument("--epochs", type=int, default=None,
                   help="epochs per teacher (default 50 synthetic, 200 on a task; time is linear in epochs)")
    q.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (medians reported)")
    q.add_argument("--no-pyg", action="store_true", help="skip the (slow) one-by-one PyG reference")
    q.add_argument("--dataset", help="task mode: a private-public dataset (e.g. computers)")
    q.add_argument("--split", default="private-public")
    q.add_argument("--queries", type=int, default=64, help="task mode: teachers to train (the first queries)")
    q.add_argument("--teacher-batch", type=int, default=32, help="task mode: teachers trained at once")
    q.add_argument("--data-root")
    q.add_argument("--device", default="cpu", help="task mode: where the teachers train (e.g. cuda)")
    q.add_argument("--sequential", action="store_true",
                   help="task mode: also train the same teachers one at a time (batched/sequential ratio, same run)")
    common_args(q)
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    epochs = args.epochs if args.epochs is not None else (200 if args.dataset else 50)
    if min(args.teachers, args.nodes, args.features, args.classes, epochs, args.rounds, args.queries,
           args.teacher_batch) < 1:
        raise ConfigError("teachers, nodes, features, classes, epochs, rounds, queries and teacher-batch must be >= 1")
    if args.nodes > args.private:
        raise ConfigError(f"--nodes ({args.nodes}) cannot exceed --private ({args.private})")
    if args.device != "cpu" and not args.dataset:
        raise ConfigError("--device applies to task mode (--dataset)")
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"--device {args.device}: no CUDA device is visible")
    set_threads(args.threads)
    start = machine()
    if args.dataset:
        out = perf_privgnn_task(args.dataset, args.split, args.queries, epochs, args.teacher_batch, args.rounds,
                                args.threads, args.data_root, args.baseline_rev, args.device, args.sequential)
        out["machine"] = start
        return emit(out, args, _render_task)
    base = None
    if args.baseline_rev:
        argv = ["perf", "privgnn-teachers", "--teachers", str(args.teachers), "--nodes", str(args.nodes),
                "--features", str(args.features), "--classes", str(args.classes), "--private", str(args.private),
                "--degree", str(args.degree), "--epochs", str(epochs), "--rounds", str(args.rounds),
                "--threads", str(args.threads), "--json"]
        base = run_baseline(args.baseline_rev, argv)
    out = perf_privgnn_teachers(args.teachers, args.nodes, args.features, args.classes, args.private, args.degree,
                                epochs, args.rounds, pyg=not args.no_pyg)
    out["machine"] = start
    if base is not None:
        out["baseline"] = base
    return emit(out, args, _render)


def _render(out: dict) -> None:
    print(f"# {out['teachers']} teachers of {out['nodes']} nodes, {out['features']} features, {out['epochs']} epochs, "
          f"{out['threads']} threads, median of {out['rounds']} interleaved rounds", file=sys.stderr)
    key = "speedup_vs_pyg_loop" if "speedup_vs_pyg_loop" in out else "speedup_vs_one_by_one"
    rows = [[k, f"{out['seconds_per_teacher'][k]:.3f}", f"{out['teachers_per_second'][k]:.3f}",
             f"{out[key][k]:.2f}x"] for k in out["seconds"]]
    base = out.get("baseline")
    if base and "teachers_per_second" in base:
        rows += [[f"{k} @ {base['rev']}", f"{base['seconds_per_teacher'][k]:.3f}",
                  f"{base['teachers_per_second'][k]:.3f}", f"{base['speedup_vs_pyg_loop'][k]:.2f}x"]
                 for k in base["seconds"]]
    elif base:
        print(f"# baseline {base.get('rev')} failed: {base.get('error')}", file=sys.stderr)
    ref = "one-by-one PyG" if key == "speedup_vs_pyg_loop" else "one-by-one (batched code)"
    print(format_table(["variant", "s / teacher", "teachers / s", f"vs {ref} (same run)"], rows))


def _render_task(out: dict) -> None:
    print(f"# {out['dataset']} ({out['split']}): the first {out['queries']} queries' teachers (subsample, KNN, "
          f"subgraph, {out['teacher_epochs']} epochs, answer), {out['teacher_batch']} at once, median of "
          f"{out['rounds']} alternating rounds", file=sys.stderr)
    rows = [[k, f"{out['seconds'][k]:.1f}", f"{out['teachers_per_second'][k]:.3f}",
             f"{1000 / out['teachers_per_second'][k] / 60:.1f}"] for k in out["seconds"]]
    print(format_table(["code", "s", "teachers / s", "min for |Q| = 1000 (extrapolated)"], rows))
    if "batched_speedup_vs_sequential" in out:
        print(f"# batched / one at a time: {out['batched_speedup_vs_sequential']:.2f}x faster", file=sys.stderr)
    for key, what in (("sequential_agreement", "one at a time"), ("baseline_agreement", "the baseline")):
        if key in out:
            a = out[key]
            print(f"# vs {what}: max |log-posterior difference| {a['max_abs_log_posterior_diff']:.2e}, "
                  f"equal argmax on {100 * a['argmax_equal']:.1f}% of queries", file=sys.stderr)
    for k, e in out.get("errors", {}).items():
        print(f"# {k} failed: {e}", file=sys.stderr)
