"""The without-replacement Gaussian bound (Wang, Balle & Kasiviswanathan 2019, Theorem 27): our vectorised
evaluation against dp-accounting's loop and against the same bound in high-precision arithmetic."""

import math
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.privacy import FixedSizeGaussian
from methods.privacy import rdp as R


def dpa_log_a(q, sigma, alpha):
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    return float(dpa._compute_rdp_sample_wor_gaussian_int(q, sigma, alpha))


@lru_cache(maxsize=None)
def exact_forward_diffs(sigma, k_max, dps):
    """D_k = sum_j (-1)^(k-j) C(k, j) e^{c j (j-1)}, k = 0..k_max, c = 1/(2 sigma^2): the definition, in
    ``dps``-digit arithmetic (the sum cancels by up to ~e^700 at the sigmas below)."""
    with mpmath.workdps(dps):
        c = 1 / (2 * mpmath.mpf(sigma) ** 2)
        s = [mpmath.exp(c * j * (j - 1)) for j in range(k_max + 1)]
        return tuple(mpmath.fsum((-1) ** (k - j) * math.comb(k, j) * s[j] for j in range(k + 1))
                     for k in range(k_max + 1))


def exact_log_a(q, sigma, alpha, dps=900):
    """Theorem 27's bound as dp-accounting states it (orders <= 256), every quantity in ``dps`` digits."""
    d = exact_forward_diffs(sigma, 2 * ((alpha + 1) // 2), dps)
    with mpmath.workdps(dps):
        q, s2 = mpmath.mpf(q), mpmath.mpf(sigma) ** 2
        total = 1 + q ** 2 * math.comb(alpha, 2) * min(4 * mpmath.expm1(1 / s2), 2 * mpmath.exp(1 / s2))
        for i in range(3, alpha + 1):
            b = min(4 * mpmath.sqrt(d[2 * (i // 2)] * d[2 * ((i + 1) // 2)]), 2 * mpmath.exp((i - 1) * i / (2 * s2)))
            total += q ** i * math.comb(alpha, i) * b
        return float(mpmath.log(total))


# --------------------------------------------------------------------------------------
# Against dp-accounting, where its arithmetic is accurate
# --------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(q=st.floats(1e-6, 0.999), sigma=st.floats(0.2, 4.5), alphas=st.lists(st.integers(1, 300), min_size=1,
                                                                             max_size=4))
def test_log_a_matches_dp_accounting(q, sigma, alphas):
    """Same terms, same switch to the cgf-only terms above 256: equal to rounding. (Up to sigma ~4.5 the
    library's iterated differences are accurate to < 1e-10; see the exact tests below for larger sigma.)"""
    ours = R.wor_gaussian_log_a(q, sigma, alphas)
    ref = np.array([dpa_log_a(q, sigma, a) for a in alphas])
    assert np.all(np.abs(ours - ref) <= 1e-9 * np.abs(ref))


@pytest.mark.parametrize("q,sigma", [(0.025, 3.0), (1 / 76, 5.0), (0.5, 0.7), (0.999, 1.5), (1e-5, 4.0)])
def test_rdp_matches_dp_accounting_at_fractional_and_large_orders(q, sigma):
    """Fractional orders interpolate log A between floor and ceil (WBK19 Corollary 10), as the library does."""
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    orders = np.array([1.01, 1.5, 1.99, 2.0, 2.5, 7.3, 31.5, 63.0, 66.0, 127.0, 213.0, 256.0, 257.0, 300.0, 1024.0,
                       8192.0])
    ref = dpa._compute_rdp_sample_wor_gaussian(q, sigma, orders)
    assert np.allclose(R.wor_gaussian_rdp(orders, q, sigma), ref, rtol=1e-9, atol=0)


def test_event_curve_is_the_library_curve_at_every_order_of_the_grid():
    """No order of the grid is filled in from another (the old envelope from sparse anchors)."""
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    ref = dpa._compute_rdp_sample_wor_gaussian(1 / 40, 3.0, R.ORDERS)
    ours = FixedSizeGaussian(population=40, sample_size=1, noise_multiplier=3.0).rdp()
    assert np.allclose(ours, ref, rtol=1e-9, atol=0)


def test_trivial_rates_and_order_one():
    assert np.all(R.wor_gaussian_rdp(R.ORDERS, 0.0, 1.0) == 0)
    assert np.allclose(R.wor_gaussian_rdp(R.ORDERS, 1.0, 2.0), R.ORDERS / 8.0, rtol=1e-15)
    assert R.wor_gaussian_log_a(0.3, 1.0, [1])[0] == 0.0


# --------------------------------------------------------------------------------------
# Against the bound in exact arithmetic (where dp-accounting's differences are not)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.001, 0.05, 0.3, 0.7, 1.0, 1.3, 2.0, 5.0, 7.0, 12.0, 50.0, 1000.0, 1e5])
def test_forward_differences_are_exact(sigma):
    """The trapezoid sum of E[(W-1)^k] against the alternating binomial sum in 1200 digits, every even k <= 64."""
    ours = R._wor_log_even_moments(sigma, 64)
    exact = exact_forward_diffs(sigma, 64, 1200)
    ref = np.array([float(mpmath.log(exact[k])) for k in range(2, 65, 2)])
    assert np.all(np.abs(ours - ref) <= 1e-12 * np.maximum(1.0, np.abs(ref)))


@pytest.mark.parametrize("sigma", [1.3, 7.0, 12.0])
def test_forward_differences_are_exact_up_to_order_256(sigma):
    ours = R._wor_log_even_moments(sigma, 256)
    exact = exact_forward_diffs(sigma, 256, 900)
    ref = np.array([float(mpmath.log(exact[k])) for k in range(2, 257, 2)])
    assert np.all(np.abs(ours - ref) <= 1e-12 * np.maximum(1.0, np.abs(ref)))


@pytest.mark.parametrize("q,sigma,alpha", [
    (0.999, 7.0, 64),   # dp-accounting: 41.777, 1.7% below the bound (its differences cancel)
    (0.3, 6.0, 80),     # dp-accounting: 2e-6 above
    (0.3, 12.0, 150),   # dp-accounting: 38.03, 3.6x above
    (0.1, 8.0, 256),
    (0.6, 5.0, 40),
    (1e-3, 20.0, 100),
    (0.5, 0.3, 200),
])
def test_log_a_is_the_exact_bound(q, sigma, alpha):
    assert R.wor_gaussian_log_a(q, sigma, [alpha])[0] == pytest.approx(exact_log_a(q, sigma, alpha), rel=1e-12)


@settings(max_examples=6, deadline=None)
@given(q=st.floats(1e-4, 0.999), sigma=st.floats(4.5, 60.0), alpha=st.integers(3, 90))
def test_log_a_is_the_exact_bound_at_large_noise(q, sigma, alpha):
    assert R.wor_gaussian_log_a(q, sigma, [alpha])[0] == pytest.approx(exact_log_a(q, sigma, alpha, dps=400),
                                                                       rel=1e-11)


# --------------------------------------------------------------------------------------
# Cost (no timings: the whole grid must not go through the library's O(alpha^2) loop)
# --------------------------------------------------------------------------------------


def test_the_event_never_calls_the_library_loop(monkeypatch):
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    def forbidden(*args, **kwargs):
        raise AssertionError("dp-accounting's per-order loop was called")

    monkeypatch.setattr(dpa, "_compute_rdp_sample_wor_gaussian_int", forbidden)
    monkeypatch.setattr(dpa, "_get_forward_diffs", forbidden)
    curve = FixedSizeGaussian(population=9973, sample_size=101, noise_multiplier=1.2345).rdp()
    assert np.all(np.isfinite(curve)) and np.all(np.diff(curve) >= 0)


def test_importing_the_accountant_does_not_import_torch():
    code = "import sys, methods.privacy; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1]).returncode == 0
