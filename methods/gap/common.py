"""What every GAP/ProGAP fit does first: checks, device, generators, tensors, the split, the graph."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from methods.base import Budget, ConfigError, FitContext, Task
from methods.gap.nap import (CUTOFF_GRAPH, INPUT_GRAPH, aggregation_matrix, degree_bounded_graph, degree_facts,
                             require_degree_bound)
from methods.gap.stages import Split
from methods.privacy import calibrate_noise, presets

NormChoice = Literal["auto", "batch", "group", "none"]

#: unit label and footnote of each node-level relation of GAP and ProGAP (``Method.relation_labels``)
NODE_RELATION_LABELS = {
    INPUT_GRAPH: ("node (declared max degree)",
                  "add/remove a node with all its edges, on input graphs whose degrees are within the declared public "
                  "bound D; the run refuses larger degrees"),
    CUTOFF_GRAPH: ("node (after cut-off)",
                   "relative to the graph after the random out-degree cut-off to D (GAP/ProGAP's relation); not "
                   "node-level DP for the input graph when the cut-off binds"),
}


@dataclass
class Setup:
    device: torch.device
    gens: dict[str, torch.Generator]
    x: Tensor
    split: Split
    num_nodes: int
    num_train: int


def setup(ctx: FitContext) -> Setup:
    """Generators on the run's streams: batch sampling and the degree cut-off on the CPU, the DP-SGD noise
    and the NAP noise (two children of the noise stream) on the device."""
    task, dev = ctx.task, ctx.device
    gens = {"sample": ctx.generator("sampler"), "cutoff": ctx.generator("subgraphs", "cutoff"),
            "noise": ctx.generator("noise", "sgd", device=dev), "nap": ctx.generator("noise", "nap", device=dev)}
    train = task.train_mask.nonzero().view(-1)
    if train.numel() == 0:
        raise ConfigError(f"{task.dataset}/{task.split} has no training node")
    split = Split(task.data.y.to(dev), train.to(dev), task.val_mask.nonzero().view(-1).to(dev))
    return Setup(dev, gens, task.data.x.float().to(dev), split, task.num_nodes, int(train.numel()))


def calibrate(make_ledger, budget: Budget) -> float:
    """The smallest noise whose family ledger meets the target (Gaussian mechanisms: delta > 0 needed)."""
    presets.require_delta(budget.delta)
    return calibrate_noise(make_ledger, budget.epsilon, budget.delta)


def resolve_norm(norm: str, level: str) -> str:
    """ProGAP Section 5.3: batch norm at edge level, group norm (one group) at node level."""
    if norm == "auto":
        return "batch" if level == "edge" else "group"
    if level == "node" and norm == "batch":
        raise ConfigError("batch norm mixes the examples of a DP-SGD batch; use norm=group or none at node level")
    return norm


def edge_graph(task: Task, device: torch.device) -> Tensor:
    """The full undirected graph as a sparse aggregation matrix (edge level)."""
    return aggregation_matrix(task.data.edge_index, task.num_nodes).to(device)


def check_node_task(task: Task, max_degree: int, relation: str, owner: str) -> None:
    """Under ``input-graph``, refuse an input graph above the declared degree bound (``ConfigError``), so that
    the harness stops before any run opens (``Method.check_task``); the fit path checks again."""
    if relation == INPUT_GRAPH:
        require_degree_bound(task.data.edge_index, task.num_nodes, max_degree, owner)


def node_graph(task: Task, s: Setup, max_degree: int, relation: str, owner: str) -> tuple[Tensor, dict]:
    """The graph NAP aggregates over at node level (``nap.degree_bounded_graph``: the input graph within the
    declared bound D, or the random out-degree cut-off to D), as a sparse aggregation matrix, and exact counts
    about the bounding step (diagnostics, never released)."""
    ei = task.data.edge_index
    bounded = degree_bounded_graph(ei, task.num_nodes, max_degree, relation, s.gens["cutoff"], owner)
    facts = degree_facts(ei, bounded, task.num_nodes, max_degree)
    return aggregation_matrix(bounded, task.num_nodes).to(s.device), facts


def dp_steps_per_epoch(num_train: int, batch_size: int) -> int:
    """Steps per epoch of Poisson batches of expected size B over n training nodes (rate min(1, B / n))."""
    if batch_size < 1:
        raise ConfigError("batch_size must be >= 1")
    return max(1, math.ceil(num_train / batch_size))
