"""``edgerand-count``: EdgeRand's Laplace-noisy edge count (the density its q comes from), through
:func:`methods.gap.edgerand.asymmetric_rr`.

Pair: two nodes with or without their edge: the count moves by exactly its sensitivity 1, the Laplace mechanism's
worst case. The score is the released count."""

from __future__ import annotations

import numpy as np

from audits.mechanisms.base import Mechanism, Mutation, unsupported
from audits.mechanisms.families import RandomizedResponseFamily
from audits.mechanisms.registry import register
from methods.privacy.events import Laplace
from methods.streams import RunStreams

MUTATIONS = ("noise",)


def _edgerand_count(eps: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """EdgeRand's noisy edge count (the density its q comes from) through
    :func:`methods.gap.edgerand.asymmetric_rr`, once per trial on two nodes with or without their edge
    (sensitivity 1, Laplace(1 / eps)); the score is the released count."""
    import torch

    from methods.gap.edgerand import asymmetric_rr

    unsupported("edgerand-count", m, MUTATIONS)
    ei = torch.tensor([[0, 1], [1, 0]]) if world_in else torch.empty(2, 0, dtype=torch.long)
    rng = streams.numpy("noise")
    return np.array([asymmetric_rr(ei, 2, 1.0, eps * m.noise, rng)[1]["noisy_edge_count"] for _ in range(trials)])


MECHANISM = register(Mechanism(
    "edgerand-count", RandomizedResponseFamily(),
    lambda eps: Laplace(scale=1.0 / eps, sensitivity=1.0, unit="edge"),
    _edgerand_count, MUTATIONS, "EdgeRand's Laplace edge count, one edge", "edgerand", trials=25_000,
    dominates=True,
    reference="the Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006): a count moved by exactly its "
              "sensitivity 1 has privacy loss epsilon on a half-line, the event's pure epsilon",
    claims="the Laplace event's pure epsilon (scale 1 / epsilon, sensitivity 1)",
    mutants=(Mutation(noise=2.0),)), order=90)
