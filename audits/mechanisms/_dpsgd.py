"""What the DP-SGD step kinds share (:mod:`~audits.mechanisms.dpsgd_poisson`, :mod:`~audits.mechanisms.dpsgd_fixed`,
:mod:`~audits.mechanisms.dpgnn_step`): the methods' :class:`~methods.dpsgd.DPOptimizer` driven with one Dirac
gradient per trial, a coordinate each, and the released noisy sum read back.

The trials' batches are drawn ahead of the steps, all at once: :func:`fixed_size_draws` replays the methods'
:class:`~methods.dpsgd.FixedSizeSampler` on its own generator, draw for draw (checked against the sampler itself on
every call), so the scores are the ones a loop of ``sampler.sample()`` gives, at a fraction of its cost."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from audits.mechanisms.base import Mutation
from methods.base import ConfigError
from methods.streams import RunStreams

#: the Poisson rate and the fixed-size batch fraction (1 of 2) of the DP-SGD step kinds
DPSGD_RATE = 0.5
#: the first draws of every :func:`fixed_size_draws` call are the methods' sampler's own, and the replay must
#: reproduce them exactly
REPLAY_CHECK = 64
#: the largest population replayed: lcm(2, ..., 22) < 2^32 <= lcm(2, ..., 23), and randint draws r mod L from one
#: 32-bit output only for L < 2^32 (larger populations loop over the sampler itself)
REPLAY_MAX_POPULATION = 22

if TYPE_CHECKING:  # torch is imported where a mechanism runs, so the module loads without it
    import torch

    from methods.dpsgd import FixedSizeSampler


class ReadReleased:
    """A :class:`methods.dpsgd.GradientHook` that changes nothing and keeps the released noisy sum."""

    def __init__(self) -> None:
        self.released = None

    def split(self, opt, inputs, target):
        return inputs, target, None

    def observe(self, opt, noisy_sums) -> None:
        self.released = noisy_sums[0].detach().double().clone()


def _replay(gen: torch.Generator, n: int, m: int, count: int) -> torch.Tensor:
    """``count`` draws of ``torch.randperm(n, generator=gen)[:m]`` at once: the CPU randperm is Fisher-Yates with
    z_i = r_i mod (n - i) for n - 1 successive 32-bit outputs r_i of the generator, and ``torch.randint(0, L)``
    (L < 2^32) draws r mod L from the same outputs in the same order, so with L a multiple of every n - i,
    (r mod L) mod (n - i) = r mod (n - i)."""
    import torch

    perm = torch.arange(n).repeat(count, 1)
    if n == 1:
        return perm[:, :m]
    span = math.lcm(*range(2, n + 1))
    z = torch.randint(0, span, (count, n - 1), generator=gen)
    rows = torch.arange(count)
    for i in range(n - 1):
        j = z[:, i] % (n - i) + i
        here, there = perm[:, i].clone(), perm[rows, j]
        perm[:, i] = there
        perm[rows, j] = here
    return perm[:, :m]


def fixed_size_draws(sampler: FixedSizeSampler, count: int) -> torch.Tensor:
    """``count`` successive ``sampler.sample()`` batches of the methods' :class:`~methods.dpsgd.FixedSizeSampler`
    ([count, batch]), bit for bit: the first :data:`REPLAY_CHECK` come from the sampler itself, after the replay
    (:func:`_replay`) of the same draws has been checked equal to them on a copy of its generator; the rest are
    replayed. A sampler whose draws the replay does not reproduce (a changed sampler, a population whose
    randperm is not the Fisher-Yates replayed) is refused, never silently replaced."""
    import torch

    n, m, gen = sampler.n, sampler.m, sampler.gen
    if n > REPLAY_MAX_POPULATION:
        return torch.stack([sampler.sample() for _ in range(count)]) if count else torch.empty(0, m, dtype=torch.long)
    head = min(count, REPLAY_CHECK)
    state = gen.get_state()
    replayed = _replay(gen, n, m, head)
    gen.set_state(state)
    own = torch.stack([sampler.sample() for _ in range(head)]) if head else torch.empty(0, m, dtype=torch.long)
    if not torch.equal(own, replayed):
        raise ConfigError(f"the replay of FixedSizeSampler({n}, {m}) differs from its own draws: the audit would "
                          "not run the methods' sampler")
    return torch.cat([own, _replay(gen, n, m, count - head)])


def dirac_steps(columns: int, trials: int, mu: float, streams: RunStreams, m: Mutation,
                canaries: Callable[[int], tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
    """The methods' :class:`~methods.dpsgd.DPOptimizer` on a linear model over ``columns`` coordinates with the
    linear loss ``W x``: an example whose only non-zero feature k is large has a Dirac gradient on W[0, k], clipped
    to exactly C (C x ``m.sensitivity`` when mutated), and no other example touches that coordinate. Step t's
    batch: one row per canary of ``canaries(t)`` = (coordinates, signs), ``1e3 sign`` at its coordinate (+-C once
    clipped; the trials whose canary was drawn), then one all-zero example; the noise is C / mu (/ ``m.noise``).
    The rows are written into one buffer kept across steps (a fresh matrix a step costs more than the step).
    Returns the released noisy sums / C, ``columns`` trials a step."""
    import torch
    from torch import nn

    from methods.dpsgd import DPOptimizer, gradient_hook

    clip = 1.0
    model = nn.Linear(columns, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.0), clip=clip * m.sensitivity,
                      loss_fn=lambda out, y: out[:, 0], generator=streams.torch("noise"))
    hook = ReadReleased()
    steps = -(-trials // columns)
    scores = np.empty(steps * columns)
    buffer = torch.zeros(columns + 1, columns)
    with gradient_hook(hook):
        for t in range(steps):
            coordinate, sign = canaries(t)
            k = coordinate.numel()
            if k + 1 > buffer.size(0):
                buffer = torch.zeros(k + 1, columns)
            rows = torch.arange(k)
            buffer[rows, coordinate] = 1e3 * sign
            batch = buffer[:k + 1]
            opt.step((batch,), torch.zeros(k + 1, dtype=torch.long), clip / mu / m.noise, 1.0)
            scores[t * columns:(t + 1) * columns] = hook.released[0].numpy() / clip
            buffer[rows, coordinate] = 0.0
    return scores[:trials]


def signed_canaries(drawn: torch.Tensor, holders: int, world_in: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """One canary per drawn example of each trial: ``drawn`` [columns, batch] are the examples trial c's batch drew
    from its own population, of which the first ``holders`` hold the unit. A holder is +large e_c in the world with
    the unit and -large e_c without it, every other example -large e_c in both (clipped: +C or -C): the one-sided
    pair, so the world without the unit releases the same sum whatever the batch. Returns (coordinates, signs)."""
    import torch

    sign = torch.where((drawn < holders) & world_in, 1.0, -1.0)  # [columns, batch]
    return torch.arange(drawn.size(0)).repeat_interleave(drawn.size(1)), sign.reshape(-1)
