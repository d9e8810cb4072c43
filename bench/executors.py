"""Where sweep cells run: this process, local worker processes, or a Ray cluster.

Every executor has ``run(fn, jobs, lost=None)`` (yield ``fn(*job)`` as each job completes; ``lost(job, reason,
seconds)`` for a job whose worker died, where the executor can tell), ``interrupt()`` (the jobs in flight get a
KeyboardInterrupt, as on Ctrl-C) and ``shutdown()``. No executor queues more jobs than it runs: once the caller
stops consuming ``run`` (an interrupt), no job starts.
``fn`` must be a top-level function (it is pickled for workers). Workers get the driver's tracking URI and
``BENCH_*`` variables, so every run lands in the same MLflow store.

Local worker processes are started with ``spawn`` (no inherited SQLite connections) and die with the driver
(Linux ``PR_SET_PDEATHSIG``): a SIGKILLed sweep leaves no worker running its cells, so a later sweep may
safely reclaim them. Ray kills a job's workers when its driver exits, and retries a cell whose worker died.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any, Callable, Iterable, Iterator

from methods.errors import BenchError


class ExecutorError(BenchError):
    """An executor that cannot be used (unknown name, Ray missing or unreachable)."""


class InProcessExecutor:
    def run(self, fn: Callable, jobs: Iterable[tuple], lost: Callable | None = None) -> Iterator[Any]:
        for job in jobs:
            yield fn(*job)

    def interrupt(self) -> None:
        pass  # the job ran in this process: the signal already unwound it

    def shutdown(self) -> None:
        pass


#: in a worker process: whether it is running a job, and whether that job has had its KeyboardInterrupt
_job_state = {"running": False, "interrupted": False}


def _on_sigint(signum, frame) -> None:
    """A worker's SIGINT: one KeyboardInterrupt per job, none between jobs. A worker stays alive through Ctrl-C
    (a dead one breaks the pool, which then kills the others mid-cell), and a second SIGINT (the terminal's and the
    driver's :meth:`ProcessExecutor.interrupt`) cannot cut short the KILLED the first one is ending its runs with."""
    if _job_state["running"] and not _job_state["interrupted"]:
        _job_state["interrupted"] = True
        raise KeyboardInterrupt


def _job(fn: Callable, *job: Any) -> Any:
    """``fn(*job)`` in a worker, where SIGINT interrupts it (:func:`_on_sigint`)."""
    _job_state.update(running=True, interrupted=False)
    try:
        return fn(*job)
    finally:
        _job_state["running"] = False


def _die_with_parent(env: dict[str, str]) -> None:
    os.environ.update(env)
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: workers exit when the pool pipe breaks
        pass


class ProcessExecutor:
    """Jobs on a pool of ``workers`` processes, submitted one per free worker: a pool queues what it is given
    beyond its workers where cancelling cannot reach, so a job submitted early could start after an interrupt."""

    def __init__(self, workers: int, env: dict[str, str]) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                        initializer=_die_with_parent, initargs=(env,))

    def run(self, fn: Callable, jobs: Iterable[tuple], lost: Callable | None = None) -> Iterator[Any]:
        from concurrent.futures import FIRST_COMPLETED, wait

        pending, running = list(jobs), set()
        while pending or running:
            while pending and len(running) < self.workers:
                running.add(self.pool.submit(_job, fn, *pending.pop(0)))
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for f in done:
                yield f.result()

    def interrupt(self) -> None:
        """SIGINT to every worker: its job gets a KeyboardInterrupt (a cell's runs end KILLED); an idle one
        ignores it."""
        for proc in list((getattr(self.pool, "_processes", None) or {}).values()):  # the pool's own record
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGINT)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Cells as Ray tasks, at most ``workers`` in flight, each asking for one CPU and ``gpus`` GPUs (Ray then
    sets ``CUDA_VISIBLE_DEVICES`` to the GPUs it assigned). A task whose worker process or node dies is retried
    by Ray up to ``max_retries`` times (``retry_exceptions=False``: an error inside a cell is the cell's result,
    never retried by Ray); a job still lost after that is passed to ``lost`` (or raises without one)."""

    def __init__(self, workers: int, address: str | None, env: dict[str, str], max_retries: int = 1,
                 gpus: float = 0) -> None:
        try:
            import ray
        except ModuleNotFoundError:
            raise ExecutorError("--executor ray needs Ray: pip install -e '.[ray]'") from None
        self.ray = ray
        self.workers = workers
        self.options = {"num_cpus": 1, "num_gpus": gpus, "max_retries": max_retries, "retry_exceptions": False}
        runtime_env = {"env_vars": dict(env)}
        self._own = not ray.is_initialized()
        if self._own:
            try:
                if address:
                    ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
                else:
                    ray.init(num_cpus=max(workers, 1), runtime_env=runtime_env, include_dashboard=False,
                             log_to_driver=False)
            except Exception as e:  # ConnectionError and friends: one line
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ExecutorError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {msg}") from None

    def run(self, fn: Callable, jobs: Iterable[tuple],
            lost: Callable[[tuple, str, float], Any] | None = None) -> Iterator[Any]:
        """``lost(job, reason, seconds)``: the result of a job whose every attempt lost its worker."""
        import time

        ray = self.ray
        remote = ray.remote(**self.options)(fn)
        pending = list(jobs)
        running: dict[Any, tuple[tuple, float]] = {}
        self._running = running
        while pending or running:
            while pending and len(running) < self.workers:  # at most `workers` cells in flight
                job = pending.pop(0)
                running[remote.remote(*job)] = (job, time.perf_counter())
            (ref,), _ = ray.wait(list(running), num_returns=1)
            job, t0 = running.pop(ref)
            try:
                yield ray.get(ref)
            except ray.exceptions.RayTaskError:  # the cell function itself raised
                raise
            except ray.exceptions.RayError as e:  # worker or node died, out of memory: after Ray's retries
                if lost is None:
                    raise
                reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                yield lost(job, f"{type(e).__name__}: {reason}", time.perf_counter() - t0)

    def interrupt(self) -> None:
        """A KeyboardInterrupt in every task in flight (Ray's cancel), so their runs end KILLED."""
        for ref in list(getattr(self, "_running", {})):
            with contextlib.suppress(Exception):  # a task that has already ended
                self.ray.cancel(ref)

    def shutdown(self) -> None:
        if self._own and self.ray.is_initialized():
            self.ray.shutdown()


def make_executor(name: str, workers: int = 1, address: str | None = None, env: dict[str, str] | None = None,
                  max_retries: int = 1, gpus: float = 0):
    """``max_retries`` and ``gpus`` (per cell) are Ray's task options; the other executors have no use for them."""
    env = env or {}
    if name == "inprocess":
        return InProcessExecutor()
    if name == "process":
        return ProcessExecutor(workers, env)
    if name == "ray":
        return RayExecutor(workers, address, env, max_retries, gpus)
    raise ExecutorError(f"unknown executor {name!r} (inprocess, process, ray)")
