"""Named, seeded splits. A split is computed per run from its seed; nothing is cached across seeds.

``public``
    The Planetoid public split (Yang et al. 2016): 20 labels per class, 500 validation and 1000
    test nodes. Cora, CiteSeer and PubMed only. Transductive; the seed does not change it.
``random-75-10-15``
    Nodes permuted uniformly at random from the seed: 10% validation, 15% test (floored), the rest
    training (GAP and ProGAP's protocol). Transductive.
``ogb``
    The official OGB split. ogbn-* only. Transductive.
``disjoint``
    Inductive (DP-GNN's setting): the OGB split for ogbn-* datasets, otherwise random 75/10/15 from
    the seed; then every edge between two different splits is removed, so the model trains on the
    train-induced graph and val/test nodes are served on their own induced graphs.
``private-public``
    PrivGNN's setting: a private labelled graph and a disjoint public graph (no edge between them);
    the public graph's nodes are public-train (query candidates, labels hidden from private
    methods) and public-test. Sizes (PrivGNN, Olatunji et al. 2023, appendix F and Table 11):

    * computers: 2500 private, 3000 public-train, 3000 public-test nodes (random; the rest dropped);
    * reddit: 300 random nodes per class private (all of a smaller class), 15000 + 15000 public;
    * facebook-*: half the nodes private, half public, 20% of the public nodes public-test;
    * ogbn-arxiv: private = papers up to 2017, public-train = 2018, public-test = 2019 onwards (the
      paper's text; its stated sizes 48603/29799 are those of OGB's 2019+/2018 sets, swapped);
    * ogbn-products: 1,000,000 random nodes private, the rest public, half of it public-test;
    * any other dataset: half private, half public, half of the public nodes public-test.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from bench.datasets import GraphDataset
from bench.split_names import SPLITS, SplitError, check_split
from methods.base import Task
from methods.streams import RunStreams


def default_split(dataset: str) -> str:
    """The split a run of ``dataset`` uses when none is named: the registry's (``Spec.default_split``), read
    through the one name resolution, so ``Cora`` and ``cora`` get the same split (an unknown name is an error)."""
    from bench.datasets import resolve_dataset

    return resolve_dataset(dataset).default_split


def _mask(n: int, idx: Tensor) -> Tensor:
    m = torch.zeros(n, dtype=torch.bool)
    m[idx] = True
    return m


def _random_parts(n: int, gen: torch.Generator, val_frac: float = 0.10, test_frac: float = 0.15):
    perm = torch.randperm(n, generator=gen)
    n_val, n_test = int(n * val_frac), int(n * test_frac)
    return perm[n_val + n_test:], perm[:n_val], perm[n_val:n_val + n_test]


def _check_nonempty(name: str, dataset: str, **parts: Tensor) -> None:
    for part, mask in parts.items():
        if int(mask.sum()) == 0:
            raise SplitError(f"split {name} on {dataset} ({mask.numel()} nodes) leaves the {part} set empty")


def make_task(ds: GraphDataset, split: str, seed: int = 0) -> Task:
    """Apply the named split with ``seed`` to a loaded dataset."""
    check_split(split, ds.name)
    return split_task(ds, split, seed)


def split_task(ds: GraphDataset, split: str, seed: int = 0) -> Task:
    """:func:`make_task` for a split already checked against the dataset's name (a request's,
    :func:`bench.request.check_request`): the name is not read again."""
    if seed < 0:
        raise SplitError(f"seed must be >= 0 (got {seed})")
    gen = RunStreams(int(seed)).torch("split")
    n = ds.num_nodes
    d = ds.data
    common = dict(dataset=ds.name, split=split, num_classes=ds.num_classes, seed=int(seed), ogb_name=ds.ogb_name)
    if split == "public":
        if ds.planetoid_masks is None:
            raise SplitError(f"{ds.name} has no Planetoid public split")
        m = ds.planetoid_masks
        _check_nonempty(split, ds.name, train=m["train"], test=m["test"])
        return Task(setting="transductive", data=d, train_mask=m["train"], val_mask=m["val"], test_mask=m["test"],
                    **common)
    if split == "ogb":
        if ds.ogb_split is None:
            raise SplitError(f"{ds.name} has no OGB split")
        s = ds.ogb_split
        masks = [_mask(n, s[k]) for k in ("train", "valid", "test")]
        _check_nonempty(split, ds.name, train=masks[0], test=masks[2])
        return Task(setting="transductive", data=d, train_mask=masks[0], val_mask=masks[1], test_mask=masks[2],
                    **common)
    if split == "random-75-10-15":
        tr, va, te = (_mask(n, i) for i in _random_parts(n, gen))
        _check_nonempty(split, ds.name, train=tr, val=va, test=te)
        return Task(setting="transductive", data=d, train_mask=tr, val_mask=va, test_mask=te, **common)
    if split == "disjoint":
        return _disjoint(ds, gen, common)
    return _private_public(ds, gen, common)


def _disjoint(ds: GraphDataset, gen: torch.Generator, common: dict) -> Task:
    from torch_geometric.data import Data

    n = ds.num_nodes
    if ds.ogb_split is not None:
        parts = [ds.ogb_split[k] for k in ("train", "valid", "test")]
        base = "ogb"
    else:
        parts = list(_random_parts(n, gen))
        base = "random-75-10-15"
    part_of = torch.full((n,), -1, dtype=torch.long)
    for i, idx in enumerate(parts):
        part_of[idx] = i
    row, col = ds.data.edge_index
    keep = (part_of[row] == part_of[col]) & (part_of[row] >= 0)
    data = Data(x=ds.data.x, y=ds.data.y, edge_index=ds.data.edge_index[:, keep], num_nodes=n)
    tr, va, te = (_mask(n, i) for i in parts)
    _check_nonempty("disjoint", ds.name, train=tr, val=va, test=te)
    info = {"base_split": base, "inter_split_edges_removed": int((~keep).sum()) // 2}
    return Task(setting="inductive", data=data, train_mask=tr, val_mask=va, test_mask=te, info=info, **common)


def _private_public_parts(ds: GraphDataset, gen: torch.Generator) -> tuple[Tensor, Tensor, Tensor, str]:
    n = ds.num_nodes
    base = ds.name.split(":")[0]
    perm = torch.randperm(n, generator=gen)

    def fixed(p: int, q: int, t: int, rule: str):
        if p + q + t > n:
            raise SplitError(f"private-public on {ds.name} needs {p + q + t} nodes ({rule}); it has {n}")
        return perm[:p], perm[p:p + q], perm[p + q:p + q + t], rule

    def fractions(private_frac: float, test_frac: float, rule: str):
        p = int(round(n * private_frac))
        public = perm[p:]
        t = int(round(public.numel() * test_frac))
        return perm[:p], public[t:], public[:t], rule

    if base == "computers":
        return fixed(2500, 3000, 3000, "PrivGNN appendix F: 2500 private, 3000 public-train, 3000 public-test")
    if base == "reddit":
        y = ds.data.y
        private = []
        for c in range(ds.num_classes):
            members = perm[y[perm] == c]
            private.append(members[:300])
        private_idx = torch.cat(private)
        rest = perm[~_mask(n, private_idx)[perm]]
        if rest.numel() < 30000:
            raise SplitError(f"private-public on {ds.name} needs 30000 public nodes; {rest.numel()} remain")
        return (private_idx, rest[:15000], rest[15000:30000],
                "PrivGNN appendix F: 300 private nodes per class, 15000 public-train, 15000 public-test")
    if base == "ogbn-arxiv":
        year = getattr(ds.data, "node_year", None)
        if year is None:
            raise SplitError("ogbn-arxiv private-public needs node years (raw/node_year.csv.gz)")
        idx = torch.arange(n)
        return (idx[year <= 2017], idx[year == 2018], idx[year >= 2019],
                "PrivGNN appendix F: private <= 2017, public-train 2018, public-test >= 2019")
    if base == "ogbn-products":
        if n <= 1_000_000:
            raise SplitError(f"private-public on {ds.name} needs more than 1,000,000 nodes; it has {n}")
        public = perm[1_000_000:]
        t = public.numel() // 2
        return perm[:1_000_000], public[t:], public[:t], "PrivGNN: 1M private nodes, public half test"
    if base.startswith("facebook-"):
        return fractions(0.5, 0.2, "PrivGNN Table 11: half private, 20% of the public graph public-test")
    return fractions(0.5, 0.5, "default: half private, half public, half of the public graph public-test")


def _private_public(ds: GraphDataset, gen: torch.Generator, common: dict) -> Task:
    from torch_geometric.data import Data
    from torch_geometric.utils import subgraph

    n = ds.num_nodes
    private, query, test, rule = _private_public_parts(ds, gen)
    part_of = torch.full((n,), -1, dtype=torch.long)
    part_of[private], part_of[query], part_of[test] = 0, 1, 1
    node_ids = (part_of >= 0).nonzero().view(-1)
    edge_index, _ = subgraph(node_ids, ds.data.edge_index, relabel_nodes=True, num_nodes=n)
    local = part_of[node_ids]
    row, col = edge_index
    keep = local[row] == local[col]  # drop every private-public edge
    m = node_ids.numel()
    data = Data(x=ds.data.x[node_ids], y=ds.data.y[node_ids], edge_index=edge_index[:, keep], num_nodes=m)
    pos = torch.full((n,), -1, dtype=torch.long)
    pos[node_ids] = torch.arange(m)
    train_mask, query_mask, test_mask = _mask(m, pos[private]), _mask(m, pos[query]), _mask(m, pos[test])
    _check_nonempty("private-public", ds.name, private=train_mask, public_train=query_mask, public_test=test_mask)
    info = {"rule": rule, "private_public_edges_removed": int((~keep).sum()) // 2,
            "private_nodes": int(train_mask.sum()), "public_nodes": int((query_mask | test_mask).sum())}
    return Task(setting="private-public", data=data, train_mask=train_mask, val_mask=torch.zeros(m, dtype=torch.bool),
                test_mask=test_mask, query_mask=query_mask, public_mask=query_mask | test_mask, node_ids=node_ids,
                info=info, **common)


def split_catalog() -> list[dict[str, Any]]:
    return [{"name": k, "description": v} for k, v in SPLITS.items()]


__all__ = ["SPLITS", "SplitError", "check_split", "default_split", "make_task", "split_catalog", "split_task"]
