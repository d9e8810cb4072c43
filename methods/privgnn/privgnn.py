"""PrivGNN (Olatunji et al. 2023, Algorithm 1): KNN teachers on Poisson subsamples, Laplace-noisy
pseudo-labels for public query nodes, a student GNN trained on the public graph.

Per query node v (|Q| drawn from public-train; public data only):

1. Poisson-subsample the private nodes with rate gamma (a fresh subsample per query);
2. keep the K subsampled nodes nearest to v by feature distance (Euclidean or cosine);
3. train a fresh 2-layer GraphSAGE teacher (hidden 64, batch norm, dropout 0.5, Adam lr 0.01,
   200 epochs; appendix G.1) on the private subgraph they induce, with their private labels;
4. predict v inductively through its public 2-hop neighbourhood; add independent Laplace(1/lambda)
   noise to every coordinate of the posterior; the argmax is v's pseudo-label.

The student (same architecture) is trained transductively on the public graph with the |Q|
pseudo-labels and released; it serves predictions from public data only.

Privacy: the relation on the input. A user holds a private graph (nodes with features, labels and the edges among
them) and a public graph (features and edges; public-train labels are never read). Neighbouring inputs: the private
graph with and without one node v, with its features, its label and all its edges; the public graph is the same.
(The suite's private-public split builds the two graphs from one dataset and keeps no private-public edge; were
there any, no step would read them: ``split_graphs`` keeps the two induced graphs only.) The ledger,
``presets.privgnn``, holds |Q| events ``PoissonLaplace(gamma, 1/lambda, sensitivity 2)``. Proof that it covers the
relation:

(a) Query i's output is ``argmax(f_i(S_i) + Lap(1/lambda)^C)`` with ``S_i`` its Poisson(gamma) subsample (its own
    ``sampler`` stream: independent of the data and of the other queries). ``f_i(S)`` reads only the records of S --
    their features, labels and the edges with both ends in the teacher's node set -- in their relative order, plus
    the public graph and teacher i's own generator: the KNN ranks S by distance to the query (ties by position in S,
    which removing another node does not reorder; the batched filter of ``knn.py`` reads every private row's norm
    but selects exactly the definition's rows); the teacher trains on the subgraph its <= K nodes induce, padded to
    K nodes so that no shape of its batch depends on another query's data (KNNREM and SINGLEGNN teachers train
    alone; ``methods/privgnn/teachers.py``). So ``f_i(S)`` is the same function on both neighbours whenever v is
    not in S, bit for bit (``tests/test_input_relations.py``).
(b) For ANY two subsamples ``||f_i(S) - f_i(S')||_1 <= 2`` (two probability vectors). In particular for S and
    S + v, whatever the K nearest become: v may replace the K-th nearest (a substitution of one training node, which
    can change the teacher's induced subgraph by v's edges and the dropped node's), or be ranked out. The Laplace
    step is therefore a sensitivity-2 mechanism of the subsample under every relation, substitution included.
(c) Adding v: S restricted to the other nodes has the same law, and v joins it independently with probability
    gamma, so query i's output law is ``(1 - gamma) A_i(S) + gamma A_i(S + v)``: exactly the add/remove
    Poisson-subsampling setting (Zhu & Wang 2019, whose general upper bound the ledger evaluates) with base
    mechanism ``A_i``, whose RDP (b) bounds. (The implementation draws node j's coin as the j-th uniform of the
    stream, so with a fixed seed removing v shifts the later nodes' coins; the statement is about laws, which is
    what DP is about.)
(d) Other queries: v's presence changes their subsamples and nearest sets too, each through its own independent
    subsample, so each is its own event of the ledger; the |Q| releases compose.
|Q|, gamma and lambda come from the configuration and the public graph; delta's default reads the private node
count (the suite's delta rule, stated with the run's conventions).

Deviations from the paper, all on the side of soundness:

* L1 sensitivity 2, not 1 (Section 3.1.4 / appendix B.2 say 1 "since the posterior's L1 norm is
  bounded by 1"; but two probability vectors can differ by 2 in L1: a retrained teacher can move its
  mass from one class to another). The Laplace RDP of a vector shift is at most that of a scalar
  shift of the same L1 norm (the 1-D Laplace RDP is convex in the shift and 0 at 0, hence
  superadditive; tests/test_privgnn_accounting.py checks it), so Laplace(1/lambda) on each coordinate
  is a Laplace mechanism of sensitivity 2 and scale 1/lambda.
* The default accountant is the suite's: Zhu & Wang's general upper bound for Poisson subsampling
  (the paper's Theorem 8), improved RDP conversion. The paper's published numbers come from another
  formula and a delta ten times the stated one: see methods/privgnn/paper_accounting.py and
  ``bench account privgnn --convention paper``.
* SINGLEGNN (one teacher for all queries) does NOT keep PrivGNN's guarantee, contrary to Section 5.5:
  its one subsample is amplified once for all |Q| releases. Its ledger is one Poisson-subsampled
  Laplace release of sensitivity 2|Q| (presets.privgnn(single_teacher=True)). KNNREM keeps it (a
  fresh subsample per query; only the KNN step is dropped).
* Teacher training randomness (initialisation, dropout) is independent of the data and of the other
  teachers; the batched trainer guarantees it (methods/privgnn/teachers.py). KNN teachers are padded to K nodes in
  their batch (a data-independent shape: a batch padded to its largest teacher would let v's presence in one
  query's subsample move every other teacher of the batch through the rounding); KNNREM teachers, whose subsamples
  have no data-independent bound, train one at a time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from methods.base import Budget, BudgetError, ConfigError, FitContext, Method, register
from methods.privacy import PrivacyLedger, calibrate_noise
from methods.privacy import presets as P
from methods.privgnn.common import (STUDENT_READS, Graphs, NetConfig, cached_rows, choose_queries, noisy_argmax,
                                    serving_input, split_graphs, task_key, train_on_graph)
from methods.privgnn.knn import nearest, nearest_many
from methods.privgnn.teachers import BatchedSAGE, build_batch, train_teachers
from methods.streams import RunStreams
from methods.training import ModelFitted, progress_bar

#: L1 sensitivity of one teacher's posterior vector (see the module docstring)
POSTERIOR_SENSITIVITY = 2.0


@dataclass
class PrivGNNConfig(NetConfig):
    queries: int = 1000  # |Q|
    lam: float | None = None  # lambda = 1 / Laplace scale; None: the largest lambda that meets --epsilon
    sampling_rate: float = 0.3  # gamma
    k: int = 750  # K nearest private nodes per query (Table 1: 750 on Amazon)
    distance: Literal["euclidean", "cosine"] = "euclidean"
    ablation: Literal["none", "knnrem", "singlegnn"] = "none"
    teacher_epochs: int | None = None  # None: the same as epochs (200, appendix G.1)
    teacher_batch: int = 32  # teachers trained at once, each padded to K nodes (KNNREM: one at a time)
    features: Literal["auto", "row", "none"] = "auto"
    # "posterior" (Algorithm 1): Laplace noise on the teacher's probability vector. "log_posterior" is what
    # the authors' code does (noise on log-softmax outputs); log-probabilities are unbounded, so no
    # finite sensitivity exists and such a run is NOT private (its ledger says so): for comparison only
    noise_on: Literal["posterior", "log_posterior"] = "posterior"

    def validate(self) -> None:
        validate_net(self)
        if not 0.0 < self.sampling_rate <= 1.0:
            raise ConfigError(f"sampling_rate must be in (0, 1] (got {self.sampling_rate})")
        if self.queries < 1 or self.k < 1 or self.teacher_batch < 1:
            raise ConfigError("queries, k and teacher_batch must be >= 1")
        if self.lam is not None and not (self.lam > 0 and math.isfinite(self.lam)):
            raise ConfigError(f"lam must be a positive number (got {self.lam})")
        if self.teacher_epochs is not None and self.teacher_epochs < 1:
            raise ConfigError("teacher_epochs must be >= 1")


def validate_net(c: NetConfig) -> None:
    if c.hidden < 1 or c.epochs < 1:
        raise ConfigError("hidden and epochs must be >= 1")
    if not 0.0 <= c.dropout < 1.0:
        raise ConfigError(f"dropout must be in [0, 1) (got {c.dropout})")
    if c.lr <= 0 or c.weight_decay < 0:
        raise ConfigError("lr must be > 0 and weight_decay >= 0")


def resolve_lambda(name: str, fixed: float | None, budget: Budget, ledger_for) -> float | None:
    """The lambda to run with: ``fixed`` if given (refused if it overspends a finite target), else the
    largest lambda whose ledger meets the target; None (no noise) when no privacy is asked for."""
    if fixed is not None:
        if budget.is_private:
            eps = ledger_for(fixed).epsilon(budget.delta)
            if eps > budget.epsilon * (1 + 1e-9):
                raise BudgetError(f"{name}: lam={fixed:g} spends epsilon={eps:.4g} > target {budget.epsilon:g} "
                                  f"at delta={budget.delta:g}; lower lam, or leave it unset to calibrate")
        return float(fixed)
    if not budget.is_private:
        return None
    scale = calibrate_noise(lambda s: ledger_for(1.0 / s), budget.epsilon, budget.delta, rtol=1e-4)
    return 1.0 / scale


def poisson_subsample(n: int, rate: float, gen: torch.Generator) -> Tensor:
    """Each of the n private nodes independently with probability ``rate`` (Definition 1)."""
    return (torch.rand(n, generator=gen) < rate).nonzero().view(-1)


def uniform_posterior(count: int, classes: int) -> Tensor:
    return torch.full((count, classes), 1.0 / classes)


@register("privgnn")
class PrivGNN(Method):
    description = ("PrivGNN (Olatunji et al. 2023): KNN GraphSAGE teachers on Poisson subsamples answer |Q| "
                   "public queries with Laplace noise; a GraphSAGE student on the public graph is released "
                   "(node-level; ablation=knnrem|singlegnn)")
    privacy_unit = "node"
    inference_reads = STUDENT_READS
    settings = ("private-public",)
    Config = PrivGNNConfig
    noisy_info = frozenset({"pseudo_label_accuracy"})  # the noisy labels scored on public labels
    smoke_config = {"queries": 8, "k": 20, "epochs": 8, "hidden": 8, "teacher_batch": 4}

    def ledger(self, queries: int, lam: float) -> PrivacyLedger:
        c = self.config
        return P.privgnn(queries=queries, lam=lam, sampling_rate=c.sampling_rate, sensitivity=POSTERIOR_SENSITIVITY,
                         single_teacher=c.ablation == "singlegnn")

    def _fit(self, ctx: FitContext) -> ModelFitted:
        task, budget, dev, c, streams = ctx.task, ctx.budget, ctx.device, self.config, ctx.streams
        progress = ctx.progress
        graphs = split_graphs(task, c.features)
        queries = choose_queries(graphs, c.queries, streams)
        q = int(queries.numel())
        if c.noise_on == "log_posterior":
            if budget.is_private:
                raise BudgetError(f"{self.name}: noise_on=log_posterior has no finite sensitivity, so it cannot meet "
                                  f"epsilon={budget.epsilon:g}; run it with --epsilon inf (for comparison only)")
            lam = c.lam
        else:
            lam = resolve_lambda(self.name, c.lam, budget, lambda lam_: self.ledger(q, lam_))
        t0 = time.perf_counter()
        key = ("privgnn-logp", task_key(task, streams), c.features, c.sampling_rate, c.k, c.distance, c.ablation, c.hidden,
               c.dropout, c.lr, c.weight_decay, self.teacher_epochs, str(dev))
        stats: dict = {}
        if c.ablation == "singlegnn":  # one teacher answers every query: recompute rather than segment
            def rows(a: int, b: int) -> Tensor:
                return self.teacher_log_posteriors(graphs, queries[:b], streams, dev, progress, stats)[a:b]
            posteriors = cached_rows(key, q, rows)
        else:
            posteriors = cached_rows(key, q, lambda a, b: self.teacher_log_posteriors(
                graphs, queries[a:b], streams, dev, progress, stats, offset=a), segment=4 * c.teacher_batch)
        teacher_seconds = time.perf_counter() - t0
        log_posteriors, posteriors = posteriors, posteriors.exp()
        labels = noisy_argmax(log_posteriors if c.noise_on == "log_posterior" else posteriors, lam,
                              streams.torch("noise"), domain=None if c.noise_on == "log_posterior" else "simplex")
        student, history = train_on_graph(graphs.x_public, graphs.edges_public, queries, labels, task.num_classes, c,
                                          ctx, f"{self.name} student")
        if lam is None:
            ledger = PrivacyLedger.non_private(f"{self.name}: pseudo-labels without noise (epsilon=inf requested)")
        elif c.noise_on == "log_posterior":
            ledger = PrivacyLedger.non_private(f"{self.name}: Laplace noise on log-probabilities (unbounded "
                                               "sensitivity), as the authors' code does; no DP guarantee")
        else:
            ledger = self.ledger(q, lam)
        true = graphs.y_public[queries]
        info = {"lam": lam, "queries": q, "sampling_rate": c.sampling_rate, "k": c.k, "ablation": c.ablation,
                "noise_on": c.noise_on, "teacher_seconds": teacher_seconds,
                # teachers whose outputs came from a teacher_cache (an earlier fit of the same seed): 0 when fresh
                **({} if c.ablation == "singlegnn" else {"teachers_reused": q - stats.get("teachers_trained", 0)}),
                # the pseudo-labelled public nodes (task indices): public data, released with the student's
                # training set; PrivGNN's Attack-2 asks whether a public node was one of them
                "query_nodes": graphs.public_ids[queries],
                # evaluation on public labels the method never sees: how good the (noisy, released) labels were
                "pseudo_label_accuracy": float((labels == true).float().mean()),
                "serving": "public graph; private nodes from their own features only",
                # noise-free teacher outputs and subsample sizes: no ledger covers them
                "diagnostic": {**stats,
                               "teacher_label_accuracy": float((posteriors.argmax(1) == true).float().mean())}}
        return ModelFitted(student, serving_input(task, c.features, dev), ledger, history, info)

    @property
    def teacher_epochs(self) -> int:
        c = self.config
        return c.teacher_epochs if c.teacher_epochs is not None else c.epochs

    def select(self, graphs: Graphs, i: int, v: int, streams: int | RunStreams) -> Tensor:
        """Private nodes of query i's teacher: Poisson(gamma) subsample, then its K nearest to v."""
        return self.select_many(graphs, [i], [v], streams)[0]

    def select_many(self, graphs: Graphs, indices: list[int], nodes: list[int], streams: int | RunStreams
                    ) -> list[Tensor]:
        """:meth:`select` for queries ``indices`` (public-local nodes ``nodes``): each query's own subsample
        (its own stream), the Euclidean KNN of all of them batched (:func:`nearest_many`, same selections)."""
        c = self.config
        streams = RunStreams.of(streams)
        samples = [poisson_subsample(graphs.num_private, c.sampling_rate, streams.torch("sampler", i))
                   for i in indices]
        if c.ablation == "knnrem":
            return samples
        if c.distance == "euclidean":
            pos = nearest_many(graphs.x_public[torch.as_tensor(nodes, dtype=torch.long)], graphs.x_private, samples,
                               c.k, sq_norms=graphs.private_sq_norms)
            return [s[p] if s.numel() > c.k else s for s, p in zip(samples, pos)]
        return [s if s.numel() <= c.k else s[nearest(graphs.x_public[v], graphs.x_private[s], c.k, c.distance)]
                for s, v in zip(samples, nodes)]

    def teacher_log_posteriors(self, graphs: Graphs, queries: Tensor, streams: int | RunStreams, device: torch.device,
                           progress: bool = False, stats: dict | None = None, offset: int = 0) -> Tensor:
        """Noise-free teacher log-posteriors (log-softmax) [len(queries), C] for ``queries`` (public-local
        ids), which are queries ``offset, offset + 1, ...`` of the run (query i's subsample and teacher
        are seeded by i). A teacher without training data answers the uniform distribution."""
        c = self.config
        streams = RunStreams.of(streams)
        classes = graphs.num_classes
        x_pub, agg_pub, e_pub = (t.to(device) for t in (graphs.x_public, graphs.agg_x_public, graphs.edges_public))
        in_edges = graphs.public_in_edges.to(device)
        q = int(queries.numel())
        out = torch.empty(q, classes)
        sizes = []
        if c.ablation == "singlegnn":
            sample = poisson_subsample(graphs.num_private, c.sampling_rate, streams.torch("sampler", 0))
            sizes.append(int(sample.numel()))
            gens = [streams.torch("init", "teacher", 0)]
            model = self._train([sample], gens, graphs, classes, device)
            if sample.numel() == 0:
                out[:] = uniform_posterior(q, classes).log()
            else:
                logits = model.predict_graph(0, x_pub, agg_pub, e_pub, queries.to(device), in_edges)
                out[:] = F.log_softmax(logits, -1).cpu()
        else:
            bar = progress_bar(q, f"{self.name} teachers", progress)
            # the batch's padded size must not depend on private data (methods/privgnn/teachers.py): K bounds every
            # KNN teacher; a KNNREM subsample has no data-independent bound, so its teachers train alone
            step, pad = (c.teacher_batch, c.k) if c.ablation == "none" else (1, None)
            for start in range(0, q, step):
                idx = list(range(start, min(q, start + step)))
                node_sets = self.select_many(graphs, [offset + i for i in idx], [int(queries[i]) for i in idx],
                                             streams)
                sizes += [int(s.numel()) for s in node_sets]
                gens = [streams.torch("init", "teacher", offset + i) for i in idx]
                model = self._train(node_sets, gens, graphs, classes, device, pad_to=pad)
                for j, i in enumerate(idx):
                    if node_sets[j].numel() == 0:
                        out[i] = uniform_posterior(1, classes)[0].log()
                    else:
                        v = queries[i:i + 1].to(device)
                        out[i] = F.log_softmax(model.predict_graph(j, x_pub, agg_pub, e_pub, v, in_edges), -1)[0].cpu()
                bar.update(len(idx))
            bar.close()
        if stats is not None:
            n0, s0 = stats.get("teachers_trained", 0), stats.get("mean_teacher_nodes", 0.0)
            stats.update(teachers_trained=n0 + len(sizes),
                         mean_teacher_nodes=(n0 * s0 + sum(sizes)) / max(1, n0 + len(sizes)))
        return out

    def _train(self, node_sets: list[Tensor], gens: list[torch.Generator], graphs: Graphs, classes: int,
               device: torch.device, pad_to: int | None = None) -> BatchedSAGE:
        c = self.config
        batch = build_batch(graphs.x_private, graphs.y_private, graphs.edges_private, node_sets,
                            graphs.private_lookup, pad_to=pad_to).to(device)
        model = BatchedSAGE(gens, graphs.x_private.size(1), c.hidden, classes, c.dropout).to(device)
        train_teachers(model, batch, gens, epochs=self.teacher_epochs, lr=c.lr, weight_decay=c.weight_decay)
        return model
