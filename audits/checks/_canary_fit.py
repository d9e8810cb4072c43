"""The fit of a canary world with the gradient-canary hook (:mod:`audits.whitebox`), made once per battery and read
by both white-box canary checks, ``occurrences`` and ``gradient-canaries``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from audits.checks._layout import NoLayout
from audits.checks.base import dpsgd_events, not_run, skipped

#: what would make the white-box canary checks run where the inputs' layout could not be traced
TRACE_REMEDY = ("feed the first DP-SGD layer blocks of the raw feature width (a node's own row, aggregates of "
                "others' rows: [x_v | mean x_u], A x), or audit the method with bench audit --level whitebox")
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
    layout: Any = None  # the traced input layout (audits.checks._layout.Layout)


def canary_fit(b) -> CanaryFit | NoLayout:
    """The canary world's fit (once per battery), or why there is none (:class:`NoLayout`): the DP-SGD examples read
    the canaries' data only through noisy releases (not applicable), or which of their input columns carry it could
    not be traced (:func:`audits.checks._layout.trace_layout`: the checks apply and cannot run)."""
    if "canary_fit" in b.shared:
        return b.shared["canary_fit"]
    import numpy as np

    from audits.canaries import CanaryConfig, make_canaries, within_declared_bound
    from audits.checks._layout import Layout, trace_layout
    from audits.runner import inclusion_coins
    from audits.whitebox import GradientCanaries

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
    layout = trace_layout(b, cs.world(np.ones(m, dtype=bool)), s.child("trace"), m)
    if not isinstance(layout, Layout):
        b.shared["canary_fit"] = layout
        return layout
    world = cs.world(include)
    hook = GradientCanaries(layout.positions, layout.width, record_steps=True, lenient=True)
    t0 = time.perf_counter()
    fitted = b.fit(world, s.child("fit"), hook)
    secs = time.perf_counter() - t0
    out = CanaryFit(hook, include, dpsgd_events(fitted.ledger), float(fitted.epsilon(b.budget.delta)), secs, m,
                    degree, layout)
    b.shared["canary_fit"] = out
    return out


def no_canary_fit(name: str, seed: int, why: NoLayout):
    """The row of a white-box canary check that has no canary fit: SKIPPED where it does not apply, not run (a
    remedy, so the headline is INCONCLUSIVE) where the layout could not be traced."""
    if why.applies:
        return not_run(name, seed, f"which input columns carry a node's data could not be traced: {why.reason}",
                       TRACE_REMEDY)
    return skipped(name, seed, why.reason)
