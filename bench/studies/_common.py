"""What the scripts share: their common options, running a sweep config, adding records about published runs,
and small table helpers."""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

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


def clean_commit() -> str:
    """HEAD, refusing a work tree whose tracked files that code can read differ from it (published numbers name a
    clean commit). Results and documentation (``bench.gitless.NOT_CODE``: ``docs/``) may differ: the records
    these scripts append go there, as the sweep's do, so a pipeline that runs them one after another from one
    commit (scripts.regenerate) names that commit throughout."""
    from bench.gitless import NOT_CODE, commit_of

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():  # a copy without git names its commit by its manifest (bench.gitless)
        commit = commit_of(root)
        if commit == "unknown" or commit.endswith("-dirty"):
            raise SystemExit(f"error: no git here and {'no commit manifest' if commit == 'unknown' else 'the files differ from the commit manifest'}"
                             f" (python -m bench.gitless REF on a checkout writes one): published numbers name a clean commit")
        return commit
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                            *(f":(exclude){p}" for p in NOT_CODE)], cwd=root, capture_output=True,
                           text=True, check=True).stdout.strip()
    if dirty:
        raise SystemExit(f"error: the work tree has uncommitted changes; commit first (published numbers name a clean "
                         f"commit):\n{dirty}")
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def record_args(p: argparse.ArgumentParser, runs_help: str, out_help: str, default_out: str) -> None:
    """The options of the scripts that add records about published runs (:func:`append_records`)."""
    p.add_argument("--config", default="configs/leaderboard.yaml")
    p.add_argument("--runs", default="docs/leaderboard/runs/", help=runs_help)
    p.add_argument("--out", default=default_out, help=f"{out_help} (appended; default %(default)s)")
    p.add_argument("--datasets", nargs="*", help="only these datasets, in this order (default: every one)")
    p.add_argument("--methods", nargs="*",
                   help="only the runs of these methods (default: every one); only their old records are retired")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--dry-run", action="store_true", help="list what would run and what is done, then stop")
    p.add_argument("--superseded", default="docs/leaderboard/superseded/",
                   help="where records no current run names go once every run has its new record: a directory, one "
                        "file per dataset (default: %(default)s), or a single FILE.jsonl")


def append_records(todo: list[dict[str, Any]], out: str, record_id: Callable[[dict[str, Any]], str],
                   work: Callable[[dict[str, Any], str], dict[str, Any]], line: Callable[[dict[str, Any]], str],
                   what: str, dry_run: bool = False, preload: Callable[[], None] = lambda: None,
                   superseded: str | None = None, methods: list[str] | None = None) -> int:
    """The resumable loop of the scripts that add records about published runs (``scripts.unit_attacks``,
    ``scripts.whitebox_audits``): skip the runs whose record ``out`` holds, refuse a dirty tree, then one record
    per run, appended as it finishes (``work(run, commit)``), with a progress line (``line(record)``). Once every
    run of ``todo`` has its record, ``superseded`` (:mod:`bench.superseded`) receives the records of ``out`` about the same datasets
    that no run of ``todo`` names any more (an older format's, a retuned setting's), so the page reads one
    generation; with ``methods`` (``todo`` restricted to them), only those methods' records."""
    from bench import records, tracking

    done = {r["cell_id"] for r in records.load(out)} if Path(out).exists() else set()
    pending = [r for r in todo if record_id(r) not in done]
    print(f"# {len(todo)} {what}; {len(todo) - len(pending)} done, {len(pending)} to run", file=sys.stderr)
    if dry_run:
        for r in pending:
            print(r.get("name", r["cell_id"]))
        return 0
    commit = clean_commit()
    preload()  # every module a run may import lazily, so edits meanwhile cannot change what the commit names
    t_all = time.perf_counter()
    for i, run in enumerate(pending, 1):
        t0 = time.perf_counter()
        rec = work(run, commit)
        if tracking.code_tree():  # the tree a manifest-named commit's files hash to (bench.gitless)
            rec.setdefault("code_tree", tracking.code_tree())
        records.append(out, rec)
        print(f"[{i}/{len(pending)}] {run.get('name')}: {line(rec)} {time.perf_counter() - t0:.0f}s",
              file=sys.stderr, flush=True)
    print(f"# done in {time.perf_counter() - t_all:.0f}s", file=sys.stderr)
    if superseded:
        moved = retire(out, {record_id(r) for r in todo}, {r["params"]["dataset"] for r in todo}, superseded,
                       methods)
        if moved:
            print(f"# moved {moved} records no current run names from {out} to {superseded}", file=sys.stderr)
    return 0


def retire(out: str, current: set[str], datasets: set[str], superseded: str,
           methods: list[str] | None = None) -> int:
    """Move the records of ``out`` about ``datasets`` (and ``methods``, when given) whose id is not in ``current``
    to ``superseded``; how many."""
    import json

    path = Path(out)
    if not path.exists():
        return 0
    stay, gone = [], []
    for line in (x for x in path.read_text().splitlines() if x.strip()):
        rec = json.loads(line)
        params = rec.get("params") or {}
        old = (params.get("dataset") in datasets and rec.get("cell_id") not in current
               and (methods is None or params.get("method") in methods))
        (gone if old else stay).append(line)
    if gone:
        from bench.superseded import append_lines

        append_lines(superseded, gone)
        write_text_atomic(path, "\n".join(stay) + "\n" if stay else "")
    return len(gone)


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
