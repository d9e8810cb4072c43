"""Before/after a regeneration, at equal target epsilon: spent epsilon, noise and test accuracy per method.

    python -m scripts.regeneration_before_after [--site docs/leaderboard] [--datasets cora ...] [--families]

"Before" is what the site published until ``scripts.regenerate`` retired it (the run records in
``SITE/superseded/`` whose ``superseded_because`` names a regeneration), "after" is what ``SITE/runs/`` holds now.
Rows pair the two on (dataset, method, split, target epsilon), so each compares like with like: the same cell of the
grid, the accountant each record names (``params.accountant``), the means over the seeds both generations hold (a
dataset part-way through its regeneration compares the seeds it has redone).
``--families`` prints the summary per family instead (the regeneration's families, ``scripts.regenerate``).
Private cells only: a non-private reference has no epsilon to compare.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from bench.studies.tight_before_after import NOISE_KEYS  # each family's calibrated noise, or the steps DRW's budget buys

REGENERATED = "regenerated from "


def _key(r: dict[str, Any]) -> tuple[str, str, str, float] | None:
    from bench.records import row_key

    k = row_key(r)
    return k if k is not None and math.isfinite(k[3]) else None


def moved(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """The calibrated parameter to show: the first of :data:`NOISE_KEYS` both generations report whose mean the
    regeneration moved (DRW keeps its noise multiplier and buys steps), else the first both report."""
    both = [k for k in NOISE_KEYS if k in before["noise"] and k in after["noise"]]
    return next((k for k in both if not math.isclose(before["noise"][k], after["noise"][k])), both[0] if both else None)


def _summary(rs: list[dict[str, Any]]) -> dict[str, Any]:
    from bench.records import accountant_of, number

    ms = [r.get("metrics") or {} for r in rs]
    return {"n": len(rs), "accountant": "/".join(sorted({accountant_of(r) for r in rs})),
            "spent": statistics.fmean(number(m.get("epsilon")) for m in ms),
            "acc": statistics.fmean(number(m.get("test_acc")) for m in ms),
            "noise": {k: statistics.fmean(float(m[f"info.{k}"]) for m in ms) for k in NOISE_KEYS
                      if all(f"info.{k}" in m for m in ms)}}


def _group(rs: Iterable[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in rs:
        k = _key(r)
        if r.get("kind", "run") == "run" and r.get("status", "FINISHED") == "FINISHED" and k is not None:
            out[k].append(r)
    return out


def pairs(site: str | Path, datasets: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per grid cell (dataset, method, split, target epsilon) that both generations hold, in sorted order."""
    from bench import records, superseded

    site = Path(site)
    retired: dict[str, dict[str, Any]] = {}  # per cell, the record the latest regeneration replaced
    for r in superseded.load(superseded.site_superseded(site)):
        old = retired.get(r.get("cell_id"))
        if str(r.get("superseded_because", "")).startswith(REGENERATED) and \
                (old is None or (r.get("start_time") or 0) >= (old.get("start_time") or 0)):
            retired[r.get("cell_id")] = r
    before = _group(retired.values())
    after = _group(records.load(records.site_export(site)))
    rows = []
    for k in sorted(set(before) & set(after), key=lambda k: (k[1], k[0], k[2], k[3])):
        if datasets and k[1] not in datasets:
            continue
        b, a = ({(r.get("params") or {}).get("seed"): r for r in g[k]} for g in (before, after))
        seeds = sorted(set(b) & set(a), key=str)  # the same seeds on both sides (a row part-way regenerated)
        if seeds:
            cell = dict(zip(("method", "dataset", "split", "epsilon"), k))
            rows.append({**cell, "before": _summary([b[s] for s in seeds]),
                         "after": _summary([a[s] for s in seeds])})
    return rows


def _signed(v: float, nd: int = 1) -> str:
    """``v`` with its sign, a change that rounds to zero shown as +0 (not -0.0)."""
    return f"{(round(v, nd) or 0.0):+.{nd}f}"


def _f(v: float | None, nd: int = 2) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.{nd}f}"


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per cell; accuracy in points, the change signed."""
    out = ["| dataset | method | split | target eps | accountant before -> after | spent eps before -> after "
           "| calibrated before -> after | test acc % before -> after (change) | seeds |",
           "|---|---|---|---:|---|---|---|---|---|"]
    for r in rows:
        b, a = r["before"], r["after"]
        k = moved(b, a)
        noise = "-" if k is None else f"{k} {b['noise'][k]:.4g} -> {a['noise'][k]:.4g}"
        out.append(f"| {r['dataset']} | {r['method']} | {r['split']} | {r['epsilon']:g} | {b['accountant']} -> "
                   f"{a['accountant']} | {_f(b['spent'], 3)} -> {_f(a['spent'], 3)} | {noise} | "
                   f"{100 * b['acc']:.1f} -> {100 * a['acc']:.1f} ({_signed(100 * (a['acc'] - b['acc']))}) "
                   f"| {a['n']} |")
    return "\n".join(out)


def families_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: per family, the cells compared, the median relative change of spent epsilon and of the calibrated
    parameter (:func:`moved`), and the mean and range of the accuracy change (points)."""
    from bench.studies.regenerate import family_of

    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[family_of(r["method"])].append(r)
    out = ["| family | cells | datasets | spent eps change (median) | calibrated parameter change (median) "
           "| test acc change, points: mean (min, max) |", "|---|---:|---|---:|---:|---|"]
    for fam, rs in sorted(by.items()):
        spent = [r["after"]["spent"] / r["before"]["spent"] - 1 for r in rs if r["before"]["spent"] > 0]
        noise = [r["after"]["noise"][k] / r["before"]["noise"][k] - 1 for r in rs
                 for k in [moved(r["before"], r["after"])] if k is not None and r["before"]["noise"][k]]
        acc = [100 * (r["after"]["acc"] - r["before"]["acc"]) for r in rs]
        out.append(f"| {fam} | {len(rs)} | {', '.join(sorted({r['dataset'] for r in rs}))} | "
                   f"{_signed(100 * statistics.median(spent))}% | "
                   f"{'-' if not noise else _signed(100 * statistics.median(noise)) + '%'} | "
                   f"{_signed(statistics.fmean(acc), 2)} ({_signed(min(acc))}, {_signed(max(acc))}) |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.regeneration_before_after", description=__doc__.split("\n")[0])
    ap.add_argument("--site", default="docs/leaderboard")
    ap.add_argument("--datasets", nargs="*")
    ap.add_argument("--families", action="store_true", help="the summary per family instead of one line per cell")
    a = ap.parse_args(argv)
    if not Path(a.site).is_dir():
        print(f"error: no leaderboard site at {a.site}", file=sys.stderr)
        return 2
    rows = pairs(a.site, a.datasets)
    if not rows:
        print(f"error: {a.site} holds no cell that a regeneration retired and re-ran"
              + (f" on {', '.join(a.datasets)}" if a.datasets else ""), file=sys.stderr)
        return 2
    print(families_table(rows) if a.families else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
