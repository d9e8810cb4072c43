"""The attack interface, the registry and the evaluation harness that keeps ground truth from the attacker.

An attack subclasses :class:`Attack`, declares its ``level`` (``node``, ``edge`` or ``feature``) and a typed ``Config``
dataclass, registers by name (``@register_attack("threshold")``), and implements
``scores(view) -> {variant: scores}``: one score per candidate (higher = more likely a member) for each
variant it computes (e.g. ``loss``, ``confidence``). Plugins register attacks exactly like methods
(``bench --plugin my_attacks.py attack ...``).

:func:`run_attack` plays the membership game against a trained target:

1. the membership rule (``attacks.membership``) gives members and non-members: the *candidates* (edge game:
   training edges and non-edges; feature game: a training node's own feature row and a class-mate's);
2. the candidates are split at random, stratified by membership, into the attacker's *known* nodes
   (``known_fraction``, default 1/2: labelled data the attacker owns, e.g. for shadow models) and the
   *evaluated* nodes, disjoint from them;
3. the attack sees only a :class:`NodeView` / :class:`EdgeView` / :class:`FeatureView` (no ``Task`` masks
   that reveal membership, no ``Fitted.info``), and scores every candidate;
4. the metrics (``attacks.metrics``) are computed on the evaluated nodes only. Balanced accuracy uses
   the threshold that maximises it on the known nodes: there, and only there, the attacker is assumed
   to know the membership (Song & Mittal's calibration on the attacker's own data). AUC, TPR at low
   FPR and the advantage need no threshold.

Reference and shadow models are trained through ``Method.fit`` with the target's method,
hyperparameters and budget (the attacker knows the training algorithm: Kerckhoffs), on tasks the
attacker builds with :meth:`NodeView.reference` from what it may see.
"""

from __future__ import annotations

import dataclasses
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import Tensor

from attacks import metrics as M
from attacks.membership import (NotApplicable, Reference, edgeless_task, rule_for, sample_non_edges,
                                training_edges)
from methods.base import (Budget, ConfigError, ContractViolation, Fitted, Method, NoConfig, Task,
                          fit_method, get_method, make_config)
from methods.registry import Registry
from methods.streams import RunStreams

Level = Literal["node", "edge", "feature"]

#: the two feature-level games and the unit label of each (``Attack.feature_game``): what the released model says
#: about a row as a function of attacker-chosen rows (``weights``: what a feature-level epsilon bounds), and what the
#: posteriors it serves for the real graph say too (``predictions``: a training node's served posterior is a function
#: of its own row, which no feature-level epsilon covers)
FEATURE_GAMES = {"weights": "feature row (weights only)", "predictions": "feature row (released predictions)"}


# --------------------------------------------------------------------------------------
# Configs shared by the built-in attacks
# --------------------------------------------------------------------------------------


@dataclass
class NodeAttackConfig:
    """Attacker knowledge common to node attacks."""

    # which membership game (attacks.membership): auto = the setting's default rule
    membership: str = "auto"
    # fraction of the candidates (stratified by membership) the attacker knows and owns; disjoint from
    # the evaluated ones
    known_fraction: float = 0.5
    # cap on the candidates (a stratified random subset); 0 = all
    max_candidates: int = 0
    # shadow/reference models (shadow, lira): the fraction of their candidates they train on ("in").
    # 0 = the target's own member fraction (``NodeView.member_fraction``: the attacker knows the
    # training-set SIZE, as in Carlini et al. and Olatunji et al., never which nodes); 0.5 = random halves
    in_fraction: float = 0.0

    def validate(self) -> None:
        from attacks.membership import RULE_CHOICES

        if not 0.0 <= self.in_fraction < 1.0:
            raise ConfigError(f"in_fraction must be in [0, 1) (0 = the target's member fraction; got {self.in_fraction})")

        if self.membership not in RULE_CHOICES:
            raise ConfigError(f"membership must be one of {', '.join(RULE_CHOICES)} (got {self.membership!r})")
        if not 0.0 <= self.known_fraction < 1.0:
            raise ConfigError(f"known_fraction must be in [0, 1) (got {self.known_fraction})")
        if self.max_candidates < 0:
            raise ConfigError(f"max_candidates must be >= 0 (got {self.max_candidates})")


@dataclass
class EdgeAttackConfig:
    """Attacker knowledge common to edge attacks."""

    # member edges drawn from the training graph, and as many non-edges; 0 = every edge
    pairs: int = 1000
    # fraction of the pairs used to calibrate the balanced-accuracy threshold (never evaluated)
    known_fraction: float = 0.5

    def validate(self) -> None:
        if self.pairs < 0:
            raise ConfigError(f"pairs must be >= 0 (got {self.pairs})")
        if not 0.0 <= self.known_fraction < 1.0:
            raise ConfigError(f"known_fraction must be in [0, 1) (got {self.known_fraction})")


@dataclass
class FeatureAttackConfig:
    """Attacker knowledge common to feature attacks (the replace-one game of feature-level DP)."""

    # target nodes (training nodes, each with its own row and one decoy row); 0 = every training node
    targets: int = 500
    # fraction of the targets (with both their candidates) used to calibrate the balanced-accuracy threshold
    known_fraction: float = 0.5

    def validate(self) -> None:
        if self.targets < 0:
            raise ConfigError(f"targets must be >= 0 (got {self.targets})")
        if not 0.0 <= self.known_fraction < 1.0:
            raise ConfigError(f"known_fraction must be in [0, 1) (got {self.known_fraction})")


# --------------------------------------------------------------------------------------
# The target and the attacker's views
# --------------------------------------------------------------------------------------


@dataclass
class Target:
    """What the harness holds: the trained model and how it was trained. Never passed to an attack."""

    task: Task
    method: Method
    budget: Budget
    fitted: Fitted
    seed: int | RunStreams = 0  # the target run's seed or streams
    device: Any = "cpu"

    @property
    def streams(self) -> RunStreams:
        return RunStreams.of(self.seed)

    def attack_streams(self, attack: str) -> RunStreams:
        """The streams of one attack on this target: a child of the target run's, independent of its noise."""
        return self.streams.child("attack", attack)


def _posteriors(fitted: Fitted, nodes: Tensor | None, num_nodes: int, num_classes: int) -> Tensor:
    p = fitted.predict_proba(nodes)
    p = torch.as_tensor(p).detach().to("cpu", torch.float64)
    rows = num_nodes if nodes is None else int(torch.as_tensor(nodes).numel())
    if p.shape != (rows, num_classes):
        raise ContractViolation(f"predict_proba returned shape {tuple(p.shape)}, expected ({rows}, {num_classes})")
    if not torch.isfinite(p).all() or (p < -1e-6).any() or not torch.allclose(p.sum(1), torch.ones(rows, dtype=p.dtype),
                                                                                atol=1e-3):
        raise ContractViolation("predict_proba returned rows that are not probability vectors")
    return p.clamp(min=0.0)


class _View:
    def __init__(self, target: Target, task: Task, attack: str, progress: bool) -> None:
        self._target = target  # private: attacks must use the methods below
        self.task = task
        self.num_classes = int(task.num_classes)
        self.method_name = target.method.name
        self.privacy_unit = target.method.privacy_unit
        self.budget = target.budget
        self.progress = progress
        self._attack = attack
        self._streams = target.attack_streams(attack)
        self.inference_private = target.fitted.info.get("inference_private") if target.fitted.info else None
        self.notes: dict[str, Any] = {}  # facts an attack reports (logged as parameters)

    @property
    def labels(self) -> Tensor:
        return self.task.data.y

    def seed(self, *path: Any) -> int:
        """An integer seed for the attacker's own random stream ``path`` (a child of the target run's streams)."""
        return self._streams.int_seed("attack", *path)

    def generator(self, *path: Any) -> torch.Generator:
        return self._streams.torch("attack", *path)

    def streams(self, *path: Any) -> RunStreams:
        """The streams of one shadow or reference model the attacker trains."""
        return self._streams.child("shadow", *path)

    def posteriors(self, nodes: Tensor | None = None) -> Tensor:
        """The released model's class probabilities (float64), as ``Fitted.predict_proba`` serves them."""
        t = self._target
        return _posteriors(t.fitted, nodes, t.task.num_nodes, t.task.num_classes)

    def feature_query(self, x: Tensor, nodes: Tensor | None = None) -> Tensor:
        """Posteriors of ``nodes`` when the model is served attacker-supplied node features ``x`` [N, F] on its
        own graph. Needs an optional ``Fitted.predict_proba_features(x, nodes)``; otherwise the released model
        cannot answer such queries and the attack is not applicable."""
        fn = self._query_fn("predict_proba_features")
        return self._checked(fn(x, nodes), nodes)

    def feature_query_rows(self, rows: Tensor, values: Tensor, nodes: Tensor | None = None) -> Tensor:
        """Posteriors of ``nodes`` when the raw feature rows of nodes ``rows`` are ``values`` and every other row is
        the served graph's own (``Fitted.predict_proba_rows`` when the model has it: one cheap query; else a
        whole-matrix :meth:`feature_query` on the task's features with those rows replaced)."""
        return self._query_rows(self._target.fitted, self._target.task.data.x, rows, values, nodes)

    def _query_rows(self, fitted: Fitted, x: Tensor, rows: Tensor, values: Tensor, nodes: Tensor | None) -> Tensor:
        """:meth:`feature_query_rows` on ``fitted``, whose served features are ``x``."""
        rows = torch.as_tensor(rows, dtype=torch.long).view(-1)
        fn = getattr(fitted, "predict_proba_rows", None)
        if callable(fn):
            return self._checked(fn(rows, values, nodes), nodes)
        x = x.float().clone()
        x[rows] = torch.as_tensor(values, dtype=x.dtype).reshape(rows.numel(), x.size(1))
        if fitted is self._target.fitted:
            return self.feature_query(x, nodes)
        fn = getattr(fitted, "predict_proba_features", None)
        if not callable(fn):
            raise NotApplicable(f"{self.method_name}'s reference model answers no feature query")
        return self._checked(fn(x, nodes), nodes)

    def _query_fn(self, name: str):
        fn = getattr(self._target.fitted, name, None)
        if not callable(fn):
            why = getattr(self._target.method, "feature_query_note", "")
            raise NotApplicable(
                f"{self.method_name}'s released model serves posteriors only for its own features "
                f"(no Fitted.predict_proba_features(x, nodes){': ' + why if why else ''}), so feature-perturbation "
                "queries are impossible")
        return fn

    def _checked(self, p: Any, nodes: Tensor | None) -> Tensor:
        t = self._target
        p = torch.as_tensor(p).detach().to("cpu", torch.float64)
        rows = t.task.num_nodes if nodes is None else int(torch.as_tensor(nodes).numel())
        if p.shape != (rows, t.task.num_classes) or not torch.isfinite(p).all():
            raise ContractViolation(f"a feature query returned shape {tuple(p.shape)} or non-finite values")
        return p


class NodeView(_View):
    """The node attacker's view: the attacker task, the candidates and the known nodes.

    ``candidates``: node ids in increasing order (their order carries no membership information).
    ``known``: the subset the attacker owns (labelled; its membership in the target is NOT given).
    ``task``: the target's task with the membership-revealing masks removed (see ``attacks.membership``).
    ``member_fraction``: the fraction of the candidates that are members: the target's training-set
    size, which the attacker is assumed to know (it is public for the benchmark's splits); never which.
    """

    def __init__(self, target: Target, rule, task: Task, candidates: Tensor, known: Tensor, attack: str,
                 progress: bool, member_fraction: float = 0.5) -> None:
        super().__init__(target, task, attack, progress)
        self.rule = rule
        self.candidates = candidates
        self.known = known
        self.member_fraction = float(member_fraction)

    def in_fraction(self, configured: float) -> float:
        """The fraction of candidates a shadow/reference model trains on: ``configured``, or 0 = the target's."""
        return float(configured) if configured > 0 else self.member_fraction

    @property
    def method_config(self) -> Any:
        """The target's hyperparameters (known to the attacker)."""
        return self._target.method.config

    def mask(self, nodes: Tensor) -> Tensor:
        m = torch.zeros(self.task.num_nodes, dtype=torch.bool)
        m[nodes] = True
        return m

    def reference(self, inside: Tensor, outside: Tensor) -> Reference:
        """A task for a shadow/reference model in which ``inside`` are members and ``outside`` non-members
        (node ids or masks), built from the attacker task by the membership rule."""
        inside = inside if inside.dtype == torch.bool else self.mask(inside)
        outside = outside if outside.dtype == torch.bool else self.mask(outside)
        if (inside & outside).any():
            raise ValueError("a reference task cannot have a node both inside and outside")
        return self.rule.reference(self.task, self.method_config, inside, outside)

    def fit(self, ref: Reference, seed: int | RunStreams, method: str | None = None) -> tuple[Fitted, Tensor, Tensor]:
        """Train a shadow/reference model on ``ref.task``; return it with its (members, non-members) masks.

        ``method``: None trains the target's method with the target's hyperparameters and budget;
        a registered name trains that method with its defaults (non-private unless it is private, then
        at the target's budget).
        """
        t = self._target
        if method is None or method == t.method.name:
            m = type(t.method)(**{**_config_overrides(t.method), **ref.overrides}) if ref.overrides else t.method
            budget = t.budget
        else:
            cls = get_method(method)
            known = {f for f in _field_names(cls)}
            m = cls(**{k: v for k, v in ref.overrides.items() if k in known})
            budget = t.budget if m.is_private else Budget()
            if m.is_private and not budget.is_private:
                raise ConfigError(f"shadow method {method} is private but the target ran without a budget")
        m.check_task(ref.task)
        fitted = fit_method(m, ref.task, budget, RunStreams.of(seed), device=t.device, progress=False)
        members, non = ref.membership(fitted)
        return fitted, members, non

    def reference_posteriors(self, fitted: Fitted, nodes: Tensor | None = None) -> Tensor:
        return _posteriors(fitted, nodes, self.task.num_nodes, self.num_classes)


class EdgeView(_View):
    """The edge attacker's view: node features and labels (no edge), the candidate pairs, the known pairs.

    ``pairs`` [2, P] (u < v), ordered by (u, v); ``known`` a boolean mask over the pairs.
    """

    def __init__(self, target: Target, task: Task, pairs: Tensor, known: Tensor, attack: str, progress: bool) -> None:
        super().__init__(target, task, attack, progress)
        self.pairs = pairs
        self.known = known


class FeatureView(_View):
    """The feature attacker's view (the replace-one game of feature-level DP): everything but the target rows.

    In the weights-only game (``Attack.feature_game = "weights"``) the view serves no posterior of the real graph
    (:meth:`posteriors` refuses): the attacker has the released model as a function, queried on rows it chooses, and
    its queries should set the target's row (a query that reads a target with its real row in place is a released
    prediction). In the released-prediction game it also sees the posteriors served for the real graph.

    ``nodes`` [C]: the target node of each candidate, in increasing order, each target twice: candidates ``2i`` and
    ``2i + 1`` are the two rows proposed for one target, in random order; ``rows`` [C, F]: the raw feature row each
    candidate proposes for its node, the node's own or a decoy (the row of a node of its class outside the training
    set); ``known``: a boolean mask over the candidates (both of a
    target or neither). ``task``: the target's task, structure and labels included (public at feature level), with
    every target's own row zeroed (the attacker does not know it); queries (:meth:`feature_query_rows`) run on the
    served graph, whose other rows the DP game lets the attacker know.
    """

    def __init__(self, target: Target, task: Task, nodes: Tensor, rows: Tensor, known: Tensor, attack: str,
                 progress: bool, game: str = "weights") -> None:
        super().__init__(target, task, attack, progress)
        self.nodes = nodes
        self.rows = rows
        self.known = known
        self.game = game

    def posteriors(self, nodes: Tensor | None = None) -> Tensor:
        if self.game != "predictions":
            raise ContractViolation(f"attack {self._attack} plays the weights-only feature game, where no posterior of "
                                    "the real graph is served; an attack that reads them sets feature_game = "
                                    "'predictions' (unit: feature row (released predictions))")
        return super().posteriors(nodes)

    @property
    def targets(self) -> Tensor:
        """The target nodes, in increasing order (candidates ``2i`` and ``2i + 1`` are target ``i``'s)."""
        return self.nodes[0::2]

    def reference_task(self, held: Tensor) -> Task:
        """The attacker task with target ``i``'s row set to its candidate ``2i`` where ``held[i]``, else ``2i + 1``:
        a dataset of the game's world the attacker picks (every other row is the task's, as the game allows)."""
        held = torch.as_tensor(held, dtype=torch.bool).view(-1)
        x = self.task.data.x.clone()
        pick = torch.arange(held.numel()) * 2 + (~held).long()
        x[self.targets] = self.rows[pick].to(x.dtype)
        data = self.task.data.__class__(x=x, y=self.task.data.y, edge_index=self.task.data.edge_index)
        data.num_nodes = self.task.num_nodes
        return dataclasses.replace(self.task, data=data)

    def fit(self, task: Task, seed: int | RunStreams) -> Fitted:
        """Train a reference model: the target's method, hyperparameters and budget (Kerckhoffs) on ``task``."""
        t = self._target
        method = type(t.method)(**_config_overrides(t.method))
        method.check_task(task)
        return fit_method(method, task, t.budget, RunStreams.of(seed), device=t.device, progress=False)

    def reference_query_rows(self, fitted: Fitted, task: Task, rows: Tensor, values: Tensor,
                             nodes: Tensor | None = None) -> Tensor:
        """:meth:`feature_query_rows` on a reference model trained on ``task``."""
        return self._query_rows(fitted, task.data.x, rows, values, nodes)


def _field_names(cls: type[Method]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls.Config)] if cls.Config is not NoConfig else []


def _config_overrides(method: Method) -> dict[str, Any]:
    from methods.base import config_dict

    return config_dict(method.config) if method.Config is not NoConfig else {}


# --------------------------------------------------------------------------------------
# Attack base class and registry
# --------------------------------------------------------------------------------------


class Attack(ABC):
    """Base class of every attack. Subclasses set the class attributes and implement ``scores``."""

    name: ClassVar[str] = ""
    level: ClassVar[Level] = "node"
    description: ClassVar[str] = ""
    Config: ClassVar[type] = NodeAttackConfig
    #: overrides that make the attack take seconds on a ~200-node graph (tests)
    smoke_config: ClassVar[dict[str, Any]] = {}
    #: what a member is in this attack's game, for tables ("" = ``"<level> membership"``, or the feature game's)
    unit_label: ClassVar[str] = ""
    #: feature level: which game (:data:`FEATURE_GAMES`): ``weights`` (the released model queried on chosen rows) or
    #: ``predictions`` (also the posteriors served for the real graph)
    feature_game: ClassVar[str] = "weights"

    @classmethod
    def unit(cls) -> str:
        """What this attack infers: ``node membership``, ``edge membership``, ``feature row (weights only)`` or
        ``feature row (released predictions)`` (or the class's ``unit_label``)."""
        if cls.unit_label:
            return cls.unit_label
        return FEATURE_GAMES[cls.feature_game] if cls.level == "feature" else f"{cls.level} membership"

    @classmethod
    def outside_claim(cls, privacy_unit: str) -> str:
        """Why a method's ``privacy_unit``-level guarantee says nothing about this attack's game ("" when it does,
        or when there is no guarantee: ``none``). A node-level guarantee covers node membership, an edge and a
        node's feature row (through group privacy: two node changes, so twice its epsilon); an edge-level one
        covers no node's label or features; a feature-level one (structure and labels public) covers a feature
        row but neither a node's training membership nor an edge. Those are what the released weights say: the
        released-prediction feature game (``feature_game = "predictions"``) reads posteriors served as functions of
        the target's own row, which no claim covers (at node level GAP's convention leaves the queried node's own
        row to the querier). Tables print the reason in the attack's row."""
        if privacy_unit in ("none", "", "?"):
            return ""
        if cls.level == "feature" and cls.feature_game == "predictions":
            return f"outside the {privacy_unit}-level claim (served predictions read the node's own row)"
        covered = {"node": ("node",), "edge": ("node", "edge"), "feature": ("node", "feature")}.get(cls.level, ())
        if privacy_unit in covered:
            return ""
        return f"outside the {privacy_unit}-level claim"

    def __init__(self, **overrides: Any) -> None:
        self.config = make_config(self.Config, overrides, owner=f"attack {self.name or type(self).__name__}")

    def check(self, target: Target) -> None:  # noqa: B027 - optional: most attacks apply to every target
        """Raise :class:`NotApplicable` when the attack cannot be run against ``target`` (before any scoring)."""

    @abstractmethod
    def scores(self, view: Any) -> dict[str, Tensor]:
        """Scores of every candidate (``view.candidates`` or ``view.pairs``) per variant; higher = member."""


def _load_builtin() -> None:
    import attacks  # noqa: F401  (importing the package registers the built-in attacks)


#: every registered attack class by name (:class:`methods.registry.Registry`)
ATTACKS: Registry[type[Attack]] = Registry("attack", _load_builtin, sort=True)


def register_attack(name: str):
    """Class decorator: ``@register_attack("threshold")`` makes the attack available to every command."""

    def deco(cls: type[Attack]) -> type[Attack]:
        if not (isinstance(cls, type) and issubclass(cls, Attack)):
            raise TypeError(f"@register_attack({name!r}) must decorate an Attack subclass")
        if cls.level not in ("node", "edge", "feature"):
            raise ConfigError(f"attack {name}: level must be node, edge or feature (got {cls.level!r})")
        if cls.feature_game not in FEATURE_GAMES:
            raise ConfigError(f"attack {name}: feature_game must be one of {', '.join(FEATURE_GAMES)} "
                              f"(got {cls.feature_game!r})")
        ATTACKS.add(name, cls, same=lambda prev, new: prev.__qualname__ == new.__qualname__)
        cls.name = name
        return cls

    return deco


def unregister_attack(name: str) -> None:
    ATTACKS.remove(name)


def get_attack(name: str) -> type[Attack]:
    return ATTACKS.lookup(name)


def available_attacks() -> dict[str, type[Attack]]:
    return ATTACKS.available()


# --------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------


@dataclass
class VariantResult:
    name: str
    metrics: dict[str, M.Estimate]
    threshold: float
    labels: np.ndarray  # evaluated candidates: 1 member, 0 non-member
    scores: np.ndarray


@dataclass
class AttackReport:
    attack: str
    level: str
    status: Literal["ok", "not applicable"]
    reason: str = ""
    membership: str = ""
    evaluated_members: int = 0
    evaluated_non_members: int = 0
    known: int = 0
    variants: list[VariantResult] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    ids: np.ndarray | None = None  # evaluated node ids ([n]) or pairs ([2, n])

    def metrics_flat(self) -> dict[str, float]:
        """``variant.metric`` (and ``_low``/``_high``) -> value, for MLflow."""
        out: dict[str, float] = {}
        for v in self.variants:
            for k, e in v.metrics.items():
                out[f"{v.name}.{k}"] = e.value
                out[f"{v.name}.{k}_low"] = e.low
                out[f"{v.name}.{k}_high"] = e.high
        return out

    def to_dict(self, with_scores: bool = False) -> dict[str, Any]:
        d = {"attack": self.attack, "level": self.level, "status": self.status, "reason": self.reason,
             "membership": self.membership, "evaluated_members": self.evaluated_members,
             "evaluated_non_members": self.evaluated_non_members, "known": self.known, "params": self.params,
             "notes": self.notes, "seconds": self.seconds,
             "variants": {v.name: {"threshold": v.threshold, **{k: e.to_dict() for k, e in v.metrics.items()}}
                          for v in self.variants}}
        if with_scores and self.ids is not None:
            d["evaluated"] = {"ids": self.ids.tolist(),
                              "labels": self.variants[0].labels.astype(int).tolist() if self.variants else [],
                              "scores": {v.name: v.scores.tolist() for v in self.variants}}
        return d

    def figure(self, title: str = ""):
        return M.roc_figure({v.name: (v.labels, v.scores) for v in self.variants}, title or self.attack)


# --------------------------------------------------------------------------------------
# The game
# --------------------------------------------------------------------------------------


def _stratified_known(labels: Tensor, fraction: float, gen: torch.Generator) -> Tensor:
    """A boolean mask: ``fraction`` of each class (members / non-members), at least one of each left out."""
    known = torch.zeros(labels.numel(), dtype=torch.bool)
    for value in (True, False):
        idx = (labels == value).nonzero().view(-1)
        k = min(int(math.floor(fraction * idx.numel() + 1e-9)), idx.numel() - 1)
        if k > 0:
            known[idx[torch.randperm(idx.numel(), generator=gen)[:k]]] = True
    return known


def _subsample(labels: Tensor, cap: int, gen: torch.Generator) -> Tensor:
    """Indices of a stratified random subset of at most ``cap`` entries (all when cap == 0)."""
    n = labels.numel()
    if cap == 0 or cap >= n:
        return torch.arange(n)
    keep = []
    for value in (True, False):
        idx = (labels == value).nonzero().view(-1)
        k = max(1, round(cap * idx.numel() / n))
        keep.append(idx[torch.randperm(idx.numel(), generator=gen)[:k]])
    return torch.cat(keep).sort().values


def _check_scores(name: str, variant: str, s: Any, n: int) -> np.ndarray:
    arr = np.asarray(torch.as_tensor(s).detach().cpu().double().numpy() if isinstance(s, Tensor) else s, dtype=float)
    if arr.shape != (n,):
        raise ContractViolation(f"attack {name}, variant {variant}: {arr.shape} scores for {n} candidates")
    if not np.isfinite(arr).all():
        raise ContractViolation(f"attack {name}, variant {variant}: {int((~np.isfinite(arr)).sum())} scores are NaN/inf")
    return arr


def run_attack(attack: Attack, target: Target, n_bootstrap: int = M.DEFAULT_BOOTSTRAP, progress: bool = False
               ) -> AttackReport:
    """Play the membership game of ``attack`` against ``target``; a "not applicable" report if it cannot."""
    t0 = time.perf_counter()
    params = {"attack": attack.name, "level": attack.level}
    try:
        params.update({f"attack.{k}": v for k, v in _attack_config(attack).items()})
    except Exception:  # pragma: no cover - a plugin with an exotic config
        pass
    try:
        attack.check(target)
        game = {"node": _node_game, "edge": _edge_game, "feature": _feature_game}[attack.level]
        report = game(attack, target, n_bootstrap, progress)
    except NotApplicable as e:
        report = AttackReport(attack.name, attack.level, "not applicable", reason=str(e))
    report.params = {**params, **report.params}
    report.seconds = time.perf_counter() - t0
    return report


def _attack_config(attack: Attack) -> dict[str, Any]:
    return {f.name: getattr(attack.config, f.name) for f in dataclasses.fields(attack.config)}


def _score_and_measure(attack: Attack, view: Any, labels: Tensor, known: Tensor, n_bootstrap: int, ids: np.ndarray,
                       seed: int) -> tuple[list[VariantResult], dict]:
    raw = attack.scores(view)
    if not isinstance(raw, dict) or not raw:
        raise ContractViolation(f"attack {attack.name} returned no scores")
    y = labels.numpy().astype(bool)
    kn = known.numpy()
    ev = ~kn
    results = []
    for variant, s in raw.items():
        arr = _check_scores(attack.name, variant, s, y.size)
        threshold = math.nan
        if kn.any() and y[kn].any() and (~y[kn]).any():
            threshold = M.best_threshold(y[kn], arr[kn])
        est = M.evaluate_scores(y[ev], arr[ev], threshold, n_bootstrap=n_bootstrap, seed=seed)
        results.append(VariantResult(str(variant), est, threshold, y[ev].astype(np.int8), arr[ev]))
    return results, dict(view.notes)


def _node_game(attack: Attack, target: Target, n_bootstrap: int, progress: bool) -> AttackReport:
    cfg = attack.config
    task = target.task
    rule = rule_for(task, getattr(cfg, "membership", "auto"))
    members, non = rule.truth(task, target.fitted)
    if not members.any() or not non.any():
        raise NotApplicable(f"membership rule {rule.name} gives {int(members.sum())} members and "
                            f"{int(non.sum())} non-members")
    candidates = (members | non).nonzero().view(-1)
    labels = members[candidates]
    streams = target.attack_streams(attack.name)
    gen = streams.torch("game")
    keep = _subsample(labels, int(getattr(cfg, "max_candidates", 0)), gen)
    candidates, labels = candidates[keep], labels[keep]
    known = _stratified_known(labels, float(getattr(cfg, "known_fraction", 0.5)), gen)
    view = NodeView(target, rule, rule.attacker_task(task), candidates, candidates[known], attack.name, progress,
                    member_fraction=float(labels.double().mean()))
    ids = candidates[~known].numpy()
    variants, notes = _score_and_measure(attack, view, labels, known, n_bootstrap, ids,
                                         streams.int_seed("game", "bootstrap"))
    return AttackReport(attack.name, "node", "ok", membership=rule.name,
                        evaluated_members=int(labels[~known].sum()), evaluated_non_members=int((~labels[~known]).sum()),
                        known=int(known.sum()), variants=variants, notes=notes, ids=ids,
                        params={"membership": rule.name, "candidates": int(candidates.numel())})


def _edge_game(attack: Attack, target: Target, n_bootstrap: int, progress: bool) -> AttackReport:
    cfg = attack.config
    task = target.task
    edges = training_edges(task)
    if edges.size(1) == 0:
        raise NotApplicable("the training graph has no edge")
    streams = target.attack_streams(attack.name)
    gen = streams.torch("game")
    cap = int(getattr(cfg, "pairs", 0))
    if cap and edges.size(1) > cap:
        edges = edges[:, torch.randperm(edges.size(1), generator=gen)[:cap]]
    non = sample_non_edges(task, edges.size(1), gen)
    pairs = torch.cat([edges, non], dim=1)
    labels = torch.cat([torch.ones(edges.size(1), dtype=torch.bool), torch.zeros(non.size(1), dtype=torch.bool)])
    order = torch.argsort(pairs[0] * task.num_nodes + pairs[1])
    pairs, labels = pairs[:, order], labels[order]
    known = _stratified_known(labels, float(getattr(cfg, "known_fraction", 0.5)), gen)
    view = EdgeView(target, edgeless_task(task), pairs, known, attack.name, progress)
    ids = pairs[:, ~known].numpy()
    variants, notes = _score_and_measure(attack, view, labels, known, n_bootstrap, ids,
                                         streams.int_seed("game", "bootstrap"))
    return AttackReport(attack.name, "edge", "ok", membership="training-edges-vs-non-edges",
                        evaluated_members=int(labels[~known].sum()), evaluated_non_members=int((~labels[~known]).sum()),
                        known=int(known.sum()), variants=variants, notes=notes, ids=ids,
                        params={"membership": "training-edges-vs-non-edges", "candidates": int(labels.numel())})



def decoy_nodes(nodes: Tensor, y: Tensor, pool: Tensor, gen: torch.Generator) -> Tensor:
    """For each of ``nodes``, a node of the same class drawn uniformly from the mask ``pool`` (which must hold one
    for every class of ``nodes`` and none of ``nodes``)."""
    out = torch.empty_like(nodes)
    for c in y[nodes].unique().tolist():
        mates = ((y == c) & pool).nonzero().view(-1)
        sel = (y[nodes] == c).nonzero().view(-1)
        out[sel] = mates[torch.randint(0, mates.numel(), (sel.numel(),), generator=gen)]
    return out


def _feature_game(attack: Attack, target: Target, n_bootstrap: int, progress: bool) -> AttackReport:
    """The replace-one game of feature-level DP: for each target (a training node whose row and label the training
    read) two candidate rows, its own (member) and the row of a node of its class the training took no label from
    (non-member: equally plausible a priori, never fitted); the attacker scores both."""
    cfg = attack.config
    task = target.task
    y = task.data.y
    outside = ~task.train_mask
    has_mate = torch.bincount(y[outside], minlength=int(task.num_classes)) > 0
    train = task.train_mask.nonzero().view(-1)
    train = train[has_mate[y[train]]]
    if train.numel() < 2:
        raise NotApplicable(f"{train.numel()} training nodes have a class-mate outside the training set to take a "
                            "decoy row from (2 needed)")
    streams = target.attack_streams(attack.name)
    gen = streams.torch("game")
    cap = int(getattr(cfg, "targets", 0))
    if cap and train.numel() > cap:
        train = train[torch.randperm(train.numel(), generator=gen)[:cap]].sort().values
    decoy = decoy_nodes(train, y, outside, gen)
    t = train.numel()
    first_own = torch.randint(0, 2, (t,), generator=gen).bool()
    labels = torch.stack([first_own, ~first_own], 1).view(-1)
    nodes = train.repeat_interleave(2)
    src = torch.where(labels, nodes, decoy.repeat_interleave(2))
    x = task.data.x
    rows = x[src]
    n_known = min(int(math.floor(float(getattr(cfg, "known_fraction", 0.5)) * t + 1e-9)), t - 1)
    known_t = torch.zeros(t, dtype=torch.bool)
    known_t[torch.randperm(t, generator=gen)[:n_known]] = True
    known = known_t.repeat_interleave(2)
    hidden_x = x.clone()
    hidden_x[train] = 0
    data = task.data.__class__(x=hidden_x, y=y, edge_index=task.data.edge_index)
    data.num_nodes = task.num_nodes
    view = FeatureView(target, dataclasses.replace(task, data=data), nodes, rows, known, attack.name, progress,
                       game=attack.feature_game)
    ids = torch.stack([nodes, src])[:, ~known].numpy()
    variants, notes = _score_and_measure(attack, view, labels, known, n_bootstrap, ids,
                                         streams.int_seed("game", "bootstrap"))
    return AttackReport(attack.name, "feature", "ok", membership="own-row-vs-class-mate-row",
                        evaluated_members=int(labels[~known].sum()), evaluated_non_members=int((~labels[~known]).sum()),
                        known=int(known.sum()), variants=variants, notes=notes, ids=ids,
                        params={"membership": "own-row-vs-class-mate-row", "candidates": int(labels.numel()),
                                "feature_game": attack.feature_game})


__all__ = ["FEATURE_GAMES", "Attack", "AttackReport", "EdgeAttackConfig", "EdgeView", "FeatureAttackConfig", "FeatureView",
           "NodeAttackConfig", "NodeView", "NotApplicable", "Target", "VariantResult", "available_attacks",
           "decoy_nodes", "get_attack", "register_attack", "run_attack", "unregister_attack"]
