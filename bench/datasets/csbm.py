"""``csbm``: a seeded contextual stochastic block model, nothing to download."""

from __future__ import annotations

from pathlib import Path

from bench.datasets.base import DatasetError, Spec
from bench.datasets.registry import register_dataset
from bench.memory import FLOAT, check_fits, host_memory
from methods.errors import ConfigError


def make_csbm(nodes: int = 1000, classes: int = 4, degree: float = 10.0, homophily: float = 0.8,
              features: int = 32, signal: float = 1.0, seed: int = 0):
    """A contextual stochastic block model (Deshpande et al. 2018 style), fully determined by ``seed``.

    Labels are balanced. ``nodes * degree / 2`` edge draws, a ``homophily`` fraction of them inside a
    class; duplicates and self-loops are then removed, so the mean degree is slightly below
    ``degree`` on small graphs. Features are ``signal * mu[y] + N(0, I)`` with unit-norm random class
    means ``mu``: a higher ``signal`` makes features more informative, a higher ``homophily`` the graph.
    """
    import numpy as np
    import torch
    from torch_geometric.data import Data

    if nodes < 2 or classes < 2 or classes > nodes or features < 1 or degree < 0:
        raise DatasetError("csbm needs nodes >= classes >= 2, features >= 1 and degree >= 0")
    if not 0.0 <= homophily <= 1.0:
        raise DatasetError(f"csbm homophily must be in [0, 1] (got {homophily})")
    # the float32 features and the int64 edge draws (two ends, both directions), before duplicates are removed
    needs = FLOAT * nodes * features + 32 * int(round(nodes * degree / 2))
    try:
        check_fits(f"csbm:nodes={nodes},features={features},degree={degree:g}", needs, host_memory(),
                   "its feature matrix and edge list")
    except ConfigError as e:
        raise DatasetError(str(e)) from None
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(nodes) % classes)
    order = np.argsort(y, kind="stable")
    sizes = np.bincount(y, minlength=classes)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    m = int(round(nodes * degree / 2))
    m_in = int(rng.binomial(m, homophily))
    u_in = rng.integers(nodes, size=m_in)
    c = y[u_in]
    v_in = order[offsets[c] + np.floor(rng.random(m_in) * sizes[c]).astype(np.int64)]
    u_out = rng.integers(nodes, size=m - m_in)
    c = y[u_out]
    k = np.floor(rng.random(m - m_in) * (nodes - sizes[c])).astype(np.int64)
    k = np.where(k >= offsets[c], k + sizes[c], k)
    v_out = order[k]
    edge_index = torch.from_numpy(np.vstack([np.concatenate([u_in, u_out]), np.concatenate([v_in, v_out])]))
    mu = rng.normal(size=(classes, features))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    # float64 in row blocks, stored as float32: the same numbers as one (nodes x features) draw (the generator's
    # stream is sequential), without three float64 copies of the whole matrix at once (~6 GB at 2.4M x 100)
    x = np.empty((nodes, features), dtype=np.float32)
    step = max(1, X_BLOCK // features)
    for a in range(0, nodes, step):
        b = min(nodes, a + step)
        x[a:b] = signal * mu[y[a:b]] + rng.normal(size=(b - a, features))
    return Data(x=torch.from_numpy(x), y=torch.from_numpy(y).long(), edge_index=edge_index.long(), num_nodes=nodes)


#: feature entries drawn per block by :func:`make_csbm`
X_BLOCK = 1 << 22


def _build(work: Path | None, opts: dict) -> dict:
    data = make_csbm(**opts)
    return {"data": data, "num_classes": int(opts["classes"]), "source": f"make_csbm({opts})"}


DEFAULTS = {"nodes": 1000, "classes": 4, "degree": 10.0, "homophily": 0.8, "features": 32, "signal": 1.0, "seed": 0}
SPEC = register_dataset(Spec("csbm", "seeded contextual stochastic block model (options: " + ", ".join(
    f"{k}={v}" for k, v in DEFAULTS.items()) + ")", lambda o: [], _build, dict(DEFAULTS), synthetic=True), order=40)
