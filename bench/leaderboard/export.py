"""The leaderboard as CSV: one line per row, every unit's strongest attack, the white-box bounds and the
verification in columns of their own (``bench leaderboard --format csv``); ``epsilon_all_seeds_composed`` is what
releasing every seed's model of the row costs, ``noise`` how the runs drew their noise (reproducible from the seed,
or secure)."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from bench.leaderboard.rows import CLAIM_UNITS, RELEASED_PREDICTIONS, Row, Strongest
from bench.leaderboard.tables import inference_flag, strongest_attack_unit, whitebox_bounds, whitebox_claim


CSV_COLUMNS = ["dataset", "privacy_unit", "unit_label", "method", "split", "target_epsilon", "spent_epsilon_max",
               "epsilon_all_seeds_composed", "delta", "noise", "inference_private", "test_acc_mean", "ci_low",
               "ci_high", "seeds", "strongest_attack_unit", "strongest_attack", "strongest_attack_auc", "strongest_attack_tpr_at_1pct_fpr",
               "strongest_attack_attacked_model", "attack_candidates", "held_out_choice",
               "strongest_attack_outside_claim", "node_membership_attack", "node_membership_auc",
               "node_membership_tpr_at_1pct_fpr", "node_membership_attacked_model", "edge_membership_attack",
               "edge_membership_auc", "edge_membership_tpr_at_1pct_fpr", "edge_membership_attacked_model",
               "edge_membership_reference", "edge_membership_reference_auc", "feature_row_attack", "feature_row_auc",
               "feature_row_tpr_at_1pct_fpr", "feature_row_attacked_model", "feature_row_reference",
               "feature_row_reference_auc", "released_predictions_attack", "released_predictions_auc",
               "released_predictions_tpr_at_1pct_fpr", "released_predictions_attacked_model",
               "whitebox_epsilon_lb_assumption_free", "whitebox_epsilon_lb_fdp", "whitebox_fdp_assumes",
               "whitebox_claimed", "whitebox_measured_on", "whitebox_source", "verification_epsilon_lb",
               "verification_verdict", "hp_source", "same_as", "previous_setting"]


def to_csv(rows: list[Row]) -> str:
    """One line per row (:data:`CSV_COLUMNS`). ``strongest_attack*``: the strongest attack on the unit the row's
    claim protects (:attr:`Row.claim_unit`; node membership for non-private rows); ``node_membership_*``,
    ``edge_membership_*`` and ``feature_row_*``: the strongest on each unit, whatever the row's (empty where none
    ran)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_COLUMNS)

    def nums(b: Strongest) -> list[Any]:
        return [b.name, *("" if not b.name or math.isnan(x) else x for x in (b.auc, b.tpr)), "; ".join(b.models)]

    def whitebox(w: dict[str, Any] | None) -> list[Any]:
        if not w:
            return [""] * 6
        cp, fdp, assumes = whitebox_bounds(w)
        claim, other = whitebox_claim(w)
        return ["" if math.isnan(cp) else cp, "" if math.isnan(fdp) else fdp, assumes, claim,
                other or "the row's seed-0 run", w.get("source", "")]

    for r in rows:
        b = r.strongest(r.claim_unit)
        outside = strongest_attack_unit(r, b)[1]
        refs, frefs = r.references("edge membership"), r.references(CLAIM_UNITS["feature"])
        w.writerow([r.dataset, r.unit, r.unit_label, r.label, r.split, r.target_epsilon, r.spent_max,
                    "" if r.unit == "none" or math.isnan(r.composed) else r.composed, r.delta,
                    "; ".join(sorted(r.noise)),
                    "" if inference_flag(r) is None else str(inference_flag(r)).lower(), r.acc_mean, "" if r.ci is None else r.ci[0], "" if r.ci is None else r.ci[1],
                    len(r.accs), r.claim_unit, *nums(b), b.candidates, b.held_out, outside,
                    *nums(r.strongest("node membership")), *nums(r.strongest("edge membership")),
                    "; ".join(refs), "; ".join(str(a) for a in refs.values()),
                    *nums(r.strongest(CLAIM_UNITS["feature"])), "; ".join(frefs),
                    "; ".join(str(a) for a in frefs.values()), *nums(r.strongest(RELEASED_PREDICTIONS)),
                    *whitebox(r.whitebox), max(r.audit_lb) if r.audit_lb else "", r.verdict, r.hp_source,
                    "; ".join(f"{o}: {w}" if w else o for o, w in r.same_as), r.previous])
    return buf.getvalue()
