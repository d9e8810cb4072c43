"""Canaries and neighbouring datasets per privacy unit, built as ordinary :class:`methods.base.Task` objects.

An audit compares worlds that differ in exactly one privacy unit per canary, and reads only what the
released model serves (``predict_proba``), so any registered method -- plugins included -- can be audited.

Node layout of every world: ``[base task nodes | score nodes (m) | fresh anchors (m x degree, optional)
| canary nodes (node unit: only the included ones; feature unit: all m)]``; edge unit: ``[base | a (m) |
b (m) | leaves (m x degree)]``. Everything except the canary units themselves is present in BOTH worlds,
so index ``N + k`` is canary k's score node in every world and the worlds are neighbours in the method's
own relation (see the cases below).

Canary rows (node and feature units): by default each canary owns one extra feature column that is zero
for every other node in both worlds (``pattern="dedicated"``): the most out-of-distribution row there is,
and only canary k's presence ever trains the weights reading column k. ``pattern="random"`` uses random
+-1 rows in the data's own feature space instead.

* ``node`` (add/remove a node with its features, label and edges): canary k is a training node with
  out-of-distribution features ``f_k``, a random label ``c_k`` and edges to ``degree`` low-degree training
  anchors of class ``c_k`` (or, with ``fresh_anchors``, to ``degree`` new zero-row training nodes labelled
  ``c_k`` whose only edge is to the canary, present in both worlds); it exists only in the "in" world (removed nodes are at the end, so no other
  index moves). Its *probe* (score node) is an isolated, unlabelled copy of ``f_k`` present in both worlds:
  a model that memorised (f_k, c_k) predicts c_k for it. (The canary itself cannot be queried in the
  "out" world, where it does not exist.) In the private-public setting the probes are public nodes and
  the whole public-train (query candidate) set in both worlds, so every probe can be queried; the
  original public-train nodes stay in the public graph, unqueried.
* ``feature`` (replace one node's feature row; structure and labels public): canary k is a training node
  with label ``c_k`` and the anchors' edges in both worlds; its row is ``f_k`` in the "in" world and zero in
  the "out" world. Probe as above.
* ``edge`` (add/remove one undirected edge): a pair of new, otherwise isolated, unlabelled nodes
  ``(a_k, b_k)``; ``b_k`` carries class ``c_k``'s mean training feature row (norm ``scale`` x the median
  row norm), ``a_k`` a zero row; ``b_k`` also has ``degree`` leaf neighbours with the same row and label
  ``c_k``, training nodes (both worlds; they teach the model what ``b_k``'s neighbourhood looks like, and
  make multi-hop aggregates through ``b_k`` large when a method fails to normalise). The
  canary is the edge ``{a_k, b_k}``; the score node is ``a_k``, whose prediction moves towards ``c_k``
  only through that edge. ``a_k`` has no other edge: the lowest-degree placement there is.

Canaries are hop-disjoint for a receptive field of ``hops`` layers: the anchors of different canaries are
more than ``2 hops - 2`` apart, so two canaries (one hop beyond their anchors) are more than ``2 hops``
apart and no node sees two of them. Edge pairs and probes are isolated, so trivially disjoint.

The score of canary k is the logit-scaled confidence ``log p(c_k) - log(1 - p(c_k))`` of its score node.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from methods.base import ConfigError, Task
from methods.streams import RunStreams

UNITS = ("node", "edge", "feature")


@dataclass
class CanaryConfig:
    # receptive field (message-passing layers) the canaries must be disjoint for; 0 = anchors only distinct
    # (valid for every audit -- independence of the scores is about power, not soundness)
    hops: int = 2
    degree: int = 1  # anchors (edges) per canary node, node and feature units
    scale: float = 3.0  # canary feature norm as a multiple of the median row norm of the data
    max_anchor_degree: int | None = None  # only anchors of at most this degree (default: lowest-degree first)
    # node/feature canary rows: "dedicated" = one extra feature column per canary (zero for every other
    # node, in both worlds), the canary's row is that column alone; "random" = random +-1 rows in the
    # data's own feature space
    pattern: str = "dedicated"
    # anchors: False = existing low-degree training nodes of the canary's class (hop-disjoint); True = m x
    # degree NEW training nodes with zero rows and the canary's label, each adjacent to its canary only
    # (present in both worlds): examples whose only signal is the canary, for methods whose bug is how often
    # one node enters other nodes' examples
    fresh_anchors: bool = False
    # white-box replace-one worst case (dedicated pattern only): the "out" world's feature-unit canary row is
    # -f_k instead of zero, and fresh anchors carry -f_k; a gradient canary then gives +C to the examples
    # holding +f_k and -C to those holding only -f_k (see audits.whitebox)
    signed: bool = False

    def validate(self) -> None:
        if self.hops < 0:
            raise ConfigError(f"canary hops must be >= 0 (got {self.hops})")
        if self.signed and self.pattern != "dedicated":
            raise ConfigError("signed canaries need the dedicated canary pattern")
        if self.degree < 0:
            raise ConfigError(f"canary degree must be >= 0 (got {self.degree})")
        if not self.scale > 0:
            raise ConfigError(f"canary scale must be > 0 (got {self.scale})")
        if self.pattern not in ("dedicated", "random"):
            raise ConfigError(f"canary pattern must be dedicated or random (got {self.pattern!r})")


def declared_degree_bound(method) -> int | None:
    """The declared public degree bound a canary world of ``method`` must stay within, or None: ``max_degree`` of a
    node-level method run under relation ``input-graph`` (gap-node, progap-node: every node's degree; dpgnn,
    dpgnn-adam: every node's number of training in-neighbours). There the bound is part of the claim (the run
    refuses a graph above it, ``methods.gap.nap.require_degree_bound``, ``methods.samplers.dpgnn``), so a
    canary beyond it would audit graphs the guarantee does not cover, and the fit would refuse it."""
    from methods.privacy.presets import INPUT_GRAPH

    cfg = getattr(method, "config", None)
    if getattr(method, "privacy_unit", None) != "node" or getattr(cfg, "relation", None) != INPUT_GRAPH:
        return None
    bound = getattr(cfg, "max_degree", None)
    return int(bound) if bound else None


def within_declared_bound(cfg: "CanaryConfig", method) -> "CanaryConfig":
    """``cfg`` with a node canary's edges kept within ``method``'s declared degree bound D
    (:func:`declared_degree_bound`; unchanged without one): at most D anchors per canary, and existing anchors of
    degree at most D - 1 (the canary's edge adds one). Fresh anchors have the canary as their only neighbour."""
    bound = declared_degree_bound(method)
    if bound is None:
        return cfg
    degree = min(cfg.degree, bound)
    cap = cfg.max_anchor_degree
    if degree > 0 and not cfg.fresh_anchors:
        cap = bound - 1 if cap is None else min(cap, bound - 1)
    return dataclasses.replace(cfg, degree=degree, max_anchor_degree=cap)


def _undirected(edges: Tensor, num_nodes: int) -> Tensor:
    from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

    if edges.numel() == 0:
        return torch.empty(2, 0, dtype=torch.long)
    e = to_undirected(edges, num_nodes=num_nodes)
    e, _ = remove_self_loops(e)
    return coalesce(e, num_nodes=num_nodes)


def _neighbours(edge_index: Tensor, num_nodes: int):
    import scipy.sparse as sp

    e = edge_index.cpu().numpy()
    return sp.csr_matrix((np.ones(e.shape[1], dtype=np.int8), (e[0], e[1])), shape=(num_nodes, num_nodes))


def _ball(adj, seeds: list[int], radius: int) -> np.ndarray:
    n = adj.shape[0]
    seen = np.zeros(n, dtype=bool)
    seen[seeds] = True
    frontier = seen.copy()
    for _ in range(radius):
        nxt = (adj @ frontier.astype(np.int32)) > 0
        frontier = nxt & ~seen
        seen |= nxt
        if not frontier.any():
            break
    return seen


@dataclass
class CanarySet:
    """m canaries on one base task; :meth:`world` builds the task for any inclusion vector."""

    unit: str
    base: Task
    cfg: CanaryConfig
    features: Tensor  # [m, F] canary rows (node/feature: f_k; edge: b_k's row)
    labels: Tensor  # [m] c_k
    anchors: list[list[int]]  # base-graph anchor ids per canary (node/feature units)
    #: the graph shared by both worlds: base + score nodes (+ canary nodes for the feature unit)
    num_base: int = 0
    #: the number of canaries asked for (more than ``m`` when the graph could hold only ``m``)
    requested: int = 0

    @property
    def m(self) -> int:
        return int(self.labels.numel())

    @property
    def score_nodes(self) -> Tensor:
        return torch.arange(self.num_base, self.num_base + self.m)

    def world(self, include) -> Task:
        """The task with canary k's unit present iff ``include[k]``."""
        inc = torch.as_tensor(np.asarray(include, dtype=bool))
        if inc.numel() != self.m:
            raise ConfigError(f"inclusion vector has {inc.numel()} entries for {self.m} canaries")
        t, n, m = self.base, self.num_base, self.m
        d = t.data
        F = d.x.size(1)
        extra_edges = []
        if self.unit == "edge":
            a = torch.arange(n, n + m)
            b = torch.arange(n + m, n + 2 * m)
            L = self.cfg.degree  # leaves hanging off every b_k (both worlds)
            leaves = torch.arange(n + 2 * m, n + 2 * m + L * m).view(m, L) if L else torch.empty(m, 0).long()
            x = torch.cat([d.x.float(), torch.zeros(m, F), self.features, self.features.repeat_interleave(L, 0)])
            y = torch.cat([d.y, self.labels, self.labels, self.labels.repeat_interleave(L)])
            extra_edges.append(torch.stack([a[inc], b[inc]]))
            if L:
                extra_edges.append(torch.stack([b.repeat_interleave(L), leaves.reshape(-1)]))
            total = n + 2 * m + L * m
            canary_nodes = torch.empty(0, dtype=torch.long)
            fresh = L * m  # the leaves are training nodes labelled c_k (the last nodes)
        else:
            probes = self.features
            if self.unit == "node":
                kept = inc.nonzero().view(-1)
                canary_rows = self.features[kept]
            else:  # feature: every canary node exists; only its row differs
                kept = torch.arange(m)
                out_rows = -self.features if self.cfg.signed else torch.zeros_like(self.features)
                canary_rows = torch.where(inc.view(-1, 1), self.features, out_rows)
            D = self.cfg.degree
            fresh = m * D if self.cfg.fresh_anchors else 0  # new training anchors (zero or -f_k rows), both worlds
            anchor_rows = (-self.features.repeat_interleave(D, 0) if self.cfg.signed and fresh
                           else torch.zeros(fresh, F))
            x = torch.cat([d.x.float(), probes, anchor_rows, canary_rows])
            y = torch.cat([d.y, self.labels, self.labels.repeat_interleave(D) if fresh else self.labels[:0],
                           self.labels[kept]])
            first = n + m + fresh
            total = first + int(kept.numel())
            canary_nodes = torch.arange(first, total)
            for j, k in enumerate(kept.tolist()):
                if self.anchors[k]:
                    anc = torch.tensor(self.anchors[k], dtype=torch.long)
                    extra_edges.append(torch.stack([torch.full_like(anc, first + j), anc]))
        edges = torch.cat([d.edge_index] + extra_edges, dim=1) if extra_edges else d.edge_index
        data = d.__class__(x=x, y=y, edge_index=_undirected(edges, total))
        data.num_nodes = total

        def grow(mask: Tensor | None, new_value: bool, canary_value: bool, anchor_value: bool = False):
            if mask is None:
                return None
            add_score = torch.full((total - n - canary_nodes.numel() - fresh,), new_value)
            return torch.cat([mask, add_score, torch.full((fresh,), anchor_value),
                              torch.full((canary_nodes.numel(),), canary_value)])

        public = t.setting == "private-public"
        query = grow(t.query_mask, public, False)
        if public:  # the public-train (query) set is the probes alone, so every probe is queried
            query[:n] = False
        return dataclasses.replace(
            t, data=data,
            train_mask=grow(t.train_mask, False, True, True),
            val_mask=grow(t.val_mask, False, False),
            test_mask=grow(t.test_mask, False, False),
            query_mask=query,
            public_mask=grow(t.public_mask, public, False),
            node_ids=None,
            info={**t.info, "audit_canaries": m, "audit_unit": self.unit, "audit_included": int(inc.sum())})

    def scores(self, proba: Tensor) -> np.ndarray:
        """Logit-scaled confidence of each canary's score node on its label (proba: [N_world, C])."""
        p = proba[self.score_nodes].double().clamp(1e-12, 1.0)
        pc = p[torch.arange(self.m), self.labels].clamp(1e-12, 1 - 1e-12)
        rest = (1.0 - pc).clamp(min=1e-12)
        return (pc.log() - rest.log()).numpy()


def inclusion_coins(streams: RunStreams, m: int) -> np.ndarray:
    """The audits' fair coins: canary k is in the training data iff ``coins[k]``. Drawn from the ``coins`` stream
    alone, so they are independent of the canaries' design (features, labels, anchors)."""
    return streams.numpy("coins").random(m) < 0.5


def make_canaries(task: Task, unit: str, m: int, cfg: CanaryConfig | None = None,
                  seed: int | RunStreams = 0, allow_fewer: int | None = None) -> CanarySet:
    """Design m hop-disjoint canaries for ``unit`` on ``task`` (see the module docstring), from the ``canaries``
    stream of the audit's streams (``seed``): independent of the inclusion coins (the ``coins`` stream).

    ``allow_fewer``: when the graph cannot hold m hop-disjoint canaries with existing anchors, fall back to as
    many as fit if that is at least this many (``CanarySet.requested`` keeps m); else the error says what to pass."""
    cfg = cfg or CanaryConfig()
    cfg.validate()
    original = task
    if unit not in UNITS:
        raise ConfigError(f"cannot audit privacy unit {unit!r} (auditable: {', '.join(UNITS)})")
    if m < 1:
        raise ConfigError(f"need at least one canary (got {m})")
    rng = RunStreams.of(seed).numpy("canaries")
    d = task.data
    n, F, C = task.num_nodes, task.num_features, task.num_classes
    x = d.x.float()
    norms = x.norm(dim=1)
    target = float(norms[norms > 0].median()) if bool((norms > 0).any()) else 1.0
    target *= cfg.scale
    train = task.train_mask.clone()
    y = d.y
    labels = torch.from_numpy(rng.integers(0, C, size=m)).long()
    anchors: list[list[int]] = [[] for _ in range(m)]
    if unit == "edge":
        feats = torch.zeros(m, F)
        for c in range(C):
            rows = x[train & (y == c)]
            mean = rows.mean(0) if rows.size(0) else torch.from_numpy(rng.normal(size=F)).float()
            if float(mean.norm()) == 0:
                mean = torch.from_numpy(rng.normal(size=F)).float()
            feats[labels == c] = mean / mean.norm() * target
    else:
        if cfg.pattern == "dedicated":
            # m new all-zero columns for every existing node (both worlds): canary k alone uses column F + k
            data = d.__class__(x=torch.cat([x, torch.zeros(n, m)], dim=1), y=d.y, edge_index=d.edge_index)
            data.num_nodes = n
            task = dataclasses.replace(task, data=data)
            feats = torch.cat([torch.zeros(m, F), torch.eye(m) * target], dim=1)
        else:
            signs = torch.from_numpy(rng.choice([-1.0, 1.0], size=(m, F))).float()
            feats = signs / np.sqrt(F) * target
        if cfg.degree > 0 and cfg.fresh_anchors:
            base = n + m
            anchors = [list(range(base + k * cfg.degree, base + (k + 1) * cfg.degree)) for k in range(m)]
        elif cfg.degree > 0:
            adj = _neighbours(d.edge_index, n)
            deg = np.asarray(adj.sum(1)).ravel()
            blocked = np.zeros(n, dtype=bool)
            radius = max(0, 2 * cfg.hops - 2)  # hops = 0: radius 0, i.e. anchors only distinct
            ok = train.numpy().copy()
            if cfg.max_anchor_degree is not None:
                ok &= deg <= cfg.max_anchor_degree
            yy = y.numpy()
            tie = rng.random(n)
            for k in range(m):
                avail = np.flatnonzero(ok & ~blocked)
                by_class = {c: avail[yy[avail] == c] for c in range(C)}
                good = [c for c in range(C) if by_class[c].size >= cfg.degree]
                if not good:
                    if allow_fewer is not None and allow_fewer <= k < m:
                        out = make_canaries(original, unit, k, cfg, seed, allow_fewer)
                        out.requested = max(out.requested, m)
                        return out
                    raise ConfigError(
                        f"cannot place {m} hop-disjoint canaries with {cfg.degree} anchor(s) each on "
                        f"{task.dataset} ({k} placed; hops={cfg.hops}): pass --canaries {max(k, 2)}, or "
                        f"--fresh-anchors (new anchor nodes: any number fits), or --hops 0, or --canary-degree 0")
                c = int(labels[k]) if int(labels[k]) in good else int(rng.choice(good))
                labels[k] = c
                cand = by_class[c]
                order = np.lexsort((tie[cand], deg[cand]))  # lowest degree first, random ties
                chosen = [int(v) for v in cand[order[: cfg.degree]]]
                anchors[k] = chosen
                blocked |= _ball(adj, chosen, radius)
    return CanarySet(unit, task, cfg, feats, labels, anchors, num_base=n, requested=m)
