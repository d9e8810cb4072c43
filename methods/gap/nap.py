"""The aggregation-perturbation mechanism of GAP / ProGAP and the degree bound it needs at node level.

NAP (normalize-aggregate-perturb, ProGAP Eq. 7)::

    NAP(A, X; sigma)_i = sum_j A[j, i] * X_j / ||X_j||_2  +  N(0, sigma^2 I_d)

Every row of ``X`` is scaled to unit L2 norm, so one row contributes a unit vector to each aggregate it
enters. Sensitivities (Frobenius norm of the change of the noiseless output):

* edge level, undirected graph: removing the undirected edge {u, w} deletes two adjacency entries
  (u -> w and w -> u) and so two unit vectors from two rows: sqrt(2). GAP's Lemma 1 (and ProGAP's
  Theorem 4.1) states 1, which is the sensitivity of ONE directed entry; our graphs are undirected and an
  edge-level unit is an undirected edge (delta is set from their number), so we use sqrt(2).
* node level, two neighbouring relations (:data:`RELATIONS`):

  ``input-graph`` (the default): node-level DP for the graph the user holds, over the graphs whose out-degrees
  are at most a declared public bound D (``max_degree``). The run refuses an input with a larger degree
  (:func:`require_degree_bound`, before any run opens) and aggregates over the input graph itself
  (:func:`degree_bounded_graph`: no cut-off). Neighbours: G and G' = G minus a node v with all its edges
  (v dropped, or kept as an isolated id: the same for the other rows); removal only lowers degrees, so G' is
  within the bound whenever G is (and adding v to G' must keep it there).

  Proof of sqrt(D). Row i of the noiseless output is sum over the in-neighbours j of i of u_j = X_j / ||X_j||.
  Fix the rows X_j of every j != v (hop 1: j's own features, or their embedding by released weights; later
  hops: the released earlier outputs, below); neighbouring datasets share them. For i != v the sums in
  G and G' differ only in the term j = v, present iff v -> i is an edge of G. So the change over the rows
  i != v is u_v at each out-neighbour i of v and 0 elsewhere, of Frobenius norm sqrt(deg_out(v)) <= sqrt(D)
  (exactly sqrt(deg_out v) when X_v != 0). The edges i -> v that go with v only move v's own row, which is
  v's data: it enters training only as v's example (DP-SGD covers it) and is never released
  (``methods.gap.stages``: node-level fits release their weights, the cached aggregates are serving state).
  Hop k > 1 takes X(k-1) as input: by adaptive composition the mechanism of hop k is analysed conditioned on
  the earlier releases, i.e. on the rows X(k-1)_j, j != v, which are then the same in both worlds; the
  argument above applies with u_v = normalise(X(k-1)_v) whatever v's unnormalised row was (for a random
  X(k-1)_v each conditional law is a Gaussian shifted by at most sqrt(D), and Renyi divergence is jointly
  quasi-convex, so the mixture obeys the same bound). Each hop is a Gaussian mechanism of sensitivity
  sqrt(D) (``presets.node_sensitivity``), composed K times in the ledger.

  ``cut-off-graph`` (GAP's and ProGAP's relation): a random neighbour cut-off (:func:`bound_out_degree`) keeps
  min(D, out-degree) out-edges of every node and the sqrt(D) bound (GAP Lemma 3) holds for graphs compared
  AFTER the cut-off. It is not node-level DP for the input graph when the cut-off binds: removing v frees a
  slot at every neighbour u whose degree exceeds D, so u keeps an edge it had dropped, and the rows that move
  are bounded by v's input degree, not by D (``tests/test_gap_nap.py``; the ``nap-node-cutoff-input`` audit;
  ``nap-node-input`` audits the default).

Why no cut-off can replace the declared bound: any rule that caps a node's degree by ranking its neighbours
reallocates the slot a removed node held, at every node that ranked it (the swap gadget: S nodes adjacent to v
and to D witnesses; the witnesses' rows move by about sqrt(D) S / (D + 1)); the greedy edge-addition projection
of Day, Li & Lyu (SIGMOD 2016), whose degree histogram is stable, flips a whole chain of edges when one node goes
(order v-a, a-b, b-c, ..., D = 1: G keeps v-a, b-c, d-e, ...; G - v keeps a-b, c-d, ...; every chain row moves).
``tests/test_gap_nap.py`` exhibits both. Neither bounds the moved rows by a function of D alone, so the sound
default spends its noise on the declared bound instead.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from methods import mechanisms
from methods.base import ConfigError
from methods.models import sparse_adj_t
from methods.privacy.presets import (CUTOFF_GRAPH, EDGE_SENSITIVITY, INPUT_GRAPH, NODE_RELATIONS,  # noqa: F401
                                     node_sensitivity)

#: the node-level neighbouring relations of GAP / ProGAP (module docstring)
RELATIONS = NODE_RELATIONS


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijective scramble of 64-bit words."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def edge_priorities(key: int, src: Tensor, dst: Tensor) -> np.ndarray:
    """A pseudo-random 64-bit priority per directed edge, a function of (key, src, dst) only: an edge
    present in two graphs gets the same priority in both (the coupling used by the tests)."""
    k = np.uint64(key & 0xFFFFFFFFFFFFFFFF)
    s = src.cpu().numpy().astype(np.uint64)
    d = dst.cpu().numpy().astype(np.uint64)
    with np.errstate(over="ignore"):
        return _mix64(_mix64(s ^ k) + d * np.uint64(0x9E3779B97F4A7C15))


def bound_out_degree(edge_index: Tensor, num_nodes: int, max_degree: int, generator: torch.Generator) -> Tensor:
    """Random neighbour cut-off: every source node keeps the ``min(max_degree, out-degree)`` out-edges of
    lowest pseudo-random priority, i.e. a uniformly random subset of that size (``edge_index[0]`` is the
    source; the priorities hash (key, source, target) with one key drawn from ``generator``).

    Returns a sub-list of ``edge_index`` (in source-sorted order); never adds an edge. The result is
    directed even when the input is undirected: u may keep u -> w while w drops w -> u.

    Not monotone under node removal: with the same key, removing a node v from the input can ADD an edge
    u -> w to the output (v held one of u's D slots). The papers' node-level guarantee is therefore with
    respect to the graph after the cut-off (relation ``cut-off-graph``, module docstring).
    """
    if max_degree < 1:
        raise ConfigError(f"max_degree must be >= 1 (got {max_degree})")
    key = int(torch.randint(0, 2**62, (1,), generator=generator))
    e = edge_index.size(1)
    if e == 0:
        return edge_index.clone()
    src = edge_index[0].cpu()
    prio = edge_priorities(key, src, edge_index[1])
    order = torch.from_numpy(np.lexsort((prio, src.numpy())))  # by source, then priority
    src_sorted = src[order]
    counts = torch.bincount(src_sorted, minlength=num_nodes)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(e) - starts[src_sorted]
    return edge_index[:, order[rank < max_degree].to(edge_index.device)]


def max_out_degree(edge_index: Tensor, num_nodes: int) -> int:
    """The largest out-degree of the graph (``edge_index[0]`` is the source; 0 without edges)."""
    if edge_index.size(1) == 0:
        return 0
    return int(torch.bincount(edge_index[0].cpu(), minlength=num_nodes).max())


def require_degree_bound(edge_index: Tensor, num_nodes: int, max_degree: int, owner: str = "this method") -> None:
    """Refuse an input graph with a node of out-degree above the declared bound (``ConfigError``): under the
    ``input-graph`` relation the NAP sensitivity sqrt(D) holds only for graphs within the bound."""
    if max_degree < 1:
        raise ConfigError(f"max_degree must be >= 1 (got {max_degree})")
    have = max_out_degree(edge_index, num_nodes)
    if have > max_degree:
        raise ConfigError(
            f"{owner}: the input graph has a node of degree {have} > max_degree {max_degree}; under relation "
            f"{INPUT_GRAPH} max_degree is a declared public bound on every node's degree, so set max_degree >= "
            f"{have} (it is then public: the record names it), or relation={CUTOFF_GRAPH} for the papers' "
            "relation (DP relative to the graph after a random cut-off, not for the input graph)")


def degree_bounded_graph(edge_index: Tensor, num_nodes: int, max_degree: int, relation: str,
                         generator: torch.Generator, owner: str = "this method") -> Tensor:
    """The graph NAP aggregates over at node level: the input graph itself under ``input-graph`` (after
    :func:`require_degree_bound`), the random cut-off :func:`bound_out_degree` under ``cut-off-graph``.
    The cut-off's key is drawn from ``generator`` only under ``cut-off-graph``."""
    if relation == INPUT_GRAPH:
        require_degree_bound(edge_index, num_nodes, max_degree, owner)
        return edge_index
    if relation == CUTOFF_GRAPH:
        return bound_out_degree(edge_index, num_nodes, max_degree, generator)
    raise ConfigError(f"relation must be one of {', '.join(RELATIONS)} (got {relation!r})")


def degree_facts(edge_index: Tensor, bounded: Tensor, num_nodes: int, max_degree: int) -> dict[str, int]:
    """Exact counts about the bounding step (diagnostics, never released): directed edges before and after it and
    the nodes whose out-degree exceeds D (under ``cut-off-graph``: where the cut-off binds)."""
    deg = torch.bincount(edge_index[0].cpu(), minlength=num_nodes) if edge_index.size(1) else torch.zeros(1)
    return {"edges_before_cutoff": int(edge_index.size(1)), "edges_after_cutoff": int(bounded.size(1)),
            "nodes_above_max_degree": int((deg > max_degree).sum())}


def aggregation_matrix(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Sparse A^T (CSR): row i sums the (normalised) embeddings of every j with an edge j -> i."""
    return sparse_adj_t(edge_index, num_nodes)


def normalize_rows(x: Tensor) -> Tensor:
    """Scale every row to unit L2 norm (zero rows stay zero)."""
    return torch.nn.functional.normalize(x, p=2.0, dim=-1)


def max_fanout_sq(adj_t: Tensor) -> float:
    """max_j sum_i A^T[i, j]^2: the squared L2 norm of the change one unit row makes to the aggregate (D for a
    0/1 matrix whose sources keep at most D out-edges)."""
    if adj_t.layout == torch.sparse_csr:
        cols, vals = adj_t.col_indices(), adj_t.values()
    elif adj_t.is_sparse:
        a = adj_t.coalesce()
        cols, vals = a.indices()[1], a.values()
    else:
        cols = adj_t.nonzero()[:, 1]
        vals = adj_t[adj_t != 0]
    if cols.numel() == 0:
        return 0.0
    return float(torch.bincount(cols.cpu(), weights=vals.detach().double().cpu() ** 2).max())


def nap(adj_t: Tensor, x: Tensor, sigma: float, generator: torch.Generator | None) -> Tensor:
    """One NAP release: normalise rows, sum over in-neighbours, add N(0, sigma^2) to every entry.

    ``adj_t`` is the sparse transposed adjacency from :func:`aggregation_matrix`. ``sigma = 0`` is the
    non-private aggregation (epsilon = inf).
    """
    if sigma < 0 or math.isnan(sigma):
        raise ConfigError(f"NAP noise std must be >= 0 (got {sigma})")
    with torch.no_grad():
        rows = normalize_rows(x.detach().float())
        out = adj_t @ rows
        if sigma > 0:
            noise = sigma * torch.randn(out.shape, generator=generator, device=out.device, dtype=out.dtype)
            out = out + noise
            if mechanisms.active():  # the sensitivity sqrt(2) / sqrt(D) assumes unit rows (and, node level,
                # that no row enters more than D sums: the largest squared column sum of A^T, reported for it)
                norm = float(rows.norm(dim=-1).max()) if rows.numel() else 0.0
                mechanisms.release("gaussian", source="nap", declared={"sigma": float(sigma)}, noise=noise,
                                   precondition=norm <= 1 + 1e-4, max_row_norm=norm,
                                   max_fanout_sq=max_fanout_sq(adj_t))
    return out

