"""Progress bars on long work, shown only when stderr is a terminal (a log file gets no carriage-return frames)."""

from __future__ import annotations

import os
import sys


def interactive() -> bool:
    """True when progress bars should draw: stderr is a terminal (``BENCH_PROGRESS=1`` forces them, ``0`` hides)."""
    forced = os.environ.get("BENCH_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False, disable=not (enabled and interactive()), dynamic_ncols=True)
