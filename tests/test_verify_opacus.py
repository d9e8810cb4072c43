"""Opacus as a white-box target: a method trained through ``PrivacyEngine.make_private`` gets every white-box check
with no line for the suite (methods.opacus_bridge): a correct one passes, a mis-sampled or under-noised one is
flagged by the check meant for it."""

from __future__ import annotations

import pytest

from audits.verify import PASS, VIOLATION, VerifyConfig, verify
from bench.cli import load_plugin
from bench.datasets import load_dataset
from bench.splits import make_task
from methods import Budget, get_method
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "opacus_plugin.py"))
WHITE_BOX = ("ledger-counts", "noise-calibration", "occurrences", "gradient-canaries")


@pytest.fixture(scope="module")
def task():
    return make_task(load_dataset("csbm:nodes=600,classes=3,features=32,degree=4"), "random-75-10-15", 0)


def _verify(name, task, seed=0):
    cls = get_method(name)
    cfg = VerifyConfig(seeds=(seed,), quick=True, canaries=60, inference_tries=2)
    return verify(lambda: cls(epochs=8), task, Budget(1.0, 1e-4), cfg)


@pytest.mark.parametrize("name", ["opacus-dp-mlp", "opacus-dp-mlp-per-layer", "opacus-dp-mlp-distributed"])
def test_a_correct_opacus_method_passes_every_white_box_check(task, name):
    """Flat clipping, per-layer clipping (the hooks read each tensor's threshold) and the distributed optimiser on
    one worker: every white-box check runs and passes."""
    rep = _verify(name, task)
    checks = {c.name: c for c in rep.checks}
    assert rep.verdict == PASS, rep.headline()
    for name in WHITE_BOX:
        assert checks[name].verdict == PASS and not checks[name].remedy, checks[name]
    assert checks["ledger-counts"].data["ran"] == checks["ledger-counts"].data["accounted"] > 0


@pytest.mark.parametrize("name, check, says", [
    ("opacus-dp-mlp-shuffled", "ledger-counts", "look like fixed-size (shuffled) batches"),
    ("opacus-dp-mlp-undernoised", "noise-calibration", "x the std the ledger requires"),
    ("opacus-dp-mlp-per-layer-undernoised", "noise-calibration", "x the std the ledger requires"),
])
def test_an_opacus_method_that_breaks_its_ledger_is_flagged(task, name, check, says):
    rep = _verify(name, task)
    c = {c.name: c for c in rep.checks}[check]
    assert c.verdict == VIOLATION and says in c.detail, c
    assert rep.verdict == VIOLATION
    if name == "opacus-dp-mlp-shuffled":  # the pair that separates the samplers, at this run's batches and noise
        pair = float(c.detail.split("has epsilon about ")[1].split()[0])
        assert pair > 1.0, c.detail


def test_the_bridge_leaves_opacus_alone_outside_an_audit(task):
    """Without an active gradient hook Opacus's own step runs (the fit is the user's, bit for bit)."""
    from opacus.optimizers.optimizer import DPOptimizer

    from methods.base import fit_method
    from methods.streams import RunStreams

    real = DPOptimizer.pre_step
    cls = get_method("opacus-dp-mlp")
    a = fit_method(cls(epochs=2), task, Budget(1.0, 1e-4), RunStreams(0)).predict_proba()
    assert DPOptimizer.pre_step is real
    b = fit_method(cls(epochs=2), task, Budget(1.0, 1e-4), RunStreams(0)).predict_proba()
    assert (a == b).all()


@pytest.mark.slow  # 20 verifications, a few minutes
def test_a_correct_opacus_method_passes_in_at_least_19_of_20_seeds(task):
    verdicts = [_verify("opacus-dp-mlp", task, seed).verdict for seed in range(20)]
    assert verdicts.count(PASS) >= 19, verdicts
