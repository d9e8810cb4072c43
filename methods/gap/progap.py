"""ProGAP (Sajadmanesh & Gatica-Perez, 2023): progressive training over cached NAP aggregates.

Algorithms 1-2. Stage s = 0..K trains the sub-model M_s (``bases[0..s]`` and its own one-layer head over
the concatenation of the base outputs) on the cached inputs (X~(0) = X, X~(1), ..., X~(s)). Before stage
s >= 1 the graph is queried exactly once: X~(s) = NAP(A, X(s-1); sigma) with X(s-1) = bases[s-1](X~(s-1))
as learnt by stage s-1, and the result is cached (one ledger event). The graph is queried K times in
all; inference reuses the cache, so it is private at no extra cost.

``progap-edge`` (edge level): each stage is trained non-privately, full-batch Adam for ``epochs`` epochs,
keeping the best-validation state (labels and features are not private at edge level). Accounting:
ProGAP Theorem 4.1 with sensitivity sqrt(2) per undirected edge (the paper's 1 is one directed entry).

``progap-node`` (node level): the graph is first cut to out-degree <= D (random neighbour cut-off), each
stage is trained with DP-Adam on Poisson batches of training nodes (clip C = 1, group norm), and the
final state of each stage is kept (selecting on validation labels would be an unaccounted release).
Accounting: ProGAP Theorem 4.2 (``presets.progap_node``) with sampling rate B / #training nodes (the
theorem's B / N counts nodes that are never sampled) and one multiplier z for both mechanisms
(sigma_AP = z sqrt(D)), calibrated to the target epsilon. The sqrt(D) sensitivity is with respect to
the degree-bounded graph (see ``methods.gap.nap``). Hyperparameters are not tuned on validation labels
inside a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from methods.base import ConfigError, ContractViolation, FitContext, Method, register
from methods.gap import common
from methods.gap.common import NormChoice, calibrate
from methods.gap.nap import EDGE_SENSITIVITY, nap, node_sensitivity
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
    max_degree: int = 100   # D (paper: 100 on Facebook, 50 on Amazon)

    def validate(self) -> None:
        super().validate()
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
    description = ("ProGAP, node level: out-degree cut-off D, DP-Adam per stage over K cached NAP releases "
                   "(Theorem 4.2)")
    privacy_unit = "node"
    unit_label = "node (degree-bounded)"
    unit_note = ("add/remove a node with its edges, on the graph after the random out-degree cut-off to D (as "
                 "GAP and ProGAP state it)")
    Config = ProGAPNodeConfig
    settings = ("transductive",)
    smoke_config = {"depth": 2, "epochs": 2, "batch_size": 32, "max_degree": 5}

    def _fit(self, ctx: FitContext):
        task, budget, c = ctx.task, ctx.budget, self.config
        s = common.setup(ctx)
        K, D = c.depth, c.max_degree
        steps_per_epoch = common.dp_steps_per_epoch(s.num_train, c.batch_size)
        T = c.epochs * steps_per_epoch

        def ledger(z: float) -> PrivacyLedger:
            return presets.progap_node(depth=K, num_train=s.num_train, batch_size=c.batch_size, steps_per_stage=T,
                                       noise_multiplier=z, max_degree=D)

        z = calibrate(ledger, budget) if budget.is_private else 0.0
        sigma_ap = z * node_sensitivity(D)
        adj_t, facts = common.node_graph(task, s, D)
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
            led = ledger(z).note("node-level DP with respect to the graph after the random out-degree cut-off "
                                 f"to D={D} (GAP/ProGAP's sensitivity sqrt(D))")
        info = {"noise_multiplier": z, "sigma_ap": sigma_ap, "depth": K, "nap_queries": K, "max_degree": D,
                "sampling_rate": presets.poisson_rate(c.batch_size, s.num_train), "steps_per_stage": T,
                "diagnostic": facts}
        if c.plot:
            info["figures"] = _plot(history, f"{self.name} on {task.dataset}")
        return CachedAggregatesFitted(net.stage(K), xs, led, history, info)
