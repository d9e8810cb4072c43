"""Many small, independent teacher networks trained at once.

PrivGNN trains one fresh 2-layer GraphSAGE teacher per query node and PATE trains one teacher per
partition of the private nodes. Each teacher is tiny (hundreds of nodes) but there are hundreds of
them, so they are trained in batches of ``T``: every parameter gets a leading teacher dimension,
the teachers' graphs are padded to a common size ``P`` (``x``: [T, P, F]) and a layer is one
``torch.bmm``. Message passing runs over the block-diagonal union of the teachers' edge lists
(flattened node ids ``t * P + i``), so no message crosses from one teacher to another.

Independence: batch-norm statistics, the loss and Adam's moment estimates are all per teacher (Adam is elementwise;
the loss is a sum of per-teacher means, so a teacher's gradient is the one it would get alone), and each teacher
draws its initialisation and its dropout masks from its own generator. In exact arithmetic a teacher computes the
same function of its own training data whatever else shares its batch. In floating point it computes a function of
its own data AND of the batch's shapes: the number of teachers T, its slot, and the padded size P (at a fixed T, a
different P changes a teacher's weights by an ulp within a few epochs, and 200 epochs turn that into a different
teacher: about 9% of PATE-M's votes on Computers, seed 0, differ between its 20 teachers trained in one batch and
one at a time). The privacy analysis needs a teacher to depend on no private node outside its data, so the shapes
must not depend on private data: T and the slot come from the configuration; ``pad_to`` fixes P (PrivGNN pads to K,
a bound on every teacher's size), and where no data-independent bound exists (PATE's parts, the KNNREM and SINGLEGNN
subsamples) each teacher is trained alone (T = 1, P = its own size). At fixed shapes the other teachers' data do not
reach a teacher, bit for bit (``tests/test_privgnn_teachers.py``, ``tests/test_input_relations.py``).

Speed. The first layer (``[T, P, 2F] x [T, 2F, H]`` forward and weight gradient) is almost all of the cost.
It is one ``torch.bmm``: per-teacher oneDNN GEMMs gave no end-to-end gain and were
not reproducible for a fixed seed on an AMD EPYC (``bench verify``'s determinism check). A batch's induced
subgraphs are extracted in one vectorised pass.

Architecture (PrivGNN appendix G.1 = PyG's ``GraphSAGE(F, 64, 2, C, norm="batch_norm")``):
``SAGEConv(mean) -> BatchNorm -> ReLU -> Dropout(0.5) -> SAGEConv(mean)``, where
``SAGEConv(x)_i = W_l mean_{j -> i} x_j + b_l + W_r x_i``. The PATE-M teacher is a 3-layer MLP.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class TeacherBatch:
    """``T`` training graphs padded to ``P`` nodes. Padding rows have zero features, no edges and
    ``mask`` False; they never enter a loss or a batch-norm statistic. ``adj`` is the block-diagonal
    mean-aggregation matrix over the flattened nodes (row i: 1/in-degree on i's in-neighbours),
    ``adj_t`` its transpose (for the backward pass), both sparse CSR."""

    x: Tensor  # [T, P, F]
    y: Tensor  # [T, P] (0 on padding)
    mask: Tensor  # [T, P] bool
    adj: Tensor  # [T*P, T*P] sparse CSR
    adj_t: Tensor  # [T*P, T*P] sparse CSR

    @property
    def num_teachers(self) -> int:
        return int(self.x.size(0))

    @property
    def size(self) -> int:
        return int(self.x.size(1))

    @property
    def counts(self) -> Tensor:
        return self.mask.sum(1)

    def to(self, device: torch.device | str) -> "TeacherBatch":
        if torch.device(device) == self.x.device:
            return self
        return TeacherBatch(*(getattr(self, f).to(device) for f in ("x", "y", "mask", "adj", "adj_t")))


@dataclass(frozen=True)
class EdgeLookup:
    """The edges of a graph grouped by one endpoint (a CSR over edge ids): ``ids[ptr[u]:ptr[u + 1]]`` are the edges
    whose ``by`` endpoint is ``u``, in ``edge_index`` order. Built once per graph (one stable sort), it finds the
    edges of a few hundred nodes in time proportional to their degrees instead of a pass over every edge."""

    ptr: Tensor  # [n + 1]
    ids: Tensor  # [E]
    by: str  # "src" or "dst"

    @classmethod
    def of(cls, edge_index: Tensor, num_nodes: int, by: str = "src") -> "EdgeLookup":
        key = edge_index[0 if by == "src" else 1].long()
        ids = torch.sort(key, stable=True).indices
        ptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=key.device)
        ptr[1:] = torch.cumsum(torch.bincount(key, minlength=num_nodes), 0)
        return cls(ptr, ids, by)

    def edges_of(self, nodes: Tensor) -> tuple[Tensor, Tensor]:
        """(edge ids of every node of ``nodes``, node by node, each node's in ``edge_index`` order; the position in
        ``nodes`` each edge came from)."""
        start = self.ptr[nodes]
        count = self.ptr[nodes + 1] - start
        owner = torch.repeat_interleave(torch.arange(nodes.numel(), device=nodes.device), count)
        first = torch.cumsum(count, 0) - count
        offset = torch.arange(owner.numel(), device=nodes.device) - first[owner]
        return self.ids[start[owner] + offset], owner

    def to(self, device: torch.device | str) -> "EdgeLookup":
        return EdgeLookup(self.ptr.to(device), self.ids.to(device), self.by)


def mean_adjacency(src: Tensor, dst: Tensor, n: int, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """(A, A^T) as sparse CSR, A[i, j] = 1/in-degree(i) for every edge j -> i (mean aggregation)."""
    deg = torch.zeros(n, dtype=dtype, device=dst.device).index_add_(
        0, dst, torch.ones(dst.numel(), dtype=dtype, device=dst.device))
    val = 1.0 / deg[dst].clamp(min=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        a = torch.sparse_coo_tensor(torch.stack([dst, src]), val, (n, n)).coalesce()
        return a.to_sparse_csr(), a.t().coalesce().to_sparse_csr()


def build_batch(x: Tensor, y: Tensor, edge_index: Tensor | None, node_sets: list[Tensor],
                lookup: EdgeLookup | None = None, pad_to: int | None = None) -> TeacherBatch:
    """Pad the graphs induced by ``node_sets`` (indices into ``x``/``y``/the graph ``edge_index``)
    into one :class:`TeacherBatch`. With a graph, ``x`` holds ``[x | mean of in-neighbours' x]``
    ([T, P, 2F], what a GraphSAGE first layer reads); ``edge_index=None`` builds graph-free batches
    (MLP teachers, ``x``: [T, P, F]).

    Each node set holds distinct nodes. ``lookup``: ``edge_index``'s :class:`EdgeLookup` by source (built here when
    not given; pass one when the same graph serves many batches). Each teacher's edges are read off its nodes'
    out-edges, teacher by teacher, each in ``edge_index`` order: the edges PyG's ``subgraph`` returns.

    ``pad_to``: the padded size P (at least every set's size); None: the largest set's size, which makes every
    teacher's rounding depend on the other sets' sizes (see the module docstring), so private callers with more than
    one teacher per batch pass a data-independent bound."""
    t_count = len(node_sets)
    largest = max([int(s.numel()) for s in node_sets] + [1])
    if pad_to is not None and pad_to < largest:
        raise ValueError(f"a node set has {largest} nodes, more than pad_to={pad_to}")
    p = largest if pad_to is None else int(pad_to)
    n_all, f = x.shape
    dev = x.device
    sets = [s.view(-1).long().to(dev) for s in node_sets]
    sizes = torch.tensor([int(s.numel()) for s in sets], dtype=torch.long, device=dev)
    mask = torch.arange(p, device=dev).unsqueeze(0) < sizes.unsqueeze(1)  # [T, P]
    idx = torch.full((t_count, p), -1, dtype=torch.long, device=dev)
    if t_count and int(sizes.sum()):
        idx[mask] = torch.cat(sets)
    safe = idx.clamp(min=0)
    xb = x[safe] * mask.unsqueeze(-1).to(x.dtype)
    yb = torch.where(mask, y.to(dev)[safe], torch.zeros((), dtype=torch.long, device=dev))
    if edge_index is not None and edge_index.numel() and t_count:
        if lookup is None or lookup.by != "src":
            lookup = EdgeLookup.of(edge_index.to(dev), n_all, "src")
        src, dst = _induced_edges(edge_index.to(dev), lookup.to(dev), idx, mask, n_all)
    else:
        src = dst = torch.zeros(0, dtype=torch.long, device=dev)
    adj, adj_t = mean_adjacency(src, dst, t_count * p, x.dtype)
    if edge_index is not None:
        # the first layer's neighbour mean of the (fixed) input features, computed once: x becomes [x | A x]
        agg = (adj @ xb.view(t_count * p, f)).view(t_count, p, f)
        xb = torch.cat([xb, agg], dim=2)
    return TeacherBatch(xb, yb, mask, adj, adj_t)


def _induced_edges(edge_index: Tensor, lookup: EdgeLookup, idx: Tensor, mask: Tensor, n_all: int
                   ) -> tuple[Tensor, Tensor]:
    """Edges of every teacher's induced subgraph as flattened ids ``t * P + local`` (src, dst), ordered by
    teacher, then as in ``edge_index``: each teacher's nodes' out-edges (``lookup``), kept when the other end is
    one of the teacher's nodes (a binary search over the sorted (teacher, node) keys)."""
    t_count, p = idx.shape
    dev = idx.device
    teacher = torch.arange(t_count, device=dev).unsqueeze(1).expand(t_count, p)[mask]
    local = torch.arange(p, device=dev).unsqueeze(0).expand(t_count, p)[mask]
    node = idx[mask]
    keys, order = torch.sort(teacher * n_all + node)
    eid, owner = lookup.edges_of(node)
    t = teacher[owner]
    want = t * n_all + edge_index[1, eid].long()
    at = torch.searchsorted(keys, want).clamp(max=max(0, keys.numel() - 1))
    hit = keys[at] == want
    t, eid, src_local, dst_local = t[hit], eid[hit], local[owner[hit]], local[order[at[hit]]]
    by_edge = torch.sort(t * max(1, edge_index.size(1)) + eid).indices
    return t[by_edge] * p + src_local[by_edge], t[by_edge] * p + dst_local[by_edge]


def in_neighbourhood(edge_index: Tensor, in_edges: EdgeLookup, nodes: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``k_hop_subgraph(nodes, 1, edge_index, relabel_nodes=True, directed=True)``'s (subset, edges, mapping) read
    off ``in_edges`` (by destination): the edges into ``nodes`` in ``edge_index`` order, relabelled into the sorted
    union of ``nodes`` and their in-neighbours."""
    nodes = nodes.view(-1).long()
    eid, _ = in_edges.edges_of(torch.unique(nodes))
    eid = torch.sort(eid).values
    ei = edge_index[:, eid].long()
    subset, inv = torch.cat([nodes, ei[0]]).unique(return_inverse=True)
    return subset, torch.searchsorted(subset, ei), inv[:nodes.numel()]


class _SpMM(torch.autograd.Function):
    """``A @ h`` with a sparse CSR ``A`` whose transpose is given (backward: ``A^T @ grad``)."""

    @staticmethod
    def forward(ctx, adj: Tensor, adj_t: Tensor, h: Tensor) -> Tensor:
        ctx.adj_t = adj_t
        return adj @ h

    @staticmethod
    def backward(ctx, grad: Tensor):
        return None, None, ctx.adj_t @ grad.contiguous()


def spmm(adj: Tensor, adj_t: Tensor, h: Tensor) -> Tensor:
    return _SpMM.apply(adj, adj_t, h)


#: edges whose messages are gathered at once: all E x D of them would be ~12 GB for the public half of an
#: ogbn-products-sized graph (100 features); blocks add the same messages in the same order
MESSAGE_BLOCK = 1 << 20


def mean_aggregate(h: Tensor, src: Tensor, dst: Tensor, inv_deg: Tensor) -> Tensor:
    """Mean over in-neighbours on a flattened [N, D] tensor (0 for nodes without in-neighbours), gathering the
    messages in blocks of :data:`MESSAGE_BLOCK` edges."""
    e = int(src.numel())
    if e <= MESSAGE_BLOCK:
        out = torch.zeros_like(h).index_add(0, dst, h.index_select(0, src))
    elif torch.is_grad_enabled() and h.requires_grad:
        out = torch.zeros_like(h)
        for i in range(0, e, MESSAGE_BLOCK):
            out = out.index_add(0, dst[i:i + MESSAGE_BLOCK], h.index_select(0, src[i:i + MESSAGE_BLOCK]))
    else:
        out = torch.zeros_like(h)
        for i in range(0, e, MESSAGE_BLOCK):
            out.index_add_(0, dst[i:i + MESSAGE_BLOCK], h.index_select(0, src[i:i + MESSAGE_BLOCK]))
    return out * inv_deg.unsqueeze(-1)


def _uniform(shape: tuple[int, ...], bound: float, gen: torch.Generator) -> Tensor:
    return (torch.rand(shape, generator=gen) * 2.0 - 1.0) * bound


def masked_batch_norm(h: Tensor, mask: Tensor, weight: Tensor, bias: Tensor, running_mean: Tensor,
                      running_var: Tensor, training: bool, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch norm over each teacher's own valid rows (``h``: [T, P, D], ``mask``: [T, P]), with
    torch.nn.BatchNorm1d's semantics: biased variance to normalise, unbiased in the running estimate.
    The masked sums are batched matrix products with the [T, 1, P] mask (one pass each)."""
    if training:
        m = mask.to(h.dtype).unsqueeze(1)  # [T, 1, P]
        n = m.sum(2)  # [T, 1]
        inv_n = 1.0 / n.clamp(min=1)
        mean = torch.bmm(m, h).squeeze(1) * inv_n  # [T, D]
        centered = h - mean.unsqueeze(1)
        var = torch.bmm(m, centered * centered).squeeze(1) * inv_n
        with torch.no_grad():
            ok = (n > 1).to(h.dtype)  # teachers with fewer than 2 nodes leave their running stats alone
            unbiased = var * n / (n - 1).clamp(min=1)
            running_mean.mul_(1 - momentum * ok).add_(momentum * ok * mean)
            running_var.mul_(1 - momentum * ok).add_(momentum * ok * unbiased)
    else:
        mean, var = running_mean, running_var
        centered = h - mean.unsqueeze(1)
    scale = weight * torch.rsqrt(var + eps)  # [T, D]
    return torch.addcmul(bias.unsqueeze(1), centered, scale.unsqueeze(1))


class BatchedSAGE(nn.Module):
    """``T`` independent 2-layer GraphSAGE networks with batch norm after the first layer.

    The first layer reads ``[x | A x]`` (the batch precomputes the neighbour mean of the fixed input
    features), so it is one bmm with ``W1 = [W_r; W_l]`` ([T, 2F, H]); the second layer is
    ``h W2_r + A (h W2_l) + b2``. Initialisation follows PyG's ``Linear`` (uniform in
    +-1/sqrt(fan_in)), drawn from each teacher's own generator.

    The first layer has no bias: batch norm subtracts it, so its gradient is zero in exact
    arithmetic -- and Adam, which divides by the gradient's magnitude, would move it by +-lr per step
    following floating-point noise, noise that depends on the rest of the batch. (PyG's SAGEConv has
    the bias; the function class is the same since batch norm has its own shift.)
    """

    kind = "sage"

    def __init__(self, generators: list[torch.Generator], in_dim: int, hidden: int, out_dim: int,
                 dropout: float = 0.5) -> None:
        super().__init__()
        t = len(generators)
        self.in_dim, self.hidden, self.out_dim, self.dropout = in_dim, hidden, out_dim, float(dropout)
        b1, b2 = 1.0 / math.sqrt(in_dim), 1.0 / math.sqrt(hidden)
        w1, w2r, w2l, bias2 = [], [], [], []
        for g in generators:
            # the order of draws per teacher is fixed: W_l, b_l, W_r (layer 1), then layer 2
            wl = _uniform((in_dim, hidden), b1, g)
            _uniform((hidden,), b1, g)  # PyG's first-layer bias, drawn to keep the stream, not used
            wr = _uniform((in_dim, hidden), b1, g)
            w1.append(torch.cat([wr, wl], dim=0))
            w2l.append(_uniform((hidden, out_dim), b2, g))
            bias2.append(_uniform((out_dim,), b2, g))
            w2r.append(_uniform((hidden, out_dim), b2, g))
        self.w1 = nn.Parameter(torch.stack(w1))  # [T, 2F, H]: rows 0..F-1 root, F..2F-1 neighbours
        self.w2_root = nn.Parameter(torch.stack(w2r))
        self.w2_neigh = nn.Parameter(torch.stack(w2l))
        self.b2 = nn.Parameter(torch.stack(bias2))
        self.bn_weight = nn.Parameter(torch.ones(t, hidden))
        self.bn_bias = nn.Parameter(torch.zeros(t, hidden))
        self.register_buffer("running_mean", torch.zeros(t, hidden))
        self.register_buffer("running_var", torch.ones(t, hidden))

    @property
    def num_teachers(self) -> int:
        return int(self.w1.size(0))

    def hidden_shape(self, batch: TeacherBatch) -> tuple[int, int]:
        return batch.size, self.hidden

    def forward(self, batch: TeacherBatch, drop: Tensor | None = None) -> Tensor:
        t, p = batch.num_teachers, batch.size
        h = torch.bmm(batch.x, self.w1)  # [T, P, H]
        h = masked_batch_norm(h, batch.mask, self.bn_weight, self.bn_bias, self.running_mean, self.running_var,
                              self.training)
        h = F.relu(h)
        if drop is not None:
            h = h * drop
        neigh = torch.bmm(h, self.w2_neigh).view(t * p, self.out_dim)
        agg = spmm(batch.adj, batch.adj_t, neigh).view(t, p, self.out_dim)
        return torch.baddbmm(self.b2.unsqueeze(1), h, self.w2_root) + agg

    @torch.no_grad()
    def predict_graph(self, t: int, x: Tensor, agg_x: Tensor, edge_index: Tensor, nodes: Tensor,
                      in_edges: EdgeLookup | None = None) -> Tensor:
        """Teacher ``t``'s logits (eval mode) for ``nodes`` of a separate graph (inductive inference).

        ``x``: the graph's features; ``agg_x``: the mean of each node's neighbours' features over the
        whole graph (precomputed once, it carries the second hop); ``edge_index``: the graph's edges.
        Only ``nodes`` and their in-neighbours are evaluated, over the edges into ``nodes`` (the only messages
        ``nodes`` receive). ``in_edges``: ``edge_index``'s :class:`EdgeLookup` by destination, which finds those
        edges without a pass over the whole graph (without it, PyG's ``k_hop_subgraph``: the same edges).
        """
        if in_edges is None:
            from torch_geometric.utils import k_hop_subgraph

            subset, ei, mapping, _ = k_hop_subgraph(nodes, 1, edge_index, relabel_nodes=True, num_nodes=x.size(0),
                                                    flow="source_to_target", directed=True)
        else:
            subset, ei, mapping = in_neighbourhood(edge_index, in_edges, nodes)
        f = self.in_dim
        w1 = self.w1[t]
        h = x[subset] @ w1[:f] + agg_x[subset] @ w1[f:]
        h = (h - self.running_mean[t]) * torch.rsqrt(self.running_var[t] + 1e-5) * self.bn_weight[t] + self.bn_bias[t]
        h = F.relu(h)
        n = subset.numel()
        deg = torch.zeros(n, dtype=h.dtype, device=h.device).index_add_(
            0, ei[1], torch.ones(ei.size(1), dtype=h.dtype, device=h.device))
        inv = torch.where(deg > 0, 1.0 / deg.clamp(min=1), torch.zeros_like(deg))
        agg = mean_aggregate(h @ self.w2_neigh[t], ei[0], ei[1], inv)
        out = h @ self.w2_root[t] + agg + self.b2[t]
        return out[mapping]


class BatchedMLP(nn.Module):
    """``T`` independent MLPs (PATE-M's teachers: ``layers`` linear layers with ReLU and dropout)."""

    kind = "mlp"

    def __init__(self, generators: list[torch.Generator], in_dim: int, hidden: int, out_dim: int,
                 dropout: float = 0.5, layers: int = 3) -> None:
        super().__init__()
        if layers < 1:
            raise ValueError("an MLP needs at least one layer")
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.hidden, self.out_dim, self.dropout = hidden, out_dim, float(dropout)
        ws: list[list[Tensor]] = [[] for _ in range(layers)]
        bs: list[list[Tensor]] = [[] for _ in range(layers)]
        for g in generators:
            for i in range(layers):
                bound = 1.0 / math.sqrt(dims[i])
                ws[i].append(_uniform((dims[i], dims[i + 1]), bound, g))
                bs[i].append(_uniform((dims[i + 1],), bound, g))
        self.weights = nn.ParameterList(nn.Parameter(torch.stack(w)) for w in ws)
        self.biases = nn.ParameterList(nn.Parameter(torch.stack(b)) for b in bs)

    @property
    def num_teachers(self) -> int:
        return int(self.weights[0].size(0))

    def hidden_shape(self, batch: TeacherBatch) -> tuple[int, int]:
        return batch.size, self.hidden * (len(self.weights) - 1)

    def forward(self, batch: TeacherBatch, drop: Tensor | None = None) -> Tensor:
        h = batch.x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = torch.bmm(h, w) + b.unsqueeze(1)
            if i < last:
                h = F.relu(h)
                if drop is not None:
                    h = h * drop[..., i * self.hidden:(i + 1) * self.hidden]
        return h

    @torch.no_grad()
    def predict_features(self, t: int, x: Tensor) -> Tensor:
        h = x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w[t] + b[t]
            if i < last:
                h = F.relu(h)
        return h


def dropout_masks(model: nn.Module, batch: TeacherBatch, generators: list[torch.Generator]) -> Tensor | None:
    """Inverted-dropout masks [T, P, D], each teacher's drawn from its own generator for its own
    rows only (so a mask never depends on another teacher's size or on the batching)."""
    p = model.dropout
    if p <= 0:
        return None
    size, width = model.hidden_shape(batch)
    counts = batch.counts.tolist()
    u = torch.ones(len(generators), size, width)
    for t, g in enumerate(generators):
        k = int(counts[t])
        if k:
            torch.rand((k, width), generator=g, out=u[t, :k])
    keep = 1.0 - p
    return (u < keep).to(u.dtype).mul_(1.0 / keep)


def teacher_loss(logits: Tensor, batch: TeacherBatch) -> Tensor:
    """Sum over teachers of each teacher's mean cross-entropy (NLL of log-softmax) on its own nodes."""
    logp = F.log_softmax(logits, dim=-1)
    nll = -logp.gather(-1, batch.y.unsqueeze(-1)).squeeze(-1) * batch.mask.to(logp.dtype)
    return (nll.sum(1) / batch.counts.clamp(min=1).to(logp.dtype)).sum()


def train_teachers(model: nn.Module, batch: TeacherBatch, generators: list[torch.Generator], *, epochs: int,
                   lr: float, weight_decay: float = 0.0) -> list[float]:
    """Full-batch Adam for ``epochs`` steps on every teacher at once; returns the mean loss per epoch."""
    device = batch.x.device
    # fused Adam: the same elementwise update as the reference loop (so still per teacher), 30x faster on CPU
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay, fused=True)
    losses = []
    model.train()
    t_count = max(1, batch.num_teachers)
    for _ in range(epochs):
        drop = dropout_masks(model, batch, generators)
        opt.zero_grad(set_to_none=True)
        loss = teacher_loss(model(batch, None if drop is None else drop.to(device)), batch)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()) / t_count)
    model.eval()
    return losses
