"""What NAP's two kinds share (:mod:`audits.mechanisms.nap_edge`, :mod:`audits.mechanisms.nap_node`): one call of
the methods' aggregation perturbation read out as the projection on the pair's mean shift."""

from __future__ import annotations

import math

from methods.streams import RunStreams


def nap_scores(edge_index, num_nodes: int, groups, sigma: float, streams: RunStreams, max_degree: int | None):
    """Run the methods' NAP (after their degree cut-off when ``max_degree``) with 1-d unit features and return,
    per trial, the sum of its rows ``groups`` [trials, k] divided by sqrt(k): the projection on the mean shift."""
    import torch

    from methods.gap.nap import aggregation_matrix, bound_out_degree, nap

    if max_degree is not None:
        edge_index = bound_out_degree(edge_index, num_nodes, max_degree, streams.torch("subgraphs"))
    x = torch.ones(num_nodes, 1)
    out = nap(aggregation_matrix(edge_index, num_nodes), x, sigma, streams.torch("noise"))[:, 0].double()
    g = torch.as_tensor(groups)
    return (out[g].sum(1) / math.sqrt(g.size(1))).numpy()
