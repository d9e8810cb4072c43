"""Output: plain-text tables and atomic writers. A leaf module (standard library only).

Every file the harness writes (``--output`` JSON, leaderboards, ROC plots) goes through a temporary file in the
target folder and a rename, so a crash or Ctrl-C never leaves half a file. Before anything is trained, the
commands check every path they were given: an output file's folder must already exist and be writable (proven
by creating and removing a probe file; :func:`check_output_file`), an output folder is new or writable and its
parent exists (:func:`check_output_dir`), an input exists (:func:`check_input`, ``not found`` otherwise).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from methods.errors import ConfigError


#: set (to anything but 0) to never wrap tables, whatever the terminal's width
WIDE_ENV = "BENCH_WIDE"
#: a wrapped column keeps at least this many characters (and its header's longest word; a narrower column as is)
MIN_COLUMN = 8


def table_width() -> int | None:
    """The width tables wrap to: the terminal's (``COLUMNS`` first) when stdout is one and :data:`WIDE_ENV` is not
    set; None (never wrap: a pipe or a file gets whole lines) otherwise."""
    import shutil
    import sys

    if os.environ.get(WIDE_ENV, "0") not in ("", "0") or not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((80, 24)).columns


def _fit_widths(widths: list[int], floors: list[int], avail: int) -> list[int]:
    """Narrow the widest columns, one character at a time, until they fit ``avail`` or reach their floors."""
    widths = list(widths)
    while sum(widths) > avail:
        i = max(range(len(widths)), key=lambda k: (widths[k] - floors[k] > 0, widths[k]))
        if widths[i] <= floors[i]:
            break
        widths[i] -= 1
    return widths


def format_table(header: list[str], rows: list[list[str]], width: int | None = -1) -> str:
    """Left-aligned columns separated by two spaces, with a dashed rule under the header. A table wider than
    ``width`` (default :func:`table_width`: the terminal's; None: never) wraps its widest cells onto more lines,
    at spaces where it can."""
    import textwrap

    width = table_width() if width == -1 else width
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(*cells)]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        floors = [min(w, max([MIN_COLUMN, *(len(word) for word in h.split())])) for w, h in zip(widths, cells[0])]
        widths = _fit_widths(widths, floors, width - 2 * (len(widths) - 1))

    def lines(row: list[str]) -> list[str]:
        parts = [textwrap.wrap(c, w, break_long_words=True, break_on_hyphens=False) or [""] if len(c) > w else [c]
                 for c, w in zip(row, widths)]
        return ["  ".join((p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths)).rstrip()
                for k in range(max(len(p) for p in parts))]

    out = lines(cells[0]) + ["  ".join("-" * w for w in widths).rstrip()]
    for r in cells[1:]:
        out += lines(r)
    return "\n".join(out)


def _probe(folder: Path) -> str | None:
    """Why a file cannot be created in the existing folder ``folder`` (None: it can). Proven, not guessed from
    permission bits: a probe file is created and removed (``/proc`` and read-only mounts pass ``os.access``)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".bench-probe-")
    except OSError as e:
        return f"cannot create a file there: {e.strerror or e}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    return None


def _writable_folder(folder: Path, option: str, path: str | os.PathLike, *, parents: bool = False) -> None:
    """``folder`` exists (or, with ``parents``, its nearest existing ancestor does), is a folder and can be
    written in; a :class:`ConfigError` naming ``option`` otherwise."""
    probe = folder
    if parents:
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
    if not probe.exists():
        raise ConfigError(f"{option} {path}: cannot write in {folder} (no such folder; create it first)")
    if not probe.is_dir():
        raise ConfigError(f"{option} {path}: cannot write in {probe} (not a folder)")
    why = _probe(probe)
    if why:
        raise ConfigError(f"{option} {path}: cannot write in {probe} ({why})")


def check_output_file(path: str | os.PathLike | None, option: str = "--output") -> None:
    """An output file: its folder must exist and be writable; the file itself may be new, or an existing regular
    file (replaced atomically), never a folder or a device. A :class:`ConfigError` otherwise, before any work."""
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{option} {path} is a directory; give a file name")
    if p.exists() and not p.is_file():
        raise ConfigError(f"{option} {path} is not a regular file")
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"{option} {path}: the file is not writable")
    _writable_folder(p.parent if str(p.parent) else Path("."), option, path)


def check_output_dir(path: str | os.PathLike | None, option: str, *, parents: bool = False) -> None:
    """An output folder (``--site``, ``--plot-dir``, a sharded export ``DIR/``): an existing writable folder, or
    a new one whose parent exists and is writable (it is created when the first file is written). ``parents``: a
    cache folder, created with any missing parents (its nearest existing ancestor must be writable)."""
    if not path:
        return
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise ConfigError(f"{option} {path} is not a folder")
        _writable_folder(p, option, path)
        return
    _writable_folder(p.parent if str(p.parent) else Path("."), option, path, parents=parents)


def check_input(path: str | os.PathLike | None, option: str, kind: str = "file") -> None:
    """An input the command reads: it must exist (``not found`` otherwise); ``kind``: ``file``, ``folder`` or
    ``any`` (a file or a folder, e.g. an export)."""
    if not path:
        return
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{option} {path} not found")
    if kind == "file" and p.is_dir():
        raise ConfigError(f"{option} {path} is a folder, not a file")
    if kind == "folder" and not p.is_dir():
        raise ConfigError(f"{option} {path} is not a folder")


def check_writable(path: str | os.PathLike | None, option: str = "--output", directory_ok: bool = False) -> None:
    """Refuse an output path that cannot be written, before anything is trained (a :class:`ConfigError`).
    ``directory_ok``: the path may also name a folder (an existing one, or one given with a trailing slash: a
    sharded export), checked as :func:`check_output_dir`; otherwise it is a file (:func:`check_output_file`)."""
    if not path:
        return
    if directory_ok and (Path(path).is_dir() or str(path).endswith(("/", os.sep))):
        check_output_dir(path, option)
    else:
        check_output_file(path, option)


def _umask() -> int:
    """The process's umask, read without changing it where the system says it (Linux), else set and restored."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, write: Callable[[str], None], suffix: str = ".tmp") -> None:
    """Call ``write(tmp_path)``, then rename the temporary file onto ``path`` (removed if anything fails). The file
    gets the mode a plain ``open(path, "w")`` would give it (the umask's; a replaced file's own), not the
    temporary file's private 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        write(tmp)
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
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


__all__ = ["WIDE_ENV", "check_input", "check_output_dir", "check_output_file", "check_writable", "format_table",
           "save_figure_atomic", "table_width", "write_atomic", "write_json_atomic", "write_text_atomic"]
