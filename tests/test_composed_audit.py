"""audits.composed: a ledger's white-box lower bounds from its events' mechanism audits, composed as privacy-loss
distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audits.composed import LedgerBound, ledger_bound
from methods.privacy import PrivacyLedger
from methods.privacy.events import Gaussian, Laplace, PoissonGaussian, RandomizedResponse


def test_nap_releases_compose_below_the_claim():
    led = PrivacyLedger().add(Gaussian(sensitivity=2 ** 0.5, sigma=2.0, unit="edge"), 2)
    b = ledger_bound(led, 1e-5, trials=20_000, seed=1)
    assert 0.5 < b.ratio_fdp <= 1.0 and 0 < b.ratio_cp < b.ratio_fdp
    assert b.left_out == [] and "nap-edge" in b.covered[0]
    one = ledger_bound(PrivacyLedger().add(Gaussian(sensitivity=2 ** 0.5, sigma=2.0, unit="edge")), 1e-5,
                       trials=20_000, seed=1)
    assert one.epsilon_lb_fdp < b.epsilon_lb_fdp and one.epsilon_lb_cp < b.epsilon_lb_cp  # two show more than one


def test_edgerand_pure_releases_compose_and_dpsgd_steps_are_left_out():
    led = PrivacyLedger().add(RandomizedResponse(epsilon=0.9, unit="edge")).add(
        Laplace(scale=10.0, sensitivity=1.0, unit="edge"))
    b = ledger_bound(led, 1e-5, trials=5_000, seed=0)
    assert 0.6 < b.epsilon_lb_cp <= b.epsilon_lb_fdp <= b.claimed * 1.001 and len(b.covered) == 2
    steps = ledger_bound(PrivacyLedger().add(PoissonGaussian(rate=0.1, noise_multiplier=1.0), 100), 1e-5)
    assert steps.epsilon_lb_cp == steps.epsilon_lb_fdp == 0.0 and steps.left_out == ["poisson_gaussian x 100"]
    assert steps.claimed > 0 and steps.ratio_cp == pytest.approx(0.0)


def _perfect_audit(name, epsilon, *, delta, trials, seed, confidence, mechanism=None):
    """An audit that measured its release exactly: f-DP at the claimed strength, and tests all along the
    release's tradeoff function (so its lower-bound pair is the release, up to the hull's chords)."""
    from audits.bounds import epsilon_from_rates
    from audits.mechanism import MECHANISMS, MechanismAudit

    mech = mechanism or MECHANISMS[name]
    s = mech.strength_for_epsilon(epsilon, delta)
    alphas = np.concatenate([np.geomspace(1e-12, 0.5, 60), [1.0 / (1.0 + math.exp(epsilon))]])
    tests = [{"selected_for": "exact", "fpr_upper": float(a), "fnr_upper": float(mech.family.tradeoff(s, a)),
              "epsilon_lb_cp": epsilon_from_rates(float(a), float(mech.family.tradeoff(s, a)), delta)}
             for a in alphas]
    best = max(t["epsilon_lb_cp"] for t in tests)
    return MechanismAudit(name, mech.family.name, "shipped", epsilon, epsilon, epsilon, delta, trials, best, epsilon,
                          s, s, tests[0]["fpr_upper"], tests[0]["fnr_upper"], 0.0, 1, confidence, "ok", 0.0,
                          tests=tests)


def test_a_gaussian_and_a_pure_release_compose_as_distributions_not_as_a_sum(monkeypatch):
    """A Gaussian release's epsilon at delta and a pure epsilon do not add: with exact audits of NAP (mu 0.5,
    epsilon 1.99 at 1e-5) and randomized response (0.5), the sum is 2.49 while the two releases together have
    epsilon 2.44. The composed bound must not exceed the releases' own composition."""
    import audits.composed as composed
    from audits.exact import GaussianPart, pair_epsilon

    monkeypatch.setattr(composed, "audit_mechanism", _perfect_audit)
    mu, pure = 0.5, 0.5
    led = PrivacyLedger().add(Gaussian(sensitivity=2 ** 0.5, sigma=2 ** 0.5 / mu, unit="edge")).add(
        RandomizedResponse(epsilon=pure, unit="edge"))
    p = 1.0 / (1.0 + math.exp(-pure))
    truth = pair_epsilon([GaussianPart(mu), (np.array([p, 1 - p]), np.array([1 - p, p]), 1)], 1e-5)
    from audits.mechanism import GaussianFamily

    assert GaussianFamily().epsilon(mu, 1e-5) + pure > truth + 0.04  # the old sum, above the releases' epsilon
    b = ledger_bound(led, 1e-5)
    assert b.epsilon_lb <= truth * (1 + 1e-3)  # legacy alias of the f-DP bound
    assert b.epsilon_lb_fdp == pytest.approx(truth, rel=2e-3)
    assert truth * 0.97 < b.epsilon_lb_cp <= b.epsilon_lb_fdp * (1 + 1e-3)
    assert b.claimed >= truth * 0.999


def test_old_records_load():
    old = {"claimed": 1.0, "covered": ["x"], "epsilon_lb": 0.9, "left_out": [], "ratio": 0.9, "source": "composed"}
    b = LedgerBound.from_dict(old)
    assert b.epsilon_lb_fdp == 0.9 and math.isnan(b.epsilon_lb_cp) and b.covered == ["x"]
    new = LedgerBound(0.4, 0.9, 1.0, ["x"], [], 1.0).to_dict()
    again = LedgerBound.from_dict(new)
    assert (again.epsilon_lb_cp, again.epsilon_lb_fdp, again.ratio_cp) == (0.4, 0.9, 0.4)
    assert "assumption-free" in new["cp_assumes"] and "Gaussian" in new["fdp_assumes"]


def test_answered_queries_compose_as_a_binary_channel():
    from audits.composed import binary_composition

    p = math.exp(1.0) / (1 + math.exp(1.0))  # 1-RR: a binary channel of pure epsilon 1
    assert binary_composition(p, 1 - p, 1, 1e-5) == pytest.approx(1.0, abs=1e-3)
    assert binary_composition(p, 1 - p, 10, 1e-5) == pytest.approx(10.0, abs=1e-2)
    assert binary_composition(0.3, 0.3, 50, 1e-5) == 0.0 and binary_composition(0.2, 0.3, 5, 1e-5) == 0.0
    # PATE: 2 Laplace counts per query; the bound over the queries grows with them and stays below the claim
    few = ledger_bound(PrivacyLedger().add(Laplace(scale=2.0, sensitivity=1.0, unit="node"), 2), 1e-5, seed=2)
    many = ledger_bound(PrivacyLedger().add(Laplace(scale=2.0, sensitivity=1.0, unit="node"), 20), 1e-5, seed=2)
    assert 0 < few.epsilon_lb_cp < many.epsilon_lb_cp <= many.claimed * 1.001 and "pate-votes" in many.covered[0]
    assert many.epsilon_lb_cp == many.epsilon_lb_fdp  # a released label: the measured channel in both
