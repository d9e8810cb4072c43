"""The ledger of every method family, one function each: the single source of truth for a privacy claim.

``fit`` builds its final ledger with these functions from the counts that actually ran, ``bench account``
calls the same functions from its command-line parameters, and ``bench account run RUN_ID`` rebuilds a
tracked run's ledger from the *recipe* stamped on it (family + parameters). Sound conventions are the
defaults; the papers' conventions are explicit arguments (``convention="paper"``).

Public by convention: a family whose calibration reads the training-set size (DP-MLP, DP-GNN, GAP/ProGAP at node
level: the sampling rate B / n, the steps per epoch ceil(n / B)) names it in ``public=`` and its ledgers carry it
(``PrivacyLedger.conventions``): their epsilon holds for neighbouring datasets of that public size, as Opacus
and the papers assume. Families whose counts a neighbour shares (feature level: the structure is public;
replace-one: the population is fixed; PrivGNN and PATE: |Q| and gamma are configuration) name nothing.

Torch-free: ``import methods.privacy`` loads neither torch, PyG nor any method family.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Callable

from methods.errors import BudgetError
from methods.privacy.events import (FixedSizeGaussian, Gaussian, HypergeometricGaussian, Laplace, LedgerError,
                                    PoissonGaussian, PoissonLaplace, RandomizedResponse)
from methods.privacy.ledger import PUBLIC_FACTS, PrivacyLedger, Recipe

#: L2 sensitivity of one NAP release to one undirected edge: two adjacency entries (GAP Lemma 1 and ProGAP
#: Theorem 4.1 state 1, the sensitivity of ONE directed entry)
EDGE_SENSITIVITY = math.sqrt(2.0)
CONVENTIONS = ("sound", "paper")

#: node-level neighbouring relations of the degree-bounded families (GAP / ProGAP at node level, DP-GNN).
#: ``input-graph``: neighbouring INPUT graphs (one node added or removed with all its edges) among the graphs within
#: a declared public degree bound D, which the run checks and refuses to exceed; the ledger names D public.
#: The papers' relations are labelled variants: ``cut-off-graph`` (GAP / ProGAP: DP relative to the graph after a
#: random out-degree cut-off) and ``in-edges`` (DP-GNN: a node owns its features, label and incoming edge list, the
#: edge sampler's output compared).
INPUT_GRAPH, CUTOFF_GRAPH, IN_EDGES = "input-graph", "cut-off-graph", "in-edges"
NODE_RELATIONS = (INPUT_GRAPH, CUTOFF_GRAPH)
DPGNN_RELATIONS = (INPUT_GRAPH, IN_EDGES)

FAMILIES: dict[str, Callable[..., PrivacyLedger]] = {}


def family(name: str, public: tuple[str, ...] = ()):
    """Register ``fn(**params) -> PrivacyLedger`` as family ``name``; its ledgers carry their recipe.

    ``public``: the parameters that are facts about the private data which the claim takes as public by
    convention (:data:`methods.privacy.ledger.PUBLIC_FACTS`); every ledger of the family names them with their
    values (``PrivacyLedger.conventions``; a parameter left at None is not read and not named). A parameter that
    add/remove neighbours do not share and that is not named here makes the released steps and noise a leak
    (``tests/test_contract_conventions.py``)."""

    def deco(fn: Callable[..., PrivacyLedger]) -> Callable[..., PrivacyLedger]:
        sig = inspect.signature(fn)
        bad = [p for p in public if p not in sig.parameters or p not in PUBLIC_FACTS]
        if bad:
            raise LedgerError(f"ledger family {name}: {', '.join(bad)} is not one of its parameters or not a known "
                              f"public fact ({', '.join(sorted(PUBLIC_FACTS))})")

        @functools.wraps(fn)
        def build(*args: Any, **kwargs: Any) -> PrivacyLedger:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:
                raise LedgerError(f"ledger family {name}: {e}") from None
            bound.apply_defaults()
            led = fn(*bound.args, **bound.kwargs).with_recipe(Recipe.of(name, dict(bound.arguments)))
            facts = {p: bound.arguments[p] for p in public if bound.arguments[p] is not None}
            return led.with_conventions(facts) if facts else led

        build.family = name  # type: ignore[attr-defined]
        build.public = tuple(public)  # type: ignore[attr-defined]
        FAMILIES[name] = build
        return build

    return deco


def rebuild(recipe: Recipe) -> PrivacyLedger:
    """The ledger a recipe describes, from its family's function (``bench account run``)."""
    if recipe.family not in FAMILIES:
        raise LedgerError(f"unknown ledger family {recipe.family!r} (known: {', '.join(sorted(FAMILIES))})")
    try:
        return FAMILIES[recipe.family](**recipe.kwargs())
    except TypeError as e:
        raise LedgerError(f"recipe of family {recipe.family!r} has bad parameters: {e}") from None


def _steps(steps: int) -> int:
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise LedgerError(f"steps must be a non-negative integer (got {steps!r})")
    return steps


def _convention(c: str) -> str:
    if c not in CONVENTIONS:
        raise LedgerError(f"convention must be one of {', '.join(CONVENTIONS)} (got {c!r})")
    return c


def _relation(relation: str, allowed: tuple[str, ...], owner: str) -> str:
    if relation not in allowed:
        raise LedgerError(f"{owner}: relation must be one of {', '.join(allowed)} (got {relation!r})")
    return relation


def _declared_bound(led: PrivacyLedger, relation: str, max_degree: int) -> PrivacyLedger:
    """Under ``input-graph`` the claim rests on the declared degree bound: name it public, with a note; the papers'
    relations say what their epsilon is relative to."""
    if relation == INPUT_GRAPH:
        return led.with_conventions({"max_degree": int(max_degree)})
    if relation == CUTOFF_GRAPH:
        return led.note(f"relative to the graph after the random out-degree cut-off to D={max_degree} (GAP/ProGAP's "
                        "relation); not node-level DP for the input graph when the cut-off binds")
    return led.note("DP-GNN's relation: a node owns its features, label and incoming edge list (the sampled edge "
                    "lists compared); not node-level DP for the input graph when the sampler binds")


def require_delta(delta: float, what: str = "Gaussian mechanisms") -> None:
    if not delta > 0:
        raise BudgetError(f"{what} need delta > 0 to meet a finite epsilon (got delta={delta})")


# --------------------------------------------------------------------------------------
# Generic DP-SGD
# --------------------------------------------------------------------------------------


@family("dpsgd-poisson")
def dpsgd_poisson(rate: float, noise_multiplier: float, steps: int, unit: str = "node") -> PrivacyLedger:
    """T DP-SGD steps over Poisson(rate) batches, add/remove (Mironov, Talwar & Zhang 2019)."""
    return PrivacyLedger().add(PoissonGaussian(rate=rate, noise_multiplier=noise_multiplier, unit=unit), _steps(steps))


@family("dpsgd-fixed")
def dpsgd_fixed(population: int, batch_size: int, noise_multiplier: float, steps: int,
                unit: str = "node") -> PrivacyLedger:
    """T DP-SGD steps over batches of ``batch_size`` of ``population`` without replacement, replace-one
    (Wang, Balle & Kasiviswanathan 2019)."""
    return PrivacyLedger().add(FixedSizeGaussian(population=population, sample_size=batch_size,
                                                 noise_multiplier=noise_multiplier, unit=unit), _steps(steps))


def poisson_rate(batch_size: int, population: int) -> float:
    """The rate of a Poisson sampler with expected batch ``batch_size`` over ``population`` examples."""
    if population < 1 or batch_size < 1:
        raise LedgerError(f"need population >= 1 and batch_size >= 1 (got {population}, {batch_size})")
    return min(1.0, batch_size / population)


# --------------------------------------------------------------------------------------
# DP-MLP
# --------------------------------------------------------------------------------------


@family("dp-mlp", public=("num_train",))
def dp_mlp(num_train: int, batch_size: int, noise_multiplier: float, steps: int) -> PrivacyLedger:
    """DP-MLP: T DP-SGD steps, Poisson rate batch_size / #training nodes, node-level add/remove."""
    return dpsgd_poisson.__wrapped__(poisson_rate(batch_size, num_train), noise_multiplier, steps, "node")


# --------------------------------------------------------------------------------------
# Random-walk DP-SGD (Ayle et al. 2022)
# --------------------------------------------------------------------------------------


def drw_min_subgraphs(num_nodes: int, walk_length: int, restarts: int = 1) -> int:
    """Ayle et al. (2022): M_min = ceil(N / (1 + R L)), the fewest disjoint walks N nodes can form."""
    if num_nodes < 1 or walk_length < 0 or restarts < 1:
        raise LedgerError("need num_nodes >= 1, walk_length >= 0 and restarts >= 1")
    return math.ceil(num_nodes / (1 + restarts * walk_length))


@family("drw")
def drw(num_nodes: int, walk_length: int, batch_size: int, noise_multiplier: float, steps: int, restarts: int = 1,
        num_subgraphs: int | None = None, batchable_subgraphs: int | None = None,
        segments: tuple[tuple[int, int], ...] | None = None) -> PrivacyLedger:
    """DRW / DRW-R / DRW-D: m of M disjoint subgraphs without replacement, feature-level replace-one,
    noise multiplier lambda = sigma / (2C); accounted with M_min unless the actual count is given.

    ``batchable_subgraphs`` is the transductive population: only subgraphs rooted at labelled nodes are
    batched, so the rate is m / (their number), which may be far below M_min (Cora: 140 vs 677).
    ``segments`` ((population, steps), ...) is DRW-D's: the sampler re-runs, the population changes; the
    steps then sum to ``steps``."""
    m_min = drw_min_subgraphs(num_nodes, walk_length, restarts)
    if segments is not None:
        segs = [(int(p), _steps(int(t))) for p, t in segments]
        if sum(t for _, t in segs) != steps:
            raise LedgerError(f"DRW-D segments count {sum(t for _, t in segs)} steps, not {steps}")
        led = PrivacyLedger()
        for pop, t in segs:
            if pop < batch_size:
                raise LedgerError(f"a segment's population {pop} is below the batch size {batch_size}")
            led = led.add(FixedSizeGaussian(population=pop, sample_size=batch_size,
                                            noise_multiplier=noise_multiplier, unit="feature"), t)
        return led
    if num_subgraphs is not None and batchable_subgraphs is not None:
        raise LedgerError("give num_subgraphs (all subgraphs) or batchable_subgraphs (transductive), not both")
    if batchable_subgraphs is not None:
        if batchable_subgraphs < 1:
            raise LedgerError("batchable_subgraphs must be >= 1")
        return dpsgd_fixed.__wrapped__(int(batchable_subgraphs), batch_size, noise_multiplier, steps, unit="feature")
    population = m_min if num_subgraphs is None else int(num_subgraphs)
    if num_subgraphs is not None and num_subgraphs < m_min:
        raise LedgerError(f"{num_subgraphs} subgraphs is fewer than M_min = {m_min}: impossible for this sampler"
                          " (transductive runs: give the batchable subgraphs instead)")
    return dpsgd_fixed.__wrapped__(population, batch_size, noise_multiplier, steps, unit="feature")


# --------------------------------------------------------------------------------------
# DP-GNN (Daigavane et al. 2022)
# --------------------------------------------------------------------------------------


@family("dpgnn", public=("num_train",))
def dpgnn(num_train: int, batch_size: int, max_degree: int, layers: int, noise_multiplier: float,
          steps: int, relation: str = IN_EDGES) -> PrivacyLedger:
    """Theorem 1 per step: m of N training trees without replacement, a node in at most N(K, r) of them,
    lambda = sigma / (2 C N(K, r)) (with adaptive clipping: the joint multiplier of gradient sum and count).

    ``relation``: ``input-graph`` (K a declared public bound on every node's number of training in-neighbours in
    the input graph, named public) or ``in-edges`` (the paper's relation; the default only so that recipes recorded
    before the parameter existed rebuild as what they ran)."""
    _relation(relation, DPGNN_RELATIONS, "dpgnn")
    occ = HypergeometricGaussian.occurrence(max_degree, layers)
    led = PrivacyLedger().add(HypergeometricGaussian(num_train=num_train, occurrence_bound=occ, batch_size=batch_size,
                                                     noise_multiplier=noise_multiplier), _steps(steps))
    return _declared_bound(led, relation, max_degree)


# --------------------------------------------------------------------------------------
# GAP, ProGAP, EdgeRand (Sajadmanesh et al. 2023; Sajadmanesh & Gatica-Perez 2023)
# --------------------------------------------------------------------------------------


def edge_sensitivity(convention: str = "sound") -> float:
    """sqrt(2) per undirected edge (sound); 1 per directed adjacency entry (the papers)."""
    return EDGE_SENSITIVITY if _convention(convention) == "sound" else 1.0


@family("aggregation-edge")
def aggregation_edge(depth: int, sigma: float, convention: str = "sound") -> PrivacyLedger:
    """GAP / ProGAP edge level (ProGAP Theorem 4.1): K NAP releases with noise std sigma; sensitivity
    sqrt(2) per undirected edge (``convention="paper"``: 1, the papers' value for one directed entry)."""
    return PrivacyLedger().add(Gaussian(sensitivity=edge_sensitivity(convention), sigma=sigma, unit="edge"),
                               _steps(depth))


def node_sensitivity(max_degree: int) -> float:
    """Node-level L2 sensitivity of NAP, other nodes' rows, on graphs with out-degrees <= ``max_degree``: the input
    graph under ``input-graph`` (``methods.gap.nap``), the cut-off graph under GAP Lemma 3's relation."""
    if max_degree < 1:
        raise LedgerError(f"max_degree must be >= 1 (got {max_degree})")
    return math.sqrt(max_degree)


@family("progap-node", public=("num_train", "num_nodes"))
def progap_node(depth: int, num_train: int, batch_size: int, steps_per_stage: int, noise_multiplier: float,
                max_degree: int, sigma_ap: float | None = None, convention: str = "sound",
                num_nodes: int | None = None, relation: str = CUTOFF_GRAPH) -> PrivacyLedger:
    """ProGAP Theorem 4.2: (K+1) stages of T Poisson-subsampled DP-SGD steps and K NAP releases of node-level
    sensitivity sqrt(D) with noise std sigma_AP (default z sqrt(D): one multiplier for both, as the code).

    Sound: the Poisson population is the TRAINING nodes (``num_train``), the only ones ever sampled.
    ``convention="paper"``: the theorem's B / N over all ``num_nodes`` (understates the rate).
    ``relation``: ``input-graph`` (D a declared public bound on the input graph's degrees, named public) or
    ``cut-off-graph`` (the paper's; the default only so that recipes recorded before the parameter rebuild)."""
    _relation(relation, NODE_RELATIONS, "progap-node")
    if _convention(convention) == "paper":
        if num_nodes is None:
            raise LedgerError("the paper's convention samples over all nodes: give num_nodes")
        population = num_nodes
    else:
        population = num_train
    s = node_sensitivity(max_degree)
    sap = noise_multiplier * s if sigma_ap is None else sigma_ap
    led = PrivacyLedger().add(PoissonGaussian(rate=poisson_rate(batch_size, population), noise_multiplier=noise_multiplier,
                                              unit="node"), (depth + 1) * _steps(steps_per_stage))
    return _declared_bound(led.add(Gaussian(sensitivity=s, sigma=sap, unit="node"), _steps(depth)), relation, max_degree)


@family("gap-node", public=("num_train",))
def gap_node(depth: int, num_train: int, batch_size: int, encoder_steps: int, classifier_steps: int,
             noise_multiplier: float, max_degree: int, relation: str = CUTOFF_GRAPH) -> PrivacyLedger:
    """GAP node level: encoder and classifier DP-SGD (Poisson, rate B / #training nodes) + K NAPs of
    sensitivity sqrt(D), one multiplier z for both (sigma_AP = z sqrt(D), as GAP's code composes them).
    ``relation`` as for :func:`progap_node`."""
    _relation(relation, NODE_RELATIONS, "gap-node")
    rate = poisson_rate(batch_size, num_train)
    led = PrivacyLedger().add(PoissonGaussian(rate=rate, noise_multiplier=noise_multiplier, unit="node"),
                              _steps(encoder_steps) + _steps(classifier_steps))
    s = node_sensitivity(max_degree)
    return _declared_bound(led.add(Gaussian(sensitivity=s, sigma=noise_multiplier * s, unit="node"), _steps(depth)),
                           relation, max_degree)


@family("edgerand")
def edgerand(epsilon_link: float, epsilon_density: float) -> PrivacyLedger:
    """Randomized response on every pair + a Laplace(1 / epsilon_density) count of the undirected edges."""
    return (PrivacyLedger().add(RandomizedResponse(epsilon=epsilon_link, unit="edge"))
            .add(Laplace(scale=1.0 / epsilon_density, sensitivity=1.0, unit="edge")))


def closed_form_edge_epsilon(depth: int, noise_multiplier: float, delta: float) -> float:
    """ProGAP Theorem 4.1: eps = K / (2 s^2) + sqrt(2 K log(1/delta)) / s with s = sigma / sensitivity
    (the RDP bound minimised over continuous orders with the standard conversion)."""
    s = noise_multiplier
    return depth / (2 * s * s) + math.sqrt(2 * depth * math.log(1 / delta)) / s


# --------------------------------------------------------------------------------------
# PrivGNN and PATE (Olatunji et al. 2023)
# --------------------------------------------------------------------------------------


@family("privgnn")
def privgnn(queries: int, lam: float, sampling_rate: float, sensitivity: float = 2.0,
            single_teacher: bool = False) -> PrivacyLedger:
    """PrivGNN: |Q| Laplace(1/lambda) releases on Poisson(gamma)-subsampled private data.

    The posterior vector of a retrained teacher can move from one class to another, so its L1
    sensitivity is 2 (the paper states 1); ``sensitivity`` lets a regression use the paper's value.

    ``single_teacher`` (the SINGLEGNN ablation): ONE Poisson subsample trains one teacher that answers
    all |Q| queries, so the subsampling amplifies once, not once per query: one Poisson-subsampled
    Laplace release of the whole [|Q|, C] posterior matrix, whose L1 sensitivity is |Q| x sensitivity.
    (The paper says the ablations keep PrivGNN's guarantee; for SINGLEGNN that is not so.)
    """
    if not lam > 0:
        raise LedgerError(f"lambda must be > 0 (got {lam})")
    if single_teacher:
        q = _steps(queries)
        if q == 0:
            return PrivacyLedger()
        return PrivacyLedger().add(PoissonLaplace(rate=sampling_rate, scale=1.0 / lam, sensitivity=sensitivity * q), 1)
    return PrivacyLedger().add(PoissonLaplace(rate=sampling_rate, scale=1.0 / lam, sensitivity=sensitivity),
                               _steps(queries))


@family("pate")
def privgnn_pate(queries: int, lam: float) -> PrivacyLedger:
    """PATE-M / PATE-G (PrivGNN's baselines): |Q| noisy vote histograms, Laplace(1/lambda) on each count.

    Teachers are trained on disjoint parts of the private nodes, each node assigned to a part
    independently of the others, so adding or removing one node (with its edges; a part only keeps
    the edges inside it) changes at most one teacher, hence at most one vote per query: one count
    -1 and another +1. The histogram's change is a shift of at most 1 in two coordinates, whose
    Renyi divergence under independent Laplace noise is exactly that of two scalar Laplace releases
    of sensitivity 1: the ledger holds 2|Q| Laplace(1/lambda, sensitivity 1) events (pure: 2 lambda
    per query, PATE's bound for the noisy argmax).
    """
    if not lam > 0:
        raise LedgerError(f"lambda must be > 0 (got {lam})")
    return PrivacyLedger().add(Laplace(scale=1.0 / lam, sensitivity=1.0), 2 * _steps(queries))


pate = privgnn_pate
