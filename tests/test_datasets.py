import stat
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.datasets import (DatasetError, clear_cache, expected_files, load_dataset, make_csbm, normalize_graph,
                            parse_dataset_name)
from tests import fakes


def edge_set(ei):
    return set(map(tuple, ei.t().tolist()))


def test_normalize_reports_each_change():
    # a self-loop, a duplicate (0,1), a one-directional edge (1,2), an already symmetric pair (3,4)
    ei = torch.tensor([[0, 0, 0, 1, 3, 4], [0, 1, 1, 2, 4, 3]])
    out, changes = normalize_graph(ei, 5)
    assert changes == {"self_loops_removed": 1, "duplicate_edges_removed": 1, "reverse_edges_added": 2}
    assert edge_set(out) == {(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3)}


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), pairs=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=40))
def test_normalize_is_undirected_simple_and_keeps_every_pair(n, pairs):
    pairs = [(a % n, b % n) for a, b in pairs]
    ei = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    out, ch = normalize_graph(ei, n)
    s = edge_set(out)
    assert len(s) == out.size(1)  # no duplicates
    assert all(a != b for a, b in s)  # no self-loops
    assert all((b, a) in s for a, b in s)  # symmetric
    want = {(a, b) for a, b in pairs if a != b} | {(b, a) for a, b in pairs if a != b}
    assert s == want
    assert out.size(1) == ei.size(1) - ch["self_loops_removed"] - ch["duplicate_edges_removed"] + ch["reverse_edges_added"]


def test_normalize_rejects_malformed_edges():
    with pytest.raises(DatasetError, match="outside"):
        normalize_graph(torch.tensor([[0, 5], [1, 0]]), 3)
    with pytest.raises(DatasetError, match="shape"):
        normalize_graph(torch.tensor([0, 1, 2]), 3)


@pytest.mark.parametrize("block", [1, 7 * 16, 10 ** 9])
def test_csbm_features_in_row_blocks_equal_one_draw(block, monkeypatch):
    """Row blocks of any size give the features of one (nodes x features) draw (a block of everything is it)."""
    from bench.datasets import csbm

    kw = dict(nodes=1000, classes=4, degree=6, features=16, signal=1.5, seed=3)
    monkeypatch.setattr(csbm, "X_BLOCK", 10 ** 9)
    whole = make_csbm(**kw)
    monkeypatch.setattr(csbm, "X_BLOCK", block)
    part = make_csbm(**kw)
    assert part.x.dtype == torch.float32
    assert torch.equal(whole.x, part.x) and torch.equal(whole.edge_index, part.edge_index)
    assert torch.equal(whole.y, part.y)


def test_csbm_is_seeded_balanced_and_homophilous():
    a = make_csbm(nodes=3000, classes=3, degree=12, homophily=0.8, features=16, seed=5)
    b = make_csbm(nodes=3000, classes=3, degree=12, homophily=0.8, features=16, seed=5)
    c = make_csbm(nodes=3000, classes=3, degree=12, homophily=0.8, features=16, seed=6)
    assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index) and torch.equal(a.y, b.y)
    assert not torch.equal(a.y, c.y)
    assert a.x.shape == (3000, 16) and torch.bincount(a.y).tolist() == [1000, 1000, 1000]
    ds = load_dataset("csbm:nodes=3000,classes=3,degree=12,homophily=0.8,features=16,seed=5")
    row, col = ds.data.edge_index
    h = float((ds.data.y[row] == ds.data.y[col]).float().mean())
    assert 0.77 < h < 0.83
    assert 10.5 < ds.data.edge_index.size(1) / 3000 <= 12
    # class means are informative: nearest-class-mean accuracy beats chance by far
    means = torch.stack([ds.data.x[ds.data.y == k].mean(0) for k in range(3)])
    pred = torch.cdist(ds.data.x, means).argmin(1)
    assert float((pred == ds.data.y).float().mean()) > 0.5


def test_dataset_names_and_options():
    name, spec, opts = parse_dataset_name("CSBM:nodes=300,classes=3")
    assert name == "csbm:nodes=300,classes=3" and opts["nodes"] == 300 and opts["classes"] == 3
    assert parse_dataset_name("csbm")[0] == "csbm"
    with pytest.raises(DatasetError, match="unknown dataset"):
        parse_dataset_name("coraa")
    with pytest.raises(DatasetError, match="valid options"):
        parse_dataset_name("csbm:size=3")
    with pytest.raises(DatasetError, match="integer"):
        parse_dataset_name("csbm:nodes=abc")
    with pytest.raises(DatasetError, match="school"):
        parse_dataset_name("facebook-nowhere")
    assert expected_files("facebook-uillinois20") == ["facebook100/UIllinois20/raw/UIllinois20.mat"]


def test_missing_files_name_the_files_and_the_folder(tmp_path):
    clear_cache()
    with pytest.raises(DatasetError) as e:
        load_dataset("cora", tmp_path)
    msg = str(e.value)
    assert "Cora/raw/ind.cora.x" in msg and str(tmp_path) in msg and "\n" not in msg
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset("cora", tmp_path / "nope")


def _tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


@pytest.mark.data
def test_cora_loads_from_a_read_only_root_without_writing_there(data_root, tmp_path):
    import shutil

    root = tmp_path / "ro"
    shutil.copytree(data_root / "Cora", root / "Cora")
    before = _tree(root)
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        clear_cache()
        ds = load_dataset("cora", root)
        assert ds.stats() == {"name": "cora", "nodes": 2708, "edges": 5278, "features": 1433, "classes": 7}
        assert ds.changes == {"self_loops_removed": 0, "duplicate_edges_removed": 0, "reverse_edges_added": 0}
        assert [int(m.sum()) for m in ds.planetoid_masks.values()] == [140, 500, 1000]
        assert _tree(root) == before
    finally:
        for p in [root, *root.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


@pytest.mark.data
@pytest.mark.parametrize("name,stats", [
    ("citeseer", (3327, 4552, 3703, 6)),
    ("computers", (13752, 245861, 767, 10)),
    ("photo", (7650, 119081, 745, 8)),
])
def test_real_datasets_match_published_sizes(data_root, name, stats):
    ds = load_dataset(name, data_root)
    s = ds.stats()
    assert (s["nodes"], s["edges"], s["features"], s["classes"]) == stats


@pytest.mark.data
def test_real_facebook_school_follows_gaps_rule(data_root):
    ds = load_dataset("facebook-wisconsin87", data_root)
    assert ds.num_classes == 5  # 2005..2009 have >= 1000 students; 2004 has 948
    assert ds.changes["unlabelled_nodes_removed"] == 4847
    assert ds.num_nodes == 23842 - 4847 - ds.changes["small_class_nodes_removed"] - ds.changes["isolated_nodes_removed"]
    assert torch.bincount(ds.data.y).min() >= 1000
    assert set(ds.data.x.unique().tolist()) <= {0.0, 1.0}
    deg = torch.bincount(ds.data.edge_index[0], minlength=ds.num_nodes)
    assert int(deg.min()) > 0
    small = load_dataset("facebook-wisconsin87:min_class_size=900", data_root)
    assert small.num_classes == 6


def test_facebook_rule_on_a_tiny_mat(tmp_path):
    want = fakes.write_facebook(tmp_path)
    ds = load_dataset("facebook-reed98:min_class_size=2", tmp_path)
    # 8 nodes survive the label filters; node 7 loses its only neighbour (node 9) and is dropped
    assert ds.num_nodes == len(want["kept_original"]) == 7
    assert ds.num_classes == want["classes"]
    assert ds.changes["unlabelled_nodes_removed"] == 1
    assert ds.changes["small_class_nodes_removed"] == 1
    assert ds.changes["isolated_nodes_removed"] == 1
    assert ds.data.y.tolist() == [0, 0, 0, 0, 0, 1, 1]
    # status {1,2}, gender {1,2}, major {10,11,12}, minor {3,4}, housing {5,6}: 0 is "missing"
    assert ds.data.x.size(1) == 2 + 2 + 3 + 2 + 2
    assert ds.data.x[3, 2:4].sum() == 0  # node 3 has gender 0: no gender bit
    assert ds.data.x.sum(1).tolist() == [4, 5, 3, 4, 4, 5, 4]
    with pytest.raises(DatasetError, match="fewer than 2 class years"):
        load_dataset("facebook-reed98:min_class_size=4", tmp_path)


def test_a_linkx_copy_of_a_school_serves_the_same_task(tmp_path):
    """LINKX ships Facebook100 schools as LINKX/<school>/raw/data.mat (PyG's layout): the class-year task reads
    it when GAP's facebook100/ layout is absent (e.g. facebook-cornell5 on the shared data)."""
    from bench.datasets.facebook import schools_found

    gap, linkx = tmp_path / "gap", tmp_path / "linkx"
    fakes.write_facebook(gap)
    fakes.write_facebook(linkx, layout="linkx")
    a = load_dataset("facebook-reed98:min_class_size=2", gap)
    b = load_dataset("facebook-reed98:min_class_size=2", linkx)
    assert torch.equal(a.data.x, b.data.x) and torch.equal(a.data.y, b.data.y)
    assert torch.equal(a.data.edge_index, b.data.edge_index)
    assert "LINKX/reed98/raw/data.mat" in b.source and schools_found(linkx) == ["Reed98"]


def test_pubmed_path_through_planetoid(tmp_path):
    want = fakes.write_planetoid(tmp_path)
    ds = load_dataset("pubmed", tmp_path)
    assert ds.num_nodes == want["nodes"] and ds.num_classes == want["classes"]
    assert torch.equal(ds.data.y, torch.from_numpy(want["labels"]).long())
    assert torch.equal(ds.data.x, torch.from_numpy(want["x"]))
    assert int(ds.planetoid_masks["train"].sum()) == 30 and int(ds.planetoid_masks["test"].sum()) == 60
    assert "Planetoid" in ds.source


def test_reddit_and_flickr_paths(tmp_path):
    fakes.write_flickr(tmp_path)
    ds = load_dataset("flickr", tmp_path)
    assert ds.num_nodes == 50 and ds.num_classes == 3 and "Flickr" in ds.source
    fakes.write_reddit(tmp_path, n=300)
    ds = load_dataset("reddit", tmp_path)
    assert ds.num_nodes == 300 and "Reddit" in ds.source


def test_ogb_arxiv_path_with_safe_globals(tmp_path):
    want = fakes.write_ogbn_arxiv(tmp_path)
    clear_cache()
    ds = load_dataset("ogbn-arxiv", tmp_path)
    assert ds.num_nodes == want["nodes"] and ds.num_classes == 40
    assert "PygNodePropPredDataset" in ds.source and ds.ogb_name == "ogbn-arxiv"
    assert ds.changes["reverse_edges_added"] > 0  # arXiv citations are directed in the raw files
    assert torch.equal(ds.data.node_year, torch.from_numpy(want["years"]).long())
    for k in ("train", "valid", "test"):
        assert ds.ogb_split[k].tolist() == want["parts"][k].tolist()
    # a second load reads OGB's processed file with torch.load (the weights-only path)
    clear_cache()
    again = load_dataset("ogbn-arxiv", tmp_path)
    assert torch.equal(again.data.edge_index, ds.data.edge_index)


def test_ogb_folder_without_release_file_fails_instead_of_prompting(tmp_path, monkeypatch):
    fakes.write_ogbn_arxiv(tmp_path, release=False)
    monkeypatch.setattr("builtins.input", lambda *a: pytest.fail("ogb prompted on stdin"))
    clear_cache()
    with pytest.raises(DatasetError, match="RELEASE_v1.txt"):
        load_dataset("ogbn-arxiv", tmp_path)


def test_corrupt_raw_file_is_one_clear_error(tmp_path):
    raw = tmp_path / "Photo" / "raw"
    raw.mkdir(parents=True)
    (raw / "amazon_electronics_photo.npz").write_bytes(b"not a zip")
    clear_cache()
    with pytest.raises(DatasetError, match="could not load photo"):
        load_dataset("photo", tmp_path)


def test_a_raw_file_changed_after_a_first_load_is_loaded_again(tmp_path):
    """The cache (in-process and the processed/ files under the work folder) is keyed by the raw files' sizes and
    hashes, not by the data root's path: a replaced file is processed again, a truncated one is an error."""
    from bench.datasets.cache import fingerprint

    first = fakes.write_planetoid(tmp_path, seed=0)
    files = expected_files("pubmed")
    fp0 = fingerprint(tmp_path, files)
    a = load_dataset("pubmed", tmp_path)
    assert torch.equal(a.data.y, torch.from_numpy(first["labels"]).long())
    assert load_dataset("pubmed", tmp_path) is a  # unchanged files: the cached dataset
    second = fakes.write_planetoid(tmp_path, seed=1)  # same names and layout, other content
    assert fingerprint(tmp_path, files) != fp0
    b = load_dataset("pubmed", tmp_path)  # no clear_cache(): the change alone invalidates
    assert torch.equal(b.data.y, torch.from_numpy(second["labels"]).long())
    assert not torch.equal(a.data.x, b.data.x)
    raw = tmp_path / "PubMed" / "raw" / "ind.pubmed.allx"
    raw.write_bytes(raw.read_bytes()[:100])  # truncated
    with pytest.raises(DatasetError, match="could not load pubmed"):
        load_dataset("pubmed", tmp_path)


def test_file_hashes_are_remembered_per_file_state(tmp_path, monkeypatch):
    import time

    from bench.datasets import cache

    f = tmp_path / "x.bin"
    f.write_bytes(b"a" * 1000)
    h = cache.file_hash(f)  # changed just now: not remembered (file times are coarse)
    memo = cache.cache_dir() / "hashes"
    before = set(memo.iterdir()) if memo.is_dir() else set()
    monkeypatch.setattr(cache, "_RACY_NS", 0)
    assert cache.file_hash(f) == h and len(set(memo.iterdir()) - before) == 1  # remembered
    time.sleep(0.05)
    f.write_bytes(b"b" * 1000)  # same size, new content: new ctime, so hashed again
    assert cache.file_hash(f) != h
