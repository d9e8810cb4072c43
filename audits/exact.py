"""The exact epsilon of a pair of worlds an audit builds: what the best test of that pair could show.

A pair is given as independent releases, each a probability mass function over the same outcomes in the two
worlds, used ``count`` times; dp-accounting's PLD composes them (optimistic rounding, so the value is never above
the pair's true epsilon) in both directions, and the larger epsilon at ``delta`` is the pair's.
"""

from __future__ import annotations

import math

import numpy as np


def pair_epsilon(parts: list[tuple[np.ndarray, np.ndarray, int]], delta: float) -> float:
    """``parts``: (masses in one world, masses in the other, count) per kind of release."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    def pmf(m: np.ndarray) -> dict[int, float]:
        return {i: math.log(x) for i, x in enumerate(np.asarray(m, float)) if x > 0}

    worst = 0.0
    for flip in (False, True):
        total = None
        for a, b, count in parts:
            upper, lower = (b, a) if flip else (a, b)
            one = pld_lib.from_two_probability_mass_functions(pmf(lower), pmf(upper), pessimistic_estimate=False,
                                                              value_discretization_interval=1e-4)
            part = one.self_compose(count) if count > 1 else one
            total = part if total is None else total.compose(part)
        if total is not None:
            worst = max(worst, float(total.get_epsilon_for_delta(delta)))
    return max(worst, 0.0)


__all__ = ["pair_epsilon"]
