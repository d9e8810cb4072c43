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
        self.last_keep = torch.zeros(b, dtype=torch.bool)  # which examples stay (an Opacus step reads it)
        self.last_keep[k] = True
        return tuple(t[k:k + 1] for t in inputs), target[k:k + 1], None

    def observe(self, opt, noisy_sums) -> None:
        self._released = [s.detach() for s in noisy_sums]

    def observe_noise(self, opt, noise, noise_std: float) -> None:
        clean = [r.double() - (n.double() if n is not None else 0.0) for r, n in zip(self._released, noise)]
        self.norms.append(math.sqrt(float(sum((c * c).sum() for c in clean))))
        self.clips.append(self._clip)


# --------------------------------------------------------------------------------------
# Private inference: with the served model held fixed (release and serving state), does any served output move?
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
    conclusive: int = 0  # changes served with the release and the serving state's rows per node held fixed (the
    #                      changed node's own excepted): transplanted, or bit-identical in the two fits
    transplanted: int = 0  # of those, the ones held fixed by transplanting the base's state (Fitted.with_state)
    max_change: float = 0.0  # the largest move of a served posterior the check forbids, among those
    unit: int | None = None  # the node whose row changed when a posterior moved (None: an edge)
    kinds: tuple[str, ...] = ()  # the changes tried: "features" (a node's row), "edge" (one undirected edge)
    moved_by: str = ""  # the kind of change that moved a posterior

    @property
    def violated(self) -> bool:
        return self.claimed and (not self.declared_release or self.max_change > 0)


def transplanted(fitted, release: dict[str, Tensor], serving_rows: dict[str, Tensor], num_nodes: int,
                 node: int | None):
    """``fitted`` (a fit on a neighbouring dataset) answering from the base fit's ``release`` and its serving rows
    (``serving_rows``: :func:`methods.base.node_rows`), ``node``'s own rows excepted, which stay ``fitted``'s: the
    served model held fixed, as a private-inference claim states it (:meth:`methods.base.Fitted.with_state`). What
    ``fitted`` holds beyond its declared release and serving state stays its own, so a served output that reads it,
    or another node's row, moves. ``None`` where the model cannot be given a state (no ``with_state``) or its serving
    rows do not line up with the base's (other keys or shapes)."""
    from methods.base import node_rows, same_release, same_serving_state
    from methods.errors import InterfaceError

    state = dict(fitted.serving_state() or {})
    own = node_rows(state, num_nodes)
    if set(own) != set(serving_rows) or any(own[k].shape != serving_rows[k].shape for k in own):
        return None
    for k, x in serving_rows.items():
        rows = x.clone()
        if node is not None:
            rows[node] = own[k][node]
        state[k] = rows
    held = fitted.with_state(release, state)
    if held is None:
        return None
    if not (same_release(release, held.release()) and same_serving_state(state, held.serving_state())):
        raise InterfaceError(f"{type(fitted).__name__}.with_state does not answer from the state it is given: its "
                             "release() or serving_state() afterwards differ from it")
    return held


def _served_moves(out: InferenceCheck, make_method, task, budget, streams, base, release, kind: str, tries: int,
                  own_row_read: bool, enough: int | None) -> None:
    """Refit on ``tries`` tasks that differ from ``task`` in one ``kind`` change (:func:`unit_perturbations`) and, for
    each, serve the refit with the served model held fixed and record in ``out`` the largest move of a served
    posterior: every node's but the changed node's own when ``own_row_read``. Held fixed: the release, and the
    serving state's rows per node (:func:`methods.base.node_rows`) but for the changed node's own, transplanted from
    the base fit into the refit (:func:`transplanted`); for a model that cannot take a state, only a refit whose own
    are bit-identical counts (a noisy release rarely is). Holding the release alone would blame inference for a change
    that reached what the server holds for another node (GAP's cached aggregate of a neighbour, served state at node
    level). A served graph's edges are not held: whether inference reads them is what ``inference_reads`` declares
    and this check tests."""
    from methods.base import fit_method, node_rows, same_release, same_serving_state

    n = task.num_nodes
    serving = node_rows(base.serving_state(), n)

    p0 = base.predict_proba()
    found = 0
    for other, v in unit_perturbations("edge" if kind == "edge" else "node", task, tries):
        out.tried += 1
        f = fit_method(make_method(), other, budget, streams)
        held = transplanted(f, release, serving, n, v)
        if held is not None:
            out.transplanted += 1
            f = held
        elif not (same_release(release, f.release())
                  and same_serving_state(serving, node_rows(f.serving_state(), n), n, v)):
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
    data (its own rows of the serving state). So whenever a change to one private unit leaves the release and the
    serving state's rows bit-identical (same streams; the changed node's own rows excepted: :func:`_served_moves`),
    no other
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
    inference does not read (:func:`undeclared_changes`), change it in one place; whenever the release and the serving
    state's rows stay bit-identical (:func:`_served_moves`), no served posterior may move (the changed node's own may
    when the method reads its own row). A private-inference claim is derived from the declaration
    (``methods.inference``), so this is what makes the claim checkable; it also catches a method whose declaration
    is narrower than what it serves, claimed or not."""
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


# --------------------------------------------------------------------------------------
# Release coverage: does a released tensor depend on one unit more than the ledger covers?
# --------------------------------------------------------------------------------------


def _permute_nodes(task, order: Tensor):
    """``task`` with its nodes in ``order`` (node i of the result is node order[i] of ``task``)."""
    import dataclasses

    n = task.num_nodes
    inv = torch.empty(n, dtype=torch.long)
    inv[order] = torch.arange(n)
    data = task.data.__class__(x=task.data.x[order], y=task.data.y[order], edge_index=inv[task.data.edge_index])
    data.num_nodes = n
    opt = {k: (getattr(task, k)[order] if getattr(task, k) is not None else None)
           for k in ("query_mask", "public_mask", "node_ids")}
    return dataclasses.replace(task, data=data, train_mask=task.train_mask[order], val_mask=task.val_mask[order],
                               test_mask=task.test_mask[order], **opt)


def _without_node(task, v: int):
    """``task`` without node ``v`` and its edges; the other nodes keep their order."""
    import dataclasses

    from torch_geometric.utils import subgraph

    keep = torch.ones(task.num_nodes, dtype=torch.bool)
    keep[v] = False
    idx = keep.nonzero().view(-1)
    ei, _ = subgraph(idx, task.data.edge_index, relabel_nodes=True, num_nodes=task.num_nodes)
    data = task.data.__class__(x=task.data.x[idx], y=task.data.y[idx], edge_index=ei)
    data.num_nodes = int(idx.numel())
    opt = {k: (getattr(task, k)[idx] if getattr(task, k) is not None else None)
           for k in ("query_mask", "public_mask", "node_ids")}
    return dataclasses.replace(task, data=data, train_mask=task.train_mask[idx], val_mask=task.val_mask[idx],
                               test_mask=task.test_mask[idx], **opt)


def unit_neighbour(task, unit: str):
    """``(base, neighbour, what)``: two tasks one private unit of ``unit`` apart, on the input data. Node: the
    training node of highest degree removed with all its edges (it and a second training node of another label are
    first moved to the end of ``base``, so the removal leaves every other node's index as is); edge: the undirected
    edge of highest endpoint degree removed (private-public: an edge between two private nodes); feature: that
    training node's feature row replaced. ``what`` names the unit."""
    import dataclasses

    ei = task.data.edge_index
    deg = torch.bincount(ei[0], minlength=task.num_nodes)
    train = task.train_mask.nonzero().view(-1)
    by_deg = train[torch.argsort(deg[train], stable=True)]
    v = int(by_deg[-1])
    if unit == "node":
        others = [int(w) for w in by_deg if int(task.data.y[w]) != int(task.data.y[v])] or [int(by_deg[0])]
        w = others[0]
        rest = [i for i in range(task.num_nodes) if i not in (v, w)]
        base = _permute_nodes(task, torch.tensor(rest + [w, v]))
        return base, _without_node(base, base.num_nodes - 1), f"training node {v} (degree {int(deg[v])}) removed"
    if unit == "edge":
        upper = ei[0] < ei[1]
        if task.setting == "private-public":
            upper &= task.train_mask[ei[0]] & task.train_mask[ei[1]]
        pairs = ei[:, upper]
        if not pairs.size(1):
            raise ValueError("no private edge to remove")
        a, b = (int(t) for t in pairs[:, int((deg[pairs[0]] + deg[pairs[1]]).argmax())])
        keep = ~(((ei[0] == a) & (ei[1] == b)) | ((ei[0] == b) & (ei[1] == a)))
        data = task.data.clone()
        data.edge_index = ei[:, keep]
        return task, dataclasses.replace(task, data=data), f"edge ({a}, {b}) removed"
    if unit == "feature":
        data = task.data.clone()
        data.x = data.x.clone()
        data.x[v] = data.x[v] + 1.0
        return task, dataclasses.replace(task, data=data), f"training node {v}'s feature row replaced"
    raise ValueError(f"no neighbouring relation for unit {unit!r}")


@dataclass(frozen=True)
class CoverageFinding:
    """One thing :func:`check_release_coverage` found: ``check`` is ``disjoint`` (a), ``node-indexed`` (b),
    ``noise-free`` (c) or ``sensitivity`` (d); ``key`` the tensor."""

    check: str
    key: str
    text: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.key}: {self.text}"


def _dense(x: Tensor) -> Tensor:
    return (x.to_dense() if x.layout != torch.strided else x).detach().cpu()


def _bit_equal(x: Tensor, y: Tensor) -> bool:
    x, y = _dense(x), _dense(y)
    return x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y)


def _gaussian_sensitivity(ledger) -> float | None:
    """The largest L2 sensitivity of the ledger's Gaussian releases (``None``: it has none)."""
    s = [float(e.sensitivity) for e in ledger.events if getattr(e, "released_as", None) == "gaussian"]
    return max(s) if s else None


def check_release_coverage(make_method, task, unit: str, streams, budget=None, other_streams=None,
                           atol: float = 1e-5) -> list[CoverageFinding]:
    """Whether what a method releases (``Fitted.release``) stays within what its ledger covers, on one unit removed
    from the input data (:func:`unit_neighbour`; both fits on the same ``streams``, so the noise is coupled).

    (a) ``disjoint``: no tensor is both released and serving state.
    (b) ``node-indexed`` (node unit): no released tensor changes shape when a node is removed. A tensor with a row per
    node holds the removed node's own row, which no node-level ledger covers: a node-level mechanism bounds how the
    other rows move, and the removed node's row is not there to move in the neighbour (GAP's own aggregate row,
    the raw feature matrix).
    (c) ``noise-free``: a released tensor that is bit-identical under two different seeds (``streams`` and
    ``other_streams``) is one no noise reaches, so a function of the data alone; it must then be bit-identical
    between the neighbours, or its change is released without a mechanism.
    (d) ``sensitivity`` (edge unit, a release holding NAP outputs ``input.1..K``): the first NAP output moves, under
    the coupled noise, by at most the ledger's Gaussian sensitivity (sqrt(2) per undirected edge). GAP row-normalises
    it after the noise: for rows of norm >= 1 (the noise alone has norm sigma sqrt(d)) that is the projection onto the
    unit ball, 1-Lipschitz, so the bound holds for the released matrix too.

    Returns the findings (empty: nothing found)."""
    from methods.base import Budget, fit_method
    from methods.streams import RunStreams

    streams = RunStreams.of(streams)
    other_streams = other_streams if other_streams is not None else streams.child("release-coverage")
    budget = budget if budget is not None else Budget(4.0, 1e-4)
    base, near, what = unit_neighbour(task, unit)
    f0 = fit_method(make_method(), base, budget, streams)
    f1 = fit_method(make_method(), near, budget, streams)
    out: list[CoverageFinding] = []
    for label, f in (("base", f0), ("neighbour", f1)):
        both = sorted(set(f.release() or {}) & set(f.serving_state() or {}))
        out += [CoverageFinding("disjoint", k, f"released and declared serving state ({label} fit)") for k in both]
    r0, r1 = f0.release(), f1.release()
    if r0 is None or r1 is None:
        return out
    for k in sorted(set(r0) ^ set(r1)):
        out.append(CoverageFinding("noise-free", k, f"released by one neighbour only ({what})"))
    common = sorted(set(r0) & set(r1))
    if unit == "node":
        for k in common:
            if tuple(r0[k].shape) != tuple(r1[k].shape):
                out.append(CoverageFinding(
                    "node-indexed", k, f"shape {tuple(r0[k].shape)} becomes {tuple(r1[k].shape)} when {what}: a row "
                    "per node, so it holds the removed node's own row, which no node-level ledger covers"))
    g0 = fit_method(make_method(), base, budget, other_streams).release() or {}
    for k in common:
        if k in g0 and _bit_equal(r0[k], g0[k]) and not _bit_equal(r0[k], r1[k]):
            out.append(CoverageFinding(
                "noise-free", k, f"the same under two seeds (no noise reaches it) but not between the neighbours "
                f"({what}): a change released without a mechanism"))
    sens = _gaussian_sensitivity(f0.ledger)
    if unit == "edge" and sens is not None and "input.1" in common and r0["input.1"].shape == r1["input.1"].shape:
        moved = float((_dense(r0["input.1"]).double() - _dense(r1["input.1"]).double()).norm())
        if moved > sens * (1 + 1e-6) + atol:
            out.append(CoverageFinding("sensitivity", "input.1", f"moves by {moved:.6g} when {what}, above the "
                                       f"ledger's sensitivity {sens:.6g} (same noise in both fits)"))
    return out
