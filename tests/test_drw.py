"""DRW methods: accounting in both settings, noise scale, what training may touch."""

import math

import pytest
import torch

from bench.datasets import load_dataset
from bench.splits import make_task
from methods import Budget, get_method
from methods.dpsgd import DPOptimizer
from methods.privacy import FixedSizeGaussian
from methods.privacy import presets as P
from methods.samplers.random_walks import min_subgraphs

SMOKE = {"walk_length": 2, "hidden": 16, "max_steps": 400, "batch_size": 20, "noise_multiplier": 2.0}


@pytest.fixture(scope="module")
def inductive_task():
    return make_task(load_dataset("csbm:nodes=300,classes=3,features=8,degree=6"), "disjoint", 0)


def test_transductive_accounts_with_the_batchable_subgraphs(small_task):
    budget = Budget(3.0, 1e-5)
    f = get_method("drw")(**SMOKE).fit(small_task, budget, seed=0)
    (event,) = f.ledger.events
    assert isinstance(event, FixedSizeGaussian)
    assert (event.unit, event.relation) == ("feature", "replace_one")
    assert event.population == f.info["num_subgraphs"] == f.info["accounting_population"]
    assert f.info["num_subgraphs"] <= int(small_task.train_mask.sum())  # only labelled roots
    assert event.sample_size == 20 and event.noise_multiplier == 2.0 and event.count == f.info["steps"]
    eps = f.epsilon(1e-5)
    assert eps <= 3.0 < f.ledger.add(event, 1).epsilon(1e-5)  # trained until one more step would exceed
    # `bench account drw --num-subgraphs M` reproduces the claim
    n = small_task.num_nodes
    assert P.drw(n, 2, 20, 2.0, f.info["steps"], num_subgraphs=event.population).epsilon(1e-5) == eps
    assert "transductive" in f.info["accounting_rule"]


def test_inductive_accounts_with_the_papers_m_min(inductive_task):
    f = get_method("drw")(**SMOKE).fit(inductive_task, Budget(3.0, 1e-5), seed=0)
    (event,) = f.ledger.events
    n_train = int(inductive_task.train_mask.sum())
    assert event.population == min_subgraphs(n_train, 2) <= f.info["num_subgraphs"]
    assert P.drw(n_train, 2, 20, 2.0, f.info["steps"]).epsilon(1e-5) == f.epsilon(1e-5) <= 3.0
    assert "M_min" in f.info["accounting_rule"]


def test_drw_r_bound_uses_restarts(inductive_task):
    f = get_method("drw-r")(**SMOKE).fit(inductive_task, Budget(3.0, 1e-5), seed=0)
    assert f.ledger.events[0].population == min_subgraphs(int(inductive_task.train_mask.sum()), 2, restarts=2)


def test_noise_is_lambda_times_2c(monkeypatch, small_task):
    seen = []
    orig = DPOptimizer.step

    def spy(self, inputs, target, noise_std, denominator):
        seen.append((noise_std, denominator, inputs[0].shape))
        return orig(self, inputs, target, noise_std, denominator)

    monkeypatch.setattr(DPOptimizer, "step", spy)
    f = get_method("drw")(**{**SMOKE, "clip": 0.3, "max_steps": 5}).fit(small_task, Budget(50.0, 1e-5), seed=0)
    assert len(seen) == 5 == f.info["steps"]
    for std, denom, shape in seen:
        assert std == pytest.approx(2.0 * 2 * 0.3) and denom == 20 and shape[:2] == (20, 1 + 2)


def test_features_outside_the_training_subgraphs_do_not_matter(small_task):
    """Training may only read the features of nodes in training subgraphs (the sensitivity argument):
    changing every other node's features leaves the trained weights bit-identical."""
    from methods.samplers.random_walks import disjoint_random_walks

    cfg = {**SMOKE, "max_steps": 8}
    f1 = get_method("drw")(**cfg).fit(small_task, Budget(50.0, 1e-5), seed=3)
    from methods.streams import RunStreams

    gen = RunStreams(3).torch("subgraphs")  # the method's walk sampler stream
    nodes, _ = disjoint_random_walks(small_task.data.edge_index, small_task.num_nodes, 2,
                                     roots=small_task.train_mask.nonzero().view(-1), generator=gen)
    outside = torch.ones(small_task.num_nodes, dtype=torch.bool)
    outside[nodes] = False
    assert outside.any()
    x2 = small_task.data.x.clone()
    x2[outside] = torch.randn(int(outside.sum()), x2.size(1)) * 100
    data2 = small_task.data.clone()
    data2.x = x2
    from dataclasses import replace

    f2 = get_method("drw")(**cfg).fit(replace(small_task, data=data2), Budget(50.0, 1e-5), seed=3)
    for a, b in zip(f1.model.parameters(), f2.model.parameters()):
        assert torch.equal(a, b)
    # ... while changing the nodes inside the training subgraphs does change them
    x3 = small_task.data.x.clone()
    x3[nodes] += 5
    data3 = small_task.data.clone()
    data3.x = x3
    f3 = get_method("drw")(**cfg).fit(replace(small_task, data=data3), Budget(50.0, 1e-5), seed=3)
    assert any(not torch.equal(a, b) for a, b in zip(f1.model.parameters(), f3.model.parameters()))


def test_drw_d_resamples_and_accounts_each_segment(small_task):
    cfg = {**SMOKE, "resamples": 0, "resample_every": 10, "max_steps": 60}
    f = get_method("drw-d")(**cfg).fit(small_task, Budget(50.0, 1e-5), seed=1)
    assert f.info["steps"] == sum(e.count for e in f.ledger.events) == 60
    # transductive: each resample forms its own number of batchable subgraphs, each accounted as it ran
    pops = f.info["accounting_population"]
    assert isinstance(pops, list) and len(pops) > 1 and {e.population for e in f.ledger.events} == set(pops)
    tight = get_method("drw-d")(**cfg).fit(small_task, Budget(8.0, 1e-5), seed=1)
    assert tight.epsilon(1e-5) <= 8.0 and tight.info["steps"] < 60


def test_infinite_epsilon_trains_without_noise_and_says_so(small_task):
    f = get_method("drw")(**{**SMOKE, "max_steps": 7}).fit(small_task, Budget(), seed=0)
    assert f.info["steps"] == 7 and f.epsilon(1e-5) == math.inf and f.ledger.non_private_use


def test_a_budget_too_small_for_one_step_is_a_clear_error(small_task):
    from methods.base import BudgetError

    with pytest.raises(BudgetError, match="does not allow a single step"):
        get_method("drw")(**{**SMOKE, "noise_multiplier": 0.5}).fit(small_task, Budget(0.01, 1e-5), seed=0)


def test_rw_is_the_non_private_baseline(small_task):
    f = get_method("rw")(walk_length=2, hidden=16, epochs=5, batch_size=20).fit(small_task, Budget(), seed=0)
    assert f.epsilon(1e-5) == math.inf and f.info["inference_private"] is False


def test_drw_d_default_batch_fits_every_resample():
    """Transductively each resample forms its own number of batchable subgraphs; the default batch, fixed for the
    run, keeps headroom below the first count so that later resamples still hold a full batch."""
    from methods.drw import RESAMPLE_HEADROOM, default_batch_size

    task = make_task(load_dataset("csbm:nodes=1000,classes=3,features=8,degree=4"), "random-75-10-15", 0)
    cfg = {"hidden": 16, "resamples": 0, "resample_every": 2, "max_steps": 40}  # the default walk length and batch rule
    for seed in range(3):
        f = get_method("drw-d")(**cfg).fit(task, Budget(), seed=seed)
        assert f.info["steps"] == 40
    assert default_batch_size(750, 350, resampled=True) == int(RESAMPLE_HEADROOM * 350)
    assert default_batch_size(750, 350) == 350


@pytest.mark.parametrize("eps", [4.0, 8.0])
def test_drw_d_resamples_within_whatever_the_budget_affords(small_task, eps):
    """`resamples` sets the period from the steps the budget affords, so a small budget still resamples (a fixed
    period longer than the affordable steps never does: DRW-D would be DRW)."""
    cfg = {**SMOKE, "noise_multiplier": 3.0, "resamples": 2}
    f = get_method("drw-d")(**cfg).fit(small_task, Budget(eps, 1e-5), seed=2)
    steps, period = f.info["steps"], f.info["resample_period"]
    assert 1 <= period < steps and f.info["resamples"] >= 1
    # every sampler run that took steps is in the ledger; the reported populations are exactly the ledger's
    pops = f.info["accounting_population"]
    assert sorted(pops if isinstance(pops, list) else [pops]) == f.ledger.sampling()["population"]
    assert sum(e.count for e in f.ledger.events) == steps
    fixed = get_method("drw-d")(**{**cfg, "resamples": 0, "resample_every": 10_000}).fit(small_task,
                                                                                      Budget(eps, 1e-5), seed=2)
    assert fixed.info["resamples"] == 0
    with pytest.raises(Exception, match="cannot both be set"):
        get_method("drw-d")(resample_every=10)
