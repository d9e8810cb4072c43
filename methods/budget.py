"""The privacy target a run is asked for: a leaf module (no torch), so the CLI can check a budget before the
heavy imports."""

from __future__ import annotations

import math
from dataclasses import dataclass

from methods.errors import BudgetError


@dataclass(frozen=True)
class Budget:
    """A target (epsilon, delta). ``epsilon = inf`` means no privacy is asked for.

    Methods calibrate to the target but always *report* the accountant's epsilon for what ran.
    """

    epsilon: float = math.inf
    delta: float = 0.0

    def __post_init__(self) -> None:
        eps, delta = float(self.epsilon), float(self.delta)
        if math.isnan(eps) or eps <= 0:
            raise BudgetError(f"epsilon must be > 0 (got {self.epsilon})")
        if math.isnan(delta) or not 0.0 <= delta < 1.0:
            raise BudgetError(f"delta must be in [0, 1) (got {self.delta})")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)

    def __str__(self) -> str:
        if not self.is_private:
            return "eps=inf"
        return f"eps={self.epsilon:g}, delta={self.delta:.3g}"


def default_delta(num_units: int) -> float:
    """Largest power of ten strictly below 1/num_units (the papers' "delta < 1/#units" rule)."""
    if num_units < 1:
        raise BudgetError("cannot choose a default delta for a task with no private units")
    return 10.0 ** (-(math.floor(math.log10(num_units)) + 1))
