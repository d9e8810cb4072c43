"""An example accountant plugin: ``bench --plugin tests/plugins/accountant_plugin.py accountants check
--accountant basic-composition,rdp-x0.9``.

It registers two accountants through the public interface only (``methods.privacy.registry``), where runs find
them too (``bench --plugin FILE run ... --accountant basic-composition``, once the conformance suite admits it):

* ``basic-composition``: sound but loose. Every pure epsilon-DP event adds its epsilon; every Gaussian adds the
  exact epsilon of one Gaussian at an equal share of delta (the basic composition theorem, Dwork & Roth 2014,
  Theorem 3.16). Anything else is UNSUPPORTED.
* ``rdp-x0.9``: deliberately unsound, our RDP epsilon shaved by 10%: the suite must call it UNSOUND wherever a
  case's lower limit is within 10% of the RDP bound.

An accountant is a class with a ``description``, ``version()`` and ``epsilon(events, delta)``; it raises
``Unsupported(reason)`` for a ledger it has no bound for. ``events`` are ``methods.privacy.events`` objects:
``e.kind``, ``e.count`` and the kind's parameters (``e.noise_multiplier`` of a Gaussian, ...).
"""

from methods.privacy.registry import Unsupported, register_accountant
from methods.privacy.conformance.limits import gaussian_epsilon  # exact mu-GDP epsilon at delta (mpmath)


@register_accountant("basic-composition")
class BasicComposition:
    description = "basic composition: pure epsilons add, each Gaussian at an equal share of delta (example plugin)"

    def version(self) -> str:
        return "example plugin 1.0"

    def epsilon(self, events: list, delta: float) -> float:
        events = [e for e in events if e.count]
        gaussians = sum(e.count for e in events if e.kind == "gaussian")
        total = 0.0
        for e in events:
            pure = e.pure_epsilon()
            if pure is not None:
                total += e.count * pure
            elif e.kind == "gaussian":
                total += e.count * gaussian_epsilon(1.0 / e.noise_multiplier, delta / gaussians)
            else:
                raise Unsupported(f"basic composition here knows pure-DP and Gaussian events, not {e.kind}")
        return total


@register_accountant("rdp-x0.9")
class ShavedRdp:
    description = "our RDP epsilon x 0.9: deliberately UNSOUND (example plugin)"

    def version(self) -> str:
        return "example plugin 1.0"

    def epsilon(self, events: list, delta: float) -> float:
        from methods.privacy.accountant import rdp_epsilon

        return 0.9 * rdp_epsilon(events, delta)[0]
