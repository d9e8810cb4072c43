"""Metric-threshold attacks (no attack model, no shadow model): the released posteriors alone.

Variants (higher score = more likely a member), for a candidate with label y and posterior p:

* ``loss``: log p_y, i.e. minus the cross-entropy loss (Yeom et al. 2018);
* ``confidence``: max_c p_c, the top posterior (Salem et al. 2019; label-free);
* ``entropy``: sum_c p_c log p_c, minus the prediction entropy (Salem et al. 2019; label-free);
* ``modified-entropy``: minus Song & Mittal's (2021) Mentr(p, y) = -(1 - p_y) log p_y
  - sum_{c != y} p_c log(1 - p_c), which is monotone in the correct-class confidence and penalises
  confident wrong predictions.

Probabilities are clamped to [1e-300, 1] (and 1 - p to 1e-300) before taking logs, in float64.
The decision threshold for balanced accuracy is chosen by the harness on the attacker's known nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from attacks.base import Attack, NodeAttackConfig, NodeView, register_attack

_TINY = 1e-300


@dataclass
class ThresholdConfig(NodeAttackConfig):
    pass


def loss_score(p: Tensor, y: Tensor) -> Tensor:
    return p.gather(1, y.view(-1, 1)).view(-1).clamp(min=_TINY).log()


def confidence_score(p: Tensor) -> Tensor:
    return p.max(dim=1).values


def entropy_score(p: Tensor) -> Tensor:
    return (p * p.clamp(min=_TINY).log()).sum(1)


def modified_entropy(p: Tensor, y: Tensor) -> Tensor:
    """Song & Mittal's Mentr(p, y) (lower for members)."""
    py = p.gather(1, y.view(-1, 1)).view(-1)
    own = -(1.0 - py) * py.clamp(min=_TINY).log()
    others = -(p * (1.0 - p).clamp(min=_TINY).log())
    others = others.sum(1) - others.gather(1, y.view(-1, 1)).view(-1)
    return own + others


@register_attack("threshold")
class ThresholdAttack(Attack):
    description = "loss, confidence, entropy and modified-entropy scores of the released posteriors (no training)"
    level = "node"
    Config = ThresholdConfig

    def scores(self, view: NodeView) -> dict[str, Tensor]:
        p = view.posteriors(view.candidates)
        y = view.labels[view.candidates].long()
        return {"loss": loss_score(p, y), "confidence": confidence_score(p), "entropy": entropy_score(p),
                "modified-entropy": -modified_entropy(p, y)}


__all__ = ["ThresholdAttack", "confidence_score", "entropy_score", "loss_score", "modified_entropy"]
