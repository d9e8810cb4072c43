"""``input-canaries``: a one-run black-box audit with node/feature canaries (node and feature units): dedicated
feature columns, fresh anchors so subgraph samplers put each canary in several examples, probes scored on the
released model (:mod:`audits.checks._one_run`)."""

from __future__ import annotations

from audits.checks._one_run import one_run_canaries
from audits.checks.registry import ANY, register


@register("input-canaries", order=10, units={"node", "feature"}, kinds=ANY, statistical=True, group="black-box")
def input_canaries(b, alpha: float):
    return one_run_canaries(b, alpha, "input-canaries")
