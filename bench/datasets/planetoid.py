"""Cora, CiteSeer, PubMed through ``torch_geometric.datasets.Planetoid`` (with the public split's masks).

The stock download is Planetoid's own (``Planetoid.url``, kimiyoung/planetoid); a mirror serves the same
``ind.<name>.*`` files (:mod:`~bench.datasets.download`)."""

from __future__ import annotations

from pathlib import Path

from bench.datasets.base import Fetch, Spec
from bench.datasets.download import download_only
from bench.datasets.registry import register_dataset

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

    return Spec(key, description, files, build, fetch=fetch(name), default_split="public")


def fetch(name: str) -> Fetch:
    def url() -> str:
        from torch_geometric.datasets import Planetoid

        return Planetoid.url

    def run(folder: Path, opts: dict, base: str | None) -> None:
        from torch_geometric.datasets import Planetoid

        download_only(Planetoid, (str(folder), name), {"url": base} if base else None)

    return Fetch(url, run)


register_dataset(spec("cora", "Cora", "Cora citation graph (Planetoid)"), order=10)
register_dataset(spec("citeseer", "CiteSeer", "CiteSeer citation graph (Planetoid)"), order=11)
register_dataset(spec("pubmed", "PubMed", "PubMed citation graph (Planetoid)"), order=12)
