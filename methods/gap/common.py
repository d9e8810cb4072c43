"""What every GAP/ProGAP fit does first: checks, device, generators, tensors, the split, the graph."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from methods.base import Budget, ConfigError, FitContext, Task
from methods.gap.nap import aggregation_matrix, bound_out_degree
from methods.gap.stages import Split
from methods.privacy import calibrate_noise, presets

NormChoice = Literal["auto", "batch", "group", "none"]


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


def node_graph(task: Task, s: Setup, max_degree: int) -> tuple[Tensor, dict]:
    """The graph after the random out-degree cut-off to ``max_degree`` (node level), and facts about it."""
    ei = task.data.edge_index
    bounded = bound_out_degree(ei, task.num_nodes, max_degree, s.gens["cutoff"])
    facts = {"edges_before_cutoff": int(ei.size(1)), "edges_after_cutoff": int(bounded.size(1))}
    return aggregation_matrix(bounded, task.num_nodes).to(s.device), facts


def dp_steps_per_epoch(num_train: int, batch_size: int) -> int:
    """Steps per epoch of Poisson batches of expected size B over n training nodes (rate min(1, B / n))."""
    if batch_size < 1:
        raise ConfigError("batch_size must be >= 1")
    return max(1, math.ceil(num_train / batch_size))
