"""One resolved plan per job: a request read once, frozen, and executed without being read again.

A request (:mod:`bench.request`: :class:`RunSpec` for ``bench run``/``bench attack``, :class:`AuditSpec`,
:class:`VerifySpec`; the commands, :mod:`bench.api` and the sweep's cells all build one) is resolved here, in one pass, into a frozen plan:
the dataset named canonically and loaded, the split checked against it, the budget and delta rule, each method's
hyperparameters with their source (``configs/hparams*.yaml`` under ``--set``), the attacks, the device and the
tracking. :func:`plan_run`, :func:`plan_audit` and :func:`plan_verify` are the validation: bad input is a
:class:`~methods.errors.BenchError` raised while the plan is built, before any run opens or anything is written.
:mod:`bench.run`, :mod:`bench.audit` and :mod:`bench.verify` execute plans; nothing below them parses a name or
an option again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from bench import DEFAULT_EXPERIMENT
from bench.datasets import GraphDataset, load_dataset
from bench.memory import check_model_fits
from bench.options import field_names, scoped_overrides
from bench.request import AUDIT_MODES, AuditSpec, RunSpec, VerifySpec
from bench.splits import split_task
from methods.base import (Budget, BudgetError, ConfigError, Method, Task, available_methods, config_dict,
                          default_delta, get_method, stable_hash)
from methods.device import resolve_device

# --------------------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------------------


def privacy_units(task: Task, unit: str) -> int:
    """The number of private units of ``task`` the default delta is set from (``privacy_units`` of a run's record):
    undirected edges at edge level; else the nodes of a transductive graph, or the training (private) nodes of an
    inductive or private-public split. A count of the private data: the record names it public by convention
    (:func:`harness_conventions`)."""
    if unit == "edge":
        return max(task.num_edges, 1)
    if task.setting == "transductive":
        return task.num_nodes
    return int(task.train_mask.sum())


def resolve_budget(spec_eps: float | None, spec_delta: float | None, method: Method, task: Task) -> Budget:
    """The budget a method runs at on ``task``: none for a non-private method; else the target epsilon (``inf``
    when none) and delta, by default the largest power of ten below 1/#privacy units (:func:`privacy_units`, a
    count the record names public by convention: :func:`harness_conventions`)."""
    if not method.is_private:
        return Budget(math.inf, 0.0)  # listed next to private methods: runs without privacy
    eps = math.inf if spec_eps is None else spec_eps
    delta = spec_delta if spec_delta is not None else default_delta(privacy_units(task, method.privacy_unit))
    return Budget(eps, delta)


#: the largest delta that passes without a warning, whatever the data's size
USUAL_DELTA = 1e-2


def warn_unusual_delta(delta: float, classes: list[type[Method]], task: Task) -> None:
    """A :class:`~methods.errors.BenchWarning` for a given delta of at least 1/#privacy units, or above
    :data:`USUAL_DELTA`: a mechanism that publishes one unit's data outright with probability delta meets such a
    budget, so it is no guarantee for the units (Dwork and Roth, 2014, Section 2.3)."""
    import warnings

    from methods.errors import BenchWarning

    for unit in sorted({c.privacy_unit for c in classes if c.privacy_unit != "none"}):
        n = privacy_units(task, unit)
        if delta >= 1.0 / n or delta > USUAL_DELTA:
            why = f"at least 1/{n}, one over the {unit}-level units" if delta >= 1.0 / n else f"above {USUAL_DELTA:g}"
            warnings.warn(BenchWarning(
                f"--delta {delta:g} is {why}: a mechanism that publishes one unit's data outright with probability "
                f"delta meets it, so it is no guarantee (the default is {default_delta(n):g})"), stacklevel=2)


def harness_conventions(method: Method, task: Task) -> dict[str, int]:
    """The facts about the private data that the harness, not the method's ledger, reads and publishes, each named
    public by convention in the run's record (:func:`convention_params`): the count of privacy units
    (:func:`privacy_units`), which the default delta is set from and the record publishes as ``privacy_units``.
    Removing one unit changes it, and at a power of ten (100 units, a neighbour of 99) the rule's delta and the
    noise calibrated to it change with it, so the claim holds for neighbouring datasets only with the count public:
    the published dataset's size, as the training-set size of DP-SGD is (``PrivacyLedger.conventions``). A
    non-private run makes no claim: nothing to name."""
    if not method.is_private:
        return {}
    from bench.records import DELTA_UNITS

    return {DELTA_UNITS: privacy_units(task, method.privacy_unit)}


def convention_params(method: Method, task: Task, budget: Budget, spec_delta: float | None,
                      secure_noise: bool) -> dict[str, str]:
    """The params a run record states its conventions in, beside its ledger's: ``noise`` (reproducible from the
    seed, or secure: :func:`bench.records.noise_text`) and ``conventions.<fact>`` for each of
    :func:`harness_conventions` (``conventions.delta_units``: :func:`bench.records.delta_units_text`)."""
    from bench.records import CONVENTION_PREFIX, DELTA_UNITS, delta_units_text, noise_text

    out = {"noise": noise_text(secure_noise, method.is_private)}
    for fact, value in harness_conventions(method, task).items():
        if fact == DELTA_UNITS:
            out[CONVENTION_PREFIX + fact] = delta_units_text(value, method.privacy_unit, task.setting,
                                                             budget.delta, spec_delta is None)
    return out


# --------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodPlan:
    """One method of a plan: its class, the overrides it is built with (the checked-in entry's values under the
    user's ``--set``), the entry they come from, and the resulting hyperparameters."""

    cls: type[Method]
    overrides: Mapping[str, str]
    hparams: Mapping[str, Any]
    entry: Any = None  # the bench.hparams.Entry used, or None
    user_set: bool = False  # the request had --set overrides

    @property
    def name(self) -> str:
        return self.cls.name

    def build(self) -> Method:
        """A fresh instance (one per fit: a method holds no state between fits, but a run must not share one)."""
        return self.cls(**self.overrides)

    def __reduce__(self):  # read-only views do not pickle; a worker process (pooled audits) rebuilds them
        return (_method_plan, (self.cls, dict(self.overrides), dict(self.hparams), self.entry, self.user_set))

    @property
    def hp_source(self) -> str:
        """Where the hyperparameters come from, as a run logs it (parameter ``hp_source``)."""
        set_note = " + --set" if self.user_set else ""
        e = self.entry
        if e is None:
            return "defaults" + set_note
        note = ("tuned on validation labels, outside the privacy budget, as the papers do" if e.source == "tuned"
                else e.source)
        where = "configs/hparams_tuned.yaml" if e.source == "tuned" else "configs/hparams.yaml"
        return f"{where} {e.method}/{e.key} ({note})" + set_note


def _method_plan(cls: type[Method], overrides: dict, hparams: dict, entry: Any, user_set: bool) -> MethodPlan:
    return MethodPlan(cls, MappingProxyType(overrides), MappingProxyType(hparams), entry, user_set)


def plan_method(cls: type[Method], dataset: str, split: str, epsilon: float | None, user: Mapping[str, str],
                hparams: bool = True, user_set: bool = False) -> MethodPlan:
    """``cls``'s settings on ``dataset``/``split`` at ``epsilon``: the checked-in entry (when ``hparams``) under
    ``user``; the method is built once here, so a bad value is an error now."""
    return _plan_method(cls, dataset, split, epsilon, user, hparams, user_set)[0]


def _plan_method(cls: type[Method], dataset: str, split: str, epsilon: float | None, user: Mapping[str, str],
                 hparams: bool, user_set: bool) -> tuple[MethodPlan, Method]:
    overrides, entry = dict(user), None
    if hparams:
        from bench import hparams as H

        overrides, entry = H.resolve(cls.name, dataset, split, epsilon, overrides, field_names(cls.Config))
    method = cls(**overrides)  # hyperparameter errors surface here
    plan = MethodPlan(cls, MappingProxyType(overrides), MappingProxyType(config_dict(method.config)), entry,
                      user_set)
    return plan, method


@dataclass(frozen=True)
class Tracking:
    """Where and how a job is logged."""

    experiment: str = DEFAULT_EXPERIMENT
    track: bool = True
    progress: bool = True
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class RunPlan:
    """Every method x seed of a request, resolved (see the module docstring)."""

    methods: tuple[MethodPlan, ...]
    dataset: GraphDataset
    split: str
    seeds: tuple[int, ...]
    epsilon: float | None
    delta: float | None
    device: Any  # torch.device
    tracking: Tracking
    attacks: Any = None  # bench.attack.AttackPlan when attacks were asked for
    secure_noise: bool = False
    diagnostics: bool = False
    log_release: bool = True
    accountant: str | None = None  # RunSpec.accountant, admitted
    #: what the admission found (methods.privacy.conformance.check.admit); "" for a run accountant
    accountant_note: str = ""

    def task(self, seed: int) -> Task:
        """The split of the dataset at ``seed`` (a split is computed per run from its seed; the request checked the
        split's name)."""
        return split_task(self.dataset, self.split, seed)

    def budget(self, method: Method, task: Task) -> Budget:
        return resolve_budget(self.epsilon, self.delta, method, task)

    def accounting(self) -> contextlib.AbstractContextManager:
        """The block a job of this plan calibrates and reports in: under its accountant when it names one."""
        if self.accountant is None:
            return contextlib.nullcontext()
        from methods.privacy.accountant import using_accountant

        return using_accountant(self.accountant)

    def accountant_params(self) -> dict[str, str]:
        """What a job records of the accountant it was asked to use (nothing for the default): its name and, for a
        registered one, what the conformance suite's admission found."""
        if self.accountant is None:
            return {}
        return {"accountant": self.accountant, **({"accountant_conformance": self.accountant_note}
                                                    if self.accountant_note else {})}

    def conventions(self, method: Method, task: Task, budget: Budget) -> dict[str, str]:
        """The params a run states its conventions in (:func:`convention_params`)."""
        return convention_params(method, task, budget, self.delta, self.secure_noise)


def plan_run(spec: RunSpec) -> RunPlan:
    """Validate the whole request and load the data; raise a BenchError before anything is written."""
    return _plan_run(spec)[0]


def _plan_run(spec: RunSpec) -> tuple[RunPlan, list[Method]]:
    """:func:`plan_run`, and each method as built once while planning (an audit or verification checks its
    probe, which holds no state: a fit builds its own from the plan)."""
    if not spec.methods:
        raise ConfigError("no method given")
    classes = [get_method(m) for m in spec.methods]  # the registry decides the names (plugins included)
    name, split = spec.dataset_name, spec.split  # resolved and checked where the request was built
    seeds = tuple(spec.seeds)
    eps, delta = spec.epsilon, spec.delta
    user = scoped_overrides(spec.overrides, {c.name: field_names(c.Config) for c in classes})
    methods, probes = [], []
    for cls in classes:
        mp, method = _plan_method(cls, name.name, split, eps, user[cls.name], spec.hparams, bool(spec.overrides))
        probes.append(method)
        if method.is_private and eps is None:
            raise BudgetError(f"method {cls.name} is private: give --epsilon (or --epsilon inf to train without noise)")
        if method.is_private and eps is not None and delta is not None:
            method.check_budget(Budget(eps, delta))  # e.g. delta = 0 for a Gaussian mechanism
        methods.append(mp)
    if eps is not None and math.isfinite(eps) and all(c.privacy_unit == "none" for c in classes):
        # a lone non-private method with a target epsilon is a mistake; mixed lists run it at eps=inf
        classes[0]().check_budget(Budget(eps, delta or 0.0))
    attacks = None
    if spec.attacks or spec.attack_overrides:
        from bench.attack import plan_attacks

        attacks = plan_attacks(spec.attacks, spec.attack_overrides, spec.bootstrap, spec.plot_dir)
    accountant_note = ""
    if spec.accountant is not None:
        from methods.privacy.conformance.check import admit

        accountant_note = admit(str(spec.accountant))
    device = resolve_device(spec.device)
    dataset = load_dataset(name, spec.data_root, spec.download)
    for mp in methods:
        check_model_fits(mp.name, mp.hparams, int(dataset.data.x.size(1)), device)
    if delta is not None and eps is not None and math.isfinite(eps):
        warn_unusual_delta(delta, classes, split_task(dataset, split, seeds[0]))
    tracking = Tracking(spec.experiment, spec.track, spec.progress, MappingProxyType(dict(spec.tags)))
    plan = RunPlan(tuple(methods), dataset, split, seeds, eps, delta, device, tracking, attacks, spec.secure_noise,
                   spec.diagnostics, spec.log_release, spec.accountant, accountant_note)
    return plan, probes


def _identity(mp: MethodPlan, plan: RunPlan, budget: Budget, **seeds: Any) -> dict[str, Any]:
    """What a job's ``config_hash`` hashes: method, data, seed(s), budget and hyperparameters."""
    return {"method": mp.name, "dataset": plan.dataset.name, "split": plan.split, **seeds,
            "epsilon": str(budget.epsilon), "delta": budget.delta, "hparams": dict(mp.hparams)}


@dataclass(frozen=True)
class AuditPlan:
    """One method's audit, resolved: its run plan, the task and budget of the audit's seed, the audit's options
    and the canary design (checked by a dry run)."""

    run: RunPlan
    task: Task
    budget: Budget
    mode: str
    trials: int
    canaries: int
    confidence: float
    canary: Any  # audits.canaries.CanaryConfig
    canary_type: str
    seed: int
    workers: int = 1  # processes the pooled runs are fitted in (not part of the identity: the same results)
    #: the canaries the audit runs with (audits.canaries.CanarySet), drawn once here (audits.runner.draw_canaries);
    #: None for a non-private method (nothing is audited)
    canary_set: Any = None

    @property
    def method(self) -> MethodPlan:
        return self.run.methods[0]

    @property
    def identity(self) -> dict[str, Any]:
        return _identity(self.method, self.run, self.budget, seed=self.seed)

    @property
    def config_hash(self) -> str:
        return stable_hash(self.identity)


def plan_audit(spec: AuditSpec) -> AuditPlan:
    """Validate an audit request like a run's, plus the audit's options, and draw its canaries
    (:func:`audits.runner.prepare_canaries`)."""
    from audits.runner import prepare_canaries

    seed = spec.seed
    run, probes = _plan_run(spec.run)
    method = probes[0]
    canary = spec.canary_design()
    workers = (spec.workers or pooled_workers(spec.trials)) if spec.mode == "pooled" else 1
    task = run.task(seed)
    budget = run.budget(method, task)
    method.check_fit(task, budget)
    # a graph too small for the canaries is an input error, and the audit runs with the set drawn here
    canary, canary_set = prepare_canaries(method, task, spec.mode, spec.canaries, canary, spec.canary_type, seed)
    return AuditPlan(run, task, budget, spec.mode, spec.trials, spec.canaries, spec.confidence, canary,
                     spec.canary_type, seed, workers, canary_set)


def pooled_workers(runs: int) -> int:
    """The default processes of a pooled white-box audit: one per core, at most one per run. Its fits are small
    models, for which a second torch thread buys little and stalls badly when other jobs share the cores (one
    process per run and core keeps each fit on one thread)."""
    return max(1, min(int(runs), os.cpu_count() or 1))


@dataclass(frozen=True)
class VerifyPlan:
    """One method's verification, resolved: its run plan, the task and budget of its first seed, and the
    battery's configuration (:class:`audits.verify.VerifyConfig`)."""

    run: RunPlan
    task: Task
    budget: Budget
    config: Any  # audits.verify.VerifyConfig
    quick: bool

    @property
    def method(self) -> MethodPlan:
        return self.run.methods[0]

    @property
    def seeds(self) -> list[int]:
        return list(self.run.seeds)

    @property
    def identity(self) -> dict[str, Any]:
        return {**_identity(self.method, self.run, self.budget, seeds=self.seeds), "quick": self.quick}

    @property
    def config_hash(self) -> str:
        return stable_hash(self.identity)


def plan_verify(spec: VerifySpec) -> VerifyPlan:
    """Validate a verification request like a run's, plus the battery's options."""
    from audits.verify import CHECKS, VerifyConfig

    named = available_methods().get(spec.run.methods[0])
    epsilon = spec.run.epsilon
    if named is not None and named.privacy_unit != "none" and (epsilon is None or not math.isfinite(epsilon)):
        raise ConfigError(f"bench verify checks a privacy claim: give a finite --epsilon/-e ({named.name} is "
                          f"{named.privacy_unit}-level private)")
    run, probes = _plan_run(spec.run)
    method = probes[0]
    cfg = VerifyConfig(seeds=tuple(run.seeds), quick=spec.quick, confidence=spec.confidence, canaries=spec.canaries,
                       trials=spec.trials, checks=tuple(spec.checks or CHECKS), device=run.device,
                       progress=run.tracking.progress, inference_tries=spec.inference_tries)
    cfg.validate()
    task = run.task(int(run.seeds[0]))
    # "-e inf" for a non-private method is what it claims: the same as no --epsilon
    if not method.is_private and epsilon is not None and math.isinf(epsilon):
        run = dataclasses.replace(run, epsilon=None)
    budget = run.budget(method, task)
    method.check_fit(task, budget)
    return VerifyPlan(run, task, budget, cfg, spec.quick)


__all__ = ["AUDIT_MODES", "AuditPlan", "AuditSpec", "MethodPlan", "RunPlan", "RunSpec", "Tracking", "VerifyPlan",
           "VerifySpec", "convention_params", "harness_conventions", "plan_audit", "plan_method", "plan_run",
           "plan_verify", "privacy_units", "resolve_budget"]
