"""Where datasets come from: --data-root, BENCH_DATA_ROOT, the user cache, the bundled Cora, then the stock
download. Downloads are tested for real, through the loaders' own download code, against an HTTP server on
127.0.0.1 (no mocks, no outside network)."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import socket
import threading
import time
import zipfile
from pathlib import Path

import pytest
import torch

from bench.cli import main
from bench.datasets import BUNDLED, DatasetError, clear_cache, dataset_catalog, load_dataset, user_data_dir
from bench.datasets.planetoid import PARTS
from tests import fakes

#: sha256 of bundled/SHA256SUMS, whose lines match the published checksums of kimiyoung/planetoid's Cora files
SUMS_DIGEST = "3418e7bee1e17f3fb10c6bcc284976b0c24cae8e94e2f33ff6108f072c72938b"


@pytest.fixture
def fresh(tmp_path, monkeypatch) -> Path:
    """A fresh machine: an empty user cache, no BENCH_DATA_ROOT, offline unless a test says otherwise."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("BENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("BENCH_DATA_ROOT", raising=False)
    monkeypatch.delenv("BENCH_DOWNLOAD_URL", raising=False)
    monkeypatch.setenv("BENCH_OFFLINE", "1")
    clear_cache()
    yield cache
    clear_cache()


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client closing early (fsspec probes a URL, then fetches it) is not a failure


@contextlib.contextmanager
def serving(folder: Path):
    """An HTTP server on 127.0.0.1 (a free port) serving ``folder``; yields its base URL and the paths asked."""
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, fmt, *args) -> None:
            asked.append(self.path)

    server = _QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def _tree(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_mtime_ns for p in path.rglob("*")}


def test_bundled_cora_matches_its_checksums():
    text = (BUNDLED / "SHA256SUMS").read_text()
    assert hashlib.sha256(text.encode()).hexdigest() == SUMS_DIGEST
    sums = {rel: digest for digest, rel in (line.split() for line in text.splitlines())}
    assert sorted(sums) == sorted(f"Cora/raw/ind.cora.{p}" for p in PARTS)
    assert sorted(str(p.relative_to(BUNDLED)) for p in (BUNDLED / "Cora").rglob("*") if p.is_file()) == sorted(sums)
    for rel, digest in sums.items():
        assert hashlib.sha256((BUNDLED / rel).read_bytes()).hexdigest() == digest, rel
    readme = (BUNDLED / "README.md").read_text()
    assert "af6abf468a77" in readme and "Copyright (c) 2016 Zhilin Yang" in readme and "MIT" in readme


def test_cora_loads_from_the_bundled_copy_without_writing_there(fresh):
    before = _tree(BUNDLED)
    ds = load_dataset("cora")
    assert ds.stats() == {"name": "cora", "nodes": 2708, "edges": 5278, "features": 1433, "classes": 7}
    assert [int(m.sum()) for m in ds.planetoid_masks.values()] == [140, 500, 1000]
    assert _tree(BUNDLED) == before  # read-only data: PyG's processed/ went to the work folder
    (work,) = (fresh / "work").glob("cora-*")
    assert (work / "Cora" / "raw" / "ind.cora.x").resolve() == BUNDLED / "Cora" / "raw" / "ind.cora.x"
    assert (work / "Cora" / "processed").is_dir()
    row = next(r for r in dataset_catalog() if r["name"] == "cora")
    assert (row["available"], row["where"]) == ("yes", "bundled with the package")


def test_the_first_folder_with_the_files_wins(fresh, tmp_path, monkeypatch):
    fakes.write_planetoid(user_data_dir(), name="Cora")  # 600 nodes: not the bundled Cora's 2708
    assert load_dataset("cora").num_nodes == 600
    assert next(r for r in dataset_catalog() if r["name"] == "cora")["where"] == str(user_data_dir())
    fakes.write_planetoid(tmp_path / "env", name="Cora", n_test=70)
    monkeypatch.setenv("BENCH_DATA_ROOT", str(tmp_path / "env"))
    assert load_dataset("cora").num_nodes == 610
    fakes.write_planetoid(tmp_path / "arg", name="Cora", n_test=80)
    assert load_dataset("cora", tmp_path / "arg").num_nodes == 620
    # a folder you name is the only one searched: what it lacks is an error, never a silent fallback
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError) as e:
        load_dataset("cora", tmp_path / "empty")
    msg = str(e.value)
    assert f"{tmp_path / 'empty'} (--data-root) lacks Cora/raw/ind.cora.x" in msg and "\n" not in msg
    assert f"leave out --data-root to use the copy in {user_data_dir()}" in msg
    monkeypatch.setenv("BENCH_DATA_ROOT", str(tmp_path / "empty"))
    with pytest.raises(DatasetError, match=r"\(BENCH_DATA_ROOT\) lacks .* unset BENCH_DATA_ROOT"):
        load_dataset("cora")


def test_offline_with_the_files_nowhere_is_one_line_naming_every_folder(fresh, monkeypatch, capsys):
    with pytest.raises(DatasetError) as e:
        load_dataset("citeseer")
    msg = str(e.value)
    assert "\n" not in msg
    assert f"{user_data_dir()} (user cache) lacks CiteSeer/raw/ind.citeseer.x" in msg
    assert f"no bundled copy in {BUNDLED}" in msg and "BENCH_OFFLINE is set" in msg
    assert "BENCH_DATA_ROOT or --data-root" in msg
    assert not (fresh / "downloads").exists()  # no download was tried
    # --offline is the same switch; a download it failed to stop would hit a closed local port, not the network
    monkeypatch.setenv("BENCH_OFFLINE", "0")
    monkeypatch.setenv("BENCH_DOWNLOAD_URL", f"http://127.0.0.1:{_closed_port()}")
    assert main(["run", "-m", "gcn", "-d", "citeseer", "--offline", "--no-track"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: dataset citeseer not found") and "BENCH_OFFLINE is set" in err
    assert len(err.splitlines()) == 1


def test_the_stock_download_lands_in_the_user_cache_once(fresh, tmp_path, monkeypatch):
    want = fakes.write_planetoid(tmp_path / "mirror", name="CiteSeer")
    served = tmp_path / "mirror" / "CiteSeer" / "raw"  # Planetoid's server is flat: <base>/ind.citeseer.x
    monkeypatch.setenv("BENCH_OFFLINE", "0")
    with serving(served) as (url, asked):
        monkeypatch.setenv("BENCH_DOWNLOAD_URL", url)
        ds = load_dataset("citeseer")
    assert ds.num_nodes == want["nodes"] and torch.equal(ds.data.y, torch.from_numpy(want["labels"]).long())
    assert {f"/{p.name}" for p in served.iterdir()} <= set(asked)
    got = user_data_dir() / "CiteSeer" / "raw"
    assert sorted(p.name for p in got.iterdir()) == sorted(p.name for p in served.iterdir())
    assert all((got / p.name).read_bytes() == p.read_bytes() for p in served.iterdir())
    assert not list((fresh / "downloads").glob("citeseer-*"))  # the temporary folder is gone
    # the server is down now: a second load must find the files in the user cache and download nothing
    clear_cache()
    again = load_dataset("citeseer")
    assert torch.equal(again.data.x, ds.data.x)
    assert next(r for r in dataset_catalog() if r["name"] == "citeseer")["where"] == str(user_data_dir())
    # --download with a data root that lacks the files: fetched into (here: found in) the user cache
    (tmp_path / "empty").mkdir()
    assert load_dataset("citeseer", tmp_path / "empty", download=True).num_nodes == want["nodes"]


def test_a_failed_download_is_fast_one_line_and_leaves_nothing(fresh, tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_OFFLINE", "0")
    port = _closed_port()
    monkeypatch.setenv("BENCH_DOWNLOAD_URL", f"http://127.0.0.1:{port}")
    start = time.monotonic()
    with pytest.raises(DatasetError) as e:
        load_dataset("citeseer")
    assert time.monotonic() - start < 5
    msg = str(e.value)
    assert f"the download from http://127.0.0.1:{port} failed: cannot reach 127.0.0.1:{port}" in msg
    assert str(user_data_dir()) in msg and str(BUNDLED) in msg and "\n" not in msg
    # a mirror that lacks one file: nothing half-downloaded lands in the user cache
    fakes.write_planetoid(tmp_path / "mirror", name="CiteSeer")
    served = tmp_path / "mirror" / "CiteSeer" / "raw"
    (served / "ind.citeseer.graph").unlink()
    with serving(served) as (url, _):
        monkeypatch.setenv("BENCH_DOWNLOAD_URL", url)
        with pytest.raises(DatasetError, match=f"the download from {url} failed: .*ind.citeseer.graph"):
            load_dataset("citeseer")
    assert not (user_data_dir() / "CiteSeer").exists()
    assert not list((fresh / "downloads").glob("citeseer-*"))


def _zip_ogb(root: Path, dest: Path) -> None:
    """OGB's arxiv.zip: the dataset's folder named ``arxiv``."""
    with zipfile.ZipFile(dest, "w") as z:
        for p in sorted((root / "ogbn_arxiv").rglob("*")):
            z.write(p, "arxiv/" + str(p.relative_to(root / "ogbn_arxiv")))


@pytest.mark.parametrize("name", ["flickr", "ogbn-arxiv"])
def test_mirrors_serve_the_urllib_loaders_too(fresh, tmp_path, monkeypatch, name):
    """Flickr (Google Drive ids in PyG) and OGB (a zip) download through urllib, not fsspec."""
    src, served = tmp_path / "src", tmp_path / "served"
    served.mkdir()
    if name == "flickr":
        want = fakes.write_flickr(src)
        for p in (src / "Flickr" / "raw").iterdir():
            p.rename(served / p.name)
    else:
        want = fakes.write_ogbn_arxiv(src)
        _zip_ogb(src, served / "arxiv.zip")
    monkeypatch.setenv("BENCH_OFFLINE", "0")
    with serving(served) as (url, asked):
        monkeypatch.setenv("BENCH_DOWNLOAD_URL", url)
        ds = load_dataset(name)
    assert ds.num_nodes == want["nodes"] and asked
    assert next(r for r in dataset_catalog() if r["name"] == name)["where"] == str(user_data_dir())
