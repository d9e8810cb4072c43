"""Immutable mechanism events: what ran, under which neighbouring relation, how many times.

Every event states its privacy ``unit`` (``edge``, ``node`` or ``feature``), its neighbouring
``relation`` (``add_remove``: the unit is present or absent; ``replace_one``: the unit's data is
replaced) and ``count`` (identical applications). ``rdp(orders)`` is the RDP curve of ONE
application; ``pld()`` its privacy-loss distribution where dp-accounting has one. ``pld_dominates`` says whether
that PLD is a proven dominating pair for the event as the methods use it (the ``tight`` accountant uses only
those); ``tight_rdp(orders)`` is the smallest RDP curve the suite can prove for it (per order, the minimum of the
bounds it has).

Noise multipliers are always "noise standard deviation / sensitivity under the event's relation".
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np

from methods.errors import BenchError
from methods.privacy import rdp as R

Unit = Literal["edge", "node", "feature"]
Relation = Literal["add_remove", "replace_one"]
UNITS = ("edge", "node", "feature")
RELATIONS = ("add_remove", "replace_one")


class LedgerError(BenchError, ValueError):
    """An invalid event, an inconsistent ledger, or an event an accountant cannot handle."""


def _positive(name: str, v: float, allow_inf: bool = False) -> None:
    if not (v > 0) or (math.isinf(v) and not allow_inf) or math.isnan(v):
        raise LedgerError(f"{name} must be a positive finite number (got {v})")


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base class. Subclasses add their parameters and implement ``_rdp`` (and ``_pld`` if possible)."""

    unit: Unit = "node"
    relation: Relation = "add_remove"
    count: int = 1

    kind: ClassVar[str] = "event"
    fixed_relation: ClassVar[str | None] = None  # the only relation the bound is proven for, if any
    #: ``pld()`` is the PLD of a proven dominating pair of the event as ledgers use it (the ``tight`` accountant)
    pld_dominates: ClassVar[bool] = False
    #: below this noise multiplier a Gaussian step's privacy loss spans thousands of nats: its PLD on the 1e-4 grid
    #: has 10^7-10^8 buckets (minutes to build), for an epsilon of no practical use; ``tight`` leaves it to RDP
    MIN_PLD_NOISE: ClassVar[float] = 0.1
    #: a DP-SGD step (a noisy sum of clipped per-example gradients): then :attr:`step_sensitivity`,
    #: :attr:`example_rate`, :attr:`unit_occupancy` and :attr:`unit_rate` say what the ledger allows one step
    dpsgd_step: ClassVar[bool] = False
    #: what shows that the event ran: ``"dpsgd"`` (a step the DP optimiser's hook sees) or the kind of release
    #: reported to :func:`methods.mechanisms.release` that draws its noise
    released_as: ClassVar[str | None] = None
    #: the neighbouring relation under which :meth:`dp_event` means what this event means (dp-accounting's
    #: accountants hold one relation each); ``None``: either
    dp_event_relation: ClassVar[str | None] = None

    def pld_practical(self) -> bool:
        """Whether :meth:`pld` is cheap enough for the ``tight`` accountant to try (a Gaussian-type step with a noise
        multiplier of at least :data:`MIN_PLD_NOISE`; every other kind)."""
        z = getattr(self, "noise_multiplier", None)
        return z is None or z >= self.MIN_PLD_NOISE

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise LedgerError(f"{self.kind}: unit must be one of {UNITS} (got {self.unit!r})")
        if self.relation not in RELATIONS:
            raise LedgerError(f"{self.kind}: relation must be one of {RELATIONS} (got {self.relation!r})")
        if self.fixed_relation and self.relation != self.fixed_relation:
            raise LedgerError(f"{self.kind}: its bound holds for the {self.fixed_relation} relation only "
                              f"(got {self.relation})")
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 0:
            raise LedgerError(f"{self.kind}: count must be a non-negative integer (got {self.count!r})")
        self.validate()

    def validate(self) -> None:
        pass

    # identity without the count: events with the same key merge in a ledger
    def key(self) -> "Event":
        return dataclasses.replace(self, count=1)

    def times(self, count: int) -> "Event":
        return dataclasses.replace(self, count=count)

    def rdp(self, orders: np.ndarray | None = None) -> np.ndarray:
        """RDP of one application at ``orders`` (default: the module grid), cached per event."""
        if orders is None:
            return _cached_rdp(self.key())
        return monotone_envelope(np.asarray(orders, dtype=float), self._rdp(np.asarray(orders, dtype=float)))

    def _rdp(self, orders: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def tight_rdp(self, orders: np.ndarray | None = None) -> np.ndarray:
        """The smallest RDP curve of one application the suite proves: per order, the minimum of every bound it
        has for the event (a minimum of valid bounds at each order is one; composition sums per order). Default:
        :meth:`rdp`."""
        if orders is None:
            return _cached_tight_rdp(self.key())
        return monotone_envelope(np.asarray(orders, dtype=float), self._tight_rdp(np.asarray(orders, dtype=float)))

    def _tight_rdp(self, orders: np.ndarray) -> np.ndarray:
        return self._rdp(orders)

    def pld(self):
        """A dp-accounting PrivacyLossDistribution of one application, or LedgerError."""
        raise LedgerError(f"the PLD accountant does not support {self.kind} events; use --accountant rdp")

    def pure_epsilon(self) -> float | None:
        """epsilon of one application if the mechanism is pure epsilon-DP, else None."""
        return None

    def dp_event(self):
        """dp-accounting's ``DpEvent`` for one application (under :attr:`dp_event_relation`), or None where the
        library has none."""
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **dataclasses.asdict(self)}

    def describe(self) -> str:
        params = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                           if f.name not in ("unit", "relation", "count"))
        return f"{self.count} x {self.kind}({params}) [{self.unit}, {self.relation}]"


def monotone_envelope(orders: np.ndarray, rdp: np.ndarray) -> np.ndarray:
    """Tighten a curve with RDP's monotonicity in alpha: a bound at a larger order also bounds every
    smaller one. Repairs orders where a numerical routine gave up (dp-accounting returns inf when its
    fractional-order series does not converge, e.g. q=0.51, noise 8) and never loosens a value."""
    order = np.argsort(orders)
    r = np.asarray(rdp, dtype=float)[order]
    r = np.where(np.isnan(r), np.inf, r)
    env = np.minimum.accumulate(r[::-1])[::-1]
    out = np.empty_like(env)
    out[order] = env
    return out


@lru_cache(maxsize=512)
def _cached_rdp(event: Event) -> np.ndarray:
    out = monotone_envelope(R.ORDERS, event._rdp(R.ORDERS))  # noqa: SLF001 - the event's own curve
    out.setflags(write=False)
    return out


@lru_cache(maxsize=512)
def _cached_tight_rdp(event: Event) -> np.ndarray:
    out = monotone_envelope(R.ORDERS, event._tight_rdp(R.ORDERS))  # noqa: SLF001 - the event's own curve
    out.setflags(write=False)
    return out


def _dpa_rdp(dp_event, orders: np.ndarray, relation: str) -> np.ndarray:
    from dp_accounting import NeighboringRelation
    from dp_accounting.rdp import RdpAccountant

    rel = {"add_remove": NeighboringRelation.ADD_OR_REMOVE_ONE, "replace_one": NeighboringRelation.REPLACE_ONE}
    acc = RdpAccountant(orders=list(orders), neighboring_relation=rel[relation])
    acc.compose(dp_event)
    return acc.rdp


# --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Gaussian(Event):
    """Gaussian noise of standard deviation ``sigma`` on a query of L2 ``sensitivity``."""

    sensitivity: float
    sigma: float
    kind: ClassVar[str] = "gaussian"
    pld_dominates: ClassVar[bool] = True  # N(0, s^2) vs N(Delta, s^2) in any dimension (rotation invariance)
    released_as: ClassVar[str] = "gaussian"

    def validate(self) -> None:
        _positive("sensitivity", self.sensitivity)
        _positive("sigma", self.sigma)

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity

    @property
    def gdp_mu(self) -> float:
        """mu of the mu-GDP pair N(0, 1) vs N(mu, 1) that :meth:`pld` is (exact)."""
        return 1.0 / self.noise_multiplier

    @property
    def noise_scale(self) -> float:
        """The standard deviation of the noise drawn."""
        return self.sigma

    def dp_event(self):
        from dp_accounting import GaussianDpEvent

        return GaussianDpEvent(self.noise_multiplier)

    def _rdp(self, orders):
        return _dpa_rdp(self.dp_event(), orders, "add_remove")

    def pld(self):
        from methods.privacy import pldfast

        return pldfast.gaussian(self.noise_multiplier)


@dataclass(frozen=True, kw_only=True)
class Laplace(Event):
    """Laplace noise of ``scale`` on a query of L1 ``sensitivity``: pure (sensitivity/scale)-DP."""

    scale: float
    sensitivity: float = 1.0
    kind: ClassVar[str] = "laplace"
    pld_dominates: ClassVar[bool] = True  # for vector queries too: :meth:`Laplace.pld`
    released_as: ClassVar[str] = "laplace"

    def validate(self) -> None:
        _positive("scale", self.scale)
        _positive("sensitivity", self.sensitivity)

    @property
    def noise_scale(self) -> float:
        """The scale b of the Laplace noise drawn."""
        return self.scale

    def dp_event(self):
        from dp_accounting import LaplaceDpEvent

        return LaplaceDpEvent(self.scale / self.sensitivity)

    def _rdp(self, orders):
        return _dpa_rdp(self.dp_event(), orders, "add_remove")

    def pld(self):
        """The scalar pair Lap(0, b) vs Lap(Delta, b); it dominates the Laplace mechanism on a VECTOR query of L1
        sensitivity Delta too (PATE's and PrivGNN's vote histograms), so its PLD bounds theirs (tested against
        the composed per-coordinate PLDs in tests/test_accounting.py).

        With b = 1 and one coordinate of shift s >= 0, the privacy loss under the first distribution is
        L_s = s - clip(U, 0, 2s), U = 2Y ~ Lap(0, 2). Two coordinates of shifts a >= c >= 0 give L_a + L_c =
        (a + c) - [clip(U1, 0, 2a) + clip(U2, 0, 2c)]. For every t in [0, a + c), with r = a + c - t in (0, 2a]:
        P(L_a + L_c > t) = 1 - P(clip(U1, 0, 2a) + clip(U2, 0, 2c) >= r) <= 1 - P(U1 >= r) = P(L_{a+c} > t),
        since clip(U2, 0, 2c) >= 0 and r <= 2a; for t >= a + c both tails are 0. The hockey-stick divergence at
        e^eps, eps >= 0, is the integral over t > eps of e^(eps - t) P(L > t), so the merged pair's is at least
        the split one's; the mechanism is symmetric (a reflection swaps the two distributions), which covers the
        other direction and eps < 0. Merging coordinates two at a time (domination survives an independent
        product) reaches one coordinate of shift ||v||_1 <= Delta, and a smaller shift is dominated by a larger
        one."""
        from methods.privacy import pldfast

        return pldfast.laplace(self.scale / self.sensitivity)

    def pure_epsilon(self) -> float:
        return self.sensitivity / self.scale


@dataclass(frozen=True, kw_only=True)
class PoissonGaussian(Event):
    """DP-SGD step: Poisson sampling with ``rate``, Gaussian noise ``noise_multiplier`` x sensitivity (add/remove)."""

    rate: float
    noise_multiplier: float
    kind: ClassVar[str] = "poisson_gaussian"
    fixed_relation: ClassVar[str] = "add_remove"
    dp_event_relation: ClassVar[str] = "add_remove"
    released_as: ClassVar[str] = "dpsgd"
    #: dp-accounting's remove and add pairs of the Poisson-subsampled Gaussian (Zhu, Dong & Wang 2022, Prop. 30)
    pld_dominates: ClassVar[bool] = True
    dpsgd_step: ClassVar[bool] = True
    #: the noisy sum's per-example sensitivity in units of the clipping threshold C (add/remove: C)
    step_sensitivity: ClassVar[float] = 1.0
    #: the examples one unit may occupy
    unit_occupancy: ClassVar[int] = 1

    @property
    def example_rate(self) -> float:
        """The per-step inclusion probability of one example."""
        return float(self.rate)

    @property
    def unit_rate(self) -> float:
        """The per-step inclusion probability of one unit."""
        return float(self.rate)

    def validate(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise LedgerError(f"sampling rate must be in [0, 1] (got {self.rate})")
        _positive("noise_multiplier", self.noise_multiplier)

    def dp_event(self):
        from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent

        return PoissonSampledDpEvent(self.rate, GaussianDpEvent(self.noise_multiplier))

    def _rdp(self, orders):
        return R.poisson_gaussian_rdp(orders, self.rate, self.noise_multiplier)

    def pld(self):
        from dp_accounting.pld import privacy_loss_distribution as PLD

        from methods.privacy import pldfast

        if self.rate == 0:  # no batch holds the unit: the step reveals nothing about it
            return PLD.identity()
        return pldfast.gaussian(self.noise_multiplier, sampling_prob=self.rate)


@dataclass(frozen=True, kw_only=True)
class FixedSizeGaussian(Event):
    """DP-SGD step on a uniformly random batch of ``sample_size`` out of ``population`` (without
    replacement), replace-one relation: Wang, Balle & Kasiviswanathan (2019), Theorem 27, as dp-accounting
    evaluates it, except that its forward differences are computed accurately (see
    :func:`methods.privacy.rdp.wor_gaussian_rdp`)."""

    population: int
    sample_size: int
    noise_multiplier: float
    relation: Relation = "replace_one"
    kind: ClassVar[str] = "fixed_size_gaussian"
    fixed_relation: ClassVar[str] = "replace_one"
    dp_event_relation: ClassVar[str] = "replace_one"
    released_as: ClassVar[str] = "dpsgd"
    pld_dominates: ClassVar[bool] = True  # the unamplified Gaussian (:meth:`pld`)
    dpsgd_step: ClassVar[bool] = True
    #: replace-one: one example's gradient swapped for another's moves the sum by up to 2 C
    step_sensitivity: ClassVar[float] = 2.0
    unit_occupancy: ClassVar[int] = 1

    @property
    def example_rate(self) -> float:
        return self.sample_size / self.population

    @property
    def unit_rate(self) -> float:
        return self.sample_size / self.population

    def validate(self) -> None:
        if not (isinstance(self.population, int) and isinstance(self.sample_size, int)):
            raise LedgerError("population and sample_size must be integers")
        if not 1 <= self.sample_size <= self.population:
            raise LedgerError(f"need 1 <= sample_size <= population (got {self.sample_size} of {self.population})")
        _positive("noise_multiplier", self.noise_multiplier)

    def dp_event(self):
        from dp_accounting import GaussianDpEvent, SampledWithoutReplacementDpEvent

        return SampledWithoutReplacementDpEvent(self.population, self.sample_size,
                                                GaussianDpEvent(self.noise_multiplier))

    def _rdp(self, orders):
        # Theorem 27 at every order of the grid, vectorised (milliseconds for the whole grid)
        return R.wor_gaussian_rdp(orders, self.sample_size / self.population, self.noise_multiplier)

    @property
    def gdp_mu(self) -> float:
        """mu of the mu-GDP pair N(0, 1) vs N(1/z, 1) that :meth:`pld` is."""
        return 1.0 / self.noise_multiplier

    def _tight_rdp(self, orders):
        """Per order, the smaller of Theorem 27 and the same Gaussian without subsampling, alpha / (2 z^2) (see
        :meth:`pld`): Theorem 27 is above the latter for large sampling fractions (up to x1.7 on public splits)."""
        return np.minimum(self._rdp(orders), R.gaussian_rdp(orders, self.noise_multiplier))

    def pld(self):
        """The Gaussian without subsampling, N(0, 1) vs N(1/z, 1): given the batch, the two datasets' outputs are
        Gaussians whose means differ by at most the sensitivity; the batch is drawn alike in both, so each output is
        the batch-mixture of those, and the hockey-stick divergence is jointly convex, so the pair dominates the
        step at every epsilon; dominating pairs compose adaptively (Zhu, Dong & Wang 2022, Theorem 10). Sound,
        and loose for small sampling fractions (there Theorem 27's RDP is the tighter one)."""
        from methods.privacy import pldfast

        return pldfast.gaussian(self.noise_multiplier)


#: the upper tail of a DP-GNN step's occurrence count that its PLD books as infinite loss (a delta of this size)
_HYP_TAIL = 1e-15


@dataclass(frozen=True, kw_only=True)
class HypergeometricGaussian(Event):
    """One DP-GNN step (Daigavane et al. 2022, Theorem 1): m of N training subgraphs drawn without
    replacement, a node occurring in at most N(K,r) of them, noise multiplier lambda = sigma / (2 C N(K,r))."""

    num_train: int
    occurrence_bound: int
    batch_size: int
    noise_multiplier: float
    kind: ClassVar[str] = "hypergeometric_gaussian"
    fixed_relation: ClassVar[str] = "add_remove"
    released_as: ClassVar[str] = "dpsgd"  # dp-accounting has no event for it: no dp_event
    pld_dominates: ClassVar[bool] = True  # the occurrence count revealed (:meth:`pld`)
    dpsgd_step: ClassVar[bool] = True

    @property
    def step_sensitivity(self) -> float:
        """2 C N(K, r): a node's data reaches up to N(K, r) subgraphs of a batch (Theorem 1)."""
        return 2.0 * self.occurrence_bound

    @property
    def example_rate(self) -> float:
        return self.batch_size / self.num_train

    @property
    def unit_occupancy(self) -> int:
        return int(self.occurrence_bound)

    @property
    def unit_rate(self) -> float:
        return min(1.0, self.batch_size * self.occurrence_bound / self.num_train)

    def validate(self) -> None:
        for name in ("num_train", "occurrence_bound", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise LedgerError(f"{name} must be a positive integer (got {v!r})")
        if self.batch_size > self.num_train:
            raise LedgerError(f"batch_size ({self.batch_size}) exceeds num_train ({self.num_train})")
        _positive("noise_multiplier", self.noise_multiplier)

    @staticmethod
    def occurrence(max_degree: int, layers: int) -> int:
        """N(K, r) = sum_{i=0..r} K^i, DP-GNN Lemma 1."""
        if max_degree < 0 or layers < 0:
            raise LedgerError("max_degree and layers must be >= 0")
        return sum(max_degree ** i for i in range(layers + 1))

    def _rdp(self, orders):
        return R.hypergeometric_gaussian_rdp(orders, self.num_train, self.occurrence_bound, self.batch_size,
                                             self.noise_multiplier)

    def _tight_rdp(self, orders):
        """Per order, the smaller of Theorem 1 and the step without subsampling (shift at most 2C N(K,r), std
        lambda 2C N(K,r): alpha / (2 lambda^2); the batch-mixture argument of :meth:`FixedSizeGaussian.pld`)."""
        return np.minimum(self._rdp(orders), R.gaussian_rdp(orders, self.noise_multiplier))

    def pld(self):
        """The PLD of Theorem 1's own pair: the batch's occurrence count k ~ Hypergeometric(N, N(K,r), m) revealed,
        then N(0, 1) vs N(k / (lambda N(K,r)), 1) (Lemma 2: the means differ by at most 2Ck; rotation invariance).
        Revealing k only adds information, so this dominates the step, and its Renyi divergence is exactly
        Theorem 1's gamma; the PLD is its exact (pessimistically discretised) loss, the h(k)-mixture of the
        Gaussian PLDs. Not the tighter mixture-of-Gaussians pair N(0) vs sum_k h(k) N(k): that one is not a
        dominating pair once N(K,r) >= 2 (docs/accounting.md)."""
        import numpy as np
        from dp_accounting.pld import pld_pmf
        from dp_accounting.pld import privacy_loss_distribution as PLD

        from methods.privacy import pldfast

        n, d_bound, m = self.num_train, self.occurrence_bound, self.batch_size
        d = min(d_bound, n)
        ks = np.arange(max(0, m + d - n), min(m, d) + 1)
        logw = np.array([R.log_comb(d, k) + R.log_comb(n - d, m - k) for k in ks]) - R.log_comb(n, m)
        w = np.exp(logw)
        # the far upper tail of k (total mass <= 1e-15; the costliest PLDs, with the smallest noise) counts as
        # infinite loss: pessimistic, so still an upper bound
        tail = np.cumsum(w[::-1])[::-1]
        keep = tail > _HYP_TAIL
        parts, inf_mass = [], float(w[~keep].sum())
        interval = None
        for k, wk in zip(ks[keep].tolist(), w[keep].tolist()):
            if wk <= 0.0:
                continue
            if k == 0:  # identical outputs: privacy loss 0
                parts.append((0, np.array([wk])))
                continue
            g = pldfast.gaussian(self.noise_multiplier * d_bound / k)._pmf_remove  # noqa: SLF001
            if not hasattr(g, "_probs"):  # a sparse PMF (a tiny loss range)
                g = g.to_dense_pmf()
            interval = g._discretization  # noqa: SLF001
            parts.append((g._lower_loss, wk * g._probs))  # noqa: SLF001
            inf_mass += wk * g._infinity_mass  # noqa: SLF001
        lower = min(lo for lo, _ in parts)
        probs = np.zeros(max(lo + len(pr) for lo, pr in parts) - lower)
        for lo, pr in parts:
            probs[lo - lower: lo - lower + len(pr)] += pr
        if interval is None:  # every batch misses the node: the step reveals nothing about it
            return PLD.identity()
        return PLD.PrivacyLossDistribution(pld_pmf.DensePLDPmf(interval, lower, probs, inf_mass, True))


@dataclass(frozen=True, kw_only=True)
class PoissonLaplace(Event):
    """Laplace(``scale``) on an L1-``sensitivity`` query over a Poisson(``rate``) subsample (add/remove);
    PrivGNN's per-query mechanism. RDP: Zhu & Wang (2019) general bound."""

    rate: float
    scale: float
    sensitivity: float = 1.0
    kind: ClassVar[str] = "poisson_laplace"
    fixed_relation: ClassVar[str] = "add_remove"
    dp_event_relation: ClassVar[str] = "add_remove"
    released_as: ClassVar[str] = "laplace"
    #: the subsampled scalar pair: it dominates a vector query's (:meth:`Laplace.pld`), and subsampling
    #: preserves domination (Zhu, Dong & Wang 2022, Prop. 30)
    pld_dominates: ClassVar[bool] = True

    def validate(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise LedgerError(f"sampling rate must be in [0, 1] (got {self.rate})")
        _positive("scale", self.scale)
        _positive("sensitivity", self.sensitivity)

    @property
    def noise_scale(self) -> float:
        """The scale b of the Laplace noise drawn."""
        return self.scale

    def dp_event(self):
        from dp_accounting import LaplaceDpEvent, PoissonSampledDpEvent

        return PoissonSampledDpEvent(self.rate, LaplaceDpEvent(self.scale / self.sensitivity))

    def _rdp(self, orders):
        b = self.scale / self.sensitivity
        return R.poisson_subsampled_rdp(orders, self.rate, lambda a: R.laplace_rdp(a, b))

    def pld(self):
        from dp_accounting.pld import privacy_loss_distribution as PLD

        from methods.privacy import pldfast

        if self.rate == 0:
            return PLD.identity()
        return pldfast.laplace(self.scale / self.sensitivity, sampling_prob=self.rate)


@dataclass(frozen=True, kw_only=True)
class RandomizedResponse(Event):
    """A pure ``epsilon``-DP randomisation of one bit per unit (EdgeRand: one adjacency bit per edge).

    Accounted as binary randomized response with likelihood ratio e^epsilon, which dominates every
    pure epsilon-DP mechanism (Kairouz, Oh & Viswanath 2015), so asymmetric flips are covered too.
    """

    epsilon: float
    unit: Unit = "edge"
    kind: ClassVar[str] = "randomized_response"
    #: binary randomized response with ratio e^epsilon dominates every pure epsilon-DP mechanism (Kairouz et al.)
    pld_dominates: ClassVar[bool] = True
    released_as: ClassVar[str] = "randomized_response"
    dp_event_relation: ClassVar[str] = "replace_one"  # the library's RR: one bucket replaced by another

    def validate(self) -> None:
        _positive("epsilon", self.epsilon)

    @property
    def noise_parameter(self) -> float:
        # dp-accounting's RR outputs a uniformly random bucket with probability p: ratio (1-p/2)/(p/2)
        return 2.0 / (1.0 + math.exp(self.epsilon))

    def dp_event(self):
        from dp_accounting import RandomizedResponseDpEvent

        return RandomizedResponseDpEvent(self.noise_parameter, 2)

    def _rdp(self, orders):
        return _dpa_rdp(self.dp_event(), orders, self.dp_event_relation)

    def pld(self):
        from dp_accounting import NeighboringRelation
        from dp_accounting.pld import privacy_loss_distribution as PLD

        return PLD.from_randomized_response(noise_parameter=self.noise_parameter, num_buckets=2,
                                            neighboring_relation=NeighboringRelation.REPLACE_ONE)

    def pure_epsilon(self) -> float:
        return self.epsilon


EVENT_TYPES: dict[str, type[Event]] = {c.kind: c for c in (Gaussian, Laplace, PoissonGaussian, FixedSizeGaussian,
                                                            HypergeometricGaussian, PoissonLaplace,
                                                            RandomizedResponse)}


def event_from_dict(d: dict[str, Any]) -> Event:
    d = dict(d)
    kind = d.pop("kind", None)
    if kind not in EVENT_TYPES:
        raise LedgerError(f"unknown event kind {kind!r}")
    return EVENT_TYPES[kind](**d)
