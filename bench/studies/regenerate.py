"""Regenerate the whole published leaderboard from one clean commit (a release tag), resumably, and record its cost.

    python -m scripts.regenerate --ref v1.0.2 [--datasets D ...] [--methods M ...] [--stages S ...] [--workers 2]
                                 [--threads 1] [--site docs/leaderboard] [--tracking-dir DIR] [--progress FILE]
                                 [--dry-run]

Run it from a checkout of ``--ref`` itself (``git checkout --detach v1.0.2``): it refuses a HEAD other than the
ref's commit and a work tree whose code differs from it (a tracked or untracked file outside ``docs/``), because
every record must name the tag's commit, clean (``bench leaderboard --check --release v1.0.2``). A copy without
``.git`` (a lent accelerator's machine) runs it with the ref's commit manifest beside it (``python -m bench.gitless
v1.0.2`` where git is, then carry ``.commit-manifest.json``): its files are checked against the ref's tree and the
records name the ref's commit with the tree they hashed to (:mod:`bench.gitless`). Its outputs are
results under ``docs/`` (the site), which never make a record dirty (``bench.gitless.NOT_CODE``). It never moves
HEAD: with ``--commit-to BRANCH`` it commits the site after every step onto BRANCH (BRANCH's tree with the site
replaced, through a temporary index; ``main``, whose code stays as it is), so a partial run outlives its session; to
resume elsewhere, ``git checkout --detach v1.0.2 && git checkout BRANCH -- docs/leaderboard`` and run the same
command again.

Per dataset (the config's order, or ``--datasets``), the stages (``--stages``, default all, in this order):

* ``retire``: the dataset's records that do not name the ref's clean commit (runs, unit attacks, white-box bounds)
  move to ``SITE/superseded/<dataset>.jsonl`` (``bench.superseded``), so every cell below runs again;
  with ``--methods``, only those methods' records retire and only their cells run (a release that changes some
  methods regenerates their rows; the other rows keep naming the release that made them);
* ``train``: the training cells (``scripts.build_leaderboard --no-tune --no-verify``: resumable, a cell with a record
  is done), the hyperparameters being the tag's checked-in ones;
* ``attacks``: the unit attacks on the recorded artefacts (``scripts.unit_attacks`` per level with
  ``--rerun-missing``, which moves the runs whose released model the store lacks to superseded; the attack seeds'
  cells re-run; then the attacks);
* ``whitebox``: the white-box lower bounds (``scripts.whitebox_audits``);
* ``verify``: the verification cells (``scripts.build_leaderboard --no-tune``);
* ``page``: the site rebuilt (``bench leaderboard --config ... --site SITE``).

Every work stage runs once per method family (the module that registers the method: ``gap``, ``drw``,
``privgnn``, ``baselines``, ...), so its cost is measured per family. The runs go to their own tracking store
(``--tracking-dir``, default ``mlflow/regen-<commit>``; ``MLFLOW_TRACKING_URI`` is unset for them), so no cell of
another commit counts as done. Progress and cost go to ``--progress`` (default ``SITE/regeneration.json``, committed
with the site), rewritten after every step and every minute of a running one: per step (dataset, stage, family)
its status, wall seconds, the threads it used (``--workers x --threads`` for sweeps, ``--threads`` for the attack
and audit scripts) and core seconds (wall x threads), summed over attempts; a killed run resumes at the first step
not done and its cost so far stays counted. ``--dry-run`` prints the plan, with the cells each step covers and how
many are left, and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable

import yaml

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "leaderboard.yaml"
SITE = REPO / "docs" / "leaderboard"
STAGES = ("retire", "train", "attacks", "whitebox", "verify", "page")
LEVELS = ("edge", "feature")
#: unit-attack sizes per dataset (LinkTeller pairs, feature targets), as the published records used
ATTACK_SIZE = {"cora": 500, "citeseer": 500}
DEFAULT_ATTACK_SIZE = 200
#: seconds between two writes of the progress file while a step runs
HEARTBEAT_S = 60.0
SCHEMA = 1


class Refused(Exception):
    """Bad input or a checkout the records could not name: one ``error:`` line, exit 2, nothing run."""


@dataclass
class Step:
    """One unit of work and of cost: a stage of one dataset for one method family (``*`` when the stage is not
    split by family). ``commands``: argv lists (run as subprocesses) or callables; each with the threads it uses."""

    dataset: str
    stage: str
    family: str
    cells: int
    todo: int
    commands: list[tuple[list[str] | Callable[[], Any], int]] = field(default_factory=list)
    #: the labels of the step's cells that still have no record of the ref's commit (read after the commands ran);
    #: None where the stage's records do not map one to one onto cells (unit attacks skip node-level methods)
    missing: Callable[[], list[str]] | None = None

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.stage}/{self.family}"

    @property
    def threads(self) -> int:
        return max((t for _, t in self.commands), default=1)


@dataclass
class Context:
    ref: str
    commit: str
    config: Path
    site: Path
    tracking_dir: Path
    workers: int
    threads: int
    pooled: list[str]
    teacher_cache: str | None = None
    raw: dict = field(default_factory=dict)
    #: only these methods' cells and records (None: every method of the config)
    methods: tuple[str, ...] | None = None

    def mine(self, rec: dict) -> bool:
        """Whether a record belongs to the regenerated methods (runs: ``params.method``; attack and audit
        records: their ``method`` or their target's)."""
        if self.methods is None:
            return True
        p = rec.get("params") or {}
        return (p.get("method") or rec.get("method") or rec.get("target_method")) in self.methods

    @property
    def runs(self) -> Path:
        return self.site / "runs"

    @property
    def attacks(self) -> Path:
        return self.site / "attacks"


# --------------------------------------------------------------------------------------
# Where it may run
# --------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def ref_commit(ref: str, repo: Path = REPO) -> str:
    if not (repo / ".git").exists():  # a copy without git (a lent accelerator's): its commit manifest says
        from bench import gitless

        manifest = gitless.manifest_path(repo)
        data = json.loads(manifest.read_text()) if manifest else {}
        if data and ref in (data.get("ref"), data.get("commit")):
            return data["commit"]
        raise Refused(f"--ref {ref}: no git in {repo} and no commit manifest of {ref} (write one where git is: "
                      f"python -m bench.gitless {ref}; carry {gitless.MANIFEST} with the copy)")
    out = _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo)
    if out.returncode != 0 or not out.stdout.strip():
        raise Refused(f"--ref {ref}: no such tag or commit in {repo}")
    return out.stdout.strip()


def checkout_problems(commit: str, ref: str, repo: Path = REPO) -> list[str]:
    """Why records made here would not name ``commit`` clean: HEAD elsewhere, or code (tracked or untracked, outside
    ``docs/``) that differs from it."""
    from bench.gitless import NOT_CODE, commit_of

    if not (repo / ".git").exists():  # the files checked against the manifest (untracked files are not seen)
        found = commit_of(repo)
        return [] if found == commit else [f"the files here are not {ref}'s ({found[:12]}"
                                           f"{'-dirty' if found.endswith('-dirty') else ''} by its commit manifest): "
                                           f"records would not name {commit[:12]} clean"]
    head = _git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    problems = []
    if head != commit:
        problems.append(f"HEAD is {head[:12] or 'unknown'}, not {ref} ({commit[:12]}): git checkout --detach {ref}")
    changed = _git("status", "--porcelain", "--", ".", *(f":(exclude){p}" for p in NOT_CODE), cwd=repo).stdout
    if changed.strip():
        files = ", ".join(x[3:] for x in changed.splitlines()[:5]) + (" ..." if len(changed.splitlines()) > 5 else "")
        problems.append(f"the work tree's code differs from {ref} ({files}): records would name a -dirty commit")
    return problems


# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------


def family_of(method: str) -> str:
    """A method's family: the module that registers it (``methods.gap.progap`` -> ``gap``; a plugin: its module)."""
    from methods.base import get_method

    mod = get_method(method).__module__
    parts = mod.split(".")
    return parts[1] if parts[0] == "methods" and len(parts) > 1 else mod


def families(cells: list) -> dict[str, list[str]]:
    """Family -> the methods of ``cells`` in it, in the cells' order."""
    out: dict[str, list[str]] = {}
    for c in cells:
        ms = out.setdefault(family_of(c.method), [])
        if c.method not in ms:
            ms.append(c.method)
    return out


def _records(path: Path, dataset: str) -> list[dict]:
    from bench import records

    return [r for r in records.load(f"{path}/") if (r.get("params") or {}).get("dataset") == dataset] \
        if path.is_dir() else []


def stale_lines(ctx: Context, dataset: str) -> dict[Path, tuple[list[str], list[str]]]:
    """Per file of the site's runs and attacks: (lines kept, lines of ``dataset`` that do not name the ref's clean
    commit)."""
    out = {}
    for d in (ctx.runs, ctx.attacks):
        for f in sorted(d.glob("*.jsonl")) if d.is_dir() else []:
            keep, stale = [], []
            for line in (x for x in f.read_text().splitlines() if x.strip()):
                rec = json.loads(line)
                mine = (rec.get("params") or {}).get("dataset") == dataset and ctx.mine(rec)
                (stale if mine and rec.get("git_commit") != ctx.commit else keep).append(line)
            if stale:
                out[f] = (keep, stale)
    return out


def retire(ctx: Context, dataset: str) -> int:
    """Move ``dataset``'s records that another commit made to ``SITE/superseded/`` (marked why); how many."""
    from bench.io import write_text_atomic
    from bench.superseded import append_lines, site_superseded

    why = f"regenerated from {ctx.ref} ({ctx.commit[:12]})"
    moved = 0
    for f, (keep, stale) in stale_lines(ctx, dataset).items():
        append_lines(site_superseded(ctx.site), (json.dumps({**json.loads(x), "superseded_because": why},
                                                            sort_keys=True, separators=(",", ":")) for x in stale))
        write_text_atomic(f, "".join(x + "\n" for x in keep))
        moved += len(stale)
    return moved


def _py(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def plan(ctx: Context, datasets: list[str], stages: list[str]) -> list[Step]:
    """Every step of the regeneration, in order, with its commands and the cells it covers (and has left)."""
    from bench import api
    from bench.studies.build_leaderboard import dataset_config
    from bench.studies.whitebox_audits import COMPOSED, POOLED

    cfg = str(ctx.config)
    sweep_threads = ctx.workers * ctx.threads
    common = ["--config", cfg, "--site", str(ctx.site), "--no-tune", "--no-site", "--workers", str(ctx.workers),
              "--threads", str(ctx.threads)] + (["--teacher-cache", ctx.teacher_cache] if ctx.teacher_cache else [])
    rec_args = ["--config", cfg, "--runs", f"{ctx.runs}/", "--superseded", f"{ctx.site / 'superseded'}/",
                "--threads", str(ctx.threads)]
    steps: list[Step] = []
    for d in datasets:
        cells = [c for c in api.cells(dataset_config(ctx.raw, d))
                 if not c.skip and (ctx.methods is None or c.method in ctx.methods)]
        ok, done = _finished(ctx, d)
        fams = families(cells)
        size = str(ATTACK_SIZE.get(d, DEFAULT_ATTACK_SIZE))
        for stage in stages:
            if stage == "retire":
                n = sum(len(s) for _, s in stale_lines(ctx, d).values())
                steps.append(Step(d, stage, "*", n, n, [(lambda d=d: retire(ctx, d), 1)]))
            elif stage == "page" and ctx.methods is None:
                steps.append(Step(d, stage, "*", 1, 1, [(_py("bench", "leaderboard", "--config", cfg, "--site",
                                                              str(ctx.site), "--no-track"), 1)]))
            for fam, ms in fams.items() if stage not in ("retire", "page") else ():
                mine = [c for c in cells if c.method in ms]
                if stage == "train":
                    todo = [c for c in mine if c.kind == "run"]
                    cmds = [(_py("scripts.build_leaderboard", "--datasets", d, "--methods", *ms, "--no-verify",
                                 *common), sweep_threads)]
                    left = [c for c in todo if c.cell_id not in ok]
                elif stage == "verify":
                    todo = [c for c in mine if c.kind == "verify"]
                    cmds = [(_py("scripts.build_leaderboard", "--datasets", d, "--methods", *ms, *common),
                             sweep_threads)]
                    left = [c for c in todo if c.cell_id not in ok]
                elif stage == "attacks":
                    todo = [c for c in mine if c.kind == "run" and c.attacks]
                    seeds = sorted({str(c.seed) for c in todo})
                    by_level = [_py("scripts.unit_attacks", "--level", lv, "--datasets", d, "--methods", *ms,
                                    "--out", str(ctx.attacks / f"{lv}.jsonl"),
                                    *(("--linkteller-pairs", size) if lv == "edge" else ("--targets", size)),
                                    *rec_args) for lv in LEVELS]
                    cmds = ([(c + ["--rerun-missing"], ctx.threads) for c in by_level]
                            + [(_py("scripts.build_leaderboard", "--datasets", d, "--methods", *ms, "--seeds",
                                    *seeds, "--no-verify", *common), sweep_threads)]
                            + [(c, ctx.threads) for c in by_level])
                    attacked = set().union(*(done.get(f"{lv}-attack", set()) for lv in LEVELS))
                    left = [c for c in todo if c.cell_id not in attacked]
                elif stage == "whitebox":
                    todo = [c for c in mine if c.kind == "run" and c.seed == 0 and c.epsilon != float("inf")
                            and (c.method in COMPOSED or (c.method in POOLED and d in ctx.pooled))]
                    cmds = [(_py("scripts.whitebox_audits", "--datasets", d, "--methods", *ms, "--pooled-datasets",
                                 *ctx.pooled, "--out", str(ctx.attacks / "whitebox.jsonl"), *rec_args), ctx.threads)]
                    left = [c for c in todo if c.cell_id not in done.get("whitebox-audit", ())]
                else:
                    raise Refused(f"unknown stage {stage!r}")
                if todo:
                    steps.append(Step(d, stage, fam, len(todo), len(left), cmds,
                                      None if stage == "attacks" else partial(_missing, ctx, d, stage, todo)))
    return steps


def _finished(ctx: Context, dataset: str) -> tuple[set[str], dict[str, set[str]]]:
    """The cells with a finished run/verify record of the ref's commit, and per attack-record kind the cells it
    has a record of the ref's commit for."""
    ok = {r["cell_id"] for r in _records(ctx.runs, dataset)
          if r.get("git_commit") == ctx.commit and r.get("status", "FINISHED") == "FINISHED"}
    done: dict[str, set] = {}
    for r in _records(ctx.attacks, dataset):
        if r.get("git_commit") == ctx.commit:
            done.setdefault(r.get("kind"), set()).add(r.get("target_cell_id"))
    return ok, done


def _missing(ctx: Context, dataset: str, stage: str, todo: list) -> list[str]:
    """The labels of ``todo``'s cells without a record of the ref's commit: a sweep goes on past a failed cell
    (and exits 0), so a step is done only when this is empty."""
    ok, done = _finished(ctx, dataset)
    have = done.get("whitebox-audit", set()) if stage == "whitebox" else ok
    return [c.label for c in todo if c.cell_id not in have]


# --------------------------------------------------------------------------------------
# Progress and cost
# --------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Progress:
    """The progress file: one entry per step, its cost summed over attempts; written atomically on every change."""

    def __init__(self, path: Path, ctx: Context) -> None:
        self.path = path
        data = json.loads(path.read_text()) if path.exists() else {}
        if data and data.get("commit") != ctx.commit:
            raise Refused(f"{path} records a regeneration from {data.get('ref')} ({str(data.get('commit'))[:12]}), "
                          f"not {ctx.ref} ({ctx.commit[:12]}): give another --progress, or move it away")
        self.data = data or {"schema": SCHEMA, "ref": ctx.ref, "commit": ctx.commit, "started": _now(), "steps": {}}
        self.data.update(config=str(ctx.config.relative_to(REPO) if ctx.config.is_relative_to(REPO) else ctx.config),
                         workers=ctx.workers, threads_per_cell=ctx.threads)
        if ctx.methods is not None:  # a partial regeneration: only these methods' records name the ref
            self.data["methods"] = list(ctx.methods)

    def done(self, step: Step) -> bool:
        return self.data["steps"].get(step.key, {}).get("status") == "done"

    def entry(self, step: Step) -> dict[str, Any]:
        e = self.data["steps"].setdefault(step.key, {"dataset": step.dataset, "stage": step.stage,
                                                      "family": step.family, "wall_s": 0.0, "core_s": 0.0,
                                                      "attempts": 0})
        e.update(cells=step.cells, threads=step.threads)
        return e

    def add(self, step: Step, wall: float, threads: int) -> None:
        """Count ``wall`` seconds at ``threads`` threads to ``step``."""
        e = self.entry(step)
        e["wall_s"] = round(e["wall_s"] + wall, 3)
        e["core_s"] = round(e["core_s"] + wall * threads, 3)

    def save(self) -> None:
        from bench.io import write_text_atomic

        steps = self.data["steps"].values()
        self.data["updated"] = _now()
        self.data["host"] = f"{platform.node()} ({os.cpu_count()} CPUs, {platform.machine()})"
        self.data["wall_s"] = round(sum(e["wall_s"] for e in steps), 3)
        self.data["core_hours"] = round(sum(e["core_s"] for e in steps) / 3600, 4)
        self.data["complete"] = bool(steps) and all(e.get("status") == "done" for e in steps)
        write_text_atomic(self.path, json.dumps(self.data, indent=1, sort_keys=True) + "\n")


def run_command(cmd: list[str], env: dict[str, str], tick: Callable[[float], None]) -> int:
    """Run ``cmd`` in the repository, calling ``tick(seconds since the last tick)`` every :data:`HEARTBEAT_S` and
    once at the end; its exit status."""
    last = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env)
    try:
        while True:
            try:
                rc = proc.wait(timeout=HEARTBEAT_S)
                break
            except subprocess.TimeoutExpired:
                now = time.perf_counter()
                tick(now - last)
                last = now
    finally:
        if proc.poll() is None:  # interrupted: stop the stage's process before leaving
            proc.terminate()
            proc.wait()
        tick(time.perf_counter() - last)
    return rc


def commit_site(site: Path, branch: str, base: str, message: str, repo: Path = REPO) -> str | None:
    """Commit ``site`` as it is in the work tree onto ``branch`` (created at ``base``, the ref's commit) without
    moving HEAD or touching the index: a temporary index starts from the branch's tree and takes the site's files,
    so the branch keeps its code and takes the results (a new branch: the ref's code; ``main``: main's, where the
    results land). The new commit's id, or None when the site is unchanged."""
    import tempfile

    rel = site.resolve().relative_to(repo.resolve()).as_posix()
    existing = _git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", cwd=repo).stdout.strip()
    parent = existing or base
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}

        def git(*args: str) -> str:
            r = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise Refused(f"git {args[0]}: {r.stderr.strip()}")
            return r.stdout.strip()

        git("read-tree", parent)
        git("add", "-A", "--", rel)
        tree = git("write-tree")
        if tree == git("rev-parse", f"{parent}^{{tree}}"):
            return None
        commit = git("commit-tree", tree, "-p", parent, "-m", message)
        git("update-ref", f"refs/heads/{branch}", commit, existing)  # "": the branch must not exist yet
    return commit


def execute(steps: list[Step], progress: Progress, env: dict[str, str], out=None,
            after_step: Callable[[Step], None] | None = None) -> int:
    """Run every step not done yet, in order; stop at the first that fails (exit 1). ``after_step``: called after
    each step that ran (done or failed), e.g. to commit the site so far."""
    out = out or sys.stderr
    total = len(steps)
    for i, step in enumerate(steps, 1):
        if progress.done(step):
            print(f"[{i}/{total}] {step.key}: done before", file=out, flush=True)
            continue
        e = progress.entry(step)
        e.update(status="running", attempts=e["attempts"] + 1, last_started=_now())
        progress.save()
        print(f"[{i}/{total}] {step.key}: {step.todo} of {step.cells} cells left", file=out, flush=True)
        rc = 0
        for cmd, threads in step.commands:
            def tick(dt: float, threads: int = threads) -> None:
                progress.add(step, dt, threads)  # noqa: B023 - called within this iteration
                progress.save()

            if callable(cmd):
                t0 = time.perf_counter()
                try:
                    cmd()
                finally:
                    tick(time.perf_counter() - t0)
            else:
                rc = run_command(cmd, env, tick)
            if rc:
                break
        missing = step.missing() if rc == 0 and step.missing is not None else []
        e["status"] = "done" if rc == 0 and not missing else "failed"
        progress.save()
        print(f"[{i}/{total}] {step.key}: {e['status']} ({e['wall_s']:.0f} s so far)", file=out, flush=True)
        if after_step is not None:
            after_step(step)
        if rc:
            print(f"error: {step.key} failed (exit {rc}); rerun the same command to resume", file=out)
            return 1
        if missing:
            print(f"error: {step.key}: {len(missing)} of {step.cells} cells have no record after the step (first: "
                  f"{', '.join(missing[:3])}); their errors are above. Rerunning resumes them; a refusal such as a "
                  "BudgetError repeats until the config or the hyperparameters change, which is a new release",
                  file=out)
            return 1
    return 0


def child_env(ctx: Context) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update(BENCH_TRACKING_DIR=str(ctx.tracking_dir), PYTHONPATH=str(REPO))
    return env


def print_plan(steps: list[Step], ctx: Context, progress: Progress | None, out=None) -> None:
    out = out or sys.stdout
    print(f"# regenerate from {ctx.ref} ({ctx.commit[:12]}) into {ctx.site}; store {ctx.tracking_dir}", file=out)
    print("| dataset | stage | family | cells | left | threads | status |", file=out)
    print("| --- | --- | --- | --- | --- | --- | --- |", file=out)
    for s in steps:
        status = (progress.data["steps"].get(s.key, {}).get("status") if progress else None) or "to run"
        print(f"| {s.dataset} | {s.stage} | {s.family} | {s.cells} | {s.todo} | {s.threads} | {status} |", file=out)
    per_stage: dict[str, list[int]] = {}
    for s in steps:
        per_stage.setdefault(s.stage, [0, 0])
        per_stage[s.stage][0] += s.cells
        per_stage[s.stage][1] += s.todo
    print("# cells per stage: " + ", ".join(f"{k} {v[0]} ({v[1]} left)" for k, v in per_stage.items()), file=out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.regenerate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ref", required=True, help="the tag (or commit) to regenerate from; HEAD must be its commit")
    p.add_argument("--config", default=str(CONFIG), help="the leaderboard's sweep config (default: %(default)s)")
    p.add_argument("--site", default=str(SITE), help="the site whose records are regenerated (default: %(default)s)")
    p.add_argument("--datasets", nargs="*", help="only these datasets, in this order (default: the config's)")
    p.add_argument("--methods", nargs="*", help="only these methods' cells and records (default: every method)")
    p.add_argument("--stages", nargs="*", choices=STAGES, help=f"only these stages (default: all: {' '.join(STAGES)})")
    p.add_argument("--workers", type=int, default=2, help="sweep cells in parallel (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1, help="torch/numba threads per cell or script (default: 1)")
    p.add_argument("--pooled-datasets", nargs="*", default=["cora"],
                   help="datasets whose DP-SGD rows get the pooled white-box audit (default: %(default)s)")
    p.add_argument("--teacher-cache", metavar="DIR", help="PrivGNN's teacher cache (scripts.build_leaderboard)")
    p.add_argument("--tracking-dir", metavar="DIR",
                   help="the runs' own tracking store (default: mlflow/regen-<commit>, git-ignored)")
    p.add_argument("--progress", metavar="FILE",
                   help="progress and cost, rewritten as it goes (default: SITE/regeneration.json; with --methods "
                        "SITE/regeneration-REF.json)")
    p.add_argument("--commit-to", metavar="BRANCH",
                   help="after every step, commit the site (results only) onto BRANCH, created at the ref's commit, "
                        "without moving HEAD: a partial run survives the session that ran it")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (cells per step and stage, what is left) and run nothing")
    args = p.parse_args(argv)
    try:
        if args.workers < 1 or args.threads < 1:
            raise Refused("--workers and --threads must be >= 1")
        config = Path(args.config)
        if not config.is_file():
            raise Refused(f"--config {config} not found")
        raw = yaml.safe_load(config.read_text())
        datasets = args.datasets or list(raw["datasets"])
        unknown = sorted(set(datasets) - set(raw["datasets"]))
        if unknown:
            raise Refused(f"{', '.join(unknown)} not in {config}")
        stages = [s for s in STAGES if s in (args.stages or STAGES)]
        configured = {m if isinstance(m, str) else m["name"] for m in raw.get("methods") or []}
        if args.methods is not None:
            bad = sorted(set(args.methods) - configured)
            if bad or not args.methods:
                raise Refused(f"--methods: {', '.join(bad) or 'none given'} not in {config}")
        commit = ref_commit(args.ref)
        site = Path(args.site).resolve()
        ctx = Context(args.ref, commit, config.resolve(), site,
                      Path(args.tracking_dir or REPO / "mlflow" / f"regen-{commit[:12]}").resolve(), args.workers,
                      args.threads, list(args.pooled_datasets), args.teacher_cache, raw,
                      tuple(args.methods) if args.methods is not None else None)
        problems = checkout_problems(commit, args.ref)
        if problems and not args.dry_run:
            raise Refused("; ".join(problems))
        default_progress = site / ("regeneration.json" if ctx.methods is None else f"regeneration-{args.ref}.json")
        progress = Progress(Path(args.progress) if args.progress else default_progress, ctx)
        if args.commit_to:
            if not (REPO / ".git").exists():
                raise Refused("--commit-to needs git (a copy without .git: commit its site where git is)")
            try:
                site.relative_to(REPO.resolve())
            except ValueError:
                raise Refused(f"--commit-to: the site {site} is not inside {REPO}") from None
            if _git("check-ref-format", "--branch", args.commit_to).returncode != 0:
                raise Refused(f"--commit-to {args.commit_to}: not a branch name")
    except Refused as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    steps = plan(ctx, datasets, stages)
    if args.dry_run:
        print_plan(steps, ctx, progress)
        for x in problems:
            print(f"# would refuse to run: {x}")
        return 0
    after = None
    if args.commit_to:
        def after(step: Step) -> None:
            c = commit_site(site, args.commit_to, commit,
                            f"regenerate {ctx.ref}: {step.key} {progress.entry(step)['status']} (results only)")
            if c:
                print(f"# {args.commit_to}: {c[:12]} ({step.key})", file=sys.stderr, flush=True)
    return execute(steps, progress, child_env(ctx), after_step=after)


if __name__ == "__main__":
    sys.exit(main())
