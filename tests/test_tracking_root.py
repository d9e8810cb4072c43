"""One tracking root: the store and every experiment's artifacts under it, never in ./mlruns of the working directory
(bench.tracking's module docstring states the rule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import tracking


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """A working directory that is neither the store's folder nor the checkout: MLflow's own default would be here."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def _artifact_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_a_sqlite_store_keeps_artifacts_beside_it(tmp_path, elsewhere, monkeypatch):
    store = tmp_path / "store"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store / 'runs.db'}")
    assert tracking.tracking_root() == store
    with tracking.tracked_run("beside", "r") as run:
        run.log_text("hello", "notes/hello.txt")
        run.log_dict({"a": 1}, "info.json")
    exp = tracking.client().get_experiment_by_name("beside")
    assert exp.artifact_location == (store / "artifacts" / "beside").as_uri()
    assert _artifact_files(store / "artifacts") == {f"beside/{run.run_id}/artifacts/notes/hello.txt",
                                                    f"beside/{run.run_id}/artifacts/info.json"}
    assert tracking.client_download_text(run.run_id, "notes/hello.txt") == "hello"
    assert list(elsewhere.iterdir()) == []  # no ./mlruns


def test_a_relative_sqlite_uri_is_read_as_sqlalchemy_reads_it(elsewhere, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///sub/m.db")  # three slashes: relative to the working dir
    assert tracking.tracking_root() == Path("sub")
    assert tracking.artifact_location("x") == (elsewhere / "sub" / "artifacts" / "x").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{elsewhere / 'abs' / 'm.db'}")  # four: absolute
    assert tracking.tracking_root() == elsewhere / "abs"


def test_the_default_store_is_the_tracking_root(tmp_path, elsewhere, monkeypatch):
    root = tmp_path / "root"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.setenv("BENCH_TRACKING_DIR", str(root))
    assert tracking.tracking_uri() == f"sqlite:///{root / 'mlflow.db'}"
    with tracking.tracked_run("default-root", "r") as run:
        run.log_text("x", "x.txt")
    assert (root / "mlflow.db").is_file()
    assert _artifact_files(root / "artifacts") == {f"default-root/{run.run_id}/artifacts/x.txt"}
    assert list(elsewhere.iterdir()) == []


def test_the_root_defaults_to_the_checkouts_mlflow_folder(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.delenv("BENCH_TRACKING_DIR")
    assert tracking.tracking_root() == tracking.project_dir() / "mlflow"


def test_other_stores(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_TRACKING_DIR", str(tmp_path / "root"))
    # another database: MLflow would use ./mlruns, so the root's artifacts/ (no connection is made here)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "postgresql+psycopg2://u@db.example/mlflow")
    assert tracking.artifact_location("e x") == (tmp_path / "root" / "artifacts" / "e_x").as_uri()
    # a server or a file store places artifacts itself
    for uri in ("http://mlflow.example:5000", "https://mlflow.example", "databricks", f"file://{tmp_path}/fs",
                str(tmp_path / "fs")):
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        assert tracking.artifact_location("e") is None, uri


def test_an_existing_experiment_keeps_its_location(tmp_path, elsewhere, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'old.db'}")
    mine = (tmp_path / "somewhere").as_uri()
    eid = tracking.client().create_experiment("old", artifact_location=mine)
    assert tracking.experiment_id("old") == eid
    assert tracking.client().get_experiment(eid).artifact_location == mine


def test_experiment_names_become_one_folder():
    assert tracking._safe_name("demo") == "demo"
    assert tracking._safe_name("sweep-a_1.b") == "sweep-a_1.b"
    assert tracking._safe_name("team/exp 1") == "team_exp_1"
    assert tracking._safe_name("..") == "_"
    assert tracking._safe_name("../up") == "_up"


def test_sweep_workers_get_the_tracking_root():
    from bench.sweep import runner

    assert "BENCH_TRACKING_DIR" in runner.ENV_KEYS and "MLFLOW_TRACKING_URI" in runner.ENV_KEYS
