"""The page's "Cost of this leaderboard" section: what regenerating it took, read from the progress file the
regeneration writes (``SITE/regeneration.json``, ``scripts.regenerate``): total wall time, core-hours (wall seconds x
the threads each step used, summed) and the cost per cell family (method family x stage). No file, no section."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench.leaderboard.rows import LeaderboardError

HEADING = "Cost of this leaderboard"
STAGE_ORDER = ("retire", "train", "attacks", "whitebox", "verify", "page")


def load(path: str | os.PathLike) -> dict[str, Any] | None:
    """The progress file's contents, or None when there is none."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text())
        steps = data["steps"]
        for e in steps.values():
            float(e["wall_s"]), float(e["core_s"]), e["stage"], e["family"], e["dataset"]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise LeaderboardError(f"{p}: not a regeneration progress file ({type(e).__name__}: {e})") from None
    return data


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def cost_md(data: dict[str, Any] | None) -> str:
    """The section as markdown (empty without data)."""
    if not data or not data.get("steps"):
        return ""
    steps = list(data["steps"].values())
    wall = sum(float(e["wall_s"]) for e in steps)
    core = sum(float(e["core_s"]) for e in steps)
    done = sum(e.get("status") == "done" for e in steps)
    state = "complete" if done == len(steps) else f"in progress: {done} of {len(steps)} steps done"
    out = [f"## {HEADING}", "",
           f"Regenerated from {data.get('ref', '?')} ({str(data.get('commit', '?'))[:12]}) by scripts/regenerate.py "
           f"on {data.get('host', '?')} ({state}): {_h(wall)} h of wall time, {core / 3600:.2f} core-hours (each "
           "step's wall time x the threads it used). Per cell family (method family x stage), summed over datasets "
           "and attempts: core-hours (cells).", ""]
    stages = [s for s in STAGE_ORDER if any(e["stage"] == s for e in steps)]
    stages += sorted({e["stage"] for e in steps} - set(stages))
    fams = sorted({e["family"] for e in steps}, key=lambda f: (f == "*", f))
    out.append("| family | " + " | ".join(stages) + " | total |")
    out.append("|" + " --- |" * (len(stages) + 2))
    for f in fams:
        cells = []
        for s in stages:
            es = [e for e in steps if e["family"] == f and e["stage"] == s]
            cells.append(f"{sum(float(e['core_s']) for e in es) / 3600:.2f} ({sum(int(e.get('cells', 0)) for e in es)})"
                         if es else "-")
        total = sum(float(e["core_s"]) for e in steps if e["family"] == f)
        out.append(f"| {'(per dataset)' if f == '*' else f} | " + " | ".join(cells) + f" | {total / 3600:.2f} |")
    out += ["", "| dataset | wall h | core-hours |", "| --- | --- | --- |"]
    for ds in dict.fromkeys(e["dataset"] for e in steps):
        es = [e for e in steps if e["dataset"] == ds]
        out.append(f"| {ds} | {_h(sum(float(e['wall_s']) for e in es))} | "
                   f"{sum(float(e['core_s']) for e in es) / 3600:.2f} |")
    return "\n".join(out) + "\n"


def site_cost_md(site: str | os.PathLike) -> str:
    """:func:`cost_md` of ``SITE/regeneration.json``."""
    return cost_md(load(Path(site) / "regeneration.json"))


__all__ = ["HEADING", "cost_md", "load", "site_cost_md"]
