"""The method interface: Task, Budget, Method, Fitted, the registry and typed hyperparameters.

Every method (built-in or plugin) subclasses :class:`Method`, declares its privacy unit and a
hyperparameter dataclass, and registers itself by name with :func:`register`. The harness, the
attacks and the audits only ever talk to methods through this module.
"""

from __future__ import annotations

import hashlib
import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import torch
from torch import Tensor

from methods import inference
from methods.budget import Budget, default_delta  # noqa: F401 (re-exported)
from methods.config import NoConfig, _coerce, config_dict, make_config  # noqa: F401 (re-exported)
from methods.registry import Registry
from methods.errors import (BenchError, BudgetError, ConfigError, ContractViolation,
                            InterfaceError)
from methods.streams import RunStreams

PrivacyUnit = Literal["none", "edge", "node", "feature"]
Setting = Literal["transductive", "inductive", "private-public"]
PRIVACY_UNITS: tuple[str, ...] = ("none", "edge", "node", "feature")
SETTINGS: tuple[str, ...] = ("transductive", "inductive", "private-public")


# --------------------------------------------------------------------------------------
# Task
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Task:
    """A dataset under one named, seeded split.

    ``data`` holds ``x`` (float, [N, F]), ``y`` (long, [N]) and an undirected, coalesced,
    self-loop-free ``edge_index``. Masks are boolean over the N nodes of ``data``.

    Settings:

    * ``transductive``: the model may see every node's features and all edges while training;
      labels only of ``train_mask`` nodes.
    * ``inductive``: ``data`` has no edge between different splits; training may only touch the
      subgraph induced by ``train_mask`` (see :meth:`training_graph`); val/test nodes are served
      on their own induced graphs.
    * ``private-public`` (PrivGNN): ``data`` is the disjoint union of a private labelled graph
      (``train_mask``) and a public unlabelled graph (``public_mask``) with no edge between them.
      ``query_mask`` marks the public-train nodes (query candidates, labels unknown to private
      methods), ``test_mask`` the public-test nodes, ``val_mask`` is empty. A generic method trained
      on this task is the paper's non-private baseline B1 (all private data, tested on public test).
    """

    dataset: str
    split: str
    setting: Setting
    data: Any  # torch_geometric.data.Data
    train_mask: Tensor
    val_mask: Tensor
    test_mask: Tensor
    num_classes: int
    seed: int = 0
    query_mask: Tensor | None = None
    public_mask: Tensor | None = None
    ogb_name: str | None = None
    node_ids: Tensor | None = None  # original node ids when the split selected a subset
    info: dict = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return int(self.data.num_nodes)

    @property
    def num_features(self) -> int:
        return int(self.data.x.size(1))

    @property
    def num_edges(self) -> int:
        """Number of undirected edges."""
        return int(self.data.edge_index.size(1)) // 2

    def training_graph(self) -> tuple[Any, Tensor]:
        """The graph a model may see while training and the original indices of its nodes.

        Transductive: the whole graph. Inductive and private-public: the subgraph induced by
        ``train_mask`` (relabelled), so no validation/test/public node is touched in training.
        """
        all_nodes = torch.arange(self.num_nodes)
        if self.setting == "transductive":
            return self.data, all_nodes
        from torch_geometric.utils import subgraph

        nodes = all_nodes[self.train_mask]
        edge_index, _ = subgraph(nodes, self.data.edge_index, relabel_nodes=True, num_nodes=self.num_nodes)
        sub = self.data.__class__(x=self.data.x[nodes], y=self.data.y[nodes], edge_index=edge_index)
        sub.num_nodes = int(nodes.numel())
        return sub, nodes

    def split_hash(self) -> str:
        """A stable hash of the split (masks, node selection and edge set)."""
        h = hashlib.sha256()
        h.update(f"{self.dataset}|{self.split}|{self.setting}|{self.num_nodes}".encode())
        for m in (self.train_mask, self.val_mask, self.test_mask, self.query_mask, self.public_mask, self.node_ids):
            h.update(b"|" if m is None else m.detach().cpu().numpy().tobytes())
        h.update(self.data.edge_index.detach().cpu().numpy().tobytes())
        return h.hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        out = {
            "dataset": self.dataset,
            "split": self.split,
            "setting": self.setting,
            "nodes": self.num_nodes,
            "edges": self.num_edges,
            "features": self.num_features,
            "classes": self.num_classes,
            "train": int(self.train_mask.sum()),
            "val": int(self.val_mask.sum()),
            "test": int(self.test_mask.sum()),
        }
        if self.query_mask is not None:
            out["query"] = int(self.query_mask.sum())
        return out


# --------------------------------------------------------------------------------------
# Hyperparameters (typed dataclasses: :mod:`methods.config`)
# --------------------------------------------------------------------------------------


def stable_hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# --------------------------------------------------------------------------------------
# Method, Fitted, registry
# --------------------------------------------------------------------------------------


class Fitted(ABC):
    """A trained model as a server holds it: what it releases (:meth:`release`) plus the state it keeps to answer
    queries (:meth:`serving_state`).

    ``ledger`` records every private mechanism that touched the data; ``epsilon(delta)`` is what
    the accountant computes from it (never the target). ``history`` holds per-epoch metrics and
    ``info`` facts about the run; ``info["inference_private"]`` is derived from the method's declaration
    (:func:`inference_private_of`), never typed by the method.

    Releases and diagnostics. What a run releases is :meth:`release` (the tensors its ledger covers), the served
    posteriors, and the facts in ``info`` that are functions of public data or of the DP releases (noise
    multipliers, step counts, the ledger); :meth:`serving_state` is held by the server, never released. Anything a
    method computes from private data without a mechanism -- training loss, accuracy on private labels,
    exact counts of dropped nodes or kept edges -- goes in ``info["diagnostic"]`` (and per-epoch in
    ``history``): logged as ``diagnostic.*``, tagged "not private, not released", never in outputs,
    leaderboards or plots.
    """

    ledger: Any  # methods.privacy.PrivacyLedger
    history: list[dict[str, float]]
    info: dict[str, Any]

    @abstractmethod
    def predict_proba(self, nodes: Tensor | None = None) -> Tensor:
        """Class probabilities ([len(nodes) or N, C], rows sum to 1) as the released model serves them."""

    def epsilon(self, delta: float) -> float:
        return float(self.ledger.epsilon(delta))

    def release(self) -> dict[str, Tensor] | None:
        """What the run releases under its ledger, as named tensors: only what the ledger covers (weights, noisy
        aggregates whose every row the ledger bounds, a randomised graph). ``None``: not declared.

        A method that claims private inference (``info["inference_private"]``) must say what it releases:
        the contract tests check that, with the release and the serving state held fixed, no served output depends
        on another private unit's data, nor on any data the method's ``inference_reads`` leaves out; and that no
        released tensor depends on one unit more than the ledger covers (``audits.structural.check_release_coverage``).
        """
        return None

    def serving_state(self) -> dict[str, Tensor] | None:
        """The tensors the served model keeps to answer queries that are NOT released (no ledger covers them): raw
        feature rows, an embedding of them, per-node aggregates outside the ledger's bound, the task's own graph.

        Serving state is not a release: it is what a server holds. Published, it would be data. When inference is
        private, each of its node-indexed rows reaches only the node it belongs to (the :mod:`methods.inference`
        convention: the queried node's own row is the querier's input); a method whose inference reads other rows or
        the edges declares it in ``inference_reads`` and claims no private inference. Its keys never overlap
        :meth:`release`'s. ``None``: none beyond the release (or not declared).
        """
        return None

    def with_state(self, release: dict[str, Tensor], serving: dict[str, Tensor]) -> "Fitted | None":
        """A copy of this served model that answers from ``release`` and ``serving`` (the keys of :meth:`release` and
        :meth:`serving_state`) in place of its own; everything else it holds stays this model's.

        What the private-inference checks transplant (``audits.structural``): a model fitted on a neighbouring
        dataset, given the base model's release and serving rows, must serve the base model's posteriors to every
        node whose own rows it was given, or its outputs read something neither declares. ``None``: not supported
        (the checks then need the two fits' releases to coincide, which a noisy release rarely allows)."""
        return None


@dataclass
class FitContext:
    """What :meth:`Method.fit` hands to a method's ``_fit``: the checked inputs, the resolved device and the
    run's random streams (:class:`methods.streams.RunStreams`)."""

    task: Task
    budget: Budget
    streams: RunStreams
    device: torch.device
    progress: bool = False

    @property
    def seed(self) -> int:
        return self.streams.seed

    def generator(self, purpose: str, *path: Any, device: Any = "cpu") -> torch.Generator:
        """A torch generator on ``purpose``'s stream (CPU unless ``device`` is given)."""
        return self.streams.torch(purpose, *path, device=device)

    def rng(self, purpose: str, *path: Any):
        """A NumPy generator on ``purpose``'s stream."""
        return self.streams.numpy(purpose, *path)

    def init(self, *path: Any):
        """``with ctx.init(): model = ...``: parameter initialisation draws from the ``init`` stream."""
        return self.streams.global_torch("init", *path, device=self.device)

    def bar(self, total: int, desc: str):
        from methods.progress import progress_bar

        return progress_bar(total, desc, self.progress)


class Method(ABC):  # noqa: B024 - subclasses implement ``_fit``; no abstract method, so a mixin can too
    """Base class of every method. Subclasses set the class attributes and implement ``_fit(ctx)``.

    :meth:`fit` is a template: it validates the budget and the task, resolves the device, creates the run's
    random streams (once, from the seed), runs ``_fit`` with torch's global RNG (dropout) on the ``dropout``
    stream, and checks the returned model against the contract. A plugin may still override ``fit`` whole.
    """

    name: ClassVar[str] = ""
    privacy_unit: ClassVar[PrivacyUnit] = "none"
    #: the unit and neighbouring relation its epsilon holds for, as tables label it (default: the unit)
    unit_label: ClassVar[str] = ""
    #: one line on what the label means, for table footnotes
    unit_note: ClassVar[str] = ""
    #: a method whose config chooses its neighbouring relation (a ``relation`` field): relation -> (unit label,
    #: note) of each; :meth:`relation_label` reads it, so records and tables label the relation that ran
    relation_labels: ClassVar[dict[str, tuple[str, str]]] = {}
    description: ClassVar[str] = ""
    Config: ClassVar[type] = NoConfig
    settings: ClassVar[tuple[str, ...]] = SETTINGS
    #: hyperparameter overrides that make a fit take seconds on a ~200-node graph (contract tests)
    smoke_config: ClassVar[dict[str, Any]] = {}
    #: DP-SGD on examples that read the raw node features: white-box gradient canaries apply (audits.whitebox)
    gradient_canaries: ClassVar[bool] = False
    #: the mechanisms need delta > 0 to meet a finite epsilon (False: pure DP, e.g. randomized response)
    needs_delta: ClassVar[bool] = True
    #: methods this one becomes when a budget leaves its difference unused, with why (DRW-D: {"drw": "no
    #: resample"}); a leaderboard row whose runs equal such a method's is marked with the reason
    degenerates_to: ClassVar[dict[str, str]] = {}
    #: why the released model answers no query on attacker-supplied node features (``Fitted.predict_proba_features``,
    #: LinkTeller's queries), when the reason is the privacy claim rather than a missing implementation
    feature_query_note: ClassVar[str] = ""
    #: ``info`` keys that are outputs of the run's DP mechanisms (post-processing of a noisy release: a selected
    #: epoch, a noisy count): they may differ between neighbouring datasets. Every other released key must be a
    #: function of public data and of the facts the ledger names public (``PrivacyLedger.conventions``);
    #: tests/test_contract_conventions.py holds every method to it
    noisy_info: ClassVar[frozenset[str]] = frozenset()
    #: what served inference reads besides the released weights (:mod:`methods.inference`: own-features,
    #: other-features, edges, labels, public, release); ``info["inference_private"]`` is derived from it and the unit.
    #: Undeclared: every raw input, so not private
    inference_reads: ClassVar[frozenset[str]] = inference.READS_EVERYTHING

    def __init__(self, **overrides: Any) -> None:
        self.config = make_config(self.Config, overrides, owner=self.name or type(self).__name__)

    @property
    def is_private(self) -> bool:
        return self.privacy_unit != "none"

    @classmethod
    def label(cls) -> str:
        """The unit label of tables: ``unit_label`` or the privacy unit."""
        return cls.unit_label or cls.privacy_unit

    def relation_label(self) -> str:
        """The unit label of this configured method: its relation's (:attr:`relation_labels`), else :meth:`label`."""
        rel = getattr(self.config, "relation", None)
        return self.relation_labels[rel][0] if rel in self.relation_labels else self.label()

    def relation_note(self) -> str:
        """The footnote of :meth:`relation_label`."""
        rel = getattr(self.config, "relation", None)
        return self.relation_labels[rel][1] if rel in self.relation_labels else self.unit_note

    def check_budget(self, budget: Budget) -> None:
        """Refuse budgets this method cannot meet (called by the harness before ``fit``)."""
        if not isinstance(budget, Budget):
            raise BudgetError(f"budget must be a Budget, got {type(budget).__name__}")
        if not self.is_private and budget.is_private:
            raise BudgetError(
                f"method {self.name} is not private (privacy unit: none) and cannot meet "
                f"epsilon={budget.epsilon:g}; run it without --epsilon"
            )
        if self.is_private and budget.is_private and self.needs_delta and not budget.delta > 0:
            raise BudgetError(f"method {self.name} uses Gaussian or subsampled mechanisms, which cannot meet a "
                              f"finite epsilon with delta = 0; give --delta > 0")

    def check_task(self, task: Task) -> None:
        if task.setting not in self.settings:
            raise ConfigError(
                f"method {self.name} does not support the {task.setting} setting "
                f"(supported: {', '.join(self.settings)})"
            )

    def check_fit(self, task: Task, budget: Budget) -> None:
        """The checks ``fit`` makes of its inputs (:meth:`check_budget`, then :meth:`check_task`), which a plan
        makes before anything runs: a request this method cannot run is an error before a run opens."""
        self.check_budget(budget)
        self.check_task(task)

    def fit(self, task: Task, budget: Budget, seed: int | RunStreams = 0, device: str | torch.device = "cpu",
            progress: bool = False) -> Fitted:
        """Train on ``task`` under ``budget`` and return the released model.

        ``seed`` is the run's seed or its :class:`~methods.streams.RunStreams` (audits and attacks pass the
        streams of a sub-run)."""
        from methods.device import resolve_device

        self.check_fit(task, budget)
        streams = RunStreams.of(seed)
        ctx = FitContext(task, budget, streams, resolve_device(device), progress)
        with streams.global_torch("dropout", device=ctx.device):
            fitted = self._fit(ctx)
        declare_inference(self, fitted, budget)
        check_fitted(self, fitted, budget)
        return fitted

    def _fit(self, ctx: FitContext) -> Fitted:
        raise NotImplementedError(f"{type(self).__name__} must implement _fit(ctx) (or override fit)")


def _dense_cpu(x: Tensor) -> Tensor:
    return (x.to_dense() if x.layout != torch.strided else x).cpu()


def same_release(a: dict[str, Tensor] | None, b: dict[str, Tensor] | None) -> bool:
    """Whether two ``Fitted.release()`` dicts are bit-identical (sparse tensors compared densely)."""
    if a is None or b is None or set(a) != set(b):
        return False
    for k in a:
        x, y = _dense_cpu(a[k]), _dense_cpu(b[k])
        if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
            return False
    return True


def copy_with_weights(fitted: Fitted, release: dict[str, Tensor], serving: dict[str, Tensor]) -> Any:
    """The start of a :meth:`Fitted.with_state` for a model that serves ``fitted.model``: refuse tensors that are not
    exactly those the model releases and serves, then a shallow copy of ``fitted`` whose ``model`` is a copy loaded
    with the release's ``model.*`` tensors (its cached posteriors dropped)."""
    import copy

    want_r, want_s = set(fitted.release() or {}), set(fitted.serving_state() or {})
    if set(release) != want_r or set(serving) != want_s:
        raise BenchError(f"{type(fitted).__name__}.with_state: expected release keys {sorted(want_r)} and serving keys "
                         f"{sorted(want_s)}, got {sorted(release)} and {sorted(serving)}")
    new = copy.copy(fitted)
    new.model = copy.deepcopy(fitted.model)
    new.model.load_state_dict({k[len("model."):]: v for k, v in release.items() if k.startswith("model.")})
    new.model.eval()
    new._proba = None  # noqa: SLF001 - a copy of this class
    return new


def node_rows(state: dict[str, Tensor] | None, num_nodes: int) -> dict[str, Tensor]:
    """The tensors of a serving state that hold one row per node (strided, ``num_nodes`` rows): the rows that, by
    :meth:`Fitted.serving_state`'s convention, each reach only their own node. The rest (a served graph's edges) is
    raw structure whose reading ``Method.inference_reads`` declares."""
    return {k: v for k, v in (state or {}).items()
            if v.layout == torch.strided and v.dim() >= 1 and v.size(0) == num_nodes}


def same_serving_state(a: dict[str, Tensor] | None, b: dict[str, Tensor] | None, num_nodes: int | None = None,
                       node: int | None = None) -> bool:
    """Whether two ``Fitted.serving_state()`` dicts (or their :func:`node_rows`) are bit-identical, except in
    ``node``'s own rows (row ``node`` of each tensor with ``num_nodes`` rows): a changed node's own serving rows reach
    only that node, so they may differ where the comparison leaves its own posterior out. ``None`` is empty."""
    a, b = a or {}, b or {}
    if set(a) != set(b):
        return False
    for k in a:
        x, y = _dense_cpu(a[k]), _dense_cpu(b[k])
        if (node is not None and num_nodes is not None and x.dim() >= 1 and x.shape == y.shape
                and x.size(0) == num_nodes and a[k].layout == torch.strided):
            keep = torch.ones(num_nodes, dtype=torch.bool)
            keep[node] = False
            x, y = x[keep], y[keep]
        if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
            return False
    return True


def fit_method(method: Method, task: Task, budget: Budget, streams: RunStreams, device: Any = "cpu",
               progress: bool = False) -> Fitted:
    """How the harness, the attacks and the audits call ``fit``: the template (:meth:`Method.fit`) gets the run's
    streams; a plugin that overrides ``fit`` whole gets an integer seed (the run's seed, or a seed derived from
    a sub-run's streams), as the interface always promised it."""
    if type(method).fit is Method.fit:
        return method.fit(task, budget, seed=streams, device=device, progress=progress)
    if streams.secure_noise:
        raise ConfigError(f"--secure-noise needs a method built on Method._fit; {method.name or type(method).__name__} "
                          "overrides fit and seeds its own noise")
    seed = streams.seed if not streams.lineage else streams.int_seed("seed") % (2 ** 31)
    fitted = method.fit(task, budget, seed=seed, device=device, progress=progress)
    declare_inference(method, fitted, budget)
    return fitted


def inference_private_of(method: Method | type[Method], budget: Budget) -> bool:
    """Whether ``method``'s served predictions are private under ``budget``: derived from its privacy unit and its
    ``inference_reads`` (:func:`methods.inference.inference_private`, whose docstring states the rule)."""
    return inference.inference_private(method.privacy_unit, method.inference_reads, budget.is_private)


def declare_inference(method: Method, fitted: Any, budget: Budget) -> None:
    """Write the derived ``info["inference_private"]`` into a fit that does not state it (a fit that states it is
    held to the derivation by :func:`check_fitted`)."""
    info = getattr(fitted, "info", None)
    if isinstance(info, dict):
        info.setdefault("inference_private", inference_private_of(method, budget))


def check_fitted(method: Method, fitted: Any, budget: Budget) -> None:
    """The contract every released model meets, whatever the method: a Fitted with a ledger whose epsilon is
    within the target (private methods) or infinite (non-private ones). Raises :class:`ContractViolation` (an
    :class:`InterfaceError` where part of the interface is missing: :func:`interface_gaps`)."""
    name = method.name or type(method).__name__
    if isinstance(fitted, Fitted) and isinstance(getattr(fitted, "info", None), dict):
        _check_inference_flag(name, method, fitted, budget)  # the flag the release rule reads is the derived one
    check_interface(method, fitted)
    _check_serving_state(name, fitted)
    if not method.is_private:
        if fitted.ledger.non_private_use is None:
            raise ContractViolation(f"{name} is not private but its ledger does not say so")
        return
    if budget.is_private:
        eps = fitted.epsilon(budget.delta)
        if not eps <= budget.epsilon * (1 + 1e-9):
            raise ContractViolation(f"{name} spent epsilon={eps:.6g} > target {budget.epsilon:g} at "
                                    f"delta={budget.delta:g}: a method bug")
        _check_history_ends_final(name, fitted, eps)
    _check_reported_sampling(name, fitted)


def interface_gaps(method: Method, fitted: Any) -> list[str]:
    """What of the interface a fit's result misses (empty: nothing), each as a phrase naming it: a
    :class:`Fitted`, its ``ledger`` (a :class:`~methods.privacy.ledger.PrivacyLedger`), ``info`` and ``history``,
    and, where its inference is private (``info["inference_private"]``), what it releases (``Fitted.release()``):
    the claim is checked against the release held fixed, so a claim without one cannot be checked."""
    from methods.privacy.ledger import PrivacyLedger

    if not isinstance(fitted, Fitted):
        return [f"fit returns {type(fitted).__name__}, not a methods.base.Fitted"]
    gaps = []
    if not isinstance(getattr(fitted, "ledger", None), PrivacyLedger):
        gaps.append(f"the fitted model's ledger is {type(getattr(fitted, 'ledger', None)).__name__}, not a "
                    "PrivacyLedger (methods.privacy)")
    if not isinstance(getattr(fitted, "info", None), dict):
        gaps.append("the fitted model has no info dict")
    if not isinstance(getattr(fitted, "history", None), list):
        gaps.append("the fitted model has no history list")
    info = getattr(fitted, "info", None)
    if isinstance(info, dict) and info.get("inference_private") and fitted.release() is None:
        reads = ", ".join(sorted(method.inference_reads or ())) or "the weights only"
        gaps.append(f"its inference is private (inference_reads: {reads}) but {type(fitted).__name__}.release() "
                    "returns None: a private-inference method says what it releases (define "
                    "release() -> {name: tensor}, e.g. the weights)")
    return gaps


def check_interface(method: Method, fitted: Any) -> None:
    """Raise :class:`InterfaceError` naming every part of the interface ``fitted`` misses (:func:`interface_gaps`)."""
    gaps = interface_gaps(method, fitted)
    if gaps:
        name = method.name or type(method).__name__
        raise InterfaceError(f"{name} misses part of the method interface: {'; '.join(gaps)}")


def _check_inference_flag(name: str, method: Method, fitted: Any, budget: Budget) -> None:
    """``info["inference_private"]`` is the derivation from the method's unit and ``inference_reads``, whatever the
    method (a flag typed by hand, or inherited from a parent with another unit, is refused)."""
    want = inference_private_of(method, budget)
    have = fitted.info.get("inference_private")
    if have is None:
        raise ContractViolation(f"{name}: info['inference_private'] is missing (Method.fit and fit_method derive it)")
    if have is not want:
        unit, reads = method.privacy_unit, method.inference_reads
        if want:
            why = f"its declared reads ({', '.join(sorted(reads)) or 'the weights only'}) are private at {unit} level"
        elif unit in inference.PROTECTED and budget.is_private:
            why = f"its inference reads {', '.join(inference.violated(unit, reads))}, which the {unit}-level unit protects"
        else:
            why = "there is no privacy claim"
        raise ContractViolation(f"{name}: info['inference_private'] = {have!r}, but inference is "
                                f"{'private' if want else 'not private'}: {why} (methods.inference)")


def _check_serving_state(name: str, fitted: Any) -> None:
    """A tensor is released (covered by the ledger) or serving state (held, not released), never both."""
    release, serving = fitted.release() or {}, fitted.serving_state() or {}
    both = sorted(set(release) & set(serving))
    if both:
        raise ContractViolation(f"{name}: {', '.join(both)} both released and declared serving state (Fitted."
                                "serving_state holds what the server keeps that is NOT released)")


#: ``info`` keys that state what the sampler's population or rate was, and the ledger fields they must match
SAMPLING_INFO = {"accounting_population": "population", "num_train_subgraphs": "population", "sampling_rate": "rate"}


def _check_history_ends_final(name: str, fitted: Any, eps: float) -> None:
    """A per-step epsilon in the history is a running value: the history must end on the run's final epsilon, or a
    reader of the last logged value (MLflow's "latest") gets a checkpoint instead of the claim."""
    logged = [h for h in fitted.history if "epsilon" in h]
    if not logged:
        return
    last = fitted.history[-1].get("epsilon")
    if last is None or not math.isclose(float(last), eps, rel_tol=1e-9, abs_tol=1e-12):
        raise ContractViolation(f"{name}: the history's last epsilon is {last}, not the ledger's {eps:.6g}; a history "
                                "that logs epsilon must end on the final value")


def _check_reported_sampling(name: str, fitted: Any) -> None:
    """Populations and rates the run reports in ``info`` are those its ledger's events were accounted with."""
    if fitted.ledger.non_private_use is not None or not fitted.ledger.events:
        return
    have = fitted.ledger.sampling()
    for key, field_ in SAMPLING_INFO.items():
        if key not in fitted.info:
            continue
        v = fitted.info[key]
        reported = sorted(v) if isinstance(v, (list, tuple)) else [v]
        ok = len(reported) == len(have[field_]) and all(
            math.isclose(float(a), float(b), rel_tol=1e-12) for a, b in zip(reported, have[field_]))
        if not ok:
            raise ContractViolation(f"{name}: info[{key!r}] = {v} but the ledger was accounted with {field_} "
                                    f"{have[field_] or 'none'}")


def _load_builtin() -> None:
    from methods import load_builtin_methods

    load_builtin_methods()


#: every registered method class by name (:class:`methods.registry.Registry`; the built-ins load on first use)
METHODS: Registry[type[Method]] = Registry("method", _load_builtin, sort=True)


def register(name: str):
    """Class decorator: ``@register("gcn")`` makes the method available to every command."""

    def deco(cls: type[Method]) -> type[Method]:
        if not (isinstance(cls, type) and issubclass(cls, Method)):
            raise TypeError(f"@register({name!r}) must decorate a Method subclass")
        if cls.privacy_unit not in PRIVACY_UNITS:
            raise ConfigError(f"method {name}: privacy_unit must be one of {PRIVACY_UNITS}")
        try:
            cls.inference_reads = inference.check_reads(cls.inference_reads, f"method {name}")
        except ValueError as e:
            raise ConfigError(str(e)) from None
        METHODS.add(name, cls, same=lambda prev, new: prev.__qualname__ == new.__qualname__)
        cls.name = name
        return cls

    return deco


def unregister(name: str) -> None:
    METHODS.remove(name)


def get_method(name: str) -> type[Method]:
    return METHODS.lookup(name)


def available_methods() -> dict[str, type[Method]]:
    return METHODS.available()
