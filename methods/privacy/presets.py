"""Ledgers of the papers' algorithms, shared by the methods and ``bench account`` (one source of truth)."""

from __future__ import annotations

import math

from methods.privacy.events import (FixedSizeGaussian, Gaussian, HypergeometricGaussian, Laplace, LedgerError,
                                    PoissonGaussian, PoissonLaplace)
from methods.privacy.ledger import PrivacyLedger


def _steps(steps: int) -> int:
    if not isinstance(steps, int) or steps < 0:
        raise LedgerError(f"steps must be a non-negative integer (got {steps!r})")
    return steps


def dpsgd_poisson(rate: float, noise_multiplier: float, steps: int, unit: str = "node") -> PrivacyLedger:
    return PrivacyLedger().add(PoissonGaussian(rate=rate, noise_multiplier=noise_multiplier, unit=unit), _steps(steps))


def dpsgd_fixed(population: int, batch_size: int, noise_multiplier: float, steps: int,
                unit: str = "node") -> PrivacyLedger:
    return PrivacyLedger().add(FixedSizeGaussian(population=population, sample_size=batch_size,
                                                 noise_multiplier=noise_multiplier, unit=unit), _steps(steps))


def drw_min_subgraphs(num_nodes: int, walk_length: int, restarts: int = 1) -> int:
    """Ayle et al. (2022): M_min = ceil(N / (1 + R L)), the fewest disjoint walks N nodes can form."""
    if num_nodes < 1 or walk_length < 0 or restarts < 1:
        raise LedgerError("need num_nodes >= 1, walk_length >= 0 and restarts >= 1")
    return math.ceil(num_nodes / (1 + restarts * walk_length))


def drw(num_nodes: int, walk_length: int, batch_size: int, noise_multiplier: float, steps: int, restarts: int = 1,
        num_subgraphs: int | None = None, batchable_subgraphs: int | None = None) -> PrivacyLedger:
    """DRW / DRW-R / DRW-D: m of M disjoint subgraphs without replacement, feature-level replace-one,
    noise multiplier lambda = sigma / (2C); accounted with M_min unless the actual count is given.

    ``batchable_subgraphs`` is the transductive population: only subgraphs rooted at labelled nodes are
    batched, so the rate is m / (their number), which may be far below M_min (Cora: 140 vs 677)."""
    m_min = drw_min_subgraphs(num_nodes, walk_length, restarts)
    if num_subgraphs is not None and batchable_subgraphs is not None:
        raise LedgerError("give num_subgraphs (all subgraphs) or batchable_subgraphs (transductive), not both")
    if batchable_subgraphs is not None:
        if batchable_subgraphs < 1:
            raise LedgerError("batchable_subgraphs must be >= 1")
        return dpsgd_fixed(int(batchable_subgraphs), batch_size, noise_multiplier, steps, unit="feature")
    population = m_min if num_subgraphs is None else int(num_subgraphs)
    if num_subgraphs is not None and num_subgraphs < m_min:
        raise LedgerError(f"{num_subgraphs} subgraphs is fewer than M_min = {m_min}: impossible for this sampler"
                          " (transductive runs: give the batchable subgraphs instead)")
    return dpsgd_fixed(population, batch_size, noise_multiplier, steps, unit="feature")


def dpgnn(num_train: int, batch_size: int, max_degree: int, layers: int, noise_multiplier: float,
          steps: int) -> PrivacyLedger:
    occ = HypergeometricGaussian.occurrence(max_degree, layers)
    return PrivacyLedger().add(HypergeometricGaussian(num_train=num_train, occurrence_bound=occ, batch_size=batch_size,
                                                      noise_multiplier=noise_multiplier), _steps(steps))


def progap_edge(depth: int, sigma: float) -> PrivacyLedger:
    """ProGAP Theorem 4.1: K NAP releases, edge-level sensitivity 1, noise std sigma."""
    return PrivacyLedger().add(Gaussian(sensitivity=1.0, sigma=sigma, unit="edge"), _steps(depth))


def progap_node(depth: int, num_nodes: int, batch_size: int, steps_per_stage: int, noise_multiplier: float,
                max_degree: int, sigma_ap: float) -> PrivacyLedger:
    """ProGAP Theorem 4.2: (K+1) stages of T Poisson(B/N) DP-SGD steps + K NAP releases of
    node-level sensitivity sqrt(D) with noise std sigma_AP."""
    if batch_size > num_nodes or num_nodes < 1:
        raise LedgerError(f"need 1 <= batch_size <= num_nodes (got {batch_size}, {num_nodes})")
    if max_degree < 1:
        raise LedgerError("max_degree must be >= 1")
    led = dpsgd_poisson(batch_size / num_nodes, noise_multiplier, (depth + 1) * _steps(steps_per_stage))
    return led.add(Gaussian(sensitivity=math.sqrt(max_degree), sigma=sigma_ap, unit="node"), _steps(depth))


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
    if lam <= 0:
        raise LedgerError(f"lambda must be > 0 (got {lam})")
    if single_teacher:
        q = _steps(queries)
        if q == 0:
            return PrivacyLedger()
        return PrivacyLedger().add(PoissonLaplace(rate=sampling_rate, scale=1.0 / lam, sensitivity=sensitivity * q), 1)
    return PrivacyLedger().add(PoissonLaplace(rate=sampling_rate, scale=1.0 / lam, sensitivity=sensitivity),
                               _steps(queries))


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
    if lam <= 0:
        raise LedgerError(f"lambda must be > 0 (got {lam})")
    return PrivacyLedger().add(Laplace(scale=1.0 / lam, sensitivity=1.0), 2 * _steps(queries))
