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
#: the most bootstrap resamples an interval takes (each resamples every score; 10^5 already gives 3 stable digits)
MAX_BOOTSTRAP = 100_000
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
    p.add_argument("--data-root", metavar="DIR", help="the only folder searched for raw dataset files (default: "
                   "$BENCH_DATA_ROOT, else the user cache, then the bundled copies, then the stock download)")
    net = p.add_mutually_exclusive_group()
    net.add_argument("--download", action="store_true", help="download missing raw files into the user cache even "
                     "with --data-root, $BENCH_DATA_ROOT or $BENCH_OFFLINE set (needs network)")
    net.add_argument("--offline", action=_Offline, help="never download a dataset (the same as BENCH_OFFLINE=1)")


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


def accountant_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accountant", metavar="NAME",
                   help="the accountant that calibrates the noise and reports epsilon: tight (default), rdp, "
                        "rdp/standard, pld, or a registered one (`bench accountants list`, a plugin's) once it passes "
                        "the conformance suite on its whole corpus")


def noise_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--secure-noise", action="store_true",
                   help="draw the DP noise from OS entropy, never logged, so the run's record cannot regenerate "
                        "its noise (default: reproducible from the seed; the run logs which mode it used)")


def target_args(p: argparse.ArgumentParser, output_help: str = "also write the results as JSON",
                recorded: bool = False) -> None:
    """What picks the trained targets: methods, dataset, split, budget, seeds, overrides, device, output.
    ``recorded``: ``--run RUN_ID`` may name recorded runs instead of ``--method``/``--dataset`` (``bench attack``)."""
    list_arg(p, "--method", "-m", required=not recorded, metavar="M",
             help="method name(s), space- or comma-separated or repeated (see `bench list methods`)")
    p.add_argument("--dataset", "-d", required=not recorded,
                   help="dataset name, e.g. cora, computers, csbm:nodes=5000")
    if recorded:
        list_arg(p, "--run", dest="runs", default=[], metavar="RUN_ID",
                       help="attack the released model a tracked run logged (its MLflow artefact release/, checked "
                            "against the run's recorded posteriors) instead of training: no --method/--dataset")
    p.add_argument("--split", "-s", help="split name (default: public for Planetoid, ogb for ogbn-*, else random-75-10-15)")
    p.add_argument("--epsilon", "-e", type=_float, help="target epsilon for private methods ('inf' = no noise)")
    p.add_argument("--delta", type=_float, help="target delta (default: the largest power of ten below 1/#units)")
    list_arg(p, "--seeds", item=int, default=[0], metavar="SEED", help="seeds, e.g. 0 1 2 or 0,1,2 (default: 0)")
    list_arg(p, "--set", dest="overrides", commas=False, default=[], metavar="KEY=VALUE",
             help="hyperparameter override(s); 'method.key=value' targets one method (space-separated or repeated)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] (default: auto)")
    p.add_argument("--output", "-o", metavar="FILE", help=f"{output_help} (atomically; {FILE_RULE})")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    accountant_arg(p)
    noise_args(p)
    threads_arg(p)


def attack_args(p: argparse.ArgumentParser, required: bool) -> None:
    """``--attack``/``--attacks`` and the attack options (``bench attack``, ``bench run --attacks``)."""
    names = "threshold, shadow, lira, privgnn-attack1, privgnn-attack2, link-stealing, linkteller, or all"
    if required:
        list_arg(p, "--attack", "-a", dest="attacks", required=True, metavar="A",
                 help=f"attack name(s), space- or comma-separated or repeated ({names}; see `bench list attacks`)")
    else:
        list_arg(p, "--attacks", dest="attacks", default=[], metavar="A",
                 help=f"also run these membership-inference attacks on every trained model ({names})")
    list_arg(p, "--attack-set", dest="attack_overrides", commas=False, default=[], metavar="KEY=VALUE",
             help="attack option(s), e.g. references=4 or lira.references=4 (space-separated or repeated); "
                  "see `bench list ATTACK`")
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
                progress=not args.no_progress, secure_noise=args.secure_noise, threads=args.threads, log=stderr,
                accountant=args.accountant)


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
