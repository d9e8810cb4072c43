"""Deliberately broken variants of the private methods: the audits must flag each of them.

Test-only: registered through the public interface (``bench --plugin tests/plugins/mutants.py`` or by
importing this module), never shipped. Each mutant subclasses the real method and overrides the smallest
piece that breaks the privacy argument, while its ledger still claims the original guarantee:

* ``mutant-dp-mlp-noise``: DP-MLP whose DP-SGD noise is 0.01 x what the ledger accounts for.
* ``mutant-drw-overlap``: DRW whose subgraphs overlap (every training root takes an ego-star of up to
  ``walk_length`` random neighbours instead of a node-disjoint walk), so one feature row enters many
  examples while the replace-one sensitivity 2C assumes one.
* ``mutant-dpgnn-nobound``: DP-GNN sampling trees without the in-degree bound (K unbounded for the sampler
  only; the ledger still uses N(K, r)) and without the out-list cap.
* ``mutant-gap-edge-nonorm``: GAP (edge) whose NAP skips the row normalisation (and whose encoder-free
  input is not normalised either), so one edge moves an aggregate by a row norm, not by sqrt(2).
* ``mutant-privgnn-laplace``: PrivGNN that draws its Laplace noise with scale lambda instead of 1/lambda
  (rate and scale confused); at the small lambdas that meet epsilon ~ 1 this is almost no noise.

Patches of module globals (``_patched``) last only for the duration of one ``fit``.
"""

from __future__ import annotations

import contextlib
import importlib

import torch

from methods.base import register
from methods.dp_mlp import DPMLP
from methods.dpgnn import DPGNNSGD
from methods.dpsgd import DPOptimizer
from methods.drw import DRW, WalkSet
from methods.gap.gap import GAPEdge
from methods.privgnn.privgnn import PrivGNN
from methods.subgraphs import PaddedSubgraphs, dense_adjacency

NOISE_FACTOR = 0.01

MUTANTS = ("mutant-dp-mlp-noise", "mutant-drw-overlap", "mutant-dpgnn-nobound", "mutant-gap-edge-nonorm",
           "mutant-privgnn-laplace")


@contextlib.contextmanager
def _patched(module: str, name: str, value):
    mod = importlib.import_module(module)
    old = getattr(mod, name)
    setattr(mod, name, value)
    try:
        yield
    finally:
        setattr(mod, name, old)


class _WeakNoiseDPOptimizer(DPOptimizer):
    def step(self, inputs, target, noise_std, denominator):
        return super().step(inputs, target, noise_std * NOISE_FACTOR, denominator)


@register("mutant-dp-mlp-noise")
class MutantDPMLPNoise(DPMLP):
    description = "MUTANT: DP-MLP with 0.01x the accounted noise"

    def fit(self, *args, **kwargs):
        with _patched("methods.dp_mlp", "DPOptimizer", _WeakNoiseDPOptimizer):
            return super().fit(*args, **kwargs)


@register("mutant-drw-overlap")
class MutantDRWOverlap(DRW):
    description = "MUTANT: DRW with overlapping subgraphs (ego-stars) but the disjoint-walk accounting"

    def _walks(self, graph, roots, csr, c, gen, inductive, rule) -> WalkSet:
        n = int(graph.num_nodes)
        roots = torch.arange(n) if roots is None else roots
        pad = 1 + c.restarts * c.walk_length
        indptr, indices = (torch.as_tensor(a).long() for a in csr)
        nodes = torch.full((roots.numel(), pad), -1, dtype=torch.long)
        g, s, d = [], [], []
        for i, r in enumerate(roots.tolist()):
            nb = indices[indptr[r]:indptr[r + 1]]
            nb = nb[torch.randperm(nb.numel(), generator=gen)[: pad - 1]]
            nodes[i, 0] = r
            nodes[i, 1:1 + nb.numel()] = nb
            for j in range(nb.numel()):  # star edges root <-> neighbour
                g += [i, i]
                s += [0, j + 1]
                d += [j + 1, 0]
        t = lambda v: torch.tensor(v, dtype=torch.long)  # noqa: E731
        adj = dense_adjacency(roots.numel(), pad, t(g), t(s), t(d), nodes >= 0)
        m = int(roots.numel())
        return WalkSet(PaddedSubgraphs(nodes, adj), m, m, rule + " [MUTANT: overlapping subgraphs]")


@register("mutant-dpgnn-nobound")
class MutantDPGNNNoBound(DPGNNSGD):
    description = "MUTANT: DP-GNN without the in-degree bound (the ledger still assumes N(K, r))"

    def prepare(self, task, gen):
        c = self.config
        saved = (c.max_degree, c.max_children)
        c.max_degree, c.max_children = 10**9, None
        try:
            return super().prepare(task, gen)
        finally:
            c.max_degree, c.max_children = saved


def _no_normalisation(x):
    return x.detach().float()


@register("mutant-gap-edge-nonorm")
class MutantGAPEdgeNoNorm(GAPEdge):
    description = "MUTANT: GAP edge-level with NAP's row normalisation removed (the ledger still uses sqrt(2))"

    def fit(self, *args, **kwargs):
        with _patched("methods.gap.nap", "normalize_rows", _no_normalisation), \
                _patched("methods.gap.gap", "normalize_rows", _no_normalisation):
            return super().fit(*args, **kwargs)


@register("mutant-privgnn-laplace")
class MutantPrivGNNLaplace(PrivGNN):
    description = "MUTANT: PrivGNN with Laplace scale lambda instead of 1/lambda"

    def fit(self, *args, **kwargs):
        import methods.privgnn.privgnn as mod

        real = mod.noisy_argmax

        def wrong(scores, lam, seed):
            return real(scores, None if lam is None else 1.0 / lam, seed)  # noise lap / (1 / lam) = lap * lam

        with _patched("methods.privgnn.privgnn", "noisy_argmax", wrong):
            return super().fit(*args, **kwargs)
