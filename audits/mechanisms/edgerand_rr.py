"""``edgerand-rr``: EdgeRand's asymmetric randomized response (:func:`methods.gap.edgerand.asymmetric_rr`) on a
dense graph, where it keeps every reported 1 (q = 1) and is plain epsilon-RR on each node pair.

Pair: one node pair's adjacency bit, 1 against 0 (with a stand-in pair so both worlds have the same edge count):
randomized response's worst case. The score is whether the released graph holds the pair."""

from __future__ import annotations

import numpy as np

from audits.mechanisms.base import Mechanism, Mutation, unsupported
from audits.mechanisms.families import RandomizedResponseFamily
from audits.mechanisms.registry import register
from methods.base import ConfigError
from methods.privacy.events import RandomizedResponse
from methods.streams import RunStreams

MUTATIONS = ("noise",)


def _edgerand_rr(eps: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """A dense graph (density 0.6, so EdgeRand keeps every reported 1: its q is 1 and it is plain eps-RR on
    each pair). Its pairs are split into base edges B, trial pairs T and stand-ins R (|R| = |T|): the world
    with the units is B + T, the other B + R, so both have the same edge count and the same noisy density;
    each trial pair's score is whether the released graph holds it."""
    import torch

    from methods.gap.edgerand import asymmetric_rr

    unsupported("edgerand-rr", m, MUTATIONS)
    n, per_call = 240, 4000
    pairs = np.array(np.triu_indices(n, k=1)).T
    rng = streams.numpy("canaries")  # the pair sets (any layout will do: with q = 1 a report reads its own bit)
    perm = rng.permutation(len(pairs))
    t_pairs, r_pairs = pairs[perm[:per_call]], pairs[perm[per_call:2 * per_call]]
    base = pairs[perm[2 * per_call:2 * per_call + int(0.6 * len(pairs)) - per_call]]
    chosen = np.concatenate([base, t_pairs if world_in else r_pairs])
    ei = torch.from_numpy(np.concatenate([chosen, chosen[:, ::-1]]).T.copy()).long()
    t_keys = t_pairs[:, 0] * n + t_pairs[:, 1]
    scores = []
    for call in range(-(-trials // per_call)):
        out, facts = asymmetric_rr(ei, n, eps * m.noise, 1.0, streams.numpy("noise", call))
        if facts["rr_subsample_q"] != 1.0:  # pragma: no cover - the density keeps q at 1
            raise ConfigError("edgerand-rr audit: EdgeRand subsampled its reports (q < 1)")
        upper = out[0] < out[1]
        keys = (out[0, upper] * n + out[1, upper]).numpy()
        scores.append(np.isin(t_keys, keys).astype(float))
    return np.concatenate(scores)[:trials]


MECHANISM = register(Mechanism(
    "edgerand-rr", RandomizedResponseFamily(),
    lambda eps: RandomizedResponse(epsilon=eps, unit="edge"),
    _edgerand_rr, MUTATIONS, "EdgeRand's randomized response, one node pair", "edgerand",
    dominates=True,
    reference="epsilon-RR on one bit has exactly the epsilon-RR trade-off between the bit 1 and 0 (Kairouz, Oh & "
              "Viswanath 2015), the event's claim; with q = 1 EdgeRand releases each pair's bit by plain RR",
    claims="the randomized-response event's pure epsilon",
    mutants=(Mutation(noise=2.0),)), order=110)
