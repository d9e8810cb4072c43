"""DP-GNN (Daigavane et al. 2022): node-level DP-SGD / DP-Adam over degree-bounded training trees.

Algorithm (``dpgnn`` = DP-SGD, Algorithm 4; ``dpgnn-adam`` = DP-Adam, Algorithm 5):

1. Form the incoming edge lists from training nodes -- every one of them under ``relation="input-graph"`` (the
   default: K bounds every node's training in-degree in the input graph), in-degree-bounded sampling (Algorithm
   1) under ``relation="in-edges"`` -- and build one depth-r tree per training node (Algorithms 2-3):
   :mod:`methods.samplers.dpgnn`. Each tree is ONE example (its root's label).
2. Each step draws ``m`` trees uniformly WITHOUT replacement (:class:`methods.dpsgd.FixedSizeSampler`; the
   official code draws with replacement while its accountant assumes without -- we do not), clips every
   tree's gradient per layer (each parameter tensor to C/sqrt(#tensors), so the total is <= C), sums, adds
   N(0, sigma^2) with sigma = lambda * 2 C N(K, r), divides by m and steps SGD or Adam.
3. Accounting: Theorem 1 per step, ``HypergeometricGaussian(N_train, N(K,r), m, lambda)``
   (``methods.privacy.presets.dpgnn``), composed over the steps that ran, over the fine order grid.
   By default the noise multiplier is calibrated to the target (epsilon, delta) for the configured number of
   steps (``epochs x ceil(N_train / m)``); with ``noise_multiplier`` set, that lambda is used and the run takes
   the largest number of steps (at most the configured ones) that meets the target -- the paper's "train
   until the budget is spent". The reported epsilon is always the ledger's.

Model (appendix E): an encoder MLP, r message-passing layers (GCN with the inverse-degree normalisation
(D + I)^-1 (A + I); GIN with sum aggregation and a 2-layer MLP; GAT with dot-product attention), a
decoder MLP on the root. In training the messages flow child -> parent along the tree (the root's output
is the r-layer GNN on the sampled graph); at inference the same weights run on the full graph.

Privacy: what the ledger certifies, and what it does not
--------------------------------------------------------
* Neighbouring relation (``relation``). Theorem 1 needs: removing or adding a node changes at most N(K, r)
  training trees (the examples), and every other tree keeps its law. Two relations:

  ``input-graph`` (the default): node-level DP for the graph the user holds, over the input graphs in which no
  node has more than K training in-neighbours (K = ``max_degree``, a declared public bound: a degree bound is
  one; the run refuses a graph above it in :meth:`DPGNN.check_task`, before anything is trained). The input
  graph is the task's training graph: the whole graph with its training mask (transductive), the graph of the
  training nodes, all training (inductive). The neighbour
  of G is G - v: v removed with ALL its edges, in and out (the add/remove relation the ledger's ``add_remove``
  names). The sampler keeps every incoming edge from a training node (identity sampling) and ``max_children``
  keeps, of each node's out-list, the M edges of highest per-edge priority (a hash of the edge's endpoints
  under a key drawn from the run's stream). Claim: T_w(G - v) = T_w(G) for every training root w whose tree
  T_w(G) does not contain v. Proof by induction on depth: the roots agree; a node x at depth d < r of T_w(G)
  is not v, and its out-list in G - v is its out-list in G less v (no edge's presence depends on another
  edge); v is not among x's top-M children in G (v is not in the tree), so x's top-M list, in priority order,
  is unchanged, and so are the subtrees below it by induction; features and labels of nodes other than v are
  untouched. So the changed examples are exactly the trees containing v (v's own tree, if v trains, among
  them). Their number is at most N(K, r) = sum_{i<=r} K^i (Lemma 1): a tree holds v at depth i only if its
  root reaches v by a path of i training in-edges, and with at most K training in-neighbours per node there
  are at most K^i such roots. Adding v is the same argument read backwards (G + v is within the bound, else
  refused). The hypergeometric argument of Theorem 1 (below) then applies unchanged, so the ledger
  (``presets.dpgnn(relation="input-graph")``, which names K public) certifies node-level DP on input graphs.
  ``tests/test_dpgnn_privacy.py`` checks the claim and the clipped-sum sensitivity with hypothesis on random
  directed and undirected graphs and removals.

  ``in-edges`` (the paper's relation, Algorithm 1): the graph is directed and a node owns its features, its
  label and its OWN incoming edge list (Definition 1 with Remark 2): neighbours differ in one node's data,
  every other node's in-list is as it was (edges out of v included). Under it the coupling holds: with the
  per-edge coins of :mod:`methods.samplers.dpgnn` only the trees that contain v change (Lemma 2; checked on
  random graph pairs). For neighbouring INPUT graphs the paper's proof of Lemma 2 fails: removing v also
  shrinks the in-list RE_u of every u it points to, which raises the keep probability K / (2 |RE_u|) of u's
  other in-edges and can flip u's drop rule (sampled in-degree > K), so the trees of u's other
  in-neighbours change without containing v, and there can be arbitrarily many of them. No coupling of the
  coins repairs it, because the LAW of those trees changes: in the gadget (training v, w_1..w_S, non-training
  u_1..u_S, edges w_i - u_i and v - u_i, K = 2) w_i's tree holds u_i with probability 1/2 in G and always in
  G - v, so about S/2 trees change against the ledger's N(2, 1) = 3 (end to end, S = 1,600: Clopper-Pearson
  epsilon lower bound 4.91 against a ledger of 0.9997). The epsilon of ``in-edges`` is DP-GNN's guarantee
  under the paper's relation only.

  Why identity sampling and not a top-K in-list by priority: capping u's in-list at its K in-edges of highest
  priority gives the slot v held to u's (K+1)-th in-neighbour when v goes, and that node's tree changes
  without containing v, at every u that v points to (so by v's out-degree, not by K). Under a declared bound
  with every in-edge kept, no other edge's presence depends on v.
* Add/remove with fixed-size batches. A removed training node also removes one of the N examples. Coupling
  "v's tree in the batch" with "a uniformly random other tree in its place" gives exactly the
  Hypergeometric(N, N(K,r), m) count of differing examples (each differing by <= 2C), so Theorem 1 holds with
  N = the larger dataset's training count; the ledger uses the actual N_train, which also covers adding a
  node (Hypergeometric(N+1, .) is stochastically smaller).
* Training-set size. m = min(B, N), the steps (epochs x ceil(N / m)) and lambda are calibrated to N and released
  (:func:`calibrate`), and add/remove neighbours differ in N, so the claim takes N as public, as DP-SGD's
  accounting conventionally does; the ledger names it (``conventions``, from ``presets.dpgnn``).
* Transductive setting. The trees contain non-training nodes (features only, as leaves: only training nodes
  have children) and Lemma 1 bounds their occurrences too, so training protects every node's features,
  label and edges (``input-graph``; under ``in-edges`` its incoming edges). Validation and test labels are
  never read during training and the final model is released (no epoch is picked on validation labels).
* Inference is not private: predictions use every node's full neighbourhood (the paper's choice), so the
  released posteriors of a node depend on its neighbours' features without noise (``inference_reads``).
* Clipping threshold. The paper sets C to the 75th percentile of gradient norms at initialisation on the
  training data, an unaccounted release. Here C is fixed (``clip``), or adapted privately
  (``adaptive_clipping``: Andrew et al. 2021's geometric update towards ``clip_quantile``). The adaptive
  count release ``#{trees in the batch with norm <= C} + N(0, s^2)`` changes by at most 1 per differing
  tree, i.e. by <= rho when rho of the batch's trees differ -- the same rho as the gradient sum. The pair
  (noisy sum, noisy count) is one Gaussian mechanism on the same batch, with per-tree sensitivities 2C and 1,
  so each step is Theorem 1 with the effective multiplier lambda_eff = (lambda_g^-2 + lambda_c^-2)^-1/2,
  lambda_c = s / N(K, r); the ledger records lambda_eff (the gradient noise lambda_g is raised to keep it at
  the calibrated value).
* Per-layer clipping. The paper's text sets each layer's noise to lambda * 2 C_l N(K,r) and says the cost
  "only depends on lambda"; with L layers that is lambda / sqrt(L) in effect. The official code (and this
  one) uses the TOTAL threshold C = sqrt(sum C_l^2) for the noise, which is sound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
from torch import Tensor, nn

from methods import inference as I
from methods.base import Budget, BudgetError, ConfigError, FitContext, Method, Task, register
from methods.dpsgd import DPOptimizer, FixedSizeSampler, QuantileClipping
from methods.models import GraphInput, SparseFeatures, SparseRows
from methods.privacy import PrivacyLedger, calibrate_noise, calibrate_steps, presets
from methods.privacy.accountant import checkpoint_epochs
from methods.privacy.presets import DPGNN_RELATIONS, IN_EDGES, INPUT_GRAPH
from methods.samplers.dpgnn import TreeSubgraphs, occurrence_bound, require_in_degree_bound, sample_subgraphs
from methods.training import ModelFitted, row_normalize

Backbone = Literal["gcn", "gin", "gat"]


# --------------------------------------------------------------------------------------
# Message passing on an edge list (tree batches and full graphs alike)
# --------------------------------------------------------------------------------------


#: edges per block when a graph is aggregated without autograd (the full-graph passes): the messages of one block
#: (MESSAGE_BLOCK x hidden floats) instead of all E x hidden at once (49 GB at 122M stored edges and hidden 100)
MESSAGE_BLOCK = 1 << 20


def _aggregate(h: Tensor, src: Tensor, dst: Tensor, kind: str) -> Tensor:
    """Self plus incoming messages src -> dst. ``mean``: (D + I)^-1 (A + I) h; ``sum``: (A + I) h.
    Without autograd, more than :data:`MESSAGE_BLOCK` edges are added block by block, in the same order (on the
    CPU the same sums, bit for bit)."""
    if torch.is_grad_enabled() or src.numel() <= MESSAGE_BLOCK:
        out = h.index_add(0, dst, h.index_select(0, src))
    else:
        out = h.clone()
        for a in range(0, src.numel(), MESSAGE_BLOCK):
            out.index_add_(0, dst[a:a + MESSAGE_BLOCK], h.index_select(0, src[a:a + MESSAGE_BLOCK]))
    if kind == "sum":
        return out
    deg = torch.ones(h.size(0), dtype=h.dtype, device=h.device).index_add_(
        0, dst, torch.ones(dst.numel(), dtype=h.dtype, device=h.device))
    return out / deg.unsqueeze(-1)


def _attention(q: Tensor, k: Tensor, v: Tensor, src: Tensor, dst: Tensor, heads: int) -> Tensor:
    """Dot-product attention of every node over itself and its incoming neighbours (per head)."""
    from torch_geometric.utils import softmax

    n, dim = q.shape
    dh = dim // heads
    loops = torch.arange(n, device=q.device)
    s, d = torch.cat([src, loops]), torch.cat([dst, loops])
    qh, kh, vh = q.view(n, heads, dh), k.view(n, heads, dh), v.view(n, heads, dh)
    logits = (qh.index_select(0, d) * kh.index_select(0, s)).sum(-1) / math.sqrt(dh)  # [E, heads]
    alpha = softmax(logits, d, num_nodes=n)
    msg = vh.index_select(0, s) * alpha.unsqueeze(-1)
    return torch.zeros_like(vh).index_add_(0, d, msg).reshape(n, dim)


class DPGNNModel(nn.Module):
    """Encoder MLP -> r message-passing layers -> decoder MLP (appendix E). Parameters only in nn.Linear,
    so DP-SGD takes the book-keeping route. Examples never mix: a tree batch is a disjoint union."""

    def __init__(self, in_dim: int, num_classes: int, backbone: Backbone = "gcn", hidden: int = 100,
                 layers: int = 1, encoder_layers: int = 1, decoder_layers: int = 1, heads: int = 10,
                 activation: str = "tanh") -> None:
        super().__init__()
        if backbone == "gat" and hidden % heads:
            raise ConfigError(f"gat: hidden ({hidden}) must be divisible by heads ({heads})")
        self.backbone, self.layers, self.heads = backbone, layers, heads
        self.act = nn.Tanh() if activation == "tanh" else nn.ReLU()
        dims = [in_dim] + [hidden] * encoder_layers
        self.encoder = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        d = dims[-1]
        self.convs = nn.ModuleList()
        for _ in range(layers):
            if backbone == "gcn":
                self.convs.append(nn.ModuleDict({"lin": nn.Linear(d, hidden)}))
            elif backbone == "gin":
                self.convs.append(nn.ModuleDict({"lin1": nn.Linear(d, hidden), "lin2": nn.Linear(hidden, hidden)}))
            else:
                self.convs.append(nn.ModuleDict({"q": nn.Linear(d, hidden), "k": nn.Linear(d, hidden),
                                                 "v": nn.Linear(d, hidden)}))
            d = hidden
        dec = [d] + [hidden] * (decoder_layers - 1) + [num_classes]
        self.decoder = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dec[:-1], dec[1:]))

    def encode(self, x: Tensor) -> Tensor:
        for lin in self.encoder:
            x = self.act(lin(x))
        return x

    def propagate(self, h: Tensor, src: Tensor, dst: Tensor) -> Tensor:
        """The r message-passing layers on flat node states ``h [n, H]`` with messages src -> dst."""
        for conv in self.convs:
            if self.backbone == "gcn":
                h = self.act(_aggregate(conv["lin"](h), src, dst, "mean"))
            elif self.backbone == "gin":
                h = self.act(conv["lin2"](self.act(conv["lin1"](_aggregate(h, src, dst, "sum")))))
            else:
                h = self.act(_attention(conv["q"](h), conv["k"](h), conv["v"](h), src, dst, self.heads))
        return h

    def decode(self, h: Tensor) -> Tensor:
        for i, lin in enumerate(self.decoder):
            h = lin(h)
            if i < len(self.decoder) - 1:
                h = self.act(h)
        return h

    def forward(self, x: Tensor | SparseRows, parent: Tensor) -> Tensor:
        """A batch of trees: ``x [B, P, F]`` (zero rows for padding; dense or :class:`SparseRows`),
        ``parent [B, P]`` (-1: root or padding) -> root logits [B, C]."""
        b, p = parent.shape
        if isinstance(x, SparseRows) and not len(self.encoder):
            x = x.to_dense()  # the first layer is a message-passing one: it reads dense rows
        h = self.encode(x)
        child = (parent >= 0).view(-1).nonzero().view(-1)
        base = (torch.arange(b, device=parent.device) * p).unsqueeze(1).expand(b, p).reshape(-1)
        dst = base.index_select(0, child) + parent.view(-1).index_select(0, child)
        flat = self.propagate(h.reshape(b * p, -1), child, dst)
        return self.decode(flat.view(b, p, -1)[:, 0])

    def full_graph(self, x: Tensor | SparseRows, edge_index: Tensor) -> Tensor:
        """Every node's logits on a whole graph with full neighbourhoods (messages edge_index[0] -> [1])."""
        if isinstance(x, SparseRows) and not len(self.encoder):
            x = x.to_dense()
        return self.decode(self.propagate(self.encode(x), edge_index[0], edge_index[1]))


class _FullGraph(nn.Module):
    def __init__(self, model: DPGNNModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, g: GraphInput) -> Tensor:
        return self.model.full_graph(g.x, g.edge_index)


# --------------------------------------------------------------------------------------
# The methods
# --------------------------------------------------------------------------------------


@dataclass
class DPGNNConfig:
    backbone: Backbone = "gcn"
    layers: int = 1  # r: message-passing layers (the paper: 1 transductive, 1 or 2 inductive)
    encoder_layers: int = 1
    decoder_layers: int = 1
    hidden: int = 100  # latent size of the official configs (the text says 256)
    heads: int = 10  # GAT heads (the paper's 10)
    activation: Literal["tanh", "relu"] = "tanh"  # the paper's DP runs mostly use tanh
    #: the neighbouring relation the epsilon holds for (module docstring): ``input-graph`` = node-level DP on input
    #: graphs within the declared bound K; ``in-edges`` = the paper's (Algorithm 1, a node owns its in-edge list)
    relation: Literal["input-graph", "in-edges"] = "input-graph"
    #: K. input-graph: a declared public bound on every node's number of training in-neighbours in the input
    #: (training) graph, refused above it; in-edges: Algorithm 1's K (appendix E: "around 10 works reasonably well")
    max_degree: int = 10
    max_children: int | None = 20  # cap on each out-list in a tree (stable, privacy-neutral; see the sampler)
    batch_size: int = 2000  # m subgraphs per step, uniformly without replacement (at most the training trees)
    epochs: int = 30  # steps = epochs x ceil(N_train / m)
    lr: float = 0.003
    clip: float = 1.0  # total per-tree clipping threshold C (initial value with adaptive_clipping)
    per_layer_clipping: bool = True  # each parameter tensor to C / sqrt(#tensors) (the paper clips per layer)
    adaptive_clipping: bool = False  # private quantile tracking (Andrew et al. 2021), counts in the ledger
    clip_quantile: float = 0.75  # the paper's 75th percentile, estimated privately
    clip_lr: float = 0.2
    count_noise_std: float | None = None  # std of the noisy count; default batch_size / 20 (Andrew et al.)
    noise_multiplier: float | None = None  # lambda; None = calibrate lambda for the configured steps
    features: Literal["none", "row"] = "none"

    def validate(self) -> None:
        if self.relation not in DPGNN_RELATIONS:
            raise ConfigError(f"relation must be one of {', '.join(DPGNN_RELATIONS)} (got {self.relation!r})")
        if self.layers < 1 or self.encoder_layers < 0 or self.decoder_layers < 1:
            raise ConfigError("need layers >= 1, encoder_layers >= 0 and decoder_layers >= 1")
        if min(self.hidden, self.heads, self.batch_size, self.epochs) < 1 or self.max_degree < 1:
            raise ConfigError("hidden, heads, batch_size, epochs and max_degree must be >= 1")
        if self.max_children is not None and self.max_children < 1:
            raise ConfigError("max_children must be >= 1 (or none)")
        if self.lr <= 0 or self.clip <= 0 or self.clip_lr <= 0:
            raise ConfigError("lr, clip and clip_lr must be > 0")
        if not 0 < self.clip_quantile < 1:
            raise ConfigError(f"clip_quantile must be in (0, 1) (got {self.clip_quantile})")
        if self.count_noise_std is not None and self.count_noise_std <= 0:
            raise ConfigError("count_noise_std must be > 0")
        if self.noise_multiplier is not None and self.noise_multiplier <= 0:
            raise ConfigError("noise_multiplier must be > 0")
        if self.backbone == "gat" and self.hidden % self.heads:
            raise ConfigError(f"gat: hidden ({self.hidden}) must be divisible by heads ({self.heads})")


@dataclass
class DPGNNSGDConfig(DPGNNConfig):
    lr: float = 1.0  # appendix E, DP-GCN (SGD): 0.1-2.0 on the summed-then-averaged gradient


def effective_noise_multiplier(gradient: float, count: float | None) -> float:
    """lambda of the joint (gradient sum, count) Gaussian release: (lambda_g^-2 + lambda_c^-2)^-1/2."""
    if count is None:
        return gradient
    return (gradient ** -2 + count ** -2) ** -0.5


def gradient_noise_multiplier(effective: float, count: float | None) -> float:
    """The gradient lambda_g that makes the joint release have multiplier ``effective``."""
    if count is None:
        return effective
    if count <= effective:
        raise BudgetError(f"the clipping-count noise (multiplier {count:.3g}) is too small for the target "
                          f"(needs > {effective:.3g}); raise count_noise_std")
    return (effective ** -2 - count ** -2) ** -0.5


#: per-tree Gram matrices of the input rows are precomputed when they hold at most this many entries
GRAM_CACHE_MAX = 1 << 26


@dataclass
class _Prepared:
    """The trees and the data path. With sparse features (at most 5% non-zeros, an encoder layer first) a batch
    is :class:`SparseRows` of a CSR copy of ``x``, with the per-tree Gram matrices of its rows computed once
    here (the trees are fixed for the whole run) for the per-example gradient norms of the first layer."""

    trees: TreeSubgraphs
    x: Tensor  # features of the training graph (rows indexed by tree nodes)
    y: Tensor  # root labels [M]
    num_train: int
    eval_graph: GraphInput
    sampler_stats: dict
    sparse: SparseFeatures | None = None  # CSR copy of x (sparse data path)
    gram: Tensor | None = None  # [M, P, P] Gram matrices of each tree's feature rows (sparse data path)
    eval_sparse: SparseFeatures | None = None  # CSR copy of eval_graph.x (validation)

    def batch(self, idx: Tensor, device: torch.device) -> tuple[tuple[Tensor | SparseRows, Tensor], Tensor]:
        """Trees ``idx`` as DP-SGD inputs ``(x [B, W, F], parent [B, W])`` (W: the widest tree of the batch) and
        their root labels, on ``device``."""
        nodes = self.trees.nodes[idx]
        width = int((nodes >= 0).sum(1).max())
        nodes, parent = nodes[:, :width], self.trees.parent[idx, :width]
        if self.sparse is not None:
            gram = None if self.gram is None else self.gram[idx.to(self.gram.device), :width, :width]
            xb = SparseRows(self.sparse.to(device), nodes.to(device), gram)
        else:
            x = self.x
            xb = (x[nodes.clamp(min=0)] * (nodes >= 0).unsqueeze(-1).to(x.dtype)).to(device)
        return (xb, parent.to(device)), self.y[idx].to(device)

    def eval_input(self, device: torch.device) -> Tensor | SparseRows:
        """The evaluation graph's features for :meth:`DPGNNModel.full_graph` (sparse rows when sparse)."""
        if self.eval_sparse is None:
            return self.eval_graph.x.to(device)
        n = self.eval_sparse.num_rows
        return SparseRows(self.eval_sparse.to(device), torch.arange(n, device=device))

    def to(self, device: torch.device) -> "_Prepared":
        """Move what every step reads (the sparse features and Gram matrices) to ``device`` once."""
        if self.sparse is not None:
            self.sparse = self.sparse.to(device)
        if self.gram is not None:
            self.gram = self.gram.to(device)
        return self


def run_ledger(num_train: int, c: DPGNNConfig, lam: float, steps: int) -> PrivacyLedger:
    """Theorem 1 over ``steps`` steps of m = min(B, N) of N = ``num_train`` trees (``presets.dpgnn``)."""
    return presets.dpgnn(num_train=num_train, batch_size=min(c.batch_size, num_train), max_degree=c.max_degree,
                         layers=c.layers, noise_multiplier=lam, steps=steps, relation=c.relation)


def calibrate(num_train: int, c: DPGNNConfig, budget: Budget) -> tuple[int, int, int, float]:
    """(m, steps per epoch, steps, lambda) for N = ``num_train`` training trees: m = min(B, N), ceil(N / m) steps
    per epoch, and either lambda calibrated for ``epochs`` epochs or, with ``noise_multiplier`` set, the most steps
    that lambda affords. All four are released and are functions of N, which add/remove neighbours do not share
    (epsilon 4, delta 1e-4, m 2000, K 10, r 1, 30 epochs: N = 10000 gives T = 150, lambda = 3.019; N = 10001
    gives T = 180, lambda = 3.298): N is public by convention, and the ledger names it (``conventions``)."""
    m = min(c.batch_size, num_train)  # a graph with fewer training trees than the batch: every tree in each step
    steps_per_epoch = math.ceil(num_train / m)
    max_steps = c.epochs * steps_per_epoch
    if not budget.is_private:
        return m, steps_per_epoch, max_steps, 0.0
    if c.noise_multiplier is None:
        lam = calibrate_noise(lambda z: run_ledger(num_train, c, z, max_steps), budget.epsilon, budget.delta)
        return m, steps_per_epoch, max_steps, lam
    lam = c.noise_multiplier
    steps = calibrate_steps(lambda t: run_ledger(num_train, c, lam, t), budget.epsilon, budget.delta,
                            max_steps=max_steps)
    if steps == 0:
        raise BudgetError(f"noise multiplier {lam:g} cannot take even one step within "
                          f"epsilon={budget.epsilon:g}, delta={budget.delta:g}")
    return m, steps_per_epoch, steps, lam


class DPGNN(Method):
    """DP-GNN with DP-SGD (Algorithm 4). See the module docstring for the privacy argument."""

    description = ("DP-GNN (Daigavane et al. 2022): node-level DP-SGD on r-hop trees, input graphs within a declared "
                   "training in-degree bound")
    privacy_unit = "node"
    relation_labels = {
        INPUT_GRAPH: ("node (declared max degree)",
                      "add/remove a node with all its edges on input graphs where no node has more than K training "
                      "in-neighbours (a declared public bound, refused above it)"),
        IN_EDGES: ("node (in-edges)",
                   "the paper's relation: a node owns its features, label and its own incoming edge list (graphs "
                   "treated as directed); not the undirected node-level relation of gap-node/progap-node"),
    }
    unit_label, unit_note = relation_labels[INPUT_GRAPH]
    gradient_canaries = True
    inference_reads = frozenset({I.OWN_FEATURES, I.OTHER_FEATURES, I.EDGES})  # full neighbourhoods
    Config: ClassVar[type] = DPGNNSGDConfig
    settings = ("transductive", "inductive")
    optimizer: ClassVar[str] = "sgd"
    noisy_info = frozenset({"final_clip"})  # adaptive clipping follows the noisy counts
    #: max_degree 20: at least the training in-degree of the tests' small csbm graphs (at most 19), as input-graph needs
    smoke_config = {"epochs": 2, "batch_size": 32, "hidden": 16, "heads": 2, "max_degree": 20, "max_children": 5}

    def training_input(self, task: Task) -> tuple:
        """(training graph, training mask) the trees are built from: the whole graph with ``train_mask``
        (transductive), the training graph with every node training (inductive)."""
        train_data, _ = task.training_graph()
        if task.setting == "transductive":
            return train_data, task.train_mask
        return train_data, torch.ones(train_data.num_nodes, dtype=torch.bool)

    def check_task(self, task: Task) -> None:
        """Under ``input-graph``, refuse a training graph with a node of more than K training in-neighbours
        (before any run opens): the occurrence bound N(K, r) of the ledger rests on the declared K."""
        super().check_task(task)
        if self.config.relation == INPUT_GRAPH:
            data, train_mask = self.training_input(task)
            require_in_degree_bound(data.edge_index, int(data.num_nodes), train_mask, self.config.max_degree,
                                    owner=self.name or type(self).__name__)

    def prepare(self, task: Task, gen: torch.Generator, grams: bool = True) -> _Prepared:
        """The trees (from ``gen``: the ``subgraphs`` stream) and the data path; ``grams=False`` skips the
        per-tree Gram matrices (only DP-SGD's per-example norms read them)."""
        c = self.config
        train_data, train_mask = self.training_input(task)
        if int(train_mask.sum()) == 0:
            raise ConfigError(f"{task.dataset}/{task.split} has no training node")
        x_train = row_normalize(train_data.x) if c.features == "row" else train_data.x
        lists, trees = sample_subgraphs(train_data.edge_index, int(train_data.num_nodes), train_mask, c.max_degree,
                                        c.layers, generator=gen, max_children=c.max_children, relation=c.relation)
        x_all = row_normalize(task.data.x) if c.features == "row" else task.data.x
        stats = {"dropped_nodes": int(lists.dropped.sum()), "sampled_edges": int(lists.dst.numel()),
                 "mean_tree_size": float(trees.sizes.float().mean()), "max_tree_size": int(trees.sizes.max()),
                 "max_occurrence": int(trees.occurrence().max())}
        x_train, x_all = x_train.float(), x_all.float()
        prep = _Prepared(trees, x_train, train_data.y[trees.roots], int(trees.num_subgraphs),
                         GraphInput(x_all, task.data.edge_index), stats)
        # the data path: sparse rows for bag-of-words features when an encoder layer reads them first
        if c.encoder_layers >= 1:
            prep.sparse = SparseFeatures.maybe(x_train)
            if prep.sparse is not None:
                if grams and trees.num_subgraphs * trees.pad ** 2 <= GRAM_CACHE_MAX:
                    prep.gram = prep.sparse.gram(trees.nodes)
                same = x_all.shape == x_train.shape and x_all.data_ptr() == x_train.data_ptr()
                prep.eval_sparse = prep.sparse if same else SparseFeatures.maybe(x_all)
        return prep

    def _fit(self, ctx: FitContext) -> ModelFitted:
        task, budget, dev, c = ctx.task, ctx.budget, ctx.device, self.config
        prep = self.prepare(task, ctx.generator("subgraphs"))
        n = prep.num_train
        occ = occurrence_bound(c.max_degree, c.layers)
        m, steps_per_epoch, steps, lam = calibrate(n, c, budget)
        count_std = (m / 20.0 if c.count_noise_std is None else c.count_noise_std) if c.adaptive_clipping else None
        lam_count = None if count_std is None else count_std / occ

        def ledger(lam: float, steps: int) -> PrivacyLedger:
            return run_ledger(n, c, lam, steps)

        lam_grad = gradient_noise_multiplier(lam, lam_count) if budget.is_private else 0.0

        with ctx.init():
            model = DPGNNModel(task.num_features, task.num_classes, c.backbone, c.hidden, c.layers,
                               c.encoder_layers, c.decoder_layers, c.heads, c.activation).to(dev)
        opt = (torch.optim.SGD(model.parameters(), lr=c.lr) if self.optimizer == "sgd"
               else torch.optim.Adam(model.parameters(), lr=c.lr))
        quantile = (QuantileClipping(c.clip_quantile, c.clip_lr, count_std) if count_std is not None else None)
        dp = DPOptimizer(model, opt, clip=c.clip, per_layer=c.per_layer_clipping, quantile=quantile,
                         generator=ctx.generator("noise", device=dev))
        sampler = FixedSizeSampler(n, m, ctx.generator("sampler"), unit="node")
        private = lam > 0
        prep.to(dev)
        eval_graph = prep.eval_graph.to(dev)
        eval_x = prep.eval_input(dev)
        val_idx = task.val_mask.nonzero().view(-1)
        history: list[dict[str, float]] = []
        bar = ctx.bar(steps, self.name)
        done = 0
        marks = checkpoint_epochs(math.ceil(steps / steps_per_epoch)) if steps else frozenset()
        while done < steps:
            infos = []
            for _ in range(min(steps_per_epoch, steps - done)):
                idx = sampler.sample()
                inputs, target = prep.batch(idx, dev)
                noise_std = lam_grad * 2.0 * dp.clip * occ
                infos.append(dp.step(inputs, target, noise_std=noise_std, denominator=m))
                done += 1
                bar.update(1)
            row = {"epoch": len(history) + 1, "steps": done, "train_loss": sum(i.loss for i in infos) / len(infos),
                   "frac_clipped": sum(i.frac_clipped for i in infos) / len(infos), "clip": infos[-1].clip}
            if val_idx.numel():
                with torch.no_grad():
                    pred = model.full_graph(eval_x, eval_graph.edge_index)[val_idx.to(dev)].argmax(1).cpu()
                row["val_acc"] = float((pred == task.data.y[val_idx]).float().mean())
            if private and (row["epoch"] in marks or done >= steps):
                row["epsilon"] = ledger(lam, done).epsilon(budget.delta)
            history.append(row)
            bar.set_postfix(loss=f"{row['train_loss']:.3f}", val=f"{row.get('val_acc', float('nan')):.3f}")
        bar.close()
        if not private:
            run = PrivacyLedger.non_private(f"{self.name} trained without noise (epsilon=inf requested)")
        else:
            what = ("removing a node with all its edges changes only the trees holding it, on input graphs where no "
                    f"node has more than K={c.max_degree} training in-neighbours (declared, checked)"
                    if c.relation == INPUT_GRAPH else "Algorithm 1's in-degree sampling")
            run = ledger(lam, done).note(f"node-level DP-GNN (Theorem 1), relation {c.relation}: {what}; N_train={n}, "
                                         f"m={m}, K={c.max_degree}, r={c.layers}, N(K,r)={occ}")
            if lam_count is not None:
                run = run.note(f"adaptive clipping: each step also releases a count with noise std {count_std:g} "
                               f"(multiplier {lam_count:.4g}); the event's lambda {lam:.4g} is the joint "
                               f"multiplier, gradient lambda {lam_grad:.4g}")
        info = {"noise_multiplier": lam, "gradient_noise_multiplier": lam_grad, "steps": steps,
                "steps_per_epoch": steps_per_epoch, "num_train_subgraphs": n, "occurrence_bound": occ,
                "batch_size": m, "final_clip": dp.clip,
                "inference": "full neighbourhoods (the paper's choice): not private",
                # exact counts of the sampled graph: no ledger covers them
                "diagnostic": dict(prep.sampler_stats)}
        return ModelFitted(_FullGraph(model), eval_graph, run, history, info)


@register("dpgnn")
class DPGNNSGD(DPGNN):
    pass


@register("dpgnn-adam")
class DPGNNAdam(DPGNN):
    description = ("DP-GNN (Daigavane et al. 2022) with DP-Adam: node-level, r-hop trees, input graphs within a "
                   "declared training in-degree bound")
    Config = DPGNNConfig
    optimizer = "adam"
