"""The command-line building blocks every ``bench`` command shares: the command registry and argument groups.

A leaf module (argparse only): command modules import it, it imports none of them, so the CLI's import graph
has no cycle and ``bench --help`` loads no torch.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Callable

COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], argparse.ArgumentParser], str]] = {}

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


def data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-root", metavar="DIR", help="raw dataset folder (default: $BENCH_DATA_ROOT, else the cache)")
    p.add_argument("--download", action="store_true", help="download missing raw files into the cache (needs network)")


def threads_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch and numba threads (default 0: every core of this machine)")


def noise_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--secure-noise", action="store_true",
                   help="draw the DP noise from OS entropy, never logged, so the run's record cannot regenerate "
                        "its noise (default: reproducible from the seed; the run logs which mode it used)")


def target_args(p: argparse.ArgumentParser, output_help: str = "also write the results as JSON") -> None:
    """What picks the trained targets: methods, dataset, split, budget, seeds, overrides, device, output."""
    p.add_argument("--method", "-m", action="append", required=True, metavar="M[,M...]",
                   help="method name(s), comma-separated or repeated (see `bench list methods`)")
    p.add_argument("--dataset", "-d", required=True, help="dataset name, e.g. cora, computers, csbm:nodes=5000")
    p.add_argument("--split", "-s", help="split name (default: public for Planetoid, ogb for ogbn-*, else random-75-10-15)")
    p.add_argument("--epsilon", "-e", type=_float, help="target epsilon for private methods ('inf' = no noise)")
    p.add_argument("--delta", type=_float, help="target delta (default: the largest power of ten below 1/#units)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], metavar="SEED", help="seeds (default: 0)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="hyperparameter override; 'method.key=value' targets one method (repeatable)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] (default: auto)")
    p.add_argument("--output", "-o", metavar="FILE", help=output_help)
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    noise_args(p)
    threads_arg(p)


def tracking_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experiment", default="dp-gnn-bench", help="MLflow experiment name (default: %(default)s)")
    p.add_argument("--no-track", action="store_true", help="do not log to MLflow")
