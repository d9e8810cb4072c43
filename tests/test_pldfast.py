"""methods.privacy.pldfast: the vectorised hockey-stick step builds dp-accounting's own distributions, bucket by
bucket (a faster construction must not move a published epsilon)."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as PLD
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.privacy import pldfast

RATE = st.one_of(st.just(1.0), st.floats(1e-4, 0.95))


def _pmfs(pld) -> list:
    return [pld._pmf_remove] + ([] if pld._symmetric else [pld._pmf_add])


def assert_same(ours, theirs) -> None:
    assert ours._symmetric == theirs._symmetric
    for a, b in zip(_pmfs(ours), _pmfs(theirs)):
        a, b = a.to_dense_pmf(), b.to_dense_pmf()
        assert a._lower_loss == b._lower_loss and a._probs.shape == b._probs.shape
        np.testing.assert_allclose(a._probs, b._probs, rtol=1e-12, atol=1e-300)
        assert a._infinity_mass == pytest.approx(b._infinity_mass, rel=1e-12, abs=1e-300)


@settings(max_examples=12, deadline=None)
@given(sigma=st.floats(0.3, 20.0), sensitivity=st.floats(0.5, 3.0), rate=RATE)
def test_gaussian_is_dp_accountings(sigma: float, sensitivity: float, rate: float) -> None:
    assert_same(pldfast.gaussian(sigma, sensitivity, rate),
                PLD.from_gaussian_mechanism(sigma, sensitivity=sensitivity, sampling_prob=rate))


@settings(max_examples=12, deadline=None)
@given(parameter=st.floats(0.2, 50.0), sensitivity=st.floats(0.5, 3.0), rate=RATE)
def test_laplace_is_dp_accountings(parameter: float, sensitivity: float, rate: float) -> None:
    assert_same(pldfast.laplace(parameter, sensitivity, rate),
                PLD.from_laplace_mechanism(parameter, sensitivity=sensitivity, sampling_prob=rate))


def test_a_scalar_epsilon_and_the_replace_relation_take_dp_accountings_path() -> None:
    from dp_accounting.pld import privacy_loss_mechanism as M

    ours = pldfast.GaussianLoss(1.3, sampling_prob=0.2, adjacency_type=M.AdjacencyType.REMOVE)
    theirs = M.GaussianPrivacyLoss(1.3, sampling_prob=0.2, adjacency_type=M.AdjacencyType.REMOVE)
    eps = np.linspace(-0.5, 3.0, 41)
    np.testing.assert_allclose(ours.get_delta_for_epsilon(eps), theirs.get_delta_for_epsilon(eps), rtol=1e-12)
    assert ours.get_delta_for_epsilon(1.0) == theirs.get_delta_for_epsilon(1.0)
