"""Our accountants round outward: the epsilon they report is at least what their bound gives in exact arithmetic,
whatever the floating point of the machine. The PLD's FFT compositions are where rounding is large; another FFT
(another implementation, another transform length: what another CPU's code path amounts to) must never compute an
epsilon above ours."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.privacy.accountant import PLD_MARGIN, RDP_MARGIN, noise_floored, pld_epsilon, rdp_epsilon, round_outward
from methods.privacy.events import Gaussian, PoissonGaussian, PoissonLaplace, RandomizedResponse


def raw_pld_epsilon(events, delta):
    """The PLD accountant's computation without its noise floor and outward rounding."""
    pld = None
    for e in events:
        p = e.pld()
        p = p.self_compose(e.count) if e.count > 1 else p
        pld = p if pld is None else pld.compose(p)
    return max(0.0, float(pld.get_epsilon_for_delta(delta)))


class _NumpyFFT:
    """numpy's FFT in place of scipy's (another implementation: other rounding)."""

    fft, ifft = staticmethod(np.fft.fft), staticmethod(np.fft.ifft)

    @staticmethod
    def next_fast_len(n):
        from scipy import fft

        return fft.next_fast_len(n)


class _LongFFT:
    """scipy's FFT on a power-of-two length at least twice as long (another transform: other rounding)."""

    @staticmethod
    def next_fast_len(n):
        return 1 << (math.ceil(math.log2(n)) + 1)

    @staticmethod
    def fft(x, n):
        from scipy import fft

        return fft.fft(x, n)

    @staticmethod
    def ifft(x):
        from scipy import fft

        return fft.ifft(x)


# ledgers at delta 1e-10, where one FFT's rounding moves the epsilon most (up to 1e-4 relative on the corpus);
# each is above ours without the noise floor under at least one of the two FFTs
LEDGERS = {
    "gaussian z=2 T=100": [Gaussian(sensitivity=1.0, sigma=2.0, count=100)],
    "gaussian z=10 T=100": [Gaussian(sensitivity=1.0, sigma=10.0, count=100)],
    "poisson-laplace q=0.1 T=100": [PoissonLaplace(rate=0.1, scale=1.0, count=100)],
}


@pytest.mark.parametrize("name", list(LEDGERS))
def test_no_other_fft_computes_an_epsilon_above_ours(name, monkeypatch):
    from dp_accounting.pld import common

    events = LEDGERS[name]
    ours = pld_epsilon(events, 1e-10)
    here = raw_pld_epsilon(events, 1e-10)
    others = {}
    for label, fft in (("numpy", _NumpyFFT), ("long", _LongFFT)):
        monkeypatch.setattr(common, "fft", fft)
        others[label] = raw_pld_epsilon(events, 1e-10)
        monkeypatch.undo()
    assert others["numpy"] != here or others["long"] != here  # the FFTs do round differently
    assert ours >= max(others.values()), (ours, here, others)
    # the price: within 1e-5 of the unfloored epsilon (TIGHT is within 1e-2 of the best sound reference)
    assert ours <= here * (1 + 1e-5)


def test_the_noise_floor_covers_a_negative_bucket_and_leaves_sparse_distributions():
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as PLD

    probs = np.array([0.5, 0.3, -1e-17, 0.2])
    pmf = pld_pmf.DensePLDPmf(1e-4, 0, probs, 0.0, True)
    floored = noise_floored(PLD.PrivacyLossDistribution(pmf), compositions=1)
    got = floored._pmf_remove._probs
    assert np.all(got >= np.maximum(probs, 0) + 2e-17) and np.all(got <= np.maximum(probs, 0) + 2e-17 + 1e-16)
    sparse = PLD.PrivacyLossDistribution(pld_pmf.SparsePLDPmf({0: 0.5, 3: 0.5}, 1e-4, 0.0, True))
    assert noise_floored(sparse, 10)._pmf_remove is sparse._pmf_remove


@settings(max_examples=200, deadline=None)
@given(eps=st.floats(1e-300, 1e6), which=st.sampled_from([PLD_MARGIN, RDP_MARGIN]))
def test_rounding_outward_raises_by_the_margin_and_no_more(eps, which):
    rel, absolute = which
    up = round_outward(eps, which)
    assert up > eps and up >= eps * (1 + rel) + absolute
    assert up <= math.nextafter(math.nextafter(eps * (1 + rel) + absolute, math.inf), math.inf)
    assert round_outward(math.inf, which) == math.inf and round_outward(0.0, which) == 0.0


def test_both_accountants_round_their_bound_outward():
    """The reported epsilon is the bound's evaluation raised by its margin: never the evaluation itself."""
    from methods.privacy import rdp as R
    from methods.privacy.accountant import rdp_curve

    events = [PoissonGaussian(rate=0.01, noise_multiplier=1.0, count=200)]
    raw_rdp = R.improved_epsilon(R.ORDERS, rdp_curve(events), 1e-5)[0]
    assert rdp_epsilon(events, 1e-5)[0] == round_outward(raw_rdp, RDP_MARGIN)
    assert pld_epsilon(events, 1e-5) >= round_outward(raw_pld_epsilon(events, 1e-5), PLD_MARGIN)
    pure = [RandomizedResponse(epsilon=2.0, count=3)]
    assert rdp_epsilon(pure, 1e-9)[0] == round_outward(6.0, RDP_MARGIN)
