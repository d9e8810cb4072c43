"""The attacks as measuring instruments: chance against a model that ignores its data, near-perfect against
a memoriser, no ground truth reaching the attacker, and the scoring formulas against hand-computed values."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attacks import NotApplicable, Target, get_attack, run_attack
from attacks.base import Attack, NodeAttackConfig, register_attack, unregister_attack
from methods import Budget, get_method

CSBM = "csbm:nodes=600,classes=3,features=8,degree=6"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # a shared 2-core machine: one intra-op thread is several times faster than two oversubscribed ones
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def instruments():
    from tests.plugins import attack_plugin

    attack_plugin.register_all()
    yield attack_plugin
    attack_plugin.unregister_all()


@pytest.fixture(scope="module")
def tasks():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    ds = load_dataset(CSBM)
    return {s: make_task(ds, s, 0) for s in ("random-75-10-15", "disjoint", "private-public")}


def attack(name: str, method: str, task, seed: int = 0, method_overrides=None, bootstrap: int = 200, **overrides):
    m = get_method(method)(**(method_overrides or {}))
    fitted = m.fit(task, Budget(), seed)
    cls = get_attack(name)
    a = cls(**{**cls.smoke_config, **overrides})
    return run_attack(a, Target(task, m, Budget(), fitted, seed), n_bootstrap=bootstrap)


def aucs(report):
    assert report.status == "ok", report.reason
    return {v.name: v.metrics["auc"] for v in report.variants}


NODE_CASES = [(a, s) for a in ("threshold", "shadow", "lira") for s in ("random-75-10-15", "disjoint", "private-public")]


@pytest.mark.parametrize("name,split", NODE_CASES, ids=[f"{a}-{s}" for a, s in NODE_CASES])
def test_a_model_that_returns_its_prior_gives_chance(instruments, tasks, name, split):
    report = attack(name, "prior", tasks[split])
    for variant, auc in aucs(report).items():
        assert auc.low <= 0.5 <= auc.high, (variant, str(auc))
        assert abs(auc.value - 0.5) < 0.12, (variant, str(auc))


@pytest.mark.parametrize("name,split", NODE_CASES, ids=[f"{a}-{s}" for a, s in NODE_CASES])
def test_a_memoriser_is_caught(instruments, tasks, name, split):
    report = attack(name, "memorise", tasks[split])
    for v in report.variants:
        assert v.metrics["auc"].value > 0.98, (v.name, str(v.metrics["auc"]))
        assert v.metrics["tpr_at_1pct_fpr"].value > 0.9, (v.name, str(v.metrics["tpr_at_1pct_fpr"]))
        assert v.metrics["balanced_accuracy"].value > 0.9  # threshold chosen on the known half generalises
    assert report.evaluated_members > 20 and report.evaluated_non_members > 20


def test_privgnn_attack1_scores_private_against_public_test(instruments, tasks):
    task = tasks["private-public"]
    hit = attack("privgnn-attack1", "memorise", task, shadow_method="target")
    assert hit.membership == "private-vs-public"
    assert aucs(hit)["mlp"].value > 0.98
    # the paper's attacker (GraphSAGE shadow) against a model that ignores its data: chance
    prior = attack("privgnn-attack1", "prior", task)
    auc = aucs(prior)["mlp"]
    assert auc.low <= 0.5 <= auc.high
    assert attack("privgnn-attack1", "memorise", tasks["random-75-10-15"]).status == "not applicable"


def test_privgnn_attack2_reads_the_queried_nodes_from_info(instruments, tasks):
    task = tasks["private-public"]
    hit = attack("privgnn-attack2", "kd-queries", task)
    assert hit.membership == "queried-vs-unqueried"
    assert aucs(hit)["mlp"].value > 0.98
    # a third of the public-train nodes were queried (and half of the candidates went to the attacker)
    queried = task.query_mask.sum().item() // 3
    assert hit.evaluated_members == queried - queried // 2
    miss = attack("privgnn-attack2", "kd-queries", task, method_overrides={"memorise": False})
    auc = aucs(miss)["mlp"]
    assert auc.low <= 0.5 <= auc.high
    # LiRA plays the same game when asked to
    assert min(a.value for a in aucs(attack("lira", "kd-queries", task, membership="queried-vs-unqueried")).values()) > 0.98
    # a model that does not report its queries cannot be scored, and says why
    na = attack("privgnn-attack2", "memorise", task)
    assert na.status == "not applicable" and "query_nodes" in na.reason


def test_link_stealing_is_chance_on_constant_posteriors_and_beats_the_feature_reference_on_gcn(instruments, tasks):
    task = tasks["random-75-10-15"]
    prior = aucs(attack("link-stealing", "prior", task, pairs=400))
    for name, auc in prior.items():
        if name != "ref-features-cosine":
            assert auc.value == 0.5 and auc.low == auc.high == 0.5
    gcn = aucs(attack("link-stealing", "gcn", task, pairs=400, method_overrides={"epochs": 60, "patience": 0}))
    ref = gcn["ref-features-cosine"]
    assert prior["ref-features-cosine"] == ref  # the reference does not depend on the model
    assert gcn["cosine"].low > ref.high  # the model's posteriors reveal edges the features alone do not


def test_linkteller_finds_every_edge_of_a_propagating_model_and_is_not_applicable_without_feature_queries(
        instruments, tasks):
    task = tasks["random-75-10-15"]
    hit = attack("linkteller", "propagate", task)
    v = hit.variants[0]
    assert v.metrics["auc"].value == 1.0 and v.metrics["tpr_at_1pct_fpr"].value == 1.0
    assert hit.notes["feature_queries"] > 1
    prior = aucs(attack("linkteller", "prior", task))["influence"]
    assert prior.value == 0.5
    na = attack("linkteller", "gap-edge", task, method_overrides={"epochs": 5})
    assert na.status == "not applicable" and "predict_proba_features" in na.reason
    assert "noisy aggregation the ledger does not cover" in na.reason


def test_linkteller_on_the_built_in_models_that_serve_feature_queries(tasks):
    task = tasks["random-75-10-15"]
    gcn = aucs(attack("linkteller", "gcn", task, method_overrides={"epochs": 60, "patience": 0}))["influence"]
    assert gcn.low > 0.8, str(gcn)  # a GCN's posteriors move with its neighbours' features only
    mlp = aucs(attack("linkteller", "mlp", task, method_overrides={"epochs": 20}))["influence"]
    assert mlp.value == 0.5 and mlp.low == mlp.high  # an MLP reads no edge: every influence is 0
    # EdgeRand serves its randomised graph: the attack applies at any budget; at epsilon 1 it finds far fewer edges
    m = get_method("edgerand")(epochs=20)
    fitted = m.fit(task, Budget(epsilon=1.0), 0)
    rr = run_attack(get_attack("linkteller")(pairs=100), Target(task, m, Budget(epsilon=1.0), fitted, 0),
                    n_bootstrap=0)
    assert rr.status == "ok" and rr.variants[0].metrics["auc"].value < gcn.value


FEATURE_QUERY_METHODS = ["gcn", "sage", "mlp", "rw", "edgerand", "drw", "dp-mlp", "dp-mlp-feature"]


def sparse_task(task, features: int = 64, per_row: int = 2, seed: int = 0):
    """``task`` with bag-of-words-like features: ``per_row`` non-zeros in ``features`` columns (CSR inputs)."""
    gen = torch.Generator().manual_seed(seed)
    n = task.num_nodes
    x = torch.zeros(n, features)
    cols = (task.data.y.view(-1, 1) * 7 + torch.randint(0, features, (n, per_row), generator=gen)) % features
    x.scatter_(1, cols, 1.0)
    data = task.data.__class__(x=x, y=task.data.y, edge_index=task.data.edge_index)
    data.num_nodes = n
    return dataclasses.replace(task, data=data)


@pytest.mark.parametrize("method", FEATURE_QUERY_METHODS)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_a_row_query_equals_the_whole_matrix_query(tasks, method, sparse):
    """predict_proba_rows (a CSR splice on bag-of-words features; DRW's GCN on the read nodes' receptive field only)
    answers what the whole-graph forward does on the modified matrix, and leaves later queries unchanged."""
    from methods.models import sparse_input

    task = sparse_task(tasks["random-75-10-15"]) if sparse else tasks["random-75-10-15"]
    m = get_method(method)(**get_method(method).smoke_config)
    fitted = m.fit(task, Budget(epsilon=4.0, delta=1e-3) if m.is_private else Budget(), 0)
    assert (sparse_input(fitted.graph.x).layout == torch.sparse_csr) == sparse
    x = task.data.x.float()
    gen = torch.Generator().manual_seed(3)
    for rows in ([4], [0, 9, 31], []):
        rows = torch.tensor(rows, dtype=torch.long)
        values = (torch.rand(rows.numel(), x.size(1), generator=gen) < 0.1).float() * 2.0
        moved = x.clone()
        moved[rows] = values
        nodes = torch.tensor([0, 4, 5, 9, 31, 40])
        want = fitted.predict_proba_features(moved)[nodes]  # the whole graph's forward
        got = fitted.predict_proba_rows(rows, values, nodes)  # DRW/RW: only the nodes' receptive field
        assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
        assert torch.allclose(fitted.predict_proba_features(moved, nodes), want, atol=1e-5)
    assert torch.allclose(fitted.predict_proba_rows(torch.tensor([], dtype=torch.long), x[:0]), fitted.predict_proba(),
                          atol=1e-5)
    with pytest.raises(Exception, match="row query"):
        fitted.predict_proba_rows(torch.tensor([1, 1]), x[:2])


@given(n=st.integers(1, 12), f=st.integers(1, 9), k=st.integers(0, 4), seed=st.integers(0, 10**6))
@settings(max_examples=60, deadline=None)
def test_replacing_csr_rows_equals_replacing_dense_rows(n, f, k, seed):
    import warnings

    from methods.training import replace_csr_rows

    gen = torch.Generator().manual_seed(seed)
    dense = (torch.rand(n, f, generator=gen) < 0.3).float() * torch.randn(n, f, generator=gen)
    rows = torch.randperm(n, generator=gen)[:min(k, n)]
    values = (torch.rand(rows.numel(), f, generator=gen) < 0.5).float() * torch.randn(rows.numel(), f, generator=gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = replace_csr_rows(dense.to_sparse_csr(), rows, values)
    want = dense.clone()
    want[rows] = values
    assert got.layout == torch.sparse_csr and torch.equal(got.to_dense(), want)


@pytest.mark.parametrize("method", ["gcn", "sage", "edgerand", "drw", "dp-mlp-feature"])
def test_feature_queries_reuse_the_release_and_leave_the_ledger_alone(tasks, method):
    task = tasks["random-75-10-15"]
    m = get_method(method)(**get_method(method).smoke_config)
    budget = Budget(epsilon=2.0, delta=1e-3) if m.is_private else Budget()
    fitted = m.fit(task, budget, 0)
    released = fitted.release()
    graph, edges, x0 = fitted.graph, fitted.graph.edge_index, fitted.graph.x.clone()
    before = (fitted.ledger.to_dict(), fitted.epsilon(1e-5), {k: v.clone() for k, v in released.items() if k[:6] == "model."})
    x = task.data.x.float()
    full = fitted.predict_proba_features(x)
    assert full.shape == (task.num_nodes, task.num_classes)
    assert torch.allclose(full, fitted.predict_proba(), atol=1e-6)  # the task's own features: the served posteriors
    nodes = torch.tensor([5, 0, 17])
    assert torch.equal(fitted.predict_proba_features(x, nodes), full[nodes])
    moved = x.clone()
    moved[3] += 1.0
    assert not torch.allclose(fitted.predict_proba_features(moved), full)
    assert torch.equal(fitted.predict_proba_features(x), full)  # a query changes nothing it serves later
    after = fitted.release()
    assert fitted.ledger.to_dict() == before[0] and fitted.epsilon(1e-5) == before[1]
    assert after.keys() == released.keys() and all(torch.equal(after[k], v) for k, v in before[2].items())
    assert fitted.graph is graph and fitted.graph.edge_index is edges and torch.equal(fitted.graph.x, x0)
    with pytest.raises(Exception, match="shape"):
        fitted.predict_proba_features(x[:10])


def test_attribute_inference_finds_a_row_memoriser_and_is_chance_on_the_prior(instruments, tasks):
    task = tasks["random-75-10-15"]
    hit = aucs(attack("attribute-inference", "memorise-rows", task))
    for name in ("loss", "calibrated", "paired"):
        assert hit[name].value == 1.0, (name, hit[name])
    prior = aucs(attack("attribute-inference", "prior", task))
    for name, auc in prior.items():
        if not name.startswith("ref-"):  # both candidates of a target score alike: every pair ties
            assert auc.value == 0.5, (name, auc)
    assert prior["loss"].low == prior["loss"].high == prior["paired"].high == 0.5
    assert prior["ref-neighbour-cosine"] == hit["ref-neighbour-cosine"]  # the reference reads no model
    na = attack("attribute-inference", "gap-edge", task, method_overrides={"epochs": 5})
    assert na.status == "not applicable" and "predict_proba_features" in na.reason


def test_attribute_inference_on_an_overfit_mlp_beats_chance_and_dp_training_does_not_break_it(tasks):
    task = sparse_task(tasks["random-75-10-15"], features=64, per_row=6, seed=1)
    mlp = aucs(attack("attribute-inference", "mlp", task, targets=200,
                      method_overrides={"epochs": 300, "patience": 0, "weight_decay": 0.0, "dropout": 0.0}))
    assert mlp["paired"].low > 0.55, str(mlp["paired"])  # memorised (row, label) pairs fit better than unseen rows
    report = run_attack(get_attack("attribute-inference")(targets=60),
                        Target(task, get_method("dp-mlp-feature")(epochs=2), Budget(1.0, 1e-3),
                               get_method("dp-mlp-feature")(epochs=2).fit(task, Budget(1.0, 1e-3), 0), 0),
                        n_bootstrap=0)
    assert report.status == "ok" and report.level == "feature" and report.evaluated_members == 30


class _FeatureSpy(Attack):
    level = "feature"
    Config = dataclasses.make_dataclass("SpyConfig", [], bases=(NodeAttackConfig,))
    seen: dict = {}

    def scores(self, view):
        _FeatureSpy.seen = {"nodes": view.nodes.clone(), "rows": view.rows.clone(), "known": view.known.clone(),
                            "x": view.task.data.x.clone(), "edges": view.task.data.edge_index.size(1)}
        return {"zero": torch.zeros(view.nodes.numel(), dtype=torch.float64)}


def test_the_feature_game_pairs_each_target_with_an_unfitted_class_mate_and_hides_its_row(tasks):
    from attacks.base import FeatureAttackConfig

    _FeatureSpy.Config = FeatureAttackConfig
    register_attack("feature-spy")(_FeatureSpy)
    try:
        task = tasks["random-75-10-15"]
        m = get_method("mlp")(epochs=3)
        target = Target(task, m, Budget(), m.fit(task, Budget(), 0), 0)
        report = run_attack(get_attack("feature-spy")(targets=80), target, n_bootstrap=0)
        again = dict(_FeatureSpy.seen)
        run_attack(get_attack("feature-spy")(targets=80), target, n_bootstrap=0)
    finally:
        unregister_attack("feature-spy")
    seen, x, y = _FeatureSpy.seen, task.data.x, task.data.y
    assert all(torch.equal(seen[k], again[k]) for k in ("nodes", "rows", "known"))  # reproducible
    nodes, rows = seen["nodes"], seen["rows"]
    assert nodes.numel() == 160 and torch.equal(nodes[0::2], nodes[1::2]) and (nodes[0::2].diff() > 0).all()
    assert task.train_mask[nodes].all() and seen["edges"] == task.data.edge_index.size(1)  # structure is public
    own = (rows == x[nodes]).all(1)
    assert torch.equal(own[0::2] ^ own[1::2], torch.ones(80, dtype=torch.bool))  # one own row per target
    assert not own.all() and not (~own).all()
    for v, r in zip(nodes[~own].tolist(), rows[~own]):
        mates = ((x == r).all(1) & ~task.train_mask).nonzero().view(-1)
        assert mates.numel() and (y[mates] == y[v]).any()  # a decoy: a class-mate's row from outside training
    assert torch.equal(seen["known"][0::2], seen["known"][1::2]) and 0 < int(seen["known"].sum()) < 160
    assert (seen["x"][nodes] == 0).all() and torch.equal(seen["x"][~task.train_mask], x[~task.train_mask])
    assert report.evaluated_members == report.evaluated_non_members == 80 - int(seen["known"].sum()) // 2


def test_feature_attacks_name_their_game_and_which_claims_cover_it():
    """The weights-only game is what a feature-level (and, by group privacy, a node-level) epsilon bounds; the
    released-prediction game reads posteriors served as functions of the target's own row, which no claim covers."""
    cls = get_attack("attribute-inference")
    assert cls.unit() == "feature row (weights only)"
    assert cls.outside_claim("edge") and not cls.outside_claim("feature") and not cls.outside_claim("node")
    assert not cls.outside_claim("none")
    served = get_attack("released-prediction")
    assert served.unit() == "feature row (released predictions)"
    assert all("outside the" in served.outside_claim(u) for u in ("edge", "node", "feature"))
    assert not served.outside_claim("none")
    assert get_attack("threshold").outside_claim("feature") and get_attack("linkteller").outside_claim("feature")


def test_released_prediction_reads_a_training_nodes_row_back_from_its_served_posterior(instruments, tasks):
    """DP-MLP at feature level, epsilon 1: its weights are private, but the posterior it serves for a training node is
    a deterministic function of the node's own row, so the candidate row whose query reproduces it is the node's (AUC
    and TPR at 1% FPR 1). A model whose posteriors ignore the rows (prior) gives chance."""
    task = tasks["random-75-10-15"]
    method, budget = get_method("dp-mlp-feature")(epochs=2), Budget(1.0, 1e-3)
    fitted = method.fit(task, budget, 0)
    assert fitted.info["inference_private"] is False
    report = run_attack(get_attack("released-prediction")(targets=60), Target(task, method, budget, fitted, 0),
                        n_bootstrap=0)
    assert report.status == "ok" and report.params["feature_game"] == "predictions"
    for name in ("distance", "neighbourhood", "paired"):
        v = next(x for x in report.variants if x.name == name)
        assert v.metrics["auc"].value == 1.0 and v.metrics["tpr_at_1pct_fpr"].value == 1.0, (name, v.metrics)
    prior = aucs(attack("released-prediction", "prior", task, bootstrap=0))
    assert all(auc.value == 0.5 for name, auc in prior.items() if not name.startswith("ref-")), prior


def test_attribute_lira_finds_a_row_memoriser_and_is_chance_on_the_prior(instruments, tasks):
    """Weights-only LiRA: reference models that memorise whichever candidate row they were given separate the two
    worlds perfectly; a model that ignores its rows gives every candidate the same score."""
    task = tasks["random-75-10-15"]
    hit = aucs(attack("attribute-lira", "memorise-rows", task, bootstrap=0))
    assert hit["online"].value == 1.0, hit
    prior = aucs(attack("attribute-lira", "prior", task, bootstrap=0))
    assert all(auc.value == 0.5 for auc in prior.values()), prior


class _ReferenceSpy(Attack):
    level = "feature"
    seen: dict = {}

    def scores(self, view):
        held = torch.arange(view.targets.numel()) % 2 == 0
        _ReferenceSpy.seen = {"x": view.reference_task(held).data.x, "rows": view.rows, "targets": view.targets,
                              "hidden": view.task.data.x}
        return {"zero": torch.zeros(view.nodes.numel(), dtype=torch.float64)}


def test_a_feature_reference_task_holds_the_chosen_candidates_and_nothing_the_game_hides(tasks):
    from attacks.base import FeatureAttackConfig

    _ReferenceSpy.Config = FeatureAttackConfig
    register_attack("reference-spy")(_ReferenceSpy)
    try:
        task = tasks["random-75-10-15"]
        m = get_method("mlp")(epochs=3)
        run_attack(get_attack("reference-spy")(targets=40), Target(task, m, Budget(), m.fit(task, Budget(), 0), 0),
                   n_bootstrap=0)
    finally:
        unregister_attack("reference-spy")
    seen = _ReferenceSpy.seen
    t, x, rows = seen["targets"], seen["x"], seen["rows"]
    pick = torch.arange(t.numel()) * 2 + (torch.arange(t.numel()) % 2 == 1).long()
    assert torch.equal(x[t], rows[pick])  # each target holds the candidate the attacker chose
    others = torch.ones(task.num_nodes, dtype=torch.bool)
    others[t] = False
    assert torch.equal(x[others], seen["hidden"][others]) and torch.equal(x[others], task.data.x[others])


class _ReadsServed(Attack):
    level = "feature"

    def scores(self, view):
        return {"served": view.posteriors(view.nodes).max(1).values}


def test_the_weights_only_feature_game_serves_no_posterior_of_the_real_graph(tasks):
    from attacks.base import FeatureAttackConfig
    from methods.base import ContractViolation

    _ReadsServed.Config = FeatureAttackConfig
    register_attack("reads-served")(_ReadsServed)
    try:
        task = tasks["random-75-10-15"]
        m = get_method("mlp")(epochs=3)
        target = Target(task, m, Budget(), m.fit(task, Budget(), 0), 0)
        with pytest.raises(ContractViolation, match="weights-only feature game"):
            run_attack(get_attack("reads-served")(targets=20), target, n_bootstrap=0)
        _ReadsServed.feature_game = "predictions"
        assert run_attack(get_attack("reads-served")(targets=20), target, n_bootstrap=0).status == "ok"
    finally:
        _ReadsServed.feature_game = "weights"
        unregister_attack("reads-served")


# --------------------------------------------------------------------------------------
# No ground truth reaches the attacker
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class CheatConfig(NodeAttackConfig):
    pass


class Cheater(Attack):
    """Scores candidates by everything the view holds besides the model: masks, ids, labels, info."""

    level = "node"
    Config = CheatConfig
    seen: dict = {}

    def scores(self, view):
        c = view.candidates
        t = view.task
        out = {}
        for field in ("train_mask", "val_mask", "test_mask", "query_mask", "public_mask"):
            m = getattr(t, field)
            if m is not None:
                out[field] = m[c].double()
        Cheater.seen = {k: v for k, v in vars(view).items() if not k.startswith("_")}
        return out


@pytest.mark.parametrize("split,method,membership", [
    ("random-75-10-15", "memorise", "auto"), ("disjoint", "memorise", "auto"),
    ("private-public", "memorise", "private-vs-public"), ("private-public", "kd-queries", "queried-vs-unqueried")])
def test_the_attacker_task_reveals_no_membership(instruments, tasks, split, method, membership):
    register_attack("cheater")(Cheater)
    try:
        report = attack("cheater", method, tasks[split], membership=membership)
    finally:
        unregister_attack("cheater")
    for name, auc in aucs(report).items():
        assert auc.value == 0.5, name  # constant over the candidates: no mask separates members
    seen = Cheater.seen
    assert "fitted" not in seen and "info" not in str(sorted(seen))
    assert seen["candidates"].tolist() == sorted(seen["candidates"].tolist())
    assert set(seen["known"].tolist()) < set(seen["candidates"].tolist())


def test_edge_attackers_see_no_edge(instruments, tasks):
    seen = {}

    class Peek(Attack):
        level = "edge"
        from attacks.base import EdgeAttackConfig as Config

        def scores(self, view):
            seen["edges"] = view.task.data.edge_index.numel()
            seen["pairs"] = view.pairs
            return {"zero": torch.zeros(view.pairs.size(1))}

    register_attack("peek")(Peek)
    try:
        report = attack("peek", "prior", tasks["random-75-10-15"], pairs=50)
    finally:
        unregister_attack("peek")
    assert seen["edges"] == 0
    keys = (seen["pairs"][0] * 10_000 + seen["pairs"][1]).tolist()
    assert keys == sorted(keys)  # pair order carries no label
    assert report.evaluated_members == report.evaluated_non_members == 25


def test_the_game_splits_known_and_evaluated_nodes_disjointly_and_reproducibly(instruments, tasks):
    task = tasks["random-75-10-15"]
    a = attack("threshold", "memorise", task, bootstrap=0)
    b = attack("threshold", "memorise", task, bootstrap=0)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.variants[0].scores, b.variants[0].scores)
    members = int(task.train_mask.sum())
    non = int((~(task.train_mask | task.val_mask)).sum())
    assert a.known == members // 2 + non // 2  # half of each group, stratified
    assert a.evaluated_members == members - members // 2 and a.evaluated_non_members == non - non // 2
    assert set(a.ids.tolist()).isdisjoint(set(np.nonzero(task.val_mask.numpy())[0].tolist()))
    c = attack("threshold", "memorise", task, seed=1, bootstrap=0)
    assert not np.array_equal(a.ids, c.ids)
    capped = attack("threshold", "memorise", task, bootstrap=0, max_candidates=100)
    assert capped.known + capped.evaluated_members + capped.evaluated_non_members <= 101


def test_attack_options_are_typed_and_checked():
    from methods.base import ConfigError

    with pytest.raises(ConfigError, match=r"references must be in \[2, 1024\]"):
        get_attack("lira")(references=1)
    with pytest.raises(ConfigError, match=r"references must be in \[2, 1024\]"):
        get_attack("lira")(references=10**6)  # each reference is a full fit
    with pytest.raises(ConfigError, match="unknown hyperparameter"):
        get_attack("threshold")(nope=1)
    with pytest.raises(ConfigError, match="membership must be one of"):
        get_attack("threshold")(membership="everyone")
    with pytest.raises(ConfigError, match="unknown method"):
        get_attack("shadow")(shadow_method="no-such-method")
    with pytest.raises(ConfigError, match="unknown attack 'nope'"):
        get_attack("nope")


# --------------------------------------------------------------------------------------
# Formulas
# --------------------------------------------------------------------------------------


def test_threshold_scores_by_hand():
    from attacks.threshold import confidence_score, entropy_score, loss_score, modified_entropy

    p = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3]], dtype=torch.float64)
    y = torch.tensor([0, 2])
    assert loss_score(p, y).tolist() == pytest.approx([math.log(0.7), math.log(0.3)])
    assert confidence_score(p).tolist() == pytest.approx([0.7, 0.5])
    assert entropy_score(p)[0].item() == pytest.approx(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1))
    m0 = -0.3 * math.log(0.7) - 0.2 * math.log(0.8) - 0.1 * math.log(0.9)
    m1 = -0.7 * math.log(0.3) - 0.2 * math.log(0.8) - 0.5 * math.log(0.5)
    assert modified_entropy(p, y).tolist() == pytest.approx([m0, m1])
    # a confident wrong prediction has a large modified entropy; a confident right one a small one
    sure = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    assert modified_entropy(sure, torch.tensor([0])).item() == pytest.approx(0.0)
    assert modified_entropy(sure, torch.tensor([1])).item() > 600


def test_lira_logit_confidence_keeps_precision_near_one():
    from attacks.lira import logit_confidence

    p = torch.tensor([[1 - 1e-12, 1e-12, 0.0], [0.5, 0.25, 0.25], [0.0, 1.0, 0.0]], dtype=torch.float64)
    phi = logit_confidence(p, torch.tensor([0, 0, 0]))
    assert phi[0].item() == pytest.approx(math.log((1 - 1e-12) / 1e-12))
    assert phi[1].item() == pytest.approx(0.0)
    assert math.isfinite(phi[2].item()) and phi[2].item() < -600


def test_lira_assignment_is_balanced():
    from attacks.lira import balanced_assignment

    a = balanced_assignment(50, 8, torch.Generator().manual_seed(0))
    assert a.shape == (8, 50) and (a.sum(0) == 4).all()
    assert 10 < a.sum(1).float().mean() < 40


def test_lira_sized_assignment_has_the_asked_size():
    from attacks.lira import sized_assignment

    a = sized_assignment(200, 8, 0.1, torch.Generator().manual_seed(0))
    assert a.shape == (8, 200) and (a.sum(1) == 20).all()
    assert len({tuple(r.nonzero().view(-1).tolist()) for r in a}) == 8  # different random subsets
    assert (sized_assignment(10, 3, 0.001, torch.Generator()).sum(1) == 1).all()  # at least one in


@pytest.mark.parametrize("name", ["shadow", "lira"])
def test_reference_models_train_on_the_targets_member_fraction_by_default(instruments, tasks, name):
    task = tasks["random-75-10-15"]
    members = int(task.train_mask.sum())
    non = int((~(task.train_mask | task.val_mask)).sum())
    report = attack(name, "memorise", task, bootstrap=0)
    assert report.notes["in_fraction"] == pytest.approx(members / (members + non), abs=1e-4)
    halves = attack(name, "memorise", task, bootstrap=0, in_fraction=0.5)
    assert halves.notes["in_fraction"] == 0.5
    if name == "shadow":  # the shadow's own game has the asked proportion of members
        assert halves.notes["shadow_members"] == report.known // 2
        assert abs(report.notes["shadow_members"] - report.known * members / (members + non)) <= 1
    from methods.base import ConfigError

    with pytest.raises(ConfigError, match="in_fraction"):
        get_attack(name)(in_fraction=1.0)


def test_lira_scores_by_hand():
    from scipy.stats import norm

    from attacks.lira import lira_scores

    # two candidates, four reference models; candidate 0 is in models 0 and 1, candidate 1 in 2 and 3
    phi = np.array([[3.0, 0.0], [5.0, 1.0], [1.0, 4.0], [-1.0, 6.0]])
    inside = np.array([[True, False], [True, False], [False, True], [False, True]])
    target = np.array([4.0, 0.5])
    mu_in, mu_out = np.array([4.0, 5.0]), np.array([0.0, 0.5])
    # global variances: residuals in (-1, 1, -1, 1) -> 4/(4-2) = 2; out (1, -1, -0.5, 0.5) -> 2.5/2
    s_in, s_out = math.sqrt(2.0), math.sqrt(1.25)
    got = lira_scores(target, phi, inside, "global")
    want_on = norm.logpdf(target, mu_in, s_in) - norm.logpdf(target, mu_out, s_out)
    want_off = -norm.logsf(target, mu_out, s_out)
    assert got["online"] == pytest.approx(want_on)
    assert got["offline"] == pytest.approx(want_off)
    # a candidate with no in model borrows the mean in-out shift of the others
    inside2 = inside.copy()
    inside2[:, 1] = False
    shifted = lira_scores(target, phi, inside2, "global")
    assert np.isfinite(shifted["online"]).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7), st.integers(1, 20), st.integers(0, 2**31 - 1))
def test_paired_distances_equal_scipy(classes, rows, seed):
    from scipy.spatial import distance

    from attacks.edges import DISTANCES, paired_distance

    rng = np.random.default_rng(seed)
    a = rng.dirichlet(np.ones(classes), size=rows)
    b = rng.dirichlet(np.ones(classes), size=rows)
    b[0] = a[0]  # identical rows: distance 0 everywhere
    for metric in DISTANCES:
        got = paired_distance(torch.from_numpy(a), torch.from_numpy(b), metric).numpy()
        want = np.array([getattr(distance, metric)(x, y) for x, y in zip(a, b)])
        assert np.allclose(got, want, atol=1e-9), metric


def test_non_edges_are_non_edges_of_the_training_graph(tasks):
    from attacks.membership import NotApplicable as NA, sample_non_edges, training_edges

    for split in ("random-75-10-15", "disjoint"):
        task = tasks[split]
        gen = torch.Generator().manual_seed(0)
        non = sample_non_edges(task, 500, gen)
        _, nodes = task.training_graph()
        allowed = set(nodes.tolist())
        edges = set(map(tuple, task.data.edge_index.t().tolist()))
        pairs = list(map(tuple, non.t().tolist()))
        assert len(set(pairs)) == 500
        assert all(u < v and (u, v) not in edges and u in allowed and v in allowed for u, v in pairs)
        tr = training_edges(task)
        assert all(u in allowed and v in allowed and (u, v) in edges for u, v in tr.t().tolist())
    with pytest.raises(NA, match="non-edges exist"):
        sample_non_edges(tasks["random-75-10-15"], 10**6, torch.Generator())


def test_query_nodes_may_be_ids_or_a_mask(tasks):
    from attacks.membership import query_nodes
    from methods.base import ConfigError

    task = tasks["private-public"]

    class F:
        def __init__(self, q):
            self.info = {"query_nodes": q}

    ids = task.query_mask.nonzero().view(-1)[:5]
    assert query_nodes(task, F(ids)).tolist() == sorted(ids.tolist())
    assert query_nodes(task, F(ids.tolist()[::-1])).tolist() == sorted(ids.tolist())
    mask = torch.zeros(task.num_nodes, dtype=torch.bool)
    mask[ids] = True
    assert query_nodes(task, F(mask)).tolist() == sorted(ids.tolist())
    with pytest.raises(ConfigError, match="outside"):
        query_nodes(task, F([task.num_nodes]))
    with pytest.raises(NotApplicable):
        query_nodes(task, F(None))


def test_membership_rules_per_setting(tasks):
    from attacks.membership import rule_for

    class F:
        info = {}

    t = tasks["random-75-10-15"]
    # unassigned nodes (no split part) count as non-members: their labels were never used
    small = dataclasses.replace(t, train_mask=t.train_mask & (torch.arange(t.num_nodes) % 2 == 0))
    m, n = rule_for(small).truth(small, F())
    assert m.equal(small.train_mask) and n.equal(~(small.train_mask | small.val_mask))
    d = tasks["disjoint"]
    m, n = rule_for(d).truth(d, F())
    assert m.equal(d.train_mask) and n.equal(d.test_mask)
    p = tasks["private-public"]
    rule = rule_for(p)
    m, n = rule.truth(p, F())
    assert rule.name == "private-vs-public" and m.equal(p.train_mask) and n.equal(p.test_mask)
    view_task = rule.attacker_task(p)
    assert not view_task.train_mask.any() and not view_task.test_mask.any()
    assert not (view_task.public_mask & (m | n)).any()
    inside = m & (torch.arange(p.num_nodes) % 2 == 0)
    ref = rule.reference(view_task, None, inside, (m | n) & ~inside).task
    assert ref.train_mask.equal(inside) and ref.public_mask.equal(~inside) and not (ref.query_mask & inside).any()
    with pytest.raises(NotApplicable, match="private-public"):
        rule_for(t, "queried-vs-unqueried")
