"""Named datasets, loaded through the real PyG / OGB classes; one module per loader.

:func:`load_dataset` is the entry point: it parses the name (:mod:`~bench.datasets.registry`), stages the raw
files from the data root into a work folder keyed by their content (:mod:`~bench.datasets.cache`), builds the
dataset with its loader (:mod:`~bench.datasets.planetoid`, :mod:`~bench.datasets.pyg`, :mod:`~bench.datasets.ogb`,
:mod:`~bench.datasets.facebook`, :mod:`~bench.datasets.csbm`) and normalises the graph
(:mod:`~bench.datasets.normalize`). Nothing is downloaded unless ``download=True`` (``--download``); downloads
land in the work folder. Loaded datasets are cached in-process, keyed by the raw files' fingerprint, so a file
changed on disk is loaded again.
"""

from __future__ import annotations

import contextlib
import os
import sys
from functools import lru_cache
from pathlib import Path

from bench.datasets.base import DatasetError, GraphDataset, Spec
from bench.datasets.cache import cache_dir, fingerprint, locked, resolve_data_root, stage, unstage, work_dir
from bench.datasets.csbm import make_csbm
from bench.datasets.normalize import finish, normalize_graph
from bench.datasets.registry import SPECS, dataset_catalog, expected_files, is_available, parse_dataset_name
from methods.errors import BenchError


def load_dataset(name: str, data_root: str | os.PathLike | None = None, download: bool = False) -> GraphDataset:
    """Load a named dataset (see :mod:`bench.datasets.registry`). Results are cached in-process per raw-file
    fingerprint; do not mutate them."""
    canonical, spec, opts = parse_dataset_name(name)
    if spec.synthetic:
        return _load(canonical, "", "", download, tuple(sorted(opts.items())))
    root = resolve_data_root(data_root)
    canonical, spec, opts = parse_dataset_name(name, root)
    fp = fingerprint(root, spec.files(opts))
    return _load(canonical, str(root), fp, download, tuple(sorted(opts.items())))


@lru_cache(maxsize=8)
def _load(canonical: str, root_s: str, fp: str, download: bool, opts_items: tuple) -> GraphDataset:
    _, spec, _ = parse_dataset_name(canonical, Path(root_s) if root_s else None)
    opts = dict(opts_items)
    if spec.synthetic:
        return finish(canonical, spec.build(None, opts))
    root = Path(root_s)
    work = work_dir(spec.key, fp)
    files = spec.files(opts)
    with locked(work / ".lock"):
        missing = stage(files, root, work)
        if missing and not download:
            listed = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
            raise DatasetError(f"dataset {spec.key} is missing {listed} under {root} "
                               f"(put the raw files there, set --data-root/BENCH_DATA_ROOT, or pass --download)")
        if missing:
            from bench.datasets.ogb import allow_big_downloads

            unstage(files, work)
            allow_big_downloads()
        try:
            with contextlib.redirect_stdout(sys.stderr):  # PyG/OGB chatter must not pollute our stdout
                built = spec.build(work, opts)
        except BenchError:
            raise
        except Exception as e:  # a corrupt raw file must be one clear line, not a deep traceback
            raise DatasetError(f"could not load {spec.key} from {root}: {type(e).__name__}: {e}") from e
    return finish(canonical, built)


def clear_cache() -> None:
    """Forget the datasets cached in this process (the work folders stay: they are keyed by content)."""
    _load.cache_clear()


__all__ = ["SPECS", "DatasetError", "GraphDataset", "Spec", "cache_dir", "clear_cache", "dataset_catalog",
           "expected_files", "is_available", "load_dataset", "make_csbm", "normalize_graph", "parse_dataset_name",
           "resolve_data_root"]
