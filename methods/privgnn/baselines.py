"""PrivGNN's non-private baselines (appendix G), with the paper's GraphSAGE (batch norm, 200 epochs,
no validation-based selection) so they differ from PrivGNN's student only in their labels.

* ``privgnn-b1`` (B1, "non-private inductive"): trained on the whole private graph with all private
  labels, tested on the public test nodes through the public graph. The generic ``sage`` baseline
  run on the ``private-public`` split is the same experiment with the suite's defaults (no batch
  norm, weight decay 5e-4).
* ``privgnn-b2`` (B2, "non-private transductive"): trained on the public graph with the TRUE labels
  of every public-train node -- labels the private methods never see -- an estimate of the best
  possible accuracy on the public graph. It touches no private data at all, but it is listed as
  non-private (epsilon = inf) because it uses labels the setting declares unavailable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from methods import inference as I
from methods.base import FitContext, Method, register
from methods.privacy import PrivacyLedger
from methods.privgnn.common import NetConfig, prepare_graph, split_graphs, train_on_graph, use_row_normalization
from methods.privgnn.privgnn import validate_net
from methods.training import ModelFitted, row_normalize

import torch


@dataclass
class BaselineConfig(NetConfig):
    features: Literal["auto", "row", "none"] = "auto"

    def validate(self) -> None:
        validate_net(self)


class _Baseline(Method):
    privacy_unit = "none"
    inference_reads = frozenset({I.OWN_FEATURES, I.OTHER_FEATURES, I.EDGES})  # served over the whole task graph
    settings = ("private-public",)
    Config = BaselineConfig
    smoke_config = {"epochs": 8, "hidden": 8}
    trains_on: ClassVar[str] = "private"

    def _fit(self, ctx: FitContext) -> ModelFitted:
        task, c = ctx.task, self.config
        g = split_graphs(task, c.features)
        if self.trains_on == "private":
            x, edges, labeled, labels = (g.x_private, g.edges_private, torch.arange(g.num_private), g.y_private)
            reason = f"{self.name}: trained on all private labels, features and edges"
        else:
            x, edges, labeled, labels = (g.x_public, g.edges_public, g.query_candidates, g.y_public[g.query_candidates])
            reason = f"{self.name}: trained on the true labels of the public-train nodes"
        model, history = train_on_graph(x, edges, labeled, labels, task.num_classes, c, ctx, self.name)
        info = {"trained_on": self.trains_on, "labels": int(labeled.numel())}
        feats = task.data.x.float()
        if use_row_normalization(c.features, task):
            feats = row_normalize(feats)
        served = prepare_graph("sage", feats, task.data.edge_index, task.num_nodes).to(ctx.device)
        return ModelFitted(model, served, PrivacyLedger.non_private(reason), history, info)


@register("privgnn-b1")
class PrivGNNB1(_Baseline):
    description = ("PrivGNN's B1: GraphSAGE (batch norm) on the whole private graph and labels, tested on the "
                   "public graph (non-private)")
    trains_on = "private"


@register("privgnn-b2")
class PrivGNNB2(_Baseline):
    description = ("PrivGNN's B2: GraphSAGE (batch norm) on the public graph with the TRUE public-train labels "
                   "(non-private upper reference)")
    trains_on = "public"
