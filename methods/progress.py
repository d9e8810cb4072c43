"""Progress on long work: the one helper every loop that takes a while goes through (method fits via
``FitContext.bar``, attack reference and shadow models, sweep cells, audit and verification trials, PrivGNN
teachers).

Where stderr goes decides what it shows (:func:`progress_mode`):

* a terminal: a tqdm bar redrawn in place, cleared when the work ends;
* anything else (a log file, a pipe, CI): plain newline-terminated lines from the same tqdm, at most one every
  :data:`LINE_INTERVAL` seconds and the first after that long (work shorter than that prints nothing), then
  a closing line with the final count, e.g. ``lira references:  50% 4/8 [00:41<00:41, 10.2s/it]``;
* ``BENCH_PROGRESS=0``: nothing; ``BENCH_PROGRESS=1``: the bar even when stderr is not a terminal;
  ``BENCH_PROGRESS=lines``: the lines even on a terminal.

A caller's ``enabled=False`` (``--no-progress``) hides both.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, TextIO

#: seconds between two progress lines when stderr is not a terminal (and before the first one)
LINE_INTERVAL = 10.0
#: one progress line: what, how far, how long, how much longer (no bar: a log reads the numbers)
LINE_FORMAT = "{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]{postfix}"
#: the same without a known total
COUNT_FORMAT = "{desc}: {n_fmt} [{elapsed}, {rate_fmt}]{postfix}"


def progress_mode(enabled: bool = True, file: TextIO | None = None) -> str:
    """``"bar"``, ``"lines"`` or ``"off"`` for progress written to ``file`` (default: stderr); see the module
    docstring."""
    if not enabled:
        return "off"
    forced = os.environ.get("BENCH_PROGRESS", "").strip().lower()
    if forced == "0":
        return "off"
    if forced == "1":
        return "bar"
    if forced == "lines":
        return "lines"
    stream = sys.stderr if file is None else file
    try:
        return "bar" if stream.isatty() else "lines"
    except (AttributeError, ValueError):
        return "lines"


def interactive() -> bool:
    """True when progress is drawn as a bar (stderr is a terminal, or ``BENCH_PROGRESS=1``)."""
    return progress_mode() == "bar"


@functools.lru_cache(maxsize=None)
def _line_class():
    from tqdm.std import tqdm

    class LineProgress(tqdm):
        """tqdm for a log: every display is one newline-terminated line (no carriage return, no cursor moves, no
        clearing), shown only when the count moved and :data:`LINE_INTERVAL` passed since the previous line, so a
        ``set_postfix`` between two lines adds none and a ``tqdm.write`` (a finished sweep cell) never repeats a
        stale count after its own line."""

        @staticmethod
        def status_printer(file):
            def print_status(s: str) -> None:
                if s:
                    file.write(s + "\n")
                    getattr(file, "flush", lambda: None)()

            return print_status

        def display(self, msg=None, pos=None):
            if msg is not None:  # tqdm's own clearing calls: nothing to clear in a log
                return True
            now = self._time()
            start = getattr(self, "start_t", now)
            printed_t = getattr(self, "_line_t", None)
            if now - (start if printed_t is None else printed_t) < self.mininterval:
                return False
            if getattr(self, "_line_n", None) == self.n:
                return False
            self._line_t, self._line_n = now, self.n
            self.sp(self.__str__())
            return True

        def refresh(self, nolock=False, lock_args=None):
            if nolock:  # a redraw after tqdm.write (or tqdm's monitor thread): a log has no bar to restore
                return False
            return super().refresh(nolock=nolock, lock_args=lock_args)

        def clear(self, nolock=False):
            pass

        def moveto(self, n):
            pass

        def close(self):
            if self.disable:
                return
            if getattr(self, "_line_n", None) not in (None, self.n):  # a line was shown: show how it ended
                self._line_t = None
                self.mininterval = 0
                self.display()
            self.disable = True
            self._decr_instances(self)

        def __del__(self):  # dropped unclosed (an error unwound the loop): no closing line after the error's
            if not getattr(self, "disable", True):
                self.disable = True
                self._decr_instances(self)

    return LineProgress


def progress_bar(total: int, desc: str, enabled: bool = True, file: TextIO | None = None, **kwargs: Any):
    """A tqdm progress object for ``total`` steps of ``desc`` (``update``, ``set_postfix``, ``write``, ``close``
    work in every mode; hidden ones do nothing). ``file``: where it writes (default: stderr)."""
    from tqdm.std import tqdm

    mode = progress_mode(enabled, file)
    if mode == "off":
        return tqdm(total=total, desc=desc, disable=True)
    if mode == "bar":
        from tqdm.auto import tqdm as auto

        return auto(total=total, desc=desc, leave=False, dynamic_ncols=True, file=file, **kwargs)
    return _line_class()(total=total, desc=desc, file=sys.stderr if file is None else file, ascii=True,
                         mininterval=LINE_INTERVAL, delay=LINE_INTERVAL,
                         bar_format=LINE_FORMAT if total else COUNT_FORMAT, dynamic_ncols=False,
                         **kwargs)
