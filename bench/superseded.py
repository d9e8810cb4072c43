"""Records a newer generation replaced (a retune, a re-run, a regeneration): kept, never published as current.

They live beside the site's export, one file per dataset, ``SITE/superseded/<dataset>.jsonl`` (the file name of
:func:`bench.records.shard`), each line the record as it was published plus, where a script says so, a
``superseded_because``. One file per dataset keeps each small enough to review, and machines that work on different
datasets append to different files, so their branches merge without conflicts. Every writer appends whole lines
(:func:`append_lines`), so nothing is rewritten and the lines stay byte for byte what was published.

A path ending in ``.jsonl`` is the older single-file layout (``SITE/superseded.jsonl``): still read, and still
appended to when a script is given one; any other path is the directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable


def site_superseded(site: str | os.PathLike) -> Path:
    """The superseded records of a leaderboard site: ``SITE/superseded/``."""
    return Path(site) / "superseded"


def single_file(path: str | os.PathLike) -> bool:
    """The older layout: one file for every dataset."""
    return str(path).endswith(".jsonl")


def _files(path: str | os.PathLike) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        return sorted(p.glob("*.jsonl"))
    return [p] if p.is_file() else []


def lines(path: str | os.PathLike) -> list[str]:
    """Every record line of ``path`` (the directory, file by file in name order, or the older single file), as
    stored; none are merged (a cell may have been superseded more than once)."""
    return [x for f in _files(path) for x in f.read_text().splitlines() if x.strip()]


def load(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of :func:`lines` (empty when ``path`` does not exist)."""
    return [json.loads(x) for x in lines(path)]


def append_lines(path: str | os.PathLike, new: Iterable[str]) -> int:
    """Append record lines (JSON objects, one per line, kept as given) to ``path``: each to its dataset's file of
    the directory, or all to the older single file; how many."""
    from bench.records import shard

    by_file: dict[Path, list[str]] = {}
    for line in new:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        f = Path(path) if single_file(path) else shard(path, json.loads(line))
        by_file.setdefault(f, []).append(line)
    for f, ls in by_file.items():
        f.parent.mkdir(parents=True, exist_ok=True)
        with open(f, "a") as fh:
            fh.write("".join(x + "\n" for x in ls))
    return sum(len(ls) for ls in by_file.values())


__all__ = ["append_lines", "lines", "load", "single_file", "site_superseded"]
