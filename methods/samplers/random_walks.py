"""Disjoint random-walk subgraphs (Ayle et al. 2022, Algorithms 2 and 3: DRW and DRW-R).

``disjoint_random_walks`` returns ``(nodes, ptr)``: subgraph i is ``nodes[ptr[i]:ptr[i+1]]``, its root
first. Roots are drawn uniformly from the still-unassigned nodes (only from ``roots`` when given); each
of the ``restarts`` walks starts at the root and moves ``walk_length`` times to a uniformly chosen
unassigned neighbour, stopping early at a dead end. Every node lands in at most one subgraph, and in
exactly one when ``roots`` is None. (The paper's Algorithm 3 adds the subgraph inside the restart loop,
which would add it R times; the intent, one subgraph per root, is implemented.)

Two equivalences make the compiled sampler exact and fast:

* drawing each root uniformly from the unassigned candidates is the same as scanning a uniformly random
  permutation of the candidates and skipping those already assigned (the unscanned suffix of a uniform
  permutation is uniform given the prefix);
* a uniform unassigned neighbour is drawn by rejection (a uniform neighbour, accepted if unassigned, up
  to 8 tries), then, if all tries failed, uniformly among the unassigned neighbours counted explicitly.
  Every unassigned neighbour is equally likely on every path, so the draw is exactly uniform.

Neighbours are the targets of the out-edges of ``edge_index`` (directed input is walked as given);
duplicate edges are merged so that each neighbour counts once, self-loops are ignored. The sampler reads the
structure, the roots and its generator only, never a feature or a label: DRW's feature-level relation needs the
subgraphs to be the same on neighbouring inputs (``methods/drw.py``, (a)).
``naive_disjoint_random_walks`` is the paper's pseudo-code in pure Python over adjacency lists, kept as
the reference (tests compare both with the exact distribution on small graphs; ``bench perf drw-sampler``
times them).
"""

from __future__ import annotations

import math
import random

import numba
import numpy as np
import torch
from torch import Tensor

from methods.base import ConfigError

_TRIES = 8


def _csr(edge_index: Tensor, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Deduplicated, self-loop-free CSR adjacency of the out-edges (columns sorted within each row).

    A counting sort by row and a sort of each (short) row, compiled: O(E + N) whatever the order of
    ``edge_index``. (The former ``np.unique`` of the E edge keys took 13 of 14 s on an uncoalesced
    1M-node graph under NumPy 2.4.)
    """
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ConfigError(f"edge_index must have shape [2, E] (got {list(edge_index.shape)})")
    ei = edge_index.detach().cpu().long().numpy()  # NumPy: single-threaded, robust on a loaded machine
    if ei.size and (int(ei.min()) < 0 or int(ei.max()) >= num_nodes):
        raise ConfigError(f"edge_index refers to nodes outside [0, {num_nodes})")
    return _build_csr(np.ascontiguousarray(ei[0]), np.ascontiguousarray(ei[1]), int(num_nodes))


@numba.njit(cache=True)
def _build_csr(row, col, n):  # pragma: no cover - jitted
    # a coalesced input (sorted by (row, col), no duplicate, the loaders' graphs) is detected in one pass and
    # copied without the counting sort
    ordered = True
    for e in range(1, row.size):
        if row[e] < row[e - 1] or (row[e] == row[e - 1] and col[e] <= col[e - 1]):
            ordered = False
            break
    ptr = np.zeros(n + 1, dtype=np.int64)
    for e in range(row.size):
        if row[e] != col[e]:
            ptr[row[e] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    idx = np.empty(ptr[n], dtype=np.int64)
    if ordered:
        w = 0
        for e in range(row.size):
            if row[e] != col[e]:
                idx[w] = col[e]
                w += 1
        return ptr, idx
    fill = ptr[:-1].copy()
    for e in range(row.size):
        r = row[e]
        if r != col[e]:
            idx[fill[r]] = col[e]
            fill[r] += 1
    # sort every row (insertion sort: rows are short), drop repeated neighbours, compact in place (writes never
    # overtake reads)
    out = np.zeros(n + 1, dtype=np.int64)
    w = 0
    for i in range(n):
        s, t = ptr[i], ptr[i + 1]
        if t - s > 64:
            idx[s:t] = np.sort(idx[s:t])
        else:
            for j in range(s + 1, t):
                v = idx[j]
                k = j - 1
                while k >= s and idx[k] > v:
                    idx[k + 1] = idx[k]
                    k -= 1
                idx[k + 1] = v
        first = w
        for j in range(s, t):
            v = idx[j]
            if w == first or idx[w - 1] != v:
                idx[w] = v
                w += 1
        out[i + 1] = w
    return out, idx[:w].copy()


@numba.njit(cache=True)
def _walks(indptr, indices, order, walk_length, restarts, seed, out_nodes, out_ptr):  # pragma: no cover - jitted
    np.random.seed(seed)
    n = indptr.size - 1
    assigned = np.zeros(n, dtype=np.bool_)
    k = 0  # nodes written
    m = 0  # subgraphs written
    out_ptr[0] = 0
    for idx in range(order.size):
        root = order[idx]
        if assigned[root]:
            continue
        assigned[root] = True
        out_nodes[k] = root
        k += 1
        for _ in range(restarts):
            v = root
            for _ in range(walk_length):
                start = indptr[v]
                deg = indptr[v + 1] - start
                if deg == 0:
                    break
                chosen = -1
                for _ in range(_TRIES):
                    u = indices[start + np.random.randint(0, deg)]
                    if not assigned[u]:
                        chosen = u
                        break
                if chosen < 0:
                    free = 0
                    for j in range(deg):
                        if not assigned[indices[start + j]]:
                            free += 1
                    if free == 0:
                        break
                    pick = np.random.randint(0, free)
                    for j in range(deg):
                        u = indices[start + j]
                        if not assigned[u]:
                            if pick == 0:
                                chosen = u
                                break
                            pick -= 1
                assigned[chosen] = True
                out_nodes[k] = chosen
                k += 1
                v = chosen
        m += 1
        out_ptr[m] = k
    return k, m


def _check(num_nodes: int, walk_length: int, restarts: int) -> None:
    if num_nodes < 0:
        raise ConfigError("num_nodes must be >= 0")
    if walk_length < 0 or restarts < 1:
        raise ConfigError(f"need walk_length >= 0 and restarts >= 1 (got {walk_length}, {restarts})")


def _root_order(num_nodes: int, roots: Tensor | None, generator: torch.Generator | None) -> Tensor:
    if roots is None:
        return torch.randperm(num_nodes, generator=generator)
    roots = torch.as_tensor(roots, dtype=torch.long).unique()
    if roots.numel() and (int(roots.min()) < 0 or int(roots.max()) >= num_nodes):
        raise ConfigError(f"roots refer to nodes outside [0, {num_nodes})")
    return roots[torch.randperm(roots.numel(), generator=generator)]


def disjoint_random_walks(edge_index: Tensor, num_nodes: int, walk_length: int, restarts: int = 1,
                          roots: Tensor | None = None, generator: torch.Generator | None = None,
                          csr: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Tensor, Tensor]:
    """DRW (``restarts=1``) / DRW-R subgraphs; see the module docstring. ``csr`` reuses a prebuilt adjacency
    (``random_walk_csr``) when the sampler runs repeatedly on one graph (DRW-D)."""
    _check(num_nodes, walk_length, restarts)
    indptr, indices = csr if csr is not None else _csr(edge_index, num_nodes)
    order = _root_order(num_nodes, roots, generator).numpy().astype(np.int64)
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    out_nodes = np.empty(num_nodes, dtype=np.int64)
    out_ptr = np.empty(num_nodes + 1, dtype=np.int64)
    k, m = _walks(indptr, indices, order, int(walk_length), int(restarts), seed, out_nodes, out_ptr)
    return torch.from_numpy(out_nodes[:k].copy()), torch.from_numpy(out_ptr[: m + 1].copy())


def random_walk_csr(edge_index: Tensor, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    return _csr(edge_index, num_nodes)


def min_subgraphs(num_nodes: int, walk_length: int, restarts: int = 1) -> int:
    """The paper's M_min = ceil(N / (1 + R L)): no run on N nodes can form fewer subgraphs."""
    return math.ceil(num_nodes / (1 + restarts * walk_length))


def naive_disjoint_random_walks(edge_index: Tensor, num_nodes: int, walk_length: int, restarts: int = 1,
                                roots: Tensor | None = None, seed: int = 0) -> tuple[Tensor, Tensor]:
    """The paper's pseudo-code in pure Python over adjacency lists (the reference to beat).

    ``remaining`` is a list with a position map (uniform draw and O(1) removal); valid neighbours are
    recomputed by filtering the adjacency list at every step, as the pseudo-code does.
    """
    _check(num_nodes, walk_length, restarts)
    rng = random.Random(seed)
    adj: list[list[int]] = [[] for _ in range(num_nodes)]
    seen = set()
    for u, v in edge_index.t().tolist():
        if u != v and (u, v) not in seen:
            seen.add((u, v))
            adj[u].append(v)
    assigned = [False] * num_nodes
    candidates = list(range(num_nodes)) if roots is None else sorted(set(int(r) for r in roots))
    where = {v: i for i, v in enumerate(candidates)}

    def drop(v: int) -> None:  # remove v from the root candidates in O(1)
        i = where.pop(v, None)
        if i is None:
            return
        last = candidates.pop()
        if last != v:
            candidates[i] = last
            where[last] = i

    nodes: list[int] = []
    ptr = [0]
    while candidates:
        root = candidates[rng.randrange(len(candidates))]
        drop(root)
        assigned[root] = True
        nodes.append(root)
        for _ in range(restarts):
            v = root
            for _ in range(walk_length):
                valid = [u for u in adj[v] if not assigned[u]]
                if not valid:
                    break
                v = valid[rng.randrange(len(valid))]
                assigned[v] = True
                drop(v)
                nodes.append(v)
        ptr.append(len(nodes))
    return torch.tensor(nodes, dtype=torch.long), torch.tensor(ptr, dtype=torch.long)
