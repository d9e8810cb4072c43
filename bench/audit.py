"""The audit job: an empirical privacy audit (an epsilon lower bound) checked against the ledger's claim.

:func:`bench.plan.plan_audit` resolves an :class:`AuditSpec` into a frozen :class:`~bench.plan.AuditPlan` like
``bench run``'s plan (plus the audit's own options and a dry run of the canary design), refusing bad input before
anything is trained or logged; :func:`run_audit` runs the plan as ONE MLflow run with tags ``kind=audit``,
``method``, ``dataset``, ``split``, ``audit_mode``, ``canary_type`` (input | gradient), ``verdict`` (PASS |
VIOLATION | NOT APPLICABLE) (plus ``spec.tags``, e.g. a sweep cell's); params ``trials``, ``canaries``, ``target_epsilon``, ``delta``, ``confidence``, ``privacy_unit``,
``config_hash`` (+ the canary design and hyperparameters); metrics ``claimed_epsilon``, ``epsilon_lb``,
``audit_seconds``; artifact ``audit.json`` (scores, inclusion bits, the bound's counts), so the bound can be
recomputed. A VIOLATION is a finished measurement (the run ends FINISHED). The command is
:mod:`bench.commands.audit` (exit 3 on VIOLATION); the entry point :func:`bench.api.audit`; :func:`audit_one` plans
and runs one request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from bench.plan import AuditPlan, plan_audit
from bench.request import AuditSpec


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
    """Plan and run one audit request (:func:`bench.plan.plan_audit`, :func:`run_audit`)."""
    return run_audit(plan_audit(spec), log)


def run_audit(plan: AuditPlan, log: Callable[[str], None] | None = None) -> AuditOutcome:
    """Audit one method (see the module docstring), calibrated and accounted with its run's accountant; an
    error while auditing is a :class:`~bench.tracking.RunFailed` (the run FAILED)."""
    with plan.run.accounting():
        return _run_audit(plan, log)


def _run_audit(plan: AuditPlan, log: Callable[[str], None] | None = None) -> AuditOutcome:
    """Audit one method (see the module docstring); an error while auditing is a
    :class:`~bench.tracking.RunFailed` (the run FAILED)."""
    from audits.runner import audit
    from bench import tracking

    mp, run_plan, budget, task, canary, trk = plan.method, plan.run, plan.budget, plan.task, plan.canary, plan.run.tracking
    cls, dataset, split = mp.cls, run_plan.dataset.name, run_plan.split
    config_hash = plan.config_hash
    tags = {**trk.tags, "kind": "audit", "method": cls.name, "dataset": dataset, "split": split,
            "audit_mode": plan.mode, "canary_type": plan.canary_type, "config_hash": config_hash}
    params = {"method": cls.name, "dataset": dataset, "split": split, "seed": plan.seed,
              "trials": plan.trials if plan.mode != "one-run" else 1,
              "canaries": plan.canaries if plan.mode != "multi-run" else 1,
              "target_epsilon": str(budget.epsilon), "delta": budget.delta, "confidence": plan.confidence,
              "privacy_unit": cls.privacy_unit, "config_hash": config_hash, "split_hash": task.split_hash(),
              "canary.hops": canary.hops, "canary.degree": canary.degree, "canary.scale": canary.scale,
              "canary.pattern": canary.pattern, "canary.type": plan.canary_type,
              **({"canary.fresh_anchors": True} if canary.fresh_anchors else {}),
              **({"canary.signed": True} if canary.signed else {}),
              **plan.run.accountant_params(), **{f"hp.{k}": v for k, v in mp.hparams.items()}}
    if log:
        log(f"# auditing {cls.name} (unit: {cls.privacy_unit}) on {dataset}/{split}, {plan.mode}, target {budget}")
    name = f"audit {cls.name}/{dataset}/{split}/{plan.mode}"
    with tracking.tracked_run(trk.experiment, name, tags=tags, enabled=trk.track) as run:
        run.log_params(params)
        t0 = time.perf_counter()
        result = audit(mp.build, task, budget, plan.mode, trials=plan.trials, canaries=plan.canaries,
                       confidence=plan.confidence, canary=canary, seed=plan.seed, device=run_plan.device,
                       progress=trk.progress, canary_type=plan.canary_type, workers=plan.workers,
                       canary_set=plan.canary_set)
        result.seconds = time.perf_counter() - t0
        run.log_metrics({"claimed_epsilon": result.claimed_epsilon, "epsilon_lb": result.epsilon_lb,
                         "audit_seconds": result.seconds})
        run.set_tags({"verdict": result.verdict, **({"note": result.note} if result.note else {}),
                      **({"reason": result.reason[:5000]} if result.reason else {})})
        run.log_dict({**result.to_dict(), "params": params}, "audit.json")
    return AuditOutcome(result, run.run_id, cls.name, cls.privacy_unit, dataset, split, budget)



__all__ = ["AuditOutcome", "AuditSpec", "audit_one", "run_audit"]
