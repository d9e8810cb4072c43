"""Properties every accountant adapter must have, whatever the case: epsilon falls with more noise and larger
delta, grows with the sampling rate and the number of steps; ``count=T`` is T single events; and our
accountants' calibration (``calibrate_noise``, ``bench account --epsilon``) inverts their accounting.

Discretised accountants (PLD, PRV) are monotone only up to their discretisation, hence their tolerances; the
RDP and GDP ones exactly (up to float rounding). The discretised ones run a few examples by default and more
under ``-m slow``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from methods.privacy.conformance import adapters as A
from methods.privacy.events import Gaussian, PoissonGaussian

#: absolute slack of each accountant's monotonicity (its discretisation error; 0: exact up to rounding)
SLACK = {"ours-rdp": 0.0, "dp-accounting-rdp": 0.0, "opacus-rdp": 0.0, "opacus-gdp": 0.0,
         "ours-pld": 2e-3, "dp-accounting-pld": 2e-3, "opacus-prv": 2e-2}
FAST = ["ours-rdp", "dp-accounting-rdp", "opacus-rdp", "opacus-gdp"]
DISCRETISED = ["ours-pld", "dp-accounting-pld", "opacus-prv"]
ALL = [pytest.param(n, id=n) for n in FAST] + \
      [pytest.param(n, id=n, marks=pytest.mark.slow) for n in DISCRETISED if n != "ours-pld"] + \
      [pytest.param("ours-pld", id="ours-pld")]

rates = st.floats(0.005, 0.5)
noises = st.floats(0.7, 4.0)
steps = st.integers(1, 120)
deltas = st.floats(1e-8, 1e-3)


def eps(name: str, rate: float, noise: float, count: int, delta: float) -> float:
    events = [PoissonGaussian(rate=rate, noise_multiplier=noise, count=count)]
    try:
        return A.get_accountant(name).epsilon(events, delta)
    except ValueError:
        # Opacus's GDP root search has no root where epsilon is 0 (its bracket starts there): the known crash of
        # test_opacus_gdp_crashes_where_epsilon_is_zero, outside these properties
        assume(name != "opacus-gdp")
        raise


def at_least(big: float, small: float, name: str) -> bool:
    return big >= small * (1 - 1e-9) - SLACK[name]


def _examples(name: str, fast: int = 6, slow: int = 3) -> settings:
    return settings(max_examples=fast if name in FAST else slow, deadline=None)


@pytest.mark.parametrize("name", ALL)
def test_epsilon_falls_with_noise(name):
    @_examples(name)
    @given(rates, noises, steps, deltas, st.floats(1.05, 2.0))
    def prop(q, z, t, d, more):
        assert at_least(eps(name, q, z, t, d), eps(name, q, z * more, t, d), name)

    prop()


@pytest.mark.parametrize("name", ALL)
def test_epsilon_grows_with_rate_and_steps(name):
    @_examples(name)
    @given(rates, noises, steps, deltas, st.floats(1.05, 2.0), st.integers(1, 60))
    def prop(q, z, t, d, more, extra):
        base = eps(name, q, z, t, d)
        assert at_least(eps(name, min(1.0, q * more), z, t, d), base, name)
        assert at_least(eps(name, q, z, t + extra, d), base, name)

    prop()


@pytest.mark.parametrize("name", ALL)
def test_epsilon_falls_with_delta(name):
    @_examples(name)
    @given(rates, noises, steps, deltas, st.floats(1.5, 100.0))
    def prop(q, z, t, d, more):
        assert at_least(eps(name, q, z, t, d), eps(name, q, z, t, min(0.5, d * more)), name)

    prop()


#: count=T against T single events: the RDP curves add exactly; PLDs compose in another order (discretisation)
COMPOSE_RTOL = {"ours-rdp": 1e-9, "dp-accounting-rdp": 1e-9, "opacus-rdp": 1e-12, "opacus-gdp": 1e-12,
                "opacus-prv": 1e-12, "ours-pld": 2e-3, "dp-accounting-pld": 2e-3}


@pytest.mark.parametrize("name", ALL)
def test_count_t_is_t_single_events(name):
    @_examples(name, fast=6, slow=2)
    @given(rates, noises, st.integers(2, 8), deltas, st.booleans())
    def prop(q, z, t, d, plain):
        event = Gaussian(sensitivity=1.0, sigma=z) if plain else PoissonGaussian(rate=q, noise_multiplier=z)
        acc = A.get_accountant(name)
        together = acc.epsilon([event.times(t)], d)
        apart = acc.epsilon([event] * t, d)
        assert apart == pytest.approx(together, rel=COMPOSE_RTOL[name], abs=SLACK[name])

    prop()


# --------------------------------------------------------------------------------------------------------------
# calibration inverts accounting (ours)


@pytest.mark.parametrize("accountant", ["rdp", pytest.param("pld", marks=pytest.mark.slow)])
def test_calibrated_noise_meets_the_target_and_no_less_noise_does(accountant):
    from methods.privacy import calibrate_noise
    from methods.privacy import presets as P

    adapter = A.get_accountant(f"ours-{accountant}")

    @settings(max_examples=3, deadline=None)
    @given(st.floats(0.01, 0.2), st.integers(10, 200), st.floats(0.5, 8.0), st.sampled_from([1e-5, 1e-6]))
    def prop(q, t, target, d):
        z = calibrate_noise(lambda z: P.dpsgd_poisson(q, z, t), target, d, accountant=accountant, rtol=1e-3)
        events = list(P.dpsgd_poisson(q, z, t).events)
        assert adapter.epsilon(events, d) <= target
        less = [e.times(e.count) for e in P.dpsgd_poisson(q, z * (1 - 2e-3), t).events]
        assert adapter.epsilon(less, d) > target

    prop()


@pytest.mark.parametrize("accountant", ["rdp", pytest.param("pld", marks=pytest.mark.slow)])
def test_bench_account_epsilon_is_what_the_adapter_accounts(accountant, capsys):
    from bench.cli import main

    target, q, t, d = 2.0, 0.02, 100, 1e-5
    code = main(["account", "dpsgd", "--sampling", "poisson", "--sampling-rate", str(q), "--steps", str(t),
                 "--epsilon", str(target), "--delta", str(d), "--accountant", accountant, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    z = out["noise_multiplier"]
    spent = A.get_accountant(f"ours-{accountant}").epsilon([PoissonGaussian(rate=q, noise_multiplier=z, count=t)], d)
    assert spent == pytest.approx(out["epsilon"], rel=1e-12)
    assert target * (1 - 1e-2) < spent <= target


def test_opacus_gdp_crashes_where_epsilon_is_zero():
    """Opacus 1.6's GDP accountant searches epsilon in [0, 500] and raises where delta(0) <= delta (the answer is
    0): the suite reports that as an ERROR. This test fails once Opacus answers 0 there, so the note can go."""
    from methods.privacy.conformance.cases import Case
    from methods.privacy.conformance.check import evaluate

    case = Case(id="tiny", events=({"kind": "poisson_gaussian", "rate": 0.005, "noise_multiplier": 2.0,
                                    "count": 1},), delta=1e-2, lower_limit=0.0, lower_limit_method="epsilon >= 0")
    r = evaluate(case, A.get_accountant("opacus-gdp"))
    assert r.verdict == "ERROR" and r.detail.startswith("ValueError: ")
    assert evaluate(case, A.get_accountant("ours-rdp")).verdict == "TIGHT"
