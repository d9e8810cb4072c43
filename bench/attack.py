"""Membership-inference attacks on trained targets: the attack step of ``bench run --attacks`` and ``bench attack``.

Each target run (method, dataset, split, budget, seed) is the parent MLflow run; every attack on it is a
child run with the attack's parameters, its metrics per variant (``<variant>.auc``, ``..._low``,
``..._high``, ``<variant>.tpr_at_1pct_fpr``, ...), a ROC plot (``roc.png``) and ``attack.json`` (metrics,
thresholds, and the evaluated ids, labels and scores, so any metric can be recomputed). An attack that
cannot be run against a target ends FINISHED with the tag ``status=not applicable`` and its ``reason``.
The parent run also gets ``attack.<name>.<variant>.auc`` and ``.tpr_at_1pct_fpr`` for leaderboards.

:func:`plan_attacks` validates the request before any run opens; :func:`attack_one` attacks one trained target
(called by :func:`bench.run.run_one`); :func:`attack_table` prints the results. The command is
:mod:`bench.commands.attack`; the entry point :func:`bench.api.attack`.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from attacks import metrics as M
from attacks.base import Attack, Target, available_attacks, get_attack, run_attack
from bench import tracking
from bench.cliargs import check_bootstrap
from bench.io import check_output_dir, format_table, save_figure_atomic
from bench.options import field_names, scoped_overrides
from methods.errors import ConfigError


# --------------------------------------------------------------------------------------
# Parsing and validation (before anything runs)
# --------------------------------------------------------------------------------------


def attack_names(items: list[str]) -> list[str]:
    """``["threshold,lira", "shadow"]`` or ``["all"]`` -> names; unknown names are errors."""
    names = [n.strip() for item in items for n in item.split(",") if n.strip()]
    if "all" in names:
        names = [n for n in available_attacks() if n != "all"]
    for n in names:
        get_attack(n)
    if len(set(names)) != len(names):
        raise ConfigError("an attack is listed twice")
    return names


def parse_attack_overrides(items: list[str], names: list[str]) -> dict[str, dict[str, str]]:
    """``["references=4", "shadow.shadows=2"]`` -> per-attack overrides; keys no listed attack has are errors."""
    return scoped_overrides(items, {n: field_names(get_attack(n).Config) for n in names}, flag="--attack-set",
                            noun="attack option", owners="attacks")


@dataclasses.dataclass(frozen=True)
class AttackPlan:
    """Validated attacks for a run: names, their overrides, the bootstrap size and a plot folder (part of a
    frozen :class:`bench.plan.RunPlan`)."""

    names: tuple[str, ...]
    overrides: Mapping[str, Mapping[str, str]]
    bootstrap: int = M.DEFAULT_BOOTSTRAP
    plot_dir: str | None = None

    def build(self, name: str) -> Attack:
        return get_attack(name)(**self.overrides[name])


def plan_attacks(names: list[str], overrides: list[str], bootstrap: int = M.DEFAULT_BOOTSTRAP,
                 plot_dir: str | None = None) -> AttackPlan:
    resolved = attack_names(names)
    if not resolved:
        raise ConfigError("no attack given")
    check_bootstrap(bootstrap)
    check_output_dir(plot_dir, "--plot-dir")
    per = parse_attack_overrides(overrides, resolved)
    plan = AttackPlan(tuple(resolved), MappingProxyType({n: MappingProxyType(o) for n, o in per.items()}), bootstrap,
                      plot_dir)
    for n in resolved:
        plan.build(n)  # option errors surface here, before any run is opened
    return plan


# --------------------------------------------------------------------------------------
# Running and logging
# --------------------------------------------------------------------------------------


def attack_one(plan: AttackPlan, target: Target, parent: tracking.TrackedRun, *, experiment: str, track: bool = True,
               progress: bool = False, run_name: str = "", tags: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Run every planned attack against one trained target, each as an MLflow child run of ``parent``.

    Returns one ``AttackReport.to_dict()`` per attack with its child ``run_id``. ``tags`` (the sweep's owner tags)
    are copied onto every child, so a sweep that dies mid-attack leaves children a later sweep can reclaim."""
    seed = target.streams.seed
    method, task = target.method, target.task
    reports = []
    for name in plan.names:
        attack = plan.build(name)
        child_tags = {**(tags or {}), "attack": name, "level": attack.level, "method": method.name,
                      "dataset": task.dataset, "split": task.split, "target_run_id": parent.run_id or ""}
        with tracking.tracked_run(experiment, f"{name} <- {run_name}", tags=child_tags, parent=parent,
                                  enabled=track) as run:
            report = run_attack(attack, target, n_bootstrap=plan.bootstrap, progress=progress)
            run.log_params({**report.params, "target_seed": seed, "bootstrap": plan.bootstrap,
                            "evaluated_members": report.evaluated_members,
                            "evaluated_non_members": report.evaluated_non_members, "known": report.known,
                            **{f"note.{k}": v for k, v in report.notes.items()}})
            run.set_tags({"status": report.status, "reason": report.reason})
            if report.status == "ok":
                run.log_metrics({**report.metrics_flat(), "attack_seconds": report.seconds})
                parent.log_metrics({f"attack.{name}.{v.name}.{k}": v.metrics[k].value for v in report.variants
                                    for k in ("auc", "tpr_at_1pct_fpr")})
                fig = report.figure(f"{name} on {method.name} / {task.dataset} / seed {seed}")
                run.log_figure(fig, "roc.png")
                if plan.plot_dir:
                    file = f"{method.name}_{task.dataset}_s{seed}_{name}.png".replace(":", "_").replace("/", "_")
                    save_figure_atomic(fig, Path(plan.plot_dir) / file)
            run.log_dict(report.to_dict(with_scores=True), "attack.json")
        reports.append({**report.to_dict(), "run_id": run.run_id})
    return reports


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def attack_rows(results: list[Any]) -> list[dict[str, Any]]:
    """Flat rows (one per target, attack and variant) from ``bench.run.RunResult``s."""
    rows = []
    for r in results:
        for a in r.attacks:
            base = {"method": r.method, "dataset": r.dataset, "split": r.split, "seed": r.seed,
                    "target_epsilon": r.target_epsilon, "epsilon": r.epsilon, "test_acc": r.metrics.get("test_acc"),
                    "attack": a["attack"], "status": a["status"], "unit": r.unit_label or r.privacy_unit,
                    **attack_unit(a["attack"], r.privacy_unit)}
            if a["status"] != "ok":
                rows.append({**base, "variant": "-", "reason": a["reason"]})
                continue
            for vname, v in a["variants"].items():
                rows.append({**base, "variant": vname, "members": a["evaluated_members"],
                             "non_members": a["evaluated_non_members"], **{k: v[k] for k in M.METRICS}})
    return rows


def attack_unit(attack: str, privacy_unit: str) -> dict[str, str]:
    """``attack_unit``: what ``attack`` infers (``node membership``); ``outside_claim``: why a ``privacy_unit``-level
    guarantee does not cover it ("" when it does; an attack no longer registered gives "" for both)."""
    try:
        cls = get_attack(attack)
    except ConfigError:
        return {"attack_unit": "", "outside_claim": ""}
    return {"attack_unit": cls.unit(), "outside_claim": cls.outside_claim(privacy_unit)}


def _est(d: dict[str, float] | None) -> str:
    if not d or d["value"] is None or (isinstance(d["value"], float) and math.isnan(d["value"])):
        return "n/a"
    if isinstance(d["low"], float) and math.isnan(d["low"]):
        return f"{d['value']:.3f}"
    return f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"


def attack_table(results: list[Any]) -> str:
    header = ["method", "unit", "dataset", "seed", "eps", "attack (infers)", "variant", "AUC [95% CI]",
              "TPR@1%FPR [95% CI]", "TPR@0.1%FPR [95% CI]", "advantage [95% CI]", "bal. acc [95% CI]", "members/non",
              "note"]
    rows = []
    for row in attack_rows(results):
        eps = "inf" if not math.isfinite(row["epsilon"]) else f"{row['epsilon']:.3g}"
        attack = f"{row['attack']} ({row['attack_unit']})" if row["attack_unit"] else row["attack"]
        lead = [row["method"], row["unit"], row["dataset"], str(row["seed"]), eps, attack]
        if row["status"] != "ok":
            rows.append(lead + ["-", "n/a", "n/a", "n/a", "n/a", "n/a", "-", f"not applicable: {row['reason']}"])
            continue
        rows.append(lead + [row["variant"], _est(row["auc"]), _est(row["tpr_at_1pct_fpr"]),
                            _est(row["tpr_at_0.1pct_fpr"]), _est(row["advantage"]), _est(row["balanced_accuracy"]),
                            f"{row['members']}/{row['non_members']}", row["outside_claim"]])
    return format_table(header, rows)


def list_attacks() -> list[dict[str, str]]:
    return [{"name": n, "level": c.level, "description": c.description} for n, c in available_attacks().items()]


__all__ = ["AttackPlan", "attack_one", "attack_rows", "attack_table", "attack_unit", "list_attacks", "plan_attacks"]
