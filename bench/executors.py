"""Where sweep cells run: this process, local worker processes, or a Ray cluster.

Every executor has ``run(fn, jobs, lost=None)`` (yield ``fn(*job)`` as each job completes; ``lost(job, reason,
seconds)`` for a job whose worker died, where the executor can tell) and ``shutdown()``.
``fn`` must be a top-level function (it is pickled for workers). Workers get the driver's tracking URI and
``BENCH_*`` variables, so every run lands in the same MLflow store.

Local worker processes are started with ``spawn`` (no inherited SQLite connections) and die with the driver
(Linux ``PR_SET_PDEATHSIG``): a SIGKILLed sweep leaves no worker running its cells, so a later sweep may
safely reclaim them. Ray kills a job's workers when its driver exits, and retries a cell whose worker died.
"""

from __future__ import annotations

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

    def shutdown(self) -> None:
        pass


def _die_with_parent(env: dict[str, str]) -> None:
    os.environ.update(env)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: workers exit when the pool pipe breaks
        pass


class ProcessExecutor:
    def __init__(self, workers: int, env: dict[str, str]) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                        initializer=_die_with_parent, initargs=(env,))

    def run(self, fn: Callable, jobs: Iterable[tuple], lost: Callable | None = None) -> Iterator[Any]:
        from concurrent.futures import as_completed

        futures = [self.pool.submit(fn, *job) for job in jobs]
        try:
            for f in as_completed(futures):
                yield f.result()
        finally:
            for f in futures:
                f.cancel()

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
