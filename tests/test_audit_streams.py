"""An audit's randomness: the one-run theorem needs inclusion coins independent of everything the guesser sees.

With the coins and the canary design drawn from one seeded generator (the code as reviewed), a guesser reading
only the canaries' labels scored ``include[j] == (label[2j+1] < 3)`` on 92% of the pairs (Cora, 20 seeds);
with independent streams it is a coin flip.
"""

import numpy as np
import pytest

from audits.canaries import CanaryConfig, make_canaries
from audits.runner import inclusion_coins
from bench.datasets import load_dataset
from bench.splits import make_task
from methods.streams import RunStreams


@pytest.fixture(scope="module")
def task7():
    return make_task(load_dataset("csbm:nodes=600,classes=7,features=16,degree=4"), "random-75-10-15", 0)


def _guessers(labels: np.ndarray, classes: int, m: int) -> dict[str, np.ndarray]:
    """Rules a guesser could read off the canaries' public design (their labels)."""
    half = classes // 2
    pairs = np.resize(labels[1::2], m)
    return {"label[2j+1] < C/2": pairs < half, "label[j] < C/2": labels < half, "label[j] odd": labels % 2 == 1,
            "label[j] >= C/2": labels >= half}


def test_inclusion_coins_are_independent_of_the_canary_design(task7):
    m, seeds = 180, 30
    agree: dict[str, list[float]] = {}
    for seed in range(seeds):
        streams = RunStreams(seed)
        cs = make_canaries(task7, "node", m, CanaryConfig(hops=0, degree=0), seed=streams)
        coins = inclusion_coins(streams, m)
        for name, guess in _guessers(cs.labels.numpy(), task7.num_classes, m).items():
            agree.setdefault(name, []).append(float((coins == guess).mean()))
    for name, fractions in agree.items():
        overall = float(np.mean(fractions))
        # m * seeds = 5400 fair coins: the agreement of any fixed rule is 0.5 +- 0.007 (sd)
        assert abs(overall - 0.5) < 0.04, f"a guesser reading {name!r} agrees with the coins {overall:.1%} of the time"
        assert max(fractions) < 0.7


def test_coins_and_canaries_come_from_their_own_streams(task7):
    s = RunStreams(3)
    cs = make_canaries(task7, "node", 50, CanaryConfig(hops=0, degree=0), seed=s)
    assert np.array_equal(inclusion_coins(s, 50), s.numpy("coins").random(50) < 0.5)
    assert np.array_equal(cs.labels.numpy(), make_canaries(task7, "node", 50, CanaryConfig(hops=0, degree=0),
                                                           seed=RunStreams(3)).labels.numpy())
    # the raw seed's generator gives neither
    raw = np.random.default_rng(3)
    assert not np.array_equal(raw.random(50) < 0.5, inclusion_coins(s, 50))
