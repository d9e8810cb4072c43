"""PrivGNN's K nearest private nodes of a query within its Poisson subsample (Algorithm 1, step 2).

:func:`nearest` is the definition: the squared Euclidean distance of every subsampled row computed elementwise in
float32, ``((c - q) ** 2).sum(1)``, and a stable sort, so ties go to the lower position in the subsample.

:func:`nearest_many` gives the same selections, bit for bit, for many queries at a cost that grows with the graph
like one matrix product per query block. Gathering every subsampled row (``gamma * n`` rows of ``F`` floats per query)
and sorting them is what made the selection grow with ``|Q| * n`` memory traffic; instead, per block of queries:

1. one GEMM ``||c||^2 - 2 C q + ||q||^2`` gives an estimate ``d~`` of every private node's distance, with a rigorous
   rounding bound ``e_c`` (the dot-product bound ``|fl(a.b) - a.b| <= gamma_F |a|.|b|``, Higham, Accuracy and
   Stability of Numerical Algorithms, 2002, eq. 3.5, which holds for any summation order or FMA);
2. per query, the K smallest estimates in its subsample (``torch.topk``) bound the K-th exact distance from above:
   any row of the definition's top K has ``d~ - e <= M``, with ``M`` the largest ``(d~ + e)`` of those K widened by
   the relative error of the elementwise float32 sum (``gamma_{F+2}``, a sum of non-negative terms);
3. only the rows that pass that test (typically K plus a few) are measured with the definition's elementwise formula
   and ordered by a stable sort: a superset of the definition's top K, ordered by the same (distance, position)
   keys, so the first K are the same rows in the same order.

Non-finite features fall back to :func:`nearest` per query.
"""

from __future__ import annotations

import torch
from torch import Tensor

#: float32's unit roundoff
_U32 = 2.0 ** -24
#: distances the filter's estimates are computed for at once (query block x private nodes), ~128 MB of float32
_BLOCK_ENTRIES = 1 << 25


def nearest(query: Tensor, candidates: Tensor, k: int, metric: str) -> Tensor:
    """Positions of the k rows of ``candidates`` nearest to ``query`` (ties: lower position first)."""
    if candidates.size(0) <= k:
        return torch.arange(candidates.size(0))
    if metric == "cosine":
        qn = query / query.norm().clamp(min=1e-12)
        cn = candidates / candidates.norm(dim=1, keepdim=True).clamp(min=1e-12)
        d = 1.0 - cn @ qn
    else:
        d = ((candidates - query) ** 2).sum(1)
    return torch.sort(d, stable=True).indices[:k]


def _gamma(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u) for float32."""
    return n * _U32 / (1.0 - n * _U32)


def squared_norms(x: Tensor) -> Tensor:
    """Each row's squared norm, as :func:`nearest_many` estimates distances with (compute once per candidate set)."""
    return (x * x).sum(1)


def nearest_many(queries: Tensor, candidates: Tensor, samples: list[Tensor], k: int,
                 block_entries: int = _BLOCK_ENTRIES, sq_norms: Tensor | None = None) -> list[Tensor]:
    """:func:`nearest` (Euclidean) for many queries at once: query j's k nearest rows of ``candidates[samples[j]]``,
    as positions into ``samples[j]`` (the same tensors :func:`nearest` returns; see the module docstring).
    ``sq_norms``: ``squared_norms(candidates)``, when the caller keeps it across calls."""
    out: list[Tensor] = [torch.arange(int(s.numel())) for s in samples]
    need = [j for j, s in enumerate(samples) if int(s.numel()) > k]
    if not need:
        return out
    x, q_all = candidates, queries
    cn2 = squared_norms(x) if sq_norms is None else sq_norms
    qn2_all = squared_norms(q_all)
    # a finite sum of squares has finite terms: this also refuses overflowing ones
    if x.dtype != torch.float32 or q_all.dtype != torch.float32 or not bool(torch.isfinite(cn2).all()) \
            or not bool(torch.isfinite(qn2_all[need]).all()):
        for j in need:
            out[j] = nearest(queries[j], candidates[samples[j]], k, "euclidean")
        return out
    f = x.size(1)
    # rounding bounds: estimate |d~ - d| <= g_est (|c|^2 + |q|^2); definition |d_ref - d| <= g_ref d; both doubled
    g_est = 2.0 * (2.0 * _gamma(f) + 4.0 * _U32 * (1.0 + _gamma(f)))
    g_ref = 2.0 * _gamma(f + 2)
    tiny = 1e-30  # absorbs underflow in squares of differences below float32's normal range
    block = max(1, block_entries // max(1, x.size(0)))
    for a in range(0, len(need), block):
        idx = need[a:a + block]
        q, qn2 = q_all[idx], qn2_all[idx]  # [B, F], [B]
        est = torch.addmm(cn2.unsqueeze(0) + qn2.unsqueeze(1), q, x.t(), alpha=-2.0)  # [B, N]
        for b, j in enumerate(idx):
            s = samples[j]
            d = est[b, s]
            e = g_est * (cn2[s] + qn2[b])
            low, pos = torch.topk(d, k, largest=False, sorted=False)
            m = float(((low + e[pos]) * (1.0 + g_ref)).max())
            keep = ((d - e) <= m / (1.0 - g_ref) + tiny).nonzero().view(-1)  # ascending positions
            exact = ((candidates[s[keep]] - queries[j]) ** 2).sum(1)
            out[j] = keep[torch.sort(exact, stable=True).indices[:k]]
    return out
