"""The pooled white-box audit (audits/pooled.py): signed worst-case canaries, the trace likelihood ratio, the
exact epsilon of the audited pair, and the bounds, on small fits."""

from __future__ import annotations

from pathlib import Path

import math

import numpy as np
import pytest
import torch
from torch import nn

from audits.canaries import CanaryConfig, make_canaries
from audits.pooled import PAIR_ALPHA, empirical_shifts, lower_rate_shifts, pair_epsilon, pooled_bound, worst_case_design
from audits.runner import PASS, VIOLATION, audit
from audits.whitebox import GradientCanaries, Shifts, canary_columns
from methods.base import Budget, ConfigError, get_method
from methods.dpsgd import DPOptimizer, gradient_hook
from methods.privacy.accountant import pld_epsilon
from methods.privacy.events import PoissonGaussian
from tests.conftest import REPO

MUTANTS = str(Path(__file__).resolve().parent / "plugins" / "mutants.py")
HIDDEN = str(Path(__file__).resolve().parent / "plugins" / "hidden_bugs.py")
GRAPH = "csbm:nodes=300,classes=2,features=8,degree=4"


def test_pair_epsilon_of_a_poisson_pair_is_the_pld_accountants():
    for sigma, steps in ((1.5, 200), (4.0, 50)):
        mine = pair_epsilon(Shifts([0, 1], [0.9, 0.1]), Shifts([0], [1]), [sigma] * steps, 1e-5)
        ref = pld_epsilon([PoissonGaussian(rate=0.1, noise_multiplier=sigma, count=steps)], 1e-5)
        assert mine == pytest.approx(ref, rel=0.02)
        assert mine <= ref * 1.001  # optimistic discretisation: never above the exact value


def test_pair_epsilon_of_one_replace_one_step_is_its_exact_privacy_curve():
    """One step of a replace-one pair (the canary's +C with probability q, or the other example's -C) against the
    hockey-stick divergence of the two Gaussian mixtures, integrated numerically (both directions)."""
    from scipy import integrate, optimize, stats

    q, s, delta = 0.3, 2.0, 1e-5
    mine = pair_epsilon(Shifts([0, 1], [1 - q, q]), Shifts([-1, 0], [q, 1 - q]), [s], delta)

    def pdf(x, shifts, probs):
        return sum(p * stats.norm.pdf(x, m, s) for m, p in zip(shifts, probs))

    def hockey(eps):
        a = lambda x: max(pdf(x, [0, 1], [1 - q, q]) - math.exp(eps) * pdf(x, [-1, 0], [q, 1 - q]), 0.0)  # noqa: E731
        b = lambda x: max(pdf(x, [-1, 0], [q, 1 - q]) - math.exp(eps) * pdf(x, [0, 1], [1 - q, q]), 0.0)  # noqa: E731
        return max(integrate.quad(f, -40, 40, limit=400, points=[-1, 0, 1])[0] for f in (a, b))

    exact = optimize.brentq(lambda e: hockey(e) - delta, 1e-6, 20)
    assert mine == pytest.approx(exact, rel=0.01)


def test_pair_epsilon_grows_with_steps_and_shrinks_with_noise():
    pin, pout = Shifts([0, 1], [0.8, 0.2]), Shifts([0], [1])
    a = pair_epsilon(pin, pout, [3.0] * 50, 1e-5)
    assert pair_epsilon(pin, pout, [3.0] * 100, 1e-5) > a > pair_epsilon(pin, pout, [6.0] * 50, 1e-5)
    assert pair_epsilon(pout, pout, [3.0] * 50, 1e-5) == pytest.approx(0.0, abs=1e-6)


def test_empirical_shifts_are_the_observed_frequencies():
    sh = empirical_shifts(np.array([[0, 1, 0], [0, -1, 0]]))
    assert sh.values == [-1.0, 0.0, 1.0]
    assert sh.probs == pytest.approx([1 / 6, 4 / 6, 1 / 6])


def _trace_hook(values: np.ndarray, scale: list[float]) -> GradientCanaries:
    hook = GradientCanaries(torch.tensor([0, 1, 2]), 3, record_steps=True)
    hook.trace = [torch.tensor(v, dtype=torch.float64) for v in values]
    hook.noise_scale = scale
    return hook


def test_shift_likelihood_reduces_to_the_poisson_likelihood():
    rng = np.random.default_rng(0)
    hook = _trace_hook(rng.normal(size=(20, 3)), [1.5] * 20)
    q = 0.3
    general = hook.shift_likelihood_scores(Shifts.binomial(1, q), Shifts([0.0], [1.0]))
    assert torch.allclose(general, hook.likelihood_scores(q), atol=1e-10)


def test_shift_likelihood_orders_a_replace_one_trace():
    hook = _trace_hook(np.array([[1.0, -1.0, 0.0]] * 10), [1.0] * 10)
    s = hook.shift_likelihood_scores(Shifts.binomial(1, 0.5), Shifts.binomial(1, 0.5, sign=-1.0))
    assert s[0] > s[2] > s[1]
    assert float(s[2]) == pytest.approx(0.0, abs=1e-12)  # symmetric pair: a zero trace is uninformative


def test_signed_canaries_give_minus_c_to_the_out_worlds_examples():
    """Feature unit: the out world's canary row is -f_k, and the hook gives its example -C (replace-one)."""
    from bench.plan import RunSpec, plan_run

    p = plan_run(RunSpec(methods=["dp-mlp-feature"], dataset=GRAPH, seeds=[0], epsilon=4.0, track=False))
    task = p.task(0)
    cs = make_canaries(task, "feature", 6, CanaryConfig(hops=0, degree=0, signed=True), seed=0)
    include = np.array([True, False, True, False, True, False])
    world = cs.world(include)
    cols = canary_columns(world.num_features, 6)
    rows = world.data.x[-6:][:, cols]
    assert torch.equal(torch.sign(rows.diagonal()), torch.tensor([1.0, -1, 1, -1, 1, -1]))
    # the hook on one full batch of those rows
    x = torch.cat([torch.zeros(3, world.num_features), world.data.x[-6:]])
    y = torch.zeros(9, dtype=torch.long)
    model = nn.Sequential(nn.Linear(world.num_features, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.1), clip=1.0,
                      generator=torch.Generator().manual_seed(0))
    hook = GradientCanaries(cols, world.num_features, record_steps=True)
    with gradient_hook(hook):
        opt.step((x,), y, noise_std=0.0, denominator=9.0)
    assert hook.shifts[0].tolist() == [1, -1, 1, -1, 1, -1]
    assert hook.trace[0].tolist() == pytest.approx([1, -1, 1, -1, 1, -1])


def test_worst_case_design_gives_dpgnn_its_occurrence_bound():
    d = worst_case_design(get_method("dpgnn")(max_degree=10))  # input-graph: every in-edge kept, K anchors
    assert (d.degree, d.fresh_anchors, d.signed, d.hops) == (10, True, True, 0)
    d = worst_case_design(get_method("dpgnn")(max_degree=10, relation="in-edges"))  # Algorithm 1: floor(K/2)
    assert (d.degree, d.fresh_anchors, d.signed, d.hops) == (5, True, True, 0)
    d = worst_case_design(get_method("dp-mlp")())  # no declared bound: neighbours, so neighbour-reading shows
    assert (d.degree, d.fresh_anchors, d.signed) == (3, True, False)  # zero-row anchors: +f_k only with the canary
    assert worst_case_design(get_method("drw")()).degree == 0  # feature unit: one example per node
    # an explicit request (--canary-degree, --fresh-anchors) is what the design uses, refused above a declared bound
    asked = CanaryConfig(hops=0, degree=6, fresh_anchors=True)
    assert worst_case_design(get_method("dp-mlp")(), asked).degree == 6
    assert worst_case_design(get_method("drw")(), asked).degree == 6
    assert worst_case_design(get_method("dpgnn")(max_degree=10), asked).degree == 6
    with pytest.raises(ConfigError, match="exceeds dpgnn's declared max_degree 10"):
        worst_case_design(get_method("dpgnn")(max_degree=10), CanaryConfig(hops=0, degree=11, fresh_anchors=True))


@pytest.mark.parametrize("extra, message", [
    (["--hops", "2"], "--hops: the pooled white-box design keeps every canary isolated"),
    (["--canary-pattern", "random"], "--canary-pattern: the pooled white-box design needs dedicated"),
    (["--fresh-anchors", "--canary-degree", "0"], "--fresh-anchors with --canary-degree 0"),
])
def test_every_white_box_option_acts_or_is_refused(extra, message, capsys):
    """``--canary-degree 3 --fresh-anchors`` was accepted and ignored by the pooled audit (identical numbers); now a
    degree is the design's anchors (the plan's canary shows it), and what the design cannot do is an input error."""
    from bench.cli import main
    from bench.plan import AuditSpec, RunSpec, plan_audit

    args = ["audit", "-m", "dp-mlp", "-d", GRAPH, "-e", "4", "--level", "whitebox", "--no-track", "--no-progress"]
    assert main(args + extra) == 2
    assert message in capsys.readouterr().err
    spec = dict(run=RunSpec(methods=["dp-mlp"], dataset=GRAPH, epsilon=4.0, track=False, progress=False),
                mode="pooled", canary_type="gradient", canaries=50, trials=1)
    assert plan_audit(AuditSpec(**spec)).canary.degree == 3
    assert plan_audit(AuditSpec(**spec, canary_degree=5, fresh_anchors=True)).canary.degree == 5
    assert plan_audit(AuditSpec(**spec, canary_degree=5)).canary.degree == 5


def test_dpgnn_anchors_hold_minus_f_and_put_the_canary_in_its_trees():
    from bench.plan import RunSpec, plan_run

    p = plan_run(RunSpec(methods=["dpgnn"], dataset=GRAPH, seeds=[0], epsilon=4.0, track=False))
    task = p.task(0)
    cs = make_canaries(task, "node", 3, CanaryConfig(hops=0, degree=2, fresh_anchors=True, signed=True), seed=0)
    world = cs.world(np.array([True, False, True]))
    cols = canary_columns(world.num_features, 3)
    x = world.data.x
    n = task.num_nodes
    anchors = x[n + 3: n + 9][:, cols]  # 3 canaries x 2 anchors, both worlds
    assert (anchors.sum(1) < 0).all() and ((anchors != 0).sum(1) == 1).all()


def test_pooled_bound_recovers_a_gaussian_shift_and_stays_below_it():
    from audits.mechanism import GaussianFamily

    rng = np.random.default_rng(1)
    mu, n = 1.0, 4000
    b = pooled_bound(rng.normal(mu, 1, n), rng.normal(0, 1, n), rng.normal(mu, 1, n), rng.normal(0, 1, n), 1e-5)
    assert 0.8 * mu < b.mu_lb < mu
    assert b.epsilon_lb_fdp < GaussianFamily().epsilon(mu, 1e-5)
    assert 0 < b.epsilon_lb_cp < b.epsilon_lb_fdp
    same = pooled_bound(*(rng.normal(0, 1, n) for _ in range(4)), 1e-5)
    assert same.epsilon_lb_cp < 0.2 and same.mu_lb < 0.15
    with pytest.raises(ConfigError, match="selection and evaluation canaries"):
        pooled_bound(np.array([]), np.ones(3), np.ones(3), np.ones(3), 1e-5)


def test_lower_rate_shifts_never_raise_the_pair_and_cover_the_true_rate():
    """The realised pair's verdict reads the pair at the observed draw rates' lower confidence bounds: never above
    the observed pair, and (at 1 - PAIR_ALPHA) not above the pair of the true rate the draws came from."""
    rng = np.random.default_rng(0)
    q, s, steps = 0.1, 2.0, 100
    truth = pair_epsilon(Shifts([0, 1], [1 - q, q]), Shifts([0], [1]), [s] * steps, 1e-5)
    for n in (300, 3000, 30000):
        draws = (rng.random(n) < q).astype(np.int16)
        pin, pout = lower_rate_shifts(draws, np.zeros(n, np.int16), PAIR_ALPHA)
        assert pout.values == [0.0] and pout.probs == [1.0]
        assert sum(pin.probs) == pytest.approx(1.0) and pin.probs[pin.values.index(1.0)] < draws.mean()
        low = pair_epsilon(pin, pout, [s] * steps, 1e-5)
        assert low <= pair_epsilon(empirical_shifts(draws), pout, [s] * steps, 1e-5)
        assert low <= truth
    # replace-one: both worlds move towards "no shift" by one factor
    a, b = np.r_[np.ones(50), np.zeros(450)], np.r_[-np.ones(40), np.zeros(460)]
    pin, pout = lower_rate_shifts(a, b)
    lam_in, lam_out = pin.probs[pin.values.index(1.0)] / 0.1, pout.probs[pout.values.index(-1.0)] / 0.08
    assert lam_in == pytest.approx(lam_out) and lam_in < 1


def _dp_mlp_audit(cls, runs=2, canaries=200, eps=4.0):
    from bench.plan import RunSpec, plan_run

    p = plan_run(RunSpec(methods=["dp-mlp"], dataset=GRAPH, seeds=[0], epsilon=eps, track=False))
    task = p.task(0)
    return audit(lambda: cls(epochs=5, batch_size=64), task, Budget(eps, 1e-3), "pooled", trials=runs,
                 canaries=canaries, canary_type="gradient", seed=3)


def test_pooled_audit_passes_dp_mlp_and_measures_a_positive_bound():
    r = _dp_mlp_audit(get_method("dp-mlp"))
    assert r.verdict == PASS and r.mode == "pooled" and r.trials == 2 and r.canaries == 200 and not r.reason
    # the realised pair at its draw rates' lower confidence bounds keeps the claim (what the verdict decides); at
    # the observed rates it may sit a few percent above a tight claim (the PLD of the very pair at the sampler's q)
    assert r.details["pair_epsilon_low"] <= r.claimed_epsilon * (1 + 1e-9)
    assert r.details["pair_epsilon_low"] <= r.details["pair_epsilon"] < r.claimed_epsilon * 1.1
    b = r.details["bound"]
    assert 0 < b["epsilon_lb_fdp"] <= r.details["pair_epsilon"]
    assert r.epsilon_lb == b["epsilon_lb_cp"] <= r.claimed_epsilon
    assert sum(b["selection"]) + sum(b["evaluation"]) == 400
    # add/remove: the out world's canary is absent (its 3 fresh anchors are zero rows that read no neighbour)
    assert r.details["shift_model"]["out"][0] == [0.0]


def test_pooled_audit_catches_dp_mlp_with_a_hundredth_of_its_noise():
    import sys

    sys.path.insert(0, str(Path(MUTANTS).parent))
    import mutants  # noqa: F401  (registers the mutants; the same module object as the other audit tests')

    r = _dp_mlp_audit(get_method("mutant-dp-mlp-noise"), eps=1.0)
    assert r.verdict == VIOLATION and r.epsilon_lb > r.claimed_epsilon


def test_the_realised_pair_above_the_claim_is_a_violation_even_when_the_bound_is_not():
    """DP-MLP calibrated to 2.5x its target with a correct fit's ledger: the runs' pair is far above the claim,
    which the audit knows; at this size the Clopper-Pearson bound alone stays below the claim."""
    import sys

    sys.path.insert(0, str(Path(HIDDEN).parent))
    import hidden_bugs  # noqa: F401  (registers dp-mlp-overspent)

    r = _dp_mlp_audit(get_method("dp-mlp-overspent"), canaries=100, eps=2.0)
    assert r.epsilon_lb <= r.claimed_epsilon  # the assumption-free bound alone would say PASS here
    assert r.details["pair_epsilon"] > r.details["pair_epsilon_low"] > 1.3 * r.claimed_epsilon
    assert r.verdict == VIOLATION and "the realised pair's exact epsilon" in r.reason
    assert f"exceeds the claim {r.claimed_epsilon:.4g}" in r.reason


def test_pooled_mode_needs_gradient_canaries():
    with pytest.raises(ConfigError, match="gradient canaries"):
        audit(lambda: get_method("dp-mlp")(), None, Budget(1.0, 1e-5), "pooled", canary_type="input")


@pytest.mark.parametrize("relation, k, inside, outside", [
    ("in-edges", 4, 3, -2),  # Algorithm 1: floor(K/2) = 2 anchors, all kept: 1 + 2 trees at +C, 2 at -C
    ("input-graph", 8, 9, -8),  # declared K = 8 (the task's own bound): K anchors, N(K, 1) = 9 trees at +C, 8 at -C
])
def test_dpgnn_canary_sits_in_all_its_anchors_trees_with_the_worst_case_design(relation, k, inside, outside):
    """With the worst-case design DP-GNN's sampler keeps every anchor edge, so an included canary is +C in all of
    its anchors' trees and its own and an excluded one -C in its anchors' (full batches: every tree drawn at every
    step). Algorithm 1 gets floor(K/2) anchors; the default relation K, the declared bound, all of which it keeps."""
    from bench.plan import RunSpec, plan_run, resolve_budget
    from methods.base import fit_method
    from methods.samplers.dpgnn import max_train_in_degree
    from methods.streams import RunStreams

    p = plan_run(RunSpec(methods=["dpgnn"], dataset=GRAPH, seeds=[0], epsilon=4.0, track=False))
    task = p.task(0)
    if relation == "input-graph":  # a declared bound the task is within (the run would refuse it otherwise)
        assert max_train_in_degree(task.data.edge_index, task.num_nodes, task.train_mask) <= k
    method = get_method("dpgnn")(max_degree=k, relation=relation, epochs=1, batch_size=10_000)
    design = worst_case_design(method)
    m = 10
    cs = make_canaries(task, "node", m, design, seed=0)
    include = np.arange(m) % 2 == 0
    world = cs.world(include)
    hook = GradientCanaries(canary_columns(world.num_features, m), world.num_features, record_steps=True)
    with gradient_hook(hook):
        fit_method(method, world, resolve_budget(4.0, None, method, world), RunStreams(1))
    shifts = torch.stack(hook.shifts)
    assert (shifts[:, include] == inside).all() and (shifts[:, ~include] == outside).all()


def _tiny_pooled(make, workers, runs=2):
    from bench.plan import RunSpec, plan_run

    task = plan_run(RunSpec(methods=["dp-mlp"], dataset=GRAPH, seeds=[0], epsilon=4.0, track=False)).task(0)
    return audit(make, task, Budget(4.0, 1e-3), "pooled", trials=runs, canaries=50, canary_type="gradient", seed=5,
                 workers=workers)


def _same_audit(a, b):
    assert a.details["bound"] == b.details["bound"]
    assert a.details["pair_epsilon"] == b.details["pair_epsilon"] and a.claimed_epsilon == b.claimed_epsilon
    assert a.details["steps"] == b.details["steps"]


@pytest.mark.slow  # two spawned worker processes import torch
def test_pooled_runs_in_worker_processes_give_the_in_process_results(tmp_path, monkeypatch):
    """The runs are independent trials drawn from their own streams, so fitting them in two processes (one torch
    thread each) changes nothing any run draws: the same scores, shifts and ledgers, hence the same bounds. Under a
    temporary folder whose path is too long for a Unix socket (tensors must not travel as shared descriptors)."""
    import functools
    import tempfile

    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", str(deep))

    make = functools.partial(get_method("dp-mlp"), epochs=3, batch_size=64)
    _same_audit(_tiny_pooled(make, 2, runs=3), _tiny_pooled(make, 1, runs=3))  # 3 runs: one waits for a worker


def test_a_pooled_factory_that_cannot_travel_runs_in_this_process():
    from audits.pooled import _travels
    import functools

    cls = get_method("dp-mlp")
    assert _travels((functools.partial(cls, epochs=3), Budget(4.0, 1e-3), 0, "cpu", 50))
    assert not _travels((lambda: cls(epochs=3), Budget(4.0, 1e-3), 0, "cpu", 50))
    _same_audit(_tiny_pooled(lambda: cls(epochs=3, batch_size=64), 2),
                _tiny_pooled(functools.partial(cls, epochs=3, batch_size=64), 1))


def test_pooled_workers_are_refused_outside_the_pooled_mode():
    with pytest.raises(ConfigError, match="pooled"):
        audit(lambda: get_method("dp-mlp")(), None, Budget(1.0, 1e-5), "one-run", workers=2)


def test_canaries_stay_within_a_declared_degree_bound():
    """Under relation input-graph max_degree is a declared bound the run refuses to exceed: the canary designs keep
    within it (at most D anchors; existing anchors of degree <= D - 1), and an audit says when it cut one."""
    from audits.canaries import declared_degree_bound, within_declared_bound
    from bench.plan import RunSpec, plan_run
    from methods.gap.nap import max_out_degree

    gap = get_method("gap-node")(max_degree=5)
    assert declared_degree_bound(gap) == 5 and declared_degree_bound(get_method("dpgnn")(max_degree=7)) == 7
    for other in (get_method("gap-node")(max_degree=5, relation="cut-off-graph"),
                  get_method("dpgnn")(relation="in-edges"), get_method("gap-edge")(), get_method("dp-mlp")()):
        assert declared_degree_bound(other) is None
        assert within_declared_bound(CanaryConfig(degree=12), other) == CanaryConfig(degree=12)
    c = within_declared_bound(CanaryConfig(degree=12, fresh_anchors=True), gap)
    assert (c.degree, c.max_anchor_degree) == (5, None)
    c = within_declared_bound(CanaryConfig(degree=2), gap)
    assert (c.degree, c.max_anchor_degree) == (2, 4)

    task = plan_run(RunSpec(methods=["gap-node"], dataset=GRAPH, seeds=[0], epsilon=4.0, track=False)).task(0)
    d = max_out_degree(task.data.edge_index, task.num_nodes)
    cls = get_method("gap-node")
    make = lambda: cls(**{**cls.smoke_config, "max_degree": d})  # noqa: E731
    res = audit(make, task, Budget(4.0, 1e-3), "multi-run", trials=2, seed=0,
                canary=CanaryConfig(hops=0, degree=d + 5, fresh_anchors=True))
    assert res.verdict == PASS and f"canary degree {d} of the {d + 5} asked for" in res.note


def test_a_method_from_a_plugin_file_travels_to_spawned_workers(tmp_path):
    """A plugin file is imported under a synthetic module name (``bench --plugin FILE.py``) that a spawned worker
    cannot import by name: the pool's initializer loads the file under that name first, so the job unpickles
    there (it died with BrokenProcessPool, "No module named 'bench_plugin_...'")."""
    import functools
    import pickle
    import subprocess
    import sys

    from audits.pooled import _file_modules, _travels
    from bench.plugins import load_plugin

    plugin = tmp_path / "my_plugin.py"
    plugin.write_text("from methods.base import register\nfrom methods.dp_mlp import DPMLP\n\n\n"
                      "@register('travelling-dp-mlp')\nclass Travelling(DPMLP):\n    pass\n")
    load_plugin(str(plugin))
    try:
        cls = get_method("travelling-dp-mlp")
        job = (functools.partial(cls, epochs=3), Budget(4.0, 1e-3), 0, "cpu", 50)
        assert _travels(job)
        modules = _file_modules(job)
        assert modules == ((cls.__module__, str(plugin.resolve())),)
        assert _file_modules((functools.partial(get_method("dp-mlp")), None, 0, "cpu", 1)) == ()
        code = ("import pickle, sys\nfrom audits.pooled import _worker_init\n"
                f"_worker_init({modules!r})\njob = pickle.loads(sys.stdin.buffer.read())\n"
                "print(type(job[0]()).__name__)")
        out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(job), capture_output=True,
                             cwd=str(REPO), check=True)
        assert out.stdout.decode().strip() == "Travelling"
    finally:
        from methods.base import unregister

        unregister("travelling-dp-mlp")


def test_the_pooled_design_catches_examples_that_read_the_neighbours():
    """A GCN-normalised input leaks each node into its neighbours' examples under a ledger of independent nodes.
    Isolated canaries never showed it (the pair's epsilon stayed at the claim); with the design's zero-row fresh
    anchors the canary sits in its anchors' examples too, and the realised pair is far above the claim."""
    import sys

    sys.path.insert(0, str(Path(HIDDEN).parent))
    import hidden_bugs  # noqa: F401  (registers neighbour-reading-dpsgd)
    import functools

    from bench.plan import RunSpec, plan_run

    task = plan_run(RunSpec(methods=["dp-mlp"], dataset=GRAPH, seeds=[0], epsilon=1.0, track=False)).task(0)
    make = functools.partial(get_method("neighbour-reading-dpsgd"), layout="gcn", epochs=5, batch_size=64)
    r = audit(make, task, Budget(1.0, 1e-3), "pooled", trials=2, canaries=100, canary_type="gradient", seed=1)
    assert r.verdict == VIOLATION and r.details["pair_epsilon_low"] > 2 * r.claimed_epsilon, r.reason
