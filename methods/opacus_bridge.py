"""Opacus's DP-SGD steps under the suite's gradient hooks (:func:`methods.dpsgd.gradient_hook`), so the white-box
checks of ``bench verify`` and the white-box audits read a method trained with Opacus (``PrivacyEngine.make_private``
or ``opacus.optimizers.DPOptimizer``) as they read one trained with :class:`methods.dpsgd.DPOptimizer`.

While a hook is active, :func:`bridged` replaces ``opacus.optimizers.optimizer.DPOptimizer.pre_step`` (every
Opacus optimiser inherits it) and records the input of each ``GradSampleModule`` forward under autograd (the
step's batch). At a step the hooks see what they see of the suite's optimiser: ``split`` the batch's inputs (an
auditor may take examples out, whose per-sample gradients are then zeroed, and put its own clipped sums in),
``observe_noise`` the noise Opacus drew (the noisy sum minus the clipped sum) and ``observe`` the noisy sums
before Opacus divides them by the expected batch size. Nothing changes outside an active hook, and the optimiser
is the user's own: no line of the method changes. Per-layer clipping (``DPPerLayerOptimizer``, or
``make_private(clipping="per_layer")``) is bridged with its thresholds; a distributed optimiser
(``DistributedDPOptimizer``) only with one worker, where it is the plain optimiser. With several workers each sees its
own share of the batch and only the first adds noise, so one process cannot follow the step: those steps go through
unobserved (the checks then say they could not see them).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch

from methods.errors import ContractViolation


class _Params:
    def __init__(self, params) -> None:
        self.params = [(f"p{i}", p) for i, p in enumerate(params)]


class OpacusView:
    """What a gradient hook reads of an Opacus optimiser, named as :class:`methods.dpsgd.DPOptimizer` names it:
    ``grads.params`` (name, parameter) pairs, ``clip`` (max_grad_norm: per layer, the L2 norm of the thresholds, which
    bounds an example's whole clipped gradient and scales the noise), ``per_layer`` with ``thresholds`` (each parameter
    tensor's, or None), ``quantile`` (None: a fixed threshold), ``generator``."""

    def __init__(self, opt) -> None:
        self.opt = opt
        self.grads = _Params(opt.params)
        self.clip = float(opt.max_grad_norm)
        norms = getattr(opt, "max_grad_norms", None)
        self.per_layer = norms is not None
        self.thresholds = [float(c) for c in norms] if norms is not None else None
        self.quantile = None
        self.generator = getattr(opt, "generator", None)


_state: dict[str, Any] = {"depth": 0, "input": None}


def _bridgeable(opt) -> bool:
    """Whether the hooks can follow ``opt``'s step: Opacus's own clipping (flat or per layer) and noise (one
    process)."""
    from opacus.optimizers import DistributedDPOptimizer, DPPerLayerOptimizer
    from opacus.optimizers.optimizer import DPOptimizer

    clipping = type(opt).clip_and_accumulate in (DPOptimizer.clip_and_accumulate,
                                                 DPPerLayerOptimizer.clip_and_accumulate)
    noise = type(opt).add_noise is DPOptimizer.add_noise or (
        type(opt).add_noise is DistributedDPOptimizer.add_noise and getattr(opt, "world_size", None) == 1)
    return clipping and noise


def _pre_step(real):
    def pre_step(self, closure=None):
        hooks = _state.get("hooks") or []
        hook = hooks[-1] if hooks else None  # the innermost, as methods.dpsgd.DPOptimizer.step uses
        if hook is None or not _bridgeable(self):
            return real(self, closure)
        if self.grad_samples is None or len(self.grad_samples) == 0:
            return True
        view = self.__dict__.get("_suite_view")
        if view is None:  # one view per optimiser: hooks key their state on it
            view = self.__dict__["_suite_view"] = OpacusView(self)
        view.clip = float(self.max_grad_norm)
        b = int(self.grad_samples[0].size(0))
        x = _state["input"]
        inputs = (x,) if isinstance(x, torch.Tensor) and x.size(0) == b else ()
        hook.last_keep = None
        kept, _, extra = hook.split(view, inputs, torch.zeros(b))
        keep = getattr(hook, "last_keep", None)
        if keep is None and inputs and kept and kept[0].size(0) != b:
            raise ContractViolation(f"{type(hook).__name__} took examples out of a step without saying which "
                                    "(last_keep): an Opacus step cannot follow it")
        if keep is not None:  # the examples the auditor took out contribute nothing of their own
            for p in self.params:
                gs = self._get_flat_grad_sample(p)
                p.grad_sample = gs * keep.to(gs.device).view(-1, *([1] * (gs.dim() - 1))).to(gs.dtype)
        self.clip_and_accumulate()
        if extra is not None:
            for p, e in zip(self.params, extra):
                p.summed_grad = p.summed_grad + e.to(p.summed_grad.device, p.summed_grad.dtype)
        if self._check_skip_next_step():
            self._is_last_step_skipped = True
            return False
        clipped = [p.summed_grad.detach().clone() for p in self.params]
        self.add_noise()
        sums = [p.grad.detach().clone() for p in self.params]
        hook.observe(view, sums)
        observe_noise = getattr(hook, "observe_noise", None)
        if observe_noise is not None:
            observe_noise(view, [s - c for s, c in zip(sums, clipped)], float(self.noise_multiplier * self.max_grad_norm))
        self.scale_grad()
        if self.step_hook:
            self.step_hook(self)
        self._is_last_step_skipped = False
        return True

    pre_step._bridged = True  # noqa: SLF001 - a mark on our own hook
    return pre_step


def _forward(real):
    def forward(self, *args, **kwargs):
        if args and isinstance(args[0], torch.Tensor) and torch.is_grad_enabled():
            _state["input"] = args[0].detach()
        return real(self, *args, **kwargs)

    return forward


@contextlib.contextmanager
def bridged(hooks: list) -> Iterator[None]:
    """Within the block Opacus optimisers' steps go through the innermost of ``hooks`` (the live list of active
    gradient hooks, :func:`methods.dpsgd.gradient_hook`'s; nested blocks share one patch). A no-op where Opacus is
    not installed."""
    try:
        from opacus.grad_sample.grad_sample_module import GradSampleModule
        from opacus.optimizers.optimizer import DPOptimizer
    except ImportError:  # pragma: no cover - opacus is a dependency
        yield
        return
    _state["hooks"] = hooks
    if _state["depth"] == 0:
        _state["real"] = (DPOptimizer.pre_step, GradSampleModule.forward)
        DPOptimizer.pre_step = _pre_step(DPOptimizer.pre_step)
        GradSampleModule.forward = _forward(GradSampleModule.forward)
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            DPOptimizer.pre_step, GradSampleModule.forward = _state.pop("real")
            _state["input"] = None
