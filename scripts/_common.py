"""What the scripts share: their common options, running a sweep config, and small table helpers."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path
from typing import Any, Iterable

from bench import api
from bench.io import write_text_atomic


def common_args(p: argparse.ArgumentParser, experiment: str) -> None:
    p.add_argument("--experiment", default=experiment, help="MLflow experiment (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch/numba threads per run (default 1: on a shared 2-core machine more oversubscribe)")
    p.add_argument("--dry-run", action="store_true", help="print the plan (what would run, what is done) and stop")


def sweep(config: dict[str, Any], args: argparse.Namespace) -> bool:
    """Run (or with --dry-run, plan) one sweep config; False when a cell failed."""
    s = api.sweep(config, dry_run=args.dry_run, threads=args.threads, progress=sys.stderr.isatty())
    return not any(r["status"] == "failed" for r in s["results"])


def save(path: str | Path, text: str, echo: bool = True) -> None:
    write_text_atomic(path, text if text.endswith("\n") else text + "\n")
    if echo:
        print(text)
    print(f"# wrote {path}", file=sys.stderr)


def mean_std(xs: Iterable[float], scale: float = 1.0, digits: int = 3) -> str:
    xs = [scale * x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if not xs:
        return "-"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs):.{digits}f} ± {sd:.{digits}f}"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])
