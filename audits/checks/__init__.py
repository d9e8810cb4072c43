"""The checks of ``bench verify``, one module per check: each registers itself (:func:`registry.register`) with the
privacy units and the mechanisms (ledger event kinds) it applies to and its place in the battery (``order``), so a
new check is one new file here (or in a plugin) and :mod:`audits.verify` runs whatever applies.

What the checks share (the outcome record, the per-seed fits) is in :mod:`audits.checks.base`."""

from audits.checks.base import PASS, SKIPPED, VIOLATION, Battery, Check
from audits.checks.registry import ANY, REGISTRY, CheckSpec, names, plan, register, unregister

from methods.registry import discover as _discover

# the built-in checks: every module here that registers one (each declares its place in the battery: structural,
# white-box, black-box, mechanism-level)
_discover(__name__, __path__, "register")

__all__ = ["ANY", "Battery", "Check", "CheckSpec", "PASS", "REGISTRY", "SKIPPED", "VIOLATION", "names", "plan",
           "register", "unregister"]
