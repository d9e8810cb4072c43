"""Shadow-model attacks: Olatunji et al. 2021 and PrivGNN's Attack-1 / Attack-2 (Olatunji et al. 2023, app. C).

``shadow`` (Olatunji, Nejdl & Khosla 2021, "Membership inference attack on graph neural networks"):

1. the attacker splits the nodes it knows (``NodeView.known``: half of the candidates by default,
   disjoint from the evaluated ones) at random into shadow-in and shadow-out parts, shadow-in holding
   ``in_fraction`` of them (default: the target's member fraction, so the shadow trains on as many
   nodes, relatively, as the target: the paper's same-size shadow; ``in_fraction=0.5``: halves);
2. it trains a shadow model with the same method, hyperparameters and budget on a task built from
   its own data in which shadow-in are the members (``NodeView.reference``: e.g. transductive =
   shadow-in labels trained on, on the same public graph);
3. it trains an attack MLP on the shadow model's posteriors, sorted in decreasing order (label- and
   class-order-free), to tell shadow-in from shadow-out;
4. it scores every candidate by the attack MLP's logit on the *target's* sorted posteriors.

Defaults: one shadow model (the paper's; ``shadows=N`` concatenates N), the attack MLP has one hidden
layer of 64 ReLU units trained full-batch with Adam (lr 0.01, 300 epochs, weight decay 5e-4,
standardised inputs, classes weighted to balance). ``features=sorted-log`` feeds log posteriors
instead (not in the paper; resolves confidences near 1). ``shadow_method`` trains another registered
method as the shadow (e.g. ``sage``: an attacker who knows the architecture only).

``privgnn-attack1`` is the same attack with PrivGNN's Attack-1 game (private nodes vs public-test
nodes) and the paper's attacker, who knows the released model's architecture (GraphSAGE) but not its
training paradigm: the shadow is ``sage`` trained on the shadow-in nodes. ``privgnn-attack2`` plays
Attack-2 (queried vs un-queried public-train nodes) with a shadow trained by the target's own method
(the attacker knows it is knowledge distillation); its shadow's private graph is the task's private
graph, standing in for a same-distribution graph the attacker owns (it reveals nothing of which
public nodes the target queried), and the shadow queries the same fraction of its public-train nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from attacks.base import Attack, NodeAttackConfig, NodeView, Target, register_attack
from attacks.membership import NotApplicable
from methods.base import ConfigError, get_method


@dataclass
class ShadowConfig(NodeAttackConfig):
    shadows: int = 1
    # "target": the target's method, hyperparameters and budget; else a registered method name
    shadow_method: str = "target"
    features: Literal["sorted", "sorted-log"] = "sorted"
    hidden: int = 64
    epochs: int = 300
    lr: float = 0.01

    def validate(self) -> None:
        super().validate()
        if self.shadows < 1 or self.hidden < 1 or self.epochs < 1 or self.lr <= 0:
            raise ConfigError("shadows, hidden and epochs must be >= 1 and lr > 0")
        if self.shadow_method != "target":
            get_method(self.shadow_method)  # unknown names fail before training


def sorted_features(p: Tensor, kind: str = "sorted") -> Tensor:
    s = p.sort(dim=1, descending=True).values
    if kind == "sorted-log":
        s = s.clamp(min=1e-30).log()
    return s.float()


class AttackMLP(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).view(-1)


def train_attack_mlp(x: Tensor, y: Tensor, hidden: int, epochs: int, lr: float, seed: int):
    """A binary MLP on (x, y); returns a function mapping features to logits."""
    gen = torch.Generator().manual_seed(seed)
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    with torch.random.fork_rng():
        torch.manual_seed(int(torch.randint(2**31 - 1, (1,), generator=gen)))
        model = AttackMLP(x.size(1), hidden)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=5e-4)
    yf = y.float()
    pos = float(yf.sum())
    neg = float(yf.numel() - pos)
    if pos == 0 or neg == 0:
        raise NotApplicable("the shadow model has only members or only non-members to learn from")
    pos_weight = torch.tensor(neg / pos)
    xs = (x - mean) / std
    for _ in range(epochs):
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.binary_cross_entropy_with_logits(model(xs), yf, pos_weight=pos_weight)
        loss.backward()
        opt.step()
    model.eval()

    def logits(z: Tensor) -> Tensor:
        with torch.no_grad():
            return model((z - mean) / std).double()

    return logits


@register_attack("shadow")
class ShadowAttack(Attack):
    description = ("Olatunji et al. 2021: shadow model(s) trained with the target's method on the attacker's "
                   "nodes, an MLP on sorted posteriors")
    level = "node"
    Config = ShadowConfig
    smoke_config = {"epochs": 100}

    def shadow_method(self) -> str | None:
        m = self.config.shadow_method
        return None if m == "target" else m

    def scores(self, view: NodeView) -> dict[str, Tensor]:
        c = self.config
        known = view.known
        if known.numel() < 4:
            raise NotApplicable(f"the attacker knows {known.numel()} nodes; a shadow split needs at least 4")
        feats, labels = [], []
        from methods.progress import progress_bar

        bar = progress_bar(c.shadows, f"{self.name} shadows", view.progress)
        for j in range(c.shadows):
            perm = known[torch.randperm(known.numel(), generator=view.generator("split", j))]
            half = min(max(1, round(view.in_fraction(c.in_fraction) * perm.numel())), perm.numel() - 1)
            ref = view.reference(perm[:half], perm[half:])
            fitted, members, non = view.fit(ref, seed=view.streams("shadow", j), method=self.shadow_method())
            nodes = (members | non).nonzero().view(-1)
            p = view.reference_posteriors(fitted, nodes)
            feats.append(sorted_features(p, c.features))
            labels.append(members[nodes])
            bar.update(1)
        bar.close()
        x, y = torch.cat(feats), torch.cat(labels)
        view.notes["in_fraction"] = round(view.in_fraction(c.in_fraction), 4)
        view.notes["shadow_members"] = int(y.sum())
        view.notes["shadow_non_members"] = int((~y).sum())
        logits = train_attack_mlp(x, y, c.hidden, c.epochs, c.lr, view.seed("mlp"))
        target = sorted_features(view.posteriors(view.candidates), c.features)
        return {"mlp": logits(target)}


@dataclass
class Attack1Config(ShadowConfig):
    membership: str = "private-vs-public"
    shadow_method: str = "sage"


@dataclass
class Attack2Config(ShadowConfig):
    membership: str = "queried-vs-unqueried"


class _PrivGNNAttack(ShadowAttack):
    def check(self, target: Target) -> None:
        if target.task.setting != "private-public":
            raise NotApplicable(f"{self.name} is PrivGNN's attack on the private-public setting, "
                                f"not {target.task.setting}")


@register_attack("privgnn-attack1")
class PrivGNNAttack1(_PrivGNNAttack):
    description = ("PrivGNN Attack-1: private vs public-test nodes; shadow attack with a GraphSAGE shadow "
                   "(architecture known, paradigm not)")
    Config = Attack1Config


@register_attack("privgnn-attack2")
class PrivGNNAttack2(_PrivGNNAttack):
    description = ("PrivGNN Attack-2: pseudo-labelled (queried) vs un-queried public-train nodes; shadow "
                   "trained with the target's method")
    Config = Attack2Config
    unit_label = "public-node query membership"

    @classmethod
    def outside_claim(cls, privacy_unit: str) -> str:
        # the members are public nodes: no private-public method's guarantee (on its private graph) covers them
        return "" if privacy_unit in ("none", "", "?") else f"outside the {privacy_unit}-level claim (public nodes)"


__all__ = ["PrivGNNAttack1", "PrivGNNAttack2", "ShadowAttack", "sorted_features", "train_attack_mlp"]
