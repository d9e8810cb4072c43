"""``verify``: every check that applies to a method's privacy unit, with family-wise error control.

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

One-run audits follow Steinke, Nasr & Jagielski (2023); the bound is compared with the ledger's epsilon of the
canary world's fit (never the target).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from methods.base import Budget, ConfigError, Method, Task, fit_method


def torch_bool(x):
    import torch

    return torch.as_tensor(np.asarray(x, dtype=bool))
from methods.progress import progress_bar
from methods.streams import RunStreams

PASS, VIOLATION, SKIPPED = "PASS", "VIOLATION", "SKIPPED"
STRUCTURAL = ("epsilon-accounted", "determinism", "noise-independence", "private-inference", "label-use")
WHITE_BOX = ("ledger-counts", "noise-calibration", "occurrences", "gradient-canaries")
BLACK_BOX = ("input-canaries", "edge-canaries", "multi-run")
CHECKS = STRUCTURAL + WHITE_BOX + BLACK_BOX
DPSGD_KINDS = ("poisson_gaussian", "fixed_size_gaussian", "hypergeometric_gaussian")
#: the statistical white-box checks test against a claim relaxed by this much (noise 5% below what the ledger
#: requires, a sampling rate 5% above it): rejecting the relaxed claim still refutes the real one, and a correct
#: method, whose noise and rate are exactly the ledger's, is then (practically) never flagged by them
TOLERANCE = 0.05


@dataclass
class Check:
    """One check's outcome: a statistic against a threshold, and a verdict."""

    name: str
    seed: int
    verdict: str
    statistic: str
    threshold: str
    detail: str = ""
    alpha: float = 0.0  # the share of the error budget this check spent (0: exact)
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


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

    @property
    def verdict(self) -> str:
        return VIOLATION if any(c.verdict == VIOLATION for c in self.checks) else PASS

    @property
    def violations(self) -> list[str]:
        return sorted({c.name for c in self.checks if c.verdict == VIOLATION})

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "checks"}
        d["target_epsilon"] = "inf" if not math.isfinite(self.target_epsilon) else self.target_epsilon
        d.update(verdict=self.verdict, violations=self.violations, checks=[c.to_dict() for c in self.checks])
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
    checks: tuple[str, ...] = CHECKS
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
        if self.canary_degree < 0 or not self.canary_scale > 0:
            raise ConfigError("canary degree must be >= 0 and canary scale > 0")
        unknown = set(self.checks) - set(CHECKS)
        if unknown:
            raise ConfigError(f"unknown check(s) {', '.join(sorted(unknown))} (known: {', '.join(CHECKS)})")

    @property
    def m(self) -> int:
        return self.canaries or (100 if self.quick else 200)

    @property
    def tries(self) -> int:
        return self.inference_tries or (3 if self.quick else 6)


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _dpsgd_events(ledger) -> list:
    return [e for e in ledger.events if e.kind in DPSGD_KINDS]


def _sensitivity_factor(event) -> float:
    """Per-example sensitivity of the noisy sum in units of the clipping threshold C, under the event's
    relation: C (add/remove, Poisson), 2C (replace-one, fixed size), 2C N(K, r) (DP-GNN Theorem 1)."""
    if event.kind == "poisson_gaussian":
        return 1.0
    if event.kind == "fixed_size_gaussian":
        return 2.0
    return 2.0 * event.occurrence_bound


def _allowance(events) -> tuple[float, int]:
    """(per-step inclusion probability of one example, examples one unit may occupy) under the ledger's sampling
    model; the largest over the DP-SGD events (the most the ledger allows)."""
    out = []
    for e in events:
        if e.kind == "poisson_gaussian":
            out.append((float(e.rate), 1))
        elif e.kind == "fixed_size_gaussian":
            out.append((e.sample_size / e.population, 1))
        else:
            out.append((e.batch_size / e.num_train, int(e.occurrence_bound)))
    return max(p for p, _ in out), max(k for _, k in out)


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


def _inclusion_rate(events) -> float:
    e = events[0]
    if e.kind == "poisson_gaussian":
        return float(e.rate)
    if e.kind == "fixed_size_gaussian":
        return e.sample_size / e.population
    return min(1.0, e.batch_size * e.occurrence_bound / e.num_train)


def statistics_mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


class _Battery:
    """The state one seed's checks share: the base fit, the probe fit, the error budget per statistical check."""

    def __init__(self, make_method: Callable[[], Method], task: Task, budget: Budget, cfg: VerifyConfig,
                 seed: int, alpha: float) -> None:
        self.make, self.task, self.budget, self.cfg, self.seed, self.alpha = make_method, task, budget, cfg, seed, alpha
        self.streams = RunStreams(seed)
        self.unit = make_method().privacy_unit
        self.base = None
        self.probe = None  # audits.structural.StepOneProbe of the probe fit
        self.probe_fit = None
        self.independence = None

    def fit(self, task: Task | None = None, streams: RunStreams | None = None, hook=None):
        from methods.dpsgd import gradient_hook

        def go():
            return fit_method(self.make(), task or self.task, self.budget, streams or self.streams,
                              device=self.cfg.device, progress=False)

        if hook is None:
            return go()
        with gradient_hook(hook):
            return go()

    # -- structural ---------------------------------------------------------------------

    def epsilon_accounted(self) -> Check:
        from methods.privacy import PrivacyLedger
        from methods.privacy import presets as P

        self.base, secs = _timed(self.fit)
        led, delta, target = self.base.ledger, self.budget.delta, self.budget.epsilon
        reported = float(self.base.epsilon(delta))
        again = PrivacyLedger.from_dict(led.to_dict())  # independent of the Fitted object
        re_eps = float(again.epsilon(delta))
        problems = []
        if not math.isclose(reported, re_eps, rel_tol=1e-9, abs_tol=1e-12):
            problems.append(f"reported {reported:.6g} but the ledger's events give {re_eps:.6g}")
        if led.recipe is not None:
            rebuilt = P.rebuild(led.recipe)
            if not rebuilt.same_events(led):
                problems.append(f"the recipe ({led.recipe.family}) rebuilds {rebuilt.describe()}, the ledger holds "
                                f"{led.describe()}")
        if reported > target * (1 + 1e-9) or re_eps > target * (1 + 1e-9):
            problems.append(f"spent {max(reported, re_eps):.6g} > target {target:g}")
        if led.non_private_use is None and led.unit not in (None, self.unit):
            problems.append(f"the ledger accounts {led.unit}-level events for a {self.unit}-level method")
        if led.non_private_use is not None:
            problems.append(f"the ledger says the run is not private ({led.non_private_use})")
        return Check("epsilon-accounted", self.seed, VIOLATION if problems else PASS,
                     f"reported {reported:.6g}, re-accounted {re_eps:.6g}",
                     f"equal, <= target {target:g}", "; ".join(problems), seconds=secs,
                     data={"reported": reported, "reaccounted": re_eps, "recipe": bool(led.recipe)})

    def determinism_and_probe(self) -> Check:
        from audits.structural import StepOneProbe, record_poisson_batches, record_seeds

        import torch

        from methods.mechanisms import observing
        from methods.reuse import fresh

        probe = StepOneProbe()
        t0 = time.perf_counter()
        # fresh: the second fit recomputes what a cache may have served the first (and so checks the cache too)
        with record_seeds() as seeds, record_poisson_batches() as batches, observing() as releases, fresh():
            again = self.fit(hook=probe)
        secs = time.perf_counter() - t0
        self.probe, self.probe_fit, self._seeds, self._batches = probe, again, seeds, batches
        self.releases = releases
        diff = float((again.predict_proba() - self.base.predict_proba()).abs().max())
        same_ledger = again.ledger.same_events(self.base.ledger)
        ok = diff <= 1e-6 and same_ledger and bool(torch.isfinite(again.predict_proba()).all())
        detail = "" if ok else (f"posteriors differ by {diff:.3g}" + ("" if same_ledger else "; ledgers differ"))
        return Check("determinism", self.seed, PASS if ok else VIOLATION, f"max |dp| {diff:.3g}",
                     "<= 1e-6 and the same ledger", detail, seconds=secs)

    def noise_independence(self) -> Check:
        from audits.structural import CORRELATION_THRESHOLD, NoiseIndependence, init_correlation, poisson_replay

        probe = self.probe
        if probe is None or probe.noise is None or probe.noise_std <= 0:
            # no DP-SGD step to reconstruct: the seeds alone (two generators with one seed are one stream)
            recorded = [s for s in self._seeds.torch_generators + self._seeds.torch_global]
            dup = sorted({s for s in recorded if recorded.count(s) > 1})
            return Check("noise-independence", self.seed, VIOLATION if dup else PASS,
                         f"{len(recorded)} generator seeds, {len(dup)} shared", "no two generators share a seed",
                         f"seed(s) {dup[:3]} seed more than one generator: their streams coincide" if dup else
                         "no DP-SGD step: seeds checked only", data={"shared": dup[:10]})
        u = probe.noise_uniforms() if probe.noise_device == "cpu" else np.empty(0)
        corr = init_correlation(probe.inits or [], u) if u.size else 0.0
        first = self._batches.first
        replay = bool(first is not None and u.size and poisson_replay(*first, u))
        recorded = self._seeds.all
        shared = probe.noise_seed is not None and recorded.count(probe.noise_seed) > 1
        found = NoiseIndependence(True, corr, replay, shared, False, int(u.size))
        self.independence = found
        bad = [w for w, b in (("the noise replays the initial weights", corr > CORRELATION_THRESHOLD),
                              ("the first Poisson batch is readable off the noise", replay),
                              ("another generator shares the noise generator's seed", shared)) if b]
        note = "" if u.size else "noise drawn off the CPU: only the seed check applies"
        return Check("noise-independence", self.seed, VIOLATION if bad else PASS,
                     f"corr {corr:.3f}, batch replay {'yes' if replay else 'no'}, shared seed "
                     f"{'yes' if shared else 'no'}", f"corr < {CORRELATION_THRESHOLD}, no replay, no shared seed",
                     "; ".join(bad) or note, data=found.to_dict())

    def label_use(self) -> Check:
        """Node level: the validation and test labels are private units' data no ledger covers; a method may not
        read them. Change every one of them (same seed): every served output must stay bit-identical."""
        import dataclasses

        import torch

        if self.unit != "node":
            return Check("label-use", self.seed, SKIPPED, "-", "-",
                         f"labels are public at the {self.unit} level")
        held = self.task.val_mask | self.task.test_mask
        if not bool(held.any()):
            return Check("label-use", self.seed, SKIPPED, "-", "-", "no validation or test node")
        data = self.task.data.clone()
        y = data.y.clone()
        y[held] = (y[held] + 1) % int(self.task.num_classes)
        data.y = y
        other, secs = _timed(lambda: self.fit(dataclasses.replace(self.task, data=data)))
        diff = float((other.predict_proba() - self.base.predict_proba()).abs().max())
        bad = diff > 0 or not torch.equal(other.predict_proba(), self.base.predict_proba())
        return Check("label-use", self.seed, VIOLATION if bad else PASS,
                     f"max |dp| {diff:.3g} with {int(held.sum())} val/test labels changed", "0",
                     "served outputs depend on validation or test labels" if bad else "", seconds=secs)

    def private_inference(self) -> Check:
        from audits.structural import check_private_inference

        found, secs = _timed(lambda: check_private_inference(self.make, self.task, self.budget, self.streams,
                                                            self.unit, self.cfg.tries, base=self.base,
                                                            enough=1 if self.cfg.quick else 2))
        if not found.claimed:
            return Check("private-inference", self.seed, SKIPPED, "-", "-",
                         "the method does not claim private inference", seconds=secs)
        if not found.declared_release:
            return Check("private-inference", self.seed, VIOLATION, "no release declared", "Fitted.release()",
                         "claims private inference without saying what it releases", seconds=secs)
        bad = found.max_change > 0
        detail = (f"changing unit {found.unit} moved another node's served posterior by {found.max_change:.3g} "
                  "with the release unchanged" if bad else
                  ("" if found.conclusive else "every change tried reached the release"))
        return Check("private-inference", self.seed, VIOLATION if bad else PASS,
                     f"{found.conclusive}/{found.tried} conclusive, max change {found.max_change:.3g}", "0",
                     detail, seconds=secs, data=found.__dict__)

    # -- white-box ----------------------------------------------------------------------

    def dpsgd(self) -> bool:
        return bool(self.probe is not None and self.probe.records and _dpsgd_events(self.probe_fit.ledger))

    def other_releases(self) -> list:
        return [r for r in getattr(self, "releases", []) if r.kind != "count"]

    def ledger_counts(self, alpha: float) -> Check:
        if not self.dpsgd():
            if not self.other_releases():
                return Check("ledger-counts", self.seed, SKIPPED, "-", "-", "no DP-SGD step and no other release seen")
            problems = self._unaccounted_releases()
            kinds = sorted({r.kind for r in self.other_releases()})
            return Check("ledger-counts", self.seed, VIOLATION if problems else PASS,
                         f"{len(self.other_releases())} release(s): {', '.join(kinds)}",
                         "every release kind has a ledger event", "; ".join(problems))
        return self._dpsgd_counts(alpha)

    def _unaccounted_releases(self) -> list[str]:
        led = self.probe_fit.ledger
        kinds = {e.kind for e in led.events}
        match = {"gaussian": {"gaussian"}, "laplace": {"laplace", "poisson_laplace"},
                 "randomized_response": {"randomized_response"}}
        out = []
        for kind in sorted({r.kind for r in self.other_releases()}):
            if not match.get(kind, {kind}) & kinds:
                srcs = sorted({r.source for r in self.other_releases() if r.kind == kind})
                out.append(f"a {kind} release ({', '.join(srcs)}) has no {kind} event in the ledger")
        return out

    def _dpsgd_counts(self, alpha: float) -> Check:
        from scipy import stats

        probe, led = self.probe, self.probe_fit.ledger
        events = _dpsgd_events(led)
        ran = len(probe.records)
        accounted = sum(e.count for e in events)
        problems, p_value = self._unaccounted_releases(), 1.0
        if ran > accounted:
            problems.append(f"{ran} noisy DP-SGD steps ran, the ledger composes {accounted}")
        fixed = {e.sample_size for e in events if e.kind == "fixed_size_gaussian"}
        sizes = [r.batch_size for r in probe.records]
        if fixed and events and all(e.kind == "fixed_size_gaussian" for e in events):
            off = sorted({b for b in sizes if b not in fixed})
            if off:
                problems.append(f"fixed-size batches of {off[:5]} where the ledger accounts {sorted(fixed)}")
        poisson = [e for e in events if e.kind == "poisson_gaussian"]
        if poisson and len(poisson) == len(events):
            rate = max(e.rate for e in poisson)
            n_train = int(self.task.train_mask.sum()) if self.task.setting != "private-public" else None
            if n_train and rate < 1:
                # every example carries a training label: at most n_train examples can be drawn per step
                drawn = int(sum(sizes))
                p_value = float(stats.binom.sf(drawn - 1, ran * n_train, min(1.0, rate * (1 + TOLERANCE))))
                if p_value < alpha:
                    problems.append(f"{drawn} examples drawn in {ran} steps: more than Poisson rate {rate:.4g} over "
                                    f"{n_train} training nodes allows (p = {p_value:.2g} < {alpha:.2g})")
        return Check("ledger-counts", self.seed, VIOLATION if problems else PASS,
                     f"ran {ran} steps, accounted {accounted}; mean batch {np.mean(sizes):.1f}",
                     "ran <= accounted; batches within the accounted sampling", "; ".join(problems),
                     alpha=alpha, data={"ran": ran, "accounted": accounted, "p_value": p_value})

    def noise_calibration(self, alpha: float) -> Check:
        if not self.dpsgd():
            if not self.other_releases():
                return Check("noise-calibration", self.seed, SKIPPED, "-", "-",
                             "no DP-SGD step and no other release seen")
            problems, stat = self._release_calibration(alpha)
            return Check("noise-calibration", self.seed, VIOLATION if problems else PASS, stat,
                         f"noise >= {1 - TOLERANCE:g} x the ledger's (at {alpha:.2g}); preconditions; RR ratio",
                         "; ".join(problems), alpha=alpha)
        check = self._dpsgd_calibration(alpha)
        if self.other_releases() or any(r.kind == "count" for r in getattr(self, "releases", [])):
            problems, stat = self._release_calibration(alpha)
            if problems:
                check.verdict = VIOLATION
                check.detail = "; ".join(([check.detail] if check.detail else []) + problems)
            check.statistic += f"; {stat}"
        return check

    def _release_calibration(self, alpha: float) -> tuple[list[str], str]:
        """The non-DP-SGD releases against the ledger (see the module docstring)."""
        from scipy import stats

        led = self.probe_fit.ledger
        problems, stats_txt = [], []
        gauss = [e for e in led.events if e.kind == "gaussian"]
        lap = [e for e in led.events if e.kind in ("laplace", "poisson_laplace")]
        rr = [e for e in led.events if e.kind == "randomized_response"]
        releases = getattr(self, "releases", [])
        for kind, evs in (("gaussian", gauss), ("laplace", lap)):
            rel = [r for r in releases if r.kind == kind and r.drawn_scale is not None and r.draws]
            if not rel or not evs:
                continue
            need = min(e.sigma for e in evs) if kind == "gaussian" else min(e.scale for e in evs)
            need *= 1 - TOLERANCE
            n = sum(r.draws for r in rel)
            if kind == "gaussian":  # chi-square on the pooled draws
                stat = sum(r.draws * r.drawn_scale ** 2 for r in rel) / need ** 2
                p_value = float(stats.chi2.cdf(stat, n))
            else:  # sum |X| ~ Gamma(n, scale) for Laplace(scale)
                p_value = float(stats.gamma.cdf(sum(r.draws * r.drawn_scale for r in rel), a=n, scale=need))
            ratio = statistics_mean([r.drawn_scale for r in rel]) / (need / (1 - TOLERANCE))
            stats_txt.append(f"{kind} noise / ledger {ratio:.3g}")
            if p_value < alpha:
                problems.append(f"the {kind} noise drawn ({', '.join(sorted({r.source for r in rel}))}) is "
                                f"{ratio:.3g}x what the ledger states (p = {p_value:.2g})")
        for r in releases:
            if r.precondition is False:
                what = {"nap": f"rows of norm up to {r.facts.get('max_row_norm', float('nan')):.3g} > 1",
                        "noisy_argmax": f"scores that are not {r.facts.get('domain')}"}.get(r.source, "its query")
                problems.append(f"{r.source} noised {what}: the ledger's sensitivity does not hold")
                break
        for r in releases:
            if r.kind != "randomized_response" or not rr:
                continue
            keep, flip = r.declared.get("keep"), r.declared.get("flip_in")
            if keep is None or flip is None:
                continue
            eps_rr = max(e.epsilon for e in rr)
            ratio = math.inf if flip <= 0 else keep / flip
            other = math.inf if keep >= 1 else (1 - flip) / (1 - keep)
            worst = math.log(max(ratio, other)) if max(ratio, other) > 0 else 0.0
            stats_txt.append(f"RR log-ratio {worst:.3g} vs eps {eps_rr:.3g}")
            if worst > eps_rr * (1 + 1e-6) + 1e-9:
                problems.append(f"randomized response with likelihood ratio e^{worst:.3g} > e^{eps_rr:.3g} (the "
                                "ledger's event)")
        counts = [r for r in releases if r.kind == "count"]
        if counts:
            c_std = min(r.declared.get("std", 0.0) for r in counts)
            stats_txt.append(f"clipping-count noise std {c_std:.3g}")
            hyper = [e for e in _dpsgd_events(led) if e.kind == "hypergeometric_gaussian"]
            grad = self._measured_multiplier()
            if hyper and grad is not None:
                occ = hyper[0].occurrence_bound
                lam_c = c_std / occ if c_std > 0 else 0.0
                joint = 0.0 if lam_c == 0 or grad == 0 else (grad ** -2 + lam_c ** -2) ** -0.5
                need = min(e.noise_multiplier for e in hyper) * (1 - TOLERANCE)
                if joint < need:
                    problems.append(f"with the clipping count's noise (std {c_std:.3g}) the joint noise multiplier "
                                    f"is {joint:.3g} < the ledger's {need / (1 - TOLERANCE):.3g}")
            elif c_std <= 0:
                problems.append("an adaptive clipping count is released without noise")
        return problems, "; ".join(stats_txt) or "-"

    def _measured_multiplier(self) -> float | None:
        """The DP-SGD noise measured at the probe fit's steps, as a multiplier of the per-example sensitivity
        (2 C N(K, r) for DP-GNN events): the smallest over steps."""
        events = _dpsgd_events(self.probe_fit.ledger) if self.probe_fit is not None else []
        if not events or not self.probe.records:
            return None
        sens = min(_sensitivity_factor(e) for e in events)
        vals = [math.sqrt(r.noise_sq_sum / r.noise_entries) / (sens * r.clip) for r in self.probe.records
                if r.noise_entries and r.clip > 0]
        return min(vals) if vals else None

    def _dpsgd_calibration(self, alpha: float) -> Check:
        from scipy import stats

        from audits.structural import ClippingProbe, StopFit

        probe, led = self.probe, self.probe_fit.ledger
        events = _dpsgd_events(led)
        factor = min(e.noise_multiplier * _sensitivity_factor(e) for e in events)  # required std / C
        stat, dof, ratios = 0.0, 0, []
        for r in probe.records:
            need = factor * r.clip * (1 - TOLERANCE)
            if r.noise_entries == 0 or need <= 0:
                continue
            stat += r.noise_sq_sum / need ** 2
            dof += r.noise_entries
            ratios.append(math.sqrt(r.noise_sq_sum / r.noise_entries) / (factor * r.clip))
        problems = []
        p_value = float(stats.chi2.cdf(stat, dof)) if dof else 1.0
        if dof and p_value < alpha:
            problems.append(f"the noise drawn is {np.mean(ratios):.3g}x the std the ledger requires "
                            f"(chi-square p = {p_value:.2g} < {alpha:.2g} against {1 - TOLERANCE:g}x)")
        clip_probe = ClippingProbe()
        t0 = time.perf_counter()
        try:
            self.fit(streams=self.streams.child("clipping"), hook=clip_probe)
        except StopFit:
            pass
        secs = time.perf_counter() - t0
        over = [(n, c) for n, c in zip(clip_probe.norms, clip_probe.clips) if n > c * (1 + 1e-3) + 1e-6]
        if over:
            problems.append(f"one example's clipped gradient has norm {over[0][0]:.4g} > C = {over[0][1]:.4g}")
        return Check("noise-calibration", self.seed, VIOLATION if problems else PASS,
                     f"noise std / required {np.mean(ratios) if ratios else float('nan'):.4f}; "
                     f"max clipped norm / C {max((n / c for n, c in zip(clip_probe.norms, clip_probe.clips)), default=0):.4f}",
                     f"std >= {1 - TOLERANCE:g} x required (chi-square at {alpha:.2g}); norm <= C", "; ".join(problems),
                     alpha=alpha,
                     seconds=secs, data={"p_value": p_value, "ratio": float(np.mean(ratios)) if ratios else None})

    def occurrence_bound(self) -> int:
        """The most examples the ledger lets one unit occupy (DP-GNN's N(K, r); 1 otherwise)."""
        events = _dpsgd_events(self.base.ledger) if self.base is not None else []
        return _allowance(events)[1] if events else 1

    def gradient_canaries(self, alpha: float, alpha_occurrences: float) -> list[Check]:
        from audits.bounds import one_run_audit
        from audits.canaries import CanaryConfig, make_canaries
        from audits.runner import inclusion_coins
        from audits.whitebox import GradientCanaries, canary_columns

        # more fresh anchors than a correct sampler may keep, so a missing occurrence bound shows in the counts
        degree = min(30, max(self.cfg.canary_degree, self.occurrence_bound() + 2))
        m, cfg = self.cfg.m, CanaryConfig(hops=0, degree=degree, scale=self.cfg.canary_scale, pattern="dedicated",
                                          fresh_anchors=True)
        s = self.streams.child("gradient-canaries")
        unit = "feature" if self.unit == "feature" else "node"
        cs = make_canaries(self.task, unit, m, cfg, seed=s)
        include = inclusion_coins(s, m)
        world = cs.world(include)
        hook = GradientCanaries(canary_columns(world.num_features, m), world.num_features, record_steps=True,
                                lenient=True)
        t0 = time.perf_counter()
        fitted = self.fit(world, s.child("fit"), hook)
        secs = time.perf_counter() - t0
        claimed = float(fitted.epsilon(self.budget.delta))
        events = _dpsgd_events(fitted.ledger)
        rate = _inclusion_rate(events) if events else 0.5
        scores = hook.likelihood_scores(rate).numpy()
        bound = one_run_audit(scores, include, self.budget.delta, 1 - alpha)
        bad = bound.epsilon_lb > claimed * (1 + 1e-9) + 1e-12
        audit = Check("gradient-canaries", self.seed, VIOLATION if bad else PASS,
                      f"epsilon_lb {bound.epsilon_lb:.4g} ({m} canaries, {hook.steps} steps)",
                      f"<= claimed {claimed:.4g} at {1 - alpha:.4g}", "", alpha=alpha, seconds=secs,
                      data={"epsilon_lb": bound.epsilon_lb, "claimed": claimed, "bound": bound.to_dict()})
        # occurrences: the included canaries' examples drawn, against the ledger's sampling model
        p, occ = _allowance(events) if events else (1.0, 1)
        inc = torch_bool(include)
        drawn = float(hook.occurrences[inc].sum())
        n = float(inc.sum()) * hook.steps * occ
        allowed = min(1.0, p * (1 + TOLERANCE))
        p_value = chernoff_sf(drawn, n, allowed)
        worst = int(hook.max_per_step.max()) if hook.steps else 0
        problems = []
        if p_value < alpha_occurrences:
            problems.append(f"{drawn:.0f} canary examples drawn where the ledger allows {n * p:.1f} on average "
                            f"({occ} example(s) per unit at rate {p:.4g}; p <= {p_value:.2g})")
        if worst > occ:
            problems.append(f"{worst} examples held one canary in a single batch (the ledger allows {occ})")
        occurrences = Check("occurrences", self.seed, VIOLATION if problems else PASS,
                            f"{drawn:.0f} drawn, expected <= {n * p:.1f}; max per batch {worst}",
                            f"<= rate x {occ} x steps (Chernoff at {alpha_occurrences:.2g}); per batch <= {occ}",
                            "; ".join(problems), alpha=alpha_occurrences,
                            data={"drawn": drawn, "allowed_mean": n * p, "p_value": p_value, "degree": degree})
        return [occurrences, audit]

    # -- black-box ----------------------------------------------------------------------

    def canaries_one_run(self, alpha: float) -> Check:
        from audits.bounds import one_run_audit
        from audits.canaries import CanaryConfig, make_canaries
        from audits.runner import _fit_scores, inclusion_coins

        name = "edge-canaries" if self.unit == "edge" else "input-canaries"
        m = self.cfg.m
        degree = self.cfg.canary_degree
        if self.unit != "edge" and self.occurrence_bound() > 1:
            # a subgraph sampler: as many anchors as the ledger lets the canary reach (it is in N(K, r) examples)
            degree = min(30, max(degree, self.occurrence_bound() - 1))
        cfg = CanaryConfig(hops=0, degree=degree, scale=self.cfg.canary_scale, pattern="dedicated",
                           fresh_anchors=self.unit != "edge" and degree > 0)
        s = self.streams.child(name)
        cs = make_canaries(self.task, self.unit, m, cfg, seed=s)
        include = inclusion_coins(s, m)
        (scores, claimed), secs = _timed(lambda: _fit_scores(self.make, cs, include, self.budget, s.child("fit"),
                                                             self.cfg.device, "input"))
        bound = one_run_audit(scores, include, self.budget.delta, 1 - alpha)
        bad = bound.epsilon_lb > claimed * (1 + 1e-9) + 1e-12
        return Check(name, self.seed, VIOLATION if bad else PASS, f"epsilon_lb {bound.epsilon_lb:.4g} ({m} canaries)",
                     f"<= claimed {claimed:.4g} at {1 - alpha:.4g}", "", alpha=alpha, seconds=secs,
                     data={"epsilon_lb": bound.epsilon_lb, "claimed": claimed, "bound": bound.to_dict()})

    def multi_run(self, alpha: float) -> Check:
        from audits.canaries import CanaryConfig
        from audits.runner import audit

        cfg = CanaryConfig(hops=0, degree=self.cfg.canary_degree, scale=self.cfg.canary_scale, pattern="dedicated",
                           fresh_anchors=self.unit != "edge" and self.cfg.canary_degree > 0)
        res, secs = _timed(lambda: audit(self.make, self.task, self.budget, "multi-run", trials=self.cfg.trials,
                                         confidence=1 - alpha, canary=cfg,
                                         seed=self.streams.child("multi-run"), device=self.cfg.device))
        bad = res.verdict == VIOLATION
        return Check("multi-run", self.seed, VIOLATION if bad else PASS,
                     f"epsilon_lb {res.epsilon_lb:.4g} ({2 * self.cfg.trials} fits)",
                     f"<= claimed {res.claimed_epsilon:.4g} at {1 - alpha:.4g}", "", alpha=alpha, seconds=secs,
                     data={"epsilon_lb": res.epsilon_lb, "claimed": res.claimed_epsilon})


# --------------------------------------------------------------------------------------
# The battery
# --------------------------------------------------------------------------------------


def planned_checks(method: Method, task: Task, cfg: VerifyConfig, dpsgd: bool | None = None) -> list[str]:
    """The checks that apply to ``method`` (its unit; DP-SGD or not) among ``cfg.checks``, in order."""
    unit = method.privacy_unit
    out = [c for c in STRUCTURAL if c in cfg.checks]
    out += [c for c in ("ledger-counts", "noise-calibration") if c in cfg.checks]
    if dpsgd is not False and unit in ("node", "feature"):
        out += [c for c in ("occurrences", "gradient-canaries") if c in cfg.checks]
    box = "edge-canaries" if unit == "edge" else "input-canaries"
    if box in cfg.checks:
        out.append(box)
    if cfg.trials and "multi-run" in cfg.checks:
        out.append("multi-run")
    return out


STATISTICAL = ("ledger-counts", "noise-calibration", "occurrences", "gradient-canaries", "input-canaries",
               "edge-canaries", "multi-run")


def verify(make_method: Callable[[], Method], task: Task, budget: Budget, cfg: VerifyConfig | None = None,
           on_check: Callable[[Check], None] | None = None) -> VerifyReport:
    """Run the battery on ``make_method()`` at ``budget`` on ``task`` (see the module docstring).

    ``on_check`` is called with every check as it finishes (the CLI logs each as an MLflow child run)."""
    cfg = cfg or VerifyConfig()
    cfg.validate()
    probe = make_method()
    t0 = time.perf_counter()
    if not probe.is_private or not budget.is_private:
        return VerifyReport(probe.name, probe.privacy_unit, task.dataset, task.split, budget.epsilon, budget.delta,
                            cfg.confidence, list(cfg.seeds), [], time.perf_counter() - t0,
                            note="not private (claimed epsilon = inf): nothing to verify")
    probe.check_task(task)
    probe.check_budget(budget)
    checks: list[Check] = []
    # the error budget: split over every statistical check of every seed, fixed before any fit (by the method's
    # structure only); a check that turns out not to apply leaves its share unused
    statistical = [c for c in planned_checks(probe, task, cfg) if c in STATISTICAL]
    alpha = (1 - cfg.confidence) / max(1, len(statistical) * len(cfg.seeds))
    steps = len(planned_checks(probe, task, cfg)) * len(cfg.seeds)
    bar = progress_bar(steps, f"verify {probe.name}", cfg.progress)

    def emit(c: Check) -> None:
        checks.append(c)
        if on_check is not None:
            on_check(c)
        bar.update(1)

    for seed in cfg.seeds:
        b = _Battery(make_method, task, budget, cfg, seed, alpha)
        emit(b.epsilon_accounted())
        if "determinism" in cfg.checks or b.probe is None:
            c = b.determinism_and_probe()
            if "determinism" in cfg.checks:
                emit(c)
        if "noise-independence" in cfg.checks:
            emit(b.noise_independence())
        if "private-inference" in cfg.checks:
            emit(b.private_inference())
        if "label-use" in cfg.checks:
            emit(b.label_use())
        dpsgd = b.dpsgd()
        if not dpsgd:
            for name in ("occurrences", "gradient-canaries"):
                if name in cfg.checks:
                    emit(Check(name, seed, SKIPPED, "-", "-", "no noisy DP-SGD step through methods.dpsgd"))
        for name in planned_checks(probe, task, cfg, dpsgd):
            if name in STRUCTURAL:
                continue
            if name == "ledger-counts":
                emit(b.ledger_counts(alpha))
            elif name == "noise-calibration":
                emit(b.noise_calibration(alpha))
            elif name == "occurrences" or (name == "gradient-canaries" and "occurrences" not in cfg.checks):
                if b.probe.first_layer_width == task.num_features:
                    for c in b.gradient_canaries(alpha, alpha):
                        if c.name in cfg.checks:
                            emit(c)
                else:
                    for n in ("occurrences", "gradient-canaries"):
                        if n in cfg.checks:
                            emit(Check(n, seed, SKIPPED, "-", "-", "the DP-SGD examples do not read the raw features"))
            elif name in ("input-canaries", "edge-canaries"):
                emit(b.canaries_one_run(alpha))
            elif name == "multi-run":
                emit(b.multi_run(alpha))
    bar.close()
    return VerifyReport(probe.name, probe.privacy_unit, task.dataset, task.split, budget.epsilon, budget.delta,
                        cfg.confidence, list(cfg.seeds), checks, time.perf_counter() - t0)
