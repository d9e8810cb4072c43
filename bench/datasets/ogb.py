"""ogbn-arxiv and ogbn-products through OGB's ``PygNodePropPredDataset`` (with the official split).

The stock download is OGB's own (the dataset's zip from ``master.csv``); a mirror serves the same zip, e.g.
``<base>/arxiv.zip`` (:mod:`~bench.datasets.download`)."""

from __future__ import annotations

from pathlib import Path

from bench.datasets.base import DatasetError, Fetch, Spec
from bench.datasets.download import download_only
from bench.datasets.registry import register_dataset

LAYOUT = {
    "ogbn-arxiv": {"dir": "ogbn_arxiv", "split": "time", "extra": ["node_year.csv.gz"]},
    "ogbn-products": {"dir": "ogbn_products", "split": "sales_ranking", "extra": []},
}


def allow_ogb_pickles() -> None:
    """ogb 1.3.6 calls ``torch.load`` with torch's weights-only default (torch >= 2.6): allow PyG's classes."""
    import torch
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    torch.serialization.add_safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage])


def allow_big_downloads() -> None:
    """ogb asks on stdin before downloading > 1 GB; a download is the search's last resort, never a prompt."""
    try:
        import ogb.nodeproppred.dataset_pyg as m

        m.decide_download = lambda url: True
    except ImportError:  # pragma: no cover
        pass


def spec(name: str, description: str) -> Spec:
    m = LAYOUT[name]
    raw = ["edge.csv.gz", "node-feat.csv.gz", "node-label.csv.gz", "num-node-list.csv.gz",
           "num-edge-list.csv.gz"] + m["extra"]
    files = ["RELEASE_v1.txt"] + [f"raw/{f}" for f in raw] + [f"split/{m['split']}/{s}.csv.gz"
                                                              for s in ("train", "valid", "test")]

    def build(work: Path | None, opts: dict) -> dict:
        allow_ogb_pickles()
        from ogb.nodeproppred import PygNodePropPredDataset

        release = work / m["dir"] / "RELEASE_v1.txt"
        if (work / m["dir"]).is_dir() and not release.exists():
            # ogb would prompt on stdin here; fail clearly instead
            raise DatasetError(f"{release.parent} lacks RELEASE_v1.txt (ogb would ask to re-download)")
        ds = PygNodePropPredDataset(name, root=str(work))
        d = ds[0]
        d.y = d.y.view(-1)
        split = {k: v.clone() for k, v in ds.get_idx_split().items()}
        if hasattr(d, "node_year") and d.node_year is not None:
            d.node_year = d.node_year.view(-1)
        return {"data": d, "num_classes": int(ds.num_classes), "ogb_name": name, "ogb_split": split,
                "source": f"ogb.nodeproppred.PygNodePropPredDataset('{name}', root)"}

    return Spec(name, description, lambda o: [f"{m['dir']}/{f}" for f in files], build, fetch=fetch(name),
                default_split="ogb")


def fetch(name: str) -> Fetch:
    def url() -> str:
        import os

        import ogb.nodeproppred
        import pandas as pd

        master = os.path.join(os.path.dirname(ogb.nodeproppred.__file__), "master.csv")
        return str(pd.read_csv(master, index_col=0, keep_default_na=False)[name]["url"])

    def run(folder: Path, opts: dict, base: str | None) -> None:
        allow_ogb_pickles()
        allow_big_downloads()
        from ogb.nodeproppred import PygNodePropPredDataset

        attrs = None
        if base:
            def download(self) -> None:
                self.meta_info = self.meta_info.copy()
                self.meta_info["url"] = f"{base}/{self.meta_info['url'].rsplit('/', 1)[1]}"
                PygNodePropPredDataset.download(self)

            attrs = {"download": download}
        download_only(PygNodePropPredDataset, (name, str(folder)), attrs)

    return Fetch(url, run)


register_dataset(spec("ogbn-arxiv", "OGB arXiv citation graph (official time split)"), order=30)
register_dataset(spec("ogbn-products", "OGB Amazon products graph (official sales-rank split)"), order=31)
