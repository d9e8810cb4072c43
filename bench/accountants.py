"""The accountant conformance job (``bench accountants check``, :func:`bench.api.check_accountants`): every input
checked before any accountant runs, the suite run (:mod:`methods.privacy.conformance`), the outcome compared with a
golden file and written as golden and JUnit files. The report names the version this checkout runs as
(:func:`bench.version.current`: the release and, off it, the commit)."""

from __future__ import annotations

import json
import math
import os
from typing import Iterable

from bench.io import check_output_file, write_text_atomic
from methods.errors import BenchError
from methods.privacy.conformance.check import (DEFAULT_RTOL, CheckOutcome, Difference, Report, accountant_names,
                                               against, check, corpus_cases, golden_dict, junit_xml, library_versions,
                                               load_golden)

#: the distribution whose version :func:`libraries` takes from the checkout
SUITE = "dp-gnn-bench"


def libraries() -> dict[str, str]:
    """The versions a report states: the installed libraries', and this suite's as the checkout runs it."""
    from bench.version import current

    out = library_versions()
    if SUITE in out:
        out[SUITE] = current()
    return out


def record(report: Report, path: str | os.PathLike) -> None:
    """Write the golden file of ``report``: every value, verdict and support status, with the accountants' and
    libraries' versions (JSON, written atomically; values exactly as floats, ``"inf"`` for infinity)."""
    write_text_atomic(path, json.dumps(golden_dict(report), indent=1) + "\n")


def write_junit(report: Report, path: str | os.PathLike, differences: Iterable[Difference] = ()) -> None:
    """Write ``report`` (and a golden comparison's differences) as JUnit XML, atomically."""
    write_text_atomic(path, junit_xml(report, differences))


def check_job(accountants: str | Iterable[str] | None = None, *, pattern: str | None = None,
              tags: Iterable[str] = (), corpus: Iterable[str | os.PathLike] | None = None,
              against_path: str | os.PathLike | None = None, rtol: float = DEFAULT_RTOL,
              record_path: str | os.PathLike | None = None, junit_path: str | os.PathLike | None = None,
              progress: bool = False) -> CheckOutcome:
    """Validate every input (names, corpus, selection, golden file, output paths: a BenchError before any
    accountant runs), check, compare with the golden file, then write the golden and JUnit files."""
    if not (isinstance(rtol, (int, float)) and rtol >= 0 and math.isfinite(rtol)):
        raise BenchError(f"--rtol must be a finite number >= 0 (got {rtol})")
    names = accountant_names(accountants)
    check_output_file(record_path, "--record")
    check_output_file(junit_path, "--junit")
    golden = None if against_path is None else load_golden(against_path)
    cases = corpus_cases(corpus, pattern, tags)
    if golden is not None:
        held = {(row["case"], row["accountant"]) for row in golden["results"]}
        if not any((c.id, n) in held for c in cases for n in names):
            raise BenchError(f"golden file {against_path} holds none of the selected cases for "
                             f"{', '.join(names)}: nothing to compare")
    report = check(cases, names, progress=progress, libraries=libraries())
    comparison = None if against_path is None else against(report, against_path, rtol)
    if record_path is not None:
        record(report, record_path)
    if junit_path is not None:
        write_junit(report, junit_path, comparison.differences if comparison else ())
    return CheckOutcome(report, comparison)


__all__ = ["check_job", "libraries", "record", "write_junit"]
