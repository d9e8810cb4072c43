"""Relabel the unit-attack records written before runs logged their released model (schema 1 of
``scripts.unit_attacks``), so the published export says what they are.

Those records attacked a refit of the run's setting, not the recorded run, and carried an "implied epsilon" computed
from the TPR and FPR of one trained model, which no game between neighbouring datasets backs. This script

- sets ``attacked_model`` to :data:`bench.release.SOURCE_REFIT` (a refit, whatever the old ``reproduces_run`` said:
  that flag compared test accuracy or posteriors of a refit, not the released artefact),
- drops every ``implied_epsilon`` figure and the record's ``implied_epsilon_rule``,
- and notes both in ``relabelled``.

The AUC and TPR figures stay what the record's ``git_commit`` measured. Records that already name the model they
attacked are left untouched; running it twice changes nothing. ``python -m scripts.unit_attacks --rerun-missing``
then ``scripts.build_leaderboard`` and ``scripts.unit_attacks`` replace a dataset's relabelled records with attacks on
recorded artefacts.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench import release
from bench.io import write_text_atomic

DEFAULT_FILES = ("docs/leaderboard/attacks/edge.jsonl", "docs/leaderboard/attacks/feature.jsonl")
NOTE = ("attacked a refit of the run's setting (before runs logged their released model); its implied epsilon, from "
        "one model's TPR/FPR and no neighbouring-dataset game, was dropped")


def relabel(rec: dict[str, Any]) -> bool:
    """Relabel one record in place; whether it changed."""
    if rec.get("attacked_model") or rec.get("kind") not in ("edge-attack", "feature-attack"):
        return False
    dropped = 0
    for variants in (rec.get("attacks") or {}).values():
        for vals in (variants or {}).values():
            for k in [k for k in (vals or {}) if "eps" in k.lower()]:
                del vals[k]
                dropped += 1
    for k in [k for k in rec if "eps" in k.lower()]:
        del rec[k]
    rec["attacked_model"] = release.SOURCE_REFIT
    rec["relabelled"] = {"by": "scripts.relabel_legacy_attacks", "note": NOTE, "implied_epsilons_dropped": dropped}
    return True


def relabel_file(path: str | Path) -> int:
    """Relabel every schema-1 record of one JSON-lines export; how many changed."""
    path = Path(path)
    lines = [x for x in path.read_text().splitlines() if x.strip()]
    recs = [json.loads(x) for x in lines]
    changed = sum(relabel(r) for r in recs)
    if changed:
        write_text_atomic(path, "".join(json.dumps(r, sort_keys=True, default=str, separators=(",", ":")) + "\n"
                                           for r in recs))
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.relabel_legacy_attacks", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=list(DEFAULT_FILES), help="attack exports (default: %(default)s)")
    args = ap.parse_args(argv)
    for f in args.files:
        print(f"{f}: {relabel_file(f)} records relabelled as attacks on a refit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
