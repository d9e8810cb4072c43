"""Executing one cell (in any process: this one, a pool worker, a Ray worker) through the job functions.

The sweep is given the jobs (``run`` and ``audit``: :func:`bench.api.run` and :func:`bench.api.audit`, see
:func:`bench.api.sweep`) and calls them with the cell's configuration and its tags; they return the run id. How a
cell ends follows where it failed:

* ``skipped``: the job rejected its input before any run opened (a :class:`~methods.errors.BenchError`, e.g. a
  task the method cannot take); nothing was logged and it is not retried;
* ``failed``: an error inside the run (a :class:`~bench.tracking.RunFailed`: the run is FAILED in MLflow, also
  when the error is a BenchError raised inside ``fit``) or outside any run; retried at once while the cell has
  failed at most ``max_retries`` times;
* ``finished``: the run ended FINISHED (an audit VIOLATION is a finished measurement).

A worker process first loads the driver's plugins (:func:`bench.plugins.load_from_env`) and marks KILLED the
runs an earlier attempt of the cell left RUNNING when its worker died (:func:`bench.sweep.state.reclaim_attempt`).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable

from bench.sweep.cells import Cell
from bench.tracking import RunFailed
from methods.errors import BenchError


def cell_tags(c: Cell, owner: str) -> dict[str, str]:
    return {"sweep_cell": c.cell_id, "sweep_owner": owner, "sweep_kind": c.kind}


def execute_cell(cell: dict[str, Any], experiment: str, owner: str, env: dict[str, str], failures: int,
                 max_retries: int, threads: int | None = None, *, run: Callable, audit: Callable,
                 verify: Callable | None = None, export: str | None = None) -> dict[str, Any]:
    """Run one cell (``Cell.to_dict()``), retrying a failure at once while the cell has failed at most
    ``max_retries`` times. ``threads``: torch/numba threads for the cell (0: every core; None: as they are).

    Returns ``{"cell_id", "status": finished|failed|skipped, "run_id", "error", "seconds", "attempts"}``.
    With ``export``, a finished cell's record is appended to that file (:mod:`bench.records`).
    """
    from bench.plugins import load_from_env
    from bench.run import using_threads
    from bench.sweep.state import reclaim_attempt

    os.environ.update(env)
    c = Cell.from_dict(cell)
    t0 = time.perf_counter()
    attempts = 0

    def result(status: str, run_id: str | None = None, error: str | None = None) -> dict[str, Any]:
        return {"cell_id": c.cell_id, "status": status, "run_id": run_id, "error": error,
                "seconds": time.perf_counter() - t0, "attempts": attempts}

    try:
        load_from_env()
    except BenchError as e:  # a plugin this worker cannot load (e.g. its file is not on this node)
        return result("failed", error=str(e))
    reclaim_attempt(experiment, c.cell_id, owner)
    with using_threads(threads):
        while True:
            attempts += 1
            try:
                job, fn = {"audit": (_audit_cell, audit), "verify": (_verify_cell, verify)}.get(c.kind, (_run_cell, run))
                run_id = job(c, experiment, cell_tags(c, owner), fn)
                if export and run_id:
                    from bench import records

                    records.append(export, records.record_for(run_id), once=True)  # a concurrent sweep may have run it too
                return result("finished", run_id)
            except BenchError as e:  # rejected before a run opened: not retried
                return result("skipped", error=str(e))
            except Exception as e:  # FAILED inside a run (RunFailed), or an error outside any run
                failures += 1
                if failures > max_retries:
                    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
                    error = msg if isinstance(e, RunFailed) else f"{type(e).__name__}: {msg}"
                    return result("failed", getattr(e, "run_id", None), error)


#: a directory for the PrivGNN family's noise-free teacher outputs (:func:`methods.privgnn.teacher_cache`), shared
#: by the run cells of a sweep (targets and attack reference fits) and by the verify cells, whose determinism fit
#: recomputes (:func:`methods.reuse.fresh`); audit cells fit canary worlds no other cell has and do not use it
TEACHER_CACHE_ENV = "BENCH_TEACHER_CACHE"


def reuse_teachers() -> contextlib.AbstractContextManager:
    """The teacher cache a run or verify cell fits under: ``$BENCH_TEACHER_CACHE`` when set, nothing otherwise.

    Teachers depend on the task, the seed and the teacher settings but not on lambda, so the epsilon-4 and
    epsilon-8 cells of one seed (and their LiRA references, whose streams do not depend on epsilon either) train
    them once; the cached rows equal a fresh fit's exactly. A verification's fits (its base fit, the changed-label
    and canary worlds) are the same at both epsilons too, so the second verification of a seed retrains only its
    determinism fit, which never reads the cache and so checks it."""
    directory = os.environ.get(TEACHER_CACHE_ENV)
    if not directory:
        return contextlib.nullcontext()
    from methods.privgnn import teacher_cache

    return teacher_cache(directory)


def _run_cell(c: Cell, experiment: str, tags: dict[str, str], run: Callable) -> str | None:
    with reuse_teachers():
        return _run_job(c, experiment, tags, run)


def _run_job(c: Cell, experiment: str, tags: dict[str, str], run: Callable) -> str | None:
    (r,) = run(methods=[c.method], dataset=c.dataset, split=c.split, seeds=[c.seed], epsilon=c.epsilon,
               delta=c.delta, overrides=list(c.overrides), device=c.device, experiment=experiment,
               attacks=list(c.attacks), attack_overrides=list(c.attack_overrides), bootstrap=c.bootstrap, tags=tags,
               progress=False, **c.job_options())
    return r.run_id


def _audit_cell(c: Cell, experiment: str, tags: dict[str, str], audit: Callable) -> str | None:
    outcome = audit(method=c.method, dataset=c.dataset, split=c.split, epsilon=c.epsilon, delta=c.delta,
                    mode=c.audit_mode, seed=c.seed, overrides=list(c.overrides), device=c.device,
                    experiment=experiment, tags=tags, progress=False, **dict(c.audit_options), **c.job_options())
    return outcome.run_id


def _verify_cell(c: Cell, experiment: str, tags: dict[str, str], verify: Callable) -> str | None:
    with reuse_teachers():
        return _verify_job(c, experiment, tags, verify)


def _verify_job(c: Cell, experiment: str, tags: dict[str, str], verify: Callable) -> str | None:
    opts = dict(c.audit_options)
    outcome = verify(method=c.method, dataset=c.dataset, split=c.split, epsilon=c.epsilon, delta=c.delta,
                     seeds=[c.seed], overrides=list(c.overrides), device=c.device, experiment=experiment, tags=tags,
                     progress=False, **opts, **c.job_options())
    return outcome.run_id


__all__ = ["TEACHER_CACHE_ENV", "cell_tags", "execute_cell", "reuse_teachers"]
