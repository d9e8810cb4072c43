"""The accountant conformance page: every registered accountant on the whole corpus.

    python -m scripts.accountant_conformance [--out docs/accountants/conformance.md]
        [--golden docs/accountants/golden.json] [--corpus FILE ...] [--accountant NAME ...]

Runs ``bench.api.check_accountants`` (default: every built-in accountant) over ``methods/privacy/conformance/corpus/``
and writes the page: library versions, the per-accountant summary (sound / tight / loose / unsupported / unsound /
error), the same per event kind and per hard regime, every UNSOUND or ERROR result, and every case on which one of our
accountants is not TIGHT. ``--golden`` records every value (``bench accountants check --against`` diffs a later run
against it). The page names the commit it was produced from, which must be clean.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Any

DEFAULT_OUT = "docs/accountants/conformance.md"
DEFAULT_GOLDEN = "docs/accountants/golden.json"
OURS = ("ours-tight", "ours-rdp", "ours-pld")
REGIMES = ("tiny-q", "large-sigma", "small-sigma", "tiny-delta", "eps-small", "eps-large", "low-orders",
           "source:leaderboard")
VERDICT_COLUMNS = ("tight", "loose", "unsupported", "unsound", "error")


def _count_table(rows: dict[tuple[str, str], dict[str, int]], first: str, accountants: list[str]) -> list[str]:
    from bench.studies._common import markdown

    keys = sorted({k for k, _ in rows})
    if not keys:
        return ["No case carries these tags."]
    body = []
    for k in keys:
        cells = [k]
        for a in accountants:
            c = rows.get((k, a))
            cells.append("-" if not c else " / ".join(str(c.get(v, 0)) for v in VERDICT_COLUMNS))
        body.append(cells)
    return markdown([first] + accountants, body).splitlines()


def page(outcome: Any, commit: str, cases: list) -> str:
    """The Markdown page of a check's outcome (``methods.privacy.conformance.check.CheckOutcome``)."""
    from bench.studies._common import markdown

    report = outcome.report
    by_id = {c.id: c for c in cases}
    names = [a["name"] for a in report.accountants]
    summary = report.summary()
    lines = ["# Accountant conformance: the table", "",
             f"Every built-in accountant on the {len(report.cases)} cases of "
             f"`methods/privacy/conformance/corpus/`, produced "
             f"by `python -m scripts.accountant_conformance` at commit `{commit[:10]}` (libraries: "
             + ", ".join(f"{k} {v}" for k, v in sorted(report.libraries.items())) + "). Verdicts and their "
             "tolerances: [Accountant conformance](index.md#verdicts-and-their-tolerances). The values are in "
             "`golden.json` (`bench accountants check --accountant all --against docs/accountants/golden.json`).",
             "", "## Per accountant", ""]
    body = [[n, summary[n]["version"], str(summary[n]["cases"]), str(summary[n]["sound"]), str(summary[n]["tight"]),
             str(summary[n]["loose"]), str(summary[n]["unsupported"]), str(summary[n]["unsound"]),
             str(summary[n]["error"]), f"{summary[n]['seconds']:.1f}"] for n in names]
    lines += markdown(["accountant", "version", "cases", "sound", "tight", "loose", "unsupported", "unsound", "error",
                       "seconds"], body).splitlines()
    best = _best_of_ours(report.results)
    if best:
        lines += ["", f"Our accountants together (per case the tighter of {' and '.join(OURS)} that supports it, as "
                  f"`--accountant pld` is available wherever the PLD applies): {best['tight']} of {best['cases']} "
                  f"cases TIGHT, {best['loose']} LOOSE, {best['unsound']} UNSOUND."]
    kinds: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    regimes: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in report.results:
        case = by_id[r.case]
        kind = "+".join(case.kinds) if len(case.kinds) > 1 else case.kinds[0]
        kinds[(kind if len(case.kinds) == 1 else "composite", r.accountant)][r.verdict.lower()] += 1
        for tag in case.tags:
            if tag in REGIMES:
                regimes[(tag, r.accountant)][r.verdict.lower()] += 1
    cols = " / ".join(VERDICT_COLUMNS)
    lines += ["", f"## Per event kind ({cols})", ""] + _count_table(kinds, "event kind", names)
    lines += ["", f"## Per hard regime ({cols})", ""] + _count_table(regimes, "regime (tag)", names)
    bad = [r for r in report.results if r.verdict in ("UNSOUND", "ERROR")]
    lines += ["", "## UNSOUND and ERROR results", ""]
    if bad:
        lines += markdown(["case", "accountant", "value", "lower limit", "detail"],
                          [[r.case, r.accountant, _fmt(r.value), _fmt(r.lower_limit), r.detail] for r in bad]
                          ).splitlines()
    else:
        lines.append("None.")
    loose = [r for r in report.results if r.accountant in OURS and r.verdict not in ("TIGHT", "UNSUPPORTED")]
    lines += ["", "## Our accountants where they are not TIGHT", ""]
    if loose:
        lines += markdown(["case", "accountant", "verdict", "value", "tightest sound reference", "detail"],
                          [[r.case, r.accountant, r.verdict, _fmt(r.value), f"{_fmt(r.reference)} ({r.reference_name})",
                            r.detail] for r in loose]).splitlines()
    else:
        lines.append("None: TIGHT on every case they support.")
    return "\n".join(lines) + "\n"


def _best_of_ours(results: list) -> dict[str, int]:
    """Per case, the verdict of the tighter of our accountants that returned a value: counts."""
    per: dict[str, list] = defaultdict(list)
    for r in results:
        if r.accountant in OURS and r.value is not None:
            per[r.case].append(r)
    out = {"cases": len(per), "tight": 0, "loose": 0, "unsound": 0}
    for rs in per.values():
        if any(r.verdict == "UNSOUND" for r in rs):
            out["unsound"] += 1
        elif any(r.verdict == "TIGHT" for r in rs):
            out["tight"] += 1
        else:
            out["loose"] += 1
    return out


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def main(argv: list[str] | None = None) -> int:
    from bench import api
    from methods.privacy.conformance.adapters import available_accountants
    from methods.privacy.conformance.check import corpus_cases
    from bench.studies._common import clean_commit, save

    p = argparse.ArgumentParser(prog="python -m scripts.accountant_conformance", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--golden", default=DEFAULT_GOLDEN)
    p.add_argument("--corpus", nargs="*", help="corpus files (default: methods/privacy/conformance/corpus/)")
    p.add_argument("--accountant", nargs="*", help="accountants (default: every built-in one)")
    args = p.parse_args(argv)
    commit = clean_commit()
    names = args.accountant or list(available_accountants())
    outcome = api.check_accountants(names, corpus=args.corpus, record=args.golden, progress=True)
    save(args.out, page(outcome, commit, corpus_cases(args.corpus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
