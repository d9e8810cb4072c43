"""Mechanism-level audits: one release of a DP mechanism, through the code the methods execute, measured tightly.

An end-to-end audit trains models and sees little of what the accountant composes over; here the auditor runs
ONE application of a mechanism many times on a neighbouring pair it builds itself, in the style of
Nasr et al. (2023, "Tight Auditing of Differentially Private Machine Learning", Sections 4-5):

* the code path is the methods' own: :func:`methods.gap.nap.nap` after :func:`~methods.gap.nap.bound_out_degree`
  (GAP/ProGAP at edge and node level), :class:`methods.dpsgd.DPOptimizer` with its per-example clipping and a
  :class:`methods.dpsgd.PoissonSampler` or :class:`~methods.dpsgd.FixedSizeSampler` batch (a DP-SGD step),
  :func:`methods.gap.edgerand.asymmetric_rr` (EdgeRand). Many independent trials come from one call where the
  mechanism allows it (disjoint copies of the pair in one graph; one canary column per trial in one step);
* the pair is the worst case of the event's analysis where one is proven: one undirected edge between two nodes; a
  node sending its unit vector to exactly D rows; a Dirac gradient clipped to exactly C on a coordinate no other
  example touches; on a fixed-size batch, the unit's example +C against -C with every other example -C (Balle,
  Barthe & Gaboardi 2018, Theorem 10); one node pair's adjacency bit. DP-GNN's step has no proven worst case: it
  runs the strongest realisable pair of an exhaustive search (:mod:`audits.step_pairs`), labelled as such
  (:attr:`Mechanism.pair`);
* each trial's score is the sufficient statistic of the noise (the projection on the known mean shift; the
  noisy sum at the canary's coordinate; the released bit), whose likelihood ratio is monotone, so a
  threshold test is the Neyman-Pearson test;
* two tests (threshold and direction) are chosen on one half of the trials and scored on the other:
  Clopper-Pearson upper bounds on their FPR and FNR (Bonferroni over the four) give, together at ``confidence``,

  - ``epsilon_lb_cp``: assumes nothing: the (epsilon, delta) bound of :func:`audits.bounds.epsilon_from_rates`,
    from a test chosen for it alone in the tails of the selection half;
  - ``epsilon_lb_fdp``: the f-DP estimator, named for what it assumes (``fdp_assumes``): the strongest member of
    the audited pair's family of tradeoff functions (mu-GDP for a Gaussian release, the subsampled Gaussian for a
    DP-SGD step, epsilon-RR) that the measured points still rule out, converted to epsilon at delta (Nasr et al.
    2023 use GDP);

* verdict: ``VIOLATION`` when a measured point lies below the CLAIM's tradeoff function -- sound for every
  mechanism, as that function lower-bounds every test between the two worlds, and it assumes no family.

The claim is the event's tightest sound epsilon: its exact epsilon where the audited pair is its proven worst case
(the Gaussian's closed form, the subsampled Gaussian's privacy profile in closed form -- equal to dp-accounting's
PLD --, the fixed-size step's tight profile, epsilon for pure DP), and for DP-GNN's step the exact curve of
Theorem 1's k-revealed pair (:class:`RevealedHypergeometric`), a proven bound, never the epsilon of a pair not
proven to dominate. The ledger's default accountant (RDP) reports a little more, shown beside it as the ledger's
claim, with each bound's ratio to both.

Mutations (``Mutation``) make the code run with less noise, a larger sensitivity or a larger sampling rate
than its ledger event states: the audit's power against subtle bugs.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np
from scipy import optimize, special, stats

from audits.bounds import DEFAULT_CONFIDENCE, _check_confidence, epsilon_from_rates
from methods.base import ConfigError
from methods.privacy.events import (Event, FixedSizeGaussian, Gaussian, HypergeometricGaussian, Laplace,
                                     PoissonGaussian, PoissonLaplace, RandomizedResponse)
from methods.streams import RunStreams

if TYPE_CHECKING:  # torch is imported where a mechanism runs, so the module loads without it
    import torch

DEFAULT_DELTA = 1e-5
#: trials per world in each half (selection, evaluation) unless told otherwise
DEFAULT_TRIALS = 400_000


# --------------------------------------------------------------------------------------
# Families of tradeoff functions: f_s(alpha) = the smallest FNR of any test at FPR alpha
# --------------------------------------------------------------------------------------


class Family:
    """Tradeoff functions indexed by a strength ``s >= 0`` (larger: less private; f_0 = 1 - alpha)."""

    name = "family"
    #: what the f-DP lower bound assumes: the mechanism's trade-off function is a member of this family
    assumes = "the event's family of trade-off functions"
    upper = 60.0  # strengths searched

    def tradeoff(self, s: np.ndarray | float, alpha: np.ndarray | float) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def epsilon(self, s: float, delta: float) -> float:  # pragma: no cover
        """The exact epsilon at ``delta`` of strength ``s``."""
        raise NotImplementedError

    def strength_bound(self, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """The smallest s with f_s(alpha) <= beta (f_s decreases in s): every weaker member of the family is
        ruled out by a test with FPR alpha and FNR beta. Vectorised bisection."""
        alpha, beta = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(beta, float))
        lo, hi = np.zeros(alpha.shape), np.full(alpha.shape, self.upper)
        for _ in range(60):
            mid = (lo + hi) / 2.0
            ruled = self.tradeoff(mid, alpha) > beta  # the point lies below f_mid: mid is too private
            lo, hi = np.where(ruled, mid, lo), np.where(ruled, hi, mid)
        return np.where(self.tradeoff(0.0, alpha) > beta, hi, 0.0)

    def strength_for_epsilon(self, epsilon: float, delta: float) -> float:
        """The strength whose exact epsilon at ``delta`` is ``epsilon`` (the calibration of a claim)."""
        hi = 0.5
        while self.epsilon(hi, delta) < epsilon:
            hi *= 2.0
            if hi > self.upper:
                raise ConfigError(f"{self.name}: epsilon {epsilon:g} at delta {delta:g} is out of reach")
        return float(optimize.brentq(lambda s: self.epsilon(s, delta) - epsilon, 1e-9, hi, xtol=1e-12))


class GaussianFamily(Family):
    """mu-GDP: f_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) (Dong, Roth & Su 2022, Def. 2.7); the release of a
    query of sensitivity Delta plus N(0, sigma^2) is exactly (Delta / sigma)-GDP."""

    name = "gaussian (mu-GDP)"
    assumes = "a Gaussian (GDP) trade-off"
    upper = 40.0

    def tradeoff(self, s, alpha):
        return stats.norm.cdf(stats.norm.isf(alpha) - s)

    def strength_bound(self, alpha, beta):
        return np.maximum(stats.norm.isf(np.asarray(alpha, float)) - stats.norm.ppf(np.asarray(beta, float)), 0.0)

    def epsilon(self, s, delta):
        """Balle & Wang (2018), Theorem 8: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
        if s <= 0:
            return 0.0

        def excess(eps: float) -> float:
            return stats.norm.cdf(-eps / s + s / 2) - math.exp(eps + stats.norm.logcdf(-eps / s - s / 2)) - delta

        if excess(0.0) <= 0:
            return 0.0
        hi = 1.0
        while excess(hi) > 0:
            hi *= 2.0
        return float(optimize.brentq(excess, 0.0, hi, xtol=1e-12))


@dataclass
class PoissonGaussianFamily(Family):
    """One DP-SGD step, Poisson rate q, noise multiplier 1/mu, add/remove: the dominating pair is N(0, 1) (the
    example absent) against (1 - q) N(0, 1) + q N(mu, 1) (present), so f(alpha) = (1 - q)(1 - alpha) +
    q Phi(Phi^-1(1 - alpha) - mu) (Dong, Roth & Su 2022, Section 4; Zhu, Dong & Wang 2022)."""

    rate: float = 1.0
    name = "Poisson-subsampled Gaussian"
    assumes = "the Poisson-subsampled Gaussian's trade-off"
    upper = 40.0

    def tradeoff(self, s, alpha):
        alpha = np.asarray(alpha, float)
        return (1.0 - self.rate) * (1.0 - alpha) + self.rate * stats.norm.cdf(stats.norm.isf(alpha) - s)

    def delta_of(self, s: float, eps: float) -> float:
        """The exact privacy profile of the dominating pair, both directions: the log-likelihood ratio is
        monotone in x, so {L > eps} is a half-line whose end has a closed form."""
        q, mu = self.rate, s
        lsf, lcdf = stats.norm.logsf, stats.norm.logcdf
        out = 0.0
        if math.exp(eps) > 1.0 - q:  # remove: P = mixture, Q = N(0, 1)
            x = (math.log((math.exp(eps) - (1.0 - q)) / q) + mu * mu / 2.0) / mu
            p_mass = (1.0 - q) * math.exp(lsf(x)) + q * math.exp(lsf(x - mu))
            out = max(out, p_mass - math.exp(eps + lsf(x)))
        if math.exp(-eps) > 1.0 - q:  # add: P = N(0, 1), Q = mixture
            x = (math.log((math.exp(-eps) - (1.0 - q)) / q) + mu * mu / 2.0) / mu
            q_mass = (1.0 - q) * math.exp(lcdf(x)) + q * math.exp(lcdf(x - mu))
            out = max(out, math.exp(lcdf(x)) - math.exp(eps) * q_mass)
        return out

    def epsilon(self, s, delta):
        """The smallest eps with delta(eps) <= delta, from :meth:`delta_of`."""
        if s <= 0 or self.delta_of(s, 0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta_of(s, hi) > delta:
            hi *= 2.0
            if hi > 512:
                return math.inf
        return float(optimize.brentq(lambda e: self.delta_of(s, e) - delta, 0.0, hi, xtol=1e-12))


class OneSidedMixtureFamily(Family):
    """N(0, 1) against sum_k w_k N(k ``step`` s, 1), k = 0, 1, ...: one world's release is a fixed Gaussian and the
    other's is shifted by ``step`` s for each of the k examples the unit changes that a batch draws. The likelihood
    ratio increases in x (every term does), so the threshold test is the most powerful one, f(alpha) =
    sum_k w_k Phi(Phi^-1(1 - alpha) - k step s), and each direction's {L > eps} is a half-line. With w = (1 - q, q)
    and step 1 it is the Poisson-subsampled Gaussian (:class:`PoissonGaussianFamily`)."""

    name = "one-sided Gaussian mixture"
    assumes = "the one-sided Gaussian mixture's trade-off"
    upper = 20.0

    def __init__(self, weights: np.ndarray, step: float = 1.0) -> None:
        w = np.asarray(weights, float)
        if w.ndim != 1 or w.size < 2 or (w < 0).any() or not math.isclose(w.sum(), 1.0, rel_tol=1e-9):
            raise ConfigError("a one-sided mixture needs probabilities of 0, 1, ... drawn examples")
        self.step = float(step)
        self.k = np.arange(w.size, dtype=float)[w > 0] * self.step
        self.logw = np.log(w[w > 0])

    def tradeoff(self, s, alpha):
        s, alpha = np.broadcast_arrays(np.asarray(s, float), np.asarray(alpha, float))
        t = stats.norm.isf(alpha)
        return np.sum(np.exp(self.logw)[:, None] * stats.norm.cdf(t.reshape(1, -1) - self.k[:, None]
                                                                   * s.reshape(1, -1)), axis=0).reshape(alpha.shape)

    def _loss(self, x: float, s: float) -> float:
        """log of the mixture's density over N(0, 1)'s at x."""
        return float(np.logaddexp.reduce(self.logw + self.k * s * x - (self.k * s) ** 2 / 2.0))

    def delta_of(self, s: float, eps: float) -> float:
        """The exact privacy curve, both directions (the mixture first: {L > eps} = {x > x_eps}; N(0, 1) first:
        {L < -eps} = {x < x'_eps}, empty when -eps lies below L's infimum log w_0)."""
        lsf, lcdf = stats.norm.logsf, stats.norm.logcdf

        def root(target: float) -> float:
            lo, hi = -1.0, 1.0
            while self._loss(lo, s) > target:
                lo *= 2.0
            while self._loss(hi, s) < target:
                hi *= 2.0
            return optimize.brentq(lambda v: self._loss(v, s) - target, lo, hi, xtol=1e-12)

        out = 0.0
        top = float(np.max(self.k)) * s
        if top > 0:
            x = root(eps)
            p_mass = math.exp(np.logaddexp.reduce(self.logw + lsf(x - self.k * s)))
            out = max(out, p_mass - math.exp(eps + lsf(x)))
        floor = self.logw[0] if self.k[0] == 0 else -math.inf
        if top > 0 and -eps > floor:
            x = root(-eps)
            q_mass = math.exp(np.logaddexp.reduce(self.logw + lcdf(x - self.k * s)))
            out = max(out, math.exp(lcdf(x)) - math.exp(eps) * q_mass)
        return out

    def epsilon(self, s, delta):
        if s <= 0 or self.delta_of(s, 0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta_of(s, hi) > delta:
            hi *= 2.0
            if hi > 512:
                return math.inf
        return float(optimize.brentq(lambda e: self.delta_of(s, e) - delta, 0.0, hi, xtol=1e-12))


class FixedSizeGaussianFamily(OneSidedMixtureFamily):
    """One DP-SGD step on a fixed-size batch (m of n without replacement, ``rate`` = m / n), replace-one, strength
    s = C / sigma. The worst case: the unit's example +C in one world and -C in the other, every other example -C
    in both, so one world's release is fixed and the other's moves by 2C when the example is drawn: N(0, 1) against
    (1 - rate) N(0, 1) + rate N(2 s, 1). Its curve is Balle, Barthe & Gaboardi's tight bound for substitution
    under sampling without replacement (2018, Theorem 10; :func:`audits.step_pairs.fixed_size_replace_delta`), so
    it is the exact worst case. Not the pair +-C against a zero-gradient stand-in (dp-accounting's
    REPLACE_ONE, which models Poisson sampling): that one is below it (1.0 against 1.51 at mu 0.27)."""

    name = "fixed-size subsampled Gaussian (replace-one)"
    assumes = "the fixed-size replace-one step's trade-off"

    def __init__(self, rate: float = 0.5) -> None:
        self.rate = float(rate)
        super().__init__(np.array([1.0 - self.rate, self.rate]), step=2.0)


class HypergeometricGaussianFamily(OneSidedMixtureFamily):
    """One DP-GNN step (Daigavane et al. 2022), strength s = C / sigma: a batch of m of n subgraphs,
    ``occurrences`` of which hold the node, k ~ Hypergeometric(n, occurrences, m) of them drawn. The pair: the
    node's subgraphs +C in one world and -C in the other, every other subgraph -C in both -- N(0, 1) against
    sum_k h(k) N(2 k s, 1), the strongest pair :func:`audits.step_pairs.strongest_pair` finds at the audited
    strengths. Realisable, NOT a proven worst case (nor an upper bound: at small epsilon the +-C pair, the node's
    subgraphs +C against -C and nothing else, can be above it); the step's sound bound is the k-revealed pair of
    :class:`RevealedHypergeometric`."""

    name = "hypergeometric Gaussian (DP-GNN, one-sided)"
    assumes = "the audited pair's trade-off (DP-GNN, one-sided)"

    def __init__(self, population: int, occurrences: int, batch: int) -> None:
        self.population, self.occurrences, self.batch = int(population), int(occurrences), int(batch)
        super().__init__(stats.hypergeom.pmf(np.arange(occurrences + 1), population, occurrences, batch), step=2.0)


def gaussian_delta(mu: float, eps: float) -> float:
    """The privacy curve of N(0, 1) against N(mu, 1) (Balle & Wang 2018, Theorem 8), in log space."""
    if mu <= 0:
        return 0.0
    return max(0.0, float(special.ndtr(-eps / mu + mu / 2) - math.exp(eps + special.log_ndtr(-eps / mu - mu / 2))))


@dataclass(frozen=True)
class RevealedHypergeometric:
    """The sound bound of one DP-GNN step (Daigavane et al. 2022, Theorem 1's pair): the batch's count k ~
    Hypergeometric(population, occurrences, batch) of the node's subgraphs is revealed, then N(0, 1) against
    N(2 k s, 1) (Lemma 2: each moves the sum by at most 2C; s = C / sigma). Revealing k only adds information, so
    the pair dominates the step, and its curve is exactly sum_k h(k) delta_{2ks}(eps) -- the ledger event's PLD
    (:meth:`methods.privacy.events.HypergeometricGaussian.pld`) without its outward discretisation."""

    population: int
    occurrences: int
    batch: int

    def delta(self, s: float, eps: float) -> float:
        k = np.arange(1, self.occurrences + 1)
        h = stats.hypergeom.pmf(k, self.population, self.occurrences, self.batch)
        return float(sum(w * gaussian_delta(2.0 * j * s, eps) for j, w in zip(k, h) if w > 0))

    def epsilon(self, s: float, delta: float) -> float:
        if s <= 0 or self.delta(s, 0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta(s, hi) > delta:
            hi *= 2.0
            if hi > 4096:
                return math.inf
        return float(optimize.brentq(lambda e: self.delta(s, e) - delta, 0.0, hi, xtol=1e-12))


class RandomizedResponseFamily(Family):
    """epsilon-RR on one bit: f(alpha) = max(0, 1 - e^eps alpha, e^-eps (1 - alpha)) (Kairouz et al. 2015), the
    tradeoff of every pure epsilon-DP mechanism's worst case; delta plays no part."""

    name = "randomized response (pure DP)"
    assumes = "the randomized-response (pure DP) trade-off"

    def tradeoff(self, s, alpha):
        alpha = np.asarray(alpha, float)
        e = np.exp(s)
        return np.maximum(0.0, np.maximum(1.0 - e * alpha, (1.0 - alpha) / e))

    def strength_bound(self, alpha, beta):
        alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.log(np.where(alpha > 0, (1.0 - beta) / alpha, np.inf))
            b = np.log(np.where(beta > 0, (1.0 - alpha) / beta, np.inf))
        return np.maximum(0.0, np.maximum(np.nan_to_num(a, nan=0.0), np.nan_to_num(b, nan=0.0)))

    def epsilon(self, s, delta):
        return float(s)


class SubsampledPureFamily(Family):
    """A pure s-DP mechanism whose unit is in its input with probability ``rate`` (Poisson subsampling,
    add/remove): the tradeoff is C_q(f) = min(f_q, f_q^-1)** with f_q = (1 - q)(1 - alpha) + q f_s(alpha) and f_s
    the s-RR tradeoff (Dong, Roth & Su 2022, Theorem 4.2), computed on a grid; epsilon = ln(1 + q (e^s - 1)),
    the amplified pure epsilon (delta plays no part). PrivGNN's per-query Laplace release."""

    name = "Poisson-subsampled pure DP"
    assumes = "the Poisson-subsampled pure-DP trade-off"
    upper = 40.0
    GRID = np.linspace(0.0, 1.0, 4001)

    def __init__(self, rate: float) -> None:
        self.rate = float(rate)

    def _hull(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        g, q = self.GRID, self.rate
        fq = (1.0 - q) * (1.0 - g) + q * RandomizedResponseFamily().tradeoff(s, g)
        inverse = np.interp(g, fq[::-1], g[::-1])  # f_q is strictly decreasing
        y = np.minimum(fq, inverse)
        hull: list[int] = []  # lower convex hull (monotone chain)
        for i in range(g.size):
            while len(hull) >= 2:
                a, b = hull[-2], hull[-1]
                if (y[b] - y[a]) * (g[i] - g[a]) >= (y[i] - y[a]) * (g[b] - g[a]):
                    hull.pop()
                else:
                    break
            hull.append(i)
        return g[hull], y[hull]

    def tradeoff(self, s, alpha):
        s, alpha = np.broadcast_arrays(np.asarray(s, float), np.asarray(alpha, float))
        out = np.empty(alpha.shape)
        for v in np.unique(s):
            hx, hy = self._hull(float(v))
            sel = s == v
            out[sel] = np.interp(alpha[sel], hx, hy)
        return out

    def epsilon(self, s, delta):
        return float(math.log1p(self.rate * math.expm1(s))) if s > 0 else 0.0


# --------------------------------------------------------------------------------------
# What the code runs with
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """The code runs with ``1 / noise`` of the noise its event states (pure DP: ``noise`` x its epsilon), a true
    sensitivity ``sensitivity`` x the stated one, and ``rate`` x the stated sampling rate. All 1: the
    shipped mechanism."""

    noise: float = 1.0
    sensitivity: float = 1.0
    rate: float = 1.0

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if not (v > 0 and math.isfinite(v)):
                raise ConfigError(f"mutation {k} must be a positive finite number (got {v})")

    @property
    def shipped(self) -> bool:
        return self == Mutation()

    def label(self) -> str:
        if self.shipped:
            return "shipped"
        parts = [f"noise 1/{self.noise:g}" if self.noise != 1 else "", f"sensitivity x{self.sensitivity:g}"
                 if self.sensitivity != 1 else "", f"rate x{self.rate:g}" if self.rate != 1 else ""]
        return ", ".join(p for p in parts if p)


#: (strength of the claim, world_in, trials, streams, mutation) -> one score per trial
Sampler = Callable[[float, bool, int, RunStreams, Mutation], np.ndarray]


class SoundBound(Protocol):
    """An event's sound privacy curve where no realisable pair is proven to meet it: strength -> curve."""

    def delta(self, s: float, eps: float) -> float: ...

    def epsilon(self, s: float, delta: float) -> float: ...


def _calibrate(epsilon_of: Callable[[float], float], epsilon: float, upper: float, name: str) -> float:
    """The strength s with epsilon_of(s) = ``epsilon`` (epsilon_of increases in s)."""
    hi = 0.5
    while epsilon_of(hi) < epsilon:
        hi *= 2.0
        if hi > upper:
            raise ConfigError(f"{name}: epsilon {epsilon:g} is out of reach")
    return float(optimize.brentq(lambda v: epsilon_of(v) - epsilon, 1e-9, hi, xtol=1e-12))


@dataclass(frozen=True)
class Mechanism:
    name: str
    family: Family  # the tradeoff functions of the audited pair, at the strength the code runs with
    event: Callable[[float], Event]  # the claim's strength -> the ledger event the methods record for it
    sample: Sampler
    mutations: tuple[str, ...]  # the fields of Mutation it can apply
    summary: str
    used_by: str
    trials: int = DEFAULT_TRIALS  # the default per world and half: the measured table's (README)
    #: (claimed strength, mutation) -> the family and strength of what the code really ran (default: the claim's
    #: family at strength x noise x sensitivity)
    actual: Callable[[float, Mutation], tuple[Family, float]] | None = None
    #: (claimed strength, mutation) -> the exact epsilon of what the code RELEASES, where that is a
    #: post-processing (an argmax) whose epsilon lies below the event's: the most an audit can show
    release: Callable[[float, Mutation], float] | None = None
    #: the event's sound bound where the audited pair is NOT its proven worst case (None: the family's curve at
    #: the claimed strength is the event's exact one): the claim, and the curve a verdict tests against
    bound: SoundBound | None = None
    #: why the pair is the worst case, or that it is only realisable
    pair: str = "the worst case of the event's analysis"

    @property
    def worst_case(self) -> bool:
        """Whether the audited pair is the event's proven worst case (its exact epsilon is the claim)."""
        return self.bound is None

    def claim(self, s: float, delta: float) -> float:
        """The event's tightest sound epsilon at strength ``s``: exact where the pair is its proven worst case."""
        return self.family.epsilon(s, delta) if self.bound is None else self.bound.epsilon(s, delta)

    def strength_for_epsilon(self, epsilon: float, delta: float) -> float:
        """The strength whose claim (:meth:`claim`) is ``epsilon`` at ``delta``."""
        if self.bound is None:
            return self.family.strength_for_epsilon(epsilon, delta)
        return _calibrate(lambda v: self.bound.epsilon(v, delta), epsilon, self.family.upper, self.name)

    def true_epsilon(self, s: float, mutation: Mutation, delta: float) -> float:
        """The exact epsilon of the audited pair as the code runs it under ``mutation``: the most an audit of this
        pair can show. The claim's when shipped, the pair is the worst case and the release is the event's whole
        output; below the claim for an argmax release or a pair that is only realisable."""
        if self.release is not None:
            return self.release(s, mutation)
        fam, strength = (self.actual(s, mutation) if self.actual is not None
                         else (self.family, s * mutation.noise * mutation.sensitivity))
        return fam.epsilon(strength, delta)


def _unsupported(mech: str, mutation: Mutation, allowed: tuple[str, ...]) -> None:
    for k, v in asdict(mutation).items():
        if v != 1 and k not in allowed:
            raise ConfigError(f"mechanism {mech} cannot apply a {k} mutation (it can: {', '.join(allowed) or 'none'})")


# ---- GAP / ProGAP: NAP at edge and node level -----------------------------------------


def _nap_scores(edge_index, num_nodes: int, groups, sigma: float, streams: RunStreams, max_degree: int | None):
    """Run the methods' NAP (after their degree cut-off when ``max_degree``) with 1-d unit features and return,
    per trial, the sum of its rows ``groups`` [trials, k] divided by sqrt(k): the projection on the mean shift."""
    import torch

    from methods.gap.nap import aggregation_matrix, bound_out_degree, nap

    if max_degree is not None:
        edge_index = bound_out_degree(edge_index, num_nodes, max_degree, streams.torch("subgraphs"))
    x = torch.ones(num_nodes, 1)
    out = nap(aggregation_matrix(edge_index, num_nodes), x, sigma, streams.torch("noise"))[:, 0].double()
    g = torch.as_tensor(groups)
    return (out[g].sum(1) / math.sqrt(g.size(1))).numpy()


def _nap_edge(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """Trial i: nodes 2i and 2i+1, joined by an undirected edge in the world with the unit; the score reads
    their two aggregates. Sensitivity sqrt(2) (both directed entries), so sigma = sqrt(2) / mu."""
    import torch

    from methods.privacy.presets import EDGE_SENSITIVITY

    _unsupported("nap-edge", m, ("noise",))
    n = 2 * trials
    a = torch.arange(0, n, 2)
    if world_in:
        ei = torch.stack([torch.cat([a, a + 1]), torch.cat([a + 1, a])])
    else:
        ei = torch.empty(2, 0, dtype=torch.long)
    sigma = EDGE_SENSITIVITY / mu / m.noise
    return _nap_scores(ei, n, torch.stack([a, a + 1], 1), sigma, streams, None)


def _nap_node(max_degree: int) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Trial i: a node v sending its unit vector to exactly D leaves (the cut-off keeps them all); without v
        the leaves aggregate nothing. The score reads the leaves' aggregates. Sensitivity sqrt(D), so
        sigma = sqrt(D) / mu. A sensitivity mutation gives v s^2 D leaves and cuts off at that degree."""
        import torch

        _unsupported("nap-node", m, ("noise", "sensitivity"))
        d = max(1, int(round(max_degree * m.sensitivity ** 2)))
        size = d + 1
        centre = torch.arange(trials) * size
        leaves = centre[:, None] + torch.arange(1, size)[None, :]
        if world_in:
            c = centre[:, None].expand_as(leaves).reshape(-1)
            ell = leaves.reshape(-1)
            ei = torch.stack([torch.cat([c, ell]), torch.cat([ell, c])])
        else:
            ei = torch.empty(2, 0, dtype=torch.long)
        sigma = math.sqrt(max_degree) / mu / m.noise
        return _nap_scores(ei, trials * size, leaves, sigma, streams, d)

    return sample


# ---- DP-SGD: one step of the methods' optimiser on a Poisson batch ------------------------


class _ReadReleased:
    """A :class:`methods.dpsgd.GradientHook` that changes nothing and keeps the released noisy sum."""

    def __init__(self) -> None:
        self.released = None

    def split(self, opt, inputs, target):
        return inputs, target, None

    def observe(self, opt, noisy_sums) -> None:
        self.released = noisy_sums[0].detach().double().clone()


def _dirac_steps(columns: int, trials: int, mu: float, streams: RunStreams, m: Mutation,
                 batch_rows: Callable[[], torch.Tensor]) -> np.ndarray:
    """The methods' :class:`~methods.dpsgd.DPOptimizer` on a linear model over ``columns`` coordinates with the
    linear loss ``W x``: an example whose only non-zero feature k is large has a Dirac gradient on W[0, k], clipped
    to exactly C (C x ``m.sensitivity`` when mutated), and no other example touches that coordinate. Each step's
    batch is ``batch_rows()`` (canary rows, +-large e_k, for the trials whose canary was drawn) plus one all-zero
    example; the noise is C / mu (/ ``m.noise``). Returns the released noisy sums / C, ``columns`` trials a step."""
    import torch
    from torch import nn

    from methods.dpsgd import DPOptimizer, gradient_hook

    clip = 1.0
    model = nn.Linear(columns, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.0), clip=clip * m.sensitivity,
                      loss_fn=lambda out, y: out[:, 0], generator=streams.torch("noise"))
    hook = _ReadReleased()
    zero = torch.zeros(1, columns)
    scores = []
    with gradient_hook(hook):
        for _ in range(-(-trials // columns)):
            batch = torch.cat([batch_rows(), zero])
            opt.step((batch,), torch.zeros(batch.size(0), dtype=torch.long), clip / mu / m.noise, 1.0)
            scores.append(hook.released[0].numpy() / clip)
    return np.concatenate(scores)[:trials]


def _dpsgd_poisson(rate: float, columns: int = 1000) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Per step, ``columns`` canaries, canary k a Dirac gradient on its own coordinate (:func:`_dirac_steps`),
        drawn by the methods' :class:`~methods.dpsgd.PoissonSampler` in the world with the units (none in the
        other); the score is the released noisy sum at canary k's coordinate / C."""
        import torch

        from methods.dpsgd import PoissonSampler

        _unsupported("dpsgd-poisson", m, ("noise", "sensitivity", "rate"))
        sampler = PoissonSampler(columns, min(1.0, rate * m.rate), streams.torch("sampler"))
        canaries = torch.eye(columns) * 1e3
        empty = torch.zeros(0, columns)
        return _dirac_steps(columns, trials, mu, streams, m,
                            lambda: canaries[sampler.sample()] if world_in else empty)

    return sample


def _signed_rows(columns: int, drawn: torch.Tensor, holders: int, world_in: bool) -> torch.Tensor:
    """One row per drawn example of each trial: ``drawn`` [columns, batch] are the examples trial c's batch drew
    from its own population, of which the first ``holders`` hold the unit. A holder is +large e_c in the world with
    the unit and -large e_c without it, every other example -large e_c in both (clipped: +C or -C): the one-sided
    pair, so the world without the unit releases the same sum whatever the batch."""
    import torch

    sign = torch.where((drawn < holders) & world_in, 1.0, -1.0)  # [columns, batch]
    rows = torch.zeros(drawn.numel(), columns)
    rows[torch.arange(drawn.numel()), torch.arange(columns).repeat_interleave(drawn.size(1))] = 1e3 * sign.reshape(-1)
    return rows


def _dpsgd_fixed(rate: float, columns: int = 1000) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Per step, ``columns`` trials, each its own population of n = 1 / rate examples of which the methods'
        :class:`~methods.dpsgd.FixedSizeSampler` draws one; example 0 is the unit's. Replace-one worst case
        (:class:`FixedSizeGaussianFamily`; :func:`_signed_rows`): the unit's Dirac gradient (:func:`_dirac_steps`)
        is +C with its data and -C with the replacement, every other example's -C. A rate mutation draws one of
        round(1 / (rate x factor))."""
        import torch

        from methods.dpsgd import FixedSizeSampler

        _unsupported("dpsgd-fixed", m, ("noise", "sensitivity", "rate"))
        n = max(1, int(round(1.0 / (rate * m.rate))))
        sampler = FixedSizeSampler(n, 1, streams.torch("sampler"), unit="feature")

        def rows():
            return _signed_rows(columns, torch.stack([sampler.sample() for _ in range(columns)]), 1, world_in)

        return _dirac_steps(columns, trials, mu, streams, m, rows)

    return sample


def _dpgnn_step(population: int, occurrences: int, batch: int, columns: int = 500) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """DP-GNN's step: per trial, a population of ``population`` subgraphs of which the first ``occurrences``
        hold the node, and a batch of ``batch`` drawn by the methods' :class:`~methods.dpsgd.FixedSizeSampler` (as
        DP-GNN draws its batches). The strongest realisable pair found (:class:`HypergeometricGaussianFamily`;
        :func:`_signed_rows`): each subgraph holding the node is a Dirac gradient (:func:`_dirac_steps`) +C in one
        world and -C in the other, every other subgraph -C in both. Noise 2 C N(K, r) lambda = C / mu, as DP-GNN
        adds it. A rate mutation draws a batch ``factor`` times larger."""
        import torch

        from methods.dpsgd import FixedSizeSampler

        _unsupported("dpgnn-step", m, ("noise", "sensitivity", "rate"))
        size = min(population, max(1, int(round(batch * m.rate))))
        sampler = FixedSizeSampler(population, size, streams.torch("sampler"), unit="node")

        def rows():
            return _signed_rows(columns, torch.stack([sampler.sample() for _ in range(columns)]), occurrences,
                                world_in)

        return _dirac_steps(columns, trials, mu, streams, m, rows)

    return sample


# ---- EdgeRand: asymmetric randomized response ------------------------------------------


def _edgerand_rr(eps: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """A dense graph (density 0.6, so EdgeRand keeps every reported 1: its q is 1 and it is plain eps-RR on
    each pair). Its pairs are split into base edges B, trial pairs T and stand-ins R (|R| = |T|): the world
    with the units is B + T, the other B + R, so both have the same edge count and the same noisy density;
    each trial pair's score is whether the released graph holds it."""
    import torch

    from methods.gap.edgerand import asymmetric_rr

    _unsupported("edgerand-rr", m, ("noise",))
    n, per_call = 240, 4000
    pairs = np.array(np.triu_indices(n, k=1)).T
    rng = streams.numpy("canaries")  # the pair sets (any layout will do: with q = 1 a report reads its own bit)
    perm = rng.permutation(len(pairs))
    t_pairs, r_pairs = pairs[perm[:per_call]], pairs[perm[per_call:2 * per_call]]
    base = pairs[perm[2 * per_call:2 * per_call + int(0.6 * len(pairs)) - per_call]]
    chosen = np.concatenate([base, t_pairs if world_in else r_pairs])
    ei = torch.from_numpy(np.concatenate([chosen, chosen[:, ::-1]]).T.copy()).long()
    t_keys = t_pairs[:, 0] * n + t_pairs[:, 1]
    scores = []
    for call in range(-(-trials // per_call)):
        out, facts = asymmetric_rr(ei, n, eps * m.noise, 1.0, streams.numpy("noise", call))
        if facts["rr_subsample_q"] != 1.0:  # pragma: no cover - the density keeps q at 1
            raise ConfigError("edgerand-rr audit: EdgeRand subsampled its reports (q < 1)")
        upper = out[0] < out[1]
        keys = (out[0, upper] * n + out[1, upper]).numpy()
        scores.append(np.isin(t_keys, keys).astype(float))
    return np.concatenate(scores)[:trials]


# ---- PATE: the noisy argmax of a vote histogram ----------------------------------------


def laplace_difference_sf(x: np.ndarray, scale: float) -> np.ndarray:
    """P[L1 - L0 > x] for independent Laplace(0, scale): (2 + |x| / b) e^(-|x| / b) / 4 above 0, mirrored below."""
    x = np.asarray(x, float)
    tail = (2.0 + np.abs(x) / scale) * np.exp(-np.abs(x) / scale) / 4.0
    return np.where(x >= 0, tail, 1.0 - tail)


def pate_gap(lam: float, trials: int) -> int:
    """The vote gap g whose one-vote change the trials can resolve best: the log ratio of the two worlds'
    chances of the flipped answer, each moved two standard errors against the auditor (and the rarer one by 3 / n,
    the rule of three's bound when it is never seen). A function of the claim
    and the number of trials only, so choosing it peeks at no trial."""
    b = 1.0 / lam
    g = np.arange(1, 400)
    p_in, p_out = laplace_difference_sf(g, b), laplace_difference_sf(g - 2, b)
    lo = p_out - 2.0 * np.sqrt(p_out / trials)
    hi = p_in + 2.0 * np.sqrt(p_in / trials) + 3.0 / trials
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(lo > 0, np.log(lo / hi), -np.inf)
    return int(g[int(np.argmax(value))])


def _pate_votes(eps: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """Trial i: a two-class vote histogram (g, 0) -- or, without the unit's teacher's vote, (g - 1, 1) -- through
    the methods' :func:`~methods.privgnn.common.noisy_argmax` with Laplace(1 / lambda) on each count,
    lambda = eps / 2 (the PATE ledger: two Laplace events of sensitivity 1 per query). The score is the released
    answer. A sensitivity mutation moves s votes."""
    import torch

    from methods.privgnn.common import noisy_argmax

    _unsupported("pate-votes", m, ("noise", "sensitivity"))
    lam = eps / 2.0
    g = pate_gap(lam, trials)
    moved = float(round(m.sensitivity))
    counts = torch.tensor([[float(g), 0.0]] if world_in else [[g - moved, moved]], dtype=torch.float64)
    out = noisy_argmax(counts.expand(trials, 2).contiguous(), lam * m.noise, streams.torch("noise"), domain="counts")
    return out.double().numpy()


# ---- EdgeRand: the Laplace edge count -----------------------------------------------


def _edgerand_count(eps: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """EdgeRand's noisy edge count (the density its q comes from) through
    :func:`methods.gap.edgerand.asymmetric_rr`, once per trial on two nodes with or without their edge
    (sensitivity 1, Laplace(1 / eps)); the score is the released count."""
    import torch

    from methods.gap.edgerand import asymmetric_rr

    _unsupported("edgerand-count", m, ("noise",))
    ei = torch.tensor([[0, 1], [1, 0]]) if world_in else torch.empty(2, 0, dtype=torch.long)
    rng = streams.numpy("noise")
    return np.array([asymmetric_rr(ei, 2, 1.0, eps * m.noise, rng)[1]["noisy_edge_count"] for _ in range(trials)])


# ---- PrivGNN: a Laplace-noisy teacher posterior on a Poisson subsample -------------------


PRIVGNN_RATE = 0.3


def _privgnn_posterior(rate: float) -> Sampler:
    def sample(s: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Trial i: the teacher's two-class posterior is (1, 0) when the unit is in its Poisson(``rate``)
        subsample (only in the "in" world) and (0, 1) otherwise -- an L1 change of 2, the ledger's sensitivity --
        through the methods' :func:`~methods.privgnn.common.noisy_argmax` with Laplace(1 / lambda) per
        coordinate, 2 lambda = the base epsilon ``s``; the score is the released label."""
        import torch

        from methods.privgnn.common import noisy_argmax

        _unsupported("privgnn-posterior", m, ("noise", "rate"))
        lam = s / 2.0
        drawn = streams.numpy("sampler").random(trials) < min(1.0, rate * m.rate) if world_in else np.zeros(trials, bool)
        post = torch.zeros(trials, 2, dtype=torch.float64)
        post[torch.from_numpy(drawn), 0] = 1.0
        post[torch.from_numpy(~drawn), 1] = 1.0
        out = noisy_argmax(post, lam * m.noise, streams.torch("noise"), domain="simplex")
        return (out == 0).double().numpy()

    return sample


def privgnn_argmax_epsilon(s: float, m: Mutation, rate: float = PRIVGNN_RATE) -> float:
    """The exact (pure) epsilon of the released label of :func:`_privgnn_posterior`'s pair: P[label 0] is
    q a + (1 - q) c with the unit and c without it, c = P[L_0 - L_1 > 1] for Laplace(1 / lambda), a = 1 - c."""
    lam = s / 2.0 * m.noise
    q = min(1.0, rate * m.rate)
    c = float(laplace_difference_sf(1.0, 1.0 / lam))
    p_in = q * (1.0 - c) + (1.0 - q) * c
    return max(math.log(p_in / c), math.log((1.0 - c) / (1.0 - p_in)))


def privgnn_posterior(rate: float) -> "Mechanism":
    """PrivGNN's per-query release at Poisson rate ``rate`` (the registry's at :data:`PRIVGNN_RATE`; a ledger's own
    rate for :mod:`audits.composed`)."""
    return Mechanism(
        "privgnn-posterior", SubsampledPureFamily(rate),
        lambda s: PoissonLaplace(rate=rate, scale=2.0 / s, sensitivity=2.0),
        _privgnn_posterior(rate), ("noise", "rate"),
        f"PrivGNN's Laplace-noisy teacher posterior, Poisson rate {rate:g}, one node moving it by 2 (L1)",
        "privgnn", trials=1_000_000, release=lambda s, m: privgnn_argmax_epsilon(s, m, rate))


def _nap_node_event(max_degree: int) -> Callable[[float], Event]:
    return lambda mu: Gaussian(sensitivity=math.sqrt(max_degree), sigma=math.sqrt(max_degree) / mu, unit="node")


NAP_NODE_DEGREE = 10
DPSGD_RATE = 0.5
#: (subgraphs, subgraphs holding the node = N(K = 3, r = 1), batch): half the subgraphs per batch, so one step
#: reaches epsilon 4 with noise a real run would use
DPGNN_SHAPE = (8, 4, 4)

MECHANISMS: dict[str, Mechanism] = {
    "nap-edge": Mechanism(
        "nap-edge", GaussianFamily(),
        lambda mu: Gaussian(sensitivity=math.sqrt(2.0), sigma=math.sqrt(2.0) / mu, unit="edge"),
        _nap_edge, ("noise",), "NAP aggregation, one undirected edge (sensitivity sqrt 2)",
        "gap-edge, progap-edge", trials=2_000_000),
    "nap-node": Mechanism(
        "nap-node", GaussianFamily(), _nap_node_event(NAP_NODE_DEGREE), _nap_node(NAP_NODE_DEGREE),
        ("noise", "sensitivity"),
        f"degree cut-off then NAP, one node of degree D = {NAP_NODE_DEGREE} (sensitivity sqrt D)",
        "gap-node, progap-node",
        actual=lambda mu, m: (GaussianFamily(), mu * m.noise * math.sqrt(
            max(1, round(NAP_NODE_DEGREE * m.sensitivity ** 2)) / NAP_NODE_DEGREE))),
    "dpsgd-poisson": Mechanism(
        "dpsgd-poisson", PoissonGaussianFamily(DPSGD_RATE),
        lambda mu: PoissonGaussian(rate=DPSGD_RATE, noise_multiplier=1.0 / mu),
        _dpsgd_poisson(DPSGD_RATE), ("noise", "sensitivity", "rate"),
        f"DPOptimizer step, Poisson rate {DPSGD_RATE}, a Dirac gradient clipped to C", "dp-mlp, gap/progap heads",
        actual=lambda mu, m: (PoissonGaussianFamily(min(1.0, DPSGD_RATE * m.rate)), mu * m.noise * m.sensitivity)),
    "dpsgd-fixed": Mechanism(
        "dpsgd-fixed", FixedSizeGaussianFamily(DPSGD_RATE),
        lambda mu: FixedSizeGaussian(population=int(round(1 / DPSGD_RATE)), sample_size=1,
                                     noise_multiplier=1.0 / (2.0 * mu), unit="feature"),
        _dpsgd_fixed(DPSGD_RATE), ("noise", "sensitivity", "rate"),
        "DPOptimizer step on a FixedSizeSampler batch (1 of 2), replace-one: a Dirac gradient +C or -C, the other "
        "example -C", "drw, drw-r, drw-d, dp-mlp-feature",
        actual=lambda mu, m: (FixedSizeGaussianFamily(1.0 / max(1, round(1.0 / (DPSGD_RATE * m.rate)))),
                              mu * m.noise * m.sensitivity),
        pair="the worst case (Balle, Barthe & Gaboardi 2018, Theorem 10)"),
    "dpgnn-step": Mechanism(
        "dpgnn-step", HypergeometricGaussianFamily(*DPGNN_SHAPE),
        lambda mu: HypergeometricGaussian(num_train=DPGNN_SHAPE[0], occurrence_bound=DPGNN_SHAPE[1],
                                          batch_size=DPGNN_SHAPE[2],
                                          noise_multiplier=1.0 / (2.0 * mu * DPGNN_SHAPE[1])),
        _dpgnn_step(*DPGNN_SHAPE), ("noise", "sensitivity", "rate"),
        f"DPOptimizer step on a FixedSizeSampler batch of {DPGNN_SHAPE[2]} of {DPGNN_SHAPE[0]} subgraphs, "
        f"{DPGNN_SHAPE[1]} = N(3, 1) of them holding the node: Dirac gradients +C or -C, the other subgraphs -C",
        "dpgnn, dpgnn-adam", trials=200_000,
        actual=lambda mu, m: (HypergeometricGaussianFamily(
            DPGNN_SHAPE[0], DPGNN_SHAPE[1], min(DPGNN_SHAPE[0], max(1, round(DPGNN_SHAPE[2] * m.rate)))),
            mu * m.noise * m.sensitivity),
        bound=RevealedHypergeometric(*DPGNN_SHAPE),
        pair="realisable, not proven worst case (the strongest of audits.step_pairs' exhaustive search)"),
    "pate-votes": Mechanism(
        "pate-votes", RandomizedResponseFamily(),
        lambda eps: Laplace(scale=2.0 / eps, sensitivity=1.0, unit="node", count=2),
        _pate_votes, ("noise", "sensitivity"), "PATE's noisy argmax of a vote histogram, one teacher's vote",
        "pate-m, pate-g", trials=4_000_000,
        actual=lambda eps, m: (RandomizedResponseFamily(), eps * m.noise * round(m.sensitivity))),
    "edgerand-count": Mechanism(
        "edgerand-count", RandomizedResponseFamily(),
        lambda eps: Laplace(scale=1.0 / eps, sensitivity=1.0, unit="edge"),
        _edgerand_count, ("noise",), "EdgeRand's Laplace edge count, one edge", "edgerand", trials=25_000),
    "privgnn-posterior": privgnn_posterior(PRIVGNN_RATE),
    "edgerand-rr": Mechanism(
        "edgerand-rr", RandomizedResponseFamily(),
        lambda eps: RandomizedResponse(epsilon=eps, unit="edge"),
        _edgerand_rr, ("noise",), "EdgeRand's randomized response, one node pair", "edgerand"),
}


def mechanism_for(event: Event) -> str | None:
    """The mechanism-level audit of a ledger event: the mechanism of :data:`MECHANISMS` whose own event has the
    same kind and privacy unit (a Gaussian is NAP's at edge or node level, a Laplace PATE's vote count at node
    level and EdgeRand's edge count at edge level), or None. The one place ledger kinds meet mechanism names."""
    return _BY_EVENT.get((event.kind, event.unit))


_BY_EVENT: dict[tuple[str, str], str] = {}
for _name, _mech in MECHANISMS.items():
    _ev = _mech.event(1.0)
    _BY_EVENT.setdefault((_ev.kind, _ev.unit), _name)
#: the ledger event kinds some mechanism-level audit covers
AUDITED_KINDS = frozenset(k for k, _ in _BY_EVENT)


# --------------------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------------------


#: what the Clopper-Pearson bound assumes
CP_ASSUMES = "nothing (assumption-free)"


@dataclass
class MechanismAudit:
    mechanism: str
    family: str  # the audited pair's family of tradeoff functions
    mutation: str
    #: the event's tightest sound epsilon at delta (the claim the verdict tests): exact where the audited pair is its
    #: proven worst case (``worst_case``), else a proven upper bound (DP-GNN's step: the k-revealed pair)
    epsilon_claimed: float
    epsilon_accounted: float  # the ledger's claim: what its default accountant reports for that event
    epsilon_true: float  # the exact epsilon of the audited pair as the code ran it: the most this audit can show
    delta: float
    trials: int  # per world, in each half
    epsilon_lb_cp: float  # assumption-free (Clopper-Pearson): the best over the evaluated tests
    epsilon_lb_fdp: float  # f-DP: assumes the pair's tradeoff is a member of ``family`` (``fdp_assumes``)
    strength_claimed: float
    strength_lb: float
    fpr_upper: float  # the f-DP-selected test's bounds (every test's are in ``tests``)
    fnr_upper: float
    threshold: float
    direction: int
    confidence: float  # of every bound and the verdict together
    verdict: str  # "ok" | "VIOLATION"
    seconds: float
    event: dict = field(default_factory=dict)
    fdp_assumes: str = ""
    worst_case: bool = True  # the audited pair is the event's proven worst case
    pair: str = ""  # why it is, or that it is only realisable
    tests: list = field(default_factory=list)  # every evaluated test: selected for, threshold, direction, bounds

    def _over(self, lb: float, claim: float) -> float:
        return lb / claim if claim > 0 else math.nan

    @property
    def ratio_cp(self) -> float:
        """The assumption-free bound over the claim (the event's tightest sound epsilon)."""
        return self._over(self.epsilon_lb_cp, self.epsilon_claimed)

    @property
    def ratio_fdp(self) -> float:
        """The f-DP bound over the claim."""
        return self._over(self.epsilon_lb_fdp, self.epsilon_claimed)

    @property
    def ledger_ratio_cp(self) -> float:
        """The assumption-free bound over the ledger's claim (its accountant's epsilon)."""
        return self._over(self.epsilon_lb_cp, self.epsilon_accounted)

    @property
    def ledger_ratio_fdp(self) -> float:
        return self._over(self.epsilon_lb_fdp, self.epsilon_accounted)

    def lower_bound_pair(self) -> tuple[np.ndarray, np.ndarray]:
        """An assumption-free lower-bound mechanism: :func:`tradeoff_pair` of the evaluated tests' bounds."""
        return tradeoff_pair([(t["fpr_upper"], t["fnr_upper"]) for t in self.tests])

    def to_dict(self) -> dict:
        return {**asdict(self), "cp_assumes": CP_ASSUMES, "ratio_cp": self.ratio_cp, "ratio_fdp": self.ratio_fdp,
                "ledger_ratio_cp": self.ledger_ratio_cp, "ledger_ratio_fdp": self.ledger_ratio_fdp}


def tradeoff_pair(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The least informative pair of worlds whose tests meet every (FPR, FNR) bound in ``points``: its tradeoff
    function is the lower convex hull of (0, 1), the points and (1, 0), and each hull segment is one outcome
    (masses: the FNR drop in the world with the unit, the FPR rise in the other). Any mechanism whose tests reach
    those points has a tradeoff function below this one (a tradeoff function is convex), so by Blackwell's theorem
    (Dong, Roth & Su 2022, Theorem 2.10) this pair is a post-processing of it: a lower-bound mechanism, and composing
    copies of it (:mod:`audits.composed`) bounds the composition from below. Returns (masses with the unit,
    masses without it)."""
    pts = sorted({(0.0, 1.0), (1.0, 0.0), *((float(a), float(b)) for a, b in points if a + b < 1.0)})
    hull: list[tuple[float, float]] = []
    for p in pts:
        while len(hull) >= 2 and ((hull[-1][0] - hull[-2][0]) * (p[1] - hull[-2][1])
                                  - (hull[-1][1] - hull[-2][1]) * (p[0] - hull[-2][0])) <= 0:
            hull.pop()
        hull.append(p)
    alpha, beta = np.array([h[0] for h in hull]), np.array([h[1] for h in hull])
    return -np.diff(beta), np.diff(alpha)


def _upper(k: np.ndarray, n: int, confidence: float) -> np.ndarray:
    """Vectorised one-sided Clopper-Pearson upper bounds (1 where k = n)."""
    k = np.asarray(k)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(confidence, k + 1, np.maximum(n - k, 1))
    return np.where(k >= n, 1.0, out)


def _rates(scores_in, scores_out, thresholds, direction):
    """(FP, FN) counts of "in iff direction * score >= direction * t" for every t."""
    si, so = np.sort(direction * scores_in), np.sort(direction * scores_out)
    t = direction * thresholds
    fp = so.size - np.searchsorted(so, t, side="left")
    fn = np.searchsorted(si, t, side="left")
    return fp, fn


def _cp_epsilon(alpha: np.ndarray, beta: np.ndarray, delta: float) -> np.ndarray:
    """:func:`audits.bounds.epsilon_from_rates`, vectorised."""
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(1.0 - delta - alpha > 0, np.log(np.maximum(1.0 - delta - alpha, 1e-300) / beta), 0.0)
        b = np.where(1.0 - delta - beta > 0, np.log(np.maximum(1.0 - delta - beta, 1e-300) / alpha), 0.0)
    return np.maximum(0.0, np.maximum(a, b))


#: candidate thresholds: this many quantiles of the pooled selection scores (few enough that the selection
#: half's winner's curse stays small)
QUANTILES = 65
#: the CP test's candidates: this many geometrically spaced order statistics from each end of each world's
#: selection scores (the bound lives in the tails, where the two worlds' rates differ by e^epsilon)
TAIL_CANDIDATES = 100
#: the CP test is chosen on the selection half with Clopper-Pearson bounds this much stricter (1 - confidence
#: divided by it) than the evaluation's: it prefers thresholds with more errors to count, whose bound holds up on
#: the other half (the selection half's best with the evaluation's level overfits its few tail errors)
SELECT_STRICTNESS = 1000.0


def _candidates(sel_in: np.ndarray, sel_out: np.ndarray) -> np.ndarray:
    pooled = np.concatenate([sel_in, sel_out])
    mids = np.unique(pooled)
    if mids.size <= 64:  # a discrete score: every split between two values
        cand = (mids[1:] + mids[:-1]) / 2.0
        return cand if cand.size else np.array([pooled[0]])
    return np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, QUANTILES)))


def _select(family: Family, sel_in, sel_out, per: float) -> tuple[float, int]:
    """The test (threshold, direction) whose Clopper-Pearson point rules out the most of the family, on the
    selection half."""
    cand = _candidates(sel_in, sel_out)
    best = (-1.0, 0.0, 1)
    for direction in (1, -1):
        fp, fn = _rates(sel_in, sel_out, cand, direction)
        s = family.strength_bound(_upper(fp, sel_out.size, per), _upper(fn, sel_in.size, per))
        i = int(np.argmax(s))
        if s[i] > best[0]:
            best = (float(s[i]), float(cand[i]), direction)
    return best[1], best[2]


def _select_cp(sel_in, sel_out, per: float, delta: float) -> tuple[float, int]:
    """The test (threshold, direction) with the largest assumption-free bound on the selection half (at the
    stricter level of :data:`SELECT_STRICTNESS`), among the quantiles and the tails' order statistics."""
    cand = _candidates(sel_in, sel_out)
    if np.unique(np.concatenate([sel_in, sel_out])).size > 64:
        tails = []
        for x in (np.sort(sel_in), np.sort(sel_out)):
            pos = np.unique(np.geomspace(1, x.size, TAIL_CANDIDATES).astype(int)) - 1
            tails += [x[pos], x[x.size - 1 - pos]]
        cand = np.unique(np.concatenate([cand, *tails]))
    strict = 1.0 - (1.0 - per) / SELECT_STRICTNESS
    best = (-1.0, 0.0, 1)
    for direction in (1, -1):
        fp, fn = _rates(sel_in, sel_out, cand, direction)
        e = _cp_epsilon(_upper(fp, sel_out.size, strict), _upper(fn, sel_in.size, strict), delta)
        i = int(np.argmax(e))
        if e[i] > best[0]:
            best = (float(e[i]), float(cand[i]), direction)
    return best[1], best[2]


def _below_curve(points: list[tuple[float, float]], curve: Callable[[float], float], claim: float) -> bool:
    """Whether a point (FPR, FNR) lies below the tradeoff function of the privacy curve ``curve`` (eps -> delta):
    some epsilon has max(1 - FNR - e^eps FPR, 1 - FPR - e^eps FNR) > curve(eps). Checked on a grid of epsilons (a
    grid can only miss a violation, never invent one)."""
    grid = np.unique(np.concatenate([np.linspace(0.0, 3.0 * claim + 2.0, 301), [claim]]))
    for eps in grid:
        room = max(1.0 - b - math.exp(eps) * a for a, b in points + [(b, a) for a, b in points])
        if room > 0 and room > curve(float(eps)) * (1 + 1e-9) + 1e-15:
            return True
    return False


def validate_audit(name: str, epsilon: float, *, delta: float, trials: int, mutation: Mutation,
                   confidence: float, seed: int = 0) -> None:
    """Every check :func:`audit_mechanism` makes before it runs (a :class:`ConfigError` each)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"--seed must be >= 0 (got {seed})")
    if name not in MECHANISMS:
        raise ConfigError(f"unknown mechanism {name!r} (known: {', '.join(MECHANISMS)})")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ConfigError(f"epsilon must be a positive finite number (got {epsilon})")
    if not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1) (got {delta})")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 100:
        raise ConfigError(f"trials must be an integer >= 100 (got {trials})")
    _check_confidence(confidence)
    _unsupported(name, mutation, MECHANISMS[name].mutations)


def audit_mechanism(name: str, epsilon: float, *, delta: float = DEFAULT_DELTA, trials: int | None = None,
                    seed: int = 0, mutation: Mutation | None = None,
                    confidence: float = DEFAULT_CONFIDENCE, mechanism: Mechanism | None = None) -> MechanismAudit:
    """Audit one application of mechanism ``name`` calibrated so that its ledger event claims exactly
    ``epsilon`` at ``delta``; ``trials`` per world in each of the selection and evaluation halves (default: the
    mechanism's own, :attr:`Mechanism.trials`). ``mechanism``: a variant of the registry's ``name`` to run instead
    (e.g. :func:`privgnn_posterior` at a ledger's own rate)."""
    from methods.privacy.accountant import DEFAULT_ACCOUNTANT, epsilon as account, parse_accountant

    mutation = mutation or Mutation()
    if mechanism is not None and mechanism.name != name:
        raise ConfigError(f"mechanism {mechanism.name!r} given for {name!r}")
    if trials is None and name in MECHANISMS:
        trials = (mechanism or MECHANISMS[name]).trials
    validate_audit(name, epsilon, delta=delta, trials=trials, mutation=mutation, confidence=confidence, seed=seed)
    mech = mechanism or MECHANISMS[name]
    start = time.perf_counter()
    family = mech.family
    s_claim = mech.strength_for_epsilon(epsilon, delta)
    claim = mech.claim(s_claim, delta)
    event = mech.event(s_claim)
    acc, conv = parse_accountant(DEFAULT_ACCOUNTANT)
    accounted = account([event], delta, acc, conv)[0]
    root = RunStreams(seed)
    scores = {(half, world): mech.sample(s_claim, world, trials, root.child("trial", half, int(world)), mutation)
              for half in ("select", "eval") for world in (True, False)}
    sel_in, sel_out = scores["select", True], scores["select", False]
    # two tests, chosen on the selection half: the one that rules out the most of the family (f-DP) and the one
    # with the largest assumption-free bound (CP, in the tails); Bonferroni over their four rates, so every bound
    # and the verdict hold together at ``confidence``
    per = 1.0 - (1.0 - confidence) / 4.0
    chosen = {"f-DP": _select(family, sel_in, sel_out, per), "CP": _select_cp(sel_in, sel_out, per, delta)}
    if chosen["CP"] == chosen["f-DP"]:
        del chosen["CP"]
        per = 1.0 - (1.0 - confidence) / 2.0
    tests = []
    for label, (threshold, direction) in chosen.items():
        fp, fn = _rates(scores["eval", True], scores["eval", False], np.array([threshold]), direction)
        alpha_u, beta_u = float(_upper(fp, trials, per)[0]), float(_upper(fn, trials, per)[0])
        tests.append({"selected_for": label, "threshold": threshold, "direction": direction, "fp": int(fp[0]),
                      "fn": int(fn[0]), "fpr_upper": alpha_u, "fnr_upper": beta_u,
                      "epsilon_lb_cp": epsilon_from_rates(alpha_u, beta_u, delta)})
    points = [(t["fpr_upper"], t["fnr_upper"]) for t in tests]
    s_lb = float(np.max(family.strength_bound(np.array([p[0] for p in points]), np.array([p[1] for p in points]))))
    eps_cp = max(t["epsilon_lb_cp"] for t in tests)
    eps_fdp = family.epsilon(s_lb, delta)
    if mech.worst_case:  # below the claimed member of the pair's own family, or outside (claim, delta)
        violation = s_lb > s_claim * (1 + 1e-9) or eps_cp > claim * (1 + 1e-9)
    else:  # below the sound bound's curve
        violation = eps_cp > claim * (1 + 1e-9) or _below_curve(points, lambda e: mech.bound.delta(s_claim, e), claim)
    f_test = tests[0]
    return MechanismAudit(
        name, family.name, mutation.label(), float(claim), float(accounted),
        float(mech.true_epsilon(s_claim, mutation, delta)), delta, trials, float(eps_cp),
        float(eps_fdp), s_claim, s_lb, f_test["fpr_upper"], f_test["fnr_upper"], f_test["threshold"],
        f_test["direction"], confidence, "VIOLATION" if violation else "ok", time.perf_counter() - start,
        {"kind": event.kind, **{k: v for k, v in asdict(event).items() if isinstance(v, (int, float, str))}},
        fdp_assumes=family.assumes, worst_case=mech.worst_case, pair=mech.pair, tests=tests)


def compose_gaussian(audit: MechanismAudit, count: int) -> dict:
    """A whole-pipeline bound from one audited Gaussian release, ``count`` identical non-adaptive releases of it on
    the same pair (e.g. GAP/ProGAP edge level: K NAP releases of one edge), both ways:

    * ``epsilon_lb_cp`` (assumption-free): ``count`` copies of the audit's lower-bound pair
      (:meth:`MechanismAudit.lower_bound_pair`, a post-processing of the release) composed exactly
      (:func:`audits.exact.pair_epsilon`);
    * ``epsilon_lb_fdp`` (assumes a Gaussian trade-off): ``count`` releases of a mu-GDP mechanism are exactly
      sqrt(count) mu-GDP (Dong, Roth & Su 2022, Corollary 3.3), so the strength bound composes the same way.

    Returns both, the pipeline's exact claim and each ratio."""
    from audits.exact import pair_epsilon

    if audit.family != GaussianFamily.name:
        raise ConfigError(f"{audit.mechanism}: only a Gaussian release composes as GDP (this is {audit.family})")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"count must be a positive integer (got {count!r})")
    fam, k = GaussianFamily(), math.sqrt(count)
    fdp = fam.epsilon(audit.strength_lb * k, audit.delta)
    cp = pair_epsilon([(*audit.lower_bound_pair(), count)], audit.delta)
    claim = fam.epsilon(audit.strength_claimed * k, audit.delta)
    return {"mechanism": audit.mechanism, "count": count, "epsilon_lb_cp": cp, "epsilon_lb_fdp": fdp,
            "epsilon_claimed": claim, "ratio_cp": cp / claim if claim > 0 else math.nan,
            "ratio_fdp": fdp / claim if claim > 0 else math.nan, "cp_assumes": CP_ASSUMES,
            "fdp_assumes": GaussianFamily.assumes}


__all__ = ["CP_ASSUMES", "DEFAULT_DELTA", "DEFAULT_TRIALS", "Family", "FixedSizeGaussianFamily", "GaussianFamily",
           "HypergeometricGaussianFamily", "MECHANISMS", "Mechanism", "MechanismAudit",
           "Mutation", "OneSidedMixtureFamily", "PoissonGaussianFamily", "RandomizedResponseFamily",
           "RevealedHypergeometric", "SoundBound", "SubsampledPureFamily", "AUDITED_KINDS",
           "audit_mechanism", "compose_gaussian", "gaussian_delta", "mechanism_for", "privgnn_posterior",
           "tradeoff_pair", "validate_audit"]
