"""The DP-SGD engine: per-example clipping, noise, samplers, DP-MLP against Opacus."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from methods.dpsgd import (DPOptimizer, FixedSizeSampler, PerExampleGradients, PoissonSampler, QuantileClipping,
                           cross_entropy_per_example, gradient_hook)
from methods.models import DenseGCN, linear_mlp
from methods.privacy import FixedSizeGaussian, PoissonGaussian


def mlp_batch(b, f=6, c=3, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, f, generator=g) * scale,), torch.randint(0, c, (b,), generator=g)


def subgraph_batch(b, p=5, f=6, c=3, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, p, f, generator=g) * scale
    sizes = torch.randint(1, p + 1, (b,), generator=g)
    mask = (torch.arange(p)[None, :] < sizes[:, None]).float()
    x = x * mask[..., None]
    a = (torch.rand(b, p, p, generator=g) < 0.5).float()
    a = ((a + a.transpose(1, 2)) > 0).float() + torch.eye(p)
    a = a * mask[:, :, None] * mask[:, None, :]
    deg = a.sum(-1).clamp(min=1)
    adj = a / torch.sqrt(deg[:, :, None] * deg[:, None, :])
    return (x, adj), torch.randint(0, c, (b,), generator=g)


def reference_clipped_sum(model, inputs, target, clip, per_layer):
    """Per-example autograd loop: the definition the engine must match."""
    params = [p for p in model.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    norms = []
    for i in range(target.numel()):
        model.zero_grad()
        loss = cross_entropy_per_example(model(*(x[i:i + 1] for x in inputs)), target[i:i + 1]).sum()
        grads = torch.autograd.grad(loss, params)
        flat = torch.sqrt(sum((g ** 2).sum() for g in grads))
        norms.append(flat)
        if per_layer:
            thr = clip / math.sqrt(len(grads))
            factors = [min(1.0, thr / (float(g.norm()) + 1e-6)) for g in grads]
        else:
            factors = [min(1.0, clip / (float(flat) + 1e-6))] * len(grads)
        for t, g, f in zip(total, grads, factors):
            t += f * g
    return total, torch.stack(norms)


MODELS = {
    "mlp": (lambda: linear_mlp(6, 8, 3, 2), mlp_batch),
    "mlp3": (lambda: linear_mlp(6, 5, 3, 3), mlp_batch),
    "dense-gcn": (lambda: DenseGCN(6, 3, hidden=8, layers=2), subgraph_batch),
    "dense-gcn-1": (lambda: DenseGCN(6, 3, hidden=8, layers=1), subgraph_batch),
}


@pytest.mark.parametrize("mode", ["bookkeeping", "vmap"])
@pytest.mark.parametrize("model_name", list(MODELS))
@settings(max_examples=8, deadline=None)
@given(b=st.integers(1, 12), clip=st.floats(0.01, 5.0), scale=st.floats(0.1, 30.0), seed=st.integers(0, 999),
       per_layer=st.booleans())
def test_clipped_sums_equal_a_per_example_autograd_loop(mode, model_name, b, clip, scale, seed, per_layer):
    build, batch = MODELS[model_name]
    torch.manual_seed(seed)
    model = build().double()
    inputs, target = batch(b, seed=seed, scale=scale)
    inputs = tuple(x.double() for x in inputs)
    sums, norms, losses = PerExampleGradients(model, mode=mode).norms_and_sum(inputs, target, clip, per_layer)
    ref_sums, ref_norms = reference_clipped_sum(model, inputs, target, clip, per_layer)
    assert torch.allclose(norms, ref_norms, rtol=1e-6, atol=1e-9)
    for s, r in zip(sums, ref_sums):
        assert torch.allclose(s, r, rtol=1e-6, atol=1e-9)
    assert losses.shape == (b,)


def test_bookkeeping_handles_a_layer_called_twice():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.out = nn.Linear(4, 2)

        def forward(self, x):
            return self.out(torch.relu(self.lin(torch.relu(self.lin(x)))))

    torch.manual_seed(0)
    model = Twice().double()
    inputs, target = mlp_batch(7, f=4, c=2)
    inputs = tuple(x.double() for x in inputs)
    sums, norms, _ = PerExampleGradients(model, mode="bookkeeping").norms_and_sum(inputs, target, 0.7)
    ref_sums, ref_norms = reference_clipped_sum(model, inputs, target, 0.7, False)
    assert torch.allclose(norms, ref_norms, rtol=1e-6)
    assert all(torch.allclose(s, r, rtol=1e-6, atol=1e-10) for s, r in zip(sums, ref_sums))


def test_bookkeeping_layers_whose_outputs_meet_unchanged_share_no_scratch():
    """``lin1(x) + lin2(x)``: autograd hands both layers one backprop tensor, which the clipped sum of one layer
    must not scale in place under the other."""
    class Sum(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin1, self.lin2 = nn.Linear(20, 10), nn.Linear(20, 10)  # ghost norms: 2 (20 + 10) <= 20 x 10

        def forward(self, x):  # x [B, 2, 20] -> [B, 10], the first position's sum
            return (self.lin1(x) + self.lin2(x))[:, 0]

    torch.manual_seed(0)
    model = Sum().double()
    inputs, target = subgraph_batch(6, p=2, f=20, scale=4.0)
    inputs = (inputs[0].double(),)
    sums, norms, _ = PerExampleGradients(model, mode="bookkeeping").norms_and_sum(inputs, target, 0.3)
    ref_sums, ref_norms = reference_clipped_sum(model, inputs, target, 0.3, False)
    assert torch.allclose(norms, ref_norms, rtol=1e-6)
    assert all(torch.allclose(s, r, rtol=1e-6, atol=1e-10) for s, r in zip(sums, ref_sums))


def test_auto_mode_falls_back_to_vmap_for_non_linear_parameters():
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    assert PerExampleGradients(model).mode == "vmap"
    assert PerExampleGradients(linear_mlp(4, 4, 2)).mode == "bookkeeping"
    from methods.base import BenchError

    with pytest.raises(BenchError, match="nn.Linear"):
        PerExampleGradients(model, mode="bookkeeping")


@pytest.mark.parametrize("mode", ["bookkeeping", "vmap"])
@settings(max_examples=25, deadline=None)
@given(clip=st.floats(1e-3, 10.0), scale=st.floats(1e-3, 1e3), seed=st.integers(0, 10**6), per_layer=st.booleans())
def test_every_clipped_gradient_has_norm_at_most_c(mode, clip, scale, seed, per_layer):
    torch.manual_seed(seed)
    model = DenseGCN(6, 3, hidden=8, layers=2)
    inputs, target = subgraph_batch(1, seed=seed, scale=scale)  # one example: the sum IS its clipped gradient
    sums, _, _ = PerExampleGradients(model, mode=mode).norms_and_sum(inputs, target, clip, per_layer)
    total = math.sqrt(sum(float((s.double() ** 2).sum()) for s in sums))
    assert total <= clip * (1 + 1e-5)
    if per_layer:
        assert all(float(s.norm()) <= clip / math.sqrt(len(sums)) * (1 + 1e-5) for s in sums)


def test_noise_standard_deviation_is_what_the_ledger_claims():
    """Zero gradients: what reaches the optimiser is pure noise, whose std must be noise_std / denominator."""
    model = nn.Linear(200, 50, bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    dp = DPOptimizer(model, opt, clip=1.5, generator=torch.Generator().manual_seed(0))
    seen = []
    orig = opt.step

    def capture():
        seen.append(model.weight.grad.clone())
        orig()

    opt.step = capture
    z = 1.3
    sampler = PoissonSampler(1000, 0.05, torch.Generator().manual_seed(1))
    event = sampler.event(z)
    x, y = torch.zeros(8, 200), torch.zeros(8, dtype=torch.long)
    dp.step((x,), y, noise_std=event.noise_multiplier * dp.clip, denominator=sampler.expected_size)
    std = float(seen[0].std()) * sampler.expected_size
    assert abs(std - z * 1.5) / (z * 1.5) < 0.03  # 10,000 draws: 3% is > 4 standard errors
    assert isinstance(event, PoissonGaussian) and event.rate == 0.05 and event.unit == "node"


def test_dp_mlp_noise_matches_its_ledger(monkeypatch, small_task):
    from methods import Budget, get_method

    calls = []
    orig = DPOptimizer.step

    def spy(self, inputs, target, noise_std, denominator):
        calls.append((noise_std, denominator, self.clip))
        return orig(self, inputs, target, noise_std, denominator)

    monkeypatch.setattr(DPOptimizer, "step", spy)
    fitted = get_method("dp-mlp")(epochs=2, batch_size=30, clip=0.7).fit(small_task, Budget(3.0, 1e-4), seed=0)
    (event,) = fitted.ledger.events
    assert event.count == len(calls) == fitted.info["steps"]
    n_train = int(small_task.train_mask.sum())
    assert event.rate == pytest.approx(30 / n_train)
    for noise_std, denom, clip in calls:
        assert noise_std == pytest.approx(event.noise_multiplier * clip)
        assert denom == pytest.approx(event.rate * n_train)
    assert fitted.epsilon(1e-4) <= 3.0


def test_dp_mlp_clipped_gradients_match_opacus():
    """Same model, same batch: Opacus's clipped, summed per-sample gradients (noise 0) equal ours."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer as OpacusDP

    torch.manual_seed(3)
    ours = linear_mlp(10, 16, 4, 2)
    theirs = linear_mlp(10, 16, 4, 2)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(32, 10) * 3
    y = torch.randint(0, 4, (32,))
    clip = 0.5
    sums, _, _ = PerExampleGradients(ours).norms_and_sum((x,), y, clip)
    gsm = GradSampleModule(theirs)
    opt = OpacusDP(torch.optim.SGD(gsm.parameters(), lr=0.0), noise_multiplier=0.0, max_grad_norm=clip,
                   expected_batch_size=32)
    loss = nn.functional.cross_entropy(gsm(x), y, reduction="sum")
    loss.backward()
    opt.pre_step()  # clip per sample, sum, add (zero) noise, scale by 1/expected batch size
    for s, p in zip(sums, gsm.parameters()):
        assert torch.allclose(s / 32, p.grad, rtol=1e-5, atol=1e-7)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 500), frac=st.floats(0.0, 1.0), seed=st.integers(0, 10**6))
def test_fixed_size_batches_are_distinct_and_exact(n, frac, seed):
    m = max(1, int(n * frac))
    s = FixedSizeSampler(n, m, torch.Generator().manual_seed(seed), unit="feature")
    idx = s.sample()
    assert idx.numel() == m and idx.unique().numel() == m and int(idx.min()) >= 0 and int(idx.max()) < n
    e = s.event(1.1)
    assert isinstance(e, FixedSizeGaussian) and (e.population, e.sample_size, e.relation) == (n, m, "replace_one")


def test_poisson_batches_have_the_right_rate_and_may_be_empty():
    s = PoissonSampler(2000, 0.1, torch.Generator().manual_seed(0))
    sizes = np.array([s.sample().numel() for _ in range(200)])
    assert abs(sizes.mean() - 200) < 5 and sizes.std() > 5
    tiny = PoissonSampler(5, 0.01, torch.Generator().manual_seed(0))
    assert any(tiny.sample().numel() == 0 for _ in range(50))


def test_an_empty_poisson_batch_still_adds_noise():
    model = linear_mlp(4, 4, 2)
    before = [p.detach().clone() for p in model.parameters()]
    dp = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=1.0), clip=1.0,
                     generator=torch.Generator().manual_seed(0))
    info = dp.step((torch.zeros(0, 4),), torch.zeros(0, dtype=torch.long), noise_std=1.0, denominator=5.0)
    assert info.batch_size == 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_quantile_clipping_tracks_the_target_quantile():
    torch.manual_seed(0)
    model = linear_mlp(6, 8, 3)
    dp = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.0), clip=100.0,
                     quantile=QuantileClipping(0.5, learning_rate=0.3, count_noise_std=1.0),
                     generator=torch.Generator().manual_seed(0))
    inputs, target = mlp_batch(64, scale=2.0)
    norms = PerExampleGradients(model).norms_and_sum(inputs, target, 1.0)[1]
    for _ in range(200):
        info = dp.step(inputs, target, noise_std=0.0, denominator=64)
    assert info.count_noise_std == 1.0
    assert abs(float((norms <= dp.clip).float().mean()) - 0.5) < 0.15


def test_poisson_batches_by_gaps_have_the_coins_distribution():
    """Above GAP_SAMPLING_FROM, Poisson batches come from geometric gaps: sorted distinct members in range, batch
    sizes Binomial(n, q) (mean and variance), every example included with probability q (first, middle, last)."""
    from methods.dpsgd import poisson_by_gaps

    n, q, trials = 3000, 0.02, 3000
    g = torch.Generator().manual_seed(0)
    counts = torch.zeros(n)
    sizes = []
    for _ in range(trials):
        idx = poisson_by_gaps(n, q, g)
        assert idx.numel() == 0 or (idx.min() >= 0 and idx.max() < n and bool((idx[1:] > idx[:-1]).all()))
        counts[idx] += 1
        sizes.append(idx.numel())
    sizes = torch.tensor(sizes, dtype=torch.float64)
    mean, var = n * q, n * q * (1 - q)
    assert abs(float(sizes.mean()) - mean) < 4 * math.sqrt(var / trials)
    assert 0.85 < float(sizes.var()) / var < 1.15
    freq = counts / trials
    sd = math.sqrt(q * (1 - q) / trials)
    assert abs(float(freq.mean()) - q) < 4 * sd / math.sqrt(n)
    for part in (freq[:300], freq[1350:1650], freq[-300:]):  # no edge effect at either end
        assert abs(float(part.mean()) - q) < 4 * sd / math.sqrt(part.numel())
    assert poisson_by_gaps(10, 1e-9, g).numel() == 0
    assert poisson_by_gaps(5, 0.4999, torch.Generator().manual_seed(1)).max() < 5


def test_poisson_sampler_switches_to_gaps_only_for_large_populations(monkeypatch):
    from methods import dpsgd

    small = dpsgd.PoissonSampler(1000, 0.05, torch.Generator().manual_seed(4))
    coins = (torch.rand(1000, generator=torch.Generator().manual_seed(4)) < 0.05).nonzero().view(-1)
    assert torch.equal(small.sample(), coins)  # below the threshold: the published stream, unchanged
    monkeypatch.setattr(dpsgd, "GAP_SAMPLING_FROM", 1000)
    big = dpsgd.PoissonSampler(1000, 0.05, torch.Generator().manual_seed(4))
    assert torch.equal(big.sample(), dpsgd.poisson_by_gaps(1000, 0.05, torch.Generator().manual_seed(4)))
    half = dpsgd.PoissonSampler(1000, 0.5, torch.Generator().manual_seed(4))
    rates = (torch.rand(1000, generator=torch.Generator().manual_seed(4)) < 0.5).nonzero().view(-1)
    assert torch.equal(half.sample(), rates)


CUDA = pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(),
                                                                        reason="no CUDA device")])


@pytest.mark.parametrize("device", ["cpu", CUDA])
def test_step_releases_the_clipped_sum_plus_the_streams_draws_bit_for_bit(device):
    """DPOptimizer.step's released sums and parameter updates equal, bit for bit, the plain formula: the clipped sum
    of the same per-example gradients plus one torch.normal draw per parameter tensor in order, over the
    denominator (so a speed-up of the step can change no published run)."""
    import copy

    class Observe:
        read_only = True

        def split(self, opt, inputs, target):
            return inputs, target, None

        def observe(self, opt, noisy_sums):
            self.sums = [s.clone() for s in noisy_sums]

    torch.manual_seed(5)
    model = DenseGCN(6, 3, hidden=8, layers=2).to(device)
    twin = copy.deepcopy(model)
    dp = DPOptimizer(model, torch.optim.Adam(model.parameters(), lr=0.01), clip=0.5,
                     generator=torch.Generator(device=device).manual_seed(3))
    grads, gen = PerExampleGradients(twin), torch.Generator(device=device).manual_seed(3)
    opt = torch.optim.Adam(twin.parameters(), lr=0.01)
    for step in range(3):
        inputs, target = subgraph_batch(9, seed=step, scale=3.0)
        inputs, target = tuple(x.to(device) for x in inputs), target.to(device)
        with gradient_hook(Observe()) as hook:
            dp.step(inputs, target, noise_std=0.7, denominator=9.0)
        sums, _, _ = grads.norms_and_sum(inputs, target, 0.5)
        noisy = [s + torch.normal(0.0, 0.7, size=tuple(s.shape), generator=gen, dtype=s.dtype, device=s.device)
                 for s in sums]
        for p, s in zip(twin.parameters(), noisy):
            p.grad = s / 9.0
        opt.step()
        opt.zero_grad(set_to_none=True)
        assert all(torch.equal(a, b) for a, b in zip(hook.sums, noisy))
        assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters()))


def test_a_sum_handed_out_twice_gets_each_parameters_own_noise_once():
    """A PerExampleGradients subclass may return one tensor for two parameters; the in-place noise must not add
    both parameters' draws to it."""
    class Shared(PerExampleGradients):
        def norms_and_sum(self, inputs, target, clip, per_layer=False, weight=None):
            sums, norms, losses = super().norms_and_sum(inputs, target, clip, per_layer, weight)
            return [sums[0], sums[0]], norms, losses

    model = nn.Linear(3, 3, bias=False)
    model.extra = nn.Linear(3, 3, bias=False)  # a second 3 x 3 parameter tensor the loss never reaches
    dp = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.0), clip=1.0,
                     generator=torch.Generator().manual_seed(0), mode="vmap")
    dp.grads = Shared(model, mode="vmap")

    class Observe:
        def split(self, opt, inputs, target):
            return inputs, target, None

        def observe(self, opt, noisy_sums):
            self.sums = [s.clone() for s in noisy_sums]

    inputs, target = mlp_batch(4, f=3, c=3)
    with gradient_hook(Observe()) as hook:
        dp.step(inputs, target, noise_std=1.0, denominator=1.0)
    plain = Shared(model, mode="vmap").norms_and_sum(inputs, target, 1.0)[0][0]
    gen = torch.Generator().manual_seed(0)
    for released in hook.sums:
        assert torch.equal(released, plain + torch.normal(0.0, 1.0, size=(3, 3), generator=gen))
