"""The manifest of an export: every record it held when a page was built from it (or a sweep last wrote it), by
run id, with the hash of the record's content. Committed beside the export (``DIR/manifest.json`` for a folder of
``*.jsonl`` files, ``X.manifest.json`` beside ``X.jsonl``), it lets ``bench leaderboard --check`` see what no single
record shows: a record deleted, added or edited within its ranges (an accuracy changed from 0.80 to 0.85) since
the page was built. A forgery that rewrites the manifest too is a commit whose diff shows it; one consistent with
itself and its manifest is caught only by re-running its cell."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

SCHEMA = 1
NAME = "manifest.json"


def record_hash(record: dict[str, Any]) -> str:
    """The hash of a record's content, independent of key order and whitespace (16 hex digits of sha256)."""
    blob = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def manifest_path(export: str | Path) -> Path:
    p = Path(export)
    return p / NAME if p.is_dir() or str(export).endswith("/") else p.with_name(p.stem + ".manifest.json")


def _files(export: Path) -> list[Path]:
    return sorted(export.glob("*.jsonl")) if export.is_dir() else ([export] if export.exists() else [])


def _records(path: Path) -> Iterable[dict[str, Any]]:
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            yield rec


def build(export: str | Path) -> dict[str, Any]:
    """``{"schema", "files": {file name: {run id: record hash}}}`` of what ``export`` holds now."""
    files = {}
    for f in _files(Path(export)):
        files[f.name] = {str(r.get("run_id")): record_hash(r) for r in _records(f)}
    return {"schema": SCHEMA, "files": files}


def write(export: str | Path) -> Path:
    """Write (atomically) the manifest of what ``export`` holds now; the path written."""
    from bench.io import write_text_atomic

    path = manifest_path(export)
    body = json.dumps(build(export), indent=0, sort_keys=True)
    write_text_atomic(path, body + "\n")
    return path


def load(export: str | Path) -> dict[str, Any] | None:
    """The manifest committed beside ``export``, or None when there is none; a malformed one is a BenchError."""
    from methods.errors import BenchError

    path = manifest_path(export)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BenchError(f"manifest {path} is not JSON") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("files"), dict):
        raise BenchError(f"manifest {path} is not a schema-{SCHEMA} export manifest")
    return data


def compare(export: str | Path, manifest: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(where, problems) for every difference between ``export`` and its ``manifest``: a record edited, added, or
    missing, a file added or missing."""
    out: list[tuple[str, list[str]]] = []
    listed: dict[str, dict[str, str]] = manifest["files"]
    present = {f.name: f for f in _files(Path(export))}
    for name in sorted(set(listed) - set(present)):
        out.append((name, [f"in the manifest ({len(listed[name])} records) but not in the export"]))
    for name, f in present.items():
        want = listed.get(name)
        if want is None:
            out.append((str(f), ["not in the manifest: added since the page was built"]))
            continue
        seen = set()
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # an unreadable line fails on its own
            if not isinstance(rec, dict):
                continue
            run_id = str(rec.get("run_id"))
            seen.add(run_id)
            if run_id not in want:
                out.append((f"{f}:{i}", [f"run {run_id} is not in the manifest: added since the page was built"]))
            elif want[run_id] != record_hash(rec):
                out.append((f"{f}:{i}", [f"run {run_id} differs from the record the manifest lists: edited since "
                                         "the page was built"]))
        gone = [r for r in want if r not in seen]
        if gone:
            out.append((str(f), [f"{len(gone)} record(s) of the manifest are missing: run(s) "
                                 f"{', '.join(gone[:5])}{', ...' if len(gone) > 5 else ''}"]))
    return out
