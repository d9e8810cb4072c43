"""What loading does to every graph: undirected, deduplicated, self-loop-free edges, float32 features and a
1-D long label vector; :attr:`GraphDataset.changes` reports how many edges each step removed or added."""

from __future__ import annotations

from typing import Any

from bench.datasets.base import DatasetError, GraphDataset


def normalize_graph(edge_index: Any, num_nodes: int) -> tuple[Any, dict[str, int]]:
    """Undirected, deduplicated, self-loop-free edges, and a report of what changed."""
    from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise DatasetError(f"edge_index must have shape [2, E] (got {list(edge_index.shape)})")
    edge_index = edge_index.long()
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise DatasetError(f"edge_index refers to nodes outside [0, {num_nodes})")
    n0 = edge_index.size(1)
    ei, _ = remove_self_loops(edge_index)
    n1 = ei.size(1)
    ei = coalesce(ei, num_nodes=num_nodes)
    n2 = ei.size(1)
    ei = to_undirected(ei, num_nodes=num_nodes)
    n3 = ei.size(1)
    return ei, {"self_loops_removed": n0 - n1, "duplicate_edges_removed": n1 - n2, "reverse_edges_added": n3 - n2}


def finish(name: str, built: dict) -> GraphDataset:
    """A loader's output (``Spec.build``) as a checked, normalised :class:`GraphDataset`."""
    from torch_geometric.data import Data

    d = built["data"]
    n = int(d.num_nodes)
    if getattr(d, "x", None) is None or getattr(d, "y", None) is None:
        raise DatasetError(f"{name}: the loader returned no features or no labels")
    y = d.y.view(-1).long()
    if y.numel() != n or d.x.size(0) != n:
        raise DatasetError(f"{name}: x has {d.x.size(0)} rows and y {y.numel()} entries for {n} nodes")
    edge_index, changes = normalize_graph(d.edge_index, n)
    changes = {**built.get("pre_changes", {}), **changes}
    out = Data(x=d.x.float().contiguous(), y=y, edge_index=edge_index, num_nodes=n)
    if getattr(d, "node_year", None) is not None:
        out.node_year = d.node_year.view(-1).long()
    if n == 0:
        raise DatasetError(f"{name} has no node")
    num_classes = int(built["num_classes"])
    if num_classes < 2:
        raise DatasetError(f"{name} has fewer than two classes")
    return GraphDataset(name=name, data=out, num_classes=num_classes, source=built["source"], changes=changes,
                        planetoid_masks=built.get("planetoid_masks"), ogb_name=built.get("ogb_name"),
                        ogb_split=built.get("ogb_split"))
