"""Shared GNN backbones built on PyG's BasicGNN models, with one calling convention, and sparse input rows.

Every backbone is called as ``model(x, edge_index, edge_weight)``. :func:`prepare_graph` does the
per-graph preprocessing once (GCN's symmetric normalisation with self-loops), so training loops
never renormalise the adjacency every epoch.

Sparse input (:class:`SparseFeatures`, :class:`SparseRows`). Bag-of-words features (Cora, CiteSeer, Coauthor)
have <= 1% non-zeros; a batch of padded subgraphs gathered densely (``x[B, P, F]``) is then almost all zeros
(Physics, m = 2000 trees of <= 11 nodes: 740 MB per step). ``SparseFeatures`` keeps a CSR copy of the feature
matrix (the dataset's ``x`` stays dense), ``SparseRows`` is a batch ``x[index]`` of its rows that looks like the
dense ``[*index.shape, F]`` tensor to the code that handles inputs (shape, boolean selection of examples,
``index_select`` of columns, ``to``), and that an ``nn.Linear`` consumes as one sparse-dense product (forward)
and one transposed sparse-dense product (weight gradient). :mod:`methods.dpsgd` computes the per-example
gradient norms of such a layer from the Gram matrices of each example's rows (:meth:`SparseRows.example_gram`,
a sparse-sparse product, or precomputed once per subgraph when the subgraphs are fixed). Any other operation
on a ``SparseRows`` runs on its dense form (correct, just not faster).
"""

from __future__ import annotations

from dataclasses import dataclass
import warnings
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.weak import WeakIdKeyDictionary
from torch_geometric import nn as pyg_nn
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_torch_csr_tensor

Arch = Literal["mlp", "gcn", "sage", "gat"]


@dataclass(frozen=True)
class GraphInput:
    """A graph ready for a backbone: features, (processed) edges and optional edge weights."""

    x: Tensor
    edge_index: Tensor  # [2, E] edge list, or a sparse adjacency (adj_t) for gcn/sage
    edge_weight: Tensor | None = None

    def to(self, device: torch.device | str) -> "GraphInput":
        w = None if self.edge_weight is None else self.edge_weight.to(device)
        return GraphInput(self.x.to(device), self.edge_index.to(device), w)


def sparse_adj_t(edge_index: Tensor, num_nodes: int, weight: Tensor | None = None) -> Tensor:
    """The transposed adjacency as a torch CSR matrix (row i lists the sources of edges into i).

    PyG's convolutions then aggregate with one fused sparse-dense product instead of gathering a
    feature row per edge: 3-9x faster on CPU for GCN/GraphSAGE on Amazon Computers (same outputs).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "CSR support is in beta", "invariant checks disabled"
        return to_torch_csr_tensor(edge_index.flip(0), weight, size=(num_nodes, num_nodes))


#: per CSR adjacency, its transpose as CSR (``None``: the matrix is symmetric, its own transpose)
_TRANSPOSES: WeakIdKeyDictionary = WeakIdKeyDictionary()


def csr_transpose(adj: Tensor) -> Tensor:
    """``adj^T`` as a CSR matrix, built once per matrix (and not at all kept for a symmetric one, e.g. GCN's
    normalised adjacency of an undirected graph)."""
    if adj in _TRANSPOSES:
        t = _TRANSPOSES[adj]
        return adj if t is None else t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t = adj.t().to_sparse_csr()
    same = (torch.equal(t.crow_indices(), adj.crow_indices()) and torch.equal(t.col_indices(), adj.col_indices())
            and torch.equal(t.values(), adj.values()))
    _TRANSPOSES[adj] = None if same else t
    return adj if same else t


class _FixedSpMM(torch.autograd.Function):
    """``adj @ x`` for a constant CSR ``adj``: the backward is ``adj^T @ grad`` with ``adj^T`` built once
    (:func:`csr_transpose`). Autograd's own backward of ``torch.sparse.mm`` transposes the CSR matrix at every
    call, a sort of all E entries: at 1M nodes and 11M edges that was ~85% of a GCN layer's backward, and the
    reason GCN's fit time grew as edges^1.27 on the scale track."""

    @staticmethod
    def forward(ctx, adj: Tensor, x: Tensor) -> Tensor:
        ctx.adj = adj
        return torch.sparse.mm(adj, x)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return None, torch.sparse.mm(csr_transpose(ctx.adj), grad)


def fixed_spmm(adj: Tensor, x: Tensor) -> Tensor:
    """``adj @ x`` (CSR ``adj`` without gradient, dense ``x``) with the transpose for the backward cached."""
    return _FixedSpMM.apply(adj, x)


class _GCNConv(pyg_nn.GCNConv):
    """PyG's GCNConv whose sum aggregation over a constant CSR adjacency is :func:`fixed_spmm` (same outputs,
    same gradients, no per-step transpose)."""

    def message_and_aggregate(self, adj_t, x: Tensor) -> Tensor:
        if (isinstance(adj_t, Tensor) and adj_t.layout == torch.sparse_csr and self.aggr == "add"
                and not adj_t.requires_grad and x.layout == torch.strided):
            return fixed_spmm(adj_t, x)
        return super().message_and_aggregate(adj_t, x)


class _GCN(pyg_nn.GCN):
    """PyG's GCN built from :class:`_GCNConv` layers."""

    def init_conv(self, in_channels: int, out_channels: int, **kwargs):
        return _GCNConv(in_channels, out_channels, **kwargs)


def prepare_graph(arch: Arch, x: Tensor, edge_index: Tensor, num_nodes: int) -> GraphInput:
    """Per-graph preprocessing: GCN normalisation (with self-loops) and a sparse adjacency for GCN/SAGE."""
    if arch == "gcn":
        ei, w = gcn_norm(edge_index, None, num_nodes=num_nodes, add_self_loops=True)
        return GraphInput(x, sparse_adj_t(ei, num_nodes, w), None)
    if arch == "sage":
        return GraphInput(x, sparse_adj_t(edge_index, num_nodes), None)
    return GraphInput(x, edge_index, None)


class Backbone(nn.Module):
    """An MLP or message-passing network with a uniform ``forward(GraphInput)``."""

    def __init__(self, arch: Arch, in_dim: int, out_dim: int, hidden: int = 64, layers: int = 2,
                 dropout: float = 0.5, norm: str | None = None, jk: str | None = None, heads: int = 8,
                 aggr: str = "mean") -> None:
        super().__init__()
        if layers < 1:
            raise ValueError("a backbone needs at least one layer")
        self.arch = arch
        jk = None if jk in (None, "none") else jk
        norm = None if norm in (None, "none") else norm
        if arch == "mlp":
            channels = [in_dim] + [hidden] * (layers - 1) + [out_dim]
            self.net = pyg_nn.MLP(channel_list=channels, dropout=dropout, norm=norm, plain_last=True)
        elif arch == "gcn":
            # normalisation is precomputed once per graph by prepare_graph
            self.net = _GCN(in_dim, hidden, layers, out_dim, dropout=dropout, norm=norm, jk=jk,
                            normalize=False, add_self_loops=False)
        elif arch == "sage":
            self.net = _GraphSAGE(in_dim, hidden, layers, out_dim, dropout=dropout, norm=norm, jk=jk, aggr=aggr)
        elif arch == "gat":
            if hidden % heads:
                raise ValueError(f"gat: hidden ({hidden}) must be divisible by heads ({heads})")
            self.net = pyg_nn.GAT(in_dim, hidden, layers, out_dim, dropout=dropout, norm=norm, jk=jk,
                                  heads=heads, v2=False)
        else:
            raise ValueError(f"unknown backbone {arch!r}")

    def forward(self, g: GraphInput) -> Tensor:
        if self.arch == "mlp":
            return self.net(sparse_input(g.x))
        if self.arch in ("gcn", "sage"):
            return self.net(sparse_input(g.x), g.edge_index)
        return self.net(g.x, g.edge_index)


class _SAGEConv(pyg_nn.SAGEConv):
    """PyG's SAGEConv that, on a sparse CSR input, projects before it aggregates.

    With mean aggregation ``W_l mean_j x_j + b_l = mean_j (W_l x_j) + b_l`` (an isolated node's empty mean is 0
    on both sides), so the layer is ``A_mean (x W_l^T) + b_l + x W_r^T``: two sparse-dense products with the
    CSR ``x`` and an aggregation of ``hidden`` columns instead of a dense GEMM on, and an aggregation of, all
    ``F`` raw features (6,805 on CS). Same parameters, same initialisation, same function; dense inputs take
    PyG's own path."""

    def forward(self, x, edge_index, size=None):
        if not (isinstance(x, Tensor) and x.layout == torch.sparse_csr and self.aggr == "mean"
                and not self.project):
            return super().forward(x, edge_index, size)
        h = F.linear(x, self.lin_l.weight)
        out = self.propagate(edge_index, x=(h, h), size=size)
        if self.lin_l.bias is not None:
            out = out + self.lin_l.bias
        if self.root_weight:
            out = out + self.lin_r(x)
        return F.normalize(out, p=2.0, dim=-1) if self.normalize else out


class _GraphSAGE(pyg_nn.GraphSAGE):
    """PyG's GraphSAGE built from :class:`_SAGEConv` layers (only the first one ever sees a CSR input)."""

    def init_conv(self, in_channels, out_channels, **kwargs):
        return _SAGEConv(in_channels, out_channels, **kwargs)


#: CSR copies of the dense feature matrices :func:`sparse_input` has seen, keyed by tensor identity (an entry dies
#: with its tensor) and checked against the tensor's version counter (an in-place change invalidates it)
_CSR_INPUTS = WeakIdKeyDictionary()


def sparse_input(x: Tensor) -> Tensor:
    """``x`` as a cached sparse CSR tensor when it is a CPU feature matrix with <= SPARSE_MAX_DENSITY non-zeros
    (bag-of-words: Cora, CiteSeer, Coauthor; one-hot attributes: Facebook), else ``x`` itself.

    The first layer of an MLP, GCN or GraphSAGE (:class:`_SAGEConv`) is linear in ``x``; on a CSR ``x`` it is a sparse-dense product (forward) and
    its transpose (weight gradient): 3.9x faster than the dense GEMM on CS (0.9% non-zeros) and 12x on Physics
    (0.4%), one thread. Same function; the sums run in another order, so results agree to float rounding. CPU only:
    a GPU's dense GEMM is fast enough and keeps its kernels' reproducibility."""
    if x.device.type != "cpu" or x.layout != torch.strided or x.dim() != 2 or x.requires_grad or not x.numel():
        return x
    hit = _CSR_INPUTS.get(x)
    if hit is None or hit[0] != x._version:  # noqa: SLF001 - torch's in-place version counter
        csr = None  # dense enough for the GEMM; the entry must not refer to x itself, or x would never be freed
        if int(torch.count_nonzero(x)) <= SPARSE_MAX_DENSITY * x.numel():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
                csr = x.to_sparse_csr()
        hit = _CSR_INPUTS[x] = (x._version, csr)  # noqa: SLF001 - torch's in-place version counter
    return x if hit[1] is None else hit[1]


def linear_mlp(in_dim: int, hidden: int, out_dim: int, layers: int = 2, act: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """A plain MLP whose only parameters are nn.Linear layers (book-keeping DP-SGD applies)."""
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
    mods: list[nn.Module] = []
    for i in range(layers):
        mods.append(nn.Linear(dims[i], dims[i + 1]))
        if i < layers - 1:
            mods.append(act())
    return nn.Sequential(*mods)


class DenseGCN(nn.Module):
    """A GCN over a batch of padded subgraphs, one prediction per subgraph (its root, position 0).

    ``x``: [B, P, F] node features (zero rows for padding); ``adj``: [B, P, P] normalised adjacency
    with self-loops (zero rows/columns for padding). Each layer is ``adj @ Linear(h)``; the examples
    never mix, so per-example gradients are exact.
    """

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 64, layers: int = 2,
                 act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.lins = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(layers))
        self.act = act()

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        h = x
        for i, lin in enumerate(self.lins):
            h = torch.bmm(adj, lin(h))
            if i < len(self.lins) - 1:
                h = self.act(h)
        return h[:, 0]


def dense_gcn_full_graph(model: DenseGCN, g: GraphInput) -> Tensor:
    """Apply a DenseGCN's weights to a whole graph prepared by ``prepare_graph("gcn", ...)`` (sparse
    normalised adjacency with self-loops): every node's logits, as the papers do at inference."""
    h = g.x
    for i, lin in enumerate(model.lins):
        h = g.edge_index @ lin(h)
        if i < len(model.lins) - 1:
            h = model.act(h)
    return h


# --------------------------------------------------------------------------------------
# Sparse input rows (bag-of-words features): see the module docstring
# --------------------------------------------------------------------------------------

#: feature matrices with at most this fraction of non-zeros are handled as sparse rows by the DP-SGD methods
SPARSE_MAX_DENSITY = 0.05


def _csr_tensor(crow: Tensor, col: Tensor, val: Tensor, shape: tuple[int, int]) -> Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        return torch.sparse_csr_tensor(crow, col, val, shape)


def _counts_to_ptr(counts: Tensor) -> Tensor:
    ptr = torch.zeros(counts.numel() + 1, dtype=torch.long, device=counts.device)
    torch.cumsum(counts, 0, out=ptr[1:])
    return ptr


def _gather_rows(crow: Tensor, col: Tensor, val: Tensor, index: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """CSR of the rows ``index`` (flat, -1 = an empty row) of the CSR (crow, col, val): (crow, col, val, counts)."""
    valid = index >= 0
    safe = index.clamp(min=0)
    start = crow.index_select(0, safe)
    counts = (crow.index_select(0, safe + 1) - start) * valid
    ptr = _counts_to_ptr(counts)
    nnz = int(ptr[-1])
    src = torch.repeat_interleave(start - ptr[:-1], counts, output_size=nnz) + torch.arange(nnz, device=crow.device)
    return ptr, col.index_select(0, src), val.index_select(0, src), counts


def _sort_by_column(col: Tensor, val: Tensor, counts: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The non-zeros of CSR rows (col, val, row counts) reordered by column, then row: (col, row, val)."""
    nnz = int(col.numel())
    row = torch.repeat_interleave(torch.arange(counts.numel(), device=col.device), counts, output_size=nnz)
    col_s, order = torch.sort(col, stable=True)  # stable: rows stay in order within a column
    return col_s, row.index_select(0, order), val.index_select(0, order)


def _block_gram(col_s: Tensor, row_s: Tensor, val_s: Tensor, examples: int, rows_per_example: int) -> Tensor:
    """``G[b, t, t'] = a_bt . a_bt'`` from the non-zeros sorted by (column, row) (:func:`_sort_by_column`), rows
    ``b T + t``. A sparse-sparse product restricted to the diagonal blocks: the non-zeros of one (column, example)
    are contiguous in that order, and every pair inside such a group adds ``v v'`` to its (t, t') entry.
    Work: the sum over groups of size^2 (about the number of non-zeros for bag-of-words rows)."""
    t_count, dev = rows_per_example, col_s.device
    nnz = int(col_s.numel())
    out = torch.zeros(examples * t_count * t_count, dtype=val_s.dtype, device=dev)
    if nnz == 0:
        return out.view(examples, t_count, t_count)
    # per-row lookups instead of int64 division (several times slower than a gather on CPU)
    rows = torch.arange(examples * t_count, device=dev)
    ex_of, pos_of = torch.div(rows, t_count, rounding_mode="floor"), torch.remainder(rows, t_count)
    ex = ex_of.index_select(0, row_s)
    first = torch.ones(nnz, dtype=torch.bool, device=dev)
    first[1:] = (col_s[1:] != col_s[:-1]) | (ex[1:] != ex[:-1])
    starts = first.nonzero().view(-1)
    sizes = torch.diff(starts, append=torch.tensor([nnz], device=dev))
    if int(sizes.max()) == 1:  # no column shared inside an example: only the diagonal
        out.index_add_(0, row_s * t_count + pos_of.index_select(0, row_s), val_s * val_s)
        return out.view(examples, t_count, t_count)
    group = torch.cumsum(first, 0) - 1
    size = sizes.index_select(0, group)
    total = int(size.sum())
    i = torch.repeat_interleave(torch.arange(nnz, device=dev), size, output_size=total)
    j = starts.index_select(0, group.index_select(0, i)) + (
        torch.arange(total, device=dev) - (torch.cumsum(size, 0) - size).index_select(0, i))
    # flat (example, t, t') = ri * T + t' (ri and rj lie in the same example)
    flat = row_s.index_select(0, i) * t_count + pos_of.index_select(0, row_s.index_select(0, j))
    out.index_add_(0, flat, val_s.index_select(0, i) * val_s.index_select(0, j))
    return out.view(examples, t_count, t_count)


class SparseFeatures:
    """A feature matrix ``X [N, F]`` kept as CSR (row pointers, column indices, values), built once per run."""

    def __init__(self, crow: Tensor, col: Tensor, val: Tensor, num_cols: int) -> None:
        self.crow, self.col, self.val = crow.long(), col.long(), val
        self.num_cols = int(num_cols)
        self._moved: dict[str, SparseFeatures] = {}

    @classmethod
    def from_dense(cls, x: Tensor) -> "SparseFeatures":
        if x.dim() != 2:
            raise ValueError(f"sparse features need a 2-D matrix (got shape {tuple(x.shape)})")
        nz = x.nonzero()
        rows, cols = nz[:, 0], nz[:, 1]
        ptr = _counts_to_ptr(torch.bincount(rows, minlength=x.size(0)))
        return cls(ptr, cols.contiguous(), x[rows, cols], x.size(1))

    @classmethod
    def maybe(cls, x: Tensor, max_density: float = SPARSE_MAX_DENSITY) -> "SparseFeatures | None":
        """A sparse copy of ``x`` when at most ``max_density`` of its entries are non-zero, else None."""
        if x.dim() != 2 or x.numel() == 0 or x.layout != torch.strided:
            return None
        if int(torch.count_nonzero(x)) > max_density * x.numel():
            return None
        return cls.from_dense(x)

    @property
    def num_rows(self) -> int:
        return int(self.crow.numel()) - 1

    @property
    def shape(self) -> torch.Size:
        return torch.Size((self.num_rows, self.num_cols))

    @property
    def nnz(self) -> int:
        return int(self.col.numel())

    @property
    def device(self) -> torch.device:
        return self.val.device

    @property
    def dtype(self) -> torch.dtype:
        return self.val.dtype

    def to(self, device: torch.device | str) -> "SparseFeatures":
        device = torch.device(device)
        if device == self.device or (device.type == self.device.type and device.index is None):
            return self
        key = str(device)
        if key not in self._moved:
            self._moved[key] = SparseFeatures(self.crow.to(device), self.col.to(device), self.val.to(device),
                                              self.num_cols)
        return self._moved[key]

    def to_dense(self) -> Tensor:
        return _csr_tensor(self.crow, self.col, self.val, tuple(self.shape)).to_dense()

    def rows(self, index: Tensor, gram: Tensor | None = None) -> "SparseRows":
        """The batch ``x[index]`` (-1: a zero row) as :class:`SparseRows` (``gram``: its per-example Grams)."""
        return SparseRows(self, index, gram)

    def gram(self, index: Tensor, max_entries: int = 1 << 22) -> Tensor:
        """Per-example Gram matrices of the rows ``index [B, T]`` (-1 = a zero row): ``[B, T, T]`` with entry
        ``x[index[b, t]] . x[index[b, t']]``. Computed in chunks of examples of about ``max_entries`` non-zeros."""
        index = index.to(self.device).long()
        b = int(index.size(0))
        t = int(index[0].numel()) if b else 1
        index = index.reshape(b, t)
        per_row = max(1.0, self.nnz / max(1, self.num_rows))
        chunk = max(1, int(max_entries / (per_row * t)))
        parts = []
        for s in range(0, b, chunk):
            flat = index[s:s + chunk].reshape(-1)
            _, col, val, counts = _gather_rows(self.crow, self.col, self.val, flat)
            parts.append(_block_gram(*_sort_by_column(col, val, counts), int(flat.numel()) // t, t))
        return torch.cat(parts) if parts else torch.zeros(0, t, t, dtype=self.dtype, device=self.device)


class SparseRows:
    """A batch of rows ``x[index]`` of :class:`SparseFeatures` that stands for the dense ``[*index.shape, F]``
    tensor (rows with index -1 are zero). An ``nn.Linear`` applied to it runs sparse (``F.linear`` is
    intercepted through ``__torch_function__``); every other torch function gets the dense tensor.

    ``gram`` (optional, ``[index.size(0), T, T]`` with ``T = index[0].numel()``): the per-example Gram matrices
    of the rows, when the caller precomputed them (fixed subgraphs); otherwise :meth:`example_gram` computes them.
    """

    #: an uncached example Gram is computed densely (densify + one bmm) when the batch has at most this many
    #: entries and more than 1/400 of them are non-zero
    DENSE_GRAM_MAX = 1 << 22

    def __init__(self, features: SparseFeatures, index: Tensor, gram: Tensor | None = None) -> None:
        if index.dim() < 1:
            raise ValueError("SparseRows needs an index with at least one dimension")
        self.features = features.to(index.device)
        self.index = index.long()
        self.gram = gram
        self._csr: tuple[Tensor, Tensor, Tensor, Tensor] | None = None
        self._by_col: tuple[Tensor, Tensor, Tensor] | None = None
        self._csr_t: Tensor | None = None

    # -- what code that handles dense inputs reads ------------------------------------------

    @property
    def shape(self) -> torch.Size:
        return torch.Size((*self.index.shape, self.features.num_cols))

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return self.index.dim() + 1

    @property
    def ndim(self) -> int:
        return self.dim()

    def numel(self) -> int:
        return int(self.index.numel()) * self.features.num_cols

    def __len__(self) -> int:
        return int(self.index.size(0))

    @property
    def dtype(self) -> torch.dtype:
        return self.features.dtype

    @property
    def device(self) -> torch.device:
        return self.index.device

    @property
    def requires_grad(self) -> bool:
        return False

    def detach(self) -> "SparseRows":
        return self

    def __repr__(self) -> str:
        return f"SparseRows(shape={tuple(self.shape)}, nnz={self.nnz}, device={self.device})"

    def to(self, *args, **kwargs) -> "SparseRows":
        """Only a device move is supported (``to(device)``, ``to(tensor)`` takes the tensor's device)."""
        dev = kwargs.get("device", args[0] if args else None)
        if isinstance(dev, Tensor):
            dev = dev.device
        if dev is None or isinstance(dev, torch.dtype):
            if kwargs.get("dtype", dev) not in (None, self.dtype):
                raise TypeError("SparseRows cannot change dtype")
            return self
        dev = torch.device(dev)
        if dev == self.device:
            return self
        gram = None if self.gram is None else self.gram.to(dev)
        return SparseRows(self.features.to(dev), self.index.to(dev), gram)

    def __getitem__(self, key) -> "SparseRows | Tensor":
        """Selection along the index dimensions (boolean masks, index tensors, slices); the per-example Grams
        follow a selection of examples (the first dimension) only."""
        parts = key if isinstance(key, tuple) else (key,)
        if any(p is Ellipsis or p is None for p in parts) or len(parts) > self.index.dim():
            return self.to_dense()[key]
        key = tuple(p.to(self.device) if isinstance(p, Tensor) else p for p in parts)
        index = self.index[key]
        if index.dim() == 0:
            index = index.view(1)
            return SparseRows(self.features, index).to_dense()[0]
        gram = None
        if self.gram is not None and len(key) == 1 and not isinstance(key[0], int):
            gram = self.gram[key[0]]
        return SparseRows(self.features, index, gram)

    def index_select(self, dim: int, index: Tensor) -> "SparseRows | Tensor":
        d = dim % self.dim()
        if d < self.index.dim():
            sel = [slice(None)] * d + [index.to(self.device)]
            return self[tuple(sel)]
        return self._columns(index.to(self.device))

    def _columns(self, cols: Tensor) -> Tensor:
        """The dense ``[*index.shape, len(cols)]`` block of columns ``cols``."""
        cols = cols.long().view(-1)
        m = int(cols.numel())
        if m and int(torch.unique(cols).numel()) != m:  # repeated columns: rare, do it densely
            return self.to_dense().index_select(-1, cols)
        pos = torch.full((self.features.num_cols,), -1, dtype=torch.long, device=self.device)
        pos[cols] = torch.arange(m, device=self.device)
        _, col, val, counts = self.parts()
        r = int(self.index.numel())
        row = torch.repeat_interleave(torch.arange(r, device=self.device), counts, output_size=int(col.numel()))
        p = pos.index_select(0, col)
        keep = p >= 0
        out = torch.zeros(r, m, dtype=self.dtype, device=self.device)
        out[row[keep], p[keep]] = val[keep]
        return out.view(*self.index.shape, m)

    # -- sparse representations -------------------------------------------------------------

    def parts(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(crow, col, val, row counts) of the flattened ``[R, F]`` rows (R = index.numel())."""
        if self._csr is None:
            f = self.features
            self._csr = _gather_rows(f.crow, f.col, f.val, self.index.reshape(-1))
        return self._csr

    @property
    def nnz(self) -> int:
        return int(self.parts()[1].numel())

    def csr(self) -> Tensor:
        crow, col, val, _ = self.parts()
        return _csr_tensor(crow, col, val, (int(self.index.numel()), self.features.num_cols))

    def by_column(self) -> tuple[Tensor, Tensor, Tensor]:
        """The non-zeros sorted by (column, row): (col, row, val); one sort serves the transpose and the Grams."""
        if self._by_col is None:
            _, col, val, counts = self.parts()
            self._by_col = _sort_by_column(col, val, counts)
        return self._by_col

    def csr_t(self) -> Tensor:
        """The transpose ``[F, R]`` as CSR (for ``A^T g``: weight gradients and clipped sums)."""
        if self._csr_t is None:
            col_s, row_s, val_s = self.by_column()
            ptr = _counts_to_ptr(torch.bincount(col_s, minlength=self.features.num_cols))
            self._csr_t = _csr_tensor(ptr, row_s, val_s, (self.features.num_cols, int(self.index.numel())))
        return self._csr_t

    def matmul(self, w_t: Tensor) -> Tensor:
        """``A @ w_t`` for a dense ``w_t [F, D]``: ``[R, D]``."""
        return self.csr() @ w_t.contiguous()

    def t_matmul(self, g: Tensor) -> Tensor:
        """``A^T @ g`` for a dense ``g [R, D]``: ``[F, D]``."""
        return self.csr_t() @ g.contiguous()

    def to_dense(self) -> Tensor:
        return self.csr().to_dense().view(self.shape)

    def example_gram(self, examples: int) -> Tensor:
        """``[B, T, T]``: the Gram matrix of each example's rows (``B = examples``, ``T = rows / B``)."""
        r = int(self.index.numel())
        t = r // examples if examples else 1
        if self.gram is not None and self.gram.dim() == 3 and tuple(self.gram.shape) == (examples, t, t):
            return self.gram
        _, col, val, counts = self.parts()
        if t == 1:  # one row per example: its squared norm
            row = torch.repeat_interleave(torch.arange(r, device=self.device), counts, output_size=int(col.numel()))
            return torch.zeros(r, dtype=val.dtype, device=self.device).index_add_(0, row, val * val).view(r, 1, 1)
        if r * self.features.num_cols <= self.DENSE_GRAM_MAX and col.numel() * 400 > r * self.features.num_cols:
            dense = self.to_dense().reshape(examples, t, -1)  # small and not very sparse: one batched matmul is faster
            return torch.bmm(dense, dense.transpose(1, 2))
        return _block_gram(*self.by_column(), examples, t)

    # -- torch functions --------------------------------------------------------------------

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.linear:
            return sparse_linear(*args, **kwargs)
        from torch.utils._pytree import tree_map

        def dense(a):
            return a.to_dense() if isinstance(a, SparseRows) else a

        return func(*tree_map(dense, args), **tree_map(dense, kwargs))


class _SparseLinear(torch.autograd.Function):
    """``x W^T + b`` for sparse rows x: forward ``A @ W^T``, weight gradient ``(A^T g)^T``; x needs no gradient."""

    @staticmethod
    def forward(ctx, weight: Tensor, bias: Tensor | None, rows: SparseRows) -> Tensor:  # type: ignore[override]
        ctx.rows = rows
        ctx.has_bias = bias is not None
        out = rows.matmul(weight.t())
        if bias is not None:
            out += bias
        return out.view(*rows.index.shape, weight.size(0))

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        g = grad.reshape(-1, grad.size(-1))
        gw = ctx.rows.t_matmul(g).t() if ctx.needs_input_grad[0] else None
        gb = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[1] else None
        return gw, gb, None


def sparse_linear(rows: SparseRows, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``F.linear`` on :class:`SparseRows`: a dense ``[*index.shape, out]`` result."""
    if rows.dtype != weight.dtype:
        raise TypeError(f"sparse rows ({rows.dtype}) and weight ({weight.dtype}) differ in dtype")
    return _SparseLinear.apply(weight, bias, rows)
