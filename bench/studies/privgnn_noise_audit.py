"""Audit of PrivGNN's pseudo-labels on neighbouring private graphs: the authors' code (Laplace noise on the teachers'
log-probabilities) against Algorithm 1 (noise on the probabilities), each against its claim.

    python -m scripts.privgnn_noise_audit [--trials 2000] [--lam 0.2] [--teacher-epochs 200] [--out FILE]

The release audited is a query's pseudo-label, through the method's own code: its Poisson(gamma) subsample and
K-nearest selection (``PrivGNN.select_many``), the teacher trained on what they select (``teacher_log_posteriors``),
and the noisy argmax with the run's noise stream (``noisy_argmax``). The student is a function of the pseudo-labels
and the public graph only (post-processing), so a bound on the pseudo-label bounds the released student too.

Gadget (K = 1, one query node q, two classes): the private graph G holds the target v, with q's feature row and
label 0, and M other nodes, label 1, farther from q; G' = G without v (the ledger's add/remove relation). With
probability gamma v is subsampled and is q's nearest: the teacher trains on v alone and answers class 0 with near
certainty; otherwise it trains on the nearest subsampled other node and answers class 1. The two teachers'
log-probabilities differ by far more than any constant: there is no sensitivity to calibrate Laplace noise to.
Each trial is one query of its own (its own subsample, teacher initialisation and noise: independent trials);
score 1 when the pseudo-label is 0. ``audits.bounds.multi_run_audit`` bounds epsilon from the two worlds' scores
(threshold on one half of the trials, Clopper-Pearson at 95% on the other).

Claims for one query at the gadget's gamma and lambda: the paper's (its accountant: sensitivity 1, Zhu & Wang's
exact Poisson bound, ``methods.privgnn.paper_accounting``), which its published epsilon composes over |Q| queries
and which it reports for the code that adds the noise to log-probabilities; and the suite's sound ledger for
Algorithm 1 (sensitivity 2), which only the probability-noise variant may claim. A bound above a claim refutes it:
the variant is not (epsilon, delta)-DP at that epsilon for one query, hence not at the paper's for |Q| of them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

DELTA = 1e-5


def gadget(with_target: bool, generator: torch.Generator, others: int = 60, features: int = 4):
    """The private-public graphs of the gadget (``Graphs``); the query is public node 0. The other private nodes
    have random rows with a zero first coordinate (so a teacher's batch norm sees varied inputs); q and v share
    the row ``(3, 0, ..., 0)``: v is q's nearest private node, and the only one with q's first coordinate."""
    from methods.privgnn.common import Graphs

    xq = torch.zeros(features)
    xq[0] = 3.0
    x_others = torch.randn(others, features, generator=generator)
    x_others[:, 0] = 0.0
    x_priv = torch.cat([xq.unsqueeze(0), x_others]) if with_target else x_others
    y_priv = torch.cat([torch.zeros(1, dtype=torch.long), torch.ones(others, dtype=torch.long)]) if with_target \
        else torch.ones(others, dtype=torch.long)
    n_priv = x_priv.size(0)
    x_pub = xq.repeat(2, 1)  # q and one public neighbour with the same row
    e_pub = torch.tensor([[0, 1], [1, 0]])
    return Graphs(private_ids=torch.arange(n_priv), public_ids=torch.arange(n_priv, n_priv + 2), x_private=x_priv,
                  y_private=y_priv, edges_private=torch.empty(2, 0, dtype=torch.long), x_public=x_pub,
                  edges_public=e_pub, agg_x_public=x_pub.clone(), query_candidates=torch.tensor([0]),
                  y_public=torch.zeros(2, dtype=torch.long), num_classes=2)


def scores(method, graphs, trials: int, lam: float, streams) -> dict[str, torch.Tensor]:
    """Per variant (log-probabilities / probabilities), 1.0 where a trial's pseudo-label is class 0; ``streams``:
    the world's (its subsamples, teachers and noise)."""
    from methods.privgnn.common import noisy_argmax

    logp = method.teacher_log_posteriors(graphs, torch.zeros(trials, dtype=torch.long), streams, torch.device("cpu"))
    out = {}
    for variant, values, domain in (("log_posterior", logp, None), ("posterior", logp.exp(), "simplex")):
        labels = noisy_argmax(values, lam, streams.torch("noise", variant), domain=domain)
        out[variant] = (labels == 0).double()
    out["teacher_log_gap"] = (logp[:, 0] - logp[:, 1])
    return out


def claims(lam: float, rate: float, delta: float) -> dict[str, float]:
    """One query's epsilon. The paper's analysis (a Laplace mechanism of sensitivity 1 at scale 1/lambda, amplified
    by Poisson(gamma) subsampling) makes a query (log(1 + gamma (e^lambda - 1)), 0)-DP (``paper_pure``); its
    accountant, which converts RDP at ``delta``, reports a larger epsilon for one query (``paper_rdp``). The suite's
    sound account of Algorithm 1 (sensitivity 2): ``ours_pure`` the same formula at 2 lambda, ``ours_ledger`` the
    ledger's epsilon at ``delta``. An (epsilon, 0) claim is an (epsilon, delta) claim at every delta, so a lower
    bound at ``delta`` above it refutes it."""
    from methods.privgnn.paper_accounting import privgnn_epsilon
    from methods.privgnn.privgnn import POSTERIOR_SENSITIVITY, PrivGNN

    def amplified(eps0: float) -> float:
        return math.log1p(rate * math.expm1(eps0))

    ours = PrivGNN(queries=1, k=1, sampling_rate=rate).ledger(1, lam).epsilon(delta)
    return {"paper_pure": amplified(lam), "paper_rdp": float(privgnn_epsilon(1, lam, rate, delta)[0]),
            "ours_pure": amplified(POSTERIOR_SENSITIVITY * lam), "ours_ledger": float(ours)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=2000, help="queries (independent trials) per world")
    p.add_argument("--lam", type=float, default=0.2, help="lambda = 1 / Laplace scale (the paper's headline 0.2)")
    p.add_argument("--rate", type=float, default=0.3, help="gamma, the Poisson subsampling rate (the paper's 0.3)")
    p.add_argument("--teacher-epochs", type=int, default=200, help="teacher training epochs (appendix G.1: 200)")
    p.add_argument("--k", type=int, default=10, help="K, the teacher's nearest private nodes")
    p.add_argument("--others", type=int, default=60, help="private nodes besides the target")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the result as JSON here")
    a = p.parse_args(argv)
    if (a.trials < 4 or not (a.lam > 0 and math.isfinite(a.lam)) or not 0 < a.rate <= 1 or a.teacher_epochs < 1
            or a.k < 1 or a.others < 1):
        print("error: need --trials >= 4, a finite --lam > 0, --rate in (0, 1], --teacher-epochs, --k and --others "
              ">= 1", file=sys.stderr)
        return 2
    from audits.bounds import multi_run_audit
    from methods.privgnn.privgnn import PrivGNN
    from methods.streams import RunStreams

    torch.set_num_threads(1)
    method = PrivGNN(queries=a.trials, k=a.k, sampling_rate=a.rate, teacher_epochs=a.teacher_epochs, teacher_batch=64)
    t0 = time.perf_counter()
    # the two worlds' trials use independent streams (spawned per world from the seed)
    root = RunStreams(a.seed)
    # the worlds share the other nodes' rows (G' = G - v) and draw their trials from independent streams
    world = {w: scores(method, gadget(w == "with", root.torch("audit", "gadget"), a.others), a.trials, a.lam,
                       root.child("audit", w)) for w in ("with", "without")}
    seconds = time.perf_counter() - t0
    claim = claims(a.lam, a.rate, DELTA)
    result = {"lam": a.lam, "rate": a.rate, "k": a.k, "others": a.others, "trials_per_world": a.trials, "teacher_epochs": a.teacher_epochs,
              "delta": DELTA, "seed": a.seed, "seconds": round(seconds, 1), "claims_one_query": claim,
              "teacher_log_gap": {w: {"median": float(world[w]["teacher_log_gap"].median()),
                                      "min": float(world[w]["teacher_log_gap"].min()),
                                      "max": float(world[w]["teacher_log_gap"].max())} for w in world}}
    for variant in ("log_posterior", "posterior"):
        s_in, s_out = (world[w][variant].numpy() for w in ("with", "without"))
        b = multi_run_audit(s_in, s_out, DELTA, rng=root.numpy("audit", "halves", variant))
        result[variant] = {"epsilon_lb": float(b.epsilon_lb), "label0_rate_with": float(s_in.mean()),
                           "label0_rate_without": float(s_out.mean()),
                           "errors": {"fp": b.fp, "negatives": b.negatives, "fn": b.fn, "positives": b.positives},
                           "beats_paper_claim": bool(b.epsilon_lb > claim["paper_pure"]),
                           "beats_sound_claim": bool(b.epsilon_lb > min(claim["ours_pure"], claim["ours_ledger"]))}
    text = json.dumps(result, indent=1, sort_keys=True)
    print(text)
    if a.out:
        from bench.io import write_text_atomic

        write_text_atomic(Path(a.out), text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
