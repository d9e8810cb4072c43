"""``privgnn-posterior``: PrivGNN's per-query release (Olatunji et al. 2023): a teacher's posterior on its Poisson
subsample, Laplace noise per coordinate, through :func:`methods.privgnn.common.noisy_argmax`.

Pair: the posterior (1, 0) when the unit is in the teacher's subsample and (0, 1) otherwise, an L1 change of
exactly the ledger's sensitivity 2, the unit drawn at the Poisson rate in one world only. The claim is the amplified
pure epsilon; the score is the released label, an argmax whose own epsilon (:func:`privgnn_argmax_epsilon`) lies
below it: the most this audit can show."""

from __future__ import annotations

import math

import numpy as np

from audits.mechanisms.base import Mechanism, Mutation, Sampler, unsupported
from audits.mechanisms.families import Family, RandomizedResponseFamily, laplace_difference_sf
from audits.mechanisms.registry import register
from methods.privacy.events import PoissonLaplace
from methods.streams import RunStreams

MUTATIONS = ("noise", "rate")
PRIVGNN_RATE = 0.3


class SubsampledPureFamily(Family):
    """A pure s-DP mechanism whose unit is in its input with probability ``rate`` (Poisson subsampling,
    add/remove): the tradeoff is C_q(f) = min(f_q, f_q^-1)** with f_q = (1 - q)(1 - alpha) + q f_s(alpha) and f_s
    the s-RR tradeoff (Dong, Roth & Su 2022, Theorem 4.2), computed on a grid; epsilon = ln(1 + q (e^s - 1)),
    the amplified pure epsilon (delta plays no part). PrivGNN's per-query Laplace release."""

    name = "Poisson-subsampled pure DP"
    assumes = "the Poisson-subsampled pure-DP trade-off"
    upper = 40.0
    GRID = np.linspace(0.0, 1.0, 4001)

    def __init__(self, rate: float) -> None:
        self.rate = float(rate)

    def _hull(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        g, q = self.GRID, self.rate
        fq = (1.0 - q) * (1.0 - g) + q * RandomizedResponseFamily().tradeoff(s, g)
        inverse = np.interp(g, fq[::-1], g[::-1])  # f_q is strictly decreasing
        y = np.minimum(fq, inverse)
        hull: list[int] = []  # lower convex hull (monotone chain)
        for i in range(g.size):
            while len(hull) >= 2:
                a, b = hull[-2], hull[-1]
                if (y[b] - y[a]) * (g[i] - g[a]) >= (y[i] - y[a]) * (g[b] - g[a]):
                    hull.pop()
                else:
                    break
            hull.append(i)
        return g[hull], y[hull]

    def tradeoff(self, s, alpha):
        s, alpha = np.broadcast_arrays(np.asarray(s, float), np.asarray(alpha, float))
        out = np.empty(alpha.shape)
        for v in np.unique(s):
            hx, hy = self._hull(float(v))
            sel = s == v
            out[sel] = np.interp(alpha[sel], hx, hy)
        return out

    def epsilon(self, s, delta):
        return float(math.log1p(self.rate * math.expm1(s))) if s > 0 else 0.0


def _privgnn_posterior(rate: float) -> Sampler:
    def sample(s: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Trial i: the teacher's two-class posterior is (1, 0) when the unit is in its Poisson(``rate``)
        subsample (only in the "in" world) and (0, 1) otherwise -- an L1 change of 2, the ledger's sensitivity --
        through the methods' :func:`~methods.privgnn.common.noisy_argmax` with Laplace(1 / lambda) per
        coordinate, 2 lambda = the base epsilon ``s``; the score is the released label."""
        import torch

        from methods.privgnn.common import noisy_argmax

        unsupported("privgnn-posterior", m, MUTATIONS)
        lam = s / 2.0
        drawn = streams.numpy("sampler").random(trials) < min(1.0, rate * m.rate) if world_in else np.zeros(trials, bool)
        post = torch.zeros(trials, 2, dtype=torch.float64)
        post[torch.from_numpy(drawn), 0] = 1.0
        post[torch.from_numpy(~drawn), 1] = 1.0
        out = noisy_argmax(post, lam * m.noise, streams.torch("noise"), domain="simplex")
        return (out == 0).double().numpy()

    return sample


def privgnn_argmax_epsilon(s: float, m: Mutation, rate: float = PRIVGNN_RATE) -> float:
    """The exact (pure) epsilon of the released label of :func:`_privgnn_posterior`'s pair: P[label 0] is
    q a + (1 - q) c with the unit and c without it, c = P[L_0 - L_1 > 1] for Laplace(1 / lambda), a = 1 - c."""
    lam = s / 2.0 * m.noise
    q = min(1.0, rate * m.rate)
    c = float(laplace_difference_sf(1.0, 1.0 / lam))
    p_in = q * (1.0 - c) + (1.0 - q) * c
    return max(math.log(p_in / c), math.log((1.0 - c) / (1.0 - p_in)))


def privgnn_posterior(rate: float) -> Mechanism:
    """PrivGNN's per-query release at Poisson rate ``rate`` (the registry's at :data:`PRIVGNN_RATE`; a ledger's own
    rate for :mod:`audits.composed`)."""
    return Mechanism(
        "privgnn-posterior", SubsampledPureFamily(rate),
        lambda s: PoissonLaplace(rate=rate, scale=2.0 / s, sensitivity=2.0),
        _privgnn_posterior(rate), MUTATIONS,
        f"PrivGNN's Laplace-noisy teacher posterior, Poisson rate {rate:g}, one node moving it by 2 (L1)",
        "privgnn", trials=1_000_000, release=lambda s, m: privgnn_argmax_epsilon(s, m, rate),
        dominates=True,
        reference="the Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006) on a posterior moved by exactly its "
                  "L1 sensitivity 2, Poisson-subsampled: ln(1 + q (e^epsilon - 1)) is tight for Poisson subsampling "
                  "of pure DP (Balle, Barthe & Gaboardi 2018); the released label is a post-processing "
                  "(privgnn_argmax_epsilon is its exact epsilon)",
        claims="the amplified pure epsilon ln(1 + q (e^s - 1)) of the Poisson-subsampled Laplace event",
        mutants=(Mutation(noise=4.0),))  # at noise 1/2 the argmax still releases less than the claim


MECHANISM = register(privgnn_posterior(PRIVGNN_RATE), order=100)
