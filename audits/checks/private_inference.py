"""``private-inference``: a method claiming private inference declares its release, and with the served model held
fixed -- the release and the serving state, the changed node's own serving rows excepted -- no served output depends
on another private unit (:func:`audits.structural.check_private_inference`)."""

from __future__ import annotations

from audits.checks.base import PASS, SKIPPED, VIOLATION, Check, timed
from audits.checks.registry import ANY, UNITS, register


@register("private-inference", units=UNITS, kinds=ANY, statistical=False, group="structural")
def private_inference(b, alpha: float) -> Check:
    from audits.structural import check_private_inference

    found, secs = timed(lambda: check_private_inference(b.make, b.task, b.budget, b.streams, b.unit, b.cfg.tries,
                                                        base=b.base, enough=1 if b.cfg.quick else 2))
    if not found.claimed:
        return Check("private-inference", b.seed, SKIPPED, "-", "-",
                     "the method does not claim private inference", seconds=secs)
    if not found.declared_release:
        return Check("private-inference", b.seed, VIOLATION, "no release declared", "Fitted.release()",
                     "claims private inference without saying what it releases", seconds=secs)
    bad = found.max_change > 0
    detail = (f"changing unit {found.unit} moved another node's served posterior by {found.max_change:.3g} "
              "with the release and the serving state unchanged" if bad else
              ("" if found.conclusive else "every change tried reached the release or the serving state"))
    return Check("private-inference", b.seed, VIOLATION if bad else PASS,
                 f"{found.conclusive}/{found.tried} conclusive, max change {found.max_change:.3g}", "0",
                 detail, seconds=secs, data=found.__dict__)
