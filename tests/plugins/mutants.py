"""A zoo of deliberately broken private methods: ``bench verify`` and the audits must flag each of them.

Test-only: registered through the public interface (``bench --plugin tests/plugins/mutants.py`` or by
importing this module), never shipped. Each mutant subclasses a real method and makes ONE change that breaks
its privacy argument, while its ledger still claims the original guarantee (its reported epsilon stays within
the target, so ``check_fitted`` accepts the fit: the lie is in what it does, not in what it reports). Patches
of module globals (``_patched``) and the stand-ins they install last for the duration of one fit only.

:data:`ZOO` is the machine-readable record: for every mutant its shipped base method, family, privacy unit,
the bug in one sentence, its true epsilon (derived below, per mutant, in its class docstring), the ratio of
the true to the claimed epsilon at its configuration, the checks of ``audits.verify`` that should catch it,
and a configuration (hyperparameters and dataset) under which its leak is large and a fit takes seconds.

True epsilons are "what the suite's accountant (RDP, improved conversion) reports for the mechanism that
actually ran", at the verification defaults: ``VERIFY_EPSILON`` = 1, delta = ``default_delta`` of the task's
privacy units (1e-4 on the 1000-node transductive tasks, ~2000 edges; 1e-3 on the private-public ones, 500
private nodes), seed 0, the mutant's ``config`` and ``dataset``. ``derive(name)`` recomputes one by fitting the
mutant there and rebuilding the ledger of what ran (``tests/test_mutants.py`` checks the recorded numbers, marked
slow); no event type covers sampling with replacement, so ``mutant-dpgnn-replacement``'s Renyi divergences are
computed numerically (:func:`replacement_epsilon`). "inf": the release is a noise-free function of a private
unit for some neighbouring pair of the run's own kind; "unbounded": the sensitivity the noise was calibrated for
does not bound the change one unit makes (no finite epsilon over all graphs).

The original five mutants override ``fit`` (so ``methods.base.fit_method`` hands them an integer seed, not the
run's streams); they are kept exactly as they were, since other tests rely on their randomness. The others
override ``_fit`` and run inside the ``Method.fit`` template.

``python tests/plugins/mutants.py`` prints the zoo as a markdown table.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from audits import step_pairs

from methods import inference as I
from methods.base import Budget, FitContext, register
from methods.dp_mlp import DPMLP
from methods.dpgnn import DPGNNAdam, DPGNNSGD
from methods.dpsgd import DPOptimizer, FixedSizeSampler, PerExampleGradients, PoissonSampler
from methods.drw import DRW, DRWD, DRWR, WalkSet
from methods.gap.edgerand import EdgeRand
from methods.gap.gap import GAPEdge, GAPNode
from methods.gap.progap import ProGAPEdge, ProGAPNode
from methods.privacy import PrivacyLedger
from methods.privacy import presets
from methods.privacy.events import Laplace
from methods.privgnn.pate import PATEG, PATEM
from methods.privgnn.privgnn import PrivGNN
from methods.subgraphs import PaddedSubgraphs, dense_adjacency

NOISE_FACTOR = 0.01

VERIFY_DATASET = "csbm:nodes=1000,classes=3,features=32,degree=4"
VERIFY_SPLIT = "random-75-10-15"
VERIFY_EPSILON = 1.0
SMOKE_DATASET = "csbm:nodes=200,classes=3,features=8,degree=6"

#: the checks of ``audits.verify`` (its names)
CHECK_NAMES = ("epsilon-accounted", "determinism", "noise-independence", "private-inference", "label-use", "ledger-counts",
               "noise-calibration", "occurrences", "gradient-canaries", "input-canaries", "edge-canaries", "multi-run",
               "mechanism")


@contextlib.contextmanager
def _patched(module: str, name: str, value):
    mod = importlib.import_module(module)
    old = getattr(mod, name)
    setattr(mod, name, value)
    try:
        yield
    finally:
        setattr(mod, name, old)


class _Proxy:
    """A stand-in for a module: the given attributes replaced, everything else the module's own."""

    def __init__(self, target, **overrides: Any) -> None:
        self._target = target
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


# ======================================================================================
# The five original mutants (kept exactly: tests/test_audit*.py and scripts/audit_table.py use them)
# ======================================================================================


class _WeakNoiseDPOptimizer(DPOptimizer):
    def step(self, inputs, target, noise_std, denominator):
        return super().step(inputs, target, noise_std * NOISE_FACTOR, denominator)


@register("mutant-dp-mlp-noise")
class MutantDPMLPNoise(DPMLP):
    """DP-SGD noise 0.01 x what the ledger accounts for. True epsilon: the DP-MLP ledger at noise multiplier
    z / 100 (same rate and steps)."""

    description = "MUTANT: DP-MLP with 0.01x the accounted noise"

    def fit(self, *args, **kwargs):
        with _patched("methods.dp_mlp", "DPOptimizer", _WeakNoiseDPOptimizer):
            return super().fit(*args, **kwargs)


@register("mutant-drw-overlap")
class MutantDRWOverlap(DRW):
    """Overlapping subgraphs: every training root takes an ego-star of up to ``walk_length`` random neighbours
    instead of a node-disjoint walk, so a feature row enters up to (degree + 1) examples of a batch while the
    replace-one sensitivity 2C assumes one. True epsilon: unbounded (nothing bounds the degree)."""

    description = "MUTANT: DRW with overlapping subgraphs (ego-stars) but the disjoint-walk accounting"

    def _walks(self, graph, roots, csr, c, gen, inductive, rule, sparse=None) -> WalkSet:
        n = int(graph.num_nodes)
        roots = torch.arange(n) if roots is None else roots
        pad = 1 + c.restarts * c.walk_length
        indptr, indices = (torch.as_tensor(a).long() for a in csr)
        nodes = torch.full((roots.numel(), pad), -1, dtype=torch.long)
        g, s, d = [], [], []
        for i, r in enumerate(roots.tolist()):
            nb = indices[indptr[r]:indptr[r + 1]]
            nb = nb[torch.randperm(nb.numel(), generator=gen)[: pad - 1]]
            nodes[i, 0] = r
            nodes[i, 1:1 + nb.numel()] = nb
            for j in range(nb.numel()):  # star edges root <-> neighbour
                g += [i, i]
                s += [0, j + 1]
                d += [j + 1, 0]
        t = lambda v: torch.tensor(v, dtype=torch.long)  # noqa: E731
        adj = dense_adjacency(roots.numel(), pad, t(g), t(s), t(d), nodes >= 0)
        m = int(roots.numel())
        return WalkSet(PaddedSubgraphs(nodes, adj), m, m, rule + " [MUTANT: overlapping subgraphs]")


@register("mutant-dpgnn-nobound")
class MutantDPGNNNoBound(DPGNNSGD):
    """Trees sampled without the in-degree bound (K unbounded for the sampler only; the ledger still uses
    N(K, r)) and without the out-list cap. True epsilon: unbounded (a node of in-degree d is in up to d + 1
    depth-1 trees)."""

    description = "MUTANT: DP-GNN without the in-degree bound (the ledger still assumes N(K, r))"

    def prepare(self, task, gen):
        c = self.config
        saved = (c.max_degree, c.max_children)
        c.max_degree, c.max_children = 10**9, None
        try:
            return super().prepare(task, gen)
        finally:
            c.max_degree, c.max_children = saved


def _no_normalisation(x):
    return x.detach().float()


@register("mutant-gap-edge-nonorm")
class MutantGAPEdgeNoNorm(GAPEdge):
    """NAP without the row normalisation (and an encoder-free input not normalised either): one edge moves an
    aggregate by a row norm, not by sqrt(2). True epsilon: unbounded (feature rows are not bounded)."""

    description = "MUTANT: GAP edge-level with NAP's row normalisation removed (the ledger still uses sqrt(2))"

    def fit(self, *args, **kwargs):
        with _patched("methods.gap.nap", "normalize_rows", _no_normalisation), \
                _patched("methods.gap.gap", "normalize_rows", _no_normalisation):
            return super().fit(*args, **kwargs)


@register("mutant-privgnn-laplace")
class MutantPrivGNNLaplace(PrivGNN):
    """Laplace noise of scale lambda instead of 1/lambda (rate and scale confused); at the small lambdas that
    meet epsilon ~ 1 this is almost no noise. True epsilon: the PrivGNN ledger at lambda' = 1 / lambda."""

    description = "MUTANT: PrivGNN with Laplace scale lambda instead of 1/lambda"

    def fit(self, *args, **kwargs):
        import methods.privgnn.privgnn as mod

        real = mod.noisy_argmax

        def wrong(scores, lam, seed, **kw):
            return real(scores, None if lam is None else 1.0 / lam, seed, **kw)  # noise lap / (1 / lam) = lap * lam

        with _patched("methods.privgnn.privgnn", "noisy_argmax", wrong):
            return super().fit(*args, **kwargs)


# ======================================================================================
# DP-MLP (node)
# ======================================================================================


class _InitStreamContext(FitContext):
    """The run's streams, except that a generator asked for on the ``noise`` stream is seeded from ``init``."""

    def generator(self, purpose: str, *path: Any, device: Any = "cpu") -> torch.Generator:
        if purpose == "noise":
            purpose = "init"  # BUG: the noise generator gets the initialisation stream's seed
        return super().generator(purpose, *path, device=device)


@register("mutant-dp-mlp-initnoise")
class MutantDPMLPInitNoise(DPMLP):
    """The DP-SGD noise generator is seeded from the ``init`` stream, the same seed torch's global RNG gets for
    the parameter initialisation: the step-1 noise replays the uniforms behind the initial weights.

    True epsilon: inf. DP-SGD's analysis lets the adversary know the initial weights (they are data-independent);
    here they determine the step-1 noise (torch's CPU ``normal_`` is an invertible transform of the same
    uniforms), so the first released gradient sum is noise-free to that adversary."""

    description = "MUTANT: DP-MLP whose DP-SGD noise generator is seeded from the init stream"

    def _fit(self, ctx: FitContext):
        wrong = _InitStreamContext(**{f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)})
        return super()._fit(wrong)


class _UnclippedGradients(PerExampleGradients):
    """Per-example gradient sums without clipping (clip = inf) for the parameter tensors in ``which`` (all when
    None); the returned norms are the true per-example norms either way."""

    def __init__(self, model, loss_fn, mode, which: tuple[int, ...] | None = None) -> None:
        super().__init__(model, loss_fn, mode)
        self.which = which

    def norms_and_sum(self, inputs, target, clip, per_layer=False):
        raw, norms, losses = super().norms_and_sum(inputs, target, math.inf, False)
        if self.which is None:
            return raw, norms, losses
        sums, norms, losses = super().norms_and_sum(inputs, target, clip, per_layer)
        return [raw[i] if i in self.which else s for i, s in enumerate(sums)], norms, losses


class _ClipAfterNoiseDPOptimizer(DPOptimizer):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.grads = _UnclippedGradients(self.model, self.loss_fn, self.mode)  # BUG: no per-example clipping...
        params = [p for _, p in self.grads.params]
        real_step = self.optimizer.step

        def step(*args, **kwargs):  # ... the noisy averaged gradient is clipped to C instead
            torch.nn.utils.clip_grad_norm_(params, self.clip)
            return real_step(*args, **kwargs)

        self.optimizer.step = step


@register("mutant-dp-mlp-clip-after-noise")
class MutantDPMLPClipAfterNoise(DPMLP):
    """Clipping after noising: N(0, (z C)^2) is added to the sum of UNclipped per-example gradients, and the
    noisy average is then clipped to norm C (as ``clip_grad_norm_`` would).

    True epsilon: unbounded. The released noisy sum moves by one example's raw gradient norm, which nothing
    bounds (the later clip is post-processing of that release)."""

    description = "MUTANT: DP-MLP that adds the noise to unclipped gradients and clips the noisy average"

    def _fit(self, ctx: FitContext):
        with _patched("methods.dp_mlp", "DPOptimizer", _ClipAfterNoiseDPOptimizer):
            return super()._fit(ctx)


# ======================================================================================
# GAP (edge and node)
# ======================================================================================


class _MeanNoiseDPOptimizer(DPOptimizer):
    def step(self, inputs, target, noise_std, denominator):
        # BUG: the std meant for noise on the MEAN (z C / B) is added to the SUM
        return super().step(inputs, target, noise_std / denominator, denominator)


@register("mutant-gap-node-meannoise")
class MutantGAPNodeMeanNoise(GAPNode):
    """DP-SGD noise calibrated for the mean but added to the sum: std z C / B on the clipped sum, B the expected
    Poisson batch (the denominator), where the ledger's multiplier z needs z C.

    True epsilon: the GAP node-level ledger with the DP-SGD multiplier z / B (encoder and classifier steps;
    the K NAP releases keep sigma_AP = z sqrt(D))."""

    description = "MUTANT: GAP node-level whose DP-SGD noise std is z C / B (meant for the mean) on the sum"

    def _fit(self, ctx: FitContext):
        with _patched("methods.gap.stages", "DPOptimizer", _MeanNoiseDPOptimizer):
            return super()._fit(ctx)


class _SnapshotHistory(list):
    """The history list ``train_dp`` appends to, keeping the model state of the best validation accuracy."""

    def __init__(self, target: list, model: torch.nn.Module) -> None:
        super().__init__(target)
        self.target, self.model = target, model
        self.best: tuple[float, dict] | None = None

    def append(self, row) -> None:
        super().append(row)
        self.target.append(row)
        acc = row.get("val_acc")
        if acc is not None and (self.best is None or acc > self.best[0]):
            self.best = (acc, copy.deepcopy(self.model.state_dict()))


def _best_validation_epoch(real):
    def train_dp(model, inputs, split, *, history, **kwargs):
        snapshots = _SnapshotHistory(history, model)
        taken = real(model, inputs, split, history=snapshots, **kwargs)
        if snapshots.best is not None:
            model.load_state_dict(snapshots.best[1])  # BUG: the epoch chosen on private validation labels
        return taken

    return train_dp


@register("mutant-gap-node-bestval")
class MutantGAPNodeBestVal(GAPNode):
    """The encoder's and the classifier's released states are the epochs with the best accuracy on the
    validation labels (as the authors' code does at node level), not the final ones.

    True epsilon: inf. Validation labels are private node data that no mechanism touches; the released weights
    are an argmax over epochs of a noise-free function of them, so changing one validation label can switch
    the released model deterministically."""

    description = "MUTANT: GAP node-level releasing the best epochs on (private) validation labels"

    def _fit(self, ctx: FitContext):
        import methods.gap.gap as mod

        with _patched("methods.gap.gap", "train_dp", _best_validation_epoch(mod.train_dp)):
            return super()._fit(ctx)


# ======================================================================================
# ProGAP (edge and node)
# ======================================================================================


@register("mutant-progap-edge-sens1")
class MutantProGAPEdgeSens1(ProGAPEdge):
    """The ledger is built with sensitivity 1 per undirected edge (the papers' value for ONE directed adjacency
    entry) while removing an undirected edge changes two entries (sqrt(2)); sigma is calibrated against it, and
    the recipe still says the sound family function.

    True epsilon: the ``aggregation-edge`` ledger rebuilt from the run's own recipe (K releases, the same sigma,
    sensitivity sqrt(2)), i.e. noise multiplier sigma / sqrt(2) where the ledger claims sigma."""

    description = "MUTANT: ProGAP edge-level accounting sensitivity 1 per undirected edge (needs sqrt(2))"

    def _fit(self, ctx: FitContext):
        with _patched("methods.privacy.presets", "EDGE_SENSITIVITY", 1.0):  # BUG
            return super()._fit(ctx)


def _steps_per_epoch_ledger(real):
    def progap_node(depth, num_train, batch_size, steps_per_stage, noise_multiplier, max_degree, **kwargs):
        per_epoch = math.ceil(num_train / batch_size)
        return real(depth=depth, num_train=num_train, batch_size=batch_size,
                    steps_per_stage=steps_per_stage // per_epoch,  # BUG: one step counted per epoch
                    noise_multiplier=noise_multiplier, max_degree=max_degree, **kwargs)

    return progap_node


@register("mutant-progap-node-perepoch")
class MutantProGAPNodePerEpoch(ProGAPNode):
    """Steps counted per epoch: each stage runs epochs x ceil(N_train / B) DP-SGD steps, the ledger (and the
    calibration of z) composes ``epochs`` of them.

    True epsilon: the ProGAP node-level ledger at the same z with steps_per_stage = epochs x ceil(N_train / B)
    (``info["steps_per_stage"]``)."""

    description = "MUTANT: ProGAP node-level whose ledger counts one DP-SGD step per epoch"

    def _fit(self, ctx: FitContext):
        with _patched("methods.gap.progap", "presets", _Proxy(presets, progap_node=_steps_per_epoch_ledger(
                presets.progap_node))):
            return super()._fit(ctx)


@register("mutant-progap-node-allnodes")
class MutantProGAPNodeAllNodes(ProGAPNode):
    """The Poisson rate is accounted over all N nodes (Theorem 4.2's B / N, ``convention="paper"``) while the
    batches are drawn from the N_train training nodes only (rate B / N_train).

    True epsilon: the ProGAP node-level ledger at the same z with the sound rate B / N_train."""

    description = "MUTANT: ProGAP node-level accounting the Poisson rate over all nodes, sampling training nodes"

    def _fit(self, ctx: FitContext):
        real, n = presets.progap_node, ctx.task.num_nodes

        def progap_node(**kwargs):
            return real(**{**kwargs, "convention": "paper", "num_nodes": n})  # BUG: B / N, not B / N_train

        with _patched("methods.gap.progap", "presets", _Proxy(presets, progap_node=progap_node)):
            fitted = super()._fit(ctx)
        # it reports the rate it accounted (consistently wrong), so only what it does can give it away
        fitted.info["sampling_rate"] = fitted.ledger.sampling()["rate"][0]
        return fitted


# ======================================================================================
# EdgeRand (edge)
# ======================================================================================


def _full_budget_rr(real):
    def asymmetric_rr(edge_index, num_nodes, eps_link, eps_density, rng):
        # BUG: the pairs are flipped at the whole epsilon; the Laplace count's share is spent on top
        return real(edge_index, num_nodes, eps_link + eps_density, eps_density, rng)

    return asymmetric_rr


@register("mutant-edgerand-fullbudget")
class MutantEdgeRandFullBudget(EdgeRand):
    """Randomized response at the full epsilon, plus the Laplace edge count (epsilon_density) unaccounted: the
    ledger still says RR(epsilon_link = (1 - share) epsilon) + Laplace(epsilon_density = share epsilon).

    True epsilon: epsilon + epsilon_density = (1 + density_share) epsilon (pure composition of RR(epsilon) and
    the Laplace count). No audit can see it: the edge bits leak epsilon, which is the claim; only a comparison
    of the run's RR keep probability (``info["rr_keep_prob"]``) with the ledger's RR epsilon can."""

    description = "MUTANT: EdgeRand flipping at the full epsilon, the edge count unaccounted"

    def _fit(self, ctx: FitContext):
        import methods.gap.edgerand as mod

        with _patched("methods.gap.edgerand", "asymmetric_rr", _full_budget_rr(mod.asymmetric_rr)):
            return super()._fit(ctx)


def _keep_all_probabilities(real):
    """``methods.gap.edgerand.rr_probabilities`` with one change (BUG): a true edge is kept with probability p
    instead of p q, so the subsampling q only thins the flipped-in non-edges."""
    def rr_probabilities(eps_link, density):
        p, q, keep_edge, flip_in = real(eps_link, density)
        return p, q, p, flip_in  # BUG: keep_edge should be p * q

    return rr_probabilities


def keep_all_pair_epsilon(eps_link: float, q: float) -> float:
    """Pure epsilon of one pair under :func:`_keep_all_probabilities`: present with probability p (edge) or (1 - p) q
    (non-edge), absent with 1 - p or 1 - (1 - p) q."""
    p = 1.0 / (1.0 + math.exp(-eps_link))
    if q <= 0:
        return math.inf
    return max(math.log(p / ((1 - p) * q)), math.log((1 - (1 - p) * q) / (1 - p)))


@register("mutant-edgerand-keepall")
class MutantEdgeRandKeepAll(EdgeRand):
    """Asymmetric RR whose density subsampling q thins only the flipped-in non-edges: a true edge is released
    with probability p, a non-edge with (1 - p) q.

    True epsilon: max(epsilon_link + ln(1 / q), ln((1 - (1 - p) q) / (1 - p))) + epsilon_density at the run's
    q (``info["rr_subsample_q"]``; ~0.014 on a 1000-node graph of mean degree 4 at epsilon 1); unbounded over
    runs (q -> 0 as the noisy count -> 0)."""

    description = "MUTANT: EdgeRand keeping every true edge with probability p (q only thins the flipped-in pairs)"

    def _fit(self, ctx: FitContext):
        import methods.gap.edgerand as mod

        with _patched("methods.gap.edgerand", "rr_probabilities", _keep_all_probabilities(mod.rr_probabilities)):
            return super()._fit(ctx)


# ======================================================================================
# DP-GNN (node)
# ======================================================================================


class _WithReplacementSampler(FixedSizeSampler):
    def sample(self) -> torch.Tensor:
        return torch.randint(self.n, (self.m,), generator=self.gen)  # BUG: with replacement


@register("mutant-dpgnn-replacement")
class MutantDPGNNReplacement(DPGNNSGD):
    """Batches of m trees drawn WITH replacement (as DP-GNN's official code does) but accounted as drawn without
    (Theorem 1's hypergeometric count of trees holding the changed node, at most N(K, r)).

    True epsilon, by analysis: a removed node's <= N(K, r) trees are drawn rho ~ Binomial(m, N(K, r) / N_train)
    times in all, unbounded by N(K, r); with their clipped gradients aligned the noisy sum is the mixture
    sum_rho P(rho) N(rho / (lambda N(K, r)), 1) against N(0, 1) in units of the noise std. Its Renyi divergences,
    computed numerically (:func:`replacement_epsilon`; Theorem 1's Jensen step would give much more), composed
    over the steps and converted like the ledger. At full batch (m = N_train) the count is ~Poisson(N(K, r))
    instead of exactly N(K, r): K = 1, one step, epsilon 1 -> ~1.6."""

    description = "MUTANT: DP-GNN drawing its batches with replacement (accounted without)"

    def _fit(self, ctx: FitContext):
        with _patched("methods.dpgnn", "FixedSizeSampler", _WithReplacementSampler):
            return super()._fit(ctx)


#: orders at which :func:`replacement_epsilon` evaluates the mixture's Renyi divergence (numerical integration)
REPLACEMENT_ORDERS = (1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64)


def replacement_epsilon(num_train: int, occurrence_bound: int, batch_size: int, noise_multiplier: float,
                        steps: int, delta: float) -> float:
    """RDP-accounted epsilon of ``steps`` DP-GNN steps whose m draws are WITH replacement: the Renyi divergences
    (both directions) of sum_rho Binomial(rho; m, N(K,r) / N) N(rho / (lambda N(K,r)), 1) and N(0, 1), by
    numerical integration at ``REPLACEMENT_ORDERS``, composed and converted (improved conversion)."""
    from scipy.special import logsumexp
    from scipy.stats import binom

    from methods.privacy import rdp as R

    n, d, m, lam = int(num_train), int(occurrence_bound), int(batch_size), float(noise_multiplier)
    rho = np.arange(0, m + 1, dtype=float)
    logw = binom.logpmf(rho, m, min(d, n) / n)
    keep = logw > -80.0
    logw, mu = logw[keep], rho[keep] / (lam * d)
    top = float(mu.max())
    orders = np.asarray(REPLACEMENT_ORDERS, dtype=float)
    curve = []
    for a in orders:
        x = np.linspace(-40.0 - a * top, 40.0 + (a + 2.0) * top, 200_001)
        logq = -x ** 2 / 2
        logp = logsumexp(logw[:, None] - (x[None, :] - mu[:, None]) ** 2 / 2, axis=0)
        log_dx = math.log(x[1] - x[0]) - 0.5 * math.log(2 * math.pi)
        forward = logsumexp(a * logp + (1 - a) * logq) + log_dx
        backward = logsumexp(a * logq + (1 - a) * logp) + log_dx
        curve.append(max(forward, backward, 0.0) / (a - 1))
    return float(R.improved_epsilon(orders, steps * np.asarray(curve), delta)[0])


class _ScaledNoiseDPOptimizer(DPOptimizer):
    factor: float = 1.0

    def step(self, inputs, target, noise_std, denominator):
        return super().step(inputs, target, noise_std * self.factor, denominator)


def _scaled_noise(factor: float) -> type[DPOptimizer]:
    return type("_ScaledNoiseDPOptimizer", (_ScaledNoiseDPOptimizer,), {"factor": float(factor)})


@register("mutant-dpgnn-adam-sens")
class MutantDPGNNAdamSens(DPGNNAdam):
    """Noise std lambda C where Theorem 1 needs lambda 2 C N(K, r): the sensitivity of one example (C) where the
    sum's is 2C per tree times the N(K, r) trees a node can occur in.

    True epsilon: the DP-GNN ledger (same N_train, m, K, r, steps) at noise multiplier lambda / (2 N(K, r))."""

    description = "MUTANT: DP-GNN (Adam) with noise std lambda C instead of lambda 2 C N(K, r)"

    def _fit(self, ctx: FitContext):
        from methods.samplers.dpgnn import occurrence_bound

        c = self.config
        occ = occurrence_bound(c.max_degree, c.layers)
        with _patched("methods.dpgnn", "DPOptimizer", _scaled_noise(1.0 / (2.0 * occ))):  # BUG
            return super()._fit(ctx)


#: the count noise of the mutant's adaptive clipping: QuantileClipping refuses 0, this is 0 for a count
_NEGLIGIBLE = 1e-30


class _NoiselessCountDPOptimizer(DPOptimizer):
    def step(self, inputs, target, noise_std, denominator):
        q = self.quantile
        if q is not None:  # BUG: the clipped-gradient count is released without its noise
            self.quantile = dataclasses.replace(q, count_noise_std=_NEGLIGIBLE)
        try:
            info = super().step(inputs, target, noise_std, denominator)
        finally:
            self.quantile = q
        if q is not None:
            info.count_noise_std = q.count_noise_std
        return info


@register("mutant-dpgnn-adam-quantile")
class MutantDPGNNAdamQuantile(DPGNNAdam):
    """Adaptive clipping whose quantile count #{norm <= C} is released without noise, while the ledger's joint
    multiplier lambda_eff = (lambda_g^-2 + lambda_c^-2)^-1/2 assumes the count noise (its config turns
    ``adaptive_clipping`` on).

    True epsilon: inf. The threshold C_{t+1} = C_t exp(-eta (count / m - q)) is a noise-free function of the
    count, which changes by up to N(K, r) when a node is removed; the released weights (and
    ``info["final_clip"]``) depend on it."""

    description = "MUTANT: DP-GNN (Adam) with adaptive clipping whose quantile count gets no noise"

    def _fit(self, ctx: FitContext):
        with _patched("methods.dpgnn", "DPOptimizer", _NoiselessCountDPOptimizer):
            return super()._fit(ctx)


# ======================================================================================
# DRW, DRW-R, DRW-D (feature)
# ======================================================================================


@register("mutant-drw-r-halfsens")
class MutantDRWRHalfSens(DRWR):
    """Noise std lambda C (the add/remove sensitivity of one clipped example) under the replace-one relation,
    where replacing a feature row moves the sum by up to 2C (std lambda 2C).

    True epsilon: the DRW ledger (same population, batch and steps) at noise multiplier lambda / 2."""

    description = "MUTANT: DRW-R with noise std lambda C (replace-one needs lambda 2C)"

    def _fit(self, ctx: FitContext):
        with _patched("methods.drw", "DPOptimizer", _scaled_noise(0.5)):  # BUG
            return super()._fit(ctx)


class _FirstLayerUnclippedDPOptimizer(DPOptimizer):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.grads = _UnclippedGradients(self.model, self.loss_fn, self.mode, which=(0,))  # BUG: layer 1 unclipped


@register("mutant-drw-d-unclipped")
class MutantDRWDUnclipped(DRWD):
    """One layer left unclipped: the first GCN layer's weight gradient enters the noisy sum unclipped (the other
    parameters are clipped to C as usual).

    True epsilon: unbounded. That gradient is (A X)^T delta per example, linear in the feature row that the
    replace-one relation changes arbitrarily."""

    description = "MUTANT: DRW-D with the first layer's per-example gradients left unclipped"

    def _fit(self, ctx: FitContext):
        with _patched("methods.drw", "DPOptimizer", _FirstLayerUnclippedDPOptimizer):
            return super()._fit(ctx)


# ======================================================================================
# PrivGNN and PATE (node, private-public)
# ======================================================================================


@register("mutant-privgnn-logposterior")
class MutantPrivGNNLogPosterior(PrivGNN):
    """Laplace noise on the teachers' log-probabilities (as the authors' code does) while the ledger accounts
    noise on posteriors (L1 sensitivity 2).

    True epsilon: unbounded. Log-probabilities are unbounded below, so one private node can move a teacher's
    noisy scores by any amount (no finite sensitivity)."""

    description = "MUTANT: PrivGNN with its Laplace noise on log-posteriors (accounted as on posteriors)"

    def _fit(self, ctx: FitContext):
        import methods.privgnn.privgnn as mod

        real = mod.noisy_argmax

        def on_logs(scores, lam, generator, **kw):
            return real(torch.log(scores.double().clamp_min(1e-300)), lam, generator, **kw)  # BUG

        with _patched("methods.privgnn.privgnn", "noisy_argmax", on_logs):
            return super()._fit(ctx)


def _serve_through_private_edges(task, features, device):
    """``methods.privgnn.common.serving_input`` without its edge filter: private-private edges are served."""
    from methods.models import prepare_graph
    from methods.privgnn.common import use_row_normalization
    from methods.training import row_normalize

    x = task.data.x.float()
    if use_row_normalization(features, task):
        x = row_normalize(x)
    return prepare_graph("sage", x, task.data.edge_index, task.num_nodes).to(device)  # BUG: every edge


@register("mutant-pate-g-privateedges")
class MutantPATEGPrivateEdges(PATEG):
    """The released student serves through the private edges too (a private node's posterior aggregates its
    private neighbours' features) while the run claims private inference.

    True epsilon: inf. With the release (the student's weights) fixed, a served posterior is a noise-free
    function of another private node's features."""

    description = "MUTANT: PATE-G serving private nodes through private edges (claims private inference)"

    def _fit(self, ctx: FitContext):
        with _patched("methods.privgnn.pate", "serving_input", _serve_through_private_edges):
            return super()._fit(ctx)


def _one_event_per_query(queries: int, lam: float) -> PrivacyLedger:
    honest = presets.privgnn_pate(queries=queries, lam=lam)
    # BUG: one Laplace(1/lambda) release per query, as if a node changed one vote count (it moves one vote:
    # two counts); built by hand, with the family's recipe
    return PrivacyLedger().add(Laplace(scale=1.0 / lam, sensitivity=1.0), queries).with_recipe(honest.recipe)


@register("mutant-pate-m-halfcount")
class MutantPATEMHalfCount(PATEM):
    """The ledger composes |Q| Laplace(1/lambda) events of sensitivity 1 (one vote count per query) where one
    node moves a vote: two counts, 2|Q| events; lambda is calibrated against it. The recipe still names the
    ``pate`` family with the run's |Q| and lambda.

    True epsilon: the ``pate`` ledger rebuilt from the run's own recipe (2|Q| events at the same lambda)."""

    description = "MUTANT: PATE-M accounting one Laplace release per query (a vote moves two counts)"

    def _fit(self, ctx: FitContext):
        import methods.privgnn.pate as mod

        with _patched("methods.privgnn.pate", "P", _Proxy(mod.P, privgnn_pate=_one_event_per_query)):
            return super()._fit(ctx)


# ======================================================================================
# Subtle mutants: the right mechanism, a little off (what the checks' power must reach)
# ======================================================================================

#: noise 1 / SUBTLE_NOISE of what the ledger states; sensitivity SUBTLE_SENSITIVITY x; sampling rate SUBTLE_RATE x
SUBTLE_NOISE, SUBTLE_SENSITIVITY, SUBTLE_RATE = 1.25, 1.5, 2.0


@register("mutant-dp-mlp-noise125")
class MutantDPMLPNoise125(DPMLP):
    """DP-SGD noise 1/1.25 of what the ledger accounts for (std 0.8 z C).

    True epsilon: the DP-MLP ledger (same rate and steps) at noise multiplier 0.8 z."""

    description = "MUTANT: DP-MLP with 1/1.25 of the accounted noise"

    def _fit(self, ctx: FitContext):
        with _patched("methods.dp_mlp", "DPOptimizer", _scaled_noise(1.0 / SUBTLE_NOISE)):  # BUG
            return super()._fit(ctx)


def _weak_nap(real):
    def nap(adj_t, x, sigma, generator):
        return real(adj_t, x, sigma / SUBTLE_NOISE, generator)  # BUG

    return nap


@register("mutant-gap-edge-noise125")
class MutantGAPEdgeNoise125(GAPEdge):
    """NAP noise std sigma / 1.25 where the ledger's K Gaussian events state sigma.

    True epsilon: the GAP edge-level ledger with every Gaussian event's sigma x 0.8."""

    description = "MUTANT: GAP edge-level whose NAP draws 1/1.25 of the accounted noise"

    def _fit(self, ctx: FitContext):
        import methods.gap.gap as gap

        with _patched("methods.gap.gap", "nap", _weak_nap(gap.nap)):
            return super()._fit(ctx)


class _LooseClipDPOptimizer(DPOptimizer):
    def __post_init__(self) -> None:
        super().__post_init__()
        real = self.grads.norms_and_sum

        def norms_and_sum(inputs, target, clip, per_layer=False):  # BUG: clipped at 1.5 C, noise for C
            loose = ([c * SUBTLE_SENSITIVITY for c in clip] if isinstance(clip, (list, tuple))
                     else clip * SUBTLE_SENSITIVITY)
            return real(inputs, target, loose, per_layer)

        self.grads.norms_and_sum = norms_and_sum


@register("mutant-dp-mlp-clip15")
class MutantDPMLPClip15(DPMLP):
    """Per-example gradients clipped at 1.5 C while the noise (z C) and the ledger assume C: sensitivity 1.5x.

    True epsilon: the DP-MLP ledger (same rate and steps) at noise multiplier z / 1.5."""

    description = "MUTANT: DP-MLP clipping at 1.5 C while accounting C"

    def _fit(self, ctx: FitContext):
        with _patched("methods.dp_mlp", "DPOptimizer", _LooseClipDPOptimizer):
            return super()._fit(ctx)


def _loose_cutoff(real):
    def bound_out_degree(edge_index, num_nodes, max_degree, generator):
        return real(edge_index, num_nodes, int(round(SUBTLE_SENSITIVITY * max_degree)), generator)  # BUG

    return bound_out_degree


@register("mutant-gap-node-degree15")
class MutantGAPNodeDegree15(GAPNode):
    """The out-degree cut-off keeps 1.5 D edges per node while the ledger's NAP sensitivity (and sigma_AP =
    z sqrt(D)) assume D. The bug lives in the papers' cut-off, so the mutant runs under ``relation:
    cut-off-graph`` (its zoo configuration).

    True epsilon: the GAP node ledger with the NAP events' sensitivity sqrt(1.5 D) at the same sigma_AP."""

    description = "MUTANT: GAP node-level whose degree cut-off keeps 1.5 D out-edges, accounted as D"

    def _fit(self, ctx: FitContext):
        import methods.gap.nap as nap

        # the papers' cut-off (relation cut-off-graph; nap.degree_bounded_graph calls it): under the default
        # input-graph relation no cut-off runs and the declared bound is checked instead
        with _patched("methods.gap.nap", "bound_out_degree", _loose_cutoff(nap.bound_out_degree)):
            return super()._fit(ctx)


class _DoubleRatePoissonSampler(PoissonSampler):
    """Reports (and is accounted with) rate q, draws at rate 2q."""

    def sample(self):
        return (torch.rand(self.n, generator=self.gen) < min(1.0, SUBTLE_RATE * self.rate)).nonzero().view(-1)  # BUG


@register("mutant-dp-mlp-rate2")
class MutantDPMLPRate2(DPMLP):
    """Poisson batches drawn at rate 2q while the sampler reports, and the ledger (and the calibration of z)
    accounts, q = B / n.

    True epsilon: the DP-MLP ledger at batch size 2B (rate 2q; same z and steps)."""

    description = "MUTANT: DP-MLP sampling at twice the accounted Poisson rate"

    def _fit(self, ctx: FitContext):
        with _patched("methods.dp_mlp", "PoissonSampler", _DoubleRatePoissonSampler):
            return super()._fit(ctx)


def _sibling(filename: str):
    """A plugin file beside this one, loaded as a plugin file (its methods register once, whichever loads it)."""
    import sys
    from pathlib import Path

    from bench.plugins import load_plugin

    path = Path(__file__).resolve().with_name(filename)
    load_plugin(str(path))
    return sys.modules[f"bench_plugin_{abs(hash(str(path)))}"]


def _hidden_bugs():
    """tests/plugins/hidden_bugs.py: the neighbour layouts and the shuffled sampler a user's own code has."""
    return _sibling("hidden_bugs.py")


class _NeighbourInputs(DPMLP):
    """DP-MLP whose example for node v reads the rows of v's neighbours (``LAYOUT``, hidden_bugs.neighbour_inputs),
    under DP-MLP's ledger (one example per node). Removing node u changes u's example and the example of each of
    its training neighbours: 1 + deg(u) examples move where the ledger assumes one. True epsilon: unbounded (no
    bound on the degree; with d training neighbours, group privacy of d + 1 examples)."""

    LAYOUT = ""
    inference_reads = frozenset({I.OWN_FEATURES, I.OTHER_FEATURES, I.EDGES})  # served from its aggregated input

    def _fit(self, ctx: FitContext):
        task = ctx.task
        data = task.data.clone()
        x = data.x.to_dense() if data.x.is_sparse else data.x
        data.x = _hidden_bugs().neighbour_inputs(x.float(), data.edge_index, self.LAYOUT)  # BUG
        return super()._fit(dataclasses.replace(ctx, task=dataclasses.replace(task, data=data)))


@register("mutant-dp-mlp-neighbours-sage")
class MutantDPMLPNeighboursSage(_NeighbourInputs):
    description = "MUTANT: DP-MLP examples [x_v | mean of x_u over N(v)], accounted as independent nodes"
    LAYOUT = "sage"


@register("mutant-dp-mlp-neighbours-sum")
class MutantDPMLPNeighboursSum(_NeighbourInputs):
    description = "MUTANT: DP-MLP examples [x_v | sum of x_u over N(v)], accounted as independent nodes"
    LAYOUT = "sum"


@register("mutant-dp-mlp-neighbours-gcn")
class MutantDPMLPNeighboursGCN(_NeighbourInputs):
    description = "MUTANT: DP-MLP examples on the GCN-normalised aggregate of N(v) and v, accounted as independent nodes"
    LAYOUT = "gcn"


@register("mutant-dp-mlp-shuffled")
class MutantDPMLPShuffled(DPMLP):
    """Shuffled fixed-size batches (every training node once per epoch, the last batch of a pass smaller) under
    DP-MLP's ledger of Poisson subsampling at rate B / n.

    True epsilon: at least :func:`shuffled_pair_epsilon` (the pair of Chua et al., ICML 2024, that separates
    shuffling from Poisson sampling)."""

    description = "MUTANT: DP-MLP on shuffled fixed-size batches accounted as Poisson subsampling"

    def _sampling(self, n: int, gen: torch.Generator):
        sampler, family, sensitivity = super()._sampling(n, gen)
        return _hidden_bugs().ShuffledBatches(n, self.config.batch_size, gen), family, sensitivity  # BUG


class _OpacusDPMLP(DPMLP):
    """DP-MLP's configuration and ledger, trained through Opacus's ``make_private`` as a researcher would
    (tests/plugins/opacus_plugin.py's ``fit_with_opacus``: an MLP of one hidden layer, SGD); ``bench verify`` reads
    its steps through methods.opacus_bridge."""

    POISSON, NOISE = True, 1.0

    def _fit(self, ctx: FitContext):
        return _sibling("opacus_plugin.py").fit_with_opacus(ctx, self.config, poisson_sampling=self.POISSON,
                                                             noise_factor=self.NOISE)


@register("mutant-dp-mlp-opacus-shuffled")
class MutantDPMLPOpacusShuffled(_OpacusDPMLP):
    """Opacus ``make_private(poisson_sampling=False)``: the DataLoader's shuffled fixed-size batches under DP-MLP's
    Poisson ledger. True epsilon: at least :func:`shuffled_pair_epsilon`."""

    description = "MUTANT: DP-MLP through Opacus with poisson_sampling=False, accounted as Poisson subsampling"
    POISSON = False  # BUG


@register("mutant-dp-mlp-opacus-undernoised")
class MutantDPMLPOpacusUndernoised(_OpacusDPMLP):
    """Opacus's optimiser given half the noise multiplier the ledger states. True epsilon: the DP-MLP ledger at
    z / 2."""

    description = "MUTANT: DP-MLP through Opacus with half the accounted noise multiplier"
    NOISE = 0.5  # BUG


shuffled_pair_epsilon = step_pairs.shuffled_pair_epsilon  # the pair's Monte Carlo epsilon (audits.step_pairs)


# ======================================================================================
# The record
# ======================================================================================


@dataclass(frozen=True)
class ZooEntry:
    """One mutant.

    ``true_epsilon``: a number at the verification defaults and ``config`` (seed 0), or "inf" / "unbounded" (see
    the module docstring); ``claimed_epsilon``: what its ledger reports there; ``claim_ratio``: true / claimed
    (``math.inf`` for "inf" and "unbounded"). Checks are ``audits.verify``'s names:

    * ``expected_checks``: the checks whose design catches it at the verification defaults (exact checks, and
      white-box tests whose statistic the bug moves far beyond their tolerance);
    * ``also_checks``: audits that see the leak given enough power (canaries, anchors, trials, steps);
    * ``needs``: checks that would catch it with the extension or seam the ``note`` describes (the bug escapes
      the battery as it is).

    ``smoke``: overrides on top of the base method's ``smoke_config`` for the fast fits of ``tests/test_mutants.py``."""

    name: str
    base: str
    family: str
    unit: str
    bug: str
    true_epsilon: float | str
    claimed_epsilon: float
    claim_ratio: float
    expected_checks: tuple[str, ...]
    config: dict[str, Any]
    derivation: str
    also_checks: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    note: str = ""
    dataset: str = VERIFY_DATASET
    split: str = VERIFY_SPLIT
    smoke: dict[str, Any] = field(default_factory=dict)


INF = math.inf
#: the subtle mutants' true and claimed epsilons (derive(name), seed 0, at their configurations)
TRUE_NOISE125, CLAIMED_NOISE125 = 1.2848, 0.99970
TRUE_GAPEDGE125, CLAIMED_GAPEDGE125 = 1.2831, 0.99971
TRUE_CLIP15, CLAIMED_CLIP15 = 1.5786, 0.99970
TRUE_RATE2, CLAIMED_RATE2 = 2.1768, 0.99970
TRUE_DEGREE15, CLAIMED_DEGREE15 = 1.1784, 0.99969
#: DP-MLP's claim at the verification defaults, and the shuffled mutant's lower bound there (derive)
CLAIMED_DPMLP = 0.99971
TRUE_SHUFFLED = 1.7613
TRUE_OPACUS_SHUFFLED, TRUE_OPACUS_HALF = 1.7613, 2.2167
#: the canary designs of scripts/audit_table.py, which flag the original mutants (tests/test_audit.py, slow)
_AUDIT_TABLE = "scripts/audit_table.py's canary design"


#: the papers' node-level relations, for mutants whose bug lives there or whose recorded epsilons were derived
#: there: GAP/ProGAP's random cut-off (the zoo's graphs have nodes above the D of these configurations, which the
#: default relation input-graph refuses), and DP-GNN's Algorithm 1 at K = 3 (a missing in-degree bound is visible
#: only where the sampler bounds degrees; mutant-dpgnn-adam-sens's smoke noise ratio is 1 / (2 N(3, 1)))
CUTOFF = "cut-off-graph"
ALG1 = {"relation": "in-edges", "max_degree": 3}


def _entries() -> list[ZooEntry]:
    pp = "private-public"
    csbm8 = "csbm:nodes=1000,classes=8,features=32,degree=4"
    csbm8_3 = "csbm:nodes=1000,classes=8,features=32,degree=3"
    privgnn = {"queries": 100, "k": 5, "epochs": 100, "hidden": 16, "dropout": 0.0, "teacher_batch": 8,
               "sampling_rate": 1.0}
    pate = {"teachers": 10, "queries": 100, "epochs": 50, "hidden": 16}
    return [
        # ---- the five original mutants ------------------------------------------------------------------
        ZooEntry("mutant-dp-mlp-noise", "dp-mlp", "dp-mlp", "node",
                 "DP-SGD noise 0.01x what the ledger accounts for",
                 1447.6, 0.99970, 1448.1,
                 ("noise-calibration", "gradient-canaries", "input-canaries"),
                 {}, "the DP-MLP ledger (same rate and steps) at noise multiplier z / 100",
                 also_checks=("multi-run",)),
        ZooEntry("mutant-drw-overlap", "drw", "drw", "feature",
                 "overlapping subgraphs (ego-stars of up to L neighbours) under the disjoint-walk accounting",
                 "unbounded", 0.99114, INF,
                 ("occurrences",),
                 {"hidden": 16, "batch_size": 64, "noise_multiplier": 4.0, "max_steps": 3000, "lr": 0.05,
                  "layers": 1},
                 "a feature row enters up to degree + 1 examples of a batch (the sum moves by up to 2C (d + 1)); "
                 "the degree is not bounded",
                 also_checks=("gradient-canaries", "input-canaries", "multi-run"),
                 note=f"the one-run input-canary audit flags it with 30 fresh anchors per canary ({_AUDIT_TABLE})",
                 dataset=csbm8_3),
        ZooEntry("mutant-dpgnn-nobound", "dpgnn", "dpgnn", "node",
                 "tree sampler without the in-degree bound K (and the out-list cap); the ledger keeps N(K, r)",
                 "unbounded", 0.99975, INF,
                 ("occurrences",),
                 {**ALG1, "batch_size": 256, "epochs": 2, "lr": 0.05, "per_layer_clipping": False},
                 "a node of in-degree d occurs in d + 1 depth-1 trees where the ledger assumes N(K, r)",
                 also_checks=("gradient-canaries", "input-canaries", "multi-run"),
                 note=f"the gradient-canary audit flags it with 500 fresh anchors per canary ({_AUDIT_TABLE})",
                 dataset=csbm8_3, smoke=ALG1),
        ZooEntry("mutant-gap-edge-nonorm", "gap-edge", "gap", "edge",
                 "NAP without the row normalisation (the ledger keeps sensitivity sqrt(2))",
                 "unbounded", 0.99971, INF,
                 ("noise-calibration",),
                 {}, "one edge moves an aggregate by the neighbour's row norm, unbounded",
                 also_checks=("edge-canaries", "multi-run"),
                 note=f"noise-calibration sees NAP noise rows of norm > 1 (the sqrt(2) sensitivity's precondition, "
                      f"methods.mechanisms); edge canaries with 30 leaves ({_AUDIT_TABLE}) flag it too, 3 do not",
                 dataset=csbm8),
        ZooEntry("mutant-privgnn-laplace", "privgnn", "privgnn", "node",
                 "Laplace noise of scale lambda instead of 1 / lambda",
                 11391., 0.99997, 11392.,
                 ("noise-calibration",),
                 privgnn, "the PrivGNN ledger (same |Q|, gamma) at lambda' = 1 / lambda",
                 also_checks=("input-canaries", "multi-run"),
                 note=f"noise-calibration compares the Laplace noise noisy_argmax draws with the ledger's scale; the "
                      f"input-canary audit flags it with {_AUDIT_TABLE} (degree 1, hops 1)",
                 split=pp, dataset=csbm8),
        # ---- DP-MLP ---------------------------------------------------------------------------------------
        ZooEntry("mutant-dp-mlp-initnoise", "dp-mlp", "dp-mlp", "node",
                 "the DP-SGD noise generator is seeded from the init stream (the step-1 noise replays the "
                 "initial weights' uniforms)",
                 "inf", 0.99970, INF,
                 ("noise-independence",),
                 {}, "the initial weights determine the step-1 noise: one noise-free gradient sum"),
        ZooEntry("mutant-dp-mlp-clip-after-noise", "dp-mlp", "dp-mlp", "node",
                 "noise added to the sum of unclipped per-example gradients, the noisy average clipped to C",
                 "unbounded", 0.99970, INF,
                 ("noise-calibration",),
                 {"clip": 0.1},
                 "the noisy sum moves by one example's raw gradient norm; nothing bounds it",
                 also_checks=("input-canaries", "multi-run"),
                 note="gradient-canaries cannot see it: the audit injects its own canary gradients, already clipped"),
        # ---- GAP ------------------------------------------------------------------------------------------
        ZooEntry("mutant-gap-node-meannoise", "gap-node", "gap", "node",
                 "DP-SGD noise std z C / B (meant for the mean) added to the clipped sum",
                 1416.6, 0.99969, 1417.0,
                 ("noise-calibration", "gradient-canaries"),
                 {"batch_size": 64, "encoder_epochs": 5, "epochs": 5, "max_degree": 10, "relation": CUTOFF},
                 "the GAP node ledger with DP-SGD multiplier z / B (the NAP releases keep sigma_AP = z sqrt(D))",
                 also_checks=("input-canaries", "multi-run")),
        ZooEntry("mutant-gap-node-bestval", "gap-node", "gap", "node",
                 "the released encoder and classifier are the epochs with the best (private) validation accuracy",
                 "inf", 0.99969, INF,
                 ("label-use",),
                 {"batch_size": 64, "encoder_epochs": 10, "epochs": 10, "max_degree": 10, "relation": CUTOFF},
                 "the release is an argmax over epochs of a noise-free function of the validation labels",
                 note="label-use changes every validation and test label (same streams): a correct method's "
                      "outputs stay bit-identical, this one's move",
                 smoke={"encoder_epochs": 4, "epochs": 4}),
        # ---- ProGAP ---------------------------------------------------------------------------------------
        ZooEntry("mutant-progap-edge-sens1", "progap-edge", "progap", "edge",
                 "the ledger is built with sensitivity 1 per undirected edge (one directed entry) where it is "
                 "sqrt(2); its recipe names the sound family function",
                 1.4741, 0.99971, 1.4745,
                 ("epsilon-accounted",),
                 {"depth": 2, "epochs": 50},
                 "aggregation-edge rebuilt from the run's recipe: K releases at multiplier sigma / sqrt(2)",
                 also_checks=("edge-canaries", "multi-run")),
        ZooEntry("mutant-progap-node-perepoch", "progap-node", "progap", "node",
                 "the ledger (and the calibration of z) counts one DP-SGD step per epoch",
                 1.8114, 0.99971, 1.8119,
                 ("ledger-counts",),
                 {"batch_size": 128, "epochs": 10, "depth": 1, "max_degree": 10, "norm": "none", "relation": CUTOFF},
                 "the ProGAP node ledger at the same z with steps_per_stage = epochs x ceil(N_train / B)",
                 also_checks=("input-canaries", "multi-run"),
                 smoke={"epochs": 1, "depth": 1, "norm": "none"}),
        ZooEntry("mutant-progap-node-allnodes", "progap-node", "progap", "node",
                 "Poisson rate accounted as B / N over all nodes while batches are drawn from the N_train "
                 "training nodes (rate B / N_train)",
                 1.3571, 0.99972, 1.3575,
                 ("ledger-counts", "occurrences"),
                 {"batch_size": 700, "epochs": 10, "depth": 1, "max_degree": 10, "norm": "none", "relation": CUTOFF},
                 "the ProGAP node ledger at the same z with the sound rate B / N_train",
                 smoke={"epochs": 1, "depth": 1, "norm": "none"}),
        # ---- EdgeRand -------------------------------------------------------------------------------------
        ZooEntry("mutant-edgerand-fullbudget", "edgerand", "edgerand", "edge",
                 "randomized response at the full epsilon, the Laplace edge count spent on top, unaccounted",
                 1.4997, 0.99969, 1.5002,
                 ("noise-calibration",),
                 {"density_share": 0.5},
                 "the edgerand ledger with epsilon_link = epsilon: RR(epsilon) + Laplace(epsilon_density) "
                 "((1 + share) epsilon, pure)",
                 note="no audit can catch it (the edge bits leak epsilon, which is the claim); noise-calibration "
                      "compares the randomized response's keep/flip probabilities (methods.mechanisms) with the "
                      "ledger's RR epsilon and catches it exactly"),
        ZooEntry("mutant-edgerand-keepall", "edgerand", "edgerand", "edge",
                 "true edges kept with probability p, not p q (q thins only the flipped-in non-edges)",
                 5.2946, 0.99972, 5.2961,
                 ("noise-calibration",),
                 {},
                 "max(eps_link + ln(1 / q), ln((1 - (1 - p) q) / (1 - p))) + eps_density at the run's q; "
                 "unbounded over runs (q -> 0)",
                 also_checks=("edge-canaries", "multi-run"),
                 note="noise-calibration sees the keep/flip likelihood ratio p / ((1 - p) q) > e^eps"),
        # ---- DP-GNN ---------------------------------------------------------------------------------------
        ZooEntry("mutant-dpgnn-replacement", "dpgnn", "dpgnn", "node",
                 "batches drawn with replacement, accounted as drawn without (Theorem 1's hypergeometric count)",
                 1.6192, 0.99971, 1.6196,
                 ("occurrences",),
                 {"relation": "in-edges", "max_degree": 1, "layers": 1, "batch_size": 750, "epochs": 1, "hidden": 16,
                  "lr": 0.5},
                 "the exact Renyi divergence of the aligned mixture over rho ~ Binomial(m, N(K,r) / N_train) "
                 "copies (unbounded by N(K, r)) against N(0, 1), composed and converted like the ledger",
                 also_checks=("multi-run",),
                 note="occurrences sees a canary's trees more than N(K, r) times in one batch; ledger-counts sees "
                      "batch sizes only. The leak is real but small: the count of the node's trees in a batch is "
                      "~Poisson(N(K, r)) at full batch instead of exactly N(K, r), and at m << N_train it all but "
                      "vanishes (Theorem 1's own Jensen step would claim 2.2 here)"),
        ZooEntry("mutant-dpgnn-adam-sens", "dpgnn-adam", "dpgnn", "node",
                 "noise std lambda C where Theorem 1 needs lambda 2 C N(K, r)",
                 11.971, 0.99972, 11.974,
                 ("noise-calibration",),
                 {**ALG1, "layers": 1, "batch_size": 256, "epochs": 10, "hidden": 16,
                  "per_layer_clipping": False},
                 "the DP-GNN ledger at noise multiplier lambda / (2 N(K, r))",
                 also_checks=("gradient-canaries", "input-canaries", "multi-run"), smoke=ALG1),
        ZooEntry("mutant-dpgnn-adam-quantile", "dpgnn-adam", "dpgnn", "node",
                 "adaptive clipping whose quantile count is released without noise (the ledger's joint "
                 "multiplier assumes it)",
                 "inf", 0.99974, INF,
                 ("noise-calibration",),
                 {**ALG1, "adaptive_clipping": True, "count_noise_std": 100.0, "layers": 1,
                  "batch_size": 256, "epochs": 5, "hidden": 16},
                 "C_{t+1} is a noise-free function of a count a node moves by up to N(K, r)",
                 note="noise-calibration combines the count's noise (released through methods.mechanisms) with "
                      "the measured gradient noise into the joint multiplier and compares it with the ledger's",
                 smoke={"adaptive_clipping": True, "count_noise_std": 50.0}),
        # ---- DRW family -----------------------------------------------------------------------------------
        ZooEntry("mutant-drw-r-halfsens", "drw-r", "drw", "feature",
                 "noise std lambda C (add/remove) under the replace-one relation, which needs lambda 2C",
                 2.3526, 0.94187, 2.4978,
                 ("noise-calibration",),
                 {"hidden": 16, "batch_size": 64, "noise_multiplier": 4.0, "max_steps": 3000, "lr": 0.05,
                  "layers": 1},
                 "the DRW ledger (same population, batch, steps) at noise multiplier lambda / 2",
                 also_checks=("gradient-canaries", "input-canaries", "multi-run")),
        ZooEntry("mutant-drw-d-unclipped", "drw-d", "drw", "feature",
                 "the first GCN layer's per-example gradients enter the noisy sum unclipped",
                 "unbounded", 0.95676, INF,
                 ("noise-calibration",),
                 {"hidden": 16, "batch_size": 64, "noise_multiplier": 4.0, "max_steps": 3000, "lr": 0.05,
                  "clip": 0.1},
                 "the first layer's gradient is linear in the replaced feature row, unbounded",
                 also_checks=("input-canaries", "multi-run"),
                 note="gradient-canaries cannot see it: the audit injects its own canary gradients, already clipped"),
        # ---- PrivGNN and PATE -----------------------------------------------------------------------------
        ZooEntry("mutant-privgnn-logposterior", "privgnn", "privgnn", "node",
                 "Laplace noise on the teachers' log-probabilities, accounted as on posteriors (sensitivity 2)",
                 "unbounded", 0.99997, INF,
                 ("noise-calibration",),
                 privgnn, "log-probabilities are unbounded: no finite sensitivity",
                 also_checks=("input-canaries", "multi-run"),
                 note="noise-calibration sees noisy_argmax noise scores that are not probability vectors (the "
                      "sensitivity 2's precondition)", split=pp),
        ZooEntry("mutant-pate-g-privateedges", "pate-g", "pate", "node",
                 "the student serves private nodes through private edges under a private-inference claim",
                 "inf", 0.99997, INF,
                 ("private-inference",),
                 pate, "with the release fixed, a served posterior is a noise-free function of a private neighbour",
                 split=pp),
        ZooEntry("mutant-pate-m-halfcount", "pate-m", "pate", "node",
                 "|Q| Laplace events of sensitivity 1 accounted where a vote moves two counts (2|Q| events); "
                 "the recipe names the pate family",
                 1.5073, 0.99997, 1.5073,
                 ("epsilon-accounted",),
                 pate, "the pate ledger rebuilt from the run's recipe: 2|Q| Laplace(1/lambda) events",
                 also_checks=("input-canaries", "multi-run"), split=pp),
        # ---- subtle: noise 1/1.25, sensitivity 1.5x, sampling rate 2x, each claiming the full guarantee ----
        ZooEntry("mutant-dp-mlp-noise125", "dp-mlp", "dp-mlp", "node",
                 "DP-SGD noise 1/1.25 of what the ledger accounts for",
                 TRUE_NOISE125, CLAIMED_NOISE125, TRUE_NOISE125 / CLAIMED_NOISE125,
                 ("noise-calibration",),
                 {}, "the DP-MLP ledger (same rate and steps) at noise multiplier z / 1.25",
                 note="noise-calibration's chi-square test over every DP-SGD noise draw sees 0.8x the required std "
                      "(its tolerance is 0.95x); the canary audits have no power at true epsilon ~1.2"),
        ZooEntry("mutant-gap-edge-noise125", "gap-edge", "gap", "edge",
                 "NAP noise std sigma / 1.25 where the ledger's Gaussian events state sigma",
                 TRUE_GAPEDGE125, CLAIMED_GAPEDGE125, TRUE_GAPEDGE125 / CLAIMED_GAPEDGE125,
                 ("noise-calibration",),
                 {}, "the GAP edge-level ledger with every Gaussian event's sigma x 0.8",
                 note="noise-calibration compares the NAP noise drawn (methods.mechanisms) with the ledger's sigma: "
                      "0.8x against its 0.95x tolerance; the mechanism check audits the shipped nap, which this "
                      "mutant bypasses with a patched call"),
        ZooEntry("mutant-dp-mlp-clip15", "dp-mlp", "dp-mlp", "node",
                 "per-example gradients clipped at 1.5 C while the noise and the ledger assume C",
                 TRUE_CLIP15, CLAIMED_CLIP15, TRUE_CLIP15 / CLAIMED_CLIP15,
                 ("noise-calibration",),
                 {"clip": 0.1}, "the DP-MLP ledger (same rate and steps) at noise multiplier z / 1.5",
                 note="noise-calibration reads one example's clipped gradient off a released sum: norm 1.5 C > C"),
        ZooEntry("mutant-gap-node-degree15", "gap-node", "gap", "node",
                 "the out-degree cut-off keeps 1.5 D edges per node; the ledger's NAP sensitivity is sqrt(D)",
                 TRUE_DEGREE15, CLAIMED_DEGREE15, TRUE_DEGREE15 / CLAIMED_DEGREE15,
                 ("noise-calibration",),
                 {"batch_size": 64, "encoder_epochs": 5, "epochs": 5, "max_degree": 4, "relation": CUTOFF},
                 "the GAP node ledger with the K NAP events' sensitivity sqrt(1.5 D), same sigma_AP = z sqrt(D)",
                 note="noise-calibration compares NAP's largest fan-out (methods.mechanisms: the squared column "
                      "sums of the aggregation matrix) with the ledger's node-level sensitivity sqrt(D)",
                 smoke={"max_degree": 2, "relation": CUTOFF}),
        ZooEntry("mutant-dp-mlp-rate2", "dp-mlp", "dp-mlp", "node",
                 "Poisson batches at rate 2q while the ledger (and the calibration of z) accounts q",
                 TRUE_RATE2, CLAIMED_RATE2, TRUE_RATE2 / CLAIMED_RATE2,
                 ("ledger-counts", "occurrences"),
                 {}, "the DP-MLP ledger at batch size 2B (Poisson rate 2q), same z and steps",
                 note="ledger-counts' binomial test on the batch sizes, occurrences' Chernoff bound on a canary's "
                      "draws: both see twice the accounted rate against a 1.05x tolerance"),
        # ---- a user's own DP-SGD: examples that read the neighbours, shuffled batches ----------------------
        *(ZooEntry(f"mutant-dp-mlp-neighbours-{layout}", "dp-mlp", "dp-mlp", "node",
                   f"each DP-SGD example reads the neighbours' rows ({what}); the ledger counts one example per node",
                   "unbounded", CLAIMED_DPMLP, INF,
                   ("occurrences",),
                   {}, "removing node u moves u's example and each training neighbour's: 1 + deg(u) examples, "
                       "and nothing bounds the degree",
                   also_checks=("gradient-canaries", "input-canaries", "multi-run"),
                   note="occurrences counts a canary's column wherever the traced input layout "
                        "(audits.checks._layout) carries it: the node's own block and its neighbours' aggregates")
          for layout, what in (("sage", "[x_v | mean of x_u over N(v)]"), ("sum", "[x_v | sum of x_u over N(v)]"),
                               ("gcn", "the GCN-normalised aggregate of v and N(v)"))),
        ZooEntry("mutant-dp-mlp-shuffled", "dp-mlp", "dp-mlp", "node",
                 "shuffled fixed-size batches (each node once per epoch) accounted as Poisson subsampling at B / n",
                 TRUE_SHUFFLED, CLAIMED_DPMLP, TRUE_SHUFFLED / CLAIMED_DPMLP,
                 ("ledger-counts",),
                 {}, "a lower bound: shuffled_pair_epsilon, the pair of Chua et al. (ICML 2024) with the other "
                     "examples' clipped gradients at -C on the canary's coordinate (Monte Carlo, 400,000 draws)",
                 note="ledger-counts' batch-size shape test (audits.checks.ledger_counts.poisson_shape): every batch "
                      "of a pass has exactly B examples, which Poisson sampling almost never gives; the canary "
                      "audits use x*'s own coordinate, where shuffling costs less than the claim"),
        ZooEntry("mutant-dp-mlp-opacus-shuffled", "dp-mlp", "dp-mlp", "node",
                 "trained through Opacus make_private(poisson_sampling=False): shuffled fixed-size batches accounted "
                 "as Poisson subsampling",
                 TRUE_OPACUS_SHUFFLED, CLAIMED_DPMLP, TRUE_OPACUS_SHUFFLED / CLAIMED_DPMLP,
                 ("ledger-counts",),
                 {}, "a lower bound: shuffled_pair_epsilon (as mutant-dp-mlp-shuffled; the DataLoader's last batch "
                     "of a pass is smaller)",
                 note="Opacus's steps reach the white-box checks through methods.opacus_bridge, with no line in the "
                      "method; ledger-counts' batch-size shape test sees the shuffled batches"),
        ZooEntry("mutant-dp-mlp-opacus-undernoised", "dp-mlp", "dp-mlp", "node",
                 "trained through Opacus with half the noise multiplier the ledger states",
                 TRUE_OPACUS_HALF, CLAIMED_DPMLP, TRUE_OPACUS_HALF / CLAIMED_DPMLP,
                 ("noise-calibration",),
                 {}, "the DP-MLP ledger (same rate and steps) at noise multiplier z / 2",
                 also_checks=("gradient-canaries", "input-canaries", "multi-run")),
    ]


ZOO: dict[str, ZooEntry] = {e.name: e for e in _entries()}

MUTANTS = tuple(ZOO)


# ======================================================================================
# Derivations: the true epsilon of what ran, from a fit at the entry's configuration
# ======================================================================================


def _rebuild(ledger: PrivacyLedger, **changes: Any) -> PrivacyLedger:
    """The ledger's recipe rebuilt with its family's function, some parameters changed."""
    r = ledger.recipe
    if r is None:
        raise ValueError("the ledger has no recipe")
    return presets.FAMILIES[r.family](**{**r.kwargs(), **changes})


def _map_events(ledger: PrivacyLedger, fn: Callable) -> PrivacyLedger:
    out = PrivacyLedger()
    for e in ledger.events:
        out = out.add(fn(e))
    return out


def _scale_dpsgd(factor: float) -> Callable:
    def fn(e):
        if e.kind in ("poisson_gaussian", "fixed_size_gaussian", "hypergeometric_gaussian"):
            return dataclasses.replace(e, noise_multiplier=e.noise_multiplier * factor)
        return e
    return fn


def _scale_gaussian(factor: float) -> Callable:
    def fn(e):
        return dataclasses.replace(e, sigma=e.sigma * factor) if e.kind == "gaussian" else e
    return fn


def _true_epsilon(name: str, fitted, task, budget: Budget) -> float:
    """The true epsilon of ``fitted`` (a fit of mutant ``name``) at ``budget.delta``; inf where unbounded."""
    led, delta, info = fitted.ledger, budget.delta, fitted.info
    kw = led.recipe.kwargs() if led.recipe is not None else {}
    if ZOO[name].true_epsilon in ("inf", "unbounded"):
        return math.inf
    if name == "mutant-dp-mlp-noise":
        return _map_events(led, _scale_dpsgd(NOISE_FACTOR)).epsilon(delta)
    if name == "mutant-privgnn-laplace":
        return _rebuild(led, lam=1.0 / kw["lam"]).epsilon(delta)
    if name == "mutant-gap-node-meannoise":
        b = info["sampling_rate"] * int(task.train_mask.sum())
        return _map_events(led, _scale_dpsgd(1.0 / b)).epsilon(delta)
    if name in ("mutant-progap-edge-sens1", "mutant-pate-m-halfcount"):
        return _rebuild(led).epsilon(delta)
    if name == "mutant-progap-node-perepoch":
        return _rebuild(led, steps_per_stage=int(info["steps_per_stage"])).epsilon(delta)
    if name == "mutant-progap-node-allnodes":
        return _rebuild(led, convention="sound", num_nodes=None).epsilon(delta)
    if name == "mutant-edgerand-fullbudget":
        return presets.edgerand(epsilon_link=info["epsilon_link"] + info["epsilon_density"],
                                epsilon_density=info["epsilon_density"]).epsilon(delta)
    if name == "mutant-edgerand-keepall":
        pair = keep_all_pair_epsilon(info["epsilon_link"], info["rr_subsample_q"])
        return presets.edgerand(epsilon_link=pair, epsilon_density=info["epsilon_density"]).epsilon(delta)
    if name == "mutant-dpgnn-replacement":
        return replacement_epsilon(kw["num_train"], info["occurrence_bound"], kw["batch_size"],
                                   kw["noise_multiplier"], kw["steps"], delta)
    if name == "mutant-dpgnn-adam-sens":
        return _map_events(led, _scale_dpsgd(1.0 / (2 * info["occurrence_bound"]))).epsilon(delta)
    if name == "mutant-drw-r-halfsens":
        return _map_events(led, _scale_dpsgd(0.5)).epsilon(delta)
    if name == "mutant-dp-mlp-noise125":
        return _map_events(led, _scale_dpsgd(1.0 / SUBTLE_NOISE)).epsilon(delta)
    if name == "mutant-gap-edge-noise125":
        return _map_events(led, _scale_gaussian(1.0 / SUBTLE_NOISE)).epsilon(delta)
    if name == "mutant-dp-mlp-clip15":
        return _map_events(led, _scale_dpsgd(1.0 / SUBTLE_SENSITIVITY)).epsilon(delta)
    if name == "mutant-gap-node-degree15":
        d = int(round(SUBTLE_SENSITIVITY * kw["max_degree"]))
        return _map_events(led, lambda e: dataclasses.replace(e, sensitivity=math.sqrt(d))
                           if e.kind == "gaussian" else e).epsilon(delta)
    if name == "mutant-dp-mlp-opacus-undernoised":
        return _map_events(led, _scale_dpsgd(0.5)).epsilon(delta)
    if name in ("mutant-dp-mlp-shuffled", "mutant-dp-mlp-opacus-shuffled"):
        per_pass = math.ceil(kw["num_train"] / kw["batch_size"])
        return shuffled_pair_epsilon(kw["num_train"], kw["batch_size"], kw["noise_multiplier"],
                                     kw["steps"] // per_pass, delta)
    if name == "mutant-dp-mlp-rate2":
        return _rebuild(led, batch_size=int(SUBTLE_RATE * kw["batch_size"])).epsilon(delta)
    raise KeyError(f"no derivation for {name}")


def verify_task(name: str):
    """The task of ``name``'s entry (its dataset and split, seed 0)."""
    from bench.datasets import load_dataset
    from bench.splits import make_task

    e = ZOO[name]
    return make_task(load_dataset(e.dataset), e.split, 0)


def derive(name: str, epsilon: float = VERIFY_EPSILON, seed: int = 0) -> dict[str, float]:
    """Fit mutant ``name`` at its configuration on its task at ``epsilon`` (default delta) and return the claimed
    and the true epsilon of the run and their ratio."""
    from bench.run import resolve_budget
    from methods.base import get_method

    e = ZOO[name]
    task = verify_task(name)
    method = get_method(name)(**e.config)
    budget = resolve_budget(epsilon, None, method, task)
    fitted = method.fit(task, budget, seed=seed)
    claimed = float(fitted.epsilon(budget.delta))
    true = float(_true_epsilon(name, fitted, task, budget))
    return {"claimed": claimed, "true": true, "ratio": true / claimed, "delta": budget.delta}


def zoo_table() -> str:
    """The zoo as a markdown table."""
    rows = ["| mutant | base | family | unit | bug | true epsilon (claimed) | true / claimed | expected checks "
            "| also (power) | needs (seam or extension) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for e in ZOO.values():
        true = e.true_epsilon if isinstance(e.true_epsilon, str) else f"{e.true_epsilon:.4g}"
        ratio = "inf" if math.isinf(e.claim_ratio) else f"{e.claim_ratio:.3g}"
        rows.append(f"| {e.name} | {e.base} | {e.family} | {e.unit} | {e.bug} | {true} ({e.claimed_epsilon:.4g}) "
                    f"| {ratio} | {', '.join(e.expected_checks) or '-'} | {', '.join(e.also_checks) or '-'} "
                    f"| {', '.join(e.needs) or '-'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(zoo_table())
