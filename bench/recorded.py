"""Recorded runs, back: a run's setting rebuilt from its logged params, and attacks of the released model it logged.

:func:`recorded_setting` rebuilds what a run ran (task, method with its hyperparameters, budget, seed) from its MLflow
params or a leaderboard record's, checking the split hash; :func:`attack_recorded` attacks the model a tracked run
logged (:mod:`bench.release`), each attack a child run of that run. ``bench attack --run`` and
:func:`bench.api.attack_recorded` call it; ``scripts.unit_attacks`` uses both for the leaderboard's unit attacks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from attacks.base import Target
from bench import release, tracking
from bench.attack import AttackPlan, attack_one
from methods.privacy.conformance import adapters  # noqa: F401 - the registered accountants a record may name
from bench.datasets import load_dataset
from bench.options import field_names
from bench.run import RunResult
from bench.splits import make_task
from methods.base import Budget, ConfigError, Method, Task, get_method
from methods.device import resolve_device
from methods.privacy.accountant import LEGACY_ACCOUNTANT, using_accountant
from methods.streams import RunStreams


@dataclass
class Recorded:
    """What a recorded run ran: its task (rebuilt from its dataset, split and seed, checked against the recorded
    split hash), its method with the recorded hyperparameters, its budget and seed."""

    task: Task
    method: Method
    budget: Budget
    seed: int
    #: the accountant it calibrated and reported with: a re-execution or a reference fit for an attack on it runs
    #: under it (``methods.privacy.accountant.using_accountant``), so it spends the recorded ledger
    accountant: str = LEGACY_ACCOUNTANT


def recorded_hparams(cls: type[Method], params: dict[str, Any]) -> dict[str, Any]:
    """The hyperparameters a run recorded (its ``hp.*`` params the method still has). A method that has since gained
    a ``relation`` field (gap-node, progap-node, dpgnn, dpgnn-adam: a sound default, ``input-graph``, beside the
    papers' relation) rebuilds a run recorded without one as what it ran then: the papers' relation."""
    from methods.privacy.presets import INPUT_GRAPH

    known = set(field_names(cls.Config))
    hp = {k[3:]: v for k, v in params.items() if k.startswith("hp.") and k[3:] in known}
    papers = [r for r in cls.relation_labels if r != INPUT_GRAPH]
    if hp and "relation" in known and "relation" not in hp and len(papers) == 1:
        hp["relation"] = papers[0]
    return hp


def recorded_setting(params: dict[str, Any], data_root: str | None = None, datasets: dict | None = None) -> Recorded:
    """Rebuild a run's setting from its MLflow params (or a leaderboard record's ``params``). ``datasets`` caches
    loaded datasets by name across calls."""
    for key in ("method", "dataset", "split", "seed", "target_epsilon"):
        if key not in params:
            raise ConfigError(f"the recorded run has no {key!r} parameter: not a run of `bench run`")
    cls = get_method(str(params["method"]))
    method = cls(**recorded_hparams(cls, params))
    datasets = {} if datasets is None else datasets
    name = str(params["dataset"])
    if name not in datasets:
        datasets[name] = load_dataset(name, data_root, False)
    seed = int(params["seed"])
    task = make_task(datasets[name], str(params["split"]), seed)
    want = params.get("split_hash")
    if want and task.split_hash() != want:
        raise ConfigError(f"the rebuilt split of {name}/{params['split']}/seed {seed} is not the recorded one "
                          f"(split hash {task.split_hash()} != {want}): another version of the dataset?")
    eps = float(params["target_epsilon"])
    delta = float(params.get("delta") or 0.0)
    budget = Budget(eps, delta) if method.is_private else Budget(math.inf, 0.0)
    return Recorded(task, method, budget, seed, str(params.get("accountant") or LEGACY_ACCOUNTANT))


def attack_recorded(plan: AttackPlan, run_ids: list[str], *, experiment: str, track: bool = True,
                    device: Any = "cpu", data_root: str | None = None, progress: bool = False) -> list[Any]:
    """Attack the released models that tracked runs logged (:mod:`bench.release`), each attack a child run of its
    recorded run: the attacked model is the one the run served, loaded from its artefact and checked against its
    recorded posteriors, never a refit (the served model: its release and its serving state, which is not a release;
    each report's ``attacked_state`` says so). One :class:`bench.run.RunResult` per run (no training metrics)."""
    if not run_ids:
        raise ConfigError("no run given")
    dev = resolve_device(device)
    datasets: dict = {}
    found = []
    for run_id in run_ids:  # everything is checked before any attack runs
        try:
            run = tracking.client().get_run(run_id)
        except Exception:
            raise ConfigError(f"no tracked run {run_id!r} in {tracking.tracking_uri()}") from None
        setting = recorded_setting(dict(run.data.params), data_root, datasets)
        fitted, manifest = release.load(run_id, setting.task, dev)
        found.append((run, setting, fitted))
    results = []
    for run, setting, fitted in found:
        method, task = setting.method, setting.task
        target = Target(task, method, setting.budget, fitted, RunStreams(setting.seed), dev)
        parent = tracking.TrackedRun(run.info.run_id if track else None)
        with using_accountant(setting.accountant):  # reference and shadow models train as the target did
            reports = attack_one(plan, target, parent, experiment=experiment, track=track, progress=progress,
                                 run_name=run.info.run_name or run.info.run_id,
                                 tags={"attacked_model": release.SOURCE_RECORDED,
                                       "attacked_state": release.SERVED_MODEL})
        for r in reports:
            r["attacked_model"] = release.SOURCE_RECORDED
            r["attacked_state"] = release.SERVED_MODEL  # queried with its serving state, which is not a release
        spent = float(run.data.metrics.get("epsilon", math.inf))
        results.append(RunResult(method.name, task.dataset, task.split, setting.seed, method.privacy_unit,
                                 {k: v for k, v in run.data.metrics.items() if k in ("test_acc", "test_macro_f1")},
                                 math.inf if spent >= 1e307 else spent, setting.budget.delta,
                                 setting.budget.epsilon, run.info.run_id, 0.0, {}, reports,
                                 str(run.data.params.get("unit_label") or method.relation_label())))
    return results


__all__ = ["Recorded", "attack_recorded", "recorded_hparams", "recorded_setting"]
