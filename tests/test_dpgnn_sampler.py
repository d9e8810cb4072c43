"""DP-GNN's samplers (Algorithms 1-3): degree bound, Lemma 1, who may have children, determinism, and
equality with the line-by-line reference implementation of the pseudo-code, under the paper's relation
(``in-edges``: Algorithm 1's sampling) and the default ``input-graph`` (every in-edge kept, a declared bound
refused above it)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.base import ConfigError
from methods.samplers.dpgnn import (dfs_tree_subgraphs, edge_uniforms, max_train_in_degree, occurrence_bound,
                                    reference_dfs_tree, reference_sample_edgelists, require_in_degree_bound,
                                    sample_edgelists, sample_subgraphs)

ALG1 = "in-edges"  # the paper's Algorithm 1


@st.composite
def graphs(draw, max_nodes=30):
    n = draw(st.integers(1, max_nodes))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6 * n))
    undirected = draw(st.booleans())
    if undirected:
        pairs = pairs + [(v, u) for u, v in pairs]
    ei = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    train = torch.tensor(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=torch.bool)
    return ei, n, train


def original_edges(ei):
    return {(int(u), int(v)) for u, v in ei.t().tolist() if u != v}


@settings(max_examples=120, deadline=None)
@given(g=graphs(), k=st.integers(1, 10), r=st.integers(1, 3), seed=st.integers(0, 2 ** 31 - 1),
       cap=st.sampled_from([None, 1, 2, 5]))
def test_degree_bound_lemma_1_and_who_has_children(g, k, r, seed, cap):
    ei, n, train = g
    lists, trees = sample_subgraphs(ei, n, train, k, r, generator=torch.Generator().manual_seed(seed),
                                    max_children=cap, relation=ALG1)
    # Algorithm 1: sampled in-degree <= K; only incoming edges from training nodes; a subset of the graph
    assert int(lists.in_degree.max()) <= k
    kept = set(zip(lists.src.tolist(), lists.dst.tolist()))
    assert kept <= original_edges(ei)
    assert all(bool(train[u]) for u, _ in kept)
    assert not any(bool(lists.dropped[v]) for _, v in kept)  # a dropped node is in no edge list
    # Algorithm 3: one tree per training node, rooted at it
    assert torch.equal(trees.roots, train.nonzero().view(-1))
    assert torch.equal(trees.nodes[:, 0], trees.roots)
    # Lemma 1: every node occurs in at most N(K, r) training trees
    assert int(trees.occurrence().max()) <= occurrence_bound(k, r)
    for i in range(trees.num_subgraphs):
        depth = trees.depth[i]
        assert int(depth.max()) <= r
        for parent, child in trees.tree_edges(i):
            assert (parent, child) in kept  # tree edges are sampled edges parent -> child
            assert bool(train[parent])  # only training nodes have children (non-training nodes are leaves)
        if cap is not None:
            parents = trees.parent[i][trees.parent[i] >= 0]
            assert parents.numel() == 0 or int(torch.bincount(parents).max()) <= cap


@settings(max_examples=60, deadline=None)
@given(g=graphs(20), k=st.integers(1, 10), r=st.integers(1, 3), key=st.integers(0, 2 ** 62 - 1),
       cap=st.sampled_from([None, 1, 3]))
def test_vectorised_sampler_equals_the_pseudo_code(g, k, r, key, cap):
    ei, n, train = g
    lists = sample_edgelists(ei, n, train, k, key=key, relation=ALG1)
    ref = reference_sample_edgelists(ei, n, train, k, key, relation=ALG1)
    assert {u: lists.out_list(u) for u in range(n)} == ref
    trees = dfs_tree_subgraphs(lists, train.nonzero().view(-1), r, max_children=cap)
    for i, root in enumerate(trees.roots.tolist()):
        got = [(int(a), int(d)) for a, d in zip(trees.nodes[i], trees.depth[i]) if a >= 0]
        assert got == reference_dfs_tree(root, ref, r, max_children=cap)


@settings(max_examples=30, deadline=None)
@given(g=graphs(), k=st.integers(1, 10), r=st.integers(1, 3), seed=st.integers(0, 2 ** 31 - 1))
def test_deterministic_per_seed(g, k, r, seed):
    ei, n, train = g
    a = sample_subgraphs(ei, n, train, k, r, generator=torch.Generator().manual_seed(seed), relation=ALG1)
    b = sample_subgraphs(ei, n, train, k, r, generator=torch.Generator().manual_seed(seed), relation=ALG1)
    assert a[0].key == b[0].key
    assert torch.equal(a[0].dst, b[0].dst) and torch.equal(a[0].ptr, b[0].ptr)
    assert torch.equal(a[1].nodes, b[1].nodes) and torch.equal(a[1].parent, b[1].parent)


def test_different_seeds_sample_different_graphs():
    g = torch.Generator().manual_seed(0)
    ei = torch.randint(0, 300, (2, 6000), generator=g)
    train = torch.ones(300, dtype=torch.bool)
    keys = {tuple(sample_edgelists(ei, 300, train, 5, torch.Generator().manual_seed(s), relation=ALG1).dst.tolist())
            for s in range(5)}
    assert len(keys) == 5


def test_keep_probability_is_k_over_twice_the_training_in_degree():
    """A hub with d training in-neighbours: sampled in-degree ~ Binomial(d, K/2d) (mean K/2), and the hub
    is dropped exactly when that exceeds K; non-training in-neighbours never count."""
    d, k, reps = 400, 6, 1500
    src = torch.arange(1, 2 * d + 1)
    ei = torch.stack([src, torch.zeros_like(src)])
    train = torch.zeros(2 * d + 1, dtype=torch.bool)
    train[1:d + 1] = True  # d training in-neighbours, d non-training ones
    counts, dropped = [], 0
    for key in range(reps):
        lists = sample_edgelists(ei, 2 * d + 1, train, k, key=key, relation=ALG1)
        assert int(lists.train_in_degree[0]) == d
        c = int(lists.sampled_in_degree[0])
        counts.append(c)
        dropped += bool(lists.dropped[0])
        assert bool(lists.dropped[0]) == (c > k)
        assert int(lists.in_degree[0]) == (0 if c > k else c)
    p = k / (2 * d)
    mean = sum(counts) / reps
    assert abs(mean - d * p) < 4 * math.sqrt(d * p * (1 - p) / reps)
    tail = 1 - sum(math.comb(d, i) * p ** i * (1 - p) ** (d - i) for i in range(k + 1))
    assert abs(dropped / reps - tail) < 4 * math.sqrt(tail * (1 - tail) / reps) + 1e-3


def test_coins_depend_on_the_edge_not_its_position():
    key = 12345
    src, dst = torch.tensor([3, 1, 4, 1, 5]), torch.tensor([9, 2, 6, 5, 3])
    a = edge_uniforms(key, src, dst)
    perm = torch.tensor([4, 2, 0, 3, 1])
    b = edge_uniforms(key, src[perm], dst[perm])
    assert (a[perm.numpy()] == b).all()
    assert ((a >= 0) & (a < 1)).all() and len(set(a.tolist())) == 5
    assert not (edge_uniforms(key + 1, src, dst) == a).any()


def test_uniform_coins_are_uniform():
    n = 200_000
    u = edge_uniforms(7, torch.arange(n), torch.arange(n) * 3 + 1)
    hist = torch.histc(torch.from_numpy(u).float(), bins=10, min=0, max=1)
    assert (hist - n / 10).abs().max() < 5 * math.sqrt(n / 10)


def test_bad_input_is_a_clear_error():
    ei = torch.tensor([[0, 1], [1, 2]])
    with pytest.raises(ConfigError, match="outside"):
        sample_edgelists(ei, 2, torch.ones(2, dtype=torch.bool), 3, key=0)
    with pytest.raises(ConfigError, match="max_degree"):
        sample_edgelists(ei, 3, torch.ones(3, dtype=torch.bool), -1, key=0)
    with pytest.raises(ConfigError, match="train_mask"):
        sample_edgelists(ei, 3, torch.ones(2, dtype=torch.bool), 3, key=0)
    lists = sample_edgelists(ei, 3, torch.ones(3, dtype=torch.bool), 3, key=0)
    with pytest.raises(ConfigError, match="depth"):
        dfs_tree_subgraphs(lists, torch.tensor([0]), -1)


# --------------------------------------------------------------------------------------
# relation input-graph: every incoming edge from a training node, under a declared bound
# --------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(g=graphs(), extra=st.integers(0, 3), r=st.integers(1, 3), seed=st.integers(0, 2 ** 31 - 1),
       cap=st.sampled_from([None, 1, 2, 5]))
def test_input_graph_keeps_every_training_in_edge_and_lemma_1(g, extra, r, seed, cap):
    ei, n, train = g
    k = max(1, max_train_in_degree(ei, n, train)) + extra
    lists, trees = sample_subgraphs(ei, n, train, k, r, generator=torch.Generator().manual_seed(seed),
                                    max_children=cap)
    kept = set(zip(lists.src.tolist(), lists.dst.tolist()))
    assert kept == {(u, v) for u, v in original_edges(ei) if bool(train[u])}  # no coin, no drop rule
    assert not bool(lists.dropped.any()) and torch.equal(lists.sampled_in_degree, lists.train_in_degree)
    assert int(lists.in_degree.max()) <= k
    assert int(trees.occurrence().max()) <= occurrence_bound(k, r)
    for i in range(trees.num_subgraphs):
        for parent, child in trees.tree_edges(i):
            assert (parent, child) in kept and bool(train[parent])
    # the out-lists are ordered by the same per-edge priority as Algorithm 1's
    same = sample_edgelists(ei, n, train, k, key=lists.key)
    assert torch.equal(same.dst, lists.dst) and torch.equal(same.ptr, lists.ptr)


@settings(max_examples=40, deadline=None)
@given(g=graphs(20), extra=st.integers(0, 3), r=st.integers(1, 3), key=st.integers(0, 2 ** 62 - 1),
       cap=st.sampled_from([None, 1, 3]))
def test_input_graph_sampler_equals_the_reference(g, extra, r, key, cap):
    ei, n, train = g
    k = max(1, max_train_in_degree(ei, n, train)) + extra
    lists = sample_edgelists(ei, n, train, k, key=key)
    ref = reference_sample_edgelists(ei, n, train, k, key, relation="input-graph")
    assert {u: lists.out_list(u) for u in range(n)} == ref
    trees = dfs_tree_subgraphs(lists, train.nonzero().view(-1), r, max_children=cap)
    for i, root in enumerate(trees.roots.tolist()):
        got = [(int(a), int(d)) for a, d in zip(trees.nodes[i], trees.depth[i]) if a >= 0]
        assert got == reference_dfs_tree(root, ref, r, max_children=cap)


def test_input_graph_refuses_a_graph_above_the_declared_bound():
    """Node 0 has three training in-neighbours (a non-training one, a self-loop and a duplicate do not count):
    K = 3 runs, K = 2 is refused, by every entry point, naming the bound and the paper's relation."""
    ei = torch.tensor([[1, 2, 3, 4, 0, 1], [0, 0, 0, 0, 0, 0]])
    train = torch.tensor([True, True, True, True, False])
    assert max_train_in_degree(ei, 5, train) == 3
    sample_subgraphs(ei, 5, train, 3, 2, key=0)
    require_in_degree_bound(ei, 5, train, 3)
    for call in (lambda: require_in_degree_bound(ei, 5, train, 2),
                 lambda: sample_edgelists(ei, 5, train, 2, key=0),
                 lambda: sample_subgraphs(ei, 5, train, 2, 1, key=0)):
        with pytest.raises(ConfigError, match=r"3 training in-neighbours > max_degree 2.*in-edges"):
            call()
    lists = sample_edgelists(ei, 5, train, 2, key=0, relation=ALG1)  # Algorithm 1 bounds it by sampling
    assert int(lists.in_degree.max()) <= 2
    with pytest.raises(ConfigError, match="relation"):
        sample_edgelists(ei, 5, train, 3, key=0, relation="undirected")
