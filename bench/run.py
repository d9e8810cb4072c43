"""The run loop: one run = (method, dataset, split, budget, hyperparameters, seed).

Everything that can be checked without training (names, split/dataset fit, budget, hyperparameters,
data files) is checked before any run is opened, so bad input leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from bench import tracking
from bench.datasets import GraphDataset, load_dataset, parse_dataset_name
from bench.splits import check_split, default_split, make_task
from methods.base import (Budget, BudgetError, ConfigError, Method, Task, config_dict, default_delta, get_method,
                          stable_hash)
from methods.training import resolve_device

DEFAULT_EXPERIMENT = "dp-gnn-bench"


@dataclass
class RunSpec:
    methods: list[str]
    dataset: str
    split: str | None = None
    seeds: list[int] = field(default_factory=lambda: [0])
    epsilon: float | None = None
    delta: float | None = None
    overrides: list[str] = field(default_factory=list)  # "key=value" or "method.key=value"
    device: str = "auto"
    data_root: str | None = None
    download: bool = False
    experiment: str = DEFAULT_EXPERIMENT
    track: bool = True
    progress: bool = True
    # membership-inference attacks on every trained model (bench.attack): names, "key=value" options,
    # bootstrap resamples for their intervals, an optional folder for ROC plots
    attacks: list[str] = field(default_factory=list)
    attack_overrides: list[str] = field(default_factory=list)
    bootstrap: int = 1000
    plot_dir: str | None = None
    # extra MLflow tags on every run (bench.sweep marks its cells and their owner process with them)
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class RunResult:
    method: str
    dataset: str
    split: str
    seed: int
    privacy_unit: str
    metrics: dict[str, float]
    epsilon: float  # spent, from the ledger
    delta: float
    target_epsilon: float
    run_id: str | None
    seconds: float
    info: dict[str, Any] = field(default_factory=dict)
    attacks: list[dict[str, Any]] = field(default_factory=list)  # AttackReport.to_dict() per attack

    def to_dict(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        for k in ("epsilon", "target_epsilon"):
            if not math.isfinite(d[k]):
                d[k] = "inf"
        return d


def parse_overrides(items: list[str], method_names: list[str]) -> dict[str, dict[str, str]]:
    """``["hidden=32", "gcn.lr=0.05"]`` -> per-method override dicts; unknown keys are errors."""
    per: dict[str, dict[str, str]] = {m: {} for m in method_names}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"--set expects key=value (got {item!r})")
        scope, dot, name = key.rpartition(".")
        if dot and scope in per:
            per[scope][name] = value
            continue
        if dot:
            raise ConfigError(f"--set {item}: {scope!r} is not one of the methods being run ({', '.join(per)})")
        targets = [m for m in method_names if key in _fields(get_method(m))]
        if not targets:
            valid = {m: sorted(_fields(get_method(m))) for m in method_names}
            listing = "; ".join(f"{m}: {', '.join(v) or '(none)'}" for m, v in valid.items())
            raise ConfigError(f"unknown hyperparameter {key!r}; valid ones are {listing}")
        for m in targets:
            per[m][key] = value
    return per


def _fields(cls: type[Method]) -> set[str]:
    import dataclasses

    return {f.name for f in dataclasses.fields(cls.Config)}


def privacy_units(task: Task, unit: str) -> int:
    if unit == "edge":
        return max(task.num_edges, 1)
    if task.setting == "transductive":
        return task.num_nodes
    return int(task.train_mask.sum())


def resolve_budget(spec_eps: float | None, spec_delta: float | None, method: Method, task: Task) -> Budget:
    if not method.is_private:
        return Budget(math.inf, 0.0)  # listed next to private methods: runs without privacy
    eps = math.inf if spec_eps is None else spec_eps
    delta = spec_delta if spec_delta is not None else default_delta(privacy_units(task, method.privacy_unit))
    return Budget(eps, delta)


def evaluate(task: Task, proba: torch.Tensor) -> dict[str, float]:
    """Accuracy and macro-F1 on every non-empty part of the split (OGB's Evaluator for ogbn-*)."""
    from sklearn.metrics import f1_score

    if proba.shape != (task.num_nodes, task.num_classes):
        raise RuntimeError(f"predict_proba returned shape {tuple(proba.shape)}, expected "
                           f"({task.num_nodes}, {task.num_classes})")
    pred = proba.argmax(dim=1).cpu()
    y = task.data.y.cpu()
    parts = {"train": task.train_mask, "val": task.val_mask, "test": task.test_mask}
    if task.query_mask is not None:
        parts["query"] = task.query_mask
    out = {}
    evaluator = None
    if task.ogb_name:
        from ogb.nodeproppred import Evaluator

        evaluator = Evaluator(task.ogb_name)
    for part, mask in parts.items():
        if int(mask.sum()) == 0:
            continue
        yt, yp = y[mask], pred[mask]
        if evaluator is not None:
            acc = evaluator.eval({"y_true": yt.view(-1, 1), "y_pred": yp.view(-1, 1)})["acc"]
        else:
            acc = float((yt == yp).float().mean())
        out[f"{part}_acc"] = float(acc)
        out[f"{part}_macro_f1"] = float(f1_score(yt.numpy(), yp.numpy(), average="macro",
                                                 labels=list(range(task.num_classes)), zero_division=0))
    return out


@dataclass
class Prepared:
    spec: RunSpec
    classes: list[type[Method]]
    overrides: dict[str, dict[str, str]]
    dataset: GraphDataset
    split: str
    device: torch.device
    attacks: Any = None  # bench.attack.AttackPlan when attacks were asked for


def prepare(spec: RunSpec) -> Prepared:
    """Validate the whole request and load the data; raise a BenchError before anything is written."""
    if not spec.methods:
        raise ConfigError("no method given")
    classes = [get_method(m) for m in spec.methods]
    if len(set(spec.methods)) != len(spec.methods):
        raise ConfigError("a method is listed twice")
    parse_dataset_name(spec.dataset)
    split = spec.split or default_split(spec.dataset)
    check_split(split, spec.dataset)
    if not spec.seeds:
        raise ConfigError("no seed given")
    if any(s < 0 for s in spec.seeds) or len(set(spec.seeds)) != len(spec.seeds):
        raise ConfigError(f"seeds must be distinct non-negative integers (got {spec.seeds})")
    if spec.epsilon is not None:
        Budget(spec.epsilon, spec.delta or 0.0)  # validates epsilon > 0 and delta in [0, 1)
    elif spec.delta is not None:
        Budget(math.inf, spec.delta)
    overrides = parse_overrides(spec.overrides, spec.methods)
    for cls in classes:
        method = cls(**overrides[cls.name])  # hyperparameter errors surface here
        if method.is_private and spec.epsilon is None:
            raise BudgetError(f"method {cls.name} is private: give --epsilon (or --epsilon inf to train without noise)")
    if spec.epsilon is not None and math.isfinite(spec.epsilon) and all(c.privacy_unit == "none" for c in classes):
        # a lone non-private method with a target epsilon is a mistake; mixed lists run it at eps=inf
        classes[0]().check_budget(Budget(spec.epsilon, spec.delta or 0.0))
    plan = None
    if spec.attacks or spec.attack_overrides:
        from bench.attack import plan_attacks

        plan = plan_attacks(spec.attacks, spec.attack_overrides, spec.bootstrap, spec.plot_dir)
    device = resolve_device(spec.device)
    dataset = load_dataset(spec.dataset, spec.data_root, spec.download)
    return Prepared(spec, classes, overrides, dataset, split, device, plan)


def run_one(p: Prepared, cls: type[Method], seed: int, parent: tracking.TrackedRun | None = None) -> RunResult:
    spec = p.spec
    task = make_task(p.dataset, p.split, seed)
    method = cls(**p.overrides[cls.name])
    method.check_task(task)
    budget = resolve_budget(spec.epsilon, spec.delta, method, task)
    method.check_budget(budget)
    hparams = config_dict(method.config)
    identity = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": seed,
                "epsilon": str(budget.epsilon), "delta": budget.delta, "hparams": hparams}
    params = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": seed,
              "privacy_unit": cls.privacy_unit, "setting": task.setting, "target_epsilon": str(budget.epsilon),
              "delta": budget.delta, "device": str(p.device), "split_hash": task.split_hash(),
              "config_hash": stable_hash(identity), "dataset_source": p.dataset.source,
              **{f"hp.{k}": v for k, v in hparams.items()}}
    tags = {**spec.tags, "method": cls.name, "dataset": p.dataset.name, "split": p.split,
            "config_hash": params["config_hash"]}
    name = f"{cls.name}/{p.dataset.name}/{p.split}/s{seed}"
    with tracking.tracked_run(spec.experiment, name, tags=tags, parent=parent, enabled=spec.track) as run:
        run.log_params(params)
        run.log_dict({"identity": identity, "task": task.summary(), "split_info": task.info,
                      "dataset_changes": p.dataset.changes, "hparams": hparams}, "config.json")
        t0 = time.perf_counter()
        fitted = method.fit(task, budget, seed=seed, device=p.device, progress=spec.progress)
        seconds = time.perf_counter() - t0
        metrics = evaluate(task, fitted.predict_proba())
        spent = fitted.epsilon(budget.delta) if method.is_private else math.inf
        if method.is_private and spent > budget.epsilon * (1 + 1e-9):
            raise RuntimeError(f"{cls.name} spent epsilon={spent:.6g} > target {budget.epsilon:g}: a method bug")
        run.log_history(fitted.history)
        run.log_metrics({**metrics, "epsilon": spent, "fit_seconds": seconds})
        run.log_dict(fitted.ledger.to_dict(), "ledger.json")
        run.set_tags({"inference_private": fitted.info.get("inference_private", "n/a")})
        reports = []
        if p.attacks is not None:
            from bench.attack import run_attacks

            reports = [a.to_dict() for a in run_attacks(p.attacks, task, method, budget, fitted, seed, p.device, run,
                                                        spec.experiment, spec.track, spec.progress, name)]
        return RunResult(cls.name, p.dataset.name, p.split, seed, cls.privacy_unit, metrics, spent, budget.delta,
                         budget.epsilon, run.run_id, seconds, dict(fitted.info), reports)


def run_all(spec: RunSpec) -> list[RunResult]:
    p = prepare(spec)
    return [run_one(p, cls, seed) for cls in p.classes for seed in spec.seeds]


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------


def _mean_std(xs: list[float]) -> str:
    if not xs:
        return "-"
    m = statistics.fmean(xs)
    s = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{m:.4f} ± {s:.4f}"


def _eps(xs: list[float]) -> str:
    if not xs or any(math.isinf(x) for x in xs):
        return "inf"
    return f"{max(xs):.4g}"


def results_table(results: list[RunResult]) -> str:
    groups: dict[tuple, list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.method, r.dataset, r.split, r.target_epsilon), []).append(r)
    header = ["method", "dataset", "split", "unit", "target eps", "spent eps", "test acc", "test macro-F1",
              "seeds", "fit s"]
    rows = []
    for (m, d, s, eps), rs in groups.items():
        rows.append([m, d, s, rs[0].privacy_unit, "inf" if math.isinf(eps) else f"{eps:g}", _eps([r.epsilon for r in rs]),
                     _mean_std([r.metrics.get("test_acc", math.nan) for r in rs]),
                     _mean_std([r.metrics.get("test_macro_f1", math.nan) for r in rs]), str(len(rs)),
                     f"{statistics.fmean(r.seconds for r in rs):.1f}"])
    return format_table(header, rows)


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    """Write JSON through a temporary file and rename, so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(obj, fh, indent=2, default=str)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
