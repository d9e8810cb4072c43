"""The conventions every published epsilon of the page rests on, stated once near its top (and per record, in the
record's ``noise`` and ``conventions.*`` params, :func:`bench.records.conventions_of`): how the noise was drawn,
which count delta is set from, what a row of several seeds costs, and which node-level relation a row ran."""

from __future__ import annotations

from bench.leaderboard.rows import Row
from bench.leaderboard.tables import COMPOSED_HEADER

HEADING = "Conventions"
#: the node-level methods whose config chooses between the sound relation and the papers' (``Method.relation_labels``)
RELATION_METHODS = ("gap-node", "progap-node", "dpgnn", "dpgnn-adam")


def _noise(private: list[Row]) -> str:
    secure = [r for r in private if "secure" in r.noise]
    reproducible = [r for r in private if "reproducible" in r.noise]
    if reproducible and not secure:
        which = "every private run drew its DP noise from its published seed (secure_noise false)"
    else:
        which = (f"{len(reproducible)} of {len(private)} private rows drew their DP noise from the published seed "
                 f"(secure_noise false), {len(secure)} from OS entropy (--secure-noise)")
    return (f"Reproducible noise: {which}, so re-running a record reproduces its predictions_hash bit for bit, and "
            "a neighbouring dataset gives another. The epsilon is the algorithm's guarantee; a published artefact "
            "whose noise is a function of its published seed is not a private release (each record's noise param "
            "says which it is; records from before it, their secure_noise). A model meant for release is trained "
            "with --secure-noise: the noise then comes from OS entropy that is never logged (docs/running.md).")


SHARED_DRAWS = (
    "Shared draws: the runs of one seed draw their noise from one stream, whatever their target epsilon, method or "
    "dataset (the stream is keyed by the seed and the purpose: methods/streams.py). Common random numbers make one "
    "seed's privacy-utility curve compare budgets rather than draws; no run's guarantee depends on it (each run's "
    "noise is independent of the data). Two runs of one seed are not independent, though: releasing both is not "
    "their ledgers composed (a query released at two noise scales with the same draw gives away the draw); the seeds "
    "of one row are independent and compose.")

DELTA = (
    "Delta from a public count: delta is the largest power of ten below 1 / #privacy units, the count each record "
    "publishes as privacy_units (the graph's undirected edges at edge level, its nodes at node and feature level, "
    "the private nodes of PrivGNN and PATE) and names public by convention (conventions.delta_units; records from "
    "before that param rest on the same convention): the published dataset's size. Delta, and the noise calibrated "
    "to it, depend on the count only through its order of magnitude; each section's delta is in its plot's title "
    "and in the details.")

SEEDS = (
    "Seeds compose: a row averages one model per seed, all trained on the same data, and its spent eps is that of "
    f"one model (the max over seeds). Releasing all of them costs their composition: {COMPOSED_HEADER} is the runs' "
    "ledgers composed with the accountant the records name, at the row's delta.")


#: what each of the papers' node-level relations is relative to
PAPERS_RELATIONS = {"cut-off-graph": "relative to the graph after the random degree cut-off; not node-level DP for the "
                                     "input graph when the cut-off binds",
                    "in-edges": "a node owns its incoming edge list"}


def relation_labels() -> tuple[str, dict[str, tuple[str, list[str]]]]:
    """(the sound node-level relation's unit label, {label of a papers' relation: (what it is relative to, the
    methods that run it)}), read from the methods' ``relation_labels``."""
    from methods.base import available_methods

    methods = available_methods()
    sound = "node (declared max degree)"
    papers: dict[str, tuple[str, list[str]]] = {}
    for name in RELATION_METHODS:
        cls = methods.get(name)
        for rel, (label, _) in (getattr(cls, "relation_labels", None) or {}).items():
            if label == cls.label():
                sound = label
            elif rel in PAPERS_RELATIONS:
                papers.setdefault(label, (PAPERS_RELATIONS[rel], []))[1].append(name)
    return sound, papers


def _relations(rows: list[Row]) -> str:
    sound, papers = relation_labels()
    shown = sorted({r.unit_label for r in rows if r.method in RELATION_METHODS and r.unit_label})
    text = (f"Node-level relations: node-level GAP, ProGAP and DP-GNN run under the sound default, '{sound}': a node "
            "removed with all its edges from the input graph, max_degree being a declared public bound on every "
            "node's degree (DP-GNN: its training in-neighbours) that the run refuses to exceed.")
    if papers:
        text += " The papers' relations are labelled variants: " + "; ".join(
            f"'{label}' ({', '.join(ms)}: {what})" for label, (what, ms) in sorted(papers.items())) + "."
    text += (" The unit column of each table's details (and the plot's legend, and the method cell's hover text) "
             "names the relation each row ran")
    if shown:
        text += f" (on this page: {', '.join(shown)})"
    return text + "; see docs/methods/gap.md and docs/methods/dpgnn.md."


def conventions(rows: list[Row]) -> list[str]:
    """The section's paragraphs for ``rows`` (empty without a private row)."""
    private = [r for r in rows if r.unit != "none"]
    if not private:
        return []
    out = [_noise(private), SHARED_DRAWS, DELTA, SEEDS]
    if any(r.method in RELATION_METHODS for r in private):
        out.append(_relations(private))
    return out
