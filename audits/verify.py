"""``verify``: every check that applies to a method's privacy unit and mechanisms, with family-wise error control.

This module is the orchestration (configuration, report, which checks run); each check is one module of
:mod:`audits.checks`, registered with the privacy units and the ledger event kinds it applies to. A check whose
mechanisms the ledger does not hold is reported SKIPPED; one meant for other units is left out (or reported
SKIPPED where it says why). A check whose mechanisms the ledger holds but the suite did not see run (a DP-SGD step
outside :mod:`methods.dpsgd`, noise not reported to :mod:`methods.mechanisms`) applies and could not run: a SKIPPED
row with why and what would make it run (``Check.remedy``), or a partial one.

The headline (:attr:`VerifyReport.verdict`): VIOLATION if any check refutes the claim; else INCONCLUSIVE if a check
that applies to the method did not run, in whole or in part, or was left out of the selection (``checks``); else
PASS. A non-private method is NOT APPLICABLE.

The battery, run for each seed (checks that need no randomness are exact; the statistical ones share the error
budget ``1 - confidence`` by Bonferroni, so a correct method fails the whole battery with probability at most
``1 - confidence``):

structural (exact, no error budget)
    ``epsilon-accounted``  the reported epsilon equals the ledger re-accounted from its events (and from its
                           recipe, rebuilt with the family's function), it is <= the target, and the ledger's
                           unit is the method's.
    ``determinism``        the same seed gives the same served posteriors and the same ledger (the second fit
                           recomputes everything a cache of an earlier fit may have served the first:
                           :func:`methods.reuse.fresh`).
    ``noise-independence`` the step-1 DP-SGD noise is not a function of the initial weights nor of the first
                           Poisson batch, and no other generator shares the noise generator's seed
                           (:mod:`audits.structural`).
    ``private-inference``  a method claiming private inference declares its release, and with that release
                           held fixed no served output depends on another private unit.
    ``label-use``          node level: with the validation and test labels changed (same seed) every served
                           output is bit-identical (choosing an epoch on private validation labels, or reading
                           test labels, is an unaccounted release).
statistical (white-box, DP-SGD methods)
    ``ledger-counts``      the ledger counts what ran: noisy DP-SGD steps seen through the optimiser <= the
                           steps the ledger composes, fixed-size batches of the accounted size, and Poisson
                           batches no larger than the ledger's rate allows over the training population
                           (one-sided binomial test); every other mechanism that released something
                           (:mod:`methods.mechanisms`) has an event of its kind in the ledger.
    ``noise-calibration``  the noise drawn at every DP-SGD step has at least the std the ledger's noise multiplier
                           requires for the step's threshold C (chi-square test on every draw), and a single
                           example's clipped gradient, read off a released sum, has norm <= C; an adaptive
                           clipping count's noise keeps the joint multiplier the ledger records; every other
                           release draws at least the noise its ledger event states (Gaussian: chi-square,
                           Laplace: gamma test), on a query that meets its sensitivity's precondition (unit rows,
                           probability vectors, vote counts); randomized response keeps a likelihood ratio
                           <= e^epsilon of the ledger's event.
    ``occurrences``        how often a canary node's data enters the DP-SGD batches (counted through its
                           dedicated feature column; each canary gets fresh anchors, more than the ledger's
                           occurrence bound allows a correct sampler to keep) against what the ledger's sampling
                           model allows: one example per unit at rate q (Poisson, fixed size), or N(K, r)
                           examples at rate m / N (DP-GNN); a Chernoff bound gives the p-value.
    ``gradient-canaries``  a one-run white-box audit: Dirac gradient canaries on coordinates no other example
                           touches, scored with the likelihood-ratio statistic (:mod:`audits.whitebox`); it shares
                           the occurrences check's fit.
statistical (black-box, any method)
    ``input-canaries``     a one-run audit with node/feature canaries (node and feature units): dedicated
                           feature columns, fresh anchors so subgraph samplers put each canary in several
                           examples, probes scored on the released model.
    ``edge-canaries``      a one-run audit with edge canaries (edge unit).
    ``multi-run``          a multi-run audit (``trials`` > 0).
statistical (mechanism-level, every mechanism the ledger holds)
    ``mechanism``          the mechanism-level audit of :mod:`audits.mechanism` for each mechanism kind of the
                           ledger, at 1/20 of its default trials (quick: 1/40) and confidence >= 0.999.

One-run audits follow Steinke, Nasr & Jagielski (2023); the bound is compared with the ledger's epsilon of the
canary world's fit (never the target).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from audits.checks import REGISTRY, names, plan
from audits.checks.base import (DPSGD_KINDS, INCONCLUSIVE, NOT_APPLICABLE, PASS, SKIPPED, TOLERANCE, VIOLATION,
                                Battery, Check, chernoff_sf, not_run, skipped)
from audits.checks.registry import ANY, skip_detail
from methods.base import Budget, ConfigError, Method, Task
from methods.errors import InterfaceError
from methods.progress import progress_bar

#: the built-in checks, in battery order (a plugin's registered checks follow them: :func:`audits.checks.names`)
CHECKS = names()
STRUCTURAL = tuple(n for n in CHECKS if REGISTRY[n].group == "structural")
WHITE_BOX = tuple(n for n in CHECKS if REGISTRY[n].group == "white-box")
BLACK_BOX = tuple(n for n in CHECKS if REGISTRY[n].group == "black-box")
STATISTICAL = tuple(n for n in CHECKS if REGISTRY[n].statistical)
_Battery = Battery  # the per-seed state (audits.checks.base)


@dataclass
class VerifyReport:
    method: str
    privacy_unit: str
    dataset: str
    split: str
    target_epsilon: float
    delta: float
    confidence: float
    seeds: list[int]
    checks: list[Check]
    seconds: float = 0.0
    note: str = ""
    #: checks that apply to the method (its unit and its ledger's mechanisms) and were left out by ``cfg.checks``
    deselected: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """VIOLATION if any check found one; else NOT APPLICABLE for a non-private method (no claim to check); else
        INCONCLUSIVE if a check that applies to the method did not run (in whole or in part) or was not selected;
        else PASS."""
        if any(c.verdict == VIOLATION for c in self.checks):
            return VIOLATION
        if not self.private:
            return NOT_APPLICABLE
        return INCONCLUSIVE if self.not_run or self.deselected else PASS

    @property
    def private(self) -> bool:
        return self.privacy_unit != "none" and math.isfinite(self.target_epsilon)

    @property
    def violations(self) -> list[str]:
        return sorted({c.name for c in self.checks if c.verdict == VIOLATION})

    @property
    def not_run(self) -> list[Check]:
        """The checks that apply to the method and did not run, in whole or in part (each says why and what would
        make it run)."""
        return [c for c in self.checks if c.incomplete]

    def headline(self) -> str:
        """The verdict in one line, with what it rests on."""
        v = self.verdict
        if v == VIOLATION:
            return f"VIOLATION ({', '.join(self.violations)})"
        if v == NOT_APPLICABLE:
            return f"NOT APPLICABLE ({self.note})"
        if v == INCONCLUSIVE:
            parts = []
            if self.not_run:
                names = sorted({c.name for c in self.not_run})
                fixes = sorted({c.remedy for c in self.not_run})
                parts.append(f"{', '.join(names)} apply to this method and did not run, in whole or in part; to run "
                             f"them: {'; '.join(fixes)}")
            if self.deselected:
                parts.append(f"{', '.join(self.deselected)} apply to this method and were not selected (--checks); "
                             "to run them: select them, or leave out --checks")
            return "INCONCLUSIVE (no check found a violation): " + "; ".join(parts)
        return "PASS"

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "checks"}
        d["target_epsilon"] = "inf" if not math.isfinite(self.target_epsilon) else self.target_epsilon
        d.update(verdict=self.verdict, violations=self.violations, checks=[c.to_dict() for c in self.checks],
                 not_run=[{"name": c.name, "seed": c.seed, "why": c.detail, "remedy": c.remedy}
                          for c in self.not_run])
        return d


@dataclass
class VerifyConfig:
    seeds: tuple[int, ...] = (0,)
    quick: bool = False
    confidence: float = 0.95
    canaries: int | None = None  # one-run audits (default 200; quick 100)
    canary_degree: int = 3  # fresh anchors per node/feature canary, leaves per edge canary
    canary_scale: float = 3.0
    trials: int = 0  # multi-run trials per world (0: no multi-run audit)
    inference_tries: int | None = None  # units tried by private-inference (default 6; quick 3)
    checks: tuple[str, ...] = field(default_factory=names)  # every registered check
    device: Any = "cpu"
    progress: bool = False

    def validate(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise ConfigError(f"seeds must be distinct non-negative integers (got {list(self.seeds)})")
        if not 0 < self.confidence < 1:
            raise ConfigError(f"confidence must be in (0, 1) (got {self.confidence})")
        if self.canaries is not None and self.canaries < 10:
            raise ConfigError(f"canaries must be >= 10 (got {self.canaries})")
        if self.trials < 0 or self.trials == 1:
            raise ConfigError(f"trials must be 0 (no multi-run audit) or >= 2 (got {self.trials})")
        if self.inference_tries is not None and (isinstance(self.inference_tries, bool) or self.inference_tries < 1):
            raise ConfigError(f"--inference-tries must be >= 1 (got {self.inference_tries})")
        if self.canary_degree < 0 or not self.canary_scale > 0:
            raise ConfigError("canary degree must be >= 0 and canary scale > 0")
        unknown = set(self.checks) - set(names())
        if unknown:
            raise ConfigError(f"unknown check(s) {', '.join(sorted(unknown))} (known: {', '.join(names())})")

    @property
    def m(self) -> int:
        return self.canaries or (100 if self.quick else 200)

    @property
    def tries(self) -> int:
        return self.inference_tries or (3 if self.quick else 6)


def planned_checks(method: Method, task: Task, cfg: VerifyConfig) -> list[str]:
    """The checks among ``cfg.checks`` that apply to ``method``'s unit (before any fit: its mechanisms are not
    known yet), in battery order."""
    return [s.name for s in REGISTRY.values()
            if s.name in cfg.checks and s.enabled(cfg) and plan(s, method.privacy_unit) != "omit"]


def _run_or_skip(spec, b: Battery, unit: str, alpha: float) -> Check | None:
    """Run ``spec`` on battery ``b`` where it applies; a SKIPPED row where it does not (and why), or where it
    applies and could not run (why, and what would make it run); None where it is left out."""
    held = None if spec.kinds == ANY else b.mechanisms()
    p = plan(spec, unit, held)
    if p == "omit":
        return None
    if p == "skip":
        if spec.kinds != ANY and unit in spec.units and spec.kinds & b.unobserved():
            why, remedy = b.unobserved_reason(spec.kinds)
            return not_run(spec.name, b.seed, why, remedy)
        return skipped(spec.name, b.seed, skip_detail(spec, unit, held))
    c = spec.run(b, alpha)
    if spec.group not in ("white-box", "mechanism"):
        return c
    # what the check could not see: kinds it covers that the ledger accounts and no observation shows ran
    covers = b.unobserved() if spec.kinds == ANY else b.unobserved() & spec.kinds
    if covers and c.verdict != VIOLATION and not c.remedy:
        why, remedy = b.unobserved_reason(covers)
        if c.verdict == SKIPPED:
            return not_run(c.name, c.seed, why, remedy)
        c.detail = "; ".join(x for x in (c.detail, f"not checked: {why}") if x)
        c.remedy = remedy
    return c


@dataclass(frozen=True)
class Preflight:
    """The first seed's base fit, made before anything is logged (:func:`preflight`), for :func:`verify` to reuse."""

    seed: int
    fitted: Any
    seconds: float


def _checked_probe(make_method: Callable[[], Method], task: Task, budget: Budget, cfg: VerifyConfig) -> Method:
    """The battery's probe, once the configuration is valid and, where there is a claim to verify, the method
    accepts the task and the budget (:meth:`methods.base.Method.check_fit`)."""
    cfg.validate()
    probe = make_method()
    if probe.is_private and budget.is_private:
        probe.check_fit(task, budget)
    return probe


def preflight(make_method: Callable[[], Method], task: Task, budget: Budget,
              cfg: VerifyConfig | None = None) -> Preflight | None:
    """The first seed's base fit, made first so that a method missing part of the interface (no ledger, a
    private-inference claim without a release: :func:`methods.base.interface_gaps`) is an
    :class:`~methods.errors.InterfaceError` (``error:``, exit 2) before a run opens, never a privacy finding.
    None for a non-private method or budget (nothing is fitted), or where the fit fails otherwise (the run opened
    next records that failure)."""
    cfg = cfg or VerifyConfig()
    probe = _checked_probe(make_method, task, budget, cfg)
    if not probe.is_private or not budget.is_private:
        return None
    seed = cfg.seeds[0]
    b = Battery(make_method, task, budget, cfg, seed, 0.0)
    try:
        fitted = b.base  # Method.fit checks the interface (methods.base.check_fitted)
    except InterfaceError:
        raise
    except Exception:
        return None
    return Preflight(seed, fitted, b.base_seconds)


def verify(make_method: Callable[[], Method], task: Task, budget: Budget, cfg: VerifyConfig | None = None,
           on_check: Callable[[Check], None] | None = None, first: Preflight | None = None) -> VerifyReport:
    """Run the battery on ``make_method()`` at ``budget`` on ``task`` (see the module docstring).

    ``on_check`` is called with every check as it finishes (the CLI logs each as an MLflow child run); ``first``
    (:func:`preflight`) is the first seed's base fit, made already."""
    cfg = cfg or VerifyConfig()
    probe = _checked_probe(make_method, task, budget, cfg)
    t0 = time.perf_counter()
    if not probe.is_private or not budget.is_private:
        return VerifyReport(probe.name, probe.privacy_unit, task.dataset, task.split, budget.epsilon, budget.delta,
                            cfg.confidence, list(cfg.seeds), [], time.perf_counter() - t0,
                            note=f"{probe.name} " + ("is not private" if not probe.is_private else
                                                     "was given no finite epsilon") + ": no privacy claim to verify")
    unit = probe.privacy_unit
    checks: list[Check] = []
    # the error budget: split over every statistical check of every seed, fixed before any fit (by the method's
    # unit only); a check that turns out not to apply leaves its share unused
    planned = planned_checks(probe, task, cfg)
    statistical = [n for n in planned if REGISTRY[n].statistical]
    alpha = (1 - cfg.confidence) / max(1, len(statistical) * len(cfg.seeds))
    bar = progress_bar(len(planned) * len(cfg.seeds), f"verify {probe.name}", cfg.progress)

    def emit(c: Check) -> None:
        checks.append(c)
        if on_check is not None:
            on_check(c)
        bar.update(1)

    specs = [s for s in REGISTRY.values() if s.required or (s.name in cfg.checks and s.enabled(cfg))]
    for seed in cfg.seeds:
        b = Battery(make_method, task, budget, cfg, seed, alpha)
        if first is not None and first.seed == seed:
            b.adopt_base(first.fitted, first.seconds)
        # exact checks first: they make the base fit and the probe fit that the statistical ones read
        for s in (s for s in specs if not s.statistical):
            c = _run_or_skip(s, b, unit, alpha)
            if c is not None:
                emit(c)
        # then the statistical ones: those whose mechanisms did not run are reported before the others
        stat = [s for s in specs if s.statistical]
        unran = [s for s in stat if s.kinds != ANY and not s.kinds & b.mechanisms()]
        for s in unran + [s for s in stat if s not in unran]:
            c = _run_or_skip(s, b, unit, alpha)
            if c is not None:
                emit(c)
    bar.close()
    # the checks left out by the selection that would have applied (by the unit and the base fit's ledger)
    kinds = {e.kind for e in b.base.ledger.events}
    deselected = [s.name for s in REGISTRY.values()
                  if s.name not in cfg.checks and not s.required and s.enabled(cfg) and unit in s.units
                  and (s.kinds == ANY or s.kinds & kinds)]
    return VerifyReport(probe.name, probe.privacy_unit, task.dataset, task.split, budget.epsilon, budget.delta,
                        cfg.confidence, list(cfg.seeds), checks, time.perf_counter() - t0, deselected=deselected)


__all__ = ["BLACK_BOX", "CHECKS", "Check", "DPSGD_KINDS", "INCONCLUSIVE", "NOT_APPLICABLE", "PASS", "SKIPPED",
           "Preflight", "STATISTICAL", "STRUCTURAL", "TOLERANCE", "VIOLATION", "VerifyConfig", "VerifyReport",
           "WHITE_BOX", "chernoff_sf", "planned_checks", "preflight", "verify"]
