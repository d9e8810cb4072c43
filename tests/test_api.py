"""bench.api: every job callable from Python with plain arguments, returning results with their run ids."""

from __future__ import annotations

import math

import pytest

from bench import api, tracking
from bench.tracking import RunFailed
from methods.errors import BenchError, ContractViolation

CSBM = "csbm:nodes=200,classes=3,features=8"


def test_run_with_plain_arguments_returns_results_and_run_ids():
    exp = "api-run"
    results = api.run(["mlp", "dp-mlp"], CSBM, epsilon=4, seeds=[0, 1], overrides={"epochs": 3, "mlp.hidden": 8},
                      experiment=exp, diagnostics=True)
    assert [(r.method, r.seed) for r in results] == [("mlp", 0), ("mlp", 1), ("dp-mlp", 0), ("dp-mlp", 1)]
    by_id = {r.info.run_id: r for r in tracking.search_runs(exp)}
    assert {r.run_id for r in results} == set(by_id)
    mlp = by_id[results[0].run_id]
    assert mlp.data.params["hp.hidden"] == "8" and mlp.data.params["hp.epochs"] == "3"
    dp = results[2]
    assert math.isinf(results[0].epsilon) and 0 < dp.epsilon <= 4
    assert dp.history and all(k in ("epoch", "epsilon", "steps") or k.startswith("diagnostic.") for k in dp.history[0])
    # released facts are logged with the run (info.json, numbers as info.* metrics)
    assert by_id[dp.run_id].data.metrics["info.steps"] == dp.info["steps"]
    assert "test acc" in api.results_table(results)
    assert {r["run_id"] for r in api.runs(exp)} == set(by_id)


def test_bad_input_raises_before_any_run_and_a_failure_inside_a_run_names_it(monkeypatch):
    exp = "api-errors"
    with pytest.raises(BenchError, match="unknown hyperparameter 'hiden'"):
        api.run("gcn", CSBM, overrides=["hiden=3"], experiment=exp)
    with pytest.raises(BenchError, match="give --epsilon"):
        api.run("dp-mlp", CSBM, experiment=exp)
    assert tracking.search_runs(exp) == []
    from methods.baselines import MLPMethod

    original = MLPMethod._fit

    def bad_output(self, ctx):
        fitted = original(self, ctx)
        fitted.predict_proba = lambda nodes=None: fitted.__class__.predict_proba(fitted, nodes)[:5]
        return fitted

    monkeypatch.setattr(MLPMethod, "_fit", bad_output)
    with pytest.raises(RunFailed) as e:
        api.run("mlp", CSBM, overrides={"epochs": 2}, experiment=exp)
    assert isinstance(e.value.cause, ContractViolation)
    run = tracking.client().get_run(e.value.run_id)
    assert run.info.status == "FAILED" and run.data.tags["error"].startswith("ContractViolation: mlp.predict_proba")


def test_attack_returns_child_run_ids():
    exp = "api-attack"
    (r,) = api.attack("mlp", CSBM, "threshold", overrides={"epochs": 3}, bootstrap=0, experiment=exp)
    (report,) = r.attacks
    child = tracking.client().get_run(report["run_id"])
    assert report["status"] == "ok" and child.data.tags["mlflow.parentRunId"] == r.run_id
    assert "AUC" in api.attack_table([r])
    with pytest.raises(BenchError, match="no attack given"):
        api.attack("mlp", CSBM, [])


def test_audit_returns_the_verdict_and_its_run():
    exp = "api-audit"
    out = api.audit("dp-mlp", "csbm:nodes=300,classes=3,features=16,degree=4", epsilon=2, canaries=8,
                    overrides={"epochs": 2}, experiment=exp, tags={"who": "test"})
    assert out.verdict in ("PASS", "VIOLATION") and out.result.claimed_epsilon <= 2 + 1e-9
    run = tracking.client().get_run(out.run_id)
    assert run.data.tags["kind"] == "audit" and run.data.tags["who"] == "test"
    assert run.data.metrics["epsilon_lb"] == pytest.approx(out.result.epsilon_lb)
    with pytest.raises(BenchError, match="--canaries must be >= 2"):
        api.audit("dp-mlp", CSBM, epsilon=2, canaries=1)


def test_sweep_from_a_dict_and_its_leaderboard():
    exp = "api-sweep"
    cfg = {"experiment": exp, "datasets": [CSBM], "seeds": [0, 1], "set": {"epochs": 3}, "methods": ["mlp"]}
    s = api.sweep(cfg)
    assert [r["status"] for r in s["results"]] == ["finished", "finished"]
    assert {r["run_id"] for r in s["results"]} == {r["run_id"] for r in api.runs(exp)}
    assert api.sweep(cfg)["results"] == []  # resumed
    text, rows = api.leaderboard(exp)
    assert "| mlp |" in text and len(rows[0].accs) == 2
    with pytest.raises(BenchError, match="--workers must be >= 1"):
        api.sweep(cfg, workers=0)


def test_unit_footnotes_are_those_of_the_relation_in_the_unit_column():
    from bench.run import RunResult, results_table, unit_footnotes
    from methods import get_method

    sound, papers = get_method("gap-node")(), get_method("gap-node")(relation="cut-off-graph")
    assert sound.relation_label() != papers.relation_label()
    text = unit_footnotes([("gap-node", papers.relation_label())])
    assert text == f"\n* {papers.relation_label()}: {papers.relation_note()}"
    alg1 = get_method("dpgnn")(relation="in-edges")
    text = unit_footnotes([("gap-node", sound.relation_label()), ("dpgnn", alg1.relation_label()), "dp-mlp"])
    assert f"* {sound.relation_label()}: {sound.relation_note()}" in text
    assert f"* {alg1.relation_label()}: {alg1.relation_note()}" in text and papers.relation_label() not in text

    def row(method, label):
        return RunResult(method, CSBM, "random-75-10-15", 0, "node", {"test_acc": 0.5}, 1.0, 1e-4, 1.0, None, 1.0,
                         unit_label=label)

    table = results_table([row("gap-node", papers.relation_label()), row("progap-node", sound.relation_label())])
    assert f"* {papers.relation_label()}: {papers.relation_note()}" in table
    assert f"* {sound.relation_label()}: {sound.relation_note()}" in table


def test_options_and_catalog():
    gcn = api.options("gcn")
    assert gcn["kind"] == "method" and gcn["privacy_unit"] == "none"
    hidden = next(o for o in gcn["options"] if o["name"] == "hidden")
    assert (hidden["type"], hidden["default"]) == ("int", "64")
    assert api.options("threshold")["kind"] == "attack"
    with pytest.raises(BenchError, match="unknown method"):
        api.options("nope")
    assert "relation_labels" not in gcn
    gap = api.options("gap-node")  # the class's label is the default relation's; every relation listed
    rels = gap["relation_labels"]
    assert set(rels) == {"input-graph", "cut-off-graph"} and gap["privacy_unit"] == rels["input-graph"]["label"]
    assert {s["name"] for s in api.catalog("splits")["splits"]} >= {"public", "disjoint"}
    with pytest.raises(BenchError, match="unknown section"):
        api.catalog("everything")


def test_threads_are_set_for_the_job_and_restored():
    import torch

    before = torch.get_num_threads()
    seen = []
    api.run("mlp", CSBM, overrides={"epochs": 2}, track=False, threads=1, log=lambda line: seen.append(
        torch.get_num_threads()))
    assert seen and set(seen) == {1} and torch.get_num_threads() == before


def test_a_failed_run_crosses_a_process_pool():
    """A RunFailed raised in a worker (the tuner's and the sweep's pools) must unpickle in the parent: before
    ``__reduce__`` it broke the pool, and every later fit failed with BrokenProcessPool."""
    import pickle

    from methods.errors import BudgetError

    e = pickle.loads(pickle.dumps(RunFailed(BudgetError("epsilon=1 does not allow a single step"), "r1")))
    assert isinstance(e, RunFailed) and isinstance(e.cause, BudgetError) and e.run_id == "r1"
    assert str(e) == "BudgetError: epsilon=1 does not allow a single step"
