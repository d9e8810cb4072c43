"""``dpsgd-fixed``: one step of the methods' :class:`~methods.dpsgd.DPOptimizer` on a
:class:`~methods.dpsgd.FixedSizeSampler` batch (1 of 2, replace-one), the step of DRW and dp-mlp-feature.

Pair: the unit's Dirac gradient +C in one world and -C in the other, every other example -C in both, so one
world's release is fixed and the other's moves by 2C when the example is drawn: the tight worst case of
substitution under sampling without replacement, whose exact curve is the claim."""

from __future__ import annotations

import numpy as np

from audits.mechanisms._dpsgd import DPSGD_RATE, dirac_steps, fixed_size_draws, signed_canaries
from audits.mechanisms.base import Mechanism, Mutation, Sampler, unsupported
from audits.mechanisms.families import OneSidedMixtureFamily
from audits.mechanisms.registry import register
from methods.privacy.events import FixedSizeGaussian
from methods.streams import RunStreams

MUTATIONS = ("noise", "sensitivity", "rate")


class FixedSizeGaussianFamily(OneSidedMixtureFamily):
    """One DP-SGD step on a fixed-size batch (m of n without replacement, ``rate`` = m / n), replace-one, strength
    s = C / sigma. The worst case: the unit's example +C in one world and -C in the other, every other example -C
    in both, so one world's release is fixed and the other's moves by 2C when the example is drawn: N(0, 1) against
    (1 - rate) N(0, 1) + rate N(2 s, 1). Its curve is Balle, Barthe & Gaboardi's tight bound for substitution
    under sampling without replacement (2018, Theorem 10; :func:`audits.step_pairs.fixed_size_replace_delta`), so
    it is the exact worst case. Not the pair +-C against a zero-gradient stand-in (dp-accounting's
    REPLACE_ONE, which models Poisson sampling): that one is below it (1.0 against 1.51 at mu 0.27)."""

    name = "fixed-size subsampled Gaussian (replace-one)"
    assumes = "the fixed-size replace-one step's trade-off"

    def __init__(self, rate: float = 0.5) -> None:
        self.rate = float(rate)
        super().__init__(np.array([1.0 - self.rate, self.rate]), step=2.0)


def _dpsgd_fixed(rate: float, columns: int = 1000) -> Sampler:
    def sample(mu: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        """Per step, ``columns`` trials, each its own population of n = 1 / rate examples of which the methods'
        :class:`~methods.dpsgd.FixedSizeSampler` draws one (every trial's draw at once: :func:`fixed_size_draws`);
        example 0 is the unit's. Replace-one worst case
        (:class:`FixedSizeGaussianFamily`; :func:`signed_canaries`): the unit's Dirac gradient (:func:`dirac_steps`)
        is +C with its data and -C with the replacement, every other example's -C. A rate mutation draws one of
        round(1 / (rate x factor))."""
        from methods.dpsgd import FixedSizeSampler

        unsupported("dpsgd-fixed", m, MUTATIONS)
        n = max(1, int(round(1.0 / (rate * m.rate))))
        sampler = FixedSizeSampler(n, 1, streams.torch("sampler"), unit="feature")

        drawn = fixed_size_draws(sampler, -(-trials // columns) * columns).view(-1, columns, 1)
        return dirac_steps(columns, trials, mu, streams, m, lambda t: signed_canaries(drawn[t], 1, world_in))

    return sample


MECHANISM = register(Mechanism(
    "dpsgd-fixed", FixedSizeGaussianFamily(DPSGD_RATE),
    lambda mu: FixedSizeGaussian(population=int(round(1 / DPSGD_RATE)), sample_size=1,
                                 noise_multiplier=1.0 / (2.0 * mu), unit="feature"),
    _dpsgd_fixed(DPSGD_RATE), MUTATIONS,
    "DPOptimizer step on a FixedSizeSampler batch (1 of 2), replace-one: a Dirac gradient +C or -C, the other "
    "example -C", "drw, drw-r, drw-d, dp-mlp-feature",
    actual=lambda mu, m: (FixedSizeGaussianFamily(1.0 / max(1, round(1.0 / (DPSGD_RATE * m.rate)))),
                          mu * m.noise * m.sensitivity),
    pair="the worst case (Balle, Barthe & Gaboardi 2018, Theorem 10)",
    dominates=True,
    reference="Balle, Barthe & Gaboardi 2018, Theorem 10: the tight privacy profile of a Gaussian step under "
              "substitution and sampling without replacement, attained by the unit's gradient +C against -C with "
              "every other example -C (audits.step_pairs' exhaustive search agrees)",
    claims="the fixed-size replace-one step's exact epsilon at delta (Theorem 10's curve)",
    mutants=(Mutation(noise=2.0), Mutation(sensitivity=2.0),
             Mutation(rate=2.0))), order=50)  # a batch of 1 of 1, accounted as 1 of 2
