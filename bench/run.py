"""The run job: one run = (method, dataset, split, budget, hyperparameters, seed).

A request (:class:`~bench.request.RunSpec`) is resolved once into a frozen :class:`~bench.plan.RunPlan`
(:func:`bench.plan.plan_run`, which refuses bad input before any run opens: a :class:`~methods.errors.BenchError`);
:func:`run_one` trains, evaluates and logs one method at one seed of a plan (an error inside it is a
:class:`~bench.tracking.RunFailed`, the run FAILED); :func:`run_plan` does every method x seed of a plan and
:func:`run_targets` every one of a request. :mod:`bench.api` is the documented entry point over them.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from bench import tracking
from bench.cliargs import check_threads, fmt_eps
from bench.io import format_table
from bench.plan import MethodPlan, RunPlan, RunSpec, plan_run, privacy_units, resolve_budget  # noqa: F401
from bench.provenance import host_description, predictions_hash
from bench.splits import make_task  # noqa: F401  (re-exported)
from methods.base import ConfigError, ContractViolation, Task, check_fitted, fit_method, get_method, stable_hash
from methods.privacy.accountant import active_accountant
from methods.streams import RunStreams

DEFAULT_EXPERIMENT = "dp-gnn-bench"
DIAGNOSTIC = "diagnostic."
DIAGNOSTIC_NOTE = "not private, not released: computed from private data without a DP mechanism (debugging only)"
#: per-epoch keys that a ledger covers (the accountant's epsilon after each step is data-independent)
RELEASED_HISTORY = frozenset({"epsilon", "epoch", "steps", "stage", "stage_epoch"})


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
    info: dict[str, Any] = field(default_factory=dict)  # released facts only (no diagnostics)
    attacks: list[dict[str, Any]] = field(default_factory=list)  # AttackReport.to_dict() per attack
    unit_label: str = ""
    inference_private: bool | None = None
    #: numbers no ledger covers (training loss, accuracy on private labels, exact counts): not released
    diagnostics: dict[str, Any] = field(default_factory=dict)
    #: per-epoch rows (keys no ledger covers under ``diagnostic.``); kept only when the spec asks for diagnostics
    history: list[dict[str, float]] = field(default_factory=list)

    def to_dict(self, diagnostics: bool = False) -> dict[str, Any]:
        d = self.__dict__.copy()
        for k in ("epsilon", "target_epsilon"):
            if not math.isfinite(d[k]):
                d[k] = "inf"
        if diagnostics:
            d["diagnostics_note"] = DIAGNOSTIC_NOTE
        else:
            d.pop("diagnostics")
            d.pop("history")
        return d


def evaluate(task: Task, proba: torch.Tensor) -> dict[str, float]:
    """Accuracy and macro-F1 on every non-empty part of the split (OGB's Evaluator for ogbn-*).

    The test (and PrivGNN's public query) parts are the benchmark's evaluation. The training and validation
    parts are labels of private units that no ledger covers: they come back as ``diagnostic.*`` keys."""
    from sklearn.metrics import f1_score

    if proba.shape != (task.num_nodes, task.num_classes):
        raise ContractViolation(f"predict_proba returned shape {tuple(proba.shape)}, expected "
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
        prefix = DIAGNOSTIC if part in ("train", "val") else ""
        out[f"{prefix}{part}_acc"] = float(acc)
        out[f"{prefix}{part}_macro_f1"] = float(f1_score(yt.numpy(), yp.numpy(), average="macro",
                                                         labels=list(range(task.num_classes)), zero_division=0))
    return out


def split_info(info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(released facts, diagnostics) of a ``Fitted.info``."""
    released = {k: v for k, v in info.items() if k != "diagnostic"}
    diag = dict(info.get("diagnostic") or {})
    return released, diag


def diagnostic_history(history: list[dict[str, float]]) -> list[dict[str, float]]:
    """Per-epoch rows with every key a ledger does not cover under ``diagnostic.``."""
    return [{(k if k in RELEASED_HISTORY else DIAGNOSTIC + k): v for k, v in row.items()} for row in history]


def run_name(method: str, dataset: str, split: str, epsilon: float, seed: int) -> str:
    """A run's MLflow name: ``method/dataset/split/eps=E/sSEED`` (``eps=inf`` without noise)."""
    eps_name = "inf" if math.isinf(epsilon) else f"{epsilon:g}"
    return f"{method}/{dataset}/{split}/eps={eps_name}/s{seed}"


def run_one(p: RunPlan, mp: MethodPlan, seed: int, parent: tracking.TrackedRun | None = None) -> RunResult:
    """Train, evaluate (and attack, when planned) one method of a plan at one seed as one tracked run, calibrated
    and reported with the plan's accountant."""
    with p.accounting():
        return _run_one(p, mp, seed, parent)


def _run_one(p: RunPlan, mp: MethodPlan, seed: int, parent: tracking.TrackedRun | None) -> RunResult:
    cls, trk = mp.cls, p.tracking
    task = p.task(seed)
    method = mp.build()
    method.check_task(task)
    budget = p.budget(method, task)
    method.check_budget(budget)
    hparams = dict(mp.hparams)
    identity = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": seed,
                "epsilon": str(budget.epsilon), "delta": budget.delta, "hparams": hparams}
    streams = RunStreams(seed, secure_noise=p.secure_noise)
    params = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": seed,
              "privacy_unit": cls.privacy_unit, "unit_label": method.relation_label(), "setting": task.setting,
              "target_epsilon": str(budget.epsilon), "delta": budget.delta, "device": str(p.device),
              "split_hash": task.split_hash(), "config_hash": stable_hash(identity),
              "dataset_source": p.dataset.source, "secure_noise": p.secure_noise,
              "random_streams": streams.describe()["streams"], "hp_source": mp.hp_source,
              "accountant": active_accountant(), "privacy_units": privacy_units(task, cls.privacy_unit),
              **p.accountant_params(),
              **p.conventions(method, task, budget),
              "host": host_description(p.device), "threads": torch.get_num_threads(),
              **{f"hp.{k}": v for k, v in hparams.items()}}
    tags = {**trk.tags, "method": cls.name, "dataset": p.dataset.name, "split": p.split,
            "config_hash": params["config_hash"], "diagnostics": DIAGNOSTIC_NOTE}
    name = run_name(cls.name, p.dataset.name, p.split, budget.epsilon, seed)
    with tracking.tracked_run(trk.experiment, name, tags=tags, parent=parent, enabled=trk.track) as run:
        run.log_params(params)
        run.log_dict({"identity": identity, "task": task.summary(), "split_info": task.info,
                      "dataset_changes": p.dataset.changes, "hparams": hparams, "streams": streams.describe()},
                     "config.json")
        t0 = time.perf_counter()
        fitted = fit_method(method, task, budget, streams, device=p.device, progress=trk.progress)
        seconds = time.perf_counter() - t0
        proba = fitted.predict_proba()
        if tuple(proba.shape) != (task.num_nodes, task.num_classes):
            raise ContractViolation(f"{cls.name}.predict_proba returned shape {tuple(proba.shape)}, expected "
                                    f"({task.num_nodes}, {task.num_classes})")
        check_fitted(method, fitted, budget)
        evaluation = evaluate(task, proba)
        spent = fitted.epsilon(budget.delta) if method.is_private else math.inf
        released, diag = split_info(fitted.info)
        metrics = {k: v for k, v in evaluation.items() if not k.startswith(DIAGNOSTIC)}
        diag_metrics = {k: v for k, v in evaluation.items() if k.startswith(DIAGNOSTIC)}
        diag_metrics.update({DIAGNOSTIC + k: v for k, v in diag.items() if _number(v)})
        history = diagnostic_history(fitted.history)
        run.log_history(history)
        run.log_metrics({**metrics, **diag_metrics, **{f"info.{k}": v for k, v in released.items() if _number(v)},
                         "epsilon": spent, "fit_seconds": seconds})
        run.log_dict(fitted.ledger.to_dict(), "ledger.json")
        run.log_dict(released, "info.json")
        if p.log_release:
            from bench import release

            release.log(run, fitted, task)
        inference_private = released.get("inference_private")
        run.set_tags({"inference_private": "n/a" if inference_private is None else inference_private,
                      "unit_label": method.relation_label(), "predictions_hash": predictions_hash(task, proba)})
        reports = []
        if p.attacks is not None:
            from attacks.base import Target
            from bench.attack import attack_one

            target = Target(task, method, budget, fitted, streams, p.device)
            reports = attack_one(p.attacks, target, run, experiment=trk.experiment, track=trk.track,
                                 progress=trk.progress, run_name=name,
                                 tags={**trk.tags, "attacked_model": "the run's own model, in memory"})
        return RunResult(cls.name, p.dataset.name, p.split, seed, cls.privacy_unit, metrics, spent, budget.delta,
                         budget.epsilon, run.run_id, seconds, released, reports, method.relation_label(),
                         None if inference_private is None else bool(inference_private),
                         {**{k[len(DIAGNOSTIC):]: v for k, v in diag_metrics.items()}, **diag},
                         history if p.diagnostics else [])


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def run_targets(spec: RunSpec, log: Callable[[str], None] | None = None) -> list[RunResult]:
    """Every method x seed of ``spec``: planned first (a BenchError before any run opens), then :func:`run_plan`."""
    return run_plan(plan_run(spec), log)


def run_plan(plan: RunPlan, log: Callable[[str], None] | None = None) -> list[RunResult]:
    """Every method x seed of a plan (attacks included when it has them), one run each. ``log`` gets one line per
    dataset and per finished run."""
    log = log or (lambda line: None)
    ds = plan.dataset
    if plan.epsilon is not None:
        plain = [m.name for m in plan.methods if m.cls.privacy_unit == "none"]
        if plain:
            log(f"# note: {', '.join(plain)} not private: run at epsilon=inf")
    changed = ", ".join(f"{k}={v}" for k, v in ds.changes.items() if v) or "nothing"
    log(f"# {ds.name}: {ds.num_nodes} nodes, {ds.data.edge_index.size(1) // 2} edges, {ds.data.x.size(1)} features, "
        f"{ds.num_classes} classes (normalised on load: {changed})")
    results = []
    for mp in plan.methods:
        for seed in plan.seeds:
            r = run_one(plan, mp, seed)
            results.append(r)
            attacks = f", {len(r.attacks)} attack(s)" if plan.attacks is not None else ""
            log(f"  {r.method} seed {seed}: test acc {r.metrics.get('test_acc', float('nan')):.4f}, "
                f"epsilon {fmt_eps(r.epsilon)}, {r.seconds:.1f}s{attacks}; "
                + (f"run {r.run_id}" if r.run_id else "not tracked"))
    return results


@contextlib.contextmanager
def using_threads(threads: int | None) -> Iterator[None]:
    """torch and numba threads for the duration of a job: ``threads`` >= 1, 0 = every core of this machine,
    None = leave them as they are. The previous counts are restored afterwards."""
    if threads is None:
        yield
        return
    check_threads(threads)
    import numba

    count = threads or os.cpu_count() or 1
    before = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(count)
    numba.set_num_threads(max(1, min(count, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        numba.set_num_threads(before[1])


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------


def _mean_std(xs: list[float]) -> str:
    """``mean ± std`` over seeds; one seed prints its value alone (no "± 0")."""
    if not xs:
        return "-"
    m = statistics.fmean(xs)
    if len(xs) == 1:
        return f"{m:.4f}"
    return f"{m:.4f} ± {statistics.stdev(xs):.4f}"


def _eps(xs: list[float]) -> str:
    if not xs or any(math.isinf(x) for x in xs):
        return "inf"
    return fmt_eps(max(xs))


def results_table(results: list[RunResult]) -> str:
    groups: dict[tuple, list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.method, r.dataset, r.split, r.target_epsilon), []).append(r)
    header = ["method", "dataset", "split", "unit", "target eps", "spent eps", "test acc", "test macro-F1",
              "seeds", "fit s"]
    rows = []
    for (m, d, s, eps), rs in groups.items():
        rows.append([m, d, s, rs[0].unit_label or rs[0].privacy_unit, "inf" if math.isinf(eps) else f"{eps:g}",
                     _eps([r.epsilon for r in rs]),
                     _mean_std([r.metrics.get("test_acc", math.nan) for r in rs]),
                     _mean_std([r.metrics.get("test_macro_f1", math.nan) for r in rs]), str(len(rs)),
                     f"{statistics.fmean(r.seconds for r in rs):.1f}"])
    return format_table(header, rows) + unit_footnotes([(m, rs[0].unit_label) for (m, *_), rs in groups.items()])


def unit_note(name: str, label: str | None = None) -> str:
    """The footnote of unit label ``label`` (the unit column: the relation that ran, ``Method.relation_label``) of
    method ``name``: that relation's note (``Method.relation_labels``), else the class's ``unit_note`` for its own
    label; "" for an unknown method or label."""
    try:
        cls = get_method(name)
    except ConfigError:
        return ""
    label = label or cls.label()
    for rel_label, note in cls.relation_labels.values():
        if rel_label == label:
            return note
    return cls.unit_note if label == cls.label() else ""


def unit_footnotes(units: list[tuple[str, str | None] | str]) -> str:
    """One line per unit label that needs one (what the epsilon holds for), for the (method, unit label) pairs of
    a table's rows (a bare method name: its class's label); the label is the one the unit column shows, so a
    relation's footnote matches its rows."""
    notes: dict[str, str] = {}
    for item in units:
        name, label = (item, None) if isinstance(item, str) else item
        if not label:
            try:
                label = get_method(name).label()
            except ConfigError:
                continue
        note = unit_note(name, label)
        if note:
            notes.setdefault(label, note)
    return "".join(f"\n* {label}: {note}" for label, note in sorted(notes.items()))


def tracked_runs(results: list[RunResult], experiment: str = DEFAULT_EXPERIMENT, track: bool = True) -> str:
    """Where every run went: a header with the MLflow experiment and tracking URI (or "not tracked"), then one
    row per run with its id (what ``bench account run RUN_ID`` takes) and name, and its attacks' child runs."""
    if not track:
        header = "runs (not tracked: --no-track; nothing was logged to MLflow):"
    else:
        from bench import tracking

        uri = tracking.tracking_uri()
        header = (f"runs tracked in MLflow experiment {experiment!r} at {uri}\n"
                  f"(browse: mlflow ui --backend-store-uri {uri}; re-account one: bench account run RUN_ID)")
    rows = []
    for r in results:
        rows.append([r.run_id or "-", run_name(r.method, r.dataset, r.split, r.target_epsilon, r.seed)])
        for a in r.attacks:
            if a.get("run_id"):
                rows.append([f"  {a['run_id']}", f"  attack {a['attack']} (child run)"])
    return header + "\n" + format_table(["run id", "name"], rows)

