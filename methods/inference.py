"""Whether a method's served predictions are private: derived from what its inference reads and what its unit protects.

A method declares, as data (``Method.inference_reads``), what its served inference reads besides the released model;
its privacy unit says what a neighbouring dataset may change. :func:`inference_private` derives the flag from the two,
the ``Method.fit`` template writes it into ``Fitted.info["inference_private"]``, and ``methods.base.check_fitted``
refuses a fit whose flag says anything else. No method types the flag.

What inference may read (:data:`READS`):

* ``own-features``: the raw feature row of the queried node;
* ``other-features``: raw feature rows of other nodes (a message-passing forward over the served graph);
* ``edges``: the raw edges (the served graph is the task's own adjacency);
* ``labels``: raw labels (label propagation at inference);
* ``public``: data the setting declares public (PrivGNN's public graph);
* ``release``: only DP releases beyond the weights (GAP's cached noisy aggregates, EdgeRand's randomised graph).

The released weights are read by every method and are the DP release itself; they need no declaration.

The rule (:data:`PROTECTED`): inference is private when it reads nothing its unit protects, and only under a privacy
claim (a unit other than ``none`` and a finite epsilon):

* ``edge``: the raw edges are protected; features and labels are public at edge level, so a forward over the
  randomised graph (EdgeRand) or over cached noisy aggregates (GAP/ProGAP) is private, one over the true graph is not.
* ``node``: every node's features, label and edges are protected, except the queried node's own features: they are
  the querier's input, the convention of GAP's and ProGAP's inference privacy (Sajadmanesh et al., USENIX Security
  2023; Sajadmanesh & Gatica-Perez 2023, Sec. 4.2: "the inference for a node i no longer depends on the adjacency
  matrix and neighboring node features, but only on its own aggregated features", X~(0) = X being its raw row), under
  which DP-MLP, GAP/ProGAP and the PrivGNN/PATE students (public graph, a private node answered from its own row) are
  private and a full-neighbourhood forward (DP-GNN) is not. The
  convention says what reaches the node that asks; a posterior served to anyone else is a function of that node's row,
  which no node-level epsilon covers.
* ``feature``: the protected thing IS a node's feature row, and the posteriors of training nodes are served to anyone,
  so the queried node's own row is protected too: DRW (a full-graph GCN over raw rows) and DP-MLP at feature level (an
  MLP on the raw row) serve predictions that are deterministic functions of the protected rows. A feature-level
  epsilon bounds what the released weights say about a row, not what a served prediction says
  (``attacks.features``: the weights-only and released-prediction games).

The declaration is checked, not trusted: the contract tests change data a method says it does not read, with its
release held fixed, and require every served posterior to stay put (``audits.structural.check_inference_reads``).
"""

from __future__ import annotations

from collections.abc import Iterable

OWN_FEATURES = "own-features"
OTHER_FEATURES = "other-features"
EDGES = "edges"
LABELS = "labels"
PUBLIC = "public"
RELEASE = "release"

#: everything a served inference may read besides the released weights
READS: frozenset[str] = frozenset({OWN_FEATURES, OTHER_FEATURES, EDGES, LABELS, PUBLIC, RELEASE})

#: the raw data a method that declares nothing is assumed to read: not private under any unit
READS_EVERYTHING: frozenset[str] = frozenset({OWN_FEATURES, OTHER_FEATURES, EDGES, LABELS})

#: per privacy unit, what served inference may not read (see the module docstring)
PROTECTED: dict[str, frozenset[str]] = {
    "edge": frozenset({EDGES}),
    "node": frozenset({OTHER_FEATURES, EDGES, LABELS}),
    "feature": frozenset({OWN_FEATURES, OTHER_FEATURES}),
}


def check_reads(reads: Iterable[str], owner: str = "method") -> frozenset[str]:
    """``reads`` as a frozenset, or ``ValueError`` naming what is not in :data:`READS`."""
    out = frozenset(reads)
    unknown = sorted(out - READS)
    if unknown or isinstance(reads, str):
        raise ValueError(f"{owner}: inference_reads must be a set of {', '.join(sorted(READS))} "
                         f"(got {sorted(out) if not isinstance(reads, str) else reads!r})")
    return out


def inference_private(unit: str, reads: Iterable[str], claim: bool = True) -> bool:
    """Whether inference that reads ``reads`` is private under a ``unit``-level claim (``claim``: a finite epsilon
    was asked for). No claim, no private inference."""
    if not claim or unit not in PROTECTED:
        return False
    return not (frozenset(reads) & PROTECTED[unit])


def violated(unit: str, reads: Iterable[str]) -> list[str]:
    """What of ``reads`` the unit protects (why inference is not private), sorted."""
    return sorted(frozenset(reads) & PROTECTED.get(unit, frozenset()))
