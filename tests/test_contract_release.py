"""No released artefact holds data its ledger does not cover (registry-wide, plugins included).

``Fitted.release()`` is what a run releases under its ledger (``release.pt``); ``Fitted.serving_state()`` is what the
server keeps to answer queries and does not release (raw rows, GAP/ProGAP's X(0) and node-level aggregates, the task's
own graph). :func:`audits.structural.check_release_coverage` removes one unit (the method's own: a node with its
edges, an undirected edge, a feature row) from the input data, fits both with the same streams and checks that the
two are disjoint, that no released tensor has a row per node at node level, that a released tensor no noise reaches
is the same on both neighbours, and that GAP/ProGAP's first edge-level NAP output moves by at most the ledger's
sqrt(2). The tests below revert the split (weights plus every cached input released, as before) and require the
check to flag it.
"""

from __future__ import annotations

import pytest
import torch

from audits.structural import check_release_coverage
from bench.cli import load_plugin
from methods import Budget, available_methods, get_method
from methods.streams import RunStreams
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))
PRIVATE = sorted(n for n, c in available_methods().items() if c.privacy_unit != "none")
BUDGET = Budget(4.0, 1e-4)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models: torch's intra-op threads only contend."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def pp_task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=200,classes=3,features=8,degree=6"), "private-public", 0)


def _task(cls, small_task, pp_task):
    return small_task if small_task.setting in cls.settings else pp_task


def _check(name, task, overrides=None):
    cls = get_method(name)
    cfg = {**cls.smoke_config, **(overrides or {})}
    return check_release_coverage(lambda: cls(**cfg), task, cls.privacy_unit, RunStreams(3), BUDGET)


@pytest.mark.parametrize("name", PRIVATE)
def test_no_released_tensor_depends_on_a_unit_more_than_its_ledger_covers(name, small_task, pp_task):
    found = _check(name, _task(get_method(name), small_task, pp_task))
    assert not found, f"{name}: " + "; ".join(map(str, found))


def _old_release(self):
    """What ``CachedAggregatesFitted.release`` returned before serving state was declared: weights + every input."""
    out = {f"model.{k}": v.detach() for k, v in self.model.state_dict().items()}
    out.update({f"input.{i}": x for i, x in enumerate(self.inputs)})
    return out


@pytest.mark.parametrize("name", ["gap-node", "progap-node"])
def test_releasing_every_cached_input_at_node_level_is_flagged(name, small_task, monkeypatch):
    """Reverted, the release holds every node's raw row (ProGAP's X(0) is the feature matrix; GAP's an embedding
    of it) and every node's own aggregate row: each tensor has a row per node (b), and ProGAP's X(0), which no noise
    reaches, moves with the removed node (c)."""
    from methods.gap.stages import CachedAggregatesFitted

    monkeypatch.setattr(CachedAggregatesFitted, "release", _old_release)
    monkeypatch.setattr(CachedAggregatesFitted, "serving_state", lambda self: {})
    found = _check(name, small_task)
    depth = get_method(name).smoke_config.get("hops", get_method(name).smoke_config.get("depth"))
    indexed = {f.key for f in found if f.check == "node-indexed"}
    assert indexed == {f"input.{i}" for i in range(depth + 1)}, found
    noise_free = {f.key for f in found if f.check == "noise-free"}
    assert noise_free == ({"input.0"} if name == "progap-node" else set()), found


def test_raw_edges_in_a_release_are_flagged_at_edge_level(small_task, monkeypatch):
    """EdgeRand releasing the task's own edges beside its randomised graph: a tensor no noise reaches (the same under
    two seeds) that changes with the removed edge (c)."""
    from methods.gap.edgerand import EdgeRand

    real = EdgeRand._fit

    def leaky(self, ctx):
        fitted = real(self, ctx)
        raw, own = ctx.task.data.edge_index, fitted.release
        fitted.release = lambda: {**own(), "graph.raw_edge_index": raw}
        return fitted

    monkeypatch.setattr(EdgeRand, "_fit", leaky)
    found = _check("edgerand", small_task)
    assert [(f.check, f.key) for f in found] == [("noise-free", "graph.raw_edge_index")], found


def test_a_nap_output_above_its_sensitivity_is_flagged(small_task, monkeypatch):
    """ProGAP at edge level aggregating rows of norm 2 (no normalisation) under a sqrt(2) ledger: its first NAP
    output moves by 2 sqrt(2) when an edge goes (d)."""
    import methods.gap.progap as progap
    from methods.gap.nap import normalize_rows

    def unnormalised(adj_t, x, sigma, gen):
        out = adj_t @ (2.0 * normalize_rows(x.detach().float()))
        return out + sigma * torch.randn(out.shape, generator=gen, dtype=out.dtype)

    monkeypatch.setattr(progap, "nap", unnormalised)
    found = _check("progap-edge", small_task)
    assert [(f.check, f.key) for f in found] == [("sensitivity", "input.1")], found
    assert "2.82843" in found[0].text


def test_gap_and_progap_split_release_and_serving_state_by_their_ledger(small_task):
    """Edge level: weights and the NAP outputs are released, X(0) is served; node level: the weights alone are
    released, and every cached input (ProGAP's X(0) is the raw feature matrix) is served; without a claim, the
    weights alone."""
    from methods.base import fit_method

    for name, budget, released in (("progap-edge", BUDGET, {"input.1", "input.2"}), ("progap-node", BUDGET, set()),
                                   ("gap-edge", BUDGET, {"input.1", "input.2"}), ("gap-node", BUDGET, set()),
                                   ("progap-edge", Budget(), set())):
        cls = get_method(name)
        f = fit_method(cls(**cls.smoke_config), small_task, budget, RunStreams(0))
        rel, srv = f.release(), f.serving_state()
        assert {k for k in rel if k.startswith("input.")} == released, name
        assert set(srv) == {f"input.{i}" for i in range(3)} - released, name
        assert not set(rel) & set(srv)
        if name == "progap-node":
            assert torch.allclose(srv["input.0"], small_task.data.x)  # the raw rows: served, never released


def test_a_served_graph_is_serving_state_and_a_randomised_one_a_release(small_task):
    """EdgeRand releases its randomised structure and serves the features; a model over the task's own graph
    releases its weights and serves that graph."""
    from methods.base import fit_method

    for name, released_graph in (("edgerand", {"graph.edge_index"}), ("dp-mlp", set()), ("drw", set())):
        cls = get_method(name)
        f = fit_method(cls(**cls.smoke_config), small_task, BUDGET, RunStreams(0))
        rel, srv = f.release(), f.serving_state()
        assert {k for k in rel if k.startswith("graph.")} == released_graph, name
        assert not set(rel) & set(srv), name
        assert set(srv) == {f"graph.{k}" for k, v in vars(f.graph).items()
                            if isinstance(v, torch.Tensor)} - released_graph, name


def test_the_contract_refuses_a_tensor_both_released_and_served(small_task, monkeypatch):
    from methods.base import ContractViolation
    from methods.training import ModelFitted

    monkeypatch.setattr(ModelFitted, "serving_state", lambda self: {"model.0.weight": torch.zeros(1),
                                                                    **{f"graph.{k}": v for k, v in
                                                                       vars(self.graph).items()
                                                                       if isinstance(v, torch.Tensor)}})
    cls = get_method("dp-mlp")
    monkeypatch.setattr(ModelFitted, "release", lambda self: {"model.0.weight": torch.zeros(1)})
    with pytest.raises(ContractViolation, match="both released and declared serving state"):
        cls(**cls.smoke_config).fit(small_task, BUDGET, seed=0)


def test_inference_checks_hold_the_serving_rows_fixed_but_the_changed_nodes_own():
    """What the inference checks hold fixed besides the release: each node's serving rows but the changed node's own
    (they reach only it); a served graph's edges are not held, since ``inference_reads`` declares whether they are
    read."""
    from methods.base import node_rows, same_serving_state

    n = 5
    x = torch.arange(15.0).view(n, 3)
    adj = torch.eye(n).to_sparse_csr()
    state = {"input.0": x, "graph.edge_index": torch.tensor([[0, 1], [1, 0]]), "graph.adj": adj}
    assert set(node_rows(state, n)) == {"input.0"}
    own = x.clone()
    own[2] += 1.0
    assert same_serving_state({"input.0": x}, {"input.0": own}, n, 2)
    assert not same_serving_state({"input.0": x}, {"input.0": own}, n, 3)
    assert not same_serving_state({"input.0": x}, {"input.0": own})
    assert not same_serving_state({"input.0": x}, {"input.1": x}, n, 2)
