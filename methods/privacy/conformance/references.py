"""Independent reference epsilons of a ledger (the corpus's ``references``), from libraries and papers.

Each function returns a :class:`~methods.privacy.conformance.cases.Reference` or None when its method does not cover
the ledger. None of them calls :mod:`methods.privacy` (the accountants under test):

* ``dp-accounting RDP`` / ``dp-accounting PLD`` (pessimistic): the library's events and PLDs (for DP-GNN steps
  its mixture-of-Gaussians pair, an unproven estimate);
* ``Opacus RDP`` / ``Opacus PRV`` (its ``eps_upper``) / ``Opacus GDP`` (a CLT estimate: unsound);
* ``exact``: the closed forms of :mod:`methods.privacy.conformance.limits` (Gaussian mu-GDP, randomized response, one
  Laplace release), exact hence sound;
* ``optimal pure-DP composition``: a ledger of pure mechanisms is dominated by randomized responses of the same
  epsilons (Kairouz, Oh & Viswanath 2015), whose composition is computed exactly;
* ``no amplification``: without-replacement and DP-GNN steps bounded by the unsubsampled Gaussians (joint
  convexity);
* ``k-revealed PLD``: DP-GNN steps with the batch's occurrence count revealed, a mixture of Gaussian PLDs;
* ``paper RDP (mpmath)``: the papers' RDP bounds evaluated in high precision where no library has them
  (Wang, Balle & Kasiviswanathan 2019 Thm 27; Daigavane et al. 2022 Thm 1) or as closed forms (Mironov 2017),
  converted with Balle et al. (2020) Theorem 21.
"""

from __future__ import annotations

import importlib.metadata
import math
import warnings
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

import mpmath
import numpy as np

from methods.privacy.conformance import limits as L
from methods.privacy.conformance.cases import Reference
from methods.privacy.events import (FixedSizeGaussian, Gaussian, HypergeometricGaussian, Laplace, PoissonGaussian,
                                    PoissonLaplace, RandomizedResponse)

PLD_DISCRETIZATION = 1e-4
MOG_DISCRETIZATION = 1e-3


def version(pkg: str) -> str:
    """``pkg X.Y.Z`` from the installed distribution's metadata."""
    try:
        return f"{pkg} {importlib.metadata.version(pkg)}"
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - all are installed where we build
        return f"{pkg} (not installed)"


def _events(events: Iterable[Any]) -> list:
    return L._events(events)  # noqa: SLF001 - the same parsing as the lower limit's


def _types(evs: Sequence[Any]) -> set[type]:
    return {type(e) for e in evs}


def _hyp_mixture(e) -> tuple[float, list[float], list[float]]:
    """(noise std, sensitivities, probabilities) of a DP-GNN step in units of one occurrence's 2C shift."""
    w = L.hypergeometric_weights(e.num_train, e.occurrence_bound, e.batch_size)
    ks = sorted(w)
    return e.noise_multiplier * e.occurrence_bound, [float(k) for k in ks], [w[k] for k in ks]


# ----------------------------------------------------------------------------------------------------------
# dp-accounting
# ----------------------------------------------------------------------------------------------------------


def dpa_rdp(events: Iterable[Any], delta: float) -> Reference | None:
    """dp-accounting's ``RdpAccountant`` (default orders) over our events mapped to its DpEvents; REPLACE_ONE
    when the ledger has without-replacement or randomized-response events, else ADD_OR_REMOVE_ONE."""
    import dp_accounting as dpa
    from dp_accounting.rdp import RdpAccountant

    evs = _events(events)
    kinds = _types(evs)
    if not evs or kinds & {HypergeometricGaussian, PoissonLaplace}:
        return None
    replace = bool(kinds & {FixedSizeGaussian, RandomizedResponse})
    if replace and PoissonGaussian in kinds:
        return None
    parts = []
    for e in evs:  # translated here, not by Event.dp_event: a mistranslation there shows as a disagreement
        match e:
            case Gaussian():
                ev = dpa.GaussianDpEvent(e.noise_multiplier)
            case Laplace():
                ev = dpa.LaplaceDpEvent(e.scale / e.sensitivity)
            case PoissonGaussian():
                ev = dpa.PoissonSampledDpEvent(e.rate, dpa.GaussianDpEvent(e.noise_multiplier))
            case FixedSizeGaussian():
                ev = dpa.SampledWithoutReplacementDpEvent(e.population, e.sample_size,
                                                          dpa.GaussianDpEvent(e.noise_multiplier))
            case RandomizedResponse():
                ev = dpa.RandomizedResponseDpEvent(e.noise_parameter, 2)
            case _:  # an event type the library has no counterpart for
                return None
        parts.append(dpa.SelfComposedDpEvent(ev, e.count))
    rel = dpa.NeighboringRelation.REPLACE_ONE if replace else dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    acc = RdpAccountant(neighboring_relation=rel)
    acc.compose(dpa.ComposedDpEvent(parts))
    eps, order = acc.get_epsilon_and_optimal_order(delta)
    return Reference("dp-accounting RDP", float(eps), version("dp-accounting"), True,
                     f"RdpAccountant, default orders, {rel.name}; optimal order {order:g}")


def dpa_pld(events: Iterable[Any], delta: float) -> Reference | None:
    """dp-accounting's privacy-loss distributions (pessimistic; connect-the-dots where the library has it;
    interval 1e-4, as ``PLDAccountant``), one per event, self-composed and composed. Randomized response uses
    REPLACE_ONE (the flipped bit), the rest both add/remove directions. Without-replacement sampling has no PLD in
    the library: None.

    A DP-GNN step is the library's Mixture of Gaussians N(0, (lambda N)^2) vs sum_k h(k) N(k, (lambda N)^2), in
    units of one occurrence's 2C (on a 1e-3 grid: the library inverts that loss point by point). That pair is
    realisable (the lower limit's), but it is not a proven bound on the step, so the reference is kept as an
    unproven estimate (``sound=False``): for N >= 2 the neighbour's output need not be one fixed Gaussian, e.g.
    occurrences' gradients +C u in one graph and -C u in the other (all others 0) give sum_k h(k) N(+-k C u)
    whose delta at epsilon 0 exceeds the mixture pair's (0.773 vs 0.743 at num_train 3, N 2, m 2, lambda 0.25);
    for N = 1 the pair is the fixed-size replace-one pair of :func:`wor_pair_pld`, not proven either."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as P

    evs = _events(events)
    if not evs or FixedSizeGaussian in _types(evs):
        return None
    # the library inverts the Mixture of Gaussians' loss point by point (seconds per 1e4 grid points): coarser
    vdi = MOG_DISCRETIZATION if HypergeometricGaussian in _types(evs) else PLD_DISCRETIZATION
    total = None
    for e in evs:
        if getattr(e, "rate", None) == 0:  # a Poisson step that samples no one: no privacy loss
            continue
        match e:
            case Gaussian():
                one = P.from_gaussian_mechanism(e.noise_multiplier, value_discretization_interval=vdi)
            case Laplace():
                one = P.from_laplace_mechanism(e.scale / e.sensitivity, value_discretization_interval=vdi)
            case PoissonGaussian():
                one = P.from_gaussian_mechanism(e.noise_multiplier, value_discretization_interval=vdi,
                                                sampling_prob=e.rate)
            case PoissonLaplace():
                one = P.from_laplace_mechanism(e.scale / e.sensitivity, value_discretization_interval=vdi,
                                               sampling_prob=e.rate)
            case RandomizedResponse():
                one = P.from_randomized_response(e.noise_parameter, 2, value_discretization_interval=vdi,
                                                 neighboring_relation=NeighboringRelation.REPLACE_ONE)
            case HypergeometricGaussian():
                std, sens, probs = _hyp_mixture(e)
                one = P.from_mixture_gaussian_mechanism(std, sens, probs, value_discretization_interval=vdi)
            case _:
                return None
        one = one.self_compose(e.count) if e.count > 1 else one
        total = one if total is None else total.compose(one)
    if total is None:
        return None
    eps = float(total.get_epsilon_for_delta(delta))
    note = f"privacy_loss_distribution.from_* (pessimistic), interval {vdi:g}, composed"
    proven = HypergeometricGaussian not in _types(evs)
    if not proven:
        note += ("; DP-GNN steps as the mixture-of-Gaussians pair, which is realisable but not a proven "
                 "dominating pair (for occurrence bound >= 2 it is not one)")
    return Reference("dp-accounting PLD", max(eps, 0.0), version("dp-accounting"), proven, note)


def wor_unamplified(events: Iterable[Any], delta: float) -> Reference | None:
    """Without-replacement steps bounded by the same steps with no subsampling: the batches are drawn the same
    way in both datasets, so P = E_B[P_B], Q = E_B[Q_B], and the hockey-stick divergence is jointly convex:
    H(P || Q) <= E_B H(P_B || Q_B) <= that of the adaptive composition of Gaussians whose shifts are at most the
    sensitivity, i.e. mu-GDP with mu = sqrt(sum T / z^2) (Dong, Roth & Su 2022, Cor. 3.3). Exact in mpmath. Loose
    for small q, tight as q -> 1 (where subsampled RDP bounds can exceed it). A DP-GNN step is one such step:
    shift at most 2C N (N occurrences, Lemma 2), std lambda 2C N, so z = lambda."""
    evs = _events(events)
    if not evs or not _types(evs) <= {FixedSizeGaussian, HypergeometricGaussian}:
        return None
    mu = math.sqrt(sum(e.count / e.noise_multiplier ** 2 for e in evs))
    return Reference("no amplification", L.gaussian_epsilon(mu, delta), f"mpmath {mpmath.__version__}", True,
                     "the Gaussians without subsampling (joint convexity over the batches), mu-GDP exact")


def hyp_revealed_pld(events: Iterable[Any], delta: float) -> Reference | None:
    """A DP-GNN step with the batch's occurrence count k revealed (Daigavane et al. 2022's model: the node lies
    in at most N of the num_train subgraphs, k ~ Hypergeometric(num_train, N, m)): dropping k is post-processing,
    and given the batch the outputs are Gaussians with std lambda 2C N whose means differ by at most 2C k
    (Lemma 2), dominated by N(0, 1) vs N(k / (lambda N), 1) (rotation invariance). Its privacy loss distribution
    is sum_k h(k) PLD_k; dominating pairs compose adaptively (Zhu, Dong & Wang 2022, Thm 10). Theorem 1's RDP is
    this pair's. dp-accounting's pessimistic Gaussian PLDs (interval 1e-4), mixed, self-composed and composed.
    Ledgers of DP-GNN steps only."""
    from dp_accounting.pld import privacy_loss_distribution as P

    evs = _events(events)
    if not evs or _types(evs) != {HypergeometricGaussian}:
        return None
    total = None
    for e in evs:
        w = L.hypergeometric_weights(e.num_train, e.occurrence_bound, e.batch_size)
        mass: dict[int, float] = {}
        inf_mass = 0.0
        for k, hk in w.items():
            if k == 0:  # identical outputs: loss 0
                mass[0] = mass.get(0, 0.0) + hk
                continue
            g = P.from_gaussian_mechanism(e.noise_multiplier * e.occurrence_bound / k,
                                          value_discretization_interval=PLD_DISCRETIZATION)
            lower, probs, inf_k, _ = L._dense(g)  # noqa: SLF001 - the same reader as the lower limit's
            for i in np.flatnonzero(probs > 0):
                mass[lower + int(i)] = mass.get(lower + int(i), 0.0) + hk * float(probs[i])
            inf_mass += hk * inf_k
        one = P.PrivacyLossDistribution.create_from_rounded_probability(mass, inf_mass, PLD_DISCRETIZATION,
                                                                        pessimistic_estimate=True)
        one = one.self_compose(e.count) if e.count > 1 else one
        total = one if total is None else total.compose(one)
    eps = float(total.get_epsilon_for_delta(delta))
    return Reference("k-revealed PLD", max(eps, 0.0), version("dp-accounting"), True,
                     f"sum_k h(k) PLD of N(0,1) vs N(k/(lambda N),1) (pessimistic Gaussian PLDs, interval "
                     f"{PLD_DISCRETIZATION:g}), self-composed and composed")


def wor_pair_pld(events: Iterable[Any], delta: float) -> Reference | None:
    """dp-accounting's pessimistic PLD of the one-sided pair N(0,1) vs (1-q)N(0,1)+qN(1/z,1) that gives the
    without-replacement lower limit: an upper bound on THAT pair's epsilon. It bounds the mechanism only if that
    pair dominates WOR replace-one subsampling, which is not proven here: ``sound=False``, an estimate of the truth
    that should sit just above the lower limit."""
    from dp_accounting.pld import privacy_loss_distribution as P

    evs = _events(events)
    if not evs or _types(evs) != {FixedSizeGaussian}:
        return None
    total = None
    for e in evs:
        one = P.from_gaussian_mechanism(e.noise_multiplier, value_discretization_interval=PLD_DISCRETIZATION,
                                        sampling_prob=e.sample_size / e.population)
        one = one.self_compose(e.count) if e.count > 1 else one
        total = one if total is None else total.compose(one)
    eps = float(total.get_epsilon_for_delta(delta))
    return Reference("dp-accounting PLD of the WOR pair", max(eps, 0.0), version("dp-accounting"), False,
                     "pessimistic PLD of N(0,1) vs (1-q)N(0,1)+qN(1/z,1): an upper bound for that pair only "
                     "(the mechanism's if the pair dominates WOR replace-one; not proven here)")


# ----------------------------------------------------------------------------------------------------------
# Opacus
# ----------------------------------------------------------------------------------------------------------


def _gaussian_history(evs: Sequence[Any]) -> list[tuple[float, float, int]] | None:
    """(noise multiplier, sample rate, steps) per event if every event is a (Poisson-subsampled) Gaussian."""
    if not evs or not _types(evs) <= {Gaussian, PoissonGaussian}:
        return None
    return [(e.noise_multiplier, getattr(e, "rate", 1.0), e.count) for e in evs if getattr(e, "rate", 1.0) != 0]


def opacus_rdp(events: Iterable[Any], delta: float) -> Reference | None:
    """Opacus ``analysis.rdp``: compute_rdp summed over the events at RDPAccountant's default orders,
    get_privacy_spent (Balle et al. 2020 Thm 21). Gaussian and Poisson-subsampled Gaussian only."""
    from opacus.accountants.analysis import rdp as ordp
    from opacus.accountants.rdp import RDPAccountant

    hist = _gaussian_history(_events(events))
    if not hist:
        return None
    orders = list(RDPAccountant.DEFAULT_ALPHAS)
    rdp = sum(np.asarray(ordp.compute_rdp(q=q, noise_multiplier=z, steps=t, orders=orders)) for z, q, t in hist)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps, order = ordp.get_privacy_spent(orders=orders, rdp=rdp, delta=delta)
    return Reference("Opacus RDP", max(float(eps), 0.0), version("opacus"), True,
                     f"analysis.rdp, RDPAccountant.DEFAULT_ALPHAS; optimal order {float(order):g}")


def opacus_prv(events: Iterable[Any], delta: float) -> Reference | None:
    """Opacus ``PRVAccountant.get_epsilon`` (Gopi, Lee & Wutschitz 2021): the upper end of its error bounds,
    eps_error 0.01, delta_error delta / 1000 (its defaults). Gaussian and Poisson-subsampled Gaussian only."""
    from opacus.accountants import PRVAccountant

    hist = _gaussian_history(_events(events))
    if not hist:
        return None
    acc = PRVAccountant()
    acc.history = [(z, q, t) for z, q, t in hist]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        eps = float(acc.get_epsilon(delta))
    return Reference("Opacus PRV", eps, version("opacus"), True,
                     "PRVAccountant.get_epsilon: eps_upper of Gopi et al.'s error bounds (eps_error 0.01)")


def opacus_gdp(events: Iterable[Any], delta: float) -> Reference | None:
    """Opacus ``analysis.gdp.compute_eps_poisson``: the CLT's mu-GDP (Bu et al. 2020), an estimate, not a
    bound (``sound=False``). One Poisson-subsampled Gaussian event only."""
    from opacus.accountants.analysis import gdp as ogdp

    evs = _events(events)
    if len(evs) != 1 or not isinstance(evs[0], PoissonGaussian) or evs[0].rate == 0:
        return None
    e = evs[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = float(ogdp.compute_eps_poisson(steps=e.count, noise_multiplier=e.noise_multiplier,
                                             sample_rate=e.rate, delta=delta))
    return Reference("Opacus GDP", eps, version("opacus"), False,
                     "compute_eps_poisson: central-limit mu-GDP, an estimate that may fall below the truth")


# ----------------------------------------------------------------------------------------------------------
# Closed forms and optimal pure-DP composition
# ----------------------------------------------------------------------------------------------------------


def exact(events: Iterable[Any], delta: float) -> Reference | None:
    """The exact epsilon where a closed form exists: Gaussians only (mu-GDP), one randomized-response epsilon,
    or one Laplace release."""
    evs = _events(events)
    kinds = _types(evs)
    if kinds == {Gaussian}:
        mu = math.sqrt(sum(e.count / e.noise_multiplier ** 2 for e in evs))
        return Reference("exact", L.gaussian_epsilon(mu, delta), f"mpmath {mpmath.__version__}", True,
                         "mu-GDP, mu = sqrt(sum T/z^2) (Balle & Wang 2018 Thm 8)")
    if kinds == {RandomizedResponse} and len({e.epsilon for e in evs}) == 1:
        t = sum(e.count for e in evs)
        return Reference("exact", L.rr_lower_limit(evs[0].epsilon, t, delta), f"mpmath {mpmath.__version__}",
                         True, "binomial privacy-loss sum of T-fold randomized response")
    if kinds == {Laplace} and len(evs) == 1 and evs[0].count == 1:
        return Reference("exact", L.laplace_single_epsilon(evs[0].sensitivity / evs[0].scale, delta), "closed form",
                         True, "one Laplace release: eps0 + 2 ln(1 - delta)")
    return None


def pure_epsilons(evs: Sequence[Any]) -> list[tuple[float, int]] | None:
    """(pure epsilon, count) per event if every event is pure DP: Laplace s/b, randomized response eps,
    Poisson-subsampled Laplace ln(1 + q (e^(s/b) - 1)) (amplification by Poisson subsampling under add/remove,
    Li, Qardaji & Su 2012; tight, Balle, Barthe & Gaboardi 2018)."""
    out = []
    for e in evs:
        match e:
            case Laplace():
                out.append((e.sensitivity / e.scale, e.count))
            case RandomizedResponse():
                out.append((e.epsilon, e.count))
            case PoissonLaplace():
                if e.rate > 0:
                    out.append((math.log1p(e.rate * math.expm1(e.sensitivity / e.scale)), e.count))
            case _:
                return None
    return out


def optimal_pure_composition(events: Iterable[Any], delta: float, max_support: int = 200_000) -> Reference | None:
    """A ledger of pure eps_i-DP mechanisms is dominated by binary randomized responses with the same eps_i
    (Kairouz, Oh & Viswanath 2015, Thm 3.3: RR is the worst eps-DP mechanism; dominance survives composition).
    Their composition's privacy loss is sum_i (2 k_i - T_i) eps_i, k_i binomial: summed exactly in mpmath
    (the KOV optimal composition for one epsilon; heterogeneous ones while the support stays small)."""
    evs = _events(events)
    pure = pure_epsilons(evs) if evs else None
    if not pure:
        return None
    groups: dict[float, int] = {}
    for eps0, t in pure:
        groups[eps0] = groups.get(eps0, 0) + t
    if len(groups) == 1:
        (eps0, t), = groups.items()
        value = L.rr_lower_limit(eps0, t, delta)
    else:
        if math.prod(t + 1 for t in groups.values()) > max_support:
            return None
        with mpmath.workdps(L.MP_DPS):
            dist = {mpmath.mpf(0): mpmath.mpf(1)}
            for eps0, t in groups.items():
                e0 = mpmath.mpf(eps0)
                p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
                step = {(2 * k - t) * e0: mpmath.binomial(t, k) * p ** k * (1 - p) ** (t - k) for k in range(t + 1)}
                new: dict = {}
                for a, pa in dist.items():
                    for b, pb in step.items():
                        new[a + b] = new.get(a + b, 0) + pa * pb
                dist = new
            losses = list(dist)
            value = L._exact_discrete_epsilon(losses, [dist[x] for x in losses], delta)  # noqa: SLF001
    return Reference("optimal pure-DP composition", value, f"mpmath {mpmath.__version__}", True,
                     "randomized responses of the events' pure epsilons composed exactly (Kairouz, Oh & "
                     "Viswanath 2015)")


# ----------------------------------------------------------------------------------------------------------
# Papers' RDP bounds in mpmath
# ----------------------------------------------------------------------------------------------------------

#: orders of the mpmath RDP references: fractional below 10, integers to 64, sparse to 2048
PAPER_ORDERS = ([1 + k / 100 for k in range(1, 100)] + [2 + k / 4 for k in range(32)] + list(range(10, 65))
                + [72, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 512, 768, 1024, 2048])
#: above this order WBK19's bound keeps only its 2 e^{cgf} terms (as dp-accounting does): still a bound
WOR_FULL_MAX_ORDER = 256


@lru_cache(maxsize=64)
def _wor_log_forward_diffs(sigma: float, k_max: int) -> tuple:
    """log D_k for even k = 2..k_max (entry k // 2 - 1): D_k = sum_i (-1)^(k-i) C(k,i) e^{i(i-1)/(2 sigma^2)},
    the k-th forward difference of j -> e^{(j-1) eps(j)} of the Gaussian (WBK19 Thm 27), summed in mpmath with
    enough digits for its cancellation: each sum must keep at least 25 digits below its largest term (else the
    whole table is redone with twice the digits); D_k >= D_2^(k/2) > 0 for even k, by Jensen."""
    dps = 80 + int(k_max * 0.302)  # the cancellation is at most the binomials' 2^k when sigma is large
    while dps <= 40000:
        with mpmath.workdps(dps):
            c = mpmath.mpf(1) / (2 * mpmath.mpf(sigma) ** 2)
            powers = [mpmath.exp(c * i * (i - 1)) for i in range(k_max + 1)]
            out, ok = [], True
            for k in range(2, k_max + 1, 2):
                terms = [(-1) ** (k - i) * math.comb(k, i) * powers[i] for i in range(k + 1)]
                d = mpmath.fsum(terms)
                if not (d > 0 and mpmath.log10(max(abs(t) for t in terms) / d) < dps - 25):
                    ok = False
                    break
                out.append(+mpmath.log(d))
            if ok:
                return tuple(out)
        dps *= 2
    raise L.LimitError(f"WBK19 forward differences at sigma {sigma} do not resolve")


def wor_rdp(q: float, sigma: float, alpha: int) -> mpmath.mpf:
    """RDP at integer ``alpha`` of the Gaussian (multiplier sigma under replace-one) on a without-replacement
    subsample of fraction q: Wang, Balle & Kasiviswanathan (2019), Theorem 27,
    1/(alpha-1) log(1 + C(alpha,2) q^2 min(4(e^{eps(2)}-1), 2 e^{eps(2)})
                    + sum_{j>=3} C(alpha,j) q^j min(4 sqrt(D_{2 floor(j/2)} D_{2 ceil(j/2)}), 2 e^{(j-1) eps(j)})),
    eps(j) = j / (2 sigma^2); above WOR_FULL_MAX_ORDER only the 2 e^{(j-1) eps(j)} terms (a larger bound)."""
    if alpha < 2 or alpha != int(alpha):
        raise L.LimitError(f"WBK19 Theorem 27 is evaluated at integer orders >= 2 (got {alpha})")
    alpha = int(alpha)
    if q >= 1:
        return mpmath.mpf(alpha) / (2 * mpmath.mpf(sigma) ** 2)
    with mpmath.workdps(40):
        s2 = 2 * mpmath.mpf(sigma) ** 2
        f2 = 2 / s2
        lq = mpmath.log(q)
        terms = [mpmath.mpf(0)]  # log 1
        b2 = min(mpmath.log(4) + mpmath.log(mpmath.expm1(f2)), mpmath.log(2) + f2)
        terms.append(mpmath.log(mpmath.binomial(alpha, 2)) + 2 * lq + b2)
        full = alpha <= WOR_FULL_MAX_ORDER
        logd = _wor_log_forward_diffs(float(sigma), 2 * ((alpha + 1) // 2)) if full and alpha >= 3 else ()
        for j in range(3, alpha + 1):
            b = mpmath.log(2) + (j - 1) * j / s2
            if full:
                lo, hi = logd[(2 * (j // 2)) // 2 - 1], logd[(2 * ((j + 1) // 2)) // 2 - 1]
                b = min(b, mpmath.log(4) + (lo + hi) / 2)
            terms.append(mpmath.log(mpmath.binomial(alpha, j)) + j * lq + b)
        top = max(terms)
        return (top + mpmath.log(mpmath.fsum(mpmath.exp(t - top) for t in terms))) / (alpha - 1)


@lru_cache(maxsize=256)
def _hyp_log_weights(num_train: int, occurrence_bound: int, batch_size: int) -> tuple:
    with mpmath.workdps(40):
        return tuple((k, mpmath.log(p)) for k, p in
                     L.hypergeometric_weights(num_train, occurrence_bound, batch_size).items())


def hypergeometric_rdp(e, alpha: float) -> mpmath.mpf:
    """DP-GNN Theorem 1 (Daigavane et al. 2022): 1/(alpha-1) ln E_k exp(alpha (alpha-1) k^2 / (2 lambda^2 N^2)),
    k ~ Hypergeometric(num_train, min(N, num_train), m), N the occurrence bound."""
    w = _hyp_log_weights(e.num_train, e.occurrence_bound, e.batch_size)
    with mpmath.workdps(40):
        a = mpmath.mpf(alpha)
        scale = 1 / (2 * (mpmath.mpf(e.noise_multiplier) * e.occurrence_bound) ** 2)
        logs = [lp + a * (a - 1) * k * k * scale for k, lp in w]
        top = max(logs)
        return (top + mpmath.log(mpmath.fsum(mpmath.exp(t - top) for t in logs))) / (a - 1)


def laplace_rdp(eps0: float, alpha: float) -> mpmath.mpf:
    """Mironov (2017) Proposition 6: RDP of the Laplace mechanism with eps0 = sensitivity / scale."""
    with mpmath.workdps(40):
        a, e = mpmath.mpf(alpha), mpmath.mpf(eps0)
        inner = a / (2 * a - 1) * mpmath.exp((a - 1) * e) + (a - 1) / (2 * a - 1) * mpmath.exp(-a * e)
        return mpmath.log(inner) / (a - 1)


def rr_rdp(eps0: float, alpha: float) -> mpmath.mpf:
    """Mironov (2017) Proposition 5: RDP of binary randomized response with p = e^eps0 / (1 + e^eps0)."""
    with mpmath.workdps(40):
        a, e = mpmath.mpf(alpha), mpmath.mpf(eps0)
        p = mpmath.exp(e) / (1 + mpmath.exp(e))
        return mpmath.log(p ** a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)


def rdp_to_epsilon(orders: Sequence[float], rdp: Sequence, delta: float) -> tuple[float, float]:
    """min over orders of rdp + ln((a-1)/a) - (ln delta + ln a)/(a-1), at least 0 (Balle et al. 2020, Thm 21;
    Canonne, Kamath & Steinke 2020), in mpmath; returns (epsilon, order)."""
    best, arg = mpmath.inf, float("nan")
    with mpmath.workdps(40):
        ld = mpmath.log(delta)
        for a, r in zip(orders, rdp):
            a = mpmath.mpf(a)
            eps = r + mpmath.log((a - 1) / a) - (ld + mpmath.log(a)) / (a - 1)
            if eps < best:
                best, arg = eps, float(a)
    return max(float(best), 0.0), arg


_PAPERS = {Gaussian: "Mironov 2017 Cor 3", Laplace: "Mironov 2017 Prop 6", RandomizedResponse: "Mironov 2017 Prop 5",
           FixedSizeGaussian: "Wang, Balle & Kasiviswanathan 2019 Thm 27",
           HypergeometricGaussian: "Daigavane et al. 2022 Thm 1"}


def paper_rdp(events: Iterable[Any], delta: float) -> Reference | None:
    """The papers' RDP bounds of every event, summed over the composition at :data:`PAPER_ORDERS` (integer
    orders only when a without-replacement event is present: Theorem 27 is stated for them) and converted with
    Balle et al. (2020) Theorem 21, all in mpmath. Ledgers with Poisson-subsampled events: None (the libraries
    cover them)."""
    evs = _events(events)
    kinds = _types(evs)
    if not evs or not kinds <= set(_PAPERS):
        return None
    orders = [a for a in PAPER_ORDERS if a == int(a) and a >= 2] if FixedSizeGaussian in kinds else PAPER_ORDERS
    fns: list[tuple[int, Callable[[float], mpmath.mpf]]] = []
    for e in evs:
        match e:
            case Gaussian():
                z = e.noise_multiplier
                fns.append((e.count, lambda a, z=z: mpmath.mpf(a) / (2 * mpmath.mpf(z) ** 2)))
            case Laplace():
                fns.append((e.count, lambda a, x=e.sensitivity / e.scale: laplace_rdp(x, a)))
            case RandomizedResponse():
                fns.append((e.count, lambda a, x=e.epsilon: rr_rdp(x, a)))
            case FixedSizeGaussian():
                q, z = e.sample_size / e.population, e.noise_multiplier
                fns.append((e.count, lambda a, q=q, z=z: wor_rdp(q, z, int(a))))
            case HypergeometricGaussian():
                fns.append((e.count, lambda a, ev=e: hypergeometric_rdp(ev, a)))
    with mpmath.workdps(40):
        rdp = [mpmath.fsum(t * f(a) for t, f in fns) for a in orders]
    eps, order = rdp_to_epsilon(orders, rdp, delta)
    cites = "; ".join(sorted({_PAPERS[k] for k in kinds}))
    return Reference("paper RDP (mpmath)", eps, f"{cites}; conversion Balle et al. 2020 Thm 21; mpmath "
                     f"{mpmath.__version__}", True, f"optimal order {order:g}")


#: every reference function, in the order they appear in a case
REFERENCE_FUNCTIONS: tuple[Callable[[Iterable[Any], float], Reference | None], ...] = (
    exact, dpa_rdp, dpa_pld, opacus_rdp, opacus_prv, paper_rdp, optimal_pure_composition, wor_unamplified, opacus_gdp,
    wor_pair_pld, hyp_revealed_pld)


def references(events: Iterable[Any], delta: float) -> tuple[list[Reference], list[str]]:
    """Every reference that covers the ledger, and a line per method that failed (its exception)."""
    evs = _events(events)
    refs, failures = [], []
    for fn in REFERENCE_FUNCTIONS:
        try:
            r = fn(evs, delta)
        except Exception as e:  # a library's numerical failure is data, not a crash of the build
            failures.append(f"{fn.__name__}: {type(e).__name__}: {e}")
            continue
        if r is not None:
            if not math.isfinite(r.epsilon):
                failures.append(f"{fn.__name__}: non-finite epsilon {r.epsilon}")
                continue
            refs.append(r)
    return refs, failures


__all__ = ["PAPER_ORDERS", "REFERENCE_FUNCTIONS", "dpa_pld", "dpa_rdp", "exact", "hyp_revealed_pld", "hypergeometric_rdp",
           "laplace_rdp", "opacus_gdp", "opacus_prv", "opacus_rdp", "optimal_pure_composition", "paper_rdp",
           "rdp_to_epsilon", "references", "rr_rdp", "version", "wor_pair_pld", "wor_rdp", "wor_unamplified"]
