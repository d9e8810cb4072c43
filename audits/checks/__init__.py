"""The checks of ``bench verify``, one module per check: each registers itself (:func:`registry.register`) with the
privacy units and the mechanisms (ledger event kinds) it applies to, so a new check is one new file here (or in a
plugin) and :mod:`audits.verify` runs whatever applies. Registration order is the battery's order.

What the checks share (the outcome record, the per-seed fits) is in :mod:`audits.checks.base`."""

from audits.checks.base import PASS, SKIPPED, VIOLATION, Battery, Check
from audits.checks.registry import ANY, REGISTRY, CheckSpec, names, plan, register, unregister

# the built-in checks, in battery order: structural, white-box, black-box, mechanism-level
from audits.checks import (epsilon_accounted, determinism, noise_independence, private_inference,  # noqa: F401
                           label_use, ledger_counts, noise_calibration, occurrences, gradient_canaries,
                           input_canaries, edge_canaries, multi_run, mechanism)

__all__ = ["ANY", "Battery", "Check", "CheckSpec", "PASS", "REGISTRY", "SKIPPED", "VIOLATION", "names", "plan",
           "register", "unregister"]
