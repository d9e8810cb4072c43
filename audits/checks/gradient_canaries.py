"""``gradient-canaries``: a one-run white-box audit (Steinke, Nasr & Jagielski 2023) with Dirac gradient canaries
on coordinates no other example touches, scored with the likelihood-ratio statistic (:mod:`audits.whitebox`); the
bound is compared with the ledger's epsilon of the canary world's fit (never the target). Its fit is shared with
the ``occurrences`` check (:func:`canary_fit`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from audits.checks.base import DPSGD_KINDS, PASS, VIOLATION, Check, dpsgd_events, inclusion_rate, skipped
from audits.checks.registry import register

RAW_FEATURES = "the DP-SGD examples do not read the raw features"
NO_DPSGD = "no noisy DP-SGD step through methods.dpsgd"


@dataclass
class CanaryFit:
    """One fit of a canary world with the gradient-canary hook: what both white-box canary checks read."""

    hook: Any
    include: Any
    events: list
    claimed: float
    seconds: float
    canaries: int
    degree: int


def canary_fit(b) -> CanaryFit | None:
    """The canary world's fit (once per battery), or None where the DP-SGD examples do not read the raw features
    (no canary column to watch)."""
    if "canary_fit" in b.shared:
        return b.shared["canary_fit"]
    if b.probe.first_layer_width != b.task.num_features:
        b.shared["canary_fit"] = None
        return None
    from audits.canaries import CanaryConfig, make_canaries
    from audits.runner import inclusion_coins
    from audits.whitebox import GradientCanaries, canary_columns

    # more fresh anchors than a correct sampler may keep, so a missing occurrence bound shows in the counts
    degree = min(30, max(b.cfg.canary_degree, b.occurrence_bound() + 2))
    m, cfg = b.cfg.m, CanaryConfig(hops=0, degree=degree, scale=b.cfg.canary_scale, pattern="dedicated",
                                   fresh_anchors=True)
    s = b.streams.child("gradient-canaries")
    unit = "feature" if b.unit == "feature" else "node"
    cs = make_canaries(b.task, unit, m, cfg, seed=s)
    include = inclusion_coins(s, m)
    world = cs.world(include)
    hook = GradientCanaries(canary_columns(world.num_features, m), world.num_features, record_steps=True,
                            lenient=True)
    t0 = time.perf_counter()
    fitted = b.fit(world, s.child("fit"), hook)
    secs = time.perf_counter() - t0
    out = CanaryFit(hook, include, dpsgd_events(fitted.ledger), float(fitted.epsilon(b.budget.delta)), secs, m,
                    degree)
    b.shared["canary_fit"] = out
    return out


@register("gradient-canaries", units={"node", "feature"}, kinds=DPSGD_KINDS, statistical=True, group="white-box",
          no_kind=NO_DPSGD)
def gradient_canaries(b, alpha: float) -> Check:
    from audits.bounds import one_run_audit

    f = canary_fit(b)
    if f is None:
        return skipped("gradient-canaries", b.seed, RAW_FEATURES)
    rate = inclusion_rate(f.events) if f.events else 0.5
    scores = f.hook.likelihood_scores(rate).numpy()
    bound = one_run_audit(scores, f.include, b.budget.delta, 1 - alpha)
    bad = bound.epsilon_lb > f.claimed * (1 + 1e-9) + 1e-12
    return Check("gradient-canaries", b.seed, VIOLATION if bad else PASS,
                 f"epsilon_lb {bound.epsilon_lb:.4g} ({f.canaries} canaries, {f.hook.steps} steps)",
                 f"<= claimed {f.claimed:.4g} at {1 - alpha:.4g}", "", alpha=alpha, seconds=f.seconds,
                 data={"epsilon_lb": bound.epsilon_lb, "claimed": f.claimed, "bound": bound.to_dict()})
