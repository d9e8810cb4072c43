"""An interrupted ``bench sweep --export`` loses nothing: a sweep interrupted (SIGINT, SIGTERM) or killed (SIGKILL)
between a cell's FINISHED and its export line, or while cells are in flight, then resumed, leaves an export with
exactly the records of an uninterrupted sweep; after an interrupt no cell starts. Also: a torn last line of an
export, and processes opening a fresh tracking store together.

The in-process variants (an interrupt raised where the signal would land) run by default; the ones that signal a
real ``python -m bench sweep`` are slow."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, bench_env

CSBM = "csbm:nodes=200,classes=3,features=8"
#: three cells, the first two with no privacy ledger, the third with one
RAW = {"datasets": [CSBM], "seeds": [0, 1], "epsilons": [4], "set": {"epochs": 2},
       "methods": ["mlp", {"name": "dp-mlp", "seeds": [0]}]}


class Killed(BaseException):
    """SIGKILL, as far as this process can act it: nothing after it runs (not the sweep's closing repair)."""


def config(experiment: str, raw: dict | None = None):
    from bench.sweep import build_config

    return build_config({**(raw or RAW), "experiment": experiment}, experiment)


def lines(path) -> list[dict]:
    """Every record line of an export, in file order (duplicates kept)."""
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def stable(rec: dict) -> dict:
    """A record without what differs between two runs of one cell: its run id, start time, wall seconds and the
    threads it ran on."""
    out = {k: v for k, v in rec.items() if k not in ("run_id", "start_time")}
    out["metrics"] = {k: v for k, v in rec["metrics"].items() if not k.endswith("seconds")}
    out["params"] = {k: v for k, v in rec["params"].items() if k != "threads"}
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[dict]:
    """The export of an uninterrupted sweep of :data:`RAW`."""
    from bench import api

    export = tmp_path_factory.mktemp("reference") / "runs.jsonl"
    s = api.sweep(config("sweep-int-reference"), export=str(export), progress=False)
    assert [r["status"] for r in s["results"]] == ["finished"] * 3
    return [stable(r) for r in lines(export)]


def interrupt_after(monkeypatch, k: int, exc: BaseException, then=None) -> None:
    """Raise ``exc`` as the ``k``-th cell returns: its run is FINISHED in the store, its line not yet written.
    ``then(result)`` runs just before."""
    from bench import api

    original, done = api._sweep_cell, []

    def cell(*job):
        res = original(*job)
        done.append(res)
        if len(done) == k:
            if then:
                then(res)
            raise exc
        return res

    monkeypatch.setattr(api, "_sweep_cell", cell)


def tear(export: Path):
    """A kill in the middle of appending the cell's line: half of it, no newline."""
    def write_half(res: dict) -> None:
        from bench import records

        line = json.dumps(records.record_for(res["run_id"]), sort_keys=True)
        with open(export, "a") as f:
            f.write(line[: len(line) // 2])
    return write_half


def no_repair(monkeypatch) -> None:
    monkeypatch.setattr("bench.sweep.runner.repair_export", lambda *a, **k: [])


def dead_after_kill(monkeypatch) -> dict:
    """After :class:`Killed`, the sweep's closing repair cannot run either (the process is gone)."""
    from bench.sweep import runner

    original, state = runner.repair_export, {"dead": False}

    def repair(*a, **k):
        if state["dead"]:
            raise Killed
        return original(*a, **k)

    monkeypatch.setattr(runner, "repair_export", repair)
    return state


def test_sigint_between_finished_and_export_then_resume_exports_every_cell(tmp_path, monkeypatch, reference):
    """Ctrl-C right after a cell's run ends FINISHED: the interrupted sweep's closing repair writes its line; no
    further cell starts; the resumed export is the uninterrupted one."""
    from bench import api, tracking

    for k in (1, 3):  # after the first cell, after the last
        exp, export = f"sweep-int-sigint-{k}", tmp_path / f"sigint-{k}.jsonl"
        with monkeypatch.context() as m:
            interrupt_after(m, k, KeyboardInterrupt())
            with pytest.raises(KeyboardInterrupt):
                api.sweep(config(exp), export=str(export), progress=False)
        assert len(tracking.search_runs(exp)) == k  # nothing started after the interrupt
        assert len(lines(export)) == k
        again = api.sweep(config(exp), export=str(export), progress=False)
        assert len(again["results"]) == 3 - k and again["export_repaired"] == []
        assert [stable(r) for r in lines(export)] == reference


@pytest.mark.parametrize("torn", [False, True], ids=["between", "mid-line"])
def test_sigkill_between_finished_and_export_then_resume_repairs_the_export(tmp_path, monkeypatch, reference, torn,
                                                                            capsys):
    """SIGKILL after the second cell's FINISHED, before its line (or halfway through writing it): the resumed
    sweep appends its record first (``--dry-run`` says so beforehand), then runs the third cell."""
    from bench import api, records

    exp, export = f"sweep-int-sigkill-{torn}", tmp_path / "runs.jsonl"
    state = dead_after_kill(monkeypatch)

    def kill(res):
        state["dead"] = True
        if torn:
            tear(export)(res)

    with monkeypatch.context() as m:
        interrupt_after(m, 2, Killed(), then=kill)
        with pytest.raises(Killed):
            api.sweep(config(exp), export=str(export), progress=False)
    state["dead"] = False
    cells = [c.cell_id for c in config(exp).cells]
    second = cells[1]
    assert records.done_cells(export) == {cells[0]}
    capsys.readouterr()
    dry = api.sweep(config(exp), export=str(export), dry_run=True, progress=False)
    assert dry["export_missing"] == [second] and dry["todo"] == [cells[2]]
    assert "1 cell FINISHED in the store was missing (the next run appends it)" in capsys.readouterr().err
    again = api.sweep(config(exp), export=str(export), progress=False)
    assert again["export_repaired"] == [second] and len(again["results"]) == 1
    assert [stable(r) for r in lines(export)] == reference


def test_an_export_given_later_gets_every_finished_cell_in_config_order(tmp_path, reference):
    """Cells run without ``--export`` (here in the opposite order) are appended by the next sweep with it, in the
    config's cell order, and none runs again."""
    from bench import api

    exp, export = "sweep-int-later", tmp_path / "runs.jsonl"
    backwards = {**RAW, "methods": [{"name": "dp-mlp", "seeds": [0]}, {"name": "mlp", "seeds": [1, 0]}]}
    assert [c.cell_id for c in config(exp, backwards).cells] == [c.cell_id for c in config(exp).cells][::-1]
    api.sweep(config(exp, backwards), progress=False)
    s = api.sweep(config(exp), export=str(export), progress=False)
    assert s["results"] == [] and s["export_repaired"] == [c.cell_id for c in config(exp).cells]
    assert [stable(r) for r in lines(export)] == reference


def test_without_the_repair_an_interrupted_export_loses_the_cell(tmp_path, monkeypatch, reference):
    """The check above can fail: with the repair disabled, the cell interrupted between FINISHED and its line is
    done in the store, so the resumed sweep skips it and the export never gets it."""
    from bench import api

    exp, export = "sweep-int-norepair", tmp_path / "runs.jsonl"
    no_repair(monkeypatch)
    with monkeypatch.context() as m:
        interrupt_after(m, 1, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            api.sweep(config(exp), export=str(export), progress=False)
    api.sweep(config(exp), export=str(export), progress=False)
    got = [stable(r) for r in lines(export)]
    assert got != reference and got == reference[1:]


# --------------------------------------------------------------------------------------
# The export file: a torn last line
# --------------------------------------------------------------------------------------


def test_an_append_after_a_torn_last_line_drops_it_and_load_ignores_it(tmp_path):
    from bench import records
    from methods.errors import BenchError

    path = tmp_path / "runs.jsonl"
    a, b = {"cell_id": "a", "status": "FINISHED"}, {"cell_id": "b", "status": "FINISHED", "blob": "x" * 100_000}
    records.append(path, a)
    whole = path.read_bytes()
    path.write_bytes(whole + json.dumps(b).encode()[:70_000])  # killed mid-line
    assert records.done_cells(path) == {"a"}
    records.append(path, b)
    assert path.read_bytes().count(b"\n") == 2 and [r["cell_id"] for r in lines(path)] == ["a", "b"]
    path.write_bytes(whole + json.dumps(b).encode())  # a whole record without its newline is kept
    records.append(path, {"cell_id": "c", "status": "FINISHED"})
    assert [r["cell_id"] for r in lines(path)] == ["a", "b", "c"]
    path.write_bytes(whole + b'{"cell_id": \n' + whole)  # a torn line inside the file is still an error
    with pytest.raises(BenchError, match=r"runs.jsonl:2: not a JSON record"):
        records.load(path)


def test_append_once_skips_a_cell_the_file_holds_finished(tmp_path):
    """Two sweeps filling the same gap of one export add one line (``bench leaderboard --check`` rejects a second
    finished record of a cell)."""
    from bench import records

    path = tmp_path / "runs.jsonl"
    assert records.append(path, {"cell_id": "a", "status": "FAILED"}, once=True)
    assert records.append(path, {"cell_id": "a", "status": "FINISHED"}, once=True)
    assert not records.append(path, {"cell_id": "a", "status": "FINISHED"}, once=True)
    assert [r["status"] for r in lines(path)] == ["FAILED", "FINISHED"]


# --------------------------------------------------------------------------------------
# Executors: no job starts after an interrupt
# --------------------------------------------------------------------------------------


def _mark(folder: str, i: int, seconds: float) -> int:
    """A job for worker processes: leaves ``folder/i`` as it starts, then sleeps."""
    Path(folder, str(i)).write_text("started")
    time.sleep(seconds)
    return i


def test_process_executor_starts_no_job_after_its_caller_stops(tmp_path):
    """A pool queues one job beyond its workers where cancelling cannot reach: submitted all at once, the second
    job started after the caller stopped at the first result."""
    from bench.executors import ProcessExecutor

    ex = ProcessExecutor(1, {})
    try:
        results = ex.run(_mark, [(str(tmp_path), i, 0.5) for i in range(3)])
        assert next(results) == 0
        results.close()  # the sweep's loop, interrupted
    finally:
        ex.shutdown()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0"]


def test_process_executor_interrupt_stops_the_job_in_flight_and_keeps_idle_workers(tmp_path):
    """``interrupt()``: a KeyboardInterrupt in the job running (its runs would end KILLED), at once; a worker
    between jobs ignores it and takes the next one (a worker that died would break the pool)."""
    from bench.executors import ProcessExecutor

    ex = ProcessExecutor(1, {})
    sent = []

    def interrupt_once_started():
        deadline = time.time() + 120
        while not (tmp_path / "0").exists() and time.time() < deadline:
            time.sleep(0.05)
        sent.append(time.time())
        ex.interrupt()
        ex.interrupt()  # a second SIGINT (the terminal's and the driver's) is absorbed

    try:
        signaller = threading.Thread(target=interrupt_once_started)
        signaller.start()
        with pytest.raises(KeyboardInterrupt):
            next(ex.run(_mark, [(str(tmp_path), 0, 60.0)]))
        signaller.join()
        assert time.time() - sent[0] < 30
        ex.interrupt()  # idle
        time.sleep(0.5)
        assert list(ex.run(_mark, [(str(tmp_path), 1, 0.0)])) == [1]
    finally:
        ex.shutdown()


# --------------------------------------------------------------------------------------
# A fresh tracking store opened by processes that start together
# --------------------------------------------------------------------------------------

OPEN_STORE = """
import sys, time
from pathlib import Path
import mlflow.store.tracking.sqlalchemy_store
import mlflow.tracking
from bench import tracking
Path(sys.argv[1] + ".ready").write_text("")
while not Path(sys.argv[2]).exists():
    time.sleep(0.001)
tracking.client().search_experiments()
"""


def test_processes_opening_a_fresh_store_together_do_not_crash(tmp_path):
    """The first client of a fresh SQLite store creates its schema; without the lock, two processes doing that at
    once crash each other (duplicate columns, a half-migrated alembic_version)."""
    env = bench_env({"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'fresh.db'}"})
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_STORE, str(tmp_path / str(i)), str(go)], env=env,
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    deadline = time.time() + 120
    while len(list(tmp_path.glob("*.ready"))) < 2 and time.time() < deadline:  # every one imported mlflow
        time.sleep(0.01)
    go.write_text("")
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs


# --------------------------------------------------------------------------------------
# Real signals to ``python -m bench sweep`` (slow: each sweep process imports torch and mlflow, and so does each
# worker)
# --------------------------------------------------------------------------------------

PAUSE_PLUGIN = '''
import os, time
from pathlib import Path
from methods import register
from methods.baselines import MLPMethod

@register("pause-mlp")
class PauseMLP(MLPMethod):
    """mlp that takes a while per fit, so a sweep can be signalled with cells in flight"""
    description = "mlp, slowed down (tests)"

    def fit(self, *a, **k):
        time.sleep(float(os.environ.get("PAUSE_SECONDS", "0")))
        return super().fit(*a, **k)

if os.environ.get("PAUSE_BEFORE_EXPORT"):  # the driver stops between a FINISHED run and its export line
    from bench import records

    _append = records.append

    def append(path, record):
        Path(os.environ["PAUSE_BEFORE_EXPORT"]).write_text(record["cell_id"])
        time.sleep(600)

    records.append = append
'''
PAUSE_RAW = {"datasets": [CSBM], "seeds": [0, 1, 2, 3, 4], "set": {"epochs": 2}, "methods": ["pause-mlp"]}


@pytest.fixture(scope="module")
def pause_plugin(tmp_path_factory) -> Path:
    from bench.plugins import load_plugin

    path = tmp_path_factory.mktemp("plugin") / "pause_plugin.py"
    path.write_text(PAUSE_PLUGIN)
    load_plugin(str(path))  # PAUSE_BEFORE_EXPORT unset here: only the method
    return path


@pytest.fixture(scope="module")
def pause_reference(pause_plugin, tmp_path_factory) -> list[dict]:
    from bench import api

    export = tmp_path_factory.mktemp("pause-reference") / "runs.jsonl"
    api.sweep(config("sweep-int-pause-reference", PAUSE_RAW), export=str(export), progress=False)
    return [stable(r) for r in lines(export)]


def sweep_process(plugin: Path, conf: Path, export: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "bench", "--plugin", str(plugin), "sweep", str(conf), "--no-progress",
           "--export", str(export), *extra]
    return subprocess.Popen(cmd, env=bench_env(env), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def wait_for(proc: subprocess.Popen, ready, what: str, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while not ready():
        assert proc.poll() is None, proc.stdout.read()
        assert time.time() < deadline, f"{what} never happened"
        time.sleep(0.1)


def by_record(export: Path) -> list[str]:
    return sorted(r["cell_id"] for r in lines(export)) if export.exists() else []


@pytest.mark.slow  # ~45 s each on a loaded 2-core machine (the driver and two workers import torch and mlflow)
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_a_signalled_process_sweep_starts_no_cell_and_exports_every_finished_one(tmp_path, pause_plugin,
                                                                                 pause_reference, how):
    """``--executor process --workers 2``: the signal (to the process group, as Ctrl-C sends it; SIGTERM to the
    driver alone) comes while two cells have finished, two run and one waits. No cell starts after it, the two
    running end KILLED within seconds, the finished ones are in the export, and the resumed export is the
    uninterrupted one."""
    from bench import api, tracking

    exp, export, conf = f"sweep-int-process-{how}", tmp_path / "runs.jsonl", tmp_path / "sweep.yaml"
    conf.write_text(yaml.safe_dump({**PAUSE_RAW, "experiment": exp}))
    proc = sweep_process(pause_plugin, conf, export, "--executor", "process", "--workers", "2", "--threads", "1",
                         env={"PAUSE_SECONDS": "8"})
    try:
        wait_for(proc, lambda: sorted(r.info.status for r in tracking.search_runs(exp)) == [
            "FINISHED", "FINISHED", "RUNNING", "RUNNING"], "two cells finished and two running")
        time.sleep(1.0)
        t0 = time.time()
        if how == "SIGINT":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=120)[0]
        stopped = time.time() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    runs = tracking.search_runs(exp)
    print(f"\n--- {how}: exit {proc.returncode} after {stopped:.1f}s, runs {[r.info.status for r in runs]}\n{out}")
    assert proc.returncode in (130, 143), out
    assert stopped < 30
    assert not [r for r in runs if r.info.start_time / 1000 > t0]  # nothing started after the signal
    assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED", "KILLED", "KILLED"]
    finished = sorted(r.data.tags["sweep_cell"] for r in runs if r.info.status == "FINISHED")
    assert by_record(export) == finished
    api.sweep(config(exp, PAUSE_RAW), export=str(export), progress=False)
    in_order = sorted(pause_reference, key=lambda r: r["cell_id"])  # parallel cells finish in either order
    assert sorted((stable(r) for r in lines(export)), key=lambda r: r["cell_id"]) == in_order


@pytest.mark.slow  # ~10 s, ~30 s with the reference sweep
def test_a_sweep_sigkilled_between_finished_and_export_is_repaired_on_resume(tmp_path, pause_plugin,
                                                                           pause_reference, capsys):
    """In-process ``python -m bench sweep`` SIGKILLed while its first cell is FINISHED and its line unwritten: the
    dry run counts the gap, the resumed sweep fills it, and its export is the uninterrupted one."""
    from bench import api, tracking

    exp, export, conf, marker = ("sweep-int-kill", tmp_path / "runs.jsonl", tmp_path / "sweep.yaml",
                                 tmp_path / "exporting")
    conf.write_text(yaml.safe_dump({**PAUSE_RAW, "experiment": exp}))
    proc = sweep_process(pause_plugin, conf, export, env={"PAUSE_BEFORE_EXPORT": str(marker)})
    try:
        wait_for(proc, marker.exists, "the first export line")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    first = config(exp, PAUSE_RAW).cells[0].cell_id
    assert [r.data.tags["sweep_cell"] for r in tracking.search_runs(exp) if r.info.status == "FINISHED"] == [first]
    assert by_record(export) == []
    capsys.readouterr()
    dry = api.sweep(config(exp, PAUSE_RAW), export=str(export), dry_run=True, progress=False)
    assert dry["export_missing"] == [first] and "the next run appends it" in capsys.readouterr().err
    again = api.sweep(config(exp, PAUSE_RAW), export=str(export), progress=False)
    assert again["export_repaired"] == [first]
    assert [stable(r) for r in lines(export)] == pause_reference
