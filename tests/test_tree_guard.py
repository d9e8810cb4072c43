"""The session guard of tests/conftest.py: a test session fails when it leaves anything in the work tree."""

from __future__ import annotations

import os
import types

import pytest

from tests import conftest


def test_tree_changes_names_what_appeared_vanished_or_was_rewritten(tmp_path):
    (tmp_path / "kept.txt").write_text("a")
    (tmp_path / "gone.txt").write_text("b")
    (tmp_path / "mlflow").mkdir()
    (tmp_path / "mlflow" / "mlflow.db").write_text("old")
    before = conftest.tree_snapshot(tmp_path)
    assert conftest.tree_changes(before, conftest.tree_snapshot(tmp_path)) == []

    (tmp_path / "gone.txt").unlink()
    (tmp_path / "mlruns" / "1" / "run").mkdir(parents=True)
    (tmp_path / "mlruns" / "1" / "run" / "info.json").write_text("{}")
    (tmp_path / "empty").mkdir()
    (tmp_path / "mlflow" / "mlflow.db").write_text("rewritten")
    st = os.stat(tmp_path / "mlflow" / "mlflow.db")
    os.utime(tmp_path / "mlflow" / "mlflow.db", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert conftest.tree_changes(before, conftest.tree_snapshot(tmp_path)) == [
        "+ empty/", "- gone.txt", "~ mlflow/mlflow.db", "+ mlruns/"]


def test_tool_state_is_tolerated(tmp_path):
    before = conftest.tree_snapshot(tmp_path)
    for name in ("__pycache__", ".pytest_cache", ".tox"):
        (tmp_path / "pkg" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name / "x").write_text("")
    (tmp_path / ".venv").write_text(".tox/tests\n")  # tox's PEP 832 redirect file
    assert conftest.tree_changes(before, conftest.tree_snapshot(tmp_path)) == ["+ pkg/"]


def _session():
    return types.SimpleNamespace(config=types.SimpleNamespace(), exitstatus=pytest.ExitCode.OK)


def test_the_session_fails_when_a_test_left_something(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "REPO", tmp_path)
    session = _session()
    conftest.pytest_sessionstart(session)
    (tmp_path / "mlruns").mkdir()
    conftest.pytest_sessionfinish(session, session.exitstatus)
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED
    lines = []
    reporter = types.SimpleNamespace(config=session.config, section=lambda *a, **k: lines.append(a[0]),
                                     line=lambda s, **k: lines.append(s))
    conftest.pytest_terminal_summary(reporter)
    assert lines[0] == "the work tree changed" and lines[-1] == "  + mlruns/"


def test_a_clean_session_passes_and_workers_do_not_check(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "REPO", tmp_path)
    session = _session()
    conftest.pytest_sessionstart(session)
    conftest.pytest_sessionfinish(session, session.exitstatus)
    assert session.exitstatus == pytest.ExitCode.OK

    worker = _session()
    worker.config.workerinput = {}  # an xdist worker: the controller compares, once
    conftest.pytest_sessionstart(worker)
    (tmp_path / "mlruns").mkdir()
    conftest.pytest_sessionfinish(worker, worker.exitstatus)
    assert worker.exitstatus == pytest.ExitCode.OK
