"""The last step of the search (:mod:`~bench.datasets.sources`): the stock PyG/OGB download, into the user data
cache.

The loader's own download code fetches the raw files (:func:`download_only` stops the loader before it processes
them) into a temporary folder under ``<cache>/downloads``; once every file is there, they are moved into the user
data cache ``<cache>/datasets`` (replacing any partial set there), so an interrupted download leaves nothing
half-written where the search looks. One process downloads a dataset at a time (a lock per dataset).

Settings:

* ``BENCH_DOWNLOAD_URL``: the base URL of a mirror, used instead of the stock URLs. It serves the stock files by
  their names: ``<base>/ind.cora.x`` (Planetoid), ``<base>/amazon_electronics_photo.npz`` (Amazon, Coauthor),
  ``<base>/reddit.zip``, ``<base>/adj_full.npz`` (Flickr), ``<base>/arxiv.zip`` (OGB). The tests point it at a
  server on 127.0.0.1.
* ``BENCH_DOWNLOAD_TIMEOUT``: seconds (default 10) to reach the server, and the longest wait for data on the
  urllib-based downloads (Amazon, Coauthor, Reddit, Flickr, OGB). With no network the download fails within that
  time, and the search ends in one clear error.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
import urllib.parse
from pathlib import Path
from typing import Any

from bench.datasets.base import DatasetError, Spec
from bench.datasets.cache import cache_dir, locked

DEFAULT_TIMEOUT_S = 10.0


class DownloadFailed(Exception):
    """Why a download did not bring a dataset's raw files (one line)."""


class _RawFilesReady(Exception):
    """Raised in place of a loader's processing: its raw files are downloaded."""


def base_url() -> str | None:
    """``$BENCH_DOWNLOAD_URL`` without its trailing slash (None: the stock URLs)."""
    return os.environ.get("BENCH_DOWNLOAD_URL", "").strip().rstrip("/") or None


def timeout_s() -> float:
    raw = os.environ.get("BENCH_DOWNLOAD_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise DatasetError(f"BENCH_DOWNLOAD_TIMEOUT={raw!r} is not a positive number of seconds")
    return value


def source_url(spec: Spec) -> str:
    """Where ``spec``'s download comes from: the mirror when one is set, else the loader's stock URL."""
    assert spec.fetch is not None
    return base_url() or spec.fetch.url()


def download_only(cls: type, args: tuple, attrs: dict[str, Any] | None = None) -> None:
    """Run the PyG dataset class ``cls(*args)`` until its raw files are downloaded, with the class attributes
    ``attrs`` replaced (a mirror's ``url``, say): a subclass stops it where it would process them."""

    def stop(self) -> None:
        raise _RawFilesReady

    raw_only = type(cls.__name__, (cls,), {**(attrs or {}), "process": stop})
    try:
        raw_only(*args)
    except _RawFilesReady:
        return
    raise DownloadFailed(f"{cls.__name__} finished without reaching its processing step")


def reach(url: str, timeout: float) -> None:
    """Fail fast when ``url``'s server cannot be reached: a TCP connection, name lookup included, within
    ``timeout`` seconds (a lookup that hangs is abandoned, not waited for)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    outcome: dict[str, Any] = {}

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome["ok"] = True
        except OSError as e:
            outcome["error"] = e

    worker = threading.Thread(target=connect, name="bench-reach", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome.get("ok"):
        why = outcome.get("error") or f"no answer within {timeout:g} s"
        raise DownloadFailed(f"cannot reach {host}:{port} ({_one_line(why)})")


def fetch_into(spec: Spec, opts: dict, dest: Path) -> None:
    """Download ``spec``'s raw files into ``dest`` (the user data cache), unless they are all there already."""
    assert spec.fetch is not None
    files = spec.files(opts)
    url, timeout = source_url(spec), timeout_s()
    downloads = cache_dir() / "downloads"
    with locked(downloads / f"{spec.key}.lock"):
        if all((dest / f).is_file() for f in files):
            return  # another process downloaded them while this one waited
        reach(url, timeout)
        tmp = Path(tempfile.mkdtemp(prefix=f"{spec.key}-", dir=downloads))
        try:
            print(f"downloading {spec.key} from {url} into {dest}", file=sys.stderr, flush=True)
            _run(spec, opts, tmp, timeout)
            absent = [f for f in files if not (tmp / f).is_file()]
            if absent:
                raise DownloadFailed(f"the download lacks {', '.join(absent[:3])}")
            for f in files:
                (dest / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.move(tmp / f, dest / f)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(spec: Spec, opts: dict, folder: Path, timeout: float) -> None:
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)  # urllib waits at most this long for data (PyG's fsspec path has its own)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # loaders' chatter must not pollute our stdout
            spec.fetch.run(folder, opts, base_url())
    except DownloadFailed:
        raise
    except Exception as e:  # network, HTTP and archive errors alike: one line for the final message
        raise DownloadFailed(f"{type(e).__name__}: {_one_line(e)}") from e
    finally:
        socket.setdefaulttimeout(old)


def _one_line(e: object) -> str:
    return " ".join(str(e).split())[:300]
