"""Edge membership inference: link stealing from posterior similarity, and a LinkTeller-style influence attack.

Game (``attacks.membership``): members are edges of the training graph, non-members node pairs of the
training graph that are not edges, drawn uniformly (as many as member edges; ``pairs`` caps them).
The attacker's task has no edge at all; it sees the released posteriors, node features and labels.

``link-stealing`` (He et al. 2021, "Stealing links from graph neural networks", Attack-0: unsupervised,
the attacker knows only the posteriors): the score of a pair (u, v) is minus the distance between the
two posterior vectors, for each of the paper's eight distances: ``cosine``, ``correlation``,
``euclidean``, ``sqeuclidean``, ``cityblock``, ``chebyshev``, ``braycurtis``, ``canberra`` (definitions
as ``scipy.spatial.distance``; an undefined correlation or cosine, from a constant or zero vector,
counts as distance 1; canberra's 0/0 terms count 0, as in scipy). The variant
``ref-features-cosine`` is the same game scored on raw node features, with no model at all: the
AUC that feature homophily alone gives uniform non-edges. Posterior similarity above it is what the
model adds; below it the model's posteriors are less informative than the features they came from.

``linkteller`` (in the spirit of Wu et al. 2022, LinkTeller): influence analysis. For every node u of
a pair, the attacker re-queries the model with u's feature row perturbed and measures how much the
posterior of its partner v moves, ||P'(v) - P(v)||_2 / delta; the pair's score is the mean of the two
directions. A message-passing model moves only nodes within its receptive field. The perturbation:
``add`` (default) adds delta times the row's mean absolute entry (1 for an all-zero row) to every
entry of u's row; ``scale`` multiplies the row by (1 + delta), the paper's, which a model that
row-normalises its features (GCN on Cora/CiteSeer) cancels exactly. This needs a released model that
answers queries on attacker-supplied features over its own graph: an optional
``Fitted.predict_proba_features(x, nodes)`` (or ``predict_proba_rows``: the same query with a few rows
changed, one cheap forward). DRW, DP-MLP, the non-private baselines and EdgeRand serve it (their
served graph is public to the claim or a DP release); GAP/ProGAP do not (a query on new features would
be a fresh noisy aggregation of the private graph the ledger does not cover), and the attack reports
"not applicable" with that reason (``Method.feature_query_note``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attacks.base import Attack, EdgeAttackConfig, EdgeView, register_attack
from methods.base import ConfigError

DISTANCES = ("cosine", "correlation", "euclidean", "sqeuclidean", "cityblock", "chebyshev", "braycurtis", "canberra")


def paired_distance(a: Tensor, b: Tensor, metric: str) -> Tensor:
    """Row-wise distance between ``a[i]`` and ``b[i]`` (float64), scipy's definitions."""
    a, b = a.double(), b.double()
    if metric in ("cosine", "correlation"):
        if metric == "correlation":
            a = a - a.mean(1, keepdim=True)
            b = b - b.mean(1, keepdim=True)
        na, nb = a.norm(dim=1), b.norm(dim=1)
        ok = (na > 1e-12) & (nb > 1e-12)
        cos = (a * b).sum(1) / (na * nb).clamp(min=1e-300)
        return torch.where(ok, 1.0 - cos.clamp(-1.0, 1.0), torch.ones_like(cos))
    d = a - b
    if metric == "euclidean":
        return d.norm(dim=1)
    if metric == "sqeuclidean":
        return (d * d).sum(1)
    if metric == "cityblock":
        return d.abs().sum(1)
    if metric == "chebyshev":
        return d.abs().max(1).values
    if metric == "braycurtis":
        den = (a + b).abs().sum(1)
        return torch.where(den > 0, d.abs().sum(1) / den.clamp(min=1e-300), torch.zeros_like(den))
    if metric == "canberra":
        den = a.abs() + b.abs()
        return torch.where(den > 0, d.abs() / den.clamp(min=1e-300), torch.zeros_like(den)).sum(1)
    raise ConfigError(f"unknown distance {metric!r}; available: {', '.join(DISTANCES)}")


@dataclass
class LinkStealingConfig(EdgeAttackConfig):
    # comma-separated subset of the eight distances
    distances: str = ",".join(DISTANCES)

    def validate(self) -> None:
        super().validate()
        names = [d.strip() for d in self.distances.split(",") if d.strip()]
        bad = [d for d in names if d not in DISTANCES]
        if bad or not names:
            raise ConfigError(f"distances must be a comma-separated subset of {', '.join(DISTANCES)} (got {bad or '[]'})")


@register_attack("link-stealing")
class LinkStealing(Attack):
    description = "He et al. 2021 unsupervised link stealing: posterior distances of edges vs non-edges"
    level = "edge"
    Config = LinkStealingConfig
    smoke_config = {"pairs": 200}

    def scores(self, view: EdgeView) -> dict[str, Tensor]:
        u, v = view.pairs
        p = view.posteriors()
        out = {}
        for metric in [d.strip() for d in self.config.distances.split(",") if d.strip()]:
            out[metric] = -paired_distance(p[u], p[v], metric)
        x = view.task.data.x
        out["ref-features-cosine"] = -paired_distance(x[u], x[v], "cosine")
        return out


@dataclass
class LinkTellerConfig(EdgeAttackConfig):
    pairs: int = 500
    delta: float = 0.01  # relative perturbation of one node's feature row
    # add: + delta * mean |row| on every entry (survives row normalisation); scale: * (1 + delta), the paper's
    perturbation: str = "add"

    def validate(self) -> None:
        super().validate()
        if not self.delta > 0:
            raise ConfigError(f"delta must be > 0 (got {self.delta})")
        if self.perturbation not in ("add", "scale"):
            raise ConfigError(f"perturbation must be add or scale (got {self.perturbation!r})")


@register_attack("linkteller")
class LinkTeller(Attack):
    description = ("influence analysis in the spirit of LinkTeller (Wu et al. 2022): posterior change of v when "
                   "u's features are perturbed; needs Fitted.predict_proba_features")
    level = "edge"
    Config = LinkTellerConfig
    smoke_config = {"pairs": 100}

    def scores(self, view: EdgeView) -> dict[str, Tensor]:
        from methods.progress import progress_bar

        x = view.task.data.x.float()
        delta = self.config.delta
        u, v = view.pairs
        none = torch.empty(0, dtype=torch.long)
        base = view.feature_query_rows(none, x[:0])  # not applicable fails here, before any work
        partners: dict[int, set[int]] = {}
        for a, b in zip(u.tolist(), v.tolist()):
            partners.setdefault(a, set()).add(b)
            partners.setdefault(b, set()).add(a)
        influence: dict[tuple[int, int], float] = {}
        bar = progress_bar(len(partners), f"{self.name} queries", view.progress)
        for node, others in partners.items():
            row = x[node]
            if self.config.perturbation == "scale":
                row = row * (1.0 + delta)
            else:
                size = float(row.abs().mean())
                row = row + delta * (size if size > 0 else 1.0)
            targets = torch.tensor(sorted(others))
            moved = view.feature_query_rows(torch.tensor([node]), row.unsqueeze(0), targets)
            change = (moved - base[targets]).norm(dim=1) / delta
            for t, c in zip(targets.tolist(), change.tolist()):
                influence[(node, t)] = c
            bar.update(1)
        bar.close()
        s = torch.tensor([(influence[(a, b)] + influence[(b, a)]) / 2.0 for a, b in zip(u.tolist(), v.tolist())],
                         dtype=torch.float64)
        view.notes["feature_queries"] = len(partners) + 1
        return {"influence": s}


__all__ = ["DISTANCES", "LinkStealing", "LinkTeller", "paired_distance"]
