"""The fit of a canary world with the gradient-canary hook (:mod:`audits.whitebox`), made once per battery and read
by both white-box canary checks, ``occurrences`` and ``gradient-canaries``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from audits.checks.base import dpsgd_events

RAW_FEATURES = "the DP-SGD examples do not read the raw features"
NO_DPSGD = "the ledger accounts no DP-SGD step (not applicable)"


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
    from audits.canaries import CanaryConfig, make_canaries, within_declared_bound
    from audits.runner import inclusion_coins
    from audits.whitebox import GradientCanaries, canary_columns

    # more fresh anchors than a correct sampler may keep, so a missing occurrence bound shows in the counts; under a
    # declared degree bound (relation input-graph) at most the bound, which a correct sampler keeps in full (every
    # anchor's tree holds the canary: N(K, 1) examples) and the run refuses to exceed
    degree = min(30, max(b.cfg.canary_degree, b.occurrence_bound() + 2))
    m, cfg = b.cfg.m, within_declared_bound(CanaryConfig(hops=0, degree=degree, scale=b.cfg.canary_scale,
                                                         pattern="dedicated", fresh_anchors=True), b.make())
    degree = cfg.degree
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
