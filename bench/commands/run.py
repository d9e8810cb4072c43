"""``bench run`` and ``bench attack``: train, evaluate and log one run per method and seed (:func:`bench.api.run`);
``bench attack`` also attacks every trained model, each attack a child run (:func:`bench.api.attack`)."""

from __future__ import annotations

import argparse

from bench.cliargs import (COMMANDS, FILE_RULE, check_common, command, job_args, list_arg, request_args,
                           request_kwargs, stderr)
from bench.request import ATTACK_NAMES, RunSpec, build


def _output_arg(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--output", "-o", metavar="FILE", help=f"{text} (atomically; {FILE_RULE})")


@command("run", "train and evaluate methods on a dataset split; tracked in MLflow")
def _run_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help=COMMANDS["run"][1], description="Train, evaluate and log one run per method and seed.")
    request_args(p, RunSpec)
    _output_arg(p, "also write the results as JSON")
    return job_args(p, cmd_run)


@command("attack", "membership-inference attacks on trained models; tracked as MLflow child runs")
def _attack_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("attack", help=COMMANDS["attack"][1],
                       description="Train each method (one run per seed, as `bench run`), then attack it; or, with "
                                   "--run, attack the released model a recorded run logged. Each attack is an MLflow "
                                   "child run of its target run with its metrics and ROC plot.")
    request_args(p, RunSpec, skip=("diagnostics",), required={"methods": False, "dataset": False, "attacks": True},
                 flags={"attacks": ("--attack", "-a")},
                 helps={"attacks": f"attack name(s), space- or comma-separated or repeated ({ATTACK_NAMES}; see "
                                   "`bench list attacks`)"})
    list_arg(p, "--run", dest="runs", default=[], metavar="RUN_ID",
             help="attack the released model a tracked run logged (its MLflow artefact release/, checked against the "
                  "run's recorded posteriors) instead of training: no --method/--dataset")
    _output_arg(p, "also write targets and attack results as JSON")
    return job_args(p, cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from bench.io import check_output_dir, check_output_file, write_json_atomic
    from bench.request import check_cli_methods
    from methods.errors import ConfigError

    check_common(args)
    check_cli_methods(args.methods)
    runs = [r.strip() for item in getattr(args, "runs", []) or [] for r in item.split(",") if r.strip()]
    recorded = args.command == "attack" and bool(runs)  # attacks recorded runs: nothing to train
    if args.command == "attack" and not recorded and not (args.methods and args.dataset):
        raise ConfigError("give --method and --dataset (train, then attack) or --run RUN_ID (a recorded run)")
    spec = None if recorded else build(RunSpec, **request_kwargs(RunSpec, args))
    check_output_file(args.output)
    if args.plot_dir and not args.attacks:
        raise ConfigError("--plot-dir saves the attacks' ROC plots: give --attacks too")
    check_output_dir(args.plot_dir, "--plot-dir")
    from bench import api  # the harness: torch and PyG

    if recorded:
        if args.methods or args.dataset:
            raise ConfigError("--run attacks recorded runs: give it without --method/--dataset")
        if not args.track:
            raise ConfigError("--run attacks a tracked run: --no-track does not apply")
        if args.accountant:
            raise ConfigError("--run attacks a tracked run, which spends its own recorded accountant: --accountant "
                              "does not apply")
        results = api.attack_recorded(runs, args.attacks, attack_overrides=args.attack_overrides,
                                      bootstrap=args.bootstrap, plot_dir=args.plot_dir, device=args.device,
                                      data_root=args.data_root, experiment=args.experiment,
                                      progress=args.progress)
        from bench.run import tracked_runs

        print("\n\n".join([api.attack_table(results), tracked_runs(results, args.experiment)]))
        if args.output:
            write_json_atomic(args.output, [r.to_dict() for r in results])
        return 0
    diagnostics = getattr(args, "diagnostics", False)
    job = api.attack if args.command == "attack" else api.run
    results = job(spec, threads=args.threads, log=stderr)
    tables = ([api.results_table(results)] if args.command == "run" else []) + \
             ([api.attack_table(results)] if args.attacks else [])
    from bench.run import tracked_runs

    tables.append(tracked_runs(results, args.experiment, track=args.track))
    print("\n\n".join(tables))
    if args.output:
        write_json_atomic(args.output, [r.to_dict(diagnostics=diagnostics) for r in results])
    return 0
