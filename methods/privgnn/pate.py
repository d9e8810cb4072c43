"""PATE-M and PATE-G, PrivGNN's private baselines (Olatunji et al. 2023, appendix G; PATE: Papernot
et al. 2017).

The private nodes are split into ``teachers`` disjoint parts; one teacher is trained per part -- an
MLP on the part's features and labels (PATE-M: three linear layers with ReLU) or a 2-layer
GraphSAGE on the subgraph the part induces (PATE-G). Each of the |Q| public query nodes gets every
teacher's vote (PATE-G predicts through the query's public neighbourhood, PATE-M from its features);
Laplace(1/lambda) noise is added to each of the C vote counts and the noisy argmax is the
pseudo-label. The student is PrivGNN's (GraphSAGE on the public graph), and it is what is released.

Privacy: the relation on the input is PrivGNN's (``methods/privgnn/privgnn.py``): the private graph with and
without one node v, with its features, label and edges; the public graph fixed. The ledger is
``presets.privgnn_pate``: 2|Q| Laplace(1/lambda) events of sensitivity 1 (pure 2 lambda per query, PATE's LNMax
bound, composed under RDP). Proof that it covers the relation:

(a) Each private node is assigned to a part independently and uniformly at random (not by cutting a permutation
    into equal chunks, where adding one node would shift the boundaries and change many parts). So the other
    nodes' assignments have the same law with or without v, and v's part is independent of them: couple the two
    runs on the others' assignments (with a fixed seed the implementation draws node j's part as the j-th draw, so
    removing v shifts the later draws; the coupling is of laws, which is what DP needs).
(b) Given the assignment, teacher t's votes are a function of its own part's records only: their features and
    labels, and (PATE-G) the edges with both ends in the part, in their relative order; the queries and the
    public graph are public. Each teacher trains ALONE (one teacher per batch, padded to its own part's size):
    a batch padded to its largest part would make every teacher's floating-point trajectory depend on the other
    parts' sizes, v's included, and after 200 epochs that is a different teacher (``teachers.py``).
(c) So adding v changes at most teacher t = v's part, hence at most one vote per query: one count -1 and another
    +1, or a single count by 1 when v is its part's only node (an empty part abstains, a data-independent rule).
    Per query the histogram moves by at most 1 in two coordinates: two Laplace(1/lambda) events of sensitivity 1.
    The joint law over the coupling in (a) is a mixture of such pairs with the same weights on both sides, which
    keeps every Renyi and hockey-stick bound (joint quasi-convexity, joint convexity).

The paper reports PATE's epsilon with Papernot et al. (2017)'s moments accountant, partly
data-dependent (PATE-M's values fall below the data-independent bound as teachers agree): publishing
a data-dependent epsilon is itself a release that needs its own privacy analysis (smooth
sensitivity, Papernot et al. 2018), which the paper does not do. We report the data-independent
bound only; ``bench account pate --convention paper`` reproduces the paper's data-independent entries.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
from torch import Tensor

from methods.base import ConfigError, FitContext, Method, register
from methods.privacy import PrivacyLedger
from methods.privacy import presets as P
from methods.privgnn.common import (STUDENT_READS, Graphs, NetConfig, cached_rows, choose_queries, noisy_argmax,
                                    serving_input, split_graphs, task_key, train_on_graph)
from methods.privgnn.privgnn import resolve_lambda, validate_net
from methods.privgnn.teachers import BatchedMLP, BatchedSAGE, build_batch, train_teachers
from methods.streams import RunStreams
from methods.training import ModelFitted, progress_bar


@dataclass
class PATEConfig(NetConfig):
    teachers: int = 20  # appendix G: more than 20 parts leave too little data per teacher on Amazon
    queries: int = 1000
    lam: float | None = None  # 1 / Laplace scale on each vote count; None: calibrated to --epsilon
    mlp_layers: int = 3  # PATE-M's teachers
    # no effect: every teacher trains alone (the module docstring, (b)); kept so that recorded configurations rebuild
    teacher_batch: int = 32
    features: Literal["auto", "row", "none"] = "auto"

    def validate(self) -> None:
        validate_net(self)
        if self.teachers < 1 or self.queries < 1 or self.teacher_batch < 1 or self.mlp_layers < 1:
            raise ConfigError("teachers, queries, mlp_layers and teacher_batch must be >= 1")
        if self.lam is not None and not self.lam > 0:
            raise ConfigError(f"lam must be > 0 (got {self.lam})")


def partition(num_nodes: int, parts: int, generator: torch.Generator) -> list[Tensor]:
    """Each node to one of ``parts`` parts, independently and uniformly (see the module docstring)."""
    assign = torch.randint(0, parts, (num_nodes,), generator=generator)
    return [(assign == t).nonzero().view(-1) for t in range(parts)]


class PATEMethod(Method):
    privacy_unit = "node"
    inference_reads = STUDENT_READS
    needs_delta = False  # pure DP (Laplace noisy argmax): a target with delta = 0 is met
    settings = ("private-public",)
    Config = PATEConfig
    noisy_info = frozenset({"pseudo_label_accuracy"})  # the noisy labels scored on public labels
    smoke_config = {"teachers": 4, "queries": 8, "epochs": 8, "hidden": 8}
    teacher_kind: ClassVar[str] = "mlp"

    def _fit(self, ctx: FitContext) -> ModelFitted:
        task, budget, dev, c, streams = ctx.task, ctx.budget, ctx.device, self.config, ctx.streams
        graphs = split_graphs(task, c.features)
        queries = choose_queries(graphs, c.queries, streams)
        q = int(queries.numel())
        lam = resolve_lambda(self.name, c.lam, budget, lambda lam_: P.privgnn_pate(queries=q, lam=lam_))
        t0 = time.perf_counter()
        key = (self.name, task_key(task, streams), c.features, c.teachers, c.mlp_layers, c.hidden, c.dropout, c.lr,
               c.weight_decay, c.epochs, str(dev))
        votes = cached_rows(key, q, lambda a, b: self.vote_counts(graphs, queries[:b], streams, dev,
                                                                  ctx.progress)[a:b])
        teacher_seconds = time.perf_counter() - t0
        labels = noisy_argmax(votes, lam, streams.torch("noise"), domain="counts")
        student, history = train_on_graph(graphs.x_public, graphs.edges_public, queries, labels, task.num_classes, c,
                                          ctx, f"{self.name} student")
        if lam is None:
            ledger = PrivacyLedger.non_private(f"{self.name}: vote counts without noise (epsilon=inf requested)")
        else:
            ledger = P.privgnn_pate(queries=q, lam=lam)
        true = graphs.y_public[queries]
        top = votes.max(1).values
        info = {"lam": lam, "queries": q, "teachers": c.teachers, "teacher_seconds": teacher_seconds,
                # the pseudo-labelled public nodes (task indices): public data, released with the student's
                # training set; PrivGNN's Attack-2 asks whether a public node was one of them
                "query_nodes": graphs.public_ids[queries],
                # evaluation on public labels the method never sees
                "pseudo_label_accuracy": float((labels == true).float().mean()),
                "serving": "public graph; private nodes from their own features only",
                # noise-free vote counts and the private node count: no ledger covers them
                "diagnostic": {"mean_part_size": graphs.num_private / c.teachers,
                               "mean_top_vote_share": float((top / votes.sum(1).clamp(min=1)).mean()),
                               "plurality_accuracy": float((votes.argmax(1) == true).float().mean())}}
        return ModelFitted(student, serving_input(task, c.features, dev), ledger, history, info)

    def vote_counts(self, graphs: Graphs, queries: Tensor, streams: int | RunStreams, device: torch.device,
                    progress: bool = False) -> Tensor:
        """Noise-free vote histograms [|Q|, C] (one vote per teacher with data; empty parts abstain)."""
        c = self.config
        streams = RunStreams.of(streams)
        classes = graphs.num_classes
        parts = partition(graphs.num_private, c.teachers, streams.torch("partition"))
        votes = torch.zeros(int(queries.numel()), classes)
        x_pub, agg_pub, e_pub = (t.to(device) for t in (graphs.x_public, graphs.agg_x_public, graphs.edges_public))
        qd = queries.to(device)
        in_edges = graphs.public_in_edges.to(device) if self.teacher_kind == "sage" else None
        bar = progress_bar(c.teachers, f"{self.name} teachers", progress)
        for teacher in range(c.teachers):  # one per batch: its shapes are those of its own part (docstring, (b))
            idx = [teacher]
            sets = [parts[t] for t in idx]
            gens = [streams.torch("init", "teacher", t) for t in idx]
            edges = graphs.edges_private if self.teacher_kind == "sage" else None
            batch = build_batch(graphs.x_private, graphs.y_private, edges, sets,
                                graphs.private_lookup if edges is not None else None).to(device)
            if self.teacher_kind == "sage":
                model = BatchedSAGE(gens, graphs.x_private.size(1), c.hidden, classes, c.dropout).to(device)
            else:
                model = BatchedMLP(gens, graphs.x_private.size(1), c.hidden, classes, c.dropout,
                                   layers=c.mlp_layers).to(device)
            train_teachers(model, batch, gens, epochs=c.epochs, lr=c.lr, weight_decay=c.weight_decay)
            for j in range(len(idx)):
                if sets[j].numel() == 0:
                    continue
                if self.teacher_kind == "sage":
                    logits = model.predict_graph(j, x_pub, agg_pub, e_pub, qd, in_edges)
                else:
                    logits = model.predict_features(j, x_pub[qd])
                votes[torch.arange(votes.size(0)), logits.argmax(1).cpu()] += 1
            bar.update(len(idx))
        bar.close()
        return votes


@register("pate-m")
class PATEM(PATEMethod):
    description = ("PATE-M (PrivGNN's baseline): MLP teachers on disjoint parts of the private nodes, Laplace-noisy "
                   "vote counts label |Q| public queries, GraphSAGE student on the public graph (node-level)")
    teacher_kind = "mlp"


@register("pate-g")
class PATEG(PATEMethod):
    description = ("PATE-G (PrivGNN's baseline): GraphSAGE teachers on the subgraphs induced by disjoint parts of "
                   "the private nodes, Laplace-noisy vote counts, GraphSAGE student on the public graph (node-level)")
    teacher_kind = "sage"
