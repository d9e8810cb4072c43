"""What NAP's kinds share (:mod:`audits.mechanisms.nap_edge`, :mod:`audits.mechanisms.nap_node`,
:mod:`audits.mechanisms.nap_node_input`): one call of the methods' aggregation perturbation, at node level after
the methods' own degree-bounding step for the relation audited, read out as the projection on the pair's mean
shift."""

from __future__ import annotations

import math

from methods.streams import RunStreams


def nap_scores(edge_index, num_nodes: int, groups, sigma: float, streams: RunStreams, max_degree: int | None,
               relation: str | None = None):
    """Run the methods' NAP with 1-d unit features and return, per trial, the sum of its rows ``groups``
    [trials, k] divided by sqrt(k): the projection on the mean shift. At node level (``max_degree`` given) the
    graph is first the one the methods aggregate over, :func:`methods.gap.nap.degree_bounded_graph` under
    ``relation``: the input graph itself within the declared bound (``input-graph``; a larger degree is refused
    as the methods refuse it) or the random cut-off (``cut-off-graph``, its key from the ``subgraphs`` stream)."""
    import torch

    from methods.gap.nap import aggregation_matrix, degree_bounded_graph, nap

    if max_degree is not None:
        if relation is None:
            raise ValueError("a node-level NAP audit names the relation its degree bound is declared under")
        edge_index = degree_bounded_graph(edge_index, num_nodes, max_degree, relation, streams.torch("subgraphs"),
                                          owner="the audited pair")
    x = torch.ones(num_nodes, 1)
    out = nap(aggregation_matrix(edge_index, num_nodes), x, sigma, streams.torch("noise"))[:, 0].double()
    g = torch.as_tensor(groups)
    return (out[g].sum(1) / math.sqrt(g.size(1))).numpy()
