"""bench sweep: config expansion, cell identity, resume (skip FINISHED, retry FAILED, reclaim orphaned RUNNING
runs and their child runs), failures classified by where they happen, executors, audit cells through bench.api,
and the kill-and-resume fault-tolerance tests (SIGKILL mid-run and mid-attack, rerun, every cell FINISHED once)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
import yaml

from bench import api, tracking
from bench.sweep import SweepError, build_config, load_config, owner_id
from tests.conftest import REPO, bench_env

CSBM = "csbm:nodes=200,classes=3,features=8"


def cfg(experiment, **kw):
    raw = {"experiment": experiment, "datasets": [CSBM], "seeds": [0], "epsilons": [4],
           "set": {"epochs": 5}, "methods": ["mlp", "dp-mlp"]}
    raw.update(kw)
    return build_config(raw, experiment)


def by_cell(experiment):
    """{cell id: Counter(status)} over the top-level runs of the experiment."""
    out: dict[str, Counter] = {}
    for r in tracking.search_runs(experiment):
        if r.data.tags.get("mlflow.parentRunId"):
            continue
        out.setdefault(r.data.tags.get("sweep_cell"), Counter())[r.info.status] += 1
    return out


# --------------------------------------------------------------------------------------
# Config expansion (no training)
# --------------------------------------------------------------------------------------


def test_grid_expands_and_non_private_methods_get_one_cell_per_seed():
    c = build_config({"datasets": [CSBM, "cora"], "seeds": [0, 1], "epsilons": [1, 8],
                      "methods": ["mlp", {"name": "dp-mlp", "set": {"epochs": 3}}]})
    runs = [x for x in c.cells if x.kind == "run"]
    mlp = [x for x in runs if x.method == "mlp"]
    dp = [x for x in runs if x.method == "dp-mlp"]
    assert len(mlp) == 2 * 2 and all(math.isinf(x.epsilon) for x in mlp)
    assert len(dp) == 2 * 2 * 2 and {x.epsilon for x in dp} == {1.0, 8.0}
    assert {x.split for x in runs if x.dataset == "cora"} == {"public"}
    assert {x.split for x in runs if x.dataset == CSBM} == {"random-75-10-15"}
    assert all(x.overrides == ("epochs=3",) for x in dp)
    assert len({x.cell_id for x in c.cells}) == len(c.cells)


def test_identity_is_stable_and_changes_with_the_resolved_config():
    a = cfg("x").cells
    assert [x.cell_id for x in a] == [x.cell_id for x in cfg("x").cells]
    # the experiment is not part of a cell's identity; a hyperparameter, epsilon or seed is
    assert [x.cell_id for x in a] == [x.cell_id for x in cfg("y").cells]
    assert {x.cell_id for x in cfg("x", set={"epochs": 6}).cells}.isdisjoint({x.cell_id for x in a})
    dp4 = [x.cell_id for x in a if x.method == "dp-mlp"]
    dp8 = [x.cell_id for x in cfg("x", epsilons=[8]).cells if x.method == "dp-mlp"]
    assert dp4 != dp8
    # a default value written out explicitly resolves to the same cell
    from methods.base import get_method

    default_lr = get_method("mlp")().config.lr
    same = cfg("x", methods=[{"name": "mlp", "set": {"lr": default_lr}}]).cells
    assert same[0].cell_id == next(x.cell_id for x in a if x.method == "mlp")


def test_unsupported_split_is_skipped_with_a_reason_and_per_method_split_override_works():
    c = build_config({"datasets": ["computers"], "epsilons": [8],
                      "methods": ["privgnn", {"name": "pate-m", "splits": ["private-public"]}, "dp-mlp"]})
    privgnn = [x for x in c.cells if x.method == "privgnn"]
    assert len(privgnn) == 1 and "private-public" in privgnn[0].skip
    pate = [x for x in c.cells if x.method == "pate-m"]
    assert len(pate) == 1 and pate[0].skip is None and pate[0].split == "private-public"
    c2 = build_config({"datasets": ["computers"], "splits": ["public"], "methods": ["mlp"]})
    assert "public" in c2.cells[0].skip  # a split the dataset does not have


@pytest.mark.parametrize("raw, msg", [
    ({"datasets": [CSBM], "methods": ["nope"]}, "nope"),
    ({"datasets": [CSBM], "methods": ["mlp"], "epsilon": [1]}, "unknown key"),
    ({"datasets": [CSBM], "methods": [{"name": "mlp", "set": {"no_such_hp": 1}}]}, "no_such_hp"),
    ({"datasets": [CSBM], "methods": ["dp-mlp"], "epsilons": [0]}, "epsilon must be > 0"),
    ({"datasets": [CSBM], "methods": ["mlp"], "seeds": [1, 1]}, "seeds"),
    ({"methods": ["mlp"]}, "no datasets"),
    ({"datasets": [CSBM], "methods": ["mlp"], "audits": {"modes": ["sometimes"]}}, "audits.modes"),
    ({"datasets": [CSBM], "methods": ["mlp"], "attacks": ["no-such-attack"]}, "no-such-attack"),
])
def test_bad_configs_are_one_line_errors(raw, msg):
    from methods.base import BenchError

    with pytest.raises(BenchError, match=msg):
        build_config(raw)


def test_cli_errors_exit_2_with_one_line(tmp_path, capsys):
    from bench.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("methods: [mlp\n")
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump({"datasets": [CSBM], "methods": ["mlp"]}))
    for args in (["sweep", str(bad)], ["sweep", str(tmp_path / "missing.yaml")], ["sweep", str(ok), "--workers", "0"],
                 ["sweep", str(ok), "--address", "auto"], ["sweep", str(ok), "--max-retries", "-1"], ["sweep", str(ok), "--threads", "-1"]):
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err


# --------------------------------------------------------------------------------------
# Resume in-process
# --------------------------------------------------------------------------------------


def test_finished_cells_are_not_repeated_and_dry_run_lists_them(capsys):
    exp = "sweep-resume"
    c = cfg(exp)
    s = api.sweep(c, progress=False)
    assert [r["status"] for r in s["results"]] == ["finished"] * 2
    again = api.sweep(c, progress=False)
    assert again["results"] == [] and sorted(again["done_before"]) == sorted(x.cell_id for x in c.cells)
    dry = api.sweep(cfg(exp, seeds=[0, 1]), dry_run=True, progress=False)
    assert len(dry["todo"]) == 2 and len(dry["done_before"]) == 2
    err = capsys.readouterr().err
    assert "2 to run, 2 done" in err and "run   dp-mlp" in err and "done  mlp" in err
    counts = by_cell(exp)
    assert len(counts) == 2 and all(v == Counter(FINISHED=1) for v in counts.values())
    # the runs are the harness's runs: params, metrics and the spent epsilon from the ledger
    r = next(r for r in tracking.search_runs(exp) if r.data.params["method"] == "dp-mlp")
    assert r.data.params["target_epsilon"] == "4.0" and 0 < r.data.metrics["epsilon"] <= 4.0
    assert r.data.tags["sweep_owner"].split(":")[1] == str(os.getpid())


def test_a_sweep_resumes_from_a_sharded_export_alone(tmp_path):
    """--export DIR/: one file per dataset, appended as cells finish; another store (here: another experiment)
    resumes from the directory alone."""
    from bench import records

    export = f"{tmp_path / 'runs'}/"
    c = cfg("sweep-sharded-a")
    assert [r["status"] for r in api.sweep(c, export=export, progress=False)["results"]] == ["finished"] * 2
    (f,) = (tmp_path / "runs").glob("*.jsonl")
    assert f.name == "csbm_nodes=200_classes=3_features=8.jsonl" and len(f.read_text().splitlines()) == 2
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(["manifest.json", f.name])  # --check reads it
    assert records.done_cells(tmp_path / "runs") == {x.cell_id for x in c.cells}
    again = api.sweep(cfg("sweep-sharded-b"), export=export, progress=False)
    assert again["results"] == [] and sorted(again["done_before"]) == sorted(x.cell_id for x in c.cells)


def test_failed_cells_are_retried_up_to_max_retries(monkeypatch):
    from methods.baselines import MLPMethod

    exp = "sweep-retry"
    calls = []
    original = MLPMethod.fit

    def flaky(self, *a, **k):
        calls.append(1)
        if len(calls) <= 2:
            raise RuntimeError("transient failure")
        return original(self, *a, **k)

    monkeypatch.setattr(MLPMethod, "fit", flaky)
    c = cfg(exp, methods=["mlp"])
    s = api.sweep(c, max_retries=1, progress=False)  # fails twice: gives up after 1 retry
    assert s["results"][0]["status"] == "failed" and s["results"][0]["attempts"] == 2
    assert by_cell(exp)[c.cells[0].cell_id] == Counter(FAILED=2)
    again = api.sweep(c, max_retries=1, progress=False)
    assert again["results"] == [] and again["gave_up"] == [c.cells[0].cell_id]
    third = api.sweep(c, max_retries=2, progress=False)  # a larger limit allows one more attempt, which succeeds
    assert [r["status"] for r in third["results"]] == ["finished"]
    assert by_cell(exp)[c.cells[0].cell_id] == Counter(FAILED=2, FINISHED=1)


def test_running_cells_of_dead_owners_are_reclaimed_live_ones_left_alone():
    exp = "sweep-orphans"
    c = cfg(exp, methods=["mlp"], seeds=[0, 1])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = owner_id().split(":")[0]
    orphan = tracking.start_run(exp, "orphan", tags={"sweep_cell": c.cells[0].cell_id,
                                                    "sweep_owner": f"{host}:{dead.pid}:1"})
    live = tracking.start_run(exp, "live", tags={"sweep_cell": c.cells[1].cell_id, "sweep_owner": owner_id()})
    try:
        s = api.sweep(c, progress=False)
        assert s["reclaimed"] == [orphan.run_id]
        assert s["running_elsewhere"] == [c.cells[1].cell_id]
        assert [r["cell_id"] for r in s["results"]] == [c.cells[0].cell_id]
        got = tracking.client().get_run(orphan.run_id)
        assert got.info.status == "KILLED" and "orphaned" in got.data.tags["error"]
        assert tracking.client().get_run(live.run_id).info.status == "RUNNING"
    finally:
        live.end("KILLED")
    assert by_cell(exp)[c.cells[0].cell_id] == Counter(KILLED=1, FINISHED=1)


# --------------------------------------------------------------------------------------
# Executors
# --------------------------------------------------------------------------------------


@pytest.mark.slow  # ~50 s on a loaded 2-core machine: each spawned worker imports torch and mlflow
def test_process_executor_logs_to_the_same_store():
    exp = "sweep-process"
    c = cfg(exp, seeds=[0, 1], methods=["mlp"])
    s = api.sweep(c, executor="process", workers=2, progress=False)
    assert sorted(r["status"] for r in s["results"]) == ["finished", "finished"]
    assert {k: v for k, v in by_cell(exp).items()} == {x.cell_id: Counter(FINISHED=1) for x in c.cells}


@pytest.mark.slow
def test_ray_executor_on_a_local_instance():
    pytest.importorskip("ray")
    exp = "sweep-ray"
    c = cfg(exp, seeds=[0, 1])
    s = api.sweep(c, executor="ray", workers=2, progress=False)
    assert sorted(r["status"] for r in s["results"]) == ["finished"] * 4
    assert by_cell(exp) == {x.cell_id: Counter(FINISHED=1) for x in c.cells}
    pids = {r.data.tags.get("sweep_owner") for r in tracking.search_runs(exp)}
    assert pids == {owner_id()}  # the driver owns the cells; Ray kills its workers with it


# --------------------------------------------------------------------------------------
# Fault tolerance: SIGKILL mid-sweep, rerun, every cell FINISHED exactly once
# --------------------------------------------------------------------------------------

SLOW_PLUGIN = '''
import time
from methods import register
from methods.baselines import MLPMethod

@register("slow-mlp")
class SlowMLP(MLPMethod):
    """mlp that takes at least a second per fit, so a sweep can be killed mid-run"""
    description = "mlp, slowed down (tests)"

    def fit(self, *a, **k):
        time.sleep(1.0)
        return super().fit(*a, **k)
'''


def test_sigkill_mid_sweep_then_rerun_finishes_every_cell_exactly_once(tmp_path):
    exp = "sweep-kill"
    plugin = tmp_path / "slow_plugin.py"
    plugin.write_text(SLOW_PLUGIN)
    seeds = list(range(4))
    conf = tmp_path / "kill.yaml"
    conf.write_text(yaml.safe_dump({"experiment": exp, "datasets": [CSBM], "seeds": seeds, "set": {"epochs": 5},
                                    "methods": ["slow-mlp"]}))
    cmd = [sys.executable, "-m", "bench", "--plugin", str(plugin), "sweep", str(conf), "--no-progress"]
    env = bench_env()
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 240
    try:
        while time.time() < deadline:
            statuses = [r.info.status for r in tracking.search_runs(exp)]
            if statuses.count("FINISHED") >= 1 and statuses.count("RUNNING") == 1:  # mid-run: leaves an orphan
                break
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.2)
        else:
            pytest.fail("no cell finished in time")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    first_out = proc.stdout.read()
    before = Counter(r.info.status for r in tracking.search_runs(exp))
    print(f"\n--- after SIGKILL: run statuses {dict(before)}\n{first_out}")
    assert proc.returncode == -signal.SIGKILL
    assert 1 <= before["FINISHED"] < len(seeds), before  # killed mid-way
    summary = tmp_path / "summary.json"
    r = subprocess.run(cmd + ["-o", str(summary)], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    print(f"--- rerun (exit {r.returncode}):\n{r.stderr}")
    assert r.returncode == 0, r.stderr
    counts = by_cell(exp)
    import json

    s = json.loads(summary.read_text())
    cells = set(s["done_before"]) | {x["cell_id"] for x in s["results"]}
    assert len(cells) == len(seeds) and len(s["done_before"]) == before["FINISHED"]
    finished = {cid for cid, c in counts.items() if c["FINISHED"]}
    assert finished == cells
    assert all(counts[cid]["FINISHED"] == 1 for cid in cells)  # exactly once
    assert not any(c["RUNNING"] for c in counts.values())  # the orphan was marked KILLED, not left RUNNING
    assert before["RUNNING"] == 1 and sum(c["KILLED"] for c in counts.values()) == 1
    assert "marked KILLED" in r.stderr
    print(f"--- end state per cell: {[dict(c) for c in counts.values()]}")


@pytest.mark.parametrize("name", ["quick", "leaderboard", "drw", "dpgnn", "gap", "privgnn"])
def test_shipped_configs_parse_and_every_cell_can_run(name):
    c = load_config(REPO / "configs" / f"{name}.yaml")
    assert c.cells and not [x.label for x in c.cells if x.skip]  # per-method splits route every method correctly
    if name == "quick":
        from methods.base import available_methods, get_method

        # every built-in method (plugins that other tests register in this process are not shipped methods)
        shipped = {m for m in available_methods() if get_method(m).__module__.startswith("methods.")}
        assert {x.method for x in c.cells} == shipped
        assert {x.dataset for x in c.cells} == {"cora", "citeseer"} and c.attacks == ["threshold"]
        # random splits (the public ones leave DP methods at chance) and one budget per unit at the papers' scale
        assert {x.split for x in c.cells} == {"random-75-10-15", "private-public"}
        units = {get_method(x.method).privacy_unit: x.epsilon for x in c.cells}
        assert units == {"none": float("inf"), "edge": 4.0, "node": 8.0, "feature": 8.0}


def test_audit_cells_run_through_bench_api_and_resume(monkeypatch):
    """The audit job is faked at bench.api.audit (the function the sweep's cells call) by one that logs an audit
    run with the tags it is given, as the real one does; the cell records the run id the job returns."""
    from bench.leaderboard import collect

    calls = []

    def fake_audit(method, dataset, **kw):
        calls.append({"method": method, "dataset": dataset, **kw})
        run = tracking.start_run(kw["experiment"], "audit", tags={
            **kw["tags"], "kind": "audit", "method": method, "dataset": dataset, "split": kw["split"],
            "audit_mode": kw["mode"], "verdict": "VIOLATION"})
        run.log_params({"target_epsilon": str(kw["epsilon"]), "delta": 1e-3, "config_hash": "x"})
        run.log_metrics({"claimed_epsilon": kw["epsilon"], "epsilon_lb": 0.25, "audit_seconds": 0.1})
        run.end("FINISHED")  # a VIOLATION is a finished audit, not a failure to retry
        return type("Outcome", (), {"run_id": run.run_id, "verdict": "VIOLATION"})()

    monkeypatch.setattr(api, "audit", fake_audit)
    exp = "sweep-audit"
    c = cfg(exp, audits={"modes": ["one-run"], "trials": 3})
    audits = [x for x in c.cells if x.kind == "audit"]
    assert [(x.method, x.audit_mode) for x in audits] == [("dp-mlp", "one-run")]  # private methods only
    s = api.sweep(c, progress=False)
    assert sorted(r["status"] for r in s["results"]) == ["finished"] * 3
    (a,) = calls
    assert (a["method"], a["epsilon"], a["mode"], a["trials"], a["seed"], a["experiment"]) == (
        "dp-mlp", 4.0, "one-run", 3, 0, exp)
    assert by_cell(exp) == {x.cell_id: Counter(FINISHED=1) for x in c.cells}
    audit_result = next(r for r in s["results"] if r["cell_id"] == audits[0].cell_id)
    assert tracking.client().get_run(audit_result["run_id"]).data.tags["sweep_cell"] == audits[0].cell_id
    assert api.sweep(c, progress=False)["results"] == [] and len(calls) == 1  # resumed: not audited twice
    row = next(r for r in collect(exp) if r.method == "dp-mlp")
    assert row.verdict == "VIOLATION" and row.audit_lb == [0.25]


def test_a_real_audit_cell_records_its_run_directly():
    exp = "sweep-audit-real"
    c = build_config({"experiment": exp, "datasets": ["csbm:nodes=300,classes=3,features=16,degree=4"],
                      "epsilons": [2], "methods": [{"name": "dp-mlp", "set": {"epochs": 3}}],
                      "audits": {"modes": ["one-run"], "canaries": 8}})
    s = api.sweep(c, progress=False)
    (audit_cell,) = [x for x in c.cells if x.kind == "audit"]
    res = {r["cell_id"]: r for r in s["results"]}
    assert {r["status"] for r in res.values()} == {"finished"}
    run = tracking.client().get_run(res[audit_cell.cell_id]["run_id"])
    tags = run.data.tags
    assert tags["kind"] == "audit" and tags["sweep_cell"] == audit_cell.cell_id and tags["sweep_kind"] == "audit"
    assert tags["sweep_owner"] == owner_id() and tags["verdict"] in ("PASS", "VIOLATION")
    assert run.data.params["canaries"] == "8" and run.info.status == "FINISHED"


# --------------------------------------------------------------------------------------
# Failures classified by where they happen
# --------------------------------------------------------------------------------------


def test_a_bench_error_inside_fit_is_a_failed_run_not_a_skipped_cell(monkeypatch):
    """calibrate_noise and friends raise BenchErrors inside fit: the run opened and is FAILED, so the cell failed
    (and is retried); only an error before any run opened skips a cell."""
    from methods.base import BudgetError
    from methods.dp_mlp import DPMLP

    def refuses(self, ctx):
        raise BudgetError("epsilon=4 does not allow a single step (as calibrate_noise says)")

    monkeypatch.setattr(DPMLP, "_fit", refuses)
    exp = "sweep-bench-error-in-fit"
    c = cfg(exp, methods=["dp-mlp"])
    s = api.sweep(c, max_retries=1, progress=False)
    (r,) = s["results"]
    assert r["status"] == "failed" and r["attempts"] == 2 and "BudgetError: epsilon=4" in r["error"]
    assert tracking.client().get_run(r["run_id"]).info.status == "FAILED"
    assert by_cell(exp)[c.cells[0].cell_id] == Counter(FAILED=2)
    # a task the method cannot take is rejected before a run opens: skipped, nothing logged
    exp2 = "sweep-rejected-before-run"
    c2 = cfg(exp2, methods=["dp-mlp"], datasets=["csbm:nodes=6,classes=2"])
    s2 = api.sweep(c2, progress=False)
    assert [x["status"] for x in s2["results"]] == ["skipped"] and "empty" in s2["results"][0]["error"]
    assert by_cell(exp2) == {}


def test_delta_zero_with_a_finite_epsilon_is_a_config_error():
    with pytest.raises(SweepError, match="delta = 0"):
        cfg("x", delta=0)
    assert cfg("x", delta=0, methods=["mlp"]).cells  # a non-private method has no budget to meet


def test_shared_set_goes_through_the_one_override_parser():
    c = cfg("x", set={"mlp.hidden": 8, "epochs": 5})
    mlp = next(x for x in c.cells if x.method == "mlp")
    dp = next(x for x in c.cells if x.method == "dp-mlp")
    assert "hidden=8" in mlp.overrides and not any(o.startswith("hidden=") for o in dp.overrides)
    with pytest.raises(SweepError, match="not one of the methods"):
        cfg("x", set={"gcn.hidden": 8})
    with pytest.raises(SweepError, match="unknown hyperparameter 'no_such_hp'"):
        cfg("x", set={"no_such_hp": 1})


# --------------------------------------------------------------------------------------
# Orphaned child runs
# --------------------------------------------------------------------------------------


def test_running_children_of_a_reclaimed_run_are_reclaimed_too():
    exp = "sweep-orphan-children"
    c = cfg(exp, methods=["mlp"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = owner_id().split(":")[0]
    tags = {"sweep_cell": c.cells[0].cell_id, "sweep_owner": f"{host}:{dead.pid}:1"}
    parent = tracking.start_run(exp, "orphan", tags=tags)
    child = tracking.start_run(exp, "attack <- orphan", tags=tags, parent=parent)
    old_child = tracking.start_run(exp, "attack (no owner tags)", parent=parent)
    s = api.sweep(c, progress=False)
    assert s["reclaimed"][0] == parent.run_id and set(s["reclaimed"]) == {parent.run_id, child.run_id,
                                                                           old_child.run_id}
    for run in (parent, child, old_child):
        got = tracking.client().get_run(run.run_id)
        assert got.info.status == "KILLED" and "orphaned" in got.data.tags["error"]
    assert [r["status"] for r in s["results"]] == ["finished"]
    assert not [r for r in tracking.search_runs(exp) if r.info.status == "RUNNING"]


SLOW_ATTACK_PLUGIN = '''
import os, time
from pathlib import Path
from attacks import Attack, register_attack

@register_attack("slow-attack")
class SlowAttack(Attack):
    """scores nothing until killed (tests)"""
    description = "sleeps (tests)"

    def scores(self, view):
        Path(os.environ["SLOW_ATTACK_MARKER"]).write_text("attacking")
        time.sleep(float(os.environ.get("SLOW_ATTACK_SECONDS", "120")))
        return {"constant": [0.0] * len(view.candidates)}
'''


def test_sigkill_during_an_attack_child_run_then_rerun_leaves_nothing_running(tmp_path):
    exp = "sweep-kill-attack"
    plugin = tmp_path / "slow_attack.py"
    plugin.write_text(SLOW_ATTACK_PLUGIN)
    marker = tmp_path / "attacking"
    conf = tmp_path / "attack.yaml"
    conf.write_text(yaml.safe_dump({"experiment": exp, "datasets": [CSBM], "set": {"epochs": 3}, "methods": ["mlp"],
                                    "attacks": ["slow-attack"], "bootstrap": 0}))
    cmd = [sys.executable, "-m", "bench", "--plugin", str(plugin), "sweep", str(conf), "--no-progress"]
    proc = subprocess.Popen(cmd, env=bench_env({"SLOW_ATTACK_MARKER": str(marker)}), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 240
        while not marker.exists():
            assert proc.poll() is None, proc.stdout.read()
            assert time.time() < deadline, "the attack never started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = [(r.info.status, bool(r.data.tags.get("mlflow.parentRunId"))) for r in tracking.search_runs(exp)]
    assert sorted(before) == [("RUNNING", False), ("RUNNING", True)], before  # the target and its attack child
    r = subprocess.run(cmd, env=bench_env({"SLOW_ATTACK_MARKER": str(marker), "SLOW_ATTACK_SECONDS": "0"}),
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    runs = tracking.search_runs(exp)
    assert not [x for x in runs if x.info.status == "RUNNING"]
    assert sorted((x.info.status, bool(x.data.tags.get("mlflow.parentRunId"))) for x in runs) == [
        ("FINISHED", False), ("FINISHED", True), ("KILLED", False), ("KILLED", True)]
    assert r.stderr.count("marked KILLED") == 2


def test_run_and_verify_cells_fit_inside_the_teacher_cache(tmp_path, monkeypatch):
    """With $BENCH_TEACHER_CACHE set, run cells (target and attack references) and verify cells fit inside the
    PrivGNN teacher cache (the determinism fit's bypass is tested in test_privgnn); without it, neither does."""
    from types import SimpleNamespace

    from bench.sweep.execute import TEACHER_CACHE_ENV, execute_cell
    from methods.privgnn import common

    seen = []

    def fake_run(**kw):
        seen.append(("run", common._CACHE and common._CACHE["dir"]))
        return [SimpleNamespace(run_id="r")]

    def fake_verify(**kw):
        seen.append(("verify", common._CACHE and common._CACHE["dir"]))
        return SimpleNamespace(run_id="v")

    c = cfg("sweep-teacher-cache", methods=["dp-mlp"], verify={"seeds": [0], "quick": True})
    assert sorted(x.kind for x in c.cells) == ["run", "verify"]

    def execute_all():
        seen.clear()
        for cell in c.cells:
            out = execute_cell(cell.to_dict(), "x", "owner", {}, 0, 0, run=fake_run, audit=None, verify=fake_verify)
            assert out["status"] == "finished", out
        return sorted(seen)

    monkeypatch.setenv(TEACHER_CACHE_ENV, str(tmp_path / "teachers"))
    assert execute_all() == [("run", str(tmp_path / "teachers")), ("verify", str(tmp_path / "teachers"))]
    assert common._CACHE is None  # closed after the cell
    monkeypatch.delenv(TEACHER_CACHE_ENV)
    assert execute_all() == [("run", None), ("verify", None)]


def test_sweep_teacher_cache_option_reaches_run_cells_and_is_restored(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from bench.sweep.execute import TEACHER_CACHE_ENV
    from methods.privgnn import common

    seen = []

    def fake_run(**kw):
        seen.append(common._CACHE and common._CACHE["dir"])
        return [SimpleNamespace(run_id=None)]

    monkeypatch.setattr(api, "run", fake_run)
    monkeypatch.delenv(TEACHER_CACHE_ENV, raising=False)
    api.sweep(cfg("sweep-teacher-cache-api", methods=["mlp"]), progress=False, teacher_cache=tmp_path / "t")
    assert seen == [str(tmp_path / "t")] and TEACHER_CACHE_ENV not in os.environ
