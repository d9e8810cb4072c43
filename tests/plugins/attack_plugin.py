"""Instruments for testing the attacks: methods with known leakage, and an example attack plugin.

`bench --plugin tests/plugins/attack_plugin.py attack --method memorise --attack max-posterior ...`

* ``prior``: ignores its training data: every node gets the label distribution of the whole graph,
  which does not depend on which nodes are members. No attack should beat chance (AUC ~ 0.5).
  (Returning the *training* class frequencies instead does leak, a little: members' classes are
  over-represented in them. On a 600-node private-public csbm the loss attack measured AUC 0.59
  [0.52, 0.67] against such a model.)
* ``memorise``: a lookup table: each training node gets 0.9 on its own label, every other node the
  prior. Every node attack should reach AUC ~ 1.
* ``memorise-rows``: a lookup table of (training row, label): a training node holding its own feature row gets
  0.9 on its label, anything else the prior. The feature attack should reach AUC 1.
* ``propagate``: one propagation step over the training graph of features through fixed random
  weights (nothing learnt): its posteriors depend on the edges and nothing else of the training
  data. Serves ``predict_proba_features`` (LinkTeller's feature queries).
* ``kd-queries``: a private-public method that "queries" a random third of the public-train nodes
  and reports them in ``info["query_nodes"]``; with ``memorise=true`` it memorises their labels
  (Attack-2 must then reach AUC ~ 1), otherwise it returns the prior.

The tests register and unregister these through :func:`register_all` / :func:`unregister_all`; as a
``--plugin`` file they register on import.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attacks import Attack, register_attack, unregister_attack
from attacks.base import NodeAttackConfig
from methods import Budget, Method, Task, register
from methods.base import Fitted, unregister
from methods.privacy import PrivacyLedger


class TableFitted(Fitted):
    def __init__(self, proba: torch.Tensor, info: dict | None = None, features_fn=None) -> None:
        self._p = proba
        self.ledger = PrivacyLedger.non_private("test instrument")
        self.history = [{"epoch": 1}]
        self.info = dict(info or {})  # info["inference_private"]: derived by methods.base.fit_method
        self._features_fn = features_fn
        if features_fn is not None:
            self.predict_proba_features = self._predict_features

    def predict_proba(self, nodes=None):
        return self._p if nodes is None else self._p[torch.as_tensor(nodes, dtype=torch.long)]

    def _predict_features(self, x, nodes=None):
        p = self._features_fn(x)
        return p if nodes is None else p[torch.as_tensor(nodes, dtype=torch.long)]


def _prior(task: Task, mask: torch.Tensor) -> torch.Tensor:
    counts = torch.bincount(task.data.y[mask], minlength=task.num_classes).double() + 1.0
    return counts / counts.sum()


def _peaked(labels: torch.Tensor, classes: int, peak: float) -> torch.Tensor:
    p = torch.full((labels.numel(), classes), (1.0 - peak) / max(classes - 1, 1), dtype=torch.float64)
    p[torch.arange(labels.numel()), labels] = peak
    return p


@dataclass
class NoOptions:
    pass


class PriorMethod(Method):
    description = "the whole graph's class frequencies for every node (test instrument)"
    privacy_unit = "none"
    Config = NoOptions

    def fit(self, task: Task, budget: Budget, seed: int, device="cpu", progress=False):
        self.check_budget(budget)
        everyone = torch.ones(task.num_nodes, dtype=torch.bool)
        p = _prior(task, everyone).expand(task.num_nodes, -1).clone()
        return TableFitted(p, features_fn=lambda x: p.clone())


@dataclass
class MemoriseConfig:
    peak: float = 0.9


class MemoriseMethod(Method):
    description = "a lookup table of the training labels (test instrument)"
    privacy_unit = "none"
    Config = MemoriseConfig

    def fit(self, task: Task, budget: Budget, seed: int, device="cpu", progress=False):
        self.check_budget(budget)
        p = _prior(task, task.train_mask).expand(task.num_nodes, -1).clone()
        idx = task.train_mask.nonzero().view(-1)
        p[idx] = _peaked(task.data.y[idx], task.num_classes, self.config.peak)
        return TableFitted(p)


class MemoriseRowsMethod(Method):
    """A lookup table of (training row, label): a training node gets 0.9 on its label while it holds its own row,
    the prior otherwise (whatever its neighbours); serves feature queries."""

    description = "a lookup table of the training nodes' feature rows and labels (test instrument)"
    privacy_unit = "none"
    Config = MemoriseConfig

    def fit(self, task: Task, budget: Budget, seed: int, device="cpu", progress=False):
        self.check_budget(budget)
        x0, train, y = task.data.x.clone(), task.train_mask.clone(), task.data.y
        prior = _prior(task, task.train_mask)
        peak = self.config.peak

        def forward(x: torch.Tensor) -> torch.Tensor:
            p = prior.expand(task.num_nodes, -1).clone()
            hit = train & (x.to(x0.dtype) == x0).all(1)
            p[hit] = _peaked(y[hit], task.num_classes, peak)
            return p

        return TableFitted(forward(x0), features_fn=forward)


@dataclass
class PropagateConfig:
    temperature: float = 3.0


class PropagateMethod(Method):
    description = "one mean-propagation step over the training graph, fixed random weights (test instrument)"
    privacy_unit = "edge"
    Config = PropagateConfig
    settings = ("transductive",)

    def fit(self, task: Task, budget: Budget, seed: int, device="cpu", progress=False):
        self.check_budget(budget)
        self.check_task(task)
        n = task.num_nodes
        ei = task.data.edge_index
        loops = torch.arange(n)
        row = torch.cat([ei[0], loops])
        col = torch.cat([ei[1], loops])
        deg = torch.bincount(row, minlength=n).double()
        gen = torch.Generator().manual_seed(1234)  # data-independent weights
        w = torch.randn(task.num_features, task.num_classes, generator=gen, dtype=torch.float64)
        tau = self.config.temperature

        def forward(x: torch.Tensor) -> torch.Tensor:
            h = x.double() @ w
            h = (h - h.mean(0)) / h.std(0).clamp(min=1e-9)
            agg = torch.zeros_like(h).index_add_(0, row, h[col]) / deg.view(-1, 1)
            return torch.softmax(tau * agg, dim=1)

        p = forward(task.data.x)
        return TableFitted(p, features_fn=forward)


@dataclass
class KDConfig:
    memorise: bool = True
    queries: int = 0  # 0 = a third of the public-train nodes


class KDQueriesMethod(Method):
    description = "queries a random third of the public-train nodes and reports them (test instrument)"
    privacy_unit = "none"
    Config = KDConfig
    settings = ("private-public",)

    def fit(self, task: Task, budget: Budget, seed: int, device="cpu", progress=False):
        self.check_budget(budget)
        self.check_task(task)
        cand = task.query_mask.nonzero().view(-1)
        q = self.config.queries or max(1, cand.numel() // 3)
        q = min(q, cand.numel())
        gen = torch.Generator().manual_seed(seed)
        queried = cand[torch.randperm(cand.numel(), generator=gen)[:q]]
        p = _prior(task, task.train_mask).expand(task.num_nodes, -1).clone()
        if self.config.memorise:
            p[queried] = _peaked(task.data.y[queried], task.num_classes, 0.9)
        return TableFitted(p, {"query_nodes": queried.clone()})


@dataclass
class MaxPosteriorConfig(NodeAttackConfig):
    pass


class MaxPosteriorAttack(Attack):
    """An example attack plugin: the top posterior, nothing else."""

    description = "the largest posterior (example plugin)"
    level = "node"
    Config = MaxPosteriorConfig

    def scores(self, view):
        return {"max": view.posteriors(view.candidates).max(1).values}


METHODS = {"prior": PriorMethod, "memorise": MemoriseMethod, "memorise-rows": MemoriseRowsMethod, "propagate": PropagateMethod,
           "kd-queries": KDQueriesMethod}
ATTACKS = {"max-posterior": MaxPosteriorAttack}


def register_all() -> None:
    for name, cls in METHODS.items():
        register(name)(cls)
    for name, cls in ATTACKS.items():
        register_attack(name)(cls)


def unregister_all() -> None:
    for name in METHODS:
        unregister(name)
    for name in ATTACKS:
        unregister_attack(name)


register_all()
