"""Our own accountants as the conformance suite sees them: ``ours-tight`` (what runs report and calibrate with),
``ours-rdp`` and ``ours-pld`` (:mod:`methods.privacy.accountant`)."""

from __future__ import annotations

from methods.privacy.conformance.adapters import counted, library_version
from methods.privacy.registry import Unsupported, register_accountant

#: where this module's accountants are listed: first
ORDER = 0


class _Ours:
    def prepare(self) -> None:
        import methods.privacy.accountant  # noqa: F401 - and through it dp-accounting: outside the timed calls
        from dp_accounting.pld import privacy_loss_distribution  # noqa: F401
        from dp_accounting.rdp import rdp_privacy_accountant  # noqa: F401

    def version(self) -> str:
        # ours-* convert (and ours-pld composes) with dp-accounting: its version moves our values too
        return f"{library_version('dp-gnn-bench')} ({library_version('dp-accounting')})"


@register_accountant("ours-tight", order=ORDER)
class OursTight(_Ours):
    description = ("methods.privacy's tight accountant (what runs report and calibrate with): the smallest of its "
                   "RDP bound (per order the minimum of each event's bounds) and, where every event's pair is a "
                   "proven dominating one, its PLD")

    def epsilon(self, events: list, delta: float) -> float:
        from methods.privacy.accountant import tight_epsilon

        return tight_epsilon(events, delta)[0]


@register_accountant("ours-rdp", order=ORDER)
class OursRdp(_Ours):
    description = ("methods.privacy RDP curves on our order grid, improved RDP->DP conversion (what runs reported "
                   "before version 1.0.0; the papers' bounds)")

    def epsilon(self, events: list, delta: float) -> float:
        from methods.privacy.accountant import rdp_epsilon

        return rdp_epsilon(events, delta, "improved")[0]


@register_accountant("ours-pld", order=ORDER)
class OursPld(_Ours):
    description = "methods.privacy PLD: dp-accounting privacy-loss distributions of our events (pessimistic)"

    def epsilon(self, events: list, delta: float) -> float:
        from methods.privacy.accountant import pld_epsilon
        from methods.privacy.events import Event

        for e in counted(events):
            if type(e).pld is Event.pld:  # the event class has no PLD
                raise Unsupported(f"our PLD accountant has no privacy-loss distribution for {e.kind}")
        return pld_epsilon(events, delta)
