"""Ledgers of GAP / ProGAP / EdgeRand: Theorems 4.1 and 4.2, the sqrt(2) edge sensitivity, calibration, the node-level
relations (what each ledger claims)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.base import BudgetError
from methods.privacy import Gaussian, Laplace, LedgerError, PoissonGaussian, RandomizedResponse
from methods.privacy import presets as P

deltas = st.sampled_from([1e-3, 1e-5, 1e-6, 1e-8])


def calibrate(make, eps, delta):
    from methods.base import Budget
    from methods.gap.common import calibrate as gap_calibrate

    return gap_calibrate(make, Budget(eps, delta) if delta > 0 else SimpleBudget(eps, delta))


class SimpleBudget:
    def __init__(self, epsilon, delta):
        self.epsilon, self.delta = epsilon, delta


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.floats(0.3, 60), deltas)
def test_edge_ledger_is_theorem_41_with_sqrt2_sensitivity(K, sigma, delta):
    ours = P.aggregation_edge(K, sigma)
    (event,) = ours.events
    assert isinstance(event, Gaussian) and event.count == K and event.unit == "edge"
    assert event.sensitivity == pytest.approx(math.sqrt(2))
    # same privacy as the paper's ledger (sensitivity 1) at sigma / sqrt(2)
    paper = P.aggregation_edge(K, sigma / math.sqrt(2), convention="paper")
    assert ours.epsilon(delta) == pytest.approx(paper.epsilon(delta), rel=1e-9)
    # the paper's closed form is the standard-conversion RDP bound minimised over continuous orders
    closed = P.closed_form_edge_epsilon(K, sigma / math.sqrt(2), delta)
    standard = ours.epsilon(delta, conversion="standard")
    assert closed * (1 - 1e-9) <= standard <= closed * 1.002
    assert ours.epsilon(delta) <= standard  # improved conversion (the default) is never looser


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.floats(0.1, 8), deltas)
def test_edge_calibration_is_feasible_and_tight(K, eps, delta):
    sigma = calibrate(lambda s: P.aggregation_edge(K, s), eps, delta)
    assert P.aggregation_edge(K, sigma).epsilon(delta) <= eps
    assert P.aggregation_edge(K, sigma * 0.99).epsilon(delta) > eps


def test_calibration_needs_delta_for_gaussians():
    with pytest.raises(BudgetError):
        calibrate(lambda s: P.aggregation_edge(2, s), 1.0, 0.0)


def test_progap_node_ledger_is_theorem_42_on_training_nodes():
    led = P.progap_node(depth=3, num_train=1000, batch_size=100, steps_per_stage=50, noise_multiplier=1.5,
                        max_degree=16)
    by_kind = {type(e): e for e in led.events}
    sgd, nap = by_kind[PoissonGaussian], by_kind[Gaussian]
    assert sgd.rate == pytest.approx(0.1) and sgd.count == 4 * 50 and sgd.noise_multiplier == 1.5
    assert nap.count == 3 and nap.sensitivity == pytest.approx(4.0) and nap.sigma == pytest.approx(6.0)
    assert led.unit == "node"
    ref = P.progap_node(3, 1000, 100, 50, 1.5, 16, sigma_ap=6.0)
    assert led.epsilon(1e-5) == pytest.approx(ref.epsilon(1e-5))


def test_the_sampling_rate_uses_the_training_population():
    """Theorem 4.2 writes B/N over all nodes; only training nodes are ever sampled, so the sound rate is
    B / #train, which costs more privacy when the training set is smaller than the graph."""
    sound = P.progap_node(2, num_train=750, batch_size=64, steps_per_stage=100, noise_multiplier=1.0, max_degree=10)
    as_written = P.progap_node(2, 750, 64, 100, 1.0, 10, convention="paper", num_nodes=1000)
    assert sound.epsilon(1e-4) > as_written.epsilon(1e-4)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 200), st.integers(0, 200), st.floats(0.5, 5), st.integers(1, 200))
def test_gap_node_ledger_composes_encoder_classifier_and_naps(K, t_enc, t_cls, z, D):
    led = P.gap_node(K, 2000, 100, t_enc, t_cls, z, D)
    by_kind = {type(e): e for e in led.events}
    assert by_kind[PoissonGaussian].count == t_enc + t_cls
    assert by_kind[PoissonGaussian].rate == pytest.approx(0.05)
    assert by_kind[Gaussian].count == K
    assert by_kind[Gaussian].noise_multiplier == pytest.approx(z)  # shared multiplier: sigma_AP = z sqrt(D)
    # more noise, less epsilon
    assert P.gap_node(K, 2000, 100, t_enc, t_cls, 1.3 * z, D).epsilon(1e-5) < led.epsilon(1e-5)


def test_node_calibration_meets_the_target():
    make = lambda z: P.progap_node(2, 5000, 256, 200, z, 50)  # noqa: E731
    z = calibrate(make, 8.0, 1e-5)
    assert make(z).epsilon(1e-5) <= 8.0 < make(z * 0.99).epsilon(1e-5)


@pytest.mark.parametrize("eps,share", [(0.25, 0.1), (1.0, 0.1), (4.0, 0.3)])
def test_edgerand_ledger_is_pure_and_at_most_the_sum(eps, share):
    led = P.edgerand(eps * (1 - share), eps * share)
    kinds = {type(e) for e in led.events}
    assert kinds == {RandomizedResponse, Laplace} and led.unit == "edge"
    # the smaller of basic composition (exactly eps) and the RDP conversion is reported
    assert led.epsilon(1e-5) <= eps * (1 + 1e-9)
    assert led.epsilon(1e-5) == pytest.approx(eps, rel=0.05)


NODE_FAMILIES = {
    "gap-node": lambda **kw: P.gap_node(2, 1000, 100, 20, 30, 1.5, 16, **kw),
    "progap-node": lambda **kw: P.progap_node(2, 1000, 100, 20, 1.5, 16, **kw),
}


@pytest.mark.parametrize("family", sorted(NODE_FAMILIES))
def test_node_families_record_their_relation(family):
    """The same events (the same epsilon) under both relations; what differs is the claim: input-graph names the
    declared bound D public, cut-off-graph says what its epsilon is relative to. A recipe without the parameter
    (recorded before it) rebuilds as the papers' relation it ran."""
    make = NODE_FAMILIES[family]
    sound, paper, old = make(relation="input-graph"), make(relation="cut-off-graph"), make()
    assert sound.events == paper.events and sound.epsilon(1e-5) == pytest.approx(paper.epsilon(1e-5))
    assert sound.public_facts["max_degree"] == 16 and "max_degree" not in paper.public_facts
    assert not sound.notes
    (note,) = paper.notes
    assert "relative to the graph after the random out-degree cut-off to D=16" in note
    assert "not node-level DP for the input graph when the cut-off binds" in note
    assert old.notes == paper.notes and old.recipe.kwargs()["relation"] == "cut-off-graph"
    for led in (sound, paper):
        rebuilt = P.rebuild(led.recipe)
        assert rebuilt.events == led.events and rebuilt.conventions == led.conventions and rebuilt.notes == led.notes
    nap = next(e for e in sound.events if isinstance(e, Gaussian))
    assert nap.sensitivity == pytest.approx(4.0) and nap.unit == "node"  # sqrt(D), D = 16
    with pytest.raises(LedgerError, match="relation"):
        make(relation="in-edges")
