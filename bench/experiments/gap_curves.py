"""Issue 6's measurements: accuracy-privacy curves of GAP, ProGAP and their baselines, and ProGAP's
per-stage convergence, in one resumable script.

    python -m bench.experiments.gap_curves [--datasets facebook-wisconsin87 computers] [--seeds 0 1 2]
                                           [--levels edge node] [--out-dir DIR] [--convergence]

Edge level: epsilon in {0.25, 0.5, 1, 2, 4, inf} for edgerand, gap-edge, progap-edge (mlp and sage at
epsilon inf as references). Node level: epsilon in {2, 4, 8, 16, 32} for dp-mlp, gap-node, progap-node, dpgnn
(mlp as the reference). All on ``random-75-10-15``; delta is the harness default (the largest power of ten
below 1/#nodes). Every run is one line of ``DIR/gap_runs.jsonl`` (a rerun skips those done); tables go to
``DIR/gap_curves.md`` and plots to ``DIR/gap_<dataset>_<level>.png``. ``--convergence`` trains progap-edge with
K=3 at epsilon 1 and saves the per-stage train/validation accuracy plot to ``DIR/progap_convergence.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from pathlib import Path

from bench.datasets import load_dataset
from bench.run import evaluate, format_table
from bench.splits import make_task
from methods.base import Budget, default_delta, get_method
from methods.training import progress_bar

SPLIT = "random-75-10-15"
EDGE_EPS = [0.25, 0.5, 1.0, 2.0, 4.0, math.inf]
NODE_EPS = [2.0, 4.0, 8.0, 16.0, 32.0]
EDGE_METHODS = ["edgerand", "gap-edge", "progap-edge"]
NODE_METHODS = ["dp-mlp", "gap-node", "progap-node", "dpgnn-adam"]
REFERENCES = ["mlp", "sage"]
#: DP-GNN settings chosen on validation by its own grid (bench/experiments/dpgnn_grid.py)
OVERRIDES = {"dpgnn-adam": {"max_degree": 3, "batch_size": 2000, "epochs": 30, "hidden": 32, "max_children": 10,
                            "lr": 0.03}}


def key(method: str, dataset: str, seed: int, eps: float) -> str:
    return json.dumps([method, dataset, seed, str(eps)])


def fit_one(method: str, dataset: str, seed: int, eps: float, extra: dict | None = None) -> tuple[dict, object]:
    task = make_task(load_dataset(dataset), SPLIT, seed)
    cls = get_method(method)
    m = cls(**{**OVERRIDES.get(method, {}), **(extra or {})})
    m.check_task(task)
    delta = default_delta(task.num_nodes)
    budget = Budget(eps, delta) if m.is_private else Budget()
    t0 = time.perf_counter()
    fitted = m.fit(task, budget, seed=seed, device="cpu", progress=sys.stderr.isatty())
    secs = time.perf_counter() - t0
    metrics = evaluate(task, fitted.predict_proba())
    spent = fitted.epsilon(delta) if m.is_private else math.inf
    if m.is_private and spent > eps * (1 + 1e-9):
        raise RuntimeError(f"{method} spent {spent} > {eps}")
    return ({"method": method, "dataset": dataset, "seed": seed, "target_epsilon": str(eps), "delta": delta,
             "unit": cls.privacy_unit, "epsilon": spent, "metrics": metrics, "seconds": secs,
             "info": {k: v for k, v in fitted.info.items() if isinstance(v, (int, float, str, bool))}}, fitted)


def plan(datasets: list[str], seeds: list[int], levels: list[str], edge_eps: list[float] | None = None,
         node_eps: list[float] | None = None) -> list[tuple]:
    jobs = []
    for dataset in datasets:
        for seed in seeds:
            for ref in REFERENCES:
                jobs.append((ref, dataset, seed, math.inf))
            if "edge" in levels:
                for eps in edge_eps or EDGE_EPS:
                    for method in EDGE_METHODS:
                        jobs.append((method, dataset, seed, eps))
            if "node" in levels:
                for eps in node_eps or NODE_EPS:
                    for method in NODE_METHODS:
                        jobs.append((method, dataset, seed, eps))
    return jobs


def _ms(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"{100 * statistics.fmean(xs):.1f} ± {100 * (statistics.stdev(xs) if len(xs) > 1 else 0.0):.1f}"


def tables(rows: list[dict]) -> str:
    parts = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        refs = [r for r in rows if r["dataset"] == dataset and r["method"] in REFERENCES]
        ref_line = ", ".join(f"{m} {_ms([r['metrics']['test_acc'] for r in refs if r['method'] == m])}"
                             for m in REFERENCES if any(r["method"] == m for r in refs))
        for level, methods, grid in (("edge", EDGE_METHODS, EDGE_EPS), ("node", NODE_METHODS, NODE_EPS)):
            rs = [r for r in rows if r["dataset"] == dataset and r["method"] in methods]
            if not rs:
                continue
            head = ["method"] + [f"eps={e:g}" for e in grid]
            lines = []
            for m in methods:
                cells = []
                for e in grid:
                    sel = [r for r in rs if r["method"] == m and r["target_epsilon"] == str(e)]
                    cells.append(_ms([r["metrics"]["test_acc"] for r in sel]) +
                                 (f" (n={len(sel)})" if sel and len(sel) < 3 else ""))
                lines.append([m] + cells)
            gain = []
            for e in grid:
                a = [r["metrics"]["test_acc"] for r in rs if r["method"] == f"progap-{level}" and r["target_epsilon"] == str(e)]
                b = [r["metrics"]["test_acc"] for r in rs if r["method"] == f"gap-{level}" and r["target_epsilon"] == str(e)]
                gain.append(f"{100 * (statistics.fmean(a) - statistics.fmean(b)):+.1f}" if a and b else "-")
            lines.append([f"progap - gap (points)"] + gain)
            secs = statistics.fmean(r["seconds"] for r in rs)
            parts.append(f"### {dataset}, {level} level ({SPLIT}; test accuracy % mean ± std over seeds; "
                         f"references at eps=inf: {ref_line}; mean fit {secs:.0f} s)\n\n" + markdown(head, lines))
    return "\n\n".join(parts) + "\n"


def markdown(head: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def plots(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        for level, methods, grid in (("edge", EDGE_METHODS, EDGE_EPS), ("node", NODE_METHODS, NODE_EPS)):
            rs = [r for r in rows if r["dataset"] == dataset and r["method"] in methods]
            if not rs:
                continue
            finite = [e for e in grid if math.isfinite(e)]
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            for m in methods:
                xs, ys, es = [], [], []
                for e in finite:
                    acc = [r["metrics"]["test_acc"] for r in rs if r["method"] == m and r["target_epsilon"] == str(e)]
                    if acc:
                        xs.append(e)
                        ys.append(100 * statistics.fmean(acc))
                        es.append(100 * (statistics.stdev(acc) if len(acc) > 1 else 0.0))
                if xs:
                    ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=m)
            for ref in REFERENCES:
                acc = [r["metrics"]["test_acc"] for r in rows if r["dataset"] == dataset and r["method"] == ref]
                if acc:
                    ax.axhline(100 * statistics.fmean(acc), ls="--", lw=1, color="0.5")
                    ax.text(finite[0], 100 * statistics.fmean(acc), f" {ref} (non-private)", fontsize=7, va="bottom")
            ax.set_xscale("log", base=2)
            ax.set_xlabel(f"{level}-level epsilon")
            ax.set_ylabel("test accuracy (%)")
            ax.set_title(f"{dataset} ({SPLIT})")
            ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(out / f"gap_{dataset}_{level}.png", dpi=120)
            plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["facebook-wisconsin87", "computers"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--levels", nargs="+", default=["edge", "node"], choices=["edge", "node"])
    ap.add_argument("--methods", nargs="+", default=None, help="only these methods (default: all of the level)")
    ap.add_argument("--edge-eps", type=float, nargs="+", default=None, help=f"default {EDGE_EPS}")
    ap.add_argument("--node-eps", type=float, nargs="+", default=None, help=f"default {NODE_EPS}")
    ap.add_argument("--convergence", action="store_true", help="also the K=3 per-stage convergence plot")
    ap.add_argument("--out-dir", default="bench/experiments/results")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "gap_runs.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    done = {key(r["method"], r["dataset"], r["seed"], r["target_epsilon"]) for r in rows}
    jobs = [j for j in plan(args.datasets, args.seeds, args.levels, args.edge_eps, args.node_eps)
            if key(j[0], j[1], j[2], str(j[3])) not in done and (args.methods is None or j[0] in args.methods)]
    t_start = time.perf_counter()
    bar = progress_bar(len(jobs), "gap curves", True)
    for method, dataset, seed, eps in jobs:
        bar.set_postfix_str(f"{method} {dataset} s{seed} eps={eps:g}")
        row, _ = fit_one(method, dataset, seed, eps)
        rows.append(row)
        with log.open("a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
        print(f"{method} {dataset} seed {seed} eps {eps:g}: test {row['metrics']['test_acc']:.4f} "
              f"spent {row['epsilon']:.4g} ({row['seconds']:.0f}s)", file=sys.stderr, flush=True)
        bar.update(1)
    bar.close()
    if args.convergence:
        dataset = args.datasets[0]
        row, fitted = fit_one("progap-edge", dataset, args.seeds[0], 1.0, {"depth": 3, "plot": True})
        shutil.copy(fitted.info["figures"][0], out / "progap_convergence.png")
        stages = {}
        for h in fitted.history:
            stages.setdefault(int(h["stage"]), []).append(h)
        lines = [[str(s), str(len(hs)), f"{100 * hs[-1]['train_acc']:.1f}", f"{100 * max(h['val_acc'] for h in hs):.1f}"]
                 for s, hs in sorted(stages.items())]
        text = (f"progap-edge K=3, {dataset}, edge eps 1, seed {args.seeds[0]}: test {100 * row['metrics']['test_acc']:.1f}%\n\n"
                + markdown(["stage", "epochs", "final train acc %", "best val acc %"], lines) + "\n")
        (out / "progap_convergence.md").write_text(text)
        print(text)
    text = tables(rows)
    (out / "gap_curves.md").write_text(text)
    plots(rows, out)
    print(text)
    print(f"{len(jobs)} runs in {(time.perf_counter() - t_start) / 60:.1f} min wall time", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
