"""The mini conformance corpus of the tool's tests (``tests/data/conformance_mini.json``), built here from first
principles so that its lower limits can be re-derived by a test (``python -m tests.conformance_mini`` rewrites it).

Every lower limit is sound:

* Gaussian compositions and one randomized response: the exact epsilon (closed form). T Gaussians with noise
  multipliers z_i compose to one Gaussian with shift mu = sqrt(sum T_i / z_i^2), whose exact curve is
  delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong, Roth & Su 2019); binary randomized response
  with ratio e^eps0 has delta(eps) = p - e^eps (1 - p), p = e^eps0 / (1 + e^eps0);
* the others: dp-accounting's OPTIMISTIC privacy-loss distribution (a lower bound on the hockey-stick curve) of
  one realisable neighbouring pair, composed T times: the Poisson pair (1-q) N(0,1) + q N(1/z,1) vs N(0,1) for
  Poisson and for fixed-size batches (replace one example whose contribution moves by the full sensitivity while
  the others contribute zero: in the batch with probability q = m/N), Laplace itself, and for DP-GNN's
  hypergeometric step the mixture over rho ~ Hypergeometric(N, N(K,r), m) of shifts rho / (lambda N(K,r)) (every
  subgraph holding the node moves by the full 2C).

References are independent values: the same closed forms, dp-accounting's pessimistic PLD and RDP accountants.
"""

from __future__ import annotations

import math
from pathlib import Path

from methods.privacy.conformance.adapters import library_version
from methods.privacy.conformance.cases import Case, Reference, save_cases

PATH = Path(__file__).parent / "data" / "conformance_mini.json"
EXACT = "exact (closed form)"


def gaussian_exact_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon at ``delta`` of a Gaussian with shift ``mu`` (in noise standard deviations)."""
    from scipy.optimize import brentq
    from scipy.special import log_ndtr

    def gap(eps: float) -> float:
        return math.exp(log_ndtr(-eps / mu + mu / 2)) - math.exp(eps + log_ndtr(-eps / mu - mu / 2)) - delta

    if gap(0.0) <= 0:
        return 0.0
    hi = 1.0
    while gap(hi) > 0:
        hi *= 2
    return brentq(gap, 0.0, hi, xtol=1e-14, rtol=1e-14)


def rr_exact_epsilon(eps0: float, delta: float) -> float:
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return max(0.0, math.log((p - delta) / (1 - p))) if delta < p else 0.0


def _pld_epsilon(factory, count: int, delta: float, pessimistic: bool, *args, **kwargs) -> float:
    """epsilon at ``delta`` of ``count`` compositions of dp-accounting's ``factory(*args, **kwargs)`` PLD,
    pessimistic (an upper bound) or optimistic (a lower bound: privacy buckets, as connect-the-dots is pessimistic
    only)."""
    pld = factory(*args, **kwargs, pessimistic_estimate=pessimistic, use_connect_dots=pessimistic)
    return max(0.0, float((pld.self_compose(count) if count > 1 else pld).get_epsilon_for_delta(delta)))


def build_cases() -> list[Case]:
    import dp_accounting
    from dp_accounting import dp_event as E
    from dp_accounting.pld import privacy_loss_distribution as PLD
    from dp_accounting.rdp import RdpAccountant
    from scipy.stats import hypergeom

    lib = library_version("dp-accounting")
    cases = []

    def gauss(events, delta, tags, note=""):
        mu = math.sqrt(sum(e["count"] * (e["sensitivity"] / e["sigma"]) ** 2 for e in events))
        exact = gaussian_exact_epsilon(mu, delta)
        return dict(events=tuple(events), delta=delta, lower_limit=exact, lower_limit_method=EXACT + ": mu-GDP",
                    references=(Reference("closed form: exact Gaussian composition", exact, "Dong, Roth & Su 2019"),),
                    tags=tags, note=note)

    def g(sigma: float, count: int, sens: float = 1.0) -> dict:
        return {"kind": "gaussian", "sensitivity": sens, "sigma": sigma, "count": count}

    cases.append(Case(id="mini-gaussian-1x1", **gauss([g(1.0, 1)], 1e-5, ("gaussian", "ci"))))
    cases.append(Case(id="mini-gaussian-100x5", **gauss([g(5.0, 100)], 1e-5, ("gaussian", "ci"))))
    cases.append(Case(id="mini-gaussian-mixed", **gauss([g(2.0, 10), g(8.0, 50, sens=2.0)], 1e-6, ("gaussian",))))

    # Poisson-subsampled Gaussian: the pair is the mechanism's own dominating pair
    q, z, t, delta = 0.01, 1.0, 1000, 1e-5
    lo = _pld_epsilon(PLD.from_gaussian_mechanism, t, delta, False, z, sampling_prob=q)
    hi = _pld_epsilon(PLD.from_gaussian_mechanism, t, delta, True, z, sampling_prob=q)
    cases.append(Case(id="mini-poisson-gaussian", events=({"kind": "poisson_gaussian", "rate": q,
                                                            "noise_multiplier": z, "count": t},),
                      delta=delta, lower_limit=lo, lower_limit_method="optimistic PLD (dp-accounting)",
                      references=(Reference("dp-accounting PLD (pessimistic)", hi, lib),),
                      tags=("poisson_gaussian", "ci")))

    # fixed-size batches, replace-one: the Poisson pair is realisable (see the module docstring)
    n, m, z, t, delta = 1000, 10, 1.0, 100, 1e-5
    lo = _pld_epsilon(PLD.from_gaussian_mechanism, t, delta, False, z, sampling_prob=m / n)
    acc = RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(E.SelfComposedDpEvent(E.SampledWithoutReplacementDpEvent(n, m, E.GaussianDpEvent(z)), t))
    cases.append(Case(id="mini-wor-gaussian", events=({"kind": "fixed_size_gaussian", "population": n,
                                                        "sample_size": m, "noise_multiplier": z, "count": t,
                                                        "relation": "replace_one"},),
                      delta=delta, lower_limit=lo,
                      lower_limit_method="optimistic PLD (dp-accounting) of the realisable Poisson pair, q = m/N",
                      references=(Reference("dp-accounting RDP (WBK19 Theorem 27)", float(acc.get_epsilon(delta)),
                                            lib),),
                      tags=("fixed_size_gaussian", "ci")))

    scale, t, delta = 10.0, 10, 1e-5
    lo = _pld_epsilon(PLD.from_laplace_mechanism, t, delta, False, scale)
    hi = _pld_epsilon(PLD.from_laplace_mechanism, t, delta, True, scale)
    cases.append(Case(id="mini-laplace", events=({"kind": "laplace", "scale": scale, "count": t},), delta=delta,
                      lower_limit=lo, lower_limit_method="optimistic PLD (dp-accounting)",
                      references=(Reference("dp-accounting PLD (pessimistic)", hi, lib),
                                  Reference("basic composition", t / scale, "Dwork & Roth 2014, Theorem 3.16")),
                      tags=("laplace",)))

    eps0, delta = 1.0, 1e-5
    exact = rr_exact_epsilon(eps0, delta)
    cases.append(Case(id="mini-rr", events=({"kind": "randomized_response", "epsilon": eps0, "count": 1},),
                      delta=delta, lower_limit=exact, lower_limit_method=EXACT + ": binary randomized response",
                      references=(Reference("closed form: randomized response", exact, "Kairouz et al. 2015"),),
                      tags=("randomized_response",)))

    n, d, m, lam, t, delta = 1000, 3, 50, 2.0, 10, 1e-5
    rho = list(range(0, min(d, m) + 1))
    probs = [float(hypergeom(n, d, m).pmf(r)) for r in rho]
    lo = _pld_epsilon(PLD.from_mixture_gaussian_mechanism, t, delta, False, 1.0, [r / (lam * d) for r in rho], probs)
    cases.append(Case(id="mini-hypergeometric", events=({"kind": "hypergeometric_gaussian", "num_train": n,
                                                          "occurrence_bound": d, "batch_size": m,
                                                          "noise_multiplier": lam, "count": t},),
                      delta=delta, lower_limit=lo,
                      lower_limit_method="optimistic PLD (dp-accounting) of the hypergeometric mixture pair",
                      tags=("hypergeometric_gaussian",), note="no independent reference: ratios are to the limit"))
    return cases


if __name__ == "__main__":  # pragma: no cover - regenerates the checked-in file
    save_cases(PATH, build_cases())
    print(f"wrote {PATH}")
