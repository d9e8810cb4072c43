"""``pate-votes``: PATE's noisy argmax of a teachers' vote histogram (:func:`methods.privgnn.common.noisy_argmax`),
the release of pate-m and pate-g.

Pair: one teacher's vote moved between two classes at vote gap g, (g, 0) against (g - 1, 1): each count moves by
exactly its event's sensitivity 1, so the counts' privacy loss reaches the claim. The score is the released answer,
a post-processing of the counts whose epsilon approaches the claim as g grows (:func:`pate_gap` picks the g the
trials resolve best)."""

from __future__ import annotations

import numpy as np

from audits.mechanisms.base import Mechanism, Mutation, unsupported
from audits.mechanisms.families import RandomizedResponseFamily, laplace_difference_sf
from audits.mechanisms.registry import register
from methods.privacy.events import Laplace
from methods.streams import RunStreams

MUTATIONS = ("noise", "sensitivity")


def pate_gap(lam: float, trials: int) -> int:
    """The vote gap g whose one-vote change the trials can resolve best: the log ratio of the two worlds'
    chances of the flipped answer, each moved two standard errors against the auditor (and the rarer one by 3 / n,
    the rule of three's bound when it is never seen). A function of the claim
    and the number of trials only, so choosing it peeks at no trial."""
    b = 1.0 / lam
    g = np.arange(1, 400)
    p_in, p_out = laplace_difference_sf(g, b), laplace_difference_sf(g - 2, b)
    lo = p_out - 2.0 * np.sqrt(p_out / trials)
    hi = p_in + 2.0 * np.sqrt(p_in / trials) + 3.0 / trials
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(lo > 0, np.log(lo / hi), -np.inf)
    return int(g[int(np.argmax(value))])


def _pate_votes(eps: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
    """Trial i: a two-class vote histogram (g, 0) -- or, without the unit's teacher's vote, (g - 1, 1) -- through
    the methods' :func:`~methods.privgnn.common.noisy_argmax` with Laplace(1 / lambda) on each count,
    lambda = eps / 2 (the PATE ledger: two Laplace events of sensitivity 1 per query). The score is the released
    answer. A sensitivity mutation moves s votes."""
    import torch

    from methods.privgnn.common import noisy_argmax

    unsupported("pate-votes", m, MUTATIONS)
    lam = eps / 2.0
    g = pate_gap(lam, trials)
    moved = float(round(m.sensitivity))
    counts = torch.tensor([[float(g), 0.0]] if world_in else [[g - moved, moved]], dtype=torch.float64)
    out = noisy_argmax(counts.expand(trials, 2).contiguous(), lam * m.noise, streams.torch("noise"), domain="counts")
    return out.double().numpy()


MECHANISM = register(Mechanism(
    "pate-votes", RandomizedResponseFamily(),
    lambda eps: Laplace(scale=2.0 / eps, sensitivity=1.0, unit="node", count=2),
    _pate_votes, MUTATIONS, "PATE's noisy argmax of a vote histogram, one teacher's vote",
    "pate-m, pate-g", trials=4_000_000,
    actual=lambda eps, m: (RandomizedResponseFamily(), eps * m.noise * round(m.sensitivity)),
    dominates=True,
    reference="the Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006): a query moved by exactly its L1 "
              "sensitivity has privacy loss equal to its epsilon on a half-line, so moving both counts by 1 attains "
              "the two events' epsilon; every pure epsilon-DP mechanism's trade-off lies above epsilon-RR's "
              "(Kairouz, Oh & Viswanath 2015), the verdict's curve",
    claims="the two Laplace events' pure epsilon (scale 2 / epsilon each, sensitivity 1)",
    mutants=(Mutation(noise=2.0),)), order=80)
