"""Every method family, the DP-SGD engine and the samplers on a CUDA device (marker ``cuda``; skipped without one).

On the device: the same ledger and epsilon as on the CPU exactly (they depend only on public quantities and the
calibration), valid probabilities, and accuracy within sampling noise of the CPU's over 3 seeds; the DP-SGD
engine's per-example gradients and clipping equal the CPU's up to float rounding; the samplers' outputs move to
the device unchanged; every random draw goes through the run's streams (the noise on the device's generator).
"""

import math

import pytest
import torch

from bench.datasets import load_dataset
from bench.splits import make_task
from methods import Budget, available_methods, get_method
from methods.base import fit_method
from methods.streams import RunStreams

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

FAMILIES = ["mlp", "gcn", "sage", "gat", "dp-mlp", "dp-mlp-feature", "drw", "drw-r", "drw-d", "rw", "dpgnn", "dpgnn-adam", "gap-edge",
            "gap-node", "progap-edge", "progap-node", "edgerand", "privgnn", "pate-m", "pate-g", "privgnn-b1",
            "privgnn-b2"]


@pytest.fixture(scope="module")
def tasks():
    ds = load_dataset("csbm:nodes=600,classes=3,features=16,degree=5")
    return {s: [make_task(ds, s, seed) for seed in range(3)] for s in ("random-75-10-15", "private-public")}


def _task(cls, tasks, seed):
    split = "random-75-10-15" if "transductive" in cls.settings else "private-public"
    return tasks[split][seed]


def _budget(cls):
    return Budget(4.0, 1e-4) if cls.privacy_unit != "none" else Budget()


@pytest.mark.parametrize("name", [n for n in FAMILIES if n in available_methods()])
def test_every_method_runs_on_cuda_with_the_cpu_ledger(name, tasks):
    cls = get_method(name)
    over = {**cls.smoke_config}
    accs = {"cpu": [], "cuda": []}
    for seed in range(3):
        task = _task(cls, tasks, seed)
        out = {}
        for dev in ("cpu", "cuda"):
            f = fit_method(cls(**over), task, _budget(cls), RunStreams(seed), device=dev)
            p = f.predict_proba()
            assert p.device.type == "cpu" and p.shape == (task.num_nodes, task.num_classes)
            assert torch.isfinite(p).all() and torch.allclose(p.sum(1), torch.ones(task.num_nodes), atol=1e-4)
            out[dev] = f
            test = task.test_mask
            accs[dev].append(float((p[test].argmax(1) == task.data.y[test]).float().mean()))
        a, b = out["cpu"], out["cuda"]
        assert a.ledger.same_events(b.ledger), (name, a.ledger.describe(), b.ledger.describe())
        d = _budget(cls).delta
        assert a.epsilon(d) == b.epsilon(d) or (math.isinf(a.epsilon(d)) and math.isinf(b.epsilon(d)))
    # accuracy within sampling noise: the mean over 3 seeds differs by less than 3 standard errors + 5 points
    import statistics

    se = (statistics.pstdev(accs["cpu"] + accs["cuda"]) + 1e-3) / math.sqrt(3)
    assert abs(statistics.fmean(accs["cpu"]) - statistics.fmean(accs["cuda"])) <= 3 * se + 0.05, accs


def test_dpsgd_per_example_gradients_and_clipping_match_on_device():
    from methods.dpsgd import PerExampleGradients
    from methods.models import linear_mlp

    torch.manual_seed(0)
    net = linear_mlp(20, 16, 4, 2)
    x, y = torch.randn(64, 20) * 3, torch.randint(0, 4, (64,))
    for mode in ("bookkeeping", "vmap"):
        for per_layer in (False, True):
            cpu = PerExampleGradients(net, mode=mode).norms_and_sum((x,), y, 1.0, per_layer)
            gpu_net = linear_mlp(20, 16, 4, 2)
            gpu_net.load_state_dict(net.state_dict())
            gpu_net = gpu_net.cuda()
            gpu = PerExampleGradients(gpu_net, mode=mode).norms_and_sum((x.cuda(),), y.cuda(), 1.0, per_layer)
            for a, b in zip(cpu[0], gpu[0]):
                assert b.device.type == "cuda"
                assert torch.allclose(a, b.cpu(), rtol=1e-4, atol=1e-5)
            assert torch.allclose(cpu[1], gpu[1].cpu(), rtol=1e-4, atol=1e-5)


def test_dp_optimizer_draws_its_noise_on_the_device_from_the_noise_stream():
    from methods.dpsgd import DPOptimizer
    from methods.models import linear_mlp

    s = RunStreams(5)
    net = linear_mlp(8, 8, 2, 2).cuda()
    opt = DPOptimizer(net, torch.optim.SGD(net.parameters(), lr=0.0), clip=1.0, generator=s.torch("noise", device="cuda"))
    x, y = torch.randn(16, 8, device="cuda"), torch.randint(0, 2, (16,), device="cuda")
    seen = {}

    class Probe:
        def split(self, o, inputs, target):
            return inputs, target, None

        def observe(self, o, sums):
            pass

        def observe_noise(self, o, noise, std):
            seen["noise"] = noise

    from methods.dpsgd import gradient_hook

    with gradient_hook(Probe()):
        opt.step((x,), y, noise_std=2.0, denominator=16)
    assert all(n.device.type == "cuda" for n in seen["noise"] if n is not None)
    # the same stream gives the same noise again
    again = torch.normal(0.0, 2.0, size=seen["noise"][0].shape, generator=s.torch("noise", device="cuda"),
                         device="cuda")
    assert torch.equal(again, seen["noise"][0])


def _captured_pair(lr=0.05, mode="auto"):
    from methods.dpsgd import DPOptimizer
    from methods.dpsgd_graph import make_capturable
    from methods.models import linear_mlp

    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(300, 24, generator=gen).cuda(), torch.randint(0, 5, (300,), generator=gen).cuda()
    torch.manual_seed(0)
    a = linear_mlp(24, 16, 5, 2).cuda()
    b = linear_mlp(24, 16, 5, 2).cuda()
    b.load_state_dict(a.state_dict())
    def mk(m):
        return DPOptimizer(m, torch.optim.Adam(m.parameters(), lr=lr), clip=0.5, mode=mode,
                           generator=torch.Generator(device="cuda").manual_seed(1))
    ea, eb = mk(a), mk(b)
    make_capturable(eb.optimizer)
    return x, y, (a, ea), (b, eb)


@pytest.mark.parametrize("mode", ["bookkeeping", "vmap"])
def test_the_captured_step_replays_the_eager_step(mode):
    """Without noise, 20 replays of the CUDA graph move the model exactly as 20 eager steps on the same Poisson
    batches (padded to the capacity; the warm-up before capture leaves parameters and Adam's state untouched), in
    every per-example gradient mode that :func:`captured_step_reason` admits."""
    from methods.dpsgd import GRADIENT_MODES, PoissonSampler
    from methods.dpsgd_graph import CapturedStep, captured_step_reason, poisson_capacity

    assert set(GRADIENT_MODES) == {"bookkeeping", "vmap"}  # a new mode joins the parametrisation
    x, y, (a, eager), (b, dp) = _captured_pair(mode=mode)
    if captured_step_reason(dp, (x,), x.device) is not None:
        pytest.skip(captured_step_reason(dp, (x,), x.device))
    sampler = PoissonSampler(300, 0.1, torch.Generator().manual_seed(3))
    step = CapturedStep(dp, (x,), y, poisson_capacity(300, 0.1), noise_std=0.0, denominator=30.0)
    for _ in range(20):
        idx = sampler.sample()
        ie = eager.step((x[idx.cuda()],), y[idx.cuda()], noise_std=0.0, denominator=30.0)
        ic = step.step(idx)
        assert ic.loss == pytest.approx(ie.loss, rel=1e-4)
    assert step.graph is not None and step.eager_steps == 0
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_every_replay_adds_fresh_noise():
    """Replays of one batch with learning rate 0: the gradients Adam reads differ by a fresh N(0, std^2) draw per
    replay (a graph that repeated its noise would give a zero difference)."""
    from methods.dpsgd_graph import CapturedStep

    x, y, _, (b, dp) = _captured_pair(lr=0.0)
    step = CapturedStep(dp, (x,), y, 64, noise_std=3.0, denominator=1.0)
    idx = torch.arange(40)
    grads = []
    for _ in range(4):
        step.step(idx)
        grads.append(torch.cat([p.grad.reshape(-1) for p in b.parameters()]).clone())
    for g0, g1 in zip(grads, grads[1:]):
        assert (g1 - g0).std().item() == pytest.approx(3.0 * math.sqrt(2), rel=0.15)


def test_samplers_outputs_move_to_the_device_unchanged(tasks):
    from methods.dpsgd import FixedSizeSampler, PoissonSampler
    from methods.samplers.dpgnn import sample_subgraphs
    from methods.samplers.random_walks import disjoint_random_walks

    task = tasks["random-75-10-15"][0]
    s = RunStreams(1)
    for sampler in (PoissonSampler(500, 0.1, s.torch("sampler")), FixedSizeSampler(500, 50, s.torch("sampler", 1))):
        idx = sampler.sample()
        assert torch.equal(idx.cuda().cpu(), idx)
    nodes, ptr = disjoint_random_walks(task.data.edge_index, task.num_nodes, 3, generator=s.torch("subgraphs"))
    assert torch.equal(nodes.cuda().cpu(), nodes)
    lists, trees = sample_subgraphs(task.data.edge_index, task.num_nodes, task.train_mask, 3, 1,
                                    generator=s.torch("subgraphs", 1), relation="in-edges")  # Algorithm 1, K 3
    assert torch.equal(trees.nodes.cuda().cpu(), trees.nodes)


CSBM = "csbm:nodes=600,classes=3,features=16,degree=5"


@pytest.mark.parametrize("name", ["dp-mlp", "gap-edge", "drw"])
def test_attacks_run_on_cuda_and_match_the_cpu_targets_ledger(name):
    from bench import api

    cls = get_method(name)
    kw = dict(epsilon=4.0, seeds=[0], track=False, overrides=dict(cls.smoke_config),
              attack_overrides={"lira.references": 2}, bootstrap=20)
    cpu = api.attack(name, CSBM, ["threshold", "lira"], device="cpu", **kw)[0]
    gpu = api.attack(name, CSBM, ["threshold", "lira"], device="cuda", **kw)[0]
    assert cpu.epsilon == gpu.epsilon
    assert [r["attack"] for r in gpu.attacks] == ["threshold", "lira"]
    for rep in gpu.attacks:
        assert rep["status"] == "ok" and rep["variants"], rep
        assert all(0.0 <= v["auc"]["value"] <= 1.0 for v in rep["variants"].values()), rep


def test_an_audit_and_a_quick_verification_run_on_cuda():
    from bench import api

    out = api.audit("dp-mlp", CSBM, epsilon=2.0, canaries=40, device="cuda", track=False,
                    overrides={"epochs": 5, "hidden": 16})
    assert out.verdict in ("PASS", "VIOLATION") and out.result.claimed_epsilon > 0
    assert out.verdict == "PASS", out.result
    v = api.verify("dp-mlp", CSBM, epsilon=2.0, quick=True, device="cuda", track=False,
                   overrides={"epochs": 5, "hidden": 16})
    assert v.verdict == "PASS", [(c.name, c.verdict, c.detail) for c in v.report.checks if c.verdict != "PASS"]
