"""Datasets a stock ``torch_geometric.datasets`` class reads as they are: Amazon (Computers, Photo), Coauthor
(CS, Physics), Reddit, Flickr. Their stock download is the class's own; a mirror serves the same file names
(:mod:`~bench.datasets.download`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.datasets.base import Fetch, Spec
from bench.datasets.download import download_only
from bench.datasets.registry import register_dataset

#: Flickr downloads from Google Drive by file id (the class has no ``url``)
GOOGLE_DRIVE = "https://drive.usercontent.google.com"


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

    def url() -> str:
        import torch_geometric.datasets as D

        return getattr(getattr(D, cls_name), "url", GOOGLE_DRIVE)

    def run(work: Path, opts: dict, base: str | None) -> None:
        import torch_geometric.datasets as D

        cls = getattr(D, cls_name)
        download_only(cls, (str(work / folder),) if folder else (str(work), name), mirror(cls, base))

    return Spec(key, description, lambda o: list(raw_files), build, fetch=Fetch(url, run))


def mirror(cls: type, base: str | None) -> dict[str, Any] | None:
    """The class attributes that make ``cls`` download from the mirror ``base``: its ``url`` (a folder, as for
    Amazon and Coauthor, or a file, as for Reddit), or, for Flickr (Google Drive ids), a download by file name."""
    if base is None:
        return None
    stock = getattr(cls, "url", None)
    if stock is None:
        def download(self) -> None:
            from torch_geometric.data import download_url

            for f in self.raw_file_names:
                download_url(f"{base}/{f}", self.raw_dir)

        return {"download": download}
    return {"url": f"{base}/"} if stock.endswith("/") else {"url": f"{base}/{stock.rsplit('/', 1)[1]}"}


register_dataset(spec("computers", "Amazon Computers co-purchase graph",
                      ["Computers/raw/amazon_electronics_computers.npz"], "Amazon", "Computers"), order=20)
register_dataset(spec("photo", "Amazon Photo co-purchase graph", ["Photo/raw/amazon_electronics_photo.npz"],
                      "Amazon", "Photo"), order=21)
register_dataset(spec("cs", "Coauthor CS graph", ["CS/raw/ms_academic_cs.npz"], "Coauthor", "CS"), order=22)
register_dataset(spec("physics", "Coauthor Physics graph", ["Physics/raw/ms_academic_phy.npz"], "Coauthor",
                      "Physics"), order=23)
register_dataset(spec("reddit", "Reddit posts graph (GraphSAGE)",
                      ["Reddit/raw/reddit_data.npz", "Reddit/raw/reddit_graph.npz"], "Reddit", folder="Reddit"),
                 order=24)
register_dataset(spec("flickr", "Flickr images graph (GraphSAINT)",
                      [f"Flickr/raw/{f}" for f in ("adj_full.npz", "feats.npy", "class_map.json", "role.json")],
                      "Flickr", folder="Flickr"), order=25)
