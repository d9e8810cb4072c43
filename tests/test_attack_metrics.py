"""attacks.metrics: hand-computed values, scikit-learn agreement, invariances, bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attacks import metrics as M
from attacks.metrics import _batched_metrics


def test_hand_computed_example():
    # members 0.9, 0.8, 0.4; non-members 0.7, 0.3, 0.2, 0.1
    y = [1, 1, 0, 1, 0, 0, 0]
    s = [0.9, 0.8, 0.7, 0.4, 0.3, 0.2, 0.1]
    # pairs (member > non-member): 0.9 and 0.8 beat all 4; 0.4 beats 3 of 4 -> 11/12
    assert M.auc(y, s) == pytest.approx(11 / 12)
    # FPR <= 1%: no false positive allowed -> threshold 0.8 -> TPR 2/3
    assert M.tpr_at_fpr(y, s, 0.01) == pytest.approx(2 / 3)
    # FPR <= 25%: one of four non-members allowed -> threshold 0.4 -> TPR 1
    assert M.tpr_at_fpr(y, s, 0.25) == pytest.approx(1.0)
    # advantage: threshold 0.4 -> TPR 1, FPR 1/4 -> 3/4
    assert M.advantage(y, s) == pytest.approx(0.75)
    assert M.best_threshold(y, s) == pytest.approx(0.4)
    # threshold 0.75: TPR 2/3, TNR 4/4 -> (2/3 + 1) / 2
    assert M.balanced_accuracy(y, s, 0.75) == pytest.approx(5 / 6)
    assert math.isnan(M.balanced_accuracy(y, s, math.nan))


def test_ties_count_half_and_all_tied_is_chance():
    assert M.auc([1, 0], [0.5, 0.5]) == pytest.approx(0.5)
    # members {1, 1}, non-members {1, 0}: pairs: (1 vs 1) tie x2 = 1, (1 vs 0) win x2 = 2 -> 3/4
    assert M.auc([1, 1, 0, 0], [1, 1, 1, 0]) == pytest.approx(0.75)
    y = np.r_[np.ones(10), np.zeros(30)]
    est = M.evaluate_scores(y, np.zeros(40), threshold=0.0, n_bootstrap=100)
    assert est["auc"].value == est["auc"].low == est["auc"].high == 0.5
    assert est["tpr_at_1pct_fpr"].value == 0.0 and est["advantage"].value == 0.0
    assert est["balanced_accuracy"].value == 0.5  # everything predicted member


def test_low_fpr_uses_whole_counts_of_false_positives():
    # 200 non-members: FPR <= 1% allows 2 false positives; FPR <= 0.1% allows none
    rng = np.random.default_rng(0)
    neg = rng.normal(size=200)
    top = np.sort(neg)[::-1]
    pos = np.array([top[0] + 1.0, (top[1] + top[2]) / 2, (top[2] + top[3]) / 2, top[3] - 1.0])
    y = np.r_[np.ones(4), np.zeros(200)]
    s = np.r_[pos, neg]
    # pos[0] is above every non-member, pos[1] above two, pos[2] above three, pos[3] above 197
    assert M.tpr_at_fpr(y, s, 0.001) == pytest.approx(1 / 4)
    assert M.tpr_at_fpr(y, s, 0.01) == pytest.approx(2 / 4)
    assert M.tpr_at_fpr(y, s, 0.015) == pytest.approx(3 / 4)
    est = M.evaluate_scores(y, s, n_bootstrap=0)
    assert est["tpr_at_0.1pct_fpr"].value == pytest.approx(1 / 4) and est["tpr_at_1pct_fpr"].value == pytest.approx(2 / 4)


@pytest.mark.parametrize("labels,scores,message", [
    ([1, 1, 1], [0.1, 0.2, 0.3], "need members and non-members"),
    ([1, 0], [0.1, float("nan")], "NaN"),
    ([1, 0, 1], [0.1, 0.2], "one length"),
    ([2, 0], [0.1, 0.2], "0 (non-member) or 1"),
])
def test_bad_input_is_a_clear_error(labels, scores, message):
    with pytest.raises(M.MetricError, match=message.replace("(", r"\(").replace(")", r"\)")):
        M.evaluate_scores(labels, scores)


scores_st = st.lists(st.integers(-6, 6), min_size=2, max_size=60)


@st.composite
def games(draw):
    s = draw(scores_st)
    y = draw(st.lists(st.booleans(), min_size=len(s), max_size=len(s)))
    if all(y) or not any(y):
        y[0] = not y[0]
    return np.array(y, dtype=int), np.array(s, dtype=float) / 2.0


@settings(max_examples=150, deadline=None)
@given(games(), st.floats(-4, 4))
def test_vectorised_bootstrap_statistic_equals_sklearn(game, threshold):
    y, s = game
    point = M.point_metrics(y, s, threshold)
    batched = _batched_metrics(s[y == 1][None, :], s[y == 0][None, :], threshold)[:, 0]
    assert np.allclose([point[k] for k in M.METRICS], batched)


@settings(max_examples=100, deadline=None)
@given(games())
def test_auc_invariances(game):
    y, s = game
    a = M.auc(y, s)
    assert M.auc(y, np.exp(s) * 3 + 1) == pytest.approx(a)  # strictly increasing transforms change nothing
    assert M.auc(y, -s) == pytest.approx(1 - a)  # reversing the score mirrors it
    assert M.auc(1 - y, s) == pytest.approx(1 - a)  # so does swapping the roles
    order = np.random.default_rng(0).permutation(y.size)
    assert M.auc(y[order], s[order]) == pytest.approx(a)  # order of candidates is irrelevant
    assert 0.0 <= M.advantage(y, s) <= 1.0
    d = M.advantage(y, s)
    # TPR(f) <= min(1, f + d) along the whole ROC, so AUC <= 1/2 + d - d^2/2
    assert a <= 0.5 + d - d * d / 2 + 1e-12
    assert M.tpr_at_fpr(y, s, 0.001) <= M.tpr_at_fpr(y, s, 0.01) <= M.tpr_at_fpr(y, s, 1.0) == 1.0


@settings(max_examples=25, deadline=None)
@given(games(), st.integers(0, 10_000))
def test_intervals_contain_the_point_and_resample_each_group(game, seed):
    y, s = game
    est = M.evaluate_scores(y, s, threshold=0.0, n_bootstrap=40, seed=seed)
    for e in est.values():
        assert 0.0 <= e.low <= e.high <= 1.0
    # percentile intervals of a stratified bootstrap: when members and non-members are fully separated,
    # every resample stays separated
    if s[y == 1].min() > s[y == 0].max():
        assert est["auc"].low == est["auc"].high == 1.0


def test_interval_width_shrinks_with_more_data():
    rng = np.random.default_rng(1)
    widths = []
    for n in (100, 2000):
        y = np.r_[np.ones(n), np.zeros(n)]
        s = rng.normal(size=2 * n) + 0.5 * y
        e = M.evaluate_scores(y, s, n_bootstrap=200, seed=0)["auc"]
        assert e.low < e.value < e.high
        widths.append(e.high - e.low)
    assert widths[1] < widths[0] / 3  # ~ 1/sqrt(n): sqrt(20) ~ 4.5


def test_bootstrap_is_reproducible_and_can_be_skipped():
    y = np.r_[np.ones(30), np.zeros(30)]
    s = np.linspace(0, 1, 60)[np.random.default_rng(0).permutation(60)]
    a = M.evaluate_scores(y, s, n_bootstrap=50, seed=3)
    b = M.evaluate_scores(y, s, n_bootstrap=50, seed=3)
    assert repr(a) == repr(b)  # repr: NaN fields (balanced accuracy without a threshold) compare equal
    none = M.evaluate_scores(y, s, n_bootstrap=0)
    assert none["auc"].value == a["auc"].value and math.isnan(none["auc"].low)


def test_roc_figure_draws_every_variant():
    y = np.r_[np.ones(20), np.zeros(20)]
    fig = M.roc_figure({"a": (y, np.arange(40.0)), "b": (y, -np.arange(40.0))}, "title")
    lin, log = fig.axes
    labels = [line.get_label() for line in lin.get_lines()]
    assert any(lab.startswith("a (AUC 0.000") for lab in labels) and any(lab.startswith("b (AUC 1.000") for lab in labels)
    assert log.get_xscale() == "log"


def test_roc_point_at_fpr_is_the_point_tpr_at_fpr_reports():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(400), np.zeros(400)]
    s = np.r_[rng.normal(1.5, 1, 400), rng.normal(0, 1, 400)]
    tp, n_pos, fp, n_neg = M.roc_point_at_fpr(y, s, 0.01)
    assert (n_pos, n_neg) == (400, 400) and fp <= 4
    assert tp / n_pos == pytest.approx(M.tpr_at_fpr(y, s, 0.01))


def test_attacks_report_no_epsilon():
    """An attack's game is played against one trained model (not between neighbouring datasets): neither the metrics
    module nor an attack report offers an epsilon, so no table can print one as an attack's."""
    from attacks.base import AttackReport, VariantResult

    assert not [n for n in dir(M) if "epsilon" in n.lower()]
    assert not [k for k in M.METRICS if "eps" in k.lower()]
    y = np.r_[np.ones(50), np.zeros(50)]
    est = M.evaluate_scores(y, np.arange(100.0), 0.5, n_bootstrap=0)
    rep = AttackReport("a", "node", "ok", variants=[VariantResult("v", est, 0.5, y, np.arange(100.0))])
    assert not [k for k in rep.metrics_flat() if "eps" in k.lower()]
