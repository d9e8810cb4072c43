"""Structural checks of a method's randomness: is its DP noise a stream of its own?

The review's critical defect: the DP-SGD noise generator, the batch sampler and torch's global RNG (parameter
initialisation) were seeded with one raw seed, so three copies of one Mersenne-Twister stream. On the CPU,
``nn.Linear`` initialisation draws 24-bit uniforms u_k (``W_k = -b + 2 b u_k``) and ``torch.normal`` turns the
same uniforms into normals by Box-Muller over blocks of 16 (``z_j = r cos(2 pi u_{j+8})``,
``z_{j+8} = r sin(2 pi u_{j+8})``, ``r = sqrt(-2 log(1 - u_j))``). The transform is invertible, so the uniforms
behind a noise draw can be read back (:func:`uniforms_from_normals`) and compared with

* the initial weights, affinely rescaled to [0, 1] (:func:`init_correlation`): |corr| ~ 1 when the noise replays
  the initialisation stream, ~ 1/sqrt(n) otherwise;
* a Poisson sampler's draws (:func:`poisson_replay`): its batch is ``{i : u_i < q}``; an exact match at some
  offset of the noise stream means the batch is readable off the noise.

:class:`StepOneProbe` (a DP-SGD gradient hook) records what these checks need at the first step, and
:class:`SeedRecorder` records every seed given to a torch generator or to torch's global RNG during a fit, so a
check can also ask whether the noise generator shares its seed with any other stream.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator

import numpy as np
import torch
from torch import Tensor


# --------------------------------------------------------------------------------------
# Reading uniforms back from normals (torch's CPU layout)
# --------------------------------------------------------------------------------------


def uniforms_from_normals(z: Tensor | np.ndarray) -> np.ndarray:
    """The uniforms torch's CPU ``normal_`` turned into the standard normals ``z`` (flat, memory order).

    Blocks of 16: ``u_j = 1 - exp(-r^2 / 2)`` and ``u_{j+8} = atan2(z_{j+8}, z_j) / (2 pi) mod 1`` with
    ``r^2 = z_j^2 + z_{j+8}^2``. A tail shorter than 16 was redrawn by torch and is dropped here."""
    z = np.asarray(torch.as_tensor(z).detach().cpu().double().reshape(-1))
    n = (z.size // 16) * 16
    blocks = z[:n].reshape(-1, 16)
    a, b = blocks[:, :8], blocks[:, 8:]
    u = np.empty_like(blocks)
    u[:, :8] = -np.expm1(-(a * a + b * b) / 2.0)
    u[:, 8:] = np.mod(np.arctan2(b, a) / (2 * math.pi), 1.0)
    return u.reshape(-1)


def _affine_unit(w: np.ndarray) -> np.ndarray:
    lo, hi = float(w.min()), float(w.max())
    return (w - lo) / (hi - lo) if hi > lo else np.zeros_like(w)


#: the fewest aligned entries a correlation is computed on (independent draws: |corr| ~ 1/sqrt(n) <= 0.125)
MIN_OVERLAP = 64


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    n = min(a.size, b.size)
    if n < MIN_OVERLAP:
        return 0.0
    a, b = a[:n], b[:n]
    sa, sb = a.std(), b.std()
    if sa == 0 or sb == 0:
        return 0.0
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def init_correlation(inits: list[Tensor], noise_uniforms: np.ndarray) -> float:
    """The largest |Pearson correlation| between the noise's uniforms and any initial parameter tensor, each at
    the offset a replayed initialisation stream would put it (the sum of the sizes of the tensors before it),
    and at offset 0, over at least ``MIN_OVERLAP`` aligned entries. ~1 when the noise replays the
    initialisation stream; ~1/sqrt(n) for independent streams."""
    best, offset = 0.0, 0
    for w in inits:
        flat = w.detach().cpu().double().reshape(-1).numpy()
        u = _affine_unit(flat)
        for off in {0, offset}:
            if off < noise_uniforms.size:
                best = max(best, abs(_corr(u, noise_uniforms[off:])))
        offset += flat.size
    return best


def poisson_replay(batch: Tensor, population: int, rate: float, noise_uniforms: np.ndarray) -> bool:
    """True when a Poisson batch ``{i : u_i < rate}`` of ``population`` examples is exactly the one some window
    of the noise's uniforms predicts (the batch is readable off the noise)."""
    n = int(population)
    if noise_uniforms.size < n or n < 32 or not 0 < rate < 1:  # rate 1: every example is in, nothing to read
        return False
    member = np.zeros(n, dtype=bool)
    member[np.asarray(batch.detach().cpu().reshape(-1), dtype=np.int64)] = True
    windows = np.lib.stride_tricks.sliding_window_view(noise_uniforms < rate, n)
    return bool((windows == member).all(axis=1).any())


# --------------------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------------------


@dataclass
class StepRecord:
    """One DP-SGD step as a probe saw it."""

    batch_size: int
    clip: float  # the total clipping threshold C of the step
    per_layer: bool
    noise_std: float  # the std the method asked for (on the sum)
    noise_entries: int  # how many noise draws the step made
    noise_sq_sum: float  # their sum of squares (the measured variance is this / entries)


@dataclass
class StepOneProbe:
    """A DP-SGD gradient hook (``methods.dpsgd.gradient_hook``) that changes nothing and records every step (batch
    size, clipping threshold, requested and drawn noise) and, at the first step, the parameters before it (the
    initial weights), the noise drawn and the noise generator's seed."""

    inits: list[Tensor] | None = None
    noise: list[Tensor | None] | None = None
    noise_std: float = 0.0
    noise_seed: int | None = None
    noise_device: str = "cpu"
    steps: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    records: list[StepRecord] = field(default_factory=list)
    first_layer_width: int | None = None
    read_only: ClassVar[bool] = True  # captured (CUDA-graph) steps run under it: the probe fit is the base fit

    def split(self, opt, inputs, target):
        if self.inits is None:
            self.inits = [p.detach().clone() for _, p in opt.grads.params]
            g = opt.generator
            if g is not None:
                self.noise_seed = int(g.initial_seed())
                self.noise_device = str(g.device)
            self.first_layer_width = int(inputs[0].size(-1)) if inputs else None
        self.batch_sizes.append(int(target.numel()))
        self._pending = (int(target.numel()), float(opt.clip), bool(opt.per_layer))
        return inputs, target, None

    def observe(self, opt, noisy_sums) -> None:
        self.steps += 1

    def observe_noise(self, opt, noise, noise_std: float) -> None:
        if self.noise is None:
            self.noise = [None if n is None else n.detach().clone() for n in noise]
            self.noise_std = float(noise_std)
        drawn = [n.detach().double() for n in noise if n is not None]
        entries = int(sum(n.numel() for n in drawn))
        sq = float(sum((n * n).sum() for n in drawn)) if drawn else 0.0
        b, clip, per_layer = getattr(self, "_pending", (0, float(opt.clip), bool(opt.per_layer)))
        self.records.append(StepRecord(b, clip, per_layer, float(noise_std), entries, sq))

    def noise_uniforms(self) -> np.ndarray:
        """The uniforms behind the step-1 noise, all tensors concatenated in parameter order (CPU layout)."""
        if not self.noise or self.noise_std <= 0:
            return np.empty(0)
        parts = [uniforms_from_normals(n / self.noise_std) for n in self.noise if n is not None and n.numel() >= 16]
        return np.concatenate(parts) if parts else np.empty(0)


class _PoissonRecorder:
    def __init__(self) -> None:
        self.first: tuple[Tensor, int, float] | None = None


@contextlib.contextmanager
def record_poisson_batches() -> Iterator[_PoissonRecorder]:
    """Within the block, the first batch every :class:`methods.dpsgd.PoissonSampler` draws is recorded
    (batch, population, rate)."""
    from methods import dpsgd

    rec = _PoissonRecorder()
    real = dpsgd.PoissonSampler.sample

    def sample(self):
        out = real(self)
        if rec.first is None:
            rec.first = (out.clone(), self.n, self.rate)
        return out

    dpsgd.PoissonSampler.sample = sample
    try:
        yield rec
    finally:
        dpsgd.PoissonSampler.sample = real


@dataclass
class SeedRecorder:
    """Every seed given to a torch generator, to torch's global RNG, to NumPy or to Python's ``random``."""

    torch_generators: list[int] = field(default_factory=list)
    torch_global: list[int] = field(default_factory=list)
    numpy: list[Any] = field(default_factory=list)
    python: list[Any] = field(default_factory=list)

    @property
    def all(self) -> list[int]:
        return [int(s) for s in self.torch_generators + self.torch_global
                if isinstance(s, (int, np.integer))] + \
            [int(s) for s in self.numpy + self.python if isinstance(s, (int, np.integer))]


@contextlib.contextmanager
def record_seeds() -> Iterator[SeedRecorder]:
    """Within the block, record the seeds of ``torch.Generator(...).manual_seed``, ``torch.manual_seed``,
    ``numpy.random.seed`` / ``default_rng(int)`` and ``random.seed`` (see :class:`SeedRecorder`)."""
    import random

    rec = SeedRecorder()
    real_gen, real_manual = torch.Generator, torch.manual_seed
    real_np_seed, real_default_rng, real_random_seed = np.random.seed, np.random.default_rng, random.seed

    class RecordingGenerator(real_gen):  # type: ignore[misc, valid-type]
        def manual_seed(self, seed):
            rec.torch_generators.append(int(seed))
            return super().manual_seed(seed)

    def manual_seed(seed):
        rec.torch_global.append(int(seed))
        return real_manual(seed)

    def np_seed(seed=None):
        rec.numpy.append(seed)
        return real_np_seed(seed)

    def default_rng(seed=None):
        if isinstance(seed, (int, np.integer)):
            rec.numpy.append(int(seed))
        return real_default_rng(seed)

    def random_seed(a=None, *args, **kwargs):
        rec.python.append(a)
        return real_random_seed(a, *args, **kwargs)

    torch.Generator, torch.manual_seed = RecordingGenerator, manual_seed
    torch.random.manual_seed = manual_seed
    np.random.seed, np.random.default_rng, random.seed = np_seed, default_rng, random_seed
    try:
        yield rec
    finally:
        torch.Generator, torch.manual_seed, torch.random.manual_seed = real_gen, real_manual, real_manual
        np.random.seed, np.random.default_rng, random.seed = real_np_seed, real_default_rng, real_random_seed


# --------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------


#: |correlation| above which the noise is taken to replay the initialisation stream (independent draws of a
#: few hundred entries stay below 0.2; a replay is ~1)
CORRELATION_THRESHOLD = 0.5


@dataclass
class NoiseIndependence:
    """What :func:`check_noise_independence` found at the first DP-SGD step of a fit."""

    dpsgd: bool  # the fit took a DP-SGD step with noise through methods.dpsgd.DPOptimizer
    init_correlation: float = 0.0  # max |corr| between the noise's uniforms and the initial weights
    batch_replayed: bool = False  # the first Poisson batch is readable off the noise
    shared_seed: bool = False  # another generator (or the global RNG) got the noise generator's seed
    raw_seed_used: bool = False  # some generator was seeded with the run's raw seed
    uniforms: int = 0  # how many uniforms were read back

    @property
    def independent(self) -> bool:
        return not (self.init_correlation > CORRELATION_THRESHOLD or self.batch_replayed or self.shared_seed)

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "independent": self.independent}


def check_noise_independence(fit, seed: int) -> NoiseIndependence:
    """Run ``fit()`` (a fit of a DP-SGD method at ``seed`` on the CPU) under the probes and report whether the
    step-1 noise can be predicted from the initial weights, the first Poisson batch or a shared seed."""
    from methods.dpsgd import gradient_hook

    probe = StepOneProbe()
    with record_seeds() as seeds, record_poisson_batches() as batches, gradient_hook(probe):
        fit()
    if probe.noise is None or probe.noise_std <= 0:
        return NoiseIndependence(dpsgd=False)
    u = probe.noise_uniforms() if probe.noise_device == "cpu" else np.empty(0)
    corr = init_correlation(probe.inits or [], u) if u.size else 0.0
    replay = bool(batches.first is not None and u.size and poisson_replay(*batches.first, u))
    recorded = seeds.all
    shared = probe.noise_seed is not None and recorded.count(probe.noise_seed) > 1
    return NoiseIndependence(True, corr, replay, shared, int(seed) in recorded, int(u.size))


class StopFit(Exception):
    """Raised by a probe that has seen enough: the fit is abandoned (its result is not needed)."""


@dataclass
class ClippingProbe:
    """At each of its first ``steps`` DP-SGD steps the batch is cut to the one example with the largest input
    norm; subtracting the drawn noise from the released sum leaves that example's clipped gradient exactly as the
    method computed it, whose norm must be <= C (the step's total threshold). Then the fit is stopped
    (:class:`StopFit`)."""

    steps: int = 3
    norms: list[float] = field(default_factory=list)
    clips: list[float] = field(default_factory=list)

    def split(self, opt, inputs, target):
        if len(self.norms) >= self.steps:
            raise StopFit
        b = int(target.numel())
        if b == 0:
            return inputs, target, None
        x = inputs[0]
        if not isinstance(x, torch.Tensor) or x.is_sparse:  # sparse bag-of-words rows (methods.models.SparseRows)
            x = x.to_dense()
        x = x.reshape(b, -1).float()
        k = int(x.norm(dim=1).argmax())
        self._clip = float(opt.clip)
        return tuple(t[k:k + 1] for t in inputs), target[k:k + 1], None

    def observe(self, opt, noisy_sums) -> None:
        self._released = [s.detach() for s in noisy_sums]

    def observe_noise(self, opt, noise, noise_std: float) -> None:
        clean = [r.double() - (n.double() if n is not None else 0.0) for r, n in zip(self._released, noise)]
        self.norms.append(math.sqrt(float(sum((c * c).sum() for c in clean))))
        self.clips.append(self._clip)


# --------------------------------------------------------------------------------------
# Private inference: with the release held fixed, does any served output move?
# --------------------------------------------------------------------------------------


def unit_perturbations(unit: str, task, count: int = 8, seed: int = 0):
    """Tasks that differ from ``task`` in one private unit: a node's feature row (node and feature units; in
    the private-public setting a private node with private neighbours; transductively non-training nodes first,
    whose data a correct release may not depend on), or one undirected edge (edge unit; in the private-public
    setting an edge between two private nodes, the public graph being public). Yields (task, node or None)."""
    import dataclasses

    ei = task.data.edge_index
    if unit == "edge":
        upper = ei[0] < ei[1]
        if task.setting == "private-public":
            upper &= task.train_mask[ei[0]] & task.train_mask[ei[1]]
        upper = upper.nonzero().view(-1)
        gen = torch.Generator().manual_seed(seed)
        for e in upper[torch.randperm(upper.numel(), generator=gen)[:count]].tolist():
            a, b = int(ei[0, e]), int(ei[1, e])
            keep = ~(((ei[0] == a) & (ei[1] == b)) | ((ei[0] == b) & (ei[1] == a)))
            data = task.data.clone()
            data.edge_index = ei[:, keep]
            yield dataclasses.replace(task, data=data), None
        return
    if task.setting == "private-public":
        private = task.train_mask
        has_private_nb = torch.zeros(task.num_nodes, dtype=torch.bool)
        has_private_nb[ei[0][private[ei[0]] & private[ei[1]]]] = True
        nodes = (private & has_private_nb).nonzero().view(-1)
    else:
        nodes = torch.cat([(~task.train_mask).nonzero().view(-1), task.train_mask.nonzero().view(-1)])
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(nodes.numel(), generator=gen)
    if task.setting != "private-public":  # keep non-training nodes first
        n_out = int((~task.train_mask).sum())
        head = order[order < n_out]
        order = torch.cat([head, order[order >= n_out]])
    for v in nodes[order[:count]].tolist():
        data = task.data.clone()
        data.x = data.x.clone()
        data.x[v] = data.x[v] + 1.0
        yield dataclasses.replace(task, data=data), v


@dataclass
class InferenceCheck:
    """What :func:`check_private_inference` or :func:`check_inference_reads` found."""

    claimed: bool  # the method claims private inference
    declared_release: bool  # and says what it releases (Fitted.release)
    tried: int = 0
    conclusive: int = 0  # changes that left the release bit-identical
    max_change: float = 0.0  # the largest move of a served posterior the check forbids, among those
    unit: int | None = None  # the node whose row changed when a posterior moved (None: an edge)
    kinds: tuple[str, ...] = ()  # the changes tried: "features" (a node's row), "edge" (one undirected edge)
    moved_by: str = ""  # the kind of change that moved a posterior

    @property
    def violated(self) -> bool:
        return self.claimed and (not self.declared_release or self.max_change > 0)


def _served_moves(out: InferenceCheck, make_method, task, budget, streams, base, release, kind: str, tries: int,
                  own_row_read: bool, enough: int | None) -> None:
    """Refit on ``tries`` tasks that differ from ``task`` in one ``kind`` change (:func:`unit_perturbations`) and, for
    each whose release stays bit-identical, record in ``out`` the largest move of a served posterior: every node's
    but the changed node's own when ``own_row_read``."""
    from methods.base import fit_method, same_release

    p0 = base.predict_proba()
    found = 0
    for other, v in unit_perturbations("edge" if kind == "edge" else "node", task, tries):
        out.tried += 1
        f = fit_method(make_method(), other, budget, streams)
        if not same_release(release, f.release()):
            continue
        out.conclusive += 1
        found += 1
        served = torch.ones(task.num_nodes, dtype=torch.bool)
        if v is not None and own_row_read:
            served[v] = False
        change = float((f.predict_proba()[served] - p0[served]).abs().max()) if served.any() else 0.0
        if change > out.max_change:
            out.max_change, out.unit, out.moved_by = change, v, kind
        if enough is not None and found >= enough:
            break


def check_private_inference(make_method, task, budget, streams, unit: str, tries: int = 8,
                            base=None, enough: int | None = None) -> InferenceCheck:
    """A method that claims private inference serves every output from its DP release plus the queried unit's own
    data. So whenever a change to one private unit leaves the release bit-identical (same streams), no other
    node's served posterior may change (see :func:`unit_perturbations`). Stops after ``enough`` conclusive
    changes (default: every one of ``tries``)."""
    from methods.base import fit_method

    base = base if base is not None else fit_method(make_method(), task, budget, streams)
    claimed = bool(base.info.get("inference_private"))
    if not claimed:
        return InferenceCheck(False, base.release() is not None)
    release = base.release()
    kind = "edge" if unit == "edge" else "features"
    out = InferenceCheck(True, release is not None, kinds=(kind,))
    if release is not None:
        _served_moves(out, make_method, task, budget, streams, base, release, kind, tries, True, enough)
    return out


def undeclared_changes(reads) -> tuple[str, ...]:
    """The changes a method's ``inference_reads`` (``methods.inference``) says its served posteriors ignore:
    ``features`` (another node's raw row) unless it reads other-features, ``edge`` unless it reads edges."""
    from methods import inference as I

    return tuple(k for k, read in (("features", I.OTHER_FEATURES), ("edge", I.EDGES)) if read not in reads)


def check_inference_reads(make_method, task, budget, streams, tries: int = 6, base=None,
                          enough: int | None = 2) -> InferenceCheck:
    """Hold a method to its ``inference_reads``, claimed private or not: for each kind of data it says served
    inference does not read (:func:`undeclared_changes`), change it in one place; whenever the release stays
    bit-identical, no served posterior may move (the changed node's own may when the method reads its own row). A
    private-inference claim is derived from the declaration (``methods.inference``), so this is what makes the claim
    checkable; it also catches a method whose declaration is narrower than what it serves, claimed or not."""
    from methods import inference as I
    from methods.base import fit_method

    method = make_method()
    reads = method.inference_reads
    base = base if base is not None else fit_method(method, task, budget, streams)
    release = base.release()
    kinds = undeclared_changes(reads)
    out = InferenceCheck(bool(base.info.get("inference_private")), release is not None, kinds=kinds)
    if release is None:
        return out
    for kind in kinds:
        _served_moves(out, make_method, task, budget, streams, base, release, kind, tries, I.OWN_FEATURES in reads,
                      enough)
    return out
