"""The command-line building blocks every ``bench`` command shares: the command registry and argument groups.

A leaf module (argparse only): command modules import it, it imports none of them, so the CLI's import graph
has no cycle and building a parser loads no torch.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import Any, Callable

from bench import DEFAULT_EXPERIMENT

COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], argparse.ArgumentParser], str]] = {}
#: ``bench attack --bootstrap``'s default (attacks.metrics.DEFAULT_BOOTSTRAP; not imported: it loads torch)
DEFAULT_BOOTSTRAP = 1000

#: a number argparse would otherwise take for an option (``-1e-5``, ``-inf``)
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|infinity|nan)$", re.IGNORECASE)


#: the rule of every output option, as its ``--help`` ends (checked by :mod:`bench.io` before any work):
#: a file's folder must already exist (a typo never becomes a new folder tree); a folder may be new, not its parent
FILE_RULE = "its folder must exist"
DIR_RULE = "created if missing; its parent folder must exist"


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


class _Offline(argparse.Action):
    """``--offline``: ``BENCH_OFFLINE=1`` for this process and the ones it starts (the dataset search reads it)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        os.environ["BENCH_OFFLINE"] = "1"
        setattr(namespace, self.dest, True)


def data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-root", metavar="DIR", help="the only folder searched for raw dataset files (default: "
                   "$BENCH_DATA_ROOT, else the user cache, then the bundled copies, then the stock download)")
    net = p.add_mutually_exclusive_group()
    net.add_argument("--download", action="store_true", help="download missing raw files into the user cache even "
                     "with --data-root, $BENCH_DATA_ROOT or $BENCH_OFFLINE set (needs network)")
    net.add_argument("--offline", action=_Offline, help="never download a dataset (the same as BENCH_OFFLINE=1)")


def threads_arg(p: argparse.ArgumentParser, help_text: str = "torch and numba threads (default 0: every core of "
                                                               "this machine)") -> None:
    p.add_argument("--threads", type=int, default=0, metavar="N", help=help_text)


def noise_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--secure-noise", action="store_true",
                   help="draw the DP noise from OS entropy, never logged, so the run's record cannot regenerate "
                        "its noise (default: reproducible from the seed; the run logs which mode it used)")


def target_args(p: argparse.ArgumentParser, output_help: str = "also write the results as JSON",
                recorded: bool = False) -> None:
    """What picks the trained targets: methods, dataset, split, budget, seeds, overrides, device, output.
    ``recorded``: ``--run RUN_ID`` may name recorded runs instead of ``--method``/``--dataset`` (``bench attack``)."""
    p.add_argument("--method", "-m", action="append", required=not recorded, metavar="M[,M...]",
                   help="method name(s), comma-separated or repeated (see `bench list methods`)")
    p.add_argument("--dataset", "-d", required=not recorded,
                   help="dataset name, e.g. cora, computers, csbm:nodes=5000")
    if recorded:
        p.add_argument("--run", dest="runs", action="append", default=[], metavar="RUN_ID[,RUN_ID...]",
                       help="attack the released model a tracked run logged (its MLflow artefact release/, checked "
                            "against the run's recorded posteriors) instead of training: no --method/--dataset")
    p.add_argument("--split", "-s", help="split name (default: public for Planetoid, ogb for ogbn-*, else random-75-10-15)")
    p.add_argument("--epsilon", "-e", type=_float, help="target epsilon for private methods ('inf' = no noise)")
    p.add_argument("--delta", type=_float, help="target delta (default: the largest power of ten below 1/#units)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], metavar="SEED", help="seeds (default: 0)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="hyperparameter override; 'method.key=value' targets one method (repeatable)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] (default: auto)")
    p.add_argument("--output", "-o", metavar="FILE", help=f"{output_help} (atomically; {FILE_RULE})")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    noise_args(p)
    threads_arg(p)


def attack_args(p: argparse.ArgumentParser, required: bool) -> None:
    """``--attack``/``--attacks`` and the attack options (``bench attack``, ``bench run --attacks``)."""
    names = "threshold, shadow, lira, privgnn-attack1, privgnn-attack2, link-stealing, linkteller, or all"
    if required:
        p.add_argument("--attack", "-a", dest="attacks", action="append", required=True, metavar="A[,A...]",
                       help=f"attack name(s), comma-separated or repeated ({names}; see `bench list attacks`)")
    else:
        p.add_argument("--attacks", dest="attacks", action="append", default=[], metavar="A[,A...]",
                       help=f"also run these membership-inference attacks on every trained model ({names})")
    p.add_argument("--attack-set", dest="attack_overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="attack option, e.g. references=4 or lira.references=4 (repeatable); see `bench list ATTACK`")
    p.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP,
                   help="bootstrap resamples for the 95%% intervals (default: %(default)s; 0 = none)")
    p.add_argument("--plot-dir", metavar="DIR", help=f"also save every ROC plot as a PNG in DIR ({DIR_RULE})")


def tracking_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help="MLflow experiment name (default: %(default)s)")
    p.add_argument("--no-track", action="store_true", help="do not log to MLflow")


def job_args(p: argparse.ArgumentParser, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """The tail every command that trains shares: where the data is, where runs are logged, and its handler."""
    data_args(p)
    tracking_args(p)
    p.set_defaults(func=handler)
    return p


def target_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`bench.api.run` arguments of what ``target_args``, ``data_args`` and ``tracking_args`` parsed."""
    return dict(methods=args.method, dataset=args.dataset, split=args.split, seeds=args.seeds, epsilon=args.epsilon,
                delta=args.delta, overrides=args.overrides, device=args.device, data_root=args.data_root,
                download=args.download, experiment=args.experiment, track=not args.no_track,
                progress=not args.no_progress, secure_noise=args.secure_noise, threads=args.threads, log=stderr)


def check_common(args: argparse.Namespace) -> None:
    """What most commands share, checked before any work (a :class:`~methods.errors.ConfigError`, exit 2):
    ``--experiment`` is a name, ``--data-root`` an existing folder, ``--threads`` >= 0."""
    from methods.errors import ConfigError

    experiment = getattr(args, "experiment", None)
    if experiment is not None and not str(experiment).strip():
        raise ConfigError("--experiment must be a non-empty name")
    root = getattr(args, "data_root", None)
    if root is not None and not os.path.isdir(os.path.expanduser(root)):
        raise ConfigError(f"--data-root {root} does not exist or is not a folder")
    threads = getattr(args, "threads", None)
    if threads is not None and threads < 0:
        raise ConfigError(f"--threads must be >= 0 (got {threads})")


def stderr(line: str) -> None:
    """A progress line on stderr (stdout is for tables and JSON)."""
    print(line, file=sys.stderr, flush=True)
