"""A run's random streams (methods.streams) and the registry-wide guard that DP noise is a stream of its own.

The review's critical defect: the DP-SGD noise, the batch sampler and the initial weights were three copies of
one stream, so the step-1 noise was a transform of the initial weights and a Poisson batch could be read off the
noise. These tests reconstruct exactly that (audits.structural) for every DP-SGD method in the registry,
plugins included, and fail on such a method.
"""

import math
import pickle

import numpy as np
import pytest
import torch

from audits.structural import (check_noise_independence, init_correlation, poisson_replay, record_seeds,
                               uniforms_from_normals)
from bench.cli import load_plugin
from methods import Budget, available_methods, get_method
from methods.base import ConfigError, Method, fit_method
from methods.streams import RunStreams
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))
PRIVATE = sorted(n for n, c in available_methods().items() if c.privacy_unit != "none")
SEED = 20261122  # distinctive: it must never be a generator's seed


# --------------------------------------------------------------------------------------
# RunStreams
# --------------------------------------------------------------------------------------


def test_purposes_are_independent_children_of_one_seed_sequence():
    s = RunStreams(7)
    draws = {p: s.numpy(p).random(4).tolist() for p in ("init", "noise", "sampler", "split", "coins", "canaries")}
    assert len({tuple(v) for v in draws.values()}) == len(draws)  # no two purposes share a stream
    assert RunStreams(7).numpy("noise").random(4).tolist() == draws["noise"]  # reproducible from the seed
    assert RunStreams(8).numpy("noise").random(4).tolist() != draws["noise"]
    # the raw seed's own stream is none of them
    assert np.random.default_rng(7).random(4).tolist() not in draws.values()
    assert s.int_seed("noise") != 7 and 0 <= s.int_seed("noise") < 2 ** 63
    # paths give sub-streams; children give sub-runs
    assert s.int_seed("init", "teacher", 0) != s.int_seed("init", "teacher", 1)
    assert s.child("trial", 0).int_seed("noise") != s.int_seed("noise") != s.child("trial", 1).int_seed("noise")
    assert s.child("trial", 0).lineage == ("trial:0",)


def test_global_torch_is_seeded_per_purpose_and_restored():
    s = RunStreams(3)
    torch.manual_seed(99)
    before = torch.rand(2)
    torch.manual_seed(99)
    with s.global_torch("init"):
        a = torch.rand(2)
    after = torch.rand(2)
    assert torch.equal(after, before)  # the caller's global state is untouched
    with s.global_torch("init"):
        assert torch.equal(torch.rand(2), a)
    with s.global_torch("dropout"):
        assert not torch.equal(torch.rand(2), a)


def test_secure_noise_is_unreproducible_and_never_leaves_the_process():
    a, b = RunStreams(5, secure_noise=True), RunStreams(5, secure_noise=True)
    assert a.int_seed("noise") != b.int_seed("noise")  # OS entropy
    assert a.int_seed("init") == b.int_seed("init") == RunStreams(5).int_seed("init")  # the rest reproducible
    assert a.describe() == {"seed": 5, "secure_noise": True,
                            "streams": "numpy.random.SeedSequence(seed), one spawned child per purpose"}
    with pytest.raises(TypeError):
        pickle.dumps(a)
    assert pickle.loads(pickle.dumps(RunStreams(5))).int_seed("noise") == RunStreams(5).int_seed("noise")


def test_a_plugin_that_overrides_fit_cannot_claim_secure_noise(small_task):
    cls = get_method("centroid")  # the example plugin overrides fit whole
    with pytest.raises(ConfigError, match="secure"):
        fit_method(cls(), small_task, Budget(), RunStreams(0, secure_noise=True))


# --------------------------------------------------------------------------------------
# The reconstruction itself (it must find a replayed stream)
# --------------------------------------------------------------------------------------


def test_uniforms_are_read_back_from_torch_normals_exactly():
    g = torch.Generator().manual_seed(11)
    u = torch.rand(160, generator=g)
    z = torch.normal(0.0, 1.0, size=(160,), generator=torch.Generator().manual_seed(11))
    assert np.allclose(uniforms_from_normals(z), u.double().numpy(), atol=1e-5)


def test_the_reviewed_defect_is_detected():
    """One raw seed for init, sampler and noise (the code as reviewed): correlation ~1, batch replayed."""
    torch.manual_seed(4)
    layer = torch.nn.Linear(32, 16)
    noise = torch.normal(0.0, 2.5, size=(16, 32), generator=torch.Generator().manual_seed(4))
    u = uniforms_from_normals(noise / 2.5)
    assert init_correlation([layer.weight], u) > 0.999
    batch = (torch.rand(300, generator=torch.Generator().manual_seed(4)) < 0.2).nonzero().view(-1)
    assert poisson_replay(batch, 300, 0.2, u)
    # independent streams: nothing
    s = RunStreams(4)
    with s.global_torch("init"):
        layer = torch.nn.Linear(32, 16)
    noise = torch.normal(0.0, 2.5, size=(16, 32), generator=s.torch("noise"))
    u = uniforms_from_normals(noise / 2.5)
    assert init_correlation([layer.weight], u) < 0.2
    batch = (torch.rand(300, generator=s.torch("sampler")) < 0.2).nonzero().view(-1)
    assert not poisson_replay(batch, 300, 0.2, u)


# --------------------------------------------------------------------------------------
# Registry-wide guards
# --------------------------------------------------------------------------------------


def _smoke(cls):
    return cls(**cls.smoke_config)


def _task(cls, small_task, small_private_public_task):
    return small_task if small_task.setting in cls.settings else small_private_public_task


@pytest.fixture(scope="module")
def small_private_public_task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=200,classes=3,features=8,degree=6"), "private-public", 0)


@pytest.mark.parametrize("name", PRIVATE)
def test_dp_noise_is_not_predictable_from_init_or_sampler(name, small_task, small_private_public_task):
    cls = get_method(name)
    task = _task(cls, small_task, small_private_public_task)
    method = _smoke(cls)
    found = check_noise_independence(
        lambda: fit_method(method, task, Budget(4.0, 1e-4), RunStreams(SEED), device="cpu"), SEED)
    if cls.gradient_canaries:
        assert found.dpsgd, f"{name} declares DP-SGD examples but took no noisy DPOptimizer step"
    if not found.dpsgd:
        pytest.skip(f"{name} takes no DP-SGD step")
    assert found.uniforms >= 128
    assert found.init_correlation < 0.5, f"{name}: step-1 noise replays the initial weights ({found})"
    assert not found.batch_replayed, f"{name}: the first Poisson batch is readable off the noise ({found})"
    assert not found.shared_seed, f"{name}: another generator shares the noise generator's seed ({found})"
    if type(method).fit is Method.fit:  # built on the template: no generator is seeded with the raw seed
        assert not found.raw_seed_used, f"{name} seeds a generator with the raw seed"


@pytest.mark.parametrize("name", PRIVATE)
def test_no_builtin_method_seeds_anything_with_the_raw_seed(name, small_task, small_private_public_task):
    cls = get_method(name)
    if cls.fit is not Method.fit:
        pytest.skip(f"{name} overrides fit (a plugin): it gets an integer seed and owns its seeding")
    task = _task(cls, small_task, small_private_public_task)
    with record_seeds() as seeds:
        fit_method(_smoke(cls), task, Budget(4.0, 1e-4), RunStreams(SEED))
    assert SEED not in seeds.all
    assert seeds.all, "the fit seeded nothing (the probe is broken)"


@pytest.mark.parametrize("name", PRIVATE)
def test_secure_noise_changes_the_noise_and_nothing_else(name, small_task, small_private_public_task):
    cls = get_method(name)
    if cls.fit is not Method.fit:
        pytest.skip(f"{name} overrides fit")
    task = _task(cls, small_task, small_private_public_task)
    budget = Budget(4.0, 1e-4)
    a = fit_method(_smoke(cls), task, budget, RunStreams(SEED, secure_noise=True))
    # A mechanism with a discrete output (PATE's noisy argmax over a few teachers) can give two noise draws the
    # same released labels, hence the same model: one coincidence is allowed, four in a row are not.
    for _ in range(4):
        b = fit_method(_smoke(cls), task, budget, RunStreams(SEED, secure_noise=True))
        assert a.ledger.same_events(b.ledger) and math.isclose(a.epsilon(1e-4), b.epsilon(1e-4))
        if not torch.equal(a.predict_proba(), b.predict_proba()):
            break
    else:
        pytest.fail(f"{name}: secure noise did not change the output in four fits")
