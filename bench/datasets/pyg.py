"""Datasets a stock ``torch_geometric.datasets`` class reads as they are: Amazon (Computers, Photo), Coauthor
(CS, Physics), Reddit, Flickr."""

from __future__ import annotations

from pathlib import Path

from bench.datasets.base import Spec


def spec(key: str, description: str, raw_files: list[str], cls_name: str, name: str = "",
         folder: str | None = None) -> Spec:
    """``cls_name(root, name)``, or ``cls_name(root/folder)`` for classes without a name argument."""

    def build(work: Path | None, opts: dict) -> dict:
        import torch_geometric.datasets as D

        cls = getattr(D, cls_name)
        ds = cls(str(work / folder)) if folder else cls(str(work), name)
        d = ds[0]
        call = f"{cls_name}(root)" if folder else f"{cls_name}(root, '{name}')"
        return {"data": d, "num_classes": int(d.y.max()) + 1, "source": f"torch_geometric.datasets.{call}"}

    return Spec(key, description, lambda o: list(raw_files), build)
