"""A complete private plugin to copy: `bench --plugin tests/plugins/private_plugin.py verify --method my-dp-logreg ...`.

Node-level DP-SGD on a logistic regression over each node's own feature row (a node is one example): Poisson
batches at rate B / n, per-example clipping to C and Gaussian noise z C through the suite's DP optimiser (whose
step hook the white-box checks of ``bench verify`` read), z calibrated so that the ledger built by the DP-MLP
family function meets the target. The graph is never read, so removing a node removes at most one example; the
training-node count n is public to the claim (the family function names it). It releases its weights; the feature
rows it serves from are serving state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from methods import Method, register
from methods import inference as I
from methods.base import ConfigError, FitContext, Fitted
from methods.dpsgd import DPOptimizer, PoissonSampler
from methods.privacy import calibrate_noise, presets


@dataclass
class LogRegConfig:
    lr: float = 0.05
    epochs: int = 30
    batch_size: int = 256  # expected Poisson batch size
    clip: float = 1.0  # per-example gradient norm bound C (fixed, never data-derived)

    def validate(self) -> None:
        if min(self.epochs, self.batch_size) < 1 or self.lr <= 0 or self.clip <= 0:
            raise ConfigError("epochs and batch_size must be >= 1, lr and clip > 0")


class LogRegFitted(Fitted):
    def __init__(self, model: torch.nn.Module, x: torch.Tensor, ledger, info: dict) -> None:
        self.model, self.x, self.ledger, self.info = model.eval(), x, ledger, info
        self.history: list[dict[str, float]] = []

    def predict_proba(self, nodes=None):
        with torch.no_grad():
            p = torch.softmax(self.model(self.x), dim=-1)
        return p if nodes is None else p[torch.as_tensor(nodes, dtype=torch.long)]

    def release(self):
        """What the ledger covers: the trained weights."""
        return {f"model.{k}": v.detach() for k, v in self.model.state_dict().items()}

    def serving_state(self):
        """The feature rows the server answers from: held, not released."""
        return {"x": self.x}


@register("my-dp-logreg")
class MyDPLogReg(Method):
    """Node-level DP-SGD logistic regression on each node's own features (a plugin example)."""

    description = "DP-SGD logistic regression on node features (node-level; private plugin example)"
    privacy_unit = "node"
    inference_reads = frozenset({I.OWN_FEATURES})  # a node is served from its own row and the weights
    Config = LogRegConfig
    smoke_config = {"epochs": 2}

    def _fit(self, ctx: FitContext) -> Fitted:
        task, budget, c = ctx.task, ctx.budget, self.config
        train = task.train_mask.nonzero().view(-1)
        n = int(train.numel())
        if n == 0:
            raise ConfigError(f"{task.dataset}/{task.split} has no training node")
        steps = c.epochs * max(1, math.ceil(n / c.batch_size))

        def ledger_for(z: float):
            return presets.dp_mlp(num_train=n, batch_size=c.batch_size, noise_multiplier=z, steps=steps)

        z = calibrate_noise(ledger_for, budget.epsilon, budget.delta)
        x = task.data.x.to_dense() if task.data.x.is_sparse else task.data.x
        with ctx.init():
            model = torch.nn.Linear(task.num_features, task.num_classes)
        opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=c.lr), clip=c.clip,
                          generator=ctx.generator("noise"))
        sampler = PoissonSampler(n, presets.poisson_rate(c.batch_size, n), ctx.generator("sampler"), unit="node")
        xs, ys = x[train], task.data.y[train]
        for _ in range(steps):
            idx = sampler.sample()
            opt.step((xs[idx],), ys[idx], noise_std=z * c.clip, denominator=sampler.expected_size)
        return LogRegFitted(model, x, ledger_for(z), {"noise_multiplier": z, "steps": steps})
