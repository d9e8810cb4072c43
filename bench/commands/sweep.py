"""``bench sweep CONFIG.yaml``: a resumable grid of tracked runs (:func:`bench.api.sweep`; how it resumes:
:mod:`bench.sweep`). Exit 1 when a cell failed or was given up on."""

from __future__ import annotations

import argparse

from bench.cliargs import COMMANDS, FILE_RULE, check_common, command, request_args, request_kwargs, threads_arg
from bench.request import SweepSpec, build


@command("sweep", "run a resumable YAML grid of methods x datasets x splits x epsilons x seeds")
def _sweep_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("sweep", help=COMMANDS["sweep"][1], description="Run a resumable YAML grid of tracked runs "
                       "(see configs/): cells already FINISHED in the experiment are not run again.")
    request_args(p, SweepSpec)
    threads_arg(p, "torch and numba threads per cell (default 1, fastest for the suite's small models, on a shared "
                   "machine most of all; 0: every core in-process, cores / workers in workers)")
    p.add_argument("--output", "-o", metavar="FILE", help=f"write the sweep summary as JSON (atomically; {FILE_RULE})")
    p.set_defaults(func=cmd_sweep)
    return p


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.io import check_input, check_output_dir, check_output_file, check_writable, write_json_atomic
    from bench.request import check_sweep_config

    check_input(args.config, "sweep config")
    check_common(args)
    spec = build(SweepSpec, **request_kwargs(SweepSpec, args))
    check_sweep_config(spec.config)
    from bench import api

    check_output_file(args.output)
    check_writable(spec.export, "--export", directory_ok=True)
    check_output_dir(spec.teacher_cache, "--teacher-cache", parents=True)
    summary = api.sweep(spec, threads=args.threads)
    if args.output:
        write_json_atomic(args.output, summary)
    if args.dry_run:
        return 0
    return 1 if any(r["status"] == "failed" for r in summary["results"]) or summary["gave_up"] else 0
