"""``private-inference``: a method claiming private inference declares its release, and with the served model held
fixed -- the release and the serving state, the changed node's own serving rows excepted -- no served output depends
on another private unit (:func:`audits.structural.check_private_inference`). The served model is held fixed by
transplanting the base fit's release and serving rows into each neighbouring fit (``Fitted.with_state``), so a noisy
release (GAP's aggregates, EdgeRand's graph) no longer leaves the check without a conclusive change."""

from __future__ import annotations

from audits.checks.base import PASS, SKIPPED, VIOLATION, Check, timed
from audits.checks.registry import ANY, UNITS, register
from methods.errors import InterfaceError

#: what would make the check conclusive where every change it tried reached the release or the serving state
REMEDY = ("Fitted.with_state(release, serving) on the fitted model, so the check can hold the served model fixed by "
          "transplanting the base fit's state; without it only a change that leaves the release and the serving "
          "state's rows bit-identical counts (more units tried: --inference-tries N)")


@register("private-inference", order=4, units=UNITS, kinds=ANY, statistical=False, group="structural")
def private_inference(b, alpha: float) -> Check:
    from audits.structural import check_private_inference

    enough = 1 if b.cfg.quick else 2
    found, secs = timed(lambda: check_private_inference(b.make, b.task, b.budget, b.streams, b.unit, b.cfg.tries,
                                                        base=b.base, enough=enough))
    if not found.claimed:
        return Check("private-inference", b.seed, SKIPPED, "-", "-",
                     "the method does not claim private inference", seconds=secs)
    if not found.declared_release:  # the interface check of every fit refuses this first (methods.base)
        raise InterfaceError(f"{b.make().name} claims private inference but its fitted model does not say what it "
                             "releases (Fitted.release())")
    bad = found.max_change > 0
    if bad:
        return Check("private-inference", b.seed, VIOLATION,
                     f"{found.conclusive}/{found.tried} conclusive, max change {found.max_change:.3g}", "0",
                     f"changing unit {found.unit} moved another node's served posterior by {found.max_change:.3g} "
                     "with the release and the serving state unchanged", seconds=secs, data=found.__dict__)
    stat = f"{found.conclusive}/{found.tried} conclusive, max change {found.max_change:.3g}"
    if found.conclusive == 0:  # nothing it tried could tell: it did not run
        return Check("private-inference", b.seed, SKIPPED, stat, "0",
                     f"every change tried ({found.tried}) reached the release or the serving state and the model "
                     "takes no transplanted state (Fitted.with_state), so none could show a leak", seconds=secs,
                     data=found.__dict__, remedy=REMEDY)
    partial = (f"partial: {found.conclusive} conclusive change(s) of the {enough} asked for; the others reached the "
               "release or the serving state" if found.conclusive < enough else "")
    return Check("private-inference", b.seed, PASS, stat, "0", partial, seconds=secs, data=found.__dict__)
