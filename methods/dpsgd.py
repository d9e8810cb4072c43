"""The DP-SGD engine: per-example gradients, clipping, Gaussian noise, DP-SGD / DP-Adam, batch samplers.

An *example* is whatever one row of the batch is: a node (MLP), or a whole padded subgraph (GNN
methods: ``x [B, P, F]``, ``adj [B, P, P]``). The model maps a batch of examples to one prediction
per example, ``[B, C]``, without mixing examples (no batch norm across examples); ``loss_fn`` returns
one loss per example.

Per-example gradients come from one of two routes, with identical results:

``bookkeeping``
    For models whose trainable parameters all sit in ``nn.Linear`` layers. One forward pass stores
    each layer's inputs ``a`` and one backward pass (to the layer outputs only) gives the backprops
    ``g``; the per-example gradient norm of a weight is ``sum((a a^T) * (g g^T))`` over the positions
    of an example, and the clipped sum is one matmul ``(c * a)^T g`` (the "book-keeping" trick of Bu et
    al. 2022, ghost norms of Goodfellow 2015). A layer with few weights (``in x out`` below
    ``T (in + out)``, e.g. a last layer with few classes) materialises its per-example gradients instead,
    which is cheaper there. A first layer fed :class:`methods.models.SparseRows` (sparse bag-of-words
    features) runs sparse: forward ``A W^T``, the a-Gram of each example's rows as a sparse-sparse product
    (or precomputed once per subgraph by the method), the clipped sum ``A^T (c g)``.
``vmap``
    ``torch.func.vmap(grad(...))`` over the examples: works for any functional model.

``auto`` picks bookkeeping when the model allows it. Samplers draw batches and emit the ledger
event that matches how they drew (Poisson -> add/remove; fixed-size without replacement -> replace-one).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, Literal, Protocol

import torch
from torch import Tensor, nn

from methods import mechanisms
from methods.base import BenchError
from methods.privacy.events import Event, FixedSizeGaussian, PoissonGaussian

LossFn = Callable[[Tensor, Tensor], Tensor]  # (outputs [B, C], targets [B]) -> per-example loss [B]


def cross_entropy_per_example(out: Tensor, target: Tensor) -> Tensor:
    return nn.functional.cross_entropy(out, target, reduction="none")


# --------------------------------------------------------------------------------------
# Gradient hooks (white-box audits)
# --------------------------------------------------------------------------------------


class GradientHook(Protocol):
    """What a white-box auditor may do to DP-SGD (``audits.whitebox``): replace the clipped gradients of
    chosen examples by its own (of norm at most the clipping threshold, so the method's guarantee still
    covers the run) and read every noisy gradient sum (which the accountant composes over, so it is
    released in the threat model DP-SGD is analysed in)."""

    def split(self, opt: "DPOptimizer", inputs: tuple[Tensor, ...], target: Tensor
              ) -> tuple[tuple[Tensor, ...], Tensor, list[Tensor] | None]:
        """(inputs and targets of the examples left to the model, extra clipped-gradient sums or None)."""

    def observe(self, opt: "DPOptimizer", noisy_sums: list[Tensor]) -> None:
        """The noisy sums of this step (per parameter tensor, before dividing by the denominator)."""

    # optional: ``observe_noise(opt, noise: list[Tensor | None], noise_std: float)`` receives the noise drawn
    # at this step (verification of the noise stream: ``audits.structural``); ``read_only = True`` declares that
    # ``split`` returns its inputs unchanged and no extra sums, so steps replayed from a CUDA graph
    # (``methods.dpsgd_graph``) may run under the hook: it then observes the run as it is made without it


_GRADIENT_HOOKS: list[GradientHook] = []


@contextlib.contextmanager
def gradient_hook(hook: GradientHook) -> Iterator[GradientHook]:
    """Within this block every :meth:`DPOptimizer.step` goes through ``hook`` (audits only), and so does every step of
    an Opacus optimiser (:mod:`methods.opacus_bridge`)."""
    from methods.opacus_bridge import bridged

    _GRADIENT_HOOKS.append(hook)
    try:
        with bridged(_GRADIENT_HOOKS):
            yield hook
    finally:
        _GRADIENT_HOOKS.remove(hook)


# --------------------------------------------------------------------------------------
# Per-example gradients
# --------------------------------------------------------------------------------------


#: every way :class:`PerExampleGradients` computes per-example gradients (``auto`` picks one of them)
GRADIENT_MODES = ("bookkeeping", "vmap")


def _linear_only(model: nn.Module) -> bool:
    owned = set()
    for m in model.modules():
        if isinstance(m, nn.Linear):
            owned.update(id(p) for p in m.parameters(recurse=False))
    return all(id(p) in owned for p in model.parameters() if p.requires_grad)


class PerExampleGradients:
    """Clipped sums of per-example gradients of ``model`` under ``loss_fn``."""

    def __init__(self, model: nn.Module, loss_fn: LossFn = cross_entropy_per_example,
                 mode: Literal["auto", "bookkeeping", "vmap"] = "auto") -> None:
        self.model = model
        self.loss_fn = loss_fn
        self.params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not self.params:
            raise BenchError("the model has no trainable parameter")
        if mode == "auto":
            mode = "bookkeeping" if _linear_only(model) else "vmap"
        if mode not in GRADIENT_MODES:
            raise BenchError(f"unknown per-example gradient mode {mode!r} (one of auto, {', '.join(GRADIENT_MODES)})")
        if mode == "bookkeeping" and not _linear_only(model):
            raise BenchError("bookkeeping per-example gradients need every trainable parameter in an nn.Linear")
        self.mode = mode
        #: the layers the book-keeping route records (found once, not on every step)
        self._linears = [m for m in model.modules() if isinstance(m, nn.Linear)
                         and any(p.requires_grad for p in m.parameters(recurse=False))]

    def norms_and_sum(self, inputs: tuple[Tensor, ...], target: Tensor, clip: float | list[float],
                      per_layer: bool = False, weight: Tensor | None = None) -> tuple[list[Tensor], Tensor, Tensor]:
        """Return (sum of clipped per-example grads per parameter, per-example total norms [B], losses [B]).

        ``clip`` is the flat threshold C, or with ``per_layer`` the per-parameter thresholds (a float
        is split equally: C / sqrt(#parameter tensors) each, so the total norm stays <= C).
        ``weight`` ([B], optional) multiplies each example's loss before differentiation, in every mode: a
        weight-0 example (a padding row) has gradient, norm and share of the sum exactly 0, a weight-1 example
        is unchanged. It is an example-indexed input, not a closure over the batch: inside ``vmap`` each example
        sees only its own weight.
        """
        if weight is not None and weight.shape != target.shape[:1]:
            raise BenchError(f"loss weights of shape {tuple(weight.shape)} for {target.numel()} examples")
        if target.numel() == 0:
            return [torch.zeros_like(p) for _, p in self.params], target.new_zeros(0, dtype=torch.float), \
                target.new_zeros(0, dtype=torch.float)
        if self.mode == "bookkeeping":
            return self._bookkeeping(inputs, target, clip, per_layer, weight)
        return self._vmap(inputs, target, clip, per_layer, weight)

    # -- clipping factors -------------------------------------------------------------

    def _factors(self, sq_norms: list[Tensor], clip, per_layer: bool) -> tuple[list[Tensor], Tensor]:
        total = torch.stack(sq_norms).sum(0).sqrt_()
        if not per_layer:
            c = torch.div(float(clip), total + 1e-6).clamp_(max=1.0)
            return [c] * len(sq_norms), total
        thresholds = (clip if isinstance(clip, (list, tuple))
                      else [float(clip) / math.sqrt(len(sq_norms))] * len(sq_norms))
        if len(thresholds) != len(sq_norms):
            raise BenchError(f"{len(thresholds)} per-layer thresholds for {len(sq_norms)} parameter tensors")
        return [(t / (torch.sqrt(s) + 1e-6)).clamp(max=1.0) for t, s in zip(thresholds, sq_norms)], total

    # -- vmap route -------------------------------------------------------------------

    def _vmap(self, inputs, target, clip, per_layer, weight=None):
        from torch.func import functional_call, grad_and_value, vmap

        from methods.models import SparseRows

        inputs = tuple(x.to_dense() if isinstance(x, SparseRows) else x for x in inputs)
        model = self.model
        names = [n for n, _ in self.params]
        params = {n: p.detach() for n, p in self.params}
        buffers = {n: b.detach() for n, b in model.named_buffers()}
        loss_fn = self.loss_fn

        def one(prm, w, *ex):
            *xs, y = ex
            out = functional_call(model, (prm, buffers), tuple(x.unsqueeze(0) for x in xs))
            loss = loss_fn(out, y.unsqueeze(0))
            return (loss if w is None else loss * w).sum()

        grads, losses = vmap(grad_and_value(one), in_dims=(None, None if weight is None else 0)
                             + (0,) * (len(inputs) + 1), randomness="different")(params, weight, *inputs, target)
        flat = [grads[n].reshape(target.numel(), -1) for n in names]
        sq = [(g * g).sum(1) for g in flat]
        factors, total = self._factors(sq, clip, per_layer)
        sums = [torch.einsum("b,b...->...", f, grads[n]) for f, n in zip(factors, names)]
        return sums, total, losses.detach()

    # -- book-keeping route -----------------------------------------------------------

    def _bookkeeping(self, inputs, target, clip, per_layer, weight=None):
        records: dict[nn.Linear, list[tuple[Tensor, Tensor]]] = {}

        def hook(mod, inp, out):
            records.setdefault(mod, []).append((inp[0].detach(), out))

        handles = [m.register_forward_hook(hook) for m in self._linears]
        try:
            out = self.model(*inputs)
        finally:
            for h in handles:
                h.remove()
        losses = self.loss_fn(out, target)
        if weight is not None:
            losses = losses * weight
        outs = [o for recs in records.values() for _, o in recs]
        backs = [torch.zeros_like(o) if b is None else b
                 for o, b in zip(outs, torch.autograd.grad(losses.sum(), outs, allow_unused=True))]
        B = target.numel()
        # backprops that share no memory with one another are this step's scratch: the clipped sum may scale them in
        # place (a model whose layer outputs meet unchanged, e.g. lin1(x) + lin2(x), gets one tensor for both)
        scratch = len({b.untyped_storage().data_ptr() for b in backs}) == len(backs)
        per_param: dict[int, Tensor] = {}  # id(param) -> per-example squared norms [B]
        layers: list[_Layer] = []
        k = 0
        for mod, recs in records.items():
            layer = _Layer.build(mod, [x for x, _ in recs], backs[k:k + len(recs)], B, scratch)
            k += len(recs)
            layers.append(layer)
            if mod.weight.requires_grad:
                per_param[id(mod.weight)] = layer.weight_sq_norms()
            if mod.bias is not None and mod.bias.requires_grad:
                per_param[id(mod.bias)] = layer.bias_sq_norms()
        sq = [per_param[id(p)] for _, p in self.params]
        factors, total = self._factors(sq, clip, per_layer)
        fac = {id(p): f for (_, p), f in zip(self.params, factors)}
        sums = {}
        for layer in layers:
            w, b = layer.mod.weight, layer.mod.bias
            if w.requires_grad:
                sums[id(w)] = layer.weight_sum(fac[id(w)])
            if b is not None and b.requires_grad:
                sums[id(b)] = fac[id(b)] @ layer.g_sum()
        return [sums[id(p)] for _, p in self.params], total.detach(), losses.detach()


class _Layer:
    """One nn.Linear's book-keeping for a batch of B examples: its inputs ``a`` and output backprops ``g``
    (``[B, T, in]`` and ``[B, T, out]``, T positions per example, every call of the layer concatenated).

    Per-example squared weight-gradient norms ``||sum_t g_t a_t^T||^2`` by the cheapest of

    * ``ghost``: ``sum((a a^T) * (g g^T))`` over each example's T x T Gram matrices, the clipped sum later as
      one ``[out, B T] x [B T, in]`` matmul (no per-example gradient is materialised);
    * ``materialise``: the per-example gradients ``[B, out, in]`` (one batched matmul), their squared norms,
      and the clipped sum as a weighted sum of them -- cheaper when ``in x out`` is small next to
      ``T (in + out)`` (e.g. a last layer with few classes);
    * ``sparse``: ``a`` is :class:`~methods.models.SparseRows` (sparse input features): the a-Gram is a
      sparse-sparse product (or precomputed with the batch), the g-Gram a small dense one, the clipped sum
      ``A^T (c g)`` one sparse-dense product.
    """

    __slots__ = ("mod", "a", "g", "kind", "grads", "B", "_g_sum", "scratch")

    #: per-example gradients up to this many elements in all are materialised when that is cheaper
    MATERIALISE_MAX = 1 << 22

    def __init__(self, mod: nn.Linear, a, g: Tensor, kind: str, B: int, scratch: bool = False) -> None:
        self.mod, self.a, self.g, self.kind, self.B = mod, a, g, kind, B
        self.scratch = scratch and g.is_contiguous()  # g may be overwritten once its last reader is done
        self.grads: Tensor | None = None
        self._g_sum: Tensor | None = None

    def g_sum(self) -> Tensor:
        """Each example's bias gradient ``sum_t g_t`` ([B, out]), computed once for its norm and the clipped sum."""
        if self._g_sum is None:
            self._g_sum = self.g.sum(1)
        return self._g_sum

    @classmethod
    def build(cls, mod: nn.Linear, xs: list, gs: list[Tensor], B: int, scratch: bool = False) -> "_Layer":
        from methods.models import SparseRows

        if len(xs) == 1 and isinstance(xs[0], SparseRows):
            g = gs[0].reshape(B, -1, gs[0].size(-1))
            return cls(mod, xs[0], g, "sparse", B, scratch)
        xs = [x.to_dense() if isinstance(x, SparseRows) else x for x in xs]
        a_parts = [x.reshape(B, -1, x.size(-1)) for x in xs]
        g_parts = [b.reshape(B, -1, b.size(-1)) for b in gs]
        a = a_parts[0] if len(xs) == 1 else torch.cat(a_parts, dim=1)  # [B, T, in]
        g = g_parts[0] if len(xs) == 1 else torch.cat(g_parts, dim=1)  # [B, T, out]
        t, d_in, d_out = a.size(1), a.size(2), g.size(2)
        if t == 1:
            kind = "rows"
        elif t * (d_in + d_out) > d_in * d_out and B * d_in * d_out <= cls.MATERIALISE_MAX:
            kind = "materialise"  # fewer flops than the two Gram matrices, and no extra matmul for the sum
        elif t * t <= d_in * d_out:
            kind = "ghost"
        else:
            kind = "materialise" if B * d_in * d_out <= cls.MATERIALISE_MAX else "ghost"
        return cls(mod, a, g, kind, B, scratch or len(xs) > 1)  # several calls: g is a fresh concatenation

    def weight_sq_norms(self) -> Tensor:
        a, g = self.a, self.g
        if self.kind == "sparse":
            gram = a.example_gram(self.B).to(g.dtype)
            if g.size(1) == 1:
                return gram.view(-1) * (g[:, 0] ** 2).sum(1)
            return (gram * torch.bmm(g, g.transpose(1, 2))).sum((1, 2))
        if self.kind == "rows":
            return (a[:, 0] ** 2).sum(1) * (g[:, 0] ** 2).sum(1)
        if self.kind == "ghost":  # small batched matmuls (measured faster on CPU than materialising)
            return (torch.bmm(a, a.transpose(1, 2)) * torch.bmm(g, g.transpose(1, 2))).sum((1, 2))
        self.grads = torch.bmm(g.transpose(1, 2), a)  # [B, out, in]
        return (self.grads ** 2).sum((1, 2))

    def bias_sq_norms(self) -> Tensor:
        gs = self.g_sum()
        return (gs * gs).sum(1)

    def weight_sum(self, factors: Tensor) -> Tensor:
        """sum_b c_b g_b^T a_b: the clipped per-example weight gradients, summed ([out, in])."""
        if self.grads is not None:
            return (factors.to(self.grads.dtype) @ self.grads.reshape(self.B, -1)).view_as(self.mod.weight)
        f = factors.view(self.B, 1, 1)
        if self.scratch:  # the last read of g (its bias sum first): scale it in place, the same products
            if self.mod.bias is not None and self.mod.bias.requires_grad:
                self.g_sum()
            self.scratch = False
            gc = self.g.mul_(f).reshape(-1, self.g.size(-1))
        else:
            gc = (self.g * f).reshape(-1, self.g.size(-1))
        if self.kind == "sparse":
            return self.a.t_matmul(gc).t()
        return gc.t() @ self.a.reshape(-1, self.a.size(-1))


# --------------------------------------------------------------------------------------
# The private optimiser step
# --------------------------------------------------------------------------------------


@dataclass
class QuantileClipping:
    """Adaptive clipping to a private quantile of the gradient norms (Andrew et al. 2021).

    Each step releases ``#{norm <= C} + N(0, count_noise_std^2)``; C moves geometrically towards the
    ``target_quantile``. The count is a second Gaussian mechanism per step (sensitivity 1 per affected
    example) that the method must put in its ledger; :meth:`DPOptimizer.step` returns its noise std.
    """

    target_quantile: float = 0.5
    learning_rate: float = 0.2
    count_noise_std: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.target_quantile < 1 or self.learning_rate <= 0 or self.count_noise_std <= 0:
            raise BenchError("quantile clipping needs 0 < target_quantile < 1, learning_rate > 0, count_noise_std > 0")


@dataclass
class StepInfo:
    batch_size: int
    noise_std: float
    clip: float
    mean_norm: float
    frac_clipped: float
    loss: float
    count_noise_std: float | None = None


class _DeviceStepInfo(StepInfo):
    """A :class:`StepInfo` whose batch statistics (mean norm, fraction clipped, mean loss) stay where the step
    computed them until read: an eager step on a GPU then waits for the device nowhere. ``sums``: the statistics
    are sums over the batch (a captured step's fixed buffer), divided by the batch size when read."""

    def __init__(self, batch_size: int, noise_std: float, clip: float, stats: Tensor, sums: bool = False) -> None:
        self.batch_size, self.noise_std, self.clip, self.count_noise_std = batch_size, noise_std, clip, None
        self._stats, self._host, self._sums = stats, None, sums

    def _value(self, i: int) -> float:
        if self._host is None:
            self._host = self._stats.tolist()
        if not self._sums:
            return self._host[i]
        return float(self._host[i]) / self.batch_size if self.batch_size else 0.0

    mean_norm = property(lambda self: self._value(0))
    frac_clipped = property(lambda self: self._value(1))
    loss = property(lambda self: self._value(2))


@dataclass
class DPOptimizer:
    """Clip per-example gradients, sum, add N(0, noise_std^2), divide, and step any torch optimiser.

    DP-SGD is ``torch.optim.SGD`` underneath, DP-Adam ``torch.optim.Adam``: the optimiser only ever
    sees the privatised gradient (post-processing).
    """

    model: nn.Module
    optimizer: torch.optim.Optimizer
    clip: float
    loss_fn: LossFn = cross_entropy_per_example
    mode: str = "auto"
    per_layer: bool = False
    quantile: QuantileClipping | None = None
    generator: torch.Generator | None = None
    grads: PerExampleGradients = field(init=False)

    def __post_init__(self) -> None:
        if not self.clip > 0:
            raise BenchError(f"clipping threshold must be > 0 (got {self.clip})")
        self.grads = PerExampleGradients(self.model, self.loss_fn, self.mode)

    def _normal(self, shape, std: float, like: Tensor) -> Tensor:
        if self.generator is None:
            raise BenchError("DP-SGD noise needs an explicit generator on the run's noise stream "
                             "(RunStreams.torch('noise', device=...)); the global RNG is not one")
        return torch.normal(0.0, std, size=tuple(shape), generator=self.generator, device=like.device,
                            dtype=like.dtype)

    def step(self, inputs: tuple[Tensor, ...], target: Tensor, noise_std: float, denominator: float) -> StepInfo:
        """One private step. ``noise_std`` is the std of the noise on the SUM of clipped gradients."""
        if noise_std < 0 or denominator <= 0:
            raise BenchError("noise_std must be >= 0 and denominator > 0")
        clip = self.clip
        hook = _GRADIENT_HOOKS[-1] if _GRADIENT_HOOKS else None
        extra = None
        if hook is not None:
            inputs, target, extra = hook.split(self, inputs, target)
        sums, norms, losses = self.grads.norms_and_sum(inputs, target, clip, self.per_layer)
        if extra is not None:
            sums = [s + e.to(s) for s, e in zip(sums, extra)]
        params = self.grads.params
        with torch.no_grad():
            # one draw per parameter tensor, in order (the noise stream); the sums are this step's own tensors, so the
            # noise is added in place, by one multi-tensor call (the same additions, bit for bit)
            noises = [self._normal(s.shape, noise_std, s) for s in sums] if noise_std > 0 else [None] * len(sums)
            if noise_std > 0:
                if len({s.untyped_storage().data_ptr() for s in sums}) < len(sums):
                    sums = [s.clone() for s in sums]  # a subclass that hands one tensor out twice
                torch._foreach_add_(sums, noises)
            released = sums
            for (_, p), noisy in zip(params, released):
                grad = noisy / denominator
                p.grad = grad if grad.dtype == p.dtype else grad.to(p.dtype)
        if hook is not None:
            hook.observe(self, released)
            observe_noise = getattr(hook, "observe_noise", None)
            if observe_noise is not None:
                observe_noise(self, noises, noise_std)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        b = int(target.numel())
        info = (_DeviceStepInfo(b, noise_std, clip, torch.stack([norms.mean(), (norms > clip).float().mean(),
                                                                  losses.mean()]).detach())
                if b else StepInfo(b, noise_std, clip, 0.0, 0.0, 0.0))
        if self.quantile is not None:
            q = self.quantile
            dev = self.generator.device if self.generator is not None else norms.device
            count_noise = self._normal((1,), q.count_noise_std, torch.empty(0, device=dev))
            count = float((norms <= clip).sum()) + float(count_noise)
            if mechanisms.active():  # the joint (sum, count) multiplier the ledger records needs this noise
                mechanisms.release("count", source="quantile-clipping", declared={"std": float(q.count_noise_std)},
                                   noise=count_noise)
            frac = count / denominator
            self.clip = clip * math.exp(-q.learning_rate * (frac - q.target_quantile))
            info.count_noise_std = q.count_noise_std
        return info


# --------------------------------------------------------------------------------------
# Batch samplers that know their ledger event
# --------------------------------------------------------------------------------------


#: from this many examples on (and rates below 1/2), Poisson batches come from :func:`poisson_by_gaps`: O(batch) per
#: step instead of one uniform per example (O(n) per step, O(n^2 / batch) per epoch: most of a DP-SGD epoch at a
#: million training nodes). Smaller populations (every published run's: Physics has 34k nodes) keep the
#: one-coin-per-example stream.
GAP_SAMPLING_FROM = 1 << 17


def poisson_by_gaps(n: int, rate: float, generator: torch.Generator) -> Tensor:
    """The members of ``n`` independent Bernoulli(``rate``) coins, sorted, in O(n rate) expected time: the gaps
    between successive members (and from -1 to the first) are i.i.d. Geometric(rate) on {1, 2, ...}, drawn by
    inversion, floor(log(V) / log(1 - rate)) + 1 with V uniform on (0, 1]; the same distribution as the coins."""
    log_q = math.log1p(-rate)
    mean = n * rate
    chunk = int(mean + 6 * math.sqrt(mean) + 16)
    parts, last = [], -1
    while True:
        u = torch.rand(chunk, generator=generator, dtype=torch.float64)
        gaps = torch.floor(torch.log1p(-u) / log_q).long() + 1
        idx = last + torch.cumsum(gaps, 0)
        inside = idx[idx < n]
        parts.append(inside)
        if inside.numel() < chunk:
            return torch.cat(parts)
        last = int(idx[-1])


class PoissonSampler:
    """Each example independently with probability ``rate`` (add/remove relation)."""

    def __init__(self, num_examples: int, rate: float, generator: torch.Generator, unit: str = "node") -> None:
        if num_examples < 1 or not 0 < rate <= 1:
            raise BenchError(f"Poisson sampling needs examples >= 1 and 0 < rate <= 1 (got {num_examples}, {rate})")
        self.n, self.rate, self.gen, self.unit = num_examples, float(rate), generator, unit

    @property
    def expected_size(self) -> float:
        return self.n * self.rate

    def sample(self) -> Tensor:
        if self.n < GAP_SAMPLING_FROM or self.rate >= 0.5:
            return (torch.rand(self.n, generator=self.gen) < self.rate).nonzero().view(-1)
        return poisson_by_gaps(self.n, self.rate, self.gen)

    def event(self, noise_multiplier: float) -> Event:
        return PoissonGaussian(rate=self.rate, noise_multiplier=noise_multiplier, unit=self.unit)


class FixedSizeSampler:
    """``batch_size`` distinct examples uniformly at random (without replacement; replace-one relation).

    ``accounted_population`` (<= ``num_examples``) is the population the accountant assumes, for
    methods whose number of examples is random and only bounded below (DRW's M_min).
    """

    def __init__(self, num_examples: int, batch_size: int, generator: torch.Generator, unit: str = "feature",
                 accounted_population: int | None = None) -> None:
        if not 1 <= batch_size <= num_examples:
            raise BenchError(f"batch size must be in [1, {num_examples}] (got {batch_size})")
        pop = num_examples if accounted_population is None else int(accounted_population)
        if not batch_size <= pop <= num_examples:
            raise BenchError(f"accounted population {pop} must be in [batch size, number of examples]")
        self.n, self.m, self.gen, self.unit, self.pop = num_examples, batch_size, generator, unit, pop

    @property
    def expected_size(self) -> float:
        return float(self.m)

    def sample(self) -> Tensor:
        return torch.randperm(self.n, generator=self.gen)[: self.m]

    def event(self, noise_multiplier: float) -> Event:
        return FixedSizeGaussian(population=self.pop, sample_size=self.m, noise_multiplier=noise_multiplier,
                                 unit=self.unit)
