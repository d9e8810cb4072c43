"""The registry of verify's checks (audits/checks/): every registered check (built-in or a plugin's) declares the
privacy units and the mechanisms it applies to, and the battery obeys the declarations; the mechanism check maps
ledger events to mechanism-level audits and fails when a shared mechanism is broken."""

import itertools

import pytest

from audits.checks import ANY, REGISTRY, Check, plan, register, unregister
from audits.checks.registry import EVENT_KINDS, GROUPS, UNITS
from audits.verify import CHECKS, SKIPPED, VIOLATION, VerifyConfig, verify
from bench.datasets import load_dataset
from bench.splits import make_task
from methods import Budget, get_method
from methods.base import ConfigError

CFG = dict(quick=True, canaries=60, inference_tries=2)
HELD = [set(), *({k} for k in sorted(EVENT_KINDS)), set(EVENT_KINDS)]


@pytest.fixture(scope="module")
def task():
    return make_task(load_dataset("csbm:nodes=300,classes=3,features=16,degree=4"), "random-75-10-15", 0)


def test_every_registered_check_declares_its_units_and_mechanisms():
    assert set(CHECKS) <= set(REGISTRY) and "mechanism" in CHECKS
    for name, spec in REGISTRY.items():
        assert spec.name == name and callable(spec.run), name
        assert spec.units and spec.units <= UNITS, name
        assert spec.kinds == ANY or (spec.kinds and spec.kinds <= EVENT_KINDS), name
        assert spec.group in GROUPS, name
    # one module per built-in check (the shared fits live in the private helper modules)
    modules = [REGISTRY[n].run.__module__ for n in CHECKS]
    assert len(set(modules)) == len(modules) and all(m.startswith("audits.checks.") for m in modules)


def test_a_check_never_runs_for_units_or_mechanisms_it_does_not_declare():
    """Registry-wide: whatever the ledger holds, a check declared for some units is not run for the others, and a
    check declared for some mechanisms is reported SKIPPED for a ledger holding none of them."""
    for spec, unit, held in itertools.product(REGISTRY.values(), sorted(UNITS), HELD):
        p = plan(spec, unit, held)
        if unit not in spec.units:
            assert p != "run", (spec.name, unit)
        if spec.kinds != ANY and not spec.kinds & held:
            assert p == "skip", (spec.name, held)
        if unit in spec.units and (spec.kinds == ANY or spec.kinds & held):
            assert p == "run", (spec.name, unit, held)


def test_registration_refuses_a_check_that_does_not_say_where_it_applies():
    with pytest.raises(ConfigError):
        register("x-nowhere", units=(), kinds=ANY, statistical=False, group="structural")
    with pytest.raises(ConfigError):
        register("x-bad-kind", units={"node"}, kinds={"nonsense"}, statistical=False, group="structural")
    with pytest.raises(TypeError):
        register("x-undeclared", statistical=False, group="structural")  # units and kinds are required


def test_the_battery_obeys_a_plugin_checks_declarations(task):
    calls = []

    def probe(name):
        def run(b, alpha):
            calls.append((name, b.unit, sorted(b.mechanisms())))
            return Check(name, b.seed, "PASS", "-", "-")
        return run

    register("x-node-only", units={"node"}, kinds=ANY, statistical=True, group="white-box")(probe("x-node-only"))
    register("x-rr-only", units={"edge", "node"}, kinds={"randomized_response"}, statistical=False,
             group="structural")(probe("x-rr-only"))
    try:
        budget = Budget(1.0, 1e-4)
        edge = verify(lambda: get_method("edgerand")(epochs=2), task, budget,
                      VerifyConfig(checks=("x-node-only", "x-rr-only"), **CFG))
        assert "x-node-only" not in {c.name for c in edge.checks}  # other unit: left out
        assert {c.name: c.verdict for c in edge.checks}["x-rr-only"] == "PASS"  # its mechanism ran
        assert calls == [("x-rr-only", "edge", ["laplace", "randomized_response"])]
        node = verify(lambda: get_method("dp-mlp")(epochs=2, hidden=8), task, budget,
                      VerifyConfig(checks=("x-node-only", "x-rr-only"), **CFG))
        got = {c.name: c for c in node.checks}
        assert got["x-rr-only"].verdict == SKIPPED and "randomized_response" in got["x-rr-only"].detail
        assert got["x-node-only"].verdict == "PASS" and [c[0] for c in calls[1:]] == ["x-node-only"]
    finally:
        unregister("x-node-only")
        unregister("x-rr-only")
    assert "x-node-only" not in REGISTRY


def test_ledger_events_map_to_the_mechanism_audits_of_their_kind_and_unit():
    from audits.checks.mechanism import audited
    from audits.mechanism import AUDITED_KINDS, MECHANISMS, mechanism_for
    from methods.privacy import PrivacyLedger
    from methods.privacy.events import Laplace, PoissonLaplace, RandomizedResponse

    for name, mech in MECHANISMS.items():  # every mechanism's own event maps back to it
        assert mechanism_for(mech.event(1.0)) == name
    assert AUDITED_KINDS == REGISTRY["mechanism"].kinds
    # EdgeRand: the randomized response and its Laplace edge count (edge unit: not a PATE vote) are audited
    led = PrivacyLedger().add(RandomizedResponse(epsilon=1.0, unit="edge")).add(
        Laplace(scale=2.0, sensitivity=1.0, unit="edge"))
    assert audited(led) == ["edgerand-count", "edgerand-rr"]
    assert audited(PrivacyLedger().add(Laplace(scale=2.0, sensitivity=1.0, unit="node"))) == ["pate-votes"]
    assert audited(PrivacyLedger().add(PoissonLaplace(rate=0.5, scale=2.0, unit="node"))) == ["privgnn-posterior"]


def test_the_mechanism_check_passes_shipped_mechanisms_and_fails_a_broken_one(task, monkeypatch):
    import methods.gap.nap as nap_mod

    def run():
        rep = verify(lambda: get_method("gap-edge")(epochs=2, encoder_epochs=2), task, Budget(1.0, 1e-4),
                     VerifyConfig(checks=("mechanism",), **CFG))
        return {c.name: c for c in rep.checks}["mechanism"]

    good = run()
    assert good.verdict == "PASS" and good.data["mechanisms"] == ["nap-edge"]
    assert good.data["confidence"] >= 0.999 and 0 < good.alpha <= 1e-3
    real = nap_mod.nap
    monkeypatch.setattr(nap_mod, "nap", lambda adj, x, sigma, gen: real(adj, x, sigma / 2, gen))  # half the noise
    bad = run()
    assert bad.verdict == VIOLATION and "nap-edge" in bad.detail
