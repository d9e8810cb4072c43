"""What the checks of ``bench verify`` share: the :class:`Check` outcome, the per-seed :class:`Battery` state (the
base fit, the probe fit the white-box checks read) and the arithmetic of the DP-SGD ledger events."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from audits.verdicts import INCONCLUSIVE, NOT_APPLICABLE, PASS, SKIPPED, VIOLATION  # noqa: F401 (re-exported)
from methods.base import Budget, Method, Task, fit_method
from methods.privacy.events import EVENT_TYPES
from methods.streams import RunStreams

#: the ledger kinds of DP-SGD steps (``Event.dpsgd_step``), for the checks that declare where they apply
DPSGD_KINDS = tuple(kind for kind, cls in EVENT_TYPES.items() if cls.dpsgd_step)
#: what makes the white-box checks see a mechanism the ledger accounts: DP-SGD steps through the suite's optimiser,
#: every other noise draw reported to methods.mechanisms
DPSGD_REMEDY = ("take the DP-SGD steps with the suite's DP optimiser, methods.dpsgd.DPOptimizer, or Opacus's "
                "DPOptimizer (make_private): their step hook is what the white-box checks read")
RELEASE_REMEDY = ("report each noisy release through methods.mechanisms.release(kind, declared=..., noise=...) "
                  "(what the white-box checks read)")
#: which observation shows a ledger event kind ran (``Event.released_as``): a DP-SGD step seen by the step hook
#: ("dpsgd"), or a release of this kind reported to methods.mechanisms
OBSERVED_AS = {kind: cls.released_as for kind, cls in EVENT_TYPES.items()}
#: the statistical white-box checks test against a claim relaxed by this much (noise 5% below what the ledger
#: requires, a sampling rate 5% above it): rejecting the relaxed claim still refutes the real one, and a correct
#: method, whose noise and rate are exactly the ledger's, is then (practically) never flagged by them
TOLERANCE = 0.05


@dataclass
class Check:
    """One check's outcome: a statistic against a threshold, and a verdict.

    A SKIPPED check says why in ``detail`` (a Check without one cannot be made). ``remedy`` is set when the check
    applies to the method and did not run, in whole (SKIPPED) or in part (PASS on what it could see): it says what
    would make it run, and the battery's headline is then INCONCLUSIVE rather than PASS."""

    name: str
    seed: int
    verdict: str
    statistic: str
    threshold: str
    detail: str = ""
    alpha: float = 0.0  # the share of the error budget this check spent (0: exact)
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    remedy: str = ""  # it applies and (part of) it did not run: what would make it run

    def __post_init__(self) -> None:
        if self.verdict == SKIPPED and not str(self.detail).strip():
            raise ValueError(f"check {self.name}: a SKIPPED check must say why (detail)")

    @property
    def incomplete(self) -> bool:
        """It applies to the method and (part of) it did not run (and it found no violation)."""
        return bool(self.remedy) and self.verdict != VIOLATION

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def skipped(name: str, seed: int, why: str) -> Check:
    """A check that does not apply to the method, and why."""
    return Check(name, seed, SKIPPED, "-", "-", why)


def not_run(name: str, seed: int, why: str, remedy: str) -> Check:
    """A check that applies to the method but could not run: why, and what would make it run."""
    return Check(name, seed, SKIPPED, "-", "-", why, remedy=remedy)


def torch_bool(x):
    import torch

    return torch.as_tensor(np.asarray(x, dtype=bool))


def dpsgd_events(ledger) -> list:
    return [e for e in ledger.events if e.dpsgd_step]


def sensitivity_factor(event) -> float:
    """Per-example sensitivity of the noisy sum in units of the clipping threshold C, under the event's
    relation: C (add/remove, Poisson), 2C (replace-one, fixed size), 2C N(K, r) (DP-GNN Theorem 1)."""
    return event.step_sensitivity


def allowance(events) -> tuple[float, int]:
    """(per-step inclusion probability of one example, examples one unit may occupy) under the ledger's sampling
    model; the largest over the DP-SGD events (the most the ledger allows)."""
    return max(e.example_rate for e in events), max(e.unit_occupancy for e in events)


def inclusion_rate(events) -> float:
    return events[0].unit_rate


def chernoff_sf(s: float, n: float, p: float) -> float:
    """P[S >= s] <= exp(-n KL(s/n || p)) for S a sum of n Bernoulli(p) draws, independent or negatively associated
    (sampling without replacement; Hoeffding 1963): a valid p-value for "more draws than rate p allows"."""
    if n <= 0 or s <= n * p:
        return 1.0
    a = min(s / n, 1.0)
    if a >= 1.0:
        return p ** n if p > 0 else 0.0
    kl = a * math.log(a / p) + (1 - a) * math.log((1 - a) / (1 - p)) if 0 < p < 1 else math.inf
    return math.exp(-n * kl)


def statistics_mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


class Battery:
    """The state one seed's checks share, computed once on first use: the base fit (``base``), the probe fit
    (``probe_fit``, with its DP-SGD step probe, generator seeds, Poisson batches and observed releases), and
    whatever a check leaves for another (``shared``). ``cfg`` is the orchestrator's
    :class:`audits.verify.VerifyConfig` (read, never imported: the checks sit below the orchestrator)."""

    def __init__(self, make_method: Callable[[], Method], task: Task, budget: Budget, cfg: Any,
                 seed: int, alpha: float) -> None:
        self.make, self.task, self.budget, self.cfg, self.seed, self.alpha = make_method, task, budget, cfg, seed, alpha
        self.streams = RunStreams(seed)
        self.unit = make_method().privacy_unit
        self.shared: dict[str, Any] = {}
        self._base = None
        self._probe_fit = None

    def fit(self, task: Task | None = None, streams: RunStreams | None = None, hook=None):
        from methods.dpsgd import gradient_hook

        def go():
            return fit_method(self.make(), task or self.task, self.budget, streams or self.streams,
                              device=self.cfg.device, progress=False)

        if hook is None:
            return go()
        with gradient_hook(hook):
            return go()

    def run(self, name: str) -> Check:
        """Run the registered check ``name`` on this battery at its error budget share."""
        from audits.checks.registry import REGISTRY

        return REGISTRY[name].run(self, self.alpha)

    def adopt_base(self, fitted, seconds: float) -> None:
        """Take ``fitted`` (made with this battery's method, task, budget and streams) as the base fit."""
        self._base, self.base_seconds = fitted, seconds

    @property
    def base(self):
        """The fit every check compares with (the run as ``bench run`` makes it)."""
        if self._base is None:
            self._base, self.base_seconds = timed(self.fit)
        return self._base

    @property
    def probe_fit(self):
        """A second fit, recomputing what a cache may have served the first (:func:`methods.reuse.fresh`), with
        its first DP-SGD steps probed, its generator seeds and Poisson batches recorded and its releases
        (:mod:`methods.mechanisms`) observed."""
        if self._probe_fit is None:
            from audits.structural import StepOneProbe, record_poisson_batches, record_seeds
            from methods.mechanisms import observing
            from methods.reuse import fresh

            probe = StepOneProbe()
            t0 = time.perf_counter()
            with record_seeds() as seeds, record_poisson_batches() as batches, observing() as releases, fresh():
                fitted = self.fit(hook=probe)
            self.probe_seconds = time.perf_counter() - t0
            self.probe, self.seeds, self.batches, self.releases = probe, seeds, batches, releases
            self._probe_fit = fitted
        return self._probe_fit

    def dpsgd(self) -> bool:
        """Whether a noisy DP-SGD step ran through :mod:`methods.dpsgd` under a DP-SGD ledger event."""
        fitted = self.probe_fit
        return bool(self.probe.records and dpsgd_events(fitted.ledger))

    def ledger_kinds(self) -> set[str]:
        """The event kinds the probe fit's ledger accounts (what the method claims ran)."""
        return {e.kind for e in self.probe_fit.ledger.events}

    def unobserved(self) -> set[str]:
        """The ledger's event kinds that no observation shows ran through the suite's instrumented code: DP-SGD
        kinds without a DP-SGD step seen by the step hook, other kinds without a release of their kind reported to
        :mod:`methods.mechanisms` (:data:`OBSERVED_AS`). The white-box checks cannot see them."""
        dpsgd = self.dpsgd()  # makes the probe fit
        seen = {r.kind for r in self.releases} | ({"dpsgd"} if dpsgd else set())
        return {k for k in self.ledger_kinds() if OBSERVED_AS.get(k, k) not in seen}

    def mechanisms(self) -> set[str]:
        """The ledger event kinds of what ran, as far as the suite saw it (:meth:`unobserved` taken out)."""
        return self.ledger_kinds() - self.unobserved()

    def unobserved_reason(self, kinds=None) -> tuple[str, str]:
        """(why, remedy) for the ledger kinds among ``kinds`` (default: all) that were not observed."""
        miss = sorted(self.unobserved() if kinds is None else self.unobserved() & set(kinds))
        dpsgd = [k for k in miss if k in DPSGD_KINDS]
        other = [k for k in miss if k not in DPSGD_KINDS]
        why, fix = [], []
        if dpsgd:
            why.append(f"the ledger accounts {', '.join(dpsgd)} but no DP-SGD step ran through methods.dpsgd")
            fix.append(DPSGD_REMEDY)
        if other:
            why.append(f"the ledger accounts {', '.join(other)} but no such release was reported to "
                       "methods.mechanisms")
            fix.append(RELEASE_REMEDY)
        return "; ".join(why), "; ".join(fix)

    def other_releases(self) -> list:
        self.probe_fit  # noqa: B018 - the probe's fit, computed once, before the releases are read
        return [r for r in self.releases if r.kind != "count"]

    def occurrence_bound(self) -> int:
        """The most examples the ledger lets one unit occupy (DP-GNN's N(K, r); 1 otherwise)."""
        events = dpsgd_events(self.base.ledger)
        return allowance(events)[1] if events else 1

    def measured_multiplier(self) -> float | None:
        """The DP-SGD noise measured at the probe fit's steps, as a multiplier of the per-example sensitivity
        (2 C N(K, r) for DP-GNN events): the smallest over steps."""
        events = dpsgd_events(self.probe_fit.ledger)
        if not events or not self.probe.records:
            return None
        sens = min(sensitivity_factor(e) for e in events)
        vals = [math.sqrt(r.noise_sq_sum / r.noise_entries) / (sens * r.clip) for r in self.probe.records
                if r.noise_entries and r.clip > 0]
        return min(vals) if vals else None
