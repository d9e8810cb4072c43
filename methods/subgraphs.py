"""Subgraphs as DP-SGD examples: padded dense batches for :class:`methods.models.DenseGCN`.

A set of M subgraphs becomes ``nodes [M, P]`` (global node ids, -1 = padding, position 0 = the
subgraph's root, whose label is the example's target) and a normalised dense adjacency ``adj [M, P, P]``
built once from the structure alone; a batch is then two index operations. Only features are gathered per batch,
so the example of a subgraph depends on exactly the feature rows of its own nodes (what the sensitivity arguments of
DRW and DP-GNN need).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from methods.models import SparseFeatures, SparseRows

Normalization = Literal["gcn", "row", "none"]


def dense_adjacency(num_graphs: int, pad: int, graph: Tensor, src: Tensor, dst: Tensor, mask: Tensor,
                    normalization: Normalization = "gcn", self_loops: bool = True) -> Tensor:
    """[M, P, P] adjacency from local edges (``graph``, ``src`` -> ``dst`` positions).

    ``adj[g, i, j]`` weighs the message from position j into position i. ``gcn``: D^-1/2 (A + I) D^-1/2;
    ``row``: D^-1 (A + I) (mean aggregation); ``none``: A (+ I). Padding rows and columns stay zero.
    """
    a = torch.zeros(num_graphs, pad, pad)
    if graph.numel():
        a[graph, dst, src] = 1.0
    m = mask.float()
    if self_loops:
        a = a + torch.diag_embed(m)
    a = a * m[:, :, None] * m[:, None, :]
    if normalization == "none":
        return a
    deg = a.sum(-1)
    if normalization == "row":
        return a / deg.clamp(min=1)[:, :, None]
    inv = deg.clamp(min=1e-12).pow(-0.5) * (deg > 0)
    return inv[:, :, None] * a * inv[:, None, :]


@dataclass
class PaddedSubgraphs:
    nodes: Tensor  # [M, P] long, -1 = padding; position 0 is the root
    adj: Tensor  # [M, P, P]
    gram: Tensor | None = None  # [M, P, P] Gram matrices of each subgraph's feature rows (sparse features)

    @property
    def num_subgraphs(self) -> int:
        return int(self.nodes.size(0))

    @property
    def roots(self) -> Tensor:
        return self.nodes[:, 0]

    def batch(self, idx: Tensor, x: Tensor, device=None, sparse: SparseFeatures | None = None
              ) -> tuple[Tensor | SparseRows, Tensor]:
        """Features [B, P, F] (zero rows for padding) and adjacency [B, P, P] of subgraphs ``idx``. With
        ``sparse`` (a CSR copy of ``x``) the features are :class:`SparseRows` (with the cached Gram matrices)."""
        n = self.nodes[idx]
        ab = self.adj[idx].to(x.dtype)
        if sparse is not None:
            dev = device if device is not None else x.device
            gram = None if self.gram is None else self.gram[idx.to(self.gram.device)].to(dev)
            return SparseRows(sparse.to(dev), n.to(dev), gram), ab.to(dev)
        xb = x[n.clamp(min=0)] * (n >= 0).unsqueeze(-1).to(x.dtype)
        if device is not None:
            xb, ab = xb.to(device), ab.to(device)
        return xb, ab

    def with_grams(self, sparse: SparseFeatures) -> "PaddedSubgraphs":
        """Compute (once) the Gram matrices of every subgraph's rows of ``sparse`` for the DP-SGD norms."""
        self.gram = sparse.gram(self.nodes).cpu()
        return self


def from_disjoint(nodes: Tensor, ptr: Tensor, edge_index: Tensor, num_nodes: int, pad_to: int | None = None,
                  normalization: Normalization = "gcn") -> PaddedSubgraphs:
    """Induced subgraphs of node-disjoint subgraphs (subgraph i = ``nodes[ptr[i]:ptr[i+1]]``, root first)."""
    sizes = ptr[1:] - ptr[:-1]
    m = int(sizes.numel())
    pad = int(pad_to if pad_to is not None else (int(sizes.max()) if m else 1))
    if m and int(sizes.max()) > pad:
        raise ValueError(f"a subgraph has {int(sizes.max())} nodes, more than pad_to={pad}")
    sub_id = torch.repeat_interleave(torch.arange(m), sizes)
    pos = torch.arange(nodes.numel()) - ptr[:-1][sub_id]
    graph_of = torch.full((num_nodes,), -1, dtype=torch.long)
    local = torch.full((num_nodes,), -1, dtype=torch.long)
    graph_of[nodes] = sub_id
    local[nodes] = pos
    row, col = edge_index
    keep = (graph_of[row] >= 0) & (graph_of[row] == graph_of[col])
    node_mat = torch.full((m, pad), -1, dtype=torch.long)
    node_mat[sub_id, pos] = nodes
    adj = dense_adjacency(m, pad, graph_of[row[keep]], local[row[keep]], local[col[keep]], node_mat >= 0,
                          normalization)
    return PaddedSubgraphs(node_mat, adj)
