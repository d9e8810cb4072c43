"""What the DP-SGD step kinds share (:mod:`~audits.mechanisms.dpsgd_poisson`, :mod:`~audits.mechanisms.dpsgd_fixed`,
:mod:`~audits.mechanisms.dpgnn_step`): the methods' :class:`~methods.dpsgd.DPOptimizer` driven with one Dirac
gradient per trial, a coordinate each, and the released noisy sum read back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from audits.mechanisms.base import Mutation
from methods.streams import RunStreams

#: the Poisson rate and the fixed-size batch fraction (1 of 2) of the DP-SGD step kinds
DPSGD_RATE = 0.5

if TYPE_CHECKING:  # torch is imported where a mechanism runs, so the module loads without it
    import torch


class ReadReleased:
    """A :class:`methods.dpsgd.GradientHook` that changes nothing and keeps the released noisy sum."""

    def __init__(self) -> None:
        self.released = None

    def split(self, opt, inputs, target):
        return inputs, target, None

    def observe(self, opt, noisy_sums) -> None:
        self.released = noisy_sums[0].detach().double().clone()


def dirac_steps(columns: int, trials: int, mu: float, streams: RunStreams, m: Mutation,
                 batch_rows: Callable[[], torch.Tensor]) -> np.ndarray:
    """The methods' :class:`~methods.dpsgd.DPOptimizer` on a linear model over ``columns`` coordinates with the
    linear loss ``W x``: an example whose only non-zero feature k is large has a Dirac gradient on W[0, k], clipped
    to exactly C (C x ``m.sensitivity`` when mutated), and no other example touches that coordinate. Each step's
    batch is ``batch_rows()`` (canary rows, +-large e_k, for the trials whose canary was drawn) plus one all-zero
    example; the noise is C / mu (/ ``m.noise``). Returns the released noisy sums / C, ``columns`` trials a step."""
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
    zero = torch.zeros(1, columns)
    scores = []
    with gradient_hook(hook):
        for _ in range(-(-trials // columns)):
            batch = torch.cat([batch_rows(), zero])
            opt.step((batch,), torch.zeros(batch.size(0), dtype=torch.long), clip / mu / m.noise, 1.0)
            scores.append(hook.released[0].numpy() / clip)
    return np.concatenate(scores)[:trials]


def signed_rows(columns: int, drawn: torch.Tensor, holders: int, world_in: bool) -> torch.Tensor:
    """One row per drawn example of each trial: ``drawn`` [columns, batch] are the examples trial c's batch drew
    from its own population, of which the first ``holders`` hold the unit. A holder is +large e_c in the world with
    the unit and -large e_c without it, every other example -large e_c in both (clipped: +C or -C): the one-sided
    pair, so the world without the unit releases the same sum whatever the batch."""
    import torch

    sign = torch.where((drawn < holders) & world_in, 1.0, -1.0)  # [columns, batch]
    rows = torch.zeros(drawn.numel(), columns)
    rows[torch.arange(drawn.numel()), torch.arange(columns).repeat_interleave(drawn.size(1))] = 1e3 * sign.reshape(-1)
    return rows
