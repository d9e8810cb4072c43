"""The command-line building blocks every ``bench`` command shares: the command registry, the flags generated from
a request type's fields (:func:`request_args`) and the list syntax.

Near a leaf (argparse and :mod:`bench.request`): command modules import it, it imports none of them, so the CLI's
import graph has no cycle and building a parser loads no torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import sys
from typing import Any, Callable

from bench.request import DIR_RULE, FILE_RULE  # noqa: F401  (re-exported: the output options' rules)

COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], argparse.ArgumentParser], str]] = {}
#: the most bootstrap resamples an interval takes (each resamples every score; 10^5 already gives 3 stable digits)
MAX_BOOTSTRAP = 100_000

#: a number argparse would otherwise take for an option (``-1e-5``, ``-inf``)
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|infinity|nan)$", re.IGNORECASE)




def command(name: str, help_text: str):
    """Register ``fn(subparsers) -> parser`` as the builder of one subcommand."""

    def deco(fn):
        COMMANDS[name] = (fn, help_text)
        return fn

    return deco


def _float(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None


def join_negative_numbers(argv: list[str]) -> list[str]:
    """``--delta -1e-5`` -> ``--delta=-1e-5``: argparse reads a negative number in scientific notation as an
    option, so the value would be lost before our validation could reject it with a clear message."""
    out: list[str] = []
    for tok in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE_NUMBER.match(tok):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def fmt_eps(x: float) -> str:
    """An epsilon as tables print it: ``inf`` for no guarantee (never 1e308)."""
    return "inf" if not math.isfinite(x) or x >= 1e307 else f"{x:.4g}"


def split_items(text: str) -> list[str]:
    """``"gcn,sage"`` -> ``["gcn", "sage"]``; a ``key=value`` piece after a name with options stays with it, so a
    dataset keeps its own commas: ``"csbm:nodes=500,classes=3,cora"`` -> ``["csbm:nodes=500,classes=3", "cora"]``."""
    out: list[str] = []
    for piece in (p.strip() for p in str(text).split(",")):
        if not piece:
            continue
        if out and ":" in out[-1] and "=" in piece and ":" not in piece:
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


class ListAction(argparse.Action):
    """The one list syntax of the CLI: values space-separated (``--seeds 0 1``), comma-separated (``--seeds 0,1``),
    repeated (``--seeds 0 --seeds 1``) or mixed; the option's default is replaced, not extended. ``item`` converts
    each value; ``commas=False`` for ``KEY=VALUE`` options, whose values may hold commas. Add one with
    :func:`list_arg`."""

    def __init__(self, option_strings, dest, item: Callable[[str], Any] = str, commas: bool = True, nargs="+",
                 **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)
        self.item, self.commas = item, commas

    def __call__(self, parser, namespace, values, option_string=None):
        current = getattr(namespace, self.dest, None)
        items = [] if current is None or current is self.default else list(current)
        for value in [values] if isinstance(values, str) else values:
            for piece in split_items(value) if self.commas else [value]:
                try:
                    items.append(self.item(piece))
                except (TypeError, ValueError, argparse.ArgumentTypeError):
                    kind = getattr(self.item, "__name__", "")
                    raise argparse.ArgumentError(self, f"invalid {kind} value: {piece!r}") from None
        setattr(namespace, self.dest, items)


def list_arg(p, *flags: str, item: Callable[[str], Any] = str, commas: bool = True, **kwargs) -> argparse.Action:
    """Add a list-valued option (or positional) that takes :class:`ListAction`'s syntax; every list option of the
    CLI is one (tests/test_cli_lists.py walks the parsers)."""
    return p.add_argument(*flags, action=ListAction, item=item, commas=commas, **kwargs)


class _Offline(argparse.Action):
    """``--offline``: ``BENCH_OFFLINE=1`` for this process and the ones it starts (the dataset search reads it)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        os.environ["BENCH_OFFLINE"] = "1"
        setattr(namespace, self.dest, True)


def data_args(p: argparse.ArgumentParser) -> None:
    """``--data-root`` and ``--download`` (the run request's fields), and ``--offline`` beside ``--download``."""
    from bench.request import RunSpec

    request_args(p, RunSpec, only=("data_root", "download"))


def request_args(p: argparse.ArgumentParser, cls: type, *, only: tuple[str, ...] | None = None,
                 skip: tuple[str, ...] = (), flags: dict[str, tuple[str, ...]] | None = None,
                 helps: dict[str, str] | None = None, required: dict[str, bool] | None = None,
                 groups: dict[str, Any] | None = None) -> None:
    """Add the flags of a request type's fields (:func:`bench.request.flat_fields`: a field's type, default, help,
    choices and list syntax are declared once, where the field is): every field the command line sets, or those in
    ``only``, less ``skip``; ``flags``, ``helps`` and ``required`` change one command's variant of a field (``bench
    attack``'s ``--attack/-a``); ``groups``: mutually exclusive groups the command made, by a field's group name (a
    flag of its own joins the field's). ``--offline`` joins ``--download``'s group."""
    import typing

    from bench.request import flat_fields

    groups = {k: v for k, v in (groups or {}).items() if v is not None}
    hints = _hints(cls)
    for f in flat_fields(cls):
        if not f.meta.get("cli") or f.name in skip or (only is not None and f.name not in only):
            continue
        strings = (flags or {}).get(f.name) or f.meta.get("flags") or ("--" + f.name.replace("_", "-"),)
        text = (helps or {}).get(f.name, f.help)
        if not strings[0].startswith("-"):  # a positional argument: its name is the field's
            p.add_argument(f.name, help=text, **({"metavar": f.meta.get("metavar")} if f.meta.get("metavar") else {}))
            continue
        group = f.meta.get("group")
        target = p
        if group:
            target = groups.get(group) or groups.setdefault(group, p.add_mutually_exclusive_group())
        kw: dict[str, Any] = {"dest": f.name, "help": text}
        if f.meta.get("negate"):
            target.add_argument(f.meta.get("negate"), action="store_false", default=True, **kw)
            continue
        default = f.default
        if default is False and not f.meta.get("many"):
            target.add_argument(*strings, action="store_true", **kw)
            if group == "network":
                target.add_argument("--offline", action=_Offline, help="never download a dataset (the same as "
                                                                        "BENCH_OFFLINE=1)")
            continue
        if f.meta.get("metavar"):
            kw["metavar"] = f.meta.get("metavar")
        if f.meta.get("choices"):
            kw["choices"] = list(f.meta.get("choices"))
        kw["required"] = (required or {}).get(f.name, f.required)
        tp = hints.get(f.field.name)
        args = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
        base = args[0]
        if f.meta.get("many") and not f.single:
            item = f.meta.get("parse") or (int if typing.get_args(base) == (int,) else str)
            list_arg(target, *strings, item=item, commas=f.meta.get("commas"),
                     default=None if default is dataclasses.MISSING else default, **kw)
            continue
        if f.single:
            base = typing.get_args(base)[0] if typing.get_args(base) else str
        parse = f.meta.get("parse") or {float: _float, int: int}.get(base)
        if parse is not None:
            kw["type"] = parse
        target.add_argument(*strings, default=None if default is dataclasses.MISSING else default, **kw)


def _hints(cls: type) -> dict[str, Any]:
    import typing

    from bench.request import RunSpec

    return {**typing.get_type_hints(RunSpec), **typing.get_type_hints(cls)}


def request_kwargs(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The flat arguments of ``cls`` that a command line parsed (:func:`bench.request.build` takes them)."""
    from bench.request import flat_fields

    return {f.name: getattr(args, f.name) for f in flat_fields(cls) if hasattr(args, f.name)}


#: the thread count a job runs with unless told: one. The suite's models are small (a full-batch GCN on Cora, a
#: DP-SGD step of a few thousand examples), so a second thread buys little on an idle machine and costs much on a
#: shared one: ``bench perf fit --device cpu --threads 1 --reference cpu --reference-threads 2`` on 2 cores at load
#: 3-4, Cora: dp-mlp 3.2 s vs 13.4 s, gap-edge 1.3 s vs 67.1 s, gcn 2.0 s vs 6.0 s, dpgnn-adam 3.6 s vs 17.7 s
DEFAULT_THREADS = 1
#: the most threads a job may ask for (torch reads the count as a C int; more than this only contends)
MAX_THREADS = 1024


def threads_arg(p: argparse.ArgumentParser, help_text: str = "torch and numba threads (default 1, fastest for the "
                                                               "suite's small models, on a shared machine most of "
                                                               "all; 0: every core of this machine)") -> None:
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, metavar="N", help=help_text)


def job_args(p: argparse.ArgumentParser, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """The tail every command that trains shares: ``--threads`` and its handler."""
    threads_arg(p)
    p.set_defaults(func=handler)
    return p


def check_common(args: argparse.Namespace) -> None:
    """What most commands share, checked before any work (a :class:`~methods.errors.ConfigError`, exit 2):
    ``--experiment`` is a name, ``--data-root`` an existing folder, ``--threads`` in [0, :data:`MAX_THREADS`]."""
    from methods.errors import ConfigError

    experiment = getattr(args, "experiment", None)
    if experiment is not None and not str(experiment).strip():
        raise ConfigError("--experiment must be a non-empty name")
    root = getattr(args, "data_root", None)
    if root is not None and not os.path.isdir(os.path.expanduser(root)):
        raise ConfigError(f"--data-root {root} does not exist or is not a folder")
    check_threads(getattr(args, "threads", None))
    bootstrap = getattr(args, "bootstrap", None)
    if bootstrap is not None:
        check_bootstrap(bootstrap)


def check_threads(threads: int | None, error: type[Exception] | None = None) -> None:
    """``--threads`` in [0, :data:`MAX_THREADS`] (None: leave the counts as they are); ``error`` the
    :class:`~methods.errors.BenchError` subclass to raise (default :class:`~methods.errors.ConfigError`)."""
    from methods.errors import ConfigError

    if threads is not None and not 0 <= threads <= MAX_THREADS:
        raise (error or ConfigError)(f"--threads must be >= 0 and at most {MAX_THREADS} (got {threads})")


def check_bootstrap(bootstrap: int) -> None:
    """Bootstrap resamples in [0, :data:`MAX_BOOTSTRAP`] (a :class:`~methods.errors.ConfigError`), with or without
    an attack to use them."""
    from methods.errors import ConfigError

    if not 0 <= bootstrap <= MAX_BOOTSTRAP:
        raise ConfigError(f"--bootstrap must be >= 0 and at most {MAX_BOOTSTRAP} (got {bootstrap}; 0 = no interval)")


def stderr(line: str) -> None:
    """A progress line on stderr (stdout is for tables and JSON)."""
    print(line, file=sys.stderr, flush=True)
