"""Training loops shared by GAP and ProGAP, and the released model that serves cached aggregates.

Every loop trains a module whose examples are rows of cached, graph-free inputs (the NAP outputs), so
one node is one example. Two regimes:

* :func:`train_full_batch` (edge level, and GAP's edge-level encoder): labels and features are public at
  edge level, so full-batch Adam keeps the state with the best validation accuracy (ProGAP: 100 epochs,
  early stopping on validation). Post-processing of the NAP releases: no privacy cost.
* :func:`train_dp` (node level): DP-Adam on Poisson-sampled training nodes. It returns the steps it took,
  from which the method builds its ledger (``methods.privacy.presets``).
  The final state is released: choosing an epoch on validation labels would be an unaccounted release
  of private labels, so validation accuracy is only logged (for the convergence plots).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from methods import inference as I
from methods.base import Fitted, copy_with_weights
from methods.dpsgd import DPOptimizer, PoissonSampler
from methods.models import sparse_input
from methods.privacy import PrivacyLedger


def embed(module: nn.Module, x: Tensor) -> Tensor:
    """``module(x)`` in eval mode without gradients (an embedding about to enter NAP)."""
    module.eval()
    with torch.no_grad():
        return module(sparse_input(x))


def accuracy(logits: Tensor, y: Tensor) -> float:
    return float((logits.argmax(1) == y).float().mean()) if y.numel() else float("nan")


@dataclass
class Split:
    y: Tensor          # labels of all nodes (on the device)
    train: Tensor      # node indices
    val: Tensor


def _evaluate(model: nn.Module, inputs: list[Tensor], split: Split) -> tuple[float, float]:
    model.eval()
    with torch.no_grad():
        tr = accuracy(model(*[x[split.train] for x in inputs]), split.y[split.train])
        va = accuracy(model(*[x[split.val] for x in inputs]), split.y[split.val]) if split.val.numel() else math.nan
    return tr, va


def _accuracy_on(model: nn.Module, xs: list[Tensor], y: Tensor) -> float:
    if not y.numel():
        return math.nan
    model.eval()
    with torch.no_grad():
        return accuracy(model(*xs), y)


def train_full_batch(model: nn.Module, inputs: list[Tensor], split: Split, *, epochs: int, lr: float,
                     weight_decay: float, history: list[dict], stage: int, bar) -> int:
    """Full-batch Adam; keeps the best-validation state (the last one without a validation set).
    Appends one history row per epoch; returns the selected epoch."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    # raw bag-of-words features (X(0) of every ProGAP stage, GAP's encoder input) as CSR: see sparse_input
    x_train = [sparse_input(x[split.train]) for x in inputs]
    y_train = split.y[split.train]
    x_val, y_val = [sparse_input(x[split.val]) for x in inputs], split.y[split.val]
    best = (-math.inf, 0)
    best_state = copy.deepcopy(model.state_dict())
    for epoch in range(1, epochs + 1):
        model.train()
        opt.zero_grad(set_to_none=True)
        out = model(*x_train)
        loss = nn.functional.cross_entropy(out, y_train)
        loss.backward()
        opt.step()
        val_acc = _accuracy_on(model, x_val, y_val)
        row = {"epoch": len(history) + 1, "stage": stage, "stage_epoch": epoch, "train_loss": float(loss.detach()),
               "train_acc": accuracy(out.detach(), y_train)}
        if split.val.numel():
            row["val_acc"] = val_acc
            if val_acc > best[0]:
                best = (val_acc, epoch)
                best_state = copy.deepcopy(model.state_dict())
        else:
            best = (math.nan, epoch)
            best_state = copy.deepcopy(model.state_dict())
        history.append(row)
        bar.update(1)
        bar.set_postfix(stage=stage, val=f"{row.get('val_acc', math.nan):.3f}")
    model.load_state_dict(best_state)
    model.eval()
    return best[1]


def train_dp(model: nn.Module, inputs: list[Tensor], split: Split, *, epochs: int, batch_size: int, lr: float,
             clip: float, noise_multiplier: float, sample_gen: torch.Generator, noise_gen: torch.Generator,
             history: list[dict], stage: int, bar) -> int:
    """DP-Adam over Poisson batches of the training nodes (rate B / #train), ``ceil(#train / B)`` steps
    per epoch, noise N(0, (z C)^2) on the clipped sum, divided by the expected batch size. Returns the
    number of steps taken (each a Poisson-subsampled Gaussian release when z > 0)."""
    n = int(split.train.numel())
    rate = min(1.0, batch_size / n)
    steps = math.ceil(n / batch_size)
    x_train = [x[split.train] for x in inputs]
    y_train = split.y[split.train]
    dp = DPOptimizer(model, torch.optim.Adam(model.parameters(), lr=lr), clip=clip, generator=noise_gen)
    sampler = PoissonSampler(n, rate, sample_gen, unit="node")
    taken = 0
    for epoch in range(1, epochs + 1):
        model.train()
        losses, clipped = [], []
        for _ in range(steps):
            idx = sampler.sample().to(y_train.device)
            info = dp.step(tuple(x[idx] for x in x_train), y_train[idx], noise_std=noise_multiplier * clip,
                           denominator=sampler.expected_size)
            taken += 1
            losses.append(info.loss)
            clipped.append(info.frac_clipped)
            bar.update(1)
        train_acc, val_acc = _evaluate(model, inputs, split)
        row = {"epoch": len(history) + 1, "stage": stage, "stage_epoch": epoch,
               "train_loss": sum(losses) / len(losses), "frac_clipped": sum(clipped) / len(clipped),
               "train_acc": train_acc}
        if split.val.numel():
            row["val_acc"] = val_acc
        history.append(row)
        bar.set_postfix(stage=stage, val=f"{row.get('val_acc', math.nan):.3f}")
    model.eval()
    return taken


#: why GAP/ProGAP answer no query on new features (``Method.feature_query_note``)
FEATURE_QUERY_NOTE = ("its released model serves cached noisy aggregates; aggregating attacker-supplied features over "
                      "the private graph would be a fresh noisy aggregation the ledger does not cover")


#: what a served GAP/ProGAP prediction reads (``Method.inference_reads``): the queried node's own raw row (through
#: the encoder, or as X(0)) and its rows of the cached noisy aggregates, nothing of another node
CACHED_READS = frozenset({I.OWN_FEATURES, I.RELEASE})


class CachedAggregatesFitted(Fitted):
    """A served GAP/ProGAP model: the trained sub-model plus the cached inputs of every node (X(0), then the NAP
    outputs X(1..K)).

    Inference only post-processes the cached inputs: it never touches the adjacency again, so it costs no privacy
    beyond training (ProGAP Section 4.2). No reference to the graph is kept. What of it is released follows from the
    ledger (:meth:`release`); the rest is serving state (:meth:`serving_state`).
    """

    def __init__(self, model: nn.Module, inputs: list[Tensor], ledger: PrivacyLedger, history: list[dict],
                 info: dict) -> None:
        self.model = model.eval()
        self.inputs = [x.detach() for x in inputs]
        self.ledger = ledger
        self.history = history
        self.info = dict(info)
        self._proba: Tensor | None = None

    def predict_proba(self, nodes: Tensor | None = None) -> Tensor:
        if self._proba is None:
            with torch.no_grad():
                self._proba = torch.softmax(self.model(*self.inputs).float(), dim=-1).cpu()
        return self._proba if nodes is None else self._proba[torch.as_tensor(nodes, dtype=torch.long)]

    def _released_inputs(self) -> range:
        """Which cached inputs the ledger covers. Edge level: X(1..K). Each NAP output is a Gaussian release of
        sensitivity sqrt(2) per undirected edge (every row, the two endpoints' included: removing edge (u, v) moves
        row u by x_v and row v by x_u, unit vectors), so the whole matrix is covered. X(0) (raw features or a
        non-private encoder's embedding of them) is public at edge level but data, not a release: serving state.
        Node level (and without a claim): none. X(0) is every node's raw row or its embedding; and the sqrt(D) bound
        of a node-level NAP release covers the rows of the other nodes only -- the removed node's own row aggregates
        its in-edges, outside the bound (a 5-leaf star at target epsilon 4 gives that row an exact epsilon of 11.7).
        So only the DP-SGD weights are released, and every cached input is serving state, each row reaching only its
        own node (``CACHED_READS``)."""
        if self.ledger.unit == "edge" and self.ledger.non_private_use is None:
            return range(1, len(self.inputs))
        return range(0)

    def release(self) -> dict[str, Tensor]:
        """The weights, and at edge level the NAP outputs X(1..K) (:meth:`_released_inputs`)."""
        out = {f"model.{k}": v.detach() for k, v in self.model.state_dict().items()}
        out.update({f"input.{i}": self.inputs[i] for i in self._released_inputs()})
        return out

    def serving_state(self) -> dict[str, Tensor]:
        """The cached inputs the ledger does not cover: X(0) at edge level, every one at node level."""
        released = set(self._released_inputs())
        return {f"input.{i}": x for i, x in enumerate(self.inputs) if i not in released}

    def with_state(self, release: dict[str, Tensor], serving: dict[str, Tensor]) -> "CachedAggregatesFitted":
        """This served model with the weights and cached inputs of ``release`` and ``serving``
        (:meth:`Fitted.with_state`)."""
        new = copy_with_weights(self, release, serving)
        new.inputs = list(self.inputs)
        for k, v in {**release, **serving}.items():
            if k.startswith("input."):
                new.inputs[int(k[len("input."):])] = v.detach()
        return new
