"""Tiny raw files in the exact layouts the real loaders read (PubMed, Reddit, Flickr, OGB, Facebook100).

The real files are not available offline; these exercise the same code paths end to end.
"""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp


def _ring_plus_random(n: int, rng: np.random.Generator, extra: int) -> tuple[np.ndarray, np.ndarray]:
    src = np.concatenate([np.arange(n), rng.integers(n, size=extra)])
    dst = np.concatenate([(np.arange(n) + 1) % n, rng.integers(n, size=extra)])
    return src, dst


def write_planetoid(root: Path, name: str = "PubMed", n_train: int = 30, n_other: int = 510, n_test: int = 60,
                    features: int = 5, classes: int = 3, seed: int = 0) -> dict:
    """ind.<name>.* pickles: x/allx/tx sparse, y/ally/ty one-hot, graph dict, test.index lines.

    PyG's reader takes the 500 nodes after the labelled ones as validation, so n_other >= 500.
    """
    rng = np.random.default_rng(seed)
    n_allx = n_train + n_other
    n = n_allx + n_test
    labels = rng.integers(classes, size=n)
    feats = (rng.random((n, features)) < 0.4).astype(np.float32)
    onehot = np.eye(classes, dtype=np.int32)[labels]
    test_index = np.arange(n_allx, n)
    rng.shuffle(test_index)  # the file lists test nodes out of order, as the real one does
    raw = root / name / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    # row i of tx/ty belongs to node test_index[i] (the order of the test.index file)
    items = {"x": sp.csr_matrix(feats[:n_train]), "allx": sp.csr_matrix(feats[:n_allx]),
             "tx": sp.csr_matrix(feats[test_index]), "y": onehot[:n_train], "ally": onehot[:n_allx],
             "ty": onehot[test_index]}
    src, dst = _ring_plus_random(n, rng, n)
    graph: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in zip(src.tolist(), dst.tolist()):
        graph[a].append(b)
    items["graph"] = graph
    for key, obj in items.items():
        with open(raw / f"ind.{name.lower()}.{key}", "wb") as fh:
            pickle.dump(obj, fh)
    (raw / f"ind.{name.lower()}.test.index").write_text("\n".join(map(str, test_index.tolist())) + "\n")
    return {"nodes": n, "train": n_train, "test": n_test, "classes": classes, "features": features,
            "labels": labels, "x": feats}


def write_reddit(root: Path, n: int = 40000, classes: int = 3, features: int = 4, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    raw = root / "Reddit" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    np.savez(raw / "reddit_data.npz", feature=rng.normal(size=(n, features)).astype(np.float32),
             label=rng.integers(classes, size=n), node_types=rng.integers(1, 4, size=n))
    src, dst = _ring_plus_random(n, rng, n)
    sp.save_npz(raw / "reddit_graph.npz", sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    return {"nodes": n, "classes": classes}


def write_flickr(root: Path, n: int = 50, classes: int = 3, features: int = 4, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    raw = root / "Flickr" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    src, dst = _ring_plus_random(n, rng, n)
    adj = sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    np.savez(raw / "adj_full.npz", data=adj.data, indices=adj.indices, indptr=adj.indptr, shape=adj.shape)
    np.save(raw / "feats.npy", rng.normal(size=(n, features)).astype(np.float32))
    labels = rng.integers(classes, size=n)
    labels[:classes] = np.arange(classes)
    (raw / "class_map.json").write_text(json.dumps({str(i): int(c) for i, c in enumerate(labels)}))
    perm = rng.permutation(n).tolist()
    (raw / "role.json").write_text(json.dumps({"tr": perm[:30], "va": perm[30:40], "te": perm[40:]}))
    return {"nodes": n, "classes": classes}


def _csv_gz(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as fh:
        for r in rows:
            fh.write(",".join(str(v) for v in (r if isinstance(r, (list, tuple, np.ndarray)) else [r])) + "\n")


def _ogb_raw(base: Path, n: int, features: int, classes: int, rng: np.random.Generator) -> int:
    """OGB's raw/*.csv.gz of a node-property dataset (directed edges, no self-loop); the number of edges."""
    src, dst = _ring_plus_random(n, rng, n // 2)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    _csv_gz(base / "raw" / "edge.csv.gz", np.stack([src, dst], 1))
    _csv_gz(base / "raw" / "node-feat.csv.gz", np.round(rng.normal(size=(n, features)), 4))
    _csv_gz(base / "raw" / "node-label.csv.gz", rng.integers(classes, size=n))
    _csv_gz(base / "raw" / "num-node-list.csv.gz", [n])
    _csv_gz(base / "raw" / "num-edge-list.csv.gz", [src.size])
    return int(src.size)


def write_ogbn_products(root: Path, n: int = 60, features: int = 6, classes: int = 47, seed: int = 0) -> dict:
    """ogbn-products in OGB's offline layout: RELEASE_v1.txt, raw/*.csv.gz, split/sales_ranking/*.csv.gz."""
    rng = np.random.default_rng(seed)
    base = root / "ogbn_products"
    _ogb_raw(base, n, features, classes, rng)
    perm = rng.permutation(n)
    parts = {"train": np.sort(perm[: n // 2]), "valid": np.sort(perm[n // 2: 3 * n // 4]),
             "test": np.sort(perm[3 * n // 4:])}
    for k, v in parts.items():
        _csv_gz(base / "split" / "sales_ranking" / f"{k}.csv.gz", v)
    (base / "RELEASE_v1.txt").write_text("ogbn-products fake for tests\n")
    return {"nodes": n, "classes": classes, "parts": parts}


def write_ogbn_arxiv(root: Path, n: int = 60, features: int = 6, classes: int = 40, seed: int = 0,
                     release: bool = True) -> dict:
    """The offline OGB layout: RELEASE_v1.txt, raw/*.csv.gz and split/time/*.csv.gz (directed edges)."""
    rng = np.random.default_rng(seed)
    base = root / "ogbn_arxiv"
    edges = _ogb_raw(base, n, features, classes, rng)
    years = rng.choice([2015, 2016, 2017, 2018, 2019, 2020], size=n)
    _csv_gz(base / "raw" / "node_year.csv.gz", years)
    idx = np.arange(n)
    parts = {"train": idx[years <= 2017], "valid": idx[years == 2018], "test": idx[years >= 2019]}
    for k, v in parts.items():
        _csv_gz(base / "split" / "time" / f"{k}.csv.gz", v)
    if release:
        (base / "RELEASE_v1.txt").write_text("ogbn-arxiv fake for tests\n")
    return {"nodes": n, "classes": classes, "years": years, "parts": parts, "directed_edges": edges}


def write_facebook(root: Path, school: str = "Reed98", layout: str = "gap") -> dict:
    """A 10-node Facebook100 .mat with known answers for GAP's year rule (min_class_size=2).

    Nodes 0-4: year 2008 (5 nodes), 5-7: year 2009 (3), 8: year 2010 (alone: dropped as a small class),
    9: year 0 (unlabelled: dropped). Node 7's only neighbour is node 9, so it becomes isolated: dropped.
    """
    info = np.array([
        # status gender major minor housing year highschool
        [1, 1, 10, 0, 5, 2008, 7],
        [1, 2, 10, 3, 5, 2008, 7],
        [2, 1, 11, 0, 0, 2008, 8],
        [1, 0, 12, 3, 6, 2008, 9],
        [1, 2, 10, 0, 6, 2008, 9],
        [2, 1, 11, 4, 5, 2009, 7],
        [1, 2, 12, 0, 5, 2009, 8],
        [1, 1, 10, 0, 6, 2009, 7],
        [1, 1, 10, 0, 6, 2010, 7],
        [1, 2, 13, 0, 6, 0, 7],
    ], dtype=np.uint16)
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (5, 6), (6, 0), (5, 1), (7, 9), (8, 0), (9, 1)]
    a = np.zeros((10, 10))
    for u, v in edges:
        a[u, v] = a[v, u] = 1
    # GAP's layout facebook100/<School>/raw/<School>.mat, or LINKX's LINKX/<school>/raw/data.mat
    path = root / "facebook100" / school / "raw" if layout == "gap" else root / "LINKX" / school.lower() / "raw"
    path.mkdir(parents=True, exist_ok=True)
    name = f"{school}.mat" if layout == "gap" else "data.mat"
    scipy.io.savemat(path / name, {"A": sp.csc_matrix(a), "local_info": info})
    return {"kept_original": [0, 1, 2, 3, 4, 5, 6], "classes": 2}
