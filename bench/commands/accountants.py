"""``bench accountants``: privacy accountants against the conformance corpus (:func:`bench.api.check_accountants`).

    bench accountants list [NAME ...] [--json]
    bench accountants check [--accountant NAME ...|all] [--cases GLOB] [--tag TAG ...] [--corpus FILE ...]
                            [--json] [--junit FILE] [--record FILE] [--against FILE] [--rtol R]

``check`` runs each accountant on each case and judges its epsilon against the case's sound lower limit and
tightest sound reference: UNSOUND (below the lower limit by more than a relative 1e-9), TIGHT (within 1.01 x the
reference), LOOSE (with its factor), UNSUPPORTED (the accountant has no bound for the ledger), ERROR (it
crashed). ``--record`` writes a golden file of every value with the library versions; ``--against`` compares
with one. Your own accountant: ``bench --plugin FILE.py accountants check --accountant NAME`` (docs/accountants).

Exit status: 0 all sound, 1 an UNSOUND or ERROR result or a golden-file difference, 2 bad input (an unknown
accountant, a tag or glob matching no case, a missing or malformed corpus or golden file).
"""

from __future__ import annotations

import argparse
import json

from bench.cliargs import COMMANDS, FILE_RULE, _float, command, list_arg

DEFAULT_RTOL = 1e-6  # methods.privacy.conformance.check.DEFAULT_RTOL (not imported: the parser stays light)


@command("accountants", "check privacy accountants against the conformance corpus: sound, how tight, golden files")
def _accountants_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("accountants", help=COMMANDS["accountants"][1], description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", metavar="ACTION", title="actions")
    actions.required = True
    q = actions.add_parser("list", help="the registered accountants (built-in and plugins') with versions")
    list_arg(q, "names", nargs="*", metavar="NAME", help="only these accountants (default: all)")
    q.add_argument("--json", action="store_true", help="print JSON")
    c = actions.add_parser("check", help="run accountants over the corpus: a verdict per case and accountant",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    list_arg(c, "--accountant", "-a", dest="accountants", metavar="NAME",
                   help="accountant name(s), repeated or comma-separated, or 'all' (default: ours-tight ours-rdp ours-pld; "
                        "see `bench accountants list`)")
    c.add_argument("--cases", metavar="GLOB", help="only the cases whose id matches this glob (e.g. 'gaussian-*')")
    list_arg(c, "--tag", dest="tags", default=[], metavar="TAG",
                   help="only the cases carrying any of these tags (e.g. ci)")
    list_arg(c, "--corpus", metavar="FILE",
                   help="corpus file(s) (default: every file of methods/privacy/conformance/corpus/)")
    c.add_argument("--json", action="store_true", help="print the whole report as one JSON object")
    c.add_argument("--junit", metavar="FILE",
                   help="also write JUnit XML: a test per case and accountant, UNSOUND, ERROR and golden differences "
                        f"fail, UNSUPPORTED skips ({FILE_RULE})")
    c.add_argument("--record", metavar="FILE", help="write a golden file: every value, verdict and library version "
                                                    f"(JSON; {FILE_RULE})")
    c.add_argument("--against", metavar="FILE", help="compare with a golden file: list every case and accountant "
                                                     "whose value moved beyond --rtol or whose support changed")
    c.add_argument("--rtol", type=_float, default=DEFAULT_RTOL,
                   help="relative tolerance of --against: |new - old| <= rtol x |old| (default: %(default)g)")
    c.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=cmd_accountants)
    return p


def cmd_accountants(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _list(args)
    return _check(args)


def _list(args: argparse.Namespace) -> int:
    from methods.privacy.conformance.adapters import available_accountants, describe
    from methods.privacy.conformance.check import accountant_names
    from bench.io import format_table

    names = accountant_names(args.names) if args.names else list(available_accountants())
    rows = [describe(name) for name in names]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(format_table(["name", "version", "description"], [[r["name"], r["version"], r["description"]]
                                                             for r in rows]))
    return 0


def _check(args: argparse.Namespace) -> int:
    from bench import api

    out = api.check_accountants(args.accountants, cases=args.cases, tags=args.tags, corpus=args.corpus,
                                against=args.against, rtol=args.rtol, record=args.record, junit=args.junit,
                                progress=not args.no_progress)
    if args.json:
        print(json.dumps(out.to_dict(), indent=2))
    else:
        print_outcome(out, args)
    return 1 if out.failed else 0


def reference_cell(r) -> str:
    """The epsilon a result's ratio is taken to, and what it is: the case's tightest sound reference (an
    independent upper bound), or its lower limit where it has none."""
    from methods.privacy.conformance.check import LIMIT_AS_REFERENCE, fmt_value

    what = "lower limit: no sound reference" if r.reference_name == LIMIT_AS_REFERENCE else r.reference_name
    return f"{fmt_value(r.reference)} ({what})"


def print_outcome(out, args: argparse.Namespace) -> None:
    """The results table, the per-accountant and per-event-kind summaries, the golden comparison and a one-line
    verdict."""
    from methods.privacy.conformance.check import SOUNDNESS_SLACK, TIGHT_FACTOR, VERDICTS, fmt_value
    from bench.io import format_table

    rep = out.report
    print(f"# {len(rep.cases)} cases x {len(rep.accountants)} accountants; ratio = value / reference, the "
          f"reference being the case's tightest sound reference epsilon (its lower limit where it has none); "
          f"UNSOUND below lower limit x (1 - {SOUNDNESS_SLACK:g}), TIGHT at ratio <= {TIGHT_FACTOR:g}")
    rows = []
    for r in rep.results:
        verdict = {"TIGHT": r.verdict, "LOOSE": f"{r.verdict} {r.detail}"}.get(r.verdict, f"{r.verdict}: {r.detail}")
        rows.append([r.case, r.accountant, fmt_value(r.value), fmt_value(r.lower_limit), reference_cell(r),
                     "-" if r.ratio is None else fmt_value(r.ratio), verdict])
    print(format_table(["case", "accountant", "value", "lower limit", "reference (what it is)", "ratio", "verdict"],
                       rows))
    print()
    summary = rep.summary()
    print(format_table(["accountant", "version", "cases", "sound", "tight", "loose", "unsupported", "unsound",
                        "error", "seconds"],
                       [[name, s["version"], str(s["cases"]), str(s["sound"]), str(s["tight"]), str(s["loose"]),
                         str(s["unsupported"]), str(s["unsound"]), str(s["error"]), f"{s['seconds']:.3f}"]
                        for name, s in summary.items()]))
    print()
    print(format_table(["event kind", "accountant", "cases", *(v.lower() for v in VERDICTS)],
                       [[kind, name, str(c["cases"]), *(str(c[v.lower()]) for v in VERDICTS)]
                        for kind, per in rep.by_kind().items() for name, c in per.items()]))
    cmp = out.comparison
    if cmp is not None:
        print()
        head = f"golden file {cmp.path}: {cmp.compared} results compared at rtol {cmp.rtol:g}"
        print(f"{head}: no difference" if cmp.ok else f"{head}: {len(cmp.differences)} differ")
        for d in cmp.differences:
            print(f"  DIFF {d.describe()}")
        if cmp.new:
            print(f"  {len(cmp.new)} results not in the golden file (new cases or accountants)")
        for name, (old, now) in cmp.versions.items():
            print(f"  version of {name}: {old} -> {now}")
    if args.record:
        print(f"recorded {len(rep.results)} results in {args.record}")
    if args.junit:
        print(f"JUnit XML: {args.junit}")
    unsound = sum(r.verdict == "UNSOUND" for r in rep.results)
    errors = sum(r.verdict == "ERROR" for r in rep.results)
    moved = 0 if cmp is None else len(cmp.differences)
    if out.failed:
        print(f"FAIL: {unsound} unsound, {errors} errors, {moved} golden differences")
    else:
        print("OK: every supported result is sound" + ("" if cmp is None else ", none moved"))
