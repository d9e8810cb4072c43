"""``bench audit``: an empirical privacy audit (an epsilon lower bound) against the ledger's claim
(:func:`bench.api.audit`; what is logged: :mod:`bench.audit`).

Exit status: 0 PASS (or NOT APPLICABLE: a non-private method, nothing trained), 3 VIOLATION, 2 bad input, 1 a
failure while auditing (the run FAILED).
"""

from __future__ import annotations

import argparse
import sys

from bench.cliargs import (COMMANDS, FILE_RULE, check_common, command, fmt_eps, job_args, list_arg, request_args,
                           request_kwargs, stderr)
from bench.request import AuditSpec, build

VIOLATION_EXIT = 3


@command("audit", "empirical privacy audit: epsilon lower bound vs the ledger's claim")
def _audit_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("audit", help=COMMANDS["audit"][1],
                       description="Train the method on neighbouring datasets with canaries (black box: fit and "
                                   "predict_proba only), turn membership guesses into an epsilon lower bound, and "
                                   "compare it with the claimed (ledger) epsilon. Exit 3 on VIOLATION.")
    # --level mechanism is another job (bench.api.audit_mechanisms): --method and --dataset are checked after parsing
    request_args(p, AuditSpec, required={"method": False, "dataset": False})
    list_arg(p, "--mechanism", metavar="NAME",
             help="--level mechanism: which (default: every registered kind, audits/mechanisms/; the papers' "
                  "relations audited on input graphs, nap-node-cutoff-input and dpgnn-in-edges-input, are known "
                  "violations: reported, not counted in the exit status)")
    list_arg(p, "--mutation", commas=False, default=[], metavar="KEY=FACTOR",
             help="--level mechanism: run the code with noise 1/FACTOR (noise=1.25), a FACTOR-times sensitivity "
                  "(sensitivity=1.5) or sampling rate (rate=2) against the unchanged claim (repeatable)")
    p.add_argument("--output", "-o", metavar="FILE", help=f"also write the result as JSON (atomically; {FILE_RULE})")
    return job_args(p, cmd_audit)


MECHANISM_EPSILONS = (0.5, 1.0, 2.0, 4.0)


def _mutation(items: list[str]) -> dict[str, float]:
    from methods.errors import ConfigError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or key.strip() not in ("noise", "sensitivity", "rate"):
            raise ConfigError(f"--mutation {item!r}: expected noise=F, sensitivity=F or rate=F")
    return out


def cmd_mechanism_audit(args: argparse.Namespace) -> int:
    """``bench audit --level mechanism``: a table of mechanism-level audits (:func:`bench.api.audit_mechanisms`)."""
    from bench import api
    from bench.io import check_output_file, write_json_atomic
    from methods.errors import ConfigError

    for flag in ("method", "dataset", "split", "accountant"):
        if getattr(args, flag) is not None:
            raise ConfigError(f"--level mechanism audits mechanisms, not a method's run: drop --{flag}")
    check_output_file(args.output)
    epsilons = MECHANISM_EPSILONS if args.epsilon is None else (args.epsilon,)
    results = api.audit_mechanisms(args.mechanism, epsilons, delta=1e-5 if args.delta is None else args.delta,
                                   trials=args.trials, seed=args.seed, mutation=_mutation(args.mutation),
                                   confidence=args.confidence, progress=args.progress,
                                   workers=1 if args.workers is None else args.workers)
    print(f"{'mechanism':14s} {'claim':>6s} {'ledger':>7s} {'pair':>7s}"
          + f" {'lb CP':>7s} {'/claim':>6s} {'/ledger':>7s} {'lb f-DP':>7s} {'/claim':>6s} {'/ledger':>7s}"
          + f" {'trials':>8s} {'seconds':>7s}  verdict")
    from audits.mechanisms.registry import known_violations

    known = known_violations()
    for r in results:
        verdict = r.verdict + (" (known: a papers' relation)" if r.mechanism in known and r.verdict == "VIOLATION"
                               else "")
        print(f"{r.mechanism:14s} {r.epsilon_claimed:6.3g} {r.epsilon_accounted:7.3f} {r.epsilon_true:7.3f}"
              + f" {r.epsilon_lb_cp:7.3f} {r.ratio_cp:6.2f} {r.ledger_ratio_cp:7.2f}"
              + f" {r.epsilon_lb_fdp:7.3f} {r.ratio_fdp:6.2f} {r.ledger_ratio_fdp:7.2f}"
              + f" {r.trials:8d} {r.seconds:7.1f}  {verdict}")
    first = results[0]
    print(f"# lb CP: Clopper-Pearson, assumes nothing (the verdict's); lb f-DP: assumes the audited pair's trade-off "
          f"family (below); both at {first.confidence:.0%} confidence together, delta {first.delta:.3g}, trials per "
          f"world in each half; code run: {first.mutation}")
    print("# claim: the event's tightest sound epsilon (exact where the pair is its proven worst case); ledger: what "
          "the ledger's accountant reports for it; pair: the exact epsilon of the audited pair as the code ran it "
          "(the most this audit can show)")
    for name in dict.fromkeys(r.mechanism for r in results):
        r = next(x for x in results if x.mechanism == name)
        print(f"# {name}: f-DP assumes {r.fdp_assumes}; pair: {r.pair}")
    for name in dict.fromkeys(r.mechanism for r in results if r.mechanism in known):
        print(f"# {name}: a known violation, not a shipped default: {known[name]}")
        if any(r.mechanism == name and r.verdict != "VIOLATION" for r in results):
            print(f"# {name}: did NOT find its known violation at every claim: too few trials for its power?")
    if args.output:
        write_json_atomic(args.output, [r.to_dict() for r in results])
    bad = [r for r in results if r.verdict == "VIOLATION" and r.mechanism not in known]
    if bad:
        print(f"!!! PRIVACY VIOLATION: {', '.join(f'{r.mechanism} at epsilon {r.epsilon_claimed:g}' for r in bad)} "
              f"releases more than its ledger event claims ({first.confidence:.0%} confidence) !!!", file=sys.stderr)
        return VIOLATION_EXIT
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from bench.io import check_output_file, write_json_atomic
    from bench.request import check_cli_methods
    from methods.errors import ConfigError

    check_common(args)
    if args.level == "mechanism":
        return cmd_mechanism_audit(args)
    if args.mechanism or args.mutation:
        raise ConfigError("--mechanism and --mutation need --level mechanism")
    for flag in ("method", "dataset"):
        if getattr(args, flag) is None:
            raise ConfigError(f"--{flag} is required (unless --level mechanism)")
    check_cli_methods(args.method)
    spec = build(AuditSpec, **request_kwargs(AuditSpec, args))  # the audit's defaults and rules
    check_output_file(args.output)
    from bench import api  # the harness: torch and PyG

    out = api.audit(spec, threads=args.threads, log=stderr)
    r, budget = out.result, out.budget
    print(f"method          {out.method} ({out.privacy_unit}-level)")
    print(f"mode            {spec.mode} ({r.trials} model(s), {r.canaries} canary(ies)"
          f"{' per model' if spec.mode == 'pooled' else ''}, "
          f"{'white-box gradient' if spec.canary_type == 'gradient' else 'black-box input'} canaries)")
    print(f"target epsilon  {fmt_eps(budget.epsilon)}  delta {budget.delta:.3g}")
    print(f"claimed epsilon {fmt_eps(r.claimed_epsilon)}  (max over trained models of the ledger's epsilon)")
    if spec.mode == "pooled" and r.trials:
        b = r.details["bound"]
        print(f"pair epsilon    {r.details['pair_epsilon']:.4g}  (exact epsilon of the pair the runs realised: the "
              f"most any audit of this design can show; above the claim it is a VIOLATION, decided at the observed "
              f"draw rates' lower confidence bounds: {r.details['pair_epsilon_low']:.4g})")
        print(f"epsilon_lb      {fmt_eps(r.epsilon_lb)} (Clopper-Pearson, assumes nothing), "
              f"{b['epsilon_lb_fdp']:.4g} (f-DP: GDP estimator), at {args.confidence:.0%} confidence; "
              f"{b['evaluation'][0]} + {b['evaluation'][1]} evaluation canaries, AUC {b['auc']:.3f}")
    else:
        print(f"epsilon_lb      {fmt_eps(r.epsilon_lb)}  at {args.confidence:.0%} confidence")
    if r.note:
        print(f"note            {r.note}")
    print(f"time            {r.seconds:.1f}s")
    if args.output:
        write_json_atomic(args.output, r.to_dict())
    if out.verdict == "VIOLATION":
        print(f"verdict         VIOLATION: {r.reason}")
        print(f"!!! PRIVACY VIOLATION: {out.method} leaks more than it claims: {r.reason} "
              f"({args.confidence:.0%} confidence) !!!", file=sys.stderr)
        return VIOLATION_EXIT
    print(f"verdict         {out.verdict}" + (f" ({r.reason}: no claim to audit)" if r.verdict != "PASS" else ""))
    return 0
