"""The batched teacher trainer: same function as PyG's GraphSAGE, and teachers that never interact."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods.models import Backbone, prepare_graph
from methods.privgnn.teachers import (BatchedMLP, BatchedSAGE, build_batch, dropout_masks, masked_batch_norm,
                                      teacher_loss, train_teachers)


def random_graph(n=60, f=12, c=4, edges=150, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, f, generator=g) < 0.4).float()
    y = torch.randint(0, c, (n,), generator=g)
    ei = torch.randint(0, n, (2, edges), generator=g)
    ei = ei[:, ei[0] != ei[1]]
    ei = torch.unique(torch.cat([ei, ei.flip(0)], 1), dim=1)
    return x, y, ei


def gens(seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


def pyg_copy(model: BatchedSAGE, t: int, f: int) -> Backbone:
    """A PyG GraphSAGE(norm=batch_norm) holding teacher t's weights."""
    ref = Backbone("sage", f, model.out_dim, hidden=model.hidden, layers=2, dropout=0.0, norm="batch_norm")
    net = ref.net
    with torch.no_grad():
        net.convs[0].lin_r.weight.copy_(model.w1[t, :f].T)
        net.convs[0].lin_l.weight.copy_(model.w1[t, f:].T)
        net.convs[0].lin_l.bias.zero_()  # batch norm makes it redundant; the batched model has none
        net.convs[1].lin_r.weight.copy_(model.w2_root[t].T)
        net.convs[1].lin_l.weight.copy_(model.w2_neigh[t].T)
        net.convs[1].lin_l.bias.copy_(model.b2[t])
        bn = net.norms[0].module
        bn.weight.copy_(model.bn_weight[t])
        bn.bias.copy_(model.bn_bias[t])
        bn.running_mean.copy_(model.running_mean[t])
        bn.running_var.copy_(model.running_var[t])
    return ref


def test_batched_sage_is_pyg_graphsage_with_batch_norm():
    x, y, ei = random_graph()
    nodes = torch.arange(40)
    batch = build_batch(x, y, ei, [nodes])
    model = BatchedSAGE(gens([3]), x.size(1), 8, 4, dropout=0.0)
    ref = pyg_copy(model, 0, x.size(1))
    from torch_geometric.utils import subgraph

    sub, _ = subgraph(nodes, ei, relabel_nodes=True, num_nodes=x.size(0))
    g = prepare_graph("sage", x[nodes], sub, nodes.numel())
    model.train()
    ref.train()
    out = model(batch)[0]
    out_ref = ref(g)
    assert torch.allclose(out, out_ref, atol=1e-5)
    # the gradients of one step agree too
    teacher_loss(out.unsqueeze(0), batch).backward()
    torch.nn.functional.cross_entropy(out_ref, y[nodes]).backward()
    assert torch.allclose(model.w1.grad[0, :x.size(1)], ref.net.convs[0].lin_r.weight.grad.T, atol=1e-5)
    assert torch.allclose(model.w2_neigh.grad[0], ref.net.convs[1].lin_l.weight.grad.T, atol=1e-5)
    # running statistics were updated like BatchNorm1d's
    assert torch.allclose(model.running_var[0], ref.net.norms[0].module.running_var, atol=1e-5)
    # eval mode on another graph through predict_graph = PyG on the whole graph, at the queried nodes
    model.eval()
    ref = pyg_copy(model, 0, x.size(1)).eval()
    deg = torch.zeros(x.size(0)).index_add_(0, ei[1], torch.ones(ei.size(1)))
    agg_x = torch.zeros_like(x).index_add_(0, ei[1], x[ei[0]]) / deg.clamp(min=1).unsqueeze(1)
    query = torch.tensor([45, 50, 3])
    full = ref(prepare_graph("sage", x, ei, x.size(0)))
    assert torch.allclose(model.predict_graph(0, x, agg_x, ei, query), full[query], atol=1e-5)


def test_teachers_in_a_batch_equal_teachers_trained_alone():
    """In exact arithmetic each teacher is a function of its own data only: a batch of teachers of different sizes
    (so with padding), dropout on, equals training each one alone up to rounding (the rounding follows the batch's
    shapes; see the next test)."""
    x, y, ei = random_graph(n=80, seed=1)
    sets = [torch.arange(0, 30), torch.arange(20, 70), torch.tensor([5, 6, 7]), torch.arange(40, 80)]
    seeds = [11, 12, 13, 14]
    batch = build_batch(x, y, ei, sets)
    g = gens(seeds)
    model = BatchedSAGE(g, x.size(1), 8, 4, dropout=0.5)  # initialisation draws, then dropout, per teacher
    train_teachers(model, batch, g, epochs=15, lr=0.01)
    q = torch.tensor([1, 33, 71])
    deg = torch.zeros(x.size(0)).index_add_(0, ei[1], torch.ones(ei.size(1)))
    agg_x = torch.zeros_like(x).index_add_(0, ei[1], x[ei[0]]) / deg.clamp(min=1).unsqueeze(1)
    for t, (s, seed) in enumerate(zip(sets, seeds)):
        alone_batch = build_batch(x, y, ei, [s])
        g = gens([seed])
        alone = BatchedSAGE(g, x.size(1), 8, 4, dropout=0.5)
        train_teachers(alone, alone_batch, g, epochs=15, lr=0.01)
        assert torch.allclose(model.predict_graph(t, x, agg_x, ei, q), alone.predict_graph(0, x, agg_x, ei, q),
                              atol=1e-4), f"teacher {t} depends on its batch"


def test_a_fixed_padding_keeps_a_teacher_bit_identical_whatever_the_others_sizes():
    """The privacy analysis needs a teacher to depend on no other teacher's data, bit for bit, so the batch's shapes
    must not depend on them: padded to the largest set, a teacher's weights follow another set's size (31 vs 32
    nodes here, with x86 CPU kernels); padded to a fixed ``pad_to`` they do not."""
    x, y, ei = random_graph(n=200, seed=1)
    first = torch.arange(0, 30)

    def weights(other: int, pad_to: int | None) -> list[torch.Tensor]:
        g = gens([11, 12])
        model = BatchedSAGE(g, x.size(1), 8, 4, dropout=0.5)
        train_teachers(model, build_batch(x, y, ei, [first, torch.arange(100, 100 + other)], pad_to=pad_to), g,
                       epochs=30, lr=0.01)
        return [p[0].detach().clone() for p in model.parameters()]

    assert all(torch.equal(a, b) for a, b in zip(weights(31, 40), weights(32, 40)))
    with pytest.raises(ValueError, match="more than pad_to"):
        build_batch(x, y, ei, [first], pad_to=29)


def test_changing_one_teachers_data_leaves_the_others_untouched():
    x, y, ei = random_graph(n=70, seed=2)
    sets = [torch.arange(0, 35), torch.arange(35, 70)]
    outs = []
    for variant in range(2):
        xv, yv = x.clone(), y.clone()
        if variant:  # change every node of teacher 1: features, labels and edges
            xv[35:] = 1 - xv[35:]
            yv[35:] = (yv[35:] + 1) % 4
        eiv = ei if not variant else ei[:, (ei[0] < 35) | (ei[1] < 35)]
        g = gens([1, 2])
        model = BatchedSAGE(g, x.size(1), 8, 4, dropout=0.5)
        train_teachers(model, build_batch(xv, yv, eiv, sets), g, epochs=10, lr=0.01)
        outs.append((model.w1.detach().clone(), model.w2_root.detach().clone()))
    assert torch.equal(outs[0][0][0], outs[1][0][0]) and torch.equal(outs[0][1][0], outs[1][1][0])
    assert not torch.equal(outs[0][0][1], outs[1][0][1])


def test_empty_teacher_does_not_break_the_batch():
    x, y, ei = random_graph(seed=3)
    g = gens([1, 2])
    model = BatchedSAGE(g, x.size(1), 8, 4, dropout=0.5)
    batch = build_batch(x, y, ei, [torch.arange(10), torch.zeros(0, dtype=torch.long)])
    losses = train_teachers(model, batch, g, epochs=5, lr=0.01)
    assert all(math.isfinite(v) for v in losses)
    assert torch.isfinite(model.w1).all() and torch.isfinite(model.running_var).all()


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 9), min_size=1, max_size=5), d=st.integers(1, 4), seed=st.integers(0, 1000))
def test_masked_batch_norm_is_batchnorm1d_on_each_teachers_rows(sizes, d, seed):
    g = torch.Generator().manual_seed(seed)
    p = max(sizes + [1])
    t = len(sizes)
    h = torch.randn(t, p, d, generator=g) * 3 + 1
    mask = torch.arange(p)[None, :] < torch.tensor(sizes)[:, None]
    w, b = torch.rand(t, d, generator=g) + 0.5, torch.randn(t, d, generator=g)
    rm, rv = torch.zeros(t, d), torch.ones(t, d)
    out = masked_batch_norm(h, mask, w, b, rm, rv, training=True)
    for i, k in enumerate(sizes):
        if k < 2:
            assert torch.equal(rm[i], torch.zeros(d)) and torch.equal(rv[i], torch.ones(d))
            continue
        bn = torch.nn.BatchNorm1d(d)
        with torch.no_grad():
            bn.weight.copy_(w[i])
            bn.bias.copy_(b[i])
        ref = bn.train()(h[i, :k])
        assert torch.allclose(out[i, :k], ref, atol=1e-4)
        assert torch.allclose(rm[i], bn.running_mean, atol=1e-5) and torch.allclose(rv[i], bn.running_var, atol=1e-4)


def test_batched_mlp_matches_a_plain_mlp_and_trains_independently():
    x, y, _ = random_graph(n=50, seed=4)
    g = gens([5, 6])
    model = BatchedMLP(g, x.size(1), 8, 4, dropout=0.0, layers=3)
    batch = build_batch(x, y, None, [torch.arange(20), torch.arange(20, 50)])
    out = model(batch)
    h = x[20:50]
    for i in range(3):
        h = h @ model.weights[i][1] + model.biases[i][1]
        if i < 2:
            h = torch.relu(h)
    assert torch.allclose(out[1, :30], h, atol=1e-5)
    assert torch.allclose(model.predict_features(1, x[20:50]), h, atol=1e-5)
    train_teachers(model, batch, g, epochs=30, lr=0.01)
    acc = (model.predict_features(0, x[:20]).argmax(1) == y[:20]).float().mean()
    assert acc > 0.5  # it learns its own training data


def test_dropout_masks_use_each_teachers_rows_only():
    x, y, ei = random_graph(seed=5)
    model = BatchedSAGE(gens([0, 1]), x.size(1), 6, 3, dropout=0.5)
    batch = build_batch(x, y, ei, [torch.arange(10), torch.arange(4)])
    m = dropout_masks(model, batch, gens([7, 8]))
    assert m.shape == (2, 10, 6)
    assert torch.equal(m[1, 4:], torch.zeros(6, 6))  # padding rows are dropped
    assert set(m.unique().tolist()) <= {0.0, 2.0}
    alone = dropout_masks(model, build_batch(x, y, ei, [torch.arange(4)]), gens([8]))
    assert torch.equal(alone[0], m[1, :4])


def test_teachers_fit_a_learnable_task():
    """Sanity: a teacher reaches high training accuracy on a homophilous graph in 200 epochs."""
    g = torch.Generator().manual_seed(0)
    n, c = 120, 3
    y = torch.arange(n) % c
    x = torch.nn.functional.one_hot(y, c).float() + 0.8 * torch.randn(n, c, generator=g)
    src = torch.randint(0, n, (600,), generator=g)
    dst = torch.randint(0, n, (600,), generator=g)
    keep = (y[src] == y[dst]) & (src != dst)
    ei = torch.stack([src[keep], dst[keep]])
    ei = torch.cat([ei, ei.flip(0)], 1)
    gg = gens([3])
    model = BatchedSAGE(gg, c, 16, c, dropout=0.5)
    batch = build_batch(x, y, ei, [torch.arange(n)])
    losses = train_teachers(model, batch, gg, epochs=100, lr=0.01)
    assert losses[-1] < losses[0] * 0.5
    model.eval()
    assert (model(batch)[0].argmax(1) == y).float().mean() > 0.9


@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_output_shape_and_no_dropout_masks_without_dropout(dropout):
    x, y, ei = random_graph(seed=6)
    model = BatchedSAGE(gens([0]), x.size(1), 4, 2, dropout=dropout)
    batch = build_batch(x, y, ei, [torch.arange(7)])
    assert model(batch).shape == (1, 7, 2)
    assert (dropout_masks(model, batch, gens([1])) is None) == (dropout == 0.0)


@pytest.fixture(scope="module")
def pp_graphs():
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods.privgnn.common import split_graphs

    task = make_task(load_dataset("csbm:nodes=300,classes=3,features=12,degree=6"), "private-public", 0)
    return split_graphs(task, "none")


def test_privgnn_batched_teachers_cast_the_votes_of_teachers_trained_one_at_a_time(pp_graphs):
    """Batching is a speed-up only: on a fixed seed, the teachers trained 5 at once answer every query with the
    class (the vote) the same teachers trained one at a time give, and nearly the same posteriors."""
    from methods.privgnn.common import choose_queries
    from methods.privgnn.privgnn import PrivGNN

    queries = choose_queries(pp_graphs, 12, 0)

    def posteriors(batch: int) -> torch.Tensor:
        m = PrivGNN(queries=12, k=40, teacher_epochs=20, hidden=8, teacher_batch=batch)
        return m.teacher_log_posteriors(pp_graphs, queries, 7, torch.device("cpu"))

    batched, alone = posteriors(5), posteriors(1)
    assert torch.equal(batched.argmax(1), alone.argmax(1))
    assert torch.allclose(batched, alone, atol=1e-4)
    assert not torch.equal(posteriors(5), PrivGNN(queries=12, k=40, teacher_epochs=20, hidden=8, teacher_batch=5)
                           .teacher_log_posteriors(pp_graphs, queries, 8, torch.device("cpu")))  # the seed matters


@pytest.mark.parametrize("name", ["pate-m", "pate-g"])
def test_pate_teachers_train_alone_whatever_teacher_batch_says(pp_graphs, name):
    """PATE's parts have no data-independent size bound to pad a batch to, so every teacher trains alone
    (methods/privgnn/pate.py, (b)); ``teacher_batch`` is accepted and has no effect."""
    from methods import get_method
    from methods.privgnn.common import choose_queries

    cls = get_method(name)
    queries = choose_queries(pp_graphs, 16, 0)

    def votes(batch: int) -> torch.Tensor:
        m = cls(teachers=6, queries=16, epochs=15, hidden=8, teacher_batch=batch)
        return m.vote_counts(pp_graphs, queries, 3, torch.device("cpu"))

    batched = votes(4)
    assert torch.equal(batched, votes(1))
    assert int(batched.sum()) == 6 * 16  # every teacher voted on every query


@pytest.mark.parametrize("grad", [False, True])
def test_mean_aggregate_in_blocks_adds_the_same_messages(monkeypatch, grad):
    """Blocks of edges (an ogbn-products-sized graph would otherwise gather ~12 GB of messages at once) give the
    same sums, in the same order, and the same gradient up to the order autograd adds the blocks' parts."""
    from methods.privgnn import teachers as T

    gen = torch.Generator().manual_seed(0)
    n, e, d = 40, 500, 6
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    deg = torch.zeros(n).index_add_(0, dst, torch.ones(e))
    inv = torch.where(deg > 0, 1.0 / deg.clamp(min=1), torch.zeros_like(deg))
    h = torch.randn(n, d, generator=gen, requires_grad=grad)
    whole = T.mean_aggregate(h, src, dst, inv)
    gw = torch.autograd.grad(whole.square().sum(), h)[0] if grad else None
    monkeypatch.setattr(T, "MESSAGE_BLOCK", 64)
    blocks = T.mean_aggregate(h, src, dst, inv)
    assert torch.equal(whole, blocks)
    if grad:
        torch.testing.assert_close(gw, torch.autograd.grad(blocks.square().sum(), h)[0])
