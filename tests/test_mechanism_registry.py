"""The contract of every registered mechanism kind (audits.mechanisms), plugins' included: it declares its pair,
whether that pair is proven to dominate the event (with the reference, or why not and a sound bound as the claim),
its claim, a trial runner, and mutants that its audit flags at a few thousand trials. A kind declared a known
violation (a paper's relation audited on data its proof does not cover) is pinned to VIOLATION: a PASS fails."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from audits.mechanism import audit_mechanism
from audits.mechanisms import MECHANISMS, Mechanism, Mutation, known_violations, mechanism_for, register, unregister
from audits.mechanisms.families import GaussianCurve, GaussianFamily
from methods.base import ConfigError
from methods.privacy.events import Gaussian

#: trials per world and half for the mutants: every built-in mutant is flagged at this count (strength bound
#: 1.25-1.96x the claim's with seed 4) and the slowest kind takes about 10 s on a shared 2-core machine
MUTANT_TRIALS = 5_000
MUTANTS = [(name, m) for name, mech in MECHANISMS.items() for m in mech.mutants]


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_every_mechanism_declares_its_pair_domination_claim_runner_and_mutants(name):
    mech = MECHANISMS[name]
    assert mech.problems() == []
    assert isinstance(mech.dominates, bool) and mech.reference.strip() and mech.claims.strip() and mech.pair
    assert callable(mech.sample) and callable(mech.event) and mech.mutants
    if mech.dominates:  # the pair's own exact epsilon is the claim
        assert mech.bound is None and "not proven" not in mech.pair
    else:  # the claim is a sound bound, and the pair is labelled as only realisable
        assert mech.bound is not None and "not proven" in mech.reference and "not proven" in mech.pair
    s = mech.strength_for_epsilon(1.0, 1e-5)
    assert mech.claim(s, 1e-5) == pytest.approx(1.0, rel=1e-6)
    scores = mech.sample(s, True, 200, _streams(), Mutation())
    assert isinstance(scores, np.ndarray) and scores.shape == (200,) and np.isfinite(scores).all()
    assert mechanism_for(mech.event(s)) is not None  # its event is matched to a mechanism-level audit
    if mech.variant_of:  # a variant audits its base kind's event; ledger events map to the base, never to it
        assert mechanism_for(mech.event(s)) == mech.variant_of != name
    else:
        assert mechanism_for(mech.event(s)) == name
    if mech.known_violation:  # its claim is the ledger's curve, which its pairs break: never declared dominated
        assert not mech.dominates and mech.expected_verdict == "VIOLATION"
        assert mech.true_epsilon(s, Mutation(), 1e-5) > 1.0


#: trials per world and half for the pinned verdicts of the known violations (each far above its claim)
PINNED_TRIALS = 3_000
KNOWN = sorted(known_violations())


def test_the_papers_relations_on_input_graphs_are_known_violations():
    assert {"nap-node-cutoff-input", "dpgnn-in-edges-input"} <= set(KNOWN)
    for name in KNOWN:  # each has a shipped twin on the same event that is expected to pass
        twins = [n for n, m in MECHANISMS.items() if m.variant_of == MECHANISMS[name].variant_of
                 and not m.known_violation]
        assert twins, name


@pytest.mark.parametrize("name", KNOWN)
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_a_known_violation_is_pinned_to_violation(name, epsilon):
    """The shipped code of a known violation must be flagged at claims 1 and 4: a PASS would mean the audit lost
    the gadget that breaks the paper's relation."""
    r = audit_mechanism(name, epsilon, trials=PINNED_TRIALS, seed=2)
    assert r.verdict == MECHANISMS[name].expected_verdict == "VIOLATION", r
    assert r.epsilon_lb_cp > epsilon and r.epsilon_lb_fdp > epsilon and not r.worst_case


def _streams():
    from methods.streams import RunStreams

    return RunStreams(0).child("contract")


@pytest.mark.parametrize("name,mutation", MUTANTS, ids=lambda x: x if isinstance(x, str) else x.label())
def test_every_declared_mutant_is_flagged(name, mutation):
    """The mutant runs the code with less noise, a larger sensitivity or rate than its event states, against the
    unchanged claim: the audit must rule the claim out."""
    r = audit_mechanism(name, 1.0, trials=min(MUTANT_TRIALS, MECHANISMS[name].trials), seed=4, mutation=mutation)
    assert r.verdict == "VIOLATION", r
    assert r.strength_lb > r.strength_claimed


def _toy_sample(mu, world_in, trials, streams, m):
    """A Gaussian query moved by its sensitivity 1 in one world: N(0, 1) against N(mu, 1) (noise 1 / mu)."""
    return streams.numpy("noise").normal(size=trials) / m.noise + (mu if world_in else 0.0)


def _toy(**changes) -> Mechanism:
    base = Mechanism(
        "toy-gaussian", GaussianFamily(), lambda mu: Gaussian(sensitivity=1.0, sigma=1.0 / mu, unit="node"),
        _toy_sample, ("noise",), "a Gaussian query of sensitivity 1", "tests", trials=1_000,
        dominates=True, reference="Balle & Wang 2018, Theorem 8: the pair at distance exactly the sensitivity",
        claims="the Gaussian's exact epsilon", mutants=(Mutation(noise=2.0),))
    return dataclasses.replace(base, **changes)


def test_a_new_mechanism_is_one_registration():
    mech = register(_toy())
    try:
        assert MECHANISMS["toy-gaussian"] is mech and list(MECHANISMS)[-1] == "toy-gaussian"
        ok = audit_mechanism("toy-gaussian", 1.0, trials=MUTANT_TRIALS, seed=1)
        bad = audit_mechanism("toy-gaussian", 1.0, trials=MUTANT_TRIALS, seed=1, mutation=mech.mutants[0])
        assert ok.verdict == "ok" and ok.worst_case and bad.verdict == "VIOLATION"
        assert mechanism_for(mech.event(1.0)) == "nap-node"  # the first registered of an event kind keeps it
        with pytest.raises(ConfigError, match="already registered"):
            register(_toy(summary="another"))
    finally:
        unregister("toy-gaussian")
    assert "toy-gaussian" not in MECHANISMS


class _Bound:
    def delta(self, s, eps):
        return 0.0

    def epsilon(self, s, delta):
        return s


def test_a_variant_is_never_the_ledgers_match_and_must_name_its_base():
    mech = register(_toy(variant_of="nap-node"))
    try:
        assert mechanism_for(mech.event(1.0)) == "nap-node"
    finally:
        unregister("toy-gaussian")
    with pytest.raises(ConfigError, match="not a registered kind"):
        register(_toy(variant_of="no-such-kind"))
    with pytest.raises(ConfigError, match="is not that of"):
        register(_toy(variant_of="nap-edge"))  # an edge-level Gaussian: another event
    assert "toy-gaussian" not in MECHANISMS


def test_a_known_violation_that_passes_fails_its_pin():
    """The toy Gaussian passes its own claim: declared a known violation, its shipped verdict (ok) contradicts
    the pin."""
    mech = register(_toy(dominates=False, bound=GaussianCurve(), pair="realisable, not proven worst case",
                         reference="not proven", known_violation="a declared violation that is not one"))
    try:
        r = audit_mechanism("toy-gaussian", 1.0, trials=MUTANT_TRIALS, seed=1)
        assert mech.expected_verdict == "VIOLATION" and r.verdict == "ok"
        assert "toy-gaussian" in known_violations()
    finally:
        unregister("toy-gaussian")


@pytest.mark.parametrize("changes,message", [
    ({"dominates": None}, "dominates must be declared"),
    ({"known_violation": "a reason"}, "cannot be declared to dominate"),
    ({"variant_of": "toy-gaussian"}, "variant_of names another kind"),
    ({"dominates": False}, "needs the event's sound bound"),
    ({"bound": _Bound()}, "takes no separate sound bound"),
    ({"reference": " "}, "reference"),
    ({"claims": ""}, "claims"),
    ({"mutants": ()}, "at least one broken variant"),
    ({"mutants": (Mutation(),)}, "not a mutation"),
    ({"mutants": (Mutation(rate=2.0),)}, "outside mutations"),
], ids=lambda x: x if isinstance(x, str) else "-".join(x))
def test_an_incomplete_declaration_is_refused(changes, message):
    with pytest.raises(ConfigError, match=message):
        register(_toy(**changes))
    assert "toy-gaussian" not in MECHANISMS

