"""``dpsgd-poisson``: one step of the methods' :class:`~methods.dpsgd.DPOptimizer` on a
:class:`~methods.dpsgd.PoissonSampler` batch (add/remove), the step of dp-mlp and of GAP/ProGAP's heads.

Pair: a Dirac gradient clipped to exactly C on a coordinate no other example touches, drawn with the Poisson rate
in one world, absent in the other: along that coordinate, N(0, 1) against (1 - q) N(0, 1) + q N(mu, 1), the
Poisson-subsampled Gaussian's dominating pair, whose exact privacy profile is the claim."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from audits.mechanisms._dpsgd import DPSGD_RATE, dirac_steps
from audits.mechanisms.base import Mechanism, Mutation, Sampler, unsupported
from audits.mechanisms.families import Family, epsilon_of_delta
from audits.mechanisms.registry import register
from methods.privacy.events import PoissonGaussian
from methods.streams import RunStreams

MUTATIONS = ("noise", "sensitivity", "rate")


@dataclass
class PoissonGaussianFamily(Family):
    """One DP-SGD step, Poisson rate q, noise multiplier 1/mu, add/remove: the dominating pair is N(0, 1) (the
    example absent) against (1 - q) N(0, 1) + q N(mu, 1) (present), so f(alpha) = (1 - q)(1 - alpha) +
    q Phi(Phi^-1(1 - alpha) - mu) (Dong, Roth & Su 2022, Section 4; Zhu, Dong & Wang 2022)."""

    rate: float = 1.0
    name = "Poisson-subsampled Gaussian"
    assumes = "the Poisson-subsampled Gaussian's trade-off"
    upper = 40.0

    def tradeoff(self, s, alpha):
        alpha = np.asarray(alpha, float)
        return (1.0 - self.rate) * (1.0 - alpha) + self.rate * stats.norm.cdf(stats.norm.isf(alpha) - s)

    def delta_of(self, s: float, eps: float) -> float:
        """The exact privacy profile of the dominating pair, both directions: the log-likelihood ratio is
        monotone in x, so {L > eps} is a half-line whose end has a closed form."""
        q, mu = self.rate, s
        lsf, lcdf = stats.norm.logsf, stats.norm.logcdf
        out = 0.0
        if math.exp(eps) > 1.0 - q:  # remove: P = mixture, Q = N(0, 1)
            x = (math.log((math.exp(eps) - (1.0 - q)) / q) + mu * mu / 2.0) / mu
            p_mass = (1.0 - q) * math.exp(lsf(x)) + q * math.exp(lsf(x - mu))
            out = max(out, p_mass - math.exp(eps + lsf(x)))
        if math.exp(-eps) > 1.0 - q:  # add: P = N(0, 1), Q = mixture
            x = (math.log((math.exp(-eps) - (1.0 - q)) / q) + mu * mu / 2.0) / mu
            q_mass = (1.0 - q) * math.exp(lcdf(x)) + q * math.exp(lcdf(x - mu))
            out = max(out, math.exp(lcdf(x)) - math.exp(eps) * q_mass)
        return out

    def epsilon(self, s, delta):
        """The smallest eps with delta(eps) <= delta, from :meth:`delta_of`."""
        return epsilon_of_delta(self.delta_of, s, delta)


def _dpsgd_poisson(rate: float, columns: int = 1000) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Per step, ``columns`` canaries, canary k a Dirac gradient on its own coordinate (:func:`dirac_steps`),
        drawn by the methods' :class:`~methods.dpsgd.PoissonSampler` in the world with the units (none in the
        other); the score is the released noisy sum at canary k's coordinate / C."""
        import torch

        from methods.dpsgd import PoissonSampler

        unsupported("dpsgd-poisson", m, MUTATIONS)
        sampler = PoissonSampler(columns, min(1.0, rate * m.rate), streams.torch("sampler"))
        none = torch.zeros(0, dtype=torch.long)

        def canaries(t: int) -> tuple[torch.Tensor, torch.Tensor]:
            drawn = sampler.sample() if world_in else none
            return drawn, torch.ones(drawn.numel())

        return dirac_steps(columns, trials, mu, streams, m, canaries)

    return sample


MECHANISM = register(Mechanism(
    "dpsgd-poisson", PoissonGaussianFamily(DPSGD_RATE),
    lambda mu: PoissonGaussian(rate=DPSGD_RATE, noise_multiplier=1.0 / mu),
    _dpsgd_poisson(DPSGD_RATE), MUTATIONS,
    f"DPOptimizer step, Poisson rate {DPSGD_RATE}, a Dirac gradient clipped to C", "dp-mlp, gap/progap heads",
    actual=lambda mu, m: (PoissonGaussianFamily(min(1.0, DPSGD_RATE * m.rate)), mu * m.noise * m.sensitivity),
    dominates=True,
    reference="the Poisson-subsampled Gaussian under add/remove is dominated by N(0, 1) against (1 - q) N(0, 1) + "
              "q N(C / sigma, 1) (Mironov, Talwar & Zhang 2019; Zhu, Dong & Wang 2022); a gradient clipped to "
              "exactly C on a coordinate of its own realises it",
    claims="the Poisson-subsampled Gaussian's exact epsilon at delta (its privacy profile in closed form, equal to "
           "dp-accounting's PLD)",
    mutants=(Mutation(noise=2.0),
             Mutation(sensitivity=2.0),  # clipping at 2 C, noise for C
             Mutation(rate=2.0))), order=40)  # every example in every batch, accounted at rate 0.5
