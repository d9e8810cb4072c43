"""Families of trade-off functions, f_s(alpha) = the smallest FNR of any test at FPR alpha, indexed by a strength
``s >= 0``: the shapes the audited pairs of several mechanism kinds share (a Gaussian release, a one-sided Gaussian
mixture, pure DP), and the distributions they are built from. A family one kind alone uses lives in that kind's
module (:mod:`audits.mechanisms`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, special, stats

from methods.base import ConfigError


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


def epsilon_of_delta(delta_of, s: float, delta: float) -> float:
    """The smallest eps with ``delta_of(s, eps) <= delta`` (``delta_of`` decreasing in eps): bracket by doubling up
    to 512, then Brent's root; 0 when eps = 0 already meets delta, inf when nothing up to 512 does."""
    if s <= 0 or delta_of(s, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_of(s, hi) > delta:
        hi *= 2.0
        if hi > 512:
            return math.inf
    return float(optimize.brentq(lambda e: delta_of(s, e) - delta, 0.0, hi, xtol=1e-12))


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


def gaussian_delta(mu: float, eps: float) -> float:
    """The privacy curve of N(0, 1) against N(mu, 1) (Balle & Wang 2018, Theorem 8), in log space."""
    if mu <= 0:
        return 0.0
    return max(0.0, float(special.ndtr(-eps / mu + mu / 2) - math.exp(eps + special.log_ndtr(-eps / mu - mu / 2))))


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
        return epsilon_of_delta(self.delta_of, s, delta)


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


def laplace_difference_sf(x: np.ndarray, scale: float) -> np.ndarray:
    """P[L1 - L0 > x] for independent Laplace(0, scale): (2 + |x| / b) e^(-|x| / b) / 4 above 0, mirrored below."""
    x = np.asarray(x, float)
    tail = (2.0 + np.abs(x) / scale) * np.exp(-np.abs(x) / scale) / 4.0
    return np.where(x >= 0, tail, 1.0 - tail)


@dataclass(frozen=True)
class GaussianCurve:
    """The privacy curve of a Gaussian release of strength mu (Balle & Wang 2018, Theorem 8), as a
    :class:`~audits.mechanisms.base.SoundBound`: the claim of a kind whose pairs are not proven to meet it."""

    def delta(self, s: float, eps: float) -> float:
        return gaussian_delta(s, eps)

    def epsilon(self, s: float, delta: float) -> float:
        return GaussianFamily().epsilon(s, delta)


@lru_cache(maxsize=256)
def mixture_epsilon(count: int, p: float, step: float, s: float, delta: float, offset: int = 0) -> float:
    """The exact epsilon at ``delta`` of N(0, 1) against sum_j Bin(count, p)(j) N((offset + j) step s, 1): a
    Gaussian release whose mean moves by a Binomial number of units (:class:`OneSidedMixtureFamily`)."""
    if s <= 0 or (p <= 0 and offset == 0):
        return 0.0
    w = np.zeros(offset + count + 1)
    w[offset:] = stats.binom.pmf(np.arange(count + 1), count, p)
    return OneSidedMixtureFamily(w / w.sum(), step=step).epsilon(s, delta)
