"""The ledger-counts check tells Poisson batches from shuffled fixed-size ones (audits.checks.ledger_counts.
poisson_shape): property tests of its error rates, and the shuffled-batch bug caught end to end."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from audits.checks.ledger_counts import poisson_shape

ALPHA = 1e-6  # far below hypothesis' number of examples: a false alarm here is a bug, not bad luck


@settings(max_examples=60, deadline=None)
@given(n=st.integers(20, 5000), rate=st.floats(0.01, 0.95), steps=st.integers(2, 400), seed=st.integers(0, 2**31))
def test_poisson_batches_are_not_flagged(n, rate, steps, seed):
    sizes = np.random.default_rng(seed).binomial(n, rate, size=steps).tolist()
    assert poisson_shape(sizes, n, rate, ALPHA) == ""


@settings(max_examples=60, deadline=None)
@given(n=st.integers(50, 5000), frac=st.floats(0.01, 0.5), epochs=st.integers(20, 60))
def test_shuffled_fixed_size_batches_under_a_poisson_ledger_are_flagged(n, frac, epochs):
    """A shuffled pass in batches of B (the last one smaller), at the ledger's rate B / n: one size repeats at
    every step but the last of each pass, which Poisson sampling at that rate makes vanishingly unlikely."""
    b = max(1, int(n * frac))
    per_epoch = [b] * (n // b) + ([n % b] if n % b else [])
    sizes = per_epoch * epochs
    problem = poisson_shape(sizes, n, b / n, ALPHA)
    assert problem.startswith(f"{len(sizes) - (epochs if n % b else 0)} of {len(sizes)} batches have exactly {b}")


def test_rate_one_or_a_single_step_says_nothing():
    assert poisson_shape([10, 10, 10], 10, 1.0, ALPHA) == ""
    assert poisson_shape([7], 100, 0.07, ALPHA) == ""
