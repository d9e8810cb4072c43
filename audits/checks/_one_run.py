"""The black-box one-run audit (Steinke, Nasr & Jagielski 2023) that ``input-canaries`` and ``edge-canaries``
share: canaries of the method's unit with dedicated feature columns, probes scored on the released model, the
bound compared with the ledger's epsilon of the canary world's fit (never the target)."""

from __future__ import annotations

from audits.checks.base import PASS, VIOLATION, Check, timed


def one_run_canaries(b, alpha: float, name: str) -> Check:
    from audits.bounds import one_run_audit
    from audits.canaries import CanaryConfig, make_canaries, within_declared_bound
    from audits.runner import _fit_scores, inclusion_coins

    m = b.cfg.m
    degree = b.cfg.canary_degree
    if b.unit != "edge" and b.occurrence_bound() > 1:
        # a subgraph sampler: as many anchors as the ledger lets the canary reach (it is in N(K, r) examples)
        degree = min(30, max(degree, b.occurrence_bound() - 1))
    cfg = within_declared_bound(CanaryConfig(hops=0, degree=degree, scale=b.cfg.canary_scale, pattern="dedicated",
                                             fresh_anchors=b.unit != "edge" and degree > 0), b.make())  # D at most
    s = b.streams.child(name)
    cs = make_canaries(b.task, b.unit, m, cfg, seed=s)
    include = inclusion_coins(s, m)
    (scores, claimed), secs = timed(lambda: _fit_scores(b.make, cs, include, b.budget, s.child("fit"),
                                                        b.cfg.device, "input"))
    bound = one_run_audit(scores, include, b.budget.delta, 1 - alpha)
    bad = bound.epsilon_lb > claimed * (1 + 1e-9) + 1e-12
    return Check(name, b.seed, VIOLATION if bad else PASS, f"epsilon_lb {bound.epsilon_lb:.4g} ({m} canaries)",
                 f"<= claimed {claimed:.4g} at {1 - alpha:.4g}", "", alpha=alpha, seconds=secs,
                 data={"epsilon_lb": bound.epsilon_lb, "claimed": claimed, "bound": bound.to_dict()})
