"""Cora, CiteSeer, PubMed through ``torch_geometric.datasets.Planetoid`` (with the public split's masks)."""

from __future__ import annotations

from pathlib import Path

from bench.datasets.base import Spec

PARTS = ["x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"]


def spec(key: str, name: str, description: str) -> Spec:
    def files(opts: dict) -> list[str]:
        return [f"{name}/raw/ind.{name.lower()}.{p}" for p in PARTS]

    def build(work: Path | None, opts: dict) -> dict:
        from torch_geometric.datasets import Planetoid

        d = Planetoid(str(work), name)[0]
        masks = {"train": d.train_mask.clone(), "val": d.val_mask.clone(), "test": d.test_mask.clone()}
        return {"data": d, "num_classes": int(d.y.max()) + 1, "planetoid_masks": masks,
                "source": f"torch_geometric.datasets.Planetoid(root, '{name}')"}

    return Spec(key, description, files, build)
