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


def test_answered_queries_compose_as_a_binary_channel():
    import math

    from audits.composed import binary_composition

    p = math.exp(1.0) / (1 + math.exp(1.0))  # 1-RR: a binary channel of pure epsilon 1
    assert binary_composition(p, 1 - p, 1, 1e-5) == pytest.approx(1.0, abs=1e-3)
    assert binary_composition(p, 1 - p, 10, 1e-5) == pytest.approx(10.0, abs=1e-2)
    assert binary_composition(0.3, 0.3, 50, 1e-5) == 0.0 and binary_composition(0.2, 0.3, 5, 1e-5) == 0.0
    # PATE: 2 Laplace counts per query; the bound over the queries grows with them and stays below the claim
    few = ledger_bound(PrivacyLedger().add(Laplace(scale=2.0, sensitivity=1.0, unit="node"), 2), 1e-5, seed=2)
    many = ledger_bound(PrivacyLedger().add(Laplace(scale=2.0, sensitivity=1.0, unit="node"), 20), 1e-5, seed=2)
    assert 0 < few.epsilon_lb < many.epsilon_lb <= many.claimed * 1.001 and "pate-votes" in many.covered[0]
