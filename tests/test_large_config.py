"""configs/large.yaml and the page's "Datasets not on this page": every absent dataset with a loader is planned by
the config, and every (dataset, split) the config plans loads through the real PyG/OGB class and splits, on tiny
files written in each loader's format; one cell per loader family runs end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.datasets import clear_cache, load_dataset, resolve_dataset
from bench.site import ABSENT_HEADING, LARGE_CONFIG, absent_md, load_papers
from bench.splits import SplitError, make_task
from bench.sweep import load_config
from tests import fakes

REPO = Path(__file__).resolve().parents[1]


def _tiny_root(root: Path) -> Path:
    fakes.write_planetoid(root)  # PubMed
    fakes.write_flickr(root)
    fakes.write_reddit(root)  # 40,000 nodes: PrivGNN's Reddit split keeps 30,000 public nodes
    fakes.write_ogbn_arxiv(root)
    fakes.write_ogbn_products(root)
    return root


def test_the_page_names_every_absent_dataset_and_the_config_plans_each_one_with_a_loader():
    papers = load_papers()
    named = {e["name"] for e in papers["absent"] if e.get("name")}
    for name in named:  # every name is one `bench` resolves (a facebook school by the Facebook100 list)
        assert resolve_dataset(name).name == name
    cfg = load_config(REPO / LARGE_CONFIG)
    assert {c.dataset for c in cfg.cells} == {n for n in named if not n.startswith("facebook-")}
    leaderboard = {c.dataset for c in load_config(REPO / "configs" / "leaderboard.yaml").cells}
    assert not named & leaderboard  # "absent" means absent from the page
    md = absent_md(papers)
    assert md.startswith(f"## {ABSENT_HEADING}") and f"bench sweep {LARGE_CONFIG}" in md
    assert all(f"| {e['dataset']} |" in md for e in papers["absent"])


def test_every_planned_dataset_and_split_loads_and_splits_on_tiny_files(tmp_path):
    root = _tiny_root(tmp_path)
    clear_cache()
    pairs = sorted({(c.dataset, c.split) for c in load_config(REPO / LARGE_CONFIG).cells})
    assert {d for d, _ in pairs} == {"pubmed", "flickr", "reddit", "ogbn-arxiv", "ogbn-products"}
    loaded = {}
    for dataset, split in pairs:
        ds = loaded.setdefault(dataset, load_dataset(dataset, root))
        if (dataset, split) == ("ogbn-products", "private-public"):
            with pytest.raises(SplitError, match="1,000,000"):  # PrivGNN's 1M private nodes: not in a tiny file
                make_task(ds, split, seed=0)
            continue
        task = make_task(ds, split, seed=0)
        assert int(task.train_mask.sum()) > 0, (dataset, split)
        assert int(task.test_mask.sum()) > 0, (dataset, split)
    assert "Planetoid" in loaded["pubmed"].source and "PygNodePropPredDataset" in loaded["ogbn-products"].source


@pytest.mark.parametrize("method,dataset,split,eps,short", [
    ("drw", "pubmed", "public", 8.0, {"max_steps": 3}),
    ("dp-mlp", "ogbn-products", "disjoint", 8.0, {"epochs": 2}),
    ("gap-edge", "reddit", "random-75-10-15", 1.0, {"epochs": 2})])
def test_a_planned_cell_runs_end_to_end_on_tiny_files(tmp_path, method, dataset, split, eps, short):
    from bench import api

    cells = [c for c in load_config(REPO / LARGE_CONFIG).cells
             if (c.method, c.dataset, c.split, c.epsilon) == (method, dataset, split, eps)]
    assert cells, "the config no longer plans this cell"
    clear_cache()
    [res] = api.run(method, dataset, split=split, epsilon=eps, data_root=_tiny_root(tmp_path), track=False,
                    overrides=short, bootstrap=0, threads=1)
    assert 0.0 <= res.metrics["test_acc"] <= 1.0 and 0 < res.epsilon <= eps * (1 + 1e-3)
