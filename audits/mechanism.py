"""Mechanism-level audits: one release of a DP mechanism, through the code the methods execute, measured tightly.

An end-to-end audit trains models and sees little of what the accountant composes over; here the auditor runs
ONE application of a mechanism many times on a neighbouring pair it builds itself, in the style of
Nasr et al. (2023, "Tight Auditing of Differentially Private Machine Learning", Sections 4-5):

* the code path is the methods' own: :func:`methods.gap.nap.nap` after
  :func:`~methods.gap.nap.degree_bounded_graph` (GAP/ProGAP at edge and node level, under the relation audited),
  :func:`methods.samplers.dpgnn.sample_subgraphs` (DP-GNN on input graphs), :class:`methods.dpsgd.DPOptimizer` with its per-example clipping and a
  :class:`methods.dpsgd.PoissonSampler` or :class:`~methods.dpsgd.FixedSizeSampler` batch (a DP-SGD step),
  :func:`methods.gap.edgerand.asymmetric_rr` (EdgeRand). Many independent trials come from one call where the
  mechanism allows it (disjoint copies of the pair in one graph; one canary column per trial in one step);
* the pair is the worst case of the event's analysis where one is proven: one undirected edge between two nodes; a
  node sending its unit vector to exactly D rows; a Dirac gradient clipped to exactly C on a coordinate no other
  example touches; on a fixed-size batch, the unit's example +C against -C with every other example -C (Balle,
  Barthe & Gaboardi 2018, Theorem 10); one node pair's adjacency bit. DP-GNN's step has no proven worst case: it
  runs the strongest realisable pair of an exhaustive search (:mod:`audits.step_pairs`), labelled as such
  (:attr:`Mechanism.pair`). Each kind is one module of :mod:`audits.mechanisms`, which declares its pair, whether
  that pair is proven to dominate (and where), its claim, its trial runner and its mutants;
* each trial's score is the sufficient statistic of the noise (the projection on the known mean shift; the
  noisy sum at the canary's coordinate; the released bit), whose likelihood ratio is monotone, so a
  threshold test is the Neyman-Pearson test;
* two tests (threshold and direction) are chosen on one half of the trials and scored on the other:
  Clopper-Pearson upper bounds on their FPR and FNR (Bonferroni over the four) give, together at ``confidence``,

  - ``epsilon_lb_cp``: assumes nothing: the (epsilon, delta) bound of :func:`audits.bounds.epsilon_from_rates`,
    from a test chosen for it alone in the tails of the selection half;
  - ``epsilon_lb_fdp``: the f-DP estimator, named for what it assumes (``fdp_assumes``): the strongest member of
    the audited pair's family of tradeoff functions (mu-GDP for a Gaussian release, the subsampled Gaussian for a
    DP-SGD step, epsilon-RR) that the measured points still rule out, converted to epsilon at delta (Nasr et al.
    2023 use GDP);

* verdict: ``VIOLATION`` when a measured point lies below the CLAIM's tradeoff function -- sound for every
  mechanism, as that function lower-bounds every test between the two worlds, and it assumes no family.

The claim is the event's tightest sound epsilon: its exact epsilon where the audited pair is its proven worst case
(the Gaussian's closed form, the subsampled Gaussian's privacy profile in closed form -- equal to dp-accounting's
PLD --, the fixed-size step's tight profile, epsilon for pure DP), and for DP-GNN's step the exact curve of
Theorem 1's k-revealed pair (:class:`RevealedHypergeometric`), a proven bound, never the epsilon of a pair not
proven to dominate. The ledger's default accountant (RDP) reports a little more, shown beside it as the ledger's
claim, with each bound's ratio to both.

Mutations (``Mutation``) make the code run with less noise, a larger sensitivity or a larger sampling rate
than its ledger event states: the audit's power against subtle bugs.

This module is the driver shared by every kind: the audit loop, the tests' selection and bounds, and the record.
The kinds' names stay importable from here.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from audits.bounds import DEFAULT_CONFIDENCE, _check_confidence, epsilon_from_rates
from audits.mechanisms import AUDITED_KINDS, MECHANISMS, mechanism_for
from audits.mechanisms.base import DEFAULT_TRIALS, Mechanism, Mutation, Sampler, SoundBound, unsupported
from audits.mechanisms._dpsgd import DPSGD_RATE
from audits.mechanisms.dpgnn_step import DPGNN_SHAPE, HypergeometricGaussianFamily, RevealedHypergeometric
from audits.mechanisms.dpsgd_fixed import FixedSizeGaussianFamily
from audits.mechanisms.dpsgd_poisson import PoissonGaussianFamily
from audits.mechanisms.families import (Family, GaussianFamily, OneSidedMixtureFamily, RandomizedResponseFamily,
                                        gaussian_delta, laplace_difference_sf)
from audits.mechanisms.nap_node import NAP_NODE_DEGREE
from audits.mechanisms.pate_votes import pate_gap
from audits.mechanisms.privgnn_posterior import (PRIVGNN_RATE, SubsampledPureFamily, privgnn_argmax_epsilon,
                                                 privgnn_posterior)
from methods.base import ConfigError
from methods.streams import RunStreams

from audits.mechanisms._selection import (DEFAULT_DELTA, QUANTILES, SELECT_STRICTNESS, TAIL_CANDIDATES,  # noqa: F401
                                          _candidates, _cp_epsilon, _rates, _select, _select_cp, _upper)


# --------------------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------------------


#: what the Clopper-Pearson bound assumes
CP_ASSUMES = "nothing (assumption-free)"


@dataclass
class MechanismAudit:
    mechanism: str
    family: str  # the audited pair's family of tradeoff functions
    mutation: str
    #: the event's tightest sound epsilon at delta (the claim the verdict tests): exact where the audited pair is its
    #: proven worst case (``worst_case``), else a proven upper bound (DP-GNN's step: the k-revealed pair)
    epsilon_claimed: float
    epsilon_accounted: float  # the ledger's claim: what its default accountant reports for that event
    epsilon_true: float  # the exact epsilon of the audited pair as the code ran it: the most this audit can show
    delta: float
    trials: int  # per world, in each half
    epsilon_lb_cp: float  # assumption-free (Clopper-Pearson): the best over the evaluated tests
    epsilon_lb_fdp: float  # f-DP: assumes the pair's tradeoff is a member of ``family`` (``fdp_assumes``)
    strength_claimed: float
    strength_lb: float
    fpr_upper: float  # the f-DP-selected test's bounds (every test's are in ``tests``)
    fnr_upper: float
    threshold: float
    direction: int
    confidence: float  # of every bound and the verdict together
    verdict: str  # "ok" | "VIOLATION"
    seconds: float
    event: dict = field(default_factory=dict)
    fdp_assumes: str = ""
    worst_case: bool = True  # the audited pair is the event's proven worst case
    pair: str = ""  # why it is, or that it is only realisable
    tests: list = field(default_factory=list)  # every evaluated test: selected for, threshold, direction, bounds

    def _over(self, lb: float, claim: float) -> float:
        return lb / claim if claim > 0 else math.nan

    @property
    def ratio_cp(self) -> float:
        """The assumption-free bound over the claim (the event's tightest sound epsilon)."""
        return self._over(self.epsilon_lb_cp, self.epsilon_claimed)

    @property
    def ratio_fdp(self) -> float:
        """The f-DP bound over the claim."""
        return self._over(self.epsilon_lb_fdp, self.epsilon_claimed)

    @property
    def ledger_ratio_cp(self) -> float:
        """The assumption-free bound over the ledger's claim (its accountant's epsilon)."""
        return self._over(self.epsilon_lb_cp, self.epsilon_accounted)

    @property
    def ledger_ratio_fdp(self) -> float:
        return self._over(self.epsilon_lb_fdp, self.epsilon_accounted)

    def lower_bound_pair(self) -> tuple[np.ndarray, np.ndarray]:
        """An assumption-free lower-bound mechanism: :func:`tradeoff_pair` of the evaluated tests' bounds."""
        return tradeoff_pair([(t["fpr_upper"], t["fnr_upper"]) for t in self.tests])

    def to_dict(self) -> dict:
        return {**asdict(self), "cp_assumes": CP_ASSUMES, "ratio_cp": self.ratio_cp, "ratio_fdp": self.ratio_fdp,
                "ledger_ratio_cp": self.ledger_ratio_cp, "ledger_ratio_fdp": self.ledger_ratio_fdp}


def tradeoff_pair(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The least informative pair of worlds whose tests meet every (FPR, FNR) bound in ``points``: its tradeoff
    function is the lower convex hull of (0, 1), the points and (1, 0), and each hull segment is one outcome
    (masses: the FNR drop in the world with the unit, the FPR rise in the other). Any mechanism whose tests reach
    those points has a tradeoff function below this one (a tradeoff function is convex), so by Blackwell's theorem
    (Dong, Roth & Su 2022, Theorem 2.10) this pair is a post-processing of it: a lower-bound mechanism, and composing
    copies of it (:mod:`audits.composed`) bounds the composition from below. Returns (masses with the unit,
    masses without it)."""
    pts = sorted({(0.0, 1.0), (1.0, 0.0), *((float(a), float(b)) for a, b in points if a + b < 1.0)})
    hull: list[tuple[float, float]] = []
    for p in pts:
        while len(hull) >= 2 and ((hull[-1][0] - hull[-2][0]) * (p[1] - hull[-2][1])
                                  - (hull[-1][1] - hull[-2][1]) * (p[0] - hull[-2][0])) <= 0:
            hull.pop()
        hull.append(p)
    alpha, beta = np.array([h[0] for h in hull]), np.array([h[1] for h in hull])
    return -np.diff(beta), np.diff(alpha)


def _below_curve(points: list[tuple[float, float]], curve: Callable[[float], float], claim: float) -> bool:
    """Whether a point (FPR, FNR) lies below the tradeoff function of the privacy curve ``curve`` (eps -> delta):
    some epsilon has max(1 - FNR - e^eps FPR, 1 - FPR - e^eps FNR) > curve(eps). Checked on a grid of epsilons (a
    grid can only miss a violation, never invent one)."""
    grid = np.unique(np.concatenate([np.linspace(0.0, 3.0 * claim + 2.0, 301), [claim]]))
    for eps in grid:
        room = max(1.0 - b - math.exp(eps) * a for a, b in points + [(b, a) for a, b in points])
        if room > 0 and room > curve(float(eps)) * (1 + 1e-9) + 1e-15:
            return True
    return False


def validate_audit(name: str, epsilon: float, *, delta: float, trials: int, mutation: Mutation,
                   confidence: float, seed: int = 0) -> None:
    """Every check :func:`audit_mechanism` makes before it runs (a :class:`ConfigError` each)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"--seed must be >= 0 (got {seed})")
    if name not in MECHANISMS:
        raise ConfigError(f"unknown mechanism {name!r} (known: {', '.join(MECHANISMS)})")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ConfigError(f"epsilon must be a positive finite number (got {epsilon})")
    if not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1) (got {delta})")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 100:
        raise ConfigError(f"trials must be an integer >= 100 (got {trials})")
    _check_confidence(confidence)
    unsupported(name, mutation, MECHANISMS[name].mutations)


def audit_mechanism(name: str, epsilon: float, *, delta: float = DEFAULT_DELTA, trials: int | None = None,
                    seed: int = 0, mutation: Mutation | None = None,
                    confidence: float = DEFAULT_CONFIDENCE, mechanism: Mechanism | None = None) -> MechanismAudit:
    """Audit one application of mechanism ``name`` calibrated so that its ledger event claims exactly
    ``epsilon`` at ``delta``; ``trials`` per world in each of the selection and evaluation halves (default: the
    mechanism's own, :attr:`Mechanism.trials`). ``mechanism``: a variant of the registry's ``name`` to run instead
    (e.g. :func:`privgnn_posterior` at a ledger's own rate)."""
    from methods.privacy.accountant import active_accountant, epsilon as account, parse_accountant

    mutation = mutation or Mutation()
    if mechanism is not None and mechanism.name != name:
        raise ConfigError(f"mechanism {mechanism.name!r} given for {name!r}")
    if trials is None and name in MECHANISMS:
        trials = (mechanism or MECHANISMS[name]).trials
    validate_audit(name, epsilon, delta=delta, trials=trials, mutation=mutation, confidence=confidence, seed=seed)
    mech = mechanism or MECHANISMS[name]
    start = time.perf_counter()
    family = mech.family
    s_claim = mech.strength_for_epsilon(epsilon, delta)
    claim = mech.claim(s_claim, delta)
    event = mech.event(s_claim)
    acc, conv = parse_accountant(active_accountant())
    accounted = account([event], delta, acc, conv)[0]
    root = RunStreams(seed)
    scores = {(half, world): mech.sample(s_claim, world, trials, root.child("trial", half, int(world)), mutation)
              for half in ("select", "eval") for world in (True, False)}
    sel_in, sel_out = scores["select", True], scores["select", False]
    # two tests, chosen on the selection half: the one that rules out the most of the family (f-DP) and the one
    # with the largest assumption-free bound (CP, in the tails); Bonferroni over their four rates, so every bound
    # and the verdict hold together at ``confidence``
    per = 1.0 - (1.0 - confidence) / 4.0
    chosen = {"f-DP": _select(family, sel_in, sel_out, per), "CP": _select_cp(sel_in, sel_out, per, delta)}
    if chosen["CP"] == chosen["f-DP"]:
        del chosen["CP"]
        per = 1.0 - (1.0 - confidence) / 2.0
    tests = []
    for label, (threshold, direction) in chosen.items():
        fp, fn = _rates(scores["eval", True], scores["eval", False], np.array([threshold]), direction)
        alpha_u, beta_u = float(_upper(fp, trials, per)[0]), float(_upper(fn, trials, per)[0])
        tests.append({"selected_for": label, "threshold": threshold, "direction": direction, "fp": int(fp[0]),
                      "fn": int(fn[0]), "fpr_upper": alpha_u, "fnr_upper": beta_u,
                      "epsilon_lb_cp": epsilon_from_rates(alpha_u, beta_u, delta)})
    points = [(t["fpr_upper"], t["fnr_upper"]) for t in tests]
    s_lb = float(np.max(family.strength_bound(np.array([p[0] for p in points]), np.array([p[1] for p in points]))))
    eps_cp = max(t["epsilon_lb_cp"] for t in tests)
    eps_fdp = family.epsilon(s_lb, delta)
    if mech.worst_case:  # below the claimed member of the pair's own family, or outside (claim, delta)
        violation = s_lb > s_claim * (1 + 1e-9) or eps_cp > claim * (1 + 1e-9)
    else:  # below the sound bound's curve
        violation = eps_cp > claim * (1 + 1e-9) or _below_curve(points, lambda e: mech.bound.delta(s_claim, e), claim)
    f_test = tests[0]
    return MechanismAudit(
        name, family.name, mutation.label(), float(claim), float(accounted),
        float(mech.true_epsilon(s_claim, mutation, delta)), delta, trials, float(eps_cp),
        float(eps_fdp), s_claim, s_lb, f_test["fpr_upper"], f_test["fnr_upper"], f_test["threshold"],
        f_test["direction"], confidence, "VIOLATION" if violation else "ok", time.perf_counter() - start,
        {"kind": event.kind, **{k: v for k, v in asdict(event).items() if isinstance(v, (int, float, str))}},
        fdp_assumes=family.assumes, worst_case=mech.worst_case, pair=mech.pair, tests=tests)


def _worker_init() -> None:
    """One torch thread per worker process (the workers share the cores), and the libraries every audit loads
    imported before the first one is timed."""
    import torch

    import methods.dpsgd
    import methods.gap.edgerand
    import methods.privacy.accountant  # noqa: F401

    torch.set_num_threads(1)


def _audit_job(job: tuple[str, float], options: dict) -> MechanismAudit:
    return audit_mechanism(job[0], job[1], **options)


def run_audits(jobs: list[tuple[str, float]], *, workers: int = 1, on_done: Callable[[], None] | None = None,
               **options) -> list[MechanismAudit]:
    """:func:`audit_mechanism` for each (name, epsilon) of ``jobs`` with ``options``, in ``workers`` processes
    (each with one torch thread); results in the order of ``jobs``. Every audit draws from its own seeded streams,
    so the results are the same whatever ``workers`` is (only ``seconds`` differs). A mechanism registered at run
    time (a plugin, a test) rather than by a module of :mod:`audits.mechanisms` runs in this process, where it is
    registered. ``on_done`` is called after each audit."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers must be a positive integer (got {workers!r})")
    out: list[MechanismAudit | None] = [None] * len(jobs)
    remote = [i for i, (name, _) in enumerate(jobs)
              if workers > 1 and MECHANISMS[name].sample.__module__.startswith("audits.mechanisms.")]
    if remote:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(min(workers, len(remote)), mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_worker_init) as pool:
            futures = {pool.submit(_audit_job, jobs[i], options): i for i in remote}
            for f in as_completed(futures):
                out[futures[f]] = f.result()
                if on_done:
                    on_done()
    for i, job in enumerate(jobs):
        if out[i] is None:
            out[i] = _audit_job(job, options)
            if on_done:
                on_done()
    return out  # type: ignore[return-value]


def compose_gaussian(audit: MechanismAudit, count: int) -> dict:
    """A whole-pipeline bound from one audited Gaussian release, ``count`` identical non-adaptive releases of it on
    the same pair (e.g. GAP/ProGAP edge level: K NAP releases of one edge), both ways:

    * ``epsilon_lb_cp`` (assumption-free): ``count`` copies of the audit's lower-bound pair
      (:meth:`MechanismAudit.lower_bound_pair`, a post-processing of the release) composed exactly
      (:func:`audits.exact.pair_epsilon`);
    * ``epsilon_lb_fdp`` (assumes a Gaussian trade-off): ``count`` releases of a mu-GDP mechanism are exactly
      sqrt(count) mu-GDP (Dong, Roth & Su 2022, Corollary 3.3), so the strength bound composes the same way.

    Returns both, the pipeline's exact claim and each ratio."""
    from audits.exact import pair_epsilon

    if audit.family != GaussianFamily.name:
        raise ConfigError(f"{audit.mechanism}: only a Gaussian release composes as GDP (this is {audit.family})")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"count must be a positive integer (got {count!r})")
    fam, k = GaussianFamily(), math.sqrt(count)
    fdp = fam.epsilon(audit.strength_lb * k, audit.delta)
    cp = pair_epsilon([(*audit.lower_bound_pair(), count)], audit.delta)
    claim = fam.epsilon(audit.strength_claimed * k, audit.delta)
    return {"mechanism": audit.mechanism, "count": count, "epsilon_lb_cp": cp, "epsilon_lb_fdp": fdp,
            "epsilon_claimed": claim, "ratio_cp": cp / claim if claim > 0 else math.nan,
            "ratio_fdp": fdp / claim if claim > 0 else math.nan, "cp_assumes": CP_ASSUMES,
            "fdp_assumes": GaussianFamily.assumes}


__all__ = ["AUDITED_KINDS", "CP_ASSUMES", "DEFAULT_DELTA", "DEFAULT_TRIALS", "DPGNN_SHAPE", "DPSGD_RATE", "Family",
           "FixedSizeGaussianFamily", "GaussianFamily", "HypergeometricGaussianFamily", "MECHANISMS", "Mechanism",
           "MechanismAudit", "Mutation", "NAP_NODE_DEGREE", "OneSidedMixtureFamily", "PRIVGNN_RATE",
           "PoissonGaussianFamily", "RandomizedResponseFamily", "RevealedHypergeometric", "Sampler", "SoundBound",
           "SubsampledPureFamily", "audit_mechanism", "compose_gaussian", "gaussian_delta", "laplace_difference_sf",
           "mechanism_for", "pate_gap", "privgnn_argmax_epsilon", "privgnn_posterior", "run_audits", "tradeoff_pair",
           "validate_audit"]
