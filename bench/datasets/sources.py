"""Where a dataset's raw files come from: the first folder of the search path that has all of them.

1. ``--data-root DIR`` (``data_root=``): when given, the only folder searched;
2. else ``$BENCH_DATA_ROOT``: when set, the only folder searched;
3. else the user data cache ``<cache>/datasets``, where ``<cache>`` is ``$BENCH_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/dp-gnn-bench``, else ``~/.cache/dp-gnn-bench``;
4. then the copies bundled with the package (``bench/datasets/bundled``: Cora's raw Planetoid files);
5. then the stock PyG/OGB download into the user data cache (:mod:`~bench.datasets.download`), unless
   ``$BENCH_OFFLINE`` is set (``--offline`` sets it).

A folder you name (1, 2) is never silently replaced by another: files missing there are an error, unless
``download=True`` (``--download``) asks for the stock download, which it then fetches into the user data cache
(once: later loads find it there), even with ``BENCH_OFFLINE`` set. When no step has the files,
:class:`~bench.datasets.base.DatasetError` says in one line which folders were tried, what each one lacked, and
how to provide the files. The folders are read-only to the loader (:func:`bench.datasets.load_dataset` symlinks
their files into a work folder under the cache); only the download writes, into the user data cache.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.datasets import facebook
from bench.datasets.base import DatasetError, Spec
from bench.datasets.cache import cache_dir
from bench.datasets.download import DownloadFailed, fetch_into, source_url
from bench.datasets.registry import SPECS, parse_dataset_name

#: the datasets that ship with the package, in the stock loaders' layout (read-only)
BUNDLED = Path(__file__).resolve().parent / "bundled"
#: how many missing files an error lists by name
_LISTED = 8


@dataclass(frozen=True)
class Place:
    """A folder of the search path; ``label`` says why it is searched."""

    label: str  # "--data-root", "BENCH_DATA_ROOT", "user cache" or "bundled"
    root: Path
    explicit: bool = False


def user_data_dir() -> Path:
    """The user data cache: where the search looks first by default, and where downloads land."""
    return cache_dir() / "datasets"


def offline() -> bool:
    """``$BENCH_OFFLINE`` is set to a true value (1, true, yes, on): the search never downloads by itself."""
    return os.environ.get("BENCH_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def search_path(data_root: str | os.PathLike | None = None) -> list[Place]:
    """The folders searched, in order (steps 1-4; an explicit folder that does not exist is an error)."""
    if data_root:
        return [_explicit("--data-root", Path(data_root).expanduser(), "data root")]
    env = os.environ.get("BENCH_DATA_ROOT")
    if env:
        return [_explicit("BENCH_DATA_ROOT", Path(env).expanduser(), f"BENCH_DATA_ROOT={env}")]
    return [Place("user cache", user_data_dir()), Place("bundled", BUNDLED)]


def _explicit(label: str, root: Path, shown: str) -> Place:
    if not root.is_dir():
        raise DatasetError(f"{shown if label != '--data-root' else f'data root {root}'} does not exist or is "
                           f"not a folder")
    return Place(label, root.resolve(), explicit=True)


def missing_files(name: str, root: Path) -> list[str]:
    """The raw files of ``name`` that ``root`` lacks (in the stock loader's layout, relative to ``root``)."""
    _, spec, opts = parse_dataset_name(name, root)
    return [f for f in spec.files(opts) if not (root / f).is_file()]


def find(name: str, data_root: str | os.PathLike | None = None) -> tuple[Place | None, list[tuple[Place, list[str]]]]:
    """The first folder of the search path that has all of ``name``'s raw files (None: none does), and what each
    folder searched before it lacked."""
    tried: list[tuple[Place, list[str]]] = []
    for place in search_path(data_root):
        missing = missing_files(name, place.root)
        if not missing:
            return place, tried
        tried.append((place, missing))
    return None, tried


def locate(name: str, data_root: str | os.PathLike | None = None, download: bool = False) -> Path:
    """The folder to load ``name``'s raw files from, after the stock download into the user data cache when no
    folder has them (see the module's docstring); else :class:`DatasetError`, one line."""
    place, tried = find(name, data_root)
    if place is not None:
        return place.root
    _, spec, opts = parse_dataset_name(name)
    explicit = tried[0][0].explicit
    if spec.fetch is None:
        why = f"there is no stock download of {spec.key}"
    elif download or not (explicit or offline()):
        dest = user_data_dir()
        try:
            fetch_into(spec, opts, dest)
            return dest
        except DownloadFailed as e:
            why = f"the download from {source_url(spec)} failed: {e}"
    elif explicit:
        why = f"a folder named by {tried[0][0].label} is the only one searched"
    else:
        why = "not downloaded: BENCH_OFFLINE is set"
    raise DatasetError(not_found(spec, tried, why, download))


def not_found(spec: Spec, tried: list[tuple[Place, list[str]]], why: str, download: bool) -> str:
    """The one-line error: every folder tried, what it lacked, why there was no download, and what to do."""
    looked = []
    for place, missing in tried:
        if place.label == "bundled":
            looked.append(f"no bundled copy in {place.root}")
        else:
            looked.append(f"{place.root} ({place.label}) lacks {_listing(missing)}")
    first = tried[0][0]
    if first.explicit:
        off = "leave out --data-root" if first.label == "--data-root" else "unset BENCH_DATA_ROOT"
        default = next((p for p in (Place("user cache", user_data_dir()), Place("bundled", BUNDLED))
                        if not missing_files(spec.key, p.root)), None)
        todo = [f"put the files at those paths under {first.root}",
                f"{off} to use the copy in {default.root}" if default else
                f"{off} to search the user cache {user_data_dir()} and the bundled copies"
                + (", then download" if spec.fetch else "")]
        if spec.fetch and not download and not default:
            todo.append(f"pass --download to fetch them into {user_data_dir()}")
    else:
        todo = [f"put the files at those paths under {first.root}",
                "point BENCH_DATA_ROOT or --data-root at a folder that has them"]
        if spec.fetch and offline() and not download:
            todo.append("allow the download (unset BENCH_OFFLINE, or pass --download)")
        elif spec.fetch:
            todo.append("set BENCH_DOWNLOAD_URL to a mirror of the stock files")
    return f"dataset {spec.key} not found: {'; '.join(looked)}; {why}. To provide it, {', or '.join(todo)}"


def _listing(files: list[str]) -> str:
    shown = ", ".join(files[:_LISTED])
    return shown + (f" and {len(files) - _LISTED} more" if len(files) > _LISTED else "")


def is_available(name: str, data_root: str | os.PathLike | None = None) -> bool:
    """Whether a folder of the search path has all of ``name``'s raw files (synthetic datasets always do)."""
    _, spec, _ = parse_dataset_name(name)
    if spec.synthetic:
        return True
    try:
        return find(name, data_root)[0] is not None
    except DatasetError:
        return False


def dataset_catalog(data_root: str | os.PathLike | None = None) -> list[dict[str, str]]:
    """``bench list datasets``: each dataset, whether its files are found, and where (or how they would come)."""
    try:
        places = search_path(data_root)
    except DatasetError:
        places = []
    downloads = bool(places) and not places[0].explicit and not offline()
    rows = []
    for key, spec in SPECS.items():
        if spec.synthetic:
            found, where = "yes", "generated"
        else:
            place = next((p for p in places if not missing_files(key, p.root)), None)
            found, where = ("yes", _where(place)) if place else ("missing", _how(spec, places, downloads))
        rows.append({"name": key, "description": spec.description, "available": found, "where": where})
    schools = {p.root: facebook.schools_found(p.root) for p in places}
    names = sorted({s.lower() for found in schools.values() for s in found})
    rows.append({"name": "facebook-<school>", "description": "Facebook100 school, class-year task (GAP); found: "
                 + (", ".join(names) or "none"), "available": "yes" if names else "missing",
                 "where": ", ".join(str(r) for r, s in schools.items() if s) or "not found (no stock download)"})
    return rows


def _where(place: Place) -> str:
    return "bundled with the package" if place.label == "bundled" else str(place.root)


def _how(spec: Spec, places: list[Place], downloads: bool) -> str:
    if not places:
        return "not found (the data root does not exist)"
    if spec.fetch is None:
        return "not found (no stock download)"
    if downloads:
        return "not found; downloads on first use"
    return "not found (offline)" if not places[0].explicit else "not found (--download fetches it)"
