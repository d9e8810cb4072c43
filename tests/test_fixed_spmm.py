"""GCN's aggregation over a constant CSR adjacency (methods.models.fixed_spmm): the same values and gradients as
dense autograd, the transpose built once per matrix, and a symmetric matrix kept as its own transpose."""

import torch
from hypothesis import given, settings, strategies as st

from methods.models import _TRANSPOSES, csr_transpose, fixed_spmm, sparse_adj_t


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), m=st.integers(0, 120), h=st.integers(1, 5), symmetric=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_fixed_spmm_is_the_dense_product_forward_and_backward(n, m, h, symmetric, seed):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, m), generator=g)
    if symmetric:
        ei = torch.unique(torch.cat([ei, ei.flip(0)], 1), dim=1)
        w = None
    else:
        ei = torch.unique(ei, dim=1)
        w = torch.rand(ei.size(1), generator=g, dtype=torch.float64)
    adj = sparse_adj_t(ei, n, None if w is None else w).to(torch.float64)
    dense = adj.to_dense()
    x = torch.randn(n, h, generator=g, dtype=torch.float64, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    grad = torch.randn(n, h, generator=g, dtype=torch.float64)
    y = fixed_spmm(adj, x)
    y.backward(grad)
    (dense @ x2).backward(grad)
    torch.testing.assert_close(y, dense @ x2.detach())
    torch.testing.assert_close(x.grad, x2.grad)
    t = csr_transpose(adj)
    torch.testing.assert_close(t.to_dense(), dense.t())
    assert (_TRANSPOSES[adj] is None) == torch.equal(dense, dense.t())
    assert csr_transpose(adj) is t  # built once


def test_the_gcn_backbone_aggregates_through_it():
    from methods.models import Backbone, prepare_graph

    torch.manual_seed(0)
    ei = torch.randint(0, 50, (2, 200))
    g = prepare_graph("gcn", torch.randn(50, 8), torch.cat([ei, ei.flip(0)], 1), 50)
    model = Backbone("gcn", 8, 3, hidden=4, dropout=0.0)
    model(g).sum().backward()
    assert g.edge_index in _TRANSPOSES and _TRANSPOSES[g.edge_index] is None  # symmetric: no second copy
