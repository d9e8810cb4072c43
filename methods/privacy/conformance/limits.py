"""Sound lower limits on the epsilon of a composition of mechanism events (the corpus's ``lower_limit``).

A lower limit is provably at most the true epsilon at ``delta``. Two ways are used:

* **exact** values where a closed form exists: the T-fold Gaussian is mu-GDP with mu = sqrt(sum T_i / z_i^2)
  (Balle & Wang 2018, Theorem 8; Dong, Roth & Su 2022, Corollary 2.13), the T-fold randomized response a
  binomial privacy-loss sum, one Laplace release ``eps0 + 2 log(1 - delta)``; in mpmath at ``MP_DPS`` digits.
* **one realisable neighbouring pair** (P, Q) of each remaining mechanism, composed T-fold: the true epsilon is a
  supremum over neighbouring pairs, so the epsilon of any one pair is a lower limit. The pair's output is
  binned (post-processing: the binned pair's epsilon is at most the pair's), each bin's privacy loss
  ln(P_j / Q_j) is rounded DOWN onto a grid of width ``disc`` and the T-fold composition is computed with
  dp-accounting's ``PrivacyLossDistribution`` (``pessimistic_estimate=False``: its truncations round down too).
  Rounding losses down can only lower delta(eps) = E_P[(1 - e^(eps - L))_+], so this is the
  optimistic PLD of the pair: a lower bound. Its bias, up to T * disc, is then removed soundly: the rounding
  residuals F_t in [0, disc) are i.i.d. with a mean m computed exactly from the binned pair, so by Hoeffding
  sum_t F_t >= T m - s except with probability eta = e^(-2 s^2 / (T disc^2)), and
  delta_true(eps) >= delta_rounded(eps - (T m - s)) - eta (the idea of Gopi, Lee & Wutschitz 2021, Sec. 5,
  used here in the lower direction). Both bounds are computed and the larger is returned.

A ledger with several event kinds gets the largest of its kinds' limits: the composition's epsilon is at least
that of any sub-composition (the other releases can be ignored: post-processing). Events of one kind are
composed under one pair (the same unit changed in each application, as every accountant assumes).

Numbers are computed in double precision (mpmath for the exact forms); dp-accounting's FFT self-composition
may add up to its tail truncation to the infinity mass and alias as much into the window, which
:func:`pld_lower_epsilon` offsets by querying at a larger delta. Importable without torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import mpmath
import numpy as np
from scipy import special

from methods.errors import BenchError

#: mpmath working precision (decimal digits) of the exact forms
MP_DPS = 50
#: tail mass dp-accounting may truncate per self-composition
TAIL_TRUNCATION = 1e-15
#: Hoeffding failure probability, relative to delta
ETA_RELATIVE = 1e-4
#: target Hoeffding slack s (in epsilon) that chooses the loss grid, and the grid's limits
SLACK_TARGET = 5e-4
DISC_MAX = 1e-4
DISC_MIN = 1e-7
#: most grid points one application's loss range may take, and the composition's window (about 24 standard
#: deviations of the composed loss) may take: they bound the FFTs' size, hence time and memory
GRID_MAX = 2 ** 21
WINDOW_MAX = 2 ** 23
#: width of the output bins of a Gaussian-noise pair, in noise standard deviations
BIN_WIDTH = 0.005


class LimitError(BenchError, ValueError):
    """A lower limit that cannot be computed for the given events or parameters."""


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise LimitError(f"delta must be in (0, 1) (got {delta})")
    return delta


# ----------------------------------------------------------------------------------------------------------
# Exact closed forms (mpmath)
# ----------------------------------------------------------------------------------------------------------


def gaussian_delta(epsilon: float, mu: float) -> mpmath.mpf:
    """delta(eps) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle & Wang 2018, Thm. 8),
    the exact hockey-stick divergence of N(mu, 1) from N(0, 1)."""
    with mpmath.workdps(MP_DPS):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


def _solve_decreasing(fn, target: float, rel_tol: float = 1e-13) -> float:
    """The eps >= 0 where the non-increasing ``fn(eps)`` (an mpf) falls to ``target``, by bisection; 0 if
    fn(0) <= target already."""
    with mpmath.workdps(MP_DPS):
        t = mpmath.mpf(target)
        if fn(0) <= t:
            return 0.0
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while fn(hi) > t:
            lo, hi = hi, 2 * hi
            if hi > 1e6:
                raise LimitError("epsilon above 1e6: no finite limit is useful")
        while hi - lo > rel_tol * hi:
            mid = (lo + hi) / 2
            if fn(mid) > t:
                lo = mid
            else:
                hi = mid
        return float(lo) * (1 - 1e-15)  # the lower end (fn(lo) > target: the root is above), rounded down


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon of mu-GDP at ``delta`` (the T-fold Gaussian with multiplier z has mu = sqrt(T)/z): the
    root of :func:`gaussian_delta`, bisected in mpmath; the lower end of the final bracket is returned, so the
    value is never above the exact one."""
    delta = _check_delta(delta)
    if not mu > 0 or math.isinf(mu):
        raise LimitError(f"mu must be positive and finite (got {mu})")
    return _solve_decreasing(lambda e: gaussian_delta(e, mu), delta)


def gaussian_lower_limit(noise_multiplier: float, steps: int, delta: float) -> float:
    """Exact epsilon of ``steps`` Gaussian releases of noise multiplier z: mu = sqrt(T)/z (the T-fold
    composition of N(1/z, 1) vs N(0, 1) is N(sqrt(T)/z, 1) vs N(0, 1) after the sufficient statistic)."""
    _check_positive("noise_multiplier", noise_multiplier)
    _check_steps(steps)
    return gaussian_epsilon(math.sqrt(steps) / noise_multiplier, delta) if steps else 0.0


def _exact_discrete_epsilon(losses: Sequence, probs: Sequence, delta: float) -> float:
    """Smallest eps >= 0 with sum_{l > eps} p_l (1 - e^(eps - l)) <= delta, for a finite privacy-loss
    distribution (mpf losses and P-probabilities): exact, solving in closed form on the segment between two
    losses (the algorithm of dp-accounting's ``_get_epsilon_for_delta``, in mpmath)."""
    with mpmath.workdps(MP_DPS):
        d = mpmath.mpf(delta)
        order = sorted(range(len(losses)), key=lambda i: losses[i], reverse=True)
        upper, lower = mpmath.mpf(0), mpmath.mpf(0)
        for i in order:
            loss, p = losses[i], probs[i]
            if upper > d and lower > 0 and mpmath.log((upper - d) / lower) >= loss:
                break
            upper += p
            lower += p * mpmath.exp(-loss)
        if upper <= lower + d:
            return 0.0
        eps = mpmath.log((upper - d) / lower)
        return max(0.0, float(eps) * (1 - 1e-15))  # float rounding towards zero


def rr_lower_limit(epsilon: float, steps: int, delta: float) -> float:
    """Exact epsilon of ``steps`` binary randomized responses with likelihood ratio e^eps0 (the EdgeRand flip of
    one bit; Kairouz, Oh & Viswanath 2015 show it is the worst eps0-DP mechanism): the privacy loss is
    (2k - T) eps0 with k ~ Binomial(T, e^eps0 / (1 + e^eps0)), summed exactly in mpmath."""
    delta = _check_delta(delta)
    _check_positive("epsilon", epsilon)
    _check_steps(steps)
    if steps == 0:
        return 0.0
    with mpmath.workdps(MP_DPS):
        e0 = mpmath.mpf(epsilon)
        p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
        losses = [(2 * k - steps) * e0 for k in range(steps + 1)]
        probs = [mpmath.binomial(steps, k) * p ** k * (1 - p) ** (steps - k) for k in range(steps + 1)]
        return _exact_discrete_epsilon(losses, probs, delta)


def laplace_single_epsilon(epsilon0: float, delta: float) -> float:
    """Exact epsilon of ONE Laplace release with eps0 = sensitivity / scale: for 0 <= eps <= eps0 the
    hockey-stick divergence of Lap(0, b) from Lap(Delta, b) is 1 - e^((eps - eps0)/2), so
    eps = max(0, eps0 + 2 ln(1 - delta)) (e.g. Balle & Wang 2018, Sec. 3, for the Laplace analogue)."""
    delta = _check_delta(delta)
    _check_positive("epsilon0", epsilon0)
    return max(0.0, float(epsilon0 + 2.0 * math.log1p(-delta)) * (1 - 1e-15))


def _check_positive(name: str, v: float) -> None:
    if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
        raise LimitError(f"{name} must be a positive finite number (got {v!r})")


def _check_steps(steps: int) -> None:
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 0:
        raise LimitError(f"steps must be a non-negative integer (got {steps!r})")


def _check_rate(rate: float) -> None:
    if not (isinstance(rate, (int, float)) and 0.0 <= rate <= 1.0):
        raise LimitError(f"rate must be in [0, 1] (got {rate!r})")


# ----------------------------------------------------------------------------------------------------------
# Binned realisable pairs
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BinnedPair:
    """One direction of a binned neighbouring pair used ``count`` times: the P-mass of each output bin and its
    privacy loss ln(P_j / Q_j). Bins of zero P-mass are left out (they do not enter delta(eps))."""

    losses: np.ndarray
    probs: np.ndarray
    count: int


def _gauss_bin_masses(edges: np.ndarray, shift: float) -> np.ndarray:
    """Masses of N(shift, 1) between consecutive ``edges`` (which start at -inf and end at +inf), each from
    the side of the distribution where it is small (cdf on the left, survival function on the right), so
    tail bins keep their relative precision."""
    z = edges - shift
    lo, hi = z[:-1], z[1:]
    left = special.ndtr(hi) - special.ndtr(lo)
    right = special.ndtr(-lo) - special.ndtr(-hi)
    return np.where(hi <= 0, left, np.where(lo >= 0, right, np.maximum(left, right)))


def _laplace_bin_masses(edges: np.ndarray, loc: float, scale: float) -> np.ndarray:
    """Masses of Laplace(loc, scale) between consecutive ``edges`` (-inf .. +inf), no bin straddling ``loc``
    (the caller puts it among the edges): 0.5 e^hi (1 - e^(lo-hi)) left of it, 0.5 e^-lo (1 - e^(lo-hi)) right
    of it, in units of the scale, with expm1 for narrow bins."""
    z = (edges - loc) / scale
    lo, hi = z[:-1], z[1:]
    if np.any((lo < 0) & (hi > 0)):
        raise LimitError("internal: a Laplace bin straddles the location (put it among the edges)")
    with np.errstate(over="ignore", invalid="ignore"):
        width = -np.expm1(lo - hi)
        left = 0.5 * np.exp(np.minimum(hi, 0.0)) * width
        right = 0.5 * np.exp(-np.maximum(lo, 0.0)) * width
    return np.where(hi <= 0, left, right)


def _mixture_pair(masses: dict[float, np.ndarray], w_p: dict[float, float], w_q: dict[float, float],
                  count: int) -> tuple[BinnedPair, BinnedPair]:
    """Both directions of the binned pair P = sum w_p[a] C_a, Q = sum w_q[a] C_a, with component masses
    ``masses[a]`` per bin. The difference P_j - Q_j is formed from the weight differences (exact zeros where
    both mixtures share a component), so ln(P_j/Q_j) = log1p((P_j - Q_j)/Q_j) keeps its precision when the
    pair is close (a tiny sampling rate)."""
    keys = sorted(set(w_p) | set(w_q))
    p = sum(w_p.get(a, 0.0) * masses[a] for a in keys)
    q = sum(w_q.get(a, 0.0) * masses[a] for a in keys)
    diff = sum((w_p.get(a, 0.0) - w_q.get(a, 0.0)) * masses[a] for a in keys if w_p.get(a, 0.0) != w_q.get(a, 0.0))
    if np.isscalar(diff):
        diff = np.zeros_like(p)
    # a bin whose mass underflows under one distribution has an infinite loss: leaving it out of P rounds that
    # loss down to -inf, which keeps the limit a lower bound (so does leaving out any non-finite loss)
    keep = (p > 0) & (q > 0)
    p, q, diff = p[keep], q[keep], diff[keep]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = np.log(p) - np.log(q)
        fwd = np.where(np.abs(diff) < 0.5 * q, np.log1p(diff / q), direct)
        bwd = np.where(np.abs(diff) < 0.5 * p, np.log1p(-diff / p), -direct)
    f, b = np.isfinite(fwd), np.isfinite(bwd)
    return (BinnedPair(fwd[f], p[f], count), BinnedPair(bwd[b], q[b], count))


def _gauss_edges(shifts: Iterable[float], tail: float) -> np.ndarray:
    """Bin edges for Gaussian mixtures with unit noise and component means ``shifts``: a uniform grid of width
    BIN_WIDTH from min(shift) - z* to max(shift) + z*, where each component has mass <= ``tail`` beyond, and
    two tail bins. The bins lose information (the within-bin loss variation) only at second order."""
    s = [float(a) for a in shifts]
    zstar = max(6.0, float(-special.ndtri(max(tail, 1e-300))))
    zstar = min(zstar, 37.0)
    lo, hi = min(s) - zstar, max(s) + zstar
    n = int(math.ceil((hi - lo) / BIN_WIDTH))
    inner = lo + BIN_WIDTH * np.arange(n + 1)
    return np.concatenate([[-np.inf], inner, [np.inf]])


def gaussian_mixture_pairs(w_p: dict[float, float], w_q: dict[float, float], count: int,
                           tail: float) -> tuple[BinnedPair, BinnedPair]:
    """Binned pair of Gaussian mixtures (unit noise; keys are component means, values weights), both
    directions."""
    edges = _gauss_edges(list(w_p) + list(w_q), tail)
    masses = {a: _gauss_bin_masses(edges, a) for a in set(w_p) | set(w_q)}
    return _mixture_pair(masses, w_p, w_q, count)


def laplace_mixture_pairs(w_p: dict[float, float], w_q: dict[float, float], scale: float, count: int,
                          inner_bins: int = 4000) -> tuple[BinnedPair, BinnedPair]:
    """Binned pair of Laplace mixtures (common ``scale``; keys are locations). Outside [min loc, max loc] the
    privacy loss is constant (every density is proportional to e^(-|x|/b) with the same exponent there), so one
    bin per side loses nothing; inside, ``inner_bins`` equal bins."""
    locs = sorted(set(w_p) | set(w_q))
    inner = np.linspace(locs[0], locs[-1], inner_bins + 1) if locs[-1] > locs[0] else np.array([locs[0]])
    edges = np.unique(np.concatenate([[-np.inf], inner, locs, [np.inf]]))
    masses = {a: _laplace_bin_masses(edges, a, scale) for a in locs}
    return _mixture_pair(masses, w_p, w_q, count)


# ----------------------------------------------------------------------------------------------------------
# Optimistic PLD of binned pairs, composed, bias-corrected
# ----------------------------------------------------------------------------------------------------------


def _dense(pld) -> tuple[int, np.ndarray, float, float]:
    """(lower loss index, probabilities, infinity mass, discretisation) of a dp-accounting PLD's remove pmf."""
    pmf = pld._pmf_remove.to_dense_pmf()  # noqa: SLF001 - dp-accounting 0.6 keeps the arrays private
    lower, probs = pmf._lower_loss, pmf._probs  # noqa: SLF001 - dp-accounting has no accessor
    infinity, step = pmf._infinity_mass, pmf._discretization  # noqa: SLF001
    return int(lower), np.asarray(probs, dtype=float), float(infinity), float(step)


def _epsilon_of_pmf(lower: int, probs: np.ndarray, inf_mass: float, disc: float, delta: float,
                    shift: float = 0.0) -> float:
    """inf{eps : delta(eps) <= delta} for the losses (lower + i) * disc + ``shift`` with masses ``probs``
    (unclamped before the shift is added; the result is clamped at 0): delta(eps) = inf_mass +
    sum_{l > eps} p_l (1 - e^(eps - l)), solved in closed form on the segment between two grid losses."""
    if inf_mass > delta:
        return math.inf
    probs = np.clip(probs, 0.0, None)
    losses = (lower + np.arange(len(probs))) * disc + shift
    nz = probs > 0
    losses, probs = losses[nz], probs[nz]
    if not len(probs):
        return 0.0
    # suffix sums over losses >= l_j: A_j = inf + sum p, log B_j = log sum p e^-l
    a = inf_mass + np.cumsum(probs[::-1])[::-1]
    with np.errstate(divide="ignore"):
        log_b = np.logaddexp.accumulate((np.log(probs) - losses)[::-1])[::-1]
    # delta at eps = l_{j-1} (just below l_j): A_j - e^{l_{j-1}} B_j; find the smallest j where that is <= delta
    prev = np.concatenate([[-np.inf], losses[:-1]])
    with np.errstate(over="ignore", invalid="ignore"):
        d_prev = a - np.exp(np.minimum(prev + log_b, 700.0))
    ok = np.flatnonzero(d_prev <= delta)
    j = int(ok[0]) if ok.size else len(losses)  # delta(l_{j-1}) <= delta < delta(l_{j-2})
    if j == 0:
        return 0.0  # the total mass is <= delta: delta(eps) <= delta for every eps
    k = j - 1  # eps lies in (l_{k-1}, l_k]: the losses above eps are indices >= k
    mass = a[k] - delta
    if mass <= 0:
        return max(0.0, float(losses[k - 1]) if k > 0 else 0.0)
    eps = math.log(mass) - float(log_b[k])
    return max(0.0, eps)


@dataclass(frozen=True)
class PldLimit:
    """The lower limit of a composition of binned pairs and how it was reached."""

    epsilon: float
    plain: float        # the optimistic PLD's epsilon
    corrected: float    # with the rounding bias removed (Hoeffding)
    disc: float
    slack: float


def choose_disc(parts: Sequence[BinnedPair], delta: float) -> float:
    """The loss grid: fine enough that the Hoeffding slack disc * sqrt(T ln(1/eta) / 2) is about SLACK_TARGET,
    but no finer than one application's loss range over GRID_MAX or 24 standard deviations of the composed
    loss over WINDOW_MAX (the FFTs' sizes), within [DISC_MIN, DISC_MAX]."""
    total = sum(p.count for p in parts)
    lg = math.log(1.0 / (ETA_RELATIVE * delta))
    span = max(float(p.losses.max() - p.losses.min()) for p in parts)
    var = 0.0
    for p in parts:
        m = float(np.dot(p.probs, p.losses))
        var += p.count * max(float(np.dot(p.probs, (p.losses - m) ** 2)), 0.0)
    disc = max(SLACK_TARGET / math.sqrt(max(total, 1) * lg / 2.0), span / GRID_MAX, 24.0 * math.sqrt(var) / WINDOW_MAX)
    return float(min(max(disc, DISC_MIN), DISC_MAX))


def pld_lower_epsilon(parts: Sequence[BinnedPair], delta: float, disc: float | None = None) -> PldLimit:
    """A lower limit on the epsilon of the composition of ``parts`` (one direction each: the same neighbouring
    pair throughout), from dp-accounting's optimistic PLD.

    Each bin's loss l is rounded down to k disc (pessimistic_estimate=False): the rounded composition's
    delta(eps) is at most the pair's (a pointwise smaller privacy loss under the same P), and dp-accounting's
    optimistic truncations only round down further; its self-composition adds up to TAIL_TRUNCATION to the
    infinity mass and may alias as much into the window, so it is read at delta + 2 TAIL_TRUNCATION per
    self-composition (plus twice the FFT's negative round-off mass). Bias correction: the residuals l - k disc are
    in [0, disc), independent over the T applications, with mean m_i per part known exactly; with c = sum T_i m_i -
    disc sqrt(T ln(1/eta)/2), Hoeffding gives delta_true(eps) >= delta_rounded(eps - c) - eta, hence eps_true >=
    eps_rounded(delta + eta) + c, with eta = ETA_RELATIVE * delta.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    delta = _check_delta(delta)
    parts = [p for p in parts if p.count > 0 and len(p.probs)]
    if not parts:
        return PldLimit(0.0, 0.0, 0.0, 0.0, 0.0)
    disc = choose_disc(parts, delta) if disc is None else float(disc)
    total = sum(p.count for p in parts)
    eta = ETA_RELATIVE * delta
    guard = 0.0
    mean_residual = 0.0
    pld = None
    for p in parts:
        k = np.floor(p.losses / disc)
        resid = p.losses - k * disc
        k = np.where(resid < 0, k - 1, k)  # a quotient rounded up by floating point
        resid = p.losses - k * disc
        mean_residual += p.count * float(np.dot(p.probs, np.clip(resid, 0.0, disc)))
        keys, inv = np.unique(k.astype(np.int64), return_inverse=True)
        sums = np.bincount(inv, weights=p.probs)
        one = pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
            {int(a): float(b) for a, b in zip(keys, sums) if b > 0}, 0.0, disc, pessimistic_estimate=False)
        if p.count > 1:
            one = one.self_compose(p.count, tail_mass_truncation=TAIL_TRUNCATION)
            guard += 2 * TAIL_TRUNCATION
        pld = one if pld is None else pld.compose(one, tail_mass_truncation=TAIL_TRUNCATION)
    lower, probs, inf_mass, d = _dense(pld)
    # FFT round-off leaves noise of both signs in the composed masses; the negative part is dropped (clipped), so
    # the positive part is offset by querying at delta plus twice the dropped mass
    guard += 2.0 * float(-probs[probs < 0].sum())
    plain = _epsilon_of_pmf(lower, probs, inf_mass, d, delta + guard)
    slack = disc * math.sqrt(total * math.log(1.0 / eta) / 2.0)
    c = mean_residual - slack
    corrected = _epsilon_of_pmf(lower, probs, inf_mass, d, delta + eta + guard, shift=c) if c > 0 else 0.0
    return PldLimit(max(plain, corrected, 0.0), plain, corrected, disc, slack)


# ----------------------------------------------------------------------------------------------------------
# Pairs of the event kinds
# ----------------------------------------------------------------------------------------------------------


def _tail(delta: float, steps: int) -> float:
    """Per-application mass a pair may merge into its tail bins without mattering: 1e-4 delta over T."""
    return 1e-4 * delta / max(steps, 1)


def poisson_gaussian_pairs(rate: float, noise_multiplier: float, steps: int,
                           delta: float) -> tuple[BinnedPair, BinnedPair]:
    """DP-SGD with Poisson sampling (add/remove): the example's clipped gradient is C u, every other one 0, so
    the noisy sum is P = (1 - q) N(0, 1) + q N(1/z, 1) with the example, Q = N(0, 1) without (in noise stds;
    Mironov, Talwar & Zhang 2019; it is the tight pair of Poisson subsampling, Koskela, Jälkö & Honkela 2020,
    Zhu, Dong & Wang 2022). Remove and add directions."""
    _check_rate(rate)
    _check_positive("noise_multiplier", noise_multiplier)
    mu = 1.0 / noise_multiplier
    return gaussian_mixture_pairs({0.0: 1.0 - rate, mu: rate}, {0.0: 1.0}, steps, _tail(delta, steps))


def wor_gaussian_pairs(rate: float, noise_multiplier: float, steps: int,
                       delta: float) -> tuple[BinnedPair, BinnedPair]:
    """DP-SGD on a batch of m of n examples drawn without replacement, replace-one (DRW; WBK19), noise std
    sigma = z * 2C (2C: the relation's sensitivity). A realisable pair: every other example's clipped gradient
    is C u, the replaced one's is C u in D and -C u in D'. In D the batch sum is m C u whatever the batch; in D'
    it is (m - 2) C u when the example is drawn (probability q = m/n). In noise stds, after centring:
    N(0, 1) vs (1 - q) N(0, 1) + q N(-1/z, 1), i.e. the Poisson pair with multiplier z (mirrored), both
    directions: :func:`poisson_gaussian_pairs`. (The symmetric pair, gradient +C u vs -C u with all others 0,
    (1-q) N(0,1) + q N(+-1/(2z), 1), is realisable too but weaker: its privacy loss grows half as fast in x, and
    it gave the smaller limit wherever we compared.) At q = 1 both are the Gaussian with multiplier z."""
    return poisson_gaussian_pairs(rate, noise_multiplier, steps, delta)


def hypergeometric_weights(num_train: int, occurrence_bound: int, batch_size: int) -> dict[int, float]:
    """P(k) for k ~ Hypergeometric(num_train, min(occurrence_bound, num_train), batch_size): how many of the
    subgraphs that contain the node the batch holds (DP-GNN Lemma 4)."""
    d = min(occurrence_bound, num_train)
    with mpmath.workdps(30):
        tot = mpmath.binomial(num_train, batch_size)
        lo, hi = max(0, batch_size + d - num_train), min(batch_size, d)
        w = {k: float(mpmath.binomial(d, k) * mpmath.binomial(num_train - d, batch_size - k) / tot)
             for k in range(lo, hi + 1)}
    return {k: v for k, v in w.items() if v > 0}


def hypergeometric_pairs(num_train: int, occurrence_bound: int, batch_size: int, noise_multiplier: float,
                         steps: int, delta: float) -> tuple[BinnedPair, BinnedPair]:
    """One DP-GNN step (Daigavane et al. 2022, Thm. 1; add/remove one node): the node lies in N =
    occurrence_bound of the num_train training subgraphs and turns each one's clipped gradient from -C u to
    +C u (the 2C per occurrence of Lemma 2, all in one direction), every other subgraph's is -C u in both graphs,
    the batch holds k ~ Hypergeometric(num_train, N, m) of them, and the noise std is sigma = lambda * 2 C N. The
    batch sum is -m C u for every batch in one graph and (2k - m) C u in the other; in noise stds, after
    centring: P = sum_k h(k) N(k / (lambda N), 1) vs Q = N(0, 1), realisable, hence a lower limit (not a proven
    upper bound: :func:`methods.privacy.conformance.references.dpa_pld`). Theorem 1's RDP at k, alpha k^2 / (2 lambda^2
    N^2), is that of N(k/(lambda N)) vs N(0). Both directions. (The pair keeps num_train fixed in both graphs, as
    the theorem's model does.)"""
    _check_positive("noise_multiplier", noise_multiplier)
    for name, v in (("num_train", num_train), ("occurrence_bound", occurrence_bound), ("batch_size", batch_size)):
        if not isinstance(v, int) or v < 1:
            raise LimitError(f"{name} must be a positive integer (got {v!r})")
    if batch_size > num_train:
        raise LimitError(f"batch_size {batch_size} exceeds num_train {num_train}")
    a = 1.0 / (noise_multiplier * occurrence_bound)
    w = hypergeometric_weights(num_train, occurrence_bound, batch_size)
    return gaussian_mixture_pairs({k * a: v for k, v in w.items()}, {0.0: 1.0}, steps, _tail(delta, steps))


def laplace_pair(epsilon0: float, steps: int) -> BinnedPair:
    """Laplace(b) on a query of L1 sensitivity Delta, eps0 = Delta / b: P = Lap(0, b) vs Q = Lap(Delta, b)
    (a query that moves by its full sensitivity). The pair is symmetric (x -> Delta - x): one direction."""
    _check_positive("epsilon0", epsilon0)
    fwd, _ = laplace_mixture_pairs({0.0: 1.0}, {1.0: 1.0}, 1.0 / epsilon0, steps)
    return fwd


def poisson_laplace_pairs(rate: float, epsilon0: float, steps: int) -> tuple[BinnedPair, BinnedPair]:
    """Laplace on a Poisson(q)-subsampled query (PrivGNN, add/remove): the unit, when sampled, moves the query
    by its sensitivity: P = (1 - q) Lap(0, b) + q Lap(Delta, b) vs Q = Lap(0, b). Both directions."""
    _check_rate(rate)
    _check_positive("epsilon0", epsilon0)
    return laplace_mixture_pairs({0.0: 1.0 - rate, 1.0: rate}, {0.0: 1.0}, 1.0 / epsilon0, steps)


def rr_pair(epsilon: float, steps: int) -> BinnedPair:
    """Binary randomized response with ratio e^eps0 (replace-one: the bit flips): losses +-eps0 with P-masses
    e^eps0 / (1 + e^eps0) and 1 / (1 + e^eps0). Symmetric."""
    _check_positive("epsilon", epsilon)
    p = 1.0 / (1.0 + math.exp(-epsilon))
    return BinnedPair(np.array([epsilon, -epsilon]), np.array([p, 1.0 - p]), steps)


# ----------------------------------------------------------------------------------------------------------
# Per-kind limits and ledgers
# ----------------------------------------------------------------------------------------------------------


def _pld_both(fwd: list[BinnedPair], bwd: list[BinnedPair], delta: float) -> PldLimit:
    a = pld_lower_epsilon(fwd, delta)
    if not bwd:
        return a
    b = pld_lower_epsilon(bwd, delta)
    return a if a.epsilon >= b.epsilon else b


def _events(events: Iterable[Any]) -> list:
    from methods.privacy.events import Event, event_from_dict

    out = []
    for e in events:
        ev = e if isinstance(e, Event) else event_from_dict(dict(e))
        if ev.count:
            out.append(ev)
    return out


_PLD_NOTE = "optimistic PLD (dp-accounting, pessimistic_estimate=False) of the binned pair {pair}, bias-corrected"


def kind_lower_limit(kind: str, events: Sequence[Any], delta: float) -> tuple[float, str]:
    """(lower limit, method) for events that are all of ``kind`` (an event type's name), composed under one
    neighbouring pair."""
    from methods.privacy.events import (EVENT_TYPES, FixedSizeGaussian, Gaussian, HypergeometricGaussian, Laplace,
                                        PoissonGaussian, PoissonLaplace, RandomizedResponse)

    delta = _check_delta(delta)
    cls = EVENT_TYPES.get(kind)
    evs = _events(events)
    if any(type(e) is not cls for e in evs):
        raise LimitError(f"kind_lower_limit({kind!r}) got events of other kinds")
    if not evs:
        return 0.0, "no event"
    if cls is Gaussian:
        mu = math.sqrt(sum(e.count / e.noise_multiplier ** 2 for e in evs))
        return gaussian_epsilon(mu, delta), ("exact: mu-GDP with mu = sqrt(sum T/z^2) "
                                             "(Balle & Wang 2018 Thm 8), mpmath bisection")
    if cls is RandomizedResponse:
        eps0 = {e.epsilon for e in evs}
        if len(eps0) == 1:
            return (rr_lower_limit(evs[0].epsilon, sum(e.count for e in evs), delta),
                    "exact: binomial privacy-loss sum of T-fold binary randomized response, mpmath")
        lim = pld_lower_epsilon([rr_pair(e.epsilon, e.count) for e in evs], delta)
        return lim.epsilon, _PLD_NOTE.format(pair="+-eps0 (randomized response)")
    if cls is Laplace:
        if len(evs) == 1 and evs[0].count == 1:
            return (laplace_single_epsilon(evs[0].sensitivity / evs[0].scale, delta),
                    "exact: one Laplace release, eps0 + 2 ln(1 - delta)")
        lim = pld_lower_epsilon([laplace_pair(e.sensitivity / e.scale, e.count) for e in evs], delta)
        return lim.epsilon, _PLD_NOTE.format(pair="Lap(0,b) vs Lap(Delta,b)")
    fwd: list[BinnedPair] = []
    bwd: list[BinnedPair] = []
    total = sum(e.count for e in evs)
    if cls is PoissonGaussian:
        for e in evs:
            if e.rate > 0:
                f, b = poisson_gaussian_pairs(e.rate, e.noise_multiplier, total, delta)
                fwd.append(BinnedPair(f.losses, f.probs, e.count))
                bwd.append(BinnedPair(b.losses, b.probs, e.count))
        pair = "(1-q)N(0,1)+qN(1/z,1) vs N(0,1), both directions"
    elif cls is FixedSizeGaussian:
        for e in evs:
            f, b = wor_gaussian_pairs(e.sample_size / e.population, e.noise_multiplier, total, delta)
            fwd.append(BinnedPair(f.losses, f.probs, e.count))
            bwd.append(BinnedPair(b.losses, b.probs, e.count))
        pair = ("N(0,1) vs (1-q)N(0,1)+qN(1/z,1) (others' gradients C u, the replaced one C u vs -C u; "
                "q = m/n), both directions")
    elif cls is HypergeometricGaussian:
        for e in evs:
            f, b = hypergeometric_pairs(e.num_train, e.occurrence_bound, e.batch_size, e.noise_multiplier, total,
                                        delta)
            fwd.append(BinnedPair(f.losses, f.probs, e.count))
            bwd.append(BinnedPair(b.losses, b.probs, e.count))
        pair = "sum_k h(k) N(k/(lambda N),1) vs N(0,1), k hypergeometric, both directions"
    elif cls is PoissonLaplace:
        for e in evs:
            if e.rate > 0:
                f, b = poisson_laplace_pairs(e.rate, e.sensitivity / e.scale, e.count)
                fwd.append(f)
                bwd.append(b)
        pair = "(1-q)Lap(0,b)+qLap(Delta,b) vs Lap(0,b), both directions"
    else:
        raise LimitError(f"no lower limit for event kind {kind!r}")
    if not fwd:
        return 0.0, "no privacy loss (rate 0)"
    lim = _pld_both(fwd, bwd, delta)
    return lim.epsilon, _PLD_NOTE.format(pair=pair)


def lower_limit(events: Iterable[Any], delta: float) -> tuple[float, str]:
    """(lower limit, method) for a ledger: events grouped by kind, each kind's events composed under one
    pair, the largest kind's limit taken (a composition's epsilon is at least any sub-composition's:
    the adversary may ignore the other releases)."""
    delta = _check_delta(delta)
    evs = _events(events)
    if not evs:
        return 0.0, "no event"
    groups: dict[str, list] = {}
    for e in evs:
        groups.setdefault(e.kind, []).append(e)
    kinds = sorted(groups)
    results = {k: kind_lower_limit(k, groups[k], delta) for k in kinds}
    if len(kinds) == 1:
        return results[kinds[0]]
    best = max(kinds, key=lambda k: results[k][0])
    parts = "; ".join(f"{k}: {results[k][0]:.6g} by {results[k][1]}" for k in kinds)
    return results[best][0], f"max over event kinds (a sub-composition's epsilon is a lower bound): {parts}"


__all__ = ["BinnedPair", "LimitError", "PldLimit", "gaussian_delta", "gaussian_epsilon", "gaussian_lower_limit",
           "hypergeometric_pairs", "kind_lower_limit", "laplace_pair", "laplace_single_epsilon", "lower_limit",
           "pld_lower_epsilon", "poisson_gaussian_pairs", "poisson_laplace_pairs", "rr_lower_limit", "rr_pair",
           "wor_gaussian_pairs"]
