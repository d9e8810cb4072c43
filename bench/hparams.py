"""Checked-in hyperparameters per method and dataset (``configs/hparams.yaml``): what ``bench run``, ``bench verify``
and the sweep use when a method runs on a dataset they cover, so a bare command does not run a method with generic
defaults where better settings are known.

Each entry says where its values come from: ``paper`` (the paper's stated values, cited in ``note``) or
``tuned`` (chosen on mean validation accuracy over 3 seeds from the ``grid`` it lists -- tuned on validation
labels, outside the privacy budget, as the papers do), ``measured``, or ``declared`` (a public bound the claim rests
on, such as a declared degree bound: not tuned, and the runs refuse data that exceed it). A run logs the entry it used as the parameter
``hp_source``; explicit ``--set`` overrides always win. Keys under a method are dataset names or glob patterns
(``facebook-*``), optionally with a split (``cora@random-75-10-15``); the most specific match wins (exact name
and split, exact name, pattern and split, pattern). ``by_epsilon`` may refine an entry per target epsilon.
"""

from __future__ import annotations

import fnmatch
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from methods.errors import ConfigError

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "configs" / "hparams.yaml"
#: entries written by ``scripts/tune.py`` from ``configs/tuning.yaml``; they override hparams.yaml's entry of the same
#: method and key
TUNED_PATH = DEFAULT_PATH.with_name("hparams_tuned.yaml")
SOURCES = ("paper", "tuned", "measured", "declared")


@dataclass(frozen=True)
class Entry:
    method: str
    key: str
    source: str
    values: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.method}/{self.key} ({self.source})"


def hparams_path() -> Path:
    env = os.environ.get("BENCH_HPARAMS")
    return Path(env) if env else DEFAULT_PATH


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict[str, Any]:
    import yaml

    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping method -> dataset -> entry")
    return raw


def _file(p: Path) -> dict[str, Any]:
    return _load(str(p), p.stat().st_mtime) if p.is_file() else {}


def table(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """method -> key -> entry: ``path`` alone, ``$BENCH_HPARAMS`` alone, or hparams.yaml overlaid with the tuned
    entries of hparams_tuned.yaml."""
    if path is not None or os.environ.get("BENCH_HPARAMS"):
        return _file(Path(path) if path is not None else hparams_path())
    out = {m: dict(v or {}) for m, v in _file(DEFAULT_PATH).items()}
    for m, v in _file(TUNED_PATH).items():
        out.setdefault(m, {}).update(v or {})
    return out


def _base(dataset: str) -> str:
    return dataset.split(":", 1)[0]


def _rank(key: str, dataset: str, split: str) -> int | None:
    """How specifically ``key`` matches (higher = more specific); None if it does not."""
    name, _, ksplit = key.partition("@")
    if ksplit and ksplit != split:
        return None
    if name == dataset:
        return 4 if ksplit else 3
    if fnmatch.fnmatchcase(dataset, name):
        return 2 if ksplit else 1
    return None


def lookup(method: str, dataset: str, split: str, epsilon: float | None = None,
           path: str | os.PathLike | None = None) -> Entry | None:
    """The checked-in entry for ``method`` on ``dataset``/``split`` (and ``epsilon``), or None."""
    per = table(path).get(method)
    if not per:
        return None
    ds = _base(dataset)
    ranked = [(r, k) for k in per if (r := _rank(str(k), ds, split)) is not None]
    if not ranked:
        return None
    key = max(ranked)[1]
    e = per[key] or {}
    if not isinstance(e, dict):
        raise ConfigError(f"{hparams_path()}: {method}/{key} must be a mapping with source and set")
    source = str(e.get("source", ""))
    if source not in SOURCES:
        raise ConfigError(f"{hparams_path()}: {method}/{key}: source must be one of {', '.join(SOURCES)}")
    values = dict(e.get("set") or {})
    by_eps = e.get("by_epsilon") or {}
    if epsilon is not None and by_eps:
        for k, v in by_eps.items():
            if math.isclose(float(k), float(epsilon)):
                values.update(v.get("set", v) if isinstance(v, dict) else {})
    return Entry(method, str(key), source, values, str(e.get("note", "")))


def resolve(method: str, dataset: str, split: str, epsilon: float | None, user: dict[str, str],
            known: set[str]) -> tuple[dict[str, str], Entry | None]:
    """The overrides a run uses: the checked-in entry's values (those the method has) under the user's."""
    entry = lookup(method, dataset, split, epsilon)
    if entry is None:
        return dict(user), None
    base = {k: _text(v) for k, v in entry.values.items() if k in known}
    return {**base, **user}, entry


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    return str(v)


__all__ = ["DEFAULT_PATH", "TUNED_PATH", "Entry", "hparams_path", "lookup", "resolve", "table"]
