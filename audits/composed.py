"""A white-box lower bound for a whole ledger: mechanism-level audits of its events, composed in one currency.

The adversary of the white-box threat model sees every release the ledger records; a lower bound for any subset
of those releases is a lower bound for the whole (it may ignore the rest). Each covered event is audited through
the methods' code at its own parameters (:func:`audits.mechanism.audit_mechanism`), on the worst-case pair the
ledger's accountant assumes for every release of it, and stands in the composition for a LOWER-BOUND MECHANISM:
a pair of worlds that is a post-processing of the release. Composing post-processings gives a post-processing of
the composition, so the composed lower-bound mechanisms' epsilon at delta never exceeds the ledger's releases'
(the data-processing inequality of the hockey-stick divergence). Two bounds, each named for what it assumes:

* ``epsilon_lb_cp`` (assumes nothing): every release as its audit's :meth:`~audits.mechanism.MechanismAudit.
  lower_bound_pair`, the least informative pair meeting its tests' Clopper-Pearson bounds. Whenever those bounds
  hold, the release's tradeoff function lies below the pair's, so the pair is a post-processing of it (Blackwell's
  theorem; Dong, Roth & Su 2022, Theorem 2.10);
* ``epsilon_lb_fdp`` (f-DP): a Gaussian release (GAP/ProGAP's NAP, edge or node level) as N(0, 1) against
  N(mu_lb, 1) at its audited strength bound (assumes a Gaussian trade-off), EdgeRand's randomized response as
  epsilon-RR at its bound (assumes the randomized-response trade-off), every other release (EdgeRand's Laplace
  count, an answered query) as its lower-bound pair: a Laplace count is not randomized response, so its RR bound
  would overstate a composition.

The parts are composed as privacy-loss distributions (:func:`audits.exact.pair_epsilon`: dp-accounting, each part
``count`` times, optimistic discretisation, which only lowers the result) and converted to epsilon at delta, both
directions. Never a sum of per-release epsilons: a pure epsilon and a Gaussian's epsilon at delta do not add
(the composition of (e1, 0) and (e2, delta) is usually not e1 + e2 at delta). The component audits share
``1 - confidence`` by Bonferroni, so every lower-bound pair holds at once and both bounds hold at ``confidence``.

Covered: Gaussian releases; EdgeRand's pure releases of one edge; answered queries of one unit (PATE: two Laplace
events per query; PrivGNN: one Poisson-Laplace event per query), each a released label, whose one-query audit is
the channel's. Every other event (DP-SGD steps) is left out and named: DP-SGD runs have their own whole-run audit
(:mod:`audits.pooled`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from audits.mechanism import CP_ASSUMES, MECHANISMS, GaussianFamily, audit_mechanism, mechanism_for
from methods.privacy.events import Gaussian, Laplace, RandomizedResponse

#: trials per world and half of each component audit (a few seconds each)
TRIALS = 100_000
#: what the f-DP bound assumes
FDP_ASSUMES = ("a Gaussian trade-off for the Gaussian releases and the randomized-response trade-off for "
               "randomized response; the other releases as measured")


@dataclass
class LedgerBound:
    epsilon_lb_cp: float  # assumption-free: the lower-bound pairs composed
    epsilon_lb_fdp: float  # f-DP: assumes FDP_ASSUMES
    claimed: float  # the ledger's epsilon at delta
    covered: list[str] = field(default_factory=list)  # "kind x count (mechanism: bounds)" of the events composed
    left_out: list[str] = field(default_factory=list)  # the events no composed bound covers
    seconds: float = 0.0
    confidence: float = 0.95
    fdp_assumes: str = FDP_ASSUMES
    cp_assumes: str = CP_ASSUMES

    @property
    def epsilon_lb(self) -> float:
        """Legacy name (records before both bounds were kept): the f-DP bound. Read the two named fields."""
        return self.epsilon_lb_fdp

    def _over(self, lb: float) -> float:
        return lb / self.claimed if self.claimed > 0 and math.isfinite(self.claimed) else math.nan

    @property
    def ratio_cp(self) -> float:
        return self._over(self.epsilon_lb_cp)

    @property
    def ratio_fdp(self) -> float:
        return self._over(self.epsilon_lb_fdp)

    def to_dict(self) -> dict:
        return {**asdict(self), "ratio_cp": self.ratio_cp, "ratio_fdp": self.ratio_fdp}

    @classmethod
    def from_dict(cls, d: dict) -> "LedgerBound":
        """A record of either form: one with both bounds, or an older one with a single ``epsilon_lb`` (the
        composition of f-DP and pure bounds it then held; its assumption-free bound is unknown: NaN)."""
        fdp = d.get("epsilon_lb_fdp", d.get("epsilon_lb", math.nan))
        known = {k: d[k] for k in ("covered", "left_out", "seconds", "confidence", "fdp_assumes") if k in d}
        if "epsilon_lb_fdp" not in d:
            known["fdp_assumes"] = "a Gaussian trade-off for the Gaussian releases (older record: pure bounds summed)"
        return cls(float(d.get("epsilon_lb_cp", math.nan)), float(fdp), float(d["claimed"]), **known)


def ledger_bound(ledger, delta: float, *, trials: int = TRIALS, seed: int = 0,
                 confidence: float = 0.95) -> LedgerBound:
    """The composed white-box lower bounds of ``ledger`` at ``delta`` (see the module docstring), at
    ``confidence`` together."""
    from audits.exact import GaussianPart, pair_epsilon

    plan, left_out = [], []
    for i, e in enumerate(ledger.events):
        name = mechanism_for(e)
        queries = (e.count if name == "privgnn-posterior" else e.count // 2) if name in ("pate-votes",
                                                                                       "privgnn-posterior") else 0
        if queries or (name is not None and (isinstance(e, Gaussian) or (
                isinstance(e, (RandomizedResponse, Laplace)) and e.unit == "edge"))):
            plan.append((i, e, name, queries))
        else:
            left_out.append(f"{e.kind} x {e.count}")
    each = 1.0 - (1.0 - confidence) / max(1, len(plan))  # Bonferroni over the component audits
    cp_parts, fdp_parts, covered, secs = [], [], [], 0.0
    for i, e, name, queries in plan:
        label = f"{e.kind} x {e.count}"
        if queries:
            a = _query_audit(e, name, delta, seed + i, each)
            pair = (*a.lower_bound_pair(), queries)
            cp_parts.append(pair)
            fdp_parts.append(pair)  # a released label: its measured channel is the whole release
            covered.append(f"{label} ({name}, {queries} queries: one query CP {a.epsilon_lb_cp:.4g} of "
                           f"{a.epsilon_claimed:.4g})")
        elif isinstance(e, Gaussian):
            mu = e.sensitivity / e.sigma
            a = audit_mechanism(name, GaussianFamily().epsilon(mu, delta), delta=delta, trials=trials, seed=seed + i,
                                confidence=each)
            cp_parts.append((*a.lower_bound_pair(), e.count))
            fdp_parts.append(GaussianPart(a.strength_lb, e.count))
            covered.append(f"{label} ({name}: CP {a.epsilon_lb_cp:.4g}, f-DP mu {a.strength_lb:.4g} of {mu:.4g})")
        else:
            claim = e.pure_epsilon()  # randomized response's epsilon, a Laplace release's sensitivity / scale
            a = audit_mechanism(name, claim, delta=delta, trials=min(trials, MECHANISMS[name].trials),
                                seed=seed + i, confidence=each)
            cp_parts.append((*a.lower_bound_pair(), e.count))
            if isinstance(e, RandomizedResponse):
                p = 1.0 / (1.0 + math.exp(-a.epsilon_lb_fdp))
                fdp_parts.append((np.array([p, 1.0 - p]), np.array([1.0 - p, p]), e.count))
            else:
                fdp_parts.append(cp_parts[-1])
            covered.append(f"{label} ({name}: CP {a.epsilon_lb_cp:.4g}, f-DP {a.epsilon_lb_fdp:.4g} of {claim:.4g})")
        secs += a.seconds
    cp = pair_epsilon(cp_parts, delta) if cp_parts else 0.0
    fdp = pair_epsilon(fdp_parts, delta) if fdp_parts else 0.0
    return LedgerBound(cp, fdp, float(ledger.epsilon(delta)), covered, left_out, secs, confidence)


def _query_audit(event, name: str, delta: float, seed: int, confidence: float):
    """The audit of one of the event's queries at its own parameters."""
    from audits.mechanism import privgnn_posterior

    if name == "pate-votes":  # two Laplace(b) counts of sensitivity 1 per query: pure 2 / b each
        per_query, mech = 2.0 * event.sensitivity / event.scale, None
    else:  # PoissonLaplace: base epsilon sensitivity / scale, amplified by the rate
        mech = privgnn_posterior(event.rate)
        per_query = mech.family.epsilon(event.sensitivity / event.scale, delta)
    # the mechanism's own trial count: a query's channel is close to even, and its two ends need all of them
    return audit_mechanism(name, per_query, delta=delta, trials=MECHANISMS[name].trials, seed=seed,
                           confidence=confidence, mechanism=mech)


def binary_composition(p: float, c: float, count: int, delta: float) -> float:
    """The exact epsilon at ``delta`` of ``count`` independent uses of a binary channel that answers 1 with
    probability ``p`` in one world and ``c`` in the other (both directions; dp-accounting's PLD, optimistic
    rounding, so never above the true value); 0 when p <= c."""
    from audits.exact import pair_epsilon

    if not p > c:
        return 0.0
    return pair_epsilon([(np.array([1.0 - p, p]), np.array([1.0 - c, c]), count)], delta)


__all__ = ["FDP_ASSUMES", "LedgerBound", "binary_composition", "ledger_bound"]
