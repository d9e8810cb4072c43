"""Accountants: a list of events -> (epsilon, delta).

``rdp`` (default): RDP curves summed over the order grid, converted with the ``improved`` conversion
(default; sound and tighter) or the ``standard`` one (Mironov's Proposition 3, which the papers
report). A ledger of pure-DP events only (Laplace, randomized response) also has the basic
composition bound sum(eps_i); the smaller of the two is reported (both are valid for every delta).

``pld``: dp-accounting's privacy-loss distributions (pessimistic discretisation, an upper bound),
for events it supports (Gaussian, Laplace, Poisson-subsampled Gaussian/Laplace, randomized response).

``tight`` (the default since version 1.0.0): the smallest of the sound bounds the suite has for the ledger, at the
same delta (each is an upper bound on the same hockey-stick divergence, so their minimum is one):

* the RDP bound with each event's :meth:`~methods.privacy.events.Event.tight_rdp` curve (per order, the minimum of
  its bounds: Theorem 27 or DP-GNN's Theorem 1 and the same Gaussian without subsampling), improved conversion;
* where every event's PLD is a proven dominating pair (``Event.pld_dominates``: Gaussian, Poisson-subsampled
  Gaussian, fixed-size steps as the unsubsampled Gaussian, DP-GNN's steps with the occurrence count revealed,
  randomized response, Laplace and Poisson-subsampled Laplace, whose scalar pair dominates a vector query's L1
  shift: :func:`methods.privacy.events.laplace_pair_dominates`), the composed PLD; a ledger whose pairs are all
  Gaussian (mu-GDP) is converted in closed form instead (:func:`gdp_epsilon`). A Gaussian-type step with a noise
  multiplier below 0.1 is left to RDP (``Event.pld_practical``: its PLD would have 10^7-10^8 buckets).

Any other name a run gives is an accountant of the one registry (:mod:`methods.privacy.registry`: the
conformance suite's adapters, a plugin's), asked for its own epsilon (:func:`registered_epsilon`).

All round outward: each bound is an upper bound in exact arithmetic, its floating-point evaluation is not, and
where a bound is tight (a PLD of a composed Gaussian sits within 1e-8 of the exact epsilon) rounding alone can land
below the true epsilon, by an amount that differs from CPU to CPU (FFT and vector-math code paths).

* The PLD's compositions are FFTs, whose rounding leaves every bucket of the composed distribution with an absolute
  error of ~1e-19-1e-16 (a near-constant offset, negative as often as not). Summed over the 1e4-1e5 buckets above
  epsilon it moves delta by up to 1e-4 relative at delta = 1e-10, and the epsilon by up to 1e-4 relative between
  FFT implementations (measured on the conformance corpus: a composed Gaussian at z = 2, T = 100, delta = 1e-10
  came out 5.7e-9 below its exact epsilon on one machine). :func:`pld_epsilon` therefore bounds each bucket's mass
  from above by its value plus the FFT's noise floor (:func:`noise_floored`), and then rounds the epsilon outward
  by :data:`PLD_MARGIN`.
* RDP curves are closed forms, log-sum-exp sums and series summed to a relative 1e-13 (:mod:`methods.privacy.rdp`),
  and the conversion is a minimum of closed forms: :func:`rdp_epsilon` rounds outward by :data:`RDP_MARGIN`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import sys
from typing import Iterable, Iterator

import numpy as np

from methods.privacy import rdp as R
from methods.privacy.events import Event, LedgerError
from methods.privacy.registry import RUN_ACCOUNTANTS as ACCOUNTANTS, Unsupported, available_accountants, get_accountant

#: the noise floor of an FFT-composed PLD is at least this many times its largest negative mass (:func:`noise_floored`)
FFT_NOISE_FACTOR = 2.0
#: (relative, absolute) outward rounding of a PLD epsilon after the noise floor: the rounding left (the sequential
#: sums of :meth:`get_epsilon_for_delta`, ~1e-11 relative over 1e5 buckets; a composition of sparse PLDs, exact
#: sums of products, ~1e-14), and an absolute term for epsilons so small that a relative one is none
PLD_MARGIN = (1e-8, 1e-12)
#: (relative, absolute) outward rounding of an RDP epsilon: RDP curves are closed forms, log-sum-exp sums and
#: series summed to a relative 1e-13 (:mod:`methods.privacy.rdp`), the conversion a minimum of closed forms; 1e-10
#: relative covers their rounding 1000 times and moves no reported figure: budgets and the leaderboard's check
#: allow 1e-9 relative over the target (a pure-DP split spends its target exactly), so the absolute term stays
#: far below that even at epsilon 1e-3
RDP_MARGIN = (1e-10, 1e-15)
#: (relative, absolute) outward rounding of a closed-form mu-GDP epsilon (:func:`gdp_epsilon`): its root is checked
#: on the feasible side, and the normal tails are evaluated in log space to ~1e-15 relative
GDP_MARGIN = (1e-9, 1e-12)
#: what ``Fitted.epsilon`` (every run's reported epsilon) and the calibrations use; runs log it as the parameter
#: ``accountant``
DEFAULT_ACCOUNTANT = "tight"
#: the accountant of records that name none: every run before ``tight`` became the default
LEGACY_ACCOUNTANT = "rdp/improved"

_ACTIVE: contextvars.ContextVar[str | None] = contextvars.ContextVar("accountant", default=None)


def active_accountant() -> str:
    """The accountant that calibrations and reported epsilons use here: :data:`DEFAULT_ACCOUNTANT`, or the one a
    :func:`using_accountant` block names."""
    return _ACTIVE.get() or DEFAULT_ACCOUNTANT


@contextlib.contextmanager
def using_accountant(name: str) -> Iterator[str]:
    """Calibrate and report with ``name`` inside the block (this thread or task): a re-execution of a recorded run
    uses the accountant the record names, so it spends the same ledger (records before version 1.0.0:
    :data:`LEGACY_ACCOUNTANT`). ``name``: a run accountant or a registered one (:func:`parse_accountant`)."""
    parse_accountant(name)
    token = _ACTIVE.set(name)
    try:
        yield name
    finally:
        _ACTIVE.reset(token)


#: about how many epochs of a run's history log the running epsilon (:func:`checkpoint_epochs`)
HISTORY_POINTS = 16


def checkpoint_epochs(epochs: int, points: int = HISTORY_POINTS) -> frozenset[int]:
    """The 1-based epochs of ``epochs`` at which a fit's history logs the running epsilon: ``points`` evenly spaced,
    the last always. The default accountant's PLDs cost up to a second a value; a per-epoch curve of a 100-epoch
    run would cost more than the fit."""
    if epochs <= points:
        return frozenset(range(1, epochs + 1))
    return frozenset(int(round(epochs * (i + 1) / points)) for i in range(points)) | {epochs}


def builtin_accountant(name: str) -> tuple[str, str] | None:
    """``"rdp/improved"`` -> ``("rdp", "improved")``; ``"pld"`` -> ``("pld", "improved")`` (no conversion);
    ``"tight"`` -> ``("tight", "improved")``; None for a name that is not one of the suite's run accountants."""
    acc, _, conv = str(name).partition("/")
    if acc not in ACCOUNTANTS or (conv and (conv not in R.CONVERSIONS or acc != "rdp")):
        return None
    return acc, conv or "improved"


def parse_accountant(name: str) -> tuple[str, str]:
    """(accountant, conversion) of a name a run or a record gives: a run accountant's
    (:func:`builtin_accountant`), or ``(name, "improved")`` for one registered in :mod:`methods.privacy.registry`
    (:func:`epsilon` asks it). An unknown name is a LedgerError naming the known ones."""
    parsed = builtin_accountant(name)
    if parsed is not None:
        return parsed
    if name in available_accountants():
        return str(name), "improved"
    registered = "".join(f", {n}" for n in available_accountants())
    raise LedgerError(f"unknown accountant {name!r} (known: tight, rdp/improved, rdp/standard, pld{registered})")


def registered_epsilon(name: str, events: list[Event], delta: float) -> float:
    """The epsilon of ``events`` at ``delta`` as the accountant registered as ``name`` computes it, taken as it
    returns it (its soundness is what the conformance suite tests, ``methods.privacy.conformance.check.admit``)."""
    events = [e for e in events if e.count]
    if not events:
        return 0.0
    try:
        value = get_accountant(name).epsilon(events, delta)
    except Unsupported as e:
        raise LedgerError(f"accountant {name} cannot account this ledger: {e.reason}") from None
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise LedgerError(f"accountant {name} returned {value!r}, not a number") from None
    if not value >= 0:
        raise LedgerError(f"accountant {name} returned {value}, not an epsilon")
    return value


def round_outward(epsilon: float, margin: tuple[float, float]) -> float:
    """``epsilon x (1 + rel) + abs``, rounded up to the next float: an accountant's epsilon raised past the
    floating-point error of its evaluation (``margin = (rel, abs)``, :data:`PLD_MARGIN`, :data:`RDP_MARGIN`).
    0 and infinity stay: an accountant returns 0 where delta covers the whole divergence (the hockey-stick at 0 of
    the floored PLD, a non-positive minimum of the RDP conversion), a comparison of deltas, not an epsilon that
    rounding could have shaved."""
    if epsilon == 0.0 or not math.isfinite(epsilon):
        return epsilon
    rel, absolute = margin
    return math.nextafter(epsilon * (1.0 + rel) + absolute, math.inf)


def rdp_curve(events: Iterable[Event], orders: np.ndarray | None = None, tight: bool = False) -> np.ndarray:
    """The composed RDP curve: each event's :meth:`~Event.rdp` (``tight``: :meth:`~Event.tight_rdp`) x its count."""
    grid = R.ORDERS if orders is None else np.asarray(orders, dtype=float)
    total = np.zeros(len(grid))
    for e in events:
        if e.count:
            g = None if orders is None else grid
            total = total + e.count * (e.tight_rdp(g) if tight else e.rdp(g))
    return total


def rdp_epsilon(events: list[Event], delta: float, conversion: str = "improved",
                orders: np.ndarray | None = None, tight: bool = False) -> tuple[float, float]:
    """(epsilon, optimal order); the order is inf when the pure-DP composition bound is the smaller. Rounded
    outward by :data:`RDP_MARGIN`. ``tight``: the events' :meth:`~Event.tight_rdp` curves."""
    if conversion not in R.CONVERSIONS:
        raise LedgerError(f"unknown conversion {conversion!r}; use improved or standard")
    events = [e for e in events if e.count]
    if not events:
        return 0.0, float("nan")
    grid = R.ORDERS if orders is None else np.asarray(orders, dtype=float)
    eps, order = R.CONVERSIONS[conversion](grid, rdp_curve(events, orders, tight), delta)
    pures = [e.pure_epsilon() for e in events]
    if all(p is not None for p in pures):
        pure = math.fsum(e.count * p for e, p in zip(events, pures))
        if pure <= eps:
            eps, order = float(pure), math.inf
    return round_outward(eps, RDP_MARGIN), order


def noise_floored(pld, compositions: int):
    """``pld`` with each bucket of its dense distributions raised past the rounding error of the FFTs that composed
    it: mass ``p`` becomes ``max(p, 0) + nu``, ``nu = max(FFT_NOISE_FACTOR x (largest negative mass),
    compositions x u x (largest mass))`` (``u`` = 2^-53, the unit roundoff).

    An FFT convolution spreads its rounding evenly over its outputs (each is a sum over every frequency with
    unit-modulus weights), so every bucket carries an error of the same size, a near-constant offset as often as
    not. Where the true mass is below it, it shows: a probability is never negative, so a negative bucket is pure
    error, and twice the largest one bounds the rest. Where every bucket's true mass is above it, it hides; the
    T-fold composition raises the transform to the T-th power (relative rounding ~T u per frequency), and the
    inverse transform spreads that at the scale of the largest bucket, hence the second term (``compositions`` = T,
    every event's count summed). The hockey-stick divergence grows with each bucket's mass, so the floored
    distribution's epsilon is at least the exact one's. Measured on the 113 corpus cases where rounding matters
    most (delta 1e-10, or within 1e-4 of the lower limit): two other FFTs (numpy's; scipy's at twice the length)
    moved the unfloored epsilon by up to 1.1e-4 relative, never above the floored one, which costs up to 0.9%
    (``poisson_gaussian/q=0.001/z=1/T=10000/delta=1e-10``; below 1e-4 on all but three). Sparse distributions
    (compositions by dictionary: exact sums of products) are left as they are."""
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as PLD

    unit = np.finfo(float).eps / 2

    def floor(pmf):
        if not isinstance(pmf, pld_pmf.DensePLDPmf) or not pmf._probs.size:  # noqa: SLF001 - no accessor
            return pmf
        probs = pmf._probs  # noqa: SLF001
        nu = max(FFT_NOISE_FACTOR * max(0.0, -float(probs.min())), compositions * unit * float(probs.max()))
        return pld_pmf.DensePLDPmf(pmf._discretization, pmf._lower_loss, np.maximum(probs, 0.0) + nu,  # noqa: SLF001
                                   pmf._infinity_mass, pmf._pessimistic_estimate)  # noqa: SLF001
    remove = floor(pld._pmf_remove)  # noqa: SLF001
    return PLD.PrivacyLossDistribution(remove, None if pld._symmetric else floor(pld._pmf_add))  # noqa: SLF001


@functools.lru_cache(maxsize=16)
def _one_pld(event: Event):
    """One application's PLD, cached per event (building a PLD's distribution is most of its cost: a calibration's
    last check and the run's report account the same steps, and a run's history the same step at every epoch)."""
    return event.pld()


def pld_epsilon(events: list[Event], delta: float) -> float:
    """The composed events' PLD epsilon at ``delta`` (pessimistic), each bucket's mass bounded past the FFT's
    rounding (:func:`noise_floored`), the epsilon rounded outward by :data:`PLD_MARGIN`."""
    events = [e for e in events if e.count]
    if not events:
        return 0.0
    if delta <= 0:
        raise LedgerError("the PLD accountant needs delta > 0")
    pld = None
    for e in events:
        p = _one_pld(e.key())
        if e.count > 1:
            p = p.self_compose(e.count)
        pld = p if pld is None else pld.compose(p)
    floored = noise_floored(pld, sum(e.count for e in events))
    return round_outward(max(0.0, float(floored.get_epsilon_for_delta(delta))), PLD_MARGIN)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The epsilon at ``delta`` of N(0, 1) against N(mu, 1), i.e. of mu-GDP (Balle & Wang 2018, Theorem 8:
    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)), the root checked on the feasible side and
    rounded outward by :data:`GDP_MARGIN`. Exact, where a PLD of the same pair is discretised."""
    from scipy.optimize import brentq
    from scipy.special import log_ndtr

    if not mu > 0:
        return 0.0
    if not 0 < delta < 1:
        raise LedgerError("the mu-GDP conversion needs 0 < delta < 1")

    def excess(eps: float) -> float:
        return math.exp(log_ndtr(-eps / mu + mu / 2)) - math.exp(eps + log_ndtr(-eps / mu - mu / 2)) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
    eps = float(brentq(excess, 0.0, hi, xtol=1e-14, rtol=1e-14))
    while excess(eps) > 0:  # the root's estimate may sit a hair on the infeasible side
        eps = math.nextafter(eps * (1 + 1e-12), math.inf)
    return round_outward(eps, GDP_MARGIN)


def tight_epsilon(events: list[Event], delta: float) -> tuple[float, float]:
    """(epsilon, optimal order or nan): the smallest of the sound bounds the suite has for these events (see the
    module docstring). The order is the RDP bound's when it is the smallest, nan when a PLD or the closed form is."""
    return _tight_epsilon(tuple(e for e in events if e.count), float(delta))


@functools.lru_cache(maxsize=256)
def _tight_epsilon(events: tuple[Event, ...], delta: float) -> tuple[float, float]:
    if not events:
        return 0.0, float("nan")
    eps, order = rdp_epsilon(events, delta, "improved", tight=True)
    if delta > 0 and all(e.pld_dominates for e in events):
        mus = [getattr(e, "gdp_mu", None) for e in events]
        if all(m is not None for m in mus):
            other = gdp_epsilon(math.sqrt(math.fsum(e.count * m ** 2 for e, m in zip(events, mus))), delta)
        elif all(e.pld_practical() for e in events):
            other = pld_epsilon(events, delta)
        else:
            other = math.inf
        if other < eps:
            eps, order = other, float("nan")
    return eps, order


def clear_caches() -> None:
    """Empty the accountants' memo caches (per-event RDP curves and PLDs, whole accounts): a timing of one
    accountant then does not depend on what another computed before it."""
    from methods.privacy import events as _events, rdp as _rdp

    for module in (sys.modules[__name__], _events, _rdp):
        for obj in vars(module).values():
            if callable(getattr(obj, "cache_clear", None)) and getattr(obj, "__module__", None) == module.__name__:
                obj.cache_clear()


def epsilon(events: list[Event], delta: float, accountant: str = "rdp", conversion: str = "improved") -> tuple[float, float]:
    """(epsilon, optimal RDP order or nan) of ``events`` at ``delta``: the suite's ``rdp`` (with ``conversion``),
    ``pld`` or ``tight``, or the accountant registered under that name (:mod:`methods.privacy.registry`)."""
    if accountant == "rdp":
        return rdp_epsilon(events, delta, conversion)
    if accountant == "pld":
        return pld_epsilon(events, delta), float("nan")
    if accountant == "tight":
        return tight_epsilon(events, delta)
    if accountant in available_accountants():
        return registered_epsilon(accountant, events, delta), float("nan")
    raise LedgerError(f"unknown accountant {accountant!r}; use tight, rdp, pld or a registered one")
