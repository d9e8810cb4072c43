"""bench leaderboard: rows from MLflow runs (bootstrap CIs, spent epsilon, attacks, audits), md/csv/html output,
plots logged to a leaderboard run. Most runs here are logged directly (fast); one test goes through a real sweep
with a real attack so the metric names the leaderboard reads are the ones the harness writes."""

from __future__ import annotations

import base64
import csv
import io
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import bootstrap

from bench import tracking
from bench.leaderboard import LeaderboardError, bootstrap_ci, build, collect, collect_records


def fake_run(exp, method, eps, seed, acc, spent, unit="node", dataset="cora", split="public", status="FINISHED",
             attacks=None, config_hash=None):
    r = tracking.start_run(exp, f"{method}/{seed}", tags={"method": method, "dataset": dataset, "split": split})
    r.log_params({"method": method, "dataset": dataset, "split": split, "seed": seed, "privacy_unit": unit,
                  "target_epsilon": str(eps), "config_hash": config_hash or f"{method}-{eps}-{seed}"})
    r.log_metrics({"test_acc": acc, "epsilon": spent, **(attacks or {})})
    r.end(status)
    return r


def fake_audit(exp, method, eps, lb, verdict, mode="one-run"):
    r = tracking.start_run(exp, "audit", tags={"kind": "audit", "method": method, "dataset": "cora", "split": "public",
                                               "audit_mode": mode, "verdict": verdict})
    r.log_params({"target_epsilon": str(eps), "delta": 1e-4, "config_hash": "x"})
    r.log_metrics({"claimed_epsilon": eps, "epsilon_lb": lb, "audit_seconds": 1.0})
    r.end("FINISHED")


@pytest.fixture(scope="module")
def board():
    exp = "lb-fake"
    accs = [0.60, 0.64, 0.70]
    for s, a in enumerate(accs):
        fake_run(exp, "dp-mlp", 1.0, s, a, spent=0.9 + 0.01 * s,
                 attacks={"attack.threshold.loss.auc": 0.50 + 0.01 * s, "attack.threshold.loss.tpr_at_1pct_fpr": 0.02,
                          "attack.lira.offline.auc": 0.60, "attack.lira.offline.tpr_at_1pct_fpr": 0.01})
        fake_run(exp, "dp-mlp", 8.0, s, a + 0.1, spent=7.5)
        fake_run(exp, "gcn", math.inf, s, 0.8, spent=math.inf, unit="none")
    fake_run(exp, "dp-mlp", 1.0, 9, 0.0, spent=0.5, status="FAILED")  # failed runs do not count
    fake_run(exp, "dp-mlp", 1.0, 0, 0.99, spent=0.95, config_hash="dp-mlp-1.0-0")  # a newer run of seed 0
    fake_run(exp, "gap-edge", 4.0, 0, 0.5, spent=3.9, unit="edge")
    fake_audit(exp, "dp-mlp", 1.0, 0.4, "PASS")
    fake_audit(exp, "dp-mlp", 1.0, 1.7, "VIOLATION", mode="multi-run")
    return exp, accs


def test_rows_mean_ci_spent_attacks_audits(board):
    exp, accs = board
    rows = {(r.method, r.target_epsilon): r for r in collect(exp)}
    assert set(rows) == {("dp-mlp", 1.0), ("dp-mlp", 8.0), ("gcn", math.inf), ("gap-edge", 4.0)}
    r = rows[("dp-mlp", 1.0)]
    seeds = [0.99, 0.64, 0.70]  # seed 0 counted once: the newest run
    assert sorted(r.accs) == sorted(seeds)
    assert r.acc_mean == pytest.approx(np.mean(seeds))
    ref = bootstrap((np.array(sorted(r.accs)),), np.mean, confidence_level=0.95, n_resamples=2000,
                    method="percentile", random_state=np.random.default_rng(0)).confidence_interval
    assert r.ci is not None and r.ci[0] <= r.acc_mean <= r.ci[1]
    assert r.ci[0] == pytest.approx(ref.low, abs=0.02) and r.ci[1] == pytest.approx(ref.high, abs=0.02)
    assert r.spent_max == pytest.approx(0.95)  # the max of what the accountant computed, never the target
    # the strongest attack is chosen per seed on the other seeds and reported with its own TPR
    assert r.best_attack("auc") == ("lira.offline", pytest.approx(0.60))
    assert r.best_attack("tpr") == ("lira.offline", pytest.approx(0.01))
    name, auc, tpr, n, held_out = r.strongest_attack()
    assert n == 2 and held_out
    assert r.verdict == "VIOLATION" and max(r.audit_lb) == pytest.approx(1.7)
    assert r.audit_modes == {"one-run", "multi-run"}
    g = rows[("gcn", math.inf)]
    assert g.unit == "none" and math.isinf(g.spent_max) and g.ci == (0.8, 0.8)
    assert rows[("gap-edge", 4.0)].ci is None  # one seed: no interval
    assert rows[("dp-mlp", 8.0)].verdict == ""


def test_bootstrap_ci_contains_mean_and_narrows_with_more_seeds():
    rng = np.random.default_rng(1)
    few = list(rng.normal(0.7, 0.05, 4))
    many = list(rng.normal(0.7, 0.05, 64))
    lo, hi = bootstrap_ci(few)
    lo2, hi2 = bootstrap_ci(many)
    assert lo <= np.mean(few) <= hi and lo2 <= np.mean(many) <= hi2
    assert hi2 - lo2 < hi - lo
    assert bootstrap_ci([0.5]) is None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_bootstrap_ci_does_not_depend_on_the_order_of_the_records(xs, rnd):
    """A re-run, or an export whose lines arrive in another order, prints the same interval for the same row."""
    shuffled = list(xs)
    rnd.shuffle(shuffled)
    assert bootstrap_ci(xs, key="row") == bootstrap_ci(shuffled, key="row")


def test_markdown_csv_html_and_the_leaderboard_run(board):
    exp, _ = board
    md, _ = build(exp, "md")
    assert "## cora: node-level" in md and "## cora: edge-level" in md
    line = next(ln for ln in md.splitlines() if ln.startswith("| dp-mlp | node | public | 1 |"))
    assert "0.95" in line and "VIOLATION (1.7)" in line and "lira.offline" in line and "| 3 |" in line
    assert "held-out choice of 2" in line
    text, _ = build(exp, "csv", track=False)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 4
    dp1 = next(r for r in rows if r["method"] == "dp-mlp" and r["target_epsilon"] == "1.0")
    assert float(dp1["spent_epsilon_max"]) == pytest.approx(0.95) and dp1["verification_verdict"] == "VIOLATION"
    page, _ = build(exp, "html", track=False)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert not re.search(r"(src|href)=['\"](?!data:|#)", page)  # self-contained: no external resources (anchors are in-page)
    imgs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    # one plot per dataset and unit (node, edge), spent epsilon on the x axis
    assert len(imgs) == 2 and base64.b64decode(imgs[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "class='viol'" in page
    lb = [r for r in tracking.search_runs(exp) if r.data.tags.get("kind") == "leaderboard"]
    assert len(lb) == 1 and lb[0].info.status == "FINISHED"
    arts = {a.path for a in tracking.client().list_artifacts(lb[0].info.run_id)}
    assert {"leaderboard.md", "leaderboard.csv", "leaderboard.html", "plots"} <= arts
    plots = [a.path for a in tracking.client().list_artifacts(lb[0].info.run_id, "plots")]
    assert sorted(plots) == ["plots/privacy_utility_cora_edge.png", "plots/privacy_utility_cora_node.png"]
    # the leaderboard run itself is not a row
    assert {r.method for r in collect(exp)} == {"dp-mlp", "gcn", "gap-edge"}


def test_cli_output_file_and_errors(board, tmp_path, capsys):
    from bench.cli import main

    exp, _ = board
    out = tmp_path / "lb.html"
    assert main(["leaderboard", "--experiment", exp, "--format", "html", "-o", str(out), "--no-track"]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()
    assert main(["leaderboard", "--experiment", "lb-empty-nothing-here"]) == 2
    assert capsys.readouterr().err.startswith("error: experiment 'lb-empty-nothing-here' has no FINISHED runs")
    # the export: written from the store, rebuilt without it
    export = tmp_path / "runs.jsonl"
    assert main(["leaderboard", "--experiment", exp, "--write-export", str(export), "--no-track"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "--export", str(export), "--format", "csv"]) == 0
    from_export = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(from_export) == 4 and {r["method"] for r in from_export} == {"dp-mlp", "gcn", "gap-edge"}
    assert main(["leaderboard", "--experiment", exp, "-o", str(tmp_path)]) == 2


def test_from_a_real_sweep_with_a_real_attack():
    from bench.api import sweep
    from bench.sweep import build_config

    exp = "lb-real"
    cfg = build_config({"experiment": exp, "datasets": ["csbm:nodes=200,classes=3,features=8"], "seeds": [0, 1],
                        "epsilons": [4], "set": {"epochs": 5}, "attacks": ["threshold"], "bootstrap": 50,
                        "methods": ["dp-mlp"]})
    sweep(cfg, progress=False)
    with pytest.raises(LeaderboardError):
        collect("lb-real-missing") or build("lb-real-missing", "md", track=False)
    (row,) = collect(exp)
    name, auc = row.best_attack("auc")
    assert name.startswith("threshold.") and 0.0 <= auc <= 1.0
    assert len(row.accs) == 2 and 0 < row.spent_max <= 4.0


def test_hyperparameter_variants_get_their_own_labelled_rows():
    exp = "lb-variants"
    for lam, acc in ((0.2, 0.5), (0.4, 0.6)):
        for s in (0, 1):
            r = tracking.start_run(exp, "privgnn", tags={"method": "privgnn"})
            r.log_params({"method": "privgnn", "dataset": "computers", "split": "private-public", "seed": s,
                          "privacy_unit": "node", "target_epsilon": "inf", "config_hash": f"{lam}-{s}",
                          "hp.lam": lam, "hp.hidden": 64})
            r.log_metrics({"test_acc": acc + 0.01 * s, "epsilon": 10 * lam})
            r.end("FINISHED")
    rows = collect(exp)
    assert [(r.label, len(r.accs)) for r in rows] == [("privgnn [lam=0.2]", 2), ("privgnn [lam=0.4]", 2)]
    assert [r.spent_max for r in rows] == [pytest.approx(2.0), pytest.approx(4.0)]
    md, _ = build(exp, "md", track=False)
    assert "| privgnn [lam=0.4] | node | private-public | inf | 4 |" in md


def test_model_free_references_are_never_the_strongest_attack():
    from bench.leaderboard import collect_records

    recs = [{"cell_id": f"c{s}", "run_id": f"r{s}", "kind": "run", "status": "FINISHED", "start_time": s,
             "params": {"method": "gap-edge", "dataset": "cora", "split": "random-75-10-15", "seed": s,
                        "privacy_unit": "edge", "target_epsilon": "1.0", "delta": "0.0001", "config_hash": f"h{s}"},
             "metrics": {"test_acc": 0.7, "epsilon": 0.99},
             "attacks": {"link-stealing": {"ref-features-cosine": {"auc": 0.81, "tpr_at_1pct_fpr": 0.2},
                                           "posterior-cosine": {"auc": 0.6 + 0.01 * s, "tpr_at_1pct_fpr": 0.05}}}}
            for s in range(3)]
    (row,) = collect_records(recs)
    name, auc, tpr, n, held = row.strongest_attack()
    assert name == "link-stealing.posterior-cosine" and n == 1 and held  # the 0.81 reference is not a candidate
    assert auc == pytest.approx(0.61) and tpr == pytest.approx(0.05)


def test_a_one_seed_row_reports_the_max_and_says_so():
    from bench.leaderboard import collect_records, row_cells

    rec = {"cell_id": "c", "run_id": "r", "kind": "run", "status": "FINISHED",
           "params": {"method": "dp-mlp", "dataset": "cora", "split": "public", "seed": 0, "privacy_unit": "node",
                      "target_epsilon": "8.0", "delta": "1e-05", "config_hash": "h"},
           "metrics": {"test_acc": 0.3, "epsilon": 7.99},
           "attacks": {"threshold": {"loss": {"auc": 0.55, "tpr_at_1pct_fpr": 0.02},
                                     "entropy": {"auc": 0.52, "tpr_at_1pct_fpr": 0.03}}}}
    (row,) = collect_records([rec])
    cells = row_cells(row)
    assert "max of 2" in cells[11] and cells[7] == "0.3000" and cells[8] == "-"  # one seed: no "± 0", no CI
    assert cells[5] == "1e-05"


def test_an_infinite_epsilon_row_states_no_delta():
    """A private method run without noise (epsilon inf) holds no (epsilon, delta) claim: no delta is shown."""
    from bench.leaderboard import collect_records, row_cells

    rec = {"cell_id": "c", "run_id": "r", "kind": "run", "status": "FINISHED",
           "params": {"method": "gap-edge", "dataset": "cora", "split": "public", "seed": 0, "privacy_unit": "edge",
                      "target_epsilon": "inf", "delta": "1e-06", "config_hash": "h"},
           "metrics": {"test_acc": 0.8, "epsilon": "inf"}}
    (row,) = collect_records([rec])
    cells = row_cells(row)
    assert cells[3] == "inf" and cells[4] == "inf" and cells[5] == "-"


@pytest.mark.parametrize("names", [("loss", "modified-entropy"), ("entropy", "confidence"), ("a", "b"), ("zz", "aa"),
                                   ("loss", "entropy"), ("confidence", "modified-entropy"), ("x1", "x2"),
                                   ("q", "p")])
def test_a_tie_between_held_out_picks_names_the_first_seeds_pick(names):
    """Two seeds, each held-out choice a different variant: the row names seed 0's pick whatever the hash seed
    (a set's iteration order made the name change between rebuilds of the same export)."""
    from bench.leaderboard import collect_records

    first, second = names
    auc = {0: {first: 0.55, second: 0.60}, 1: {first: 0.62, second: 0.52}}  # seed 0 picks first, seed 1 second
    recs = [{"cell_id": f"c{s}", "run_id": f"r{s}", "kind": "run", "status": "FINISHED", "start_time": s,
             "params": {"method": "mlp", "dataset": "cora", "split": "random-75-10-15", "seed": s,
                        "privacy_unit": "none", "target_epsilon": "inf", "config_hash": f"h{s}"},
             "metrics": {"test_acc": 0.7, "epsilon": "inf"},
             "attacks": {"threshold": {v: {"auc": a, "tpr_at_1pct_fpr": 0.01} for v, a in auc[s].items()}}}
            for s in (1, 0)]
    (row,) = collect_records(recs)
    name, mean_auc, _, n, held = row.strongest_attack()
    assert held and n == 2 and name == f"threshold.{first}" and mean_auc == pytest.approx((0.55 + 0.52) / 2)


def test_settings_tuned_per_epsilon_are_one_curve_and_a_grid_at_one_epsilon_is_variants():
    from bench.leaderboard import collect_records

    def rec(eps, lam, lr, s=0):
        return {"cell_id": f"c{eps}{lam}{lr}{s}", "run_id": f"r{eps}{lam}{lr}{s}", "kind": "run",
                "status": "FINISHED", "start_time": s,
                "params": {"method": "drw", "dataset": "cora", "split": "random-75-10-15", "seed": s,
                           "privacy_unit": "feature", "target_epsilon": str(eps), "delta": "1e-05",
                           "config_hash": f"h{eps}{lam}{lr}{s}", "hp.noise_multiplier": str(lam), "hp.lr": str(lr)},
                "metrics": {"test_acc": 0.5, "epsilon": eps}}

    rows = collect_records([rec(1.0, 8, 0.1), rec(8.0, 2, 0.01)])  # by_epsilon tuning: one setting per epsilon
    assert [(r.label, r.target_epsilon) for r in rows] == [("drw", 1.0), ("drw", 8.0)]
    rows = collect_records([rec(1.0, 8, 0.1), rec(8.0, 2, 0.01), rec(8.0, 4, 0.01)])  # a lambda grid at 8
    assert sorted(r.label for r in rows) == ["drw [noise_multiplier=2]", "drw [noise_multiplier=4]",
                                             "drw [noise_multiplier=8]"]


def test_identical_runs_are_marked_in_the_row_and_coincidences_footnoted():
    from bench.leaderboard import footnotes, row_cells

    def rec(method, seed, acc, eps=1.0, pred=None, steps=3):
        led = {"events": [{"kind": "fixed_size_gaussian", "population": 120, "sample_size": 60,
                           "noise_multiplier": 2.0, "count": steps, "unit": "feature", "relation": "replace_one"}],
               "non_private_use": None, "notes": []}
        return {"cell_id": f"{method}{seed}{eps}{steps}", "run_id": f"{method}{seed}{eps}", "kind": "run",
                "status": "FINISHED", "start_time": seed, "ledger": led,
                "params": {"method": method, "dataset": "cs", "split": "random-75-10-15", "seed": seed,
                           "privacy_unit": "feature", "target_epsilon": str(eps), "delta": "1e-05",
                           "config_hash": f"{method}{seed}{eps}{steps}"},
                "metrics": {"test_acc": acc, "epsilon": eps},
                "tags": {"predictions_hash": pred or f"p{seed}"}}

    def marks(recs):
        return {r.method: row_cells(r)[0] for r in collect_records(recs)}

    same = [rec(m, s, a) for m in ("drw", "drw-d") for s, a in ((0, 0.61), (1, 0.63))]
    got = marks(same)
    # drw-d declares when it becomes drw: only its row carries the mark, with the reason
    assert got == {"drw": "drw", "drw-d": "drw-d (= drw at this budget: no resample)"}
    # two methods that declare nothing: both rows are marked
    got = marks([rec(m, s, a) for m in ("drw", "drw-r") for s, a in ((0, 0.61), (1, 0.63))])
    assert got == {"drw": "drw (= drw-r: identical runs on every seed)",
                   "drw-r": "drw-r (= drw: identical runs on every seed)"}
    # one seed with other predictions, or another ledger, or one common seed only: nothing to mark
    assert "(=" not in "".join(marks(same[:3] + [rec("drw-d", 1, 0.63, pred="other")]).values())
    assert "(=" not in "".join(marks(same[:3] + [rec("drw-d", 1, 0.63, steps=4)]).values())
    assert "(=" not in "".join(marks([rec(m, 0, 0.61) for m in ("drw", "drw-d")]).values())
    assert "(=" not in "".join(marks([rec("drw", s, 0.6) for s in (0, 1)] + [rec("drw-d", s, 0.6, 8.0)
                                                                              for s in (0, 1)]).values())
    # the same accuracies at different spent epsilons: different trainings that agree, footnoted as such
    other = [rec("drw-r", s, a, pred="x") for s, a in ((0, 0.61), (1, 0.63))]
    for r in other:
        r["metrics"]["epsilon"] = 0.75
        del r["ledger"]
    notes = [n for n in footnotes(collect_records(same + other)) if "same test accuracy" in n]
    assert len(notes) == 1 and notes[0].startswith("drw and drw-d and drw-r: the same test accuracy on every seed")
    assert "different spent epsilons" in notes[0]


def test_edge_rows_show_the_strongest_edge_attack_and_keep_node_membership_second():
    """scripts.unit_attacks' records join the rows of the runs they attacked: an edge-level row's unit-matched column
    is the held-out strongest edge attack (references excluded) with its AUC and TPR, never an epsilon, and names the
    model it saw when that is not the recorded run's; node membership moves to the secondary column; a record of a
    run no row holds is left out."""
    from bench import release
    from bench.leaderboard import CSV_COLUMNS, collect_records, header_for, row_cells, to_csv

    def run(s):
        return {"cell_id": f"c{s}", "run_id": f"r{s}", "kind": "run", "status": "FINISHED", "start_time": s,
                "params": {"method": "edgerand", "dataset": "cora", "split": "random-75-10-15", "seed": s,
                           "privacy_unit": "edge", "target_epsilon": "1.0", "delta": "0.0001", "config_hash": f"h{s}"},
                "metrics": {"test_acc": 0.7, "epsilon": 1.0},
                "attacks": {"lira": {"online": {"auc": 0.82, "tpr_at_1pct_fpr": 0.08}}}}

    def edge(s, h=None, model=release.SOURCE_RECORDED):
        return {"cell_id": f"e{s}", "kind": "edge-attack", "status": "FINISHED", "start_time": 10 + s,
                "target_config_hash": h or f"h{s}", "attacked_model": model,
                "attacks": {"link-stealing": {"cosine": {"auc": 0.70 + 0.01 * s, "tpr_at_1pct_fpr": 0.05},
                                              "ref-features-cosine": {"auc": 0.9, "tpr_at_1pct_fpr": 0.3}},
                            "linkteller": {"influence": {"auc": 0.5, "tpr_at_1pct_fpr": 0.01}}}}

    (row,) = collect_records([run(0), run(1), edge(0), edge(1), edge(7, h="gone")])
    b = row.strongest("edge membership")
    assert b.name == "link-stealing.cosine" and b.held_out and b.candidates == 2
    assert b.auc == pytest.approx(0.705) and b.models == ("recorded run",) and not hasattr(b, "eps")
    assert row.strongest("node membership").name == "lira.online"
    header, cells = header_for("edge"), row_cells(row, "edge")
    assert len(cells) == len(header) and header[11] == "strongest attack on edge membership (AUC)"
    assert not [h for h in header if "implied" in h or ("eps" in h and "attack" in h)]
    assert cells[11].startswith("0.705 (link-stealing.cosine; held-out choice of 2)") and "outside" not in cells[11]
    assert "attacked:" not in cells[11]
    assert "reference link-stealing.ref-features-cosine (no model): 0.900" in cells[11]
    assert cells[12] == "0.050" and "[node membership: outside the edge-level claim]" in cells[13]
    assert len(row_cells(row, "node")) == len(header_for("node")) == len(header) - 1
    line = dict(zip(CSV_COLUMNS, next(csv.reader(io.StringIO(to_csv([row]).splitlines()[1])))))
    assert line["strongest_attack_unit"] == "edge membership" and line["strongest_attack"] == "link-stealing.cosine"
    assert line["node_membership_attack"] == "lira.online" and line["strongest_attack_outside_claim"] == ""
    assert line["edge_membership_attacked_model"] == "recorded run"
    assert not [c for c in CSV_COLUMNS if "implied" in c]
    assert line["edge_membership_reference"] == "link-stealing.ref-features-cosine"
    assert float(line["edge_membership_reference_auc"]) == pytest.approx(0.9)
    # without edge records the unit-matched column says so instead of showing a node attack in its place
    (bare,) = collect_records([run(0), run(1)])
    assert row_cells(bare, "edge")[11] == "-" and "lira.online" in row_cells(bare, "edge")[13]
    # an attack on a refit that is not the recorded run says so in the cell
    (refit,) = collect_records([run(0), run(1), edge(0), edge(1, model=release.SOURCE_REFIT)])
    assert "attacked: recorded run, refit, NOT the recorded run" in row_cells(refit, "edge")[11]


def test_feature_rows_show_the_strongest_feature_attack_beside_edge_records_of_the_same_run():
    """feature-attack records join like edge-attack ones (per run and kind: an edge record of the same run does not
    hide its feature record); a feature-level row's unit-matched column is the feature-row attack, node membership
    second; the CSV carries feature_row_* columns."""
    from bench.leaderboard import CSV_COLUMNS, collect_records, header_for, row_cells, to_csv

    def run(s):
        return {"cell_id": f"c{s}", "run_id": f"r{s}", "kind": "run", "status": "FINISHED", "start_time": s,
                "params": {"method": "drw", "dataset": "cora", "split": "random-75-10-15", "seed": s,
                           "privacy_unit": "feature", "target_epsilon": "8.0", "delta": "0.0001", "config_hash": f"h{s}"},
                "metrics": {"test_acc": 0.6, "epsilon": 8.0},
                "attacks": {"threshold": {"loss": {"auc": 0.55, "tpr_at_1pct_fpr": 0.02}}}}

    def feature(s):
        return {"cell_id": f"f{s}", "kind": "feature-attack", "status": "FINISHED", "start_time": 10 + s,
                "target_config_hash": f"h{s}", "attacked_model": "recorded artefact",
                "attacks": {"attribute-inference": {
                    "paired": {"auc": 0.52 + 0.01 * s, "tpr_at_1pct_fpr": 0.02},
                    "loss": {"auc": 0.5, "tpr_at_1pct_fpr": 0.01},
                    "ref-neighbour-cosine": {"auc": 0.78, "tpr_at_1pct_fpr": 0.3}},
                    "released-prediction": {"posterior-match": {"auc": 1.0, "tpr_at_1pct_fpr": 1.0}}}}

    def edge(s):
        return {"cell_id": f"e{s}", "kind": "edge-attack", "status": "FINISHED", "start_time": 20 + s,
                "target_config_hash": f"h{s}", "attacked_model": "recorded artefact",
                "attacks": {"link-stealing": {"cosine": {"auc": 0.7, "tpr_at_1pct_fpr": 0.05}}}}

    (row,) = collect_records([run(0), run(1), feature(0), feature(1), edge(0), edge(1)])
    weights, released = "feature row (weights only)", "feature row (released predictions)"
    assert row.claim_unit == weights
    b = row.strongest(weights)
    assert b.name == "attribute-inference.paired" and b.held_out and b.candidates == 2
    assert b.auc == pytest.approx(0.525) and row.strongest("edge membership").name == "link-stealing.cosine"
    assert row.strongest(released).name == "released-prediction.posterior-match"
    header, cells = header_for("feature"), row_cells(row, "feature")
    assert len(cells) == len(header) and header[11] == f"strongest attack on {weights} (AUC)"
    assert header[13] == f"attack on {released} (AUC)" and header[15] == "node membership attack (AUC)"
    assert cells[11].startswith("0.525 (attribute-inference.paired; held-out choice of 2)")
    assert "outside" not in cells[11] and "reference attribute-inference.ref-neighbour-cosine (no model): 0.780" in cells[11]
    assert cells[13].startswith("1.000 (released-prediction.posterior-match") and cells[14] == "1.000"
    assert "[node membership: outside the feature-level claim]" in cells[15]
    line = dict(zip(CSV_COLUMNS, next(csv.reader(io.StringIO(to_csv([row]).splitlines()[1])))))
    assert line["strongest_attack_unit"] == weights and line["feature_row_attack"] == "attribute-inference.paired"
    assert line["feature_row_reference"] == "attribute-inference.ref-neighbour-cosine"
    assert line["released_predictions_attack"] == "released-prediction.posterior-match"


def test_a_rows_white_box_bound_joins_from_its_seed_zero_run():
    """scripts.whitebox_audits' records join the row of the run they audit (config_hash): the column shows both
    bounds, assumption-free and f-DP with what it assumes, of the row's run's own claim (its ledger's epsilon); a
    bound measured on other runs names them and their claim; a row without one shows '-'; the CSV carries them."""
    from bench.leaderboard import CSV_COLUMNS, WHITEBOX_HEADER, collect_records, header_for, row_cells, to_csv

    run = {"cell_id": "c0", "run_id": "r0", "kind": "run", "status": "FINISHED", "start_time": 1,
           "params": {"method": "gap-edge", "dataset": "cora", "split": "random-75-10-15", "seed": 0,
                      "privacy_unit": "edge", "target_epsilon": "4.0", "delta": "0.0001", "config_hash": "h0"},
           "metrics": {"test_acc": 0.7, "epsilon": 4.0}}
    wb = {"cell_id": "w0", "kind": "whitebox-audit", "status": "FINISHED", "start_time": 5, "target_config_hash": "h0",
          "whitebox": {"source": "composed", "epsilon_lb_cp": 1.2, "epsilon_lb_fdp": 3.5, "fdp_assumes": "GDP",
                       "claimed": 4.0, "left_out": []}}
    (row,) = collect_records([run, wb, {**wb, "target_config_hash": "gone", "start_time": 9}])
    header, cells = header_for("edge"), row_cells(row, "edge")
    i = header.index(WHITEBOX_HEADER)
    assert len(cells) == len(header) and cells[i] == "1.2 / 3.5 of 4 (mechanisms composed; f-DP assumes GDP)"
    line = dict(zip(CSV_COLUMNS, next(csv.reader(io.StringIO(to_csv([row]).splitlines()[1])))))
    assert float(line["whitebox_epsilon_lb_assumption_free"]) == pytest.approx(1.2)
    assert float(line["whitebox_epsilon_lb_fdp"]) == pytest.approx(3.5) and line["whitebox_source"] == "composed"
    assert line["whitebox_fdp_assumes"] == "GDP" and float(line["whitebox_claimed"]) == pytest.approx(4.0)
    (bare,) = collect_records([run])
    assert row_cells(bare, "edge")[i] == "-"
    # a pooled audit of fresh runs whose ledgers claim another epsilon than the row's run: read against the row's
    # run, and it says which runs it measured
    pooled = {**wb, "whitebox": {"source": "pooled", "epsilon_lb_cp": 1.0, "epsilon_lb_fdp": 2.5, "fdp_assumes": "GDP",
                                 "claimed": 3.9, "runs": 8, "pair_epsilon": 3.6, "verdict": "PASS"}}
    (row,) = collect_records([{**run, "metrics": {"test_acc": 0.7, "epsilon": 3.8}}, pooled])
    cell = row_cells(row, "edge")[i]
    assert cell.startswith("1 / 2.5 of 3.8 (whole run; f-DP assumes GDP; measured on 8 fresh runs of this "
                           "configuration, claiming 3.9; pair eps 3.6)")


def test_the_inference_column_is_derived_not_read_from_a_stale_tag():
    """A record tagged under the old typed flag (dp-mlp-feature "true") shows what the method's inference is: its
    served posteriors read the protected row, so "not private"; dp-mlp (node level) stays private."""
    from bench.leaderboard import collect_records, row_cells

    def run(method, unit, s=0):
        return {"cell_id": f"{method}{s}", "run_id": f"r{method}{s}", "kind": "run", "status": "FINISHED",
                "start_time": s, "tags": {"inference_private": "true"},
                "params": {"method": method, "dataset": "cora", "split": "random-75-10-15", "seed": s,
                           "privacy_unit": unit, "target_epsilon": "1.0", "delta": "0.0001", "config_hash": method},
                "metrics": {"test_acc": 0.5, "epsilon": 1.0}}

    rows = {r.method: r for r in collect_records([run("dp-mlp-feature", "feature"), run("dp-mlp", "node")])}
    assert row_cells(rows["dp-mlp-feature"])[6] == "not private"
    assert row_cells(rows["dp-mlp"])[6] == "private"


@pytest.mark.parametrize("verdicts,shown", [(["PASS", "INCONCLUSIVE"], "INCONCLUSIVE"),
                                            (["INCONCLUSIVE", "VIOLATION"], "VIOLATION"),
                                            (["NOT APPLICABLE"], "NOT APPLICABLE"), (["PASS"], "PASS")])
def test_a_rows_verification_verdict_never_reads_inconclusive_as_pass(verdicts, shown):
    from bench.leaderboard import Row

    assert Row("cora", "node", "dp-mlp", "random-75-10-15", 8.0, audit_verdicts=verdicts).verdict == shown


def test_every_epsilon_column_is_a_claim_or_a_neighbouring_dataset_game():
    """No column of any section (nor of the CSV) prints an epsilon that an attack on one model implies: the only
    epsilons are the target, the ledger's spent epsilon (and the seeds' ledgers composed) and the lower bounds of
    audits, whose games are between neighbouring datasets (white-box canaries and mechanism pairs, the
    verification's audits)."""
    from bench.leaderboard import COMPOSED_HEADER, CSV_COLUMNS, WHITEBOX_HEADER, header_for

    allowed = {"target eps", "spent eps (max)", COMPOSED_HEADER, WHITEBOX_HEADER, "verification (eps_lb)"}
    for section in ("node", "edge", "feature", "none"):
        assert not [h for h in header_for(section) if "eps" in h.lower() and h not in allowed], section
    csv_allowed = {"target_epsilon", "spent_epsilon_max", "epsilon_all_seeds_composed",
                   "whitebox_epsilon_lb_assumption_free",
                   "whitebox_epsilon_lb_fdp", "verification_epsilon_lb"}
    assert not [c for c in CSV_COLUMNS if "eps" in c.lower() and c not in csv_allowed]


def test_csv_of_an_export_carries_the_page_cells(tmp_path):
    """``bench leaderboard --export SITE/runs/ --format csv`` carries what the page's table shows for the same rows:
    the attack and white-box records beside the export (SITE/attacks/) join in every format, and the CSV's attack,
    white-box and verification cells are the markdown cells' numbers."""
    import json

    from bench.cli import main
    from bench.leaderboard import WHITEBOX_HEADER, header_for
    from bench.leaderboard.tables import _num
    from bench.leaderboard.compact import BEST_MARK, compact_header

    site = tmp_path / "site"
    (site / "runs").mkdir(parents=True)
    (site / "attacks").mkdir()
    run = {"cell_id": "c0", "run_id": "r0", "kind": "run", "status": "FINISHED", "start_time": 1,
           "params": {"method": "gap-edge", "dataset": "cora", "split": "random-75-10-15", "seed": 0,
                      "privacy_unit": "edge", "target_epsilon": "4.0", "delta": "0.0001", "config_hash": "h0"},
           "metrics": {"test_acc": 0.7, "epsilon": 4.0}}
    verify = {"cell_id": "v0", "run_id": "rv", "kind": "verify", "status": "FINISHED", "start_time": 2,
              "tags": {"method": "gap-edge", "dataset": "cora", "split": "random-75-10-15"},
              "params": {"target_epsilon": "4.0"},
              "verify": {"verdict": "PASS", "checks": [{"epsilon_lb": 0.25}, {"epsilon_lb": 0.5}]}}
    edge = {"cell_id": "e0", "kind": "edge-attack", "status": "FINISHED", "start_time": 3, "target_config_hash": "h0",
            "attacked_model": "recorded artefact",
            "attacks": {"link-stealing": {"cosine": {"auc": 0.731, "tpr_at_1pct_fpr": 0.062}}}}
    wb = {"cell_id": "w0", "kind": "whitebox-audit", "status": "FINISHED", "start_time": 4, "target_config_hash": "h0",
          "whitebox": {"source": "composed", "epsilon_lb_cp": 1.2, "epsilon_lb_fdp": 3.5, "fdp_assumes": "GDP",
                       "claimed": 4.0, "left_out": []}}
    (site / "runs" / "cora.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (run, verify)))
    (site / "attacks" / "edge.jsonl").write_text(json.dumps(edge) + "\n")
    (site / "attacks" / "whitebox.jsonl").write_text(json.dumps(wb) + "\n")
    out = {}
    for fmt in ("csv", "md"):
        out[fmt] = tmp_path / f"lb.{fmt}"
        assert main(["leaderboard", "--export", f"{site}/runs/", "--format", fmt, "--no-track", "-o",
                     str(out[fmt])]) == 0
    (line,) = list(csv.DictReader(io.StringIO(out["csv"].read_text())))
    header = header_for("edge")
    md_rows = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in out["md"].read_text().splitlines()
               if ln.startswith("| gap-edge")]
    (md_row,) = [c for c in md_rows if len(c) == len(header)]  # the full table (details)
    cells = dict(zip(header, md_row))
    # the compact main table shows the same numbers as the records, in the full table's formats
    compact = compact_header("edge", multi_split=False)
    (short,) = [dict(zip(compact, c)) for c in md_rows if len(c) == len(compact)]
    assert short["spent eps"] == _num(float(line["spent_epsilon_max"]), ".4g") == cells["spent eps (max)"] == "4"
    assert short["test acc [95% CI]"] == f"{float(line['test_acc_mean']):.4f} {BEST_MARK}" == "0.7000 ★"
    assert short["attack AUC (edge membership)"] == f"{float(line['strongest_attack_auc']):.3f}" == "0.731"
    assert short["eps_lb assumption-free"] == _num(float(line["whitebox_epsilon_lb_assumption_free"]), ".3g") == "1.2"
    assert short["eps_lb f-DP"] == _num(float(line["whitebox_epsilon_lb_fdp"]), ".3g") == "3.5"
    # the records' values are there at all (empty cells on both sides would compare equal)
    assert line["edge_membership_attack"] == line["strongest_attack"] == "link-stealing.cosine"
    assert float(line["edge_membership_auc"]) == pytest.approx(0.731)
    assert float(line["whitebox_epsilon_lb_fdp"]) == pytest.approx(3.5)
    assert line["verification_verdict"] == "PASS" and float(line["verification_epsilon_lb"]) == 0.5
    # and they are the page's cells
    attack = cells["strongest attack on edge membership (AUC)"]
    assert attack.startswith(f"{float(line['strongest_attack_auc']):.3f} ({line['strongest_attack']}; max of "
                             f"{line['attack_candidates']}")
    assert line["strongest_attack_attacked_model"] == "recorded run" and "attacked:" not in attack  # its own model
    assert cells["TPR@1%FPR"] == f"{float(line['strongest_attack_tpr_at_1pct_fpr']):.3f}"
    assert cells[WHITEBOX_HEADER].startswith(
        f"{_num(float(line['whitebox_epsilon_lb_assumption_free']), '.3g')} / "
        f"{_num(float(line['whitebox_epsilon_lb_fdp']), '.3g')} of {_num(float(line['whitebox_claimed']), '.4g')} "
        f"(mechanisms composed; f-DP assumes {line['whitebox_fdp_assumes']})")
    assert cells["verification (eps_lb)"] == \
        f"{line['verification_verdict']} ({_num(float(line['verification_epsilon_lb']), '.3g')})"
