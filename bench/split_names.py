"""The split names and the rule of which dataset each applies to: a leaf module (no torch), so a request is
checked before the heavy imports. The splits themselves: :mod:`bench.splits`."""

from __future__ import annotations

from methods.errors import BenchError


class SplitError(BenchError):
    """A split that is unknown, not defined for a dataset, or leaves a required part empty."""


SPLITS: dict[str, str] = {
    "public": "Planetoid public split (cora, citeseer, pubmed); transductive",
    "random-75-10-15": "random 75/10/15 node split from the seed (GAP/ProGAP); transductive",
    "ogb": "official OGB split (ogbn-*); transductive",
    "disjoint": "inductive: OGB or random 75/10/15 split with all inter-split edges removed (DP-GNN)",
    "private-public": "PrivGNN: disjoint private labelled graph and public graph (public-train/test)",
}


def check_split(split: str, dataset: str) -> None:
    """Fail early (before loading anything) for a split that cannot apply to ``dataset``."""
    base = dataset.split(":")[0].lower()
    if split not in SPLITS:
        raise SplitError(f"unknown split {split!r}; available: {', '.join(SPLITS)}")
    if split == "public" and base not in ("cora", "citeseer", "pubmed"):
        raise SplitError(f"split 'public' exists only for cora, citeseer and pubmed (not {base})")
    if split == "ogb" and not base.startswith("ogbn-"):
        raise SplitError(f"split 'ogb' exists only for ogbn-* datasets (not {base})")
