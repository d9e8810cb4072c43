"""The conformance corpus: cases as data.

A case is a composite ledger (a list of :mod:`methods.privacy.events` dicts, each with its ``count``) at one
``delta``, with

* ``lower_limit``: a SOUND lower limit on the true epsilon of that composition: the exact value, or a provable
  lower bound (the exact epsilon of one realisable neighbouring pair, an optimistic PLD); an accountant that
  reports below it is unsound. ``method`` says how it was computed.
* ``references``: epsilons from independent computations (library and version or paper formula), each marked
  ``sound`` (an upper bound on the true epsilon, as an accountant must report) or not (an estimate: a CLT or a
  discretisation that may fall below).

Files: ``methods/privacy/conformance/corpus/*.json``, one JSON object ``{"version": 1, "cases": [...]}`` per file (a
file per event kind or source). Case ids are unique across the corpus and stable: golden files key on them.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from methods.errors import BenchError

#: the shipped corpus, read from the installed package (package data), so the default works from any directory
CORPUS_DIR = Path(str(resources.files("methods.privacy.conformance") / "corpus"))
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Reference:
    """One independent value: ``name`` (e.g. ``dp-accounting PLD``), ``version`` (library version or citation),
    ``epsilon``, and whether it is ``sound`` (a valid upper bound on the true epsilon)."""

    name: str
    epsilon: float
    version: str = ""
    sound: bool = True
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "epsilon": self.epsilon, "version": self.version, "sound": self.sound,
                "note": self.note}


@dataclass(frozen=True)
class Case:
    """One accounting problem: ``events`` (event dicts, :func:`methods.privacy.events.event_from_dict`) at
    ``delta``; ``lower_limit`` and how it was obtained (``lower_limit_method``); ``references``; ``tags`` (event
    kinds, regimes such as ``tiny-q`` or ``large-sigma``, ``source:leaderboard``)."""

    id: str
    events: tuple[dict[str, Any], ...]
    delta: float
    lower_limit: float
    lower_limit_method: str
    references: tuple[Reference, ...] = ()
    tags: tuple[str, ...] = ()
    note: str = ""

    def ledger_events(self) -> list:
        from methods.privacy.events import event_from_dict

        return [event_from_dict(e) for e in self.events]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({e["kind"] for e in self.events}))

    @property
    def kind(self) -> str:
        """The case's event kind, or ``composite`` for a ledger of several kinds."""
        return self.kinds[0] if len(self.kinds) == 1 else "composite"

    def best_reference(self) -> Reference | None:
        """The tightest sound reference that respects the lower limit (None if no sound reference does)."""
        ok = [r for r in self.references if r.sound and r.epsilon >= self.lower_limit * (1 - 1e-9)]
        return min(ok, key=lambda r: r.epsilon) if ok else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "events": [dict(e) for e in self.events], "delta": self.delta,
                "lower_limit": self.lower_limit, "lower_limit_method": self.lower_limit_method,
                "references": [r.to_dict() for r in self.references], "tags": list(self.tags), "note": self.note}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Case":
        try:
            return cls(id=str(d["id"]), events=tuple(dict(e) for e in d["events"]), delta=float(d["delta"]),
                       lower_limit=float(d["lower_limit"]), lower_limit_method=str(d["lower_limit_method"]),
                       references=tuple(Reference(**r) for r in d.get("references", ())),
                       tags=tuple(d.get("tags", ())), note=str(d.get("note", "")))
        except (KeyError, TypeError, ValueError) as e:
            raise BenchError(f"malformed conformance case {d.get('id', '?')!r}: {type(e).__name__}: {e}") from e


def load_cases(paths: Iterable[str | Path] | None = None, pattern: str | None = None) -> list[Case]:
    """The cases of the corpus files ``paths`` (default: every file of :data:`CORPUS_DIR`), those whose id matches
    the glob ``pattern`` (``fnmatch``; None = all). Duplicate ids are an error."""
    files = sorted(CORPUS_DIR.glob("*.json")) if paths is None else [Path(p) for p in paths]
    cases: list[Case] = []
    seen: dict[str, Path] = {}
    for f in files:
        if not f.is_file():
            raise BenchError(f"conformance corpus file {f} not found")
        try:
            doc = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise BenchError(f"conformance corpus file {f} is not JSON ({e})") from e
        if doc.get("version") != FORMAT_VERSION:
            raise BenchError(f"{f}: corpus format version {doc.get('version')!r}, expected {FORMAT_VERSION}")
        for d in doc.get("cases", []):
            c = Case.from_dict(d)
            if c.id in seen:
                raise BenchError(f"case id {c.id!r} appears in {seen[c.id]} and {f}")
            seen[c.id] = f
            if pattern is None or fnmatch.fnmatchcase(c.id, pattern):
                cases.append(c)
    return cases


def save_cases(path: str | Path, cases: Iterable[Case]) -> None:
    """Write ``cases`` as one corpus file (sorted by id, so a regenerated file diffs by case)."""
    doc = {"version": FORMAT_VERSION, "cases": [c.to_dict() for c in sorted(cases, key=lambda c: c.id)]}
    Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


__all__ = ["CORPUS_DIR", "Case", "FORMAT_VERSION", "Reference", "load_cases", "save_cases"]
