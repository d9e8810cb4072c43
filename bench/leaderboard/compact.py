"""The leaderboard's compact main table: per dataset and unit, one line per private row with what a reader compares
first (method, spent epsilon, test accuracy with its 95% interval, the strongest attack on the unit the claim
protects, the white-box audit's two lower bounds), the best row per target epsilon marked. Everything else (which
attack, the held-out choice, the references, the hyperparameters, the verification) is in the full table
(:func:`bench.leaderboard.tables.row_cells`), whose formats these cells reuse, so the two never disagree."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.leaderboard.rows import Row, Strongest
from bench.leaderboard.tables import COMPOSED_HEADER, _num, composed_cell, whitebox_bounds, whitebox_claim
from bench.site import REPRODUCED_RULE


@dataclass(frozen=True)
class Cell:
    """A cell's text (the page sorts a column by the number it starts with) and a hover text."""

    text: str
    title: str = ""


BEST_MARK = "★"
OTHER_RUNS_MARK = "†"
PART_MARK = "‡"

BEST_NOTE = (f"{BEST_MARK}: the best row at its target epsilon, i.e. the highest mean test accuracy among the "
             "private rows of the section at that target epsilon (and split); ties are all marked. A mean, not a "
             "significance claim: compare the intervals.")

LEGEND = [
    "One table per dataset and privacy unit, private methods only; click a column header to sort it.",
    "spent eps: the epsilon of one model, the accountant's from each run's ledger (max over seeds), at the delta in "
    "the plot's title; target eps: the budget the run was calibrated to. A row averages one model per seed, all "
    f"trained on the same data: {COMPOSED_HEADER} is what releasing all of them costs (their ledgers composed, at "
    "the same delta).",
    "test acc [95% CI]: mean over seeds, 95% percentile bootstrap interval.",
    "attack AUC: the strongest attack on what the row's claim protects (edge membership at edge level, a training "
    "node's feature row from the released weights at feature level, node membership at node level), the variant "
    "chosen on held-out seeds; 0.5 is a guess. An attack on one model bounds no epsilon. The plot's lower panel "
    "draws it against spent epsilon (the bar: its min and max over the attack seeds).",
    "eps_lb assumption-free / f-DP: the white-box audit's empirical lower bounds on epsilon (Clopper-Pearson rates "
    "with no assumption on the mechanism / the f-DP family the mechanism is assumed to follow, e.g. GDP); below the "
    f"spent eps means no violation; '-': not audited. {OTHER_RUNS_MARK}: measured on fresh runs of the "
    f"configuration; {PART_MARK}: of part of the ledger (hover a cell, or open the details).",
    BEST_NOTE,
    "The plot beside each table: test accuracy (mean, 95% CI bars) against spent eps on a log axis, the non-private "
    "references as horizontal lines. Stars are the papers' own numbers (\"Papers vs ours\") at the paper's epsilon, in "
    f"the colour of the method they are compared with: filled = reproduced ({REPRODUCED_RULE}), hollow = not "
    "reproduced, half-filled = nothing decides it (inconclusive, one seed, or not run yet). A paper's non-private numbers are in "
    "\"Papers vs ours\" only.",
    "Which attack, its TPR at 1% FPR, the non-private references, the verification, the hyperparameters and the "
    "seeds are in the details below each table.",
]


def compact_header(unit: str, multi_split: bool) -> list[str]:
    """The columns of a section's compact table (a split column only where the section's private rows span more
    than one split)."""
    from bench.leaderboard.rows import section_attack_unit

    return (["method"] + (["split"] if multi_split else [])
            + ["target eps", "spent eps", COMPOSED_HEADER, "test acc [95% CI]",
               f"attack AUC ({section_attack_unit(unit)})",
               "eps_lb assumption-free", "eps_lb f-DP"])


def private_rows(rs: list[Row]) -> list[Row]:
    """The rows of a section the compact table shows: the private ones (the references are the details')."""
    return [r for r in rs if r.unit != "none"]


def is_multi_split(rs: list[Row]) -> bool:
    return len({r.split for r in private_rows(rs)}) > 1


def best_rows(rs: list[Row]) -> set[int]:
    """``id`` of the best row per (split, target epsilon) among the private rows: the highest mean test accuracy
    (every row tied at it)."""
    groups: dict[tuple[str, float], list[Row]] = {}
    for r in private_rows(rs):
        if r.accs and not math.isnan(r.acc_mean):
            groups.setdefault((r.split, r.target_epsilon), []).append(r)
    out: set[int] = set()
    for g in groups.values():
        top = max(r.acc_mean for r in g)
        out |= {id(r) for r in g if r.acc_mean == top}
    return out


def compact_cells(r: Row, unit: str, multi_split: bool, best: bool = False) -> list[Cell]:
    """The cells of ``r`` under :func:`compact_header`; numbers formatted as in the full table."""
    from bench.leaderboard.tables import marks

    b = compact_attack(r)
    ci = "" if r.ci is None else f" [{r.ci[0]:.4f}, {r.ci[1]:.4f}]"
    acc = _num(r.acc_mean) + ci + (f" {BEST_MARK}" if best else "")
    attack = Cell(_num(b.auc, ".3f") if b.name else "-", b.name)
    unit = f"{r.unit_label}: {r.unit_note}" if r.unit_note else r.unit_label
    cells = [Cell(r.label + marks(r), unit)] + ([Cell(r.split)] if multi_split else [])
    cells += [Cell(_num(r.target_epsilon, "g")), Cell(_num(r.spent_max, ".4g")),
              Cell(composed_cell(r), f"{len(set(r.seeds))} models, one per seed"), Cell(acc), attack]
    return cells + whitebox_cells(r)


def compact_attack(r: Row) -> Strongest:
    """The attack a compact row shows (and the leakage plot draws): the strongest on what its claim protects."""
    return r.strongest(r.claim_unit)


def whitebox_cells(r: Row) -> list[Cell]:
    """The white-box audit's (assumption-free, f-DP) lower bounds, marked when measured on other runs or on part of
    the ledger; the hover text says of which claim and what the f-DP bound assumes."""
    w = r.whitebox
    if not w:
        return [Cell("-"), Cell("-")]
    cp, fdp, assumes = whitebox_bounds(w)
    claim, other = whitebox_claim(w)
    mark = (OTHER_RUNS_MARK if other else "") + (PART_MARK if w.get("left_out") else "")
    about = "; ".join(x for x in (other, "of part of the ledger" if w.get("left_out") else "") if x)
    return [Cell(_num(cp, ".3g") + mark, about),
            Cell(_num(fdp, ".3g") + mark, f"assumes {assumes}" + (f"; {about}" if about else ""))]
