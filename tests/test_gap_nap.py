"""NAP (normalize-aggregate-perturb), the node-level relations and the random out-degree cut-off: properties,
sensitivities, noise. Under ``input-graph`` the node-level sensitivity sqrt(D) is checked on random input graphs and
removals (``methods.gap.nap``'s proof); the two counterexamples of its docstring (the swap gadget under the cut-off,
the chain cascade of the edge-addition projection) are exhibited."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.base import BenchError, ConfigError
from methods.gap.nap import (CUTOFF_GRAPH, EDGE_SENSITIVITY, INPUT_GRAPH, RELATIONS, aggregation_matrix,
                             bound_out_degree, degree_bounded_graph, degree_facts, max_out_degree, nap,
                             node_sensitivity, normalize_rows, require_degree_bound)


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
def test_nap_node_sensitivity_on_the_cutoff_graph(g, D, d, seed):
    """GAP Lemma 3 (relation cut-off-graph): sqrt(D) for two graphs compared AFTER the cut-off."""
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


# -- node level, relation input-graph: the declared bound and its sqrt(D) ------------------------------------


def drop_node(ei: torch.Tensor, n: int, v: int) -> torch.Tensor:
    """The other node-level neighbour: v gone entirely, the nodes above it relabelled down by one."""
    keep = (ei[0] != v) & (ei[1] != v)
    e = ei[:, keep]
    return e - (e > v).long()


def unit_rows(n: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """Random rows bounded away from zero (so each normalises to a unit vector)."""
    x = torch.randn(n, d, generator=gen)
    x[:, 0] += torch.where(x[:, 0] < 0, -0.5, 0.5)  # |x_i0| >= 0.5
    return x


def moved_rows(diff: torch.Tensor) -> set[int]:
    return set(torch.nonzero(diff.norm(dim=1) > 1e-6).view(-1).tolist())


@settings(max_examples=150, deadline=None)
@given(graphs, st.integers(0, 3), st.integers(1, 4), st.integers(0, 2**31), st.booleans())
def test_input_graph_node_sensitivity_is_sqrt_D_on_input_graphs(g, slack, d, seed, drop):
    """Removing v with every edge at v (kept as an isolated id, or dropped entirely) moves, among the other rows,
    exactly v's out-neighbours' rows by v's unit vector: Frobenius sqrt(deg v) <= sqrt(D), for D = the graph's
    largest degree and any D above it."""
    n, pairs = g
    ei = undirected(n, pairs)
    D = max(1, max_out_degree(ei, n)) + slack
    gen = torch.Generator().manual_seed(seed)
    x = unit_rows(n, d, gen)
    v = int(torch.randint(n, (1,), generator=gen))
    bounded = degree_bounded_graph(ei, n, D, INPUT_GRAPH, gen)
    assert torch.equal(bounded, ei)  # no cut-off: NAP aggregates over the input graph
    others = torch.arange(n) != v
    out = noiseless(bounded, n, x)
    if drop:
        near = degree_bounded_graph(drop_node(ei, n, v), n - 1, D, INPUT_GRAPH, gen)  # still within the bound
        diff = out[others] - noiseless(near, n - 1, x[others])
        index = torch.arange(n)[others]  # row r of diff is node index[r]
    else:
        near = degree_bounded_graph(remove_node(ei, v), n, D, INPUT_GRAPH, gen)
        diff = (out - noiseless(near, n, x))[others]
        index = torch.arange(n)[others]
    assert float(diff.norm()) <= node_sensitivity(D) + 1e-5
    out_nbrs = set(ei[1, ei[0] == v].tolist())
    assert {int(index[r]) for r in moved_rows(diff)} == out_nbrs
    assert float(diff.norm()) == pytest.approx(math.sqrt(len(out_nbrs)), abs=1e-5)  # unit rows: sqrt(deg v)
    unit_v = normalize_rows(x[v:v + 1])[0]
    for r in moved_rows(diff):
        assert torch.allclose(diff[r], unit_v, atol=1e-5)  # by v's unit vector each


@settings(max_examples=60, deadline=None)
@given(graphs, st.integers(0, 2), st.integers(1, 4), st.integers(0, 2**31), st.floats(0.1, 3.0))
def test_input_graph_second_hop_moves_at_most_sqrt_D_given_the_first_release(g, slack, d, seed, sigma):
    """Hop 2 conditioned on hop 1 (adaptive composition): both worlds feed hop 2 the same released X(1) rows of the
    other nodes; only v's own X(1) row differs (in G - v it aggregates nothing). Hop 2 then moves, among the other
    rows, v's out-neighbours' rows by normalise(X(1)_v) each: sqrt(deg v) <= sqrt(D)."""
    n, pairs = g
    ei = undirected(n, pairs)
    D = max(1, max_out_degree(ei, n)) + slack
    gen = torch.Generator().manual_seed(seed)
    x0 = unit_rows(n, d, gen)
    v = int(torch.randint(n, (1,), generator=gen))
    near = remove_node(ei, v)
    x1 = normalize_rows(nap(aggregation_matrix(ei, n), x0, sigma, gen))  # the first release (and v's own row)
    x1_near = x1.clone()
    x1_near[v] = normalize_rows(nap(aggregation_matrix(near, n), x0, sigma, gen))[v]
    others = torch.arange(n) != v
    diff = (noiseless(ei, n, x1) - noiseless(near, n, x1_near))[others]
    assert float(diff.norm()) <= node_sensitivity(D) + 1e-5
    deg_v = int((ei[0] == v).sum())
    if float(x1[v].norm()) > 1e-6:
        assert float(diff.norm()) == pytest.approx(math.sqrt(deg_v), abs=1e-4)
    assert len(moved_rows(diff)) <= deg_v


@settings(max_examples=80, deadline=None)
@given(graphs, st.integers(0, 2**31))
def test_input_graph_refuses_a_bound_below_the_largest_degree(g, seed):
    n, pairs = g
    ei = undirected(n, pairs)
    have = max_out_degree(ei, n)
    require_degree_bound(ei, n, max(1, have))  # at the largest degree: accepted
    gen = torch.Generator().manual_seed(seed)
    for D in range(1, have):
        with pytest.raises(ConfigError, match=f"degree {have} > max_degree {D}"):
            degree_bounded_graph(ei, n, D, INPUT_GRAPH, gen)
        # the papers' relation accepts it (and cuts)
        assert int(out_degree(degree_bounded_graph(ei, n, D, CUTOFF_GRAPH, gen), n).max()) <= D


def test_the_relations_and_their_graphs():
    assert RELATIONS == (INPUT_GRAPH, CUTOFF_GRAPH) == ("input-graph", "cut-off-graph")
    ei = undirected(6, [(0, 1), (0, 2), (0, 3), (0, 4), (4, 5)])
    a = degree_bounded_graph(ei, 6, 2, CUTOFF_GRAPH, torch.Generator().manual_seed(3))
    assert torch.equal(a, bound_out_degree(ei, 6, 2, torch.Generator().manual_seed(3)))  # the same cut-off
    facts = degree_facts(ei, a, 6, 2)
    assert facts == {"edges_before_cutoff": 10, "edges_after_cutoff": 8, "nodes_above_max_degree": 1}
    assert degree_facts(ei, ei, 6, 4)["nodes_above_max_degree"] == 0
    with pytest.raises(ConfigError, match="relation"):
        degree_bounded_graph(ei, 6, 4, "cutoff", torch.Generator())
    with pytest.raises(ConfigError, match=">= 1"):
        require_degree_bound(ei, 6, 0)


# -- why no cut-off: the two counterexamples of methods.gap.nap's docstring ----------------------------------


def swap_gadget(D: int, S: int) -> tuple[int, torch.Tensor, list[int]]:
    """v = 0; witnesses 1..D; S swappers, each adjacent to v and to every witness (degree D + 1: the cut-off
    binds). Returns (n, edge_index, witnesses)."""
    witnesses = list(range(1, D + 1))
    swappers = list(range(D + 1, D + 1 + S))
    pairs = [(0, u) for u in swappers] + [(u, w) for u in swappers for w in witnesses]
    return 1 + D + S, undirected(1 + D + S, pairs), witnesses


def test_swap_gadget_under_the_cutoff_moves_the_other_rows_beyond_sqrt_D():
    """In G each swapper keeps D of its D + 1 edges and drops a witness w.p. D / (D + 1); without v it keeps
    every witness. The witnesses' rows alone move by about sqrt(D) S / (D + 1), for every key."""
    D, S = 2, 30
    n, ei, witnesses = swap_gadget(D, S)
    x = torch.ones(n, 1)  # every unit row the same: the moves add up
    others = torch.arange(n) != 0
    norms = []
    for seed in range(6):
        a = degree_bounded_graph(ei, n, D, CUTOFF_GRAPH, torch.Generator().manual_seed(seed))
        b = degree_bounded_graph(remove_node(ei, 0), n, D, CUTOFF_GRAPH, torch.Generator().manual_seed(seed))
        diff = noiseless(a, n, x) - noiseless(b, n, x)
        assert float(diff[witnesses].norm()) > 2 * node_sensitivity(D)  # the witnesses alone, every key
        norms.append(float(diff[others].norm()))
    assert sum(norms) / len(norms) > 0.6 * math.sqrt(D) * S / (D + 1)
    # under input-graph the gadget needs its own degree as the declared bound: refused at D ...
    with pytest.raises(ConfigError, match=f"degree {S}"):
        degree_bounded_graph(ei, n, D, INPUT_GRAPH, torch.Generator())
    # ... and at D = S its removal moves v's S neighbours' rows: sqrt(S) = sqrt(D)
    same = degree_bounded_graph(ei, n, S, INPUT_GRAPH, torch.Generator())
    diff = noiseless(same, n, x) - noiseless(remove_node(same, 0), n, x)
    assert float(diff[others].norm()) == pytest.approx(math.sqrt(S)) and float(diff[witnesses].norm()) == 0


def edge_addition_projection(order: list[tuple[int, int]], n: int, D: int) -> torch.Tensor:
    """Reference greedy edge-addition projection (Day, Li & Lyu, SIGMOD 2016): scan the undirected edges in a fixed,
    data-independent order and keep one iff both endpoints still have degree < D in the kept graph."""
    deg, kept = [0] * n, []
    for a, b in order:
        if deg[a] < D and deg[b] < D:
            kept.append((a, b))
            deg[a] += 1
            deg[b] += 1
    return undirected(n, kept)


def test_edge_addition_projection_cascades_along_a_chain():
    """Order v-1, 1-2, 2-3, ... with D = 1: G keeps v-1, 2-3, 4-5, ...; G - v keeps 1-2, 3-4, ...: every chain
    node's row moves, so the moved rows grow with the chain, not with D."""
    D, moved, norms = 1, [], []
    for L in (2, 3, 5, 8, 13):
        n = L + 1  # v = 0, the chain 1..L
        order = [(i, i + 1) for i in range(L)]
        x = torch.eye(n)  # distinct unit rows
        a = edge_addition_projection(order, n, D)
        b = edge_addition_projection([e for e in order if 0 not in e], n, D)
        assert int(out_degree(a, n).max()) <= D and int(out_degree(b, n).max()) <= D
        diff = (noiseless(a, n, x) - noiseless(b, n, x))[1:]
        moved.append(len(moved_rows(diff)))
        norms.append(float(diff.norm()))
        assert moved[-1] == L  # every row of the chain
    assert norms[0] > node_sensitivity(D) and norms == sorted(norms) and norms[-1] > 4 * node_sensitivity(D)
