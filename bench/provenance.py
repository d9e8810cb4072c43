"""What a record says about where and what it ran: the machine, and a hash of the released predictions.

Shared by ``bench run`` and the scripts that refit or audit published runs (``scripts.unit_attacks``,
``scripts.whitebox_audits``), which reach the jobs through :mod:`bench.api` but need the same provenance fields.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from methods.base import Task


@functools.lru_cache(maxsize=None)
def _cpu_name() -> str:
    import platform

    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def host_description(device: torch.device | str | None = None) -> str:
    """The machine a run ran on, for the leaderboard's provenance: CPU model and cores, and the GPU it used."""
    text = f"{_cpu_name()}, {os.cpu_count()} cores"
    if device is not None and torch.device(device).type == "cuda":
        text += f", {torch.cuda.get_device_name(torch.device(device))}"
    return text


def predictions_hash(task: Task, proba: torch.Tensor) -> str:
    """A short hash of the released model's predicted classes on the evaluated nodes (test, and PrivGNN's public
    queries): two runs with equal hashes and equal ledgers released the same predictions, which is how a
    leaderboard tells a degenerate comparison (two methods that ran the same training) from a coincidence."""
    import hashlib

    mask = task.test_mask if task.query_mask is None else task.test_mask | task.query_mask
    pred = proba.argmax(dim=1).cpu()[mask.cpu()].to(torch.int32).numpy()
    return hashlib.sha256(pred.tobytes()).hexdigest()[:16]
