"""Which input columns of a method's DP-SGD examples carry a node's raw data, traced from evidence rather than read
off the first layer's width.

The canary world gives canary k a feature column ``F + k`` that no other node has. Three short fits of that world
(every canary in, the first ``STEPS`` DP-SGD steps of the first optimiser recorded, then stopped) are compared
step by step, example by example, through a random projection of each step's inputs over its examples:

* the canary columns negated (same streams): an input column that changes carries canary data -- a node's own row,
  or another node's row reaching the example (a neighbour mean, a GCN-normalised aggregate, a subgraph's rows);
  negation keeps every row norm, so row-normalised inputs change nowhere else;
* another noise root (:meth:`methods.streams.RunStreams.noise_variant`, same batches): a column that changes at the
  first step holds a noisy release (GAP's aggregation perturbation), which the mechanism's own ledger event covers
  and the mechanism checks audit; such columns are left out.

The remaining columns are mapped back to canaries where the input is a concatenation of blocks of the raw width
(``[x_v]``, ``[x_v | mean x_u]``, ``[A x]``, a subgraph's rows): column ``b W + F + k`` is canary k's in block b. An
input that mixes columns otherwise cannot be traced, and the white-box canary checks then say so (INCONCLUSIVE),
never "not applicable".
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: DP-SGD steps of the first optimiser each tracing fit records
STEPS = 16


class _Enough(Exception):
    """Raised by the recorder to stop a tracing fit once it has what it needs."""


class _Recorder:
    """A gradient hook that records a fingerprint of the first optimiser's first ``steps`` inputs and stops the fit.
    Per step: the number of examples' rows and a random projection over them of every input column (the weights of
    step t are the same in every tracing fit, so aligned inputs give equal fingerprints)."""

    def __init__(self, steps: int) -> None:
        self.steps, self.prints, self.widths = steps, [], []
        self._opt = None

    def split(self, opt, inputs, target):
        if self._opt is None:
            self._opt = id(opt)
        if id(opt) != self._opt or not inputs:
            return inputs, target, None
        x = inputs[0]
        w = int(x.size(-1))
        dense = x if isinstance(x, torch.Tensor) else x.index_select(-1, torch.arange(w, device=x.device))
        rows = dense.detach().reshape(-1, w).double().cpu()
        gen = torch.Generator().manual_seed(1000 + len(self.prints))
        weights = torch.randn(rows.size(0), generator=gen, dtype=torch.float64)
        self.prints.append((rows.size(0), weights @ rows))
        self.widths.append(w)
        if len(self.prints) >= self.steps:
            raise _Enough
        return inputs, target, None

    def observe(self, opt, noisy_sums) -> None:
        pass


@dataclass(frozen=True)
class Layout:
    """The traced layout: ``positions`` [m, blocks] are the input columns carrying canary k's feature column in each
    block where canary data was seen; ``blocks_seen`` those blocks (0: the first ``raw_width`` columns);
    ``released`` the number of input columns holding noisy releases (left to the mechanism checks)."""

    width: int
    raw_width: int
    positions: torch.Tensor
    blocks_seen: tuple[int, ...]
    released: int

    @property
    def describe(self) -> str:
        b = len(self.blocks_seen)
        what = ("the examples read the raw rows" if b == 1 and self.width == self.raw_width else
                f"canary data in {b} block(s) {list(self.blocks_seen)} of an input {self.width // self.raw_width} x "
                f"the raw width")
        return what + (f"; {self.released} noisy released column(s) left to the mechanism checks"
                       if self.released else "")


@dataclass(frozen=True)
class NoLayout:
    """Why no layout was traced: ``applies`` False where the examples read canary data only through noisy
    releases (the white-box canary checks do not apply), True where it could not be told (they apply and cannot
    run: INCONCLUSIVE)."""

    applies: bool
    reason: str


def _record(b, world, streams, hook_steps: int = STEPS) -> _Recorder:
    rec = _Recorder(hook_steps)
    try:
        b.fit(world, streams, rec)
    except _Enough:
        pass
    return rec


def _negated(world, columns: torch.Tensor):
    import dataclasses

    data = world.data.clone()
    x = data.x.to_dense() if data.x.is_sparse else data.x.clone()
    x[:, columns] = -x[:, columns]
    data.x = x
    return dataclasses.replace(world, data=data)


def trace_layout(b, world, streams, m: int) -> Layout | NoLayout:
    """The layout of ``world``'s DP-SGD inputs (its last ``m`` feature columns are the canaries'), or why there is
    none (:class:`NoLayout`)."""
    from methods.errors import BenchError

    raw = int(world.num_features)
    cols = torch.arange(raw - m, raw)
    base = _record(b, world, streams)
    if not base.prints:
        return NoLayout(True, "no DP-SGD step of the first optimiser was seen")
    flipped = _record(b, _negated(world, cols), streams)
    try:
        noisy = _record(b, world, streams.noise_variant(1), 1)
    except BenchError:  # a plugin that seeds its own noise: no variant
        noisy = None
    if [n for n, _ in flipped.prints] != [n for n, _ in base.prints] or flipped.widths != base.widths:
        return NoLayout(True, "two fits with the same streams drew different batches when only canary values "
                              "changed (the examples depend on the features' values)")
    width = base.widths[0]
    if any(w != width for w in base.widths):
        return NoLayout(True, "the first optimiser's input width changes between steps")
    changed = torch.zeros(width, dtype=torch.bool)
    for (_, a), (_, f) in zip(base.prints, flipped.prints):
        changed |= a != f
    released = torch.zeros(width, dtype=torch.bool)
    if noisy is not None and noisy.prints and noisy.prints[0][0] == base.prints[0][0]:
        released = noisy.prints[0][1] != base.prints[0][1]
    elif width != raw:
        return NoLayout(True, "the method seeds its own noise, so noisy released input columns cannot be told from "
                              f"raw ones, and its input width {width} is not the raw width {raw}")
    carry = changed & ~released
    if not bool(carry.any()):
        if bool(released.any()):
            return NoLayout(False, f"traced: the DP-SGD examples read the canaries' data only through "
                                   f"{int(released.sum())} noisy released input column(s), which the mechanism's "
                                   "ledger event covers")
        return NoLayout(True, f"no canary data reached the inputs of the first {len(base.prints)} DP-SGD steps, "
                              "every canary in")
    if width % raw:
        return NoLayout(True, f"canary data reaches {int(carry.sum())} input column(s) of width {width}, not a "
                              f"concatenation of blocks of the raw width {raw}")
    idx = carry.nonzero().view(-1)
    block, within = idx // raw, idx % raw
    if bool((within < raw - m).any()):
        return NoLayout(True, f"canary data reaches input columns outside the canaries' own "
                              f"({int((within < raw - m).sum())} of {idx.numel()}): the first layer mixes columns")
    seen = tuple(sorted({int(x) for x in block.tolist()}))
    positions = torch.stack([torch.as_tensor(bk * raw, dtype=torch.long) + cols for bk in seen], dim=1)
    return Layout(width, raw, positions, seen, int(released.sum()))
