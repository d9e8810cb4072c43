"""The DP-SGD step as one CUDA graph over fixed-shape padded batches.

A private step of a small model is a few hundred tiny kernels (forward, the book-keeping norms, clipping, noise,
Adam). On a GPU their launches set the time, not their arithmetic: eager DP-SGD steps run at ~1.75x the non-private
step on an H200 and DP-MLP fits slower than on two CPU cores. :class:`CapturedStep` records the step once with
:class:`torch.cuda.CUDAGraph` and replays it: one launch per step. Nothing in the mechanism changes:

* Batches are padded to a fixed ``capacity``. Padding rows carry loss weight 0, so their per-example gradient, their
  norm and their share of the clipped sum are exactly 0. A batch larger than the capacity runs the eager
  :meth:`DPOptimizer.step <methods.dpsgd.DPOptimizer.step>` (never truncated: a truncated Poisson batch would be
  another mechanism). :func:`poisson_capacity` makes that a ~1e-20 event.
* No random number is drawn inside the graph. Each step draws its noise eagerly from the run's noise generator,
  the same calls in the same order as the eager step (one ``torch.normal`` per parameter tensor), straight into the
  graph's input buffer: the same seed gives the same noise on either path, and a replay cannot repeat a draw,
  whatever the CUDA generator's graph semantics are.
* The captured step calls the eager step's own :class:`~methods.dpsgd.PerExampleGradients`, in whichever gradient
  mode it runs, with the padding mask as per-example loss weights (an input indexed by example, so under ``vmap``
  each example sees its own weight, never the whole batch's); on a CPU (or with ``capture=False``) the same body runs
  eagerly, which is how the tests compare the two for every mode.
* A gradient hook that declares itself ``read_only`` (verification's step probe) sees every step as it would
  eagerly: ``split`` on the batch, then the released sums and the noise. So a verified run is the run as made.

Used where it applies (:func:`captured_step_reason` says why not otherwise): dense inputs on CUDA, an Adam-family
optimiser (``capturable=True``), no adaptive clipping and no gradient hook that may change the step.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch
from torch import Tensor

from methods.base import BenchError
from methods.dpsgd import _GRADIENT_HOOKS, DPOptimizer, StepInfo, _DeviceStepInfo

#: warm-up runs of the body on a side stream before capture (cuBLAS handles, autograd and allocator state)
WARMUP = 3


def enabled() -> bool:
    """Captured steps are on unless ``BENCH_CUDA_GRAPHS=0``."""
    return os.environ.get("BENCH_CUDA_GRAPHS", "1").strip().lower() not in ("0", "false", "no", "off")


def poisson_capacity(n: int, rate: float) -> int:
    """A padded capacity for Poisson(``rate``) batches over ``n`` examples: the mean plus 10 standard deviations
    (a Binomial tail below 1e-20), at most ``n``. Larger batches still run, eagerly."""
    mean = n * rate
    return int(min(n, math.ceil(mean + 10 * math.sqrt(mean * (1 - rate)) + 16)))


def captured_step_reason(dp: DPOptimizer, inputs: tuple, device: torch.device) -> str | None:
    """Why :class:`CapturedStep` cannot run this step (None when it can)."""
    if not enabled():
        return "BENCH_CUDA_GRAPHS=0"
    if torch.device(device).type != "cuda":
        return "not on a CUDA device"
    if dp.quantile is not None:
        return "adaptive clipping changes the threshold every step"
    if _GRADIENT_HOOKS and not getattr(_GRADIENT_HOOKS[-1], "read_only", False):
        return "a gradient hook that may change the step is active"
    if not isinstance(dp.optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return f"{type(dp.optimizer).__name__} is not a capturable optimiser here (Adam, AdamW)"
    if not all(isinstance(x, Tensor) and x.layout == torch.strided for x in inputs):
        return "sparse inputs change shape with every batch"
    if dp.generator is None:
        return "no noise generator"
    return None


def make_capturable(optimizer: torch.optim.Optimizer) -> None:
    """Switch an Adam-family optimiser that has not stepped yet to ``capturable=True`` (its step counts on the
    device, no host sync in ``step``)."""
    if optimizer.state:
        raise BenchError("make the optimiser capturable before its first step")
    for group in optimizer.param_groups:
        group["capturable"] = True


@dataclass
class _Slot:
    """Where the step reads its batch and noise, and writes its statistics (fixed addresses for the graph)."""

    index: Tensor   # [capacity + 1]: the batch's indices, padded with 0, then the batch size
    noise: list[Tensor]  # per parameter tensor: this step's noise
    stats: Tensor | None = None  # [3]: sums of norms, of clipped indicators, of losses
    released: list[Tensor] | None = None  # per parameter tensor: the noisy sums


class CapturedStep:
    """Private steps of ``dp`` over batches ``inputs[i][idx]`` / ``target[idx]`` of at most ``capacity`` examples,
    with fixed ``noise_std`` (on the sum) and ``denominator``, replayed from one CUDA graph.

    ``inputs`` and ``target`` hold every example on the device (first dimension = examples); :meth:`step` takes the
    batch's indices. ``capture=False`` runs the same body eagerly (CPU, tests).
    """

    def __init__(self, dp: DPOptimizer, inputs: tuple[Tensor, ...], target: Tensor, capacity: int,
                 noise_std: float, denominator: float, capture: bool = True) -> None:
        if capacity < 1 or noise_std < 0 or denominator <= 0:
            raise BenchError("a captured step needs capacity >= 1, noise_std >= 0 and denominator > 0")
        if dp.quantile is not None or dp.generator is None:
            raise BenchError("a captured step needs a fixed clipping threshold and a noise generator")
        self.dp, self.inputs, self.target = dp, tuple(inputs), target
        self.capacity, self.noise_std, self.denominator = int(capacity), float(noise_std), float(denominator)
        self.device = target.device
        self._grads = dp.grads  # the eager step's own per-example gradients; padding enters as loss weights
        self.params = [p for _, p in self._grads.params]
        self.slot = _Slot(torch.zeros(self.capacity + 1, dtype=torch.long, device=self.device),
                          [torch.zeros_like(p) for p in self.params])
        self.capture = capture
        self.graph = None
        self.eager_steps = 0  # batches above the capacity, run by the eager step

    # -- the step body: everything between reading the slot and Adam's update --------------

    def _body(self) -> None:
        cap, slot = self.capacity, self.slot
        idx, count = slot.index[:cap], slot.index[cap]
        weight = (torch.arange(cap, device=self.device) < count).to(self.params[0].dtype)
        xs = tuple(x.index_select(0, idx) for x in self.inputs)
        y = self.target.index_select(0, idx)
        clip = self.dp.clip
        sums, norms, losses = self._grads.norms_and_sum(xs, y, clip, self.dp.per_layer, weight=weight)
        with torch.no_grad():
            released = torch._foreach_add(sums, slot.noise)  # noqa: SLF001 - no public multi-tensor add; one multi-tensor kernel, the eager step's additions
            for p, noisy in zip(self.params, released):
                p.grad = (noisy / self.denominator).to(p.dtype)
        slot.released = released
        self.dp.optimizer.step()
        slot.stats = torch.stack([norms.sum(), (norms > clip).to(norms.dtype).sum(), losses.sum()]).detach()

    def _capture(self) -> None:
        opt = self.dp.optimizer
        saved = [p.detach().clone() for p in self.params]
        before = {id(p): {k: v.clone() for k, v in st.items() if isinstance(v, Tensor)}
                  for p, st in opt.state.items()}
        self.slot.index.zero_()
        for z in self.slot.noise:
            z.zero_()
        # warm up on the stream the capture uses, so that its cuBLAS workspace exists before capture begins
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                self._body()
        side.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            self._body()
        torch.cuda.current_stream(self.device).wait_stream(side)
        # the warm-up steps ran on zero-weight batches; undo whatever they did to the parameters and optimiser
        with torch.no_grad():
            for p, s in zip(self.params, saved):
                p.copy_(s)
            for p, st in opt.state.items():
                old = before.get(id(p), {})
                for k, v in st.items():
                    if isinstance(v, Tensor):
                        v.copy_(old[k]) if k in old else v.zero_()
        self.graph = graph

    # -- noise ------------------------------------------------------------------------------

    def _draw_noise(self) -> None:
        """This step's noise into the slot: the eager step's draws (one per parameter tensor, in order)."""
        if self.noise_std == 0:
            return  # the slot's noise stays zero, as the eager step adds none
        for z in self.slot.noise:  # __init__ made sure there is a generator
            torch.normal(0.0, self.noise_std, size=tuple(z.shape), generator=self.dp.generator, out=z)

    # -- one step ---------------------------------------------------------------------------

    def step(self, idx: Tensor) -> StepInfo:
        """One private step on the examples ``idx`` (any device; sorted or not)."""
        b = int(idx.numel())
        if b > self.capacity:
            self.eager_steps += 1
            dev_idx = idx.to(self.device)
            return self.dp.step(tuple(x[dev_idx] for x in self.inputs), self.target[dev_idx], self.noise_std,
                                self.denominator)
        hook = _GRADIENT_HOOKS[-1] if _GRADIENT_HOOKS else None
        if hook is not None:
            if not getattr(hook, "read_only", False):
                raise BenchError("a captured step runs only under a read-only gradient hook")
            dev_idx = idx.to(self.device)
            xs, y = tuple(x[dev_idx] for x in self.inputs), self.target[dev_idx]
            xs2, y2, extra = hook.split(self.dp, xs, y)
            if extra is not None or y2 is not y or any(a is not c for a, c in zip(xs, xs2)):
                raise BenchError(f"{type(hook).__name__} says it is read-only but changed the step")
        if self.capture and self.graph is None:
            self._capture()  # before the slot is filled: the warm-up runs on an empty slot
        host = torch.zeros(self.capacity + 1, dtype=torch.long)
        host[:b] = idx.cpu()
        host[self.capacity] = b
        self.slot.index.copy_(host)
        self._draw_noise()
        if self.capture:
            self.graph.replay()
        else:
            self._body()
        if hook is not None:
            hook.observe(self.dp, [r.clone() for r in self.slot.released])  # the graph rewrites its outputs
            observe_noise = getattr(hook, "observe_noise", None)
            if observe_noise is not None:
                observe_noise(self.dp, [z.clone() if self.noise_std > 0 else None for z in self.slot.noise],
                              self.noise_std)
        return _DeviceStepInfo(b, self.noise_std, self.dp.clip, self.slot.stats.clone(), sums=True)
