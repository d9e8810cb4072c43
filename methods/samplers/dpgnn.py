"""DP-GNN's degree-bounded sampling (Daigavane et al. 2022, Algorithms 1-3), vectorised.

Notation follows the paper. A directed edge ``(u, v)`` of ``edge_index`` (row 0 = u, row 1 = v) puts u in
v's *incoming* list ``RE_v`` when u is a training node. The sampled *out*-lists are ``E_u = {v : u in RE_v}``.
Algorithm 2 (DFS-TREE) builds the depth-r tree of a root: the root, then recursively the trees of depth r-1 of
every node in its out-list. Algorithm 3 builds one tree per training node. The lists ``RE_v`` the trees are
built from depend on the neighbouring relation (``relation``; ``methods.dpgnn``'s module docstring has both
proofs):

* ``input-graph`` (the default): every incoming edge from a training node is kept (identity sampling), after
  checking that no node has more than K of them (:func:`require_in_degree_bound`; K is a declared public
  bound). No edge's presence depends on another edge, so removing a node v with all its edges changes exactly
  the trees that contain v, at most N(K, r) of them (Lemma 1).
* ``in-edges`` (the paper's Algorithm 1): each incoming edge of v is kept independently with probability
  ``K / (2 |RE_v|)``, then the list of every node whose sampled in-degree still exceeds K is emptied (official
  code: such a node is "dropped from all edgelists" E, i.e. it enters no tree). Lemma 2 ("only the trees that
  contain the changed node change") holds under the paper's relation, where a node owns its features, label
  and incoming edge list and every other node's list is as it was. It fails for neighbouring input graphs:
  removing v shrinks RE_u at every u it points to, which raises the keep probability of u's other in-edges and
  can flip u's drop rule, so trees of u's other in-neighbours change without containing v, in law (kept with
  probability 1/2 in G, always in G - v, in the gadget of ``tests/test_dpgnn_privacy.py``), not only under one
  coupling of the coins.

Consequences this module's tests check (hypothesis, random directed and undirected graphs):

* every sampled in-degree is <= K;
* a node occurs in at most N(K, r) = sum_{i<=r} K^i training trees (Lemma 1), since it has at most K
  sampled in-neighbours and each of those at most K, and so on;
* only training nodes have children (``RE`` lists hold training nodes only), so a non-training node can
  only be a leaf, and every internal node of every training tree is a training node;
* the result is a deterministic function of the generator's state.

Randomness. Each edge's coin and priority are 64-bit hashes (splitmix64) of one key drawn from ``generator``
and of the edge's endpoints ``(u, v)``, not of its position in ``edge_index``. So the coins of the edges two
graphs share are the same coins; that is the coupling behind both relations' proofs, and
``tests/test_dpgnn_privacy.py`` checks it literally on random graph pairs. A removal that renumbers the other
nodes changes the hash inputs but not their law (the hash idealised as a random function of the edge), so the
coupling is one of edges, not of their numbers.

``max_children`` (not in the paper) caps the out-list used for each tree node at the ``max_children``
edges of highest hash priority. Out-degrees are not bounded by either relation (a hub with many low-degree
neighbours keeps most of its out-edges), and the official implementation likewise truncates each
subgraph (``pad_subgraphs_to``). Truncating by a per-edge priority only ever removes nodes from trees, and
removing a node outside the kept top-``max_children`` of a list leaves that list as it was, so neither Lemma 1
nor the proofs above are affected (by induction on depth: a tree without v never had v among a node's kept
children).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from methods.base import ConfigError
from methods.privacy.presets import DPGNN_RELATIONS, IN_EDGES, INPUT_GRAPH

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
KEEP_SALT, PRIORITY_SALT = 0x5EED0001, 0x5EED0002


def _splitmix(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def edge_uniforms(key: int, src: Tensor | np.ndarray, dst: Tensor | np.ndarray, salt: int = KEEP_SALT) -> np.ndarray:
    """A uniform [0, 1) number per edge, a function of (key, salt, src, dst) only (float64, 53 random bits)."""
    s = np.asarray(src, dtype=np.int64).astype(np.uint64)
    d = np.asarray(dst, dtype=np.int64).astype(np.uint64)
    k = _splitmix(np.array([(int(key) ^ (int(salt) << 32)) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    h = _splitmix(_splitmix(s ^ k) ^ d)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def draw_key(generator: torch.Generator | None) -> int:
    """One 62-bit key from ``generator`` (the only draw the samplers make from it)."""
    return int(torch.randint(0, 2 ** 62, (1,), generator=generator).item())


def occurrence_bound(max_degree: int, depth: int) -> int:
    """N(K, r) = sum_{i=0..r} K^i (Lemma 1)."""
    return sum(int(max_degree) ** i for i in range(int(depth) + 1))


def _simple_edges(edge_index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """Directed edges without self-loops or duplicates, sorted by (src, dst)."""
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ConfigError(f"edge_index must have shape [2, E] (got {tuple(edge_index.shape)})")
    ei = edge_index.long().numpy()
    if ei.size and (int(ei.min()) < 0 or int(ei.max()) >= num_nodes):
        raise ConfigError(f"edge_index refers to nodes outside 0..{num_nodes - 1}")
    src, dst = ei[0], ei[1]
    code = np.sort((src * num_nodes + dst)[src != dst])  # numpy's integer sort: ~20x torch.unique here
    if code.size:
        code = code[np.concatenate(([True], code[1:] != code[:-1]))]
    return torch.from_numpy(code // num_nodes), torch.from_numpy(code % num_nodes)


def priority(key: int, src: Tensor | np.ndarray, dst: Tensor | np.ndarray) -> np.ndarray:
    """A 31-bit integer priority per edge (a hash of key, src, dst); smaller = earlier in an out-list."""
    s = np.asarray(src, dtype=np.int64).astype(np.uint64)
    d = np.asarray(dst, dtype=np.int64).astype(np.uint64)
    k = _splitmix(np.array([(int(key) ^ (PRIORITY_SALT << 32)) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    return (_splitmix(_splitmix(s ^ k) ^ d) >> np.uint64(33)).astype(np.int64)


@dataclass(frozen=True)
class SampledEdgelists:
    """The output of Algorithm 1 as CSR out-lists: ``E_u = dst[ptr[u]:ptr[u+1]]`` (highest priority first)."""

    num_nodes: int
    max_degree: int
    key: int
    ptr: Tensor  # [N + 1]
    dst: Tensor  # [kept edges]
    src: Tensor  # [kept edges], sorted (CSR rows)
    train_in_degree: Tensor  # |RE_v| before sampling (incoming edges from training nodes)
    sampled_in_degree: Tensor  # after the Bernoulli sampling, before the drop rule
    dropped: Tensor  # bool [N]: sampled in-degree > K, so the node's incoming list was emptied

    @property
    def in_degree(self) -> Tensor:
        """Final sampled in-degree (<= K for every node)."""
        return torch.bincount(self.dst, minlength=self.num_nodes)

    @property
    def out_degree(self) -> Tensor:
        return self.ptr[1:] - self.ptr[:-1]

    def out_list(self, u: int) -> list[int]:
        return self.dst[self.ptr[u]:self.ptr[u + 1]].tolist()

    def in_lists(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for s, d in zip(self.src.tolist(), self.dst.tolist()):
            out.setdefault(d, []).append(s)
        return out


def max_train_in_degree(edge_index: Tensor, num_nodes: int, train_mask: Tensor) -> int:
    """The largest number of training in-neighbours of any node (self-loops and duplicates ignored): what the
    occurrence bound N(K, r) needs to be at most K when no edge is dropped."""
    src, dst = _simple_edges(edge_index, num_nodes)
    on_train = torch.as_tensor(train_mask, dtype=torch.bool)[src]
    d = dst[on_train]
    return int(torch.bincount(d, minlength=num_nodes).max()) if d.numel() else 0


def require_in_degree_bound(edge_index: Tensor, num_nodes: int, train_mask: Tensor, max_degree: int,
                            owner: str = "dpgnn") -> None:
    """Refuse an input graph with a node of more than ``max_degree`` training in-neighbours (``ConfigError``):
    under ``input-graph`` K is a declared public bound, and Lemma 1's occurrence bound rests on it."""
    have = max_train_in_degree(edge_index, num_nodes, train_mask)
    if have > int(max_degree):
        raise ConfigError(
            f"{owner}: the input graph has a node with {have} training in-neighbours > max_degree {max_degree}; under "
            f"relation {INPUT_GRAPH} max_degree is a declared public bound on it (a bound on the degree is one), so "
            f"set max_degree >= {have} (it is then public: the record names it), or relation={IN_EDGES} for the "
            "paper's relation (a node owns its incoming edge list; not node-level DP for the input graph)")


def sample_edgelists(edge_index: Tensor, num_nodes: int, train_mask: Tensor, max_degree: int,
                     generator: torch.Generator | None = None, key: int | None = None,
                     relation: str = INPUT_GRAPH) -> SampledEdgelists:
    """The incoming edge lists from training nodes that the trees are built from.

    ``relation="in-edges"``: Algorithm 1 (SAMPLE-EDGELISTS), in-degree-bounded sampling (the paper's).
    ``relation="input-graph"``: every incoming edge from a training node is kept, after checking that no node has
    more than ``max_degree`` of them (:func:`require_in_degree_bound`). No coin depends on another edge, so removing
    a node changes only the trees that contain it (``methods.dpgnn``'s module docstring has the proof).

    Self-loops and duplicate edges are ignored (a simple directed graph). ``key`` overrides the key drawn
    from ``generator`` (tests couple two graphs with it; it orders the out-lists under either relation).
    """
    k = int(max_degree)
    if k < 0:
        raise ConfigError(f"max_degree must be >= 0 (got {max_degree})")
    if relation not in DPGNN_RELATIONS:
        raise ConfigError(f"relation must be one of {', '.join(DPGNN_RELATIONS)} (got {relation!r})")
    train_mask = torch.as_tensor(train_mask, dtype=torch.bool)
    if train_mask.numel() != num_nodes:
        raise ConfigError(f"train_mask has {train_mask.numel()} entries for {num_nodes} nodes")
    key = draw_key(generator) if key is None else int(key)
    # NumPy throughout: single-threaded and several times faster than torch's kernels for these sizes
    src_t, dst_t = _simple_edges(edge_index, num_nodes)
    src, dst = src_t.numpy(), dst_t.numpy()
    on_train = train_mask.numpy()[src]
    src, dst = src[on_train], dst[on_train]
    train_in = np.bincount(dst, minlength=num_nodes)
    if relation == INPUT_GRAPH:
        if src.size and int(train_in.max()) > k:
            require_in_degree_bound(edge_index, num_nodes, train_mask, k)
        keep = np.ones(src.size, dtype=bool)
    elif src.size and k > 0:
        keep = edge_uniforms(key, src, dst) < k / (2.0 * train_in[dst])
    else:
        keep = np.zeros(src.size, dtype=bool)
    sampled_in = np.bincount(dst[keep], minlength=num_nodes)
    dropped = sampled_in > k
    keep &= ~dropped[dst]
    src, dst = src[keep], dst[keep]
    # CSR rows by src; within a row by priority (ties: by dst, the order the edges are already in)
    order = np.argsort((src << 31) | priority(key, src, dst), kind="stable")
    src, dst = src[order], dst[order]
    ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=num_nodes), out=ptr[1:])
    t = torch.from_numpy
    return SampledEdgelists(num_nodes, k, key, t(ptr), t(np.ascontiguousarray(dst)), t(np.ascontiguousarray(src)),
                            t(train_in), t(sampled_in), t(dropped))


@dataclass
class TreeSubgraphs:
    """Depth-r trees (Algorithm 2), one per root, as padded position arrays.

    ``nodes[i, p]`` is the graph node at position p of tree i (-1 = padding; position 0 = the root),
    ``parent[i, p]`` the position of its parent (-1 for the root and padding) and ``depth[i, p]`` its depth.
    A node may occupy several positions of one tree (walks may return); messages flow child -> parent.
    """

    roots: Tensor  # [M]
    nodes: Tensor  # [M, P]
    parent: Tensor  # [M, P]
    depth: Tensor  # [M, P]
    num_nodes: int
    max_depth: int
    _occurrence: Tensor | None = field(default=None, repr=False)

    @property
    def num_subgraphs(self) -> int:
        return int(self.nodes.size(0))

    @property
    def pad(self) -> int:
        return int(self.nodes.size(1))

    @property
    def mask(self) -> Tensor:
        return self.nodes >= 0

    @property
    def sizes(self) -> Tensor:
        return self.mask.sum(1)

    def occurrence(self) -> Tensor:
        """For every graph node, the number of trees it occurs in (Lemma 1 bounds it by N(K, r))."""
        if self._occurrence is None:
            m = self.mask
            tree = torch.arange(self.num_subgraphs).unsqueeze(1).expand_as(self.nodes)[m]
            pairs = torch.unique(tree * self.num_nodes + self.nodes[m])
            self._occurrence = torch.bincount(pairs % self.num_nodes, minlength=self.num_nodes)
        return self._occurrence

    def members(self, i: int) -> set[int]:
        row = self.nodes[i]
        return set(row[row >= 0].tolist())

    def tree_edges(self, i: int) -> list[tuple[int, int]]:
        """(parent node, child node) pairs of tree i, in position order."""
        n, p = self.nodes[i], self.parent[i]
        return [(int(n[p[j]]), int(n[j])) for j in range(1, self.pad) if n[j] >= 0]


def dfs_tree_subgraphs(lists: SampledEdgelists, roots: Tensor, depth: int, max_children: int | None = None,
                       max_positions: int = 200_000_000) -> TreeSubgraphs:
    """Algorithms 2-3 (DFS-TREE for every root), vectorised level by level.

    Positions are numbered breadth-first (root, its children in list order, their children, ...), which is
    the same tree as the paper's recursion. ``max_children`` caps each out-list (module docstring).
    """
    r = int(depth)
    if r < 0:
        raise ConfigError(f"depth must be >= 0 (got {depth})")
    if max_children is not None and max_children < 0:
        raise ConfigError(f"max_children must be >= 0 or None (got {max_children})")
    roots = torch.as_tensor(roots, dtype=torch.long).view(-1)
    m = int(roots.numel())
    ptr, dst_all = lists.ptr.numpy(), lists.dst.numpy()
    deg = ptr[1:] - ptr[:-1]
    if max_children is not None:
        deg = np.minimum(deg, int(max_children))
    root_np = roots.numpy()
    cur_tree, cur_pos, cur_node = np.arange(m), np.zeros(m, dtype=np.int64), root_np
    levels = [(cur_tree, cur_pos, cur_node, np.full(m, -1, dtype=np.int64), 0)]
    size = np.ones(m, dtype=np.int64)
    total_positions = m
    for d in range(1, r + 1):
        cnt = deg[cur_node]
        total = int(cnt.sum())
        if total == 0:
            break
        total_positions += total
        if total_positions > max_positions:
            raise ConfigError(f"the depth-{r} trees would hold more than {max_positions:,} positions; "
                              f"lower max_degree or layers, or set max_children")
        # entry j of this level is child number (j - first[parent]) of its parent, in list order
        within = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        child = dst_all[np.repeat(ptr[cur_node], cnt) + within]
        tree = np.repeat(cur_tree, cnt)
        par = np.repeat(cur_pos, cnt)
        # entries stay grouped by tree (their parents are), so a position is a running offset per tree
        per_tree = np.bincount(tree, minlength=m)
        pos = size[tree] + np.arange(total) - (np.cumsum(per_tree) - per_tree)[tree]
        size += per_tree
        levels.append((tree, pos, child, par, d))
        cur_tree, cur_pos, cur_node = tree, pos, child
    pad = int(size.max()) if m else 1
    nodes = np.full((m, pad), -1, dtype=np.int64)
    parent = np.full((m, pad), -1, dtype=np.int64)
    dep = np.full((m, pad), -1, dtype=np.int64)
    for tree, pos, child, par, d in levels:
        nodes[tree, pos] = child
        parent[tree, pos] = par
        dep[tree, pos] = d
    t = torch.from_numpy
    return TreeSubgraphs(roots, t(nodes), t(parent), t(dep), lists.num_nodes, r)


def sample_subgraphs(edge_index: Tensor, num_nodes: int, train_mask: Tensor, max_degree: int, depth: int,
                     generator: torch.Generator | None = None, max_children: int | None = None,
                     key: int | None = None, relation: str = INPUT_GRAPH) -> tuple[SampledEdgelists, TreeSubgraphs]:
    """Algorithm 3 (SAMPLE-SUBGRAPHS): the edge lists (:func:`sample_edgelists` under ``relation``), then one
    depth-``depth`` tree per training node."""
    lists = sample_edgelists(edge_index, num_nodes, train_mask, max_degree, generator, key=key, relation=relation)
    roots = torch.as_tensor(train_mask, dtype=torch.bool).nonzero().view(-1)
    return lists, dfs_tree_subgraphs(lists, roots, depth, max_children)


# --------------------------------------------------------------------------------------
# The pseudo-code, line by line (the reference for tests and ``bench perf dpgnn-sampler``)
# --------------------------------------------------------------------------------------


def reference_sample_edgelists(edge_index: Tensor, num_nodes: int, train_mask: Tensor, max_degree: int,
                               key: int, relation: str = IN_EDGES) -> dict[int, list[int]]:
    """Algorithm 1 with Python lists and dicts; the same coins as :func:`sample_edgelists`. Returns the
    sampled out-lists E (every node a key), each in priority order. ``relation="input-graph"``: every incoming
    edge from a training node (the caller checks the bound)."""
    src, dst = _simple_edges(edge_index, num_nodes)
    s_list, d_list = src.tolist(), dst.tolist()
    coins = edge_uniforms(key, src, dst).tolist()
    prios = priority(key, src, dst).tolist()
    train = set(torch.as_tensor(train_mask).nonzero().view(-1).tolist())
    incoming: dict[int, list[tuple[int, float, int]]] = {v: [] for v in range(num_nodes)}
    for u, v, c, pr in zip(s_list, d_list, coins, prios):
        if u in train:
            incoming[v].append((u, c, pr))
    sampled: dict[int, list[tuple[int, int]]] = {}
    for v, lst in incoming.items():
        if not lst:
            continue
        if relation == INPUT_GRAPH:
            sampled[v] = [(u, pr) for u, c, pr in lst]
            continue
        p = max_degree / (2 * len(lst))
        kept = [(u, pr) for u, c, pr in lst if c < p]
        if len(kept) <= max_degree:  # nodes with in-degree > K are dropped from all edgelists
            sampled[v] = kept
    out: dict[int, list[tuple[int, int]]] = {u: [] for u in range(num_nodes)}
    for v, kept in sampled.items():
        for u, pr in kept:
            out[u].append((pr, v))
    return {u: [v for _, v in sorted(lst)] for u, lst in out.items()}


def reference_dfs_tree(root: int, edgelists: dict[int, list[int]], depth: int,
                       max_children: int | None = None) -> list[tuple[int, int]]:
    """Algorithm 2 as written (recursive); returns (node, depth) in breadth-first position order."""
    def rec(v: int, r: int) -> list[list[int]]:  # levels of the tree rooted at v
        levels = [[v]]
        if r == 0:
            return levels
        children = edgelists.get(v, [])
        if max_children is not None:
            children = children[:max_children]
        subs = [rec(u, r - 1) for u in children]
        for lvl in range(1, r + 1):
            levels.append([w for s in subs if len(s) > lvl - 1 for w in s[lvl - 1]])
        return levels

    return [(w, d) for d, lvl in enumerate(rec(root, depth)) for w in lvl]
