"""One resolved plan per job (:mod:`bench.plan`): frozen, refusing bad input while it is built, executed without
reading the request again, with the sweep's cell ids and the journey of a request as they were."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from bench import api
from bench.plan import AuditSpec, RunSpec, VerifySpec, plan_audit, plan_run, plan_verify
from methods.errors import BenchError

GRAPH = "csbm:nodes=300,features=16"
REPO = Path(__file__).resolve().parents[1]


def _audit_kwargs(**kw) -> dict:
    """bench.api.audit's keyword arguments for the test audit."""
    return {"method": "dp-mlp", "dataset": GRAPH, "epsilon": 4.0, "canaries": 20, "overrides": ["epochs=1"],
            "track": False, **kw}


def _audit_spec(**kw) -> AuditSpec:
    """The same request as an AuditSpec: a run request (one method, one seed) and the audit's options."""
    kw = _audit_kwargs(**kw)
    run = RunSpec(methods=[kw.pop("method")], dataset=kw.pop("dataset"), epsilon=kw.pop("epsilon"),
                  overrides=kw.pop("overrides"), track=kw.pop("track"), seeds=[kw.pop("seed", 0)], progress=False)
    return AuditSpec(run=run, **kw)


def test_plans_are_frozen():
    plan = plan_run(RunSpec(methods=["mlp", "dp-mlp"], dataset=GRAPH, epsilon=4.0, attacks=["threshold"],
                            track=False))
    audit = plan_audit(_audit_spec())
    for obj, name in [(plan, "split"), (plan, "seeds"), (plan.methods[0], "overrides"), (plan.tracking, "track"),
                      (plan.attacks, "names"), (audit, "canaries"), (audit, "budget")]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, None)
    with pytest.raises(TypeError):
        plan.methods[1].overrides["hidden"] = "4"  # the settings a run uses cannot change after planning
    with pytest.raises(TypeError):
        plan.methods[1].hparams["hidden"] = 4
    with pytest.raises(TypeError):
        plan.attacks.overrides["threshold"] = {}
    with pytest.raises(TypeError):
        plan.tracking.tags["x"] = "y"


BAD_RUNS = [
    dict(methods="nope", dataset=GRAPH),
    dict(methods="mlp", dataset="nope"),
    dict(methods="mlp", dataset=GRAPH, split="public"),
    dict(methods="mlp", dataset=GRAPH, seeds=[-1]),
    dict(methods="mlp,mlp", dataset=GRAPH),
    dict(methods="dp-mlp", dataset=GRAPH),  # private: no epsilon
    dict(methods="dp-mlp", dataset=GRAPH, epsilon=-1.0),
    dict(methods="dp-mlp", dataset=GRAPH, epsilon=4.0, delta=0.0),
    dict(methods="mlp", dataset=GRAPH, overrides={"nope": 1}),
    dict(methods="mlp", dataset=GRAPH, overrides={"hidden": "wide"}),
    dict(methods="mlp", dataset=GRAPH, attacks="nope"),
    dict(methods="mlp", dataset=GRAPH, attacks="threshold", attack_overrides={"nope": 1}),
]
BAD_AUDITS = [dict(mode="multi-run", trials=1), dict(hops=-1), dict(mode="pooled"), dict(mode="nope"), dict(method="mlp", canary_type="gradient")]


@pytest.fixture
def no_run_may_open(monkeypatch):
    from bench import tracking

    def opened(*a, **k):
        raise AssertionError("a run was opened for bad input")

    monkeypatch.setattr(tracking, "start_run", opened)
    monkeypatch.setattr(tracking, "TrackedRun", opened)


@pytest.mark.parametrize("kw", BAD_RUNS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_bad_run_input_is_refused_while_planning(kw, no_run_may_open):
    with pytest.raises(BenchError):
        api.run(**kw, track=True)


@pytest.mark.parametrize("kw", BAD_AUDITS, ids=str)
def test_bad_audit_input_is_refused_while_planning(kw, no_run_may_open):
    with pytest.raises(BenchError):
        plan_audit(_audit_spec(**kw))
    with pytest.raises(BenchError):
        api.audit(**{**_audit_kwargs(**kw), "track": True})


def test_bad_verify_input_is_refused_while_planning(no_run_may_open):
    with pytest.raises(BenchError, match="finite --epsilon"):
        plan_verify(VerifySpec(run=RunSpec(methods=["dp-mlp"], dataset=GRAPH)))
    with pytest.raises(BenchError):
        api.verify("dp-mlp", GRAPH, epsilon=4.0, checks=["nope"], track=True)


@pytest.fixture
def no_resolution(monkeypatch):
    """After planning, every function that reads a request's names or options fails if called."""

    def patch():
        import bench.datasets
        import bench.datasets.registry
        import bench.hparams
        import bench.plan
        import bench.split_names

        def again(*a, **k):
            raise AssertionError("the request was resolved again below its plan")

        for mod, names in [(bench.plan, ["get_method", "scoped_overrides", "load_dataset", "resolve_device"]),
                           (bench.split_names, ["check_split"]),
                           (bench.datasets, ["resolve_dataset", "parse_dataset_name"]),
                           (bench.datasets.registry, ["resolve_dataset", "parse_dataset_name"]),
                           (bench.hparams, ["lookup", "resolve"])]:
            for name in names:
                monkeypatch.setattr(mod, name, again)

    return patch


def test_jobs_execute_their_plan_without_resolving_it_again(no_resolution):
    from bench.audit import run_audit
    from bench.run import run_plan

    plan = plan_run(RunSpec(methods=["mlp", "dp-mlp"], dataset=GRAPH, epsilon=4.0, seeds=[0, 1],
                            overrides=["epochs=1"], track=False, progress=False, log_release=False))
    audit = plan_audit(_audit_spec())
    no_resolution()
    results = run_plan(plan)
    assert [(r.method, r.seed) for r in results] == [("mlp", 0), ("mlp", 1), ("dp-mlp", 0), ("dp-mlp", 1)]
    assert run_audit(audit).verdict in ("PASS", "VIOLATION")


def test_a_method_plan_is_the_sweep_cells_and_the_runs_settings():
    """A sweep cell's overrides are its plan's (the checked-in entry under the config's ``set``), so the run
    planned from the cell hashes the same hyperparameters as the cell's id."""
    cfg = {"methods": [{"name": "dp-mlp", "set": {"hidden": 8}}], "datasets": [GRAPH], "epsilons": [4.0],
           "seeds": [0]}
    (cell,) = api.cells(cfg)
    (m,) = plan_run(RunSpec(methods=["dp-mlp"], dataset=cell.dataset, split=cell.split, epsilon=cell.epsilon,
                            overrides=list(cell.overrides), track=False)).methods
    assert tuple(f"{k}={v}" for k, v in sorted(m.overrides.items())) == cell.overrides
    assert m.hparams["hidden"] == 8


def test_sweep_cell_ids_are_unchanged():
    """The cell ids of the shipped configs are those before runs were planned (tests/data/sweep_cell_ids.json,
    written on the commit it names): a changed id would make every sweep rerun its finished cells. A deliberate
    change of a config or of configs/hparams*.yaml changes them: rewrite the file then, saying why."""
    golden = json.loads((REPO / "tests" / "data" / "sweep_cell_ids.json").read_text())["configs"]
    for config, want in golden.items():
        ids = [c.cell_id for c in api.cells(REPO / config)]
        assert ids[:3] == want["first"] and len(ids) == want["cells"], config
        assert hashlib.sha256("\n".join(ids).encode()).hexdigest() == want["sha256"], config


AUDIT = ["audit", "-m", "dp-mlp", "-d", "csbm:nodes=300,features=15", "-e", "4", "--no-track", "--no-progress"]


def test_an_audits_journey_resolves_its_request_once():
    """``bench audit`` from the command line to the first training (bench/studies/trace_journey.py): each function that
    reads part of the request runs once (the request is built once, before the heavy imports, and nothing below
    the plan reads a name or an option again), within the modules and climbs the journey takes now (31 modules, 14
    climbs: ``bench study trace-journey``)."""
    from bench.studies.trace_journey import RESOLVERS, trace

    j = trace(AUDIT)
    assert j.reached
    s = j.summary()
    assert s["modules"] <= 31 and s["climbs"] <= 14, s
    assert all(j.resolutions[k] == 1 for k in RESOLVERS if k != "bench.splits:make_task"), j.resolutions
    assert j.resolutions["bench.splits:make_task"] == 0  # the plan splits with the name the request checked


def test_a_journey_counts_from_where_it_starts():
    """``--start``: the journey from :func:`bench.audit.audit_one` (the plan and the audit's set-up) is the tail of
    the command's, starting in that module; entries are calls into repository functions, so a dataclass's generated
    ``__init__`` or a comprehension never counts as a return to the module that runs it; a start never reached is a
    journey that did not reach its stop."""
    from bench.studies.trace_journey import INLINE, trace

    whole, tail = trace(AUDIT), trace(AUDIT, start="bench.audit:audit_one")
    assert tail.reached and tail.sequence[0] == "bench.audit"
    assert set(tail.sequence) <= set(whole.sequence) and len(tail.sequence) < len(whole.sequence)
    assert tail.summary()["modules"] <= 23 and tail.summary()["climbs"] <= 11, tail.summary()
    assert "<listcomp>" in INLINE and "<genexpr>" in INLINE
    assert not trace(AUDIT, start="bench.audit:no_such_function").reached
