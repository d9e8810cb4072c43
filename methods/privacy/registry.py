"""The one accountant registry: every accountant a run, a calibration, ``bench account`` or the conformance suite
can name, by name.

An accountant is a class with a one-line ``description``, ``version()`` and ``epsilon(events, delta) -> float`` for a
list of :mod:`methods.privacy.events` events at ``delta``; it raises :class:`Unsupported` with a reason for a ledger
it has no bound for. The suite's own run accountants (``tight``, ``rdp``, ``rdp/standard``, ``pld``:
:mod:`methods.privacy.accountant`) are built in; the conformance suite's adapters
(``methods.privacy.conformance.adapters``) and a plugin's classes register here with :func:`register_accountant`, so
that one a run names is the one the conformance suite tested (``bench run --accountant NAME``, admitted by
``methods.privacy.conformance.check.admit``).
"""

from __future__ import annotations

from typing import Any, Callable

from methods.errors import ConfigError
from methods.registry import Registry


class Unsupported(Exception):
    """An accountant cannot account a ledger (an event kind, a parameter or a mix of neighbouring relations it
    has no bound for). The conformance suite reports it as UNSUPPORTED with the reason; a run stops with it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


#: the suite's own run accountants (:mod:`methods.privacy.accountant`), named ``tight``, ``rdp[/conversion]``, ``pld``
RUN_ACCOUNTANTS = ("rdp", "pld", "tight")

#: every registered accountant class by name, in registration order (:class:`methods.registry.Registry`)
ACCOUNTANT_REGISTRY: Registry[type] = Registry("accountant")


def register_accountant(name: str, order: float | None = None) -> Callable[[type], type]:
    """Class decorator: ``@register_accountant("mine")`` makes an accountant available to ``bench accountants`` and
    to runs (``--accountant mine``).

    The class needs a one-line ``description`` and the methods ``version()`` and ``epsilon(events, delta)``; it
    is instantiated without arguments wherever it is used. ``order``: its place in every listing (the built-in
    adapters' modules declare theirs; accountants without one follow in registration order)."""

    def deco(cls: type) -> type:
        if not isinstance(cls, type):
            raise TypeError(f"@register_accountant({name!r}) must decorate a class")
        if not name or not isinstance(name, str) or any(c.isspace() or c == "," for c in name):
            raise ConfigError(f"accountant name {name!r}: a non-empty name without spaces or commas")
        if name.partition("/")[0] in RUN_ACCOUNTANTS:
            raise ConfigError(f"accountant name {name!r} is one of the suite's run accountants")
        missing = [m for m in ("version", "epsilon") if not callable(getattr(cls, m, None))]
        if missing or not isinstance(getattr(cls, "description", None), str):
            raise ConfigError(f"accountant {name}: the class needs a description string and version() and "
                              f"epsilon(events, delta) methods (missing: {', '.join(missing) or 'description'})")
        ACCOUNTANT_REGISTRY.add(name, cls, same=lambda prev, new: (prev.__module__, prev.__qualname__)
                                == (new.__module__, new.__qualname__), order=order)
        cls.name = name
        return cls

    return deco


def unregister_accountant(name: str) -> None:
    ACCOUNTANT_REGISTRY.remove(name)


def available_accountants() -> dict[str, type]:
    """Every registered accountant class by name (built-ins first, then plugins, each in registration order)."""
    return ACCOUNTANT_REGISTRY.available()


def get_accountant(name: str) -> Any:
    """A fresh instance of the accountant registered as ``name`` (a ConfigError naming the known ones if none)."""
    return ACCOUNTANT_REGISTRY.lookup(name, " (a plugin's: bench --plugin FILE accountants ...)")()


__all__ = ["ACCOUNTANT_REGISTRY", "Unsupported", "available_accountants", "get_accountant", "register_accountant", "unregister_accountant"]
