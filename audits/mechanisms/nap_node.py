"""``nap-node``: GAP/ProGAP at node level, the degree-bounding step (:func:`methods.gap.nap.degree_bounded_graph`,
the shipped relation ``input-graph``) then NAP.

Pair: a node v sending its unit vector to exactly D rows (a star of D leaves), present in one world only: it
moves the D aggregates by exactly the event's sensitivity sqrt D, so the release is N(0, 1) against N(mu, 1)
along the mean shift: the Gaussian mechanism's worst case for graphs within a declared bound of D
(``input-graph``), and for ``cut-off-graph`` only as graphs compared after the cut-off (within any bound >= D no
cut-off binds on a star, so both relations run the same graph here). On input graphs the papers' cut-off is
audited by :mod:`audits.mechanisms.nap_node_input`."""

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
        """Trial i: a node v sending its unit vector to exactly D leaves (within the declared bound D); without v
        the leaves aggregate nothing. The score reads the leaves' aggregates. Sensitivity sqrt(D), so
        sigma = sqrt(D) / mu. A sensitivity mutation gives v s^2 D leaves and declares that degree as the bound
        (the noise still calibrated for D)."""
        import torch

        from methods.gap.nap import INPUT_GRAPH

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
        return nap_scores(ei, trials * size, leaves, sigma, streams, d, INPUT_GRAPH)

    return sample


def _nap_node_event(max_degree: int) -> Callable[[float], Event]:
    return lambda mu: Gaussian(sensitivity=math.sqrt(max_degree), sigma=math.sqrt(max_degree) / mu, unit="node")


MECHANISM = register(Mechanism(
    "nap-node", GaussianFamily(), _nap_node_event(NAP_NODE_DEGREE), _nap_node(NAP_NODE_DEGREE), MUTATIONS,
    f"degree bound then NAP, one node of degree D = {NAP_NODE_DEGREE} (sensitivity sqrt D)",
    "gap-node, progap-node",
    actual=lambda mu, m: (GaussianFamily(), mu * m.noise * math.sqrt(
        max(1, round(NAP_NODE_DEGREE * m.sensitivity ** 2)) / NAP_NODE_DEGREE)),
    dominates=True,
    pair="a star: v sending its unit vector to exactly D leaves, present in one world only (the worst case on "
         "input graphs within the declared bound D; for the cut-off relation, on graphs compared after the cut-off)",
    reference="Balle & Wang 2018, Theorem 8: a Gaussian query of L2 sensitivity Delta is (epsilon, delta)-DP iff "
              "delta >= the curve of N(0, 1) against N(Delta / sigma, 1), so a pair whose query differs by exactly "
              "Delta attains the event's curve; the node moves D unit-norm aggregates by 1 each, sqrt D in all: the "
              "event's sensitivity. Relation input-graph (the shipped default): the worst case on input graphs "
              "within the declared bound D, where nothing is cut off and removing v moves at most D other rows by "
              "one unit vector each (methods.gap.nap's proof). Relation cut-off-graph (the papers'): the worst case "
              "only for graphs compared after the cut-off (GAP Lemma 3); on input graphs the cut-off reallocates "
              "slots and no bound in D holds (nap-node-cutoff-input)",
    claims="the Gaussian's exact epsilon at delta for sigma = sqrt D / mu",
    mutants=(Mutation(noise=2.0), Mutation(sensitivity=2.0))), order=20)  # sensitivity 2: the cut-off at 4 D
