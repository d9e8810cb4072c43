"""Driving a sweep: read the state, reclaim orphans, plan, run the cells on an executor, summarise.

:func:`run_sweep` is given ``cell_fn``, the top-level function every executor runs once per cell (it must be
importable by worker processes); :func:`bench.api.sweep` passes its own, which executes a cell through
:func:`bench.api.run` and :func:`bench.api.audit` (:mod:`bench.sweep.execute`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bench import manifest
from bench.sweep.cells import Cell, SweepConfig
from bench.sweep.export import missing, repair_export, repair_note
from bench.sweep.state import CellState, cell_states, make_plan, owner_id, reclaim_attempt, reclaim_orphans

ENV_KEYS = ("MLFLOW_TRACKING_URI", "BENCH_TRACKING_DIR", "BENCH_DATA_ROOT", "BENCH_CACHE_DIR", "BENCH_TEACHER_CACHE")


def worker_env() -> dict[str, str]:
    from bench import tracking
    from bench.plugins import PLUGINS_ENV, loaded_plugins

    env = {k: os.environ[k] for k in ENV_KEYS if os.environ.get(k)}
    env["MLFLOW_TRACKING_URI"] = tracking.tracking_uri()  # workers log to the same store as the driver
    if loaded_plugins():  # workers load the driver's plugins before a cell
        env[PLUGINS_ENV] = os.pathsep.join(loaded_plugins())
    return env


def run_sweep(cfg: SweepConfig, cell_fn: Callable[..., dict[str, Any]], executor: str = "inprocess",
              workers: int = 1, max_retries: int = 1, address: str | None = None, dry_run: bool = False,
              reclaim_remote: bool = False, progress: bool = True, out=None, threads: int | None = None,
              export: str | None = None, gpus_per_cell: float = 0) -> dict[str, Any]:
    """Run every cell of ``cfg`` that is not done (see :mod:`bench.sweep`); returns the summary (plain data).

    ``export``: a JSON-Lines export (:mod:`bench.records`); every cell it holds a FINISHED record of counts as
    done (a sweep resumes from it on a machine without the MLflow store) and this process appends every cell
    finished now, as it ends. As it starts and as it ends (interrupted too) it also appends every cell of ``cfg``
    FINISHED in the store but missing from the export (:mod:`bench.sweep.export`).

    After SIGINT or SIGTERM no cell starts; the cells in flight end KILLED (the executor interrupts them:
    :mod:`bench.executors`) or, where they finish first, are exported.

    ``threads`` per cell: None leaves them as they are in this process and gives workers cores / workers; 0 is
    every core in this process (cores / workers in workers).

    On Ray, ``max_retries`` is also how often a cell whose worker died is retried and ``gpus_per_cell`` the GPUs
    each cell asks for; a cell still lost after its retries is ``failed`` and its runs are marked KILLED."""
    from bench.executors import make_executor
    from methods.progress import progress_bar

    out = out or sys.stderr
    from bench import records

    states = cell_states(cfg.experiment)
    reclaimed = [] if dry_run else reclaim_orphans(states, cfg.experiment, reclaim_remote)
    exported = records.done_cells(export)
    lacking = [cid for cid, _ in missing(cfg, states, exported)] if export and dry_run else []
    repaired = repair_export(cfg, export, states, exported) if export and not dry_run else []
    exported |= set(repaired)
    plan = make_plan(cfg.cells, states, max_retries, exported)
    for rid in reclaimed:
        print(f"# marked KILLED: run {rid} was left RUNNING by a dead sweep", file=out)
    print(f"# sweep {cfg.path}: {len(cfg.cells)} cells in experiment {cfg.experiment!r}: {len(plan.todo)} to run, "
          f"{len(plan.done)} done, {len(plan.running)} running elsewhere, {len(plan.gave_up)} failed "
          f"> {max_retries} retries, {len(plan.skipped)} skipped", file=out)
    if lacking or repaired:
        print(repair_note(str(export), lacking or repaired, dry_run), file=out)
    reasons: dict[str, list[Cell]] = {}
    for c in plan.skipped:
        reasons.setdefault(c.skip or "", []).append(c)
    for reason, cells in reasons.items():  # one line per reason, not per cell
        more = f" and {len(cells) - 1} more" if len(cells) > 1 else ""
        print(f"  skip  {cells[0].label}{more}: {reason}", file=out)
    summary: dict[str, Any] = {"experiment": cfg.experiment, "cells": len(cfg.cells), "reclaimed": reclaimed,
                               "done_before": [c.cell_id for c in plan.done],
                               "skipped": {c.cell_id: c.skip for c in plan.skipped},
                               "running_elsewhere": [c.cell_id for c in plan.running],
                               "gave_up": [c.cell_id for c in plan.gave_up], "results": [],
                               "export_repaired": repaired}
    if dry_run:
        for tag, cells in (("run", plan.todo), ("done", plan.done), ("busy", plan.running), ("gave-up", plan.gave_up)):
            for c in cells:
                print(f"  {tag:<5} {c.label}  [{c.cell_id}]", file=out)
        summary["todo"] = [c.cell_id for c in plan.todo]
        summary["export_missing"] = lacking
        return summary
    owner = owner_id()
    env = worker_env()
    by_id = {c.cell_id: c for c in plan.todo}
    failures = {c.cell_id: len(states.get(c.cell_id, CellState()).failed) for c in plan.todo}
    t0 = time.perf_counter()
    ex = make_executor(executor, workers=workers, address=address, env=env, max_retries=max_retries,
                       gpus=gpus_per_cell)
    if not threads and executor != "inprocess":
        threads = max(1, (os.cpu_count() or 1) // max(1, workers))  # no oversubscription by default
    # the driver appends finished cells to the export (below): the file need not be reachable from Ray's nodes
    jobs = [(c.to_dict(), cfg.experiment, owner, env, failures[c.cell_id], max_retries, threads, None)
            for c in plan.todo]
    bar = progress_bar(len(jobs), "sweep", progress, file=out)  # a line per cell below; the bar or ETA lines too
    try:
        def lost(job: tuple, reason: str, seconds: float) -> dict[str, Any]:
            cid = job[0]["cell_id"]
            reclaim_attempt(cfg.experiment, cid, owner)  # the last attempt's runs: KILLED, not left RUNNING
            return {"cell_id": cid, "status": "failed", "run_id": None, "error": f"worker lost ({reason})",
                    "seconds": seconds, "attempts": max_retries + 1}

        for res in ex.run(cell_fn, jobs, lost=lost):
            c = by_id[res["cell_id"]]
            if export and res["status"] == "finished" and res["run_id"]:
                records.append(export, records.record_for(res["run_id"]), once=True)  # first finished record wins
            summary["results"].append({**res, "label": c.label})
            note = f" ({res['error']})" if res["error"] else ""
            bar.write(f"  {res['status']:<8} {c.label}  {res['seconds']:.1f}s{note}", file=out)
            bar.update(1)
    except (KeyboardInterrupt, SystemExit):  # SIGINT, SIGTERM (bench.cli): the cells in flight end now, KILLED
        ex.interrupt()
        raise
    finally:
        bar.close()
        ex.shutdown()
        if export:  # cells that finished while the sweep stopped, or whose line an interrupt cut off
            late = repair_export(cfg, export)
            if late:
                print(repair_note(export, late), file=out)
            summary["export_repaired"] = repaired + late
            if Path(export.rstrip("/")).exists():
                manifest.write(export)  # what the export holds now, for `bench leaderboard --check`
    summary["seconds"] = time.perf_counter() - t0
    n = {s: sum(r["status"] == s for r in summary["results"]) for s in ("finished", "failed", "skipped")}
    print(f"# sweep done in {summary['seconds']:.1f}s: {n['finished']} finished, {n['failed']} failed, "
          f"{n['skipped']} skipped at run time; {len(plan.done)} were done before", file=out)
    return summary


__all__ = ["ENV_KEYS", "run_sweep", "worker_env"]
