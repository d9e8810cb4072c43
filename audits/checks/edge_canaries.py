"""``edge-canaries``: a one-run black-box audit with edge canaries (edge unit; :mod:`audits.checks._one_run`)."""

from __future__ import annotations

from audits.checks._one_run import one_run_canaries
from audits.checks.registry import ANY, register


@register("edge-canaries", order=11, units={"edge"}, kinds=ANY, statistical=True, group="black-box")
def edge_canaries(b, alpha: float):
    return one_run_canaries(b, alpha, "edge-canaries")
