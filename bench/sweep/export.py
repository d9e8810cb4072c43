"""Keeping a sweep's export whole: every cell of the config FINISHED in the tracking store has its record there.

A cell's record is appended by the driver as the cell's result comes back, so a driver interrupted or killed
between a run's FINISHED and that line, or a cell that finishes while the driver stops, would be done in the store
(a resume skips it) yet absent from the export for good. :func:`repair_export` closes the gap from the store; a
sweep with ``--export`` calls it as it starts and as it ends, the interrupted end included.
"""

from __future__ import annotations

from typing import Any

from bench.sweep.cells import SweepConfig
from bench.sweep.state import CellState, cell_states


def missing(cfg: SweepConfig, states: dict[str, CellState], exported: set[str]) -> list[tuple[str, str]]:
    """``(cell id, run id)`` of every cell of ``cfg`` FINISHED in the store (its newest FINISHED run) that is not in
    ``exported`` (the cells the export holds a FINISHED record of), in the config's cell order."""
    out = []
    for c in cfg.cells:
        st = states.get(c.cell_id)
        if st is not None and st.finished and c.cell_id not in exported:
            newest = max(st.finished, key=lambda r: r.info.start_time or 0)
            out.append((c.cell_id, newest.info.run_id))
    return out


def repair_export(cfg: SweepConfig, export: str, states: dict[str, CellState] | None = None,
                  exported: set[str] | None = None) -> list[str]:
    """Append the record of every :func:`missing` cell to ``export`` (once: another sweep may be filling the same
    gap); returns the cell ids appended. ``states`` (the store's) and ``exported`` (the export's done cells) are
    read now where not given."""
    from bench import records

    states = cell_states(cfg.experiment) if states is None else states
    gaps = missing(cfg, states, records.done_cells(export) if exported is None else exported)
    return [cid for cid, run_id in gaps if records.append(export, records.record_for(run_id), once=True)]


def repair_note(export: str, cells: list[Any], dry_run: bool = False) -> str:
    """The line a sweep prints when the export lacked finished cells."""
    n = len(cells)
    what = f"{n} cell FINISHED in the store was" if n == 1 else f"{n} cells FINISHED in the store were"
    then = f"the next run appends {'it' if n == 1 else 'them'}" if dry_run else "appended"
    return f"# export {export}: {what} missing ({then})"


__all__ = ["missing", "repair_export", "repair_note"]
