"""GAP / ProGAP / EdgeRand end to end on the small synthetic task: inference never queries the graph,
the ledger is exactly the calibrated theorem's, the graph is queried K times, the node-level relations (the
declared degree bound and its refusal, the papers' cut-off), EdgeRand's release."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from methods import Budget, get_method
from methods.base import ConfigError, Method
from methods.gap import edgerand as ER
from methods.privacy import presets as L
from methods.gap import nap as NAP

GRAPH_METHODS = ["gap-edge", "gap-node", "progap-edge", "progap-node", "edgerand"]
NODE_METHODS = ["gap-node", "progap-node"]
BUDGET = Budget(4.0, 1e-4)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: one intra-op thread (with two, OpenMP spinning on a shared 2-core machine makes these
    fits 10-30x slower). Restored afterwards."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)



def copy_task(task):
    return dataclasses.replace(task, data=task.data.clone())


def fit(name, task, seed=0, budget=BUDGET, **over):
    cls = get_method(name)
    return cls(**{**cls.smoke_config, **over}).fit(task, budget, seed=seed, device="cpu")


@pytest.mark.parametrize("name", GRAPH_METHODS)
def test_inference_never_touches_the_adjacency_again(name, small_task):
    task = copy_task(small_task)
    fitted = fit(name, task)
    before = fitted.predict_proba().clone()
    # poison the graph after training: a random graph, then none at all; recompute from scratch each time
    task.data.edge_index = torch.randint(0, task.num_nodes, (2, 500))
    fitted._proba = None
    p1 = fitted.predict_proba()
    del task.data.edge_index
    fitted._proba = None
    p2 = fitted.predict_proba()
    assert torch.equal(p1, before) and torch.equal(p2, before)
    assert fitted.info["inference_private"] is True
    if name != "edgerand":  # GAP/ProGAP keep only dense cached aggregates, no adjacency
        assert all(x.layout == torch.strided for x in fitted.inputs)
        assert len(fitted.inputs) == 1 + (fitted.info.get("depth") or fitted.info.get("hops"))


@pytest.mark.parametrize("name,K", [("progap-edge", 3), ("gap-edge", 2), ("progap-node", 2), ("gap-node", 1)])
def test_the_graph_is_queried_exactly_K_times(name, K, small_task, monkeypatch):
    calls = []
    real = NAP.nap
    key = "depth" if name.startswith("progap") else "hops"
    module = __import__(f"methods.gap.{name.split('-')[0]}", fromlist=["nap"])
    monkeypatch.setattr(module, "nap", lambda *a, **k: calls.append(1) or real(*a, **k))
    fitted = fit(name, small_task, **{key: K})
    assert len(calls) == K == fitted.info["nap_queries"]


def test_progap_edge_ledger_is_the_calibrated_theorem_41(small_task):
    fitted = fit("progap-edge", small_task, depth=3)
    sigma = fitted.info["sigma"]
    assert fitted.ledger.events == L.aggregation_edge(3, sigma).events
    eps = fitted.epsilon(BUDGET.delta)
    assert eps <= BUDGET.epsilon and eps == pytest.approx(BUDGET.epsilon, rel=2e-3)


def test_progap_node_ledger_is_the_calibrated_theorem_42(small_task):
    fitted = fit("progap-node", small_task)
    c = get_method("progap-node").smoke_config
    n_train = int(small_task.train_mask.sum())
    T = c["epochs"] * math.ceil(n_train / c["batch_size"])
    assert fitted.info["steps_per_stage"] == T
    z = fitted.info["noise_multiplier"]
    expected = L.progap_node(c["depth"], n_train, c["batch_size"], T, z, c["max_degree"], relation="input-graph")
    assert fitted.ledger.events == expected.events and fitted.ledger.conventions == expected.conventions
    assert fitted.info["sigma_ap"] == pytest.approx(z * math.sqrt(c["max_degree"]))
    assert fitted.epsilon(BUDGET.delta) == pytest.approx(BUDGET.epsilon, rel=2e-3)


def test_gap_node_ledger_matches_its_composition(small_task):
    fitted = fit("gap-node", small_task)
    i = fitted.info
    expected = L.gap_node(i["hops"], int(small_task.train_mask.sum()), 32, i["encoder_steps"], i["classifier_steps"],
                          i["noise_multiplier"], i["max_degree"], relation="input-graph")
    assert fitted.ledger.events == expected.events and fitted.ledger.conventions == expected.conventions


# -- node level: which neighbouring relation -----------------------------------------------------------------


def largest_degree(task) -> int:
    return NAP.max_out_degree(task.data.edge_index, task.num_nodes)


@pytest.mark.parametrize("name", NODE_METHODS)
def test_node_default_is_the_input_graph_with_a_declared_public_bound(name, small_task):
    cls = get_method(name)
    assert cls.Config().relation == "input-graph" and cls.Config().max_degree == 100  # the papers' D, declared
    D = cls.smoke_config["max_degree"]
    assert D >= largest_degree(small_task)
    fitted = fit(name, small_task)
    led = fitted.ledger
    assert led.recipe.kwargs()["relation"] == "input-graph" and led.recipe.kwargs()["max_degree"] == D
    assert led.public_facts["max_degree"] == D  # the record names the bound the claim rests on
    assert not any("cut-off" in n for n in led.notes)
    assert L.rebuild(led.recipe).epsilon(BUDGET.delta) == pytest.approx(fitted.epsilon(BUDGET.delta))
    diag = fitted.info["diagnostic"]  # exact counts: diagnostics, no ledger covers them
    assert diag["edges_after_cutoff"] == diag["edges_before_cutoff"] == small_task.data.edge_index.size(1)
    assert diag["nodes_above_max_degree"] == 0
    method = cls(**cls.smoke_config)
    assert method.relation_label() == cls.unit_label == "node (declared max degree)"
    assert "declared public bound D" in method.relation_note() and "refuses" in method.relation_note()


@pytest.mark.parametrize("name", NODE_METHODS)
def test_node_papers_relation_is_labelled_relative_to_the_cutoff_graph(name, small_task):
    D = 5
    deg = torch.bincount(small_task.data.edge_index[0], minlength=small_task.num_nodes)
    assert int(deg.max()) > D  # the cut-off binds
    fitted = fit(name, small_task, relation="cut-off-graph", max_degree=D)
    led = fitted.ledger
    assert led.recipe.kwargs()["relation"] == "cut-off-graph" and "max_degree" not in led.public_facts
    assert any(f"relative to the graph after the random out-degree cut-off to D={D}" in n
               and "not node-level DP for the input graph" in n for n in led.notes), led.notes
    assert fitted.info["sigma_ap"] == pytest.approx(fitted.info["noise_multiplier"] * math.sqrt(D))
    assert fitted.epsilon(BUDGET.delta) == pytest.approx(BUDGET.epsilon, rel=2e-3)
    diag = fitted.info["diagnostic"]
    assert diag["nodes_above_max_degree"] == int((deg > D).sum()) > 0
    assert diag["edges_after_cutoff"] == int(deg.clamp(max=D).sum()) < diag["edges_before_cutoff"]
    method = get_method(name)(relation="cut-off-graph")
    assert method.relation_label() == "node (after cut-off)" and "not node-level DP" in method.relation_note()


@pytest.mark.parametrize("name", NODE_METHODS)
def test_a_graph_above_the_declared_bound_is_refused_naming_the_degree(name, small_task, monkeypatch):
    """check_task (which the harness calls before a run opens) refuses it, and so does the fit path; the papers'
    relation accepts the same D."""
    cls, have = get_method(name), largest_degree(small_task)
    low = cls(**{**cls.smoke_config, "max_degree": have - 1})
    refusal = f"{name}: the input graph has a node of degree {have} > max_degree {have - 1}"
    with pytest.raises(ConfigError, match=refusal):
        low.check_task(small_task)
    cls(**{**cls.smoke_config, "max_degree": have}).check_task(small_task)  # at the largest degree: accepted
    cls(**{**cls.smoke_config, "max_degree": have - 1, "relation": "cut-off-graph"}).check_task(small_task)
    monkeypatch.setattr(cls, "check_task", Method.check_task)  # without the early check, the fit path refuses
    with pytest.raises(ConfigError, match=f"degree {have} > max_degree {have - 1}"):
        low.fit(small_task, BUDGET, seed=0, device="cpu")
    with pytest.raises(ConfigError, match="relation"):
        cls(relation="cutoff")


def test_the_cli_refuses_a_graph_above_the_bound_before_any_run_opens(capsys, monkeypatch):
    from mlflow.entities import ViewType

    from bench import tracking
    from bench.cli import main

    def runs() -> int:
        client = tracking.client()
        ids = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)]
        return len(client.search_runs(ids, run_view_type=ViewType.ALL, max_results=50000)) if ids else 0

    monkeypatch.setenv("BENCH_OFFLINE", "1")
    before = runs()
    code = main(["run", "-m", "gap-node", "-d", "csbm:nodes=60,classes=2", "-e", "1", "--set",
                 "gap-node.max_degree=1", "--no-progress"])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    assert code == 2 and err[-1].startswith("error: ") and "max_degree 1" in err[-1], err[-3:]
    assert runs() == before


def test_edge_level_methods_have_no_node_relation(small_task):
    for name in ("gap-edge", "progap-edge"):
        cls = get_method(name)
        assert not hasattr(cls.Config(), "relation") and not hasattr(cls.Config(), "max_degree")
        assert cls().relation_label() == cls.unit_label == "edge (undirected)"
    led = fit("gap-edge", small_task).ledger
    assert led.public_facts == {} and not led.notes


@pytest.mark.parametrize("name", ["progap-edge", "gap-node", "edgerand"])
def test_epsilon_inf_trains_without_noise_and_says_so(name, small_task):
    fitted = fit(name, small_task, budget=Budget())
    assert fitted.epsilon(1e-5) == math.inf and fitted.ledger.non_private_use


def test_history_has_train_and_validation_accuracy_per_stage(small_task, tmp_path):
    fitted = fit("progap-edge", small_task, depth=3)
    stages = sorted({h["stage"] for h in fitted.history})
    assert stages == [0, 1, 2, 3]
    assert all(0 <= h["train_acc"] <= 1 and 0 <= h["val_acc"] <= 1 for h in fitted.history)
    assert [h["epoch"] for h in fitted.history] == list(range(1, len(fitted.history) + 1))
    from methods.gap.plots import save_convergence

    png = save_convergence(fitted.history, "t", tmp_path / "c.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bad_configurations_are_clear_errors(small_task):
    with pytest.raises(ConfigError, match="depth"):
        get_method("progap-edge")(depth=0)
    with pytest.raises(ConfigError, match="batch norm"):
        fit("progap-node", small_task, norm="batch")
    # an expected batch larger than the training set samples every node (rate 1), one step per epoch
    big = fit("gap-node", small_task, batch_size=10_000)
    assert big.info["sampling_rate"] == 1.0 and big.epsilon(BUDGET.delta) <= BUDGET.epsilon
    with pytest.raises(ConfigError):
        get_method("edgerand")(density_share=1.5)


# -- EdgeRand's release -------------------------------------------------------------------------------


def random_graph(n, m, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)])[:, keep], axis=1)
    e = torch.from_numpy(pairs).long()
    return torch.cat([e, e.flip(0)], 1)


@pytest.mark.parametrize("dense", [True, False])
def test_arr_flips_with_the_right_probabilities(dense, monkeypatch):
    n = 3000
    ei = random_graph(n, 20_000, 0)
    monkeypatch.setattr(ER, "DENSE_PAIRS", 10**9 if dense else 0)
    true = set(map(tuple, ei[:, ei[0] < ei[1]].t().tolist()))
    m, pairs = len(true), n * (n - 1) // 2
    kept = flipped = 0
    reps = 3
    for seed in range(reps):
        out, facts = ER.asymmetric_rr(ei, n, 1.0, 0.5, np.random.default_rng(seed))
        assert torch.equal(out, torch.unique(out, dim=1))                  # no duplicates
        assert bool((out[0] != out[1]).all())                              # no self-loops
        upper = set(map(tuple, out[:, out[0] < out[1]].t().tolist()))
        assert out.size(1) == 2 * len(upper)                               # symmetric
        kept += len(upper & true)
        flipped += len(upper - true)
        p, q = facts["rr_keep_prob"], facts["rr_subsample_q"]
        assert p == pytest.approx(math.e / (1 + math.e))
    # expected counts: true edges survive w.p. p q, non-edges appear w.p. (1 - p) q (q from the noisy count)
    assert kept / reps == pytest.approx(m * p * q, rel=0.05)
    assert flipped / reps == pytest.approx((pairs - m) * (1 - p) * q, rel=0.05)
    # the expected number of released edges is the (noisy) true count
    assert (kept + flipped) / reps == pytest.approx(m, rel=0.05)


def test_sampled_non_edges_are_distinct_uniform_non_edges():
    from scipy.stats import chisquare

    n = 12
    ei = random_graph(n, 30, 1)
    upper = ei[:, ei[0] < ei[1]]
    edge_keys = np.sort((upper[0] * n + upper[1]).numpy())
    rng = np.random.default_rng(0)
    counts = {}
    for _ in range(4000):
        got = ER._sample_non_edges(3, n, edge_keys, rng)
        assert len(set(got.tolist())) == 3 and not set(got.tolist()) & set(edge_keys.tolist())
        assert all(k // n < k % n for k in got.tolist())
        for k in got.tolist():
            counts[k] = counts.get(k, 0) + 1
    assert len(counts) == n * (n - 1) // 2 - len(edge_keys)
    assert chisquare(list(counts.values())).pvalue > 1e-4


def test_edgerand_spends_its_budget_on_link_and_density(small_task):
    fitted = fit("edgerand", small_task, budget=Budget(2.0, 1e-4))
    assert fitted.info["epsilon_link"] == pytest.approx(1.8)
    assert fitted.info["epsilon_density"] == pytest.approx(0.2)
    assert fitted.epsilon(1e-4) <= 2.0
    # the released graph, not the true one, is what the model serves from
    true = set(map(tuple, small_task.data.edge_index.t().tolist()))
    released = fitted.graph.edge_index
    assert released.layout != torch.strided  # a sparse adjacency of the released graph
    idx = released.to_sparse_coo().coalesce().indices().flip(0)
    assert set(map(tuple, idx.t().tolist())) != true


@pytest.mark.parametrize("name", ["gap-edge", "gap-node"])
def test_gap_without_encoder_aggregates_the_raw_features(name, small_task):
    """encoder_layers=0: X(0) is the normalised raw features (wider than hidden) and every hop keeps that width."""
    assert small_task.num_features != get_method(name).Config().hidden
    fitted = fit(name, small_task, encoder_layers=0)
    p = fitted.predict_proba()
    assert p.shape == (small_task.num_nodes, small_task.num_classes) and torch.allclose(p.sum(1), torch.ones(len(p)))
    assert fitted.epsilon(BUDGET.delta) <= BUDGET.epsilon * (1 + 1e-9)
