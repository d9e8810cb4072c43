"""The captured (CUDA-graph) DP-SGD step's body, run eagerly on the CPU: padding changes nothing, each step gets
fresh noise from the run's generator, batches above the capacity run the eager step, every per-example gradient mode
releases the eager step's sums. The capture itself is tested on a device in tests/test_cuda.py."""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

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
    def mk(m):
        return DPOptimizer(m, torch.optim.Adam(m.parameters(), lr=0.05), clip=clip,
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


@pytest.mark.parametrize("capacity_extra", [0, 21])
def test_with_noise_the_padded_body_is_the_eager_step_draw_for_draw(capacity_extra):
    """The same noise seed gives the same run on either path: the captured step draws its noise with the eager
    step's calls (one per parameter tensor, in order), so the two fits agree to float rounding, noise included."""
    x, y, (ma, eager), (mb, dp) = _pair()
    batches = _batches(len(y), 0.2, 15)
    cap = max(b.numel() for b in batches) + capacity_extra
    step = CapturedStep(dp, (x,), y, cap, noise_std=1.5, denominator=24.0, capture=False)
    for idx in batches:
        eager.step((x[idx],), y[idx], noise_std=1.5, denominator=24.0)
        step.step(idx)
    for p, q in zip(ma.parameters(), mb.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert torch.equal(eager.generator.get_state(), dp.generator.get_state())


def test_a_read_only_probe_sees_the_captured_step_as_the_eager_one():
    """Verification's step probe (read-only) runs on captured steps and records what it records eagerly: batch
    sizes, the step count, the first step's noise and the noise's sums of squares."""
    from audits.structural import StepOneProbe

    x, y, (ma, eager), (mb, dp) = _pair()
    batches = _batches(len(y), 0.25, 6)
    step = CapturedStep(dp, (x,), y, 80, noise_std=2.0, denominator=30.0, capture=False)
    probes = StepOneProbe(), StepOneProbe()
    with gradient_hook(probes[0]):
        for idx in batches:
            eager.step((x[idx],), y[idx], noise_std=2.0, denominator=30.0)
    with gradient_hook(probes[1]):
        assert captured_step_reason(dp, (x,), torch.device("cuda")) is None
        for idx in batches:
            step.step(idx)
    a, b = probes
    assert a.batch_sizes == b.batch_sizes and a.steps == b.steps == len(batches)
    assert a.noise_seed == b.noise_seed and a.first_layer_width == b.first_layer_width
    for u, v in zip(a.noise, b.noise):
        assert torch.equal(u, v)
    assert [r.noise_entries for r in a.records] == [r.noise_entries for r in b.records]
    assert [r.noise_sq_sum for r in a.records] == pytest.approx([r.noise_sq_sum for r in b.records])


def test_a_hook_that_may_change_the_step_keeps_it_eager():
    x, y, _, (mb, dp) = _pair()

    class Canary:  # replaces gradients: not read-only
        def split(self, opt, inputs, target):
            return inputs, target, None

        def observe(self, opt, sums):
            pass

    class Liar(Canary):
        read_only = True

        def split(self, opt, inputs, target):
            return inputs[:1], target, [torch.zeros_like(p) for _, p in opt.grads.params]

    with gradient_hook(Canary()):
        assert "may change" in captured_step_reason(dp, (x,), torch.device("cuda"))
        with pytest.raises(BenchError, match="read-only"):
            CapturedStep(dp, (x,), y, 40, 1.0, 1.0, capture=False).step(torch.arange(5))
    with gradient_hook(Liar()):
        with pytest.raises(BenchError, match="changed the step"):
            CapturedStep(dp, (x,), y, 40, 1.0, 1.0, capture=False).step(torch.arange(5))


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
    Hook.read_only = True
    with gradient_hook(Hook()):
        assert captured_step_reason(dp, (x,), torch.device("cuda")) is None
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


# -- every per-example gradient mode: the padded body releases the eager step's sums ---------------------------


class _Released:
    """A read-only hook that keeps the last step's released (noisy) sums."""

    read_only = True

    def split(self, opt, inputs, target):
        return inputs, target, None

    def observe(self, opt, sums):
        self.sums = [s.detach().clone() for s in sums]


class _Normed(torch.nn.Module):
    """A model outside book-keeping (LayerNorm has parameters outside nn.Linear): vmap only."""

    def __init__(self, features, classes):
        super().__init__()
        self.lin, self.norm, self.out = torch.nn.Linear(features, 6), torch.nn.LayerNorm(6), torch.nn.Linear(6, classes)

    def forward(self, x):
        return self.out(torch.tanh(self.norm(self.lin(x))))


def _examples(kind, n, gen):
    """(inputs, targets, model factory, modes it supports) for one family of models the suite trains."""
    from methods.dpsgd import GRADIENT_MODES
    from methods.models import DenseGCN

    if kind == "mlp":
        return (torch.randn(n, 7, generator=gen),), torch.randint(0, 3, (n,), generator=gen), \
            lambda: linear_mlp(7, 5, 3, 2), GRADIENT_MODES
    if kind == "subgraph":  # padded subgraphs: several positions per example (ghost / materialised norms)
        x = torch.randn(n, 4, 6, generator=gen)
        adj = torch.rand(n, 4, 4, generator=gen)
        return (x, adj), torch.randint(0, 3, (n,), generator=gen), lambda: DenseGCN(6, 3, hidden=5), GRADIENT_MODES
    return (torch.randn(n, 7, generator=gen),), torch.randint(0, 3, (n,), generator=gen), \
        lambda: _Normed(7, 3), tuple(m for m in GRADIENT_MODES if m != "bookkeeping")


@pytest.mark.parametrize("kind", ["mlp", "subgraph", "normed"])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_gradient_mode_releases_the_eager_sums_from_the_padded_body(kind, data):
    """For every per-example gradient mode, the captured step's body (run eagerly: the graph only replays it)
    releases the eager step's clipped sums on any batch padded to any capacity, or :func:`captured_step_reason`
    refuses the mode. Padding rows repeat example 0 with loss weight 0: a weight that reached the examples as a
    whole-batch closure would count example 0 once per padding row (sensitivity (1 + padding) C)."""
    from methods.dpsgd import GRADIENT_MODES

    n = 40
    batch = data.draw(st.integers(1, n), label="batch")
    pad = data.draw(st.integers(0, 25), label="padding")
    clip = data.draw(st.sampled_from([0.05, 1.0, 50.0]), label="clip")
    per_layer = data.draw(st.booleans(), label="per_layer")
    gen = torch.Generator().manual_seed(data.draw(st.integers(0, 2 ** 16), label="seed"))
    inputs, y, make, modes = _examples(kind, n, gen)
    idx = torch.randperm(n, generator=gen)[:batch]
    for mode in modes:
        assert mode in GRADIENT_MODES
        torch.manual_seed(0)
        ma = make()
        mb = make()
        mb.load_state_dict(ma.state_dict())
        dps = [DPOptimizer(m, torch.optim.Adam(m.parameters(), lr=0.01), clip=clip, mode=mode, per_layer=per_layer,
                           generator=torch.Generator().manual_seed(5)) for m in (ma, mb)]
        if captured_step_reason(dps[1], inputs, torch.device("cuda")) is not None:
            continue  # refused: the mode never runs captured
        seen = _Released(), _Released()
        with gradient_hook(seen[0]):
            ie = dps[0].step(tuple(x[idx] for x in inputs), y[idx], noise_std=0.0, denominator=float(batch))
        step = CapturedStep(dps[1], inputs, y, batch + pad, noise_std=0.0, denominator=float(batch), capture=False)
        with gradient_hook(seen[1]):
            ic = step.step(idx)
        for e, c in zip(*(s.sums for s in seen)):
            torch.testing.assert_close(c, e, rtol=1e-4, atol=1e-5, msg=lambda m: f"{mode}: {m}")  # noqa: B023 - called within this iteration
        assert ic.mean_norm == pytest.approx(ie.mean_norm, rel=1e-4, abs=1e-6)
        assert ic.frac_clipped == pytest.approx(ie.frac_clipped)
        assert ic.loss == pytest.approx(ie.loss, rel=1e-4, abs=1e-6)
        for p, q in zip(ma.parameters(), mb.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-5)


def test_the_padded_body_at_the_documented_example_matches_the_eager_step():
    """30 real rows, capacity 50, C = 1, vmap gradients: the released sums agree (a whole-batch weight closure
    gave a difference of norm 20, twenty copies of example 0's clipped gradient)."""
    x, y, _ = _setup()
    for mode in ("bookkeeping", "vmap"):
        torch.manual_seed(0)
        ma, mb = linear_mlp(12, 8, 3, 2), linear_mlp(12, 8, 3, 2)
        mb.load_state_dict(ma.state_dict())
        dps = [DPOptimizer(m, torch.optim.Adam(m.parameters(), lr=0.0), clip=1.0, mode=mode,
                           generator=torch.Generator().manual_seed(1)) for m in (ma, mb)]
        idx = torch.arange(5, 35)
        seen = _Released(), _Released()
        with gradient_hook(seen[0]):
            dps[0].step((x[idx],), y[idx], 0.0, 1.0)
        with gradient_hook(seen[1]):
            CapturedStep(dps[1], (x,), y, 50, 0.0, 1.0, capture=False).step(idx)
        diff = torch.cat([(a - b).reshape(-1) for a, b in zip(*(s.sums for s in seen))])
        assert float(diff.norm()) < 1e-4, mode


def test_an_unknown_gradient_mode_is_refused():
    with pytest.raises(BenchError, match="unknown per-example gradient mode"):
        DPOptimizer(linear_mlp(3, 2, 2), torch.optim.Adam(linear_mlp(3, 2, 2).parameters()), clip=1.0, mode="ghost")
