"""Audits of any registered method: ``multi-run`` and ``one-run``, black-box or (DP-SGD) white-box.

Black-box (``canary_type="input"``, the default) uses only ``Method.fit`` and ``Fitted.predict_proba`` /
``Fitted.epsilon``. White-box (``canary_type="gradient"``, :mod:`audits.whitebox`) also replaces the clipped
gradients of the canaries' DP-SGD examples and scores the released noisy gradient sums. The *claimed* epsilon is the
largest ``fitted.epsilon(delta)`` over every model the audit trained (the ledger's value for what ran,
never the target). The verdict is VIOLATION when ``epsilon_lb > claimed`` (the lower bound holds with
probability >= ``confidence``, so a correct method is flagged with probability <= 1 - confidence), or, in the
white-box pooled mode, when the exact epsilon of the pair the runs realised exceeds the claim
(:attr:`audits.pooled.PooledOutcome.pair_exceeds_claim`); NOT APPLICABLE for a non-private method (nothing
trained); PASS otherwise. ``reason`` says why.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from audits.bounds import DEFAULT_CONFIDENCE, multi_run_audit, one_run_audit
from audits.canaries import CanaryConfig, CanarySet, inclusion_coins, make_canaries, within_declared_bound
from audits.verdicts import NOT_APPLICABLE, PASS, VIOLATION
from methods.base import Budget, ConfigError, ContractViolation, Method, Task, fit_method
from methods.progress import progress_bar
from methods.streams import RunStreams

MODES = ("one-run", "multi-run", "pooled")
#: a one-run audit falls back to as many hop-disjoint canaries as the graph holds, down to this many
MIN_CANARIES = 20
CANARY_TYPES = ("input", "gradient")


@dataclass
class AuditResult:
    method: str
    privacy_unit: str
    mode: str
    target_epsilon: float
    delta: float
    claimed_epsilon: float  # max over every trained model of its ledger's epsilon(delta)
    epsilon_lb: float
    confidence: float
    verdict: str
    trials: int  # models trained
    canaries: int
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    reason: str = ""  # why the verdict is what it is (a VIOLATION's cause; a non-private method's "not applicable")

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        for k in ("target_epsilon", "claimed_epsilon", "epsilon_lb"):
            if not math.isfinite(d[k]):
                d[k] = "inf"
        return d


def verdict(claimed: float, lb: float) -> str:
    return VIOLATION if lb > claimed * (1 + 1e-9) + 1e-12 else PASS


def lb_reason(claimed: float, lb: float, name: str = "") -> str:
    """The VIOLATION reason of a lower bound above the claim ("" when it is not)."""
    if verdict(claimed, lb) == PASS:
        return ""
    return f"epsilon_lb {lb:.4g}{f' ({name})' if name else ''} exceeds the claim {claimed:.4g}"


def _fit_scores(make_method: Callable[[], Method], canaries: CanarySet, include: np.ndarray, budget: Budget,
                seed: int | RunStreams, device: Any, canary_type: str = "input", progress: bool = False
                ) -> tuple[np.ndarray, float]:
    task = canaries.world(include)
    method = make_method()
    method.check_task(task)
    if canary_type == "gradient":
        from audits.whitebox import GradientCanaries, canary_columns
        from methods.dpsgd import gradient_hook

        hook = GradientCanaries(canary_columns(task.num_features, canaries.m), task.num_features)
        with gradient_hook(hook):
            fitted = fit_method(method, task, budget, RunStreams.of(seed), device=device, progress=progress)
        if hook.steps == 0:  # (an included canary that was never drawn is legitimate: its score is noise)
            raise ContractViolation(f"gradient canaries: {method.name} took no DP-SGD step through the hook")
        scores = hook.scores.numpy()
    else:
        fitted = fit_method(method, task, budget, RunStreams.of(seed), device=device, progress=progress)
        proba = fitted.predict_proba()
        if tuple(proba.shape) != (task.num_nodes, task.num_classes):
            raise ContractViolation(f"{method.name}.predict_proba returned shape {tuple(proba.shape)}, expected "
                               f"({task.num_nodes}, {task.num_classes})")
        scores = canaries.scores(proba.cpu())
    eps = fitted.epsilon(budget.delta) if method.is_private and budget.is_private else math.inf
    return scores, float(eps)


def check_canary_type(method: Method, canary_type: str, canary: CanaryConfig) -> None:
    """A clear error when ``canary_type`` does not apply to ``method`` or the canary design."""
    if canary_type not in CANARY_TYPES:
        raise ConfigError(f"unknown canary type {canary_type!r} (choose {' or '.join(CANARY_TYPES)})")
    if canary_type == "gradient":
        if not getattr(method, "gradient_canaries", False):
            raise ConfigError(f"gradient canaries need a DP-SGD method whose examples read raw node features "
                              f"(dp-mlp, drw, drw-r, drw-d, dpgnn, dpgnn-adam); {method.name} is not one")
        if canary.pattern != "dedicated":
            raise ConfigError("gradient canaries need the dedicated canary pattern (one feature column per canary)")


def prepare_canaries(method: Method, task: Task, mode: str, canaries: int, canary: CanaryConfig, canary_type: str,
                     seed: int | RunStreams = 0) -> tuple[CanaryConfig, CanarySet | None]:
    """An audit's canaries, checked and drawn once, before anything is trained: the design ``canary`` (validated;
    ``canary_type`` must apply to ``method`` and to it), for a pooled audit its worst case
    (:func:`audits.pooled.worst_case_design`, node- or feature-level DP-SGD only), and the set
    :func:`draw_canaries` draws for it (None for a non-private method: nothing is audited). Returns the design an
    audit records and the set it runs with."""
    canary.validate()
    check_canary_type(method, canary_type, canary)  # gradient canaries need a DP-SGD method, private or not
    if method.privacy_unit == "none":
        return canary, None
    if mode == "pooled":
        from audits.pooled import worst_case_design

        if method.privacy_unit not in ("node", "feature"):
            raise ConfigError(f"--mode pooled audits node- or feature-level DP-SGD, not "
                              f"{method.privacy_unit}-level {method.name}")
        canary = worst_case_design(method, canary)
    return canary, draw_canaries(method, task, mode, canaries, canary, seed)


def draw_canaries(probe: Method, task: Task, mode: str, canaries: int, canary: CanaryConfig | None = None,
                  seed: int | RunStreams = 0) -> CanarySet:
    """The canaries an audit of ``probe`` in ``mode`` runs with: the design ``canary`` within the method's declared
    degree bound (pooled: its worst case, :func:`audits.pooled.worst_case_design`), drawn from the audit streams'
    ``canaries`` stream. A plan draws them once, so a graph too small for them is an input error before anything is
    trained, and :func:`audit` runs with that set (``canary_set``)."""
    canary = within_declared_bound(canary or CanaryConfig(), probe)
    streams, unit = RunStreams.of(seed), probe.privacy_unit
    if mode == "pooled":
        from audits.pooled import worst_case_design

        return make_canaries(task, unit, canaries, worst_case_design(probe, canary), seed=streams)
    if mode == "multi-run":
        return make_canaries(task, unit, 1, canary, seed=streams)
    return make_canaries(task, unit, canaries, canary, seed=streams, allow_fewer=min(canaries, MIN_CANARIES))


def audit(make_method: Callable[[], Method], task: Task, budget: Budget, mode: str, *, trials: int = 50,
          canaries: int = 200, confidence: float = DEFAULT_CONFIDENCE, canary: CanaryConfig | None = None,
          seed: int | RunStreams = 0, device: Any = "cpu", progress: bool = False,
          canary_type: str = "input", workers: int = 1, canary_set: CanarySet | None = None) -> AuditResult:
    """Audit the method built by ``make_method()`` on ``task`` at ``budget``.

    Randomness: the audit's streams (``seed``) give the canaries' design (``canaries``), the inclusion coins
    and the threshold split (``coins``) and every trained model (``trial``, t, world) independent streams:
    the coins are independent of everything the guesser sees, as the one-run theorem needs.

    multi-run: one canary; ``trials`` models with it and ``trials`` without (seeds differ per trial);
    threshold chosen on half of each world's trials, FPR/FNR bounded on the other half.
    one-run: ``canaries`` canaries, each included independently with probability 1/2, one model.
    canary_type: ``input`` (black box: score = the probe's confidence on the canary's label) or
    ``gradient`` (white box, DP-SGD methods: score = the released noisy gradient at the canary's coordinate).
    ``workers`` (pooled only): fit that many runs at once in worker processes (:func:`audits.pooled.pooled_fits`).
    ``canary_set``: the canaries :func:`draw_canaries` drew for this audit (its plan's); None: drawn here.
    """
    if mode not in MODES:
        raise ConfigError(f"unknown audit mode {mode!r} (choose {', '.join(MODES)})")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1) (got {confidence})")
    if workers != 1 and mode != "pooled":
        raise ConfigError("workers > 1 needs the pooled mode (its runs are independent fits)")
    if mode == "pooled" and canary_type != "gradient":
        raise ConfigError("the pooled mode needs gradient canaries (white box): only their scores are "
                          "independent trials")
    probe = make_method()
    unit = probe.privacy_unit
    # a method that declares a degree bound (relation input-graph) is audited on graphs within it: its claim covers
    # only those, and its fit refuses the others
    asked = canary or CanaryConfig()
    canary = within_declared_bound(asked, probe)
    capped = (f"canary degree {canary.degree} of the {asked.degree} asked for: the method's declared degree bound "
              f"max_degree = {probe.config.max_degree}" if canary.degree < asked.degree else "")
    check_canary_type(probe, canary_type, canary)
    t0 = time.perf_counter()
    if unit == "none" or not budget.is_private:
        why = (f"{probe.name} is not private" if unit == "none" else f"{probe.name} was given no finite epsilon")
        return AuditResult(probe.name, unit, mode, budget.epsilon, budget.delta, math.inf, 0.0, confidence,
                           NOT_APPLICABLE, 0, 0, time.perf_counter() - t0,
                           note=f"{why}: no privacy claim to audit; nothing trained", reason=why)
    streams = RunStreams.of(seed)
    if mode == "pooled":
        from audits.pooled import pooled_audit

        p = pooled_audit(make_method, task, budget, runs=trials, canaries=canaries, confidence=confidence,
                         canary=canary, seed=streams, device=device, progress=progress, workers=workers,
                         canary_set=canary_set)
        reasons = [lb_reason(p.claimed, p.bound.epsilon_lb_cp, "Clopper-Pearson")]
        reasons.append(p.pair_reason() if p.pair_exceeds_claim else "")
        reasons = [r for r in reasons if r]
        return AuditResult(probe.name, unit, mode, budget.epsilon, budget.delta, p.claimed, p.bound.epsilon_lb_cp,
                           confidence, VIOLATION if reasons else PASS, trials, p.canaries,
                           time.perf_counter() - t0, p.details, p.note, "; ".join(reasons))
    if mode == "multi-run":
        if trials < 2:
            raise ConfigError(f"multi-run needs --trials >= 2 (got {trials})")
        cs = canary_set if canary_set is not None else draw_canaries(probe, task, mode, 1, canary, streams)
        scores_in, scores_out, claimed = [], [], 0.0
        bar = progress_bar(2 * trials, f"audit {probe.name} multi-run", progress)
        for t in range(trials):
            for inc, out in ((True, scores_in), (False, scores_out)):
                s, eps = _fit_scores(make_method, cs, np.array([inc]), budget, streams.child("trial", t, int(inc)),
                                     device, canary_type)
                out.append(float(s[0]))
                claimed = max(claimed, eps)
                bar.update(1)
        bar.close()
        bound = multi_run_audit(np.array(scores_in), np.array(scores_out), budget.delta, confidence,
                                streams.numpy("coins", "threshold"))
        details = {"canary_type": canary_type, "bound": bound.to_dict(), "scores_in": scores_in,
                   "scores_out": scores_out,
                   "anchors": cs.anchors, "labels": cs.labels.tolist()}
        return AuditResult(probe.name, unit, mode, budget.epsilon, budget.delta, claimed, bound.epsilon_lb,
                           confidence, verdict(claimed, bound.epsilon_lb), 2 * trials, 1,
                           time.perf_counter() - t0, details, capped, reason=lb_reason(claimed, bound.epsilon_lb))
    if canaries < 2:
        raise ConfigError(f"one-run needs --canaries >= 2 (got {canaries})")
    cs = canary_set if canary_set is not None else draw_canaries(probe, task, mode, canaries, canary, streams)
    canaries = cs.m
    include = inclusion_coins(streams, canaries)
    scores, claimed = _fit_scores(make_method, cs, include, budget, streams.child("trial", 0), device, canary_type,
                                  progress=progress)
    bound = one_run_audit(scores, include, budget.delta, confidence)
    details = {"canary_type": canary_type, "bound": bound.to_dict(), "scores": scores.tolist(),
               "included": include.tolist(),
               "labels": cs.labels.tolist()}
    note = (f"the graph holds {cs.m} hop-disjoint canaries of the {cs.requested} asked for (hops={canary.hops}, "
            f"degree {canary.degree}); audited with {cs.m}" if cs.requested > cs.m else "")
    note = "; ".join(x for x in (note, capped) if x)
    return AuditResult(probe.name, unit, mode, budget.epsilon, budget.delta, claimed, bound.epsilon_lb, confidence,
                       verdict(claimed, bound.epsilon_lb), 1, canaries, time.perf_counter() - t0, details, note,
                       lb_reason(claimed, bound.epsilon_lb))
