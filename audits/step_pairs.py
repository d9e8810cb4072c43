"""Realisable neighbouring pairs of one DP-SGD step on a fixed-size batch, and their exact privacy curves; and the
pair that separates shuffled passes from Poisson sampling (:func:`shuffled_pair_epsilon`).

A step draws ``batch`` of the dataset's examples uniformly without replacement, sums their clipped gradients and adds
N(0, sigma^2). In the white-box threat model the adversary picks every example's clipped gradient (norm <= C); two
neighbouring datasets differ in the examples that hold the protected unit: a node occurs in up to N(K, r) of
DP-GNN's training trees (Daigavane et al. 2022, Lemma 1), and a removed training node also removes its own tree;
a feature-level unit (DRW) changes one example. So a pair of worlds is a pair of multisets of gradients, and in one
dimension (gradients +-C u on a fixed direction u, in units of C) each world's release is a finite Gaussian mixture:
the exact law of the sum of ``batch`` draws without replacement, plus the noise. Its privacy curve delta(epsilon)
(the hockey-stick divergence, both directions) is computed exactly, from normal tail functions over the regions
where one density exceeds e^epsilon times the other.

:func:`configurations` enumerates every pair on a grid of gradient values (both worlds' values for the examples that
hold the unit, a shared value for each other example; replace, remove and add relations), and
:func:`strongest_pair` finds the one with the largest epsilon at delta. The search is exhaustive over its grid and
one dimension only: what it finds is a realisable pair -- a lower bound on the step's worst case -- not a proven
worst case. For one occurrence (DRW, a DP-GNN with N(K, r) = 1) the strongest pair meets the tight bound for
sampling without replacement under substitution (Balle, Barthe & Gaboardi 2018, Theorem 10:
delta'(epsilon') = q delta(epsilon), epsilon = log(1 + (e^epsilon' - 1) / q), for a base Gaussian of sensitivity 2C),
which :func:`fixed_size_replace_delta` evaluates: there the pair IS the worst case.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
from scipy import optimize, special, stats

#: the gradient values (in units of C) of a search: the corners of the clipping ball in one dimension, and 0
GRID = (-1.0, 0.0, 1.0)
RELATIONS = ("replace", "remove", "add")

Mixture = tuple[np.ndarray, np.ndarray]  # (means, weights) of a Gaussian mixture with a common sigma


def sum_distribution(values: Sequence[float], batch: int) -> Mixture:
    """The exact law of the sum of ``batch`` of ``values`` drawn uniformly without replacement: a multivariate
    hypergeometric count over the distinct values. Returns (sums, probabilities), sums rounded to 1e-9."""
    vals, counts = np.unique(np.round(np.asarray(values, float), 12), return_counts=True)
    n = int(counts.sum())
    if not 0 <= batch <= n:
        raise ValueError(f"a batch of {batch} from {n} examples")
    out: dict[float, float] = {}
    log_total = _log_comb(n, batch)
    for draw in _compositions(batch, counts):
        logp = sum(_log_comb(int(c), int(k)) for c, k in zip(counts, draw)) - log_total
        s = round(float(np.dot(vals, draw)), 9)
        out[s] = out.get(s, 0.0) + math.exp(logp)
    sums = np.array(sorted(out))
    return sums, np.array([out[s] for s in sums])


def _log_comb(n: int, k: int) -> float:
    return float(special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1))


def _compositions(total: int, caps: np.ndarray) -> Iterator[tuple[int, ...]]:
    """Every (k_1, ..., k_t) with sum ``total`` and 0 <= k_i <= caps_i."""
    if len(caps) == 1:
        if total <= caps[0]:
            yield (total,)
        return
    for k in range(min(total, int(caps[0])) + 1):
        for rest in _compositions(total - k, caps[1:]):
            yield (k, *rest)


def _log_pdf(x: np.ndarray, mix: Mixture, sigma: float) -> np.ndarray:
    means, w = mix
    keep = w > 0
    z = (x[:, None] - means[None, keep]) / sigma
    a = np.log(w[None, keep]) - 0.5 * z * z
    top = a.max(axis=1)
    return top + np.log(np.exp(a - top[:, None]).sum(axis=1))


def _mass(mix: Mixture, sigma: float, a: float, b: float) -> float:
    """P[a < X < b] for the mixture, from whichever tail is accurate."""
    means, w = mix
    za, zb = (a - means) / sigma, (b - means) / sigma
    right = special.ndtr(-za) - special.ndtr(-zb)
    left = special.ndtr(zb) - special.ndtr(za)
    return float(np.sum(w * np.where((za + zb) / 2 > 0, right, left)))


def hockey_stick(p: Mixture, q: Mixture, sigma: float, eps: float, points: int = 4001) -> float:
    """sup_S P[S] - e^eps Q[S] = the integral of (p - e^eps q)_+, exactly: the sign changes of
    log p - log q - eps are bracketed on a grid of ``points`` over the means +- 40 sigma (beyond it both
    mixtures' mass is below 1e-300) and refined by root finding; each region's mass is a sum of normal tails."""
    lo = min(p[0].min(), q[0].min()) - 40 * sigma
    hi = max(p[0].max(), q[0].max()) + 40 * sigma
    x = np.linspace(lo, hi, points)
    h = _log_pdf(x, p, sigma) - _log_pdf(x, q, sigma) - eps

    def f(v: float) -> float:
        return float(_log_pdf(np.array([v]), p, sigma)[0] - _log_pdf(np.array([v]), q, sigma)[0] - eps)

    pos = h > 0
    edges = [-math.inf]
    for i in np.flatnonzero(pos[1:] != pos[:-1]):
        edges.append(optimize.brentq(f, x[i], x[i + 1], xtol=1e-12 * max(1.0, abs(x[i]))))
    edges.append(math.inf)
    inside = bool(pos[0])
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        if inside:
            total += _mass(p, sigma, a, b) - math.exp(eps) * _mass(q, sigma, a, b)
        inside = not inside
    return max(total, 0.0)


def pair_delta(x: Mixture, y: Mixture, sigma: float, eps: float) -> float:
    """The pair's privacy curve at ``eps``: the larger hockey-stick divergence of the two directions."""
    return max(hockey_stick(x, y, sigma, eps), hockey_stick(y, x, sigma, eps))


def pair_epsilon(x: Mixture, y: Mixture, sigma: float, delta: float) -> float:
    """The smallest epsilon >= 0 with :func:`pair_delta` <= ``delta`` (bisection; the curve decreases)."""
    if pair_delta(x, y, sigma, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while pair_delta(x, y, sigma, hi) > delta:
        hi *= 2.0
        if hi > 512:
            return math.inf
    return float(optimize.brentq(lambda e: pair_delta(x, y, sigma, e) - delta, 0.0, hi, xtol=1e-9))


@dataclass(frozen=True)
class StepPair:
    """Two neighbouring worlds of one step: every example's clipped gradient (units of C) in each.

    ``occurrences``: (value in the world with the unit, value without it) per example that holds the unit, None
    where the example does not exist in that world (the unit's own tree under the remove/add relations);
    ``others``: the value of each example that does not hold it (the same in both worlds)."""

    relation: str
    occurrences: tuple[tuple[float | None, float | None], ...]
    others: tuple[float, ...]

    def worlds(self) -> tuple[list[float], list[float]]:
        with_unit = [a for a, _ in self.occurrences if a is not None] + list(self.others)
        without = [b for _, b in self.occurrences if b is not None] + list(self.others)
        return with_unit, without

    def releases(self, batch: int) -> tuple[Mixture, Mixture]:
        a, b = self.worlds()
        return sum_distribution(a, batch), sum_distribution(b, batch)

    def describe(self) -> str:
        def v(x):
            return "absent" if x is None else f"{x:+g}C"

        occ = ", ".join(f"{v(a)} -> {v(b)}" for a, b in self.occurrences)
        counts = {c: self.others.count(c) for c in sorted(set(self.others))}
        rest = ", ".join(f"{n} x {c:+g}C" for c, n in counts.items()) or "none"
        return f"{self.relation}: the unit's examples {occ}; the others {rest}"


def configurations(num_train: int, occurrences: int, grid: Sequence[float] = GRID,
                   relations: Sequence[str] = RELATIONS) -> Iterator[StepPair]:
    """Every pair on ``grid`` (up to the order of the examples, which a uniform batch cannot see):

    * replace: ``num_train`` examples in both worlds, ``occurrences`` of them hold the unit (a node that is not a
      training node, or a changed feature row);
    * remove: the world with the unit has ``num_train`` examples, its own tree among the ``occurrences``; the other
      world lacks that tree (``num_train - 1`` examples);
    * add: the world without the unit has ``num_train`` examples; the other has ``num_train + 1``, the unit's own
      tree among its ``occurrences``."""
    pairs = list(itertools.product(grid, grid))
    for relation in relations:
        if relation == "replace":
            size, changed, own = num_train, occurrences, 0
        elif relation == "remove":
            size, changed, own = num_train, occurrences - 1, 1
        elif relation == "add":
            size, changed, own = num_train + 1, occurrences - 1, 1
        else:
            raise ValueError(f"unknown relation {relation!r}")
        if changed < 0 or size < occurrences:
            continue
        for occ in itertools.combinations_with_replacement(pairs, changed):
            for own_value in (grid if own else [None]):
                head = ((own_value, None),) if own else ()
                for others in itertools.combinations_with_replacement(grid, size - occurrences):
                    yield StepPair(relation, head + occ, others)


def strongest_pair(num_train: int, occurrences: int, batch: int, sigma: float, delta: float,
                   grid: Sequence[float] = GRID, relations: Sequence[str] = RELATIONS) -> tuple[StepPair, float]:
    """The pair of :func:`configurations` with the largest epsilon at ``delta`` (noise ``sigma`` in units of C), and
    that epsilon. Exhaustive: a pair beats the best so far iff its curve at the best epsilon is above ``delta``."""
    best, best_eps = None, -1.0
    seen: set[tuple] = set()
    for pair in configurations(num_train, occurrences, grid, relations):
        if pair.relation == "remove" and batch > num_train - 1 or batch > num_train + (pair.relation == "add"):
            continue
        x, y = pair.releases(batch)
        key = (tuple(np.round(x[0], 9)), tuple(np.round(x[1], 12)), tuple(np.round(y[0], 9)),
               tuple(np.round(y[1], 12)))
        if key in seen:
            continue
        seen.add(key)
        if best is None or pair_delta(x, y, sigma, best_eps) > delta * (1 + 1e-9):
            eps = pair_epsilon(x, y, sigma, delta)
            if eps > best_eps:
                best, best_eps = pair, eps
    return best, best_eps


def fixed_size_replace_delta(rate: float, mu: float, eps: float) -> float:
    """Balle, Barthe & Gaboardi (2018), Theorem 10, for a Gaussian step of replace-one sensitivity 2C (``mu`` =
    2C / sigma) on a uniform batch of a fraction ``rate`` without replacement: delta'(eps) = rate
    delta_mu(log(1 + (e^eps - 1) / rate)), the Gaussian's curve of Balle & Wang (2018), Theorem 8."""
    base = math.log1p(math.expm1(eps) / rate)
    return rate * float(stats.norm.cdf(-base / mu + mu / 2) - math.exp(base) * stats.norm.cdf(-base / mu - mu / 2))


__all__ = ["GRID", "RELATIONS", "StepPair", "configurations", "fixed_size_replace_delta", "hockey_stick",
           "pair_delta", "pair_epsilon", "strongest_pair", "sum_distribution"]


def shuffled_pair_epsilon(n: int, batch: int, z: float, epochs: int, delta: float, samples: int = 400_000,
                          seed: int = 0, shift: float = 2.0) -> float:
    """The epsilon of a realisable pair of ``epochs`` shuffled passes over ``n`` examples in batches of ``batch``
    (the last batch of a pass ``r = n - (T - 1) batch``, T = ceil(n / batch) steps per pass), Gaussian noise z C: a
    lower bound on such a run's epsilon, estimated by Monte Carlo (not a certified bound).

    The pair (add/remove of x*): every other example's clipped gradient is -C on one coordinate, x*'s is +C. The
    batch sizes do not depend on the data, so the step holding x* sums to (1 - B) C + C, two C above the same
    step without it: a shift of ``shift`` = 2 in units of C where Poisson sampling's analysis can only use 1 (the
    shift of x*'s own gradient on a coordinate no other example touches gives ``shift`` = 1, below the Poisson
    claim). The last step's coordinate is dropped (post-processing: a lower bound), so per pass
    P = (B / n) sum_{tau < T} N(shift e_tau, z^2 I) + (r / n) N(0, z^2 I) against Q = N(0, z^2 I), composed over the
    passes. The hockey-stick divergences in both directions are Monte-Carlo estimates from ``samples`` draws
    (seeded; about 1% apart between seeds at the zoo's configuration); epsilon is the larger root."""
    t = math.ceil(n / batch)
    r = n - (t - 1) * batch
    if t < 2 or r < 2:
        raise ValueError("the pair needs two or more steps per pass and a last batch of two or more")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5AFF1E]))

    def loss(y):
        return np.log(r / n + (batch / n) * np.exp((2 * shift * y - shift ** 2) / (2 * z ** 2)).sum(-1))

    under_p, under_q = np.zeros(samples), np.zeros(samples)
    for _ in range(epochs):
        y = rng.standard_normal((samples, t - 1)) * z
        under_q += loss(y)
        pos = rng.integers(0, n, samples)
        full = np.nonzero(pos < (t - 1) * batch)[0]
        y[full, pos[full] // batch] += shift
        under_p += loss(y)

    def root(div) -> float:
        if div(0.0) <= delta:
            return 0.0
        lo, hi = 0.0, 100.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if div(mid) > delta else (lo, mid)
        return lo

    return max(root(lambda e: float(np.mean(np.clip(1 - np.exp(e - under_p), 0, None)))),
               root(lambda e: float(np.mean(np.clip(1 - np.exp(e + under_q), 0, None)))))
