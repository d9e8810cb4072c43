"""``bench leaderboard``: tables and privacy-utility plots from tracked runs or from a compact export.

Rows come from records (:mod:`bench.records`): the FINISHED top-level runs of an MLflow experiment, or an export
file, so a published leaderboard rebuilds without the MLflow store. Per dataset and privacy unit, one row per
(method, split, target epsilon, hyperparameter variant):

* test accuracy: mean over seeds with a 95% percentile bootstrap interval (``scipy.stats.bootstrap``);
* spent epsilon: the max over seeds of what the accountant computed from each run's ledger (never the target),
  with the run's delta: the epsilon of one model; beside it the epsilon of releasing every seed's model of the row
  (their ledgers composed, :func:`~bench.leaderboard.rows.compose_seeds`); the unit and neighbouring relation the
  epsilon holds for (the record's relation's label, :func:`~bench.leaderboard.rows.unit_label_of`, e.g.
  ``node (declared max degree)``, footnoted); whether inference is private;
* the strongest attack on the unit the claim protects (edge membership for edge-level rows, from the
  ``edge-attack`` records of ``scripts.unit_attacks``; feature rows from the weights for feature-level rows, with the
  released-prediction game beside it; node membership elsewhere), chosen on held-out data: for each seed, the
  attack variant with the best mean AUC on the OTHER seeds is taken and its AUC and TPR at 1% FPR on this seed
  reported (averaged over seeds), so the choice is never made on the numbers it reports. No epsilon is derived
  from an attack on one model (not a neighbouring-dataset game); the row names the model an attack saw when it
  is not the recorded run's own. Model-free reference variants
  (``ref-*``) are never candidates; the row says how many variants were. With one seed the maximum is reported and
  marked as such. Edge-level sections keep the strongest node-membership attack as a secondary column;
* verification: the verdict of ``bench verify`` runs (and of ``bench audit`` runs) of the configuration, and the
  largest empirical epsilon lower bound among their checks.

A configuration run twice with the same seed counts once (the newest run). Plots: one per dataset and unit,
accuracy against SPENT epsilon (log scale), the non-private references of the plotted splits as lines, delta in the
title; under it, where the rows were attacked, the compact table's attack AUC against the same axis (chance marked). The page shows per dataset and unit a compact table (:mod:`~bench.leaderboard.compact`) and keeps these
columns one click away.
``--site DIR`` writes ``DIR/index.html`` (self-contained), ``DIR/README.md`` (the same tables) and the plots;
``--run CONFIG`` first runs the config's sweep with its export in ``DIR/runs/`` (one file per dataset) when that
directory exists, else ``DIR/runs.jsonl`` (resumable).

One module per job: :mod:`~bench.leaderboard.rows` (rows from records), :mod:`~bench.leaderboard.compact` (the
compact main table), :mod:`~bench.leaderboard.conventions` (what every epsilon of the page rests on), :mod:`~bench.leaderboard.tables`
(columns, cells, notes, the terminal summary), :mod:`~bench.leaderboard.plots`, :mod:`~bench.leaderboard.export`
(CSV), :mod:`~bench.leaderboard.page` (the markdown and HTML documents and the published site; its prose is
:mod:`bench.site`'s) and :mod:`~bench.leaderboard.tracked` (one format, optionally logged as a run). Checking an
export is :mod:`bench.check`'s. The names other modules use are importable from here (``__all__``).
"""

from bench.leaderboard.export import CSV_COLUMNS, to_csv
from bench.leaderboard.page import build_site, to_html, to_markdown
from bench.leaderboard.rows import LeaderboardError, Row, bootstrap_ci, collect, collect_records, config_records
from bench.leaderboard.tables import (COMPOSED_HEADER, PREVIOUS_MARK, WHITEBOX_HEADER, attack_unit_note, footnotes,
                                      header_for, row_cells, terminal_summary)
from bench.leaderboard.tracked import build, render

__all__ = ["COMPOSED_HEADER", "CSV_COLUMNS", "PREVIOUS_MARK", "WHITEBOX_HEADER", "LeaderboardError", "Row",
           "attack_unit_note", "bootstrap_ci", "build", "build_site", "collect", "collect_records", "config_records",
           "footnotes", "header_for", "render", "row_cells", "terminal_summary", "to_csv", "to_html", "to_markdown"]
