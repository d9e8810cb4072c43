"""Membership-inference metrics with stratified bootstrap 95% intervals, and ROC plots.

Conventions (every attack follows them): ``labels`` are 1 for members and 0 for non-members; a
higher ``score`` means "more likely a member"; a threshold ``t`` predicts "member" when
``score >= t`` (scikit-learn's convention).

* ``auc``: area under the ROC curve (``sklearn.metrics.roc_auc_score``; ties count 1/2).
* ``tpr_at_1pct_fpr``, ``tpr_at_0.1pct_fpr``: the largest TPR of a ROC point whose FPR is at most
  1% (0.1%) (``sklearn.metrics.roc_curve``; Carlini et al. 2022's low-FPR metric). With n
  non-members the estimate rests on floor(0.01 n) false positives: read its interval.
* ``advantage``: Yeom et al.'s membership advantage of the score, max over thresholds of TPR - FPR
  (the best threshold, chosen with the ground truth: a ceiling for this score, not a realised attack).
* ``balanced_accuracy``: (TPR + TNR) / 2 at the attack's own threshold, which the harness chooses on
  the attacker's calibration nodes, never on the evaluated ones (see ``attacks.base``). It is NaN when
  no threshold is given.

No epsilon: an attack plays its game against one trained model (members and non-members are nodes, edges or rows
of that model's data, not neighbouring datasets), so its rates bound no epsilon. Epsilon lower bounds come only
from the audits (``audits``), whose games are between neighbouring datasets.

Intervals: percentile bootstrap (``scipy.stats.bootstrap``) that resamples members and non-members
separately (stratified, so every resample has both), 1000 resamples by default. The point
estimates come from scikit-learn; the bootstrap uses an exact vectorised equivalent
(:func:`_batched_metrics`) that the tests check against scikit-learn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from methods.base import BenchError

#: FPR levels for the low-FPR metrics, and their metric names
FPR_LEVELS: dict[str, float] = {"tpr_at_1pct_fpr": 0.01, "tpr_at_0.1pct_fpr": 0.001}
METRICS: tuple[str, ...] = ("auc", *FPR_LEVELS, "advantage", "balanced_accuracy")
DEFAULT_BOOTSTRAP = 1000
_FPR_SLACK = 1e-12


class MetricError(BenchError, ValueError):
    """Scores or labels that no metric can be computed from (one class, NaN scores, mismatched lengths)."""


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a bootstrap interval at ``confidence``."""

    value: float
    low: float
    high: float
    confidence: float = 0.95

    def __str__(self) -> str:
        if math.isnan(self.value):
            return "n/a"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high, "confidence": self.confidence}


def check_scores(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert to 1-D arrays (labels bool, scores float64)."""
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or s.ndim != 1 or y.shape != s.shape:
        raise MetricError(f"labels and scores must be 1-D of one length (got {y.shape} and {s.shape})")
    if not np.isin(y, (0, 1)).all():
        raise MetricError("labels must be 0 (non-member) or 1 (member)")
    y = y.astype(bool)
    if y.all() or not y.any():
        raise MetricError(f"need members and non-members (got {int(y.sum())} members of {y.size})")
    if not np.isfinite(s).all():
        raise MetricError(f"{int((~np.isfinite(s)).sum())} scores are NaN or infinite")
    return y, s


# --------------------------------------------------------------------------------------
# Point metrics (scikit-learn)
# --------------------------------------------------------------------------------------


def roc(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ROC point (fpr, tpr, thresholds), scikit-learn's ``roc_curve`` without dropping points."""
    from sklearn.metrics import roc_curve

    y, s = check_scores(labels, scores)
    return roc_curve(y, s, drop_intermediate=False)


def auc(labels: Any, scores: Any) -> float:
    from sklearn.metrics import roc_auc_score

    y, s = check_scores(labels, scores)
    return float(roc_auc_score(y, s))


def tpr_at_fpr(labels: Any, scores: Any, fpr: float) -> float:
    """The largest TPR over ROC points with FPR <= ``fpr``."""
    if not 0.0 <= fpr <= 1.0:
        raise MetricError(f"fpr must be in [0, 1] (got {fpr})")
    f, t, _ = roc(labels, scores)
    return float(t[f <= fpr + _FPR_SLACK].max())


def advantage(labels: Any, scores: Any) -> float:
    """max over thresholds of TPR - FPR (>= 0: the threshold +inf gives 0)."""
    f, t, _ = roc(labels, scores)
    return float((t - f).max())


def best_threshold(labels: Any, scores: Any) -> float:
    """The threshold with the largest TPR - FPR (the largest such threshold on ties; +inf if none helps)."""
    f, t, thr = roc(labels, scores)
    return float(thr[int(np.argmax(t - f))])


def balanced_accuracy(labels: Any, scores: Any, threshold: float) -> float:
    """(TPR + TNR) / 2 of the decisions ``score >= threshold`` (``sklearn.metrics.balanced_accuracy_score``)."""
    from sklearn.metrics import balanced_accuracy_score

    y, s = check_scores(labels, scores)
    if math.isnan(threshold):
        return math.nan
    return float(balanced_accuracy_score(y, s >= threshold))


def point_metrics(labels: Any, scores: Any, threshold: float = math.nan) -> dict[str, float]:
    out = {"auc": auc(labels, scores)}
    for name, level in FPR_LEVELS.items():
        out[name] = tpr_at_fpr(labels, scores, level)
    out["advantage"] = advantage(labels, scores)
    out["balanced_accuracy"] = balanced_accuracy(labels, scores, threshold)
    return out


# --------------------------------------------------------------------------------------
# Vectorised metrics for the bootstrap
# --------------------------------------------------------------------------------------


def _batched_metrics(pos: np.ndarray, neg: np.ndarray, threshold: float = math.nan, axis: int = -1) -> np.ndarray:
    """The metrics of :data:`METRICS` for a batch of resamples: ``pos`` [..., n1], ``neg`` [..., n0].

    Returns [len(METRICS), ...]. Equal to :func:`point_metrics` row by row (tested).
    """
    from scipy.stats import rankdata

    pos = np.moveaxis(np.asarray(pos, dtype=np.float64), axis, -1)
    neg = np.moveaxis(np.asarray(neg, dtype=np.float64), axis, -1)
    n1, n0 = pos.shape[-1], neg.shape[-1]
    z = np.concatenate([pos, neg], axis=-1)
    # AUC = Mann-Whitney U / (n1 n0) with average ranks (ties count 1/2)
    ranks = rankdata(z, axis=-1)
    auc_ = (ranks[..., :n1].sum(-1) - n1 * (n1 + 1) / 2.0) / (n1 * n0)
    # ROC points: sort descending; a threshold can only sit at the end of a group of tied scores
    order = np.argsort(-z, axis=-1, kind="stable")
    zs = np.take_along_axis(z, order, -1)
    member = order < n1
    tps = np.cumsum(member, axis=-1)
    fps = np.cumsum(~member, axis=-1)
    end = np.ones(zs.shape, dtype=bool)
    end[..., :-1] = zs[..., :-1] != zs[..., 1:]
    tpr, fpr = tps / n1, fps / n0
    out = [auc_]
    for level in FPR_LEVELS.values():
        ok = end & (fps <= math.floor(level * n0 + 1e-9))
        out.append(np.where(ok, tpr, 0.0).max(-1))
    out.append(np.where(end, tpr - fpr, 0.0).max(-1))
    if math.isnan(threshold):
        out.append(np.full(auc_.shape, math.nan))
    else:
        out.append(((pos >= threshold).mean(-1) + (neg < threshold).mean(-1)) / 2.0)
    return np.stack(out)


def evaluate_scores(labels: Any, scores: Any, threshold: float = math.nan, n_bootstrap: int = DEFAULT_BOOTSTRAP,
                    confidence: float = 0.95, seed: int = 0) -> dict[str, Estimate]:
    """Every metric of :data:`METRICS` with a stratified percentile-bootstrap interval.

    ``n_bootstrap=0`` skips the bootstrap (intervals are NaN).
    """
    from scipy.stats import bootstrap

    y, s = check_scores(labels, scores)
    point = point_metrics(y, s, threshold)
    if n_bootstrap < 0:
        raise MetricError(f"n_bootstrap must be >= 0 (got {n_bootstrap})")
    if n_bootstrap == 0:
        return {k: Estimate(v, math.nan, math.nan, confidence) for k, v in point.items()}
    # scipy needs two observations per sample; one repeated twice resamples identically (always itself)
    pos, neg = (a if a.size > 1 else np.repeat(a, 2) for a in (s[y], s[~y]))
    batch = max(1, 2_000_000 // s.size)
    # without a threshold balanced accuracy is reported as NaN; bootstrap a finite stand-in (discarded below)
    thr = 0.0 if math.isnan(threshold) else threshold
    res = bootstrap((pos, neg), lambda a, b, axis=-1: _batched_metrics(a, b, thr, axis), vectorized=True,
                    paired=False, n_resamples=int(n_bootstrap), confidence_level=confidence, method="percentile",
                    rng=np.random.default_rng(seed), batch=batch)
    lo, hi = res.confidence_interval
    out = {}
    for i, k in enumerate(METRICS):
        if math.isnan(point[k]):
            out[k] = Estimate(math.nan, math.nan, math.nan, confidence)
        else:
            out[k] = Estimate(point[k], float(lo[i]), float(hi[i]), confidence)
    return out


# --------------------------------------------------------------------------------------
# The ROC point behind TPR at low FPR
# --------------------------------------------------------------------------------------


def roc_point_at_fpr(labels: Any, scores: Any, fpr: float = 0.01) -> tuple[int, int, int, int]:
    """``(tp, n_pos, fp, n_neg)`` of the ROC point with the largest TPR among those with FPR <= ``fpr`` (the
    point :func:`tpr_at_fpr` reports)."""
    y, _ = check_scores(labels, scores)
    f, t, _ = roc(labels, scores)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    ok = np.flatnonzero(f <= fpr + _FPR_SLACK)
    i = ok[np.argmax(t[ok])]
    return int(round(t[i] * n_pos)), n_pos, int(round(f[i] * n_neg)), n_neg


# --------------------------------------------------------------------------------------
# ROC plots
# --------------------------------------------------------------------------------------


def roc_figure(curves: dict[str, tuple[Any, Any]], title: str = ""):
    """A matplotlib figure with the ROC of every ``name -> (labels, scores)``: linear and log-log axes.

    The log-log panel shows the low-FPR regime (Carlini et al. 2022); the diagonal is chance.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.5))
    ax_lin, ax_log = fig.subplots(1, 2)
    for name, (labels, scores) in curves.items():
        f, t, _ = roc(labels, scores)
        label = f"{name} (AUC {auc(labels, scores):.3f})"
        ax_lin.plot(f, t, label=label, lw=1.2)
        y = np.asarray(labels).astype(bool)
        ax_log.plot(np.maximum(f, 0.5 / (~y).sum()), np.maximum(t, 0.5 / y.sum()), lw=1.2, label=name)
    for ax in (ax_lin, ax_log):
        ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=0.8)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
    ax_lin.set_xlim(0, 1)
    ax_lin.set_ylim(0, 1)
    ax_log.set_xscale("log")
    ax_log.set_yscale("log")
    ax_log.set_title("log-log (zero rates drawn at half a count)", fontsize=9)
    ax_lin.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


__all__ = ["DEFAULT_BOOTSTRAP", "Estimate", "FPR_LEVELS", "METRICS", "MetricError", "advantage", "auc",
           "balanced_accuracy", "best_threshold", "check_scores", "evaluate_scores", "point_metrics", "roc", "roc_figure", "roc_point_at_fpr", "tpr_at_fpr"]
