"""The verification job: every check of :mod:`audits.verify` that applies to a method's privacy unit, tracked.

:func:`bench.plan.plan_verify` resolves a :class:`VerifySpec` into a frozen :class:`~bench.plan.VerifyPlan` like
``bench run``'s plan, refusing bad input before anything is trained or logged; :func:`run_verify` runs the battery
as ONE MLflow run (tags ``kind=verify``, ``method``, ``dataset``,
``split``, ``verdict``; params: the target, delta, seeds, confidence, canaries, the hyperparameters; metrics:
``violations``, ``checks``, ``verify_seconds``; artifact ``verify.json``) with one child run per check (tags
``check``, ``verdict``; the check's statistic, threshold, detail, remedy and error budget). The verdict is PASS,
VIOLATION, INCONCLUSIVE (a check that applies to the method did not run) or NOT APPLICABLE (a non-private method:
no claim, nothing trained); each is a finished measurement (the run ends FINISHED). The command
(:mod:`bench.commands.verify`) exits 3 on VIOLATION and 4 on INCONCLUSIVE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from bench.plan import VerifyPlan, plan_verify
from bench.request import VerifySpec


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
    """Plan and run one verification request (:func:`bench.plan.plan_verify`, :func:`run_verify`)."""
    return run_verify(plan_verify(spec), log)


def run_verify(plan: VerifyPlan, log: Callable[[str], None] | None = None) -> VerifyOutcome:
    """Run the battery on one method (see the module docstring), calibrated and accounted with its run's
    accountant; an error while verifying is a :class:`~bench.tracking.RunFailed` (the run FAILED)."""
    with plan.run.accounting():
        return _run_verify(plan, log)


def _run_verify(plan: VerifyPlan, log: Callable[[str], None] | None = None) -> VerifyOutcome:
    """Run the battery on one method (see the module docstring); an error while verifying is a
    :class:`~bench.tracking.RunFailed` (the run FAILED)."""
    from audits.verify import preflight, verify
    from bench import tracking

    mp, budget, task, cfg, trk = plan.method, plan.budget, plan.task, plan.config, plan.run.tracking
    cls, dataset, split, seeds = mp.cls, plan.run.dataset.name, plan.run.split, plan.seeds
    config_hash = plan.config_hash
    label = mp.build().relation_label()  # the relation this configuration runs, as bench run records it
    tags = {**trk.tags, "kind": "verify", "method": cls.name, "dataset": dataset, "split": split,
            "config_hash": config_hash, "unit_label": label}
    params = {"method": cls.name, "dataset": dataset, "split": split, "seeds": seeds,
              "target_epsilon": str(budget.epsilon), "delta": budget.delta, "confidence": cfg.confidence,
              "quick": cfg.quick, "canaries": cfg.m, "trials": cfg.trials, "privacy_unit": cls.privacy_unit,
              "unit_label": label, "config_hash": config_hash, "split_hash": task.split_hash(),
              **plan.run.accountant_params(), **{f"hp.{k}": v for k, v in mp.hparams.items()}}
    if log:
        log(f"# verifying {cls.name} ({label}) on {dataset}/{split} at {budget}, seeds "
            f"{seeds}{' (quick)' if plan.quick else ''}")
    # the first seed's base fit before the run opens: a method missing part of the interface is refused (exit 2)
    first = preflight(mp.build, task, budget, cfg)
    eps_name = "inf" if math.isinf(budget.epsilon) else f"{budget.epsilon:g}"
    name = f"verify {cls.name}/{dataset}/{split}/eps={eps_name}"
    with tracking.tracked_run(trk.experiment, name, tags=tags, enabled=trk.track) as run:
        run.log_params(params)

        def on_check(c) -> None:
            if log:
                log(f"  {c.verdict:<9} {c.name} (seed {c.seed}): {c.statistic}  {c.seconds:.1f}s")
            if not trk.track:
                return
            with tracking.tracked_run(trk.experiment, f"{c.name} <- {name}",
                                      tags={"kind": "verify-check", "check": c.name, "verdict": c.verdict,
                                            "method": cls.name, "dataset": dataset}, parent=run) as child:
                child.log_params({"seed": c.seed, "statistic": c.statistic, "threshold": c.threshold,
                                  "alpha": c.alpha, "detail": c.detail or "-", "remedy": c.remedy or "-"})
                child.log_metrics({"check_seconds": c.seconds, "violation": float(c.verdict == "VIOLATION"),
                                   **{k: float(v) for k, v in c.data.items()
                                      if isinstance(v, (int, float)) and not isinstance(v, bool)}})

        report = verify(mp.build, task, budget, cfg, on_check=on_check, first=first)
        run.log_metrics({"violations": float(len(report.violations)), "checks": float(len(report.checks)),
                         "verify_seconds": report.seconds})
        run.set_tags({"verdict": report.verdict, **({"note": report.note} if report.note else {})})
        run.log_dict({**report.to_dict(), "params": params}, "verify.json")
    return VerifyOutcome(report, run.run_id, budget)



__all__ = ["VerifyOutcome", "VerifySpec", "run_verify", "verify_one"]
