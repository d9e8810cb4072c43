"""Opacus's accountants as the conformance suite sees them: ``opacus-rdp``, ``opacus-prv`` and ``opacus-gdp`` (a CLT
approximation, not a bound). Opacus imports torch, so they import it inside ``epsilon``."""

from __future__ import annotations

import warnings

from methods.privacy.conformance.adapters import counted, installed, library_version
from methods.privacy.registry import Unsupported, register_accountant

#: where this module's accountants are listed: after dp-accounting's
ORDER = 2


def opacus_history(events: list) -> list[tuple[float, float, int]]:
    """Opacus's accountant history, ``[(noise_multiplier, sample_rate, steps), ...]``: Opacus accounts DP-SGD
    steps on Poisson batches (add/remove) only; a plain Gaussian is a step with sample rate 1."""
    from methods.privacy.events import Gaussian, PoissonGaussian

    hist: dict[tuple[float, float], int] = {}
    for e in counted(events):
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
        installed("opacus")
        import opacus.accountants  # noqa: F401 - torch's import (seconds) outside the timed calls

    def version(self) -> str:
        return library_version("opacus")

    def epsilon(self, events: list, delta: float) -> float:
        history = opacus_history(events)
        if not history:
            return 0.0
        installed("opacus")
        import numpy as np

        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            warnings.simplefilter("ignore")  # GDP's "experimental" warning, PRV's log(0) at sample rate 1
            acc = self._accountant(history)
            acc.history = list(history)  # Opacus's own state format (IAccountant.state_dict), one entry per (z, q)
            return float(acc.get_epsilon(delta=delta))

    def _accountant(self, history):  # pragma: no cover - abstract
        raise NotImplementedError


@register_accountant("opacus-rdp", order=ORDER)
class OpacusRdp(_Opacus):
    description = "Opacus RDPAccountant (its default alphas); Poisson-subsampled and plain Gaussian only"

    def _accountant(self, history):
        from opacus.accountants import RDPAccountant

        return RDPAccountant()


@register_accountant("opacus-prv", order=ORDER)
class OpacusPrv(_Opacus):
    description = "Opacus PRVAccountant (Gopi et al. 2021, eps_error 0.01, its upper value); Gaussian steps only"

    def _accountant(self, history):
        from opacus.accountants import PRVAccountant

        return PRVAccountant()


@register_accountant("opacus-gdp", order=ORDER)
class OpacusGdp(_Opacus):
    description = ("Opacus GaussianAccountant: a CLT approximation (mu-GDP), NOT a bound; one (noise, rate) "
                   "pair only")

    def _accountant(self, history):
        if len(history) > 1:
            raise Unsupported("Opacus's GDP accountant takes one noise multiplier and one sample rate")
        from opacus.accountants import GaussianAccountant

        return GaussianAccountant()
