"""The privacy ledger: what a run spent, as immutable mechanism events.

A ledger is the only source of a reported epsilon. Identical events merge (their counts add), so a
10,000-step DP-SGD run is one event with count 10,000. All events of a ledger must concern the same
privacy unit and neighbouring relation; composing across relations is refused rather than guessed.
``non_private_use`` records that the unit's data was used without any DP mechanism (non-private
baselines, non-private inference): epsilon is then infinite whatever the events say.

``conventions`` names the facts about the private data that the calibration read and that the claim treats as
public, with their values (``{"num_train": 2708}``). Epsilon holds for neighbouring datasets that agree on them:
DP-SGD's sampling rate B / n, its steps per epoch and the noise calibrated from them are functions of the
training-set size n, which add/remove neighbours do not share, so a released step count or noise multiplier
reveals n unless n is public (the convention of Abadi et al. 2016 and Opacus). Only the family functions of
``methods.privacy.presets`` set them (:func:`methods.privacy.presets.family`).
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from methods.privacy import accountant as A
from methods.privacy.events import Event, LedgerError, event_from_dict


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((str(k), _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if hasattr(v, "item") and callable(v.item):  # numpy / torch scalars
        return v.item()
    return v


def _thaw(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_thaw(x) for x in v)
    return v


@dataclass(frozen=True)
class Recipe:
    """Which family function built a ledger, and with which parameters (``methods.privacy.presets``):
    enough to rebuild the ledger from the same single source of truth (``bench account run``)."""

    family: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, family: str, params: dict[str, Any]) -> "Recipe":
        return cls(family, tuple(sorted((k, _freeze(v)) for k, v in params.items())))

    def kwargs(self) -> dict[str, Any]:
        return {k: _thaw(v) for k, v in self.params}

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "params": {k: v for k, v in self.params}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Recipe":
        return cls.of(d["family"], dict(d.get("params", {})))


#: what each fact a ledger may name as public by convention means (``PrivacyLedger.conventions``)
PUBLIC_FACTS = {
    "num_train": ("the training-set size, the units the sampler draws from (training nodes; DP-GNN: one tree "
                  "each); the rate B/n, the steps per epoch ceil(n/B), the batch min(B, n) and the noise are "
                  "calibrated to it"),
    "num_nodes": "the number of nodes of the graph (ProGAP's paper convention samples over all of them)",
    "max_degree": ("a declared bound D on every node's degree in the input graph (DP-GNN: its number of training "
                   "in-neighbours); the run refuses a graph above it, and the node-level sensitivity (NAP's sqrt(D), "
                   "DP-GNN's occurrence bound N(D, r)) holds for the neighbouring input graphs within it"),
}


@dataclass(frozen=True)
class PrivacyLedger:
    events: tuple[Event, ...] = ()
    non_private_use: str | None = None
    notes: tuple[str, ...] = field(default=())
    recipe: Recipe | None = None
    #: (name, value) of the facts the calibration read that the claim takes as public (:data:`PUBLIC_FACTS`)
    conventions: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        units = {e.unit for e in self.events}
        relations = {e.relation for e in self.events}
        if len(units) > 1:
            raise LedgerError(f"a ledger cannot mix privacy units ({', '.join(sorted(units))})")
        if len(relations) > 1:
            raise LedgerError(f"a ledger cannot compose events under different neighbouring relations "
                              f"({', '.join(sorted(relations))})")

    @classmethod
    def non_private(cls, reason: str = "trained without a DP mechanism") -> "PrivacyLedger":
        return cls(non_private_use=reason)

    @property
    def unit(self) -> str | None:
        return self.events[0].unit if self.events else None

    @property
    def relation(self) -> str | None:
        return self.events[0].relation if self.events else None

    def add(self, event: Event, count: int | None = None) -> "PrivacyLedger":
        """A new ledger with ``event`` (``count`` times, default the event's own count) composed in."""
        n = event.count if count is None else int(count)
        if n == 0:
            return self
        key = event.key()
        events = list(self.events)
        for i, e in enumerate(events):
            if e.key() == key:
                events[i] = e.times(e.count + n)
                break
        else:
            events.append(event.times(n))
        # a changed ledger has no recipe; what its calibration took as public still holds
        return dataclasses.replace(self, events=tuple(events), recipe=None)

    def note(self, text: str) -> "PrivacyLedger":
        return dataclasses.replace(self, notes=self.notes + (text,))

    def mark_non_private(self, reason: str) -> "PrivacyLedger":
        return dataclasses.replace(self, non_private_use=reason)

    def with_recipe(self, recipe: Recipe | None) -> "PrivacyLedger":
        return dataclasses.replace(self, recipe=recipe)

    @property
    def public_facts(self) -> dict[str, Any]:
        """The conventions as a dict: fact name -> the value the calibration read."""
        return dict(self.conventions)

    def with_conventions(self, facts: dict[str, Any]) -> "PrivacyLedger":
        """This ledger with ``facts`` named public by convention too (a fact already named must keep its value)."""
        have = self.public_facts
        for k, v in facts.items():
            v = _freeze(v)
            if k in have and have[k] != v:
                raise LedgerError(f"public fact {k} is {have[k]} in this ledger, not {v}")
            have[k] = v
        return dataclasses.replace(self, conventions=tuple(sorted(have.items())))

    def describe_conventions(self) -> list[str]:
        """One line per public fact: ``num_train = 140: the training-set size: ...``."""
        return [f"{k} = {v}: {PUBLIC_FACTS.get(k, 'a fact its family names public')}" for k, v in self.conventions]

    def same_events(self, other: "PrivacyLedger", rtol: float = 0.0) -> bool:
        """Same mechanisms with the same counts, in any order (what epsilon depends on). ``rtol`` > 0: their float
        parameters (noise multipliers, rates) may differ by that relative amount: a calibration that the accountant's
        outward rounding (``methods.privacy.accountant``) moved in the last digits."""
        if (self.non_private_use is None) != (other.non_private_use is None) or len(self.events) != len(other.events):
            return False
        if rtol <= 0:
            key = lambda led: sorted(repr(e) for e in led.events)  # noqa: E731
            return key(self) == key(other)

        def fields(e: Event) -> tuple[tuple, tuple]:
            exact, floats = [type(e).__name__], []
            for f in dataclasses.fields(e):
                v = getattr(e, f.name)
                (floats if isinstance(v, float) else exact).append(v if isinstance(v, float) else repr(v))
            return tuple(exact), tuple(floats)

        mine, theirs = sorted(map(fields, self.events)), sorted(map(fields, other.events))
        return all(a[0] == b[0] and len(a[1]) == len(b[1])
                   and all(math.isclose(x, y, rel_tol=rtol, abs_tol=0.0) for x, y in zip(a[1], b[1]))
                   for a, b in zip(mine, theirs))

    def epsilon_and_order(self, delta: float, accountant: str | None = None,
                          conversion: str | None = None) -> tuple[float, float]:
        """(epsilon, optimal RDP order or nan) at ``delta``. ``accountant`` None: the one runs report here
        (:func:`methods.privacy.accountant.active_accountant`), or ``rdp`` when a ``conversion`` is named (only the
        RDP accountant converts)."""
        if accountant is None and conversion is not None:
            accountant = "rdp"
        elif accountant is None:
            accountant, conversion = A.parse_accountant(A.active_accountant())
        conversion = conversion or "improved"
        if not 0.0 <= delta < 1.0:
            raise LedgerError(f"delta must be in [0, 1) (got {delta})")
        if self.non_private_use is not None:
            return math.inf, float("nan")
        return A.epsilon(list(self.events), delta, accountant, conversion)

    def epsilon(self, delta: float, accountant: str | None = None, conversion: str | None = None) -> float:
        return self.epsilon_and_order(delta, accountant, conversion)[0]

    def rdp(self, orders: np.ndarray | None = None) -> np.ndarray:
        return A.rdp_curve(self.events, orders)

    def to_dict(self) -> dict[str, Any]:
        out = {"non_private_use": self.non_private_use, "events": [e.to_dict() for e in self.events],
               "notes": list(self.notes)}
        if self.recipe is not None:
            out["recipe"] = self.recipe.to_dict()
        if self.conventions:
            out["conventions"] = {k: v for k, v in self.conventions}
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PrivacyLedger":
        """A ledger from :meth:`to_dict`'s form (records written before ``conventions`` existed load without)."""
        recipe = Recipe.from_dict(d["recipe"]) if d.get("recipe") else None
        led = cls(tuple(event_from_dict(e) for e in d.get("events", [])), d.get("non_private_use"),
                  tuple(d.get("notes", [])), recipe)
        return led.with_conventions(dict(d["conventions"])) if d.get("conventions") else led

    def sampling(self) -> dict[str, list]:
        """What the subsampled events assume about sampling, by the names runs report it under (``info``):
        ``population`` (fixed-size and hypergeometric populations) and ``rate`` (Poisson rates; batch / population
        for the fixed-size ones); distinct values, sorted. A run's reported population or rate must be the one its
        ledger was accounted with."""
        out: dict[str, set] = {"population": set(), "rate": set()}
        for e in self.events:
            pop = getattr(e, "population", None) or getattr(e, "num_train", None)
            size = getattr(e, "sample_size", None) or getattr(e, "batch_size", None)
            if pop is not None:
                out["population"].add(pop)
                if size is not None:
                    out["rate"].add(size / pop)
            if getattr(e, "rate", None) is not None:
                out["rate"].add(e.rate)
        return {k: sorted(v) for k, v in out.items()}

    def describe(self) -> str:
        if self.non_private_use:
            return f"non-private: {self.non_private_use}"
        return "; ".join(e.describe() for e in self.events) or "no mechanism"
