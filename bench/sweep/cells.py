"""The cells of a sweep: one :class:`Cell` per run of the grid, each with a stable identity.

A cell's identity is a hash of its resolved configuration (method hyperparameters after overrides, dataset,
split, target epsilon and delta, seed, attacks, and the accountant when the config names one); its run carries
it in the tag ``sweep_cell``, which is how a rerun knows what is done. The experiment is not part of the
identity. Cells that cannot run (a split the method does not support, a split the dataset does not have) carry the
reason in ``skip``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

SPLIT_SETTING = {"public": "transductive", "random-75-10-15": "transductive", "ogb": "transductive",
                 "disjoint": "inductive", "private-public": "private-public"}


@dataclass(frozen=True)
class Cell:
    """One run of the grid. ``kind`` is ``run`` (train + evaluate + attacks), ``audit`` or ``verify``
    (``audit_options`` holds the audit's or the verification's options)."""

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
    accountant: str | None = None  # what calibrates and reports (None: the default)

    def job_options(self) -> dict[str, Any]:
        """The options every job of the cell passes beside its own: the accountant, when the config names one."""
        return {} if self.accountant is None else {"accountant": self.accountant}

    @property
    def row(self) -> tuple[str, str, str, float]:
        """(method, dataset, split, target epsilon): the leaderboard row the cell fills (bench.records.row_key)."""
        return self.method, self.dataset, self.split, float(self.epsilon)

    @property
    def label(self) -> str:
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:g}"
        extra = f" audit={self.audit_mode}" if self.kind == "audit" else " verify" if self.kind == "verify" else ""
        return f"{self.method}/{self.dataset}/{self.split}/eps={eps}/s{self.seed}{extra}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON, pickling to workers); :meth:`from_dict` inverts it."""
        d = dataclasses.asdict(self)
        d["epsilon"] = str(self.epsilon)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Cell":
        return cls(**{**d, "epsilon": float(d["epsilon"]), "overrides": tuple(d["overrides"]),
                      "attacks": tuple(d["attacks"]), "attack_overrides": tuple(d["attack_overrides"]),
                      "audit_options": tuple(tuple(x) for x in d["audit_options"])})


@dataclass
class SweepConfig:
    experiment: str
    cells: list[Cell]
    path: str = ""
    attacks: list[str] = field(default_factory=list)
    audits: dict[str, Any] = field(default_factory=dict)


def expand(grid: Any) -> SweepConfig:
    """The cells of a validated :class:`bench.sweep.config.Grid`, in config order, each identity once."""
    from bench.plan import plan_method
    from bench.splits import check_split, default_split
    from methods.base import stable_hash
    from methods.errors import BenchError

    audits, verify = grid.audits, grid.verify
    cells: list[Cell] = []
    seen: set[str] = set()
    for m in grid.methods:
        for ds in m.datasets:
            for sp in m.splits:
                split = default_split(ds) if sp == "default" else sp
                skip = None
                try:
                    check_split(split, ds)
                except BenchError as e:
                    skip = str(e)
                if skip is None and SPLIT_SETTING.get(split) not in m.cls.settings:
                    skip = (f"method {m.name} does not support the {SPLIT_SETTING.get(split)} setting of split "
                            f"{split} (supported: {', '.join(m.cls.settings)})")
                for eps in m.epsilons:
                    # the checked-in hyperparameters for this method and dataset, under the config's own: the
                    # settings a run of the cell plans (bench.plan), so the cell's id hashes what the run will use
                    try:
                        mp = plan_method(m.cls, ds, split, eps, dict(m.overrides), grid.hparams)
                    except BenchError as e:
                        raise BenchError(f"{grid.where}: method {m.name} on {ds}: {e}") from None
                    hparams = dict(mp.hparams)
                    overrides = tuple(f"{k}={v}" for k, v in sorted(mp.overrides.items()))
                    for seed in m.seeds:
                        attacks = grid.attacks if grid.attack_seeds is None or seed in grid.attack_seeds else []
                        base = dict(kind="run", method=m.name, dataset=ds, split=split, epsilon=eps, seed=int(seed),
                                    overrides=overrides, delta=grid.delta, attacks=tuple(attacks),
                                    attack_overrides=tuple(grid.attack_set if attacks else ()),
                                    bootstrap=grid.bootstrap, device=grid.device, skip=skip, accountant=grid.accountant)
                        ident = {"kind": "run", "method": m.name, "dataset": ds, "split": split, "seed": int(seed),
                                 "epsilon": str(eps), "delta": grid.delta, "hparams": hparams,
                                 "attacks": attacks, "attack_set": grid.attack_set if attacks else [],
                                 "bootstrap": grid.bootstrap if attacks else None,
                                 **({} if grid.accountant is None else {"accountant": grid.accountant})}
                        cid = stable_hash(ident)
                        if cid in seen:
                            continue
                        seen.add(cid)
                        cells.append(Cell(**base, cell_id=cid))
                        if audits and m.method.is_private and skip is None and _audited(audits, m.name, eps, seed):
                            opts = tuple(sorted((k, audits[k]) for k in ("trials", "canaries") if k in audits))
                            for mode in as_list(audits.get("modes")):
                                aid = stable_hash({**ident, "kind": "audit", "attacks": [], "attack_set": [],
                                                   "bootstrap": None, "mode": mode, "options": list(opts)})
                                if aid not in seen:
                                    seen.add(aid)
                                    cells.append(Cell(**{**base, "kind": "audit", "attacks": (),
                                                         "attack_overrides": ()}, audit_mode=str(mode),
                                                      audit_options=opts, cell_id=aid))
                        if verify and m.method.is_private and skip is None and _verified(verify, m.name, ds, eps,
                                                                                          seed):
                            opts = tuple(sorted((k, verify[k]) for k in ("quick", "canaries", "trials", "confidence")
                                                if k in verify))
                            vid = stable_hash({**ident, "kind": "verify", "attacks": [], "attack_set": [],
                                               "bootstrap": None, "options": list(opts)})
                            if vid not in seen:
                                seen.add(vid)
                                cells.append(Cell(**{**base, "kind": "verify", "attacks": (), "attack_overrides": ()},
                                                  audit_options=opts, cell_id=vid))
    if grid.order:
        cells = _ordered(cells, grid)
    return SweepConfig(grid.experiment, cells, grid.where, list(grid.attacks), dict(audits))


def _ordered(cells: list[Cell], grid: Any) -> list[Cell]:
    """Cells sorted (stably) by the grid's ``order`` keys: datasets, seeds and epsilons in the order they first
    appear in the config, methods in config order. A run's audit and verify cells stay right after it."""
    first: dict[str, dict[Any, int]] = {k: {} for k in ("dataset", "seed", "method", "epsilon")}
    for c in cells:
        for k, v in (("dataset", c.dataset), ("seed", c.seed), ("method", c.method), ("epsilon", c.epsilon)):
            first[k].setdefault(v, len(first[k]))
    values = {"dataset": lambda c: c.dataset, "seed": lambda c: c.seed, "method": lambda c: c.method,
              "epsilon": lambda c: c.epsilon}
    return sorted(cells, key=lambda c: tuple(first[k][values[k](c)] for k in grid.order))


def as_list(v: Any) -> list:
    """A YAML value that may be one item or a list, as a list."""
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _verified(verify: dict, method: str, dataset: str, eps: float, seed: int) -> bool:
    ms, ds = as_list(verify.get("methods")), as_list(verify.get("datasets"))
    es = [float(e) for e in as_list(verify.get("epsilons"))]
    ss = as_list(verify.get("seeds")) or [0]
    return (not ms or method in ms) and (not ds or dataset in ds) and (not es or eps in es) and seed in ss


def _audited(audits: dict, method: str, eps: float, seed: int) -> bool:
    ms = as_list(audits.get("methods"))
    es = [float(e) for e in as_list(audits.get("epsilons"))]
    ss = as_list(audits.get("seeds"))
    return (not ms or method in ms) and (not es or eps in es) and (not ss or seed in ss)


__all__ = ["Cell", "SPLIT_SETTING", "SweepConfig", "as_list", "expand"]
