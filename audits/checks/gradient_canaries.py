"""``gradient-canaries``: a one-run white-box audit (Steinke, Nasr & Jagielski 2023) with Dirac gradient canaries
on coordinates no other example touches, scored with the likelihood-ratio statistic (:mod:`audits.whitebox`); the
bound is compared with the ledger's epsilon of the canary world's fit (never the target). Its fit is shared with
the ``occurrences`` check (:mod:`audits.checks._canary_fit`)."""

from __future__ import annotations

from audits.checks._canary_fit import NO_DPSGD, CanaryFit, canary_fit, no_canary_fit
from audits.checks.base import DPSGD_KINDS, PASS, VIOLATION, Check, inclusion_rate
from audits.checks.registry import register

@register("gradient-canaries", order=9, units={"node", "feature"}, kinds=DPSGD_KINDS, statistical=True, group="white-box",
          no_kind=NO_DPSGD)
def gradient_canaries(b, alpha: float) -> Check:
    from audits.bounds import one_run_audit

    f = canary_fit(b)
    if not isinstance(f, CanaryFit):
        return no_canary_fit("gradient-canaries", b.seed, f)
    rate = inclusion_rate(f.events) if f.events else 0.5
    scores = f.hook.likelihood_scores(rate).numpy()
    bound = one_run_audit(scores, f.include, b.budget.delta, 1 - alpha)
    bad = bound.epsilon_lb > f.claimed * (1 + 1e-9) + 1e-12
    return Check("gradient-canaries", b.seed, VIOLATION if bad else PASS,
                 f"epsilon_lb {bound.epsilon_lb:.4g} ({f.canaries} canaries, {f.hook.steps} steps)",
                 f"<= claimed {f.claimed:.4g} at {1 - alpha:.4g}", "", alpha=alpha, seconds=f.seconds,
                 data={"epsilon_lb": bound.epsilon_lb, "claimed": f.claimed, "bound": bound.to_dict()})
