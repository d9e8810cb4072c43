"""How a mechanism audit picks its tests on the selection half and bounds their rates (shared by the audit driver,
:mod:`audits.mechanism`, and the gadget search, :mod:`audits.mechanisms._search`, which must rank candidates exactly
as the driver then tests them)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from audits.mechanisms.families import Family

DEFAULT_DELTA = 1e-5


def _upper(k: np.ndarray, n: int, confidence: float) -> np.ndarray:
    """Vectorised one-sided Clopper-Pearson upper bounds (1 where k = n)."""
    k = np.asarray(k)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(confidence, k + 1, np.maximum(n - k, 1))
    return np.where(k >= n, 1.0, out)


def _rates(scores_in, scores_out, thresholds, direction):
    """(FP, FN) counts of "in iff direction * score >= direction * t" for every t."""
    si, so = np.sort(direction * scores_in), np.sort(direction * scores_out)
    t = direction * thresholds
    fp = so.size - np.searchsorted(so, t, side="left")
    fn = np.searchsorted(si, t, side="left")
    return fp, fn


def _cp_epsilon(alpha: np.ndarray, beta: np.ndarray, delta: float) -> np.ndarray:
    """:func:`audits.bounds.epsilon_from_rates`, vectorised."""
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(1.0 - delta - alpha > 0, np.log(np.maximum(1.0 - delta - alpha, 1e-300) / beta), 0.0)
        b = np.where(1.0 - delta - beta > 0, np.log(np.maximum(1.0 - delta - beta, 1e-300) / alpha), 0.0)
    return np.maximum(0.0, np.maximum(a, b))


#: candidate thresholds: this many quantiles of the pooled selection scores (few enough that the selection
#: half's winner's curse stays small)
QUANTILES = 65
#: the CP test's candidates: this many geometrically spaced order statistics from each end of each world's
#: selection scores (the bound lives in the tails, where the two worlds' rates differ by e^epsilon)
TAIL_CANDIDATES = 100
#: the CP test is chosen on the selection half with Clopper-Pearson bounds this much stricter (1 - confidence
#: divided by it) than the evaluation's: it prefers thresholds with more errors to count, whose bound holds up on
#: the other half (the selection half's best with the evaluation's level overfits its few tail errors)
SELECT_STRICTNESS = 1000.0


def _candidates(sel_in: np.ndarray, sel_out: np.ndarray) -> np.ndarray:
    pooled = np.concatenate([sel_in, sel_out])
    mids = np.unique(pooled)
    if mids.size <= 64:  # a discrete score: every split between two values
        cand = (mids[1:] + mids[:-1]) / 2.0
        return cand if cand.size else np.array([pooled[0]])
    return np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, QUANTILES)))


def _select(family: Family, sel_in, sel_out, per: float) -> tuple[float, int]:
    """The test (threshold, direction) whose Clopper-Pearson point rules out the most of the family, on the
    selection half."""
    cand = _candidates(sel_in, sel_out)
    best = (-1.0, 0.0, 1)
    for direction in (1, -1):
        fp, fn = _rates(sel_in, sel_out, cand, direction)
        s = family.strength_bound(_upper(fp, sel_out.size, per), _upper(fn, sel_in.size, per))
        i = int(np.argmax(s))
        if s[i] > best[0]:
            best = (float(s[i]), float(cand[i]), direction)
    return best[1], best[2]


def _select_cp(sel_in, sel_out, per: float, delta: float) -> tuple[float, int]:
    """The test (threshold, direction) with the largest assumption-free bound on the selection half (at the
    stricter level of :data:`SELECT_STRICTNESS`), among the quantiles and the tails' order statistics."""
    cand = _candidates(sel_in, sel_out)
    if np.unique(np.concatenate([sel_in, sel_out])).size > 64:
        tails = []
        for x in (np.sort(sel_in), np.sort(sel_out)):
            pos = np.unique(np.geomspace(1, x.size, TAIL_CANDIDATES).astype(int)) - 1
            tails += [x[pos], x[x.size - 1 - pos]]
        cand = np.unique(np.concatenate([cand, *tails]))
    strict = 1.0 - (1.0 - per) / SELECT_STRICTNESS
    best = (-1.0, 0.0, 1)
    for direction in (1, -1):
        fp, fn = _rates(sel_in, sel_out, cand, direction)
        e = _cp_epsilon(_upper(fp, sel_out.size, strict), _upper(fn, sel_in.size, strict), delta)
        i = int(np.argmax(e))
        if e[i] > best[0]:
            best = (float(e[i]), float(cand[i]), direction)
    return best[1], best[2]
