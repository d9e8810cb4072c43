"""``bench sweep CONFIG.yaml``: a resumable grid of tracked runs (:func:`bench.api.sweep`; how it resumes:
:mod:`bench.sweep`). Exit 1 when a cell failed or was given up on."""

from __future__ import annotations

import argparse

from bench.cliargs import COMMANDS, DIR_RULE, FILE_RULE, check_common, command, threads_arg


@command("sweep", "run a resumable YAML grid of methods x datasets x splits x epsilons x seeds")
def _sweep_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("sweep", help=COMMANDS["sweep"][1], description="Run a resumable YAML grid of tracked runs "
                       "(see configs/): cells already FINISHED in the experiment are not run again.")
    p.add_argument("config", help="YAML sweep config (see configs/)")
    p.add_argument("--dry-run", action="store_true", help="list what would run and what is already done")
    p.add_argument("--executor", choices=["inprocess", "process", "ray"], default="inprocess",
                   help="where cells run: this process, local worker processes, or Ray (default: %(default)s)")
    p.add_argument("--address", help="Ray cluster address (e.g. ray://host:10001 or auto); default: a local instance")
    p.add_argument("--workers", type=int, default=1, help="parallel cells for process/ray executors (default: 1)")
    p.add_argument("--gpus-per-cell", type=float, default=0, metavar="N",
                   help="GPUs each cell's Ray task asks for (e.g. 1: one GPU per cell; 0.5: two cells share one); "
                        "Ray makes only those visible to the cell (default: %(default)s)")
    p.add_argument("--max-retries", type=int, default=1,
                   help="retries of a FAILED cell, and on Ray of a cell whose worker died (default: %(default)s)")
    p.add_argument("--experiment", help="MLflow experiment (overrides the config's)")
    p.add_argument("--reclaim-remote", action="store_true",
                   help="also mark KILLED RUNNING cells owned by sweeps on other hosts (they cannot be checked)")
    threads_arg(p, "torch and numba threads per cell (default 1, fastest for the suite's small models, on a shared "
                   "machine most of all; 0: every core in-process, cores / workers in workers)")
    p.add_argument("--output", "-o", metavar="FILE", help=f"write the sweep summary as JSON (atomically; {FILE_RULE})")
    p.add_argument("--export", metavar="FILE.jsonl|DIR/",
                   help="a compact export of the cells (bench.records): its cells count as done (resume on another "
                        "machine without the MLflow store) and every cell finished now is appended as it ends, as is "
                        "(at the start and the end, interrupted too) every cell FINISHED in the store that it lacks; a "
                        f"directory holds one file per dataset (a file: {FILE_RULE}; a directory: {DIR_RULE})")
    p.add_argument("--teacher-cache", metavar="DIR",
                   help="keep the PrivGNN family's noise-free teacher outputs in DIR and reuse them across the run and "
                        "verify cells of one seed (epsilons, LiRA references, verification worlds): the same "
                        "results, teachers trained once (a verification's determinism fit recomputes); a cache: "
                        "created with any missing parent folders")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=cmd_sweep)
    return p


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.io import check_input, check_output_dir, check_output_file, check_writable, write_json_atomic
    from bench.request import check_sweep_config

    check_input(args.config, "sweep config")
    check_common(args)
    check_sweep_config(args.config)
    from bench import api

    check_output_file(args.output)
    check_writable(args.export, "--export", directory_ok=True)
    check_output_dir(args.teacher_cache, "--teacher-cache", parents=True)
    summary = api.sweep(args.config, experiment=args.experiment, executor=args.executor, workers=args.workers,
                        max_retries=args.max_retries, address=args.address, dry_run=args.dry_run,
                        reclaim_remote=args.reclaim_remote, threads=args.threads, progress=not args.no_progress,
                        export=args.export, teacher_cache=args.teacher_cache, gpus_per_cell=args.gpus_per_cell)
    if args.output:
        write_json_atomic(args.output, summary)
    if args.dry_run:
        return 0
    return 1 if any(r["status"] == "failed" for r in summary["results"]) or summary["gave_up"] else 0
