"""EdgeRand (Wu et al. 2022, LinkTeller) with asymmetric randomized response, as GAP and ProGAP use it.

The adjacency is released once with asymmetric randomized response (ARR; Imola et al. 2022, the variant
of GAP's code): every unordered pair {u, w} (one bit per undirected edge) goes through randomized response
with p = e^eps1 / (1 + e^eps1) (a bit is reported as itself with probability p), and each reported 1 is
kept with probability q, chosen so that the expected number of output edges equals a Laplace-noised
count of the true edges (budget eps2): q = d / (2 p d - p - d + 1) with d the noisy density. A pair is
thus an edge in the output with probability p q if it is an edge and (1 - p) q if it is not: likelihood
ratio e^eps1 (q is post-processing of the eps2 release). eps1 = 0.9 eps and eps2 = 0.1 eps as in GAP's code.

Scaling: the N(N-1)/2 pairs are never materialised. True edges are kept by independent coins; the number
of non-edges that flip in is drawn as Binomial(#non-edges, (1 - p) q) and that many distinct non-edge pairs
are drawn uniformly (rejection sampling of random pairs) -- the same distribution as one coin per pair.
Graphs with at most ``DENSE_PAIRS`` pairs use one coin per pair directly.

GAP's code randomises both entries (u, w) and (w, u) of the symmetric adjacency independently, which spends
eps1 twice on one undirected edge; we randomise each unordered pair once and symmetrise.

The relation on the input: a user holds a graph (features, labels, the node set and its edges); neighbouring inputs
differ in one undirected edge {u, w} (both directions; a pair stored in one direction only counts as that edge).
Features, labels and the node count are public at edge level. The ledger (``presets.edgerand``): randomized response
at eps1 on every pair plus a Laplace count of sensitivity 1. Proof that it covers the relation: the mechanism reads
the input's edges only through the set of unordered pairs (the keys u * N + w, u < w, deduplicated, self-loops
dropped), and neighbouring inputs give key sets that differ in exactly one key. (1) The count m moves by 1: the
Laplace(1 / eps2) release is eps2-DP. (2) Given the noisy count, q (hence the keep and flip-in probabilities) is
post-processing, and each pair is released independently with probability p q (a key) or (1 - p) q (not a key);
the sparse path draws the same law (independent coins on the keys; a Binomial number of uniformly chosen non-keys).
One pair's likelihood ratio is at most p / (1 - p) = e^eps1 (and (1 - (1 - p) q) / (1 - p q) <= e^eps1 for its
absence), every other pair's law is the same on both sides: eps1-DP. Basic composition: eps1 + eps2 = eps.
(``tests/test_input_relations.py`` checks the count's sensitivity and that the released facts are functions of the
two releases.) The exact counts of the input (true, kept and flipped-in edges) are diagnostics.

A GraphSAGE backbone (pre-processing layer, mean aggregation, jumping knowledge by concatenation,
post-processing layer: the ProGAP paper's baseline) is then trained non-privately on the released graph (labels and features are public at edge level), with the best
validation state; inference reads the released graph and raw features (public at edge level), so it is private too.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor, nn

from methods import inference as I
from methods import mechanisms
from methods.base import ConfigError, FitContext, Method, register
from methods.baselines import FullBatchConfig, row_normalized
from methods.models import sparse_input
from methods.privacy import PrivacyLedger, presets
from methods.samplers import sorted_unique
from methods.training import FeatureQueryFitted, ModelFitted, feature_map, train_full_batch

DENSE_PAIRS = 2_000_000


def _pairs_to_edge_index(keys: np.ndarray, n: int) -> Tensor:
    u, w = keys // n, keys % n
    both = np.stack([np.concatenate([u, w]), np.concatenate([w, u])])
    ei = torch.from_numpy(both).long()
    order = torch.argsort(ei[0] * n + ei[1])
    return ei[:, order]


def _sample_non_edges(count: int, n: int, edge_keys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct pairs u < w, uniformly among the pairs whose key u * n + w is not in ``edge_keys``
    (sorted). Collects distinct valid pairs from i.i.d. uniform draws, then keeps a uniformly random subset
    of size ``count``: by symmetry the result is a uniformly random ``count``-subset of the non-edges."""
    got = np.empty(0, dtype=np.int64)
    while got.size < count:
        need = count - got.size
        a = rng.integers(0, n, size=int(need * 1.1) + 64)
        b = rng.integers(0, n, size=a.size)
        ok = a != b
        lo, hi = np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])
        keys = lo * n + hi
        if edge_keys.size:
            pos = np.clip(np.searchsorted(edge_keys, keys), 0, edge_keys.size - 1)
            keys = keys[edge_keys[pos] != keys]
        got = sorted_unique(np.concatenate([got, keys]))
    if got.size > count:
        got = rng.choice(got, size=count, replace=False)
    return np.sort(got)


def rr_probabilities(eps_link: float, density: float) -> tuple[float, float, float, float]:
    """(p, q, keep_edge, flip_in) of asymmetric RR at ``eps_link`` for a (noisy) density d: a pair is reported as
    itself with p = e^eps / (1 + e^eps), a reported 1 kept with q = d / (2 p d - p - d + 1) (the expected output
    density is d); an edge is then released with probability p q, a non-edge with (1 - p) q: ratio e^eps."""
    p = 1.0 / (1.0 + math.exp(-eps_link))
    q = min(1.0, density / (2 * p * density - p - density + 1))
    return p, q, p * q, (1 - p) * q


def asymmetric_rr(edge_index: Tensor, num_nodes: int, eps_link: float, eps_density: float,
                  rng: np.random.Generator) -> tuple[Tensor, dict]:
    """Release an undirected graph with ARR (see the module docstring). Returns (edge_index, facts)."""
    n = int(num_nodes)
    ei = edge_index.cpu().long()
    # the unordered pairs {u, w} with an edge in either direction (self-loops dropped): one key per undirected edge
    lo, hi = torch.minimum(ei[0], ei[1]), torch.maximum(ei[0], ei[1])
    pair = lo < hi
    edge_keys = sorted_unique((lo[pair] * n + hi[pair]).numpy().astype(np.int64))
    m = int(edge_keys.size)
    pairs = n * (n - 1) // 2
    count_noise = rng.laplace(0.0, 1.0 / eps_density)
    noisy_m = m + count_noise
    d = min(max(noisy_m / pairs, 0.0), 1.0) if pairs else 0.0
    p, q, keep_edge, flip_in = rr_probabilities(eps_link, d)
    if mechanisms.active():  # what was released, for a verifier to hold to the ledger
        mechanisms.release("laplace", source="edgerand-count", declared={"scale": 1.0 / eps_density},
                           noise=torch.tensor([count_noise]))
        mechanisms.release("randomized_response", source="edgerand", declared={"keep": keep_edge, "flip_in": flip_in},
                           epsilon_link=eps_link)
    kept = edge_keys[rng.random(m) < keep_edge]
    if pairs <= DENSE_PAIRS:
        iu = np.triu_indices(n, k=1)
        all_keys = iu[0].astype(np.int64) * n + iu[1]
        is_edge = np.isin(all_keys, edge_keys, assume_unique=True)
        new = all_keys[~is_edge][rng.random(pairs - m) < flip_in]
    else:
        new = _sample_non_edges(int(rng.binomial(pairs - m, flip_in)), n, edge_keys, rng)
    keys = np.concatenate([kept, new])
    # public: functions of epsilon and of the DP releases; diagnostic: exact counts of the true graph
    facts = {"rr_keep_prob": p, "rr_subsample_q": q, "noisy_edge_count": float(noisy_m),
             "released_edges": int(kept.size + new.size),
             "diagnostic": {"edges_true": m, "edges_kept": int(kept.size), "edges_flipped_in": int(new.size)}}
    return _pairs_to_edge_index(keys, n), facts


class SAGEJK(nn.Module):
    """GraphSAGE as GAP/ProGAP's baseline: a pre-processing linear layer, ``layers`` mean-aggregation SAGE
    layers, jumping knowledge over all layer outputs and a post-processing linear layer.

    Aggregation runs in the hidden space (the pre-processing layer comes first and a SAGE layer's
    neighbour transform is applied before the mean, which commutes with it), so a layer costs
    O(#edges x hidden), not O(#edges x #features) as PyG's SAGEConv on raw features: about 10x faster on
    facebook-wisconsin87 (599 features). ``forward`` takes ``prepare_graph("sage", ...)`` output.
    """

    arch = "sage"

    def __init__(self, in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float, jk: str) -> None:
        super().__init__()
        self.pre = nn.Linear(in_dim, hidden)
        self.self_lins = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.neigh_lins = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.jk = jk
        self.post = nn.Linear(hidden * (layers + 1) if jk == "cat" else hidden, out_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, g) -> Tensor:
        adj = g.edge_index
        deg = (adj @ torch.ones(g.x.size(0), 1, device=g.x.device, dtype=g.x.dtype)).clamp(min=1.0)
        h = self.dropout(torch.relu(self.pre(sparse_input(g.x))))
        hs = [h]
        for lin_s, lin_n in zip(self.self_lins, self.neigh_lins):
            h = self.dropout(torch.relu(lin_s(h) + (adj @ lin_n(h)) / deg))
            hs.append(h)
        if self.jk == "cat":
            h = torch.cat(hs, dim=-1)
        elif self.jk == "max":
            h = torch.stack(hs).max(0).values
        return self.post(h)


@dataclass
class EdgeRandConfig(FullBatchConfig):
    hidden: int = 16
    layers: int = 2               # message-passing layers (paper: tuned in 1..5)
    jk: Literal["none", "cat", "max"] = "cat"
    dropout: float = 0.0
    epochs: int = 100
    patience: int = 0             # keep the best validation state over all epochs
    density_share: float = 0.1    # fraction of epsilon spent on the edge count (GAP's code: 0.1)

    def validate(self) -> None:
        super().validate()
        if not 0.0 < self.density_share < 1.0:
            raise ConfigError(f"density_share must be in (0, 1) (got {self.density_share})")


@register("edgerand")
class EdgeRand(Method):
    description = "EdgeRand: asymmetric randomized response on the adjacency, then GraphSAGE (edge level)"
    privacy_unit = "edge"
    unit_label = "edge (undirected)"
    unit_note = "one undirected edge: each unordered pair is randomised once"
    needs_delta = False  # pure DP: randomized response and a Laplace count
    # the released graph's facts and what training on it selected: post-processing of the two releases
    noisy_info = frozenset({"rr_subsample_q", "noisy_edge_count", "released_edges", "best_epoch", "epochs_run"})
    # a GraphSAGE forward over the randomised graph: every raw row (public at edge level), no raw edge
    inference_reads = frozenset({I.OWN_FEATURES, I.OTHER_FEATURES, I.RELEASE})
    Config = EdgeRandConfig
    settings = ("transductive",)
    smoke_config = {"epochs": 10, "hidden": 16}

    def _fit(self, ctx: FitContext) -> ModelFitted:
        task, budget, dev, c = ctx.task, ctx.budget, ctx.device, self.config
        info: dict = {}
        if budget.is_private:
            eps_d = budget.epsilon * c.density_share
            eps_l = budget.epsilon - eps_d
            released, facts = asymmetric_rr(task.data.edge_index, task.num_nodes, eps_l, eps_d, ctx.rng("noise", "rr"))
            ledger = presets.edgerand(epsilon_link=eps_l, epsilon_density=eps_d)
            info.update(facts, epsilon_link=eps_l, epsilon_density=eps_d)
        else:
            released = task.data.edge_index
            ledger = PrivacyLedger.non_private("edgerand without randomisation (epsilon=inf requested)")
        data = task.data.__class__(x=task.data.x, y=task.data.y, edge_index=released)
        data.num_nodes = task.num_nodes
        released_task = dataclasses.replace(task, data=data)
        with ctx.init():
            model = SAGEJK(task.num_features, c.hidden, task.num_classes, c.layers, c.dropout, c.jk)
        normalize = row_normalized(c.features, task)
        result, g_eval = train_full_batch(model, released_task, lr=c.lr, weight_decay=c.weight_decay, epochs=c.epochs,
                                          patience=c.patience, device=dev, normalize_features=normalize,
                                          progress=ctx.progress, desc=self.name)
        info.update(best_epoch=result.best_epoch, epochs_run=len(result.history))
        # the served graph is the randomised release: a model over it answers queries on any features (LinkTeller's)
        # as post-processing, with no further mechanism
        return FeatureQueryFitted(result.model, g_eval, ledger, result.history, info, graph_released=budget.is_private,
                                  feature_map=feature_map(normalize))
