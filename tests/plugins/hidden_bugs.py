"""Private methods that a new user could write, broken in ways the suite's own counters do not show, for the
verification and audit tests.

Test-only, registered through the public interface (``bench --plugin tests/plugins/hidden_bugs.py`` or by
importing this module), never shipped. Unlike the mutant zoo (``tests/plugins/mutants.py``), whose bugs sit
inside the suite's instrumented code, these hide from the suite's counters:

``dp-mlp-overspent``
    DP-MLP that calibrates its noise to ``OVERSPEND`` x the target epsilon and attaches the ledger of a correct
    fit at the target: the ledger states the target's noise multiplier z, the steps run with the smaller
    z' of ``OVERSPEND`` x epsilon. True epsilon: ``OVERSPEND`` x the target (the DP-MLP ledger at z', by
    construction of the calibration). The white-box audit sees its real noise, so the exact epsilon of the pair
    it realises is about ``OVERSPEND`` x the claim.
``handwritten-dpsgd``
    Node-level DP-SGD on an MLP with its own loop (per-example gradients with ``torch.func``, Poisson batches,
    clipping to C, Gaussian noise), not :class:`methods.dpsgd.DPOptimizer`, so no step hook sees its steps and
    no white-box check can read them. Its ledger is DP-MLP's (``steps x PoissonGaussian(rate, z)``), but it draws
    ``noise_factor`` x z C of noise (default 0.5). True epsilon: the DP-MLP ledger at ``noise_factor`` x z (about
    2.2 at claim 1 on Cora). With ``noise_factor=1`` it is a correct method that the suite cannot look inside.
``neighbour-reading-dpsgd``
    Node-level DP-SGD whose example for node v reads its neighbours' rows (``layout``: ``sage`` [x_v | mean x_u],
    ``sum``, ``gcn``), accounted as independent nodes (DP-MLP's ledger). True epsilon: at least 10 at claim 1 with
    three training neighbours (a node sits in 1 + deg examples). Caught by ``occurrences`` through the traced input
    layout (:mod:`audits.checks._layout`), where a first layer of width 2F used to read as "not applicable".
``shuffled-dp-mlp``
    DP-MLP on shuffled fixed-size batches with the Poisson ledger (true epsilon >= 2.74 at claim 1 on Cora).
    ``ledger-counts`` sees batch sizes that Poisson sampling would not give (:func:`audits.checks.ledger_counts.
    poisson_shape`).
``projected-dp-mlp``
    A correct DP-MLP on a public random rotation of each row: its input layout cannot be traced, so the white-box
    canary checks are INCONCLUSIVE rather than skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from methods import inference as I
from methods.base import ConfigError, FitContext, Method, register
from methods.dp_mlp import DPMLP
from methods.dpsgd import PoissonSampler
from methods.models import GraphInput, linear_mlp
from methods.privacy import PrivacyLedger, calibrate_noise, presets
from methods.training import FeatureQueryFitted, feature_map

#: dp-mlp-overspent trains at this multiple of the target epsilon
OVERSPEND = 2.5


@register("dp-mlp-overspent")
class DPMLPOverspent(DPMLP):
    """DP-MLP whose steps are calibrated to ``OVERSPEND`` x the target epsilon while its ledger states the
    target's (see the module docstring)."""

    description = f"BROKEN: DP-MLP trained at {OVERSPEND:g}x its budget with a correct fit's ledger"

    def _fit(self, ctx: FitContext):
        import methods.dp_mlp as mod

        ratio = {}
        real_calibrate, real_opt = mod.calibrate_noise, mod.DPOptimizer

        def calibrate(ledger_for, epsilon, delta):
            z = real_calibrate(ledger_for, epsilon, delta)  # what the ledger will state
            ratio["run"] = real_calibrate(ledger_for, OVERSPEND * epsilon, delta) / z  # BUG: what the steps use
            return z

        class Overspent(real_opt):
            def step(self, inputs, target, noise_std, denominator):
                return super().step(inputs, target, noise_std * ratio.get("run", 1.0), denominator)

        mod.calibrate_noise, mod.DPOptimizer = calibrate, Overspent
        try:
            fitted = super()._fit(ctx)
        finally:
            mod.calibrate_noise, mod.DPOptimizer = real_calibrate, real_opt
        fitted.info["noise_multiplier_run"] = fitted.info["noise_multiplier"] * ratio.get("run", 1.0)
        return fitted


@dataclass
class HandwrittenConfig:
    hidden: int = 16
    lr: float = 0.01
    epochs: int = 100
    batch_size: int = 256
    clip: float = 1.0
    noise_factor: float = 0.5  # BUG at the default: the noise drawn, as a multiple of what the ledger accounts

    def validate(self) -> None:
        if min(self.hidden, self.epochs, self.batch_size) < 1:
            raise ConfigError("hidden, epochs and batch_size must be >= 1")
        if self.lr <= 0 or self.clip <= 0 or self.noise_factor <= 0:
            raise ConfigError("lr, clip and noise_factor must be > 0")


class _MLP(torch.nn.Module):
    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, g: GraphInput) -> torch.Tensor:
        return self.net(g.x)


@register("handwritten-dpsgd")
class HandwrittenDPSGD(Method):
    """Node-level DP-SGD (DP-Adam) on an MLP with a hand-written loop: Poisson rate B / n, per-example clipping to
    C, N(0, (noise_factor z C)^2) on the sum, DP-MLP's ledger at z (see the module docstring)."""

    description = "MLP with a hand-written DP-SGD loop (not methods.dpsgd); test plugin"
    privacy_unit = "node"
    inference_reads = frozenset({I.OWN_FEATURES})  # an MLP on the queried node's own row
    Config = HandwrittenConfig
    smoke_config = {"epochs": 2, "hidden": 8, "batch_size": 32}

    def _fit(self, ctx: FitContext):
        from torch.func import functional_call, grad, vmap

        task, budget, c = ctx.task, ctx.budget, self.config
        idx = task.train_mask.nonzero().view(-1)
        n = int(idx.numel())
        if n == 0:
            raise ConfigError(f"{task.dataset}/{task.split} has no training node")
        steps = c.epochs * max(1, math.ceil(n / c.batch_size))

        def ledger_for(z: float, t: int = steps) -> PrivacyLedger:
            return presets.dp_mlp(num_train=n, batch_size=c.batch_size, noise_multiplier=z, steps=t)

        z = calibrate_noise(ledger_for, budget.epsilon, budget.delta)
        x_all = task.data.x.float()
        x, y = x_all[idx], task.data.y[idx]
        with ctx.init():
            net = linear_mlp(task.num_features, c.hidden, task.num_classes, 2)
        params = {k: v.detach() for k, v in net.named_parameters()}
        opt = torch.optim.Adam(list(params.values()), lr=c.lr)
        for v in params.values():
            v.requires_grad_(False)
        sampler = PoissonSampler(n, presets.poisson_rate(c.batch_size, n), ctx.generator("sampler"), unit="node")
        noise_gen = ctx.generator("noise")

        def loss(p, xi, yi):
            out = functional_call(net, p, (xi.unsqueeze(0),))
            return torch.nn.functional.cross_entropy(out, yi.unsqueeze(0))

        per_example = vmap(grad(loss), in_dims=(None, 0, 0))
        for _ in range(steps):
            b = sampler.sample()
            grads = per_example(params, x[b], y[b]) if b.numel() else {k: v[None] * 0 for k, v in params.items()}
            norms = torch.sqrt(sum(g.reshape(g.size(0), -1).pow(2).sum(1) for g in grads.values()))
            scale = (c.clip / (norms + 1e-12)).clamp(max=1.0)
            for k, p in params.items():
                g = (grads[k] * scale.view(-1, *([1] * (grads[k].dim() - 1)))).sum(0)
                noise = torch.normal(0.0, c.noise_factor * z * c.clip, p.shape, generator=noise_gen)
                p.grad = (g + noise) / sampler.expected_size
            opt.step()
        net.load_state_dict(params)
        info = {"noise_multiplier": z, "steps": steps}
        return FeatureQueryFitted(_MLP(net), GraphInput(x_all, torch.empty(2, 0, dtype=torch.long)),
                                  ledger_for(z), [{"epoch": c.epochs}], info, feature_map=feature_map(False))


def neighbour_inputs(x: torch.Tensor, edge_index: torch.Tensor, layout: str) -> torch.Tensor:
    """The input a node's DP-SGD example reads under ``layout``: ``sage`` [x_v | mean of x_u over N(v)] (width 2F),
    ``sum`` [x_v | sum over N(v)] (2F), ``gcn`` the GCN-normalised aggregate D^-1/2 (A + I) D^-1/2 x (F)."""
    n = x.size(0)
    src, dst = edge_index
    agg = torch.zeros_like(x).index_add_(0, dst, x[src])
    deg = torch.bincount(dst, minlength=n).to(x.dtype)
    if layout == "sage":
        return torch.cat([x, agg / deg.clamp(min=1).view(-1, 1)], 1)
    if layout == "sum":
        return torch.cat([x, agg], 1)
    d = (deg + 1).rsqrt()
    w = d[src] * d[dst]
    return torch.zeros_like(x).index_add_(0, dst, x[src] * w.view(-1, 1)) + x * (d * d).view(-1, 1)


@dataclass
class NeighbourConfig(DPMLP.Config):
    layout: str = "sage"  # sage | sum | gcn (neighbour_inputs)

    def validate(self) -> None:
        super().validate()
        if self.layout not in ("sage", "sum", "gcn"):
            raise ConfigError(f"layout must be sage, sum or gcn (got {self.layout!r})")


@register("neighbour-reading-dpsgd")
class NeighbourReadingDPSGD(DPMLP):
    """BROKEN: node-level DP-SGD whose example for node v reads its neighbours' rows (``layout``: one SAGE-style
    layer's [x_v | mean x_u], a sum, or a GCN-normalised aggregate), with DP-MLP's ledger, which treats the nodes
    as independent examples. Removing node u changes the example of u and of each of its training neighbours: an
    occurrence bound of 1 + deg(u) where the ledger assumes 1 (true epsilon >= 10 at claim 1 with three training
    neighbours, as group privacy of the Poisson-subsampled Gaussian)."""

    description = "BROKEN: DP-SGD examples that read the neighbours' rows, accounted as independent nodes"
    Config = NeighbourConfig
    inference_reads = frozenset({I.OWN_FEATURES, I.OTHER_FEATURES, I.EDGES})  # served from its aggregated input

    def _fit(self, ctx: FitContext):
        import dataclasses

        task = ctx.task
        data = task.data.clone()
        x = data.x.to_dense() if data.x.is_sparse else data.x
        data.x = neighbour_inputs(x.float(), data.edge_index, self.config.layout)
        return super()._fit(dataclasses.replace(ctx, task=dataclasses.replace(task, data=data)))


class ShuffledBatches:
    """A shuffled pass over the examples in batches of ``batch_size`` (the last batch of a pass smaller): what a
    ``DataLoader(shuffle=True)`` gives. Every example exactly once per pass."""

    def __init__(self, n: int, batch_size: int, generator: torch.Generator) -> None:
        self.n, self.m, self.gen = n, min(batch_size, n), generator
        self._queue = torch.empty(0, dtype=torch.long)

    @property
    def expected_size(self) -> float:
        return float(self.m)

    def sample(self) -> torch.Tensor:
        if self._queue.numel() == 0:
            self._queue = torch.randperm(self.n, generator=self.gen)
        out, self._queue = self._queue[: self.m], self._queue[self.m:]
        return out


@register("shuffled-dp-mlp")
class ShuffledDPMLP(DPMLP):
    """BROKEN: DP-MLP on shuffled fixed-size batches (each node once per epoch) with the ledger of Poisson
    subsampling at rate B / n. Shuffling does not amplify like Poisson sampling: the worst-case pair has the other
    examples' clipped gradients at -C on the canary's coordinate (Chua et al., ICML 2024), where this ledger
    understates epsilon (true epsilon >= 2.74 at claim 1 on Cora, >= 13.5 at claim 4)."""

    description = "BROKEN: DP-MLP on shuffled fixed-size batches accounted as Poisson subsampling"

    def _sampling(self, n: int, gen: torch.Generator):
        sampler, family, sensitivity = super()._sampling(n, gen)
        return ShuffledBatches(n, self.config.batch_size, gen), family, sensitivity


@register("projected-dp-mlp")
class ProjectedDPMLP(DPMLP):
    """A correct DP-MLP on a fixed public random rotation of each node's own row (x R, R from a public seed): every
    example is still one node's own row, but no input column is one raw feature column, so which columns carry a
    node's data cannot be traced and the white-box canary checks say so (INCONCLUSIVE) instead of "not applicable"."""

    description = "DP-MLP on a public random rotation of each row (correct; its input layout cannot be traced)"

    def _fit(self, ctx: FitContext):
        import dataclasses

        task = ctx.task
        data = task.data.clone()
        x = (data.x.to_dense() if data.x.is_sparse else data.x).float()
        gen = torch.Generator().manual_seed(12345)  # a public constant: R is not data
        r, _ = torch.linalg.qr(torch.randn(x.size(1), x.size(1), generator=gen))
        data.x = x @ r
        return super()._fit(dataclasses.replace(ctx, task=dataclasses.replace(task, data=data)))


__all__ = ["DPMLPOverspent", "HandwrittenDPSGD", "NeighbourReadingDPSGD", "OVERSPEND", "ProjectedDPMLP",
           "ShuffledBatches", "ShuffledDPMLP",
           "neighbour_inputs"]
