"""A white-box lower bound for a whole ledger, from mechanism-level audits of its events, composed where the
theory makes composing lower bounds exact.

The adversary of the white-box threat model sees every release the ledger records; a lower bound for any subset
of those releases is a lower bound for the whole (it may ignore the rest). Two kinds of events compose:

* Gaussian releases (GAP/ProGAP's NAP, edge or node level): each is audited through the methods' own NAP on its
  worst-case pair at the event's own mu = sensitivity / sigma (:func:`audits.mechanism.audit_mechanism`), and the
  f-DP strength bounds compose as GDP: mu = sqrt(sum_i count_i mu_i^2) for non-adaptive Gaussian releases
  (Dong, Roth & Su 2022, Corollary 3.3). This assumes the GDP shape, as the mechanism audit's f-DP bound does.
* pure releases of one unit, each once (EdgeRand's randomized response and Laplace edge count): the product of the
  per-release threshold tests is a test of the composition whose likelihood ratio bound is the product of theirs,
  so the pure lower bounds add.

* answered queries of one unit (PATE's noisy argmax: two Laplace events per query; PrivGNN's Poisson-subsampled
  noisy posterior argmax): each query releases a label, so one query is a binary channel, and the audit of one
  query at its own parameters gives, at its confidence, P_in[answer] >= p and P_out[answer] <= c (the Clopper-
  Pearson ends of its test). Q queries answered with independent noise on the same worst-case pair (the adversary
  chooses them) are the Q-fold product of that channel, and a channel with rates (p, c) is a post-processing of
  any channel with rates further apart, so the exact epsilon of Bernoulli(p) vs Bernoulli(c) composed Q times
  (dp-accounting's PLD, optimistic) is a lower bound on the queries' epsilon.

Every other event (DP-SGD steps) is left out: the result says which, so a reader sees what the number covers.
DP-SGD runs have their own whole-run audit (:mod:`audits.pooled`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from audits.mechanism import MECHANISMS, GaussianFamily, audit_mechanism, mechanism_for

#: trials per world and half of each component audit (a few seconds each)
TRIALS = 100_000


@dataclass
class LedgerBound:
    epsilon_lb: float  # the composed white-box lower bound (f-DP estimator for Gaussian parts)
    claimed: float  # the ledger's epsilon at delta
    covered: list[str] = field(default_factory=list)  # "kind x count (mechanism)" of the events composed
    left_out: list[str] = field(default_factory=list)  # the events no composed bound covers
    seconds: float = 0.0

    @property
    def ratio(self) -> float:
        return self.epsilon_lb / self.claimed if self.claimed > 0 else math.nan

    def to_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}


def ledger_bound(ledger, delta: float, *, trials: int = TRIALS, seed: int = 0,
                 confidence: float = 0.95) -> LedgerBound:
    """The composed white-box lower bound of ``ledger`` at ``delta`` (see the module docstring). Each component
    audit holds at ``confidence`` on its own (a bound for reading, not a verdict)."""
    gauss = GaussianFamily()
    mu2, pure, secs = 0.0, 0.0, 0.0
    covered, left_out = [], []
    pure_events = [e for e in ledger.events if e.kind in ("randomized_response", "laplace") and e.unit == "edge"]
    queries = 0.0
    for i, e in enumerate(ledger.events):
        name = mechanism_for(e)
        label = f"{e.kind} x {e.count}"
        if name in ("pate-votes", "privgnn-posterior") and (e.count if name == "privgnn-posterior" else e.count // 2):
            q, a = _query_audit(e, name, delta, seed + i, confidence)
            queries = max(queries, q)  # one family of queries per ledger (PATE or PrivGNN): the larger bound
            secs += a.seconds
            covered.append(f"{label} ({name}: {q:.4g} over {e.count if name == 'privgnn-posterior' else e.count // 2}"
                           " queries)")
            continue
        if e.kind == "gaussian" and name is not None:
            mu = e.sensitivity / e.sigma
            a = audit_mechanism(name, gauss.epsilon(mu, delta), delta=delta, trials=trials, seed=seed + i,
                                confidence=confidence)
            mu2 += e.count * a.strength_lb ** 2
            secs += a.seconds
            covered.append(f"{label} ({name}: mu {a.strength_lb:.4g} of {mu:.4g})")
        elif e in pure_events and e.count == 1 and name is not None:
            claim = e.epsilon if e.kind == "randomized_response" else e.sensitivity / e.scale
            a = audit_mechanism(name, claim, delta=delta, trials=min(trials, MECHANISMS[name].trials),
                                seed=seed + i, confidence=confidence)
            pure += max(a.epsilon_lb_cp, a.epsilon_lb_fdp)
            secs += a.seconds
            covered.append(f"{label} ({name}: {max(a.epsilon_lb_cp, a.epsilon_lb_fdp):.4g} of {claim:.4g})")
        else:
            left_out.append(label)
    lb = gauss.epsilon(math.sqrt(mu2), delta) + pure + queries if covered else 0.0
    return LedgerBound(lb, float(ledger.epsilon(delta)), covered, left_out, secs)


def _query_audit(event, name: str, delta: float, seed: int, confidence: float):
    """(the lower bound of the event's queries composed, the one-query audit); see the module docstring."""
    from audits.mechanism import privgnn_posterior

    if name == "pate-votes":  # two Laplace(b) counts of sensitivity 1 per query: pure 2 / b each
        per_query, count, mech = 2.0 * event.sensitivity / event.scale, event.count // 2, None
    else:  # PoissonLaplace: base epsilon sensitivity / scale, amplified by the rate
        mech = privgnn_posterior(event.rate)
        per_query, count = mech.family.epsilon(event.sensitivity / event.scale, delta), event.count
    # the mechanism's own trial count: a query's channel is close to even, and its two ends need all of them
    a = audit_mechanism(name, per_query, delta=delta, trials=MECHANISMS[name].trials, seed=seed,
                        confidence=confidence, mechanism=mech)
    return binary_composition(1.0 - a.fnr_upper, a.fpr_upper, count, delta), a


def binary_composition(p: float, c: float, count: int, delta: float) -> float:
    """The exact epsilon at ``delta`` of ``count`` independent uses of a binary channel that answers 1 with
    probability ``p`` in one world and ``c`` in the other (both directions; dp-accounting's PLD, optimistic
    rounding, so never above the true value); 0 when p <= c."""
    from audits.exact import pair_epsilon

    if not p > c:
        return 0.0
    return pair_epsilon([(np.array([1.0 - p, p]), np.array([1.0 - c, c]), count)], delta)


__all__ = ["LedgerBound", "binary_composition", "ledger_bound"]
