"""The verification job: every check of :mod:`audits.verify` that applies to a method's privacy unit, tracked.

:func:`verify_one` validates a :class:`VerifySpec` like ``bench run`` (the same ``prepare`` path) before anything
is trained or logged, then runs the battery as ONE MLflow run (tags ``kind=verify``, ``method``, ``dataset``,
``split``, ``verdict``; params: the target, delta, seeds, confidence, canaries, the hyperparameters; metrics:
``violations``, ``checks``, ``verify_seconds``; artifact ``verify.json``) with one child run per check (tags
``check``, ``verdict``; the check's statistic, threshold, detail, remedy and error budget). The verdict is PASS,
VIOLATION, INCONCLUSIVE (a check that applies to the method did not run) or NOT APPLICABLE (a non-private method:
no claim, nothing trained); each is a finished measurement (the run ends FINISHED). The command
(:mod:`bench.commands.verify`) exits 3 on VIOLATION and 4 on INCONCLUSIVE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from methods.errors import ConfigError


@dataclass
class VerifySpec:
    method: str
    dataset: str
    split: str | None = None
    epsilon: float | None = None
    delta: float | None = None
    seeds: list[int] = field(default_factory=lambda: [0])
    quick: bool = False
    canaries: int | None = None
    trials: int = 0
    confidence: float = 0.95
    checks: list[str] | None = None
    overrides: list[str] = field(default_factory=list)
    device: str = "auto"
    data_root: str | None = None
    download: bool = False
    experiment: str = "dp-gnn-bench"
    track: bool = True
    progress: bool = False
    tags: dict[str, str] = field(default_factory=dict)

    def config(self, device: Any):
        from audits.verify import CHECKS, VerifyConfig

        cfg = VerifyConfig(seeds=tuple(int(s) for s in self.seeds), quick=self.quick, confidence=self.confidence,
                           canaries=self.canaries, trials=self.trials, checks=tuple(self.checks or CHECKS),
                           device=device, progress=self.progress)
        cfg.validate()
        return cfg


@dataclass
class VerifyOutcome:
    report: Any  # audits.verify.VerifyReport
    run_id: str | None
    budget: Any

    @property
    def verdict(self) -> str:
        return self.report.verdict

    def to_dict(self) -> dict[str, Any]:
        return {**self.report.to_dict(), "run_id": self.run_id}


def verify_one(spec: VerifySpec, log: Callable[[str], None] | None = None) -> VerifyOutcome:
    """Run the battery on one method (see the module docstring). Bad input raises a BenchError before any run
    opens; an error while verifying is a :class:`~bench.tracking.RunFailed` (the run FAILED)."""
    from audits.verify import verify
    from bench import tracking
    from bench.run import RunSpec, make_task, prepare, resolve_budget
    from methods.base import config_dict, stable_hash

    from methods.base import available_methods

    named = available_methods().get(spec.method.strip())
    if named is not None and named.privacy_unit != "none" and (spec.epsilon is None or not math.isfinite(spec.epsilon)):
        raise ConfigError(f"bench verify checks a privacy claim: give a finite --epsilon/-e ({named.name} is "
                          f"{named.privacy_unit}-level private)")
    p = prepare(RunSpec(methods=[spec.method.strip()], dataset=spec.dataset, split=spec.split, seeds=list(spec.seeds),
                        epsilon=spec.epsilon, delta=spec.delta, overrides=list(spec.overrides), device=spec.device,
                        data_root=spec.data_root, download=spec.download, experiment=spec.experiment,
                        track=spec.track, progress=spec.progress))
    cfg = spec.config(p.device)
    cls = p.classes[0]
    overrides = p.overrides[cls.name]
    task = make_task(p.dataset, p.split, int(spec.seeds[0]))
    method = cls(**overrides)
    # "-e inf" for a non-private method is what it claims: the same as no --epsilon
    eps = None if not method.is_private and spec.epsilon is not None and math.isinf(spec.epsilon) else spec.epsilon
    method.check_task(task)
    budget = resolve_budget(eps, spec.delta, method, task)
    method.check_budget(budget)
    hparams = config_dict(method.config)
    identity = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seeds": list(spec.seeds),
                "epsilon": str(budget.epsilon), "delta": budget.delta, "hparams": hparams, "quick": spec.quick}
    config_hash = stable_hash(identity)
    tags = {**spec.tags, "kind": "verify", "method": cls.name, "dataset": p.dataset.name, "split": p.split,
            "config_hash": config_hash, "unit_label": cls.label()}
    params = {"method": cls.name, "dataset": p.dataset.name, "split": p.split, "seeds": list(spec.seeds),
              "target_epsilon": str(budget.epsilon), "delta": budget.delta, "confidence": cfg.confidence,
              "quick": cfg.quick, "canaries": cfg.m, "trials": cfg.trials, "privacy_unit": cls.privacy_unit,
              "unit_label": cls.label(), "config_hash": config_hash, "split_hash": task.split_hash(),
              **{f"hp.{k}": v for k, v in hparams.items()}}
    if log:
        log(f"# verifying {cls.name} ({cls.label()}) on {p.dataset.name}/{p.split} at {budget}, seeds "
            f"{list(spec.seeds)}{' (quick)' if spec.quick else ''}")
    eps_name = "inf" if math.isinf(budget.epsilon) else f"{budget.epsilon:g}"
    name = f"verify {cls.name}/{p.dataset.name}/{p.split}/eps={eps_name}"
    with tracking.tracked_run(spec.experiment, name, tags=tags, enabled=spec.track) as run:
        run.log_params(params)

        def on_check(c) -> None:
            if log:
                log(f"  {c.verdict:<9} {c.name} (seed {c.seed}): {c.statistic}  {c.seconds:.1f}s")
            if not spec.track:
                return
            with tracking.tracked_run(spec.experiment, f"{c.name} <- {name}",
                                      tags={"kind": "verify-check", "check": c.name, "verdict": c.verdict,
                                            "method": cls.name, "dataset": p.dataset.name}, parent=run) as child:
                child.log_params({"seed": c.seed, "statistic": c.statistic, "threshold": c.threshold,
                                  "alpha": c.alpha, "detail": c.detail or "-", "remedy": c.remedy or "-"})
                child.log_metrics({"check_seconds": c.seconds, "violation": float(c.verdict == "VIOLATION"),
                                   **{k: float(v) for k, v in c.data.items()
                                      if isinstance(v, (int, float)) and not isinstance(v, bool)}})

        report = verify(lambda: cls(**overrides), task, budget, cfg, on_check=on_check)
        run.log_metrics({"violations": float(len(report.violations)), "checks": float(len(report.checks)),
                         "verify_seconds": report.seconds})
        run.set_tags({"verdict": report.verdict, **({"note": report.note} if report.note else {})})
        run.log_dict({**report.to_dict(), "params": params}, "verify.json")
    return VerifyOutcome(report, run.run_id, budget)


__all__ = ["VerifyOutcome", "VerifySpec", "verify_one"]
