"""Issue 5's measurements for DP-GNN (Daigavane et al. 2022), in one resumable script.

    python -m bench.experiments.dpgnn_grid [--parts main ablation fdp] [--seeds 0 1 2] [--out-dir DIR]

``main``      test accuracy at epsilon 12 (delta = 1/N_train, the paper's choice) of dpgnn, dpgnn-adam, dp-mlp,
              mlp and gcn on computers, physics and facebook-wisconsin87, transductive (random-75-10-15) and
              inductive (disjoint), 3 seeds. The spent epsilon is the ledger's; the same ledger's epsilon at
              the harness's default delta (largest power of ten below 1/#units) is shown beside it.
``ablation``  the paper's Section 6.4 in shape on computers (transductive, dpgnn-adam, epsilon 12): accuracy
              against the batch size m and against the in-degree bound K, everything else fixed.
``fdp``       dpgnn at epsilon 8, delta 1e-5 on cora and citeseer (public split): the random-walk paper's "FDP"
              baseline (issue 4's table uses delta 1e-5).

Each run is one line of ``DIR/dpgnn_runs.jsonl``; a rerun skips the runs already there (delete the file to
start over), so ``--methods``/``--splits`` slices can run as parallel processes on one ``DIR`` (rerun once at
the end to rewrite the tables from every line). Tables: ``DIR/dpgnn_main.md``, ``dpgnn_ablation.md``, ``dpgnn_fdp.md``. The DP-GNN
hyperparameters below were chosen on validation accuracy of seed 0 (non-private tuning, as the paper).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

from bench.datasets import load_dataset
from bench.run import evaluate, format_table
from bench.splits import make_task
from methods.base import Budget, default_delta, get_method
from methods.training import progress_bar

MAIN_DATASETS = ["computers", "physics", "facebook-wisconsin87"]
MAIN_SPLITS = ["random-75-10-15", "disjoint"]
MAIN_METHODS = ["dpgnn", "dpgnn-adam", "dp-mlp", "mlp", "gcn"]

#: DP-GNN settings per dataset (chosen on seed 0's validation accuracy; see the README section)
DPGNN = {
    "computers": {"max_degree": 3, "batch_size": 2000, "epochs": 30, "hidden": 32, "max_children": 10},
    "physics": {"max_degree": 3, "batch_size": 2000, "epochs": 30, "hidden": 32, "max_children": 10},
    "facebook-wisconsin87": {"max_degree": 3, "batch_size": 2000, "epochs": 30, "hidden": 32, "max_children": 10},
    "cora": {"max_degree": 3, "batch_size": 140, "epochs": 30, "hidden": 32, "max_children": 10},
    "citeseer": {"max_degree": 3, "batch_size": 120, "epochs": 30, "hidden": 32, "max_children": 10},
}
OPTIMIZER = {"dpgnn": {"lr": 2.0}, "dpgnn-adam": {"lr": 0.03}}
ABLATION_DATASET = "computers"
ABLATION_BATCH = [500, 1000, 2000, 5000, 10315]
ABLATION_K = [1, 2, 3, 5, 7, 10, 20]


def overrides(method: str, dataset: str, extra: dict | None = None) -> dict:
    if method not in ("dpgnn", "dpgnn-adam"):
        return dict(extra or {})
    return {**DPGNN[dataset], **OPTIMIZER[method], **(extra or {})}


def run_key(part: str, method: str, dataset: str, split: str, seed: int, eps: float, over: dict) -> str:
    return json.dumps([part, method, dataset, split, seed, eps, sorted(over.items())])


def fit_one(part: str, method: str, dataset: str, split: str, seed: int, eps: float, delta_rule: str,
            over: dict, progress: bool) -> dict:
    task = make_task(load_dataset(dataset), split, seed)
    cls = get_method(method)
    m = cls(**over)
    m.check_task(task)
    n_train = int(task.train_mask.sum())
    units = task.num_nodes if task.setting == "transductive" else n_train
    harness_delta = default_delta(units)
    delta = 1.0 / n_train if delta_rule == "1/N_train" else float(delta_rule)
    budget = Budget(eps, delta) if m.is_private else Budget()
    m.check_budget(budget)
    t0 = time.perf_counter()
    fitted = m.fit(task, budget, seed=seed, device="cpu", progress=progress)
    secs = time.perf_counter() - t0
    metrics = evaluate(task, fitted.predict_proba())
    spent = fitted.epsilon(budget.delta) if m.is_private else math.inf
    if m.is_private and spent > eps * (1 + 1e-9):
        raise RuntimeError(f"{method} spent {spent} > {eps}")
    return {"part": part, "method": method, "dataset": dataset, "split": split, "seed": seed, "target_epsilon": eps,
            "delta": budget.delta, "epsilon": spent, "harness_delta": harness_delta,
            "epsilon_at_harness_delta": fitted.ledger.epsilon(harness_delta) if m.is_private else math.inf,
            "n_train": n_train, "overrides": over, "metrics": metrics, "seconds": secs,
            "info": {k: v for k, v in fitted.info.items() if isinstance(v, (int, float, str, bool))}}


def plan(parts: list[str], seeds: list[int], datasets: list[str], batches: list[int] | None = None,
         ks: list[int] | None = None) -> list[tuple]:
    jobs = []
    if "main" in parts:
        for dataset in [d for d in MAIN_DATASETS if d in datasets]:
            for split in MAIN_SPLITS:
                for method in MAIN_METHODS:
                    for seed in seeds:
                        jobs.append(("main", method, dataset, split, seed, 12.0, "1/N_train", overrides(method, dataset)))
    if "ablation" in parts:
        for b in batches or ABLATION_BATCH:
            for seed in seeds:
                jobs.append(("ablation-batch", "dpgnn-adam", ABLATION_DATASET, "random-75-10-15", seed, 12.0,
                             "1/N_train", overrides("dpgnn-adam", ABLATION_DATASET, {"batch_size": b})))
        for k in ks or ABLATION_K:
            for seed in seeds:
                jobs.append(("ablation-K", "dpgnn-adam", ABLATION_DATASET, "random-75-10-15", seed, 12.0,
                             "1/N_train", overrides("dpgnn-adam", ABLATION_DATASET, {"max_degree": k})))
    if "fdp" in parts:
        for dataset in ("cora", "citeseer"):
            for seed in seeds:
                jobs.append(("fdp", "dpgnn", dataset, "public", seed, 8.0, "1e-05", overrides("dpgnn", dataset)))
    return jobs


def _ms(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"{statistics.fmean(xs):.4f} ± {statistics.stdev(xs) if len(xs) > 1 else 0.0:.4f}"


def _eps(xs: list[float]) -> str:
    return "inf" if any(math.isinf(x) for x in xs) else f"{max(xs):.3f}"


def tables(rows: list[dict]) -> dict[str, str]:
    out = {}
    main = [r for r in rows if r["part"] == "main"]
    if main:
        lines = []
        for dataset in MAIN_DATASETS:
            for split in MAIN_SPLITS:
                group = [r for r in main if r["dataset"] == dataset and r["split"] == split]
                for method in MAIN_METHODS:
                    rs = [r for r in group if r["method"] == method]
                    if not rs:
                        continue
                    lines.append([dataset, split, method, _ms([r["metrics"]["test_acc"] for r in rs]),
                                  _eps([r["epsilon"] for r in rs]), f"{rs[0]['delta']:.3g}",
                                  _eps([r["epsilon_at_harness_delta"] for r in rs]), f"{rs[0]['harness_delta']:.0e}",
                                  str(len(rs)), f"{statistics.fmean(r['seconds'] for r in rs):.0f}"])
                gap = _gap(group)
                if gap:
                    lines.append([dataset, split, "dpgnn(best) - dp-mlp", gap, "", "", "", "", "", ""])
        out["main"] = format_table(["dataset", "split", "method", "test acc", "spent eps", "delta",
                                    "eps @ harness delta", "harness delta", "seeds", "fit s"], lines)
    for part, key, label in (("ablation-batch", "batch_size", "batch size m"), ("ablation-K", "max_degree", "K")):
        rs = [r for r in rows if r["part"] == part]
        if rs:
            vals = sorted({r["overrides"][key] for r in rs})
            lines = [[str(v), _ms([r["metrics"]["test_acc"] for r in rs if r["overrides"][key] == v]),
                      _eps([r["epsilon"] for r in rs if r["overrides"][key] == v]),
                      str(rs[0]["info"].get("steps") if key == "max_degree" else
                          next(r["info"].get("steps") for r in rs if r["overrides"][key] == v)),
                      f"{statistics.fmean(r['info'].get('noise_multiplier', 0) for r in rs if r['overrides'][key] == v):.3f}",
                      str(len([r for r in rs if r["overrides"][key] == v]))] for v in vals]
            out[part] = format_table([label, "test acc", "spent eps", "steps", "lambda", "seeds"], lines)
    fdp = [r for r in rows if r["part"] == "fdp"]
    if fdp:
        lines = []
        for dataset in ("cora", "citeseer"):
            rs = [r for r in fdp if r["dataset"] == dataset]
            if rs:
                lines.append([dataset, "public", "dpgnn (FDP)", _ms([r["metrics"]["test_acc"] for r in rs]),
                              _eps([r["epsilon"] for r in rs]), f"{rs[0]['delta']:.0e}", str(len(rs))])
        out["fdp"] = format_table(["dataset", "split", "method", "test acc", "spent eps", "delta", "seeds"], lines)
    return out


def _gap(group: list[dict]) -> str:
    def mean(method):
        xs = [r["metrics"]["test_acc"] for r in group if r["method"] == method]
        return statistics.fmean(xs) if xs else None

    best = max((m for m in (mean("dpgnn"), mean("dpgnn-adam")) if m is not None), default=None)
    base = mean("dp-mlp")
    if best is None or base is None:
        return ""
    return f"{100 * (best - base):+.1f} points"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", nargs="+", default=["main", "ablation", "fdp"], choices=["main", "ablation", "fdp"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--datasets", nargs="+", default=MAIN_DATASETS)
    ap.add_argument("--ablation-batch", type=int, nargs="+", default=None, help=f"default {ABLATION_BATCH}")
    ap.add_argument("--ablation-k", type=int, nargs="+", default=None, help=f"default {ABLATION_K}")
    ap.add_argument("--methods", nargs="+", default=None, help="only these methods (default: all of the part)")
    ap.add_argument("--splits", nargs="+", default=None, help="only these splits (default: all of the part)")
    ap.add_argument("--out-dir", default="bench/experiments/results")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "dpgnn_runs.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    done = {run_key(r["part"], r["method"], r["dataset"], r["split"], r["seed"], r["target_epsilon"], r["overrides"])
            for r in rows}
    jobs = [j for j in plan(args.parts, args.seeds, args.datasets, args.ablation_batch, args.ablation_k)
            if run_key(j[0], j[1], j[2], j[3], j[4], j[5], j[7]) not in done
            and (args.methods is None or j[1] in args.methods) and (args.splits is None or j[3] in args.splits)]
    t_start = time.perf_counter()
    bar = progress_bar(len(jobs), "dpgnn grid", True)
    for part, method, dataset, split, seed, eps, delta_rule, over in jobs:
        bar.set_postfix_str(f"{part} {method} {dataset}/{split} s{seed}")
        row = fit_one(part, method, dataset, split, seed, eps, delta_rule, over, progress=sys.stderr.isatty())
        rows.append(row)
        with log.open("a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
        print(f"{part} {method} {dataset}/{split} seed {seed}: test {row['metrics']['test_acc']:.4f} "
              f"eps {row['epsilon']:.4g} ({row['seconds']:.0f}s)", file=sys.stderr, flush=True)
        bar.update(1)
    bar.close()
    wall = time.perf_counter() - t_start
    for name, text in tables(rows).items():
        (out / f"dpgnn_{name}.md").write_text(text + "\n")
        print(f"\n## {name}\n{text}")
    print(f"\n{len(jobs)} runs in {wall / 60:.1f} min wall time", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
