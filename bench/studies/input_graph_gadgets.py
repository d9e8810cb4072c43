"""End-to-end audits of the node-level claims on neighbouring INPUT graphs: the real fits, both relations.

    python -m scripts.input_graph_gadgets [--methods gap-node progap-node dpgnn] [--relations input-graph papers]
                                          [--trials 500] [--epsilon 4] [--out FILE]

The mechanism audits (``bench audit --mechanism nap-node-input ...``) drive the methods' degree-bounding code and one
Gaussian release; this script fits the methods themselves (calibration, degree bounding, NAP, DP-SGD / DP-Adam) on
two neighbouring input graphs, ``--trials`` fits per world on independent seeds, and bounds epsilon from the scores
(:func:`audits.bounds.multi_run_audit`: threshold chosen on one half of the trials, Clopper-Pearson on the other).

Gadgets (the neighbour removes every edge of the target node v; v keeps its id, isolated):

* GAP / ProGAP (swap gadget): witnesses W = {w_1..w_D}, S swappers each adjacent to v and to every witness, every
  node the same feature row; the swappers are the training nodes in both worlds. Under the papers' cut-off to D a
  swapper of degree D + 1 drops one of its edges at random: a witness with probability D / (D + 1) in G, never in G'
  (no v). Score: the cached aggregates of W projected on the common feature direction (what a server holding the
  serving state can read; the released weights are a post-processing of the same release). Under ``input-graph``
  the run declares D = the gadget's maximum degree (S), no edge is dropped, and W's aggregates have one law in both
  worlds.
* DP-GNN (Algorithm 1's gadget): training nodes v, w_1..w_S; non-training u_1..u_S; edges w_i - u_i and v - u_i;
  x_u = e_0, x_v = x_w = 0; K = 2, one full-batch step. Under Algorithm 1 w_i's tree holds u_i with probability 1/2 in
  G (u_i has two training in-neighbours) and always in G - v. Score: the released weights minus the initial ones
  (rebuilt from the run's init stream; DP-SGD's guarantee holds for any fixed initialisation), projected on one
  w_i tree's gradient direction. Under ``input-graph`` K = 2 is the gadget's largest number of training
  in-neighbours: every edge is kept and only v's own tree differs.

Each line of ``--out`` (JSON) gives the method, relation, claim, ledger epsilon, trials, the bound and its errors.
This is an experiment, not a test: at 500 trials per world a run of all six cells takes tens of CPU minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import torch

PAPERS = {"gap-node": "cut-off-graph", "progap-node": "cut-off-graph", "dpgnn": "in-edges", "dpgnn-adam": "in-edges"}
DELTA = 1e-5


def _task(x: torch.Tensor, y: torch.Tensor, pairs: list[tuple[int, int]], train: list[int], name: str):
    from torch_geometric.data import Data

    from methods.base import Task

    n = x.size(0)
    e = torch.tensor(pairs, dtype=torch.long).t() if pairs else torch.empty(2, 0, dtype=torch.long)
    ei = torch.cat([e, e.flip(0)], 1)
    code = torch.unique(ei[0] * n + ei[1])
    ei = torch.stack([code // n, code % n])
    data = Data(x=x, y=y, edge_index=ei)
    data.num_nodes = n
    tm = torch.zeros(n, dtype=torch.bool)
    tm[train] = True
    empty = torch.zeros(n, dtype=torch.bool)
    return Task(name, "gadget", "transductive", data, tm, empty, ~tm, num_classes=int(y.max()) + 1)


def swap_gadget(D: int, S: int, features: int, world_in: bool):
    """Nodes: 0 = v, 1..D = witnesses, D+1..D+S = swappers."""
    n = 1 + D + S
    swappers = list(range(D + 1, D + 1 + S))
    pairs = [(u, w) for u in swappers for w in range(1, D + 1)]
    if world_in:
        pairs += [(0, u) for u in swappers]
    x = torch.ones(n, features)
    y = torch.zeros(n, dtype=torch.long)
    y[swappers[::2]] = 1  # two classes among the training nodes
    return _task(x, y, pairs, swappers, "swap-gadget"), list(range(1, D + 1))


def dpgnn_gadget(S: int, features: int, world_in: bool):
    """Nodes: 0 = v, 1..S = w_i (training), S+1..2S = u_i (not training)."""
    n = 1 + 2 * S
    w = list(range(1, S + 1))
    u = list(range(S + 1, 2 * S + 1))
    pairs = list(zip(w, u)) + ([(0, b) for b in u] if world_in else [])
    x = torch.zeros(n, features)
    x[u, 0] = 1.0
    y = torch.zeros(n, dtype=torch.long)  # one label for every w_i: their trees' gradients add up, not cancel
    y[0] = 1
    return _task(x, y, pairs, [0] + w, "dpgnn-gadget"), w


def _gap_score(fitted, witnesses: list[int]) -> float:
    """The norm of the sum of the witnesses' hop-1 cached aggregates: every node has the same feature row, so every
    unit vector a witness aggregates is the same (GAP: the normalised row; ProGAP: its stage-0 embedding, learnt
    anew by each fit), and the norm grows with the number of swappers that reached the witnesses."""
    agg = fitted.inputs[1][witnesses].double()
    return float(agg.sum(0).norm())


def _dpgnn_direction(method, task, seed: int, tree_root: int):
    """The initial parameters (from the run's init stream) and the direction in which a w_i tree's gradient moves
    when it holds u_i: its gradient with u_i minus its gradient without, at the initial parameters, each clipped per
    tensor as DP-SGD clips it (``clip`` / sqrt(#tensors))."""
    from methods.dpgnn import DPGNNModel
    from methods.streams import RunStreams

    c = method.config
    streams = RunStreams.of(seed)
    with streams.global_torch("init", device="cpu"):
        model = DPGNNModel(task.num_features, task.num_classes, c.backbone, c.hidden, c.layers, c.encoder_layers,
                           c.decoder_layers, c.heads, c.activation)
    params = list(model.parameters())
    init = torch.cat([p.detach().reshape(-1) for p in params])
    u = tree_root + (task.num_nodes - 1) // 2  # the tree w_i -> u_i
    per = c.clip / math.sqrt(len(params)) if c.per_layer_clipping else None

    def grad(nodes: list[int], parent: list[int]) -> torch.Tensor:
        x = task.data.x[nodes].unsqueeze(0)
        loss = torch.nn.functional.cross_entropy(model(x, torch.tensor([parent])), task.data.y[[tree_root]])
        gs = torch.autograd.grad(loss, params)
        if per is not None:
            gs = [g * min(1.0, per / max(float(g.norm()), 1e-12)) for g in gs]
        return torch.cat([g.reshape(-1) for g in gs])

    d = grad([tree_root, u], [-1, 0]) - grad([tree_root], [-1])
    return init, d / d.norm().clamp(min=1e-12)


def scores(method_name: str, relation: str, epsilon: float, trials: int, world_in: bool, size: int,
           progress: bool = True) -> tuple[np.ndarray, float]:
    """One score per fit of ``method_name`` under ``relation`` on the gadget's world; and the ledger's epsilon."""
    from methods import Budget, get_method
    from methods.base import fit_method
    from methods.streams import RunStreams

    cls = get_method(method_name)
    budget = Budget(epsilon, DELTA)
    out = np.empty(trials)
    eps = math.nan
    if method_name in ("gap-node", "progap-node"):
        D = 5
        task, witnesses = swap_gadget(D, size, 64, world_in)
        bound = D if relation != "input-graph" else size
        hp = {"relation": relation, "max_degree": bound, "epochs": 1, "batch_size": size}
        hp.update({"hops": 1, "encoder_layers": 0} if method_name == "gap-node" else {"depth": 1})
    else:
        task, ws = dpgnn_gadget(size, 4, world_in)
        hp = {"relation": relation, "max_degree": 2, "epochs": 1, "batch_size": task.num_nodes, "hidden": 8,
              "max_children": 20}
    method = cls(**hp)
    t0 = time.perf_counter()
    for i in range(trials):
        seed = 10_000 * (1 if world_in else 2) + i
        fitted = fit_method(method, task, budget, RunStreams.of(seed))
        eps = fitted.epsilon(DELTA)
        if method_name in ("gap-node", "progap-node"):
            out[i] = _gap_score(fitted, witnesses)
        else:
            init, g = _dpgnn_direction(method, task, seed, ws[0])
            final = torch.cat([p.detach().reshape(-1) for p in fitted.model.model.parameters()])
            out[i] = -float((final - init) @ g)
        if progress and (i + 1) % 50 == 0:
            print(f"  {method_name} {relation} {'in' if world_in else 'out'}: {i + 1}/{trials} "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return out, eps


def audit(method_name: str, relation: str, epsilon: float, trials: int, size: int) -> dict:
    from audits.bounds import multi_run_audit

    s_in, eps = scores(method_name, relation, epsilon, trials, True, size)
    s_out, _ = scores(method_name, relation, epsilon, trials, False, size)
    b = multi_run_audit(s_in, s_out, DELTA, rng=np.random.default_rng(0))
    return {"method": method_name, "relation": relation, "claim": epsilon, "ledger_epsilon": round(eps, 4),
            "delta": DELTA, "trials_per_world": trials, "gadget_size": size, "eps_lb": round(b.epsilon_lb, 4),
            "fp": b.fp, "fn": b.fn, "mean_in": float(s_in.mean()), "mean_out": float(s_out.mean()),
            "std_pooled": float(np.sqrt((s_in.var() + s_out.var()) / 2)),
            "verdict": "VIOLATION" if b.epsilon_lb > eps else "PASS"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.input_graph_gadgets", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--methods", nargs="*", default=["gap-node", "progap-node", "dpgnn"], choices=sorted(PAPERS))
    p.add_argument("--relations", nargs="*", default=["input-graph", "papers"], choices=["input-graph", "papers"])
    p.add_argument("--trials", type=int, default=500, help="fits per world (default: %(default)s)")
    p.add_argument("--epsilon", type=float, default=4.0, help="the claim (default: %(default)s)")
    p.add_argument("--size", type=int, help="S: swappers (GAP/ProGAP, default 200 / 80) or w_i (DP-GNN, default 400)")
    p.add_argument("--out", help="append one JSON line per cell to this file")
    args = p.parse_args(argv)
    if args.trials < 4 or not args.epsilon > 0:
        print("error: --trials must be >= 4 and --epsilon > 0", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    default_size = {"gap-node": 200, "progap-node": 80, "dpgnn": 400, "dpgnn-adam": 400}
    for m in args.methods:
        for r in args.relations:
            rel = PAPERS[m] if r == "papers" else r
            row = audit(m, rel, args.epsilon, args.trials, args.size or default_size[m])
            line = json.dumps(row, sort_keys=True)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
