"""``nap-edge``: GAP/ProGAP's aggregation perturbation (:func:`methods.gap.nap.nap`) at edge level.

Pair: one undirected edge between two nodes with unit features, present in one world only: it moves the two
nodes' aggregates by exactly the event's sensitivity sqrt 2 (both directed entries), so the release is N(0, 1)
against N(mu, 1) along the mean shift, mu = sqrt 2 / sigma: the Gaussian mechanism's worst case, whose exact
curve is the claim. Many trials from one call: disjoint copies of the pair in one graph."""

from __future__ import annotations

import math

import numpy as np

from audits.mechanisms._nap import nap_scores
from audits.mechanisms.base import Mechanism, Mutation, unsupported
from audits.mechanisms.families import GaussianFamily
from audits.mechanisms.registry import register
from methods.privacy.events import Gaussian
from methods.streams import RunStreams

MUTATIONS = ("noise",)


def _nap_edge(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """Trial i: nodes 2i and 2i+1, joined by an undirected edge in the world with the unit; the score reads
    their two aggregates. Sensitivity sqrt(2) (both directed entries), so sigma = sqrt(2) / mu."""
    import torch

    from methods.privacy.presets import EDGE_SENSITIVITY

    unsupported("nap-edge", m, MUTATIONS)
    n = 2 * trials
    a = torch.arange(0, n, 2)
    if world_in:
        ei = torch.stack([torch.cat([a, a + 1]), torch.cat([a + 1, a])])
    else:
        ei = torch.empty(2, 0, dtype=torch.long)
    sigma = EDGE_SENSITIVITY / mu / m.noise
    return nap_scores(ei, n, torch.stack([a, a + 1], 1), sigma, streams, None)


MECHANISM = register(Mechanism(
    "nap-edge", GaussianFamily(),
    lambda mu: Gaussian(sensitivity=math.sqrt(2.0), sigma=math.sqrt(2.0) / mu, unit="edge"),
    _nap_edge, MUTATIONS, "NAP aggregation, one undirected edge (sensitivity sqrt 2)",
    "gap-edge, progap-edge", trials=2_000_000,
    dominates=True,
    reference="Balle & Wang 2018, Theorem 8: a Gaussian query of L2 sensitivity Delta is (epsilon, delta)-DP iff "
              "delta >= the curve of N(0, 1) against N(Delta / sigma, 1), so a pair whose query differs by exactly "
              "Delta attains the event's curve; the edge moves each of its two nodes' unit-norm aggregates by 1, "
              "sqrt 2 in all: the event's sensitivity",
    claims="the Gaussian's exact epsilon at delta for sigma = sqrt 2 / mu",
    mutants=(Mutation(noise=2.0),)), order=10)
