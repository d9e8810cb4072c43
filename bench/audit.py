"""The audit job: an empirical privacy audit (an epsilon lower bound) checked against the ledger's claim.

:func:`audit_one` validates an :class:`AuditSpec` like ``bench run`` does (the same ``prepare`` path, plus the
audit's own options and a dry run of the canary design) before anything is trained or logged, then runs the
audit as ONE MLflow run with tags ``kind=audit``, ``method``, ``dataset``, ``split``, ``audit_mode``,
``canary_type`` (input | gradient), ``verdict`` (PASS | VIOLATION | NOT APPLICABLE) (plus ``spec.tags``, e.g. a
sweep cell's);
params ``trials``, ``canaries``, ``target_epsilon``, ``delta``, ``confidence``, ``privacy_unit``,
``config_hash`` (+ the canary design and hyperparameters); metrics ``claimed_epsilon``, ``epsilon_lb``,
``audit_seconds``; artifact ``audit.json`` (scores, inclusion bits, the bound's counts), so the bound can be
recomputed. A VIOLATION is a finished measurement (the run ends FINISHED). The command is
:mod:`bench.commands.audit` (exit 3 on VIOLATION); the entry point :func:`bench.api.audit`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from methods.errors import ConfigError

MODES = ("one-run", "multi-run", "pooled")


@dataclass
class AuditSpec:
    method: str
    dataset: str
    split: str | None = None
    epsilon: float | None = None
    delta: float | None = None
    mode: str = "one-run"  # one-run (Steinke et al. 2023) or multi-run (Clopper-Pearson over T models per world)
    trials: int = 50  # multi-run: models per world
    canaries: int = 200  # one-run: canaries m
    confidence: float = 0.95
    hops: int = 2  # receptive field the canaries are made hop-disjoint for
    canary_degree: int = 1  # anchor edges per canary node
    canary_scale: float = 3.0  # canary feature norm / median row norm
    canary_pattern: str = "dedicated"  # dedicated | random
    canary_type: str = "input"  # input (black box) | gradient (white box, DP-SGD methods)
    fresh_anchors: bool = False  # new zero-row anchor nodes per canary instead of existing training nodes
    seed: int = 0  # split, canaries, inclusion bits, training seeds
    overrides: list[str] = field(default_factory=list)
    device: str = "auto"
    data_root: str | None = None
    download: bool = False
    experiment: str = "dp-gnn-bench"
    track: bool = True
    progress: bool = False
    tags: dict[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"unknown audit mode {self.mode!r} (choose {', '.join(MODES)})")
        if self.mode == "multi-run" and self.trials < 2:
            raise ConfigError(f"--trials must be >= 2 (got {self.trials})")
        if self.mode == "pooled":
            if self.canary_type != "gradient":
                raise ConfigError("--mode pooled needs white-box gradient canaries (--level whitebox)")
            if self.trials < 1:
                raise ConfigError(f"--trials (runs) must be >= 1 (got {self.trials})")
            if self.canaries < 4:
                raise ConfigError(f"--canaries must be >= 4 (got {self.canaries})")
        if self.mode == "one-run" and self.canaries < 2:
            raise ConfigError(f"--canaries must be >= 2 (got {self.canaries})")
        if not 0 < self.confidence < 1:
            raise ConfigError(f"--confidence must be in (0, 1) (got {self.confidence})")
        if self.hops < 0 or self.canary_degree < 0:
            raise ConfigError("--hops and --canary-degree must be >= 0")
        if not self.canary_scale > 0:
            raise ConfigError(f"--canary-scale must be > 0 (got {self.canary_scale})")
        if self.seed < 0:
            raise ConfigError(f"--seed must be >= 0 (got {self.seed})")


@dataclass
class AuditOutcome:
    """One audit: the result (``audits.runner.AuditResult``), its run id and what was audited."""

    result: Any
    run_id: str | None
    method: str
    privacy_unit: str
    dataset: str
    split: str
    budget: Any  # methods.base.Budget

    @property
    def verdict(self) -> str:
        return self.result.verdict

    def to_dict(self) -> dict[str, Any]:
        return {**self.result.to_dict(), "run_id": self.run_id, "dataset": self.dataset, "split": self.split}


def audit_one(spec: AuditSpec, log: Callable[[str], None] | None = None) -> AuditOutcome:
    """Audit one method (see the module docstring). Bad input raises a BenchError before any run opens; an error
    while auditing is a :class:`~bench.tracking.RunFailed` (the run FAILED)."""
    from audits.canaries import CanaryConfig, make_canaries
    from audits.runner import audit, check_canary_type
    from bench import tracking
    from bench.run import RunSpec, make_task, prepare, resolve_budget
    from methods.base import config_dict, stable_hash

    spec.validate()
    p = prepare(RunSpec(methods=[spec.method.strip()], dataset=spec.dataset, split=spec.split, seeds=[spec.seed],
                        epsilon=spec.epsilon, delta=spec.delta, overrides=list(spec.overrides), device=spec.device,
                        data_root=spec.data_root, download=spec.download, experiment=spec.experiment,
                        track=spec.track, progress=spec.progress))
    cls = p.classes[0]
    overrides = p.overrides[cls.name]
    canary = CanaryConfig(hops=spec.hops, degree=spec.canary_degree, scale=spec.canary_scale,
                          pattern=spec.canary_pattern, fresh_anchors=spec.fresh_anchors)
    canary.validate()
    task = make_task(p.dataset, p.split, spec.seed)
    method = cls(**overrides)
    method.check_task(task)
    budget = resolve_budget(spec.epsilon, spec.delta, method, task)
    method.check_budget(budget)
    check_canary_type(method, spec.canary_type, canary)  # gradient canaries need a DP-SGD method, private or not
    if method.privacy_unit != "none":
        # a dry run of the canary design, so a graph too small for the canaries is an input error
        from audits.runner import MIN_CANARIES

        if spec.mode == "pooled":
            from audits.pooled import worst_case_design

            if method.privacy_unit not in ("node", "feature"):
                raise ConfigError(f"--mode pooled audits node- or feature-level DP-SGD, not "
                                  f"{method.privacy_unit}-level {cls.name}")
            canary = worst_case_design(method, canary)
        make_canaries(task, method.privacy_unit, 1 if spec.mode == "multi-run" else spec.canaries, canary,
                      seed=spec.seed, allow_fewer=None if spec.mode == "pooled" else min(spec.canaries, MIN_CANARIES))
    hparams = config_dict(method.config)
    identity = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": spec.seed,
                "epsilon": str(budget.epsilon), "delta": budget.delta, "hparams": hparams}
    config_hash = stable_hash(identity)
    tags = {**spec.tags, "kind": "audit", "method": cls.name, "dataset": p.dataset.name, "split": p.split,
            "audit_mode": spec.mode, "canary_type": spec.canary_type, "config_hash": config_hash}
    params = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seed": spec.seed,
              "trials": spec.trials if spec.mode != "one-run" else 1,
              "canaries": spec.canaries if spec.mode != "multi-run" else 1,
              "target_epsilon": str(budget.epsilon), "delta": budget.delta, "confidence": spec.confidence,
              "privacy_unit": cls.privacy_unit, "config_hash": config_hash, "split_hash": task.split_hash(),
              "canary.hops": canary.hops, "canary.degree": canary.degree, "canary.scale": canary.scale,
              "canary.pattern": canary.pattern, "canary.type": spec.canary_type,
              **({"canary.fresh_anchors": True} if canary.fresh_anchors else {}),
              **({"canary.signed": True} if canary.signed else {}),
              **{f"hp.{k}": v for k, v in hparams.items()}}
    if log:
        log(f"# auditing {cls.name} (unit: {cls.privacy_unit}) on {p.dataset.name}/{p.split}, {spec.mode}, target "
            f"{budget}")
    name = f"audit {cls.name}/{p.dataset.name}/{p.split}/{spec.mode}"
    with tracking.tracked_run(spec.experiment, name, tags=tags, enabled=spec.track) as run:
        run.log_params(params)
        t0 = time.perf_counter()
        result = audit(lambda: cls(**overrides), task, budget, spec.mode, trials=spec.trials,
                       canaries=spec.canaries, confidence=spec.confidence, canary=canary, seed=spec.seed,
                       device=p.device, progress=spec.progress, canary_type=spec.canary_type)
        result.seconds = time.perf_counter() - t0
        run.log_metrics({"claimed_epsilon": result.claimed_epsilon, "epsilon_lb": result.epsilon_lb,
                         "audit_seconds": result.seconds})
        run.set_tags({"verdict": result.verdict, **({"note": result.note} if result.note else {}),
                      **({"reason": result.reason[:5000]} if result.reason else {})})
        run.log_dict({**result.to_dict(), "params": params}, "audit.json")
    return AuditOutcome(result, run.run_id, cls.name, cls.privacy_unit, p.dataset.name, p.split, budget)


__all__ = ["AuditOutcome", "AuditSpec", "audit_one"]
