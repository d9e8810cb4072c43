"""``bench leaderboard``: tables and privacy-utility plots built from the MLflow runs of an experiment.

Per dataset and privacy unit, one row per (method, split, target epsilon): test accuracy mean with a
bootstrap 95% interval over seeds (``scipy.stats.bootstrap``, percentile), the spent epsilon (the max over
seeds of what the accountant computed from each run's ledger; never the target), the strongest attack
(highest mean AUC over seeds among the parent's ``attack.<name>.<variant>.auc`` metrics, and the highest
TPR at 1% FPR), and audits (runs tagged ``kind=audit``: the largest ``epsilon_lb`` and VIOLATION if any
audit says so). Only FINISHED top-level runs count; a configuration run twice with the same seed counts
once (the newest run).

The tables and one plot per dataset (accuracy vs epsilon, log x, eps = inf at its own position) are
logged to a run tagged ``kind=leaderboard`` unless ``--no-track``; ``--format html`` is one static page
with inline CSS and the plots as base64 PNGs.
"""

from __future__ import annotations

import argparse
import base64
import csv
import html
import io
import math
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cliargs import command
from methods.base import BenchError

BIG = 1e307  # tracking stores inf as 1e308


class LeaderboardError(BenchError):
    """No runs to build a leaderboard from, or an output that cannot be written."""


def _f(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    if v >= BIG:
        return math.inf
    return v


@dataclass
class Row:
    dataset: str
    unit: str
    method: str
    split: str
    target_epsilon: float
    accs: list[float] = field(default_factory=list)
    spent: list[float] = field(default_factory=list)
    attack_auc: dict[str, list[float]] = field(default_factory=dict)
    attack_tpr: dict[str, list[float]] = field(default_factory=dict)
    audit_lb: list[float] = field(default_factory=list)
    audit_verdicts: list[str] = field(default_factory=list)
    audit_modes: set = field(default_factory=set)
    ci: tuple[float, float] | None = None
    hparams: tuple = ()  # (key, value) pairs of the runs' hp.* params
    variant: str = ""  # the hyperparameters that tell this row from others of the same method, split and epsilon

    @property
    def label(self) -> str:
        return f"{self.method} [{self.variant}]" if self.variant else self.method

    @property
    def acc_mean(self) -> float:
        return statistics.fmean(self.accs) if self.accs else math.nan

    @property
    def spent_max(self) -> float:
        return max(self.spent) if self.spent else math.nan

    def best_attack(self, which: str) -> tuple[str, float]:
        d = self.attack_auc if which == "auc" else self.attack_tpr
        if not d:
            return "", math.nan
        name, vals = max(d.items(), key=lambda kv: statistics.fmean(kv[1]))
        return name, statistics.fmean(vals)

    @property
    def verdict(self) -> str:
        if not self.audit_verdicts:
            return ""
        return "VIOLATION" if "VIOLATION" in self.audit_verdicts else "PASS"


def bootstrap_ci(xs: list[float], seed: int = 0, resamples: int = 2000) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of the mean over seeds (None with fewer than two seeds)."""
    import numpy as np
    from scipy.stats import bootstrap

    if len(xs) < 2:
        return None
    a = np.asarray(xs, dtype=float)
    if np.all(a == a[0]):
        return float(a[0]), float(a[0])
    res = bootstrap((a,), np.mean, confidence_level=0.95, n_resamples=resamples, method="percentile",
                    random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def collect(experiment: str) -> list[Row]:
    """Rows from the FINISHED runs of ``experiment`` (method runs, their attack metrics, audit runs)."""
    from bench import tracking

    runs = tracking.search_runs(experiment, "attributes.status = 'FINISHED'")
    newest: dict[tuple, Any] = {}
    audits = []
    for r in runs:
        tags, params = r.data.tags, r.data.params
        if tags.get("mlflow.parentRunId"):
            continue
        if tags.get("kind") == "audit":
            audits.append(r)
            continue
        if tags.get("kind") or "test_acc" not in r.data.metrics or "method" not in params:
            continue
        key = params.get("config_hash") or r.info.run_id
        if key not in newest or r.info.start_time > newest[key].info.start_time:
            newest[key] = r
    rows: dict[tuple, Row] = {}
    for r in newest.values():
        p, m = r.data.params, r.data.metrics
        eps = _f(p.get("target_epsilon", "inf"))
        hps = tuple(sorted((k[3:], v) for k, v in p.items() if k.startswith("hp.")))
        key = (p.get("dataset"), p.get("privacy_unit", "?"), p["method"], p.get("split", "?"), eps, hps)
        row = rows.setdefault(key, Row(*key[:5], hparams=hps))
        row.accs.append(float(m["test_acc"]))
        row.spent.append(_f(m.get("epsilon", math.inf)))
        for k, v in m.items():
            if k.startswith("attack.") and k.endswith(".auc"):
                row.attack_auc.setdefault(k[len("attack."):-len(".auc")], []).append(float(v))
            elif k.startswith("attack.") and k.endswith(".tpr_at_1pct_fpr"):
                row.attack_tpr.setdefault(k[len("attack."):-len(".tpr_at_1pct_fpr")], []).append(float(v))
    for a in audits:
        t, p, m = a.data.tags, a.data.params, a.data.metrics
        eps = _f(p.get("target_epsilon", p.get("epsilon", p.get("epsilon_target", m.get("claimed_epsilon")))))
        method, dataset = t.get("method"), t.get("dataset")
        match = [row for (d, _, meth, sp, e, _h), row in rows.items()
                 if d == dataset and meth == method and e == eps and (not t.get("split") or t.get("split") == sp)]
        if not match:  # an audit of a configuration without accuracy runs still gets a row
            from methods.base import available_methods

            cls = available_methods().get(method)
            key = (dataset, cls.privacy_unit if cls else "?", method, t.get("split", "?"), eps, ())
            match = [rows.setdefault(key, Row(*key[:5]))]
        for row in match:
            if "epsilon_lb" in m:
                row.audit_lb.append(float(m["epsilon_lb"]))
            if t.get("verdict"):
                row.audit_verdicts.append(t["verdict"])
            if t.get("audit_mode"):
                row.audit_modes.add(t["audit_mode"])
    _name_variants(list(rows.values()))
    out = sorted(rows.values(), key=lambda r: (r.dataset, r.unit, r.method, r.split, r.variant, r.target_epsilon))
    for row in out:
        row.ci = bootstrap_ci(row.accs)
    return out


def _name_variants(rows: list[Row]) -> None:
    """Rows of one method that differ in hyperparameters (a lam grid) are labelled by the keys that differ."""
    by: dict[tuple, list[Row]] = {}
    for r in rows:
        by.setdefault((r.dataset, r.unit, r.method, r.split), []).append(r)
    for rs in by.values():
        sets = {r.hparams for r in rs}
        if len(sets) < 2:
            continue
        dicts = [dict(h) for h in sets]
        keys = sorted({k for d in dicts for k in d if len({x.get(k) for x in dicts}) > 1})
        for r in rs:
            d = dict(r.hparams)
            r.variant = ",".join(f"{k}={d.get(k, '-')}" for k in keys)


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------

HEADER = ["method", "split", "target eps", "spent eps (max)", "test acc", "95% CI", "seeds", "best attack AUC",
          "best TPR@1%FPR", "audit eps_lb", "audit"]


def _num(x: float, fmt: str = ".4f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf"
    return format(x, fmt)


def row_cells(r: Row) -> list[str]:
    an, av = r.best_attack("auc")
    tn, tv = r.best_attack("tpr")
    ci = "-" if r.ci is None else f"[{r.ci[0]:.4f}, {r.ci[1]:.4f}]"
    return [r.label, r.split, _num(r.target_epsilon, "g"), _num(r.spent_max, ".4g"), _num(r.acc_mean), ci,
            str(len(r.accs)), f"{_num(av)} ({an})" if an else "-", f"{_num(tv)} ({tn})" if tn else "-",
            _num(max(r.audit_lb), ".3g") if r.audit_lb else "-",
            f"{r.verdict} ({', '.join(sorted(r.audit_modes))})" if r.verdict else "-"]


def sections(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    out: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        out.setdefault((r.dataset, r.unit), []).append(r)
    return out


def to_markdown(rows: list[Row], experiment: str) -> str:
    lines = [f"# Leaderboard: experiment `{experiment}`", ""]
    for (ds, unit), rs in sections(rows).items():
        lines += [f"## {ds} — privacy unit: {unit}", "", "| " + " | ".join(HEADER) + " |",
                  "|" + "|".join(" --- " for _ in HEADER) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r)) + " |" for r in rs]
        lines.append("")
    return "\n".join(lines)


def to_csv(rows: list[Row]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["dataset", "privacy_unit", "method", "split", "target_epsilon", "spent_epsilon_max", "test_acc_mean",
                "ci_low", "ci_high", "seeds", "best_attack", "best_attack_auc", "best_tpr_attack",
                "best_tpr_at_1pct_fpr", "audit_epsilon_lb", "audit_verdict"])
    for r in rows:
        an, av = r.best_attack("auc")
        tn, tv = r.best_attack("tpr")
        w.writerow([r.dataset, r.unit, r.label, r.split, r.target_epsilon, r.spent_max, r.acc_mean,
                    "" if r.ci is None else r.ci[0], "" if r.ci is None else r.ci[1], len(r.accs), an,
                    "" if not an else av, tn, "" if not tn else tv, max(r.audit_lb) if r.audit_lb else "", r.verdict])
    return buf.getvalue()


# --------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------


def plot_dataset(rows: list[Row], dataset: str):
    """Accuracy vs epsilon per method (log x); eps = inf sits at its own position right of the finite ones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = [r for r in rows if r.dataset == dataset]
    finite = sorted({r.target_epsilon for r in rs if math.isfinite(r.target_epsilon)})
    lo, hi = (finite[0], finite[-1]) if finite else (1.0, 1.0)
    x_inf = hi * 4 if finite else 1.0
    fig, ax = plt.subplots(figsize=(9, 4.8))
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rs:
        groups.setdefault((r.label, r.split), []).append(r)
    multi_split = len({s for _, s in groups}) > 1
    cmap = plt.get_cmap("tab20" if len(groups) > 10 else "tab10")
    for i, ((method, split), g) in enumerate(sorted(groups.items())):
        label = f"{method} ({split})" if multi_split else method
        g = sorted(g, key=lambda r: r.target_epsilon)
        fin = [r for r in g if math.isfinite(r.target_epsilon)]
        inf = [r for r in g if not math.isfinite(r.target_epsilon)]
        color = cmap(i % cmap.N)
        if fin:
            xs = [r.target_epsilon for r in fin]
            ys = [r.acc_mean for r in fin]
            err = [[r.acc_mean - (r.ci or (r.acc_mean,) * 2)[0] for r in fin],
                   [(r.ci or (r.acc_mean,) * 2)[1] - r.acc_mean for r in fin]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label, color=color)
        for r in inf:
            if r.unit == "none" and finite:  # a non-private reference: a dashed line across the plot
                ax.hlines(r.acc_mean, lo / 1.5, x_inf, linestyles="dashed", colors=[color], label=None if fin else label)
            ax.plot([x_inf], [r.acc_mean], marker="s", linestyle="none", color=color,
                    label=None if (fin or (r.unit == "none" and finite)) else label)
    ax.set_xscale("log")
    ticks = finite + [x_inf]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in finite] + ["∞"])
    ax.minorticks_off()
    if finite:
        ax.axvline(hi * 2, color="0.8", linewidth=0.8)
    ax.set_xlabel("target epsilon (log scale; ∞ = no noise / non-private)")
    ax.set_ylabel("test accuracy (mean, 95% bootstrap CI)")
    ax.set_title(f"Privacy-utility: {dataset}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def _png_b64(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1300px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}th,td{border:1px solid #ccc;padding:.3em .55em;text-align:right}
th{background:#f3f3f3}td:first-child,td:nth-child(2){text-align:left}tr:nth-child(even){background:#fafafa}
.viol{color:#b00020;font-weight:bold}.pass{color:#1b7f3a}img{max-width:100%;border:1px solid #eee}
.note{color:#666;font-size:.85em}"""


def to_html(rows: list[Row], experiment: str, figures: dict[str, str]) -> str:
    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Leaderboard {esc(experiment)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>Leaderboard: experiment <code>{esc(experiment)}</code></h1>",
             "<p class='note'>Test accuracy: mean over seeds with a 95% percentile bootstrap interval (scipy). Spent "
             "epsilon: the accountant's value from each run's ledger (max over seeds), not the target. Attacks: the "
             "strongest attack/variant by mean AUC over seeds. Audits: the largest empirical lower bound on epsilon; "
             "VIOLATION if any audit beat the claim.</p>"]
    by_ds: dict[str, list[tuple[str, list[Row]]]] = {}
    for (ds, unit), rs in sections(rows).items():
        by_ds.setdefault(ds, []).append((unit, rs))
    for ds, secs in by_ds.items():
        parts.append(f"<h2>{esc(ds)}</h2>")
        if ds in figures:
            parts.append(f"<img alt='privacy-utility plot for {esc(ds)}' src='data:image/png;base64,{figures[ds]}'>")
        for unit, rs in secs:
            parts.append(f"<h3>privacy unit: {esc(unit)}</h3><table><tr>"
                         + "".join(f"<th>{esc(h)}</th>" for h in HEADER) + "</tr>")
            for r in rs:
                cells = row_cells(r)
                tds = "".join(f"<td>{esc(c)}</td>" for c in cells[:-1])
                cls = "viol" if r.verdict == "VIOLATION" else "pass" if r.verdict else ""
                parts.append(f"<tr>{tds}<td class='{cls}'>{esc(cells[-1])}</td></tr>")
            parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


# --------------------------------------------------------------------------------------
# Command
# --------------------------------------------------------------------------------------


def build(experiment: str, fmt: str, track: bool = True) -> tuple[str, list[Row]]:
    """The leaderboard of ``experiment`` rendered as ``fmt``; with ``track``, also logged as a leaderboard run."""
    rows = collect(experiment)
    if not rows:
        raise LeaderboardError(f"experiment {experiment!r} has no FINISHED runs with test accuracy")
    import matplotlib.pyplot as plt

    figs = {ds: plot_dataset(rows, ds) for ds in dict.fromkeys(r.dataset for r in rows)}
    b64 = {ds: _png_b64(f) for ds, f in figs.items()}
    md, table_csv, page = to_markdown(rows, experiment), to_csv(rows), to_html(rows, experiment, b64)
    if track:
        from bench import tracking

        with tracking.tracked_run(experiment, "leaderboard", tags={"kind": "leaderboard"}) as run:
            run.log_params({"rows": len(rows), "runs": sum(len(r.accs) for r in rows)})
            run.log_text(md, "leaderboard.md")
            run.log_text(table_csv, "leaderboard.csv")
            run.log_text(page, "leaderboard.html")
            for ds, f in figs.items():
                run.log_figure(f, f"plots/privacy_utility_{_safe(ds)}.png")
    for f in figs.values():
        plt.close(f)
    return {"md": md, "csv": table_csv, "html": page}[fmt], rows


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@command("leaderboard", "tables and privacy-utility plots of an experiment's runs (md, html, csv)")
def _leaderboard_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("leaderboard", help="tables and privacy-utility plots of an experiment's runs (md, html, csv)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--experiment", default="dp-gnn-bench", help="MLflow experiment (default: %(default)s)")
    p.add_argument("--format", choices=["md", "html", "csv"], default="md", help="output format (default: md)")
    p.add_argument("--output", "-o", metavar="PATH", help="write to PATH (atomically) instead of stdout")
    p.add_argument("--no-track", action="store_true", help="do not log a leaderboard run with the tables and plots")
    p.set_defaults(func=cmd_leaderboard)
    return p


def cmd_leaderboard(args: argparse.Namespace) -> int:
    if args.output and Path(args.output).is_dir():
        raise LeaderboardError(f"--output {args.output} is a directory")
    text, rows = build(args.experiment, args.format, track=not args.no_track)
    if args.output:
        write_text_atomic(args.output, text)
        print(f"# wrote {args.output}: {len(rows)} rows", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
