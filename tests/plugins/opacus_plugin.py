"""Node-level DP-SGD written with Opacus, as a researcher would: ``PrivacyEngine.make_private`` on an MLP over each
node's own row, the noise multiplier calibrated to the suite's DP-MLP ledger (add/remove of one node, Poisson rate
B / n, ceil(n / B) steps per epoch). ``bench verify`` reads its steps through :mod:`methods.opacus_bridge`; the
method itself has no line for the suite.

``opacus-dp-mlp``
    Correct: Poisson sampling (Opacus's default). Opacus's rate is 1 / ceil(n / B) <= B / n, the ledger's.
``opacus-dp-mlp-shuffled``
    BROKEN: ``make_private(poisson_sampling=False)``, shuffled fixed-size batches under the same Poisson ledger
    (true epsilon >= 2.74 at claim 1 on Cora).
``opacus-dp-mlp-undernoised``
    BROKEN: the optimiser's noise multiplier is half the ledger's.
``opacus-dp-mlp-per-layer``
    Correct: per-layer clipping (``make_private(clipping="per_layer")``), each parameter tensor's threshold a share of
    C whose L2 norm is C, so an example's whole clipped gradient is still within C.
``opacus-dp-mlp-per-layer-undernoised``
    BROKEN: per-layer clipping with half the accounted noise multiplier.
``opacus-dp-mlp-distributed``
    Correct: ``DifferentiallyPrivateDistributedDataParallel`` on one worker (a gloo process group of size 1), so Opacus
    runs its ``DistributedDPOptimizer``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from methods import Method, register
from methods import inference as I
from methods.base import ConfigError, FitContext, Fitted
from methods.privacy import calibrate_noise, presets


@dataclass
class OpacusConfig:
    hidden: int = 16
    lr: float = 0.01
    epochs: int = 20
    batch_size: int = 64
    clip: float = 1.0

    def validate(self) -> None:
        if min(self.hidden, self.epochs, self.batch_size) < 1 or self.lr <= 0 or self.clip <= 0:
            raise ConfigError("hidden, epochs, batch_size >= 1; lr, clip > 0")


class OpacusFitted(Fitted):
    def __init__(self, model, x, ledger, info) -> None:
        self.model, self.x, self.ledger, self.info, self.history = model.eval(), x, ledger, info, []

    def predict_proba(self, nodes=None):
        with torch.no_grad():
            p = torch.softmax(self.model(self.x), dim=-1)
        return p if nodes is None else p[torch.as_tensor(nodes, dtype=torch.long)]

    def release(self):
        return {f"model.{k}": v.detach() for k, v in self.model.state_dict().items()}

    def serving_state(self):
        return {"x": self.x}


#: per-layer clipping: each parameter tensor's share of C (normalised so that the thresholds' L2 norm is C)
PER_LAYER_SHARES = (0.9, 0.1, 0.4, 0.1)


def _one_worker_group() -> None:
    """A gloo process group of one worker (this process), for Opacus's distributed optimiser."""
    import tempfile

    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method=f"file://{tempfile.mkdtemp()}/group", rank=0, world_size=1)


def fit_with_opacus(ctx: FitContext, c, *, poisson_sampling: bool = True, noise_factor: float = 1.0,
                    per_layer: bool = False, distributed: bool = False) -> Fitted:
    """An MLP over each node's own row trained with Opacus's ``make_private`` (``c``: hidden, lr, epochs, batch_size,
    clip), its noise multiplier z calibrated to the DP-MLP ledger and the optimiser given ``noise_factor`` x z;
    ``per_layer``: each parameter tensor clipped to its share of C (:data:`PER_LAYER_SHARES`); ``distributed``: the
    module wrapped for Opacus's distributed optimiser, on one worker."""
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    task, budget = ctx.task, ctx.budget
    train = task.train_mask.nonzero().view(-1)
    n = int(train.numel())
    if n == 0:
        raise ConfigError(f"{task.dataset}/{task.split} has no training node")
    b = min(c.batch_size, n)
    steps = c.epochs * math.ceil(n / b)

    def ledger_for(z: float):
        return presets.dp_mlp(num_train=n, batch_size=b, noise_multiplier=z, steps=steps)

    z = calibrate_noise(ledger_for, budget.epsilon, budget.delta)
    x = (task.data.x.to_dense() if task.data.x.is_sparse else task.data.x).float()
    with ctx.init():
        model = torch.nn.Sequential(torch.nn.Linear(task.num_features, c.hidden), torch.nn.ReLU(),
                                    torch.nn.Linear(c.hidden, task.num_classes))
    loader = DataLoader(TensorDataset(x[train], task.data.y[train]), batch_size=b, shuffle=True,
                        generator=ctx.generator("sampler"))
    engine = PrivacyEngine(accountant="rdp")
    clip: float | list[float] = c.clip
    if per_layer:
        scale = c.clip / math.sqrt(sum(s * s for s in PER_LAYER_SHARES))
        clip = [s * scale for s in PER_LAYER_SHARES]
    module = model
    if distributed:
        from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP

        _one_worker_group()
        module = DPDDP(model)
    model, opt, loader = engine.make_private(
        module=module, optimizer=torch.optim.SGD(model.parameters(), lr=c.lr), data_loader=loader,
        noise_multiplier=z * noise_factor, max_grad_norm=clip, poisson_sampling=poisson_sampling,
        noise_generator=ctx.generator("noise"), clipping="per_layer" if per_layer else "flat")
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(c.epochs):
        for xb, yb in loader:
            opt.zero_grad()
            if xb.size(0):
                loss_fn(model(xb), yb).backward()
            else:  # an empty Poisson batch: Opacus still steps (noise only)
                model(xb).sum().backward()
            opt.step()
    model.remove_hooks()  # the served model is the plain module: no Opacus hooks to pickle
    net = model._module
    if distributed:
        net = net.module
    return OpacusFitted(net, x, ledger_for(z), {"noise_multiplier": z, "steps": steps})


@register("opacus-dp-mlp")
class OpacusDPMLP(Method):
    """Node-level DP-SGD on an MLP through Opacus's ``make_private`` (Poisson sampling)."""

    description = "MLP on node features, DP-SGD through Opacus make_private (node-level; test plugin)"
    privacy_unit = "node"
    inference_reads = frozenset({I.OWN_FEATURES})
    Config = OpacusConfig
    smoke_config = {"epochs": 2}
    poisson_sampling = True
    noise_factor = 1.0  # the optimiser's noise multiplier / the ledger's
    per_layer = False
    distributed = False

    def _fit(self, ctx: FitContext) -> Fitted:
        return fit_with_opacus(ctx, self.config, poisson_sampling=self.poisson_sampling,
                               noise_factor=self.noise_factor, per_layer=self.per_layer, distributed=self.distributed)


@register("opacus-dp-mlp-shuffled")
class OpacusShuffled(OpacusDPMLP):
    """BROKEN: shuffled fixed-size batches (``poisson_sampling=False``) under the Poisson ledger."""

    description = "BROKEN: Opacus make_private(poisson_sampling=False) accounted as Poisson subsampling"
    poisson_sampling = False


@register("opacus-dp-mlp-undernoised")
class OpacusUndernoised(OpacusDPMLP):
    """BROKEN: the optimiser's noise multiplier is half what the ledger states."""

    description = "BROKEN: Opacus with half the accounted noise multiplier"
    noise_factor = 0.5


@register("opacus-dp-mlp-per-layer")
class OpacusPerLayer(OpacusDPMLP):
    """Per-layer clipping (``clipping="per_layer"``), the thresholds' L2 norm C: correct."""

    description = "MLP on node features, DP-SGD through Opacus with per-layer clipping (node-level; test plugin)"
    per_layer = True


@register("opacus-dp-mlp-per-layer-undernoised")
class OpacusPerLayerUndernoised(OpacusPerLayer):
    """BROKEN: per-layer clipping with half the accounted noise multiplier."""

    description = "BROKEN: Opacus per-layer clipping with half the accounted noise multiplier"
    noise_factor = 0.5


@register("opacus-dp-mlp-distributed")
class OpacusDistributed(OpacusDPMLP):
    """Opacus's distributed optimiser on one worker: correct."""

    description = "MLP on node features, DP-SGD through Opacus's distributed optimiser on one worker (test plugin)"
    distributed = True
