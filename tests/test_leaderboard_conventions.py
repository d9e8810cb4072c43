"""The conventions a published epsilon rests on, stated where the number is: the page's Conventions section
(reproducible noise, delta's count, seeds compose, the node-level relations), the epsilon of all of a row's seeds
composed, the unit label and footnote of the relation each record ran, and the facts its ledgers name public."""

from __future__ import annotations

import csv
import io
import math

import pytest

from bench.leaderboard import (COMPOSED_HEADER, CSV_COLUMNS, collect_records, footnotes, header_for, row_cells,
                               to_csv, to_html, to_markdown)
from bench.leaderboard.compact import compact_cells, compact_header
from methods import get_method
from methods.privacy.presets import CUTOFF_GRAPH, IN_EDGES, INPUT_GRAPH


def ledger(steps: int = 3, noise: float = 2.0, conventions: dict | None = None) -> dict:
    led = {"events": [{"kind": "fixed_size_gaussian", "population": 120, "sample_size": 60, "noise_multiplier": noise,
                       "count": steps, "unit": "node", "relation": "replace_one"}],
           "non_private_use": None, "notes": []}
    if conventions:
        led["conventions"] = conventions
    return led


def rec(method="dp-mlp", seed=0, acc=0.6, eps=4.0, dataset="cora", unit="node", led=None, params=None, tags=None):
    cid = f"{method}{seed}{eps}{dataset}{sorted((params or {}).items())}"
    r = {"cell_id": cid, "run_id": cid, "kind": "run", "status": "FINISHED", "start_time": seed,
         "params": {"method": method, "dataset": dataset, "split": "random-75-10-15", "seed": seed,
                    "privacy_unit": unit, "target_epsilon": str(eps), "delta": "1e-04", "config_hash": cid,
                    "accountant": "rdp", "privacy_units": "2708", "setting": "transductive",
                    "secure_noise": "false", **(params or {})},
         "metrics": {"test_acc": acc, "epsilon": eps}, "tags": dict(tags or {})}
    if led is not None:
        r["ledger"] = led
    return r


def test_a_rows_composed_epsilon_is_its_seeds_ledgers_composed():
    """Releasing every seed's model of a row is their composition: the seeds' events added into one ledger,
    accounted by the accountant the records name at the row's delta; shown beside the per-model epsilon in the
    compact and the full table and in the CSV."""
    from bench.records import spent_epsilon
    from methods.privacy import PrivacyLedger

    recs = [rec(seed=s, acc=0.6 + 0.01 * s, led=ledger()) for s in range(3)]
    (row,) = collect_records(recs)
    want = PrivacyLedger.from_dict(ledger(steps=9)).epsilon(1e-4, "rdp", "improved")
    assert row.composed == pytest.approx(want, rel=1e-9)
    assert row.spent_max == pytest.approx(spent_epsilon(recs[0])) and row.composed > row.spent_max
    cells = dict(zip(compact_header("node", False), (c.text for c in compact_cells(row, "node", False))))
    full = dict(zip(header_for("node"), row_cells(row, "node")))
    assert cells[COMPOSED_HEADER] == full[COMPOSED_HEADER] == f"{want:.4g}"
    line = dict(zip(CSV_COLUMNS, next(csv.reader(io.StringIO(to_csv([row]).splitlines()[1])))))
    assert float(line["epsilon_all_seeds_composed"]) == pytest.approx(want)
    assert line["noise"] == "reproducible"
    # one seed: its own epsilon; runs naming different accountants, or a run without a ledger: not composed
    (one,) = collect_records(recs[:1])
    assert one.composed == one.spent_max
    mixed = [recs[0], {**recs[1], "params": {**recs[1]["params"], "accountant": "pld"}}]
    (m,) = collect_records(mixed)
    assert math.isnan(m.composed) and row_cells(m, "node")[header_for("node").index(COMPOSED_HEADER)] == "-"
    (bare,) = collect_records([recs[0], {k: v for k, v in recs[1].items() if k != "ledger"}])
    assert math.isnan(bare.composed)
    (ref,) = collect_records([rec("mlp", s, unit="none", eps=math.inf, led={"events": [], "notes": [],
                                                                               "non_private_use": "x"})
                              for s in (0, 1)])
    assert row_cells(ref, "node")[header_for("node").index(COMPOSED_HEADER)] == "-"


def test_rows_label_the_relation_their_records_ran_with_its_note():
    """The unit label and footnote come from the relation the record ran (``hp.relation``); a record without it
    (release v1.0.2) ran the papers' relation whatever label it logged; a method with one relation keeps its own."""
    gap, dpgnn = get_method("gap-node"), get_method("dpgnn")
    if CUTOFF_GRAPH not in gap.relation_labels or IN_EDGES not in dpgnn.relation_labels:
        pytest.skip("the node-level methods do not declare their relations' labels")
    old = rec("gap-node", tags={"unit_label": "node (degree-bounded)"})
    new = rec("gap-node", dataset="photo", params={"hp.relation": INPUT_GRAPH})
    papers_dpgnn = rec("dpgnn", params={"hp.relation": IN_EDGES})
    legacy_dpgnn = rec("dpgnn", dataset="photo")
    mlp = rec("dp-mlp", dataset="citeseer")
    plugin = rec("not-registered", tags={"unit_label": "node (custom)"})
    rows = {(r.method, r.dataset): r for r in collect_records([old, new, papers_dpgnn, legacy_dpgnn, mlp, plugin])}
    label_note = {k: (r.unit_label, r.unit_note) for k, r in rows.items()}
    assert label_note["gap-node", "cora"] == gap.relation_labels[CUTOFF_GRAPH]
    assert label_note["gap-node", "photo"] == gap.relation_labels[INPUT_GRAPH]
    assert rows["dpgnn", "cora"].unit_label == rows["dpgnn", "photo"].unit_label == dpgnn.relation_labels[IN_EDGES][0]
    assert rows["dp-mlp", "citeseer"].unit_label == "node"
    assert rows["not-registered", "cora"].unit_label == "node (custom)"
    notes = footnotes(list(rows.values()))
    for label, note in (gap.relation_labels[CUTOFF_GRAPH], gap.relation_labels[INPUT_GRAPH]):
        assert f"{label}: {note}" in notes
    assert row_cells(rows["gap-node", "cora"], "node")[1] == gap.relation_labels[CUTOFF_GRAPH][0]


def test_the_public_facts_footnote_names_each_fact_and_the_declared_bounds():
    """A ledger's conventions (a mapping in ``ledger.json``) give one footnote per fact, its meaning and, for the
    declared degree bound, its value per dataset."""
    from methods.privacy.ledger import PUBLIC_FACTS

    recs = [rec("gap-node", s, led=ledger(conventions={"num_train": 2032, "max_degree": 168})) for s in (0, 1)]
    recs += [rec("gap-node", s, dataset="photo", led=ledger(conventions={"num_train": 5738, "max_degree": 1434}))
             for s in (0, 1)]
    recs += [rec("dp-mlp", s, led=ledger(conventions={"num_train": 2032})) for s in (0, 1)]
    notes = [n for n in footnotes(collect_records(recs)) if n.startswith("public by convention")]
    assert notes == [
        f"public by convention (gap-node): max_degree, {PUBLIC_FACTS['max_degree']} (cora 168; photo 1434) "
        "(docs/accounting.md)",
        f"public by convention (dp-mlp, gap-node): num_train, {PUBLIC_FACTS['num_train']}; the epsilon holds for "
        "neighbouring datasets of that size (docs/accounting.md)"]


def test_the_page_states_the_conventions_before_the_tables():
    """Near the top, in both documents: reproducible noise (and how to train a model meant for release), shared
    draws, delta's public count, what the seeds cost together, the node-level relations; counted from the records
    (a secure-noise run is counted as such); no section without a private row."""
    recs = [rec(seed=s, led=ledger()) for s in (0, 1)] + [rec("gap-node", s, led=ledger()) for s in (0, 1)]
    rows = collect_records(recs)
    md = to_markdown(rows, "T")
    assert "* [Conventions](#conventions)" in md
    conv = md.split("## Conventions", 1)[1].split("## How to read the tables", 1)[0]
    for text in ("Reproducible noise: every private run drew its DP noise from its published seed",
                 "is not a private release", "--secure-noise", "Shared draws:", "Delta from a public count:",
                 "conventions.delta_units", "only through its order of magnitude", "Seeds compose:",
                 COMPOSED_HEADER, "Node-level relations:", "docs/methods/gap.md", "docs/methods/dpgnn.md"):
        assert text in conv, text
    html = to_html(rows, "T", {})
    assert "<h2 id='conventions'>Conventions</h2>" in html and "href='#conventions'" in html
    assert html.index("id='conventions'") < html.index("id='how-to-read-the-tables'")
    secure = [rec(seed=s, led=ledger(), params={"secure_noise": "true"}) for s in (0, 1)]
    mixed = to_markdown(collect_records(recs + [{**r, "params": {**r["params"], "dataset": "photo"},
                                                  "cell_id": r["cell_id"] + "p", "run_id": r["run_id"] + "p"}
                                                 for r in secure]), "T")
    assert "2 of 3 private rows drew their DP noise from the published seed (secure_noise false), 1 from OS entropy" \
        in mixed
    only_references = collect_records([rec("mlp", s, unit="none", eps=math.inf) for s in (0, 1)])
    assert "## Conventions" not in to_markdown(only_references, "T")


def test_a_record_states_its_noise_and_the_count_delta_is_set_from():
    """``bench.records.conventions_of``: what a run record states (params ``noise``, ``conventions.delta_units``)
    or, for a record from before, the same read from ``secure_noise``, ``privacy_units`` and ``delta``."""
    from bench.records import DELTA_UNITS, NOISE_NONE, NOISE_REPRODUCIBLE, NOISE_SECURE, conventions_of

    c = conventions_of(rec())
    assert c["noise"] == NOISE_REPRODUCIBLE
    assert c[DELTA_UNITS].startswith("privacy_units = 2708: the number of nodes of the graph, public by convention")
    assert "delta 0.0001 is the largest power of ten below 1 / privacy_units" in c[DELTA_UNITS]
    assert "given" in conventions_of(rec(params={"delta": "1e-06"}))[DELTA_UNITS]
    assert conventions_of(rec(params={"secure_noise": "true"}))["noise"] == NOISE_SECURE
    edge = conventions_of(rec("gap-edge", unit="edge", params={"privacy_units": "5278"}))[DELTA_UNITS]
    assert edge.startswith("privacy_units = 5278: the number of undirected edges of the graph")
    private = conventions_of(rec("privgnn", params={"setting": "private-public", "privacy_units": "1000",
                                                    "delta": "1e-04"}))[DELTA_UNITS]
    assert "private (training) nodes of the seeded split" in private
    assert conventions_of(rec("mlp", unit="none", eps=math.inf)) == {"noise": NOISE_NONE}
