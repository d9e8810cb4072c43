"""What MLflow says about a sweep's cells: done, failed, running elsewhere, or orphaned by a dead sweep.

Every cell run carries ``sweep_cell`` (its identity) and ``sweep_owner`` (host:pid:start-time of the sweep process
that submitted it); attack child runs carry them too. On every start the sweep reads the experiment and

* skips cells that already have a FINISHED run,
* gives up on cells with more than ``--max-retries`` FAILED runs,
* marks KILLED every RUNNING run whose owner is a dead process on this host (a sweep killed with SIGKILL leaves
  such runs) and every RUNNING child run whose parent is no longer running (an attack child of such a run), so
  their cells run again and nothing stays RUNNING. RUNNING runs of a live sweep (or of another host) are left
  alone and their cells are not started twice.

A cell that starts again under the sweep that submitted it (:func:`reclaim_attempt`) marks KILLED that sweep's
RUNNING runs of the cell: an executor retries a cell only when the worker of the earlier attempt died (Ray's
``max_retries``), so they can never finish.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ORPHANED = "orphaned: the sweep that ran it died (reclaimed by a later sweep)"
RETRIED = "orphaned: the worker that ran it died (the cell was retried)"


def _proc_start(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def owner_id() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_proc_start(pid)}"


def owner_alive(owner: str) -> bool | None:
    """True/False for an owner on this host; None when it lives on another host (cannot tell)."""
    try:
        host, pid_s, start = owner.rsplit(":", 2)
        pid = int(pid_s)
    except ValueError:
        return False
    if host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start == "?" or _proc_start(pid) == start  # a reused pid is another process


@dataclass
class CellState:
    finished: list[Any] = field(default_factory=list)
    failed: list[Any] = field(default_factory=list)
    running: list[Any] = field(default_factory=list)
    killed: list[Any] = field(default_factory=list)


def cell_states(experiment: str) -> dict[str, CellState]:
    """Top-level runs of the experiment by cell id and status (child runs are not cells)."""
    from bench import tracking

    out: dict[str, CellState] = {}
    for r in tracking.search_runs(experiment, "tags.sweep_cell LIKE '%'"):
        cid = r.data.tags.get("sweep_cell")
        if not cid or r.data.tags.get("mlflow.parentRunId"):
            continue
        st = out.setdefault(cid, CellState())
        {"FINISHED": st.finished, "FAILED": st.failed, "RUNNING": st.running, "SCHEDULED": st.running,
         "KILLED": st.killed}.get(r.info.status, st.killed).append(r)
    return out


def reclaim_orphans(states: dict[str, CellState], experiment: str, reclaim_remote: bool = False) -> list[str]:
    """Mark KILLED the RUNNING cell runs whose owner process is dead, then the RUNNING child runs whose parent is
    not running any more; returns their run ids (parents first)."""
    from bench import tracking

    reclaimed: list[str] = []

    def kill(run_id: str) -> None:
        c = tracking.client()
        c.set_tag(run_id, "error", ORPHANED)
        c.set_terminated(run_id, status="KILLED")
        reclaimed.append(run_id)

    for st in states.values():
        for r in list(st.running):
            alive = owner_alive(r.data.tags.get("sweep_owner", ""))
            if alive is False or (alive is None and reclaim_remote):
                kill(r.info.run_id)
                st.running.remove(r)
                st.killed.append(r)
    running = tracking.search_runs(experiment, "attributes.status = 'RUNNING'")
    live = {r.info.run_id for r in running} - set(reclaimed)
    children = [r for r in running if r.data.tags.get("mlflow.parentRunId")]
    changed = True
    while changed:  # a child of a reclaimed child is reclaimed too
        changed = False
        for r in children:
            if r.info.run_id in live and r.data.tags["mlflow.parentRunId"] not in live:
                kill(r.info.run_id)
                live.discard(r.info.run_id)
                changed = True
    return reclaimed


def reclaim_attempt(experiment: str, cell_id: str, owner: str) -> list[str]:
    """Mark KILLED the RUNNING runs of ``cell_id`` submitted by the sweep ``owner``, child runs included (they carry
    the same tags); called as a cell starts, so it finds only the runs of an earlier attempt whose worker died.
    Returns their run ids."""
    from bench import tracking

    def quoted(v: str) -> str:
        return "'" + v.replace("'", "\\'") + "'"

    runs = tracking.search_runs(experiment, f"tags.sweep_cell = {quoted(cell_id)} AND tags.sweep_owner = "
                                            f"{quoted(owner)} AND attributes.status = 'RUNNING'")
    c = tracking.client()
    for r in runs:
        c.set_tag(r.info.run_id, "error", RETRIED)
        c.set_terminated(r.info.run_id, status="KILLED")
    return [r.info.run_id for r in runs]


@dataclass
class Plan:
    todo: list[Any]
    done: list[Any]
    running: list[Any]
    gave_up: list[Any]
    skipped: list[Any]


def make_plan(cells: list[Any], states: dict[str, CellState], max_retries: int,
              exported: set[str] | None = None) -> Plan:
    """Sort the cells: skipped, done (FINISHED here or in the export), running elsewhere, given up, to do."""
    plan = Plan([], [], [], [], [])
    exported = exported or set()
    for c in cells:
        st = states.get(c.cell_id, CellState())
        if c.skip:
            plan.skipped.append(c)
        elif st.finished or c.cell_id in exported:
            plan.done.append(c)
        elif st.running:
            plan.running.append(c)
        elif len(st.failed) > max_retries:
            plan.gave_up.append(c)
        else:
            plan.todo.append(c)
    return plan


__all__ = ["CellState", "Plan", "cell_states", "make_plan", "owner_alive", "owner_id", "reclaim_attempt",
           "reclaim_orphans"]
