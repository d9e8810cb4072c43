"""Sparse input rows (methods.models.SparseRows) in the DP-SGD engine: the sparse first layer's forward, backward,
per-example gradient norms and clipped sums equal the dense path and a per-example autograd loop; the methods'
sparse data paths (DP-GNN, DRW, DP-MLP; the MLP and GCN baselines' CSR input) give the dense runs' results; audits'
gradient hooks still work."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from methods.dpgnn import DPGNNModel
from methods.dpsgd import DPOptimizer, PerExampleGradients, _Layer, cross_entropy_per_example
from methods.models import DenseGCN, SparseFeatures, SparseRows, linear_mlp
from tests.test_dpsgd import reference_clipped_sum


def sparse_data(n, f, density, seed, dtype=torch.float64, binary=False):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(n, f, generator=g) < density
    vals = torch.ones(n, f) if binary else torch.randn(n, f, generator=g)
    return (mask * vals).to(dtype)


def batch_index(b, t, n, seed, pad=0.3):
    g = torch.Generator().manual_seed(seed + 1)
    idx = torch.randint(0, n, (b, t), generator=g)
    idx[torch.rand(b, t, generator=g) < pad] = -1
    idx[:, 0] = torch.randint(0, n, (b,), generator=g)  # every example has a root row
    return idx


def dense_of(x, idx):
    return x[idx.clamp(min=0)] * (idx >= 0).unsqueeze(-1).to(x.dtype)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), f=st.integers(1, 40), b=st.integers(1, 8), t=st.integers(1, 6),
       density=st.floats(0.0, 0.5), seed=st.integers(0, 10**6), chunk=st.integers(1, 200))
def test_sparse_rows_stand_for_the_dense_tensor(n, f, b, t, density, seed, chunk):
    x = sparse_data(n, f, density, seed)
    sf = SparseFeatures.from_dense(x)
    idx = batch_index(b, t, n, seed)
    rows, dense = sf.rows(idx), dense_of(x, idx)
    assert rows.shape == dense.shape and rows.size(-1) == f and rows.dim() == 3
    assert torch.equal(rows.to_dense(), dense)
    gram = torch.bmm(dense, dense.transpose(1, 2))
    assert torch.allclose(rows.example_gram(b), gram, atol=1e-12)
    assert torch.allclose(sf.gram(idx, max_entries=chunk), gram, atol=1e-12)
    assert torch.allclose(sf.rows(idx.reshape(-1)).example_gram(b * t).view(-1), (dense ** 2).sum(-1).view(-1))
    cols = torch.randperm(f)[: max(1, f // 3)]
    assert torch.equal(rows.index_select(-1, cols), dense.index_select(-1, cols))
    keep = torch.rand(b) < 0.5
    assert torch.equal(rows[keep].to_dense(), dense[keep])
    assert torch.equal(rows[1:].to_dense(), dense[1:])
    assert torch.equal(torch.tanh(rows), torch.tanh(dense))  # any other function runs on the dense tensor
    # nn.Linear: forward and weight / bias gradients
    lin = nn.Linear(f, 3).double()
    out_s, out_d = lin(rows), lin(dense)
    assert torch.allclose(out_s, out_d, atol=1e-12)
    w = torch.randn(out_s.shape, dtype=torch.float64)
    gs = torch.autograd.grad((out_s * w).sum(), list(lin.parameters()))
    gd = torch.autograd.grad((out_d * w).sum(), list(lin.parameters()))
    assert all(torch.allclose(a, c, atol=1e-10) for a, c in zip(gs, gd))


def test_sparse_features_are_chosen_by_density():
    assert SparseFeatures.maybe(sparse_data(50, 40, 0.02, 0)) is not None
    assert SparseFeatures.maybe(sparse_data(50, 40, 0.5, 0)) is None
    assert SparseFeatures.maybe(torch.zeros(0, 3)) is None


def _dpgnn_model(f, c):
    return DPGNNModel(f, c, "gcn", hidden=6, layers=1, encoder_layers=1, decoder_layers=1)


MODELS = {  # (builder, rows per example or None for node rows, uses parent input)
    "dense-gcn": (lambda f, c: DenseGCN(f, c, hidden=8, layers=2), 5),
    "dense-gcn-wide": (lambda f, c: DenseGCN(f, c, hidden=16, layers=2), 5),
    "mlp": (lambda f, c: linear_mlp(f, 8, c, 2), None),
    "dpgnn": (_dpgnn_model, 4),
}


def _inputs(name, x, sf, b, t, seed, gram):
    g = torch.Generator().manual_seed(seed + 2)
    if t is None:
        idx = torch.randint(0, x.size(0), (b,), generator=g)
        return (sf.rows(idx),), (x[idx],)
    idx = batch_index(b, t, x.size(0), seed)
    rows = sf.rows(idx, sf.gram(idx) if gram else None)
    dense = dense_of(x, idx)
    if name == "dpgnn":
        parent = torch.full((b, t), -1, dtype=torch.long)
        parent[:, 1:] = torch.randint(0, 1, (b, t - 1), generator=g)  # star trees: every child under the root
        parent[idx < 0] = -1
        return (rows, parent), (dense, parent)
    mask = (idx >= 0).to(x.dtype)
    a = (torch.rand(b, t, t, generator=g) < 0.5).to(x.dtype) + torch.eye(t, dtype=x.dtype)
    a = a * mask[:, :, None] * mask[:, None, :]
    adj = a / a.sum(-1, keepdim=True).clamp(min=1)
    return (rows, adj), (dense, adj)


@pytest.mark.parametrize("name", list(MODELS))
@settings(max_examples=10, deadline=None)
@given(b=st.integers(1, 9), f=st.integers(3, 40), density=st.floats(0.02, 0.4), clip=st.floats(0.01, 5.0),
       seed=st.integers(0, 10**6), per_layer=st.booleans(), gram=st.booleans())
def test_sparse_clipped_sums_equal_dense_and_the_per_example_loop(name, b, f, density, clip, seed, per_layer, gram):
    build, t = MODELS[name]
    x = sparse_data(40, f, density, seed)
    sf = SparseFeatures.from_dense(x)
    torch.manual_seed(seed)
    model = build(f, 3).double()
    sparse_in, dense_in = _inputs(name, x, sf, b, t, seed, gram)
    target = torch.randint(0, 3, (b,), generator=torch.Generator().manual_seed(seed))
    grads = PerExampleGradients(model, mode="bookkeeping")
    s_sums, s_norms, s_loss = grads.norms_and_sum(sparse_in, target, clip, per_layer)
    d_sums, d_norms, d_loss = grads.norms_and_sum(dense_in, target, clip, per_layer)
    ref_sums, ref_norms = reference_clipped_sum(model, dense_in, target, clip, per_layer)
    assert torch.allclose(s_loss, d_loss)
    assert torch.allclose(s_norms, ref_norms, rtol=1e-6, atol=1e-9)
    assert torch.allclose(d_norms, ref_norms, rtol=1e-6, atol=1e-9)
    for s, d, r in zip(s_sums, d_sums, ref_sums):
        assert torch.allclose(s, r, rtol=1e-6, atol=1e-9) and torch.allclose(d, r, rtol=1e-6, atol=1e-9)
    if name != "dpgnn":  # the vmap route takes sparse rows too (densified); DP-GNN's tree forward cannot be vmapped
        _, v_norms, _ = PerExampleGradients(model, mode="vmap").norms_and_sum(sparse_in, target, clip, per_layer)
        assert torch.allclose(v_norms, ref_norms, rtol=1e-6, atol=1e-9)


def test_every_layer_route_is_exercised_and_exact():
    """ghost (Gram) and materialised per-example gradients, dense and sparse, on one model."""
    torch.manual_seed(0)
    model = DenseGCN(40, 3, hidden=16, layers=2).double()
    x = sparse_data(60, 40, 0.1, 1)
    sf = SparseFeatures.from_dense(x)
    (rows, adj), (dense, _) = _inputs("dense-gcn", x, sf, 7, 5, 3, False)
    g = [torch.randn(7, 5, 16, dtype=torch.float64), torch.randn(7, 5, 3, dtype=torch.float64)]
    kinds = [_Layer.build(model.lins[0], [dense], [g[0]], 7).kind, _Layer.build(model.lins[1], [dense[..., :16]],
                                                                               [g[1]], 7).kind]
    assert kinds == ["ghost", "materialise"]
    assert _Layer.build(model.lins[0], [rows], [g[0]], 7).kind == "sparse"
    target = torch.randint(0, 3, (7,))
    ref_sums, ref_norms = reference_clipped_sum(model, (dense, adj), target, 0.5, True)
    for inp in ((rows, adj), (dense, adj)):
        sums, norms, _ = PerExampleGradients(model).norms_and_sum(inp, target, 0.5, True)
        assert torch.allclose(norms, ref_norms, rtol=1e-6)
        assert all(torch.allclose(s, r, rtol=1e-6, atol=1e-10) for s, r in zip(sums, ref_sums))


def test_dp_optimizer_steps_agree_on_sparse_and_dense_input():
    x = sparse_data(80, 30, 0.05, 4, dtype=torch.float32, binary=True)
    sf = SparseFeatures.from_dense(x)
    (rows, adj), (dense, _) = _inputs("dense-gcn", x, sf, 16, 5, 5, True)
    target = torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(0))
    params = []
    for inp in ((rows, adj), (dense, adj)):
        torch.manual_seed(0)
        model = DenseGCN(30, 3, hidden=8, layers=2)
        dp = DPOptimizer(model, torch.optim.Adam(model.parameters(), lr=0.01), clip=0.3,
                         generator=torch.Generator().manual_seed(1))
        for _ in range(3):
            dp.step(inp, target, noise_std=0.5, denominator=16)
        params.append([p.detach().clone() for p in model.parameters()])
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*params))


def test_gradient_canaries_see_the_same_examples_in_sparse_rows():
    from audits.whitebox import GradientCanaries

    f = 30
    x = sparse_data(60, f, 0.05, 6, dtype=torch.float32, binary=True)
    x[:, f - 2:] = 0
    x[3, f - 1] = 1.0  # node 3 is canary 1, node 7 canary 0
    x[7, f - 2] = 1.0
    sf = SparseFeatures.from_dense(x)
    idx = batch_index(12, 4, 60, 7, pad=0.0)
    idx[2, 1], idx[5, 0], idx[9, 3] = 3, 7, 3
    rows, dense = sf.rows(idx), dense_of(x, idx)
    adj = torch.eye(4).expand(12, 4, 4)
    target = torch.randint(0, 3, (12,))
    torch.manual_seed(0)
    model = DenseGCN(f, 3, hidden=8, layers=2)
    outs = []
    for inp in ((rows, adj), (dense, adj)):
        hook = GradientCanaries(torch.tensor([f - 2, f - 1]), f)
        opt = DPOptimizer(model, torch.optim.SGD(model.parameters(), lr=0.0), clip=1.0,
                          generator=torch.Generator().manual_seed(0))
        kept, tgt, extra = hook.split(opt, inp, target)
        assert kept[0].shape[0] == 9 and hook.occurrences.tolist() == [1, 2]
        outs.append((opt.grads.norms_and_sum(kept, tgt, 1.0), extra))
    (s_sums, s_norms, _), s_extra = outs[0]
    (d_sums, d_norms, _), d_extra = outs[1]
    assert torch.allclose(s_norms, d_norms, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(s_sums, d_sums))
    assert all(torch.equal(a, b) for a, b in zip(s_extra, d_extra))


@pytest.fixture(scope="module")
def sparse_task():
    """A small task whose features are bag-of-words-like (3% non-zeros), so the methods take the sparse path."""
    from bench.datasets import load_dataset
    from bench.splits import make_task

    task = make_task(load_dataset("csbm:nodes=240,classes=3,features=8,degree=6"), "random-75-10-15", 0)
    g = torch.Generator().manual_seed(0)
    words = (torch.rand(task.num_nodes, 200, generator=g) < 0.03).float()
    words[torch.arange(task.num_nodes), 190 + task.data.y] = 1.0  # a class word
    task.data.x = words
    return task


@pytest.mark.parametrize("name,overrides", [
    ("dpgnn-adam", {}), ("dpgnn", {"layers": 2}), ("dp-mlp", {}), ("drw", {}), ("drw-d", {}), ("rw", {}),
])
def test_methods_give_the_dense_results_on_their_sparse_data_path(monkeypatch, sparse_task, name, overrides):
    import methods.models as M
    from methods import Budget, get_method

    assert SparseFeatures.maybe(sparse_task.data.x) is not None
    cls = get_method(name)
    budget = Budget(math.inf, 0.0) if cls.privacy_unit == "none" else Budget(6.0, 1e-4)
    fits = []
    for sparse in (True, False):
        if not sparse:
            monkeypatch.setattr(M.SparseFeatures, "maybe", classmethod(lambda c, x, max_density=0.0: None))
        fits.append(cls(**{**cls.smoke_config, **overrides}).fit(sparse_task, budget, seed=0))
    a, b = (f.release() for f in fits)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], rtol=1e-4, atol=1e-5), k
    _same_serving_state(*fits, rtol=1e-4, atol=1e-5)
    assert fits[0].ledger.same_events(fits[1].ledger)
    assert fits[0].info.get("steps") == fits[1].info.get("steps")


def test_a_dpgnn_batch_is_sparse_rows_with_the_trees_grams(sparse_task):
    from methods import get_method

    m = get_method("dpgnn-adam")(**get_method("dpgnn-adam").smoke_config)
    prep = m.prepare(sparse_task, torch.Generator().manual_seed(0))
    assert prep.sparse is not None and prep.gram is not None
    idx = torch.arange(10)
    (xb, parent), y = prep.batch(idx, torch.device("cpu"))
    assert isinstance(xb, SparseRows) and xb.gram is not None
    dense = xb.to_dense()
    assert torch.allclose(xb.gram, torch.bmm(dense, dense.transpose(1, 2)), atol=1e-5)
    nodes = prep.trees.nodes[idx, :xb.shape[1]]
    assert torch.equal(dense, dense_of(sparse_task.data.x, nodes))
    assert not math.isnan(float(xb.gram.sum()))
    assert cross_entropy_per_example(torch.zeros(2, 3), torch.tensor([0, 1])).shape == (2,)


@pytest.mark.parametrize("name", ["mlp", "gcn", "sage"])
def test_baselines_give_the_dense_results_on_sparse_input(monkeypatch, sparse_task, name):
    import methods.models as M
    from methods import Budget, get_method

    assert M.sparse_input(sparse_task.data.x).layout == torch.sparse_csr
    cls = get_method(name)
    fits = [cls(**cls.smoke_config).fit(sparse_task, Budget(math.inf, 0.0), seed=0) for _ in range(2)]
    monkeypatch.setattr(M, "sparse_input", lambda x: x)
    fits.append(cls(**cls.smoke_config).fit(sparse_task, Budget(math.inf, 0.0), seed=0))
    a, again, b = (f.release() for f in fits)
    assert a.keys() == again.keys() == b.keys()
    assert all(torch.equal(a[k], again[k]) for k in a)  # the sparse path is reproducible
    for k in a:
        assert torch.allclose(a[k], b[k], rtol=1e-4, atol=1e-5), k


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 25), f=st.integers(1, 30), edges=st.integers(0, 60), density=st.floats(0.0, 0.3),
       seed=st.integers(0, 10**6), root=st.booleans(), bias=st.booleans(), normalize=st.booleans())
def test_sage_first_layer_on_csr_input_is_pyg_sageconv(n, f, edges, density, seed, root, bias, normalize):
    """Projecting before the mean aggregation is the same layer, isolated nodes (empty mean) included."""
    from torch_geometric.nn import SAGEConv

    from methods.models import _SAGEConv, sparse_adj_t

    x = sparse_data(n, f, density, seed)
    g = torch.Generator().manual_seed(seed)
    adj = sparse_adj_t(torch.randint(0, n, (2, edges), generator=g), n, torch.ones(edges, dtype=torch.float64))
    torch.manual_seed(seed)
    ours = _SAGEConv(f, 4, root_weight=root, bias=bias, normalize=normalize).double()
    torch.manual_seed(seed)
    ref = SAGEConv(f, 4, root_weight=root, bias=bias, normalize=normalize).double()
    assert all(torch.equal(a, b) for a, b in zip(ours.parameters(), ref.parameters()))  # same initialisation
    out_s, out_d = ours(x.to_sparse_csr(), adj), ref(x, adj)
    assert torch.allclose(out_s, out_d, atol=1e-12)
    assert torch.equal(ours(x, adj), out_d)  # dense input: PyG's own path
    w = torch.randn(out_s.shape, generator=g, dtype=torch.float64)
    gs = torch.autograd.grad((out_s * w).sum(), list(ours.parameters()), allow_unused=True)
    gd = torch.autograd.grad((out_d * w).sum(), list(ref.parameters()), allow_unused=True)
    for a, b in zip(gs, gd):
        assert (a is None) == (b is None) and (a is None or torch.allclose(a, b, atol=1e-10))


def _same_serving_state(a, b, **tol) -> None:
    """The two fits keep the same serving state (``Fitted.serving_state``: GAP/ProGAP's cached X(0) and, at node
    level, every cached aggregate), up to rounding: what the served model reads besides its release."""
    sa, sb = a.serving_state() or {}, b.serving_state() or {}
    assert sa.keys() == sb.keys()
    for k in sa:
        x, y = sa[k], sb[k]
        x, y = (x.to_dense() if x.layout != torch.strided else x), (y.to_dense() if y.layout != torch.strided else y)
        assert x.shape == y.shape and torch.allclose(x.float(), y.float(), **tol), k


@pytest.mark.parametrize("name", ["gap-edge", "progap-edge", "edgerand", "gap-node", "progap-node"])
def test_gap_family_methods_give_the_dense_results_on_sparse_input(monkeypatch, sparse_task, name):
    """GAP's encoder, every ProGAP stage's X(0) base and EdgeRand's pre-processing layer read CSR features.

    Predictions and the serving state (the cached inputs the served model reads: X(0), and at node level the
    cached aggregates, which node-level fits do not release) are compared, not weights: in GAP/ProGAP a batch norm
    follows each linear layer, so the bias before it gets a zero gradient in exact arithmetic, and Adam turns the
    rounding noise there into steps of about lr that the batch norm then cancels."""
    import methods.gap.edgerand as E
    import methods.gap.gap as G
    import methods.gap.stages as S
    from methods import Budget, get_method

    cls = get_method(name)
    fits = [cls(**cls.smoke_config).fit(sparse_task, Budget(4.0, 1e-4), seed=0)]
    for module in (E, G, S):
        monkeypatch.setattr(module, "sparse_input", lambda x: x)
    fits.append(cls(**cls.smoke_config).fit(sparse_task, Budget(4.0, 1e-4), seed=0))
    assert torch.allclose(fits[0].predict_proba(), fits[1].predict_proba(), atol=1e-3)
    _same_serving_state(*fits, rtol=1e-3, atol=1e-3)
    assert fits[0].ledger.same_events(fits[1].ledger)


def test_sparse_input_is_cached_per_tensor_and_follows_in_place_changes():
    import gc
    import weakref

    from methods.models import sparse_input

    x = sparse_data(50, 60, 0.02, seed=3, dtype=torch.float32)
    s = sparse_input(x)
    assert s.layout == torch.sparse_csr and torch.equal(s.to_dense(), x)
    assert sparse_input(x) is s  # built once
    x[0, 0] = 7.0  # an in-place change invalidates the copy
    assert torch.equal(sparse_input(x).to_dense(), x)
    dense = sparse_data(50, 60, 0.5, seed=3, dtype=torch.float32)
    assert sparse_input(dense) is dense and sparse_input(dense) is dense  # too dense: the GEMM is faster
    grad = x.clone().requires_grad_()
    assert sparse_input(grad) is grad  # inputs whose gradient is asked for stay dense
    gone = [weakref.ref(x), weakref.ref(dense)]
    del x, dense, s
    gc.collect()
    assert all(r() is None for r in gone)  # the cache keeps no feature matrix alive
