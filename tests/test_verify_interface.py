"""What ``bench verify`` says about the interface rather than about privacy: a plugin that misses part of it gets
one ``error:`` line and exit 2 before any run opens; the documented private plugin passes as written; a
private-inference check that could not tell is not a PASS."""

from __future__ import annotations

import pytest

from audits.checks.base import PASS, SKIPPED
from audits.verify import VerifyConfig, verify
from bench.cli import load_plugin, main
from bench.datasets import load_dataset
from bench.splits import make_task
from methods import Budget, get_method
from methods.base import Fitted, InterfaceError, check_interface, interface_gaps
from tests.conftest import REPO

PRIVATE = REPO / "tests" / "plugins" / "private_plugin.py"
SMALL = "csbm:nodes=200,classes=2,features=16,degree=3"


@pytest.fixture(scope="module")
def task():
    return make_task(load_dataset(SMALL), "random-75-10-15", 0)


@pytest.fixture()
def no_release(tmp_path):
    """The private example with a fitted model that does not say what it releases (a copy of a real omission)."""
    plugin = tmp_path / "no_release.py"
    plugin.write_text(
        f"import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('private_plugin_base', {str(PRIVATE)!r})\n"
        "mod = importlib.util.module_from_spec(spec); sys.modules['private_plugin_base'] = mod\n"
        "spec.loader.exec_module(mod)\n"
        "from methods.base import Fitted, register\n\n"
        "class NoReleaseFitted(mod.LogRegFitted):\n"
        "    release = Fitted.release\n\n"
        "@register('no-release-logreg')\n"
        "class NoRelease(mod.MyDPLogReg):\n"
        "    def _fit(self, ctx):\n"
        "        f = super()._fit(ctx)\n"
        "        f.__class__ = NoReleaseFitted\n"
        "        return f\n")
    yield str(plugin)
    from methods.base import unregister

    for name in ("no-release-logreg", "my-dp-logreg"):
        unregister(name)


def test_a_plugin_without_a_release_is_an_interface_error_before_any_run(no_release, tmp_path, capsys, monkeypatch):
    """A private-inference claim without ``Fitted.release()`` was a VIOLATION (exit 3): an interface omission read as
    a privacy bug. Now: one error line naming what is missing, exit 2, and no tracking run opened."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    rc = main(["--plugin", no_release, "verify", "-m", "no-release-logreg", "-d", SMALL, "-e", "1", "--quick",
               "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith("error: no-release-logreg misses part of the method interface")
    assert "NoReleaseFitted.release() returns None" in err[0]
    assert not (tmp_path / "mlflow.db").exists() or _runs(tmp_path / "mlflow.db") == 0


def _runs(db) -> int:
    import sqlite3

    with sqlite3.connect(db) as con:
        try:
            return con.execute("select count(*) from runs").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def test_interface_gaps_name_every_missing_part():
    class Bare(Fitted):
        def predict_proba(self, nodes=None):
            return None

    method = get_method("dp-mlp")()
    bare = Bare()
    gaps = interface_gaps(method, bare)
    assert any("ledger is NoneType" in g for g in gaps)
    assert any("no info dict" in g for g in gaps) and any("no history list" in g for g in gaps)
    assert interface_gaps(method, object()) == ["fit returns object, not a methods.base.Fitted"]
    with pytest.raises(InterfaceError, match="misses part of the method interface"):
        check_interface(method, bare)


def test_the_documented_private_plugin_passes_as_written(task):
    """The plugin docs' private example (tests/plugins/private_plugin.py, included whole in docs/plugins.md) gets
    PASS from every check, white-box ones included (its steps run through the suite's DP optimiser)."""
    load_plugin(str(PRIVATE))
    cls = get_method("my-dp-logreg")
    rep = verify(lambda: cls(epochs=5), task, Budget(1.0, 1e-3), VerifyConfig(quick=True, canaries=60))
    assert rep.verdict == PASS, rep.headline()
    ran = {c.name for c in rep.checks if c.verdict == PASS}
    assert {"ledger-counts", "noise-calibration", "occurrences", "gradient-canaries", "private-inference"} <= ran
    assert "--8<-- \"tests/plugins/private_plugin.py\"" in (REPO / "docs" / "plugins.md").read_text()


def test_a_private_inference_check_that_could_not_tell_is_not_a_pass(task, monkeypatch):
    """0 of the changes tried conclusive: the check did not run (SKIPPED with a remedy, headline INCONCLUSIVE),
    where it printed PASS at "0/3 conclusive"; fewer than asked: it says partial."""
    import audits.structural as S

    load_plugin(str(PRIVATE))
    cls = get_method("my-dp-logreg")
    real = S._served_moves

    def none_conclusive(out, *a, **k):
        out.tried += 3  # every change reached the release: nothing conclusive

    monkeypatch.setattr(S, "_served_moves", none_conclusive)
    cfg = VerifyConfig(quick=True, canaries=60, checks=("private-inference",))
    rep = verify(lambda: cls(epochs=2), task, Budget(1.0, 1e-3), cfg)
    (c,) = [c for c in rep.checks if c.name == "private-inference"]
    assert c.verdict == SKIPPED and c.remedy and "--inference-tries" in c.remedy
    assert rep.verdict == "INCONCLUSIVE" and "private-inference" in rep.headline()

    def one_conclusive(out, *a, **k):
        out.tried, out.conclusive = 3, 1

    monkeypatch.setattr(S, "_served_moves", one_conclusive)
    rep = verify(lambda: cls(epochs=2), task, Budget(1.0, 1e-3),
                 VerifyConfig(quick=False, canaries=60, checks=("private-inference",)))
    (c,) = [c for c in rep.checks if c.name == "private-inference"]
    assert c.verdict == PASS and c.detail.startswith("partial: 1 conclusive change(s) of the 2 asked for")
    monkeypatch.setattr(S, "_served_moves", real)
