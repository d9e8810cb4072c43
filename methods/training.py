"""Full-batch training with early stopping, shared by the non-private baselines."""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from methods.base import BenchError, Fitted, Task, copy_with_weights
from methods.device import resolve_device  # noqa: F401 (re-exported)
from methods.models import Backbone, GraphInput, prepare_graph
from methods.privacy import PrivacyLedger
from methods.progress import progress_bar


def row_normalize(x: Tensor) -> Tensor:
    s = x.sum(dim=1, keepdim=True).clamp(min=1e-12)
    return x / s


@dataclass
class TrainResult:
    model: Backbone
    history: list[dict[str, float]]
    best_epoch: int


def train_full_batch(model: Backbone, task: Task, *, lr: float, weight_decay: float, epochs: int, patience: int,
                     device: torch.device, normalize_features: bool = False, progress: bool = False,
                     desc: str = "train") -> tuple[TrainResult, GraphInput]:
    """Train ``model`` on the task's training graph with Adam; keep the best-validation state.

    Returns the result and the evaluation graph (the full task graph, prepared for the backbone).
    With an empty validation set the final state is kept.
    """
    arch = model.arch
    train_data, _ = task.training_graph()
    transductive = task.setting == "transductive"
    x_train = row_normalize(train_data.x) if normalize_features else train_data.x
    g_train = prepare_graph(arch, x_train, train_data.edge_index, train_data.num_nodes).to(device)
    if transductive:
        g_eval = g_train
        train_idx = task.train_mask.nonzero().view(-1).to(device)
    else:
        x_all = row_normalize(task.data.x) if normalize_features else task.data.x
        g_eval = prepare_graph(arch, x_all, task.data.edge_index, task.num_nodes).to(device)
        train_idx = torch.arange(train_data.num_nodes, device=device)
    y_train = train_data.y.to(device)
    y_all = task.data.y.to(device)
    val_idx = task.val_mask.nonzero().view(-1).to(device)
    if train_idx.numel() == 0:
        raise BenchError(f"the {task.split} split of {task.dataset} has no training node")

    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best_key = (-math.inf, -math.inf)
    best_state = copy.deepcopy(model.state_dict())
    best_epoch, bad = 0, 0
    history: list[dict[str, float]] = []
    bar = progress_bar(epochs, desc, progress)
    for epoch in range(1, epochs + 1):
        model.train()
        opt.zero_grad(set_to_none=True)
        out = model(g_train)
        loss = F.cross_entropy(out[train_idx], y_train[train_idx])
        loss.backward()
        opt.step()
        row = {"epoch": epoch, "train_loss": float(loss.detach()),
               "train_acc": float((out[train_idx].argmax(1) == y_train[train_idx]).float().mean())}
        if val_idx.numel():
            model.eval()
            with torch.no_grad():
                logits = model(g_eval)[val_idx]
            val_loss = float(F.cross_entropy(logits, y_all[val_idx]))
            val_acc = float((logits.argmax(1) == y_all[val_idx]).float().mean())
            row.update(val_loss=val_loss, val_acc=val_acc)
            key = (val_acc, -val_loss)
            if key > best_key:
                best_key, best_epoch, bad = key, epoch, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                bad += 1
        else:
            best_epoch = epoch
            best_state = model.state_dict()
        history.append(row)
        bar.update(1)
        bar.set_postfix(loss=f"{row['train_loss']:.3f}", val=f"{row.get('val_acc', float('nan')):.3f}")
        if patience and val_idx.numel() and bad >= patience:
            break
    bar.close()
    model.load_state_dict(best_state)
    model.eval()
    return TrainResult(model, history, best_epoch), g_eval


class ModelFitted(Fitted):
    """A served model that answers posteriors from a fixed graph.

    ``graph_released``: the served graph's structure is itself a DP release (EdgeRand's randomised adjacency), so its
    edges are part of :meth:`release`. Otherwise the graph is the task's own data (or, PrivGNN's, its public part):
    served, not released. Either way its features are serving state (public at edge level, but data)."""

    def __init__(self, model: torch.nn.Module, graph: GraphInput, ledger: PrivacyLedger,
                 history: list[dict[str, float]], info: dict | None = None, graph_released: bool = False) -> None:
        self.model = model.eval()
        self.graph = graph
        self.ledger = ledger
        self.history = history
        self.info = dict(info or {})
        self.graph_released = graph_released
        self._proba: Tensor | None = None

    def predict_proba(self, nodes: Tensor | None = None) -> Tensor:
        if self._proba is None:
            with torch.no_grad():
                self._proba = torch.softmax(self.model(self.graph).float(), dim=-1).cpu()
        return self._proba if nodes is None else self._proba[torch.as_tensor(nodes, dtype=torch.long)]

    #: the served graph's tensors that a randomised graph releases (its structure; the features are the task's)
    RELEASED_GRAPH = ("edge_index", "edge_weight")

    def _graph_tensors(self) -> dict[str, Tensor]:
        return {k: v.detach() for k, v in vars(self.graph).items() if isinstance(v, Tensor)}

    def release(self) -> dict[str, Tensor]:
        """The weights, and a randomised graph's structure when the graph is a release."""
        out = {f"model.{k}": v.detach() for k, v in self.model.state_dict().items()}
        if self.graph_released:
            out.update({f"graph.{k}": v for k, v in self._graph_tensors().items() if k in self.RELEASED_GRAPH})
        return out

    def serving_state(self) -> dict[str, Tensor]:
        """The served graph's tensors that are not released: its feature rows, and its edges unless they are a DP
        release (the task's own graph is served, not released)."""
        released = self.RELEASED_GRAPH if self.graph_released else ()
        return {f"graph.{k}": v for k, v in self._graph_tensors().items() if k not in released}

    def with_state(self, release: dict[str, Tensor], serving: dict[str, Tensor]) -> "ModelFitted":
        """This served model with the weights and graph tensors of ``release`` and ``serving``
        (:meth:`Fitted.with_state`)."""
        new = copy_with_weights(self, release, serving)
        new.graph = dataclasses.replace(self.graph, **{k[len("graph."):]: v for k, v in {**release, **serving}.items()
                                                       if k.startswith("graph.")})
        if hasattr(new, "_base"):
            new._base = None  # noqa: SLF001 - a copy of this class
        return new


class FeatureQueryFitted(ModelFitted):
    """A :class:`ModelFitted` that also answers queries on attacker-supplied node features over its served graph:
    ``predict_proba_features(x, nodes)`` (a whole feature matrix) and ``predict_proba_rows(rows, values, nodes)``
    (the served features with a few rows replaced: what LinkTeller, Wu et al. 2022, and attribute inference ask).

    Only for methods whose claim covers such queries: the served graph is public to the claim (feature level: the
    structure is public), a DP release (EdgeRand: a model over it, on any features, is post-processing), or there
    is no claim (the non-private baselines); an MLP reads no graph at all. A query reuses the released weights and
    graph and adds nothing to the ledger. ``feature_map`` is the model's own row-wise preprocessing of raw
    features (row normalisation or the identity)."""

    def __init__(self, *args, feature_map: Callable[[Tensor], Tensor], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.feature_map = feature_map
        self._base: Tensor | None = None

    def predict_proba_features(self, x: Tensor, nodes: Tensor | None = None) -> Tensor:
        """Class probabilities of ``nodes`` (all when None) when node features are ``x`` [N, F] (raw, as the task's)."""
        g = self.graph
        if x.shape != (g.x.size(0), g.x.size(1)):
            raise BenchError(f"feature query: x has shape {tuple(x.shape)}, the served graph {tuple(g.x.shape)}")
        return self._query(self.feature_map(x.to(g.x.device, g.x.dtype)), nodes)

    def predict_proba_rows(self, rows: Tensor, values: Tensor, nodes: Tensor | None = None) -> Tensor:
        """Class probabilities of ``nodes`` when the raw feature rows of nodes ``rows`` [k] are ``values`` [k, F]
        and every other row is the served graph's own. Equal to :meth:`predict_proba_features` on the modified
        matrix, at the cost of one forward: on bag-of-words features (:func:`methods.models.sparse_input`) the rows
        are spliced into a CSR copy of the served features built once, instead of a dense copy per query."""
        from methods.models import sparse_input

        g = self.graph
        rows = torch.as_tensor(rows, dtype=torch.long).view(-1)
        values = torch.as_tensor(values).to(g.x.device, g.x.dtype)
        if values.numel() != rows.numel() * g.x.size(1) or rows.unique().numel() != rows.numel() or \
                (rows.numel() and (rows.min() < 0 or rows.max() >= g.x.size(0))):
            raise BenchError(f"row query: {rows.numel()} distinct rows of {g.x.size(1)} features in "
                             f"[0, {g.x.size(0)}) expected (got values of shape {tuple(values.shape)})")
        values = values.reshape(rows.numel(), g.x.size(1))
        mapped = self.feature_map(values)
        if self._base is None:
            self._base = sparse_input(g.x)
        if self._base.layout == torch.sparse_csr:
            xq = replace_csr_rows(self._base, rows.to(g.x.device), mapped)
        else:
            xq = g.x.clone()
            xq[rows.to(g.x.device)] = mapped
        return self._query(xq, nodes)

    def _query(self, xq: Tensor, nodes: Tensor | None) -> Tensor:
        """Posteriors of ``nodes`` (all when None) on features ``xq``; a model with ``forward_nodes(g, nodes)``
        (DRW's full-graph GCN) computes only the receptive field of the nodes read."""
        g = GraphInput(xq, self.graph.edge_index, self.graph.edge_weight)
        local = getattr(self.model, "forward_nodes", None)
        with torch.no_grad():
            if nodes is not None and callable(local):
                idx = torch.as_tensor(nodes, dtype=torch.long).to(xq.device)
                return torch.softmax(local(g, idx).float(), dim=-1).cpu()
            p = torch.softmax(self.model(g).float(), dim=-1).cpu()
        return p if nodes is None else p[torch.as_tensor(nodes, dtype=torch.long)]


def replace_csr_rows(x: Tensor, rows: Tensor, values: Tensor) -> Tensor:
    """A CSR matrix equal to ``x`` (CSR) with rows ``rows`` replaced by the dense ``values``: O(nnz) copies, no sort."""
    from methods.models import _counts_to_ptr, _csr_tensor

    crow, col, val = x.crow_indices(), x.col_indices(), x.values()
    order = torch.argsort(rows)
    rows, values = rows[order], values[order]
    counts = crow[1:] - crow[:-1]
    cols, vals, cut = [], [], 0
    for r, v in zip(rows.tolist(), values):
        nz = v.nonzero().view(-1)
        cols += [col[cut:int(crow[r])], nz.to(col.dtype)]
        vals += [val[cut:int(crow[r])], v[nz]]
        counts[r] = nz.numel()
        cut = int(crow[r + 1])
    cols.append(col[cut:])
    vals.append(val[cut:])
    return _csr_tensor(_counts_to_ptr(counts).to(crow.dtype), torch.cat(cols), torch.cat(vals), tuple(x.shape))


def feature_map(normalize_features: bool) -> Callable[[Tensor], Tensor]:
    """The raw-feature preprocessing of :func:`train_full_batch` (row normalisation or the identity)."""
    return row_normalize if normalize_features else _identity


def _identity(x: Tensor) -> Tensor:
    return x


#: the functions a served model may hold (a :class:`FeatureQueryFitted`'s ``feature_map``): pure, safe to call on
#: any argument, so the restricted loader of served models (:mod:`bench.safe_load`) may rebuild a reference to them
SERVED_FUNCTIONS = (row_normalize, _identity)
