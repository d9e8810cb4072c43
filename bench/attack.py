"""``bench attack`` and the attack step of ``bench run --attacks``: membership inference against trained targets.

Each target run (method, dataset, split, budget, seed) is the parent MLflow run; every attack on it is a
child run with the attack's parameters, its metrics per variant (``<variant>.auc``, ``..._low``,
``..._high``, ``<variant>.tpr_at_1pct_fpr``, ...), a ROC plot (``roc.png``) and ``attack.json`` (metrics,
thresholds, and the evaluated ids, labels and scores, so any metric can be recomputed). An attack that
cannot be run against a target ends FINISHED with the tag ``status=not applicable`` and its ``reason``.
The parent run also gets ``attack.<name>.<variant>.auc`` and ``.tpr_at_1pct_fpr`` for leaderboards.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from attacks import metrics as M
from attacks.base import Attack, AttackReport, Target, available_attacks, get_attack, run_attack
from bench import tracking
from bench.cliargs import command, data_args, target_args, tracking_args
from methods.base import Budget, ConfigError, Fitted, Method, Task


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
    per: dict[str, dict[str, str]] = {n: {} for n in names}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"--attack-set expects key=value (got {item!r})")
        scope, dot, field = key.rpartition(".")
        if dot and scope in per:
            per[scope][field] = value
            continue
        if dot:
            raise ConfigError(f"--attack-set {item}: {scope!r} is not one of the attacks being run ({', '.join(per)})")
        targets = [n for n in names if key in _fields(get_attack(n))]
        if not targets:
            listing = "; ".join(f"{n}: {', '.join(sorted(_fields(get_attack(n))))}" for n in names)
            raise ConfigError(f"unknown attack option {key!r}; valid ones are {listing}")
        for n in targets:
            per[n][key] = value
    return per


def _fields(cls: type[Attack]) -> set[str]:
    return {f.name for f in dataclasses.fields(cls.Config)}


@dataclasses.dataclass
class AttackPlan:
    """Validated attacks for a run: names, their overrides, the bootstrap size and a plot folder."""

    names: list[str]
    overrides: dict[str, dict[str, str]]
    bootstrap: int = M.DEFAULT_BOOTSTRAP
    plot_dir: str | None = None

    def build(self, name: str) -> Attack:
        return get_attack(name)(**self.overrides[name])


def plan_attacks(names: list[str], overrides: list[str], bootstrap: int = M.DEFAULT_BOOTSTRAP,
                 plot_dir: str | None = None) -> AttackPlan:
    resolved = attack_names(names)
    if not resolved:
        raise ConfigError("no attack given")
    if bootstrap < 0:
        raise ConfigError(f"--bootstrap must be >= 0 (got {bootstrap})")
    plan = AttackPlan(resolved, parse_attack_overrides(overrides, resolved), bootstrap, plot_dir)
    for n in resolved:
        plan.build(n)  # option errors surface here, before any run is opened
    return plan


# --------------------------------------------------------------------------------------
# Running and logging
# --------------------------------------------------------------------------------------


def _save_figure(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def run_attacks(plan: AttackPlan, task: Task, method: Method, budget: Budget, fitted: Fitted, seed: int, device: Any,
                parent: tracking.TrackedRun, experiment: str, track: bool, progress: bool,
                run_name: str) -> list[AttackReport]:
    """Run every planned attack against one trained target, each as an MLflow child run of ``parent``."""
    target = Target(task, method, budget, fitted, seed, device)
    reports = []
    for name in plan.names:
        attack = plan.build(name)
        tags = {"attack": name, "level": attack.level, "method": method.name, "dataset": task.dataset,
                "split": task.split, "target_run_id": parent.run_id or ""}
        with tracking.tracked_run(experiment, f"{name} <- {run_name}", tags=tags, parent=parent, enabled=track) as run:
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
                    _save_figure(fig, Path(plan.plot_dir) / f"{method.name}_{task.dataset}_s{seed}_{name}.png"
                                 .replace(":", "_").replace("/", "_"))
            run.log_dict(report.to_dict(with_scores=True), "attack.json")
        reports.append(report)
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
                    "attack": a["attack"], "status": a["status"]}
            if a["status"] != "ok":
                rows.append({**base, "variant": "-", "reason": a["reason"]})
                continue
            for vname, v in a["variants"].items():
                rows.append({**base, "variant": vname, "members": a["evaluated_members"],
                             "non_members": a["evaluated_non_members"], **{k: v[k] for k in M.METRICS}})
    return rows


def _est(d: dict[str, float] | None) -> str:
    if not d or d["value"] is None or (isinstance(d["value"], float) and math.isnan(d["value"])):
        return "n/a"
    if isinstance(d["low"], float) and math.isnan(d["low"]):
        return f"{d['value']:.3f}"
    return f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"


def attack_table(results: list[Any]) -> str:
    from bench.run import format_table

    header = ["method", "dataset", "seed", "eps", "attack", "variant", "AUC [95% CI]", "TPR@1%FPR [95% CI]",
              "TPR@0.1%FPR [95% CI]", "advantage [95% CI]", "bal. acc [95% CI]", "members/non", "note"]
    rows = []
    for row in attack_rows(results):
        eps = "inf" if not math.isfinite(row["epsilon"]) else f"{row['epsilon']:.3g}"
        if row["status"] != "ok":
            rows.append([row["method"], row["dataset"], str(row["seed"]), eps, row["attack"], "-", "n/a", "n/a",
                         "n/a", "n/a", "n/a", "-", f"not applicable: {row['reason']}"])
            continue
        rows.append([row["method"], row["dataset"], str(row["seed"]), eps, row["attack"], row["variant"],
                     _est(row["auc"]), _est(row["tpr_at_1pct_fpr"]), _est(row["tpr_at_0.1pct_fpr"]),
                     _est(row["advantage"]), _est(row["balanced_accuracy"]),
                     f"{row['members']}/{row['non_members']}", ""])
    return format_table(header, rows)


# --------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------


def attack_args(p: argparse.ArgumentParser, required: bool) -> None:
    names = "threshold, shadow, lira, privgnn-attack1, privgnn-attack2, link-stealing, linkteller, or all"
    if required:
        p.add_argument("--attack", "-a", dest="attacks", action="append", required=True, metavar="A[,A...]",
                       help=f"attack name(s), comma-separated or repeated ({names}; see `bench list attacks`)")
    else:
        p.add_argument("--attacks", dest="attacks", action="append", default=[], metavar="A[,A...]",
                       help=f"also run these membership-inference attacks on every trained model ({names})")
    p.add_argument("--attack-set", dest="attack_overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="attack option, e.g. references=4 or lira.references=4 (repeatable); see attacks/*.py")
    p.add_argument("--bootstrap", type=int, default=M.DEFAULT_BOOTSTRAP,
                   help="bootstrap resamples for the 95%% intervals (default: %(default)s; 0 = none)")
    p.add_argument("--plot-dir", metavar="DIR", help="also save every ROC plot as a PNG in DIR")


@command("attack", "membership-inference attacks on trained models; tracked as MLflow child runs")
def _attack_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("attack", help="membership-inference attacks on trained models; tracked as MLflow child runs",
                       description="Train each method (one run per seed, as `bench run`), then attack it; each "
                                   "attack is an MLflow child run with its metrics and ROC plot.")
    target_args(p, output_help="also write targets and attack results as JSON")
    attack_args(p, required=True)
    data_args(p)
    tracking_args(p)
    p.set_defaults(func=cmd_attack)
    return p


def cmd_attack(args: argparse.Namespace) -> int:
    from bench.cli import run_targets
    from bench.run import write_json_atomic

    results = run_targets(args)
    print(attack_table(results))
    if args.output:
        write_json_atomic(args.output, [r.to_dict() for r in results])
    return 0


def list_attacks() -> list[dict[str, str]]:
    return [{"name": n, "level": c.level, "description": c.description} for n, c in available_attacks().items()]


__all__ = ["AttackPlan", "attack_rows", "attack_table", "list_attacks", "plan_attacks", "run_attacks"]
