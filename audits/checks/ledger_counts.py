"""``ledger-counts``: the ledger counts what ran. Noisy DP-SGD steps seen through the optimiser <= the steps the
ledger composes, fixed-size batches of the accounted size, Poisson batches no larger than the ledger's rate allows
over the training population (one-sided binomial test) and spread as Poisson batches are (:func:`poisson_shape`:
fixed-size shuffled batches under a Poisson ledger are a VIOLATION); every other mechanism that released something
(:mod:`methods.mechanisms`) has an event of its kind in the ledger."""

from __future__ import annotations

import math

import numpy as np

from audits.checks.base import PASS, TOLERANCE, VIOLATION, Check, chernoff_sf, dpsgd_events, skipped
from audits.checks.registry import ANY, UNITS, register
from methods.privacy.events import FixedSizeGaussian, PoissonGaussian

def unaccounted_releases(b) -> list[str]:
    accounted = {e.released_as for e in b.probe_fit.ledger.events}  # the release kinds the ledger's events draw
    out = []
    for kind in sorted({r.kind for r in b.other_releases()}):
        if kind not in accounted:
            srcs = sorted({r.source for r in b.other_releases() if r.kind == kind})
            out.append(f"a {kind} release ({', '.join(srcs)}) has no {kind} event in the ledger")
    return out


@register("ledger-counts", order=6, units=UNITS, kinds=ANY, statistical=True, group="white-box")
def ledger_counts(b, alpha: float) -> Check:
    if not b.dpsgd():
        if not b.other_releases():
            return skipped("ledger-counts", b.seed, "no DP-SGD step and no other release seen")
        problems = unaccounted_releases(b)
        kinds = sorted({r.kind for r in b.other_releases()})
        return Check("ledger-counts", b.seed, VIOLATION if problems else PASS,
                     f"{len(b.other_releases())} release(s): {', '.join(kinds)}",
                     "every release kind has a ledger event", "; ".join(problems))
    return _dpsgd_counts(b, alpha)


def poisson_shape(sizes: list[int], population: int, rate: float, alpha: float) -> str:
    """Whether batch sizes look like Poisson sampling's (each Binomial(population, rate), independent) rather than
    fixed-size batches (a shuffled pass in batches of B: one size repeated). The statistic is the count M of the
    most frequent size among T steps; under the ledger's model each size k occurs with probability at most
    p_max = max_k Binomial(population, rate)(k), so P[some size occurs >= M times] <= (population + 1)
    P[Binomial(T, p_max) >= M] (a union bound over the sizes, Chernoff for each). Returns the problem, or ""."""
    from scipy import stats

    t = len(sizes)
    if t < 2 or not 0 < rate < 1:
        return ""
    values, counts = np.unique(np.asarray(sizes), return_counts=True)
    m = int(counts.max())
    mode = int(values[counts.argmax()])
    p_max = float(stats.binom.pmf(int(np.floor((population + 1) * rate)), population, rate))
    p_value = min(1.0, (population + 1) * chernoff_sf(m, t, min(1.0, p_max * (1 + TOLERANCE))))
    if p_value >= alpha:
        return ""
    return (f"{m} of {t} batches have exactly {mode} examples: Poisson sampling at rate {rate:.4g} over {population} "
            f"gives any one size with probability <= {p_max:.3g} (p <= {p_value:.2g} < {alpha:.2g}); these look "
            "like fixed-size (shuffled) batches, which the ledger's Poisson subsampling does not account")


def shuffled_pair(records, sizes: list[int], population: int, delta: float) -> float | None:
    """The epsilon of the shuffled-passes pair (:func:`audits.step_pairs.shuffled_pair_epsilon`) at the run's most
    frequent batch size, its noise multiplier and its number of passes; None where the pair does not apply (one step
    per pass, a last batch of fewer than two, a run without noise)."""
    from audits.step_pairs import shuffled_pair_epsilon

    values, counts = np.unique(np.asarray(sizes), return_counts=True)
    batch = int(values[counts.argmax()])
    zs = [r.noise_std / r.clip for r in records if r.clip > 0]
    steps = math.ceil(population / batch) if batch > 0 else 0
    if not zs or min(zs) <= 0 or steps < 2 or population - (steps - 1) * batch < 2:
        return None
    return shuffled_pair_epsilon(population, batch, min(zs), max(1, round(len(sizes) / steps)), delta,
                                 samples=200_000)


def _dpsgd_counts(b, alpha: float) -> Check:
    from scipy import stats

    probe, led = b.probe, b.probe_fit.ledger
    events = dpsgd_events(led)
    ran = len(probe.records)
    accounted = sum(e.count for e in events)
    problems, p_value = unaccounted_releases(b), 1.0
    if ran > accounted:
        problems.append(f"{ran} noisy DP-SGD steps ran, the ledger composes {accounted}")
    fixed = {e.sample_size for e in events if isinstance(e, FixedSizeGaussian)}
    sizes = [r.batch_size for r in probe.records]
    if fixed and events and all(isinstance(e, FixedSizeGaussian) for e in events):
        off = sorted({s for s in sizes if s not in fixed})
        if off:
            problems.append(f"fixed-size batches of {off[:5]} where the ledger accounts {sorted(fixed)}")
    poisson = [e for e in events if isinstance(e, PoissonGaussian)]
    if poisson and len(poisson) == len(events):
        rate = max(e.rate for e in poisson)
        n_train = int(b.task.train_mask.sum()) if b.task.setting != "private-public" else None
        if n_train and rate < 1:
            # every example carries a training label: at most n_train examples can be drawn per step
            drawn = int(sum(sizes))
            p_value = float(stats.binom.sf(drawn - 1, ran * n_train, min(1.0, rate * (1 + TOLERANCE))))
            if p_value < alpha:
                problems.append(f"{drawn} examples drawn in {ran} steps: more than Poisson rate {rate:.4g} over "
                                f"{n_train} training nodes allows (p = {p_value:.2g} < {alpha:.2g})")
            shape = poisson_shape(sizes, n_train, rate, alpha)
            if shape:
                pair = shuffled_pair(probe.records, sizes, n_train, b.budget.delta)
                problems.append(shape + (f"; the pair that separates shuffled passes (Chua et al., ICML 2024: the "
                                         f"other examples at -C on the canary's coordinate) has epsilon about "
                                         f"{pair:.3g} at this run's batches and noise (Monte Carlo; claimed "
                                         f"{b.budget.epsilon:g})" if pair else ""))
    return Check("ledger-counts", b.seed, VIOLATION if problems else PASS,
                 f"ran {ran} steps, accounted {accounted}; mean batch {np.mean(sizes):.1f}",
                 "ran <= accounted; batches within the accounted sampling", "; ".join(problems),
                 alpha=alpha, data={"ran": ran, "accounted": accounted, "p_value": p_value})
