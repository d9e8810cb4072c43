"""MLflow tracking. The only module that imports ``mlflow`` (lazily: the import costs ~1 s).

Where records go: one tracking root, ``$BENCH_TRACKING_DIR`` (default ``<project>/mlflow/``, git-ignored but for
its README and MLproject), holds the store, ``<root>/mlflow.db`` (SQLite), and ``<root>/artifacts/<experiment>/``,
the artifacts of each experiment this module creates. ``MLFLOW_TRACKING_URI`` overrides the store (any MLflow URI):
a SQLite file (``sqlite:///path/x.db``) makes its folder the root (artifacts in ``path/artifacts/<experiment>/``);
another database (postgresql, mysql, mssql) keeps the root; an MLflow server (``http(s)://``) or a ``file:`` store
places artifacts itself (the server's artifact root; inside the store folder). So nothing is ever written to
``./mlruns`` of the working directory (MLflow's default for a database store), and a sweep's workers, given the
store as ``MLFLOW_TRACKING_URI``, put artifacts where the driver would. An experiment that exists already keeps the
artifact location it was created with.

A run always ends FINISHED, FAILED (with the error in the ``error`` tag) or KILLED (Ctrl-C,
SIGTERM): none is left RUNNING by an interrupted command. An error raised while a run is open comes out as
:class:`RunFailed` (whatever its type: a BenchError inside ``fit`` is no longer "bad input"), so callers can tell
"failed inside a run" (exit 1, the run FAILED) from "rejected before any run opened" (exit 2).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from bench import gitless
from bench.gitless import commit_of  # re-exported: HEAD's commit

MAX_PARAM_LEN = 6000
_BATCH = 900


class RunFailed(RuntimeError):
    """An error raised inside an open run (tracked or not): the run ended FAILED. ``cause`` is the original error,
    ``run_id`` the innermost failed run (None when not tracked)."""

    def __init__(self, cause: BaseException, run_id: str | None) -> None:
        self.cause = cause
        self.run_id = run_id
        super().__init__(f"{type(cause).__name__}: {cause}")

    def __reduce__(self):  # rebuilt from (cause, run_id), so it crosses a process pool intact
        return type(self), (self.cause, self.run_id)


def project_dir() -> Path:
    here = Path(__file__).resolve().parents[1]
    if (here / "mlflow" / "MLproject").is_file():
        return here
    return Path.cwd()


def mlflow_dir() -> Path:
    """The default tracking root: ``<project>/mlflow``."""
    return project_dir() / "mlflow"


def _sqlite_file(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for any other URI, or an in-memory database)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    if parts.scheme.split("+")[0] != "sqlite" or parts.path in ("", "/", "/:memory:"):
        return None
    return Path(unquote(parts.path[1:]))  # as SQLAlchemy reads it: sqlite:///rel.db, sqlite:////abs.db


#: MLflow's database stores: where, given no artifact location, MLflow's client would put an experiment's artifacts
#: in ``./mlruns`` of the working directory (any other store places them itself: a server, a ``file:`` folder)
_DATABASES = ("sqlite", "postgresql", "mysql", "mssql")


def tracking_root() -> Path:
    """The folder that holds the store (a SQLite file) and ``artifacts/``: the folder of ``MLFLOW_TRACKING_URI``'s
    SQLite file when it names one, else ``$BENCH_TRACKING_DIR``, else ``<project>/mlflow``."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    db = _sqlite_file(env) if env else None
    if db is not None:
        return db.parent
    root = os.environ.get("BENCH_TRACKING_DIR")
    return Path(root).expanduser().resolve() if root else mlflow_dir()


def tracking_uri() -> str:
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    d = tracking_root()
    d.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{d / 'mlflow.db'}"


def _safe_name(name: str) -> str:
    """An experiment name as one folder name (the name itself when it is already safe)."""
    import re

    safe = re.sub(r"[^\w.+=-]+", "_", name).strip(".")
    return safe or "_"


def artifact_location(experiment: str) -> str | None:
    """Where a new experiment named ``experiment`` keeps its artifacts (a ``file://`` URI), or None where MLflow
    places them itself (an MLflow server, a ``file:`` store): see the module docstring."""
    from urllib.parse import urlsplit

    if urlsplit(tracking_uri()).scheme.split("+")[0].lower() not in _DATABASES:
        return None
    return (tracking_root() / "artifacts" / _safe_name(experiment)).resolve().as_uri()


@lru_cache(maxsize=None)
def _client(uri: str):
    import logging

    # alembic/mlflow log every schema migration at INFO on first use of a store
    for name in ("alembic", "mlflow.store.db.utils", "mlflow.store.tracking.sqlalchemy_store"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from mlflow.tracking import MlflowClient

    with _store_lock(uri):  # the client opens the store: on a fresh one, MLflow creates its schema
        return MlflowClient(tracking_uri=uri)


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """An exclusive lock beside a SQLite store (``.<name>.lock``): the first client of a fresh store runs MLflow's
    schema migrations, and processes that start together (a sweep's workers) would run them at once and crash."""
    db = _sqlite_file(uri)
    if db is None or not db.parent.is_dir():
        yield
        return
    fd = os.open(db.parent / f".{db.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(ImportError, OSError):
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)  # released by close
        yield
    finally:
        os.close(fd)


def client():
    return _client(tracking_uri())


def client_download_text(run_id: str, artifact_file: str) -> str:
    """The text of one artifact of a run (FileNotFoundError if it has none of that name)."""
    import tempfile

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    c = client()
    with tempfile.TemporaryDirectory() as d:
        try:
            path = c.download_artifacts(run_id, artifact_file, d)
        except Exception as e:  # MLflow raises its own exception types for a missing artifact
            raise FileNotFoundError(f"{artifact_file} of run {run_id}: {e}") from None
        return Path(path).read_text()


def download_artifacts(run_id: str, artifact_path: str, dst: str | os.PathLike) -> Path:
    """Download a run's artefact folder (or file) ``artifact_path`` into ``dst``; its local path
    (FileNotFoundError if the run has none of that name)."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    try:
        path = Path(client().download_artifacts(run_id, artifact_path, str(dst)))
    except Exception as e:  # MLflow raises its own exception types for a missing artifact or run
        raise FileNotFoundError(f"{artifact_path} of run {run_id}: {e}") from None
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        raise FileNotFoundError(f"{artifact_path} of run {run_id}: no such artefact")
    return path


def has_artifacts(run_id: str, artifact_path: str) -> bool:
    """Whether the run exists in the store and holds artefacts under ``artifact_path``."""
    try:
        return bool(client().list_artifacts(run_id, artifact_path))
    except Exception:  # no such run (MLflow's own exception types)
        return False




@lru_cache(maxsize=None)
def git_commit() -> str:
    """HEAD's commit, with ``-dirty`` when a tracked file that a run can read (anything outside :data:`NOT_CODE`)
    differs from it: a clean record's code is exactly that commit's."""
    return commit_of(Path(__file__).resolve().parents[1])


@lru_cache(maxsize=None)
def code_tree() -> str | None:
    """The root tree id this checkout's files hash to, where its commit comes from a manifest rather than git
    (:mod:`bench.gitless`): records carry it so the release check can compare it with the commit's tree."""
    root = Path(__file__).resolve().parents[1]
    if (root / ".git").exists():
        return None
    found = gitless.manifest_commit(root)
    return found[1] if found else None


def experiment_id(name: str) -> str:
    c = client()
    exp = c.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    try:
        return c.create_experiment(name, artifact_location=artifact_location(name))
    except Exception:  # created concurrently by another process
        exp = c.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def _fmt_param(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v, default=str)
    return s[:MAX_PARAM_LEN]


class TrackedRun:
    """One MLflow run, written through the client API (explicit run ids; safe for child runs)."""

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id
        self._ended = False

    @property
    def enabled(self) -> bool:
        return self.run_id is not None

    def log_params(self, params: dict[str, Any]) -> None:
        if not self.enabled or not params:
            return
        from mlflow.entities import Param

        items = [Param(str(k), _fmt_param(v)) for k, v in params.items()]
        for i in range(0, len(items), 100):
            client().log_batch(self.run_id, params=items[i:i + 100])

    def log_metrics(self, metrics: dict[str, float], step: int = 0) -> None:
        if not self.enabled:
            return
        self._metrics([(k, v, step) for k, v in metrics.items()])

    def log_history(self, history: list[dict[str, float]], step_key: str = "epoch") -> None:
        """Per-step metrics (one MLflow metric history per key), written in batches."""
        if not self.enabled:
            return
        rows = []
        for i, h in enumerate(history):
            step = int(h.get(step_key, i))
            rows.extend((k, v, step) for k, v in h.items() if k != step_key)
        self._metrics(rows)

    def _metrics(self, rows: list[tuple[str, float, int]]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        ms = []
        for k, v, step in rows:
            if v is None:
                continue
            v = float(v)
            if math.isnan(v):
                continue
            ms.append(Metric(k, v if math.isfinite(v) else (1e308 if v > 0 else -1e308), now, int(step)))
        for i in range(0, len(ms), _BATCH):
            client().log_batch(self.run_id, metrics=ms[i:i + _BATCH])

    def set_tags(self, tags: dict[str, Any]) -> None:
        if not self.enabled or not tags:
            return
        from mlflow.entities import RunTag

        client().log_batch(self.run_id, tags=[RunTag(str(k), _fmt_param(v)) for k, v in tags.items()])

    def log_dict(self, obj: Any, artifact_file: str) -> None:
        if self.enabled:
            client().log_text(self.run_id, json.dumps(obj, indent=2, sort_keys=True, default=str), artifact_file)

    def log_text(self, text: str, artifact_file: str) -> None:
        if self.enabled:
            client().log_text(self.run_id, text, artifact_file)

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        if self.enabled:
            client().log_figure(self.run_id, figure, artifact_file)

    def log_artifacts(self, local_dir: str | os.PathLike, artifact_path: str) -> None:
        """Every file of ``local_dir`` under the run's artefact folder ``artifact_path``."""
        if self.enabled:
            client().log_artifacts(self.run_id, str(local_dir), artifact_path)

    def end(self, status: str = "FINISHED", error: str | None = None) -> None:
        if not self.enabled or self._ended:
            return
        self._ended = True
        if error:
            with contextlib.suppress(Exception):
                self.set_tags({"error": error})
        client().set_terminated(self.run_id, status=status)


def start_run(experiment: str, run_name: str, tags: dict[str, Any] | None = None,
              parent: TrackedRun | None = None) -> TrackedRun:
    from bench.version import current

    all_tags = {"git_commit": git_commit(), "bench_version": current(),
                **({"code_tree": code_tree()} if code_tree() else {}), **(tags or {})}
    if parent is not None and parent.enabled:
        all_tags["mlflow.parentRunId"] = parent.run_id
    run = client().create_run(experiment_id(experiment), run_name=run_name,
                              tags={k: _fmt_param(v) for k, v in all_tags.items()})
    return TrackedRun(run.info.run_id)


@contextlib.contextmanager
def tracked_run(experiment: str, run_name: str, tags: dict[str, Any] | None = None,
                parent: TrackedRun | None = None, enabled: bool = True) -> Iterator[TrackedRun]:
    """Open a run; end it FINISHED, FAILED (an exception, re-raised as :class:`RunFailed`) or KILLED
    (KeyboardInterrupt/SystemExit, re-raised as they are)."""
    run = start_run(experiment, run_name, tags, parent) if enabled else TrackedRun(None)
    try:
        yield run
    except (KeyboardInterrupt, SystemExit) as e:
        run.end("KILLED", error=f"interrupted ({type(e).__name__})")
        raise
    except RunFailed as e:  # a child run failed inside this one: same error, the innermost run id
        run.end("FAILED", error=str(e))
        raise
    except Exception as e:
        run.end("FAILED", error=f"{type(e).__name__}: {e}")
        raise RunFailed(e, run.run_id) from e
    except BaseException as e:  # anything else that unwinds the run (GeneratorExit, ...): FAILED, re-raised as is
        run.end("FAILED", error=f"{type(e).__name__}: {e}")
        raise
    else:
        run.end("FINISHED")


def search_runs(experiment: str, filter_string: str = "", max_results: int = 10000) -> list[Any]:
    c = client()
    exp = c.get_experiment_by_name(experiment)
    if exp is None:
        return []
    return c.search_runs([exp.experiment_id], filter_string=filter_string, max_results=max_results)
