"""Networks of GAP and ProGAP: per-stage base MLPs, a concatenation JK, one-layer heads, GAP's encoder.

Section 5.3 of ProGAP: 16 hidden units, SeLU, one-layer heads, JK by concatenation, batch norm at edge
level and group norm with one group at node level (batch norm mixes the examples of a batch, which
per-example DP-SGD forbids). Our group norm has no affine parameters, so every trainable parameter
lives in an ``nn.Linear`` and the fast book-keeping DP-SGD route applies; the affine scale and shift
the paper's group norm adds are absorbed by the next linear layer up to the SeLU in between.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

Norm = Literal["batch", "group", "none"]


def _norm(kind: Norm, dim: int) -> nn.Module:
    if kind == "batch":
        return nn.BatchNorm1d(dim)
    if kind == "group":
        return nn.GroupNorm(1, dim, affine=False)
    return nn.Identity()


class BaseMLP(nn.Module):
    """``layers`` x (Linear -> SeLU -> norm); the output is an embedding (not a prediction)."""

    def __init__(self, in_dim: int, hidden: int, layers: int, norm: Norm) -> None:
        super().__init__()
        mods: list[nn.Module] = []
        for i in range(layers):
            mods += [nn.Linear(in_dim if i == 0 else hidden, hidden), nn.SELU(), _norm(norm, hidden)]
        self.net = nn.Sequential(*mods)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class ProgressiveNet(nn.Module):
    """All stages of ProGAP (Eqs. 9-10): stage s owns ``bases[s]`` and ``heads[s]``.

    Stage s maps the cached inputs (X~(0), ..., X~(s)) to ``heads[s](normalize(cat(bases[k](X~(k)))))``;
    its embedding X(s) = ``bases[s](X~(s))`` feeds the next NAP. GAP's classifier is the last stage of
    a ``ProgressiveNet`` over (X(0), ..., X(K)) trained in one go.
    """

    def __init__(self, in_dim: int, hidden: int, classes: int, stages: int, base_layers: int, norm: Norm,
                 later_in_dim: int | None = None) -> None:
        """``later_in_dim``: the input width of stages >= 1 (default ``hidden``: ProGAP aggregates the previous
        stage's embeddings; GAP aggregates X(0) itself, so its hops keep X(0)'s width)."""
        super().__init__()
        later = hidden if later_in_dim is None else later_in_dim
        self.bases = nn.ModuleList(BaseMLP(in_dim if s == 0 else later, hidden, base_layers, norm)
                                   for s in range(stages))
        self.heads = nn.ModuleList(nn.Linear(hidden * (s + 1), classes) for s in range(stages))

    def stage(self, s: int) -> "Stage":
        return Stage(self, s)


class Stage(nn.Module):
    """The sub-model M_s: ``bases[0..s]`` and ``heads[s]`` (its trainable parameters, Algorithm 2 line 4)."""

    def __init__(self, net: ProgressiveNet, s: int) -> None:
        super().__init__()
        self.s = s
        self.bases = nn.ModuleList(net.bases[: s + 1])
        self.head = net.heads[s]

    def embed(self, *xs: Tensor) -> list[Tensor]:
        return [self.bases[k](xs[k]) for k in range(self.s + 1)]

    def forward(self, *xs: Tensor) -> Tensor:
        h = torch.cat(self.embed(*xs), dim=-1)
        return self.head(nn.functional.normalize(h, p=2.0, dim=-1))


class Encoder(nn.Module):
    """GAP's encoder: a base MLP whose L2-normalised output is the embedding, plus a linear head used
    only to train it on the labels."""

    def __init__(self, in_dim: int, hidden: int, classes: int, layers: int, norm: Norm) -> None:
        super().__init__()
        self.base = BaseMLP(in_dim, hidden, layers, norm)
        self.head = nn.Linear(hidden, classes)

    def embed(self, x: Tensor) -> Tensor:
        return nn.functional.normalize(self.base(x), p=2.0, dim=-1)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.embed(x))
