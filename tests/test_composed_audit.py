"""audits.composed: a ledger's white-box lower bound from its events' mechanism audits."""

from __future__ import annotations

import pytest

from audits.composed import ledger_bound
from methods.privacy import PrivacyLedger
from methods.privacy.events import Gaussian, Laplace, PoissonGaussian, RandomizedResponse


def test_nap_releases_compose_as_gdp_below_the_claim():
    led = PrivacyLedger().add(Gaussian(sensitivity=2 ** 0.5, sigma=2.0, unit="edge"), 2)
    b = ledger_bound(led, 1e-5, trials=20_000, seed=1)
    assert 0.5 < b.ratio <= 1.0 and b.left_out == [] and "nap-edge" in b.covered[0]
    one = ledger_bound(PrivacyLedger().add(Gaussian(sensitivity=2 ** 0.5, sigma=2.0, unit="edge")), 1e-5,
                       trials=20_000, seed=1)
    assert one.epsilon_lb < b.epsilon_lb  # two releases show more than one


def test_edgerand_pure_releases_add_and_dpsgd_steps_are_left_out():
    led = PrivacyLedger().add(RandomizedResponse(epsilon=0.9, unit="edge")).add(
        Laplace(scale=10.0, sensitivity=1.0, unit="edge"))
    b = ledger_bound(led, 1e-5, trials=5_000, seed=0)
    assert 0.6 < b.epsilon_lb <= b.claimed * 1.001 and len(b.covered) == 2
    steps = ledger_bound(PrivacyLedger().add(PoissonGaussian(rate=0.1, noise_multiplier=1.0), 100), 1e-5)
    assert steps.epsilon_lb == 0.0 and steps.left_out == ["poisson_gaussian x 100"] and steps.claimed > 0
    assert steps.ratio == pytest.approx(0.0)
