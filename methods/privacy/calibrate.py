"""Calibration: the smallest noise, or the largest number of steps, that meets a target (epsilon, delta).

Both search the accountant itself, so the returned value is always on the feasible side: the
ledger it produces has epsilon <= target under the same accountant and conversion. ``accountant`` None: the
accountant runs report (:func:`methods.privacy.accountant.active_accountant`), so a target buys the noise that the
published epsilon accounts.
"""

from __future__ import annotations

import math
from typing import Callable

from methods.errors import BudgetError
from methods.privacy.ledger import PrivacyLedger


def calibrate_noise(make_ledger: Callable[[float], PrivacyLedger], epsilon: float, delta: float, *,
                    accountant: str | None = None, conversion: str | None = None, rtol: float = 1e-3,
                    lowest: float = 1e-3, highest: float = 1e5) -> float:
    """Smallest noise multiplier z (to relative ``rtol``) with eps(make_ledger(z)) <= epsilon.

    Brent's method on log z (epsilon is monotone in the noise) after a doubling bracket; the
    returned z is always checked feasible, never just the root estimate.
    """
    from scipy.optimize import brentq

    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise BudgetError(f"cannot calibrate noise to epsilon={epsilon}")

    def eps(z: float) -> float:
        return make_ledger(z).epsilon(delta, accountant, conversion)

    hi = 1.0
    e_hi = eps(hi)
    while e_hi > epsilon:
        hi *= 2.0
        if hi > highest:
            raise BudgetError(f"epsilon={epsilon:g} at delta={delta:g} is out of reach even with noise "
                              f"multiplier {highest:g}")
        e_hi = eps(hi)
    lo = hi / 2.0
    while eps(lo) <= epsilon:
        hi, lo = lo, lo / 2.0
        if lo < lowest:
            return hi

    def gap(log_z: float) -> float:
        e = eps(math.exp(log_z))
        return (math.log(e) if e > 0 else -700.0) - math.log(epsilon)

    root = math.exp(brentq(gap, math.log(lo), math.log(hi), xtol=rtol / 4))
    z = min(root * (1 + rtol / 4), hi)
    while eps(z) > epsilon:  # brentq's estimate may sit a hair on the infeasible side
        z = min(z * (1 + rtol / 4), hi)
    return z


def calibrate_steps(make_ledger: Callable[[int], PrivacyLedger], epsilon: float, delta: float, *,
                    max_steps: int, accountant: str | None = None, conversion: str | None = None) -> int:
    """Largest T <= max_steps with eps(make_ledger(T)) <= epsilon (0 if even one step is too many)."""
    def ok(t: int) -> bool:
        return make_ledger(t).epsilon(delta, accountant, conversion) <= epsilon

    if max_steps < 1 or not ok(1):
        return 0
    if ok(max_steps):
        return max_steps
    lo, hi = 1, 2
    while hi < max_steps and ok(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, max_steps)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo
