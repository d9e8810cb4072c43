"""Random-walk DP-SGD (Ayle et al. 2022): DRW, DRW-R, DRW-D, and the non-private RW baseline.

Privacy unit: ``feature``. The relation on the input (the paper's Section 4.1): a user holds a graph (structure A,
features X, labels y) and its split; neighbouring inputs share A, y, the node count and the split and differ in one
node's feature row x_v. Labels are not protected at this level: the paper's relation keeps them fixed, so they are
public like the structure, and so is which nodes are labelled (the split). What makes the ledger cover that relation
(proof; ``tests/test_input_relations.py`` checks (a) and (b) on random graphs):

(a) The subgraphs depend on the structure, the roots and the ``subgraphs`` stream only, never on X or y: the
    sampler reads ``edge_index``, N and the roots (inductively every node of the training graph, transductively
    the labelled nodes of ``train_mask``: the split, not the labels' values), and DRW-D's resamples draw from the
    same stream. Their counts (M, M_min), the batch size m, DRW-D's period and the steps the budget affords are
    functions of these and of the budget. So both neighbours run the same sequence of subgraph sets under one
    coupling of the sampler, and every number the ledger reads is the same on both.
(b) Given the subgraphs: they are node-disjoint, feature preprocessing (``features=row``) is per row, and a batch
    reads only its own subgraphs' rows (``methods/subgraphs.py``). So x_v enters at most one example, the subgraph
    holding v (none when v lies in no batchable subgraph): replacing x_v is replace-one of one example among M,
    whose clipped gradient moves by at most 2C.
(c) Each step draws m of the M examples uniformly without replacement: Wang, Balle & Kasiviswanathan's replace-one
    bound. Inductively the ledger's population is M_min <= M: a uniform m-subset of M examples is a uniform m-subset
    of a uniform M_min-subset U drawn independently of the data; the step's output law is the same on both
    neighbours when v's example is outside U and is the M_min-population mechanism when it is inside, and a mixture
    with equal weights on both sides keeps the M_min bound (the hockey-stick divergence is jointly convex, the Renyi
    divergence jointly quasi-convex). Transductively the population is M.
(d) The steps compose adaptively given the subgraph sequence, whose law is the same on both neighbours by (a).

Training (Algorithm 1): the graph is split into node-disjoint random-walk subgraphs (one walk of length L
per root for DRW; R walks from the same root for DRW-R; DRW re-run every ``resample_every`` steps for
DRW-D). Each subgraph whose root is a training node is one example, predicted at its root by a 1- or
2-layer GCN on the subgraph's induced edges. Each step draws m of the M examples uniformly without
replacement, clips each example's gradient to C, adds N(0, (lambda 2C)^2) to the sum (2C: replacing one
feature row changes one example's clipped gradient by at most 2C) and takes an Adam (or SGD) step.
Training continues until the next step would exceed the target epsilon (the paper's protocol); the
reported epsilon is the ledger's after the last step.

Accounting: Wang, Balle & Kasiviswanathan's bound for sampling without replacement (replace-one) with
sampling probability m / M', recorded as ``FixedSizeGaussian(population=M', sample_size=m)`` per step:

* inductive (``disjoint`` split; the training graph holds only training nodes, all of them roots):
  M' = M_min = ceil(N / (1 + R L)), the paper's bound on the number of subgraphs any run can form;
* transductive (only labelled nodes are roots, only their subgraphs are batched): the paper's M_min counts
  subgraphs that can never be batched and understates the leakage, so M' = M, the number of batchable
  subgraphs of this run. M depends on the structure, the split and the sampler's randomness only, never on
  features ((a) above), so it may be used (the run logs ``accounting_population`` and ``accounting_rule``).

Inference is the paper's: a full-graph GCN forward with the trained weights. It reads every node's
features without noise, so predictions are not private (``inference_reads``; ``methods.inference``); the
released weights are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch

from methods import inference as I
from methods.base import Budget, BudgetError, ConfigError, ContractViolation, FitContext, Method, Task, register
from methods.dpsgd import DPOptimizer, FixedSizeSampler
from methods.models import (DenseGCN, GraphInput, SparseFeatures, SparseRows, _csr_tensor, _gather_rows,
                            dense_gcn_full_graph, prepare_graph)
from methods.privacy import PrivacyLedger, presets
from methods.privacy.events import Event, FixedSizeGaussian
from methods.samplers.random_walks import disjoint_random_walks, min_subgraphs, random_walk_csr
from methods.subgraphs import PaddedSubgraphs, from_disjoint
from methods.training import FeatureQueryFitted, ModelFitted, feature_map, row_normalize


@dataclass
class DRWConfig:
    # L; the paper does not state it. Its batch sizes (~20% of the training nodes on large graphs) only
    # leave m / M_min = m (1 + R L) / N below 1 for short walks, so 3.
    walk_length: int = 3
    restarts: int = 1  # R (DRW-R: > 1)
    resample_every: int = 0  # DRW-D: re-run the sampler every this many steps (0 = never)
    # DRW-D: re-run the sampler this many times, evenly over the steps the budget affords (the period is set from
    # the budget before training; 0 = use resample_every). A fixed period can exceed what a small budget affords,
    # and then DRW-D never resamples and is DRW.
    resamples: int = 0
    layers: Literal[1, 2] = 2
    hidden: int = 256  # the paper's widths: 256 or 512
    batch_size: int = 0  # m; 0 = the paper's rule: half the training nodes on small graphs, 20% on large
                         # (capped at the number of training subgraphs)
    noise_multiplier: float = 4.0  # lambda = sigma / (2C); tuned over {1, 2, 4, 8} (the paper; configs/tuning.yaml)
    clip: float = 1.0  # C
    lr: float = 0.01
    optimizer: Literal["adam", "sgd"] = "adam"
    max_steps: int = 3000  # training stops at the budget or here, whichever comes first
    features: Literal["row", "none"] = "none"
    eval_every: int = 50  # steps between validation evaluations (logging only; no model selection)

    def validate(self) -> None:
        if self.walk_length < 0 or self.restarts < 1 or self.resample_every < 0 or self.hidden < 1:
            raise ConfigError("need walk_length >= 0, restarts >= 1, resample_every >= 0, hidden >= 1")
        if self.resamples < 0 or (self.resamples and self.resample_every):
            raise ConfigError("resamples must be >= 0, and resamples and resample_every cannot both be set "
                              "(resamples sets the period from the budget)")
        if self.batch_size < 0 or self.max_steps < 1 or self.eval_every < 1:
            raise ConfigError("need batch_size >= 0, max_steps >= 1, eval_every >= 1")
        if self.noise_multiplier <= 0 or self.clip <= 0 or self.lr <= 0:
            raise ConfigError("noise_multiplier, clip and lr must be > 0")


#: DRW-D's default batch keeps this share of the first sample's batchable subgraphs in reserve: each resample
#: forms its own count (transductively a few percent apart), and the fixed batch must fit every one of them
RESAMPLE_HEADROOM = 0.85


def default_batch_size(num_train: int, num_examples: int, resampled: bool = False) -> int:
    """Appendix C: "around 20% of total number of training nodes for the large datasets, and 50% for the
    small datasets" (small: Cora, CiteSeer, PubMed, each < 200 training nodes); capped at the subgraphs
    (at ``RESAMPLE_HEADROOM`` of them when the subgraphs are resampled)."""
    frac = 0.5 if num_train < 1000 else 0.2
    cap = int(RESAMPLE_HEADROOM * num_examples) if resampled else num_examples
    return max(1, min(cap, int(round(frac * num_train))))


#: per-subgraph Gram matrices of the feature rows are cached when they hold at most this many entries
GRAM_CACHE_MAX = 1 << 26


@dataclass
class WalkSet:
    padded: PaddedSubgraphs
    num_examples: int  # M: batchable subgraphs
    population: int  # M': the accounted population
    rule: str


class _RandomWalkTraining:
    """What DRW, DRW-R, DRW-D and RW share: the subgraphs, the model and the full-graph release."""

    #: the paper's inference: a full-graph GCN forward over every raw row and edge
    inference_reads = frozenset({I.OWN_FEATURES, I.OTHER_FEATURES, I.EDGES})

    def _setup(self, task: Task, c: DRWConfig):
        self.check_task(task)
        inductive = task.setting != "transductive"
        graph, _ = task.training_graph()
        x = row_normalize(graph.x) if c.features == "row" else graph.x
        if inductive:
            roots = None
            rule = "inductive: M_min = ceil(N / (1 + R L)) (Ayle et al.)"
        else:
            roots = task.train_mask.nonzero().view(-1)
            if roots.numel() == 0:
                raise ConfigError(f"{task.dataset}/{task.split} has no training node")
            rule = "transductive: the number of batchable subgraphs (only labelled roots are batched)"
        csr = random_walk_csr(graph.edge_index, graph.num_nodes)
        return graph, x, roots, rule, csr, inductive

    def _walks(self, graph, roots, csr, c: DRWConfig, gen: torch.Generator, inductive: bool, rule: str,
               sparse: SparseFeatures | None = None) -> WalkSet:
        nodes, ptr = disjoint_random_walks(graph.edge_index, graph.num_nodes, c.walk_length, c.restarts,
                                           roots=roots, generator=gen, csr=csr)
        padded = from_disjoint(nodes, ptr, graph.edge_index, graph.num_nodes, pad_to=1 + c.restarts * c.walk_length)
        if sparse is not None and not c.resample_every and padded.nodes.numel() * padded.nodes.size(1) <= GRAM_CACHE_MAX:
            padded.with_grams(sparse)  # fixed subgraphs: the first layer's per-example Grams once
        m_count = padded.num_subgraphs
        pop = min_subgraphs(graph.num_nodes, c.walk_length, c.restarts) if inductive else m_count
        return WalkSet(padded, m_count, pop, rule)

    @staticmethod
    def _release(model: DenseGCN, task: Task, c: DRWConfig, dev) -> GraphInput:
        x = row_normalize(task.data.x) if c.features == "row" else task.data.x
        return prepare_graph("gcn", x, task.data.edge_index, task.num_nodes).to(dev)

    @staticmethod
    def _sparse_eval(g: GraphInput) -> GraphInput:
        """The evaluation graph with sparse feature rows (validation only; the released graph stays dense)."""
        sf = SparseFeatures.maybe(g.x)
        if sf is None:
            return g
        return GraphInput(SparseRows(sf, torch.arange(g.x.size(0), device=g.x.device)), g.edge_index, g.edge_weight)

    @staticmethod
    def _val_acc(model: DenseGCN, g: GraphInput, task: Task) -> float | None:
        idx = task.val_mask.nonzero().view(-1)
        if idx.numel() == 0:
            return None
        with torch.no_grad():
            pred = dense_gcn_full_graph(model, g)[idx.to(g.x.device)].argmax(1).cpu()
        return float((pred == task.data.y[idx]).float().mean())


def _affordable(ledger: PrivacyLedger, event: Event, budget: Budget, max_k: int) -> int:
    """The most further steps of ``event`` the budget allows (0..max_k), by bisection on the accountant."""
    def ok(k: int) -> bool:
        return ledger.add(event, k).epsilon(budget.delta) <= budget.epsilon

    if max_k <= 0 or not ok(1):
        return 0
    if ok(max_k):
        return max_k
    lo, hi = 1, max_k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


class DRWBase(_RandomWalkTraining, Method):
    privacy_unit = "feature"
    gradient_canaries = True
    Config = DRWConfig
    defaults: ClassVar[dict] = {}
    # the budget (epsilon 4) stops training between two evaluations (~30-60 steps): the history's last checkpoint
    # is not the final step, as in real runs
    smoke_config = {"walk_length": 2, "hidden": 16, "max_steps": 200, "noise_multiplier": 3.0, "batch_size": 20,
                    "eval_every": 5}

    def __init__(self, **overrides) -> None:
        super().__init__(**{**self.defaults, **overrides})

    def _fit(self, ctx: FitContext) -> ModelFitted:
        task, budget, dev, c = ctx.task, ctx.budget, ctx.device, self.config
        walk_gen, batch_gen = ctx.generator("subgraphs"), ctx.generator("sampler")
        graph, x, roots, rule, csr, inductive = self._setup(task, c)
        sparse = SparseFeatures.maybe(x)  # bag-of-words features: the batches are sparse rows
        walks = self._walks(graph, roots, csr, c, walk_gen, inductive, rule, sparse)
        n_train = graph.num_nodes if roots is None else int(roots.numel())
        resampled = c.resample_every > 0 or c.resamples > 0
        m = c.batch_size or default_batch_size(n_train, walks.num_examples, resampled=resampled)
        if m > walks.num_examples:
            raise ConfigError(f"batch_size {m} exceeds the {walks.num_examples} training subgraphs")
        with ctx.init():
            model = DenseGCN(task.num_features, task.num_classes, hidden=c.hidden, layers=c.layers).to(dev)
        opt_cls = torch.optim.Adam if c.optimizer == "adam" else torch.optim.SGD
        dp = DPOptimizer(model, opt_cls(model.parameters(), lr=c.lr), clip=c.clip,
                         generator=ctx.generator("noise", device=dev))
        private = budget.is_private
        noise_std = c.noise_multiplier * 2 * c.clip if private else 0.0
        y = graph.y
        g_eval = self._release(model, task, c, dev)
        g_val = self._sparse_eval(g_eval)
        period = resample_period(c, walks.population, m, budget)
        ledger, steps, history = PrivacyLedger(), 0, []
        segments: list[list[int]] = []  # [population, steps] per sampler run that took steps
        used, runs = walks, 0  # the last sampler run that took steps; how many did
        bar = ctx.bar(c.max_steps, self.name)
        while steps < c.max_steps:
            segment = period or c.max_steps
            if steps and period:
                walks = self._walks(graph, roots, csr, c, walk_gen, inductive, rule, sparse)
            if m > walks.num_examples:  # DRW-D: a resample may form fewer batchable subgraphs
                raise ConfigError(f"a resample formed only {walks.num_examples} training subgraphs (< batch {m}); "
                                  "set a smaller batch_size")
            sampler = FixedSizeSampler(walks.num_examples, m, batch_gen, unit="feature",
                                       accounted_population=walks.population)
            k = min(segment, c.max_steps - steps)
            seg_start, event = ledger, sampler.event(c.noise_multiplier)
            if private:
                k = _affordable(ledger, event, budget, k)
                if k == 0:
                    break
                ledger = ledger.add(event, k)  # the k steps about to run
            if segments and segments[-1][0] == walks.population:
                segments[-1][1] += k
            else:
                segments.append([walks.population, k])
            used, runs = walks, runs + 1
            for j in range(1, k + 1):
                idx = sampler.sample()
                xb, ab = walks.padded.batch(idx, x, dev, sparse)
                yb = y[walks.padded.roots[idx]].to(dev)
                info = dp.step((xb, ab), yb, noise_std=noise_std, denominator=m)
                steps += 1
                bar.update(1)
                if steps % c.eval_every == 0:
                    row = {"epoch": steps, "train_loss": info.loss, "frac_clipped": info.frac_clipped}
                    acc = self._val_acc(model, g_val, task)
                    if acc is not None:
                        row["val_acc"] = acc
                    if private:
                        row["epsilon"] = seg_start.add(event, j).epsilon(budget.delta)
                    history.append(row)
        bar.close()
        if steps == 0:
            raise BudgetError(f"epsilon={budget.epsilon:g} does not allow a single step with noise multiplier "
                              f"{c.noise_multiplier:g}; raise --epsilon or noise_multiplier")
        if not history or history[-1]["epoch"] != steps:
            row = {"epoch": steps}
            acc = self._val_acc(model, g_val, task)
            if acc is not None:
                row["val_acc"] = acc
            history.append(row)
        if private:
            final = drw_ledger(graph.num_nodes, c, m, steps, segments, inductive)
            if not final.same_events(ledger):
                raise ContractViolation(f"{self.name}: the family ledger {final.describe()} differs from the steps "
                                        f"that ran ({ledger.describe()})")
            ledger = final
            history[-1]["epsilon"] = ledger.epsilon(budget.delta)  # the history ends on the run's final value
        else:
            ledger = PrivacyLedger.non_private(f"{self.name} trained without noise (epsilon=inf requested)")
        # the populations of the sampler runs that took steps: a resample after the last step is no one's
        populations = sorted({p for p, _ in segments})
        info = {"steps": steps, "batch_size": m, "num_subgraphs": used.num_examples,
                "accounting_population": populations if len(populations) > 1 else populations[0],
                "accounting_rule": rule, "noise_multiplier": c.noise_multiplier, "resample_period": period,
                "resamples": runs - 1,
                "inference_note": "full-graph GCN forward over all features (the paper's inference)"}
        return FeatureQueryFitted(_FullGraph(model), g_eval, ledger, history, info,
                                  feature_map=feature_map(c.features == "row"))


def resample_period(c: DRWConfig, population: int, batch_size: int, budget: Budget) -> int:
    """DRW-D's period in steps (0: never resample): ``resample_every``, or with ``resamples`` = r the steps the
    budget affords split into r + 1 equal parts (ceil), counted with the first sample's population (later
    resamples form their own counts, so the run's steps may differ by a few; training still stops at the
    budget). The affordable steps depend on the structure, the sampler and the budget only, never on features."""
    if not c.resamples:
        return c.resample_every
    afford = c.max_steps
    if budget.is_private:
        event = FixedSizeGaussian(population=population, sample_size=batch_size,
                                  noise_multiplier=c.noise_multiplier, unit="feature")
        afford = _affordable(PrivacyLedger(), event, budget, c.max_steps)
    return max(1, math.ceil(afford / (c.resamples + 1)))


def drw_ledger(num_nodes: int, c: DRWConfig, batch_size: int, steps: int, segments: list[list[int]],
               inductive: bool) -> PrivacyLedger:
    """The run's ledger from the family function: one population (M_min inductively, the batchable
    subgraphs transductively) or DRW-D's segments."""
    common = dict(num_nodes=num_nodes, walk_length=c.walk_length, batch_size=batch_size,
                  noise_multiplier=c.noise_multiplier, steps=steps, restarts=c.restarts)
    if len(segments) == 1:
        if inductive:
            return presets.drw(**common)
        return presets.drw(**common, batchable_subgraphs=segments[0][0])
    return presets.drw(**common, segments=tuple((p, t) for p, t in segments))


class _FullGraph(torch.nn.Module):
    def __init__(self, model: DenseGCN) -> None:
        super().__init__()
        self.model = model

    def forward(self, g: GraphInput) -> torch.Tensor:
        return dense_gcn_full_graph(self.model, g)

    def forward_nodes(self, g: GraphInput, nodes: torch.Tensor) -> torch.Tensor:
        """``forward(g)[nodes]``, computed on the receptive field of ``nodes`` only: layer l is evaluated on the rows
        layer l + 1 reads (the columns of the served adjacency's rows it needs), with the adjacency's own weights,
        so the result equals the full forward's rows up to float rounding. A feature query that changes one row
        and reads a few nodes then costs their L-hop neighbourhood, not the whole graph."""
        a, lins = g.edge_index, self.model.lins
        if a.layout != torch.sparse_csr or len(lins) == 0:
            return self.forward(g)[nodes]
        need = [torch.as_tensor(nodes, dtype=torch.long, device=g.x.device)]
        blocks = []
        for _ in lins:  # from the output layer down: the block A[rows, cols] and the cols it reads
            rows = need[-1]
            block, cols = _csr_block(a, rows)
            blocks.append(block)
            need.append(cols)
        h = _rows_of(g.x, need[-1])
        for i, (lin, block) in enumerate(zip(lins, reversed(blocks))):
            h = block @ lin(h)
            if i < len(lins) - 1:
                h = self.model.act(h)
        return h


def _csr_block(a: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows ``rows`` of the CSR matrix ``a`` restricted to the columns they use: (the block [len(rows),
    len(cols)] as CSR, cols in increasing order)."""
    crow, col, val, _ = _gather_rows(a.crow_indices(), a.col_indices(), a.values(), rows)
    cols, local = torch.unique(col, return_inverse=True)
    return _csr_tensor(crow, local.to(col.dtype), val, (rows.numel(), cols.numel())), cols


def _rows_of(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``x[rows]`` for a dense or CSR ``x`` (CSR stays CSR)."""
    if x.layout != torch.sparse_csr:
        return x[rows]
    crow, col, val, _ = _gather_rows(x.crow_indices(), x.col_indices(), x.values(), rows)
    return _csr_tensor(crow, col, val, (rows.numel(), x.size(1)))


@register("drw")
class DRW(DRWBase):
    description = "random-walk DP-SGD with disjoint random walks (DRW; Ayle et al. 2022), feature-level"


@register("drw-r")
class DRWR(DRWBase):
    description = "DRW with R restarts per root (DRW-R; Ayle et al. 2022), feature-level"
    defaults = {"restarts": 2}
    smoke_config = {**DRWBase.smoke_config, "restarts": 2}


@register("drw-d")
class DRWD(DRWBase):
    """The paper picks the period i by the sampler's cost; ours takes milliseconds, and a fixed period longer than
    the steps a budget affords (3 on CiteSeer's public split at epsilon 1, ~35 at epsilon 8) never resamples, so
    DRW-D would be DRW. The default instead resamples 4 times within whatever the budget affords."""

    description = "DRW re-sampled during training (DRW-D; Ayle et al. 2022), feature-level"
    defaults = {"resamples": 4}
    degenerates_to = {"drw": "no resample"}
    smoke_config = {**DRWBase.smoke_config, "resamples": 2}


@dataclass
class RWConfig:
    walk_length: int = 3
    restarts: int = 1
    layers: Literal[1, 2] = 2
    hidden: int = 256
    batch_size: int = 0
    lr: float = 0.01
    epochs: int = 100  # passes over the training subgraphs
    patience: int = 20  # epochs without validation improvement (non-private: selection is allowed)
    features: Literal["row", "none"] = "none"


@register("rw")
class RW(_RandomWalkTraining, Method):
    """The paper's non-private baseline: the same GCN trained on random-walk subgraphs, without noise."""

    description = "GCN trained on disjoint random-walk subgraphs, non-private (Ayle et al.'s RW baseline)"
    privacy_unit = "none"
    Config = RWConfig
    smoke_config = {"walk_length": 2, "hidden": 16, "epochs": 3, "batch_size": 20}

    def _fit(self, ctx: FitContext) -> ModelFitted:
        import copy

        import torch.nn.functional as F

        task, dev, c = ctx.task, ctx.device, self.config
        gen = ctx.generator("sampler")
        graph, x, roots, rule, csr, inductive = self._setup(task, c)
        walks = self._walks(graph, roots, csr, c, ctx.generator("subgraphs"), inductive, rule)
        sparse = SparseFeatures.maybe(x)  # bag-of-words features: the batches are sparse rows
        n_train = graph.num_nodes if roots is None else int(roots.numel())
        m = min(c.batch_size or default_batch_size(n_train, walks.num_examples), walks.num_examples)
        with ctx.init():
            model = DenseGCN(task.num_features, task.num_classes, hidden=c.hidden, layers=c.layers).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=c.lr)
        g_eval = self._release(model, task, c, dev)
        g_val = self._sparse_eval(g_eval)
        y = graph.y
        best, best_state, bad, history = -math.inf, copy.deepcopy(model.state_dict()), 0, []
        bar = ctx.bar(c.epochs, self.name)
        for epoch in range(1, c.epochs + 1):
            perm = torch.randperm(walks.num_examples, generator=gen)
            losses = []
            for i in range(0, walks.num_examples, m):
                idx = perm[i:i + m]
                xb, ab = walks.padded.batch(idx, x, dev, sparse)
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(xb, ab), y[walks.padded.roots[idx]].to(dev))
                loss.backward()
                opt.step()
                losses.append(float(loss.detach()))
            row = {"epoch": epoch, "train_loss": sum(losses) / len(losses)}
            acc = self._val_acc(model, g_val, task)
            if acc is not None:
                row["val_acc"] = acc
                if acc > best:
                    best, best_state, bad = acc, copy.deepcopy(model.state_dict()), 0
                else:
                    bad += 1
            else:
                best_state = model.state_dict()
            history.append(row)
            bar.update(1)
            if c.patience and acc is not None and bad >= c.patience:
                break
        bar.close()
        model.load_state_dict(best_state)
        ledger = PrivacyLedger.non_private("rw: non-private training on random-walk subgraphs")
        info = {"num_subgraphs": walks.num_examples, "batch_size": m}
        return FeatureQueryFitted(_FullGraph(model), g_eval, ledger, history, info,
                                  feature_map=feature_map(c.features == "row"))
