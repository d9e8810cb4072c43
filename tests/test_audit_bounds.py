"""The audit bounds against hand-checked values and their monotonicity properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from audits.bounds import (clopper_pearson_lower, clopper_pearson_upper, epsilon_from_rates, guess_grid,
                           multi_run_audit, multi_run_bound, one_run_audit, one_run_epsilon_lb, one_run_p_value,
                           select_threshold)
from methods.base import ConfigError


# --------------------------------------------------------------------------------------
# Clopper-Pearson
# --------------------------------------------------------------------------------------


def test_clopper_pearson_zero_successes_closed_form():
    # P[Bin(n, p) = 0] = (1 - p)^n = 0.05  =>  p = 1 - 0.05^(1/n)
    for n in (1, 10, 50, 200):
        assert clopper_pearson_upper(0, n, 0.95) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-9)
    assert clopper_pearson_upper(0, 10, 0.95) == pytest.approx(0.25887, abs=1e-5)
    # all successes: upper = 1, lower = 0.05^(1/n)
    assert clopper_pearson_upper(10, 10) == 1.0
    assert clopper_pearson_lower(10, 10, 0.95) == pytest.approx(0.05 ** (1 / 10), rel=1e-9)
    assert clopper_pearson_lower(0, 10) == 0.0


def test_clopper_pearson_defining_tail():
    # upper bound u solves P[Bin(n, u) <= k] = 1 - confidence
    for k, n in ((1, 10), (3, 20), (17, 40)):
        u = clopper_pearson_upper(k, n, 0.95)
        assert stats.binom.cdf(k, n, u) == pytest.approx(0.05, abs=1e-9)
        lo = clopper_pearson_lower(k, n, 0.95)
        assert stats.binom.sf(k - 1, n, lo) == pytest.approx(0.05, abs=1e-9)
    # a textbook value: 5 of 20, one-sided 95% upper 0.4556
    assert clopper_pearson_upper(5, 20, 0.95) == pytest.approx(0.4556, abs=1e-4)


@given(st.integers(1, 200), st.data())
@settings(max_examples=60, deadline=None)
def test_clopper_pearson_monotone_and_covers(n, data):
    k = data.draw(st.integers(0, n))
    u, lo = clopper_pearson_upper(k, n), clopper_pearson_lower(k, n)
    assert lo <= k / n <= u
    if k < n:
        assert clopper_pearson_upper(k + 1, n) > u
    assert clopper_pearson_upper(k, n, 0.99) >= u


def test_bad_counts_are_config_errors():
    with pytest.raises(ConfigError):
        clopper_pearson_upper(3, 2)
    with pytest.raises(ConfigError):
        clopper_pearson_upper(0, 0)
    with pytest.raises(ConfigError):
        clopper_pearson_upper(0, 5, confidence=1.0)
    with pytest.raises(ConfigError):
        one_run_p_value(10, 5, 6, 1.0)


# --------------------------------------------------------------------------------------
# Multi-run
# --------------------------------------------------------------------------------------


def test_epsilon_from_rates_hand_values():
    assert epsilon_from_rates(0.1, 0.1) == pytest.approx(math.log(9))
    assert epsilon_from_rates(0.5, 0.5) == 0.0
    assert epsilon_from_rates(0.6, 0.6) == 0.0  # worse than chance: no evidence
    assert epsilon_from_rates(0.01, 0.5, delta=0.0) == pytest.approx(math.log(0.5 / 0.01))
    assert epsilon_from_rates(0.1, 0.2, delta=0.05) == pytest.approx(max(math.log(0.85 / 0.2), math.log(0.75 / 0.1)))


def test_multi_run_bound_perfect_separation_uses_bonferroni():
    b = multi_run_bound(0, 50, 0, 50, delta=0.0, confidence=0.95)
    up = 1 - 0.025 ** (1 / 50)  # each rate at 97.5% so that both hold jointly at 95%
    assert b.fpr_upper == pytest.approx(up)
    assert b.epsilon_lb == pytest.approx(math.log((1 - up) / up))
    assert 2.5 < b.epsilon_lb < 2.6


def test_multi_run_threshold_is_chosen_on_held_out_half():
    rng = np.random.default_rng(0)
    # perfectly separated: the bound equals that of 0 errors on the evaluation halves
    b = multi_run_audit(np.arange(40) + 100.0, np.arange(40.0), 1e-5, rng=rng)
    assert b.fp == 0 and b.fn == 0 and b.negatives == 20 and b.positives == 20
    assert b.epsilon_lb == pytest.approx(multi_run_bound(0, 20, 0, 20, 1e-5).epsilon_lb)
    # identical distributions: no evidence beyond chance (with high probability)
    same = [multi_run_audit(rng.normal(size=100), rng.normal(size=100), 1e-5, rng=rng).epsilon_lb for _ in range(20)]
    assert np.mean(np.array(same) == 0.0) >= 0.9


def test_select_threshold_separates_in_either_direction():
    low, high = np.linspace(0, 2, 20), np.linspace(5, 7, 20)
    t, sign = select_threshold(high, low, 0.0)
    assert 2.0 < t < 5.0 and sign == 1
    t, sign = select_threshold(low, high, 0.0)
    assert 2.0 < t < 5.0 and sign == -1
    # a canary that lowers the score is as informative as one that raises it
    rng = np.random.default_rng(1)
    up = multi_run_audit(np.arange(40) + 100.0, np.arange(40.0), 0.0, rng=rng)
    down = multi_run_audit(np.arange(40.0), np.arange(40) + 100.0, 0.0, rng=np.random.default_rng(1))
    assert down.direction == -1 and down.epsilon_lb == pytest.approx(up.epsilon_lb) and down.epsilon_lb > 1


@given(st.integers(2, 60), st.integers(2, 60), st.data())
@settings(max_examples=50, deadline=None)
def test_multi_run_bound_monotone_in_errors(neg, pos, data):
    fp = data.draw(st.integers(0, neg - 1))
    fn = data.draw(st.integers(0, pos))
    b = multi_run_bound(fp, neg, fn, pos, 1e-5).epsilon_lb
    assert b >= 0
    assert multi_run_bound(fp + 1, neg, fn, pos, 1e-5).epsilon_lb <= b + 1e-12
    assert multi_run_bound(fp, neg, fn, pos, 1e-5, confidence=0.99).epsilon_lb <= b + 1e-12


# --------------------------------------------------------------------------------------
# One run (Steinke, Nasr & Jagielski 2023)
# --------------------------------------------------------------------------------------


def test_one_run_all_correct_pure_dp_closed_form():
    # delta = 0 and v = r: P[Bin(r, q) >= r] = q^r = 0.05  =>  q = 0.05^(1/r), eps = ln(q / (1 - q))
    for r in (10, 50, 100):
        q = 0.05 ** (1 / r)
        assert one_run_epsilon_lb(1000, r, r, 0.0, 0.95) == pytest.approx(math.log(q / (1 - q)), abs=1e-4)
    # the paper's order of magnitude: 100 correct guesses out of 100 -> about 3.5
    assert one_run_epsilon_lb(1000, 100, 100) == pytest.approx(3.49, abs=0.01)


def test_one_run_chance_level_gives_zero():
    assert one_run_epsilon_lb(1000, 100, 50) == 0.0
    assert one_run_epsilon_lb(1000, 100, 55) == 0.0  # P[Bin(100, 1/2) >= 55] = 0.18 > 0.05
    assert one_run_epsilon_lb(1000, 100, 60) > 0.0  # P[Bin(100, 1/2) >= 60] = 0.028 < 0.05


def test_one_run_p_value_matches_binomial_tail_and_delta_term():
    assert one_run_p_value(100, 20, 15, 0.7, 0.0) == pytest.approx(stats.binom.sf(14, 20, 1 / (1 + math.exp(-0.7))))
    # the delta term: 2 m delta max_i P[v - i <= B < v] / i, by brute force
    m, r, v, eps, delta = 200, 30, 24, 1.0, 1e-4
    q = 1 / (1 + math.exp(-eps))
    alpha = max(sum(stats.binom.pmf(v - j, r, q) for j in range(1, i + 1)) / i for i in range(1, v + 1))
    expect = stats.binom.sf(v - 1, r, q) + 2 * m * delta * alpha
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(expect, rel=1e-9)


@given(st.integers(1, 300), st.data())
@settings(max_examples=40, deadline=None)
def test_one_run_monotone(r, data):
    v = data.draw(st.integers(0, r))
    delta = data.draw(st.sampled_from([0.0, 1e-6, 1e-4]))
    m = 2 * r
    lb = one_run_epsilon_lb(m, r, v, delta)
    assert lb >= 0
    if v < r:  # one more correct guess never lowers the bound
        assert one_run_epsilon_lb(m, r, v + 1, delta) >= lb - 1e-5
    # more delta never raises it; a higher confidence never raises it
    assert one_run_epsilon_lb(m, r, v, delta + 1e-3) <= lb + 1e-5
    assert one_run_epsilon_lb(m, r, v, delta, confidence=0.99) <= lb + 1e-5
    # the bound is valid: its p-value is below 1 - confidence
    if lb > 0:
        assert one_run_p_value(m, r, v, lb, delta) < 0.05


def test_one_run_all_correct_increases_with_guesses():
    lbs = [one_run_epsilon_lb(2000, r, r, 1e-5) for r in (5, 10, 20, 50, 100, 200)]
    assert all(b > a for a, b in zip(lbs, lbs[1:]))
    assert lbs[0] < 1.0 < lbs[-1]


def test_one_run_audit_counts_guesses():
    included = np.array([True] * 50 + [False] * 50)
    scores = np.where(included, 1.0, 0.0) + np.linspace(0, 0.1, 100)
    b = one_run_audit(scores, included, 0.0)
    assert b.correct == b.guesses == 100  # (50, 50) is on the grid: all right
    assert b.epsilon_lb == pytest.approx(one_run_epsilon_lb(100, 100, 100, 0.0, 1 - 0.05 / len(guess_grid(100))))
    flipped = one_run_audit(-scores, included, 0.0)
    assert flipped.epsilon_lb == 0.0
