"""Reading a sweep config: a YAML file (or the same mapping in Python) -> a validated :class:`Grid`.

Top-level keys: ``experiment``, ``description``, ``datasets``, ``splits`` (``default`` = the dataset's default split),
``epsilons``, ``seeds``, ``delta``, ``set`` (hyperparameters: a mapping or ``key=value`` strings; ``method.key``
scopes one), ``attacks``, ``attack_set``, ``bootstrap``, ``audits`` (``modes``, ``trials``, ``canaries``, ``methods``,
``epsilons``, ``seeds``), ``device``, ``order`` (the keys cells run by, e.g. ``[dataset, seed]``: every method's seed
0 on the first dataset first; default: config order, method by method), ``accountant`` (what calibrates and reports
every cell; a registered one admitted here, :func:`methods.privacy.conformance.check.admit`) and ``methods``: names,
or mappings with ``name`` and their own ``set``, ``splits``, ``epsilons``, ``datasets``, ``seeds``. Everything is
checked here (names, hyperparameters, attacks, budgets); no data is loaded. :func:`build_config` also expands the grid
into cells.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import DEFAULT_EXPERIMENT
from bench.options import field_names, scalar, scoped_overrides
from bench.sweep.cells import SweepConfig, as_list, expand
from bench.request import SweepError
from methods.errors import BenchError

TOP_KEYS = {"experiment", "methods", "datasets", "splits", "epsilons", "seeds", "delta", "set", "attacks",
            "attack_set", "attack_seeds", "bootstrap", "audits", "verify", "hparams", "device", "description",
            "order", "accountant"}
ORDER_KEYS = ("dataset", "seed", "method", "epsilon")
METHOD_KEYS = {"name", "set", "splits", "epsilons", "datasets", "seeds"}
AUDIT_KEYS = {"modes", "trials", "canaries", "methods", "epsilons", "seeds", "set"}
VERIFY_KEYS = {"quick", "canaries", "trials", "confidence", "methods", "epsilons", "datasets", "seeds"}


@dataclass
class MethodEntry:
    """One ``methods`` entry, resolved: its class, an instance with its overrides, and its slice of the grid."""

    name: str
    cls: Any
    method: Any
    overrides: dict[str, str]
    datasets: list[str]
    splits: list[str]
    epsilons: list[float]
    seeds: list[int]


@dataclass
class Grid:
    experiment: str
    where: str
    delta: float | None
    attacks: list[str]
    attack_set: list[str]
    bootstrap: int
    device: str
    audits: dict[str, Any]
    methods: list[MethodEntry] = field(default_factory=list)
    verify: dict[str, Any] = field(default_factory=dict)
    attack_seeds: list[int] | None = None  # attacks only on these seeds' runs (None: every run)
    hparams: bool = True  # the checked-in hyperparameters of configs/hparams.yaml (bench.hparams)
    order: list[str] = field(default_factory=list)  # keys the cells run by (stable; config order within)
    #: what calibrates and reports every cell (runs, audits, verifications); None: the default, tight
    accountant: str | None = None


def load_config(path: str | os.PathLike) -> SweepConfig:
    """Read and expand a YAML sweep config (a :class:`SweepError` for a missing, unreadable or malformed file)."""
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
    """Validate a parsed mapping and expand it into cells (no data is loaded)."""
    return expand(read_grid(raw, where))


def _eps(v: Any, where: str) -> float:
    try:
        e = float(v)
    except (TypeError, ValueError):
        raise SweepError(f"{where}: epsilon {v!r} is not a number (use inf for no noise)") from None
    if math.isnan(e) or e <= 0:
        raise SweepError(f"{where}: epsilon must be > 0 (got {v!r})")
    return e


def _seeds(v: Any, where: str) -> list[int]:
    seeds = as_list(v)
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise SweepError(f"{where}: seeds must be distinct non-negative integers (got {seeds})")
    return seeds


def _set_items(v: Any, where: str) -> list[str]:
    """``set`` as a mapping {key: value} or a list of "key=value" strings."""
    if v is None:
        return []
    if isinstance(v, dict):
        return [f"{k}={scalar(x)}" for k, x in v.items()]
    if isinstance(v, list) and all(isinstance(x, str) and "=" in x for x in v):
        return list(v)
    raise SweepError(f"{where}: 'set' must be a mapping key: value or a list of 'key=value' strings")


def _datasets(v: Any, where: str) -> list[str]:
    """Dataset names in their canonical spelling (:func:`bench.datasets.resolve_dataset`, as ``bench run`` reads
    them), so ``Cora`` is the cell ``cora`` with its default split; an unknown or ambiguous name is an error."""
    from bench.datasets import canonical_dataset

    out = []
    for d in as_list(v):
        try:
            out.append(canonical_dataset(str(d)))
        except BenchError as e:
            raise SweepError(f"{where}: {e}") from None
    return list(dict.fromkeys(out))


def read_grid(raw: Any, where: str = "config") -> Grid:
    """The validated grid of a parsed config mapping (see the module docstring)."""
    from methods.base import Budget, get_method

    if not isinstance(raw, dict):
        raise SweepError(f"{where}: expected a mapping with methods, datasets, ... at the top level")
    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise SweepError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (valid: {', '.join(sorted(TOP_KEYS))})")
    datasets = _datasets(raw.get("datasets"), where)
    if not datasets:
        raise SweepError(f"{where}: no datasets")
    splits = [str(s) for s in as_list(raw.get("splits"))] or ["default"]
    epsilons = [_eps(e, where) for e in as_list(raw.get("epsilons"))] or [math.inf]
    seeds = _seeds(raw.get("seeds"), where) or [0]
    delta = raw.get("delta")
    if delta is not None:
        delta = float(delta)
        if not 0 <= delta < 1:
            raise SweepError(f"{where}: delta must be in [0, 1) (got {delta})")
    attacks = [str(a) for a in as_list(raw.get("attacks"))]
    attack_set = _set_items(raw.get("attack_set"), f"{where}: attack_set")
    bootstrap = int(raw.get("bootstrap", 1000))
    if attacks:
        from bench.attack import plan_attacks

        plan_attacks(attacks, attack_set, bootstrap, None)  # unknown attacks/options fail here
    audits = raw.get("audits") or {}
    if audits:
        if not isinstance(audits, dict) or set(audits) - AUDIT_KEYS:
            raise SweepError(f"{where}: 'audits' must be a mapping with keys among {', '.join(sorted(AUDIT_KEYS))}")
        modes = [str(m) for m in as_list(audits.get("modes"))]
        bad = [m for m in modes if m not in ("one-run", "multi-run")]
        if not modes or bad:
            raise SweepError(f"{where}: audits.modes must list one-run and/or multi-run (got {modes})")
    verify = raw.get("verify") or {}
    if verify:
        if verify is True:
            verify = {}
        if not isinstance(verify, dict) or set(verify) - VERIFY_KEYS:
            raise SweepError(f"{where}: 'verify' must be true or a mapping with keys among "
                             f"{', '.join(sorted(VERIFY_KEYS))}")
        verify = {"enabled": True, **verify}
        if verify.get("datasets") is not None:
            verify["datasets"] = _datasets(verify["datasets"], f"{where}: verify")
    attack_seeds = raw.get("attack_seeds")
    if attack_seeds is not None:
        attack_seeds = _seeds(attack_seeds, f"{where}: attack_seeds")
    hp = raw.get("hparams", True)
    if not isinstance(hp, bool):
        raise SweepError(f"{where}: hparams must be true (use configs/hparams.yaml) or false (got {hp!r})")
    order = as_list(raw.get("order"))
    if any(k not in ORDER_KEYS for k in order) or len(set(order)) != len(order):
        raise SweepError(f"{where}: order must list distinct keys among {', '.join(ORDER_KEYS)} (got {order!r})")
    accountant = raw.get("accountant")
    if accountant is not None:
        from methods.privacy.conformance.check import admit

        try:
            admit(str(accountant))  # a registered accountant passes the conformance suite before any cell runs
        except BenchError as e:
            raise SweepError(f"{where}: {e}") from None
    grid = Grid(str(raw.get("experiment") or DEFAULT_EXPERIMENT), where, delta, attacks, attack_set, bootstrap,
                str(raw.get("device", "auto")), dict(audits), verify=dict(verify), attack_seeds=attack_seeds,
                hparams=hp, order=[str(k) for k in order], accountant=None if accountant is None else str(accountant))

    entries = []
    for entry in as_list(raw.get("methods")):
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict) or "name" not in entry:
            raise SweepError(f"{where}: a method entry must be a name or a mapping with 'name' (got {entry!r})")
        if set(entry) - METHOD_KEYS:
            raise SweepError(f"{where}: method {entry['name']}: unknown key(s) "
                             f"{', '.join(sorted(set(entry) - METHOD_KEYS))} (valid: {', '.join(sorted(METHOD_KEYS))})")
        entries.append(entry)
    if not entries:
        raise SweepError(f"{where}: no methods")
    classes = {str(e["name"]): get_method(str(e["name"])) for e in entries}  # unknown names fail here
    fields = {name: field_names(cls.Config) for name, cls in classes.items()}
    try:
        shared = scoped_overrides(_set_items(raw.get("set"), where), fields)
    except BenchError as e:
        raise SweepError(f"{where}: set: {e}") from None
    for entry in entries:
        name = str(entry["name"])
        cls = classes[name]
        try:
            own = scoped_overrides(_set_items(entry.get("set"), f"{where}: {name}"), {name: fields[name]})[name]
            per = {**shared[name], **own}
            method = cls(**per)
        except SweepError:
            raise
        except BenchError as e:
            raise SweepError(f"{where}: method {name}: {e}") from None
        m_eps = [_eps(e, f"{where}: {name}") for e in as_list(entry.get("epsilons"))] or epsilons
        if not method.is_private:
            m_eps = [math.inf]  # one cell per (dataset, split, seed): no budget to sweep
        for eps in m_eps if delta is not None else []:  # e.g. delta = 0 with a Gaussian mechanism fails here
            try:
                method.check_budget(Budget(eps, delta))
            except BenchError as e:
                raise SweepError(f"{where}: method {name}: {e}") from None
        grid.methods.append(MethodEntry(
            name, cls, method, per, _datasets(entry.get("datasets"), f"{where}: {name}") or datasets,
            [str(s) for s in as_list(entry.get("splits"))] or splits, m_eps,
            _seeds(entry.get("seeds"), f"{where}: {name}") or seeds))
    return grid


__all__ = ["AUDIT_KEYS", "VERIFY_KEYS", "Grid", "METHOD_KEYS", "MethodEntry", "SweepError", "TOP_KEYS",
           "build_config", "load_config", "read_grid"]
