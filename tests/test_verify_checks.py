"""The registry of verify's checks (audits/checks/): every registered check (built-in or a plugin's) declares the
privacy units and the mechanisms it applies to, and the battery obeys the declarations; the mechanism check maps
ledger events to mechanism-level audits and fails when a shared mechanism is broken."""

import itertools

import pytest

from audits.checks import ANY, REGISTRY, Battery, Check, plan, register, unregister
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
        assert mechanism_for(mech.event(1.0)) == (mech.variant_of or name)
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


# ---- every SKIPPED row says why; a check that applies and did not run is INCONCLUSIVE, not PASS ---------------

class _Observed(Battery):
    """A battery whose probe fit is replaced by what it saw: the ledger's event kinds and the observed ones."""

    def __init__(self, ledger: set[str], seen: set[str]) -> None:
        self.seed, self._ledger, self._seen = 0, set(ledger), set(seen)

    def ledger_kinds(self):
        return set(self._ledger)

    def unobserved(self):
        from audits.checks.base import OBSERVED_AS

        return {k for k in self._ledger if OBSERVED_AS.get(k, k) not in self._seen}


def _observations():
    """Ledgers of one or two event kinds, each with every subset of its kinds observed."""
    from audits.checks.base import OBSERVED_AS

    kinds = sorted(EVENT_KINDS)
    for ledger in [set()] + [{k} for k in kinds] + [set(p) for p in itertools.combinations(kinds, 2)]:
        obs = sorted({OBSERVED_AS[k] for k in ledger})
        for r in range(len(obs) + 1):
            for seen in itertools.combinations(obs, r):
                yield ledger, set(seen)


def test_every_skipped_check_says_why_for_every_registered_method():
    """Registry-wide (every registered check and method, plugins included): wherever the battery reports a check
    SKIPPED without running it, the row says why, and where the check applies (the ledger accounts a mechanism
    it covers that the suite did not see run) it also says what would make it run."""
    from audits.verify import _run_or_skip
    from bench.cli import load_plugin
    from methods import available_methods
    from tests.conftest import REPO

    for plugin in ("example_plugin.py", "mutants.py", "hidden_bugs.py"):
        load_plugin(str(REPO / "tests" / "plugins" / plugin))
    units = {cls.privacy_unit for cls in available_methods().values()} - {"none"}
    assert units == set(UNITS)
    seen_not_run = 0
    for spec, unit, (ledger, seen) in itertools.product(REGISTRY.values(), sorted(units), _observations()):
        b = _Observed(ledger, seen)
        if plan(spec, unit, b.mechanisms()) == "run" or (spec.kinds == ANY and unit in spec.units):
            continue  # it runs (what it reports is its own; Check refuses a SKIPPED row without a reason)
        c = _run_or_skip(spec, b, unit, 0.01)
        if c is None:
            assert unit not in spec.units and not spec.other_units
            continue
        assert c.verdict == SKIPPED and c.detail.strip(), (spec.name, unit, ledger, seen)
        applies = spec.kinds != ANY and unit in spec.units and bool(spec.kinds & b.unobserved())
        assert bool(c.remedy) == applies, (spec.name, unit, ledger, seen, c)
        seen_not_run += applies
    assert seen_not_run  # the not-run path was exercised


def test_no_check_passes_on_a_mechanism_it_could_not_see(monkeypatch):
    """Registry-wide, whatever a check itself returns: wherever a white-box or mechanism check runs while the
    ledger accounts a mechanism it covers that the suite did not see run, its PASS or SKIPPED row carries what
    would make it run (so the headline is INCONCLUSIVE); only a VIOLATION stands as it is. Every registered
    check is replaced by one that answers PASS, SKIPPED (not applicable) or VIOLATION without looking."""
    from audits.verify import _run_or_skip

    answers = {"PASS": lambda spec, b: Check(spec.name, b.seed, "PASS", "-", "-"),
               "SKIPPED": lambda spec, b: Check(spec.name, b.seed, SKIPPED, "-", "-", "judged not applicable"),
               "VIOLATION": lambda spec, b: Check(spec.name, b.seed, VIOLATION, "-", "-", "found")}
    checked = 0
    for spec, unit, (ledger, seen), (said, answer) in itertools.product(
            REGISTRY.values(), sorted(UNITS), _observations(), answers.items()):
        if spec.group not in ("white-box", "mechanism"):
            continue
        b = _Observed(ledger, seen)
        if plan(spec, unit, None if spec.kinds == ANY else b.mechanisms()) != "run":
            continue
        stub = type(spec)(**{**spec.__dict__, "run": lambda bat, alpha, spec=spec, answer=answer: answer(spec, bat)})
        c = _run_or_skip(stub, b, unit, 0.01)
        covers = b.unobserved() if spec.kinds == ANY else b.unobserved() & spec.kinds
        if said == "VIOLATION":
            assert c.verdict == VIOLATION and not c.incomplete
        elif covers:
            assert c.incomplete and c.remedy, (spec.name, unit, ledger, seen, said, c)
            checked += 1
        else:
            assert c.verdict == said and not c.incomplete
    assert checked  # the unseen path was exercised for the checks that run


@pytest.mark.parametrize("name", sorted(n for n, c in __import__("methods").available_methods().items()
                                        if c.__module__.startswith("methods.") and c.privacy_unit != "none"))
def test_every_shipped_private_method_runs_every_ledger_mechanism_where_the_battery_sees_it(name, small_task):
    """Each shipped private method's DP-SGD steps go through methods.dpsgd and its other noise is reported to
    methods.mechanisms, so the white-box checks see every mechanism its ledger accounts and the battery can say
    PASS (a method that hides one is INCONCLUSIVE)."""
    cls = get_method(name)
    task = small_task
    if task.setting not in cls.settings:
        task = make_task(load_dataset("csbm:nodes=200,classes=3,features=8,degree=6"), "private-public", 0)
    b = Battery(lambda: cls(**cls.smoke_config), task, Budget(4.0, 1e-4), VerifyConfig(), 0, 0.01)
    assert b.ledger_kinds() and not b.unobserved(), b.unobserved_reason()
