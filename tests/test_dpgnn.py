"""DP-GNN's model and method: tree forward == full-graph forward where the trees are the whole graph,
exact per-tree gradients, settings, configuration errors."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods import Budget, get_method
from methods.base import ConfigError
from methods.dpgnn import DPGNNModel
from methods.dpsgd import PerExampleGradients, cross_entropy_per_example
from methods.samplers.dpgnn import max_train_in_degree, sample_subgraphs


def random_undirected(n, p, gen):
    a = torch.rand(n, n, generator=gen) < p
    a = torch.triu(a, diagonal=1)
    ei = a.nonzero().t()
    return torch.cat([ei, ei.flip(0)], 1)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 14), p=st.floats(0.0, 0.6), r=st.integers(1, 2), seed=st.integers(0, 999),
       backbone=st.sampled_from(["gcn", "gin", "gat"]), enc=st.integers(0, 2), dec=st.integers(1, 2))
def test_trees_equal_full_graph_inference_when_nothing_is_sampled_away(n, p, r, seed, backbone, enc, dec):
    """With every node training, relation input-graph (K >= the largest in-degree) keeps every edge, and so does
    Algorithm 1 with K >= 2 * max degree (probability >= 1, no drop): the depth-r tree of v is v's r-hop
    computation tree, and the tree forward at the root must equal full-graph message passing at v
    (inverse-degree GCN, sum GIN, dot-product GAT)."""
    gen = torch.Generator().manual_seed(seed)
    ei = random_undirected(n, p, gen)
    x = torch.randn(n, 6, generator=gen)
    deg = int(torch.bincount(ei[1], minlength=n).max())
    torch.manual_seed(seed)
    model = DPGNNModel(6, 3, backbone, hidden=4, layers=r, encoder_layers=enc, decoder_layers=dec, heads=2)
    with torch.no_grad():
        full = model.full_graph(x, ei)
    for relation, k in (("input-graph", max(deg, 1)), ("in-edges", 2 * deg + 2)):
        _, trees = sample_subgraphs(ei, n, torch.ones(n, dtype=torch.bool), k, r, key=seed, relation=relation)
        assert torch.equal(trees.roots, torch.arange(n))
        xb = x[trees.nodes.clamp(min=0)] * (trees.nodes >= 0).unsqueeze(-1)
        with torch.no_grad():
            tree_out = model(xb, trees.parent)
        assert torch.allclose(tree_out, full, atol=1e-5)


def reference_clipped_sum(model, inputs, target, clip):
    params = [p for p in model.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    for i in range(target.numel()):
        loss = cross_entropy_per_example(model(*(t[i:i + 1] for t in inputs)), target[i:i + 1]).sum()
        grads = torch.autograd.grad(loss, params)
        thr = clip / math.sqrt(len(grads))
        for t, g in zip(total, grads):
            t += min(1.0, thr / (float(g.norm()) + 1e-6)) * g
    return total


@pytest.mark.parametrize("backbone", ["gcn", "gin", "gat"])
@pytest.mark.parametrize("r", [1, 2])
def test_per_tree_gradients_are_exact_and_trees_never_mix(backbone, r):
    gen = torch.Generator().manual_seed(r)
    n = 30
    ei = random_undirected(n, 0.2, gen)
    x = torch.randn(n, 5, generator=gen)
    y = torch.randint(0, 3, (n,), generator=gen)
    train = torch.rand(n, generator=gen) < 0.7
    _, trees = sample_subgraphs(ei, n, train, 3, r, key=5, relation="in-edges")
    xb = x[trees.nodes.clamp(min=0)] * (trees.nodes >= 0).unsqueeze(-1)
    torch.manual_seed(0)
    model = DPGNNModel(5, 3, backbone, hidden=6, layers=r, heads=3)
    grads = PerExampleGradients(model)
    assert grads.mode == "bookkeeping"  # every parameter sits in an nn.Linear
    sums, norms, _ = grads.norms_and_sum((xb, trees.parent), y[trees.roots], 0.3, per_layer=True)
    ref = reference_clipped_sum(model, (xb, trees.parent), y[trees.roots], 0.3)
    for a, b in zip(sums, ref):
        assert torch.allclose(a, b, atol=1e-5)
    # one tree's output does not depend on the other trees of the batch
    with torch.no_grad():
        together = model(xb, trees.parent)
        alone = torch.cat([model(xb[i:i + 1], trees.parent[i:i + 1]) for i in range(trees.num_subgraphs)])
    assert torch.allclose(together, alone, atol=1e-5)


def test_inductive_training_touches_only_the_training_graph(monkeypatch):
    from bench.datasets import load_dataset
    from bench.splits import make_task
    import methods.dpgnn as D

    task = make_task(load_dataset("csbm:nodes=300,classes=3,features=8,degree=6"), "disjoint", 0)
    seen = {}
    real = D.sample_subgraphs

    def spy(edge_index, num_nodes, train_mask, *a, **k):
        seen.update(num_nodes=num_nodes, train=int(train_mask.sum()), edges=edge_index.size(1))
        return real(edge_index, num_nodes, train_mask, *a, **k)

    monkeypatch.setattr(D, "sample_subgraphs", spy)
    cls = get_method("dpgnn-adam")
    fitted = cls(**cls.smoke_config).fit(task, Budget(4.0, 1e-3), seed=0)
    train_graph, _ = task.training_graph()
    assert seen == {"num_nodes": int(task.train_mask.sum()), "train": int(task.train_mask.sum()),
                    "edges": train_graph.edge_index.size(1)}
    assert fitted.predict_proba().shape == (task.num_nodes, task.num_classes)
    assert fitted.info["inference_private"] is False


def test_transductive_trees_hold_non_training_nodes_only_as_leaves(small_task):
    import methods.dpgnn as D

    method = get_method("dpgnn")(**get_method("dpgnn").smoke_config, layers=2)
    prep = method.prepare(small_task, torch.Generator().manual_seed(0))
    trees = prep.trees
    train = small_task.train_mask
    parents = trees.nodes.gather(1, trees.parent.clamp(min=0))[trees.parent >= 0]
    assert train[parents].all()
    leaves = trees.nodes[(trees.nodes >= 0) & (trees.depth > 0)]
    assert (~train[leaves]).any()  # the transductive trees do reach non-training nodes' features
    assert prep.num_train == int(train.sum()) and torch.equal(prep.y, small_task.data.y[trees.roots])
    assert isinstance(method, D.DPGNN)


def test_epsilon_inf_trains_without_noise_and_says_so(small_task):
    cls = get_method("dpgnn-adam")
    fitted = cls(**cls.smoke_config).fit(small_task, Budget(), seed=0)
    assert fitted.epsilon(1e-5) == math.inf and fitted.ledger.non_private_use
    assert fitted.info["noise_multiplier"] == 0.0


def test_a_batch_larger_than_the_training_trees_takes_every_tree(small_task):
    cls = get_method("dpgnn")
    f = cls(**{**cls.smoke_config, "batch_size": 100000}).fit(small_task, Budget(4.0, 1e-4), seed=0)
    n = f.info["num_train_subgraphs"]
    assert f.info["batch_size"] == n and f.ledger.events[0].batch_size == n and f.epsilon(1e-4) <= 4.0


@pytest.mark.parametrize("overrides,match", [
    ({"backbone": "gat", "hidden": 10, "heads": 3}, "divisible"),
    ({"clip_quantile": 1.5}, "clip_quantile"),
    ({"max_children": 0}, "max_children"),
    ({"noise_multiplier": -1}, "noise_multiplier"),
    ({"relation": "undirected"}, "relation"),
])
def test_bad_configuration_is_a_clear_error(small_task, overrides, match):
    cls = get_method("dpgnn")
    with pytest.raises(ConfigError, match=match):
        cls(**{**cls.smoke_config, **overrides}).fit(small_task, Budget(4.0, 1e-4), seed=0)


@pytest.mark.parametrize("backbone", ["gcn", "gin"])
@pytest.mark.parametrize("block", [1, 7, 64])
def test_full_graph_messages_in_edge_blocks_equal_all_at_once(backbone, block, monkeypatch):
    """Without autograd a large graph's messages are added block by block: the same logits as all edges at once."""
    from methods import dpgnn

    g = torch.Generator().manual_seed(3)
    n, e = 50, 400
    edge_index = torch.randint(0, n, (2, e), generator=g)
    x = torch.randn(n, 12, generator=g)
    torch.manual_seed(0)
    model = DPGNNModel(12, 4, backbone, hidden=16, layers=2).eval()
    with torch.no_grad():
        whole = model.full_graph(x, edge_index)
        monkeypatch.setattr(dpgnn, "MESSAGE_BLOCK", block)
        streamed = model.full_graph(x, edge_index)
    assert torch.equal(whole, streamed)
    with torch.enable_grad():  # with autograd: one pass (the tree batches), gradients intact
        assert torch.equal(model.full_graph(x, edge_index), whole)


def test_input_graph_refuses_a_task_above_the_declared_bound_before_training(small_task, monkeypatch):
    """K below the training graph's largest training in-degree: ``check_task`` (which the harness calls before a
    run opens) refuses it, naming the bound; the paper's relation accepts the same K. Inductive: the bound is on the
    training graph, every node training."""
    import methods.dpgnn as D
    from bench.datasets import load_dataset
    from bench.splits import make_task

    have = max_train_in_degree(small_task.data.edge_index, small_task.num_nodes, small_task.train_mask)
    cls = get_method("dpgnn")
    low = cls(**{**cls.smoke_config, "max_degree": have - 1})
    assert low.relation_label() == "node (declared max degree)" == cls.unit_label
    monkeypatch.setattr(D.DPGNN, "prepare", lambda *a, **k: pytest.fail("trained past the refusal"))
    with pytest.raises(ConfigError, match=f"{have} training in-neighbours > max_degree {have - 1}"):
        low.check_task(small_task)
    with pytest.raises(ConfigError, match="training in-neighbours"):
        low.fit(small_task, Budget(4.0, 1e-4), seed=0)
    cls(**{**cls.smoke_config, "max_degree": have}).check_task(small_task)
    paper = cls(**{**cls.smoke_config, "max_degree": 2, "relation": "in-edges"})
    paper.check_task(small_task)
    assert paper.relation_label() == "node (in-edges)" and "incoming edge list" in paper.relation_note()
    task = make_task(load_dataset("csbm:nodes=300,classes=3,features=8,degree=6"), "disjoint", 0)
    g, _ = task.training_graph()
    need = max_train_in_degree(g.edge_index, int(g.num_nodes), torch.ones(int(g.num_nodes), dtype=torch.bool))
    cls(**{**cls.smoke_config, "max_degree": need}).check_task(task)
    with pytest.raises(ConfigError, match="training in-neighbours"):
        cls(**{**cls.smoke_config, "max_degree": need - 1}).check_task(task)
