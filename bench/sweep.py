"""``bench sweep CONFIG.yaml``: a resumable grid of tracked runs.

A YAML config names methods x datasets x splits x epsilons x seeds (plus attacks on every trained model and
audit modes). Every *cell* of the grid is one tracked MLflow run made through :mod:`bench.run` (one method,
one dataset, one split, one epsilon, one seed); audit cells are one ``bench audit`` run each.

Resuming. A cell's identity is a hash of its resolved configuration (method hyperparameters after overrides,
dataset, split, target epsilon and delta, seed, attacks); its run carries it in the tag ``sweep_cell``.
On every start the sweep reads the experiment from MLflow and

* skips cells that already have a FINISHED run,
* gives up on cells with more than ``--max-retries`` FAILED runs (each sweep retries a failure at once),
* marks KILLED every RUNNING run whose owner (tag ``sweep_owner`` = host:pid:start-time of the sweep
  process that submitted it) is a dead process on this host: a sweep killed with SIGKILL leaves such runs,
  and its cells run again. RUNNING runs of a live sweep (or of another host) are left alone and their
  cells are not started twice.

Cells that cannot run (a split the method does not support, a split the dataset does not have) are skipped
with their reason, never crash the sweep. ``--dry-run`` prints the plan: what would run, what is done.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cliargs import command
from methods.base import BenchError, ConfigError

ENV_KEYS = ("MLFLOW_TRACKING_URI", "BENCH_DATA_ROOT", "BENCH_CACHE_DIR")
SPLIT_SETTING = {"public": "transductive", "random-75-10-15": "transductive", "ogb": "transductive",
                 "disjoint": "inductive", "private-public": "private-public"}
TOP_KEYS = {"experiment", "methods", "datasets", "splits", "epsilons", "seeds", "delta", "set", "attacks",
            "attack_set", "bootstrap", "audits", "device", "description"}
METHOD_KEYS = {"name", "set", "splits", "epsilons", "datasets", "seeds"}
AUDIT_KEYS = {"modes", "trials", "canaries", "methods", "epsilons", "seeds", "set"}


class SweepError(BenchError):
    """A sweep config that cannot be read or is malformed."""


# --------------------------------------------------------------------------------------
# Config and cells
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One run of the grid. ``kind`` is ``run`` (train + evaluate + attacks) or ``audit``."""

    kind: str
    method: str
    dataset: str
    split: str
    epsilon: float  # target; inf for non-private methods
    seed: int
    overrides: tuple[str, ...] = ()
    delta: float | None = None
    attacks: tuple[str, ...] = ()
    attack_overrides: tuple[str, ...] = ()
    bootstrap: int = 1000
    audit_mode: str | None = None
    audit_options: tuple[tuple[str, Any], ...] = ()
    device: str = "auto"
    cell_id: str = ""
    skip: str | None = None  # reason this cell cannot run

    @property
    def label(self) -> str:
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:g}"
        extra = f" audit={self.audit_mode}" if self.kind == "audit" else ""
        return f"{self.method}/{self.dataset}/{self.split}/eps={eps}/s{self.seed}{extra}"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["epsilon"] = str(self.epsilon)
        return d


@dataclass
class SweepConfig:
    experiment: str
    cells: list[Cell]
    path: str = ""
    attacks: list[str] = field(default_factory=list)
    audits: dict[str, Any] = field(default_factory=dict)


def _as_list(v: Any, what: str) -> list:
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v]


def _eps(v: Any, where: str) -> float:
    try:
        e = float(v)
    except (TypeError, ValueError):
        raise SweepError(f"{where}: epsilon {v!r} is not a number (use inf for no noise)") from None
    if math.isnan(e) or e <= 0:
        raise SweepError(f"{where}: epsilon must be > 0 (got {v!r})")
    return e


def _set_items(v: Any, where: str) -> list[str]:
    """``set`` as a mapping {key: value} or a list of "key=value" strings."""
    if v is None:
        return []
    if isinstance(v, dict):
        return [f"{k}={_yaml_scalar(x)}" for k, x in v.items()]
    if isinstance(v, list) and all(isinstance(x, str) and "=" in x for x in v):
        return list(v)
    raise SweepError(f"{where}: 'set' must be a mapping key: value or a list of 'key=value' strings")


def _yaml_scalar(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)


def load_config(path: str | os.PathLike) -> SweepConfig:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise SweepError(f"sweep config {path} not found")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "invalid YAML"
        raise SweepError(f"{path}: not valid YAML ({first})") from None
    return build_config(raw, str(p))


def build_config(raw: Any, where: str = "config") -> SweepConfig:
    """Expand a parsed YAML mapping into cells (validated; no data is loaded)."""
    from bench.run import DEFAULT_EXPERIMENT
    from bench.splits import check_split, default_split
    from methods.base import config_dict, get_method, stable_hash

    if not isinstance(raw, dict):
        raise SweepError(f"{where}: expected a mapping with methods, datasets, ... at the top level")
    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise SweepError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (valid: {', '.join(sorted(TOP_KEYS))})")
    experiment = str(raw.get("experiment") or DEFAULT_EXPERIMENT)
    datasets = [str(d) for d in _as_list(raw.get("datasets"), "datasets")]
    if not datasets:
        raise SweepError(f"{where}: no datasets")
    splits = [str(s) for s in _as_list(raw.get("splits"), "splits")] or ["default"]
    epsilons = [_eps(e, where) for e in _as_list(raw.get("epsilons"), "epsilons")] or [math.inf]
    seeds = _as_list(raw.get("seeds"), "seeds") or [0]
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise SweepError(f"{where}: seeds must be distinct non-negative integers (got {seeds})")
    delta = raw.get("delta")
    if delta is not None:
        delta = float(delta)
        if not 0 <= delta < 1:
            raise SweepError(f"{where}: delta must be in [0, 1) (got {delta})")
    global_set = _set_items(raw.get("set"), where)
    attacks = [str(a) for a in _as_list(raw.get("attacks"), "attacks")]
    attack_set = _set_items(raw.get("attack_set"), f"{where}: attack_set")
    bootstrap = int(raw.get("bootstrap", 1000))
    device = str(raw.get("device", "auto"))
    if attacks:
        from bench.attack import plan_attacks

        plan_attacks(attacks, attack_set, bootstrap, None)  # unknown attacks/options fail here
    audits = raw.get("audits") or {}
    if audits:
        if not isinstance(audits, dict) or set(audits) - AUDIT_KEYS:
            raise SweepError(f"{where}: 'audits' must be a mapping with keys among {', '.join(sorted(AUDIT_KEYS))}")
        modes = [str(m) for m in _as_list(audits.get("modes"), "modes")]
        bad = [m for m in modes if m not in ("one-run", "multi-run")]
        if not modes or bad:
            raise SweepError(f"{where}: audits.modes must list one-run and/or multi-run (got {modes})")

    method_entries = _as_list(raw.get("methods"), "methods")
    if not method_entries:
        raise SweepError(f"{where}: no methods")
    cells: list[Cell] = []
    seen: set[str] = set()
    for entry in method_entries:
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict) or "name" not in entry:
            raise SweepError(f"{where}: a method entry must be a name or a mapping with 'name' (got {entry!r})")
        if set(entry) - METHOD_KEYS:
            raise SweepError(f"{where}: method {entry['name']}: unknown key(s) "
                             f"{', '.join(sorted(set(entry) - METHOD_KEYS))} (valid: {', '.join(sorted(METHOD_KEYS))})")
        name = str(entry["name"])
        cls = get_method(name)  # unknown names fail here
        overrides = [o for o in global_set if _applies(o, cls)] + _set_items(entry.get("set"), f"{where}: {name}")
        per = _method_overrides(cls, overrides)
        try:
            method = cls(**per)
        except BenchError as e:
            raise SweepError(f"{where}: method {name}: {e}") from None
        hparams = config_dict(method.config)
        m_splits = [str(s) for s in _as_list(entry.get("splits"), "splits")] or splits
        m_eps = [_eps(e, f"{where}: {name}") for e in _as_list(entry.get("epsilons"), "epsilons")] or epsilons
        m_datasets = [str(d) for d in _as_list(entry.get("datasets"), "datasets")] or datasets
        m_seeds = _as_list(entry.get("seeds"), "seeds") or seeds
        if not method.is_private:
            m_eps = [math.inf]  # one cell per (dataset, split, seed): no budget to sweep
        for ds in m_datasets:
            for sp in m_splits:
                split = default_split(ds) if sp == "default" else sp
                skip = None
                try:
                    check_split(split, ds)
                except BenchError as e:
                    skip = str(e)
                if skip is None and SPLIT_SETTING.get(split) not in cls.settings:
                    skip = (f"method {name} does not support the {SPLIT_SETTING.get(split)} setting of split "
                            f"{split} (supported: {', '.join(cls.settings)})")
                for eps in m_eps:
                    for seed in m_seeds:
                        base = dict(kind="run", method=name, dataset=ds, split=split, epsilon=eps, seed=int(seed),
                                    overrides=tuple(f"{k}={v}" for k, v in sorted(per.items())), delta=delta,
                                    attacks=tuple(attacks), attack_overrides=tuple(attack_set),
                                    bootstrap=bootstrap, device=device, skip=skip)
                        ident = {"kind": "run", "method": name, "dataset": ds, "split": split, "seed": int(seed),
                                 "epsilon": str(eps), "delta": delta, "hparams": hparams, "attacks": attacks,
                                 "attack_set": attack_set, "bootstrap": bootstrap if attacks else None}
                        cid = stable_hash(ident)
                        if cid in seen:
                            continue
                        seen.add(cid)
                        cells.append(Cell(**base, cell_id=cid))
                        if audits and method.is_private and skip is None and _audited(audits, name, eps, seed):
                            for mode in _as_list(audits.get("modes"), "modes"):
                                opts = tuple(sorted((k, audits[k]) for k in ("trials", "canaries") if k in audits))
                                aid = stable_hash({**ident, "kind": "audit", "attacks": [], "attack_set": [],
                                                   "bootstrap": None, "mode": mode, "options": list(opts)})
                                if aid not in seen:
                                    seen.add(aid)
                                    cells.append(Cell(**{**base, "kind": "audit", "attacks": (),
                                                         "attack_overrides": ()}, audit_mode=str(mode),
                                                      audit_options=opts, cell_id=aid))
    return SweepConfig(experiment, cells, where, attacks, dict(audits))


def _audited(audits: dict, method: str, eps: float, seed: int) -> bool:
    ms = _as_list(audits.get("methods"), "methods")
    es = [float(e) for e in _as_list(audits.get("epsilons"), "epsilons")]
    ss = _as_list(audits.get("seeds"), "seeds")
    return (not ms or method in ms) and (not es or eps in es) and (not ss or seed in ss)


def _fields(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls.Config)}


def _applies(item: str, cls) -> bool:
    key = item.partition("=")[0].strip()
    scope, dot, name = key.rpartition(".")
    if dot:
        return scope == cls.name
    return key in _fields(cls)


def _method_overrides(cls, items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        scope, dot, name = key.rpartition(".")
        if dot:
            if scope != cls.name:
                continue
            key = name
        if key not in _fields(cls):
            raise SweepError(f"method {cls.name}: unknown hyperparameter {key!r} "
                             f"(valid: {', '.join(sorted(_fields(cls))) or '(none)'})")
        out[key] = value
    return out


# --------------------------------------------------------------------------------------
# State in MLflow: done, failed, running (and orphaned) cells
# --------------------------------------------------------------------------------------


def _proc_start(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def owner_id() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_proc_start(pid)}"


def owner_alive(owner: str) -> bool | None:
    """True/False for an owner on this host; None when it lives on another host (cannot tell)."""
    try:
        host, pid_s, start = owner.rsplit(":", 2)
        pid = int(pid_s)
    except ValueError:
        return False
    if host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start == "?" or _proc_start(pid) == start  # a reused pid is another process


@dataclass
class CellState:
    finished: list[Any] = field(default_factory=list)
    failed: list[Any] = field(default_factory=list)
    running: list[Any] = field(default_factory=list)
    killed: list[Any] = field(default_factory=list)


def cell_states(experiment: str) -> dict[str, CellState]:
    from bench import tracking

    out: dict[str, CellState] = {}
    for r in tracking.search_runs(experiment, "tags.sweep_cell LIKE '%'"):
        cid = r.data.tags.get("sweep_cell")
        if not cid or r.data.tags.get("mlflow.parentRunId"):
            continue
        st = out.setdefault(cid, CellState())
        {"FINISHED": st.finished, "FAILED": st.failed, "RUNNING": st.running, "SCHEDULED": st.running,
         "KILLED": st.killed}.get(r.info.status, st.killed).append(r)
    return out


def reclaim_orphans(states: dict[str, CellState], reclaim_remote: bool = False) -> list[str]:
    """Mark KILLED the RUNNING runs whose owner process is dead; returns their run ids."""
    from bench import tracking

    reclaimed = []
    for st in states.values():
        for r in list(st.running):
            alive = owner_alive(r.data.tags.get("sweep_owner", ""))
            if alive is False or (alive is None and reclaim_remote):
                c = tracking.client()
                c.set_tag(r.info.run_id, "error", "orphaned: the sweep that ran it died (reclaimed by a later sweep)")
                c.set_terminated(r.info.run_id, status="KILLED")
                st.running.remove(r)
                st.killed.append(r)
                reclaimed.append(r.info.run_id)
    return reclaimed


@dataclass
class Plan:
    todo: list[Cell]
    done: list[Cell]
    running: list[Cell]
    gave_up: list[Cell]
    skipped: list[Cell]


def make_plan(cfg: SweepConfig, states: dict[str, CellState], max_retries: int) -> Plan:
    plan = Plan([], [], [], [], [])
    for c in cfg.cells:
        st = states.get(c.cell_id, CellState())
        if c.skip:
            plan.skipped.append(c)
        elif st.finished:
            plan.done.append(c)
        elif st.running:
            plan.running.append(c)
        elif len(st.failed) > max_retries:
            plan.gave_up.append(c)
        else:
            plan.todo.append(c)
    return plan


# --------------------------------------------------------------------------------------
# Executing one cell (in any process: this one, a pool worker, a Ray worker)
# --------------------------------------------------------------------------------------


def execute_cell(cell: dict[str, Any], experiment: str, owner: str, env: dict[str, str], failures: int,
                 max_retries: int, threads: int = 0) -> dict[str, Any]:
    """Run one cell, retrying a failure at once while the cell has failed at most ``max_retries`` times.

    Returns ``{"cell_id", "status": finished|failed|skipped, "run_id", "error", "seconds", "attempts"}``.
    """
    os.environ.update(env)
    if threads:
        import torch

        torch.set_num_threads(threads)
    c = Cell(**{**cell, "epsilon": float(cell["epsilon"]), "overrides": tuple(cell["overrides"]),
                "attacks": tuple(cell["attacks"]), "attack_overrides": tuple(cell["attack_overrides"]),
                "audit_options": tuple(tuple(x) for x in cell["audit_options"])})
    t0 = time.perf_counter()
    attempts = 0
    while True:
        attempts += 1
        try:
            run_id = _audit_cell(c, experiment, owner) if c.kind == "audit" else _run_cell(c, experiment, owner)
            return {"cell_id": c.cell_id, "status": "finished", "run_id": run_id, "error": None,
                    "seconds": time.perf_counter() - t0, "attempts": attempts}
        except BenchError as e:  # raised before a run opened (a task the method cannot take): not retried
            return {"cell_id": c.cell_id, "status": "skipped", "run_id": None, "error": str(e),
                    "seconds": time.perf_counter() - t0, "attempts": attempts}
        except Exception as e:  # the run ended FAILED with its error
            failures += 1
            if failures > max_retries:
                msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
                return {"cell_id": c.cell_id, "status": "failed", "run_id": None,
                        "error": f"{type(e).__name__}: {msg}", "seconds": time.perf_counter() - t0,
                        "attempts": attempts}


def _tags(c: Cell, experiment: str, owner: str) -> dict[str, str]:
    return {"sweep_cell": c.cell_id, "sweep_owner": owner, "sweep_kind": c.kind}


def _run_cell(c: Cell, experiment: str, owner: str) -> str | None:
    from bench.run import RunSpec, prepare, run_one

    spec = RunSpec(methods=[c.method], dataset=c.dataset, split=c.split, seeds=[c.seed],
                   epsilon=None if math.isinf(c.epsilon) and _plain(c.method) else c.epsilon, delta=c.delta,
                   overrides=list(c.overrides), device=c.device, experiment=experiment, track=True, progress=False,
                   attacks=list(c.attacks), attack_overrides=list(c.attack_overrides), bootstrap=c.bootstrap,
                   tags=_tags(c, experiment, owner))
    p = prepare(spec)
    return run_one(p, p.classes[0], c.seed).run_id


def _plain(method: str) -> bool:
    from methods.base import get_method

    return get_method(method).privacy_unit == "none"


def audit_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("bench.audit") is not None


def _audit_cell(c: Cell, experiment: str, owner: str) -> str | None:
    """One ``bench audit`` run, then tag the audit run it logged with this cell's identity."""
    from bench import tracking
    from bench.cli import build_parser

    parser = build_parser()
    argv = ["audit", "--method", c.method, "--dataset", c.dataset, "--epsilon", str(c.epsilon),
            "--mode", str(c.audit_mode), "--seed", str(c.seed)]
    for k, v in c.audit_options:
        argv += [f"--{k}", str(v)]
    sub = parser._subparsers._group_actions[0].choices["audit"]  # noqa: SLF001 (argparse has no public API)
    accepted = {o for a in sub._actions for o in a.option_strings}  # noqa: SLF001
    for opt, val in (("--split", c.split), ("--experiment", experiment)):
        if opt in accepted:
            argv += [opt, val]
    if c.delta is not None and "--delta" in accepted:
        argv += ["--delta", str(c.delta)]
    if "--no-progress" in accepted:
        argv.append("--no-progress")
    for o in c.overrides:
        if "--set" in accepted:
            argv += ["--set", o]
    start_ms = int(time.time() * 1000) - 1
    args = parser.parse_args(argv)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # its report is in the run; the sweep prints one line per cell
        code = int(args.func(args) or 0)
    violation = getattr(sys.modules.get("bench.audit"), "VIOLATION_EXIT", 3)
    if code not in (0, violation):  # a VIOLATION is a finished measurement (bench audit exits 3), not a failure
        raise RuntimeError(f"bench audit exited with status {code}")
    exp = experiment if "--experiment" in accepted else sub.get_default("experiment") or experiment
    runs = tracking.search_runs(exp, f"tags.kind = 'audit' and tags.method = '{c.method}' and "
                                     f"tags.audit_mode = '{c.audit_mode}' and attributes.start_time >= {start_ms}")
    runs = [r for r in runs if not r.data.tags.get("sweep_cell")]
    if not runs:
        raise RuntimeError("bench audit logged no audit run")
    run = max(runs, key=lambda r: r.info.start_time)
    tracking.client().set_tag(run.info.run_id, "sweep_cell", c.cell_id)
    tracking.client().set_tag(run.info.run_id, "sweep_owner", owner)
    tracking.client().set_tag(run.info.run_id, "sweep_kind", "audit")
    return run.info.run_id


# --------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------


def worker_env() -> dict[str, str]:
    from bench import tracking

    env = {k: os.environ[k] for k in ENV_KEYS if os.environ.get(k)}
    env["MLFLOW_TRACKING_URI"] = tracking.tracking_uri()  # workers log to the same store as the driver
    return env


def run_sweep(cfg: SweepConfig, executor: str = "inprocess", workers: int = 1, max_retries: int = 1,
              address: str | None = None, dry_run: bool = False, reclaim_remote: bool = False,
              progress: bool = True, out=None, threads: int = 0) -> dict[str, Any]:
    from bench.executors import make_executor

    out = out or sys.stderr

    if any(c.kind == "audit" for c in cfg.cells) and not audit_available():
        raise SweepError("the config asks for audits but bench.audit is not available in this checkout "
                         "(issue 9); remove 'audits' from the config")
    states = cell_states(cfg.experiment)
    reclaimed = [] if dry_run else reclaim_orphans(states, reclaim_remote)
    plan = make_plan(cfg, states, max_retries)
    for rid in reclaimed:
        print(f"# marked KILLED: run {rid} was left RUNNING by a dead sweep", file=out)
    print(f"# sweep {cfg.path}: {len(cfg.cells)} cells in experiment {cfg.experiment!r}: {len(plan.todo)} to run, "
          f"{len(plan.done)} done, {len(plan.running)} running elsewhere, {len(plan.gave_up)} failed "
          f"> {max_retries} retries, {len(plan.skipped)} skipped", file=out)
    reasons: dict[str, list[Cell]] = {}
    for c in plan.skipped:
        reasons.setdefault(c.skip or "", []).append(c)
    for reason, cells in reasons.items():  # one line per reason, not per cell
        more = f" and {len(cells) - 1} more" if len(cells) > 1 else ""
        print(f"  skip  {cells[0].label}{more}: {reason}", file=out)
    summary: dict[str, Any] = {"experiment": cfg.experiment, "cells": len(cfg.cells), "reclaimed": reclaimed,
                               "done_before": [c.cell_id for c in plan.done],
                               "skipped": {c.cell_id: c.skip for c in plan.skipped},
                               "running_elsewhere": [c.cell_id for c in plan.running],
                               "gave_up": [c.cell_id for c in plan.gave_up], "results": []}
    if dry_run:
        for tag, cells in (("run", plan.todo), ("done", plan.done), ("busy", plan.running), ("gave-up", plan.gave_up)):
            for c in cells:
                print(f"  {tag:<5} {c.label}  [{c.cell_id}]", file=out)
        summary["todo"] = [c.cell_id for c in plan.todo]
        return summary
    owner = owner_id()
    env = worker_env()
    by_id = {c.cell_id: c for c in plan.todo}
    failures = {c.cell_id: len(states.get(c.cell_id, CellState()).failed) for c in plan.todo}
    t0 = time.perf_counter()
    from methods.training import progress_bar

    ex = make_executor(executor, workers=workers, address=address, env=env)
    if not threads and executor != "inprocess":
        threads = max(1, (os.cpu_count() or 1) // max(1, workers))  # no oversubscription by default
    jobs = [(c.to_dict(), cfg.experiment, owner, env, failures[c.cell_id], max_retries, threads) for c in plan.todo]
    bar = progress_bar(len(jobs), "sweep", progress)
    try:
        for res in ex.run(execute_cell, jobs):
            c = by_id[res["cell_id"]]
            summary["results"].append({**res, "label": c.label})
            note = f" ({res['error']})" if res["error"] else ""
            bar.write(f"  {res['status']:<8} {c.label}  {res['seconds']:.1f}s{note}", file=out)
            bar.update(1)
    finally:
        bar.close()
        ex.shutdown()
    summary["seconds"] = time.perf_counter() - t0
    n = {s: sum(r["status"] == s for r in summary["results"]) for s in ("finished", "failed", "skipped")}
    print(f"# sweep done in {summary['seconds']:.1f}s: {n['finished']} finished, {n['failed']} failed, "
          f"{n['skipped']} skipped at run time; {len(plan.done)} were done before", file=out)
    return summary


@command("sweep", "run a resumable YAML grid of methods x datasets x splits x epsilons x seeds")
def _sweep_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("sweep", help="run a resumable YAML grid of methods x datasets x splits x epsilons x seeds",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("config", help="YAML sweep config (see configs/)")
    p.add_argument("--dry-run", action="store_true", help="list what would run and what is already done")
    p.add_argument("--executor", choices=["inprocess", "process", "ray"], default="inprocess",
                   help="where cells run: this process, local worker processes, or Ray (default: %(default)s)")
    p.add_argument("--address", help="Ray cluster address (e.g. ray://host:10001 or auto); default: a local instance")
    p.add_argument("--workers", type=int, default=1, help="parallel cells for process/ray executors (default: 1)")
    p.add_argument("--max-retries", type=int, default=1, help="retries of a FAILED cell (default: %(default)s)")
    p.add_argument("--experiment", help="MLflow experiment (overrides the config's)")
    p.add_argument("--reclaim-remote", action="store_true",
                   help="also mark KILLED RUNNING cells owned by sweeps on other hosts (they cannot be checked)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch threads per cell (default: torch's own in-process; cores / workers in workers); "
                        "1 is much faster on a machine shared with other jobs")
    p.add_argument("--output", "-o", metavar="FILE", help="write the sweep summary as JSON")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=cmd_sweep)
    return p


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise SweepError("--workers must be >= 1")
    if args.max_retries < 0:
        raise SweepError("--max-retries must be >= 0")
    if args.threads < 0:
        raise SweepError("--threads must be >= 0")
    if args.address and args.executor != "ray":
        raise SweepError("--address is for --executor ray")
    cfg = load_config(args.config)
    if args.experiment:
        cfg.experiment = args.experiment
    summary = run_sweep(cfg, args.executor, args.workers, args.max_retries, args.address, args.dry_run,
                        args.reclaim_remote, progress=not args.no_progress, threads=args.threads)
    if args.output:
        from bench.run import write_json_atomic

        write_json_atomic(args.output, summary)
    if args.dry_run:
        return 0
    return 1 if any(r["status"] == "failed" for r in summary["results"]) or summary["gave_up"] else 0
