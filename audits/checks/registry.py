"""The registry of ``bench verify``'s checks: each declares the privacy units and the mechanisms (ledger event
kinds) it applies to, and :func:`plan` decides from those declarations alone whether a check runs for a method,
is reported SKIPPED, or is left out; so a check added by a plugin obeys the same rule as the built-in ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from methods.base import ConfigError
from methods.registry import Registry
from methods.privacy.events import EVENT_TYPES

UNITS = frozenset({"edge", "node", "feature"})
EVENT_KINDS = frozenset(EVENT_TYPES)
#: ``kinds="any"``: the check applies whatever the ledger holds, even nothing (it looks for unaccounted releases)
ANY = "any"
GROUPS = ("structural", "white-box", "black-box", "mechanism")


@dataclass(frozen=True)
class CheckSpec:
    """A registered check. ``run(battery, alpha)`` (an :class:`audits.checks.base.Battery`, below this module: not
    imported) returns its :class:`~audits.checks.base.Check`; ``alpha`` is its share of the error budget
    (``statistical`` checks only; exact ones get it and ignore it)."""

    name: str
    run: Callable[[Any, float], Any]
    units: frozenset[str]
    kinds: frozenset[str] | Literal["any"]
    statistical: bool
    group: str  # one of GROUPS: how the docs group it
    #: the SKIPPED row's detail when the ledger holds none of ``kinds`` ("" : a generic one)
    no_kind: str = ""
    #: for methods of other units: a SKIPPED row with this detail ("{unit}" is filled in); "" leaves the row out
    other_units: str = ""
    #: run and reported in every battery whatever was selected (the base fit every other check compares with)
    required: bool = False
    #: whether the configuration asks for it at all (e.g. the multi-run audit needs trials)
    enabled: Callable[[object], bool] = lambda cfg: True


#: every registered check by name, in battery order (:class:`methods.registry.Registry`)
REGISTRY: Registry[CheckSpec] = Registry("check")


def register(name: str, *, units, kinds, statistical: bool, group: str, no_kind: str = "", other_units: str = "",
             required: bool = False, enabled: Callable[[object], bool] | None = None, order: float | None = None):
    """Decorator: register ``fn(battery, alpha) -> Check`` as check ``name``. ``units`` (a subset of edge, node,
    feature) and ``kinds`` (ledger event kinds, or ``"any"``) are required: a check states where it applies.
    ``order``: its place in the battery (the built-ins declare theirs; a plugin's check without one runs after
    them, in registration order)."""
    units = frozenset(units)
    if not units or not units <= UNITS:
        raise ConfigError(f"check {name}: units must be a non-empty subset of {sorted(UNITS)} (got {sorted(units)})")
    if kinds != ANY:
        kinds = frozenset(kinds)
        if not kinds or not kinds <= EVENT_KINDS:
            raise ConfigError(f"check {name}: kinds must be {ANY!r} or a non-empty subset of {sorted(EVENT_KINDS)} "
                              f"(got {sorted(kinds)})")
    if group not in GROUPS:
        raise ConfigError(f"check {name}: group must be one of {', '.join(GROUPS)} (got {group!r})")

    def deco(fn):
        REGISTRY.add(name, CheckSpec(name, fn, units, kinds, statistical, group, no_kind, other_units, required,
                                     enabled or (lambda cfg: True)),
                     same=lambda prev, new: prev.run is new.run, order=order,
                     what=f"a check named {name!r} is already registered")
        return fn

    return deco


def unregister(name: str) -> None:
    REGISTRY.remove(name)


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


Plan = Literal["run", "skip", "omit"]


def plan(spec: CheckSpec, unit: str, held: set[str] | None = None) -> Plan:
    """Whether ``spec`` runs for a method of privacy ``unit`` whose ledger holds the event kinds ``held`` (None:
    not known yet, before any fit). A check whose mechanisms the ledger does not hold is reported SKIPPED; one
    declared for other units is left out, or reported SKIPPED where it says why (``other_units``)."""
    if held is not None and spec.kinds != ANY and not spec.kinds & set(held):
        return "skip"
    if unit not in spec.units:
        return "skip" if spec.other_units else "omit"
    return "run"


def skip_detail(spec: CheckSpec, unit: str, held: set[str] | None) -> str:
    if held is not None and spec.kinds != ANY and not spec.kinds & set(held):
        return spec.no_kind or f"the ledger holds none of {', '.join(sorted(spec.kinds))}"
    return spec.other_units.format(unit=unit)
