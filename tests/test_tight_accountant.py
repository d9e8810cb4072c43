"""The ``tight`` accountant (what runs report and calibrate with): the smallest of the sound bounds the suite has,
never below the exact value, and the calibration that buys less noise with it."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.privacy import PrivacyLedger, calibrate_noise
from methods.privacy import accountant as A
from methods.privacy import presets as P
from methods.privacy.events import EVENT_TYPES, Event, Laplace

deltas = st.sampled_from([1e-3, 1e-5, 1e-8])

FAMILIES = {
    "dp-mlp": lambda z: P.dp_mlp(2000, 256, z, 300),
    "dpgnn": lambda z: P.dpgnn(2000, 64, 3, 1, z, 200),
    "drw-public": lambda z: P.drw(140, 3, 16, z, 50),
    "drw": lambda z: P.drw(2000, 3, 64, z, 300),
    "gap-edge": lambda z: P.aggregation_edge(2, z),
    "progap-node": lambda z: P.progap_node(2, 2000, 256, 40, z, 5),
    "privgnn": lambda z: P.privgnn(300, 1.0 / (20 * z), 0.3),
    "pate": lambda z: P.privgnn_pate(300, 1.0 / (20 * z)),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tight_is_the_smallest_sound_bound(family):
    """Per family: tight <= the RDP bound and <= the PLD (within its outward rounding), equal to one of them or to
    the closed form, so it never invents a value of its own."""
    led = FAMILIES[family](1.5)
    tight = led.epsilon(1e-5, "tight")
    rdp = led.epsilon(1e-5, "rdp")
    pld = led.epsilon(1e-5, "pld")
    assert 0 < tight <= rdp
    assert tight <= pld * (1 + 1e-6)
    candidates = [rdp, pld, A.rdp_epsilon(list(led.events), 1e-5, tight=True)[0]]
    if all(getattr(e, "gdp_mu", None) for e in led.events):
        candidates.append(A.gdp_epsilon(math.sqrt(sum(e.count * e.gdp_mu ** 2 for e in led.events)), 1e-5))
    assert any(math.isclose(tight, c, rel_tol=1e-12) for c in candidates)


def test_the_default_accountant_is_tight_and_runs_report_it():
    led = FAMILIES["dpgnn"](1.5)
    assert A.DEFAULT_ACCOUNTANT == "tight"
    assert led.epsilon(1e-5) == led.epsilon(1e-5, "tight") < led.epsilon(1e-5, "rdp")


@settings(max_examples=25, deadline=None)
@given(z=st.floats(0.5, 20), t=st.integers(1, 2000), delta=deltas)
def test_gdp_closed_form_is_exact_and_outward(z, t, delta):
    """mu-GDP's epsilon: on the feasible side of Balle & Wang's curve, and within its outward rounding of the root."""
    from scipy.special import log_ndtr

    mu = math.sqrt(t) / z
    eps = A.gdp_epsilon(mu, delta)

    def curve(e: float) -> float:
        return math.exp(log_ndtr(-e / mu + mu / 2)) - math.exp(e + log_ndtr(-e / mu - mu / 2))

    assert curve(eps) <= delta
    if eps > 0:
        assert curve(eps / (1 + 1e-7)) > delta  # not loose beyond the rounding


@settings(max_examples=20, deadline=None)
@given(n=st.integers(50, 3000), frac=st.floats(0.01, 1.0), z=st.floats(0.6, 10), t=st.integers(1, 500),
       delta=deltas)
def test_fixed_size_tight_curve_is_the_per_order_minimum(n, frac, z, t, delta):
    """Theorem 27's curve or the unsubsampled Gaussian's, whichever is smaller at each order: never above either,
    and the tight epsilon never above the Theorem-27 accountant nor below the exact Gaussian-free lower limit."""
    import numpy as np

    from methods.privacy import rdp as R

    m = max(1, int(n * frac))
    led = P.dpsgd_fixed(n, m, z, t)
    (e,) = led.events
    curve = e.tight_rdp()
    assert np.all(curve <= e.rdp() + 1e-15) and np.all(curve <= R.ORDERS / (2 * z ** 2) * (1 + 1e-12))
    assert led.epsilon(delta) <= led.epsilon(delta, "rdp")


@settings(max_examples=30, deadline=None)
@given(a=st.floats(0.05, 3), c=st.floats(0.05, 3), eps=st.floats(0.0, 4))
def test_laplace_scalar_pair_dominates_a_split_shift(a, c, eps):
    """Laplace.pld's lemma: Laplace noise on two coordinates shifted by (a, c) leaks no more than one coordinate
    shifted by a + c. The split pair's delta (two composed scalar PLDs, optimistic: a lower bound) never exceeds the
    merged pair's (pessimistic: an upper bound)."""
    from dp_accounting.pld import privacy_loss_distribution as PLD

    split = PLD.from_laplace_mechanism(1.0, sensitivity=a, pessimistic_estimate=False,
                                       value_discretization_interval=1e-3)
    split = split.compose(PLD.from_laplace_mechanism(1.0, sensitivity=c, pessimistic_estimate=False,
                                                     value_discretization_interval=1e-3))
    merged = PLD.from_laplace_mechanism(1.0, sensitivity=a + c, value_discretization_interval=1e-3)
    assert split.get_delta_for_epsilon(eps) <= merged.get_delta_for_epsilon(eps) + 1e-12


def test_every_event_kind_states_whether_its_pld_dominates():
    """A registry-wide guard: an event kind the tight accountant may read as a PLD has one."""
    for kind, cls in EVENT_TYPES.items():
        if cls.pld_dominates:
            assert cls.pld is not Event.pld, kind
    assert Laplace.pld_dominates


@pytest.mark.parametrize("family", ["dp-mlp", "dpgnn", "gap-edge", "privgnn"])
def test_calibration_buys_less_noise_at_the_same_target(family):
    """Calibrating with the accountant that publishes: the noise meets the target under it, is smaller than the
    RDP calibration's, and that smaller noise would overspend under RDP (so the saving is real, not rounding)."""
    make = FAMILIES[family]
    z_tight = calibrate_noise(make, 4.0, 1e-5)
    z_rdp = calibrate_noise(make, 4.0, 1e-5, accountant="rdp")
    assert make(z_tight).epsilon(1e-5) <= 4.0
    assert z_tight < z_rdp * 0.99
    assert make(z_tight).epsilon(1e-5, "rdp") > 4.0


def test_records_without_an_accountant_are_legacy_rdp():
    from bench.records import accountant_of, spent_epsilon

    led = FAMILIES["dp-mlp"](2.0)
    rec = {"ledger": led.to_dict(), "params": {"delta": "1e-05"}}
    assert accountant_of(rec) == A.LEGACY_ACCOUNTANT == "rdp/improved"
    assert spent_epsilon(rec) == led.epsilon(1e-5, "rdp")
    rec["params"]["accountant"] = "tight"
    assert spent_epsilon(rec) == led.epsilon(1e-5, "tight")


def test_history_checkpoints():
    assert A.checkpoint_epochs(5) == frozenset(range(1, 6))
    marks = A.checkpoint_epochs(100)
    assert 100 in marks and len(marks) <= A.HISTORY_POINTS + 1 and min(marks) >= 1


def test_parse_accountant():
    assert A.parse_accountant("tight") == ("tight", "improved")
    with pytest.raises(Exception, match="unknown accountant"):
        A.parse_accountant("tight/standard")
    assert PrivacyLedger().epsilon(1e-5) == 0.0


def test_a_step_with_almost_no_noise_is_left_to_rdp(monkeypatch):
    """DP-GNN with lambda 0.01: its PLD would span ~10^8 buckets (374 s to build); tight takes the RDP bound and
    never builds it."""
    led = P.dpgnn(120, 40, 3, 1, 0.01, 1)
    (e,) = led.events
    assert not e.pld_practical() and P.dpgnn(120, 40, 3, 1, 0.5, 1).events[0].pld_practical()

    def refuse(*_a, **_k):
        raise AssertionError("the PLD of a step with almost no noise was built")

    monkeypatch.setattr(A, "pld_epsilon", refuse)
    assert led.epsilon(1e-4) == A.rdp_epsilon(list(led.events), 1e-4, tight=True)[0]
