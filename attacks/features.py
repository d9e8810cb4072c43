"""Feature-row inference: the replace-one game of feature-level DP (DRW, Ayle et al. 2022), played twice.

Feature-level DP hides which feature row a node had; the graph's structure and labels are public. The game
(``attacks.base``): for each target, a training node ``v`` whose row and label the training read, two candidate
rows, ``v``'s own (member) and the row of a node of ``v``'s class outside the training set, drawn uniformly
(non-member: a row the same label makes equally plausible a priori, and one no training label was fitted to).
The attacker knows everything but which of the two ``v`` held: both rows, the structure, the labels and every
other node's row (the DP game's worst case; the view zeroes the targets' own rows, so model-free scores cannot
read them). Two games differ in what else it sees (``Attack.feature_game``, ``attacks.base.FEATURE_GAMES``):

* weights only (``feature row (weights only)``): the released model as a function, queried on rows the attacker
  chooses. A feature-level claim bounds exactly this game: a query is post-processing of the DP weights.
* released predictions (``feature row (released predictions)``): also the posteriors the model serves for the real
  graph, ``v``'s included. A served posterior of a training node is a deterministic function of its own row (DRW's
  GCN and DP-MLP read it raw), which no feature-level epsilon covers (``methods.inference``): the claim is about the
  weights. ``released-prediction`` shows what that leaves open.

``attribute-inference`` scores a candidate row ``r`` for ``v`` by querying the released model with ``v``'s row
set to ``r`` (every other row as served; ``Fitted.predict_proba_rows``) and reading ``v``'s label: the
loss-based attribute inference of Yeom et al. 2018 ("Privacy risk in machine learning", Sec. 5), asked as a
two-candidate test instead of a search over attribute values. A model that memorised ``(x_v, y_v)`` fits its
own row better than a class-mate's. Variants:

* ``loss``: log p(y_v | row v = r);
* ``calibrated``: the same minus log p(y_v | row v = 0): the target's difficulty (what the model says about
  ``v`` from its neighbourhood alone) taken out, in the spirit of Watson et al. 2022's difficulty calibration;
* ``neighbourhood``: the mean log-probability of the labels of ``v`` and its one-hop neighbours with training
  labels (a message-passing model also fits ``v``'s row through its neighbours' losses);
* ``paired``, ``paired-neighbourhood``: ``loss`` and ``neighbourhood`` minus the same score of the target's other
  candidate: the two-world test itself (which of the two rows did ``v`` hold?), every per-target effect cancelled;
* ``ref-neighbour-cosine`` (model-free reference): the cosine between ``r`` and the mean row of ``v``'s
  neighbours; what feature homophily alone gives the game.

Queries cost one forward each, three per target (its two candidate rows, in the view's order, and the zero
row). Needs a released model that answers feature queries: ``Fitted.predict_proba_rows`` or
``predict_proba_features`` (DRW, DP-MLP, the non-private baselines, EdgeRand); otherwise "not applicable".

``released-prediction`` scores a candidate row ``r`` for ``v`` by how closely the model queried with ``v``'s row set
to ``r`` reproduces what it served for ``v`` on the real graph: the query that reproduces the released posterior
exactly is the row ``v`` held (a deterministic model answers its own input again). Variants:

* ``distance``: minus the L1 distance between ``v``'s queried and released posteriors;
* ``neighbourhood``: minus the mean L1 distance over ``v`` and its one-hop neighbours (a message-passing model also
  serves ``v``'s row through its neighbours' posteriors);
* ``paired``: ``distance`` minus the twin candidate's (which of the two rows reproduces the release better);
* ``ref-neighbour-cosine``: the model-free reference, as above.

One query per candidate (two per target), reading ``v`` and its neighbours.

``attribute-lira`` plays the weights-only game with LiRA (Carlini et al. 2022, online and offline) on the two-world
statistic: for each candidate ``c`` of ``v``, ``phi = logit p(y_v | row v = c) - logit p(y_v | row v = c')`` (``c'``
its twin; logit-scaled confidences, ``attacks.lira.logit_confidence``), measured on the target and on
``references`` reference models, each trained by the target's method, hyperparameters and budget on the attacker's
task with every target holding one of its two candidates (each candidate held in exactly half of them). Per
candidate, Gaussians of ``phi`` in the models where ``v`` held ``c`` and where it held ``c'`` give the likelihood
ratio. The raw paired score mixes what a model memorised with per-target effects of the graph (on a GCN, a
class-mate's row adds evidence that ``v``'s own row, alike to its neighbours', repeats, so ``paired`` leans the
wrong way); the reference models measure each target's effects in both worlds and take them out. Reference models
see nothing the game hides: both candidates are given, every other row is the task's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from attacks.base import Attack, FeatureAttackConfig, FeatureView, register_attack
from attacks.edges import paired_distance
from attacks.lira import MAX_REFERENCES, balanced_assignment, lira_scores, logit_confidence
from methods.base import ConfigError
from methods.progress import progress_bar


@dataclass
class AttributeInferenceConfig(FeatureAttackConfig):
    pass


def neighbours(edge_index: Tensor, v: int) -> Tensor:
    """The one-hop neighbours of ``v`` (without ``v``), sorted."""
    nb = edge_index[1][edge_index[0] == v]
    return nb[nb != v].unique()


def neighbour_cosine(r: Tensor, mean_row: Tensor | None) -> float:
    """The model-free reference score of candidate row ``r``: its cosine to the mean row of its node's neighbours
    (-1 without neighbours)."""
    if mean_row is None:
        return -1.0
    return -float(paired_distance(r.unsqueeze(0), mean_row, "cosine")[0])


@register_attack("attribute-inference")
class AttributeInference(Attack):
    description = ("Yeom et al. 2018 loss-based attribute inference as a replace-one test: the released model's "
                   "loss on a training node's label with its own row vs a class-mate's; needs feature queries")
    level = "feature"
    feature_game = "weights"
    Config = AttributeInferenceConfig
    smoke_config = {"targets": 60}

    def scores(self, view: FeatureView) -> dict[str, Tensor]:
        y = view.labels
        nodes, rows = view.nodes, view.rows.float()
        none = torch.empty(0, dtype=torch.long)
        view.feature_query_rows(none, rows[:0], none)  # not applicable fails here, before any work
        ei = view.task.data.edge_index
        train = view.task.train_mask
        x = view.task.data.x.float()
        read_of: dict[int, Tensor] = {}  # v, then its neighbours with training labels
        zero: dict[int, float] = {}
        mean_row: dict[int, Tensor | None] = {}  # the mean row of v's neighbours (the reference)
        loss, nbhd, calib, ref = [], [], [], []
        bar = progress_bar(len(nodes), f"{self.name} queries", view.progress)
        for v, r in zip(nodes.tolist(), rows):
            if v not in read_of:
                nb = neighbours(ei, v)
                read_of[v] = torch.cat([torch.tensor([v]), nb[train[nb]]])
                p0 = view.feature_query_rows(torch.tensor([v]), torch.zeros_like(r).unsqueeze(0), read_of[v][:1])
                zero[v] = float(p0[0, y[v]].clamp(min=1e-300).log())
                mean_row[v] = x[nb].mean(0, keepdim=True) if nb.numel() else None
            read = read_of[v]
            p = view.feature_query_rows(torch.tensor([v]), r.unsqueeze(0), read)
            lp = p[torch.arange(read.numel()), y[read]].clamp(min=1e-300).log()
            loss.append(float(lp[0]))
            nbhd.append(float(lp.mean()))
            calib.append(float(lp[0]) - zero[v])
            ref.append(neighbour_cosine(r, mean_row[v]))
            bar.update(1)
        bar.close()
        view.notes["feature_queries"] = len(zero) + len(nodes)
        d = torch.float64
        loss_t, nbhd_t = torch.tensor(loss, dtype=d), torch.tensor(nbhd, dtype=d)
        other = torch.arange(len(nodes)) ^ 1  # the other candidate of the same target
        return {"loss": loss_t, "calibrated": torch.tensor(calib, dtype=d), "neighbourhood": nbhd_t,
                "paired": loss_t - loss_t[other], "paired-neighbourhood": nbhd_t - nbhd_t[other],
                "ref-neighbour-cosine": torch.tensor(ref, dtype=d)}


@dataclass
class ReleasedPredictionConfig(FeatureAttackConfig):
    pass


@register_attack("released-prediction")
class ReleasedPrediction(Attack):
    description = ("which of two rows reproduces a training node's released posterior when the model is queried with "
                   "it: the released-prediction feature game, outside any feature-level claim; needs feature queries")
    level = "feature"
    feature_game = "predictions"
    Config = ReleasedPredictionConfig
    smoke_config = {"targets": 60}

    def scores(self, view: FeatureView) -> dict[str, Tensor]:
        nodes, rows = view.nodes, view.rows.float()
        none = torch.empty(0, dtype=torch.long)
        view.feature_query_rows(none, rows[:0], none)  # not applicable fails here, before any work
        released = view.posteriors()  # what the model serves for the real graph, the targets' rows in place
        ei = view.task.data.edge_index
        x = view.task.data.x.float()
        read_of: dict[int, Tensor] = {}  # v, then its neighbours
        mean_row: dict[int, Tensor | None] = {}
        own, nbhd, ref = [], [], []
        bar = progress_bar(len(nodes), f"{self.name} queries", view.progress)
        for v, r in zip(nodes.tolist(), rows):
            if v not in read_of:
                nb = neighbours(ei, v)
                read_of[v] = torch.cat([torch.tensor([v]), nb])
                mean_row[v] = x[nb].mean(0, keepdim=True) if nb.numel() else None
            read = read_of[v]
            p = view.feature_query_rows(torch.tensor([v]), r.unsqueeze(0), read)
            gap = (p - released[read]).abs().sum(1)
            own.append(-float(gap[0]))
            nbhd.append(-float(gap.mean()))
            ref.append(neighbour_cosine(r, mean_row[v]))
            bar.update(1)
        bar.close()
        view.notes["feature_queries"] = len(nodes)
        d = torch.float64
        own_t = torch.tensor(own, dtype=d)
        other = torch.arange(len(nodes)) ^ 1  # the other candidate of the same target
        return {"distance": own_t, "neighbourhood": torch.tensor(nbhd, dtype=d), "paired": own_t - own_t[other],
                "ref-neighbour-cosine": torch.tensor(ref, dtype=d)}


@dataclass
class AttributeLiRAConfig(FeatureAttackConfig):
    targets: int = 200
    references: int = 8

    def validate(self) -> None:
        super().validate()
        if not 2 <= self.references <= MAX_REFERENCES or self.references % 2:
            raise ConfigError(f"references must be even and in [2, {MAX_REFERENCES}] (got {self.references}): each "
                              "candidate is held in half of the reference models, each a full training run")


@register_attack("attribute-lira")
class AttributeLiRA(Attack):
    description = ("LiRA (Carlini et al. 2022) in the weights-only feature game: the target's two-row loss difference "
                   "against reference models trained with each candidate row; needs feature queries")
    level = "feature"
    feature_game = "weights"
    Config = AttributeLiRAConfig
    smoke_config = {"targets": 60, "references": 2}

    def scores(self, view: FeatureView) -> dict[str, Tensor]:
        c = self.config
        rows = view.rows.float()
        none = torch.empty(0, dtype=torch.long)
        view.feature_query_rows(none, rows[:0], none)  # not applicable fails here, before any work
        targets, n = view.targets, int(view.nodes.numel())
        y = view.labels[view.nodes].long()

        def phi(query) -> np.ndarray:
            """[C] the candidate's logit confidence of its node's label minus its twin's."""
            s = torch.empty(n, dtype=torch.float64)
            for i, (v, r) in enumerate(zip(view.nodes.tolist(), rows)):
                p = query(torch.tensor([v]), r.unsqueeze(0), torch.tensor([v]))
                s[i] = logit_confidence(p, y[i:i + 1])[0]
            return (s - s[torch.arange(n) ^ 1]).numpy()

        held = balanced_assignment(int(targets.numel()), c.references, view.generator("assignment"))  # [K, T]
        phi_ref = np.zeros((c.references, n))
        inside = np.zeros((c.references, n), dtype=bool)
        bar = progress_bar(c.references, f"{self.name} references", view.progress)
        for j in range(c.references):
            task = view.reference_task(held[j])
            fitted = view.fit(task, view.streams("reference", j))
            phi_ref[j] = phi(lambda a, b, d: view.reference_query_rows(fitted, task, a, b, d))  # noqa: B023 - called within this iteration
            inside[j] = torch.stack([held[j], ~held[j]], 1).view(-1).numpy()
            bar.update(1)
        bar.close()
        phi_t = phi(view.feature_query_rows)
        view.notes["feature_queries"] = n * (c.references + 1)
        view.notes["references"] = c.references
        return {name: torch.as_tensor(s) for name, s in lira_scores(phi_t, phi_ref, inside, "global").items()}


__all__ = ["AttributeInference", "AttributeInferenceConfig", "AttributeLiRA", "AttributeLiRAConfig", "ReleasedPrediction",
           "ReleasedPredictionConfig", "neighbour_cosine", "neighbours"]
