"""``bench audit``: empirical privacy audits (an epsilon lower bound) checked against the ledger's claim.

Input is validated like ``bench run`` (same RunSpec/prepare path) before anything is trained or logged.
One audit = ONE MLflow run with tags ``kind=audit``, ``method``, ``dataset``, ``split``, ``audit_mode``,
``canary_type`` (input | gradient), ``verdict`` (PASS | VIOLATION); params ``trials``, ``canaries``,
``target_epsilon``, ``delta``, ``confidence``, ``privacy_unit``, ``config_hash`` (+ the canary design and
hyperparameters); metrics ``claimed_epsilon``, ``epsilon_lb``, ``audit_seconds``; artifact ``audit.json``
(scores, inclusion bits, the bound's counts), so the bound can be recomputed.

Exit status: 0 PASS, 3 VIOLATION, 2 bad input, 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import math
import sys

from bench.cliargs import _float, command, data_args, tracking_args
from methods.base import ConfigError

VIOLATION_EXIT = 3


def _audit_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("audit", help="empirical privacy audit: epsilon lower bound vs the ledger's claim",
                       description="Train the method on neighbouring datasets with canaries (black box: fit and "
                                   "predict_proba only), turn membership guesses into an epsilon lower bound, and "
                                   "compare it with the claimed (ledger) epsilon. Exit 3 on VIOLATION.")
    p.add_argument("--method", "-m", required=True, help="method name (plugins via `bench --plugin FILE audit ...`)")
    p.add_argument("--dataset", "-d", required=True, help="dataset name, e.g. csbm:nodes=2000,features=32 or cora")
    p.add_argument("--split", "-s", help="split name (default as in bench run)")
    p.add_argument("--epsilon", "-e", type=_float, help="target epsilon ('inf' for non-private methods)")
    p.add_argument("--delta", type=_float, help="target delta (default: the largest power of ten below 1/#units)")
    p.add_argument("--mode", choices=["one-run", "multi-run"], default="one-run",
                   help="one-run: m canaries in one training run (Steinke et al. 2023); multi-run: T models with and "
                        "T without one canary, Clopper-Pearson (default: %(default)s)")
    p.add_argument("--trials", type=int, default=50, help="multi-run: models per world (default: %(default)s)")
    p.add_argument("--canaries", type=int, default=200, help="one-run: number of canaries m (default: %(default)s)")
    p.add_argument("--confidence", type=_float, default=0.95, help="confidence of the bound (default: %(default)s)")
    p.add_argument("--hops", type=int, default=2,
                   help="receptive field the canaries are made hop-disjoint for (0 = anchors only distinct; "
                        "default: %(default)s)")
    p.add_argument("--canary-degree", type=int, default=1,
                   help="anchor edges per canary node (node/feature units; default: %(default)s)")
    p.add_argument("--canary-scale", type=_float, default=3.0,
                   help="canary feature norm / median row norm (default: %(default)s)")
    p.add_argument("--canary-pattern", choices=["dedicated", "random"], default="dedicated",
                   help="canary rows: one extra feature column each, or random +-1 rows (default: %(default)s)")
    p.add_argument("--canary-type", choices=["input", "gradient"], default="input",
                   help="input: black box, score = the released model's confidence on the canary's label; "
                        "gradient: white box for DP-SGD methods on raw features (dp-mlp, drw*, dpgnn*), the canary's "
                        "examples get a clipped gradient on a coordinate of their own and the score is the sum of "
                        "the released noisy gradients there (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="audit seed: split, canaries, inclusion bits, training seeds")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="method hyperparameter override (repeatable)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] (default: auto)")
    p.add_argument("--output", "-o", metavar="FILE", help="also write the result as JSON (atomically)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    data_args(p)
    tracking_args(p)
    p.set_defaults(func=cmd_audit)
    return p


command("audit", "empirical privacy audit: epsilon lower bound vs the ledger's claim")(_audit_parser)


def _check_args(args: argparse.Namespace) -> None:
    if args.mode == "multi-run" and args.trials < 2:
        raise ConfigError(f"--trials must be >= 2 (got {args.trials})")
    if args.mode == "one-run" and args.canaries < 2:
        raise ConfigError(f"--canaries must be >= 2 (got {args.canaries})")
    if not 0 < args.confidence < 1:
        raise ConfigError(f"--confidence must be in (0, 1) (got {args.confidence})")
    if args.hops < 0 or args.canary_degree < 0:
        raise ConfigError("--hops and --canary-degree must be >= 0")
    if not args.canary_scale > 0:
        raise ConfigError(f"--canary-scale must be > 0 (got {args.canary_scale})")
    if args.seed < 0:
        raise ConfigError(f"--seed must be >= 0 (got {args.seed})")


def fmt_eps(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.4g}"


def cmd_audit(args: argparse.Namespace) -> int:
    import time

    from audits.canaries import CanaryConfig
    from audits.runner import VIOLATION, audit
    from bench import tracking
    from bench.run import RunSpec, make_task, prepare, resolve_budget, write_json_atomic
    from methods.base import config_dict, stable_hash

    _check_args(args)
    spec = RunSpec(methods=[args.method.strip()], dataset=args.dataset, split=args.split, seeds=[args.seed],
                   epsilon=args.epsilon, delta=args.delta, overrides=args.overrides, device=args.device,
                   data_root=args.data_root, download=args.download, experiment=args.experiment,
                   track=not args.no_track, progress=not args.no_progress)
    p = prepare(spec)  # names, budget, hyperparameters, data: errors before anything is written
    cls = p.classes[0]
    overrides = p.overrides[cls.name]
    canary = CanaryConfig(hops=args.hops, degree=args.canary_degree, scale=args.canary_scale,
                          pattern=args.canary_pattern)
    canary.validate()
    task = make_task(p.dataset, p.split, args.seed)
    method = cls(**overrides)
    method.check_task(task)
    budget = resolve_budget(spec.epsilon, spec.delta, method, task)
    method.check_budget(budget)
    if method.privacy_unit != "none":
        from audits.runner import check_canary_type

        check_canary_type(method, args.canary_type, canary)
        from audits.canaries import make_canaries

        # a dry run of the canary design, so a graph too small for the canaries is an input error
        make_canaries(task, method.privacy_unit, 1 if args.mode == "multi-run" else args.canaries, canary,
                      seed=args.seed)
    hparams = config_dict(method.config)
    identity = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": args.seed,
                "epsilon": str(budget.epsilon), "delta": budget.delta, "hparams": hparams}
    config_hash = stable_hash(identity)
    tags = {"kind": "audit", "method": cls.name, "dataset": p.dataset.name, "split": p.split,
            "audit_mode": args.mode, "canary_type": args.canary_type, "config_hash": config_hash}
    params = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": args.seed,
              "trials": args.trials if args.mode == "multi-run" else 1,
              "canaries": args.canaries if args.mode == "one-run" else 1,
              "target_epsilon": str(budget.epsilon), "delta": budget.delta, "confidence": args.confidence,
              "privacy_unit": cls.privacy_unit, "config_hash": config_hash, "split_hash": task.split_hash(),
              "canary.hops": canary.hops, "canary.degree": canary.degree, "canary.scale": canary.scale,
              "canary.pattern": canary.pattern, "canary.type": args.canary_type,
              **{f"hp.{k}": v for k, v in hparams.items()}}
    name = f"audit {cls.name}/{p.dataset.name}/{p.split}/{args.mode}"
    print(f"# auditing {cls.name} (unit: {cls.privacy_unit}) on {p.dataset.name}/{p.split}, {args.mode}, target "
          f"{budget}", file=sys.stderr)
    with tracking.tracked_run(spec.experiment, name, tags=tags, enabled=spec.track) as run:
        run.log_params(params)
        t0 = time.perf_counter()
        result = audit(lambda: cls(**overrides), task, budget, args.mode, trials=args.trials,
                       canaries=args.canaries, confidence=args.confidence, canary=canary, seed=args.seed,
                       device=p.device, progress=spec.progress, canary_type=args.canary_type)
        seconds = time.perf_counter() - t0
        result.seconds = seconds
        run.log_metrics({"claimed_epsilon": result.claimed_epsilon, "epsilon_lb": result.epsilon_lb,
                         "audit_seconds": seconds})
        run.set_tags({"verdict": result.verdict, **({"note": result.note} if result.note else {})})
        run.log_dict({**result.to_dict(), "params": params}, "audit.json")
    print(f"method          {cls.name} ({cls.privacy_unit}-level)")
    print(f"mode            {args.mode} ({result.trials} model(s), {result.canaries} canary(ies), "
          f"{'white-box gradient' if args.canary_type == 'gradient' else 'black-box input'} canaries)")
    print(f"target epsilon  {fmt_eps(budget.epsilon)}  delta {budget.delta:.3g}")
    print(f"claimed epsilon {fmt_eps(result.claimed_epsilon)}  (max over trained models of the ledger's epsilon)")
    print(f"epsilon_lb      {fmt_eps(result.epsilon_lb)}  at {args.confidence:.0%} confidence")
    if result.note:
        print(f"note            {result.note}")
    print(f"time            {seconds:.1f}s")
    if args.output:
        write_json_atomic(args.output, result.to_dict())
    if result.verdict == VIOLATION:
        print(f"verdict         VIOLATION")
        print(f"!!! PRIVACY VIOLATION: {cls.name} leaks more than it claims: epsilon_lb {fmt_eps(result.epsilon_lb)}"
              f" > claimed {fmt_eps(result.claimed_epsilon)} ({args.confidence:.0%} confidence) !!!", file=sys.stderr)
        return VIOLATION_EXIT
    print("verdict         PASS")
    return 0
