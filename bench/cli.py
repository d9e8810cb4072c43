"""``bench``: the command line. ``python -m bench --help`` lists the commands.

Each command lives in its own module (:data:`COMMAND_MODULES`) and is a thin layer over :mod:`bench.api`. Only
the module of the command being run is imported: ``bench --help`` reads the commands' names and one-line help
from their modules' source, and a command module imports nothing heavy until its handler runs.

Errors caused by input (unknown names, bad budgets, missing files, an unwritable ``--output``) print one line
starting with ``error:`` and exit with status 2 before any run is opened; a failure inside a run (marked FAILED
in MLflow) and any other unexpected error exit 1 (``--debug`` shows the traceback); Ctrl-C and SIGTERM exit
130/143 after marking open MLflow runs KILLED.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import signal
import sys
import warnings
from functools import lru_cache
from pathlib import Path

from bench.cliargs import COMMANDS, join_negative_numbers, list_arg
from bench.plugins import load_plugin
from bench.tracking import RunFailed
from methods.errors import BenchError

#: the modules that register commands (``bench.cliargs.command``), in ``--help`` order; a missing optional
#: module (a command another checkout does not have yet) is left out
COMMAND_MODULES = ("bench.commands.run", "bench.commands.list", "bench.account", "bench.commands.accountants",
                   "bench.perf", "bench.commands.audit", "bench.commands.verify", "bench.commands.sweep",
                   "bench.commands.leaderboard", "bench.commands.reproduce", "bench.commands.study")


# --------------------------------------------------------------------------------------
# Commands, registered lazily
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def command_index() -> dict[str, tuple[str, str]]:
    """``{command: (module, one-line help)}`` for every module of :data:`COMMAND_MODULES` that exists, read from
    its ``command("name", "help")`` calls without importing it (a module that declares its commands elsewhere,
    e.g. in a submodule, is imported to find them)."""
    index: dict[str, tuple[str, str]] = {}
    for module in COMMAND_MODULES:
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        found = _declared_commands(spec.origin)
        if not found:
            importlib.import_module(module)
            found = [(name, text) for name, (builder, text) in COMMANDS.items()
                     if builder.__module__ == module or builder.__module__.startswith(module + ".")]
        for name, text in found:
            index.setdefault(name, (module, text))
    return index


def _declared_commands(origin: str | None) -> list[tuple[str, str]]:
    try:
        tree = ast.parse(Path(origin or "").read_text())
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "command":
            args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(args) >= 2:
                out.append((args[0], args[1]))
    return out


class _Version(argparse.Action):
    """``--version``: :func:`bench.version.current`, computed only when asked (it runs git)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from bench.version import current

        print(f"bench {current()}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``bench`` parser. Only ``command``'s module is imported and its real parser built; every other command
    is a placeholder with its help line (enough for ``bench --help`` and for choosing the command)."""
    parser = argparse.ArgumentParser(
        prog="bench", description="Audited benchmark suite for differentially private graph neural networks.")
    # one value per --plugin (commas split it): a space-separated list would swallow the command's name
    list_arg(parser, "--plugin", nargs=None, default=[], metavar="FILE_OR_MODULE",
             help="import modules or .py files that register extra methods (comma-separated or repeated; before the "
                  "command)")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the version (off a release: +<commits since it>.g<commit>) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    sub.required = True
    for name, (module, help_text) in command_index().items():
        if name == command:
            importlib.import_module(module)
            COMMANDS[name][0](sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def command_of(argv: list[str]) -> str | None:
    """The command an argument list names (the first word that is not an option or ``--plugin``'s value)."""
    skip = False
    for tok in argv:
        if skip:
            skip = False
        elif tok == "--plugin":
            skip = True
        elif not tok.startswith("-"):
            return tok
    return None


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def _sigterm(signum, frame):
    raise SystemExit(143)


def _one_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else ""


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """The suite's own warnings (:class:`~methods.errors.BenchWarning`) as one ``warning:`` line; others as usual."""
    from methods.errors import BenchWarning

    if issubclass(category, BenchWarning):
        print(f"warning: {message}", file=sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def _stdout_closed() -> bool:
    """Whether standard output's reader has gone; if so stdout is pointed at the null device, so that the
    interpreter's own flush at exit does not fail again."""
    import select

    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        closed = any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poll.poll(0))  # a pipe without reader
    except (OSError, ValueError, AttributeError):  # no real stdout (captured, or no poll on this platform)
        return False
    if closed:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return closed


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    argv = join_negative_numbers(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(command_of(argv))
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _sigterm)
    try:
        for plugin in args.plugin:
            load_plugin(plugin)
        return int(args.func(args) or 0)
    except BenchError as e:  # rejected before any run opened
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError as e:
        if _stdout_closed():  # the reader closed the pipe (`bench list | head`): it has what it wanted
            return 141  # 128 + SIGPIPE, as a shell reports a writer the pipe closed on
        if args.debug:
            raise
        print(f"error: {type(e).__name__}: {_one_line(e)} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1
    except RunFailed as e:  # failed inside a run: the run is FAILED in MLflow
        if args.debug:
            raise
        print(f"error: {_one_line(e)} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1
    except Exception as e:  # one line, not a traceback from deep inside torch
        if args.debug:
            raise
        print(f"error: {type(e).__name__}: {_one_line(e)} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
