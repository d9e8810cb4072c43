"""Epsilon lower bounds from membership guesses: Clopper-Pearson (multi-run) and Steinke et al. (one-run).

Both bounds are statements "with probability >= confidence over the audit's randomness, the mechanism is
NOT (eps, delta)-DP for any eps < epsilon_lb". They are only valid when every quantity used to choose
the test (threshold, direction, number of guesses) is fixed before the evaluated outcomes are seen;
``audits.runner`` selects them on held-out trials (multi-run: threshold AND direction, so a canary that
makes the score drop is caught too) or fixes them in advance and pays for a small grid with a Bonferroni
correction (one-run: "in" = the highest scores only).

Multi-run (Jagielski et al. 2020; Nasr et al. 2021). For any test of "canary in" vs "canary out" with
false-positive rate FPR and false-negative rate FNR, (eps, delta)-DP implies
``FPR + e^eps FNR >= 1 - delta`` and ``FNR + e^eps FPR >= 1 - delta``, so

    eps >= max(ln((1 - delta - FPR) / FNR), ln((1 - delta - FNR) / FPR)).

We plug in one-sided Clopper-Pearson upper bounds of FPR and FNR. Both must hold at once, so each is taken
at level ``1 - (1 - confidence) / 2`` (Bonferroni): the bound holds with probability >= ``confidence``.
(Using each at ``confidence`` -- common in the literature -- only gives ``2 confidence - 1`` jointly.)

One-run (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run", Theorem 3.1 for
pure DP and its (eps, delta) extension, Theorem 5.2 / Appendix D). m canaries are each included
independently with probability 1/2; the auditor makes r guesses (abstaining on the rest) and v of them are
correct. If the mechanism is (eps, delta)-DP then

    P[V >= v] <= P[Binomial(r, q) >= v] + 2 m delta * max_{i=1..v} P[v - i <= Binomial(r, q) < v] / i,
    q = e^eps / (1 + e^eps).

epsilon_lb is the largest eps whose p-value is still below ``1 - confidence`` (bisection: the p-value
increases with eps). With delta = 0 it is the pure-DP bound of Theorem 3.1.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from methods.base import ConfigError

DEFAULT_CONFIDENCE = 0.95


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1) (got {confidence})")


def clopper_pearson_upper(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound on a binomial proportion after k successes in n trials:
    the p with P[Binomial(n, p) <= k] = 1 - confidence (1 when k = n)."""
    _check_confidence(confidence)
    if n < 1 or not 0 <= k <= n:
        raise ConfigError(f"need 0 <= k <= n and n >= 1 (got k={k}, n={n})")
    if k == n:
        return 1.0
    return float(stats.beta.ppf(confidence, k + 1, n - k))


def clopper_pearson_lower(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """One-sided Clopper-Pearson lower bound (0 when k = 0)."""
    _check_confidence(confidence)
    if n < 1 or not 0 <= k <= n:
        raise ConfigError(f"need 0 <= k <= n and n >= 1 (got k={k}, n={n})")
    if k == 0:
        return 0.0
    return float(stats.beta.ppf(1.0 - confidence, k, n - k + 1))


def epsilon_from_rates(fpr: float, fnr: float, delta: float = 0.0) -> float:
    """max(ln((1 - delta - FPR) / FNR), ln((1 - delta - FNR) / FPR), 0) for given (bounds on) the rates."""
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        num = 1.0 - delta - a
        if num <= 0:
            continue
        if b <= 0:
            return math.inf
        best = max(best, math.log(num / b))
    return best


@dataclass(frozen=True)
class MultiRunBound:
    epsilon_lb: float
    threshold: float
    fp: int
    negatives: int
    fn: int
    positives: int
    fpr_upper: float
    fnr_upper: float
    confidence: float
    direction: int = 1  # +1: "in" iff score >= threshold; -1: "in" iff score <= threshold

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def multi_run_bound(fp: int, negatives: int, fn: int, positives: int, delta: float,
                    confidence: float = DEFAULT_CONFIDENCE, threshold: float = math.nan) -> MultiRunBound:
    """The multi-run epsilon lower bound from counted errors of a FIXED test on evaluation trials."""
    per = 1.0 - (1.0 - confidence) / 2.0  # Bonferroni over the two upper bounds
    fpr_up = clopper_pearson_upper(fp, negatives, per)
    fnr_up = clopper_pearson_upper(fn, positives, per)
    return MultiRunBound(epsilon_from_rates(fpr_up, fnr_up, delta), threshold, fp, negatives, fn, positives,
                         fpr_up, fnr_up, confidence)


def errors_at(scores_in: np.ndarray, scores_out: np.ndarray, threshold: float) -> tuple[int, int]:
    """(false positives, false negatives) of the test "in iff score >= threshold"."""
    fp = int(np.sum(np.asarray(scores_out) >= threshold))
    fn = int(np.sum(np.asarray(scores_in) < threshold))
    return fp, fn


def candidate_thresholds(scores: np.ndarray) -> np.ndarray:
    """Midpoints between consecutive distinct scores, plus one below and one above all of them."""
    s = np.unique(np.asarray(scores, dtype=float))
    s = s[np.isfinite(s)]
    if s.size == 0:
        return np.array([0.0])
    mids = (s[1:] + s[:-1]) / 2.0
    return np.concatenate([[s[0] - 1.0], mids, [s[-1] + 1.0]])


def select_threshold(scores_in: np.ndarray, scores_out: np.ndarray, delta: float,
                     confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, int]:
    """The test maximising the multi-run bound on the SELECTION trials: a threshold and a direction
    (+1: "in" iff score >= t; -1: "in" iff score <= t, i.e. -score >= -t). Ties: the middle threshold."""
    scores_in, scores_out = np.asarray(scores_in, float), np.asarray(scores_out, float)
    if scores_in.size == 0 or scores_out.size == 0:
        raise ConfigError("threshold selection needs trials with and without the canary")
    best_value, best = -1.0, (0.0, 1)
    for sign in (1, -1):
        si, so = sign * scores_in, sign * scores_out
        thresholds = candidate_thresholds(np.concatenate([si, so]))
        values = []
        for t in thresholds:
            fp, fn = errors_at(si, so, t)
            values.append(multi_run_bound(fp, so.size, fn, si.size, delta, confidence).epsilon_lb)
        values = np.asarray(values)
        top = np.flatnonzero(values >= values.max() - 1e-12)
        if values.max() > best_value + 1e-12:
            best_value, best = float(values.max()), (float(sign * thresholds[top[len(top) // 2]]), sign)
    return best


def multi_run_audit(scores_in: np.ndarray, scores_out: np.ndarray, delta: float,
                    confidence: float = DEFAULT_CONFIDENCE, rng: np.random.Generator | None = None) -> MultiRunBound:
    """Split each world's trials at random in halves: choose the threshold on one half, bound on the other."""
    rng = np.random.default_rng(0) if rng is None else rng
    scores_in, scores_out = np.asarray(scores_in, float), np.asarray(scores_out, float)
    if scores_in.size < 2 or scores_out.size < 2:
        raise ConfigError("multi-run audits need at least 2 trials with and 2 without the canary")
    pi, po = rng.permutation(scores_in.size), rng.permutation(scores_out.size)
    si, ei = scores_in[pi[: scores_in.size // 2]], scores_in[pi[scores_in.size // 2:]]
    so, eo = scores_out[po[: scores_out.size // 2]], scores_out[po[scores_out.size // 2:]]
    t, sign = select_threshold(si, so, delta, confidence)
    fp, fn = errors_at(sign * ei, sign * eo, sign * t)
    bound = multi_run_bound(fp, eo.size, fn, ei.size, delta, confidence, threshold=t)
    return dataclasses.replace(bound, direction=sign)


# --------------------------------------------------------------------------------------
# One run (Steinke, Nasr & Jagielski 2023)
# --------------------------------------------------------------------------------------


def one_run_p_value(m: int, r: int, v: int, eps: float, delta: float = 0.0) -> float:
    """P-value of v correct out of r guesses (m canaries) under the null "the mechanism is (eps, delta)-DP"."""
    if not 0 <= v <= r <= m:
        raise ConfigError(f"need 0 <= correct <= guesses <= canaries (got {v}, {r}, {m})")
    if eps < 0 or not 0.0 <= delta <= 1.0:
        raise ConfigError(f"need eps >= 0 and delta in [0, 1] (got {eps}, {delta})")
    q = 1.0 / (1.0 + math.exp(-eps)) if eps < 700 else 1.0
    beta = float(stats.binom.sf(v - 1, r, q))  # P[Binomial(r, q) >= v]
    if delta > 0 and v > 0:
        # alpha = max_i P[v - i <= B < v] / i over i = 1..v (cumulative sums of the pmf below v)
        pmf = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[B = v-1], P[B = v-2], ...
        alpha = float(np.max(np.cumsum(pmf) / np.arange(1, v + 1)))
        beta += 2.0 * m * delta * alpha
    return min(beta, 1.0)


def one_run_epsilon_lb(m: int, r: int, v: int, delta: float = 0.0, confidence: float = DEFAULT_CONFIDENCE,
                       tol: float = 1e-6) -> float:
    """The largest eps with p-value(eps) < 1 - confidence (0 when even eps = 0 cannot be rejected)."""
    _check_confidence(confidence)
    p = 1.0 - confidence
    if one_run_p_value(m, r, v, 0.0, delta) >= p:
        return 0.0
    lo, hi = 0.0, 1.0
    while one_run_p_value(m, r, v, hi, delta) < p:
        lo, hi = hi, hi * 2.0
        if hi > 1e4:
            return math.inf
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        if one_run_p_value(m, r, v, mid, delta) < p:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class OneRunBound:
    epsilon_lb: float
    canaries: int
    guesses: int
    correct: int
    k_plus: int
    k_minus: int
    confidence: float
    grid: int  # number of (k+, k-) pairs tried; each was tested at level 1 - (1 - confidence) / grid

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def guess_grid(m: int) -> list[tuple[int, int]]:
    """A small fixed grid of (k+, k-): guess "in" for the top k+ and "out" for the bottom k- scores."""
    sizes = sorted({max(1, int(round(m * f))) for f in (0.05, 0.1, 0.2, 0.3, 0.5)})
    return [(k, k) for k in sizes if 2 * k <= m] or [(max(1, m // 2), m - max(1, m // 2))]


def one_run_audit(scores: np.ndarray, included: np.ndarray, delta: float, confidence: float = DEFAULT_CONFIDENCE,
                  grid: list[tuple[int, int]] | None = None) -> OneRunBound:
    """Score-ranked guesses over a fixed grid of (k+, k-); the best bound, Bonferroni-corrected over the grid."""
    scores = np.asarray(scores, float)
    included = np.asarray(included, bool)
    m = scores.size
    if m < 2 or included.size != m:
        raise ConfigError("one-run audits need at least 2 canaries with their inclusion bits")
    grid = guess_grid(m) if grid is None else grid
    level = 1.0 - (1.0 - confidence) / len(grid)
    order = np.argsort(-scores, kind="stable")  # highest score first
    best = None
    for kp, km in grid:
        if kp + km > m:
            raise ConfigError(f"k+ + k- = {kp + km} exceeds the {m} canaries")
        correct = int(included[order[:kp]].sum()) + int((~included[order[m - km:]]).sum()) if km else \
            int(included[order[:kp]].sum())
        lb = one_run_epsilon_lb(m, kp + km, correct, delta, level)
        cand = OneRunBound(lb, m, kp + km, correct, kp, km, confidence, len(grid))
        if best is None or cand.epsilon_lb > best.epsilon_lb:
            best = cand
    return best
