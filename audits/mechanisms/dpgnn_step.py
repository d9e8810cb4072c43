"""``dpgnn-step``: one DP-GNN step (Daigavane et al. 2022): the methods' :class:`~methods.dpsgd.DPOptimizer` on a
:class:`~methods.dpsgd.FixedSizeSampler` batch of subgraphs, several of which hold the node.

Pair: the node's subgraphs each a Dirac gradient +C in one world and -C in the other, every other subgraph -C in
both: the strongest realisable pair :func:`audits.step_pairs.strongest_pair` finds at the audited strengths, NOT a
proven worst case. The claim is therefore the step's sound bound, the k-revealed pair of Theorem 1
(:class:`RevealedHypergeometric`), never the audited pair's own epsilon."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from audits.mechanisms._dpsgd import dirac_steps, fixed_size_draws, signed_canaries
from audits.mechanisms.base import Mechanism, Mutation, Sampler, unsupported
from audits.mechanisms.families import OneSidedMixtureFamily, gaussian_delta
from audits.mechanisms.registry import register
from methods.privacy.events import HypergeometricGaussian
from methods.streams import RunStreams

MUTATIONS = ("noise", "sensitivity", "rate")
#: (subgraphs, subgraphs holding the node = N(K = 3, r = 1), batch): half the subgraphs per batch, so one step
#: reaches epsilon 4 with noise a real run would use
DPGNN_SHAPE = (8, 4, 4)


class HypergeometricGaussianFamily(OneSidedMixtureFamily):
    """One DP-GNN step (Daigavane et al. 2022), strength s = C / sigma: a batch of m of n subgraphs,
    ``occurrences`` of which hold the node, k ~ Hypergeometric(n, occurrences, m) of them drawn. The pair: the
    node's subgraphs +C in one world and -C in the other, every other subgraph -C in both -- N(0, 1) against
    sum_k h(k) N(2 k s, 1), the strongest pair :func:`audits.step_pairs.strongest_pair` finds at the audited
    strengths. Realisable, NOT a proven worst case (nor an upper bound: at small epsilon the +-C pair, the node's
    subgraphs +C against -C and nothing else, can be above it); the step's sound bound is the k-revealed pair of
    :class:`RevealedHypergeometric`."""

    name = "hypergeometric Gaussian (DP-GNN, one-sided)"
    assumes = "the audited pair's trade-off (DP-GNN, one-sided)"

    def __init__(self, population: int, occurrences: int, batch: int) -> None:
        self.population, self.occurrences, self.batch = int(population), int(occurrences), int(batch)
        super().__init__(stats.hypergeom.pmf(np.arange(occurrences + 1), population, occurrences, batch), step=2.0)


@dataclass(frozen=True)
class RevealedHypergeometric:
    """The sound bound of one DP-GNN step (Daigavane et al. 2022, Theorem 1's pair): the batch's count k ~
    Hypergeometric(population, occurrences, batch) of the node's subgraphs is revealed, then N(0, 1) against
    N(2 k s, 1) (Lemma 2: each moves the sum by at most 2C; s = C / sigma). Revealing k only adds information, so
    the pair dominates the step, and its curve is exactly sum_k h(k) delta_{2ks}(eps) -- the ledger event's PLD
    (:meth:`methods.privacy.events.HypergeometricGaussian.pld`) without its outward discretisation."""

    population: int
    occurrences: int
    batch: int

    def delta(self, s: float, eps: float) -> float:
        k = np.arange(1, self.occurrences + 1)
        h = stats.hypergeom.pmf(k, self.population, self.occurrences, self.batch)
        return float(sum(w * gaussian_delta(2.0 * j * s, eps) for j, w in zip(k, h) if w > 0))

    def epsilon(self, s: float, delta: float) -> float:
        if s <= 0 or self.delta(s, 0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta(s, hi) > delta:
            hi *= 2.0
            if hi > 4096:
                return math.inf
        return float(optimize.brentq(lambda e: self.delta(s, e) - delta, 0.0, hi, xtol=1e-12))


def _dpgnn_step(population: int, occurrences: int, batch: int, columns: int = 500) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """DP-GNN's step: per trial, a population of ``population`` subgraphs of which the first ``occurrences``
        hold the node, and a batch of ``batch`` drawn by the methods' :class:`~methods.dpsgd.FixedSizeSampler` (as
        DP-GNN draws its batches; every trial's draw at once: :func:`fixed_size_draws`). The strongest realisable pair found (:class:`HypergeometricGaussianFamily`;
        :func:`signed_canaries`): each subgraph holding the node is a Dirac gradient (:func:`dirac_steps`) +C in one
        world and -C in the other, every other subgraph -C in both. Noise 2 C N(K, r) lambda = C / mu, as DP-GNN
        adds it. A rate mutation draws a batch ``factor`` times larger."""
        from methods.dpsgd import FixedSizeSampler

        unsupported("dpgnn-step", m, MUTATIONS)
        size = min(population, max(1, int(round(batch * m.rate))))
        sampler = FixedSizeSampler(population, size, streams.torch("sampler"), unit="node")

        drawn = fixed_size_draws(sampler, -(-trials // columns) * columns).view(-1, columns, size)
        return dirac_steps(columns, trials, mu, streams, m,
                           lambda t: signed_canaries(drawn[t], occurrences, world_in))

    return sample


MECHANISM = register(Mechanism(
    "dpgnn-step", HypergeometricGaussianFamily(*DPGNN_SHAPE),
    lambda mu: HypergeometricGaussian(num_train=DPGNN_SHAPE[0], occurrence_bound=DPGNN_SHAPE[1],
                                      batch_size=DPGNN_SHAPE[2],
                                      noise_multiplier=1.0 / (2.0 * mu * DPGNN_SHAPE[1])),
    _dpgnn_step(*DPGNN_SHAPE), MUTATIONS,
    f"DPOptimizer step on a FixedSizeSampler batch of {DPGNN_SHAPE[2]} of {DPGNN_SHAPE[0]} subgraphs, "
    f"{DPGNN_SHAPE[1]} = N(3, 1) of them holding the node: Dirac gradients +C or -C, the other subgraphs -C",
    "dpgnn, dpgnn-adam", trials=200_000,
    actual=lambda mu, m: (HypergeometricGaussianFamily(
        DPGNN_SHAPE[0], DPGNN_SHAPE[1], min(DPGNN_SHAPE[0], max(1, round(DPGNN_SHAPE[2] * m.rate)))),
        mu * m.noise * m.sensitivity),
    bound=RevealedHypergeometric(*DPGNN_SHAPE),
    pair="realisable, not proven worst case (the strongest of audits.step_pairs' exhaustive search)",
    dominates=False,
    reference="not proven: no worst case of a step whose unit sits in several subgraphs of a fixed-size batch is "
              "known; audits.step_pairs' exhaustive search finds this pair strongest at the audited strengths, but "
              "at small epsilon the +-C pair can be above it. The claim is Daigavane et al. 2022, Theorem 1's "
              "k-revealed pair (Lemma 2: each drawn subgraph moves the sum by at most 2C), which dominates the step",
    claims="the exact epsilon at delta of Theorem 1's k-revealed pair (the ledger event's PLD without its outward "
           "rounding), a proven upper bound",
    mutants=(Mutation(noise=2.0), Mutation(sensitivity=2.0),
             Mutation(rate=2.0))), order=60)  # every subgraph in every batch
