"""The registry of mechanism kinds: each kind's module registers its :class:`~audits.mechanisms.base.Mechanism`
(:func:`register`), which refuses a declaration that lacks its pair's status, reference, claim or mutants, so a
mechanism added later (or by a plugin) obeys the same rule as the built-in ones. Their declared ``order`` is the
order ``bench audit --level mechanism`` runs them in, and the first mechanism of an event kind and unit that is not a
variant of another (``variant_of``) is the one :func:`mechanism_for` gives a ledger event."""

from __future__ import annotations

import contextlib
from typing import Iterator

from audits.mechanisms.base import Mechanism
from methods.base import ConfigError
from methods.privacy.events import Event
from methods.registry import Registry

#: every registered mechanism kind by name, in the order the audits run (:class:`methods.registry.Registry`)
MECHANISMS: Registry[Mechanism] = Registry("mechanism")
_by_event: dict[tuple[str, str], str] | None = None
#: variants registered before the kind they are a variant of, while the built-ins load (a folder's modules import in
#: name order): checked once they have (:func:`built_ins`)
_pending: list[Mechanism] | None = None


def register(mechanism: Mechanism, order: float | None = None) -> Mechanism:
    """Add ``mechanism`` under its name (a :class:`ConfigError` for an incomplete declaration or a name taken by
    another); returns it, so a kind's module can write ``MECHANISM = register(Mechanism(...))``. ``order``: its
    place in the audits' order (the built-ins declare theirs; one without follows them in registration order). A
    variant of a kind not (yet) registered is a ConfigError, but among the built-ins (:func:`built_ins`)."""
    global _by_event
    problems = mechanism.problems()
    if problems:
        raise ConfigError(f"mechanism {mechanism.name or '(unnamed)'}: " + "; ".join(problems))
    MECHANISMS.add(mechanism.name, mechanism, order=order,
                   what=f"a mechanism named {mechanism.name!r} is already registered")
    _by_event = None
    if _pending is not None and mechanism.variant_of and mechanism.variant_of not in MECHANISMS:
        _pending.append(mechanism)
    else:
        _check_variant(mechanism)
    return mechanism


@contextlib.contextmanager
def built_ins() -> Iterator[None]:
    """Register the built-in kinds inside the block: a variant may come before its base kind; every variant is
    checked at the end (a ConfigError naming the first whose base is missing)."""
    global _pending
    _pending = []
    try:
        yield
    finally:
        waiting, _pending = _pending, None
    for mechanism in waiting:
        _check_variant(mechanism)


def _check_variant(mechanism: Mechanism) -> None:
    if not mechanism.variant_of:
        return
    base = MECHANISMS.get(mechanism.variant_of)
    if base is None or base.variant_of:
        MECHANISMS.remove(mechanism.name)
        raise ConfigError(f"mechanism {mechanism.name}: variant_of {mechanism.variant_of!r} is not a registered "
                          "kind that ledger events map to")
    ours, theirs = mechanism.event(1.0), base.event(1.0)
    if (ours.kind, ours.unit) != (theirs.kind, theirs.unit):
        MECHANISMS.remove(mechanism.name)
        raise ConfigError(f"mechanism {mechanism.name}: its event ({ours.kind}, {ours.unit}) is not that of "
                          f"{base.name} ({theirs.kind}, {theirs.unit}), the kind it is declared a variant of")


def unregister(name: str) -> None:
    global _by_event
    MECHANISMS.remove(name)
    _by_event = None


def names() -> tuple[str, ...]:
    return tuple(MECHANISMS)


def known_violations() -> dict[str, str]:
    """The registered kinds that audit a labelled variant whose shipped verdict is a known VIOLATION, with why
    (:attr:`~audits.mechanisms.base.Mechanism.known_violation`)."""
    return {n: m.known_violation for n, m in MECHANISMS.items() if m.known_violation.strip()}


def _event_index() -> dict[tuple[str, str], str]:
    global _by_event
    if _by_event is None:
        index: dict[tuple[str, str], str] = {}
        for name, mech in MECHANISMS.items():
            if mech.variant_of:  # audits another kind's event on other pairs: never the ledger's match
                continue
            ev = mech.event(1.0)
            index.setdefault((ev.kind, ev.unit), name)
        _by_event = index
    return _by_event


def mechanism_for(event: Event) -> str | None:
    """The mechanism-level audit of a ledger event: the mechanism of :data:`MECHANISMS` whose own event has the
    same kind and privacy unit (a Gaussian is NAP's at edge or node level, a Laplace PATE's vote count at node
    level and EdgeRand's edge count at edge level), or None; a kind declared ``variant_of`` another is never it.
    The one place ledger kinds meet mechanism names."""
    return _event_index().get((event.kind, event.unit))


def audited_kinds() -> frozenset[str]:
    """The ledger event kinds some registered mechanism-level audit covers."""
    return frozenset(k for k, _ in _event_index())
