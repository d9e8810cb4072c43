"""Accountants under test: one adapter per accountant, registered by name in the one registry
(:mod:`methods.privacy.registry`; ``bench accountants list``), where runs find them too (``--accountant NAME``).

An adapter is a class with ``name`` (set by :func:`register_accountant`), ``description``, ``version()`` (the
library it wraps, read from the installed distribution's metadata so that listing imports nothing) and
``epsilon(events, delta) -> float`` for a list of :mod:`methods.privacy.events` events at ``delta``. An adapter
raises :class:`Unsupported` with a reason for an event, parameter or neighbouring relation its accountant cannot
account: the suite reports that as UNSUPPORTED, never as a failure, while any other exception is an ERROR. An
optional ``prepare()`` runs once before the timed calls (the built-ins import their libraries there, so that a
per-accountant time is accounting, not an import).

The built-ins are the modules of this folder, one per library, each registering its adapters on import
(:func:`methods.registry.discover`: the folder is the list, and a module's ``order=`` is its place in every
listing): ours (``ours-tight``, ``ours-rdp``, ``ours-pld``), Google's dp-accounting (``dp-accounting-rdp``,
``dp-accounting-pld``) and Opacus (``opacus-rdp``, ``opacus-prv``, ``opacus-gdp``). A new library's adapters are one
module here; a plugin file registers its own with the same decorator (``bench --plugin FILE accountants check
--accountant NAME``; example: ``tests/plugins/accountant_plugin.py``). This module holds what they share.

Importing this package loads neither torch nor the accounting libraries: Opacus imports torch, so its adapters
import it inside ``epsilon``.
"""

from __future__ import annotations

import math
from typing import Any

from methods.errors import BenchError
from methods.privacy.registry import (Unsupported, available_accountants, get_accountant, register_accountant,
                                      unregister_accountant)
from methods.registry import discover as _discover


def library_version(distribution: str) -> str:
    """``"name X.Y.Z"`` of an installed distribution (``"name (not installed)"`` if it is not), without
    importing it. For this suite's own, the installed number; the harness's reports name the checkout's commit
    beside it (``bench.accountants``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{distribution} {version(distribution)}"
    except PackageNotFoundError:
        return f"{distribution} (not installed)"


def installed(distribution: str) -> None:
    """Raise :class:`Unsupported` unless ``distribution`` is installed (an optional library's adapters)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(distribution)
    except PackageNotFoundError:
        raise Unsupported(f"{distribution} is not installed") from None


def counted(events: list) -> list:
    """The events of a ledger that ran at least once."""
    return [e for e in events if e.count]


def describe(accountant: Any) -> dict[str, str]:
    """``{"name", "description", "version"}`` of an accountant (an instance, or a registered name); a broken
    ``version()`` is reported in place of the version, so that a listing never fails."""
    acc = get_accountant(accountant) if isinstance(accountant, str) else accountant
    try:
        ver = str(acc.version())
    except Exception as e:  # a plugin's bug, shown rather than raised
        ver = f"(version() failed: {type(e).__name__}: {e})"
    return {"name": acc.name, "description": " ".join(str(acc.description).split()), "version": ver}


def check_epsilon(value: Any) -> float:
    """An accountant's return value as a float (a BenchError if it is not a real number)."""
    if isinstance(value, bool):
        raise BenchError(f"returned {value!r}, not a number")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise BenchError(f"returned {value!r}, not a number") from None
    if math.isnan(out):
        raise BenchError("returned nan")
    return out


_discover(__name__, __path__, "register_accountant")  # last: the adapters import the helpers above

__all__ = ["Unsupported", "available_accountants", "check_epsilon", "counted", "describe", "get_accountant",
           "installed", "library_version", "register_accountant", "unregister_accountant"]
