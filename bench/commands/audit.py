"""``bench audit``: an empirical privacy audit (an epsilon lower bound) against the ledger's claim
(:func:`bench.api.audit`; what is logged: :mod:`bench.audit`).

Exit status: 0 PASS (or NOT APPLICABLE: a non-private method, nothing trained), 3 VIOLATION, 2 bad input, 1 a
failure while auditing (the run FAILED).
"""

from __future__ import annotations

import argparse
import sys

from bench.cliargs import (COMMANDS, FILE_RULE, _float, accountant_arg, check_common, command, fmt_eps, job_args,
                           list_arg, stderr, threads_arg)

VIOLATION_EXIT = 3


@command("audit", "empirical privacy audit: epsilon lower bound vs the ledger's claim")
def _audit_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("audit", help=COMMANDS["audit"][1],
                       description="Train the method on neighbouring datasets with canaries (black box: fit and "
                                   "predict_proba only), turn membership guesses into an epsilon lower bound, and "
                                   "compare it with the claimed (ledger) epsilon. Exit 3 on VIOLATION.")
    p.add_argument("--level", choices=LEVELS, default=None,
                   help="blackbox: canaries in the data, the released model only (the default); whitebox: gradient "
                        "canaries in every DP-SGD step, all steps observed (--canary-type gradient; default mode "
                        "pooled: worst-case signed canaries, each an independent trial); mechanism: one release of each "
                        "mechanism through the methods' code on a worst-case pair, many trials, no training "
                        "(--mechanism, --epsilon, --trials, --mutation; no --method or --dataset)")
    p.add_argument("--method", "-m", help="method name (plugins via `bench --plugin FILE audit ...`); "
                                          "required unless --level mechanism")
    p.add_argument("--dataset", "-d", help="dataset name, e.g. csbm:nodes=2000,features=32 or cora; "
                                           "required unless --level mechanism")
    list_arg(p, "--mechanism", metavar="NAME",
                   help="--level mechanism: which (default: every registered kind, audits/mechanisms/; the papers' "
                        "relations audited on input graphs, nap-node-cutoff-input and dpgnn-in-edges-input, are known "
                        "violations: reported, not counted in the exit status)")
    list_arg(p, "--mutation", commas=False, default=[], metavar="KEY=FACTOR",
                   help="--level mechanism: run the code with noise 1/FACTOR (noise=1.25), a FACTOR-times "
                        "sensitivity (sensitivity=1.5) or sampling rate (rate=2) against the unchanged claim "
                        "(repeatable)")
    p.add_argument("--split", "-s", help="split name (default as in bench run)")
    p.add_argument("--epsilon", "-e", type=_float, help="target epsilon ('inf' for non-private methods)")
    p.add_argument("--delta", type=_float, help="target delta (default: the largest power of ten below 1/#units)")
    p.add_argument("--mode", choices=["one-run", "multi-run", "pooled"], default=None,
                   help="one-run: m canaries in one training run (Steinke et al. 2023); multi-run: T models with and "
                        "T without one canary, Clopper-Pearson; pooled (white box only): R runs of m gradient "
                        "canaries, every canary an independent trial, Clopper-Pearson and GDP bounds (default: "
                        "pooled with --level whitebox, else one-run)")
    p.add_argument("--trials", type=int, default=None,
                   help="multi-run: models per world (default: 50); pooled: runs (default: 8); --level mechanism: "
                        "trials per world in each of the selection and evaluation halves (default: 400000; nap-edge "
                        "2000000; dpgnn-step 200000; pate-votes 4000000; edgerand-count 25000; privgnn-posterior "
                        "1000000)")
    p.add_argument("--workers", type=int, default=None,
                   help="--level mechanism: audits run in this many processes (default: 1); pooled white-box "
                        "audits: runs fitted in this many processes (default: one per core, at most one per run); "
                        "one torch thread each, the same results")
    p.add_argument("--canaries", type=int, default=None,
                   help="one-run: number of canaries m (default: 200); pooled: canaries per run (default: 1000)")
    p.add_argument("--confidence", type=_float, default=0.95, help="confidence of the bound (default: %(default)s)")
    p.add_argument("--hops", type=int, default=None,
                   help="receptive field the canaries are made hop-disjoint for (0 = anchors only distinct; "
                        "default: 2; refused by the pooled white-box design, whose canaries are isolated)")
    p.add_argument("--canary-degree", type=int, default=None,
                   help="anchor edges per canary node (node/feature units; default: 1; pooled white box: its fresh "
                        "anchors, default the worst-case design's: the declared max_degree, 3 without one)")
    p.add_argument("--canary-scale", type=_float, default=3.0,
                   help="canary feature norm / median row norm (default: %(default)s)")
    p.add_argument("--canary-pattern", choices=["dedicated", "random"], default="dedicated",
                   help="canary rows: one extra feature column each, or random +-1 rows (default: %(default)s)")
    p.add_argument("--canary-type", choices=["input", "gradient"], default="input",
                   help="input: black box, score = the released model's confidence on the canary's label; "
                        "gradient: white box for DP-SGD methods on raw features (dp-mlp, drw*, dpgnn*), the canary's "
                        "examples get a clipped gradient on a coordinate of their own and the score is the sum of "
                        "the released noisy gradients there (default: %(default)s)")
    p.add_argument("--fresh-anchors", action="store_true",
                   help="anchor each canary to new zero-row training nodes of its own instead of existing ones "
                        "(the pooled white-box design always does)")
    p.add_argument("--seed", type=int, default=0, help="audit seed: split, canaries, inclusion bits, training seeds")
    list_arg(p, "--set", dest="overrides", commas=False, default=[], metavar="KEY=VALUE",
             help="method hyperparameter override(s) (space-separated or repeated)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] (default: auto)")
    p.add_argument("--output", "-o", metavar="FILE", help=f"also write the result as JSON (atomically; {FILE_RULE})")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    accountant_arg(p)
    threads_arg(p)
    return job_args(p, cmd_audit)


LEVELS = ("blackbox", "whitebox", "mechanism")
POOLED_RUNS, POOLED_CANARIES = 8, 1000
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
                                   confidence=args.confidence, progress=not args.no_progress,
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
    from bench.request import check_cli_request
    from methods.errors import ConfigError

    check_common(args)
    if args.level == "mechanism":
        return cmd_mechanism_audit(args)
    if args.mechanism or args.mutation:
        raise ConfigError("--mechanism and --mutation need --level mechanism")
    for flag in ("method", "dataset"):
        if getattr(args, flag) is None:
            raise ConfigError(f"--{flag} is required (unless --level mechanism)")
    if args.level is not None:
        wanted = "gradient" if args.level == "whitebox" else "input"
        if args.canary_type != "input" and args.canary_type != wanted:
            raise ConfigError(f"--level {args.level} contradicts --canary-type {args.canary_type}")
        args.canary_type = wanted
    if args.mode is None:
        args.mode = "pooled" if args.level == "whitebox" else "one-run"
    if args.mode == "pooled" and args.canary_type != "gradient":
        raise ConfigError("--mode pooled needs white-box gradient canaries (--level whitebox)")
    trials = args.trials if args.trials is not None else POOLED_RUNS if args.mode == "pooled" else 50
    canaries = args.canaries if args.canaries is not None else POOLED_CANARIES if args.mode == "pooled" else 200
    # a negative --seed is left to the audit's own check, which names the option
    check_cli_request(args.method, args.dataset, args.split, [max(args.seed, 0)], args.epsilon, args.delta)
    check_output_file(args.output)
    from bench import api  # the harness: torch and PyG

    out = api.audit(args.method, args.dataset, split=args.split, epsilon=args.epsilon, delta=args.delta,
                    mode=args.mode, trials=trials, canaries=canaries,
                    confidence=args.confidence,
                    hops=args.hops, canary_degree=args.canary_degree, canary_scale=args.canary_scale,
                    canary_pattern=args.canary_pattern, canary_type=args.canary_type,
                    fresh_anchors=args.fresh_anchors, seed=args.seed,
                    overrides=args.overrides, device=args.device, data_root=args.data_root, download=args.download,
                    experiment=args.experiment, track=not args.no_track, progress=not args.no_progress,
                    threads=args.threads, log=stderr, workers=args.workers, accountant=args.accountant)
    r, budget = out.result, out.budget
    print(f"method          {out.method} ({out.privacy_unit}-level)")
    print(f"mode            {args.mode} ({r.trials} model(s), {r.canaries} canary(ies)"
          f"{' per model' if args.mode == 'pooled' else ''}, "
          f"{'white-box gradient' if args.canary_type == 'gradient' else 'black-box input'} canaries)")
    print(f"target epsilon  {fmt_eps(budget.epsilon)}  delta {budget.delta:.3g}")
    print(f"claimed epsilon {fmt_eps(r.claimed_epsilon)}  (max over trained models of the ledger's epsilon)")
    if args.mode == "pooled" and r.trials:
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
