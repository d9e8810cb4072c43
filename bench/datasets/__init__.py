"""Named datasets, loaded through the real PyG / OGB classes; one module per job.

:func:`load_dataset` is the entry point: it parses the name (:mod:`~bench.datasets.registry`), finds the folder
with the raw files (:mod:`~bench.datasets.sources`: ``--data-root``, else ``$BENCH_DATA_ROOT``, else the user
data cache, then the copy bundled with the package, then the stock download, :mod:`~bench.datasets.download`),
stages the files into a work folder keyed by their content (:mod:`~bench.datasets.cache`), builds the dataset
with its loader (:mod:`~bench.datasets.planetoid`, :mod:`~bench.datasets.pyg`, :mod:`~bench.datasets.ogb`,
:mod:`~bench.datasets.facebook`, :mod:`~bench.datasets.csbm`) and normalises the graph
(:mod:`~bench.datasets.normalize`). Loaded datasets are cached in-process, keyed by the raw files' folder and
fingerprint, so a file changed on disk is loaded again.
"""

from __future__ import annotations

import contextlib
import os
import sys
from functools import lru_cache
from pathlib import Path

from bench.datasets.base import DatasetError, GraphDataset, Spec
from bench.datasets.cache import cache_dir, fingerprint, locked, stage, work_dir
from bench.datasets.csbm import make_csbm
from bench.datasets.facebook import spec as facebook_spec
from bench.datasets.normalize import finish, normalize_graph
from bench.datasets.registry import (SPECS, DatasetName, canonical_dataset, expected_files, parse_dataset_name,
                                     resolve_dataset)
from bench.datasets.sources import BUNDLED, dataset_catalog, find, is_available, locate, search_path, user_data_dir
from methods.errors import BenchError


def load_dataset(name: str | DatasetName, data_root: str | os.PathLike | None = None,
                 download: bool = False) -> GraphDataset:
    """Load a named dataset (see :mod:`bench.datasets.registry`; a name already resolved by
    :func:`resolve_dataset` is not read again) from the first folder that has its raw files (see
    :mod:`bench.datasets.sources`). ``download=True`` (``--download``) fetches missing files with the stock
    loader even when ``data_root`` or ``$BENCH_DATA_ROOT`` is set or ``$BENCH_OFFLINE`` is. Results are cached
    in-process per raw-file fingerprint; do not mutate them."""
    resolved = name if isinstance(name, DatasetName) else resolve_dataset(name)
    canonical, spec, opts = resolved.name, resolved.spec, resolved.options
    items = tuple(sorted(opts.items()))
    if spec.synthetic:
        return _load(canonical, spec.key, "", "", items)
    root = locate(canonical, data_root, download)
    if spec.key not in SPECS:  # a Facebook100 school: its spec is the file found under root
        canonical, spec, opts = parse_dataset_name(canonical, root)
    fp = fingerprint(root, spec.files(opts))
    return _load(canonical, spec.key, str(root), fp, items)


@lru_cache(maxsize=8)
def _load(canonical: str, key: str, root_s: str, fp: str, opts_items: tuple) -> GraphDataset:
    root = Path(root_s) if root_s else None
    spec = SPECS[key] if key in SPECS else facebook_spec(key, root)
    opts = dict(opts_items)
    if spec.synthetic:
        return finish(canonical, spec.build(None, opts))
    work = work_dir(spec.key, fp)
    with locked(work / ".lock"):
        missing = stage(spec.files(opts), root, work)
        if missing:  # found a moment ago: removed since
            raise DatasetError(f"dataset {spec.key}: {', '.join(missing[:4])} vanished from {root} while loading")
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


__all__ = ["BUNDLED", "SPECS", "DatasetError", "DatasetName", "GraphDataset", "Spec", "cache_dir",
           "canonical_dataset", "clear_cache", "dataset_catalog", "expected_files", "find", "is_available",
           "load_dataset", "locate", "make_csbm", "normalize_graph", "parse_dataset_name", "resolve_dataset",
           "search_path", "user_data_dir"]
