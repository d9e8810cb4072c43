"""Accountants under test: one adapter per accountant, registered by name in the one registry
(:mod:`methods.privacy.registry`; ``bench accountants list``), where runs find them too (``--accountant NAME``).

An adapter is a class with ``name`` (set by :func:`register_accountant`), ``description``, ``version()`` (the
library it wraps, read from the installed distribution's metadata so that listing imports nothing) and
``epsilon(events, delta) -> float`` for a list of :mod:`methods.privacy.events` events at ``delta``. An adapter
raises :class:`Unsupported` with a reason for an event, parameter or neighbouring relation its accountant cannot
account: the suite reports that as UNSUPPORTED, never as a failure, while any other exception is an ERROR. An
optional ``prepare()`` runs once before the timed calls (the built-ins import their libraries there, so that a
per-accountant time is accounting, not an import).

Built-ins: ours (``ours-tight``, ``ours-rdp``, ``ours-pld``), Google's dp-accounting (``dp-accounting-rdp``,
``dp-accounting-pld``) and Opacus (``opacus-rdp``, ``opacus-prv``, ``opacus-gdp``). A plugin file registers its own
with the same decorator (``bench --plugin FILE accountants check --accountant NAME``; example:
``tests/plugins/accountant_plugin.py``).

Importing this module loads neither torch nor the accounting libraries: Opacus imports torch, so its adapters
import it inside ``epsilon``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from methods.errors import BenchError
from methods.privacy.registry import (Unsupported, available_accountants, get_accountant, register_accountant,
                                      unregister_accountant)


def library_version(distribution: str) -> str:
    """``"name X.Y.Z"`` of an installed distribution (``"name (not installed)"`` if it is not), without
    importing it. For this suite's own, the installed number; the harness's reports name the checkout's commit
    beside it (``bench.accountants``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{distribution} {version(distribution)}"
    except PackageNotFoundError:
        return f"{distribution} (not installed)"


def _installed(distribution: str) -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(distribution)
    except PackageNotFoundError:
        raise Unsupported(f"{distribution} is not installed") from None


def _counted(events: list) -> list:
    return [e for e in events if e.count]


# --------------------------------------------------------------------------------------------------------------
# ours
# --------------------------------------------------------------------------------------------------------------


class _Ours:
    def prepare(self) -> None:
        import methods.privacy.accountant  # noqa: F401 - and through it dp-accounting: outside the timed calls
        from dp_accounting.pld import privacy_loss_distribution  # noqa: F401
        from dp_accounting.rdp import rdp_privacy_accountant  # noqa: F401

    def version(self) -> str:
        # ours-* convert (and ours-pld composes) with dp-accounting: its version moves our values too
        return f"{library_version('dp-gnn-bench')} ({library_version('dp-accounting')})"


@register_accountant("ours-tight")
class OursTight(_Ours):
    description = ("methods.privacy's tight accountant (what runs report and calibrate with): the smallest of its "
                   "RDP bound (per order the minimum of each event's bounds) and, where every event's pair is a "
                   "proven dominating one, its PLD")

    def epsilon(self, events: list, delta: float) -> float:
        from methods.privacy.accountant import tight_epsilon

        return tight_epsilon(events, delta)[0]


@register_accountant("ours-rdp")
class OursRdp(_Ours):
    description = ("methods.privacy RDP curves on our order grid, improved RDP->DP conversion (what runs reported "
                   "before version 1.0.0; the papers' bounds)")

    def epsilon(self, events: list, delta: float) -> float:
        from methods.privacy.accountant import rdp_epsilon

        return rdp_epsilon(events, delta, "improved")[0]


@register_accountant("ours-pld")
class OursPld(_Ours):
    description = "methods.privacy PLD: dp-accounting privacy-loss distributions of our events (pessimistic)"

    def epsilon(self, events: list, delta: float) -> float:
        from methods.privacy.accountant import pld_epsilon
        from methods.privacy.events import Event

        for e in _counted(events):
            if type(e).pld is Event.pld:  # the event class has no PLD
                raise Unsupported(f"our PLD accountant has no privacy-loss distribution for {e.kind}")
        return pld_epsilon(events, delta)


# --------------------------------------------------------------------------------------------------------------
# dp-accounting
# --------------------------------------------------------------------------------------------------------------

def dp_accounting_events(events: list, pld: bool) -> tuple[list, str]:
    """(dp_event objects, relation) for ``events``: each event's own :meth:`~methods.privacy.events.Event.dp_event`
    (one ``SelfComposedDpEvent`` per event with count > 1), and the neighbouring relation the accountant must hold
    (``add_remove`` unless an event's :attr:`~methods.privacy.events.Event.dp_event_relation` is ``replace_one``).

    Unsupported: an event with no dp_event (the hypergeometric DP-GNN step), and a ledger whose events force both
    relations. PLD only: Laplace holds under add/remove only, and without-replacement sampling has no PLD; a
    Gaussian under replace-one is read by dp-accounting's PLD as the replacement of an add/remove query (twice the
    shift), so its noise multiplier is doubled there to keep the event's own meaning."""
    from dp_accounting import dp_event as E

    from methods.privacy.events import FixedSizeGaussian, Gaussian, Laplace

    events = _counted(events)
    forced = {}
    for e in events:
        need = "add_remove" if pld and isinstance(e, Laplace) else e.dp_event_relation
        if need:
            forced.setdefault(need, e.kind)
    if len(forced) > 1:
        raise Unsupported(f"the ledger mixes relations ({forced['add_remove']} needs add/remove, "
                          f"{forced['replace_one']} replace-one); a dp-accounting accountant holds one")
    relation = next(iter(forced), "add_remove")
    out = []
    for e in events:
        if pld and isinstance(e, FixedSizeGaussian):
            raise Unsupported("dp-accounting's PLD accountant has no sampled-without-replacement event")
        if pld and relation == "replace_one" and isinstance(e, Gaussian):
            d = E.GaussianDpEvent(e.noise_multiplier * 2.0)
        else:
            d = e.dp_event()
        if d is None:
            raise Unsupported(f"dp-accounting has no {e.kind} event")
        out.append(d if e.count == 1 else E.SelfComposedDpEvent(d, e.count))
    return out, relation


class _DpAccounting:
    def prepare(self) -> None:
        from dp_accounting.pld import PLDAccountant  # noqa: F401 - imported outside the timed calls
        from dp_accounting.rdp import RdpAccountant  # noqa: F401

    def version(self) -> str:
        return library_version("dp-accounting")

    def _accountant(self, relation):  # pragma: no cover - abstract
        raise NotImplementedError

    def epsilon(self, events: list, delta: float) -> float:
        from dp_accounting import ComposedDpEvent, NeighboringRelation, UnsupportedEventError

        dp_events, relation = dp_accounting_events(events, pld=self.pld)
        if not dp_events:
            return 0.0
        rel = {"add_remove": NeighboringRelation.ADD_OR_REMOVE_ONE, "replace_one": NeighboringRelation.REPLACE_ONE}
        acc = self._accountant(rel[relation])
        try:
            acc.compose(ComposedDpEvent(dp_events))
        except UnsupportedEventError as e:  # its message repeats the whole ledger before the reason
            raise Unsupported(f"dp-accounting: {str(e).rpartition('Error: ')[2]}") from None
        return float(acc.get_epsilon(delta))


@register_accountant("dp-accounting-rdp")
class DpAccountingRdp(_DpAccounting):
    description = "dp-accounting RdpAccountant (its default orders and conversion), events mapped to dp_event"
    pld = False

    def _accountant(self, relation):
        from dp_accounting.rdp import RdpAccountant

        return RdpAccountant(neighboring_relation=relation)


@register_accountant("dp-accounting-pld")
class DpAccountingPld(_DpAccounting):
    description = "dp-accounting PLDAccountant (pessimistic, value discretisation 1e-4), events mapped to dp_event"
    pld = True

    def _accountant(self, relation):
        from dp_accounting.pld import PLDAccountant

        return PLDAccountant(neighboring_relation=relation)


# --------------------------------------------------------------------------------------------------------------
# Opacus
# --------------------------------------------------------------------------------------------------------------


def opacus_history(events: list) -> list[tuple[float, float, int]]:
    """Opacus's accountant history, ``[(noise_multiplier, sample_rate, steps), ...]``: Opacus accounts DP-SGD
    steps on Poisson batches (add/remove) only; a plain Gaussian is a step with sample rate 1."""
    from methods.privacy.events import Gaussian, PoissonGaussian

    hist: dict[tuple[float, float], int] = {}
    for e in _counted(events):
        match e:
            case PoissonGaussian():
                key = (float(e.noise_multiplier), float(e.rate))
            case Gaussian():
                key = (float(e.noise_multiplier), 1.0)
            case _:
                raise Unsupported(f"Opacus accounts Poisson-subsampled and plain Gaussian steps only, not {e.kind}")
        hist[key] = hist.get(key, 0) + e.count
    return [(z, q, t) for (z, q), t in hist.items()]


class _Opacus:
    def prepare(self) -> None:
        _installed("opacus")
        import opacus.accountants  # noqa: F401 - torch's import (seconds) outside the timed calls

    def version(self) -> str:
        return library_version("opacus")

    def epsilon(self, events: list, delta: float) -> float:
        history = opacus_history(events)
        if not history:
            return 0.0
        _installed("opacus")
        import numpy as np

        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            warnings.simplefilter("ignore")  # GDP's "experimental" warning, PRV's log(0) at sample rate 1
            acc = self._accountant(history)
            acc.history = list(history)  # Opacus's own state format (IAccountant.state_dict), one entry per (z, q)
            return float(acc.get_epsilon(delta=delta))

    def _accountant(self, history):  # pragma: no cover - abstract
        raise NotImplementedError


@register_accountant("opacus-rdp")
class OpacusRdp(_Opacus):
    description = "Opacus RDPAccountant (its default alphas); Poisson-subsampled and plain Gaussian only"

    def _accountant(self, history):
        from opacus.accountants import RDPAccountant

        return RDPAccountant()


@register_accountant("opacus-prv")
class OpacusPrv(_Opacus):
    description = "Opacus PRVAccountant (Gopi et al. 2021, eps_error 0.01, its upper value); Gaussian steps only"

    def _accountant(self, history):
        from opacus.accountants import PRVAccountant

        return PRVAccountant()


@register_accountant("opacus-gdp")
class OpacusGdp(_Opacus):
    description = ("Opacus GaussianAccountant: a CLT approximation (mu-GDP), NOT a bound; one (noise, rate) "
                   "pair only")

    def _accountant(self, history):
        if len(history) > 1:
            raise Unsupported("Opacus's GDP accountant takes one noise multiplier and one sample rate")
        from opacus.accountants import GaussianAccountant

        return GaussianAccountant()


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


__all__ = ["Unsupported", "available_accountants", "check_epsilon", "describe",
           "dp_accounting_events", "get_accountant", "library_version", "opacus_history", "register_accountant",
           "unregister_accountant"]
