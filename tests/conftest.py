"""Shared fixtures. Every test session gets its own MLflow store and tracking root, dataset cache and Hypothesis folder
(hermetic), and fails when it leaves the work tree other than it found it (:func:`tree_snapshot`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


if os.environ.get("PYTEST_XDIST_WORKER"):
    # one intra-op thread per worker: two workers on two cores, without oversubscription
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session", autouse=True)
def _hermetic_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("bench-env")
    old = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "BENCH_CACHE_DIR", "BENCH_OFFLINE")}
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{base / 'mlflow.db'}"
    os.environ["BENCH_CACHE_DIR"] = str(base / "cache")
    os.environ["BENCH_OFFLINE"] = "1"  # no test reaches the network: downloads are tested against 127.0.0.1
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session", autouse=True)
def _hermetic_tracking_root(tmp_path_factory):
    """The default tracking root (``mlflow/`` of the checkout) is this session's too, for a test that unsets
    ``MLFLOW_TRACKING_URI``."""
    old = os.environ.get("BENCH_TRACKING_DIR")
    os.environ["BENCH_TRACKING_DIR"] = str(tmp_path_factory.mktemp("bench-tracking"))
    yield
    if old is None:
        os.environ.pop("BENCH_TRACKING_DIR", None)
    else:
        os.environ["BENCH_TRACKING_DIR"] = old


def pytest_configure(config):
    """Hypothesis keeps its example database and caches in a temporary folder, not ``./.hypothesis``: set before
    collection, where its plugin already writes (a cache of each test module's constants)."""
    from hypothesis import configuration

    config._bench_hypothesis_home = tempfile.mkdtemp(prefix="bench-hypothesis-")
    configuration.set_hypothesis_home_dir(config._bench_hypothesis_home)


def pytest_unconfigure(config):
    home = getattr(config, "_bench_hypothesis_home", None)
    if home:
        shutil.rmtree(home, ignore_errors=True)


# -- the work tree is left as it was found --------------------------------------------------------------------------

#: names (at any depth) of tool state that may appear in the work tree during a session, every one git-ignored:
#: the interpreter's bytecode and numba's compiled cache (``__pycache__``), pytest's own cache and environments
TREE_TOLERATED = frozenset({".git", ".venv", ".tox", ".pytest_cache", "__pycache__"})


def tree_snapshot(root: Path) -> dict[str, tuple[int, int] | None]:
    """Every file under ``root`` as ``{relative path: (size, mtime_ns)}`` and every folder as ``{path/: None}``,
    ignored ones included (stricter than ``git status --porcelain --ignored``: an empty folder and a rewritten
    ignored file count too), skipping :data:`TREE_TOLERATED` names."""
    out: dict[str, tuple[int, int] | None] = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in TREE_TOLERATED)
        rel = Path(d).relative_to(root)
        for x in dirs:
            out[f"{(rel / x).as_posix()}/"] = None
        for x in files:
            if x in TREE_TOLERATED:  # tox may write .venv as a file (a PEP 832 redirect)
                continue
            try:
                st = os.lstat(os.path.join(d, x))
            except OSError:  # gone meanwhile
                continue
            out[(rel / x).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def tree_changes(before: dict[str, tuple[int, int] | None], after: dict[str, tuple[int, int] | None]) -> list[str]:
    """What differs between two :func:`tree_snapshot` s: ``"+ path"`` (new), ``"- path"`` (gone), ``"~ path"``
    (a file rewritten), sorted by path. Within a new folder only the folder is named."""
    new = sorted(set(after) - set(before))
    new_dirs = [p for p in new if p.endswith("/")]
    lines = [("+", p) for p in new if not any(p != d and p.startswith(d) for d in new_dirs)]
    lines += [("-", p) for p in set(before) - set(after)]
    lines += [("~", p) for p in set(before) & set(after) if before[p] != after[p]]
    return [f"{c} {p}" for c, p in sorted(lines, key=lambda t: t[1])]


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the session itself (or xdist's controller), not a worker
        session.config._bench_tree = tree_snapshot(REPO)


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_bench_tree", None)
    if before is None:
        return
    changes = tree_changes(before, tree_snapshot(REPO))
    session.config._bench_tree_changes = changes
    if changes and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    changes = getattr(terminalreporter.config, "_bench_tree_changes", None)
    if changes:
        terminalreporter.section("the work tree changed", sep="=", red=True, bold=True)
        terminalreporter.line(f"tests write only under their temporary folders (tmp_path), but {REPO} has "
                              f"{len(changes)} change(s) since the session began (a test's, or another process's "
                              f"meanwhile):", red=True)
        for line in changes[:50]:
            terminalreporter.line(f"  {line}")
        if len(changes) > 50:
            terminalreporter.line(f"  ... and {len(changes) - 50} more")


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real raw datasets. CI sets BENCH_REQUIRE_DATA=1, so there a missing root fails instead of skipping."""
    env = os.environ.get("BENCH_DATA_ROOT")
    if env and (Path(env) / "Cora" / "raw").is_dir():
        return Path(env)
    if os.environ.get("BENCH_REQUIRE_DATA") == "1":
        pytest.fail(f"BENCH_REQUIRE_DATA=1 but BENCH_DATA_ROOT={env!r} has no Cora/raw")
    pytest.skip("real datasets not available (set BENCH_DATA_ROOT)")


@pytest.fixture(scope="session")
def small_task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=200,classes=3,features=8,degree=6"), "random-75-10-15", 0)


def bench_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env
