"""A compact export of tracked runs (JSON Lines, one record per sweep cell): what a leaderboard is built from and
what a sweep resumes from, without the MLflow store.

A record holds what the leaderboard shows and what anyone needs to re-check a claim: the cell's identity
(``cell_id``, the sweep's), the run's kind (``run``, ``verify``, ``audit``), its parameters (hyperparameters
included), its released metrics (never ``diagnostic.*``), its ledger (``ledger.json``, so ``bench account`` can
re-account it), the attacks on it (per attack and variant: AUC and TPR at 1% FPR), a verification's checks, the
git commit and the run id. ``bench sweep --export FILE`` appends one record per finished cell as it goes (and, as it
starts and ends, the record of any cell FINISHED in the store that the file lacks: a killed session loses none) and
treats every cell in the file as done; ``bench leaderboard --export FILE`` renders from the file alone. The file is
kept sorted and deduplicated (newest record of a cell wins) when rewritten, so it diffs well in git. An export may
also be a directory: one file per dataset (:func:`sharded`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

from methods.errors import BenchError

#: records of attacks on refits of published runs (``scripts.unit_attacks``), one kind per game
ATTACK_KINDS = ("edge-attack", "feature-attack")
KINDS = ("run", "verify", "audit", *ATTACK_KINDS, "whitebox-audit")
BIG = 1e307  # MLflow keeps inf as 1e308


def _num(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if v >= BIG:
            return "inf"
        if v <= -BIG:
            return "-inf"
    return v


def number(v: Any) -> float:
    """A record's number back as a float (``"inf"`` -> inf, None -> nan)."""
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v)
    return float(v)


def row_key(record: dict[str, Any]) -> tuple[str, str, str, float] | None:
    """(method, dataset, split, target epsilon): the leaderboard row a run, verification or audit record belongs to,
    whatever its hyperparameters; None for a record that does not say."""
    p, t = record.get("params") or {}, record.get("tags") or {}
    method, dataset = t.get("method") or p.get("method"), t.get("dataset") or p.get("dataset")
    split = t.get("split") or p.get("split")
    eps = p.get("target_epsilon", (record.get("metrics") or {}).get("claimed_epsilon"))
    if not method or not dataset or not split or eps is None:
        return None
    return str(method), str(dataset), str(split), number(eps)


def hparams_of(record: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The record's ``hp.*`` params: the setting it ran (a retune changes them, and with them the cell)."""
    return tuple(sorted((k, str(v)) for k, v in (record.get("params") or {}).items() if k.startswith("hp.")))


def ledger_of(record: dict[str, Any]):
    """The record's ledger (a :class:`~methods.privacy.PrivacyLedger`), or None when it carries none."""
    from methods.privacy import PrivacyLedger

    led = record.get("ledger")
    return PrivacyLedger.from_dict(led) if led else None


def accountant_of(record: dict[str, Any]) -> str:
    """The accountant that computed the record's epsilon: its ``accountant`` parameter, else the default that every
    run used before runs logged it (``rdp/improved``)."""
    from methods.privacy.accountant import LEGACY_ACCOUNTANT

    return (record.get("params") or {}).get("accountant") or LEGACY_ACCOUNTANT


@functools.lru_cache(maxsize=4096)
def _epsilon(ledger_json: str, delta: float, accountant: str) -> float:
    from methods.privacy.conformance import adapters  # noqa: F401 - the registered accountants a record may name
    from methods.privacy import PrivacyLedger
    from methods.privacy.accountant import parse_accountant

    acc, conv = parse_accountant(accountant)
    return PrivacyLedger.from_dict(json.loads(ledger_json)).epsilon(delta, acc, conv)


def spent_epsilon(record: dict[str, Any]) -> float:
    """The epsilon a run record spent: recomputed from its ledger at its delta with the accountant it names. The one
    source of every published privacy figure (exports, leaderboards, plots), never a logged metric. A run
    without a ledger has no claim: inf."""
    led = record.get("ledger")
    if not led:
        return math.inf
    delta = float((record.get("params") or {}).get("delta") or 0.0)
    return _epsilon(json.dumps(led, sort_keys=True), delta, accountant_of(record))


# --------------------------------------------------------------------------------------
# The conventions a record states beside its ledger's
# --------------------------------------------------------------------------------------

#: the param that says how a run drew its DP noise (:func:`noise_text`)
NOISE = "noise"
#: the fact a run record names public by convention outside its ledger: the count of privacy units delta is set
#: from (param ``conventions.delta_units``, :func:`delta_units_text`)
DELTA_UNITS = "delta_units"
CONVENTION_PREFIX = "conventions."
NOISE_REPRODUCIBLE = ("reproducible (a function of the seed): the epsilon is the algorithm's guarantee, the published "
                      "artefact is not a private release")
NOISE_SECURE = ("secure (drawn from OS entropy, never logged): the record cannot regenerate the noise; a private "
                "release")
NOISE_NONE = "none (not private)"


def noise_text(secure_noise: Any, private: bool = True) -> str:
    """How a run drew its DP noise, as its record states it: ``--secure-noise`` (OS entropy, never logged, so nothing
    published regenerates it) or the default, a function of the published seed (``methods.streams``): re-running
    the record reproduces its outputs bit for bit, so the artefact it publishes is no private release (the noise is
    known to whoever knows the seed), while the epsilon still bounds the algorithm (Dwork & Roth 2014, Def. 2.4:
    a property of the randomised map, whose coins must be secret in a release)."""
    if not private:
        return NOISE_NONE
    return NOISE_SECURE if str(secure_noise).strip().lower() in ("true", "1") else NOISE_REPRODUCIBLE


def units_counted(unit: str, setting: str) -> str:
    """What ``privacy_units`` (:func:`bench.plan.privacy_units`) counts for ``unit`` in ``setting``."""
    if unit == "edge":
        return "undirected edges of the graph"
    if setting == "transductive":
        return "nodes of the graph"
    if setting == "private-public":
        return "private (training) nodes of the seeded split"
    return "training nodes of the seeded split"


def delta_units_text(units: Any, unit: str, setting: str, delta: float, from_rule: bool) -> str:
    """The record's statement that the count delta's rule reads is public by convention: the size of the published
    dataset (the split's sizes follow from it and the seed). The rule (the largest power of ten below 1 / count)
    depends on it only through its order of magnitude."""
    how = ("the largest power of ten below 1 / privacy_units, so it depends on the count only through its order of "
           "magnitude" if from_rule else "given, not derived from the count")
    return (f"privacy_units = {units}: the number of {units_counted(unit, setting)}, public by convention (the "
            f"published dataset's size); delta {delta:g} is {how}")


def conventions_of(record: dict[str, Any]) -> dict[str, str]:
    """The conventions a run record rests on beyond its ledger's (``noise``, ``delta_units``): the ones it states
    (params ``noise`` and ``conventions.*``), and for a record from before runs stated them, the same derived from
    its params (``secure_noise``, ``privacy_units``, ``delta``)."""
    from methods.base import default_delta

    p = record.get("params") or {}
    unit = str(p.get("privacy_unit") or "none")
    private = unit != "none"
    out = {NOISE: str(p.get(NOISE) or noise_text(p.get("secure_noise"), private))}
    stated = {k[len(CONVENTION_PREFIX):]: str(v) for k, v in p.items() if k.startswith(CONVENTION_PREFIX)}
    if DELTA_UNITS not in stated and private and p.get("privacy_units"):
        n, delta = int(p["privacy_units"]), number(p.get("delta"))
        stated[DELTA_UNITS] = delta_units_text(n, unit, str(p.get("setting") or "transductive"), delta,
                                               n >= 1 and math.isclose(delta, default_delta(n), rel_tol=1e-9))
    return {**out, **stated}


def _json_artifact(run_id: str, name: str) -> Any:
    from bench import tracking

    try:
        return json.loads(tracking.client_download_text(run_id, name))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def record_from_run(run: Any) -> dict[str, Any]:
    """The record of one tracked top-level run (an MLflow ``Run``)."""
    tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
    kind = tags.get("kind") or "run"
    rec: dict[str, Any] = {"cell_id": tags.get("sweep_cell") or run.info.run_id, "kind": kind,
                           "run_id": run.info.run_id, "status": run.info.status, "name": run.info.run_name,
                           "git_commit": tags.get("git_commit"), "start_time": run.info.start_time,
                           "params": {k: v for k, v in sorted(params.items())},
                           "metrics": {k: _num(v) for k, v in sorted(metrics.items())
                                       if not k.startswith("diagnostic.")},
                           "tags": {k: v for k, v in sorted(tags.items())
                                    if k in ("method", "dataset", "split", "unit_label", "inference_private", "verdict",
                                             "audit_mode", "canary_type", "config_hash", "note", "error",
                                             "predictions_hash", "bench_version")}}
    if tags.get("code_tree"):  # a commit named by a manifest rather than git: the tree its files hashed to
        rec["code_tree"] = tags["code_tree"]
    if kind == "run":
        rec["ledger"] = _json_artifact(run.info.run_id, "ledger.json")
        if rec["ledger"]:  # the export's epsilon is the ledger's, never the logged metric's history
            rec["metrics"]["epsilon"] = _num(spent_epsilon(rec))
        attacks: dict[str, dict[str, dict[str, Any]]] = {}
        for k, v in metrics.items():  # attack.<name>.<variant>.<metric> on the target run
            if not k.startswith("attack."):
                continue
            name, variant, metric = k[len("attack."):].split(".", 2) if k.count(".") >= 3 else (None, None, None)
            if name is None:
                continue
            attacks.setdefault(name, {}).setdefault(variant, {})[metric] = _num(v)
        rec["attacks"] = attacks
        rec["metrics"] = {k: v for k, v in rec["metrics"].items() if not k.startswith("attack.")}
    elif kind == "verify":
        report = _json_artifact(run.info.run_id, "verify.json") or {}
        rec["verify"] = {"verdict": report.get("verdict", tags.get("verdict")),
                         "violations": report.get("violations", []),
                         "checks": [{k: c.get(k) for k in ("name", "seed", "verdict", "statistic", "threshold",
                                                            "detail", "alpha")}
                                    | {"epsilon_lb": (c.get("data") or {}).get("epsilon_lb")}
                                    for c in report.get("checks", [])]}
    return rec


def records_from_experiment(experiment: str, status: str = "FINISHED") -> list[dict[str, Any]]:
    """Records of every top-level ``status`` run of ``experiment`` (leaderboard runs excluded)."""
    from bench import tracking

    out = []
    for r in tracking.search_runs(experiment, f"attributes.status = '{status}'"):
        if r.data.tags.get("mlflow.parentRunId") or r.data.tags.get("kind") == "leaderboard":
            continue
        if r.data.tags.get("kind") in (None, "", "run") and "method" not in r.data.params:
            continue
        out.append(record_from_run(r))
    return out


def record_for(run_id: str) -> dict[str, Any]:
    from bench import tracking

    return record_from_run(tracking.client().get_run(run_id))


# --------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------


def sharded(path: str | os.PathLike) -> bool:
    """An export given as a directory (existing, or named with a trailing slash) holds one file per dataset,
    ``DIR/<dataset>.jsonl``: each stays small enough to review, and machines that run different datasets append to
    different files, so their exports merge in git without conflicts."""
    return Path(path).is_dir() or str(path).endswith(("/", os.sep))


def shard(path: str | os.PathLike, record: dict[str, Any]) -> Path:
    """The file of a sharded export that holds ``record``: the one of its dataset."""
    ds = (record.get("params") or {}).get("dataset") or (record.get("tags") or {}).get("dataset") or "other"
    return Path(path) / ("".join(c if c.isalnum() or c in "-_.=" else "_" for c in str(ds)) + ".jsonl")


def site_export(site: str | os.PathLike) -> str:
    """The export of a leaderboard site: ``SITE/runs/`` (sharded) when it exists, else ``SITE/runs.jsonl``."""
    d = Path(site) / "runs"
    return f"{d}/" if d.is_dir() else str(Path(site) / "runs.jsonl")


def site_attacks(site: str | os.PathLike) -> Path:
    """The attack records of a leaderboard site (``SITE/attacks/``, one file per attack game, e.g. ``edge.jsonl``:
    ``scripts.unit_attacks``): attacks on refits of the site's runs, joined to their rows by the leaderboard."""
    return Path(site) / "attacks"


def load_attacks(site: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of :func:`site_attacks` (empty when the site has none); ``site``: the folder that holds the
    export (``runs/`` or ``runs.jsonl``)."""
    d = site_attacks(site)
    return load(f"{d}/") if d.is_dir() else []


def attacks_beside(export: str | os.PathLike) -> list[dict[str, Any]]:
    """The attack records stored beside an export (``SITE/attacks/`` for ``SITE/runs/`` or ``SITE/runs.jsonl``):
    what the published page joins to the export's rows, so every format built from the export carries them."""
    return load_attacks(Path(str(export).rstrip("/")).parent)


def _files(path: str | os.PathLike) -> list[Path]:
    p = Path(path)
    if sharded(p):
        return sorted(p.glob("*.jsonl")) if p.is_dir() else []
    return [p] if p.exists() else []


def load(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of an export, a file or a sharded directory (newest per cell); a missing one is empty. An
    unterminated last line that is not JSON is an append cut short (a killed writer, or one still writing): not a
    record; the next :func:`append` removes it."""
    by_cell: dict[str, dict[str, Any]] = {}
    for f in _files(path):
        try:
            text = f.read_text()
        except UnicodeDecodeError:
            raise BenchError(f"{f}: not a JSON-Lines export (not UTF-8 text)") from None
        lines = text.splitlines()
        for i, line in enumerate(lines, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if i == len(lines) and not text.endswith("\n"):  # an append cut short: no record (yet)
                    continue
                raise BenchError(f"{f}:{i}: not a JSON record (a truncated export? remove the line)") from None
            cid = rec.get("cell_id")
            if not cid:
                raise BenchError(f"{f}:{i}: a record without cell_id")
            old = by_cell.get(cid)
            if old is None or (rec.get("start_time") or 0) >= (old.get("start_time") or 0):
                by_cell[cid] = rec
    return list(by_cell.values())


def done_cells(path: str | os.PathLike | None) -> set[str]:
    """The cells an export holds a FINISHED record of."""
    if not path:
        return set()
    return {r["cell_id"] for r in load(path) if r.get("status") == "FINISHED"}


def append(path: str | os.PathLike, record: dict[str, Any], *, once: bool = False) -> bool:
    """Add one record (one line, on disk when this returns) to an export. Parallel sweep workers append to one
    file: each line goes in whole under an exclusive lock, so lines never interleave. A writer killed mid-line
    leaves an unterminated last line: the next append removes it (the cell's run is still in the store, and a
    sweep appends its record again: :mod:`bench.sweep.export`). ``once``: not when the file holds a FINISHED
    record of the cell already (checked under the lock, so two sweeps filling the same gap add one line). Returns
    whether it appended."""
    p = shard(path, record) if sharded(path) else Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = memoryview((json.dumps(record, sort_keys=True, default=str, separators=(",", ":")) + "\n").encode())
    fd = os.open(p, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(ImportError, OSError):
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)  # released by close
        _end_last_line(fd)
        if once and record["cell_id"] in done_cells(p):
            return False
        while data:
            data = data[os.write(fd, data):]
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
    return True


def _end_last_line(fd: int) -> None:
    """Make the file end with a whole line, under the caller's lock: an unterminated last line that is a record
    gets its newline, any other (a torn record) is cut off."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = size
    while start > 0:  # back to the byte after the last newline
        lo = max(0, start - 65536)
        i = os.pread(fd, start - lo, lo).rfind(b"\n")
        if i >= 0:
            start = lo + i + 1
            break
        start = lo
    try:
        json.loads(os.pread(fd, size - start, start))
    except ValueError:  # torn (JSONDecodeError, or not UTF-8)
        os.ftruncate(fd, start)
    else:
        os.write(fd, b"\n")


def write(path: str | os.PathLike, records: Iterable[dict[str, Any]]) -> int:
    """Rewrite an export: the given records merged with the file's (newest per cell), sorted; atomically."""
    from bench.io import write_text_atomic

    merged = {r["cell_id"]: r for r in load(path)}
    for r in records:
        old = merged.get(r["cell_id"])
        if old is None or (r.get("start_time") or 0) >= (old.get("start_time") or 0):
            merged[r["cell_id"]] = r
    rows = sorted(merged.values(), key=lambda r: (r.get("kind", ""), r.get("tags", {}).get("dataset", ""),
                                                 r.get("tags", {}).get("method", ""), r.get("name", ""),
                                                 r["cell_id"]))
    files: dict[Path, list[dict[str, Any]]] = {}
    for r in rows:
        files.setdefault(shard(path, r) if sharded(path) else Path(path), []).append(r)
    for f, rs in files.items():
        f.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(f, "".join(json.dumps(r, sort_keys=True, default=str, separators=(",", ":")) + "\n"
                                     for r in rs))
    return len(rows)


__all__ = ["DELTA_UNITS", "KINDS", "NOISE", "accountant_of", "append", "attacks_beside", "conventions_of",
           "delta_units_text", "done_cells", "hparams_of", "ledger_of", "load", "noise_text",
           "load_attacks", "number", "record_for", "record_from_run", "records_from_experiment", "row_key", "shard",
           "sharded", "site_attacks", "site_export", "spent_epsilon", "write"]
