"""The fast paths give what the reference code they replace gives: sort-based unique, the compiled CSR build of the
random-walk sampler, the batched KNN, the vectorised teacher batches, per-teacher GEMMs; and every ``bench perf``
benchmark runs from the CLI with JSON output."""

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.privgnn.knn import squared_norms
from methods.privgnn.privgnn import nearest, nearest_many
from methods.privgnn.teachers import build_batch
from methods.samplers import sorted_unique
from methods.samplers.random_walks import _csr, disjoint_random_walks


@settings(max_examples=40, deadline=None)
@given(keys=st.lists(st.integers(-2**40, 2**40), max_size=300))
def test_sorted_unique_is_np_unique(keys):
    a = np.array(keys, dtype=np.int64)
    assert np.array_equal(sorted_unique(a), np.unique(a))


def _reference_csr(ei, n):
    row, col = ei.numpy()
    keep = row != col
    key = np.unique(row[keep] * n + col[keep])
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(np.bincount(key // n, minlength=n))
    return ptr, key % n


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), e=st.integers(0, 200), seed=st.integers(0, 10**6))
def test_random_walk_csr_merges_duplicates_and_drops_loops_in_any_order(n, e, seed):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, e), generator=g)
    ptr, idx = _csr(ei, n)
    ref_ptr, ref_idx = _reference_csr(ei, n)
    assert np.array_equal(ptr, ref_ptr) and np.array_equal(idx, ref_idx)


def test_walks_are_the_same_for_coalesced_and_shuffled_edges():
    g = torch.Generator().manual_seed(0)
    ei = torch.randint(0, 300, (2, 2000), generator=g)
    ei = torch.unique(torch.cat([ei, ei.flip(0)], 1), dim=1)
    shuffled = torch.cat([ei, ei[:, :50]], 1)[:, torch.randperm(ei.size(1) + 50, generator=g)]  # + duplicates
    a = disjoint_random_walks(ei, 300, 3, 2, generator=torch.Generator().manual_seed(5))
    b = disjoint_random_walks(shuffled, 300, 3, 2, generator=torch.Generator().manual_seed(5))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 120), f=st.integers(1, 20), q=st.integers(1, 6), seed=st.integers(0, 10**6),
       kind=st.sampled_from(["gauss", "binary", "offset", "duplicates"]), block=st.integers(1, 400),
       sorted_samples=st.booleans(), norms=st.booleans())
def test_batched_knn_selects_what_nearest_selects(n, f, q, seed, kind, block, sorted_samples, norms):
    """The GEMM-filtered search selects the rows the elementwise definition selects, in its order: ties (binary and
    duplicated rows), cancellation (rows far from the origin, close to each other), any query blocking."""
    g = torch.Generator().manual_seed(seed)
    if kind == "binary":
        x, queries = (torch.rand(n, f, generator=g) < 0.3).float(), (torch.rand(q, f, generator=g) < 0.3).float()
    elif kind == "offset":  # |c|^2 ~ 1e6 f while neighbours are ~1e-2 apart: the estimate alone cannot order them
        x, queries = 1000.0 + 0.01 * torch.randn(n, f, generator=g), 1000.0 + 0.01 * torch.randn(q, f, generator=g)
    elif kind == "duplicates":
        x = torch.randn(max(1, n // 4), f, generator=g)[torch.randint(0, max(1, n // 4), (n,), generator=g)]
        queries = x[torch.randint(0, n, (q,), generator=g)] + 0.1 * torch.randn(q, f, generator=g)
    else:
        x, queries = torch.randn(n, f, generator=g), torch.randn(q, f, generator=g)
    samples = [torch.randperm(n, generator=g)[:int(torch.randint(0, n + 1, (1,), generator=g))] for _ in range(q)]
    if sorted_samples:  # what poisson_subsample gives
        samples = [s.sort().values for s in samples]
    k = int(torch.randint(1, n + 1, (1,), generator=g))
    got = nearest_many(queries, x, samples, k, block_entries=block, sq_norms=squared_norms(x) if norms else None)
    for j in range(q):
        ref = nearest(queries[j], x[samples[j]], k, "euclidean") if samples[j].numel() > k \
            else torch.arange(samples[j].numel())
        assert torch.equal(got[j], ref)


def test_batched_knn_falls_back_to_the_definition_on_non_finite_features():
    x = torch.randn(50, 4)
    x[3, 1] = float("inf")
    queries = torch.randn(2, 4)
    samples = [torch.arange(50), torch.arange(0, 50, 2)]
    got = nearest_many(queries, x, samples, 7)
    assert all(torch.equal(got[j], nearest(queries[j], x[samples[j]], 7, "euclidean")) for j in range(2))


def test_select_many_is_select_per_query():
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods.privgnn.common import choose_queries, split_graphs
    from methods.privgnn.privgnn import PrivGNN

    pp_task = make_task(load_dataset("csbm:nodes=240,classes=3,features=8,degree=6"), "private-public", 0)
    g = split_graphs(pp_task)
    q = choose_queries(g, 5, 0)
    for distance in ("euclidean", "cosine"):
        m = PrivGNN(queries=5, k=15, distance=distance, epochs=6, hidden=8, teacher_batch=4)
        many = m.select_many(g, list(range(5)), q.tolist(), 0)
        assert all(torch.equal(a, m.select(g, i, int(v), 0)) for i, (a, v) in enumerate(zip(many, q.tolist())))


def _reference_batch(x, y, ei, sets):
    """The former per-teacher construction with PyG's subgraph."""
    from torch_geometric.utils import subgraph

    from methods.privgnn.teachers import mean_adjacency

    t_count, p, f = len(sets), max([int(s.numel()) for s in sets] + [1]), x.size(1)
    xb, yb = x.new_zeros(t_count, p, f), torch.zeros(t_count, p, dtype=torch.long)
    srcs, dsts = [], []
    for t, nodes in enumerate(sets):
        k = int(nodes.numel())
        if not k:
            continue
        xb[t, :k], yb[t, :k] = x[nodes], y[nodes]
        if ei is not None and ei.numel():
            sub, _ = subgraph(nodes, ei, relabel_nodes=True, num_nodes=x.size(0))
            srcs.append(sub[0] + t * p)
            dsts.append(sub[1] + t * p)
    src = torch.cat(srcs) if srcs else torch.zeros(0, dtype=torch.long)
    dst = torch.cat(dsts) if dsts else torch.zeros(0, dtype=torch.long)
    adj, _ = mean_adjacency(src, dst, t_count * p, x.dtype)
    if ei is not None:
        xb = torch.cat([xb, (adj @ xb.view(t_count * p, f)).view(t_count, p, f)], 2)
    return xb, yb, adj


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 60), e=st.integers(0, 200), sizes=st.lists(st.integers(0, 60), min_size=1, max_size=5),
       seed=st.integers(0, 10**6), graph=st.booleans())
def test_vectorised_teacher_batches_equal_the_per_teacher_construction(n, e, sizes, seed, graph):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, 6, generator=g) < 0.4).float()
    y = torch.randint(0, 3, (n,), generator=g)
    ei = torch.randint(0, n, (2, e), generator=g) if graph else None
    sets = [torch.randperm(n, generator=g)[:min(s, n)] for s in sizes]
    batch = build_batch(x, y, ei, sets)
    xb, yb, adj = _reference_batch(x, y, ei, sets)
    assert torch.equal(batch.x, xb) and torch.equal(batch.y, yb)
    assert torch.equal(batch.adj.to_dense(), adj.to_dense())
    assert torch.equal(batch.mask.sum(1), torch.tensor([int(s.numel()) for s in sets]))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 50), e=st.integers(0, 200), m=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_in_neighbourhood_is_k_hop_subgraph(n, e, m, seed):
    """The edge lookup's in-neighbourhood is PyG's directed one-hop subgraph (same subset, edges in the same
    order, same mapping), and a teacher's answers through it equal, bit for bit, its answers through PyG's
    undirected one-hop subgraph (the former path: its extra edges only reach the neighbours, never ``nodes``)."""
    from torch_geometric.utils import k_hop_subgraph

    from methods.privgnn.teachers import BatchedSAGE, EdgeLookup, in_neighbourhood, mean_aggregate

    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, e), generator=g)
    nodes = torch.randint(0, n, (m,), generator=g)  # duplicates allowed
    lookup = EdgeLookup.of(ei, n, "dst")
    subset, sub_ei, mapping = in_neighbourhood(ei, lookup, nodes)
    ref = k_hop_subgraph(nodes, 1, ei, relabel_nodes=True, num_nodes=n, flow="source_to_target", directed=True)
    assert torch.equal(subset, ref[0]) and torch.equal(sub_ei, ref[1]) and torch.equal(mapping, ref[2])

    x = torch.randn(n, 5, generator=g)
    deg = torch.zeros(n).index_add_(0, ei[1], torch.ones(e))
    agg_x = mean_aggregate(x, ei[0], ei[1], torch.where(deg > 0, 1.0 / deg.clamp(min=1), torch.zeros_like(deg)))
    model = BatchedSAGE([torch.Generator().manual_seed(seed + 1)], 5, 4, 3).eval()
    got = model.predict_graph(0, x, agg_x, ei, nodes, lookup)
    s, sub, mp, _ = k_hop_subgraph(nodes, 1, ei, relabel_nodes=True, num_nodes=n, flow="source_to_target")
    w1 = model.w1[0]
    h = x[s] @ w1[:5] + agg_x[s] @ w1[5:]
    h = torch.relu((h - model.running_mean[0]) * torch.rsqrt(model.running_var[0] + 1e-5) * model.bn_weight[0]
                   + model.bn_bias[0])
    d = torch.zeros(s.numel()).index_add_(0, sub[1], torch.ones(sub.size(1)))
    agg = mean_aggregate(h @ model.w2_neigh[0], sub[0], sub[1], torch.where(d > 0, 1.0 / d.clamp(min=1),
                                                                             torch.zeros_like(d)))
    assert torch.equal(got, (h @ model.w2_root[0] + agg + model.b2[0])[mp])


def test_teachers_are_reproducible_for_one_seed():
    """Two batches of teachers from the same generators train to bit-identical weights (the determinism every
    verification assumes; a per-teacher oneDNN GEMM path failed it)."""
    from methods.privgnn.teachers import BatchedSAGE, train_teachers

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(60, 12, generator=g), torch.randint(0, 3, (60,), generator=g)
    edges = torch.randint(0, 60, (2, 240), generator=g)
    sets = [torch.arange(0, 20), torch.arange(20, 45), torch.arange(45, 60)]
    weights = []
    for _ in range(2):
        gens = [torch.Generator().manual_seed(100 + t) for t in range(3)]
        model = BatchedSAGE(gens, 12, 8, 3, 0.5)
        train_teachers(model, build_batch(x, y, edges, sets), gens, epochs=5, lr=0.01, weight_decay=0.0)
        weights.append([p.detach().clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*weights))


# --------------------------------------------------------------------------------------
# bench perf from the CLI
# --------------------------------------------------------------------------------------


def _perf(capsys, *argv):
    from bench.cli import main

    assert main(["perf", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_perf_dpsgd_sparse_input(capsys):
    d = _perf(capsys, "dpsgd", "--batch", "8", "--nodes", "4", "--features", "64", "--min-run-time", "0.05",
              "--rounds", "2", "--input", "sparse", "--no-vmap")
    assert d["input"] == "sparse" and set(d["ratio"]) == {"non-private", "bookkeeping"}
    assert all(math.isfinite(v) and v > 0 for v in d["seconds"].values())
    assert d["machine"]["torch_threads"] >= 1


def test_perf_samplers(capsys):
    d = _perf(capsys, "drw-sampler", "--dataset", "csbm:nodes=300,degree=4", "--repeats", "1")
    assert set(d["orders"]) == {"coalesced", "shuffled"}
    assert d["orders"]["coalesced"]["subgraphs"] == d["orders"]["shuffled"]["subgraphs"]
    assert all(r["speedup"] > 0 for r in d["orders"].values())
    d = _perf(capsys, "dpgnn-sampler", "--dataset", "csbm:nodes=300,degree=4", "--repeats", "1")
    assert d["ratio"]["reference / vectorised"] > 0
    assert d["relation"] == "input-graph" and d["max_occurrence"] <= d["max_degree"] + 1  # the dataset's own K
    d = _perf(capsys, "dpgnn-sampler", "--dataset", "csbm:nodes=300,degree=4", "--relation", "in-edges",
              "--repeats", "1")
    assert (d["relation"], d["max_degree"]) == ("in-edges", 10) and d["ratio"]["reference / vectorised"] > 0


def test_perf_privgnn_synthetic(capsys):
    d = _perf(capsys, "privgnn", "--teachers", "2", "--nodes", "20", "--features", "16", "--private", "60",
              "--epochs", "2", "--rounds", "1")
    assert d["teachers_per_second"]["batched (2 at once)"] > 0 and "one-by-one (PyG)" in d["seconds"]


def test_perf_dpgnn_fit(capsys):
    d = _perf(capsys, "dpgnn-fit", "--dataset", "csbm:nodes=200,classes=3,features=8,degree=6", "--set", "epochs=2",
              "--set", "batch_size=32", "--set", "hidden=8")
    assert d["private"]["steps"] == d["twin"]["steps"] > 0
    assert d["ratio"] > 0 and d["seconds"]["twin"] > 0


def test_perf_fit_times_both_devices_and_checks_the_ledger(capsys):
    d = _perf(capsys, "fit", "--device", "cpu", "--reference", "cpu", "--reference-threads", "1", "--methods",
              "dp-mlp", "mlp", "--datasets", "csbm:nodes=200,classes=3,features=8,degree=4")
    assert [r["method"] for r in d["rows"]] == ["dp-mlp", "mlp"]
    for r in d["rows"]:
        assert set(r["seconds"]) == {"device", "reference"} and r["speedup"] > 0
        assert r["same_ledger"] and r["same_epsilon"]
    assert d["rows"][0]["epsilon"] == 8.0 and d["rows"][1]["epsilon"] == float("inf")


def test_perf_privgnn_task_mode_reports_the_batched_over_sequential_ratio_with_equal_votes():
    import json
    import subprocess
    import sys

    from tests.conftest import REPO, bench_env

    res = subprocess.run([sys.executable, "-m", "bench", "perf", "privgnn", "--dataset",
                          "csbm:nodes=300,classes=3,features=12,degree=6", "--queries", "6", "--epochs", "5",
                          "--teacher-batch", "3", "--rounds", "1", "--sequential", "--threads", "1", "--json"],
                         cwd=REPO, env=bench_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out["seconds"]) == {"this tree", "this tree, one at a time"} and out["device"] == "cpu"
    assert out["batched_speedup_vs_sequential"] > 0
    assert out["sequential_agreement"]["argmax_equal"] == 1.0
    assert out["sequential_agreement"]["max_abs_log_posterior_diff"] < 1e-3


def test_perf_all_entries_parse_and_extract_their_ratios():
    """Every quick configuration of ``bench perf all`` is a valid command of its benchmark, and each extractor reads
    the ratios that benchmark reports (a benchmark whose JSON no longer carries them would show an empty row)."""
    import argparse

    from bench.perf import BENCHMARKS
    from bench.perf.summary import SUITE, _dpsgd, _single

    from bench.cli import build_parser

    parser = build_parser("perf")
    for e in SUITE:
        assert e.name in BENCHMARKS
        args = parser.parse_args(["perf", *[a.replace("{device}", "cpu") for a in e.argv], "--json"])
        assert isinstance(args, argparse.Namespace) and args.json
    rows = _dpsgd({"features": 128, "ratio": {"non-private": 1.0, "bookkeeping": 1.3}})
    assert rows == [("DP step / non-private, benchmark model, 128 features: bookkeeping", 1.3, "lower")]
    rows = _dpsgd({"features": 16, "model": "gcn", "ratio": {"non-private": 1.0, "bookkeeping": 1.3},
                   "like_for_like": {"eager": 1.3}})
    assert rows == [("DP step / non-private, gcn model, 16 features, like for like (eager)", 1.3, "lower")]
    rows = _dpsgd({"features": 16, "model": "gcn", "like_for_like": {"eager": 1.3},
                   "ratio": {"non-private": 1.0, "bookkeeping": 1.3, "opacus hooks": 2.0},
                   "vs_opacus": {"opacus-hooks": 0.65}})
    assert rows[1:] == [("DP step / Opacus's (hooks), gcn model, 16 features", 0.65, "lower")]
    assert all("--opacus" in e.argv for e in SUITE if e.name == "dpsgd")
    pick = _single("speedup_vs_pyg_loop", "teachers", "higher", reference="one-by-one (PyG)")
    assert [r[0] for r in pick({"speedup_vs_pyg_loop": {"one-by-one (PyG)": 1.0, "batched": 2.0}})] == \
        ["teachers: batched"]


def test_perf_all_runs_a_benchmark_and_reports_a_failure(capsys, monkeypatch):
    from bench.perf import summary

    monkeypatch.setattr(summary, "SUITE", (
        summary.Entry("dpgnn-sampler", ("dpgnn-sampler", "--dataset", "csbm:nodes=300,degree=4", "--repeats", "1"),
                      summary._single("ratio", "sampler", "higher")),
        summary.Entry("drw-sampler", ("drw-sampler", "--dataset", "no-such-dataset"),
                      summary._single("speedup", "walks", "higher"))))
    out = summary.run_suite("cpu")
    assert [r["benchmark"] for r in out["rows"]] and all(r["ratio"] > 0 for r in out["rows"])
    assert [f["benchmark"] for f in out["failures"]] == ["drw-sampler"] and "error" in out["failures"][0]


def test_perf_whitebox_reports_the_ratio_and_identical_bounds(capsys):
    d = _perf(capsys, "whitebox", "--dataset", "csbm:nodes=300,classes=2,features=8,degree=4", "--runs", "2",
              "--canaries", "20", "--workers", "1")
    assert d["same_bounds"] and set(d["results"]) == {"in-process", "1 workers"}
    (ratio,) = d["ratio"].values()
    assert ratio > 0


def test_perf_dpsgd_times_opacus_side_by_side(capsys):
    """--opacus: Opacus's hooks and ghost clipping on the same model and batch, and the suite's step over each."""
    d = _perf(capsys, "dpsgd", "--batch", "8", "--nodes", "4", "--features", "16", "--min-run-time", "0.05",
              "--rounds", "2", "--threads", "1", "--no-vmap", "--opacus")
    assert set(d["ratio"]) == {"non-private", "bookkeeping", "opacus hooks", "opacus ghost clipping"}
    assert set(d["vs_opacus"]) == {"opacus-hooks", "opacus-ghost"} and all(v > 0 for v in d["vs_opacus"].values())
    s = d["seconds"]
    assert d["vs_opacus"]["opacus-hooks"] == pytest.approx(s["bookkeeping"] / s["opacus hooks"], rel=1.0)


def test_perf_dpsgd_reports_the_like_for_like_ratio_and_the_gcn_preset(capsys):
    d = _perf(capsys, "dpsgd", "--batch", "8", "--nodes", "4", "--features", "16", "--min-run-time", "0.05",
              "--rounds", "2", "--threads", "1")
    assert (d["model"], d["hidden"]) == ("benchmark", 64) and set(d["ratio"]) == {"non-private", "bookkeeping", "vmap"}
    assert set(d["like_for_like"]) == {"eager"} and d["like_for_like"]["eager"] > 0  # CUDA adds "graph"
    d = _perf(capsys, "dpsgd", "--model", "gcn", "--batch", "8", "--features", "16", "--min-run-time", "0.05",
              "--rounds", "2", "--threads", "1")
    assert (d["model"], d["nodes"], d["hidden"]) == ("gcn", 11, 256)  # the preset's sizes, --batch overridden
    assert set(d["ratio"]) == {"non-private", "bookkeeping"}  # no vmap route at this size
