"""Output: plain-text tables and atomic writers. A leaf module (standard library only).

Every file the harness writes (``--output`` JSON, leaderboards, ROC plots) goes through a temporary file in the
target folder and a rename, so a crash or Ctrl-C never leaves half a file; :func:`check_writable` refuses a path
that cannot be written before anything is trained.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from methods.errors import ConfigError


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns separated by two spaces, with a dashed rule under the header."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def check_writable(path: str | os.PathLike | None, option: str = "--output", directory_ok: bool = False) -> None:
    """Refuse an output path that cannot be written, before anything is trained (a :class:`ConfigError`).
    ``directory_ok``: a directory is a valid target (a sharded export) when it is writable."""
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        if not directory_ok:
            raise ConfigError(f"{option} {path} is a directory; give a file name")
        if not os.access(p, os.W_OK | os.X_OK):
            raise ConfigError(f"{option} {path}: cannot write in {p}")
        return
    probe = p.parent if str(p.parent) else Path(".")
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: cannot write in {probe}")
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"{option} {path}: the file is not writable")


def write_atomic(path: str | os.PathLike, write: Callable[[str], None], suffix: str = ".tmp") -> None:
    """Call ``write(tmp_path)``, then rename the temporary file onto ``path`` (removed if anything fails)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    write_atomic(path, lambda tmp: Path(tmp).write_text(text))


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    """JSON (indented; anything else as ``str``), written atomically."""
    write_text_atomic(path, json.dumps(obj, indent=2, default=str))


def save_figure_atomic(fig: Any, path: str | os.PathLike, dpi: int = 110) -> None:
    """A matplotlib figure as PNG, written atomically."""
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format="png"), suffix=".png")


__all__ = ["check_writable", "format_table", "save_figure_atomic", "write_atomic", "write_json_atomic",
           "write_text_atomic"]
