"""Shared pieces of the PrivGNN family: the private and public graphs of a task, seeds, the
student, and an opt-in cache of noise-free teacher outputs.

Randomness: every choice comes from its own child of the run's streams (``methods.streams``): the
queries (``queries``), query ``i``'s Poisson subsample (``sampler``, i), teacher ``i``'s initialisation and
dropout (``init``, "teacher", i), the Laplace noise (``noise``) and the student (``init``, "student"). So query
``i``'s subsample and teacher do not depend on how many queries are answered or how the teachers are batched;
``|Q| = 500`` answers exactly the first 500 queries of ``|Q| = 1000`` with the same teachers.

Serving: the released student answers from public data only. A public node is served through the public
graph; a private node is served as an isolated node from its own features (no private edge and no other
private node's features reach any served output).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from methods import inference as I
from methods import mechanisms
from methods.base import ConfigError, FitContext, Task, stable_hash
from methods.models import Backbone, GraphInput, prepare_graph
from methods.privgnn.knn import squared_norms
from methods.privgnn.teachers import EdgeLookup, mean_aggregate
from methods.reuse import reuse_allowed
from methods.streams import RunStreams
from methods.training import progress_bar, row_normalize


def use_row_normalization(choice: str, task: Task) -> bool:
    if choice == "auto":
        return task.dataset.split(":")[0] in ("cora", "citeseer", "pubmed")
    return choice == "row"


@dataclass
class Graphs:
    """The private and the public graph of a private-public task, each relabelled 0..n-1.

    ``query_candidates`` are public-local indices of public-train nodes. ``y_public`` is held only
    for B2 and for evaluation; no private method trains on it.
    """

    private_ids: Tensor
    public_ids: Tensor
    x_private: Tensor
    y_private: Tensor
    edges_private: Tensor
    x_public: Tensor
    edges_public: Tensor
    agg_x_public: Tensor  # mean of each public node's neighbours' features (the 2nd hop of a 2-layer SAGE)
    query_candidates: Tensor
    y_public: Tensor
    num_classes: int

    @property
    def num_private(self) -> int:
        return int(self.private_ids.numel())

    @functools.cached_property
    def private_sq_norms(self) -> Tensor:
        """Squared norms of the private features (the KNN's distance estimates, :mod:`methods.privgnn.knn`)."""
        return squared_norms(self.x_private)

    @functools.cached_property
    def private_lookup(self) -> EdgeLookup:
        """The private graph's edges by source: every teacher batch's induced subgraphs are read off it."""
        return EdgeLookup.of(self.edges_private, self.num_private, "src")

    @functools.cached_property
    def public_in_edges(self) -> EdgeLookup:
        """The public graph's edges by destination: a query's in-neighbourhood is read off it."""
        return EdgeLookup.of(self.edges_public, int(self.public_ids.numel()), "dst")


def split_graphs(task: Task, features: str = "auto") -> Graphs:
    from torch_geometric.utils import subgraph

    if task.setting != "private-public" or task.public_mask is None or task.query_mask is None:
        raise ConfigError(f"{task.dataset}/{task.split} is not a private-public task")
    n = task.num_nodes
    x = task.data.x.float()
    if use_row_normalization(features, task):
        x = row_normalize(x)
    private_ids = task.train_mask.nonzero().view(-1)
    public_ids = task.public_mask.nonzero().view(-1)
    if private_ids.numel() == 0:
        raise ConfigError(f"{task.dataset}/{task.split} has no private node")
    ei_priv, _ = subgraph(private_ids, task.data.edge_index, relabel_nodes=True, num_nodes=n)
    ei_pub, _ = subgraph(public_ids, task.data.edge_index, relabel_nodes=True, num_nodes=n)
    pos = torch.full((n,), -1, dtype=torch.long)
    pos[public_ids] = torch.arange(public_ids.numel())
    candidates = pos[task.query_mask.nonzero().view(-1)]
    x_pub = x[public_ids]
    deg = torch.zeros(public_ids.numel()).index_add_(0, ei_pub[1], torch.ones(ei_pub.size(1)))
    inv = torch.where(deg > 0, 1.0 / deg.clamp(min=1), torch.zeros_like(deg))
    agg = mean_aggregate(x_pub, ei_pub[0], ei_pub[1], inv)
    return Graphs(private_ids, public_ids, x[private_ids], task.data.y[private_ids], ei_priv, x_pub, ei_pub, agg,
                  candidates, task.data.y[public_ids], int(task.num_classes))


def choose_queries(graphs: Graphs, count: int, streams: int | RunStreams) -> Tensor:
    """|Q| = min(count, #public-train nodes) public-train nodes drawn uniformly without replacement (public data
    only), as a prefix of one permutation from the ``queries`` stream. Public-local indices."""
    avail = int(graphs.query_candidates.numel())
    if count < 1:
        raise ConfigError(f"queries must be >= 1 (got {count})")
    if avail < 1:
        raise ConfigError("the split has no public-train node to query")
    count = min(count, avail)  # a small public graph: every public-train node is queried (info["queries"])
    perm = torch.randperm(avail, generator=RunStreams.of(streams).torch("queries"))
    return graphs.query_candidates[perm[:count]]


def noisy_argmax(scores: Tensor, lam: float | None, generator: torch.Generator | None,
                 domain: str | None = None) -> Tensor:
    """argmax(scores + Lap(1/lam) on every coordinate); no noise when ``lam`` is None. ``generator`` is the
    run's noise stream. ``domain`` is what the scores must be for the ledger's sensitivity to hold
    (``"simplex"``: probability vectors, PrivGNN's L1 sensitivity 2; ``"counts"``: vote histograms, PATE's one
    vote per teacher), reported to a verifier (:mod:`methods.mechanisms`)."""
    if lam is None:
        return scores.argmax(1)
    if generator is None:
        raise ConfigError("Laplace noise needs the run's noise generator")
    u = (torch.rand(scores.shape, generator=generator, dtype=torch.float64) - 0.5).clamp(-0.5 + 1e-16, 0.5 - 1e-16)
    # inverse CDF of Laplace(0, 1): -sign(u) log(1 - 2|u|), in float64 so the tails are not cut short
    lap = -torch.sign(u) * torch.log1p(-2.0 * u.abs())
    noise = lap / lam
    if mechanisms.active():
        s = scores.double()
        ok = None
        if domain == "simplex":
            ok = bool((s >= -1e-6).all()) and bool(torch.allclose(s.sum(1), torch.ones_like(s[:, 0]), atol=1e-4))
        elif domain == "counts":
            ok = bool((s >= 0).all()) and bool(torch.equal(s, s.round()))
        mechanisms.release("laplace", source="noisy_argmax", declared={"scale": 1.0 / lam}, noise=noise,
                           precondition=ok, domain=domain or "-", queries=int(s.size(0)))
    return (scores.double() + noise).argmax(1)


# --------------------------------------------------------------------------------------
# student (and the B1/B2 models): PyG GraphSAGE with batch norm, full batch on one graph
# --------------------------------------------------------------------------------------


@dataclass
class NetConfig:
    hidden: int = 64
    dropout: float = 0.5
    lr: float = 0.01
    weight_decay: float = 0.0
    epochs: int = 200


def sage_backbone(in_dim: int, out_dim: int, c: Any) -> Backbone:
    return Backbone("sage", in_dim, out_dim, hidden=c.hidden, layers=2, dropout=c.dropout, norm="batch_norm")


def train_on_graph(x: Tensor, edge_index: Tensor, labeled: Tensor, labels: Tensor, num_classes: int, c: Any,
                   ctx: FitContext, desc: str) -> tuple[Backbone, list[dict]]:
    """Train a fresh SAGE+BN model for ``c.epochs`` full-batch Adam steps on ``labeled`` nodes of the
    graph (x, edge_index); the final model is kept (no labelled validation set to select with).
    Initialisation from the ``init`` stream ("student"), dropout from the run's dropout stream."""
    device, progress = ctx.device, ctx.progress
    with ctx.init("student"):
        model = sage_backbone(x.size(1), num_classes, c).to(device)
    g = prepare_graph("sage", x, edge_index, x.size(0)).to(device)
    idx, y = labeled.to(device), labels.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    history = []
    bar = progress_bar(c.epochs, desc, progress)
    for epoch in range(1, c.epochs + 1):
        model.train()
        opt.zero_grad(set_to_none=True)
        out = model(g)
        loss = F.cross_entropy(out[idx], y)
        loss.backward()
        opt.step()
        history.append({"epoch": epoch, "train_loss": float(loss.detach()),
                        "train_acc": float((out[idx].argmax(1) == y).float().mean())})
        bar.update(1)
    bar.close()
    model.eval()
    return model, history


#: what :func:`serving_input`'s student reads (``Method.inference_reads``): the public graph, and a private node's own
#: row; the student's weights are the DP release
STUDENT_READS = frozenset({I.OWN_FEATURES, I.PUBLIC})


def serving_input(task: Task, features: str, device: torch.device) -> GraphInput:
    """What the released model serves from: every node's own features and the PUBLIC edges only.

    Public nodes see their public neighbourhoods (public data); private nodes keep no edge, so each is
    answered from its own features alone: no private edge and no other private node's data reaches any
    served output (a private-inference claim holds for private nodes too)."""
    x = task.data.x.float()
    if use_row_normalization(features, task):
        x = row_normalize(x)
    ei = task.data.edge_index
    public = task.public_mask
    if public is None:
        raise ConfigError(f"{task.dataset}/{task.split} is not a private-public task")
    keep = public[ei[0]] & public[ei[1]]
    return prepare_graph("sage", x, ei[:, keep], task.num_nodes).to(device)


# --------------------------------------------------------------------------------------
# opt-in cache of noise-free teacher outputs (experiment grids over lambda and |Q|)
# --------------------------------------------------------------------------------------

_CACHE: dict[str, Any] | None = None


@contextlib.contextmanager
def teacher_cache(directory: str | None = None) -> Iterator[dict]:
    """Within this block, fits with the same task, seed and teacher settings reuse the noise-free
    teacher outputs of an earlier fit (a prefix when fewer queries are asked). Teachers do not
    depend on lambda or on later queries, so the results equal uncached fits exactly; only the
    repeated training is saved (a grid over lambda trains each seed's teachers once).

    With ``directory``, rows are also saved there as they are computed (one file per key, rewritten
    after every segment), so an interrupted grid resumes where it stopped.
    """
    global _CACHE
    outer = _CACHE
    if outer is None:
        _CACHE = {"rows": {}, "dir": directory}
        if directory:
            os.makedirs(directory, exist_ok=True)
    try:
        yield _CACHE
    finally:
        if outer is None:
            _CACHE = None


def _cache_file(key: Any) -> str | None:
    """The file of ``key``'s rows: named by the key and by the source of the family's modules, so rows saved by
    other teacher code are never read."""
    if _CACHE is None or not _CACHE["dir"]:
        return None
    return os.path.join(_CACHE["dir"], f"teachers-{stable_hash(repr(key) + '|' + code_version())}.pt")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the PrivGNN family's source files (what a teacher row is computed by)."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def cached_rows(key: Any, count: int, compute_rows: Callable[[int, int], Tensor], segment: int | None = None) -> Tensor:
    """Rows [0, count) of a per-query table (row i depends on query i only): ``compute_rows(a, b)``
    gives rows [a, b). Without an active :func:`teacher_cache` it is simply ``compute_rows(0, count)``;
    with one, known rows are reused and missing ones computed ``segment`` at a time. Inside
    :func:`methods.reuse.fresh` the cache is neither read nor written."""
    if _CACHE is None or not reuse_allowed():
        return compute_rows(0, count)
    rows = _CACHE["rows"]
    have = rows.get(key)
    path = _cache_file(key)
    if have is None and path and os.path.exists(path):
        have = torch.load(path)
        rows[key] = have
    done = 0 if have is None else int(have.size(0))
    step = segment or max(1, count - done)
    while done < count:
        nxt = min(count, done + step)
        part = compute_rows(done, nxt)
        have = part if have is None else torch.cat([have, part])
        rows[key] = have
        if path:
            tmp = path + ".tmp"
            torch.save(have, tmp)
            os.replace(tmp, path)
        done = nxt
    return have[:count].clone()


def task_key(task: Task, streams: RunStreams) -> tuple:
    """What a cached teacher row may depend on: the split (masks and edges), the features, the labels and the
    run's streams. Two fits share rows only when all of them are equal (a task with changed labels is a
    different key, so a check that changes labels never reads rows computed before the change)."""
    return (task.dataset, task.split, task.seed, task.split_hash(), _content_hash(task), streams.seed,
            streams.lineage)


def _content_hash(task: Task) -> str:
    h = hashlib.sha256()
    for t in (task.data.x, task.data.y):
        a = t.detach().cpu().contiguous()
        h.update(f"{a.dtype}|{tuple(a.shape)}|".encode())
        h.update(a.numpy().tobytes())
    return h.hexdigest()[:16]


Distance = Literal["euclidean", "cosine"]
