"""Run accountants over conformance cases: a verdict per (case, accountant), golden files, JUnit XML.

Verdicts, for an accountant's value ``v`` on a case with sound lower limit ``L`` and tightest sound reference
``R`` (:meth:`~methods.privacy.conformance.cases.Case.best_reference`; ``L`` itself when the case has none):

* ``UNSOUND``: ``v < L x (1 - 1e-9)``: below what the mechanism provably spends (the slack absorbs float noise
  in ``L`` only, never a real shortfall);
* ``TIGHT``: sound and ``v <= 1.01 x R``;
* ``LOOSE``: sound and above that, with its factor ``v / R``;
* ``UNSUPPORTED``: the accountant raised :class:`~methods.privacy.conformance.adapters.Unsupported` (with its reason);
* ``ERROR``: it raised anything else or returned something that is not a number; a failure, like UNSOUND.

Golden files pin every value with the library versions that produced it: :func:`record` writes one,
:func:`against` lists each (case, accountant) whose value moved beyond a relative tolerance or whose support
(a value, UNSUPPORTED, ERROR) changed, so that a library upgrade shows exactly what it changed.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from methods.errors import BenchError, ConfigError

#: relative slack below the lower limit before a value is UNSOUND (float rounding of the limit, nothing more)
SOUNDNESS_SLACK = 1e-9
#: a value within this factor of the tightest sound reference is TIGHT
TIGHT_FACTOR = 1.01
#: :func:`against`'s default relative tolerance
DEFAULT_RTOL = 1e-6
VERDICTS = ("TIGHT", "LOOSE", "UNSOUND", "UNSUPPORTED", "ERROR")
FAILING = ("UNSOUND", "ERROR")
#: the reference name of a case without a sound reference (ratios are then to its lower limit)
LIMIT_AS_REFERENCE = "lower limit"
GOLDEN_VERSION = 1
GOLDEN_KIND = "accountant-conformance-golden"
#: libraries whose versions a golden file records (what the built-in accountants compute with)
LIBRARIES = ("dp-gnn-bench", "dp-accounting", "opacus", "numpy", "scipy")


@dataclass(frozen=True)
class Result:
    """One accountant on one case: ``value`` (None for UNSUPPORTED and ERROR), the case's ``lower_limit``, the
    ``reference`` the ratio is taken to (and its ``reference_name``), the ``verdict`` and its ``detail`` (the
    factor, the reason, the error), ``seconds`` spent in the accountant (its caches cold), and the case's event ``kind``
    (:attr:`~methods.privacy.conformance.cases.Case.kind`)."""

    case: str
    accountant: str
    verdict: str
    value: float | None
    lower_limit: float
    reference: float
    reference_name: str
    detail: str = ""
    seconds: float = 0.0
    kind: str = ""

    @property
    def ratio(self) -> float | None:
        """value / reference (inf for a positive value over a zero reference; None without a value)."""
        if self.value is None:
            return None
        if self.reference > 0:
            return self.value / self.reference
        return 1.0 if self.value <= 0 else math.inf

    @property
    def status(self) -> str:
        """What a golden file compares besides the value: ``value``, ``unsupported`` or ``error``."""
        return {"UNSUPPORTED": "unsupported", "ERROR": "error"}.get(self.verdict, "value")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "value": _num(self.value), "ratio": _num(self.ratio)}


def verdict(value: float, lower_limit: float, reference: float) -> tuple[str, str]:
    """(verdict, detail) of a value against a lower limit and the tightest sound reference."""
    if value < lower_limit * (1 - SOUNDNESS_SLACK):
        short = f" (by {(lower_limit - value) / lower_limit:.3g} relative)" if lower_limit > 0 else ""
        return "UNSOUND", f"{fmt_value(value)} < lower limit {fmt_value(lower_limit)}{short}"
    if value <= TIGHT_FACTOR * reference:
        return "TIGHT", ""
    factor = value / reference if reference > 0 else math.inf
    return "LOOSE", f"x{factor:.5g}"


def evaluate(case, accountant: Any) -> Result:
    """Run one accountant on one case (``case.ledger_events()`` at ``case.delta``) and judge its value."""
    from methods.privacy.conformance.adapters import Unsupported, check_epsilon

    best = case.best_reference()
    ref, ref_name = (best.epsilon, best.name) if best is not None else (case.lower_limit, LIMIT_AS_REFERENCE)
    base = dict(case=case.id, accountant=accountant.name, lower_limit=case.lower_limit, reference=ref,
                reference_name=ref_name, kind=case.kind)
    from methods.privacy.accountant import clear_caches

    clear_caches()  # cold: an accountant's seconds do not depend on which one ran before it
    start = time.perf_counter()
    try:
        events = case.ledger_events()
        value = check_epsilon(accountant.epsilon(events, case.delta))
    except Unsupported as e:
        return Result(verdict="UNSUPPORTED", value=None, detail=e.reason, seconds=time.perf_counter() - start,
                      **base)
    except Exception as e:  # a crash is reported per case, not raised: the other cases still run
        return Result(verdict="ERROR", value=None, detail=f"{type(e).__name__}: {_first_line(e)}",
                      seconds=time.perf_counter() - start, **base)
    seconds = time.perf_counter() - start
    v, detail = verdict(value, case.lower_limit, ref)
    return Result(verdict=v, value=value, detail=detail, seconds=seconds, **base)


@dataclass
class Report:
    """Every result, in case order then accountant order, with what produced them."""

    results: list[Result]
    accountants: list[dict[str, str]]  # name, description, version
    libraries: dict[str, str]
    cases: list[str]

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.verdict in FAILING]

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per accountant: ``cases``, ``sound`` (TIGHT + LOOSE), a count per verdict (lower case) and
        ``seconds``."""
        out: dict[str, dict[str, Any]] = {}
        for a in self.accountants:
            mine = [r for r in self.results if r.accountant == a["name"]]
            counts = {v.lower(): sum(r.verdict == v for r in mine) for v in VERDICTS}
            out[a["name"]] = {"version": a["version"], "cases": len(mine), "sound": counts["tight"] + counts["loose"],
                              **counts, "seconds": sum(r.seconds for r in mine)}
        return out

    def by_kind(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per event kind (``composite`` for mixed ledgers), per accountant: ``cases`` and a count per verdict
        (lower case), in the order kinds first appear."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for r in self.results:
            counts = out.setdefault(r.kind or "?", {}).setdefault(
                r.accountant, {"cases": 0, **{v.lower(): 0 for v in VERDICTS}})
            counts["cases"] += 1
            counts[r.verdict.lower()] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"accountants": self.accountants, "libraries": self.libraries, "cases": self.cases,
                "summary": self.summary(), "by_kind": self.by_kind(), "results": [r.to_dict() for r in self.results],
                "tolerances": {"unsound_below": f"lower_limit x (1 - {SOUNDNESS_SLACK:g})",
                               "tight_within": f"{TIGHT_FACTOR:g} x tightest sound reference"}}


def library_versions() -> dict[str, str]:
    """The installed version of each of :data:`LIBRARIES` (a report states them)."""
    from methods.privacy.conformance.adapters import library_version

    return {name: library_version(name).split(" ", 1)[1] for name in LIBRARIES}


def check(cases: Sequence, accountants: Iterable[Any], *, progress: bool = False,
          libraries: dict[str, str] | None = None) -> Report:
    """Every accountant (a registered name or an instance with ``name``, ``description``, ``version()`` and
    ``epsilon()``) on every case. A case's failure never stops the run: it is that result's ERROR. ``libraries``:
    the versions the report states (default :func:`library_versions`; the harness names its checkout's commit)."""
    from methods.privacy.conformance.adapters import describe, get_accountant
    from methods.progress import progress_bar

    accs = [get_accountant(a) if isinstance(a, str) else a for a in accountants]
    infos = [describe(a) for a in accs]
    for acc in accs:
        prepare = getattr(acc, "prepare", None)
        if callable(prepare):
            try:
                prepare()
            except Exception:
                pass
    results: list[Result] = []
    with progress_bar(len(cases) * len(accs), "accountant conformance", enabled=progress) as bar:
        for case in cases:
            for acc in accs:
                bar.set_postfix_str(f"{acc.name} on {case.id}", refresh=False)
                results.append(evaluate(case, acc))
                bar.update(1)
    return Report(results=results, accountants=infos, libraries=libraries or library_versions(),
                  cases=[c.id for c in cases])


# --------------------------------------------------------------------------------------------------------------
# golden files
# --------------------------------------------------------------------------------------------------------------


def golden_dict(report: Report) -> dict[str, Any]:
    return {"version": GOLDEN_VERSION, "kind": GOLDEN_KIND, "libraries": report.libraries,
            "accountants": {a["name"]: {"version": a["version"], "description": a["description"]}
                            for a in report.accountants},
            "results": [{"case": r.case, "accountant": r.accountant, "status": r.status, "value": _num(r.value),
                         "verdict": r.verdict, "detail": r.detail} for r in report.results]}


def load_golden(path: str | os.PathLike) -> dict[str, Any]:
    """A golden file, checked (a BenchError naming the file if it is missing or malformed)."""
    p = Path(path)
    if not p.is_file():
        raise BenchError(f"golden file {path} not found")
    try:
        doc = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchError(f"golden file {path} is not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("kind") != GOLDEN_KIND or doc.get("version") != GOLDEN_VERSION:
        raise BenchError(f"golden file {path} is not a version-{GOLDEN_VERSION} accountant golden file "
                         "(write one with bench accountants check --record FILE)")
    rows = doc.get("results")
    if not isinstance(rows, list):
        raise BenchError(f"golden file {path}: no results list")
    accs = doc.get("accountants", {})
    if not isinstance(doc.get("libraries", {}), dict) or not isinstance(accs, dict) or \
            not all(isinstance(v, dict) for v in accs.values()):
        raise BenchError(f"golden file {path}: libraries and accountants must be objects")
    for i, row in enumerate(rows):
        ok = isinstance(row, dict) and isinstance(row.get("case"), str) and isinstance(row.get("accountant"), str) \
            and row.get("status") in ("value", "unsupported", "error")
        if ok and row["status"] == "value":
            try:
                _from_num(row.get("value"))
            except (TypeError, ValueError):
                ok = False
        if not ok:
            raise BenchError(f"golden file {path}: result {i} is malformed ({json.dumps(row)[:120]})")
    return doc


@dataclass(frozen=True)
class Difference:
    """A (case, accountant) that changed against a golden file: ``what`` is ``value`` or ``support``."""

    case: str
    accountant: str
    what: str
    old: str
    new: str

    def describe(self) -> str:
        return f"{self.case} / {self.accountant}: {self.what} {self.old} -> {self.new}"


@dataclass
class Comparison:
    """:func:`against`'s answer: the ``differences``, how many pairs were ``compared``, the pairs of the report
    the golden file does not hold (``new``: not a failure) and each version that differs (``versions``:
    ``{name: (golden, now)}``)."""

    path: str
    rtol: float
    differences: list[Difference]
    compared: int
    new: list[tuple[str, str]] = field(default_factory=list)
    versions: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "rtol": self.rtol, "compared": self.compared,
                "differences": [asdict(d) for d in self.differences], "new": [list(p) for p in self.new],
                "versions": {k: list(v) for k, v in self.versions.items()}}


def against(report: Report, path: str | os.PathLike, rtol: float = DEFAULT_RTOL) -> Comparison:
    """Compare ``report`` with the golden file at ``path``: every (case, accountant) both hold whose value moved
    by more than ``rtol`` relative to the golden value (``|new - old| > rtol x |old|``; infinities equal only
    themselves), or whose status changed (a value, UNSUPPORTED, ERROR). Pairs the golden file lacks are listed
    as ``new``; pairs only the golden file holds are ignored (a subset of the corpus may be checked)."""
    if not (rtol >= 0 and math.isfinite(rtol)):
        raise BenchError(f"--rtol must be a finite number >= 0 (got {rtol})")
    doc = load_golden(path)
    golden = {(row["case"], row["accountant"]): row for row in doc["results"]}
    diffs: list[Difference] = []
    new: list[tuple[str, str]] = []
    compared = 0
    for r in report.results:
        row = golden.get((r.case, r.accountant))
        if row is None:
            new.append((r.case, r.accountant))
            continue
        compared += 1
        if row["status"] != r.status:
            old = fmt_value(_from_num(row["value"])) if row["status"] == "value" else row["status"]
            now = fmt_value(r.value) if r.status == "value" else f"{r.status} ({r.detail})"
            diffs.append(Difference(r.case, r.accountant, "support", old, now))
        elif r.status == "value":
            old_v = _from_num(row["value"])
            if _moved(old_v, r.value, rtol):
                rel = abs(r.value - old_v) / abs(old_v) if old_v and math.isfinite(old_v) else math.inf
                diffs.append(Difference(r.case, r.accountant, "value", fmt_value(old_v),
                                        f"{fmt_value(r.value)} (relative change {rel:.3g})"))
    versions: dict[str, tuple[str, str]] = {}
    for name, ver in doc.get("libraries", {}).items():
        now = report.libraries.get(name)
        if now is not None and now != ver:
            versions[name] = (str(ver), now)
    for a in report.accountants:
        old = doc.get("accountants", {}).get(a["name"], {}).get("version")
        if old is not None and old != a["version"]:
            versions[a["name"]] = (str(old), a["version"])
    return Comparison(path=str(path), rtol=rtol, differences=diffs, compared=compared, new=new, versions=versions)


def _moved(old: float, new: float, rtol: float) -> bool:
    if math.isinf(old) or math.isinf(new):
        return old != new
    return abs(new - old) > rtol * abs(old)


# --------------------------------------------------------------------------------------------------------------
# JUnit XML
# --------------------------------------------------------------------------------------------------------------


def junit_xml(report: Report, differences: Iterable[Difference] = ()) -> str:
    """JUnit XML: a test suite per accountant, a test case per (case, accountant); UNSOUND, ERROR and a golden
    difference are failures, UNSUPPORTED is skipped."""
    import xml.etree.ElementTree as ET

    moved: dict[tuple[str, str], list[Difference]] = {}
    for d in differences:
        moved.setdefault((d.case, d.accountant), []).append(d)
    root = ET.Element("testsuites", name="accountant conformance")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for a in report.accountants:
        mine = [r for r in report.results if r.accountant == a["name"]]
        suite = ET.SubElement(root, "testsuite", name=f"accountants.{a['name']}")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="version", value=a["version"])
        failures = skipped = 0
        for r in mine:
            tc = ET.SubElement(suite, "testcase", classname=f"accountants.{a['name']}",
                               name=r.case, time=f"{r.seconds:.6f}")
            problems = []
            if r.verdict in FAILING:
                problems.append(f"{r.verdict}: {r.detail}")
            problems += [f"golden: {d.describe()}" for d in moved.get((r.case, r.accountant), [])]
            if problems:
                failures += 1
                el = ET.SubElement(tc, "failure", type=r.verdict if r.verdict in FAILING else "GOLDEN",
                                   message=problems[0])
                el.text = "\n".join(problems)
            elif r.verdict == "UNSUPPORTED":
                skipped += 1
                ET.SubElement(tc, "skipped", message=r.detail)
            out = ET.SubElement(tc, "system-out")
            out.text = (f"value={fmt_value(r.value)} lower_limit={fmt_value(r.lower_limit)} "
                        f"reference={fmt_value(r.reference)} ({r.reference_name}) verdict={r.verdict} "
                        f"{r.detail}").rstrip()
        suite.set("tests", str(len(mine)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", str(skipped))
        suite.set("time", f"{sum(r.seconds for r in mine):.6f}")
        totals["tests"] += len(mine)
        totals["failures"] += failures
        totals["skipped"] += skipped
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# --------------------------------------------------------------------------------------------------------------
# the job (bench accountants check, bench.api.check_accountants)
# --------------------------------------------------------------------------------------------------------------

DEFAULT_ACCOUNTANTS = ("ours-tight", "ours-rdp", "ours-pld")


@dataclass
class CheckOutcome:
    """A check and, with a golden file, its comparison. ``failed``: an UNSOUND or ERROR result, or a golden
    difference."""

    report: Report
    comparison: Comparison | None = None

    @property
    def failed(self) -> bool:
        return not self.report.ok or (self.comparison is not None and not self.comparison.ok)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": not self.failed, **self.report.to_dict(),
                "golden": None if self.comparison is None else self.comparison.to_dict()}


def accountant_names(names: str | Iterable[str] | None) -> list[str]:
    """Registered names from ``"a,b"``, ``["a", "b"]`` or ``"all"`` (every registered one, plugins included);
    None: :data:`DEFAULT_ACCOUNTANTS`. An unknown name is a ConfigError."""
    from methods.privacy.conformance.adapters import available_accountants, get_accountant

    items = list(DEFAULT_ACCOUNTANTS) if names is None else [names] if isinstance(names, str) else list(names)
    out: list[str] = []
    for item in items:
        for n in str(item).split(","):
            n = n.strip()
            if n == "all":
                out += list(available_accountants())
            elif n:
                get_accountant(n)  # the "unknown accountant ...; available: ..." error
                out.append(n)
    if not out:
        raise BenchError("no accountant given")
    return list(dict.fromkeys(out))


#: what a run's accountant must pass before it accounts a run (:func:`admit`): the whole shipped corpus (every event
#: kind and regime, the published runs' ledgers included). A subset would not do: dp-accounting's PLD accountant is
#: sound on every published ledger yet 0.1-0.99x the lower limit on composed randomized response, which an EdgeRand
#: run of more steps would spend
ADMISSION_CORPUS = "the whole conformance corpus"


def admit(name: str) -> str:
    """Admit the accountant ``name`` to account runs: a run accountant (``tight``, ``rdp``, ...) is the suite's own
    and needs nothing; any other registered one must give a sound value, and no error, on every case of the
    shipped corpus it supports (:data:`ADMISSION_CORPUS`; a BenchError naming its first failure otherwise, before
    any run opens). Returns what the run records of the check ("" for a run accountant). Once per registered class
    and process: seconds for most, about a minute for a PLD accountant."""
    from methods.privacy.conformance import adapters  # noqa: F401 - the suite's adapters register themselves
    from methods.privacy.accountant import builtin_accountant
    from methods.privacy.registry import available_accountants

    if builtin_accountant(name):
        return ""
    if name not in available_accountants():
        raise ConfigError(f"unknown accountant {name!r}; known: tight, rdp, rdp/standard, pld, "
                          f"{', '.join(available_accountants())} (a plugin's: bench --plugin FILE ...)")
    return _admit(name, available_accountants()[name])


@functools.lru_cache(maxsize=None)
def _admit(name: str, cls: type) -> str:
    from methods.privacy.conformance import adapters

    cases = corpus_cases()
    report = check(cases, [name])
    if not report.ok:
        first = report.failures[0]
        raise BenchError(f"accountant {name} fails the conformance suite on {len(report.failures)} of {len(cases)} "
                         f"cases (first: {first.case}: {first.verdict}, {first.detail}); it cannot account a run "
                         f"(bench accountants check --accountant {name})")
    supported = sum(r.verdict != "UNSUPPORTED" for r in report.results)
    return (f"sound on the {supported} of {len(cases)} conformance cases it supports "
            f"({adapters.describe(name)['version']})")


def corpus_cases(corpus: Iterable[str | os.PathLike] | None = None, pattern: str | None = None,
                 tags: Iterable[str] = ()) -> list:
    """The cases to check: those of the ``corpus`` files (default: the shipped corpus) whose id matches the glob
    ``pattern`` and that carry any of ``tags``; each case's events and delta validated. Nothing selected, an
    unreadable file or an invalid case is a BenchError (bad input, exit 2)."""
    from methods.privacy.conformance.cases import CORPUS_DIR, load_cases

    paths = None if corpus is None else [Path(p) for p in corpus]
    if paths is not None and not paths:
        raise BenchError("no corpus file given")
    if paths is None and not any(CORPUS_DIR.glob("*.json")):
        raise BenchError(f"the conformance corpus folder {CORPUS_DIR} holds no case file (give --corpus FILE)")
    everything = load_cases(paths)
    cases = [c for c in everything if pattern is None or fnmatch.fnmatchcase(c.id, pattern)]
    where = "the corpus" if paths is None else ", ".join(str(p) for p in paths)
    if not everything:
        raise BenchError(f"no case in {where}")
    if not cases:
        raise BenchError(f"--cases {pattern!r} matches no case id in {where}")
    cases = select(cases, tags, universe=everything)
    for c in cases:
        if not 0 <= c.delta < 1:
            raise BenchError(f"case {c.id}: delta must be in [0, 1) (got {c.delta})")
        try:
            c.ledger_events()
        except (BenchError, TypeError, ValueError) as e:
            raise BenchError(f"case {c.id}: invalid event ({e})") from None
    return cases


# --------------------------------------------------------------------------------------------------------------
# selection and helpers
# --------------------------------------------------------------------------------------------------------------


def select(cases: Sequence, tags: Iterable[str] = (), universe: Sequence | None = None) -> list:
    """The cases carrying any of ``tags`` (all cases without tags). A tag no case of ``universe`` (default:
    ``cases``) carries is a BenchError, and so is a selection left empty, so that a typo never checks nothing."""
    tags = list(dict.fromkeys(tags))
    if not tags:
        return list(cases)
    known = sorted({t for c in (cases if universe is None else universe) for t in c.tags})
    missing = [t for t in tags if t not in known]
    if missing:
        raise BenchError(f"no case has tag {', '.join(repr(t) for t in missing)} (tags: {', '.join(known) or 'none'})")
    out = [c for c in cases if set(c.tags) & set(tags)]
    if not out:
        raise BenchError(f"no selected case has tag {', '.join(repr(t) for t in tags)}")
    return out


def _num(x: float | None) -> float | str | None:
    """A float for JSON: ``"inf"``/``"-inf"`` for infinities (strict JSON has none)."""
    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"


def _from_num(x: Any) -> float:
    if isinstance(x, bool) or x is None:
        raise TypeError(f"not a number: {x!r}")
    if isinstance(x, str) and x not in ("inf", "-inf"):
        raise ValueError(f"not a number: {x!r}")
    out = float(x)
    if math.isnan(out):
        raise ValueError("nan")
    return out


def fmt_value(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


__all__ = ["ADMISSION_CORPUS", "CheckOutcome", "Comparison", "DEFAULT_ACCOUNTANTS", "DEFAULT_RTOL", "Difference",
           "Report", "Result", "SOUNDNESS_SLACK", "TIGHT_FACTOR", "VERDICTS", "accountant_names", "admit", "against",
           "check", "corpus_cases", "evaluate", "junit_xml", "load_golden", "select", "verdict"]
