"""Neighbouring relations stated on the INPUT a user holds, for the units whose mechanism runs after a data-dependent
step (a sampler, a partition, a neighbour search, a count): DRW's subgraphs, PrivGNN's subsample and neighbour search,
PATE's partition, EdgeRand's count and randomized response, and DP-MLP. Each test takes two neighbouring inputs under
the method's relation and checks the step the ledger's proof rests on (docs/methods/relations.md)."""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods import Budget, get_method
from methods.base import Task

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _random_edges(n: int, count: int, gen: torch.Generator, undirected: bool = True) -> torch.Tensor:
    if n < 2 or count == 0:
        return torch.empty(2, 0, dtype=torch.long)
    e = torch.randint(0, n, (2, count), generator=gen)
    e = e[:, e[0] != e[1]]
    if undirected:
        e = torch.cat([e, e.flip(0)], 1)
    return torch.unique(e, dim=1)


# --------------------------------------------------------------------------------------------------------------
# DRW, DRW-R, DRW-D: feature level (one row of X replaced; structure, labels, node count and split public)


def _task(x, y, edge_index, train_mask, setting: str, classes: int) -> Task:
    from torch_geometric.data import Data

    n = x.size(0)
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=n)
    none = torch.zeros(n, dtype=torch.bool)
    return Task(dataset="hyp", split="hyp", setting=setting, data=data, train_mask=train_mask, val_mask=none,
                test_mask=none, num_classes=classes)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), degree=st.integers(0, 5), seed=st.integers(0, 10**6), L=st.integers(0, 4),
       name=st.sampled_from(["drw", "drw-r", "drw-d"]), setting=st.sampled_from(["transductive", "inductive"]),
       data=st.data())
def test_drw_subgraphs_depend_on_neither_features_nor_labels(n, degree, seed, L, name, setting, data):
    """drw.py (a) and (b): on two inputs that differ in one feature row (and, to show the labels are not read either,
    in every label), the method's own subgraph construction gives the same subgraphs, adjacency and accounted
    population, resample after resample; and every example but the one holding v reads the same rows."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    train = torch.rand(n, generator=g) < 0.6
    train[data.draw(st.integers(0, n - 1))] = True
    ei = _random_edges(n, degree * n // 2, g)
    v = data.draw(st.integers(0, n - 1))
    x2, y2 = x.clone(), (y + 1) % 3
    x2[v] = torch.rand(3, generator=g) + 5.0
    method = get_method(name)(walk_length=L, features=data.draw(st.sampled_from(["none", "row"])))
    c = method.config
    runs = []
    for xx, yy in ((x, y), (x2, y2)):
        task = _task(xx, yy, ei, train, setting, 3)
        graph, feats, roots, rule, csr, inductive = method._setup(task, c)
        gen = torch.Generator().manual_seed(seed)
        runs.append((graph, feats, [method._walks(graph, roots, csr, c, gen, inductive, rule) for _ in range(3)]))
    (g1, f1, w1), (g2, f2, w2) = runs
    local_v = int(torch.nonzero(torch.arange(n)[train] == v).view(-1)[0]) if setting == "inductive" and train[v] else (
        v if setting == "transductive" else None)
    for a, b in zip(w1, w2):  # DRW-D's resamples: the same sequence
        assert torch.equal(a.padded.nodes, b.padded.nodes) and torch.equal(a.padded.adj, b.padded.adj)
        assert (a.num_examples, a.population, a.rule) == (b.num_examples, b.population, b.rule)
        if a.num_examples == 0:
            continue
        idx = torch.arange(a.num_examples)
        xa, _ = a.padded.batch(idx, f1)
        xb, _ = b.padded.batch(idx, f2)
        moved = (xa != xb).flatten(1).any(1)
        holds_v = (a.padded.nodes == local_v).any(1) if local_v is not None else torch.zeros_like(moved)
        assert not bool((moved & ~holds_v).any()), "an example without v reads v's row"
        assert int(holds_v.sum()) <= 1  # disjoint: v lies in at most one example


def test_drw_d_runs_the_same_schedule_and_ledger_on_neighbouring_inputs(small_task):
    """End to end: the schedule (subgraph counts, batch, period, resamples, steps) and the ledger of a private DRW-D
    run are the same on an input whose one training node's feature row is replaced; the weights are not."""
    cfg = {"walk_length": 2, "hidden": 8, "max_steps": 120, "batch_size": 10, "noise_multiplier": 2.0, "resamples": 2}
    v = int(small_task.train_mask.nonzero()[0])
    data = small_task.data.clone()
    data.x = data.x.clone()
    data.x[v] = 10.0 - data.x[v]
    fits = [get_method("drw-d")(**cfg).fit(t, Budget(4.0, 1e-5), seed=5) for t in (small_task, replace(small_task,
                                                                                                         data=data))]
    keys = ("steps", "batch_size", "num_subgraphs", "accounting_population", "resample_period", "resamples")
    assert {k: fits[0].info[k] for k in keys} == {k: fits[1].info[k] for k in keys}
    assert fits[0].info["resamples"] >= 1
    assert fits[0].ledger.same_events(fits[1].ledger)
    assert any(not torch.equal(a, b) for a, b in zip(fits[0].model.parameters(), fits[1].model.parameters()))


# --------------------------------------------------------------------------------------------------------------
# PrivGNN and PATE: node level on the private graph (one private node removed with its features, label and edges)


def _graphs(xp, yp, ep, classes: int, public_seed: int = 0):
    from methods.privgnn.common import Graphs
    from methods.privgnn.teachers import mean_aggregate

    g = torch.Generator().manual_seed(public_seed)
    m = 6
    xq = torch.rand(m, xp.size(1), generator=g)
    eq = torch.tensor([[i for i in range(m)] + [(i + 1) % m for i in range(m)],
                       [(i + 1) % m for i in range(m)] + [i for i in range(m)]])
    deg = torch.zeros(m).index_add_(0, eq[1], torch.ones(eq.size(1)))
    agg = mean_aggregate(xq, eq[0], eq[1], 1.0 / deg.clamp(min=1))
    n = xp.size(0)
    return Graphs(torch.arange(n), torch.arange(n, n + m), xp, yp, ep, xq, eq, agg, torch.arange(m),
                  torch.zeros(m, dtype=torch.long), classes)


def _without(graphs, v: int):
    """The neighbouring private graph: node v removed with its features, label and every edge; ids above v shift."""
    keep = torch.ones(graphs.num_private, dtype=torch.bool)
    keep[v] = False
    e = graphs.edges_private
    e = e[:, (e[0] != v) & (e[1] != v)]
    e = e - (e > v).long()
    return _graphs(graphs.x_private[keep], graphs.y_private[keep], e, graphs.num_classes)


def _shift(sample: torch.Tensor, v: int) -> torch.Tensor:
    """The same subsample on the neighbour without v (the coupling of the Poisson coins of the other nodes)."""
    s = sample[sample != v]
    return s - (s > v).long()


@contextmanager
def _subsamples(samples: list[torch.Tensor]):
    """PrivGNN's Poisson subsample replaced by given ones, in query order."""
    import methods.privgnn.privgnn as mod

    it = iter(samples)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mod, "poisson_subsample", lambda n, rate, gen: next(it))
        yield


def _random_private(n: int, seed: int, classes: int = 3, features: int = 3):
    g = torch.Generator().manual_seed(seed)
    xp = torch.rand(n, features, generator=g)
    yp = torch.randint(0, classes, (n,), generator=g)
    return _graphs(xp, yp, _random_edges(n, 2 * n, g), classes), g


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 30), k=st.integers(1, 10), q=st.integers(1, 4), seed=st.integers(0, 10**6),
       ablation=st.sampled_from(["none", "knnrem"]), data=st.data())
def test_privgnn_a_query_reads_only_its_own_subsample(n, k, q, seed, ablation, data):
    """privgnn.py (a): remove private node v (features, label, edges). Under the coupling of the other nodes'
    subsample coins, every query whose subsample does not hold v answers with bit-identical noise-free posteriors,
    although v sits in other queries' subsamples of the same teacher batch (and may change their nearest sets, sizes
    and induced subgraphs); a query whose subsample holds v answers with another probability vector (L1 <= 2)."""
    from methods.privgnn.privgnn import PrivGNN

    graphs, g = _random_private(n, seed)
    v = data.draw(st.integers(0, n - 1))
    rate = data.draw(st.sampled_from([0.3, 0.7, 1.0]))
    samples = [(torch.rand(n, generator=g) < rate).nonzero().view(-1) for _ in range(q)]
    method = PrivGNN(queries=q, k=k, teacher_epochs=4, epochs=4, hidden=4, teacher_batch=q, ablation=ablation)
    queries = torch.arange(q) % graphs.x_public.size(0)
    with _subsamples(samples):
        base = method.teacher_log_posteriors(graphs, queries, 0, torch.device("cpu"))
    with _subsamples([_shift(s, v) for s in samples]):
        other = method.teacher_log_posteriors(_without(graphs, v), queries, 0, torch.device("cpu"))
    for i, s in enumerate(samples):
        if v not in s.tolist():
            assert torch.equal(base[i], other[i]), f"query {i} depends on private node {v} outside its subsample"
        assert float((base[i].exp() - other[i].exp()).abs().sum()) <= 2.0 + 1e-5


def test_privgnn_a_teacher_does_not_see_another_querys_subsample_size():
    """The regression for the batch's padding: two KNN teachers in one batch, both below K nodes; removing v from the
    second one's subsample (32 -> 31 nodes) must leave the first one's posterior bit-identical. Padding a batch to its
    largest teacher (instead of K) fails this: the first teacher's rounding follows the second one's size (on x86
    CPUs at least a padded size of 32 against 31 changes the kernels' reduction order)."""
    from methods.privgnn.privgnn import PrivGNN

    graphs, _ = _random_private(200, 3, features=12)
    first, second = torch.arange(0, 30), torch.arange(100, 132)
    v = 120
    method = PrivGNN(queries=2, k=60, teacher_epochs=30, epochs=30, hidden=8, teacher_batch=2)
    queries = torch.tensor([0, 1])
    with _subsamples([first, second]):
        base = method.teacher_log_posteriors(graphs, queries, 0, torch.device("cpu"))
    with _subsamples([_shift(first, v), _shift(second, v)]):
        other = method.teacher_log_posteriors(_without(graphs, v), queries, 0, torch.device("cpu"))
    assert torch.equal(base[0], other[0])
    assert not torch.equal(base[1], other[1])


@contextmanager
def _record_teacher_logits():
    """Every PATE teacher's logits on the queries, in the order vote_counts asks them (teacher order)."""
    from methods.privgnn.teachers import BatchedMLP, BatchedSAGE

    seen: list[torch.Tensor] = []
    mlp, sage = BatchedMLP.predict_features, BatchedSAGE.predict_graph
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BatchedMLP, "predict_features", lambda self, *a, **kw: seen.append(mlp(self, *a, **kw)) or seen[-1])
        mp.setattr(BatchedSAGE, "predict_graph", lambda self, *a, **kw: seen.append(sage(self, *a, **kw)) or seen[-1])
        yield seen


def _pate_run(name, graphs, parts, teachers, queries):
    import methods.privgnn.pate as mod

    method = get_method(name)(teachers=teachers, queries=int(queries.numel()), epochs=12, hidden=8)
    with pytest.MonkeyPatch.context() as mp, _record_teacher_logits() as seen:
        mp.setattr(mod, "partition", lambda n, p, gen: parts)
        votes = method.vote_counts(graphs, queries, 0, torch.device("cpu"))
    ids = [t for t in range(teachers) if parts[t].numel()]
    return votes, dict(zip(ids, seen))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 40), teachers=st.integers(1, 5), seed=st.integers(0, 10**6),
       name=st.sampled_from(["pate-m", "pate-g"]), data=st.data())
def test_pate_removing_a_private_node_changes_only_its_own_teacher(n, teachers, seed, name, data):
    """pate.py (a)-(c): couple the partitions (every other node keeps its part); removing v then leaves every other
    teacher's logits bit-identical, and each query's vote histogram moves by at most one vote."""
    graphs, g = _random_private(n, seed)
    assign = torch.randint(0, teachers, (n,), generator=g)
    v = data.draw(st.integers(0, n - 1))
    parts = [(assign == t).nonzero().view(-1) for t in range(teachers)]
    queries = torch.arange(6)
    votes, logits = _pate_run(name, graphs, parts, teachers, queries)
    votes2, logits2 = _pate_run(name, _without(graphs, v), [_shift(p, v) for p in parts], teachers, queries)
    for t in logits:
        if t != int(assign[v]):
            assert torch.equal(logits[t], logits2[t]), f"teacher {t} depends on node {v} of another part"
    d = votes - votes2
    assert bool(((d > 0).sum(1) <= 1).all()) and bool(((d < 0).sum(1) <= 1).all()) and float(d.abs().max()) <= 1


def test_pate_a_teacher_does_not_see_another_parts_size():
    """The regression for PATE's batching: a teacher's logits must not follow another part's size (32 -> 31 nodes
    when v leaves it). Training the parts in one batch padded to the largest part fails this."""
    graphs, _ = _random_private(200, 4, features=12)
    v = 120
    parts = [torch.arange(0, 30), torch.arange(100, 132)]
    for name in ("pate-m", "pate-g"):
        _, logits = _pate_run(name, graphs, parts, 2, torch.arange(6))
        _, logits2 = _pate_run(name, _without(graphs, v), [_shift(p, v) for p in parts], 2, torch.arange(6))
        assert torch.equal(logits[0], logits2[0]), name


# --------------------------------------------------------------------------------------------------------------
# EdgeRand: edge level (one undirected edge)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 14), count=st.integers(0, 40), seed=st.integers(0, 10**6), eps=st.floats(0.1, 8.0),
       share=st.floats(0.05, 0.5), orientation=st.sampled_from(["both", "forward", "backward"]), data=st.data())
def test_edgerand_reads_the_input_through_its_undirected_pairs(n, count, seed, eps, share, orientation, data):
    """edgerand.py: neighbouring inputs (one undirected edge {u, w}, stored in either or both directions, beside
    arbitrary directed, duplicated and self-loop entries) give edge counts that differ by exactly 1 -- the Laplace
    count's sensitivity -- and the released facts are functions of the two releases (the exact counts are
    diagnostics)."""
    from methods.gap.edgerand import asymmetric_rr, rr_probabilities

    g = torch.Generator().manual_seed(seed)
    base = torch.randint(0, n, (2, count), generator=g)
    u = data.draw(st.integers(0, n - 1))
    w = data.draw(st.integers(0, n - 1).filter(lambda a: a != u))
    base = base[:, ~(((base[0] == u) & (base[1] == w)) | ((base[0] == w) & (base[1] == u)))]
    add = {"both": [[u, w], [w, u]], "forward": [[u, w]], "backward": [[w, u]]}[orientation]
    with_edge = torch.cat([base, torch.tensor(add).t()], 1)
    eps_d = eps * share
    eps_l = eps - eps_d
    (out1, f1), (out0, f0) = (asymmetric_rr(e, n, eps_l, eps_d, np.random.default_rng(seed)) for e in (with_edge, base))
    assert f1["noisy_edge_count"] - f0["noisy_edge_count"] == pytest.approx(1.0, abs=1e-9)
    assert f1["diagnostic"]["edges_true"] == f0["diagnostic"]["edges_true"] + 1
    pairs = n * (n - 1) // 2
    for out, f in ((out1, f1), (out0, f0)):
        assert set(f) == {"rr_keep_prob", "rr_subsample_q", "noisy_edge_count", "released_edges", "diagnostic"}
        d = min(max(f["noisy_edge_count"] / pairs, 0.0), 1.0)
        p, q, keep, flip = rr_probabilities(eps_l, d)
        assert (f["rr_keep_prob"], f["rr_subsample_q"]) == (p, q) and f["released_edges"] == out.size(1) // 2
        # one pair's likelihood ratio, present or absent in the release, is at most e^eps1
        assert keep <= math.exp(eps_l) * flip * (1 + 1e-12) and (1 - flip) <= math.exp(eps_l) * (1 - keep) * (1 + 1e-12)


def test_edgerand_reads_a_symmetric_input_as_before():
    """Reading each pair from either direction leaves the suite's (symmetric) inputs' releases unchanged."""
    from methods.gap.edgerand import asymmetric_rr

    g = torch.Generator().manual_seed(1)
    ei = _random_edges(60, 150, g)
    upper = ei[:, ei[0] < ei[1]]
    a, fa = asymmetric_rr(ei, 60, 2.0, 0.3, np.random.default_rng(3))
    b, fb = asymmetric_rr(upper, 60, 2.0, 0.3, np.random.default_rng(3))
    c, fc = asymmetric_rr(upper.flip(0), 60, 2.0, 0.3, np.random.default_rng(3))
    assert torch.equal(a, b) and torch.equal(a, c) and fa == fb == fc


# --------------------------------------------------------------------------------------------------------------
# DP-MLP: node level; nothing data-dependent before DP-SGD


def test_dp_mlp_reads_no_edge_and_no_other_nodes_row(small_task):
    """dp_mlp.py: the edges and every non-training node's row and label never reach the weights (so removing v reaches
    at most v's own example); a training node's row does."""
    cfg = {"epochs": 3, "hidden": 8, "batch_size": 32, "features": "row"}
    base = get_method("dp-mlp")(**cfg).fit(small_task, Budget(4.0, 1e-5), seed=2)
    data = small_task.data.clone()
    outside = ~small_task.train_mask
    g = torch.Generator().manual_seed(0)
    data.x = data.x.clone()
    data.x[outside] = torch.rand(int(outside.sum()), data.x.size(1), generator=g) * 9
    data.y = data.y.clone()
    data.y[outside] = (data.y[outside] + 1) % small_task.num_classes
    data.edge_index = _random_edges(small_task.num_nodes, 50, g)
    other = get_method("dp-mlp")(**cfg).fit(replace(small_task, data=data), Budget(4.0, 1e-5), seed=2)
    for a, b in zip(base.model.parameters(), other.model.parameters()):
        assert torch.equal(a, b)
    assert base.ledger.same_events(other.ledger)
    inside = small_task.data.clone()
    inside.x = inside.x.clone()
    inside.x[int(small_task.train_mask.nonzero()[0])] += 3.0
    moved = get_method("dp-mlp")(**cfg).fit(replace(small_task, data=inside), Budget(4.0, 1e-5), seed=2)
    assert any(not torch.equal(a, b) for a, b in zip(base.model.parameters(), moved.model.parameters()))
