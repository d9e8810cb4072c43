"""What every mechanism kind declares (:class:`Mechanism`) and what the audited code runs with (:class:`Mutation`).

A kind's module (one per mechanism, :mod:`audits.mechanisms`) builds one :class:`Mechanism`: the ledger event the
methods record, the audited pair's family of trade-off functions, whether that pair is proven to dominate the event
(and where it is proven, or why it is not and which sound bound the claim is instead), the trial runner that drives
the methods' own code on the pair, and the mutants its audit must flag."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Protocol

import numpy as np
from scipy import optimize

from audits.mechanisms.families import Family
from methods.base import ConfigError
from methods.privacy.events import Event
from methods.streams import RunStreams

#: trials per world in each half (selection, evaluation) unless told otherwise
DEFAULT_TRIALS = 400_000


@dataclass(frozen=True)
class Mutation:
    """The code runs with ``1 / noise`` of the noise its event states (pure DP: ``noise`` x its epsilon), a true
    sensitivity ``sensitivity`` x the stated one, and ``rate`` x the stated sampling rate. All 1: the
    shipped mechanism."""

    noise: float = 1.0
    sensitivity: float = 1.0
    rate: float = 1.0

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if not (v > 0 and math.isfinite(v)):
                raise ConfigError(f"mutation {k} must be a positive finite number (got {v})")

    @property
    def shipped(self) -> bool:
        return self == Mutation()

    def label(self) -> str:
        if self.shipped:
            return "shipped"
        parts = [f"noise 1/{self.noise:g}" if self.noise != 1 else "", f"sensitivity x{self.sensitivity:g}"
                 if self.sensitivity != 1 else "", f"rate x{self.rate:g}" if self.rate != 1 else ""]
        return ", ".join(p for p in parts if p)


#: (strength of the claim, world_in, trials, streams, mutation) -> one score per trial
Sampler = Callable[[float, bool, int, RunStreams, Mutation], np.ndarray]


class SoundBound(Protocol):
    """An event's sound privacy curve where no realisable pair is proven to meet it: strength -> curve."""

    def delta(self, s: float, eps: float) -> float: ...

    def epsilon(self, s: float, delta: float) -> float: ...


def _calibrate(epsilon_of: Callable[[float], float], epsilon: float, upper: float, name: str) -> float:
    """The strength s with epsilon_of(s) = ``epsilon`` (epsilon_of increases in s)."""
    hi = 0.5
    while epsilon_of(hi) < epsilon:
        hi *= 2.0
        if hi > upper:
            raise ConfigError(f"{name}: epsilon {epsilon:g} is out of reach")
    return float(optimize.brentq(lambda v: epsilon_of(v) - epsilon, 1e-9, hi, xtol=1e-12))


@dataclass(frozen=True)
class Mechanism:
    """One mechanism kind, as its module declares it. The pair is the worst case the event's analysis proves
    (``dominates``, with the theorem in ``reference``) or only a realisable one (``dominates`` False: ``reference``
    says why, and ``bound`` is the event's sound curve the claim and the verdict use instead). A kind that audits a
    paper's claim on data its proof does not cover says so in ``known_violation``: ``bound`` is then the claimed
    curve, and its pinned verdict is VIOLATION."""

    name: str
    family: Family  # the tradeoff functions of the audited pair, at the strength the code runs with
    event: Callable[[float], Event]  # the claim's strength -> the ledger event the methods record for it
    sample: Sampler
    mutations: tuple[str, ...]  # the fields of Mutation it can apply
    summary: str
    used_by: str
    trials: int = DEFAULT_TRIALS  # the default per world and half: the measured table's (README)
    #: (claimed strength, mutation) -> the family and strength of what the code really ran (default: the claim's
    #: family at strength x noise x sensitivity)
    actual: Callable[[float, Mutation], tuple[Family, float]] | None = None
    #: (claimed strength, mutation) -> the exact epsilon of what the code RELEASES, where that is a
    #: post-processing (an argmax) whose epsilon lies below the event's: the most an audit can show
    release: Callable[[float, Mutation], float] | None = None
    #: the event's sound bound where the audited pair is NOT its proven worst case (None: the family's curve at
    #: the claimed strength is the event's exact one): the claim, and the curve a verdict tests against
    bound: SoundBound | None = None
    #: why the pair is the worst case, or that it is only realisable (printed with every audit)
    pair: str = "the worst case of the event's analysis"
    #: whether the audited pair is proven to dominate the event, so that its exact epsilon is the claim (None: not
    #: declared, which :meth:`problems` refuses)
    dominates: bool | None = None
    #: where the domination is proven (paper, theorem), or why it is not and what the claim rests on instead
    reference: str = ""
    #: the epsilon the audit is calibrated to and tested against, in words (:meth:`claim` computes it)
    claims: str = ""
    #: broken variants of the code (less noise, a larger sensitivity or sampling rate than the event states) that
    #: the audit flags: its power, checked for every registered mechanism (tests/test_mechanism_registry.py)
    mutants: tuple[Mutation, ...] = ()
    #: (claimed strength, mutation, delta) -> the exact epsilon of the audited pair's score as the code runs it,
    #: where ``actual`` and ``release`` cannot say it (a kind that searches several pairs: the largest of theirs)
    pair_epsilon: Callable[[float, Mutation, float], float] | None = None
    #: non-empty for a kind that audits a labelled variant whose claim is known to fail (a paper's relation on the
    #: data it does not cover): why. Its shipped verdict is pinned to VIOLATION (tests/test_mechanism_registry.py;
    #: a PASS there fails the test) and its pair cannot be declared to dominate the claim it breaks
    known_violation: str = ""
    #: the registered kind whose ledger event this one audits on other pairs or another relation: ledger events map
    #: to that kind (:func:`~audits.mechanisms.registry.mechanism_for`), never to a variant
    variant_of: str = ""

    @property
    def worst_case(self) -> bool:
        """Whether the audited pair is the event's proven worst case (its exact epsilon is the claim)."""
        return bool(self.dominates)

    def problems(self) -> list[str]:
        """What the declaration lacks or contradicts (empty: complete). A pair not proven to dominate must carry
        the event's sound bound, as the claim may never be the epsilon of a pair that does not dominate."""
        out = []
        if not self.name or not self.summary or not self.used_by or not self.pair:
            out.append("a name, a summary, the methods that use it and its pair in words are required")
        if not isinstance(self.dominates, bool):
            out.append("dominates must be declared True or False")
        elif self.dominates and self.bound is not None:
            out.append("a pair proven to dominate is its own claim: it takes no separate sound bound")
        elif not self.dominates and self.bound is None:
            out.append("a pair not proven to dominate needs the event's sound bound (bound=) as its claim")
        if not self.reference.strip():
            out.append("reference: the theorem that proves the pair dominates, or why it is not proven")
        if not self.claims.strip():
            out.append("claims: the epsilon the audit is tested against, in words")
        if not self.mutants:
            out.append("mutants: at least one broken variant its audit flags")
        for m in self.mutants:
            if not isinstance(m, Mutation) or m.shipped:
                out.append(f"mutant {m!r} is not a mutation of the shipped code")
            elif any(v != 1 and k not in self.mutations for k, v in asdict(m).items()):
                out.append(f"mutant {m.label()} uses a field outside mutations={self.mutations}")
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 100:
            out.append(f"trials must be an integer >= 100 (got {self.trials!r})")
        if not isinstance(self.known_violation, str):
            out.append("known_violation must be a string (the reason), empty for a kind expected to pass")
        elif self.known_violation.strip() and self.dominates:
            out.append("a known violation's pair breaks the claim: it cannot be declared to dominate it")
        if self.variant_of and self.variant_of == self.name:
            out.append("variant_of names another kind (the one ledger events map to), not this one")
        return out

    @property
    def expected_verdict(self) -> str:
        """The shipped code's verdict this kind is pinned to: VIOLATION for a known violation, else ok."""
        return "VIOLATION" if self.known_violation.strip() else "ok"

    def claim(self, s: float, delta: float) -> float:
        """The event's tightest sound epsilon at strength ``s``: exact where the pair is its proven worst case."""
        return self.family.epsilon(s, delta) if self.bound is None else self.bound.epsilon(s, delta)

    def strength_for_epsilon(self, epsilon: float, delta: float) -> float:
        """The strength whose claim (:meth:`claim`) is ``epsilon`` at ``delta``."""
        if self.bound is None:
            return self.family.strength_for_epsilon(epsilon, delta)
        return _calibrate(lambda v: self.bound.epsilon(v, delta), epsilon, self.family.upper, self.name)

    def true_epsilon(self, s: float, mutation: Mutation, delta: float) -> float:
        """The exact epsilon of the audited pair as the code runs it under ``mutation``: the most an audit of this
        pair can show. The claim's when shipped, the pair is the worst case and the release is the event's whole
        output; below the claim for an argmax release or a pair that is only realisable; above it for a known
        violation (:attr:`known_violation`)."""
        if self.pair_epsilon is not None:
            return self.pair_epsilon(s, mutation, delta)
        if self.release is not None:
            return self.release(s, mutation)
        fam, strength = (self.actual(s, mutation) if self.actual is not None
                         else (self.family, s * mutation.noise * mutation.sensitivity))
        return fam.epsilon(strength, delta)


def unsupported(mech: str, mutation: Mutation, allowed: tuple[str, ...]) -> None:
    for k, v in asdict(mutation).items():
        if v != 1 and k not in allowed:
            raise ConfigError(f"mechanism {mech} cannot apply a {k} mutation (it can: {', '.join(allowed) or 'none'})")
