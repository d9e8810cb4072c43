"""White-box end-to-end DP-SGD audit in which every gradient canary is one independent trial (``mode="pooled"``).

The threat model is the one DP-SGD's accountant is proven in: the adversary chooses the clipped gradient of
the examples holding its canary and sees every step's noisy gradient sum (Nasr et al. 2023, "Tight Auditing
of Differentially Private Machine Learning", Section 5: Dirac canaries, all iterates observed). With the
gradient canaries of :mod:`audits.whitebox`, canary k owns a coordinate that no other example touches, so what
the released sums say about canary k is a function of its own inclusion, the sampler's draws of its examples
and fresh Gaussian noise: the canaries of one run are independent trials of the same pair of worlds (exactly
so under Poisson sampling; fixed-size sampling couples the draws of different canaries only through the
batch size, a dependence of order 1/population), and so are those of independent runs. This turns R runs of
m canaries into about R m / 2 trials per world, where the multi-run audit gets one trial per model.

Per canary (coins: in with probability 1/2):

* the worst-case pair of the method's relation (``CanaryConfig(signed=True)``): add/remove (node unit, one
  example at +C in one world, absent in the other) or replace-one (feature unit: the same example at +C in
  one world and -C in the other, the 2C of Wang, Balle & Kasiviswanathan 2019); DP-GNN's node in 1 + K trees
  under its default relation ``input-graph`` (K fresh anchors, which hold -f_k: their trees are at -C without
  the canary), in 1 + floor(K/2) under Algorithm 1's ``in-edges`` (:func:`worst_case_design`);
* the score is the likelihood ratio of the whole trace of released values (y_t, in units of C, noise
  s_t) under the per-step shift distributions of the two worlds, which are estimated from the SELECTION
  canaries' own drawn counts (what the auditor put in), so the score is the Neyman-Pearson test of the
  model it fits (:meth:`audits.whitebox.GradientCanaries.shift_likelihood_scores`);
* the canaries are split at random into a selection half (the shift model, the threshold and its direction)
  and an evaluation half, on which Clopper-Pearson upper bounds on FPR and FNR (Bonferroni) give

  - ``epsilon_lb_cp``: ``ln((1 - delta - FPR) / FNR)`` and its mirror: assumes nothing (the verdict uses it);
  - ``epsilon_lb_fdp``: the GDP estimator of Nasr et al. (2023): the largest mu that the point rules out for
    a mu-GDP mechanism, converted to epsilon at delta (Balle & Wang 2018). A composition of many subsampled
    Gaussian steps is close to GDP (Dong, Roth & Su 2022, Theorem 3.5), but this assumes that shape.

The claim is what the ledger's accountant reports for what ran (the largest over the runs). The exact epsilon of
the pair the runs realised (the shifts the auditor put in, as the sampler drew them, and the noise the steps drew) is
computed beside the bounds; above the claim, the run did not keep its claim, whatever its ledger says: a VIOLATION
(:attr:`PooledOutcome.pair_exceeds_claim`, decided at the draw rates' lower confidence bounds).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from audits.bounds import DEFAULT_CONFIDENCE, errors_at, multi_run_bound, select_threshold
from audits.canaries import CanaryConfig, inclusion_coins, make_canaries
from methods.base import Budget, ConfigError, ContractViolation, Method, Task, fit_method
from methods.progress import progress_bar
from methods.streams import RunStreams


@dataclass
class PooledBound:
    """Both lower bounds of one pooled audit, with the tests they come from."""

    epsilon_lb_cp: float
    epsilon_lb_fdp: float
    mu_lb: float  # the GDP strength the f-DP point rules out
    fpr_upper_fdp: float
    fnr_upper_fdp: float
    threshold_fdp: float
    direction_fdp: int
    threshold_cp: float
    direction_cp: int
    selection: tuple[int, int]  # canaries (in, out) that chose the tests
    evaluation: tuple[int, int]  # canaries (in, out) the bounds count on
    auc: float  # the score's AUC on the evaluation canaries
    confidence: float

    def to_dict(self) -> dict:
        return asdict(self)


def empirical_shifts(shifts: np.ndarray):
    """The per-step shift distribution observed in ``shifts`` (any shape, signed counts)."""
    from audits.whitebox import Shifts

    values, counts = np.unique(np.asarray(shifts).ravel(), return_counts=True)
    if values.size == 0:
        return Shifts([0.0], [1.0])
    return Shifts(values.tolist(), (counts / counts.sum()).tolist())


def _auc(scores_in: np.ndarray, scores_out: np.ndarray) -> float:
    from scipy import stats

    if scores_in.size == 0 or scores_out.size == 0:
        return math.nan
    u = stats.mannwhitneyu(scores_in, scores_out, alternative="two-sided").statistic
    return float(u / (scores_in.size * scores_out.size))


def pooled_bound(sel_in: np.ndarray, sel_out: np.ndarray, ev_in: np.ndarray, ev_out: np.ndarray, delta: float,
                 confidence: float = DEFAULT_CONFIDENCE) -> PooledBound:
    """The two lower bounds from scores of selection and evaluation canaries of each world: the tests are
    chosen on the selection scores only, the rates counted on the evaluation scores only."""
    from audits.mechanism import GaussianFamily, _rates, _select, _upper

    arrays = [np.asarray(a, float) for a in (sel_in, sel_out, ev_in, ev_out)]
    if min(a.size for a in arrays) < 1:
        raise ConfigError("a pooled audit needs selection and evaluation canaries in both worlds "
                          "(more canaries or runs)")
    sel_in, sel_out, ev_in, ev_out = arrays
    per = 1.0 - (1.0 - confidence) / 2.0  # the two rates at once (Bonferroni)
    fam = GaussianFamily()
    t, d = _select(fam, sel_in, sel_out, per)
    fp, fn = _rates(ev_in, ev_out, np.array([t]), d)
    alpha_u, beta_u = float(_upper(fp, ev_out.size, per)[0]), float(_upper(fn, ev_in.size, per)[0])
    mu = float(fam.strength_bound(np.array([alpha_u]), np.array([beta_u]))[0])
    t_cp, d_cp = select_threshold(sel_in, sel_out, delta, confidence)
    fp_cp, fn_cp = errors_at(d_cp * ev_in, d_cp * ev_out, d_cp * t_cp)
    cp = multi_run_bound(fp_cp, ev_out.size, fn_cp, ev_in.size, delta, confidence, threshold=t_cp)
    return PooledBound(cp.epsilon_lb, fam.epsilon(mu, delta), mu, alpha_u, beta_u, float(t), int(d), float(t_cp),
                       int(d_cp), (sel_in.size, sel_out.size), (ev_in.size, ev_out.size), _auc(ev_in, ev_out),
                       confidence)


#: fresh anchors per canary for a node-level method without a declared degree bound: a method whose examples read
#: other nodes' rows (a neighbour mean, a GCN-normalised input) puts the canary in its anchors' examples too, which
#: an isolated canary never shows; for one whose examples are the nodes' own rows they change nothing between worlds
NEIGHBOUR_ANCHORS = 3


def worst_case_design(method: Method, canary: CanaryConfig | None = None) -> CanaryConfig:
    """The canary design of a pooled audit: dedicated signed columns, isolated canaries, and for a node-level method
    fresh anchors, each adjacent to its canary alone (under a declared bound they hold -f_k: the trees that read the
    canary are at -C without it; without one they are zero rows), as many as put the canary in the most examples the
    relation lets it reach:

    * a ``max_degree`` K in the config (DP-GNN), ``relation="input-graph"`` (the default): the sampler keeps every
      incoming edge from a training node and K is a declared bound on their number, so K anchors (the most the
      bound allows the canary) put it in 1 + K = N(K, 1) trees, each anchor's and its own: the ledger's Lemma 1
      count at depth 1, met exactly;
    * ``relation="in-edges"`` (Algorithm 1): each of v's incoming edges is kept with probability K / (2 |RE_v|),
      so with at most K/2 anchors every anchor's tree holds v (1 + floor(K/2) examples at +C, floor(K/2) at -C
      without it); more anchors add trees that lack v in both worlds (-C either way: noise, no signal). Lemma 1's
      N(K, 1) = K + 1 is what the ledger pays for; the sampler lets about half of it happen;
    * no declared bound: :data:`NEIGHBOUR_ANCHORS`, so examples that read neighbours' rows show.

    ``canary`` with ``fresh_anchors`` set is an explicit request (``--canary-degree``, ``--fresh-anchors``): its
    degree is used, refused above a declared bound the run would refuse. Depth 1 only: with r > 1 layers N(K, r)
    counts trees that reach v through longer paths, which this design does not build (the bound it tests is the
    depth-1 part of the ledger's)."""
    from methods.privacy.presets import INPUT_GRAPH

    base = canary or CanaryConfig(hops=0, degree=0)
    config = getattr(method, "config", None)
    k = int(getattr(config, "max_degree", 0) or 0)
    input_graph = getattr(config, "relation", None) == INPUT_GRAPH
    if base.fresh_anchors:
        degree = int(base.degree)
        if k > 0 and input_graph and degree > k:
            raise ConfigError(f"--canary-degree {degree} exceeds {method.name}'s declared max_degree {k}: the run "
                              "refuses a graph above its declared bound (use at most that many anchors)")
    elif method.privacy_unit == "node":
        degree = (k if input_graph else max(1, k // 2)) if k > 0 else NEIGHBOUR_ANCHORS
    else:
        degree = 0
    # signed anchors (rows -f_k) make DP-GNN's trees the worst case; without a declared bound the anchors are zero
    # rows, so an example that reads the canary through an aggregate (a GCN-normalised input mixes the anchor's own
    # row in) holds +f_k only when the canary is there
    signed = not (method.privacy_unit == "node" and k == 0 and degree > 0)
    return CanaryConfig(hops=0, degree=degree, scale=base.scale, pattern="dedicated", fresh_anchors=degree > 0,
                        signed=signed)


#: the realised pair's check takes each world's rate of non-zero shifts at this one-sided lower confidence bound
#: (Clopper-Pearson), so its false alarms cost at most this much on top of the audit's 1 - confidence
PAIR_ALPHA = 1e-6


@dataclass
class PooledOutcome:
    """What :func:`pooled_audit` measured; :func:`audits.runner.audit` turns it into an ``AuditResult``."""

    claimed: float  # the largest ledger epsilon over the runs
    bound: PooledBound
    canaries: int  # per run
    details: dict
    note: str
    #: the exact epsilon of the pair the runs realised, with each world's rate of non-zero shifts at its
    #: 1 - PAIR_ALPHA lower confidence bound: above the claim, the run did not keep its claim
    pair_epsilon_low: float = 0.0

    @property
    def pair_epsilon(self) -> float:
        return float(self.details["pair_epsilon"])

    @property
    def pair_exceeds_claim(self) -> bool:
        """Whether the realised pair's exact epsilon exceeds the claim (a VIOLATION): decided on
        ``pair_epsilon_low``, so sampling noise in the observed draw rates does not flag a correct method
        (the PLD rounds down, so no numerical slack is needed beyond 1e-9 relative)."""
        return self.pair_epsilon_low > self.claimed * (1 + 1e-9) + 1e-12

    def pair_reason(self) -> str:
        return (f"the realised pair's exact epsilon {self.pair_epsilon:.4g} exceeds the claim {self.claimed:.4g} "
                f"({self.pair_epsilon_low:.4g} with the observed draw rates at their {1 - PAIR_ALPHA:g} lower "
                "confidence bounds)")


@dataclass
class PooledFit:
    """One run of a pooled audit: its canaries' coins, which of them choose the tests, the hook's records and
    the ledger's epsilon."""

    include: np.ndarray
    select: np.ndarray
    hook: Any
    claimed: float


def pooled_fits(make_method: Callable[[], Method], task: Task, budget: Budget, *, runs: int = 4,
                canaries: int = 1000, canary: CanaryConfig | None = None, seed: int | RunStreams = 0,
                device: Any = "cpu", progress: bool = False,
                on_fit: Callable[[list[PooledFit]], None] | None = None, workers: int = 1,
                canary_set: Any = None) -> tuple[list[PooledFit], int]:
    """The ``runs`` fits of a pooled audit with ``canaries`` gradient canaries each, and the canaries per run (the
    graph may hold fewer); run r's randomness is the audit streams' child ("run", r), so the first R fits of a
    longer audit are those of an audit with ``runs=R``. ``on_fit(fits)`` is called after each fit (in run order).

    ``workers`` > 1 runs the fits in that many processes with one torch thread each (the runs are independent
    trials, so they parallelise without changing what any run draws): on a small model one thread is nearly as
    fast as several, and it does not stall when other jobs load the cores. A method class or streams that cannot
    travel to a worker (a plugin loaded from a file, secure-noise or child streams) runs in this process."""
    from audits.whitebox import canary_columns

    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ConfigError(f"a pooled audit needs --trials (runs) >= 1 (got {runs})")
    if canaries < 4:
        raise ConfigError(f"a pooled audit needs --canaries >= 4 (got {canaries})")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers must be a positive integer (got {workers!r})")
    probe = make_method()
    unit = probe.privacy_unit
    if unit not in ("node", "feature"):
        raise ConfigError(f"gradient canaries audit node- or feature-level DP-SGD, not {unit}-level {probe.name}")
    design = worst_case_design(probe, canary)
    streams = RunStreams.of(seed)
    # the set a plan drew already (audits.runner.draw_canaries: the same call), else drawn here
    cs = canary_set if canary_set is not None else make_canaries(task, unit, canaries, design, seed=streams)
    m = cs.m
    plans = []
    for r in range(runs):
        s = streams.child("run", r)
        include = inclusion_coins(s, m)
        select = s.numpy("split").random(m) < 0.5
        plans.append((include, select))
    job = (make_method, budget, streams, device, m)
    remote = workers > 1 and runs > 1 and _travels(job)
    fits: list[PooledFit | None] = [None] * runs
    done = 0
    bar = progress_bar(runs, f"audit {probe.name} white-box pooled", progress)

    def finished(r: int, hook: Any, claimed: float) -> None:
        nonlocal done
        fits[r] = PooledFit(plans[r][0], plans[r][1], hook, claimed)
        bar.update(1)
        while done < runs and fits[done] is not None:
            done += 1
            if on_fit is not None:
                on_fit(fits[:done])  # type: ignore[arg-type]

    if remote:
        import multiprocessing
        import pickle
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        slots = min(workers, runs)
        with ProcessPoolExecutor(slots, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_worker_init, initargs=(_file_modules(job),)) as pool:
            # one world per busy worker at a time: a world is the whole graph, built and sent when a worker is free
            pending: dict = {}
            for r in range(runs):
                pending[pool.submit(_remote_run, job, r, pickle.dumps(cs.world(plans[r][0])))] = r
                if len(pending) < slots:
                    continue
                done_now, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in done_now:
                    finished(pending.pop(f), *pickle.loads(f.result()))
            for f in wait(pending).done:
                finished(pending.pop(f), *pickle.loads(f.result()))
    else:
        for r in range(runs):
            finished(r, *_pooled_run(job, r, cs.world(plans[r][0]), canary_columns))
    bar.close()
    return fits, m  # type: ignore[return-value]


def _travels(job: tuple) -> bool:
    """Whether a pooled job can be sent to a spawned worker: its method class importable there (by name, or from
    the file a plugin was loaded from: :func:`_file_modules`), its streams a root (a child or secure-noise streams
    refuse to be pickled, by design)."""
    import importlib
    import pickle

    make_method = job[0]
    cls = type(make_method())
    try:
        if getattr(importlib.import_module(cls.__module__), cls.__qualname__, None) is not cls:
            return False
        pickle.dumps(job)
    except Exception:
        return False
    return True


def _file_modules(job: tuple) -> tuple[tuple[str, str], ...]:
    """(module name, file) of the job's method class where a fresh process cannot import it by name: a plugin
    file loaded under a synthetic module name (``bench --plugin FILE.py``). A spawned worker loads the file
    under the same name before it unpickles the job (:func:`_worker_init`)."""
    import sys
    from importlib.machinery import PathFinder

    mod = sys.modules.get(type(job[0]()).__module__)
    name, file = getattr(mod, "__name__", ""), getattr(mod, "__file__", None)
    if not file or name in sys.builtin_module_names or PathFinder.find_spec(name.split(".")[0]) is not None:
        return ()
    return ((name, file),)


def _worker_init(modules: tuple[tuple[str, str], ...] = ()) -> None:
    """One torch thread per worker process (the workers share the cores); the plugin files the job's classes come
    from loaded under the names the driver gave them."""
    import importlib.util
    import sys

    import torch

    torch.set_num_threads(1)
    for name, file in modules:
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load plugin file {file} in a worker")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


def _remote_run(job: tuple, r: int, world: bytes) -> bytes:
    """:func:`_pooled_run` in a worker. The world and the result travel as plain pickles (bytes): the queues' own
    pickler would hand tensors over as shared file descriptors through a Unix socket in the temporary folder, whose
    path can be too long for one."""
    import pickle

    from audits.whitebox import canary_columns

    return pickle.dumps(_pooled_run(job, r, pickle.loads(world), canary_columns))


def _pooled_run(job: tuple, r: int, world: Task, columns: Callable) -> tuple[Any, float]:
    """Run r of a pooled audit on its canary world: the fit under the gradient hook, and the ledger's epsilon."""
    from audits.whitebox import GradientCanaries
    from methods.dpsgd import gradient_hook

    make_method, budget, streams, device, m = job
    method = make_method()
    method.check_task(world)
    hook = GradientCanaries(columns(world.num_features, m), world.num_features, record_steps=True)
    with gradient_hook(hook):
        fitted = fit_method(method, world, budget, streams.child("run", r).child("fit"), device=device)
    if hook.steps == 0 or not hook.noise_scale:
        raise ContractViolation(f"gradient canaries: {method.name} took no DP-SGD step through the hook")
    return hook, float(fitted.epsilon(budget.delta))


def pooled_audit(make_method: Callable[[], Method], task: Task, budget: Budget, *, runs: int = 4,
                 canaries: int = 1000, confidence: float = DEFAULT_CONFIDENCE, canary: CanaryConfig | None = None,
                 seed: int | RunStreams = 0, device: Any = "cpu", progress: bool = False,
                 workers: int = 1, canary_set: Any = None) -> PooledOutcome:
    """Audit a private DP-SGD method white-box with ``runs`` fits of ``canaries`` gradient canaries each (see the
    module docstring; ``workers`` and ``canary_set`` as in :func:`pooled_fits`); the entry point is
    :func:`audits.runner.audit` with ``mode="pooled"``."""
    fits, _ = pooled_fits(make_method, task, budget, runs=runs, canaries=canaries, canary=canary, seed=seed,
                          device=device, progress=progress, workers=workers, canary_set=canary_set)
    return pooled_outcome(fits, budget.delta, confidence, design=worst_case_design(make_method(), canary))


def pooled_outcome(fits: list[PooledFit], delta: float, confidence: float = DEFAULT_CONFIDENCE,
                   design: CanaryConfig | None = None) -> PooledOutcome:
    """The bounds and the realised pair's exact epsilon of the pooled runs ``fits``."""
    runs, m = len(fits), int(fits[0].include.size)
    claimed = max(f.claimed for f in fits)
    # the score model: the per-step shifts of the selection canaries of each world
    sel_shift = {w: np.concatenate([_shifts(f.hook)[:, f.select & (f.include == w)].ravel() for f in fits])
                 for w in (True, False)}
    model_in, model_out = empirical_shifts(sel_shift[True]), empirical_shifts(sel_shift[False])
    pools: dict[tuple[bool, bool], list[np.ndarray]] = {(a, b): [] for a in (True, False) for b in (True, False)}
    for f in fits:
        sc = f.hook.shift_likelihood_scores(model_in, model_out).numpy()
        for a in (True, False):
            for b in (True, False):
                pools[a, b].append(sc[(f.select == a) & (f.include == b)])
    pool = {k: np.concatenate(v) for k, v in pools.items()}
    bound = pooled_bound(pool[True, True], pool[True, False], pool[False, True], pool[False, False], delta,
                         confidence)
    # the exact epsilon of the audited pair over the run, from the shifts of all canaries, and the same with the
    # observed draw rates at their lower confidence bounds (what decides the realised pair's verdict)
    all_shift = {w: np.concatenate([_shifts(f.hook)[:, f.include == w].ravel() for f in fits]) for w in (True, False)}
    longest = max(fits, key=lambda f: f.hook.steps).hook
    pin, pout = empirical_shifts(all_shift[True]), empirical_shifts(all_shift[False])
    exact = pair_epsilon(pin, pout, longest.noise_scale, delta)
    low = pair_epsilon(*lower_rate_shifts(all_shift[True], all_shift[False], PAIR_ALPHA), longest.noise_scale, delta)
    drawn = np.concatenate([f.hook.occurrences.numpy()[f.include] for f in fits])
    details = {"canary_type": "gradient", "bound": bound.to_dict(), "runs": runs, "steps": [f.hook.steps for f in fits],
               "pair_epsilon": exact, "pair_epsilon_low": low,
               "shift_model": {"in": [model_in.values, model_in.probs], "out": [model_out.values, model_out.probs]},
               "mean_drawn_in": float(drawn.mean()) if drawn.size else 0.0}
    if design is not None:
        details["design"] = {"signed": True, "anchors": design.degree, "fresh_anchors": design.fresh_anchors}
    note = (f"f-DP (GDP) estimate {bound.epsilon_lb_fdp:.3g}; the audited pair's exact epsilon {exact:.3g}; "
            f"{runs} run(s) x {m} canaries")
    return PooledOutcome(claimed, bound, m, details, note, low)


def lower_rate_shifts(shifts_in: np.ndarray, shifts_out: np.ndarray, alpha: float = PAIR_ALPHA):
    """The two worlds' observed shift distributions with the mass of every non-zero shift scaled by one factor
    lambda <= 1 (moved to 0): lambda is the smallest over the worlds of (the one-sided 1 - alpha Clopper-Pearson
    lower bound on the world's rate of non-zero shifts) / (its observed rate). Moving both worlds towards the same
    distribution (no shift) by one factor cannot raise their epsilon (joint convexity of the hockey-stick
    divergence), so with the observed conditional shape of a non-zero shift (one value per world under Poisson and
    fixed-size sampling) the pair's epsilon at these rates is, with probability >= 1 - alpha per world, at most
    the epsilon of the pair the sampler realises."""
    from scipy import stats

    lam = 1.0
    for sh in (np.asarray(shifts_in).ravel(), np.asarray(shifts_out).ravel()):
        k, n = int(np.count_nonzero(sh)), int(sh.size)
        if k:
            lam = min(lam, float(stats.beta.ppf(alpha, k, n - k + 1)) / (k / n))

    def shrink(sh: np.ndarray):
        d = empirical_shifts(sh)
        probs = [p * lam if v != 0 else 0.0 for v, p in zip(d.values, d.probs)]
        values = list(d.values)
        if 0.0 not in values:
            values.append(0.0)
            probs.append(0.0)
        probs[values.index(0.0)] = 1.0 - sum(probs)
        return type(d)(values, probs)

    return shrink(shifts_in), shrink(shifts_out)


def _shifts(hook) -> np.ndarray:
    import torch

    return torch.stack(hook.shifts).numpy()


def pair_epsilon(model_in, model_out, noise_scales, delta: float, bins_per_sd: int = 100) -> float:
    """The exact epsilon at ``delta`` of the audited pair composed over the run: step t releases N(J, s_t^2) with
    J ~ ``model_in`` in one world and ``model_out`` in the other (the shifts the auditor put in, in units of C).
    The most any test of this design can show, whatever the accountant claims. dp-accounting's PLD of the pair
    with y discretised into ``bins_per_sd`` bins per noise standard deviation (a post-processing: the value is
    at most the pair's, within the PLD's own discretisation), both directions, composed over the steps."""
    from collections import Counter

    from scipy import stats

    from audits.exact import pair_epsilon as exact

    vin, pin = np.asarray(model_in.values, float), np.asarray(model_in.probs, float)
    vout, pout = np.asarray(model_out.values, float), np.asarray(model_out.probs, float)
    parts = []
    for s, count in Counter(round(float(x), 9) for x in noise_scales).items():
        lo, hi = min(vin.min(), vout.min()) - 12 * s, max(vin.max(), vout.max()) + 12 * s
        edges = np.linspace(lo, hi, int((hi - lo) / s * bins_per_sd) + 2)
        edges[0], edges[-1] = -np.inf, np.inf

        def masses(v, p):
            return (p[:, None] * np.diff(stats.norm.cdf((edges[None, :] - v[:, None]) / s), axis=1)).sum(0)  # noqa: B023 - called within this iteration

        parts.append((masses(vin, pin), masses(vout, pout), count))
    return exact(parts, delta)
