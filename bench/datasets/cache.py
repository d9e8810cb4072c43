"""The cache: work folders keyed by the raw files, and the remembered hashes of those files.

``<cache>`` is ``$BENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/dp-gnn-bench``, else ``~/.cache/dp-gnn-bench``. It
holds the user data cache ``datasets/`` (a folder of the search path, where downloads land:
:mod:`~bench.datasets.sources`), ``downloads/`` (downloads in progress), ``work/`` and ``hashes/``. The folder
a dataset's raw files are found in may be read-only: the files are symlinked into a *work folder* where PyG/OGB
write their ``processed/`` files. A work folder is keyed by the dataset and a fingerprint of its raw files (each
one's size and SHA-256), so a raw file that is replaced or truncated after a first load gets a fresh work folder
and is processed again, never served from a stale ``processed/`` file. Hashes are remembered per (path, size,
mtime, ctime, inode), so an unchanged file is hashed once (a file changed in the last two seconds is hashed every
time: a change within the file system's clock granularity could keep the same times).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from pathlib import Path
from typing import Iterator

_CHUNK = 1 << 20
#: a file changed less than this long ago is hashed again next time (file times are coarser than nanoseconds)
_RACY_NS = 2_000_000_000


def cache_dir() -> Path:
    env = os.environ.get("BENCH_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "dp-gnn-bench"


def fingerprint(root: Path, files: list[str]) -> str:
    """A hash of the raw files as they are now: each one's relative path, size and SHA-256 ("missing" if absent)."""
    parts = []
    for rel in files:
        path = root / rel
        try:
            st = path.stat()
        except OSError:
            parts.append(f"{rel}\tmissing")
            continue
        parts.append(f"{rel}\t{st.st_size}\t{file_hash(path, st)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def file_hash(path: Path, st: os.stat_result | None = None) -> str:
    """SHA-256 of a file's content, remembered under the cache for its (path, size, mtime, ctime, inode)."""
    st = st or path.stat()
    key = f"{path.resolve()}\t{st.st_size}\t{st.st_mtime_ns}\t{st.st_ctime_ns}\t{st.st_ino}"
    memo = cache_dir() / "hashes" / hashlib.sha256(key.encode()).hexdigest()[:32]
    with contextlib.suppress(OSError):
        return memo.read_text().strip()
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < _RACY_NS:
        return digest  # changed just now: a change within the clock's granularity would keep these times
    with contextlib.suppress(OSError):  # a read-only cache only costs a rehash next time
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(digest)
        os.replace(tmp, memo)
    return digest


def work_dir(key: str, fp: str) -> Path:
    """The work folder of dataset ``key`` with raw files of fingerprint ``fp``."""
    return cache_dir() / "work" / f"{key}-{fp}"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created), across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def stage(files: list[str], root: Path, work: Path) -> list[str]:
    """Symlink each raw file from its folder ``root`` into the work folder; return the missing ones."""
    missing = []
    for rel in files:
        src, dst = root / rel, work / rel
        if not src.is_file():
            missing.append(rel)
            continue
        if dst.is_symlink() and Path(os.readlink(dst)) == src:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_symlink() or dst.exists():
            dst.unlink()
        dst.symlink_to(src)
    return missing
