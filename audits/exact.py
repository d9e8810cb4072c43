"""The exact epsilon of a pair of worlds an audit builds: what the best test of that pair could show.

A pair is given as independent releases, each used ``count`` times: a probability mass function over the same
outcomes in the two worlds (a tuple ``(masses in one world, masses in the other, count)``), or a Gaussian release
of strength mu (:class:`GaussianPart`: N(0, 1) against N(mu, 1)). dp-accounting's privacy-loss distributions compose
them (optimistic discretisation, so the value is never above the pair's true epsilon) in both directions -- every
part's worlds swapped together -- and the larger epsilon at ``delta`` is the pair's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the loss discretisation of every PLD composed here (they must share it to compose)
INTERVAL = 1e-4


@dataclass(frozen=True)
class GaussianPart:
    """``count`` releases of N(0, 1) against N(``mu``, 1) (symmetric: the same in both directions)."""

    mu: float
    count: int = 1


def pair_epsilon(parts: list, delta: float) -> float:
    """``parts``: (masses in one world, masses in the other, count) per kind of discrete release, or
    :class:`GaussianPart`."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    def pmf(m: np.ndarray) -> dict[int, float]:
        return {i: math.log(x) for i, x in enumerate(np.asarray(m, float)) if x > 0}

    worst = 0.0
    for flip in (False, True):
        total = None
        for part in parts:
            if isinstance(part, GaussianPart):
                if part.mu <= 0:
                    continue
                one = pld_lib.from_gaussian_mechanism(1.0 / part.mu, pessimistic_estimate=False,
                                                      value_discretization_interval=INTERVAL, use_connect_dots=False)
                count = part.count
            else:
                a, b, count = part
                upper, lower = (b, a) if flip else (a, b)
                one = pld_lib.from_two_probability_mass_functions(pmf(lower), pmf(upper), pessimistic_estimate=False,
                                                                  value_discretization_interval=INTERVAL)
            piece = one.self_compose(count) if count > 1 else one
            total = piece if total is None else total.compose(piece)
        if total is not None:
            worst = max(worst, float(total.get_epsilon_for_delta(delta)))
    return max(worst, 0.0)


__all__ = ["GaussianPart", "INTERVAL", "pair_epsilon"]
