"""White-box gradient canaries (audits/whitebox.py): the hook inside DP-SGD, and audits through it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from audits.canaries import CanaryConfig, make_canaries
from audits.runner import PASS, VIOLATION, audit
from audits.whitebox import GradientCanaries, canary_columns
from methods.base import ConfigError, get_method
from methods.dpsgd import DPOptimizer, gradient_hook

MUTANTS = str(Path(__file__).resolve().parent / "plugins" / "mutants.py")
F, M = 6, 2  # base features, canary columns (the last two)


def _model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(F + M, 4), nn.ReLU(), nn.Linear(4, 3))


def _batch(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(10, F + M, generator=g)
    x[:, F:] = 0
    x[2, F] = 5.0  # canary 0 in example 2
    x[7, F] = 3.0  # ... and in example 7
    x[4, F + 1] = 1.0  # canary 1 in example 4
    y = torch.randint(0, 3, (10,), generator=g)
    return x, y


def _sums_seen(per_layer: bool = False, noise: float = 0.0, clip: float = 1.0):
    model = _model()
    opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.1), clip=clip, per_layer=per_layer,
                      generator=torch.Generator().manual_seed(0))
    hook = GradientCanaries(canary_columns(F + M, M), F + M)
    seen = []
    observe = hook.observe
    hook.observe = lambda o, sums: (seen.append([s.clone() for s in sums]), observe(o, sums))
    x, y = _batch()
    with gradient_hook(hook):
        opt.step((x,), y, noise_std=noise, denominator=10.0)
    return hook, seen[0], x, y


def test_canary_examples_are_replaced_by_the_threshold_on_their_own_coordinate():
    hook, sums, x, y = _sums_seen()
    # the examples without a canary: exactly what DP-SGD computes on them alone
    keep = torch.ones(10, dtype=torch.bool)
    keep[[2, 4, 7]] = False
    ref = DPOptimizer(_model(), torch.optim.SGD(_model().parameters(), lr=0.1), clip=1.0)
    ref_sums, _, _ = ref.grads.norms_and_sum((x[keep],), y[keep], 1.0)
    w = sums[0].clone()
    assert w[0, F].item() == pytest.approx(2.0)  # two examples hold canary 0: C each
    assert w[0, F + 1].item() == pytest.approx(1.0)
    w[0, F:] = 0
    assert torch.allclose(w, ref_sums[0], atol=1e-6)
    for s, r in zip(sums[1:], ref_sums[1:]):
        assert torch.allclose(s, r, atol=1e-6)
    # with no noise the score is the number of canary examples drawn
    assert hook.scores.tolist() == pytest.approx([2.0, 1.0])
    assert hook.occurrences.tolist() == [2, 1] and hook.max_per_step.tolist() == [2, 1] and hook.steps == 1


def test_an_example_with_two_canaries_keeps_norm_c():
    model = _model()
    opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.1), clip=2.0)
    hook = GradientCanaries(canary_columns(F + M, M), F + M)
    x, y = _batch()
    x[:, F:] = 0
    x[3, F:] = 1.0
    with gradient_hook(hook):
        opt.step((x,), y, noise_std=0.0, denominator=10.0)
    assert hook.scores.tolist() == pytest.approx([1 / math.sqrt(2)] * 2)  # (C / sqrt 2) / C each: norm C


def test_per_layer_clipping_gives_the_canary_the_first_layers_share():
    hook, sums, _, _ = _sums_seen(per_layer=True, clip=2.0)
    share = 2.0 / math.sqrt(4)  # four parameter tensors
    assert sums[0][0, F].item() == pytest.approx(2 * share)
    assert hook.scores.tolist() == pytest.approx([2.0, 1.0])


def test_absent_canary_scores_are_pure_noise_of_the_released_scale():
    cols = 300
    model = nn.Linear(F + cols, 2)
    opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.0), clip=0.5,
                      generator=torch.Generator().manual_seed(3))
    hook = GradientCanaries(canary_columns(F + cols, cols), F + cols)
    x = torch.zeros(8, F + cols)
    x[:, :F] = torch.randn(8, F)
    y = torch.zeros(8, dtype=torch.long)
    steps, sigma = 40, 2.0
    with gradient_hook(hook):
        for _ in range(steps):
            opt.step((x,), y, noise_std=sigma, denominator=8.0)
    s = hook.scores.numpy()
    expected = math.sqrt(steps) * sigma / 0.5
    assert abs(s.mean()) < 4 * expected / math.sqrt(cols)
    assert 0.85 * expected < s.std() < 1.15 * expected
    assert int(hook.occurrences.sum()) == 0


def test_gradient_canaries_only_for_dp_sgd_methods_on_raw_features(task):
    from methods.base import Budget

    with pytest.raises(ConfigError, match="gradient canaries need a DP-SGD method"):
        audit(lambda: get_method("gap-edge")(), task, Budget(1.0, 1e-4), "one-run", canaries=4,
              canary_type="gradient")
    with pytest.raises(ConfigError, match="dedicated"):
        audit(lambda: get_method("dp-mlp")(), task, Budget(1.0, 1e-4), "one-run", canaries=4,
              canary=CanaryConfig(pattern="random"), canary_type="gradient")
    with pytest.raises(ConfigError, match="canary type"):
        audit(lambda: get_method("dp-mlp")(), task, Budget(1.0, 1e-4), "one-run", canaries=4, canary_type="weights")
    assert all(get_method(m).gradient_canaries for m in ("dp-mlp", "drw", "drw-r", "drw-d", "dpgnn", "dpgnn-adam"))
    assert not any(get_method(m).gradient_canaries for m in ("gap-node", "progap-node", "privgnn", "edgerand"))


@pytest.fixture(scope="module")
def task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=600,classes=3,features=32,degree=4"), "random-75-10-15", 0)


@pytest.fixture(scope="module")
def mutants():
    import sys

    sys.path.insert(0, str(Path(MUTANTS).parent))
    import mutants as mod  # registers them (the same module object as tests/test_audit.py's)

    return mod


def test_white_box_audit_flags_weak_noise_and_passes_dp_mlp(task, mutants):
    from bench.run import resolve_budget

    canary = CanaryConfig(degree=1, hops=2, scale=3.0)
    results = {}
    for name in ("dp-mlp", "mutant-dp-mlp-noise"):
        cls = get_method(name)
        budget = resolve_budget(1.0, None, cls(), task)
        results[name] = audit(lambda: cls(), task, budget, "one-run", canaries=100, canary=canary, seed=0,  # noqa: B023 - called within this iteration
                              canary_type="gradient")
    good, bad = results["dp-mlp"], results["mutant-dp-mlp-noise"]
    assert good.verdict == PASS and bad.verdict == VIOLATION
    assert good.details["canary_type"] == "gradient"
    inc = np.array(bad.details["included"])
    scores = np.array(bad.details["scores"])
    assert scores[inc].min() > scores[~inc].max()  # 1% of the noise: the sums separate perfectly


@pytest.mark.parametrize("method, over, bound", [
    # Algorithm 1 (the paper's relation): 12 anchors, of which the sampler keeps at most K = 2; N(2, 1) = 3
    ("dpgnn", {"relation": "in-edges", "max_degree": 2, "layers": 1, "batch_size": 64, "epochs": 2, "hidden": 8}, 3),
    ("mutant-dpgnn-nobound", {"relation": "in-edges", "max_degree": 2, "layers": 1, "batch_size": 64, "epochs": 2,
                              "hidden": 8}, 3),
    # the default relation (input-graph): K = 12 declared (the canaries' 12 anchors and the task's 10 within it),
    # every in-edge kept; N(12, 1) = 13
    ("dpgnn", {"max_degree": 12, "layers": 1, "batch_size": 64, "epochs": 2, "hidden": 8}, 13),
    ("drw", {"hidden": 8, "max_steps": 20, "batch_size": 16}, 1),
])
def test_examples_holding_one_node_per_batch_respect_the_occurrence_bound(method, over, bound, task, mutants):
    """The sensitivity argument checked at run time: in any batch, a correct method has at most its occurrence
    bound of examples holding one node (DP-GNN: N(K, r); DRW: 1, disjoint walks); the mutant exceeds it."""
    from methods.base import Budget

    cs = make_canaries(task, get_method(method).privacy_unit, 5,
                       CanaryConfig(degree=12, hops=0, scale=1.0, fresh_anchors=True), seed=0)
    world = cs.world(np.ones(5, bool))
    hook = GradientCanaries(canary_columns(world.num_features, 5), world.num_features)
    with gradient_hook(hook):
        get_method(method)(**over).fit(world, Budget(8.0, 1e-4), seed=0)
    assert int(hook.occurrences.sum()) > 0
    worst = int(hook.max_per_step.max())
    if method.startswith("mutant"):
        assert worst > bound
    else:
        assert worst <= bound
