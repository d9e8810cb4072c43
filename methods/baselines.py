"""Non-private baselines: MLP, GCN, GraphSAGE (mean, optional jumping knowledge) and GAT.

Full-batch training with Adam and early stopping on validation accuracy. Defaults follow the
original papers (Kipf & Welling 2017 for GCN; Velickovic et al. 2018 for GAT; Hamilton et al.
2017 for GraphSAGE) with the 64-unit hidden layer the DP-GNN papers use for their baselines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from methods import inference as I
from methods.base import FitContext, Method, Task, register
from methods.models import Backbone
from methods.privacy import PrivacyLedger
from methods.training import FeatureQueryFitted, ModelFitted, feature_map, train_full_batch


@dataclass
class FullBatchConfig:
    hidden: int = 64
    layers: int = 2
    dropout: float = 0.5
    lr: float = 0.01
    weight_decay: float = 5e-4
    epochs: int = 200
    patience: int = 50  # epochs without validation improvement before stopping; 0 = never stop early
    # feature preprocessing: "row" divides each row by its sum (Kipf & Welling's preprocessing of the
    # citation graphs); "auto" = "row" on cora/citeseer/pubmed and "none" elsewhere (Shchur et al.'s
    # protocol for Amazon/Coauthor: row-normalising their dense bags of words costs GCN 12 points on
    # Computers, measured).
    features: Literal["auto", "row", "none"] = "auto"

    def validate(self) -> None:
        from methods.base import ConfigError

        if self.hidden < 1 or self.layers < 1 or self.epochs < 1:
            raise ConfigError("hidden, layers and epochs must be >= 1")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1) (got {self.dropout})")
        if self.lr <= 0 or self.weight_decay < 0 or self.patience < 0:
            raise ConfigError("lr must be > 0; weight_decay and patience >= 0")


@dataclass
class SAGEConfig(FullBatchConfig):
    jk: Literal["none", "cat", "max", "lstm"] = "none"
    aggr: Literal["mean", "max", "sum"] = "mean"


@dataclass
class GATConfig(FullBatchConfig):
    hidden: int = 64
    heads: int = 8
    dropout: float = 0.6
    lr: float = 0.005


def row_normalized(choice: str, task: Task) -> bool:
    if choice == "auto":
        return task.dataset.split(":")[0] in ("cora", "citeseer", "pubmed")
    return choice == "row"


class FullBatchMethod(Method):
    """A backbone trained full-batch without any privacy mechanism."""

    arch: ClassVar[str] = "mlp"
    privacy_unit = "none"
    inference_reads = frozenset({I.OWN_FEATURES, I.OTHER_FEATURES, I.EDGES})  # a forward over the task's graph
    Config = FullBatchConfig
    smoke_config = {"epochs": 10, "hidden": 16, "patience": 0}

    def backbone(self, task: Task) -> Backbone:
        c = self.config
        extra = {}
        if self.arch == "sage":
            extra = {"jk": c.jk, "aggr": c.aggr}
        elif self.arch == "gat":
            extra = {"heads": c.heads}
        return Backbone(self.arch, task.num_features, task.num_classes, hidden=c.hidden, layers=c.layers,
                        dropout=c.dropout, **extra)

    def _fit(self, ctx: FitContext) -> ModelFitted:
        task, c = ctx.task, self.config
        with ctx.init():
            model = self.backbone(task)
        normalize = row_normalized(c.features, task)
        result, g_eval = train_full_batch(
            model, task, lr=c.lr, weight_decay=c.weight_decay, epochs=c.epochs, patience=c.patience,
            device=ctx.device, normalize_features=normalize, progress=ctx.progress, desc=self.name)
        ledger = PrivacyLedger.non_private(f"{self.name}: non-private training on labels, features and edges")
        info = {"best_epoch": result.best_epoch, "epochs_run": len(result.history)}
        # no claim: serving attacker-chosen features (LinkTeller's queries) changes nothing the ledger says
        return FeatureQueryFitted(result.model, g_eval, ledger, result.history, info, feature_map=feature_map(normalize))


@register("mlp")
class MLPMethod(FullBatchMethod):
    description = "MLP on node features only (ignores the graph), full-batch, non-private"
    arch = "mlp"
    inference_reads = frozenset({I.OWN_FEATURES})


@register("gcn")
class GCNMethod(FullBatchMethod):
    description = "GCN (Kipf & Welling 2017), full-batch, non-private"
    arch = "gcn"


@register("sage")
class SAGEMethod(FullBatchMethod):
    description = "GraphSAGE with mean aggregation and optional jumping knowledge, full-batch, non-private"
    arch = "sage"
    Config = SAGEConfig


@register("gat")
class GATMethod(FullBatchMethod):
    description = "GAT (Velickovic et al. 2018), full-batch, non-private"
    arch = "gat"
    Config = GATConfig
    smoke_config = {"epochs": 10, "hidden": 16, "heads": 2, "patience": 0}
