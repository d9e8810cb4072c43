"""``bench reproduce NAME``: re-run one published cell at the commit its record names, and compare.

A published record names its cell (``cell_id``) and a clean commit. The cell is found again in that commit's own
sweep configs (``configs/*.yaml``, the leaderboard's first; then ``configs/papers/``; then this checkout's, for a
config written after the code it ran on), so it runs with exactly the method, hyperparameters,
budget, seed and attacks of the published run, by that commit's own code: this checkout when its code is that
commit's, else a temporary ``git worktree`` of the commit (no tag and no tracking store needed: the run is tracked
in a temporary store and its record read back as the export wrote the published one). The fresh record is then
compared with the published one: test accuracy and macro-F1 (exactly), the spent epsilon (to
:data:`bench.check.EPS_RTOL`), the predictions hash, the configuration and split hashes, and every attack rate
(AUC, TPR at 1% FPR) on the new artefact, to :data:`RATE_ATOL`. All equal is MATCH (exit 0); anything else
DIFFER (exit 3), with what.

Benchmark runs use reproducible noise (``secure_noise`` false: the noise is drawn from the run's seed), which is
what makes a record reproducible at all; a record of a secure-noise run is refused.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from methods.errors import BenchError

#: this checkout (its ``docs/leaderboard/runs`` is the default export)
REPO = Path(__file__).resolve().parents[1]
DEFAULT_EXPORT = REPO / "docs" / "leaderboard" / "runs"
#: how far a re-run's attack rate may sit from the published one. Training gives its record back exactly, but an
#: attack's reference models sum in floating point in an order that depends on the thread count, which records of
#: 1.1.0 do not state for their attacks: gap-node/cora/random-75-10-15/eps=8/s1's LiRA AUC (0.6010240) comes back
#: exactly at 2 torch threads and as 0.6010192 at 1, a few of its million score pairs swapped. 1e-4 is far above
#: that and far below the 3 digits the page shows; a rate within it but not equal is reported as such
RATE_ATOL = 1e-4

#: run in the record's checkout (its own ``bench``): find the cell in the commit's configs (``configs/*.yaml``, the
#: leaderboard's first, then ``configs/papers/*.yaml``), else in this checkout's (a config written after the release
#: whose code it ran on, as the papers' settings were: a cell id names the cell whatever file plans it), run it as
#: its sweep did, write the record its export would have written
DRIVER = r"""
import dataclasses, json, sys
from pathlib import Path
cell_id, out, threads, attacks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
later = json.loads(sys.argv[5])
import torch
torch.set_num_threads(threads)
from bench import api, records
from bench.sweep.execute import _run_job
configs = sorted(Path("configs").glob("*.yaml"), key=lambda p: (p.name != "leaderboard.yaml", p.name))
configs += sorted(Path("configs").glob("papers/*.yaml")) + [Path(p) for p in later]
for config in configs:
    try:
        cells = api.cells(config)
    except Exception:
        continue
    found = [c for c in cells if c.cell_id == cell_id and c.kind == "run"]
    if found:
        break
else:
    print(json.dumps({"error": f"no config under configs/ of this commit or of this checkout plans cell {cell_id}"}))
    sys.exit(2)
cell = found[0]
if not attacks:
    cell = dataclasses.replace(cell, attacks=(), attack_overrides=())
run_id = _run_job(cell, "reproduce", {}, api.run)
Path(out).write_text(json.dumps({"config": str(config), "record": records.record_for(run_id)}))
"""


@dataclass(frozen=True)
class Comparison:
    """One field of the record, published and re-run."""

    field: str
    published: Any
    reproduced: Any
    same: bool
    exact: bool = True  # False: the same within a stated tolerance only

    @property
    def verdict(self) -> str:
        return "DIFFERS" if not self.same else "same" if self.exact else f"same to {RATE_ATOL:g}"


@dataclass
class Reproduction:
    name: str
    cell_id: str
    commit: str
    where: str  # "this checkout" or "a worktree of <commit>"
    config: str
    seconds: float
    comparisons: list[Comparison] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "MATCH" if self.comparisons and all(c.same for c in self.comparisons) else "DIFFER"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "cell_id": self.cell_id, "commit": self.commit, "where": self.where,
                "config": self.config, "seconds": self.seconds, "verdict": self.verdict,
                "comparisons": [vars(c) for c in self.comparisons]}


def find_record(name: str, export: str | Path = DEFAULT_EXPORT) -> dict[str, Any]:
    """The one finished run record of ``export`` whose name (as the page shows it), cell id or run id is ``name``."""
    from bench.check import lines_of

    p = Path(export)
    if not p.exists():
        raise BenchError(f"export {export} not found")
    name = name.strip()
    found = [rec for _, rec, _ in lines_of(p) if rec and rec.get("kind") == "run"
             and rec.get("status", "FINISHED") == "FINISHED" and name in (rec.get("name"), rec.get("cell_id"),
                                                                        rec.get("run_id"))]
    if not found:
        raise BenchError(f"no finished run record named {name!r} in {export} (a name as the page shows it, e.g. "
                         "gap-edge/cora/random-75-10-15/eps=4/s0, a cell id or a run id)")
    if len(found) > 1:
        raise BenchError(f"{len(found)} run records match {name!r} in {export}: give the cell id "
                         f"({', '.join(str(r.get('cell_id')) for r in found[:5])})")
    rec = found[0]
    if str((rec.get("params") or {}).get("secure_noise", "false")).lower() == "true":
        raise BenchError(f"{rec.get('name')} drew its noise from OS entropy (secure noise): no re-run can give it back")
    if not rec.get("cell_id"):
        raise BenchError(f"{rec.get('name')} names no cell (not a sweep's record): nothing to re-run")
    return rec


def _git(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def checkout_of(commit: str, repo: Path = REPO) -> Iterator[tuple[Path, str]]:
    """(code root, how it was found) for ``commit``: this checkout when its code is exactly that commit's, else a
    temporary worktree of it (removed afterwards). The commit must be in this checkout's history."""
    from bench.gitless import commit_of

    if commit.endswith("-dirty") or len(commit) < 7:
        raise BenchError(f"the record names {commit!r}, not a clean commit: its code cannot be checked out")
    if commit_of(repo) == commit:
        yield repo, "this checkout"
        return
    if not (repo / ".git").exists() or shutil.which("git") is None:
        raise BenchError(f"the record's commit {commit[:12]} is not this checkout's and there is no git here to check "
                         "it out (clone the repository with git)")
    if _git("cat-file", "-e", f"{commit}^{{commit}}", cwd=repo).returncode != 0:
        shallow = _git("rev-parse", "--is-shallow-repository", cwd=repo).stdout.strip() == "true"
        raise BenchError(f"commit {commit[:12]} is not in this checkout's history"
                         + (" (a shallow clone: git fetch --unshallow)" if shallow else ""))
    tmp = Path(tempfile.mkdtemp(prefix="bench-reproduce-"))
    tree = tmp / "code"
    added = _git("worktree", "add", "--detach", str(tree), commit, cwd=repo)
    if added.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BenchError(f"could not check out {commit[:12]}: {added.stderr.strip().splitlines()[-1:]}")
    try:
        yield tree, f"a worktree of {commit[:12]}"
    finally:
        _git("worktree", "remove", "--force", str(tree), cwd=repo)
        shutil.rmtree(tmp, ignore_errors=True)


def rerun(record: dict[str, Any], root: Path, attacks: bool = True, data_root: str | None = None,
          log=None) -> tuple[dict[str, Any], str]:
    """Run the record's cell with the code at ``root`` in a fresh process and a temporary tracking store; the fresh
    record and the config the cell was found in."""
    threads = int(float((record.get("params") or {}).get("threads", 1) or 1))
    with tempfile.TemporaryDirectory(prefix="bench-reproduce-store-") as store:
        out = Path(store) / "record.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep), "MLFLOW_TRACKING_URI": f"sqlite:///{Path(store) / 'mlflow.db'}",
            "BENCH_TRACKING_DIR": store, "OMP_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads)}
        env.pop("BENCH_PLUGINS", None)
        if data_root:
            env["BENCH_DATA_ROOT"] = str(Path(data_root).expanduser().resolve())
        later = [str(p) for p in sorted(REPO.glob("configs/*.yaml")) + sorted(REPO.glob("configs/papers/*.yaml"))]
        proc = subprocess.run([sys.executable, "-c", DRIVER, str(record["cell_id"]), str(out), str(threads),
                               "1" if attacks else "0", json.dumps(later)], cwd=root, env=env, capture_output=True,
                              text=True)
        if proc.returncode != 0 or not out.exists():
            lines = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if ln.strip()]
            for ln in lines:
                with contextlib.suppress(json.JSONDecodeError, TypeError):
                    err = json.loads(ln).get("error")
                    if err:
                        raise BenchError(err)
            raise RuntimeError(f"the re-run failed: {lines[-1] if lines else f'exit {proc.returncode}'}")
        got = json.loads(out.read_text())
    return got["record"], got["config"]


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _rates(attacks: Any, prefix: str = "attacks") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(attacks, dict):
        for k, v in attacks.items():
            if isinstance(v, dict):
                out.update(_rates(v, f"{prefix}.{k}"))
            elif k in ("auc", "tpr_at_1pct_fpr"):
                out[f"{prefix}.{k}"] = _num(v)
    return out


def compare(published: dict[str, Any], fresh: dict[str, Any], attacks: bool = True) -> list[Comparison]:
    """Every field a re-run must give back; a field the published record lacks is not compared."""
    from bench.check import EPS_RTOL

    def get(rec: dict, path: str) -> Any:
        cur: Any = rec
        for k in path.split("/"):
            cur = cur.get(k) if isinstance(cur, dict) else None
        return cur

    out = []
    for path in ("metrics/test_acc", "metrics/test_macro_f1", "tags/predictions_hash", "params/config_hash",
                 "params/split_hash"):
        a = get(published, path)
        if a is not None:
            b = get(fresh, path)
            out.append(Comparison(path.replace("/", "."), a, b, a == b))
    a = get(published, "metrics/epsilon")
    if a is not None:
        b = get(fresh, "metrics/epsilon")
        x, y = _num(a), _num(b)
        same = (x == y) or (math.isfinite(x) and math.isfinite(y) and math.isclose(x, y, rel_tol=EPS_RTOL))
        out.append(Comparison("metrics.epsilon", a, b, same))
    if attacks:
        want, have = _rates(published.get("attacks")), _rates(fresh.get("attacks"))
        for k, x in sorted(want.items()):
            y = have.get(k, math.nan)
            out.append(Comparison(k, x, y, math.isfinite(y) and abs(x - y) <= RATE_ATOL, x == y))
    return out


def reproduce(name: str, export: str | Path = DEFAULT_EXPORT, attacks: bool = True, data_root: str | None = None,
              log=None) -> Reproduction:
    """Find ``name``'s published record, re-run its cell at its commit, compare (:func:`compare`)."""
    record = find_record(name, export)
    commit = str(record.get("git_commit") or "")
    t0 = time.perf_counter()
    with checkout_of(commit) as (root, where):
        if log:
            log(f"# re-running {record['name']} (cell {record['cell_id']}) with the code of {commit[:12]} ({where})"
                + ("" if attacks else ", without its attacks"))
        fresh, config = rerun(record, root, attacks=attacks, data_root=data_root, log=log)
    rep = Reproduction(str(record.get("name")), str(record["cell_id"]), commit, where, config,
                       time.perf_counter() - t0)
    rep.comparisons = compare(record, fresh, attacks=attacks)
    return rep


__all__ = ["Comparison", "DEFAULT_EXPORT", "Reproduction", "checkout_of", "compare", "find_record", "reproduce",
           "rerun"]
