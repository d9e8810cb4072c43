"""The mechanism audits' fast trial runners give the scores the one-draw-at-a-time runners gave, bit for bit: the
fixed-size batches replayed all at once (audits.mechanisms._dpsgd.fixed_size_draws) are the methods' sampler's own
draws, the DP-SGD step kinds' scores equal a reference loop that calls the sampler once a trial and builds a fresh
batch a step, and audits run in worker processes give the same bounds as in this one (a kind that searches its
pair chooses the same one there)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from audits.mechanism import MECHANISMS, Mutation, run_audits
from audits.mechanisms._dpsgd import ReadReleased, fixed_size_draws
from audits.mechanisms.dpgnn_step import DPGNN_SHAPE
from methods.base import ConfigError
from methods.dpsgd import DPOptimizer, FixedSizeSampler, PoissonSampler, gradient_hook
from methods.streams import RunStreams


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 26), st.data(), st.integers(0, 300), st.integers(0, 2**31))
def test_fixed_size_draws_are_the_samplers_own(n, data, count, seed):
    m = data.draw(st.integers(1, n))
    own = FixedSizeSampler(n, m, torch.Generator().manual_seed(seed))
    expected = [own.sample() for _ in range(count)]
    fast = FixedSizeSampler(n, m, torch.Generator().manual_seed(seed))
    got = fixed_size_draws(fast, count)
    assert got.shape == (count, m)
    assert all(torch.equal(a, b) for a, b in zip(expected, got))
    assert torch.equal(own.sample(), fast.sample())  # and the generator is left where the loop leaves it


def test_a_sampler_the_replay_does_not_reproduce_is_refused(monkeypatch):
    """The replay stands in for the methods' sampler only while it draws exactly as the sampler does."""
    monkeypatch.setattr(FixedSizeSampler, "sample",
                        lambda self: torch.randperm(self.n, generator=self.gen)[-self.m:])
    with pytest.raises(ConfigError, match="differs from its own draws"):
        fixed_size_draws(FixedSizeSampler(8, 4, torch.Generator().manual_seed(0)), 200)


def _reference_steps(columns, trials, mu, streams, m, rows):
    """The former runner: a fresh dense batch a step, the zero example concatenated."""
    from torch import nn

    model = nn.Linear(columns, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.0), clip=m.sensitivity,
                      loss_fn=lambda out, y: out[:, 0], generator=streams.torch("noise"))
    hook, scores = ReadReleased(), []
    with gradient_hook(hook):
        for _ in range(-(-trials // columns)):
            batch = torch.cat([rows(), torch.zeros(1, columns)])
            opt.step((batch,), torch.zeros(batch.size(0), dtype=torch.long), 1.0 / mu / m.noise, 1.0)
            scores.append(hook.released[0].numpy())
    return np.concatenate(scores)[:trials]


def _signed(columns, drawn, holders, world_in):
    sign = torch.where((drawn < holders) & world_in, 1.0, -1.0)
    rows = torch.zeros(drawn.numel(), columns)
    rows[torch.arange(drawn.numel()), torch.arange(columns).repeat_interleave(drawn.size(1))] = 1e3 * sign.reshape(-1)
    return rows


def _reference(name, mu, world_in, trials, streams, m):
    """Each DP-SGD step kind as it ran before its batches were drawn all at once: one sampler call a trial."""
    if name == "dpsgd-poisson":
        columns = 1000
        sampler = PoissonSampler(columns, min(1.0, 0.5 * m.rate), streams.torch("sampler"))
        eye = torch.eye(columns) * 1e3
        return _reference_steps(columns, trials, mu, streams, m,
                                lambda: eye[sampler.sample()] if world_in else torch.zeros(0, columns))
    if name == "dpsgd-fixed":
        columns, holders = 1000, 1
        sampler = FixedSizeSampler(max(1, round(1.0 / (0.5 * m.rate))), 1, streams.torch("sampler"))
    else:
        n, holders, b = DPGNN_SHAPE
        columns = 500
        sampler = FixedSizeSampler(n, min(n, max(1, round(b * m.rate))), streams.torch("sampler"))
    return _reference_steps(columns, trials, mu, streams, m, lambda: _signed(
        columns, torch.stack([sampler.sample() for _ in range(columns)]), holders, world_in))


@pytest.mark.parametrize("name", ["dpsgd-poisson", "dpsgd-fixed", "dpgnn-step"])
def test_dpsgd_step_scores_are_the_former_runners(name):
    mech = MECHANISMS[name]
    mu = mech.strength_for_epsilon(1.0, 1e-5)
    for mutation in (Mutation(), *mech.mutants):
        for world in (True, False):
            got = mech.sample(mu, world, 2_500, RunStreams(7).child("trial", "eval", int(world)), mutation)
            ref = _reference(name, mu, world, 2_500, RunStreams(7).child("trial", "eval", int(world)), mutation)
            assert np.array_equal(got, ref), (name, mutation.label(), world)


def test_workers_must_be_a_positive_integer():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="--workers must be a positive integer"):
            run_audits([("nap-edge", 1.0)], workers=bad, trials=200)


@pytest.mark.slow  # starts two interpreters
def test_audits_in_worker_processes_are_the_same_audits():
    jobs = [("nap-edge", 1.0), ("pate-votes", 2.0), ("dpsgd-fixed", 1.0), ("dpgnn-in-edges-input", 1.0)]
    here = run_audits(jobs, trials=2_000, seed=3)
    there = run_audits(jobs, workers=2, trials=2_000, seed=3)
    strip = lambda a: {k: v for k, v in a.to_dict().items() if k != "seconds"}  # noqa: E731
    assert [strip(a) for a in here] == [strip(a) for a in there]
