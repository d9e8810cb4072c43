"""Google's dp-accounting as the conformance suite sees it: ``dp-accounting-rdp`` and ``dp-accounting-pld``, each
event mapped to its own ``dp_event``."""

from __future__ import annotations

from methods.privacy.conformance.adapters import counted, library_version
from methods.privacy.registry import Unsupported, register_accountant

#: where this module's accountants are listed: after ours
ORDER = 1


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

    events = counted(events)
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


@register_accountant("dp-accounting-rdp", order=ORDER)
class DpAccountingRdp(_DpAccounting):
    description = "dp-accounting RdpAccountant (its default orders and conversion), events mapped to dp_event"
    pld = False

    def _accountant(self, relation):
        from dp_accounting.rdp import RdpAccountant

        return RdpAccountant(neighboring_relation=relation)


@register_accountant("dp-accounting-pld", order=ORDER)
class DpAccountingPld(_DpAccounting):
    description = "dp-accounting PLDAccountant (pessimistic, value discretisation 1e-4), events mapped to dp_event"
    pld = True

    def _accountant(self, relation):
        from dp_accounting.pld import PLDAccountant

        return PLDAccountant(neighboring_relation=relation)

