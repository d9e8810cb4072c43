"""``occurrences``: how often a canary node's data enters the DP-SGD batches (counted through its dedicated feature
column, wherever the traced input layout carries it: the node's own row or other nodes' examples that read it,
:mod:`audits.checks._layout`; each canary gets fresh anchors, more than the ledger's occurrence bound allows a correct sampler to keep)
against what the ledger's sampling model allows: one example per unit at rate q (Poisson, fixed size), or N(K, r)
examples at rate m / N (DP-GNN); a Chernoff bound gives the p-value. It reads the gradient-canary fit."""

from __future__ import annotations

from audits.checks.base import (DPSGD_KINDS, PASS, TOLERANCE, VIOLATION, Check, allowance, chernoff_sf,
                                torch_bool)
from audits.checks._canary_fit import NO_DPSGD, CanaryFit, canary_fit, no_canary_fit
from audits.checks.registry import register


@register("occurrences", order=8, units={"node", "feature"}, kinds=DPSGD_KINDS, statistical=True, group="white-box",
          no_kind=NO_DPSGD)
def occurrences(b, alpha: float) -> Check:
    f = canary_fit(b)
    if not isinstance(f, CanaryFit):
        return no_canary_fit("occurrences", b.seed, f)
    hook = f.hook
    p, occ = allowance(f.events) if f.events else (1.0, 1)
    inc = torch_bool(f.include)
    drawn = float(hook.occurrences[inc].sum())
    n = float(inc.sum()) * hook.steps * occ
    allowed = min(1.0, p * (1 + TOLERANCE))
    p_value = chernoff_sf(drawn, n, allowed)
    worst = int(hook.max_per_step.max()) if hook.steps else 0
    problems = []
    if p_value < alpha:
        problems.append(f"{drawn:.0f} canary examples drawn where the ledger allows {n * p:.1f} on average "
                        f"({occ} example(s) per unit at rate {p:.4g}; p <= {p_value:.2g})")
    if worst > occ:
        problems.append(f"{worst} examples held one canary in a single batch (the ledger allows {occ})")
    return Check("occurrences", b.seed, VIOLATION if problems else PASS,
                 f"{drawn:.0f} drawn, expected <= {n * p:.1f}; max per batch {worst}",
                 f"<= rate x {occ} x steps (Chernoff at {alpha:.2g}); per batch <= {occ}",
                 "; ".join(problems), alpha=alpha,
                 data={"drawn": drawn, "allowed_mean": n * p, "p_value": p_value, "degree": f.degree,
                       "layout": f.layout.describe if f.layout is not None else "",
                       "blocks": len(f.layout.blocks_seen) if f.layout is not None else 1})
