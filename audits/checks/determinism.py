"""``determinism``: the same seed gives the same served posteriors and the same ledger; the second fit (the
battery's probe fit) recomputes everything a cache of an earlier fit may have served the first
(:func:`methods.reuse.fresh`), so it checks the cache too."""

from __future__ import annotations

from audits.checks.base import PASS, VIOLATION, Check
from audits.checks.registry import ANY, UNITS, register


@register("determinism", order=2, units=UNITS, kinds=ANY, statistical=False, group="structural")
def determinism(b, alpha: float) -> Check:
    import torch

    again = b.probe_fit
    diff = float((again.predict_proba() - b.base.predict_proba()).abs().max())
    same_ledger = again.ledger.same_events(b.base.ledger)
    ok = diff <= 1e-6 and same_ledger and bool(torch.isfinite(again.predict_proba()).all())
    detail = "" if ok else (f"posteriors differ by {diff:.3g}" + ("" if same_ledger else "; ledgers differ"))
    return Check("determinism", b.seed, PASS if ok else VIOLATION, f"max |dp| {diff:.3g}",
                 "<= 1e-6 and the same ledger", detail, seconds=b.probe_seconds)
