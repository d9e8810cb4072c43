"""`bench attack` and `bench run --attacks`: child runs in MLflow, tables, plugins, and clean errors."""

from __future__ import annotations

import json

import pytest
import torch

from bench import tracking
from bench.cli import main
from tests.conftest import REPO
from tests.test_cli import run_cli

PLUGIN = str(REPO / "tests" / "plugins" / "attack_plugin.py")
CSBM = "csbm:nodes=300,classes=3,features=8"


@pytest.fixture(scope="module", autouse=True)
def instruments():
    from tests.plugins import attack_plugin

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    attack_plugin.register_all()
    yield
    attack_plugin.unregister_all()
    torch.set_num_threads(before)


def test_attack_runs_are_children_of_the_target_run(tmp_path, capsys):
    exp = "attack-cli"
    out = tmp_path / "res.json"
    plots = tmp_path / "plots"
    code = main(["attack", "-m", "memorise,prior", "-d", CSBM, "-a", "threshold,max-posterior", "--bootstrap", "50",
                 "--experiment", exp, "--no-progress", "-o", str(out), "--plot-dir", str(plots)])
    assert code == 0
    table = capsys.readouterr().out
    assert "AUC [95% CI]" in table and "memorise" in table and "modified-entropy" in table
    runs = tracking.search_runs(exp)
    parents = {r.info.run_id: r for r in runs if "mlflow.parentRunId" not in r.data.tags}
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 2 and len(children) == 4
    assert all(r.info.status == "FINISHED" for r in runs)
    for child in children:
        parent = parents[child.data.tags["mlflow.parentRunId"]]
        assert child.data.tags["attack"] in ("threshold", "max-posterior")
        assert child.data.tags["status"] == "ok"
        files = {a.path for a in tracking.client().list_artifacts(child.info.run_id)}
        assert {"roc.png", "attack.json"} <= files
        auc = child.data.metrics.get("loss.auc", child.data.metrics.get("max.auc"))
        assert (auc > 0.95) == (parent.data.params["method"] == "memorise")
        assert child.data.metrics.get("loss.auc_low", 0) <= child.data.metrics.get("loss.auc", 0)
        if child.data.tags["attack"] == "threshold":
            assert parent.data.metrics["attack.threshold.loss.auc"] == child.data.metrics["loss.auc"]
    saved = json.loads(out.read_text())
    assert [len(r["attacks"]) for r in saved] == [2, 2]
    assert saved[0]["attacks"][0]["variants"]["loss"]["auc"]["value"] > 0.95
    assert len(list(plots.glob("*.png"))) == 4
    # attack.json holds what any metric can be recomputed from
    child = next(c for c in children if c.data.tags["attack"] == "threshold")
    path = tracking.client().download_artifacts(child.info.run_id, "attack.json", str(tmp_path))
    doc = json.loads(open(path).read())
    from attacks.metrics import auc

    ev = doc["evaluated"]
    assert auc(ev["labels"], ev["scores"]["loss"]) == pytest.approx(doc["variants"]["loss"]["auc"]["value"])


def test_run_with_attacks_marks_not_applicable_attacks(capsys):
    exp = "attack-cli-run"
    code = main(["run", "-m", "gap-edge", "-d", CSBM, "--epsilon", "4", "--set", "epochs=5", "--attacks",
                 "linkteller,threshold",
                 "--attack-set", "pairs=50", "--bootstrap", "20", "--experiment", exp, "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "test acc" in out and "not applicable" in out
    children = [r for r in tracking.search_runs(exp) if "mlflow.parentRunId" in r.data.tags]
    status = {r.data.tags["attack"]: (r.info.status, r.data.tags["status"]) for r in children}
    assert status == {"linkteller": ("FINISHED", "not applicable"), "threshold": ("FINISHED", "ok")}
    na = next(r for r in children if r.data.tags["attack"] == "linkteller")
    assert "predict_proba_features" in na.data.tags["reason"] and "ledger does not cover" in na.data.tags["reason"]


BAD = [
    (["attack", "-m", "gcn", "-d", CSBM, "-a", "nope"], "unknown attack 'nope'"),
    (["attack", "-m", "gcn", "-d", CSBM, "-a", "threshold", "--attack-set", "references=4"],
     "unknown attack option 'references'"),
    (["attack", "-m", "gcn", "-d", CSBM, "-a", "lira", "--attack-set", "references=1"], "references must be in [2, 1024]"),
    (["attack", "-m", "gcn", "-d", CSBM, "-a", "lira", "--attack-set", "lira.references=many"], "must be an integer"),
    (["attack", "-m", "gcn", "-d", CSBM, "-a", "shadow", "--attack-set", "shadow_method=nope"], "unknown method 'nope'"),
    (["attack", "-m", "gcn", "-d", CSBM, "-a", "threshold", "--bootstrap", "-1"], "--bootstrap must be >= 0"),
    (["run", "-m", "gcn", "-d", CSBM, "--attack-set", "references=4"], "no attack given"),
    (["attack", "-m", "gcn", "-d", CSBM, "-a", "threshold,threshold"], "listed twice"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[m for _, m in BAD])
def test_bad_attack_input_is_one_line_and_leaves_nothing(args, message, tmp_path, capsys):
    exp = "attack-cli-bad"
    before = len(tracking.search_runs(exp))
    out = tmp_path / "out.json"
    code = main([*args, "--experiment", exp, "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("error: ") and message in err[-1]
    assert not out.exists()
    assert len(tracking.search_runs(exp)) == before


def test_attack_plugins_load_in_process_with_the_plugin_option(capsys):
    from tests.plugins import attack_plugin

    attack_plugin.unregister_all()  # only --plugin may register them now
    try:
        code = main(["--plugin", PLUGIN, "attack", "-m", "memorise", "-d", CSBM, "-a", "max-posterior",
                     "--bootstrap", "20", "--no-progress", "--experiment", "attack-cli-plugin"])
        out = capsys.readouterr().out
        assert code == 0 and "max-posterior" in out and "1.000" in out
    finally:
        attack_plugin.register_all()


@pytest.mark.slow
def test_attack_plugins_load_like_method_plugins(tmp_path):
    # one real process: --plugin registers the file's methods and attacks before the command runs
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    r = run_cli(["--plugin", PLUGIN, "attack", "-m", "memorise", "-d", CSBM, "-a", "max-posterior", "--bootstrap", "20",
                 "--no-progress"], MLFLOW_TRACKING_URI=uri)
    assert r.returncode == 0, r.stderr
    assert "max-posterior" in r.stdout and "1.000" in r.stdout


def test_plugin_attacks_are_listed_and_unknown_without_the_plugin(capsys):
    from tests.plugins import attack_plugin

    assert main(["list", "attacks"]) == 0
    out = capsys.readouterr().out
    assert "max-posterior" in out and "lira" in out and "link-stealing" in out
    attack_plugin.unregister_all()
    try:
        code = main(["attack", "-m", "gcn", "-d", CSBM, "-a", "max-posterior"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err[-1].startswith("error: ") and "unknown attack 'max-posterior'" in err[-1]
    finally:
        attack_plugin.register_all()
