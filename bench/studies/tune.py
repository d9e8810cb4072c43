"""Tune the leaderboard's hyperparameters on validation accuracy (configs/tuning.yaml -> configs/hparams_tuned.yaml).

    python -m scripts.tune [--methods M ...] [--datasets D ...] [--workers 2] [--threads 1] [--dry-run]
    python -m scripts.tune --write-only        # rewrite the tuned file from the results alone

For each method of configs/tuning.yaml and each (dataset, split) the leaderboard config runs it on, every point of
the method's grid is fitted on the tuning seeds at the method's tuning epsilon, untracked, with the checked-in
paper/measured entry of configs/hparams.yaml under the grid's own values (never a previous tuning); a method whose
grid holds a budget-coupled knob (DRW's noise multiplier) lists more epsilons under ``by_epsilon``, each tuned on its
own and written as the entry's ``by_epsilon`` refinement (bench/hparams.py). The score is
the MEAN VALIDATION accuracy over the seeds -- validation labels are private labels no ledger covers, so the
choice is made outside the privacy budget, as the papers do, and no test accuracy is recorded here. Each fit adds
one line to the results file (resumable: a rerun skips what it holds); the tuned file is rewritten after every
(method, dataset) group that completes, with the grid, the seeds and the winning score in each entry's note.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import json
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO / "configs" / "tuning.yaml"


def load_tuning(path: Path) -> dict[str, Any]:
    """The tuning config, checked: its seeds must be disjoint from the seeds the leaderboard reports, or a reported
    number would come from a run whose seed helped choose its settings."""
    raw = yaml.safe_load(path.read_text()) or {}
    for key in ("seeds", "results", "output", "leaderboard", "methods"):
        if key not in raw:
            raise SystemExit(f"error: {path} has no {key!r}")
    board = yaml.safe_load((REPO / raw["leaderboard"]).read_text()) or {}
    shared = sorted(set(int(s) for s in raw["seeds"]) & set(int(s) for s in board.get("seeds") or []))
    if shared:
        raise SystemExit(f"error: {path}: tuning seeds {shared} are also reported by {raw['leaderboard']}; "
                         "tune on seeds disjoint from the reported ones")
    return raw


def points(grid: dict[str, list]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def targets(cfg: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(method, dataset, split) for every tuned method on every dataset and split the leaderboard runs it on."""
    from bench import api

    seen: dict[tuple[str, str, str], None] = {}
    for c in api.cells(REPO / cfg["leaderboard"]):
        if c.kind == "run" and not c.skip and c.method in cfg["methods"]:
            seen.setdefault((c.method, c.dataset, c.split))
    return list(seen)


def fit_key(method: str, dataset: str, split: str, eps: float, point: dict[str, Any], seed: int) -> str:
    return json.dumps([method, dataset, split, eps, sorted(point.items()), seed], default=str)


def base_overrides(method: str, dataset: str, split: str, eps: float, fixed: dict[str, Any]) -> dict[str, Any]:
    """hparams.yaml's hand-written entry (paper / measured) under the tuning config's fixed values."""
    from bench import hparams as H

    entry = H.lookup(method, dataset, split, eps, path=H.DEFAULT_PATH)
    return {**(entry.values if entry else {}), **fixed}


def fit_one(method: str, dataset: str, split: str, eps: float, overrides: dict[str, Any], seed: int,
            threads: int) -> dict[str, Any]:
    """One untracked fit; returns its validation accuracy (a diagnostic), fit seconds and spent epsilon."""
    from bench import api

    t0 = time.perf_counter()
    (res,) = api.run(method, dataset, split=split, seeds=[seed], epsilon=eps, overrides=overrides, track=False,
                     hparams=False, threads=threads)
    return {"val_acc": res.diagnostics.get("val_acc"), "fit_seconds": res.seconds, "epsilon": res.epsilon,
            "wall_seconds": time.perf_counter() - t0}


def load_results(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["key"]] = rec
    return out


def epsilons(spec: dict[str, Any]) -> list[float]:
    """The tuning epsilon first, then the ``by_epsilon`` ones."""
    extra = [float(e) for e in spec.get("by_epsilon") or [] if not math.isclose(float(e), float(spec["epsilon"]))]
    return [float(spec["epsilon"]), *extra]


def choose(results: dict[str, dict], method: str, dataset: str, split: str, spec: dict[str, Any],
           seeds: list[int], eps: float | None = None) -> tuple[dict[str, Any], float, list[tuple[dict, float]]] | None:
    """The grid point with the best mean validation accuracy over all seeds at ``eps`` (default: the tuning
    epsilon); None until every fit is in."""
    eps = float(spec["epsilon"]) if eps is None else float(eps)
    scored = []
    for pt in points(spec["grid"]):
        recs = [results.get(fit_key(method, dataset, split, eps, pt, s)) for s in seeds]
        if any(r is None for r in recs):
            return None
        if any(r.get("val_acc") is None for r in recs):  # a point that failed to fit is out of the running
            continue
        scored.append((pt, statistics.fmean(r["val_acc"] for r in recs)))
    if not scored:
        return None
    best = max(scored, key=lambda x: x[1])  # max keeps the first of equals
    return best[0], best[1], scored


def tuned_yaml(cfg: dict[str, Any], results: dict[str, dict], previous: dict[str, Any] | None = None) -> str:
    """The tuned file. A group whose fits are not all in keeps its entry of ``previous`` (the file as it was: a
    retune under way must not drop a setting back to the defaults, which would change its cells), and the header
    names those groups."""
    seeds = [int(s) for s in cfg["seeds"]]
    lines = ["# Generated by scripts/tune.py from configs/tuning.yaml and its results "
             f"({cfg['results']}); do not edit by hand.",
             "# source: tuned = chosen on mean validation accuracy over the seeds listed -- tuned on validation labels,",
             "# outside the privacy budget, as the papers do. These entries override configs/hparams.yaml's for the",
             "# same method and key (bench/hparams.py).", ""]
    body: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    for method, dataset, split in targets(cfg):
        spec = cfg["methods"][method]
        got = [choose(results, method, dataset, split, spec, seeds, e) for e in epsilons(spec)]
        if any(g is None for g in got):
            old = ((previous or {}).get(method) or {}).get(f"{dataset}@{split}")
            if old is not None:
                body.setdefault(method, {})[f"{dataset}@{split}"] = old
                kept.append(f"{method} on {dataset}")
            continue
        eps = float(spec["epsilon"])
        base = base_overrides(method, dataset, split, eps, spec.get("set") or {})
        grid = ", ".join(f"{k} {v}" for k, v in spec["grid"].items())

        def note(e: float, score: float, scored: list) -> str:
            table = "; ".join(f"{','.join(f'{k}={v}' for k, v in pt.items())}: {s:.4f}" for pt, s in scored)
            return (f"grid {{{grid}}} at eps {e:g} on {split}, seeds {seeds}: best mean validation accuracy "  # noqa: B023 - called within this iteration
                    f"{score:.4f} ({table})")

        (best, score, scored), rest = got[0], got[1:]
        entry: dict[str, Any] = {"source": "tuned", "note": note(eps, score, scored), "set": {**base, **best}}
        if rest:
            entry["by_epsilon"] = {e: {"set": b, "note": note(e, sc, table)}
                                   for e, (b, sc, table) in zip(epsilons(spec)[1:], rest)}
        body.setdefault(method, {})[f"{dataset}@{split}"] = entry
    if kept:
        import textwrap

        text = (f"Still tuning on seeds {seeds}, so keeping their earlier entry (its note says what it was chosen "
                f"on): {', '.join(k.replace(' ', '~') for k in kept)}.")  # a group's name is never broken
        lines[-1:-1] = [x.replace("~", " ") for x in textwrap.wrap(text, 110, initial_indent="# ",
                                                                   subsequent_indent="# ", break_on_hyphens=False)]
    return "\n".join(lines) + yaml.safe_dump(body, sort_keys=True, width=120, default_flow_style=None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=str(DEFAULT_CONFIG))
    p.add_argument("--methods", nargs="*", help="only these methods (default: every method of the config)")
    p.add_argument("--datasets", nargs="*", help="only these datasets")
    p.add_argument("--workers", type=int, default=1, help="fits in parallel (processes; default 1)")
    p.add_argument("--threads", type=int, default=1, help="torch/numba threads per fit (default 1)")
    p.add_argument("--dry-run", action="store_true", help="list the fits still to run and stop")
    p.add_argument("--write-only", action="store_true", help="only rewrite the tuned file from the results")
    args = p.parse_args(argv)
    from bench.io import write_text_atomic

    cfg = load_tuning(Path(args.config))
    results_path, out_path = REPO / cfg["results"], REPO / cfg["output"]
    results = load_results(results_path)
    previous = yaml.safe_load(out_path.read_text()) if out_path.is_file() else None
    seeds = [int(s) for s in cfg["seeds"]]
    groups = [t for t in targets(cfg) if (not args.methods or t[0] in args.methods)
              and (not args.datasets or t[1] in args.datasets)]
    jobs = []
    for method, dataset, split in groups:
        spec = cfg["methods"][method]
        base = base_overrides(method, dataset, split, float(spec["epsilon"]), spec.get("set") or {})
        for eps in epsilons(spec):
            for pt in points(spec["grid"]):
                for s in seeds:
                    key = fit_key(method, dataset, split, eps, pt, s)
                    if key not in results:
                        jobs.append((key, (method, dataset, split),
                                     (method, dataset, split, eps, {**base, **pt}, s)))
    print(f"# {len(jobs)} fits to run over {len(groups)} (method, dataset) groups; {len(results)} done",
          file=sys.stderr)
    if args.dry_run:
        for key, _, _ in jobs:
            print(key)
        return 0
    if not args.write_only and jobs:
        pending = {g: sum(1 for j in jobs if j[1] == g) for g in groups}
        results_path.parent.mkdir(parents=True, exist_ok=True)
        with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
            futs = {pool.submit(fit_one, *job, args.threads): (key, group, job) for key, group, job in jobs}
            for i, fut in enumerate(as_completed(futs), 1):
                key, group, job = futs[fut]
                try:
                    rec = {"key": key, **fut.result()}
                except Exception as e:  # a failing point is recorded (and scores nothing); the rest goes on
                    rec = {"key": key, "val_acc": None, "error": f"{type(e).__name__}: {e}"}
                rec["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
                with open(results_path, "a") as fh:
                    fh.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
                results[key] = rec
                va = rec.get("val_acc")
                print(f"[{i}/{len(jobs)}] {job[0]} {job[1]} {job[4]} s{job[5]}: val "
                      f"{'-' if va is None else f'{va:.4f}'} ({rec.get('wall_seconds', math.nan):.0f}s)"
                      + (f" {rec['error']}" if "error" in rec else ""), file=sys.stderr, flush=True)
                pending[group] -= 1
                if pending[group] == 0:
                    write_text_atomic(out_path, tuned_yaml(cfg, results, previous))
    write_text_atomic(out_path, tuned_yaml(cfg, results, previous))
    print(f"# wrote {out_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
