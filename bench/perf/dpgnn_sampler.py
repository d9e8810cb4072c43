"""``bench perf dpgnn-sampler``: DP-GNN's sampler (Algorithms 1-3) against the pseudo-code in plain Python.

    bench perf dpgnn-sampler [--dataset physics] [--relation input-graph] [--max-degree K] [--layers 1]
                             [--max-children 20] [--json]
    bench perf dpgnn-sampler --dataset csbm:nodes=1000000,degree=10 --relation in-edges --max-degree 10

``--relation`` is the methods' (``methods.samplers.dpgnn``): ``input-graph`` (the default, as in ``dpgnn``) keeps
every incoming edge from a training node after checking the declared bound K, which defaults to the dataset's own
largest number of training in-neighbours (a bound it satisfies); ``in-edges`` is the paper's Algorithm 1, K
defaulting to 10. Both sides start from the same ``edge_index`` and training mask, run the same relation and use
the same per-edge coins, so they return the same trees (``tests/test_dpgnn_sampler.py`` checks equality); the
reference is :func:`methods.samplers.dpgnn.reference_sample_edgelists` plus the recursive DFS-TREE of every
training node. The vectorised sampler is timed as the median of ``--repeats`` runs, the reference once (it takes
minutes on a million nodes); the ratio is reference / vectorised, measured in the same process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


from bench.perf import benchmark, common_args, emit, format_table, machine, run_baseline, set_threads


#: the paper's K for Algorithm 1 (``--relation in-edges`` without ``--max-degree``)
PAPER_MAX_DEGREE = 10


def perf_dpgnn_sampler(dataset: str = "physics", split: str = "random-75-10-15", max_degree: int | None = None,
                       layers: int = 1, max_children: int | None = 20, repeats: int = 5, data_root: str | None = None,
                       reference: bool = True, progress: bool = False, relation: str = "input-graph") -> dict:
    import torch
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods.base import ConfigError
    from methods.privacy.presets import DPGNN_RELATIONS, INPUT_GRAPH
    from methods.samplers.dpgnn import (dfs_tree_subgraphs, draw_key, max_train_in_degree, reference_dfs_tree,
                                        reference_sample_edgelists, sample_edgelists)
    from methods.training import progress_bar

    if relation not in DPGNN_RELATIONS:
        raise ConfigError(f"--relation must be one of {', '.join(DPGNN_RELATIONS)} (got {relation!r})")

    t0 = time.perf_counter()
    task = make_task(load_dataset(dataset, data_root), split, 0)
    load_s = time.perf_counter() - t0
    data, _ = task.training_graph()
    train = task.train_mask if task.setting == "transductive" else torch.ones(data.num_nodes, dtype=torch.bool)
    ei, n = data.edge_index, int(data.num_nodes)
    roots = train.nonzero().view(-1)
    key = draw_key(torch.Generator().manual_seed(0))
    if max_degree is None:  # input-graph: a bound the dataset satisfies (its own); in-edges: the paper's K
        max_degree = (max(1, max_train_in_degree(ei, n, train)) if relation == INPUT_GRAPH else PAPER_MAX_DEGREE)

    times, phases = [], []
    for _ in range(repeats):
        a = time.perf_counter()
        lists = sample_edgelists(ei, n, train, max_degree, key=key, relation=relation)
        b = time.perf_counter()
        trees = dfs_tree_subgraphs(lists, roots, layers, max_children)
        c = time.perf_counter()
        times.append(c - a)
        phases.append((b - a, c - b))
    out = {"benchmark": "dpgnn-sampler", "dataset": task.dataset, "nodes": n, "directed_edges": int(ei.size(1)),
           "training_nodes": int(roots.numel()), "relation": relation, "max_degree": max_degree, "layers": layers,
           "max_children": max_children, "threads": torch.get_num_threads(), "load_seconds": load_s,
           "seconds": {"vectorised": statistics.median(times),
                       "vectorised_edgelists": statistics.median(p[0] for p in phases),
                       "vectorised_trees": statistics.median(p[1] for p in phases)},
           "tree_positions": int(trees.mask.sum()), "max_occurrence": int(trees.occurrence().max())}
    if reference:
        a = time.perf_counter()
        lists_ref = reference_sample_edgelists(ei, n, train, max_degree, key, relation=relation)
        b = time.perf_counter()
        bar = progress_bar(int(roots.numel()), "reference DFS-TREE", progress)
        positions = 0
        for i, root in enumerate(roots.tolist()):
            positions += len(reference_dfs_tree(root, lists_ref, layers, max_children))
            if i % 10000 == 0:
                bar.update(min(10000, int(roots.numel()) - i))
        bar.close()
        c = time.perf_counter()
        if positions != out["tree_positions"]:
            raise RuntimeError(f"reference and vectorised samplers disagree ({positions} vs "
                               f"{out['tree_positions']} tree positions)")
        out["seconds"].update({"reference": c - a, "reference_edgelists": b - a, "reference_trees": c - b})
        out["ratio"] = {"reference / vectorised": (c - a) / out["seconds"]["vectorised"],
                        "edgelists": (b - a) / out["seconds"]["vectorised_edgelists"],
                        "trees": (c - b) / max(out["seconds"]["vectorised_trees"], 1e-9)}
    return out


@benchmark("dpgnn-sampler", "DP-GNN degree-bounded sampler (Algorithms 1-3) vs the pseudo-code in Python")
def _args(q: argparse.ArgumentParser) -> None:
    from methods.privacy.presets import DPGNN_RELATIONS, INPUT_GRAPH

    q.add_argument("--dataset", default="physics", help="any dataset name, e.g. csbm:nodes=1000000,degree=10")
    q.add_argument("--split", default="random-75-10-15")
    q.add_argument("--relation", choices=DPGNN_RELATIONS, default=INPUT_GRAPH,
                   help="the sampler's neighbouring relation, both sides: input-graph (every training in-edge kept "
                        "under a declared bound; the methods' default) or in-edges (the paper's Algorithm 1) "
                        "(default: %(default)s)")
    q.add_argument("--max-degree", type=int, default=None,
                   help=f"K (default: input-graph, the dataset's largest number of training in-neighbours; in-edges, "
                        f"the paper's {PAPER_MAX_DEGREE})")
    q.add_argument("--layers", type=int, default=1)
    q.add_argument("--max-children", type=int, default=20, help="0 = no cap")
    q.add_argument("--repeats", type=int, default=5)
    q.add_argument("--data-root")
    q.add_argument("--no-reference", action="store_true", help="time the vectorised sampler only")
    common_args(q)
    q.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    start = machine()
    base = None
    out = perf_dpgnn_sampler(args.dataset, args.split, args.max_degree, args.layers, args.max_children or None,
                             args.repeats, args.data_root, reference=not args.no_reference,
                             progress=sys.stderr.isatty() and not args.json, relation=args.relation)
    if args.baseline_rev:
        base = _baseline(args, out["max_degree"])
    out["machine"] = start
    if base is not None:
        out["baseline"] = base
    return emit(out, args, _render)


def _baseline(args: argparse.Namespace, max_degree: int) -> dict:
    """The same benchmark from ``--baseline-rev`` (the K this run resolved, so both time the same sampler). A
    revision older than ``--relation`` ran Algorithm 1 only: it is compared under ``in-edges`` alone."""
    from bench.perf import baseline_tree

    argv = ["perf", "dpgnn-sampler", "--dataset", args.dataset, "--split", args.split, "--max-degree",
            str(max_degree), "--layers", str(args.layers), "--max-children", str(args.max_children),
            "--repeats", str(args.repeats), "--json"] + (["--data-root", args.data_root] if args.data_root else []) \
        + (["--no-reference"] if args.no_reference else [])
    if "--relation" in (baseline_tree(args.baseline_rev) / "bench" / "perf" / "dpgnn_sampler.py").read_text():
        argv += ["--relation", args.relation]
    elif args.relation != "in-edges":
        return {"rev": args.baseline_rev, "error": f"revision {args.baseline_rev} samples by Algorithm 1 only (no "
                                                   "--relation): compare it with --relation in-edges"}
    return run_baseline(args.baseline_rev, argv)


def _render(out: dict) -> None:
    print(f"# {out['dataset']}: {out['nodes']:,} nodes, {out['directed_edges']:,} directed edges, "
          f"{out['training_nodes']:,} trees ({out.get('relation', 'in-edges')}, K={out['max_degree']}, "
          f"r={out['layers']}, max_children="
          f"{out['max_children']}), {out['threads']} threads", file=sys.stderr)
    s = out["seconds"]
    rows = [["vectorised", f"{s['vectorised']:.3f}", f"{s['vectorised_edgelists']:.3f}", f"{s['vectorised_trees']:.3f}", "1.0x"]]
    if "reference" in s:
        rows.append(["python reference", f"{s['reference']:.2f}", f"{s['reference_edgelists']:.2f}",
                     f"{s['reference_trees']:.2f}", f"{out['ratio']['reference / vectorised']:.1f}x slower"])
    base = out.get("baseline")
    if base and "seconds" in base:
        b = base["seconds"]
        rows.append([f"vectorised @ {base['rev']}", f"{b['vectorised']:.3f}", f"{b['vectorised_edgelists']:.3f}",
                     f"{b['vectorised_trees']:.3f}", f"{b['vectorised'] / s['vectorised']:.2f}x this one"])
    elif base:
        print(f"# baseline {base.get('rev')} failed: {base.get('error')}", file=sys.stderr)
    print(format_table(["sampler", "total s", "Algorithm 1 s", "Algorithms 2-3 s", "ratio"], rows))
