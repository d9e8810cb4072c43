"""``bench run`` and ``bench attack``: train, evaluate and log one run per method and seed (:func:`bench.api.run`);
``bench attack`` also attacks every trained model, each attack a child run (:func:`bench.api.attack`)."""

from __future__ import annotations

import argparse

from bench.cliargs import COMMANDS, attack_args, check_common, command, job_args, target_args, target_kwargs


@command("run", "train and evaluate methods on a dataset split; tracked in MLflow")
def _run_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help=COMMANDS["run"][1], description="Train, evaluate and log one run per method and seed.")
    target_args(p)
    p.add_argument("--diagnostics", action="store_true",
                   help="also put the diagnostics (training loss, accuracy on private labels, exact counts: not "
                        "private, not released) into --output; MLflow always has them under diagnostic.*")
    attack_args(p, required=False)
    return job_args(p, cmd_run)


@command("attack", "membership-inference attacks on trained models; tracked as MLflow child runs")
def _attack_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("attack", help=COMMANDS["attack"][1],
                       description="Train each method (one run per seed, as `bench run`), then attack it; or, with "
                                   "--run, attack the released model a recorded run logged. Each attack is an MLflow "
                                   "child run of its target run with its metrics and ROC plot.")
    target_args(p, output_help="also write targets and attack results as JSON", recorded=True)
    attack_args(p, required=True)
    return job_args(p, cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from bench.io import check_output_dir, check_output_file, write_json_atomic
    from bench.request import check_cli_request
    from methods.errors import ConfigError

    check_common(args)
    check_cli_request(args.method, args.dataset, args.split, args.seeds, args.epsilon, args.delta)
    check_output_file(args.output)
    if args.plot_dir and not args.attacks:
        raise ConfigError("--plot-dir saves the attacks' ROC plots: give --attacks too")
    check_output_dir(args.plot_dir, "--plot-dir")
    runs = [r.strip() for item in getattr(args, "runs", []) or [] for r in item.split(",") if r.strip()]
    from bench import api  # the harness: torch and PyG

    if args.command == "attack" and runs:
        if args.method or args.dataset:
            raise ConfigError("--run attacks recorded runs: give it without --method/--dataset")
        if args.no_track:
            raise ConfigError("--run attacks a tracked run: --no-track does not apply")
        if args.accountant:
            raise ConfigError("--run attacks a tracked run, which spends its own recorded accountant: --accountant "
                              "does not apply")
        results = api.attack_recorded(runs, args.attacks, attack_overrides=args.attack_overrides,
                                      bootstrap=args.bootstrap, plot_dir=args.plot_dir, device=args.device,
                                      data_root=args.data_root, experiment=args.experiment,
                                      progress=not args.no_progress)
        from bench.run import tracked_runs

        print("\n\n".join([api.attack_table(results), tracked_runs(results, args.experiment)]))
        if args.output:
            write_json_atomic(args.output, [r.to_dict() for r in results])
        return 0
    if args.command == "attack" and not (args.method and args.dataset):
        raise ConfigError("give --method and --dataset (train, then attack) or --run RUN_ID (a recorded run)")
    job = api.attack if args.command == "attack" else api.run
    diagnostics = getattr(args, "diagnostics", False)
    results = job(attacks=args.attacks, attack_overrides=args.attack_overrides, bootstrap=args.bootstrap,
                  plot_dir=args.plot_dir, diagnostics=diagnostics, **target_kwargs(args))
    tables = ([api.results_table(results)] if args.command == "run" else []) + \
             ([api.attack_table(results)] if args.attacks else [])
    from bench.run import tracked_runs

    tables.append(tracked_runs(results, args.experiment, track=not args.no_track))
    print("\n\n".join(tables))
    if args.output:
        write_json_atomic(args.output, [r.to_dict(diagnostics=diagnostics) for r in results])
    return 0
