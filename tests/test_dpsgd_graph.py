"""The captured (CUDA-graph) DP-SGD step's body, run eagerly on the CPU: padding changes nothing, each step gets
fresh noise from the run's generator, batches above the capacity run the eager step. The capture itself is tested
on a device in tests/test_cuda.py."""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from methods import dpsgd_graph
from methods.base import BenchError
from methods.dpsgd import DPOptimizer, PoissonSampler, gradient_hook
from methods.dpsgd_graph import CapturedStep, captured_step_reason, poisson_capacity
from methods.models import linear_mlp


def _setup(seed=0, n=120, features=12, classes=3, hidden=8):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = torch.randint(0, classes, (n,), generator=gen)
    torch.manual_seed(seed)
    net = linear_mlp(features, hidden, classes, 2)
    return x, y, net


def _pair(noise_gen_seed=1, clip=0.5):
    """Two identical models with their DP optimisers (eager, captured-body)."""
    x, y, a = _setup()
    _, _, b = _setup()
    mk = lambda m: DPOptimizer(m, torch.optim.Adam(m.parameters(), lr=0.05), clip=clip,
                               generator=torch.Generator().manual_seed(noise_gen_seed))
    return x, y, (a, mk(a)), (b, mk(b))


def _batches(n, rate, steps, seed=3):
    s = PoissonSampler(n, rate, torch.Generator().manual_seed(seed))
    return [s.sample() for _ in range(steps)]


@pytest.mark.parametrize("capacity_extra", [0, 37])
def test_without_noise_the_padded_body_is_the_eager_step(capacity_extra):
    x, y, (ma, eager), (mb, dp) = _pair()
    batches = _batches(len(y), 0.2, 12)
    cap = max(b.numel() for b in batches) + capacity_extra
    step = CapturedStep(dp, (x,), y, cap, noise_std=0.0, denominator=24.0, capture=False)
    for idx in batches:
        ie = eager.step((x[idx],), y[idx], noise_std=0.0, denominator=24.0)
        ic = step.step(idx)
        assert ic.batch_size == ie.batch_size
        assert ic.mean_norm == pytest.approx(ie.mean_norm, rel=1e-5)
        assert ic.frac_clipped == pytest.approx(ie.frac_clipped)
        assert ic.loss == pytest.approx(ie.loss, rel=1e-5)
    for p, q in zip(ma.parameters(), mb.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert step.eager_steps == 0


def test_a_batch_above_the_capacity_runs_the_eager_step():
    x, y, (ma, eager), (mb, dp) = _pair()
    batches = _batches(len(y), 0.3, 6)
    cap = min(b.numel() for b in batches)  # every larger batch overflows
    step = CapturedStep(dp, (x,), y, cap, noise_std=0.0, denominator=30.0, capture=False)
    for idx in batches:
        eager.step((x[idx],), y[idx], noise_std=0.0, denominator=30.0)
        step.step(idx)
    assert step.eager_steps == sum(b.numel() > cap for b in batches) > 0
    for p, q in zip(ma.parameters(), mb.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_every_step_adds_a_fresh_draw_of_the_run_noise(monkeypatch):
    """The update with noise minus the update without it is the step's noise / denominator: one new N(0, std^2)
    vector per step (chunks refilled from the noise generator), never a repeat."""
    monkeypatch.setattr(dpsgd_graph, "NOISE_CHUNK_ELEMENTS", 300)  # a chunk of 2 steps for 143 parameters
    x, y, _ = _setup()
    net = linear_mlp(12, 8, 3, 2)
    sgd_like = DPOptimizer(net, torch.optim.Adam(net.parameters(), lr=1.0), clip=1.0,
                           generator=torch.Generator().manual_seed(5))
    std = 2.0
    step = CapturedStep(sgd_like, (x,), y, 16, noise_std=std, denominator=1.0, capture=False)
    assert step._rows == 2
    draws = [step._noise().clone() for _ in range(7)]
    flat = torch.stack(draws)
    assert len({tuple(d.tolist()) for d in draws}) == 7
    assert flat.std().item() == pytest.approx(std, rel=0.1)
    assert abs(flat.mean().item()) < 0.2
    # the same generator seed gives the same draws (the run is reproducible from its noise stream)
    again = CapturedStep(DPOptimizer(net, torch.optim.Adam(net.parameters()), clip=1.0,
                                     generator=torch.Generator().manual_seed(5)), (x,), y, 16, std, 1.0, capture=False)
    assert torch.equal(torch.stack([again._noise().clone() for _ in range(7)]), flat)


def test_the_noise_reaches_the_gradient_the_optimiser_sees():
    x, y, _ = _setup()
    net = linear_mlp(12, 8, 3, 2)
    dp = DPOptimizer(net, torch.optim.Adam(net.parameters(), lr=0.0), clip=1.0,
                     generator=torch.Generator().manual_seed(2))
    seen = []
    dp.optimizer.register_step_pre_hook(
        lambda o, a, k: seen.append(torch.cat([p.grad.reshape(-1) for p in net.parameters()]).clone()))
    step = CapturedStep(dp, (x,), y, 40, noise_std=3.0, denominator=1.0, capture=False)
    idx = torch.arange(10)
    for _ in range(2):
        step.step(idx)
    # same batch, same parameters (lr 0): the two gradients differ only by their noise, std 3 per coordinate each
    diff = seen[1] - seen[0]
    assert diff.std().item() == pytest.approx(3.0 * math.sqrt(2), rel=0.2)


def test_eligibility_says_why_not():
    x, y, net = _setup()
    dp = DPOptimizer(net, torch.optim.Adam(net.parameters()), clip=1.0, generator=torch.Generator())
    assert captured_step_reason(dp, (x,), torch.device("cpu")) == "not on a CUDA device"
    sgd = DPOptimizer(net, torch.optim.SGD(net.parameters(), lr=0.1), clip=1.0, generator=torch.Generator())
    assert "SGD" in captured_step_reason(sgd, (x,), torch.device("cuda"))
    assert captured_step_reason(dp, (x,), torch.device("cuda")) is None

    class Hook:
        def split(self, opt, inputs, target):
            return inputs, target, None

        def observe(self, opt, sums):
            pass

    with gradient_hook(Hook()):
        assert "hook" in captured_step_reason(dp, (x,), torch.device("cuda"))
    import os
    os.environ["BENCH_CUDA_GRAPHS"] = "0"
    try:
        assert captured_step_reason(dp, (x,), torch.device("cuda")) == "BENCH_CUDA_GRAPHS=0"
    finally:
        del os.environ["BENCH_CUDA_GRAPHS"]
    with pytest.raises(BenchError):
        CapturedStep(dp, (x,), y, 0, 1.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 10 ** 7), rate=st.floats(1e-6, 1.0))
def test_poisson_capacity_covers_the_batch_but_never_exceeds_the_population(n, rate):
    cap = poisson_capacity(n, rate)
    mean = n * rate
    assert 1 <= cap <= n
    assert cap == n or cap >= mean + 10 * math.sqrt(mean * (1 - rate))
