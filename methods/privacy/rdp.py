"""Rényi-DP curves and RDP -> (epsilon, delta) conversions.

Library code is used wherever a library implements the mechanism (dp-accounting's RDP of the
Gaussian, Laplace and randomized response; its improved conversion). Written here, because no library
has them or the library's is slow or inaccurate:

* :func:`poisson_gaussian_rdp` -- the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019);
* :func:`wor_gaussian_rdp` -- dp-accounting's without-replacement Gaussian bound (Wang, Balle &
  Kasiviswanathan 2019, Theorem 27), vectorised, its forward differences computed accurately;
* :func:`hypergeometric_gaussian_rdp` -- DP-GNN's Theorem 1 (Daigavane et al. 2022);
* :func:`poisson_subsampled_rdp` -- Zhu & Wang (2019)'s general upper bound for a Poisson-subsampled
  mechanism (used for the Laplace mechanism, PrivGNN);
* :func:`standard_epsilon` -- Mironov (2017) Proposition 3, the conversion most papers report.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, logsumexp

#: Sparse orders of the grid beyond its dense part (part of :data:`ORDERS`; up to 1024 they are also
#: the coarse end of its geometric run).
ANCHOR_ORDERS: np.ndarray = np.array([80, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192], dtype=float)

#: The default order grid: 0.01 steps up to 2, then 0.1, 0.5 and 1 up to 64, then integers about 3%
#: apart up to 1024 (optimal orders of small-epsilon Gaussian budgets live there), then sparse.
ORDERS: np.ndarray = np.unique(np.round(np.concatenate([
    1.0 + np.arange(1, 101) / 100.0,   # 1.01 .. 2.00
    np.arange(2.0, 10.0, 0.1),         # 2.0 .. 9.9
    np.arange(10.0, 32.0, 0.5),        # 10 .. 31.5
    np.arange(32, 65),                 # 32 .. 64
    np.round(np.geomspace(64, 1024, 100)),
    ANCHOR_ORDERS,
]), 6))


def log_comb(n: float, k: float) -> float:
    return float(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1))


# --------------------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------------------


def standard_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> tuple[float, float]:
    """eps = min_alpha rdp(alpha) + log(1/delta)/(alpha-1) (Mironov 2017, Proposition 3)."""
    if delta <= 0:
        return (0.0, float("nan")) if np.all(rdp == 0) else (math.inf, float("nan"))
    orders = np.asarray(orders, dtype=float)
    eps = np.asarray(rdp, dtype=float) + math.log(1.0 / delta) / (orders - 1.0)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(orders[i])


def improved_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> tuple[float, float]:
    """The improved conversion (Balle et al. 2020 Thm. 21 / Canonne et al. 2020), as dp-accounting computes it."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    if delta <= 0:
        return (0.0, float("nan")) if np.all(np.asarray(rdp) == 0) else (math.inf, float("nan"))
    eps, order = compute_epsilon(list(orders), list(rdp), delta)
    return float(eps), float(order)


CONVERSIONS = {"improved": improved_epsilon, "standard": standard_epsilon}


# --------------------------------------------------------------------------------------
# Mechanisms no library implements
# --------------------------------------------------------------------------------------


def hypergeometric_gaussian_rdp(orders: np.ndarray, num_train: int, occurrence_bound: int, batch_size: int,
                                noise_multiplier: float) -> np.ndarray:
    """DP-GNN Theorem 1, one step:  gamma(alpha) = 1/(alpha-1) ln E_rho[exp(alpha(alpha-1) rho^2 / (2 lambda^2 N_KR^2))].

    rho ~ Hypergeometric(N, N(K,r), m) counts the sampled subgraphs that contain the changed node;
    ``noise_multiplier`` is lambda = sigma / (2 C N(K,r)), so ``2 rho^2 C^2 / sigma^2`` of the paper
    equals ``rho^2 / (2 lambda^2 N(K,r)^2)``. A node occurs in at most min(N(K,r), N) subgraphs, so the
    hypergeometric draws min(N(K,r), N) "marked" subgraphs (the same as the paper whenever N(K,r) <= N).
    """
    n, d_bound, m, lam = int(num_train), int(occurrence_bound), int(batch_size), float(noise_multiplier)
    d = min(d_bound, n)
    lo, hi = max(0, m + d - n), min(m, d)
    rho = np.arange(lo, hi + 1, dtype=float)
    logp = (np.array([log_comb(d, r) + log_comb(n - d, m - r) for r in rho]) - log_comb(n, m))
    orders = np.asarray(orders, dtype=float)
    scale = rho ** 2 / (2.0 * lam ** 2 * d_bound ** 2)
    out = np.empty_like(orders)
    for i, a in enumerate(orders):
        out[i] = float(logsumexp(logp + a * (a - 1.0) * scale)) / (a - 1.0)
    return np.maximum(out, 0.0)


@lru_cache(maxsize=4096)
def _zw_log_a(alpha: int, gamma: float, base_rdp: tuple[float, ...]) -> float:
    """log of Zhu & Wang's bracket for integer alpha; ``base_rdp[j]`` is eps(j) for j = 2..alpha."""
    terms = [(alpha - 1) * math.log1p(-gamma) + math.log1p(alpha * gamma - gamma) if gamma < 1 else -math.inf]
    lg = math.log(gamma)
    lq = math.log1p(-gamma) if gamma < 1 else -math.inf
    for j in range(2, alpha + 1):
        rest = (alpha - j) * lq if alpha > j else 0.0
        t = log_comb(alpha, j) + rest + j * lg + (j - 1) * base_rdp[j - 2]
        if j >= 3:
            t += math.log(3.0)
        terms.append(t)
    return float(logsumexp(terms))


def poisson_subsampled_rdp(orders: np.ndarray, rate: float, base_rdp) -> np.ndarray:
    """Zhu & Wang (2019), Theorem 6: RDP of a Poisson(``rate``)-subsampled mechanism (add/remove).

    For integer alpha >= 2:
        1/(alpha-1) log{ (1-g)^(alpha-1) (alpha g - g + 1) + C(alpha,2) g^2 (1-g)^(alpha-2) e^{eps(2)}
                         + 3 sum_{l=3}^{alpha} C(alpha,l) (1-g)^(alpha-l) g^l e^{(l-1) eps(l)} },
    ``base_rdp(alpha)`` giving the unsubsampled eps(alpha). A fractional alpha takes the value at
    ceil(alpha) (RDP is non-decreasing in alpha), and the result never exceeds the unsubsampled
    mechanism's RDP (Rényi divergence is jointly quasi-convex), which makes rate 1 exact.
    Orders above 256 keep the unsubsampled RDP: sound, not amplified (they only matter for tiny epsilon).
    """
    orders = np.asarray(orders, dtype=float)
    gamma = float(rate)
    plain = np.array([base_rdp(a) for a in orders])
    if gamma <= 0:
        return np.zeros_like(orders)
    if gamma >= 1:
        return plain
    out = plain.copy()
    for i, a in enumerate(orders):
        k = int(math.ceil(a - 1e-12))
        if k < 2 or k > 256:
            continue
        base = tuple(float(base_rdp(j)) for j in range(2, k + 1))
        bound = _zw_log_a(k, gamma, base) / (k - 1)
        out[i] = min(plain[i], bound)
    return np.maximum(out, 0.0)


def _log_a_int(q: float, sigma: float, a: int) -> float:
    i = np.arange(a + 1, dtype=float)
    terms = (gammaln(a + 1) - gammaln(i + 1) - gammaln(a - i + 1) + i * math.log(q) + (a - i) * math.log1p(-q)
             + (i * i - i) / (2 * sigma ** 2))
    return float(logsumexp(terms))


#: the largest z0 (or order) whose fractional-order series is summed: its stopping rule needs terms past z0 =
#: sigma^2 log(1/q - 1), 10^5 terms at noise ~150 and rate 1e-3; beyond it the order takes the sound log-linear
#: interpolation of :func:`poisson_gaussian_rdp`, so an account answers in seconds at any noise
MAX_SERIES_START = 100_000


def _log_a_frac(q: float, sigma: float, alpha: float, chunk: int = 4096, max_terms: int = 4_000_000,
                rtol: float = 1e-13) -> float:
    """log A_alpha of the Poisson-subsampled Gaussian at a fractional order (Mironov et al. 2019, Sec. 3.3),
    summed to convergence.

    A_alpha = sum_i binom(alpha, i) [q^i (1-q)^(alpha-i) e^{(i^2-i)/(2 s^2)} P(Z >= (i - z0)/s) + (i <-> alpha-i)].
    For a fractional alpha, binom(alpha, i) changes sign with every i above alpha, and the two bracketed terms
    decay only polynomially (~ i^-(alpha+2): the exponents' linear parts cancel by the choice of z0), so the
    series is alternating and converges slowly. It is summed with its signs (dp-accounting and Opacus do too;
    our earlier sum of absolute values was a looser upper bound) in vectorised chunks until a term falls below
    ``rtol`` times the partial sum, past every order and past the terms' peak; then the next term's magnitude is
    added, which makes the result an upper bound (an alternating series with decreasing terms lies between
    consecutive partial sums). Returns nan if that does not happen within ``max_terms``, or cannot before
    :data:`MAX_SERIES_START` terms.
    """
    from scipy.special import log_ndtr

    z0 = sigma ** 2 * math.log(1 / q - 1) + 0.5
    if max(alpha, z0) > MAX_SERIES_START:  # the stopping rule needs terms past z0: too many at a large noise
        return float("nan")
    lq, l1q = math.log(q), math.log1p(-q)
    ceil_a = math.ceil(alpha)
    ref, acc = -np.inf, 0.0  # the partial sum is acc * exp(ref)
    for start in range(0, max_terms, chunk):
        i = np.arange(start, start + chunk, dtype=float)
        log_coef = gammaln(alpha + 1) - gammaln(i + 1) - gammaln(alpha - i + 1)  # log |binom(alpha, i)|
        sign = np.where((i > ceil_a) & ((i - ceil_a) % 2 == 1), -1.0, 1.0)  # (-1)^(#factors alpha-k < 0)
        j = alpha - i
        s0 = log_coef + i * lq + j * l1q + (i * i - i) / (2 * sigma ** 2) + log_ndtr(-(i - z0) / sigma)
        s1 = log_coef + j * lq + i * l1q + (j * j - j) / (2 * sigma ** 2) + log_ndtr(-(z0 - j) / sigma)
        mag = np.logaddexp(s0, s1)  # log |term_i|
        top = float(np.max(mag))
        if top > ref:
            acc = acc * math.exp(ref - top) if math.isfinite(ref) else 0.0
            ref = top
        terms = sign * np.exp(mag - ref)
        partial = acc + np.cumsum(terms)
        # stop at the first term past every order and past the peak, decreasing, and negligible
        decreasing = np.concatenate([mag[1:] < mag[:-1], [False]])
        ok = (i > max(alpha, z0) + 1) & decreasing & (np.exp(mag - ref) <= rtol * np.abs(partial))
        hit = np.flatnonzero(ok)
        if hit.size:
            k = int(hit[0])
            total = partial[k] + math.exp(float(mag[k + 1]) - ref)  # + |next term|: an upper bound
            return (ref + math.log(total)) if total > 0 else float("nan")
        acc = float(partial[-1])
    return float("nan")


def poisson_gaussian_rdp(orders: np.ndarray, q: float, sigma: float) -> np.ndarray:
    """RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019), as dp-accounting and Opacus
    compute it, vectorised.

    Integer orders: the exact sum A = sum_i C(a,i) (1-q)^(a-i) q^i exp((i^2-i)/(2 sigma^2)) (dp-accounting
    loops over it in Python; here one log-sum-exp, ~30x faster). Fractional orders: the signed series summed
    to convergence (:func:`_log_a_frac`; dp-accounting gives up after 1000 terms and returns inf, e.g. at
    q=0.2, noise 0.8, orders below 2). Should it still not converge, the order gets the log-linear
    interpolation of log A between the neighbouring integers, an upper bound since log A_alpha is convex
    in alpha (Wang, Balle & Kasiviswanathan 2019, Corollary 10).
    """
    orders = np.asarray(orders, dtype=float)
    if q == 0:
        return np.zeros_like(orders)
    if q >= 1.0:
        return orders / (2 * sigma ** 2)
    out = np.empty_like(orders)
    cache: dict[int, float] = {1: 0.0}

    def log_a_int(a: int) -> float:
        if a not in cache:
            cache[a] = _log_a_int(q, sigma, a)
        return cache[a]

    for k, a in enumerate(orders):
        if a == int(a):
            log_a = log_a_int(int(a))
        else:
            log_a = _log_a_frac(q, sigma, float(a))
            if not math.isfinite(log_a):
                f, c = math.floor(a), math.ceil(a)
                t = a - f
                log_a = (1 - t) * log_a_int(f) + t * log_a_int(c)
        out[k] = log_a / (a - 1)
    return out


#: Above this order dp-accounting's Theorem-27 bound drops the forward differences and keeps only
#: the 2 e^{cgf} terms (its "Stirling" branch, O(alpha) per order); we switch where it does.
WOR_EXACT_MAX_ORDER = 256


def _log1p_sum_exp(terms: np.ndarray) -> np.ndarray:
    """log(1 + sum_j exp(terms[..., j])) along the last axis, accurate also when the sum is tiny (the
    result is then the RDP itself, e.g. 1e-9 at small q): with m = max(0, max term) it is
    m + log1p(e^-m - 1 + sum_j e^(t_j - m)), and e^-m - 1 = expm1(-m) is exactly 0 when m = 0."""
    mx = np.maximum(terms.max(axis=-1), 0.0)
    return mx + np.log1p(np.expm1(-mx) + np.exp(terms - mx[..., None]).sum(axis=-1))


@lru_cache(maxsize=256)
def _wor_log_even_moments(sigma: float, k_max: int, h: float = 0.2) -> np.ndarray:
    """log D_k for k = 2, 4, ..., k_max: Theorem 27's forward differences (WBK19), accurately.

    With c = 1/(2 sigma^2), a = 1/sigma and W = exp(a Z - c), Z ~ N(0, 1), E[W^j] = e^{c j (j-1)} =
    e^{cgf(j-1)}, so the k-th forward difference of j -> e^{cgf(j-1)} at 0 is D_k = E[(W - 1)^k]; the
    bound uses even k only. dp-accounting forms D_k by k iterated differences of e^{cgf}, which cancel:
    against 800-digit arithmetic its log D_k is off by 1e-8 at sigma 5, 1e-4 at 6 and up to 5 either way
    at 7-12, so its bound is then too small at some orders (1.7% in log A at q 0.999, sigma 7, order
    64). Here the
    non-negative integrand is summed by the trapezoid rule (it is entire, so the rule converges
    geometrically in 1/h: ~1e-13 in the log at h = 0.2, for sigma from 0.001 to 1000).

    Each k gets its own window. Past z0 = c/a (where W = 1) the log-integrand is concave with
    curvature >= 1 and peaks in [a k, a k + min(sqrt k + z0, k / (a (k - 1/2)))], so 40 either side of
    that leaves out < e^-800 of the peak. Below z0 the integrand is < 1 and below its mirror image at
    2 z0 - z: it is left out when D_k >= D_2^(k/2) = (e^{2c} - 1)^(k/2) exceeds e^40, else the window
    extends to the mirror of its right end.
    """
    c = 1.0 / (2.0 * sigma ** 2)
    a = 1.0 / sigma
    z0 = c / a

    def log_trapezoid(k: np.ndarray, z: np.ndarray) -> np.ndarray:  # rows k, grids z (shared or per row)
        u = a * z - c
        with np.errstate(divide="ignore"):  # log 0 = -inf where a grid point hits W = 1 exactly
            log_abs = np.where(u > 1, u + np.log1p(-np.exp(-np.maximum(u, 1))),
                               np.log(np.abs(np.expm1(np.minimum(u, 1)))))  # log |e^u - 1|, relative to rounding
        grid = k[:, None] * log_abs - 0.5 * z ** 2
        mx = grid.max(axis=1)
        return mx + np.log(np.exp(grid - mx[:, None]).sum(axis=1)) + math.log(h) - 0.5 * math.log(2 * math.pi)

    k = np.arange(2, k_max + 1, 2, dtype=float)
    right = a * k + np.minimum(np.sqrt(k) + z0, k / (a * (k - 0.5))) + 40.0
    wide = 0.5 * k * (2 * c + math.log(-math.expm1(-2 * c))) < 40.0  # log (e^{2c} - 1)^(k/2) < 40
    out = np.empty(len(k))
    if wide.any():  # nested windows [2 z0 - right, right]: one grid for all
        r = float(right[wide].max())
        out[wide] = log_trapezoid(k[wide], np.arange(math.floor((2 * z0 - r) / h), math.ceil(r / h) + 1) * h)
    if not wide.all():  # windows [a k - 40, right] of width <= ~100, one per row
        left = a * k[~wide] - 40.0
        steps = np.arange(math.ceil(float(np.max(right[~wide] - left)) / h) + 1)
        out[~wide] = log_trapezoid(k[~wide], left[:, None] + h * steps[None, :])
    out.setflags(write=False)
    return out


def wor_gaussian_log_a(q: float, sigma: float, alphas) -> np.ndarray:
    """log A_alpha of the Gaussian on a without-replacement subsample of fraction ``q`` (replace-one),
    at integer ``alphas`` >= 1: the bound of WBK19 Theorem 27 that dp-accounting's
    ``_compute_rdp_sample_wor_gaussian_int`` evaluates (same terms, same switch at 256), vectorised over
    terms and orders, with the forward differences computed accurately. Equal to the library to ~1e-9
    where its own arithmetic holds (sigma <= 5); beyond, to the bound in exact arithmetic.

    log A = log(1 + sum_{i=2}^{alpha} C(alpha, i) q^i B_i), B_2 = min(4 (e^{f(2)} - 1), 2 e^{f(2)}) and
    B_i = min(4 sqrt(D_lo D_hi), 2 e^{cgf(i-1)}) for i >= 3, D the even forward differences (floor and
    ceil of i to even; :func:`_wor_log_even_moments`). Above :data:`WOR_EXACT_MAX_ORDER`, B_i =
    2 e^{cgf(i-1)}, as the library does.
    """
    alphas = np.asarray(alphas, dtype=np.int64).reshape(-1)
    out = np.zeros(len(alphas))
    if not np.any(alphas >= 2):
        return out
    lq = math.log(q)
    log_fact = gammaln(np.arange(int(alphas.max()) + 1) + 1.0)  # log n!, so log C(n, k) as the library has it
    f2 = 2.0 / (2.0 * sigma ** 2)
    b2 = min(math.log(4) + f2 + math.log1p(-math.exp(-f2)), f2 + math.log(2))
    exact = (alphas >= 2) & (alphas <= WOR_EXACT_MAX_ORDER)
    if exact.any():
        top = int(alphas[exact].max())
        i = np.arange(2, top + 1)
        b = np.log(2) + (i - 1) * 1.0 * i / (2.0 * sigma ** 2)  # log 2 e^{cgf(i-1)}
        if top >= 3:
            even = _wor_log_even_moments(float(sigma), 2 * ((top + 1) // 2))  # even[j] = log D_{2j+2}
            d_lo, d_hi = even[i // 2 - 1], even[(i + 1) // 2 - 1]  # D_{2 floor(i/2)}, D_{2 ceil(i/2)}
            b = np.minimum(np.log(4) + 0.5 * (d_lo + d_hi), b)
        b[0] = b2
        al = alphas[exact][:, None]
        rest = np.maximum(al - i[None, :], 0)
        terms = b + i * lq + (log_fact[al] - log_fact[i][None, :] - log_fact[rest])
        out[exact] = _log1p_sum_exp(np.where(i[None, :] <= al, terms, -np.inf))
    for j in np.flatnonzero(alphas > WOR_EXACT_MAX_ORDER):
        al = int(alphas[j])
        i = np.arange(2, al + 1)
        b = np.log(2) + (i - 1) * 1.0 * i / (2.0 * sigma ** 2)
        b[0] = b2
        out[j] = _log1p_sum_exp(b + i * lq + (log_fact[al] - log_fact[i] - log_fact[al - i]))
    return out


def wor_gaussian_rdp(orders: np.ndarray, q: float, sigma: float) -> np.ndarray:
    """RDP of the Gaussian (noise multiplier ``sigma``) on a uniformly random subset of fraction ``q``
    drawn without replacement, replace-one relation (WBK19 Theorem 27, as dp-accounting's
    ``SampledWithoutReplacementDpEvent``). Integer orders: log A / (alpha - 1); fractional ones
    interpolate log A linearly between floor and ceil, an upper bound since log A is convex in alpha
    (WBK19 Corollary 10), exactly as the library does. One log A per distinct integer, all at once."""
    orders = np.asarray(orders, dtype=float)
    if q <= 0:
        return np.zeros_like(orders)
    if q >= 1.0:
        return gaussian_rdp(orders, sigma)
    lo, hi = np.floor(orders), np.ceil(orders)
    ints = np.unique(np.concatenate([lo, hi])).astype(np.int64)
    log_a = wor_gaussian_log_a(q, sigma, ints)
    t = orders - lo
    x = log_a[np.searchsorted(ints, lo)]
    y = log_a[np.searchsorted(ints, hi)]
    return ((1 - t) * x + t * y) / (orders - 1)


def gaussian_rdp(orders: np.ndarray, sigma: float) -> np.ndarray:
    """RDP of the Gaussian mechanism with noise multiplier ``sigma``: alpha / (2 sigma^2) (Mironov 2017, Prop. 7)."""
    return np.asarray(orders, dtype=float) / (2 * sigma ** 2)


def laplace_rdp(alpha: float, scale_over_sensitivity: float) -> float:
    """RDP of the Laplace mechanism (Mironov 2017, Proposition 6), via dp-accounting."""
    from dp_accounting.rdp.rdp_privacy_accountant import _laplace_rdp

    return float(_laplace_rdp(1.0 / scale_over_sensitivity, alpha))
