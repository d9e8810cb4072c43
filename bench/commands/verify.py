"""``bench verify``: every check that applies to a method's privacy unit, as one table and one verdict
(:func:`bench.api.verify`; the battery: :mod:`audits.verify`; what is logged: :mod:`bench.verify`).

Exit status: 0 PASS (or NOT APPLICABLE: a non-private method, nothing to check), 3 VIOLATION, 4 INCONCLUSIVE (a
check that applies to the method did not run), 2 bad input, 1 a failure while verifying (the run FAILED).
"""

from __future__ import annotations

import argparse

from bench.cliargs import COMMANDS, FILE_RULE, check_common, command, job_args, request_args, request_kwargs, stderr
from bench.request import VerifySpec, build

VIOLATION_EXIT, INCONCLUSIVE_EXIT = 3, 4


@command("verify", "run every privacy check that applies to a method (structural, white-box, black-box audits)")
def _verify_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("verify", help=COMMANDS["verify"][1],
                       description="Structural checks (the reported epsilon is the re-accounted ledger, determinism, "
                                   "noise independent of init and sampler, private inference), white-box DP-SGD "
                                   "checks (steps and sampling against the ledger, noise calibration, occurrence "
                                   "counts, gradient canaries) and black-box one-run audits with canaries for the "
                                   "method's unit; Bonferroni over the statistical checks. Exit 0 on PASS or NOT APPLICABLE "
                                   "(a non-private method), 3 on VIOLATION, 4 on INCONCLUSIVE (a check that applies "
                                   "to the method did not run).")
    request_args(p, VerifySpec)
    p.add_argument("--output", "-o", metavar="FILE", help=f"also write the report as JSON (atomically; {FILE_RULE})")
    return job_args(p, cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from bench.cliargs import fmt_eps
    from bench.io import check_output_file, format_table, write_json_atomic
    from bench.request import check_cli_methods

    check_common(args)
    check_cli_methods(args.method)
    spec = build(VerifySpec, **request_kwargs(VerifySpec, args))
    check_output_file(args.output)
    from bench import api  # the harness: torch and PyG

    out = api.verify(spec, threads=args.threads, log=stderr if spec.run.progress else None)
    rep = out.report
    multi = len(rep.seeds) > 1
    header = ["check"] + (["seed"] if multi else []) + ["statistic", "threshold", "verdict"]
    rows = []
    for c in rep.checks:
        rows.append([c.name] + ([str(c.seed)] if multi else []) + [c.statistic, c.threshold, _verdict_cell(c)])
    print(f"# {rep.method} ({rep.privacy_unit}-level) on {rep.dataset}/{rep.split}: target epsilon "
          f"{fmt_eps(rep.target_epsilon)}, delta {rep.delta:.3g}; family-wise confidence {rep.confidence:g} "
          f"(Bonferroni); {rep.seconds:.0f}s")
    if rows:
        print(format_table(header, rows))
    if rep.note:
        print(f"note: {rep.note}")
    if args.output:
        write_json_atomic(args.output, out.to_dict())
    print(rep.headline())
    return {"VIOLATION": VIOLATION_EXIT, "INCONCLUSIVE": INCONCLUSIVE_EXIT}.get(out.verdict, 0)


def _verdict_cell(c) -> str:
    """A check's verdict with why: a VIOLATION's cause, a SKIPPED check's reason (NOT RUN where it applies to the
    method and could not run), what a partial check did not see."""
    if c.verdict == "VIOLATION":
        return f"VIOLATION: {c.detail}" if c.detail else "VIOLATION"
    if c.verdict == "SKIPPED":
        return f"{'NOT RUN' if c.remedy else 'SKIPPED'}: {c.detail}"
    return f"{c.verdict} (partial): {c.detail}" if c.remedy else c.verdict
