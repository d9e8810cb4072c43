"""ProGAP (Sajadmanesh & Gatica-Perez, 2023): progressive training over cached NAP aggregates.

Algorithms 1-2. Stage s = 0..K trains the sub-model M_s (``bases[0..s]`` and its own one-layer head over
the concatenation of the base outputs) on the cached inputs (X~(0) = X, X~(1), ..., X~(s)). Before stage
s >= 1 the graph is queried exactly once: X~(s) = NAP(A, X(s-1); sigma) with X(s-1) = bases[s-1](X~(s-1))
as learnt by stage s-1, and the result is cached (one ledger event). The graph is queried K times in
all; inference reuses the cache, so it is private at no extra cost.

``progap-edge`` (edge level): each stage is trained non-privately, full-batch Adam for ``epochs`` epochs,
keeping the best-validation state (labels and features are not private at edge level). Accounting:
ProGAP Theorem 4.1 with sensitivity sqrt(2) per undirected edge (the paper's 1 is one directed entry).

``progap-node`` (node level): NAP aggregates over the degree-bounded graph of the run's relation (below), each
stage is trained with DP-Adam on Poisson batches of training nodes (clip C = 1, group norm), and the
final state of each stage is kept (selecting on validation labels would be an unaccounted release).
Accounting: ProGAP Theorem 4.2 (``presets.progap_node``) with sampling rate B / #training nodes (the
theorem's B / N counts nodes that are never sampled) and one multiplier z for both mechanisms
(sigma_AP = z sqrt(D)), calibrated to the target epsilon. Hyperparameters are not tuned on validation labels
inside a run.

Node-level relation (``relation``; proofs in ``methods.gap.nap``):

* ``input-graph`` (default): add/remove a node with all its edges in the input graph, over the graphs whose
  out-degrees are within the declared public bound D = ``max_degree`` (the ledger names it). The run refuses a
  larger degree in :meth:`ProGAPNode.check_task`, before any run opens, and NAP aggregates over the input graph.
  Stage s's NAP input X(s-1)_j = bases[s-1](X~(s-1)_j) is, for j != v, a function of released weights and of
  j's own features or earlier released rows; so, conditioned on the earlier releases, removing v moves only v's
  out-neighbours' rows, by one unit vector each: sensitivity sqrt(D). v's own rows are never released.
* ``cut-off-graph`` (the paper's): NAP aggregates over a random out-degree cut-off to D, and sqrt(D) holds for
  graphs compared after the cut-off; not node-level DP for the input graph where the cut-off binds (a removal
  frees a slot at every neighbour above D).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from methods.base import ConfigError, ContractViolation, FitContext, Method, Task, register
from methods.gap import common
from methods.gap.common import NODE_RELATION_LABELS, NormChoice, calibrate
from methods.gap.nap import EDGE_SENSITIVITY, INPUT_GRAPH, RELATIONS, nap, node_sensitivity
from methods.gap.nets import ProgressiveNet
from methods.gap.stages import (CACHED_READS, FEATURE_QUERY_NOTE, CachedAggregatesFitted, embed, train_dp,
                                train_full_batch)
from methods.privacy import PrivacyLedger, presets


@dataclass
class ProGAPEdgeConfig:
    depth: int = 2          # K: NAP queries; K + 1 stages (paper: tuned in 1..5)
    hidden: int = 16
    base_layers: int = 2    # paper: tuned in {1, 2}; 2 won on validation (facebook-wisconsin87, edge eps 1, node eps 8)
    lr: float = 0.01        # paper: tuned in {0.01, 0.05}
    weight_decay: float = 0.0
    epochs: int = 100       # per stage
    norm: NormChoice = "auto"  # auto: batch norm at edge level, group norm (1 group) at node level
    plot: bool = False      # save a per-stage convergence PNG and put its path in info["figures"]

    def validate(self) -> None:
        if self.depth < 1:
            raise ConfigError("depth must be >= 1 (depth 0 never uses the graph: that is an MLP)")
        if min(self.hidden, self.base_layers, self.epochs) < 1:
            raise ConfigError("hidden, base_layers and epochs must be >= 1")
        if self.lr <= 0 or self.weight_decay < 0:
            raise ConfigError("lr must be > 0 and weight_decay >= 0")


@dataclass
class ProGAPNodeConfig(ProGAPEdgeConfig):
    epochs: int = 5         # per stage (paper: tuned in {5, 10}; 5 won on validation, facebook-wisconsin87, eps 8)
    batch_size: int = 256   # expected Poisson batch (paper: 256 on Facebook)
    clip: float = 1.0
    # the neighbouring relation the epsilon holds for (module docstring): input-graph = node-level DP on input
    # graphs within the declared bound D; cut-off-graph = the paper's (relative to the graph after the cut-off)
    relation: Literal["input-graph", "cut-off-graph"] = "input-graph"
    # D. input-graph: a declared public bound on every node's out-degree in the input graph (the run refuses a
    # graph above it); cut-off-graph: the paper's random out-degree cut-off (100 on Facebook, 50 on Amazon)
    max_degree: int = 100

    def validate(self) -> None:
        super().validate()
        if self.relation not in RELATIONS:
            raise ConfigError(f"relation must be one of {', '.join(RELATIONS)} (got {self.relation!r})")
        if self.batch_size < 1 or self.max_degree < 1 or not self.clip > 0:
            raise ConfigError("batch_size and max_degree must be >= 1 and clip > 0")


def _plot(history: list[dict], name: str) -> list[str]:
    from methods.gap.plots import save_convergence

    return [str(save_convergence(history, title=name))]


@register("progap-edge")
class ProGAPEdge(Method):
    feature_query_note = FEATURE_QUERY_NOTE
    inference_reads = CACHED_READS
    description = "ProGAP, edge level: progressive stages over K cached NAP releases (Theorem 4.1, sqrt(2) per edge)"
    privacy_unit = "edge"
    unit_label = "edge (undirected)"
    unit_note = "one undirected edge; NAP sensitivity sqrt(2) (the papers' 1 counts one directed entry)"
    Config = ProGAPEdgeConfig
    settings = ("transductive",)
    noisy_info = frozenset({"best_epoch_per_stage"})  # chosen on the noisy aggregates (labels public at edge level)
    smoke_config = {"depth": 2, "epochs": 5}

    def _fit(self, ctx: FitContext):
        task, budget, c = ctx.task, ctx.budget, self.config
        s = common.setup(ctx)
        K = c.depth

        def ledger(sigma: float) -> PrivacyLedger:
            return presets.aggregation_edge(depth=K, sigma=sigma)

        sigma = calibrate(ledger, budget) if budget.is_private else 0.0
        adj_t = common.edge_graph(task, s.device)
        with ctx.init():
            net = ProgressiveNet(task.num_features, c.hidden, task.num_classes, K + 1, c.base_layers,
                                 common.resolve_norm(c.norm, "edge")).to(s.device)
        xs = [s.x]
        history, best = [], []
        pbar = ctx.bar((K + 1) * c.epochs, self.name)
        for stage in range(K + 1):
            if stage > 0:
                xs.append(nap(adj_t, embed(net.bases[stage - 1], xs[stage - 1]), sigma, s.gens["nap"]))
            best.append(train_full_batch(net.stage(stage), xs, s.split, epochs=c.epochs, lr=c.lr,
                                         weight_decay=c.weight_decay, history=history, stage=stage, bar=pbar))
        pbar.close()
        del adj_t
        if sigma == 0:
            led = PrivacyLedger.non_private("progap-edge without aggregation noise (epsilon=inf requested)")
        else:
            led = ledger(sigma)
        info = {"sigma": sigma, "noise_multiplier": sigma / EDGE_SENSITIVITY if sigma else 0.0, "depth": K,
                "nap_queries": K, "best_epoch_per_stage": best}
        if c.plot:
            info["figures"] = _plot(history, f"{self.name} on {task.dataset}")
        return CachedAggregatesFitted(net.stage(K), xs, led, history, info)


@register("progap-node")
class ProGAPNode(Method):
    feature_query_note = FEATURE_QUERY_NOTE
    inference_reads = CACHED_READS
    description = ("ProGAP, node level: DP-Adam per stage over K cached NAP releases (Theorem 4.2), input graphs "
                   "within a declared degree bound D")
    privacy_unit = "node"
    relation_labels = NODE_RELATION_LABELS
    unit_label, unit_note = relation_labels[INPUT_GRAPH]
    Config = ProGAPNodeConfig
    settings = ("transductive",)
    #: max_degree 20: at least the largest degree of the tests' small csbm graphs (13), as input-graph needs
    smoke_config = {"depth": 2, "epochs": 2, "batch_size": 32, "max_degree": 20}

    def check_task(self, task: Task) -> None:
        """Under ``input-graph``, refuse a graph above the declared bound D before any run opens."""
        super().check_task(task)
        common.check_node_task(task, self.config.max_degree, self.config.relation, self.name or type(self).__name__)

    def _fit(self, ctx: FitContext):
        task, budget, c = ctx.task, ctx.budget, self.config
        s = common.setup(ctx)
        K, D = c.depth, c.max_degree
        steps_per_epoch = common.dp_steps_per_epoch(s.num_train, c.batch_size)
        T = c.epochs * steps_per_epoch

        def ledger(z: float) -> PrivacyLedger:
            return presets.progap_node(depth=K, num_train=s.num_train, batch_size=c.batch_size, steps_per_stage=T,
                                       noise_multiplier=z, max_degree=D, relation=c.relation)

        z = calibrate(ledger, budget) if budget.is_private else 0.0
        sigma_ap = z * node_sensitivity(D)
        adj_t, facts = common.node_graph(task, s, D, c.relation, self.name or type(self).__name__)
        with ctx.init():
            net = ProgressiveNet(task.num_features, c.hidden, task.num_classes, K + 1, c.base_layers,
                                 common.resolve_norm(c.norm, "node")).to(s.device)
        xs = [s.x]
        history, taken = [], []
        pbar = ctx.bar((K + 1) * T, self.name)
        for stage in range(K + 1):
            if stage > 0:
                xs.append(nap(adj_t, embed(net.bases[stage - 1], xs[stage - 1]), sigma_ap, s.gens["nap"]))
            taken.append(train_dp(net.stage(stage), xs, s.split, epochs=c.epochs, batch_size=c.batch_size, lr=c.lr,
                                  clip=c.clip, noise_multiplier=z, sample_gen=s.gens["sample"],
                                  noise_gen=s.gens["noise"], history=history, stage=stage, bar=pbar))
        pbar.close()
        del adj_t
        if any(t != T for t in taken):
            raise ContractViolation(f"{self.name}: stages took {taken} steps where the ledger accounts {T} each")
        if z == 0:
            led = PrivacyLedger.non_private("progap-node without noise (epsilon=inf requested)")
        else:
            led = ledger(z)  # the family names D public (input-graph) or notes the relation
        info = {"noise_multiplier": z, "sigma_ap": sigma_ap, "depth": K, "nap_queries": K, "max_degree": D,
                "sampling_rate": presets.poisson_rate(c.batch_size, s.num_train), "steps_per_stage": T,
                "diagnostic": facts}
        if c.plot:
            info["figures"] = _plot(history, f"{self.name} on {task.dataset}")
        return CachedAggregatesFitted(net.stage(K), xs, led, history, info)
