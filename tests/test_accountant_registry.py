"""One accountant registry: what the conformance suite tests is what a run can account with.

A registered accountant (an adapter of another library, a plugin's) accounts a run (``--accountant NAME``) only once
the conformance suite admits it on the whole corpus: its epsilon is then the run's reported one and
its calibration's, recorded with what the admission found. An unsound one is refused before any run opens.
"""

import json
import math

import pytest

from bench.cli import load_plugin, main
from methods.privacy.conformance.check import admit
from bench.plan import RunSpec, plan_run
from bench.records import spent_epsilon
from bench.run import run_one
from bench.testing import parametrize_with_accountants
from methods.errors import BenchError, ConfigError
from methods.privacy.events import LedgerError
from methods.privacy import PrivacyLedger
from methods.privacy import accountant as A
from methods.privacy.events import Gaussian, PoissonGaussian
from methods.privacy.registry import get_accountant, register_accountant, unregister_accountant
from tests.conftest import REPO

PLUGIN = str(REPO / "tests" / "plugins" / "accountant_plugin.py")
load_plugin(PLUGIN)
DATASET = "csbm:nodes=200,classes=3,features=8,degree=6"


@pytest.fixture(autouse=True)
def _plugin_registered():
    """The example plugin's accountants, registered again if another test removed them."""
    import sys

    from methods.privacy.registry import available_accountants

    plugin = next(m for n, m in sys.modules.items() if n.startswith("bench_plugin_") and hasattr(m, "ShavedRdp"))
    for name, cls in (("basic-composition", plugin.BasicComposition), ("rdp-x0.9", plugin.ShavedRdp)):
        if name not in available_accountants():
            register_accountant(name)(cls)


def _run(accountant: str | None):
    spec = RunSpec(methods=["dp-mlp"], dataset=DATASET, split="random-75-10-15", epsilon=2.0, delta=1e-4,
                   overrides=["epochs=3", "hidden=8"], experiment="accountant-registry", progress=False,
                   accountant=accountant)
    p = plan_run(spec)
    return p, run_one(p, p.methods[0], 0)


def test_a_registered_accountant_calibrates_and_reports_a_run():
    plan, r = _run("opacus-rdp")
    assert plan.accountant_note.startswith("sound on the ") and "conformance cases it supports" in plan.accountant_note
    from mlflow.tracking import MlflowClient

    from bench import tracking

    run = MlflowClient().get_run(r.run_id)
    assert run.data.params["accountant"] == "opacus-rdp"
    assert run.data.params["accountant_conformance"] == plan.accountant_note
    ledger = PrivacyLedger.from_dict(json.loads(tracking.client_download_text(r.run_id, "ledger.json")))
    theirs = get_accountant("opacus-rdp").epsilon(list(ledger.events), 1e-4)
    assert r.epsilon == pytest.approx(theirs, rel=1e-12) and r.epsilon <= 2.0
    # the calibration used it too: the suite's tight accountant finds the same noise spends less
    _, ours = _run(None)
    assert r.info["noise_multiplier"] > ours.info["noise_multiplier"]
    assert ledger.epsilon(1e-4, "tight") < r.epsilon
    # a record's published figure is recomputed with the accountant it names
    record = {"params": {"accountant": "opacus-rdp", "delta": 1e-4}, "ledger": ledger.to_dict()}
    assert spent_epsilon(record) == pytest.approx(r.epsilon, rel=1e-12)


def test_an_unsound_accountant_is_refused_before_any_run_opens(capsys):
    with pytest.raises(BenchError, match=r"rdp-x0.9 fails the conformance suite on \d+ of \d+ cases"):
        admit("rdp-x0.9")
    code = main(["run", "-m", "dp-mlp", "-d", DATASET, "-e", "2", "--no-track", "--accountant", "rdp-x0.9"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: accountant rdp-x0.9 fails the conformance suite")
    assert "test acc" not in err


def test_unknown_and_reserved_names(capsys):
    with pytest.raises(ConfigError, match="unknown accountant 'nope'; known: tight, rdp"):
        admit("nope")
    assert main(["account", "dpsgd", "--sampling", "poisson", "--sampling-rate", "0.01", "--steps", "10",
                 "--noise-multiplier", "1", "--delta", "1e-5", "--accountant", "nope"]) == 2
    with pytest.raises(LedgerError, match="unknown accountant 'nope'"):
        A.parse_accountant("nope")
    for name in ("tight", "rdp/standard", "pld"):
        with pytest.raises(ConfigError, match="one of the suite's run accountants"):
            register_accountant(name)(type("X", (), {"description": "x", "version": lambda s: "1",
                                                     "epsilon": lambda s, e, d: 0.0}))
        assert admit(name) == ""


def test_bench_account_uses_the_registered_accountant(capsys):
    argv = ["account", "dpsgd", "--sampling", "poisson", "--sampling-rate", "0.01", "--steps", "1000",
            "--noise-multiplier", "1", "--delta", "1e-5", "--json"]
    assert main(argv + ["--accountant", "opacus-rdp"]) == 0
    got = json.loads(capsys.readouterr().out)
    theirs = get_accountant("opacus-rdp").epsilon([PoissonGaussian(rate=0.01, noise_multiplier=1.0, count=1000)],
                                                  1e-5)
    assert got["accountant"] == "opacus-rdp" and got["epsilon"] == pytest.approx(theirs, rel=1e-12)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"] < got["epsilon"]
    # calibration searches the named accountant: the noise it returns meets the target under it
    calibrate = ["account", "dpsgd", "--sampling", "poisson", "--sampling-rate", "0.01", "--steps", "1000",
                 "--epsilon", "2", "--delta", "1e-5", "--json", "--accountant", "opacus-rdp"]
    assert main(calibrate) == 0
    z = json.loads(capsys.readouterr().out)["noise_multiplier"]
    spent = get_accountant("opacus-rdp").epsilon([PoissonGaussian(rate=0.01, noise_multiplier=z, count=1000)], 1e-5)
    assert 2 * (1 - 2e-3) < spent <= 2
    # an accountant that cannot account a ledger says so
    assert main(argv + ["--accountant", "basic-composition"]) == 2
    assert "basic-composition cannot account this ledger" in capsys.readouterr().err


def test_a_registered_accountant_returns_an_epsilon():
    @register_accountant("test-nan-accountant")
    class Broken:
        description = "returns nan"

        def version(self):
            return "0"

        def epsilon(self, events, delta):
            return math.nan

    try:
        with pytest.raises(LedgerError, match="returned nan, not an epsilon"):
            A.epsilon([Gaussian(sensitivity=1.0, sigma=1.0)], 1e-5, "test-nan-accountant")
    finally:
        unregister_accountant("test-nan-accountant")


@parametrize_with_accountants(["opacus-rdp", "basic-composition"])
def test_accountant_contract(accountant, check):
    """The importable accountant contract (bench.testing), as a plugin author's own test runs it."""
    check(accountant)


def test_the_accountant_contract_fails_an_unsound_accountant():
    from bench.testing import check_accountant

    with pytest.raises(AssertionError, match="rdp-x0.9 fails the conformance suite"):
        check_accountant("rdp-x0.9")


def test_a_sweep_audits_and_verifications_account_with_the_named_accountant():
    """A sweep config's ``accountant`` reaches every cell (and its identity); an audit or a verification with one
    calibrates its target and states its claim with it, and records it; an unsound one is refused on reading."""
    from bench import api, tracking
    from bench.sweep import SweepError, build_config

    raw = {"experiment": "registry-sweep", "datasets": [DATASET], "splits": ["random-75-10-15"], "seeds": [0],
           "epsilons": [2.0], "delta": 1e-4, "set": {"epochs": 3, "hidden": 8}, "methods": ["dp-mlp"]}
    plain, named = build_config(raw), build_config({**raw, "accountant": "opacus-rdp"})
    assert plain.cells[0].cell_id != named.cells[0].cell_id and named.cells[0].accountant == "opacus-rdp"
    assert plain.cells[0].cell_id == build_config(raw).cells[0].cell_id  # no accountant: the identity as before
    with pytest.raises(SweepError, match="rdp-x0.9 fails the conformance suite"):
        build_config({**raw, "accountant": "rdp-x0.9"})
    summary = api.sweep(named, progress=False)
    assert [r["status"] for r in summary["results"]] == ["finished"], summary
    (run,) = [r for r in tracking.search_runs("registry-sweep") if not r.data.tags.get("mlflow.parentRunId")]
    assert run.data.params["accountant"] == "opacus-rdp" and "accountant_conformance" in run.data.params
    # an audit's and a verification's fits calibrate with it: it is asked while they run (admitted beforehand)
    from methods.privacy.conformance.adapters.opacus import OpacusRdp

    calls = []

    @register_accountant("test-counting-opacus-rdp")
    class Counting(OpacusRdp):
        def epsilon(self, events, delta):
            calls.append(1)
            return super().epsilon(events, delta)

    try:
        admit("test-counting-opacus-rdp")
        before = len(calls)
        out = api.audit("dp-mlp", DATASET, split="random-75-10-15", epsilon=2.0, delta=1e-4, canaries=20,
                        overrides=["epochs=2", "hidden=8"], experiment="registry-audit",
                        accountant="test-counting-opacus-rdp")
        params = tracking.client().get_run(out.run_id).data.params
        assert params["accountant"] == "test-counting-opacus-rdp" and "accountant_conformance" in params
        assert 0 < out.result.claimed_epsilon <= 2.0 and len(calls) > before
        before = len(calls)
        out = api.verify("dp-mlp", DATASET, split="random-75-10-15", epsilon=2.0, delta=1e-4, quick=True,
                         checks=["epsilon-accounted"], overrides=["epochs=2", "hidden=8"],
                         experiment="registry-verify", accountant="test-counting-opacus-rdp")
        verdicts = {c.name: c.verdict for c in out.report.checks}
        assert verdicts["epsilon-accounted"] == "PASS", verdicts  # the reported epsilon is the ledger's under it
        assert len(calls) > before
    finally:
        unregister_accountant("test-counting-opacus-rdp")


def test_the_built_in_adapters_are_the_modules_of_their_folder(tmp_path, monkeypatch):
    """The folder is the list: each built-in adapter comes from a module of ``methods/privacy/conformance/adapters/``
    that registers on import, listed in the modules' declared order (ours, dp-accounting, Opacus); a new library's
    adapters are one more module, found with no other edit, and an accountant without an order follows them."""
    import sys

    from methods.privacy.conformance import adapters
    from methods.privacy.registry import available_accountants
    from methods.registry import discover, registering_modules

    mods = registering_modules(adapters.__name__, adapters.__path__, "register_accountant")
    assert sorted(mods) == [f"{adapters.__name__}.{m}" for m in ("dp_accounting", "opacus", "ours")]
    builtins = {n: c for n, c in available_accountants().items() if c.__module__ in mods}
    assert [c.__module__.rpartition(".")[2] for c in builtins.values()] == [
        "ours"] * 3 + ["dp_accounting"] * 2 + ["opacus"] * 3
    pkg = tmp_path / "more_adapters"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mine.py").write_text(
        "from methods.privacy.registry import register_accountant\n\n\n"
        "@register_accountant('folder-test')\nclass Mine:\n    description = 'a test'\n\n"
        "    def version(self):\n        return '0'\n\n    def epsilon(self, events, delta):\n        return 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert discover("more_adapters", [str(pkg)], "register_accountant") == ["more_adapters.mine"]
        listed = list(available_accountants())
        assert listed[-1] == "folder-test" and listed[:len(builtins)] == list(builtins)
    finally:
        unregister_accountant("folder-test")
        for m in ("more_adapters.mine", "more_adapters"):
            sys.modules.pop(m, None)
