"""NAP (normalize-aggregate-perturb) and the random out-degree cut-off: properties, sensitivities, noise."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.base import BenchError, ConfigError
from methods.gap.nap import (EDGE_SENSITIVITY, aggregation_matrix, bound_out_degree, nap, node_sensitivity,
                             normalize_rows)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: one intra-op thread (with two, OpenMP spinning on a shared 2-core machine makes these
    fits 10-30x slower). Restored afterwards."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)



def undirected(n: int, pairs) -> torch.Tensor:
    """Undirected, deduplicated, self-loop-free edge_index (both directions) from a list of pairs."""
    s = {(min(a, b), max(a, b)) for a, b in pairs if a != b and a < n and b < n}
    if not s:
        return torch.empty(2, 0, dtype=torch.long)
    e = torch.tensor(sorted(s), dtype=torch.long).t()
    return torch.cat([e, e.flip(0)], 1)


graphs = st.integers(2, 25).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80)))


def edge_set(ei: torch.Tensor) -> set:
    return set(map(tuple, ei.t().tolist()))


def out_degree(ei: torch.Tensor, n: int) -> torch.Tensor:
    return torch.bincount(ei[0], minlength=n)


@settings(max_examples=120, deadline=None)
@given(graphs, st.integers(1, 6), st.integers(0, 2**31))
def test_cutoff_bounds_out_degree_and_only_removes_edges(g, D, seed):
    n, pairs = g
    ei = undirected(n, pairs)
    out = bound_out_degree(ei, n, D, torch.Generator().manual_seed(seed))
    assert edge_set(out) <= edge_set(ei)                              # only removes
    assert out.size(1) == len(edge_set(out))                          # no duplicates
    assert int(out_degree(out, n).max()) <= D                         # out-degree <= D
    # it removes no more than it must: each node keeps min(D, its degree) out-edges
    assert torch.equal(out_degree(out, n), out_degree(ei, n).clamp(max=D))
    again = bound_out_degree(ei, n, D, torch.Generator().manual_seed(seed))
    assert torch.equal(out, again)                                    # a function of the generator


def test_cutoff_keeps_a_uniform_subset():
    # a node of degree 4 with D = 2 keeps each of its 6 possible pairs of neighbours equally often
    ei = undirected(5, [(0, 1), (0, 2), (0, 3), (0, 4)])
    counts = {}
    for seed in range(3000):
        out = bound_out_degree(ei, 5, 2, torch.Generator().manual_seed(seed))
        kept = tuple(sorted(out[1, out[0] == 0].tolist()))
        counts[kept] = counts.get(kept, 0) + 1
    assert len(counts) == 6
    from scipy.stats import chisquare

    assert chisquare(list(counts.values())).pvalue > 1e-4


def test_cutoff_refuses_a_bad_bound():
    with pytest.raises(ConfigError):
        bound_out_degree(undirected(3, [(0, 1)]), 3, 0, torch.Generator())


def remove_node(ei: torch.Tensor, v: int) -> torch.Tensor:
    """The node-level neighbour: v and every edge at v gone (v keeps its id, isolated)."""
    keep = (ei[0] != v) & (ei[1] != v)
    return ei[:, keep]


def test_cutoff_is_not_monotone_under_node_removal_when_it_binds():
    """Why the sqrt(D) guarantee is stated for the degree-bounded graph: v is adjacent to hubs of degree
    D + 1; with the same randomness, removing v makes a hub keep an edge it had dropped."""
    D, hubs = 3, 12
    pairs, nxt = [], hubs + 1
    for h in range(1, hubs + 1):
        pairs.append((0, h))
        for _ in range(D):
            pairs.append((h, nxt))
            nxt += 1
    ei = undirected(nxt, pairs)
    added = 0
    for seed in range(5):
        a = bound_out_degree(ei, nxt, D, torch.Generator().manual_seed(seed))
        b = bound_out_degree(remove_node(ei, 0), nxt, D, torch.Generator().manual_seed(seed))
        added += len(edge_set(b) - edge_set(a))
    assert added > 0
    # ... while on a graph whose degrees are already <= D the cut-off is the identity: removal only removes
    small = undirected(8, [(0, 1), (0, 2), (1, 2), (3, 4), (5, 6), (2, 7)])
    for seed in range(5):
        a = bound_out_degree(small, 8, D, torch.Generator().manual_seed(seed))
        b = bound_out_degree(remove_node(small, 2), 8, D, torch.Generator().manual_seed(seed))
        assert edge_set(b) <= edge_set(a)


def noiseless(ei, n, x):
    return nap(aggregation_matrix(ei, n), x, 0.0, None)


@settings(max_examples=80, deadline=None)
@given(graphs, st.integers(1, 5), st.integers(0, 2**31))
def test_nap_edge_sensitivity_is_sqrt2_per_undirected_edge(g, d, seed):
    n, pairs = g
    ei = undirected(n, pairs)
    if ei.size(1) == 0:
        return
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen) + 0.1  # no zero rows
    u, w = ei[:, int(torch.randint(ei.size(1), (1,), generator=gen))].tolist()
    keep = ~(((ei[0] == u) & (ei[1] == w)) | ((ei[0] == w) & (ei[1] == u)))
    diff = noiseless(ei, n, x) - noiseless(ei[:, keep], n, x)
    assert float(diff.norm()) == pytest.approx(EDGE_SENSITIVITY, rel=1e-5)


@settings(max_examples=80, deadline=None)
@given(graphs, st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**31))
def test_nap_node_sensitivity_on_the_bounded_graph(g, D, d, seed):
    n, pairs = g
    gen = torch.Generator().manual_seed(seed)
    bounded = bound_out_degree(undirected(n, pairs), n, D, gen)
    x = torch.randn(n, d, generator=gen)
    v = int(torch.randint(n, (1,), generator=gen))
    others = torch.arange(n) != v
    diff = (noiseless(bounded, n, x) - noiseless(remove_node(bounded, v), n, x))[others]
    assert float(diff.norm()) <= node_sensitivity(D) + 1e-5
    # exactly one unit vector per out-edge of v (v's rows are normalised)
    if float(x[v].norm()) > 1e-6:
        assert float(diff.norm()) == pytest.approx(math.sqrt(int((bounded[0] == v).sum())), abs=1e-5)


def test_nap_normalises_sums_and_adds_gaussian_noise_of_the_given_std():
    ei = undirected(3, [(0, 1), (1, 2)])
    x = torch.tensor([[3.0, 4.0], [0.0, 2.0], [0.0, 0.0]])  # the zero row stays zero
    out = noiseless(ei, 3, x)
    assert torch.allclose(out, torch.tensor([[0.0, 1.0], [0.6, 0.8], [0.0, 1.0]]))
    assert torch.allclose(normalize_rows(x)[2], torch.zeros(2))
    n, d, sigma = 2000, 50, 3.0
    empty = torch.empty(2, 0, dtype=torch.long)
    noisy = nap(aggregation_matrix(empty, n), torch.randn(n, d), sigma, torch.Generator().manual_seed(0))
    assert abs(float(noisy.mean())) < 0.02
    assert float(noisy.std()) == pytest.approx(sigma, rel=0.01)
    assert not noisy.requires_grad


def test_nap_refuses_negative_noise():
    with pytest.raises(ConfigError):
        nap(aggregation_matrix(undirected(2, [(0, 1)]), 2), torch.ones(2, 2), -1.0, None)


def test_sensitivity_constants():
    assert EDGE_SENSITIVITY == pytest.approx(math.sqrt(2))
    assert node_sensitivity(100) == pytest.approx(10.0)
    with pytest.raises(BenchError):
        node_sensitivity(0)
    assert np.isfinite(node_sensitivity(1))
