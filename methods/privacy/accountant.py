"""Accountants: a list of events -> (epsilon, delta).

``rdp`` (default): RDP curves summed over the order grid, converted with the ``improved`` conversion
(default; sound and tighter) or the ``standard`` one (Mironov's Proposition 3, which the papers
report). A ledger of pure-DP events only (Laplace, randomized response) also has the basic
composition bound sum(eps_i); the smaller of the two is reported (both are valid for every delta).

``pld``: dp-accounting's privacy-loss distributions (pessimistic discretisation, an upper bound),
for events it supports (Gaussian, Laplace, Poisson-subsampled Gaussian/Laplace, randomized response).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from methods.privacy import rdp as R
from methods.privacy.events import Event, LedgerError

ACCOUNTANTS = ("rdp", "pld")
#: what ``Fitted.epsilon`` (every run's reported epsilon) uses; runs log it as the parameter ``accountant``
DEFAULT_ACCOUNTANT = "rdp/improved"


def parse_accountant(name: str) -> tuple[str, str]:
    """``"rdp/improved"`` -> ``("rdp", "improved")``; ``"pld"`` -> ``("pld", "improved")`` (no conversion)."""
    acc, _, conv = str(name).partition("/")
    if acc not in ACCOUNTANTS or (conv and conv not in R.CONVERSIONS):
        raise LedgerError(f"unknown accountant {name!r} (known: rdp/improved, rdp/standard, pld)")
    return acc, conv or "improved"


def rdp_curve(events: Iterable[Event], orders: np.ndarray | None = None) -> np.ndarray:
    grid = R.ORDERS if orders is None else np.asarray(orders, dtype=float)
    total = np.zeros(len(grid))
    for e in events:
        if e.count:
            total = total + e.count * e.rdp(None if orders is None else grid)
    return total


def rdp_epsilon(events: list[Event], delta: float, conversion: str = "improved",
                orders: np.ndarray | None = None) -> tuple[float, float]:
    """(epsilon, optimal order); the order is inf when the pure-DP composition bound is the smaller."""
    if conversion not in R.CONVERSIONS:
        raise LedgerError(f"unknown conversion {conversion!r}; use improved or standard")
    events = [e for e in events if e.count]
    if not events:
        return 0.0, float("nan")
    grid = R.ORDERS if orders is None else np.asarray(orders, dtype=float)
    eps, order = R.CONVERSIONS[conversion](grid, rdp_curve(events, orders), delta)
    pures = [e.pure_epsilon() for e in events]
    if all(p is not None for p in pures):
        pure = sum(e.count * p for e, p in zip(events, pures))
        if pure <= eps:
            return float(pure), math.inf
    return eps, order


def pld_epsilon(events: list[Event], delta: float) -> float:
    events = [e for e in events if e.count]
    if not events:
        return 0.0
    if delta <= 0:
        raise LedgerError("the PLD accountant needs delta > 0")
    pld = None
    for e in events:
        p = e.pld()
        if e.count > 1:
            p = p.self_compose(e.count)
        pld = p if pld is None else pld.compose(p)
    return max(0.0, float(pld.get_epsilon_for_delta(delta)))


def epsilon(events: list[Event], delta: float, accountant: str = "rdp", conversion: str = "improved") -> tuple[float, float]:
    if accountant == "rdp":
        return rdp_epsilon(events, delta, conversion)
    if accountant == "pld":
        return pld_epsilon(events, delta), float("nan")
    raise LedgerError(f"unknown accountant {accountant!r}; use rdp or pld")
