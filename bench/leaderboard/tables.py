"""The leaderboard's tables: each section's columns, a row's cells, the notes under the tables, and the plain-text
summary a terminal shows."""

from __future__ import annotations

import math
from typing import Any

from bench.leaderboard.rows import (BIG, RELEASED_PREDICTIONS, SOURCE_OWN, SOURCE_UNKNOWN, Row, Strongest, _f,
                                    section_attack_unit)

#: the epsilon of releasing all of a row's models (:func:`bench.leaderboard.rows.compose_seeds`)
COMPOSED_HEADER = "eps, all seeds composed"
BASE_HEADER = ["method", "unit", "split", "target eps", "spent eps (max)", "delta", "inference", "test acc", "95% CI",
               "seeds", COMPOSED_HEADER]


WHITEBOX_HEADER = "white-box eps_lb: assumption-free / f-DP, of the run's claim"


def header_for(section: str) -> list[str]:
    """The columns of a section's table: the strongest attack on the unit its claims protect with its TPR at 1% FPR
    (AUC and TPR, never an epsilon: see :class:`Strongest`); feature-level sections add the released-prediction game
    beside it, edge- and feature-level sections the strongest node-membership attack; then the white-box bounds of
    the row's run and the verification."""
    unit = section_attack_unit(section)
    return (BASE_HEADER + [f"strongest attack on {unit} (AUC)", "TPR@1%FPR"]
            + ([f"attack on {RELEASED_PREDICTIONS} (AUC)", "TPR@1%FPR (released predictions)"] if section == "feature" else [])
            + (["node membership attack (AUC)"] if section in ("edge", "feature") else [])
            + [WHITEBOX_HEADER, "verification (eps_lb)"])


HEADER = header_for("node")


def _num(x: float, fmt: str = ".4f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x) or x >= BIG:
        return "inf"
    return format(x, fmt)


def whitebox_bounds(w: dict[str, Any]) -> tuple[float, float, str]:
    """(assumption-free lower bound, f-DP lower bound, what the f-DP one assumes) of a white-box record; a record
    that predates the two named bounds gives NaN for the one it does not name."""
    cp = _f(w.get("epsilon_lb_cp"))
    fdp = _f(w.get("epsilon_lb_fdp", w.get("epsilon_lb")))
    text = str(w.get("fdp_assumes") or ("Gaussian" if w.get("source") == "pooled" else ""))
    short = "/".join(n for k, n in (("Gaussian", "GDP"), ("randomized-response", "RR")) if k in text)
    return cp, fdp, short or text or "?"


def whitebox_claim(w: dict[str, Any]) -> tuple[float, str]:
    """The claim a white-box bound is read against: the row's own run's (its ledger's epsilon), and a note when the
    audit measured other runs whose ledgers claim another epsilon (a pooled audit's fresh fits)."""
    own, audited = _f(w.get("row_claimed")), _f(w.get("claimed"))
    if math.isnan(own):
        return audited, ""
    runs = w.get("runs")
    if w.get("source") == "pooled" or (not math.isnan(audited) and not math.isclose(own, audited, rel_tol=1e-6)):
        what = f"{runs} fresh runs" if runs else "other runs"
        return own, f"measured on {what} of this configuration, claiming {_num(audited, '.4g')}"
    return own, ""


def whitebox_cell(r: Row) -> str:
    """``assumption-free / f-DP of claim (source; what f-DP assumes; other runs)``, or ``-``."""
    w = r.whitebox
    if not w:
        return "-"
    src = {"composed": "mechanisms composed", "pooled": "whole run"}.get(w.get("source"), w.get("source", "?"))
    part = " of part of the ledger" if w.get("left_out") else ""
    cp, fdp, assumes = whitebox_bounds(w)
    claim, other = whitebox_claim(w)
    notes = [f"{src}{part}", f"f-DP assumes {assumes}"] + ([other] if other else [])
    if w.get("pair_epsilon") is not None:
        notes.append(f"pair eps {_num(w.get('pair_epsilon'), '.3g')}")
    if w.get("verdict") and w.get("verdict") != "PASS":
        notes.append(str(w["verdict"]))
    return f"{_num(cp, '.3g')} / {_num(fdp, '.3g')} of {_num(claim, '.4g')} ({'; '.join(notes)})"


def inference_flag(r: Row) -> bool | None:
    """Whether the row's served predictions are private: derived from the method's declared inference reads and its
    unit (:func:`methods.base.inference_private_of`, the one rule ``fit`` applies), so a record tagged under an
    older, typed flag shows what the method's inference is; the record's tag only where the method is unknown."""
    from methods.base import Budget, available_methods, inference_private_of

    cls = available_methods().get(r.method)
    if cls is not None:
        return inference_private_of(cls, Budget(r.target_epsilon, 0.0 if math.isnan(r.delta) else r.delta))
    return {"true": True, "false": False}.get(str(r.inference_private).strip().lower())


def _inference(r: Row) -> str:
    if r.unit == "none":
        return "-"
    return {True: "private", False: "not private"}.get(inference_flag(r), "?")


def _section_of(r: Row) -> str:
    return r.unit if r.unit != "none" else "node"


def attack_cell(r: Row, b: Strongest) -> str:
    """``AUC (attack.variant; held-out choice of N; the model attacked)`` with the model-free reference and the
    outside-claim mark, or ``-``."""
    if not b.name:
        return "-"
    refs = r.references(b.unit) if b.unit else {}
    seen = "" if b.models == (SOURCE_OWN,) else f"; attacked: {', '.join(b.models) or SOURCE_UNKNOWN}"
    return (f"{_num(b.auc, '.3f')} ({b.name}; {'held-out choice' if b.held_out else 'max'} of {b.candidates}{seen})"
            + "".join(f"; reference {v} (no model): {_num(a, '.3f')}" for v, a in refs.items())
            + attack_unit_note(r, b))


def row_cells(r: Row, section: str | None = None) -> list[str]:
    """The cells of ``r`` in the table of ``section`` (a privacy unit; default the row's own, node for a
    non-private row): :func:`header_for`'s columns."""
    section = section or _section_of(r)
    b = r.strongest(section_attack_unit(section))
    ci = "-" if r.ci is None else f"[{r.ci[0]:.4f}, {r.ci[1]:.4f}]"
    verification = "-"
    if r.verdict:
        verification = f"{r.verdict} ({_num(max(r.audit_lb), '.3g')})" if r.audit_lb else r.verdict
    acc = _num(r.acc_mean)
    cells = [r.label + marks(r), r.unit_label or r.unit, r.split, _num(r.target_epsilon, "g"), _num(r.spent_max, ".4g"),
             "-" if r.unit == "none" or math.isnan(r.delta) or math.isinf(r.spent_max) else f"{r.delta:.0e}",
             _inference(r), acc, ci, str(len(r.accs)), composed_cell(r), attack_cell(r, b),
             _num(b.tpr, ".3f") if b.name else "-"]
    if section == "feature":
        rp = r.strongest(RELEASED_PREDICTIONS)
        cells += [attack_cell(r, rp), _num(rp.tpr, ".3f") if rp.name else "-"]
    if section in ("edge", "feature"):
        cells.append(attack_cell(r, r.strongest("node membership")))
    return cells + [whitebox_cell(r), verification]


def composed_cell(r: Row) -> str:
    """What releasing every seed's model of ``r`` costs (:attr:`Row.composed`), or ``-`` (not private, or no
    ledgers to compose)."""
    return "-" if r.unit == "none" or math.isnan(r.composed) else _num(r.composed, ".4g")


def marks(r: Row) -> str:
    """What the method cell adds to the row's name: identical runs of another row, a previous setting."""
    return same_as_text(r) + (f" {PREVIOUS_MARK}" if r.previous else "")


PREVIOUS_MARK = "(previous setting)"
PREVIOUS_NOTE = (f"method '{PREVIOUS_MARK}': the row's runs used the hyperparameters chosen before the current "
                 "tuning (their record's hp_source says from where); the current setting's cells are not run yet, and "
                 "their records replace the row when they are.")


def same_as_text(r: Row) -> str:
    """`` (= drw at this budget: no resample)`` for a row whose runs another row's repeat exactly."""
    return "".join(f" (= {other} at this budget: {why})" if why else f" (= {other}: identical runs on every seed)"
                   for other, why in r.same_as)


def sections(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    """Rows by (dataset, unit); the non-private references join every unit's section of their dataset."""
    out: dict[tuple[str, str], list[Row]] = {}
    units: dict[str, set[str]] = {}
    for r in rows:
        if r.unit != "none":
            units.setdefault(r.dataset, set()).add(r.unit)
    for r in rows:
        if r.unit == "none":
            for u in sorted(units.get(r.dataset) or {"none"}):
                out.setdefault((r.dataset, u), []).append(r)
        else:
            out.setdefault((r.dataset, r.unit), []).append(r)
    return dict(sorted(out.items(), key=lambda kv: section_order(*kv[0])))


#: the order a reader looks for: the Planetoid citation graphs most papers report first, then the co-purchase and
#: co-author graphs, then the Facebook school graphs; datasets not named here follow alphabetically
DATASET_ORDER = ("cora", "citeseer", "pubmed", "computers", "photo", "cs", "physics", "facebook-wisconsin87",
                 "facebook-berkeley13", "facebook-cornell5")
#: per dataset: edge, node, then feature level (the order the docs list the units in)
UNIT_ORDER = ("edge", "node", "feature")


def section_order(dataset: str, unit: str) -> tuple:
    """The sort key of a (dataset, unit) section: :data:`DATASET_ORDER`, then :data:`UNIT_ORDER`, unknown names after
    the known ones, alphabetically."""
    d = DATASET_ORDER.index(dataset) if dataset in DATASET_ORDER else len(DATASET_ORDER)
    u = UNIT_ORDER.index(unit) if unit in UNIT_ORDER else len(UNIT_ORDER)
    return d, dataset, u, unit


#: public facts whose value the footnote lists per dataset: a declared bound a reader compares with the data
SHOWN_VALUES = ("max_degree",)
#: what a claim resting on a public fact holds for, where the fact's meaning (``PUBLIC_FACTS``) does not say
FACT_SCOPE = {"num_train": "the epsilon holds for neighbouring datasets of that size",
              "num_nodes": "the epsilon holds for neighbouring datasets of that size"}


def footnotes(rows: list[Row]) -> list[str]:
    """The notes under the tables: each unit label's meaning (the relation the row's records ran,
    :func:`~bench.leaderboard.rows.unit_label_of`), the facts the rows' ledgers take as public by convention
    (with the declared bounds' values per dataset), identical results and previous settings."""
    from methods.privacy.ledger import PUBLIC_FACTS

    notes: dict[str, str] = {}
    for r in rows:
        if r.unit_note:
            notes.setdefault(r.unit_label or r.unit, r.unit_note)
    public: dict[str, set[str]] = {}
    values: dict[str, dict[str, set]] = {}
    for r in rows:
        for fact in r.public_facts:
            public.setdefault(fact, set()).add(r.method)
        for fact, vs in r.public_values.items():
            values.setdefault(fact, {}).setdefault(r.dataset, set()).update(vs)
    conventions = []
    for fact, ms in sorted(public.items()):
        meaning = PUBLIC_FACTS.get(fact, "a fact its family names public")
        text = f"public by convention ({', '.join(sorted(ms))}): {fact}, {meaning}"
        if fact in SHOWN_VALUES and values.get(fact):
            by_ds = sorted(values[fact].items(), key=lambda kv: section_order(kv[0], ""))
            text += " (" + "; ".join(f"{ds} {', '.join(str(v) for v in sorted(vs, key=str))}" for ds, vs in by_ds) + ")"
        conventions.append(text + (f"; {FACT_SCOPE[fact]}" if fact in FACT_SCOPE else "") + " (docs/accounting.md)")
    return ([f"{label}: {note}" for label, note in sorted(notes.items())] + conventions + identical_results(rows)
            + ([PREVIOUS_NOTE] if any(r.previous for r in rows) else []))


def identical_results(rows: list[Row]) -> list[str]:
    """Notes on rows of different methods whose test accuracy is the same on every one of >= 2 common seeds at
    different spent epsilons: different trainings whose test predictions agree (a model that predicts one class).
    Identical runs (the same ledgers too) are marked in their rows instead (:func:`mark_identical`)."""
    groups: dict[tuple, dict[str, tuple]] = {}
    for r in rows:
        if len(set(r.seeds)) >= 2 and len(r.seeds) == len(set(r.seeds)):
            key = (r.dataset, r.split, r.target_epsilon, tuple(sorted(zip(r.seeds, r.accs))))
            spent = tuple(round(e, 9) for _, e in sorted(zip(r.seeds, r.spent)))
            groups.setdefault(key, {})[r.label] = spent
    same_pred: dict[tuple[str, ...], list[str]] = {}
    for (ds, split, eps, _), spent_of in groups.items():
        if len(set(spent_of.values())) > 1:
            same_pred.setdefault(tuple(sorted(spent_of)), []).append(f"{ds} ({split}) at eps {eps:g}")
    return [f"{' and '.join(k)}: the same test accuracy on every seed on {', '.join(sorted(v))}, at different "
            "spent epsilons: different trainings whose test predictions agree (e.g. each predicts one class)."
            for k, v in sorted(same_pred.items())]


COLUMN_NOTES = [
    "test acc: mean over seeds, 95% percentile bootstrap interval (scipy).",
    "spent eps: the epsilon of one model, the accountant's recomputed from each run's ledger (max over seeds), never "
    "the target or a logged metric; delta as run.",
    f"{COMPOSED_HEADER}: what releasing every seed's model of the row together costs: the runs' ledgers composed "
    "(independent runs on the same data; the accountant the records name) at the row's delta.",
    "method '(= other ...)': every seed's run is identical to the other row's (the same ledger and the same test "
    "predictions): the two rows compare nothing at this budget.",
    "strongest attack on <unit>: among the attacks on what the section's claims protect (edge membership in "
    "edge-level sections: link stealing and LinkTeller on held-out edges and non-edges; feature row (weights only) "
    "in feature-level sections: attribute inference from the released model's weights, which of two rows, a "
    "training node's own or an unfitted class-mate's, it held; both scripts/unit_attacks; node membership "
    "elsewhere), per seed the variant with the best mean AUC on the other seeds (held out), its AUC and TPR at 1% "
    "FPR on this seed, averaged; model-free references (ref-*) are never candidates but are shown beside it "
    "('reference ... (no model)': link stealing on raw features, what feature homophily alone gives the edge game; "
    "the candidate row's cosine to its node's neighbours' rows in the feature game; an attack near it finds little "
    "the model adds); 'of N' = candidates; '-': no attack on that unit ran for the row. Attack strength is AUC and "
    "TPR at low FPR, never an epsilon: members and non-members are many edges or rows of one trained model, not "
    "neighbouring datasets, so no epsilon follows from these rates (the white-box and verification columns are "
    "such games).",
    "attacked: which model the attack saw, when not the row's recorded run itself (its own model in the run, or "
    "its released model loaded from the run's artefact): 'refit, same predictions as the recorded run' (a refit "
    "that released the recorded test predictions) or 'refit, NOT the recorded run' (its numbers describe another "
    "model).",
    "attack on feature row (released predictions) (feature-level sections): the same two-row game when the "
    "attacker also sees the released posteriors of the training nodes (attacks.features released-prediction: the "
    "candidate row whose query reproduces the node's released posterior). A feature-level epsilon bounds the "
    "weights only: a training node's served posterior is a deterministic function of its own row, so this game "
    "is outside the claim, and near 1 for a model that serves them (inference 'not private').",
    "white-box eps_lb: two empirical lower bounds on epsilon in the white-box threat model (every release "
    "observed), of the claim of the row's seed-0 run (its ledger's epsilon): assumption-free (Clopper-Pearson "
    "rates, no assumption on the mechanism) / f-DP (the strongest member of an assumed family of trade-off "
    "curves that the measured point rules out; 'f-DP assumes GDP': Gaussian trade-off; a mechanism whose curve "
    "is not of that shape can make it exceed what the data show). GAP/ProGAP/EdgeRand/PrivGNN/PATE from the "
    "mechanism-level audits of the run's own ledger events, composed as privacy-loss distributions "
    "(scripts/whitebox_audits; 'of part of the ledger': node-level GAP's DP-SGD heads are left out); DP-SGD rows "
    "from a whole-run pooled audit with gradient canaries of fresh runs of the configuration (named, with their "
    "claim; 'pair eps': the exact epsilon of the audited pair, the most this audit could show); '-': not run "
    "(pooled audits on Cora only).",
    "node membership attack (edge- and feature-level sections): the strongest node-membership attack, kept for "
    "comparison; an edge- or feature-level claim does not cover it.",
    "verification: bench verify / bench audit verdicts of the configuration and the largest empirical epsilon lower "
    "bound of their checks.",
]


def strongest_attack_unit(r: Row, b: Strongest | None = None) -> tuple[str, str]:
    """(what the attack ``b`` -- default the row's shown attack, :meth:`Row.shown_attack` -- infers, e.g. ``node
    membership``; why the row's privacy claim does not cover it, e.g. ``outside the edge-level claim``, or ""). Both
    "" without an attack or for an attack not registered."""
    b = b if b is not None else r.shown_attack()
    if not b.name:
        return "", ""
    from bench.attack import attack_unit

    u = attack_unit(b.name.split(".", 1)[0], r.unit)
    return u["attack_unit"], u["outside_claim"]


def attack_unit_note(r: Row, b: Strongest | None = None) -> str:
    """`` [node membership: outside the edge-level claim]`` when the attack ``b`` (default the row's shown attack)
    infers something the row's privacy unit does not protect (a node-membership attack on an edge- or feature-level
    method), else "": appended to an attack cell so the row itself says the AUC is no evidence against its claim."""
    unit, outside = strongest_attack_unit(r, b)
    return f" [{unit}: {outside}]" if outside else ""


SUMMARY_HEADER = ["method", "unit", "spent eps", "test acc (mean, seeds)", "attack AUC (what it infers)",
                  "verification (eps_lb)"]


def summary_cells(r: Row, datasets: bool = False) -> list[str]:
    """One row of :func:`terminal_summary`."""
    b = r.shown_attack()
    attack = "-"
    if b.name:
        unit, outside = strongest_attack_unit(r, b)
        attack = f"{_num(b.auc, '.2f')} ({'; '.join(x for x in (unit or b.name, outside) if x)})"
    verification = "-"
    if r.verdict:
        verification = f"{r.verdict} ({_num(max(r.audit_lb), '.3g')})" if r.audit_lb else r.verdict
    seeds = len(r.accs)
    spent = "inf (not private)" if r.unit == "none" else _num(r.spent_max, ".3g")
    cells = [r.label + marks(r), r.unit_label or r.unit, spent,
             f"{_num(r.acc_mean)} ({seeds} seed{'s' if seeds != 1 else ''})", attack, verification]
    return cells[:2] + [f"{r.dataset} ({r.split})"] + cells[2:] if datasets else cells


def terminal_summary(rows: list[Row], max_rows: int = 40) -> str:
    """The leaderboard as a plain-text table for a terminal or a log (what ``bench leaderboard --site`` prints, the
    demo's result): per row its method, unit, spent epsilon, test accuracy (mean over its seeds), the strongest
    attack's AUC with what that attack infers (and, where the method's privacy unit does not cover it, that it is
    outside the claim) and the verification verdict. A dataset column when the rows hold more than one dataset or
    split. More than ``max_rows`` rows (a full grid) give one line that says so: the page holds them."""
    from bench.io import format_table

    if len(rows) > max_rows:
        return (f"{len(rows)} leaderboard rows ({len({r.dataset for r in rows})} datasets): too many for a terminal; "
                "the page and its README.md hold the tables")

    datasets = len({(r.dataset, r.split) for r in rows}) > 1
    header = SUMMARY_HEADER[:2] + ["dataset"] + SUMMARY_HEADER[2:] if datasets else SUMMARY_HEADER
    text = format_table(header, [summary_cells(r, datasets) for r in rows])
    notes = []
    if not datasets and rows:
        notes.append(f"{rows[0].dataset}, split {rows[0].split}; spent eps: the ledger's (max over seeds), delta as "
                     "run.")
    if any(strongest_attack_unit(r)[1] for r in rows):
        notes.append("outside the X-level claim: the attack infers something the method's privacy unit does not "
                     "protect (e.g. a node's training membership against an edge-level guarantee); its AUC is no "
                     "evidence for or against the claim.")
    if any(r.verdict for r in rows):
        notes.append("verification: bench verify's verdict and the largest empirical epsilon lower bound of its "
                     "checks.")
    return text + "".join(f"\n* {n}" for n in notes)
