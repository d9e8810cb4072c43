"""``epsilon-accounted``: the reported epsilon equals the ledger re-accounted from its events (and from its recipe,
rebuilt with the family's function), it is <= the target, and the ledger's unit is the method's."""

from __future__ import annotations

import math

from audits.checks.base import PASS, VIOLATION, Check
from audits.checks.registry import ANY, UNITS, register


@register("epsilon-accounted", order=1, units=UNITS, kinds=ANY, statistical=False, group="structural", required=True)
def epsilon_accounted(b, alpha: float) -> Check:
    from methods.privacy import PrivacyLedger
    from methods.privacy import presets as P

    b.base  # noqa: B018 - the base fit, before its time is read
    secs = b.base_seconds
    led, delta, target = b.base.ledger, b.budget.delta, b.budget.epsilon
    reported = float(b.base.epsilon(delta))
    again = PrivacyLedger.from_dict(led.to_dict())  # independent of the Fitted object
    re_eps = float(again.epsilon(delta))
    problems = []
    if not math.isclose(reported, re_eps, rel_tol=1e-9, abs_tol=1e-12):
        problems.append(f"reported {reported:.6g} but the ledger's events give {re_eps:.6g}")
    if led.recipe is not None:
        rebuilt = P.rebuild(led.recipe)
        if not rebuilt.same_events(led):
            problems.append(f"the recipe ({led.recipe.family}) rebuilds {rebuilt.describe()}, the ledger holds "
                            f"{led.describe()}")
    if reported > target * (1 + 1e-9) or re_eps > target * (1 + 1e-9):
        problems.append(f"spent {max(reported, re_eps):.6g} > target {target:g}")
    if led.non_private_use is None and led.unit not in (None, b.unit):
        problems.append(f"the ledger accounts {led.unit}-level events for a {b.unit}-level method")
    if led.non_private_use is not None:
        problems.append(f"the ledger says the run is not private ({led.non_private_use})")
    return Check("epsilon-accounted", b.seed, VIOLATION if problems else PASS,
                 f"reported {reported:.6g}, re-accounted {re_eps:.6g}",
                 f"equal, <= target {target:g}", "; ".join(problems), seconds=secs,
                 data={"reported": reported, "reaccounted": re_eps, "recipe": bool(led.recipe)})
