"""The accountant conformance corpus: its files load, cover every event kind and regime, are consistent
(a sound lower limit below every sound reference), and the lower limits are what the closed forms and
dp-accounting say; Hypothesis checks that the limit functions move the way the true epsilon does."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.privacy.conformance import limits as L
from methods.privacy.conformance.cases import load_cases
from methods.errors import BenchError
from methods.privacy.events import EVENT_TYPES
from tests.conftest import REPO, bench_env

REGIMES = ("tiny-q", "large-sigma", "small-sigma", "tiny-delta", "eps-small", "eps-large", "low-orders")


@pytest.fixture(scope="module")
def cases():
    return load_cases()


def test_the_corpus_loads_with_enough_cases_and_every_kind(cases):
    assert len(cases) >= 300
    kinds = Counter(k for c in cases for k in c.kinds)
    assert set(kinds) == set(EVENT_TYPES), set(EVENT_TYPES) - set(kinds)
    files = Counter(c.id.split("/")[0] for c in cases)
    assert set(files) == set(EVENT_TYPES) | {"leaderboard"}
    for c in cases:
        assert set(c.kinds) <= set(c.tags), c.id
        c.ledger_events()  # every event parses


def test_the_hard_regimes_the_leaderboard_and_ci_are_tagged(cases):
    tags = Counter(t for c in cases for t in c.tags)
    for t in REGIMES:
        assert tags[t] >= 3, (t, tags[t])
    assert 100 <= tags["source:leaderboard"] <= 160
    assert 30 <= tags["ci"] <= 50
    assert {k for c in cases if "ci" in c.tags for k in c.kinds} == set(EVENT_TYPES)
    tiny = [c for c in cases if "tiny-q" in c.tags]
    assert any(e["count"] >= 1_000_000 for c in tiny for e in c.events)
    lb = [c for c in cases if "source:leaderboard" in c.tags]
    assert len({(json.dumps(c.events, sort_keys=True), c.delta) for c in lb}) == len(lb)  # deduplicated


def test_every_case_has_a_finite_limit_and_references(cases):
    for c in cases:
        assert math.isfinite(c.lower_limit) and c.lower_limit >= 0, c.id
        assert c.lower_limit_method, c.id
        sound = [r for r in c.references if r.sound]
        assert sound, c.id
        if "only one independent" not in c.note:
            assert len({r.name for r in sound}) >= 2, c.id
        for r in c.references:
            assert math.isfinite(r.epsilon) and r.epsilon >= 0 and r.version, (c.id, r)


def test_no_sound_reference_is_below_the_lower_limit(cases):
    """A lower limit above a sound upper bound means a bug in one of them (the build demotes a library value that
    falls below and says so in its note: that reference must then be unsound and carry the finding)."""
    for c in cases:
        for r in c.references:
            if r.sound:
                assert c.lower_limit <= r.epsilon * (1 + 1e-6), (c.id, r.name, r.epsilon, c.lower_limit)
            elif "FINDING" in r.note:
                assert r.epsilon < c.lower_limit


def test_the_mixture_pair_is_not_a_bound_on_a_dpgnn_step(cases):
    """(num_train, N, m, lambda) = (3, 2, 2, 0.25), noise std s = lambda N in units of 2C: occurrences' gradients
    +C u in one graph and -C u in the other, all others 0, give sum_k h(k) N(+-k/2, s^2), separated at epsilon 0
    by the half-space x > 0 with delta sum_k h(k) (2 Phi(k / (2 s)) - 1). The mixture pair sum_k h(k) N(k, s^2) vs
    N(0, s^2) has a smaller delta at epsilon 0, so it does not dominate the step, and no reference built on it may
    be sound."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    from methods.privacy.conformance import references as R

    h, s = L.hypergeometric_weights(3, 2, 2), 0.25 * 2
    assert h == pytest.approx({1: 2 / 3, 2: 1 / 3})
    realised = sum(p * (2 * norm.cdf(k / (2 * s)) - 1) for k, p in h.items())
    # the pair's likelihood ratio grows in x: delta(0) = P(x > c) - Q(x > c) where the densities cross
    c = brentq(lambda x: sum(p * math.exp((k * x - k * k / 2) / s ** 2) for k, p in h.items()) - 1, -10, 10)
    pair = sum(p * norm.sf(c, k, s) for k, p in h.items()) - norm.sf(c, 0, s)
    x = np.linspace(-8, 10, 180_001)
    dens = sum(p * norm.pdf(x, k, s) for k, p in h.items()) - norm.pdf(x, 0, s)
    assert pair == pytest.approx(float(np.maximum(dens, 0).sum() * (x[1] - x[0])), abs=1e-6)
    assert realised == pytest.approx(0.7733, abs=1e-4) and pair == pytest.approx(0.7428, abs=1e-4)
    assert realised > pair + 0.03

    ev = [{"kind": "hypergeometric_gaussian", "num_train": 3, "occurrence_bound": 2, "batch_size": 2,
           "noise_multiplier": 50.0, "count": 1}]  # large lambda: the library's mixture PLD is quick there
    assert not R.dpa_pld(ev, 1e-5).sound
    assert R.paper_rdp(ev, 1e-5).sound and R.hyp_revealed_pld(ev, 1e-5).sound
    hyp = [c for c in cases if "hypergeometric_gaussian" in c.kinds]
    assert len(hyp) >= 40
    for c in hyp:
        assert all(not r.sound for r in c.references if r.name == "dp-accounting PLD"), c.id
        assert {"paper RDP (mpmath)", "k-revealed PLD"} <= {r.name for r in c.references if r.sound}, c.id


def test_the_corpus_is_current_for_the_closed_forms(cases):
    """Exact cases recomputed: the stored limit is what the limit functions give now."""
    exact = [c for c in cases if c.lower_limit_method.startswith("exact") and "ci" in c.tags]
    assert len(exact) >= 5
    for c in exact:
        assert L.lower_limit(c.events, c.delta)[0] == pytest.approx(c.lower_limit, rel=1e-9, abs=1e-12), c.id


@pytest.mark.parametrize("z, steps, delta", [(0.8, 1, 1e-5), (2.0, 10, 1e-5), (5.0, 3, 1e-8)])
def test_the_gaussian_closed_form_matches_dp_accounting_pld(z, steps, delta):
    from dp_accounting.pld import privacy_loss_distribution as P

    exact = L.gaussian_lower_limit(z, steps, delta)
    pld = P.from_gaussian_mechanism(z, value_discretization_interval=1e-4)  # connect-the-dots: tight
    pld = pld.self_compose(steps) if steps > 1 else pld
    assert exact == pytest.approx(pld.get_epsilon_for_delta(delta), abs=1e-3)
    assert exact <= pld.get_epsilon_for_delta(delta) + 1e-9
    # the mu-GDP form evaluated at the solution gives back delta
    assert float(L.gaussian_delta(exact, math.sqrt(steps) / z)) == pytest.approx(delta, rel=1e-6)


@pytest.mark.parametrize("eps0, steps, delta", [(0.5, 1, 1e-5), (1.0, 10, 1e-5), (0.2, 30, 1e-8)])
def test_the_randomized_response_sum_matches_dp_accounting_pld(eps0, steps, delta):
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as P

    exact = L.rr_lower_limit(eps0, steps, delta)
    one = P.from_randomized_response(2 / (1 + math.exp(eps0)), 2, value_discretization_interval=1e-4,
                                     neighboring_relation=NeighboringRelation.REPLACE_ONE)
    pld = one.self_compose(steps) if steps > 1 else one
    assert exact == pytest.approx(pld.get_epsilon_for_delta(delta), abs=1e-3)
    assert exact <= pld.get_epsilon_for_delta(delta) + 1e-9


def test_the_binned_pld_limit_reproduces_the_closed_forms():
    """The PLD route on pairs whose epsilon is known: below it (a lower bound), and within its slack."""
    for z, t, d in ((1.0, 10, 1e-5), (3.0, 40, 1e-6)):
        exact = L.gaussian_lower_limit(z, t, d)
        f, _ = L.poisson_gaussian_pairs(1.0, z, t, d)  # rate 1: the Gaussian
        lim = L.pld_lower_epsilon([f], d)
        assert lim.epsilon <= exact * (1 + 1e-9)
        assert lim.epsilon >= exact - 2 * lim.slack - 1e-3
    for e0 in (0.3, 2.0):
        closed = L.laplace_single_epsilon(e0, 1e-5)
        lim = L.pld_lower_epsilon([L.laplace_pair(e0, 1)], 1e-5).epsilon
        assert closed - 2e-3 <= lim <= closed * (1 + 1e-9)
    for e0, t in ((1.0, 5), (0.1, 40)):
        exact = L.rr_lower_limit(e0, t, 1e-5)
        lim = L.pld_lower_epsilon([L.rr_pair(e0, t)], 1e-5).epsilon
        assert exact - 2e-3 <= lim <= exact * (1 + 1e-9)


def test_the_pld_limit_is_at_most_dp_accountings_pessimistic_pld():
    from dp_accounting.pld import privacy_loss_distribution as P

    for q, z, t in ((0.01, 1.0, 200), (0.3, 2.0, 20)):
        lim, _ = L.kind_lower_limit("poisson_gaussian", [{"kind": "poisson_gaussian", "rate": q, "noise_multiplier": z,
                                                          "count": t}], 1e-5)
        up = P.from_gaussian_mechanism(z, sampling_prob=q).self_compose(t).get_epsilon_for_delta(1e-5)
        assert up - 5e-3 <= lim <= up


def test_a_composite_ledger_gets_its_largest_kind():
    evs = [{"kind": "gaussian", "sensitivity": 1.0, "sigma": 3.0, "count": 2},
           {"kind": "randomized_response", "epsilon": 0.5, "count": 3}]
    value, method = L.lower_limit(evs, 1e-5)
    parts = [L.lower_limit([e], 1e-5)[0] for e in evs]
    assert value == max(parts) and "max over event kinds" in method


def test_bad_input_is_a_bench_error():
    with pytest.raises(BenchError):
        L.gaussian_lower_limit(1.0, 10, 0.0)
    with pytest.raises(BenchError):
        L.gaussian_lower_limit(-1.0, 10, 1e-5)
    with pytest.raises(BenchError):
        L.rr_lower_limit(1.0, -2, 1e-5)
    with pytest.raises(BenchError):
        L.lower_limit([{"kind": "nope", "count": 1}], 1e-5)
    with pytest.raises(BenchError):
        L.poisson_gaussian_pairs(1.5, 1.0, 10, 1e-5)


def test_the_limits_import_without_torch():
    code = "import sys, methods.privacy.conformance.limits\nprint('torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=bench_env(), cwd=REPO,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


# ----------------------------------------------------------------------------------------------------------
# Properties of the limit functions (the true epsilon is monotone; so must the limits be, up to their slack)
# ----------------------------------------------------------------------------------------------------------

deltas = st.sampled_from([1e-3, 1e-5, 1e-8])


@settings(max_examples=25, deadline=None)
@given(z=st.floats(0.3, 30), f=st.floats(1.05, 3), t=st.integers(1, 500), delta=deltas)
def test_the_exact_gaussian_limit_is_monotone(z, f, t, delta):
    e = L.gaussian_lower_limit(z, t, delta)
    assert L.gaussian_lower_limit(z * f, t, delta) <= e
    assert L.gaussian_lower_limit(z, t + 1 + int(t * (f - 1)), delta) >= e
    assert L.gaussian_lower_limit(z, t, delta / 10) >= e


@settings(max_examples=15, deadline=None)
@given(e0=st.floats(0.05, 3), f=st.floats(1.05, 3), t=st.integers(1, 40), delta=deltas)
def test_the_exact_randomized_response_limit_is_monotone(e0, f, t, delta):
    e = L.rr_lower_limit(e0, t, delta)
    assert L.rr_lower_limit(e0 * f, t, delta) >= e
    assert L.rr_lower_limit(e0, t + 1, delta) >= e
    assert L.rr_lower_limit(e0, t, delta / 10) >= e
    assert e <= t * e0 * (1 + 1e-12)  # never above basic composition


def _pois(q: float, z: float, t: int, delta: float) -> float:
    return L.kind_lower_limit("poisson_gaussian", [{"kind": "poisson_gaussian", "rate": q, "noise_multiplier": z,
                                                    "count": t}], delta)[0]


def _tol(e: float) -> float:
    return 2e-3 + 2e-4 * e  # the PLD limits' slack (Hoeffding and the grid)


@settings(max_examples=6, deadline=None)
@given(q=st.floats(0.01, 0.6), z=st.floats(0.7, 5), t=st.integers(1, 20), delta=deltas)
def test_the_poisson_limit_is_monotone_in_noise_steps_rate_and_delta(q, z, t, delta):
    e = _pois(q, z, t, delta)
    assert _pois(q, z * 1.3, t, delta) <= e + _tol(e)
    assert _pois(q, z, 2 * t, delta) >= e - _tol(e)
    assert _pois(min(1.0, q * 1.5), z, t, delta) >= e - _tol(e)
    assert _pois(q, z, t, delta / 100) >= e - _tol(e)


@settings(max_examples=6, deadline=None)
@given(n=st.integers(50, 5000), frac=st.floats(0.01, 1.0), z=st.floats(0.7, 10), t=st.integers(1, 20),
       delta=deltas)
def test_the_wor_limit_is_at_most_the_gaussian_at_rate_one(n, frac, z, t, delta):
    """Subsampling is post-processing of the full-batch release (the same kernel in both worlds), so the
    without-replacement pair's epsilon is at most the Gaussian's with the same multiplier; at m = n it is it."""
    m = max(1, int(n * frac))
    ev = {"kind": "fixed_size_gaussian", "population": n, "sample_size": m, "noise_multiplier": z, "count": t}
    wor = L.kind_lower_limit("fixed_size_gaussian", [ev], delta)[0]
    gauss = L.gaussian_lower_limit(z, t, delta)
    assert wor <= gauss * (1 + 1e-9)
    full = L.kind_lower_limit("fixed_size_gaussian", [dict(ev, sample_size=n)], delta)[0]
    assert full == pytest.approx(gauss, rel=2e-3, abs=3e-3)
    assert full >= wor - _tol(wor)


@settings(max_examples=5, deadline=None)
@given(n=st.integers(20, 2000), frac=st.floats(0.01, 1.0), lam=st.floats(0.5, 8), t=st.integers(1, 20))
def test_the_hypergeometric_limit_with_one_occurrence_is_the_poisson_pair(n, frac, lam, t):
    """One occurrence in the batch with probability m/n: the DP-GNN pair is then the Poisson pair with rate m/n
    and multiplier lambda; more occurrences (same lambda N per occurrence) can only raise the limit."""
    m = max(1, int(n * frac))
    hyp = {"kind": "hypergeometric_gaussian", "num_train": n, "occurrence_bound": 1, "batch_size": m,
           "noise_multiplier": lam, "count": t}
    one = L.kind_lower_limit("hypergeometric_gaussian", [hyp], 1e-5)[0]
    assert one == pytest.approx(_pois(m / n, lam, t, 1e-5), rel=1e-6, abs=1e-9)
    two = L.kind_lower_limit("hypergeometric_gaussian", [dict(hyp, occurrence_bound=2, noise_multiplier=lam / 2)],
                             1e-5)[0]
    assert two >= one - _tol(one)


@settings(max_examples=5, deadline=None)
@given(q=st.floats(0.01, 1.0), e0=st.floats(0.05, 3), t=st.integers(1, 30))
def test_the_poisson_laplace_limit_grows_with_the_rate_to_the_laplace_limit(q, e0, t):
    def pl(rate: float) -> float:
        ev = {"kind": "poisson_laplace", "rate": rate, "scale": 1 / e0, "count": t}
        return L.kind_lower_limit("poisson_laplace", [ev], 1e-5)[0]

    e = pl(q)
    full = L.kind_lower_limit("laplace", [{"kind": "laplace", "scale": 1 / e0, "count": t}], 1e-5)[0]
    assert e <= full + _tol(full)
    assert pl(1.0) == pytest.approx(full, abs=_tol(full))
    assert pl(min(1.0, 1.5 * q)) >= e - _tol(e)
