"""``bench verify``: every check that applies to a method's privacy unit, as one table and one verdict
(:func:`bench.api.verify`; the battery: :mod:`audits.verify`; what is logged: :mod:`bench.verify`).

Exit status: 0 PASS (or NOT APPLICABLE: a non-private method, nothing to check), 3 VIOLATION, 4 INCONCLUSIVE (a
check that applies to the method did not run), 2 bad input, 1 a failure while verifying (the run FAILED).
"""

from __future__ import annotations

import argparse

from bench.cliargs import (COMMANDS, FILE_RULE, _float, accountant_arg, check_common, command, job_args, list_arg,
                           stderr, threads_arg)

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
    p.add_argument("--method", "-m", required=True, help="method name (plugins via `bench --plugin FILE verify ...`)")
    p.add_argument("--dataset", "-d", required=True, help="dataset name, e.g. cora or csbm:nodes=2000,features=32")
    p.add_argument("--split", "-s", help="split name (default as in bench run)")
    p.add_argument("--epsilon", "-e", type=_float,
                   help="target epsilon (finite; required for a private method, left out for a non-private one)")
    p.add_argument("--delta", type=_float, help="target delta (default: the largest power of ten below 1/#units)")
    list_arg(p, "--seeds", item=int, default=[0], metavar="SEED",
                   help="seeds: the battery runs once per seed, the error budget shared by all (default: 0)")
    p.add_argument("--quick", action="store_true", help="fewer canaries (100) and inference probes: a few minutes")
    p.add_argument("--canaries", type=int, help="canaries of the one-run audits (default 200; --quick 100)")
    p.add_argument("--inference-tries", type=int, metavar="N",
                   help="units the private-inference check changes, one refit each (default 6; --quick 3)")
    p.add_argument("--trials", type=int, default=0,
                   help="also a multi-run audit with this many models per world (default 0: none)")
    p.add_argument("--confidence", type=_float, default=0.95,
                   help="family-wise: a correct method fails with probability <= 1 - this (default: %(default)s)")
    list_arg(p, "--checks", metavar="CHECK", help="a subset of the checks (default: all that apply)")
    list_arg(p, "--set", dest="overrides", commas=False, default=[], metavar="KEY=VALUE",
             help="method hyperparameter override(s) (space-separated or repeated)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] (default: auto)")
    p.add_argument("--output", "-o", metavar="FILE", help=f"also write the report as JSON (atomically; {FILE_RULE})")
    p.add_argument("--no-progress", action="store_true", help="hide progress lines and bars")
    accountant_arg(p)
    threads_arg(p)
    return job_args(p, cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from bench.cliargs import fmt_eps
    from bench.io import check_output_file, format_table, write_json_atomic
    from bench.request import check_cli_request

    check_common(args)
    check_cli_request(args.method, args.dataset, args.split, args.seeds, args.epsilon, args.delta)
    check_output_file(args.output)
    from bench import api  # the harness: torch and PyG

    checks = args.checks or None
    out = api.verify(args.method, args.dataset, split=args.split, epsilon=args.epsilon, delta=args.delta,
                     seeds=args.seeds, quick=args.quick, canaries=args.canaries, trials=args.trials,
                     confidence=args.confidence, checks=checks, overrides=args.overrides, device=args.device,
                     data_root=args.data_root, download=args.download, experiment=args.experiment,
                     track=not args.no_track, progress=not args.no_progress, threads=args.threads,
                     log=None if args.no_progress else stderr, inference_tries=args.inference_tries,
                     accountant=args.accountant)
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
