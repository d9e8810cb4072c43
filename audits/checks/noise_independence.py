"""``noise-independence``: the step-1 DP-SGD noise is not a function of the initial weights nor of the first
Poisson batch, and no other generator shares the noise generator's seed (:mod:`audits.structural`)."""

from __future__ import annotations

import numpy as np

from audits.checks.base import DPSGD_KINDS, PASS, VIOLATION, Check
from audits.checks.registry import ANY, UNITS, register


@register("noise-independence", order=3, units=UNITS, kinds=ANY, statistical=False, group="structural")
def noise_independence(b, alpha: float) -> Check:
    from audits.structural import CORRELATION_THRESHOLD, NoiseIndependence, init_correlation, poisson_replay

    b.probe_fit  # noqa: B018 - the probe's fit, computed once
    probe = b.probe
    if probe is None or probe.noise is None or probe.noise_std <= 0:
        # no DP-SGD step to reconstruct: the seeds alone (two generators with one seed are one stream)
        recorded = [s for s in b.seeds.torch_generators + b.seeds.torch_global]
        dup = sorted({s for s in recorded if recorded.count(s) > 1})
        unseen = b.unobserved() & set(DPSGD_KINDS)  # DP-SGD the ledger accounts and the probe did not see
        why, remedy = b.unobserved_reason(unseen) if unseen else ("", "")
        return Check("noise-independence", b.seed, VIOLATION if dup else PASS,
                     f"{len(recorded)} generator seeds, {len(dup)} shared", "no two generators share a seed",
                     f"seed(s) {dup[:3]} seed more than one generator: their streams coincide" if dup else
                     f"seeds checked only: {why}" if unseen else "no DP-SGD step: seeds checked only",
                     data={"shared": dup[:10]}, remedy=remedy)
    u = probe.noise_uniforms() if probe.noise_device == "cpu" else np.empty(0)
    corr = init_correlation(probe.inits or [], u) if u.size else 0.0
    first = b.batches.first
    replay = bool(first is not None and u.size and poisson_replay(*first, u))
    recorded = b.seeds.all
    shared = probe.noise_seed is not None and recorded.count(probe.noise_seed) > 1
    found = NoiseIndependence(True, corr, replay, shared, False, int(u.size))
    b.shared["independence"] = found
    bad = [w for w, x in (("the noise replays the initial weights", corr > CORRELATION_THRESHOLD),
                          ("the first Poisson batch is readable off the noise", replay),
                          ("another generator shares the noise generator's seed", shared)) if x]
    note = "" if u.size else "noise drawn off the CPU: only the seed check applies"
    return Check("noise-independence", b.seed, VIOLATION if bad else PASS,
                 f"corr {corr:.3f}, batch replay {'yes' if replay else 'no'}, shared seed "
                 f"{'yes' if shared else 'no'}", f"corr < {CORRELATION_THRESHOLD}, no replay, no shared seed",
                 "; ".join(bad) or note, data=found.to_dict())
