"""The paper-reproduction scripts (scripts/): their grids are valid sweep configs, and one runs end to end."""

from __future__ import annotations

import argparse
import math
import subprocess

import pytest

from bench.sweep import build_config
from tests.conftest import REPO

#: a fixed real export for the scripts that pick their targets from one: Cora's records as the v1.0.2 tag holds them
#: (the pre-1.0 grid; the published export itself changes while the leaderboard is regenerated)
EXPORT_COMMIT = "fb337757e0f034c416d574a43943b36feb00b52c"


@pytest.fixture(scope="module")
def cora_export(tmp_path_factory) -> str:
    """A runs directory holding ``EXPORT_COMMIT``'s ``cora.jsonl``."""
    got = subprocess.run(["git", "show", f"{EXPORT_COMMIT}:docs/leaderboard/runs/cora.jsonl"], cwd=REPO,
                         capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"git history without {EXPORT_COMMIT[:12]} (a shallow clone?)")
    d = tmp_path_factory.mktemp("runs")
    (d / "cora.jsonl").write_text(got.stdout)
    return f"{d}/"


def _cells(cfg: dict):
    c = build_config(cfg, "script")
    assert c.cells and not [x.label for x in c.cells if x.skip]
    return c.cells


def test_drw_table_grid():
    from bench.studies.drw_table import config

    cells = _cells(config(["cora", "computers"], ["drw", "gcn"], [0, 1], 8.0, 1e-5, "x"))
    drw = {(x.dataset, x.split, x.overrides) for x in cells if x.method == "drw"}
    from bench import hparams as H

    tuned = H.lookup("drw", "cora", "public", 8.0)  # the checked-in settings, as in every sweep
    cora = tuple(sorted(f"{k}={v}" for k, v in (tuned.values if tuned else {}).items()))
    assert drw == {("cora", "public", cora), ("computers", "disjoint", ("batch_size=512",))}
    assert {x.epsilon for x in cells if x.method == "gcn"} == {math.inf} and len(cells) == 8


def test_dpgnn_grid_fdp_part():
    from bench.studies.dpgnn_grid import configs

    (cfg,) = configs(["fdp"], [0], [], "x")
    cells = _cells(cfg)
    assert {(x.dataset, x.delta, x.epsilon) for x in cells} == {("cora", 1e-5, 8.0), ("citeseer", 1e-5, 8.0)}
    assert {"batch_size=140", "lr=2.0", "relation=in-edges", "max_degree=3"} <= set(
        next(x for x in cells if x.dataset == "cora").overrides)  # the paper's relation, which its K = 3 needs


def test_gap_curves_grid():
    from bench.studies.gap_curves import EDGE_EPS, NODE_EPS, config

    cells = _cells(config(["facebook-wisconsin87"], [0], ["edge", "node"], "x"))
    assert {x.epsilon for x in cells if x.method == "progap-edge"} == set(EDGE_EPS)
    assert {x.epsilon for x in cells if x.method == "gap-node"} == set(NODE_EPS)
    assert {x.method for x in cells if math.isinf(x.epsilon)} >= {"mlp", "sage", "gap-edge"}


def test_privgnn_grid():
    from bench.studies.privgnn_grid import config

    cells = _cells(config([0, 1], [1000, 500], [0.2, 0.4], 0.3, 750, 32, "x"))
    priv = [x for x in cells if x.method == "privgnn"]
    assert len(priv) == 2 * (2 * 2 + 2)  # seeds x (|Q| x lambda + the log-posterior variants)
    assert all(x.split == "private-public" and x.delta == 1e-4 and math.isinf(x.epsilon) for x in cells)


def test_attack_table_grids_group_attacks_by_unit():
    from bench.studies.attack_table import configs

    args = argparse.Namespace(methods=["gcn", "gap-edge"], attacks=None, references=4, shadows=1, pairs=100,
                              experiment="x", datasets=["cora"], split=None, epsilons=[8.0], seeds=[0], overrides=[],
                              bootstrap=50, delta=None)
    node, edge = (_cells(c) for c in configs(args))
    assert {x.method for x in node} == {"gcn"} and node[0].attacks == ("threshold", "shadow", "lira")
    assert {x.method for x in edge} == {"gap-edge"} and "link-stealing" in edge[0].attacks


@pytest.mark.data
def test_a_script_runs_end_to_end_and_resumes(data_root, tmp_path, capsys):
    from bench import api
    from bench.studies.drw_table import main

    out = tmp_path / "drw.md"
    argv = ["--datasets", "cora", "--methods", "gcn", "--seeds", "0", "--experiment", "script-drw", "--out", str(out)]
    assert main(argv) == 0
    assert "| gcn | none | public | inf |" in out.read_text()
    assert main(argv + ["--dry-run"]) == 0  # resumed: nothing left to run
    assert "0 to run, 1 done" in capsys.readouterr().err
    assert len(api.runs("script-drw")) == 1


def test_edge_attacks_pick_the_edge_rows_runs_and_write_records_the_check_accepts(cora_export):
    """scripts.unit_attacks: the runs of a real export (``EXPORT_COMMIT``) it refits (edge-level and reference runs
    of the attack seeds on the edge rows' split), and one record end to end on a synthetic graph that --check
    accepts."""
    import torch

    from bench.check import check_record
    from bench.studies.unit_attacks import attack_run, targets

    runs = targets("configs/leaderboard.yaml", cora_export, ["cora"])
    got = {(r["params"]["method"], r["params"]["target_epsilon"], r["params"]["seed"]) for r in runs}
    assert len(runs) == len(got) == 20
    assert {m for m, _, _ in got} == {"edgerand", "gap-edge", "progap-edge", "gcn", "mlp", "sage", "rw"}
    assert {s for _, _, s in got} == {"0", "1"} and {r["params"]["split"] for r in runs} == {"random-75-10-15"}

    csbm = "csbm:nodes=300,classes=3,features=8,degree=6"
    run = {"cell_id": "c", "run_id": "r", "name": "gcn/csbm", "metrics": {"test_acc": 0.0},
           "params": {"method": "gcn", "dataset": csbm, "split": "random-75-10-15", "seed": "0",
                      "privacy_unit": "none", "target_epsilon": "inf", "delta": "0.0", "config_hash": "h",
                      "hp.epochs": "30", "hp.patience": "0", "hp.hidden": "16"}}
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.raises(SystemExit, match="--rerun-missing"):  # no released model in the store: no silent refit
            attack_run(run, {"link-stealing": {"pairs": 200}}, "a" * 40, {})
        rec = attack_run(run, {"link-stealing": {"pairs": 200}, "linkteller": {"pairs": 100}}, "a" * 40, {},
                         refit=True)
    finally:
        torch.set_num_threads(before)
    assert rec["target_config_hash"] == "h" and rec["attacked_model"] == "refit (not the recorded run)"
    assert not [k for v in rec["attacks"].values() for x in v.values() for k in x if "eps" in k]
    assert rec["attacks"]["linkteller"]["influence"]["auc"] > 0.8 and not rec["not_applicable"]
    assert check_record(rec) == []


def test_feature_attacks_pick_the_feature_rows_runs_and_write_records_the_check_accepts(cora_export):
    """scripts.unit_attacks --level feature: the feature-level and reference runs of the attack seeds on the
    feature rows' splits, and one feature-attack record end to end that --check accepts."""
    import torch

    from bench.check import check_record
    from bench.studies.unit_attacks import attack_run, targets

    runs = targets("configs/leaderboard.yaml", cora_export, ["cora"], "feature")
    got = {(r["params"]["method"], r["params"]["split"], r["params"]["target_epsilon"], r["params"]["seed"])
           for r in runs}
    assert len(runs) == len(got) and {m for m, *_ in got} >= {"drw", "drw-r", "drw-d", "dp-mlp-feature", "gcn", "mlp"}
    assert {r["params"]["privacy_unit"] for r in runs} == {"feature", "none"}
    assert {r["params"]["split"] for r in runs} == {"random-75-10-15", "public"}

    csbm = "csbm:nodes=300,classes=3,features=8,degree=6"
    run = {"cell_id": "c", "run_id": "r", "name": "drw/csbm", "metrics": {"test_acc": 0.0},
           "params": {"method": "drw", "dataset": csbm, "split": "random-75-10-15", "seed": "0",
                      "privacy_unit": "feature", "target_epsilon": "8.0", "delta": "0.001", "config_hash": "h",
                      "hp.max_steps": "20", "hp.hidden": "16", "hp.walk_length": "2", "hp.batch_size": "20"}}
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rec = attack_run(run, {"attribute-inference": {"targets": 60}, "released-prediction": {"targets": 60}},
                         "a" * 40, {}, level="feature", refit=True)
    finally:
        torch.set_num_threads(before)
    assert rec["kind"] == "feature-attack" and not rec["not_applicable"]
    assert set(rec["attacks"]["attribute-inference"]) >= {"loss", "paired", "ref-neighbour-cosine"}
    assert max(v["auc"] for v in rec["attacks"]["released-prediction"].values()) > 0.95  # served posteriors leak
    assert check_record(rec) == []


def test_unit_attacks_hit_the_recorded_runs_artefact(monkeypatch, tmp_path):
    """A run of the export whose released model the store holds is attacked from that artefact (no training at all),
    and the record says so; --rerun-missing moves only the records whose model the store lacks."""
    import json

    from bench import api, records
    from methods.base import Method
    from bench.studies.unit_attacks import attack_run, rerun_missing

    [r] = api.run("gcn", "csbm:nodes=300,classes=3,features=8,degree=6", split="random-75-10-15", seeds=[0],
                  overrides={"epochs": 5}, experiment="script-unit-attacks")
    rec = {**records.record_for(r.run_id), "cell_id": "c-recorded"}
    fake = {**rec, "cell_id": "c-old", "run_id": "0" * 32}

    def no_training(*a, **k):
        raise AssertionError("the attack refit the run")

    monkeypatch.setattr(Method, "fit", no_training)
    out = attack_run(rec, {"link-stealing": {"pairs": 100}}, "a" * 40, {})
    assert out["attacked_model"] == "recorded artefact" and out["reproduces_run"] is True
    export = tmp_path / "runs"
    export.mkdir()
    (export / "x.jsonl").write_text(json.dumps(rec) + "\n" + json.dumps(fake) + "\n")
    assert rerun_missing([rec, fake], str(export), str(tmp_path / "superseded.jsonl")) == 1
    assert [x["cell_id"] for x in records.load(export / "x.jsonl")] == ["c-recorded"]
    moved = [json.loads(x) for x in (tmp_path / "superseded.jsonl").read_text().splitlines()]
    assert [x["cell_id"] for x in moved] == ["c-old"] and "released model" in moved[0]["superseded_because"]


def test_whitebox_audits_pick_the_private_cells_and_write_records_the_check_accepts(cora_export):
    """scripts.whitebox_audits: the seed-0 run of every private cell it covers (composed everywhere, pooled on the
    pooled datasets only), and one composed and one pooled record end to end that --check accepts."""
    from bench.check import check_record
    from bench.studies.whitebox_audits import COMPOSED, POOLED, audit_run, record_id, targets

    runs = targets("configs/leaderboard.yaml", cora_export, ["cora"], ["cora"])
    methods = {r["params"]["method"] for r in runs}
    assert methods <= set(COMPOSED) | set(POOLED) and {"gap-edge", "dp-mlp", "drw"} <= methods
    assert {r["params"]["seed"] for r in runs} == {"0"} and all(r["params"]["target_epsilon"] != "inf" for r in runs)
    no_pooled = targets("configs/leaderboard.yaml", cora_export, ["cora"], [])
    assert no_pooled and all(r["params"]["method"] in COMPOSED for r in no_pooled)
    composed = next(r for r in runs if r["params"]["method"] == "gap-edge")
    assert record_id(composed) != record_id({**composed, "cell_id": "other"})
    rec = audit_run(composed, "a" * 40, {})
    w = rec["whitebox"]
    assert w["source"] == "composed" and 0 < w["ratio_cp"] <= w["ratio_fdp"] <= 1 and w["fdp_assumes"]
    assert w["claimed"] == pytest.approx(float(composed["metrics"]["epsilon"]), rel=1e-6)  # the recorded run's own
    assert check_record(rec) == []
    csbm = "csbm:nodes=300,classes=2,features=8,degree=4"
    run = {"cell_id": "c", "run_id": "r", "name": "dp-mlp/csbm",
           "params": {"method": "dp-mlp", "dataset": csbm, "split": "random-75-10-15", "seed": "0",
                      "privacy_unit": "node", "target_epsilon": "4.0", "delta": "0.001", "config_hash": "h",
                      "hp.epochs": "3"}}
    import bench.studies.whitebox_audits as W

    W.POOLED_SIZE["dp-mlp"] = (1, 100)
    try:
        rec = audit_run(run, "a" * 40, {})
    finally:
        del W.POOLED_SIZE["dp-mlp"]
    w = rec["whitebox"]
    assert w["source"] == "pooled" and w["runs"] == 1 and 0 <= w["epsilon_lb_fdp"] <= w["pair_epsilon"] <= w["claimed"]
    assert w["epsilon_lb_cp"] <= w["pair_epsilon"] and "Gaussian" in w["fdp_assumes"]
    assert check_record(rec) == []


def test_the_accountant_conformance_page_counts_verdicts_and_names_every_unsound_result():
    """scripts.accountant_conformance: the page of a check on the mini corpus: the summary rows, the per-kind
    counts, the UNSOUND row of a deliberately unsound plugin accountant, our accountants' non-TIGHT cases."""
    from bench import api
    from methods.privacy.conformance.adapters import unregister_accountant
    from methods.privacy.conformance.check import corpus_cases
    from bench.cli import load_plugin
    from bench.studies.accountant_conformance import page

    corpus = ["tests/data/conformance_mini.json"]
    load_plugin("tests/plugins/accountant_plugin.py")
    try:
        outcome = api.check_accountants(["ours-rdp", "ours-pld", "rdp-x0.9"], corpus=corpus)
    finally:
        for name in ("rdp-x0.9", "basic-composition"):
            unregister_accountant(name)
    text = page(outcome, "f" * 40, corpus_cases(corpus))
    s = outcome.report.summary()
    assert f"| ours-pld | {s['ours-pld']['version']} | 8 | {s['ours-pld']['sound']} |" in text
    unsound = [r for r in outcome.report.results if r.verdict == "UNSOUND"]
    assert unsound and all(r.accountant == "rdp-x0.9" for r in unsound)
    assert all(f"| {r.case} | rdp-x0.9 |" in text.split("## UNSOUND and ERROR results")[1] for r in unsound)
    assert "| gaussian |" in text and "ffffffffff" in text
    loose = [r for r in outcome.report.results if r.accountant == "ours-rdp" and r.verdict == "LOOSE"]
    assert all(f"| {r.case} | ours-rdp | LOOSE |" in text for r in loose)


def test_retire_moves_only_the_records_of_the_datasets_done_that_no_current_run_names(tmp_path):
    import json

    from bench.studies._common import retire

    out, old = tmp_path / "edge.jsonl", tmp_path / "superseded.jsonl"
    recs = [{"cell_id": "new", "params": {"dataset": "cora"}}, {"cell_id": "old", "params": {"dataset": "cora"}},
            {"cell_id": "other", "params": {"dataset": "photo"}}]
    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert retire(str(out), {"new"}, {"cora"}, str(old)) == 1
    assert [json.loads(x)["cell_id"] for x in out.read_text().splitlines()] == ["new", "other"]
    assert [json.loads(x)["cell_id"] for x in old.read_text().splitlines()] == ["old"]
