"""``nap-node``: GAP/ProGAP at node level, the degree cut-off (:func:`methods.gap.nap.bound_out_degree`) then NAP.

Pair: a node sending its unit vector to exactly D rows, present in one world only (the cut-off keeps all D): it
moves the D aggregates by exactly the event's sensitivity sqrt D, so the release is N(0, 1) against N(mu, 1)
along the mean shift: the Gaussian mechanism's worst case."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from audits.mechanisms._nap import nap_scores
from audits.mechanisms.base import Mechanism, Mutation, Sampler, unsupported
from audits.mechanisms.families import GaussianFamily
from audits.mechanisms.registry import register
from methods.privacy.events import Event, Gaussian
from methods.streams import RunStreams

NAP_NODE_DEGREE = 10
MUTATIONS = ("noise", "sensitivity")


def _nap_node(max_degree: int) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Trial i: a node v sending its unit vector to exactly D leaves (the cut-off keeps them all); without v
        the leaves aggregate nothing. The score reads the leaves' aggregates. Sensitivity sqrt(D), so
        sigma = sqrt(D) / mu. A sensitivity mutation gives v s^2 D leaves and cuts off at that degree."""
        import torch

        unsupported("nap-node", m, MUTATIONS)
        d = max(1, int(round(max_degree * m.sensitivity ** 2)))
        size = d + 1
        centre = torch.arange(trials) * size
        leaves = centre[:, None] + torch.arange(1, size)[None, :]
        if world_in:
            c = centre[:, None].expand_as(leaves).reshape(-1)
            ell = leaves.reshape(-1)
            ei = torch.stack([torch.cat([c, ell]), torch.cat([ell, c])])
        else:
            ei = torch.empty(2, 0, dtype=torch.long)
        sigma = math.sqrt(max_degree) / mu / m.noise
        return nap_scores(ei, trials * size, leaves, sigma, streams, d)

    return sample


def _nap_node_event(max_degree: int) -> Callable[[float], Event]:
    return lambda mu: Gaussian(sensitivity=math.sqrt(max_degree), sigma=math.sqrt(max_degree) / mu, unit="node")


MECHANISM = register(Mechanism(
    "nap-node", GaussianFamily(), _nap_node_event(NAP_NODE_DEGREE), _nap_node(NAP_NODE_DEGREE), MUTATIONS,
    f"degree cut-off then NAP, one node of degree D = {NAP_NODE_DEGREE} (sensitivity sqrt D)",
    "gap-node, progap-node",
    actual=lambda mu, m: (GaussianFamily(), mu * m.noise * math.sqrt(
        max(1, round(NAP_NODE_DEGREE * m.sensitivity ** 2)) / NAP_NODE_DEGREE)),
    dominates=True,
    reference="Balle & Wang 2018, Theorem 8: a Gaussian query of L2 sensitivity Delta is (epsilon, delta)-DP iff "
              "delta >= the curve of N(0, 1) against N(Delta / sigma, 1), so a pair whose query differs by exactly "
              "Delta attains the event's curve; the node moves D unit-norm aggregates by 1 each, sqrt D in all: the "
              "event's sensitivity after the degree cut-off",
    claims="the Gaussian's exact epsilon at delta for sigma = sqrt D / mu",
    mutants=(Mutation(noise=2.0), Mutation(sensitivity=2.0))))  # sensitivity 2: the cut-off at 4 D
