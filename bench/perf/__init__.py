"""``bench perf``: speed benchmarks, each reported as ratios against a reference measured in the same run.

    bench perf dpsgd          one DP-SGD step vs the non-private step on the same batch (dense or sparse input)
    bench perf dpgnn-fit      a whole DP-GNN fit vs its non-private twin (same trees and batches, no clipping/noise)
    bench perf dpgnn-sampler  DP-GNN's degree-bounded sampler vs the pseudo-code in plain Python
    bench perf drw-sampler    the disjoint-random-walk sampler vs the pseudo-code (coalesced and shuffled edges)
    bench perf privgnn        PrivGNN teachers per second: this code vs the one-by-one PyG loop
    bench perf fit            whole fits per method family on a device (cuda) vs a reference (2-thread cpu)
    bench perf scale          fit seconds and peak RSS per method family on csbm graphs from 10k to 2.4M nodes
    bench perf audits         the mechanism-level audits (nine kinds x four epsilons): total seconds, every bound
    bench perf whitebox       the pooled white-box DP-SGD audit: runs in worker processes vs one after another
    bench perf all            every ratio above at small sizes, in one run and one table

Each benchmark lives in its own module of this package and registers itself with :func:`benchmark`. Every one
prints a table (``--json``: one JSON object on stdout instead) with the torch threads and the machine's load
average at the start and the end, since absolute seconds on a shared machine mean little: compare the ratios.
``--baseline-rev REV`` (where offered) also runs the same benchmark from git revision REV of this repository in
a subprocess, in the same invocation, for a before/after comparison.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from bench.cliargs import COMMANDS, command
from bench.io import format_table  # noqa: F401 - re-exported: the benchmarks print their tables with it

#: the benchmark modules of this package, imported when ``bench perf`` builds its parser
MODULES = ("dpsgd", "dpgnn_fit", "dpgnn_sampler", "drw_sampler", "privgnn", "fit", "scale", "audits", "whitebox",
           "summary")

BENCHMARKS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], tuple[str, ...]]] = {}

REPO = Path(__file__).resolve().parents[2]


def benchmark(name: str, help_text: str, aliases: tuple[str, ...] = ()):
    """Register ``configure(parser)`` (adds arguments, sets ``func``) as ``bench perf NAME``."""

    def deco(configure):
        BENCHMARKS[name] = (help_text, configure, tuple(aliases))
        return configure

    return deco


@command("perf", "speed benchmarks (ratios against a reference measured in the same run)")
def _perf_parser(sub) -> argparse.ArgumentParser:
    for mod in MODULES:
        importlib.import_module(f"{__name__}.{mod}")
    p = sub.add_parser("perf", help=COMMANDS["perf"][1], description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", title="benchmarks")
    which.required = True
    for name, (help_text, configure, aliases) in BENCHMARKS.items():
        q = which.add_parser(name, help=help_text, aliases=list(aliases), description=help_text)
        configure(q)
        q.set_defaults(func=_checked(q.get_default("func")))
    return p


# --------------------------------------------------------------------------------------
# argument checks shared by the benchmarks (before anything is timed)
# --------------------------------------------------------------------------------------

#: the smallest value of the integer options the benchmarks share (where a benchmark has one)
AT_LEAST = {"threads": 0, "rounds": 1, "repeats": 1, "seed": 0, "reference_threads": 1, "max_degree": 0,
            "layers": 0, "max_children": 0, "walk_length": 0, "restarts": 1, "batch": 1, "nodes": 1, "features": 1,
            "hidden": 1, "teachers": 1, "classes": 1, "private": 1, "queries": 1, "teacher_batch": 1, "epochs": 1,
            "workers": 1}
#: float options that must be positive
POSITIVE = ("min_run_time", "epsilon")


def _checked(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``run`` after :func:`check_args`."""

    def checked(args: argparse.Namespace) -> int:
        check_args(args)
        return run(args)

    checked.__wrapped__ = run  # type: ignore[attr-defined]
    return checked


def check_args(args: argparse.Namespace) -> None:
    """Bad input to a benchmark is one ``error:`` line (exit 2) before anything is timed: counts and scales in
    range, known methods, datasets, splits and devices, an existing ``--data-root`` and a ``--baseline-rev`` that
    names a commit of this repository."""
    from methods.errors import ConfigError

    for name, low in AT_LEAST.items():
        value = getattr(args, name, None)
        if isinstance(value, int) and value < low:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= {low} (got {value})")
    for name in POSITIVE:
        value = getattr(args, name, None)
        if isinstance(value, float) and not value > 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be > 0 (got {value})")
    delta = getattr(args, "delta", None)
    if delta is not None and not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1) (got {delta})")
    root = getattr(args, "data_root", None)
    if root is not None and not os.path.isdir(os.path.expanduser(root)):
        raise ConfigError(f"--data-root {root} does not exist or is not a folder")
    names = [getattr(args, "dataset", None)] + list(getattr(args, "datasets", None) or [])
    if any(names):
        from bench.datasets.registry import parse_dataset_name

        for name in filter(None, names):
            parse_dataset_name(name)
    split = getattr(args, "split", None)
    if split:
        from bench.splits import SPLITS

        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; available: {', '.join(SPLITS)}")
    for name in getattr(args, "methods", None) or []:
        from methods.base import get_method

        get_method(name)
    for option in ("device", "reference"):
        device = getattr(args, option, None)
        if device and not (option == "reference" and device == "none"):
            name = device.lower()
            if name not in ("auto", "cpu") and not re.fullmatch(r"cuda(:\d+)?", name):
                raise ConfigError(f"unknown --{option} {device!r}; use cpu or cuda[:N]"
                                  + (" (or none)" if option == "reference" else ""))
    rev = getattr(args, "baseline_rev", None)
    if rev:
        try:
            found = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                                   capture_output=True, text=True).returncode
        except OSError as e:
            raise ConfigError(f"--baseline-rev needs git ({e})") from None
        if found != 0:
            raise ConfigError(f"--baseline-rev {rev} is not a commit of this repository ({REPO})")


# --------------------------------------------------------------------------------------
# helpers shared by the benchmarks
# --------------------------------------------------------------------------------------


def common_args(q: argparse.ArgumentParser, baseline: bool = True) -> None:
    q.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch (and numba) threads (default 0: torch's default, every core)")
    q.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    if baseline:
        q.add_argument("--baseline-rev", metavar="REV",
                       help="also run this benchmark from git revision REV (e.g. HEAD~1) in a subprocess, in the "
                            "same invocation, for a before/after comparison")


def set_threads(n: int) -> None:
    import torch

    if n and n > 0:
        torch.set_num_threads(n)
        try:
            import numba

            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        except (ImportError, ValueError):
            pass


def machine() -> dict[str, Any]:
    """Threads, cores and load average: the context a timing needs on a shared machine."""
    import torch

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {"torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
            "load_average_1min": round(load[0], 2), "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__}


def emit(out: dict, args: argparse.Namespace, render: Callable[[dict], None]) -> int:
    """Print ``out`` as JSON (``--json``) or through ``render`` (a table on stdout, context on stderr)."""
    out.setdefault("machine_end", machine())
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    m, e = out.get("machine", {}), out["machine_end"]
    print(f"# {m.get('torch_threads')} torch threads, {m.get('cpu_count')} cores, load average "
          f"{m.get('load_average_1min')} at the start, {e.get('load_average_1min')} at the end", file=sys.stderr)
    render(out)
    return 0


def baseline_tree(rev: str) -> Path:
    """The files of git revision ``rev`` of this repository, extracted once into a temporary folder."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"], check=True,
                         capture_output=True, text=True).stdout.strip()
    dest = Path(tempfile.gettempdir()) / f"bench-baseline-{sha[:12]}"
    if not (dest / "methods").is_dir():
        tmp = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        try:
            tmp.rename(dest)
        except OSError:  # another process extracted it meanwhile
            pass
    return dest


def run_baseline(rev: str, argv: list[str], timeout: float | None = None) -> dict:
    """Run ``python -m bench <argv>`` from revision ``rev`` (same interpreter and environment, the old tree
    first on the path) and return its JSON output; ``{"error": ...}`` if it failed."""
    tree = baseline_tree(rev)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        res = subprocess.run([sys.executable, "-m", "bench", *argv], cwd=str(tree), env=env, capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "rev": rev}
    if res.returncode != 0:
        return {"error": (res.stderr or res.stdout).strip().splitlines()[-1:] or ["failed"], "rev": rev}
    try:
        out = json.loads(res.stdout)
    except json.JSONDecodeError:
        return {"error": "no JSON output", "rev": rev, "stdout": res.stdout[-500:]}
    out["rev"] = rev
    return out
