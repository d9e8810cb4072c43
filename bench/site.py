"""The published leaderboard's texts: its title, what it was built from (records, machine, compute, progress of the
config's grid, where the hyperparameters come from) and the "Papers vs ours" section from ``configs/papers.yaml``.

:mod:`bench.leaderboard` renders the tables and plots; this module only writes the prose around them, from the same
records, so a page rebuilt from the committed export says the same thing as the one built while the sweep ran.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from bench.records import ATTACK_KINDS
from methods.errors import BenchError

PAPERS_PATH = Path(__file__).resolve().parents[1] / "configs" / "papers.yaml"
#: the runs of the papers' own settings (``configs/papers/*.yaml``), when ``configs/papers.yaml`` names no other
SETTINGS_EXPORT = "docs/paper-settings/runs.jsonl"
TITLE = "DP-GNN benchmark leaderboard"
TUNED_LABEL = "tuned on validation labels, outside the privacy budget, as the papers do"


class SiteError(BenchError):
    """A papers file that cannot be read or names a cell badly."""


# --------------------------------------------------------------------------------------
# Papers vs ours
# --------------------------------------------------------------------------------------


def load_papers(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """``configs/papers.yaml``: ``reasons`` (key -> text) and ``papers`` (sections of cells); checked here."""
    import yaml

    p = Path(path) if path is not None else PAPERS_PATH
    if not p.is_file():
        return {"reasons": {}, "papers": []}
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise SiteError(f"{p}: not valid YAML ({str(e).splitlines()[0]})") from None
    reasons, papers, absent = raw.get("reasons") or {}, raw.get("papers") or [], raw.get("absent") or []
    if not isinstance(reasons, dict) or not isinstance(papers, list) or not isinstance(absent, list):
        raise SiteError(f"{p}: expected `reasons` (a mapping), `papers` and `absent` (lists)")
    for i, entry in enumerate(absent):
        if not isinstance(entry, dict) or not entry.get("dataset") or not entry.get("papers") or not entry.get("why"):
            raise SiteError(f"{p}: absent[{i}] needs `dataset`, `papers` and `why`")
    for i, sec in enumerate(papers):
        for key in ("paper", "dataset", "split", "cells"):
            if key not in sec:
                raise SiteError(f"{p}: papers[{i}] has no {key!r}")
        for j, cell in enumerate(sec["cells"]):
            if "method" not in cell or "paper" not in cell:
                raise SiteError(f"{p}: papers[{i}].cells[{j}] needs `method` and `paper`")
    settings = raw.get("settings_export", SETTINGS_EXPORT)
    return {"reasons": reasons, "papers": papers, "absent": absent,
            "settings_export": str(p.resolve().parents[1] / settings) if settings else None}


def load_setting_records(papers: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The records of the papers' own settings (``settings_export`` of ``configs/papers.yaml``, a path relative to
    the repository), or none where that export is absent: "Papers vs ours" then prints "not run yet" there."""
    from bench import records

    papers = papers if papers is not None else load_papers()
    path = papers.get("settings_export")
    return records.load(path) if path and Path(path).exists() else []


ABSENT_HEADING = "Datasets not on this page"
LARGE_CONFIG = "configs/large.yaml"


def absent_md(papers: dict[str, Any] | None = None) -> str:
    """The papers' datasets the page lacks (``absent`` in ``configs/papers.yaml``), why, and the name a user who has
    the files runs them by (:data:`LARGE_CONFIG` holds the papers' cells on them)."""
    papers = papers if papers is not None else load_papers()
    absent = papers.get("absent") or []
    if not absent:
        return ""
    out = [f"## {ABSENT_HEADING}", "",
           "The papers also report datasets that the offline copy this page is built from does not hold. Where the "
           f"suite has a loader (the real PyG and OGB classes), `{LARGE_CONFIG}` runs each paper's cells on them at "
           "its headline budget: `BENCH_DATA_ROOT=/path/to/datasets bench sweep "
           f"{LARGE_CONFIG} --executor ray --workers 8 --export large.jsonl` (without `BENCH_DATA_ROOT` the stock "
           "files download once into the user cache; a GPU is used when present), then `bench leaderboard --config "
           f"{LARGE_CONFIG} --export large.jsonl --site large-site`. The loaders are tested on tiny files written in "
           "each format; no number of theirs is on this page.", "",
           "| dataset | reported by | why it is not here | run it as |", "| --- | --- | --- | --- |"]
    for e in absent:
        name = e.get("name")
        out.append(f"| {e['dataset']} | {', '.join(map(str, e['papers']))} | {' '.join(str(e['why']).split())} | "
                   + (f"`{name}` ({LARGE_CONFIG})" if name and not str(name).startswith("facebook-")
                      else f"`{name}`" if name else "-") + " |")
    return "\n".join(out) + "\n"


def _eps_key(v: Any) -> float:
    if v is None:
        return math.inf
    return float(v)


def paper_row(rows: Iterable[Any], dataset: str, split: str, method: str, eps: float) -> Any | None:
    """The leaderboard row a paper cell compares with (no hyperparameter variants: the config's main row)."""
    cands = [r for r in rows if r.dataset == dataset and r.split == split and r.method == method
             and (r.target_epsilon == eps or (math.isinf(eps) and math.isinf(r.target_epsilon)))]
    plain = [r for r in cands if not r.variant]
    return (plain or cands or [None])[0]


#: when ours reproduces a paper's number: the "reproduced" column of "Papers vs ours" and the filled stars of the
#: privacy-utility plots both read :func:`reproduces`. An equivalence test (two one-sided t-tests, Schuirmann 1987)
#: rather than "the paper's number inside our interval", which punishes precision (a tight interval 0.8 points off
#: fails, a loose one 1.2 points off passes) and cannot say "different"
MARGIN_POINTS = 2.0
#: the level of each one-sided test (so the interval compared is the two-sided 90% t-interval of our mean)
TOST_ALPHA = 0.05
REPRODUCED_RULE = (f"two one-sided t-tests over our seeds, each at level {TOST_ALPHA:g}: yes when they show our mean "
                   f"within {MARGIN_POINTS:g} points of the paper's (the {100 * (1 - 2 * TOST_ALPHA):g}% t-interval "
                   f"of the difference lies inside +-{MARGIN_POINTS:g}), no when the interval lies wholly beyond a "
                   "margin, inconclusive otherwise (more seeds decide it)")


def difference_interval(row: Any | None, paper: float) -> tuple[float, float] | None:
    """The two-sided ``1 - 2 * TOST_ALPHA`` t-interval of ours minus the paper, in points (None with fewer than two
    seeds)."""
    import statistics

    from scipy.stats import t

    if row is None or not row.accs or len(row.accs) < 2:
        return None
    xs = [100 * float(a) for a in row.accs]
    n, mean, sd = len(xs), statistics.fmean(xs), statistics.stdev(xs)
    half = float(t.ppf(1 - TOST_ALPHA, n - 1)) * sd / math.sqrt(n)
    return mean - half - float(paper), mean + half - float(paper)


def reproduces(row: Any | None, paper: float) -> bool | None:
    """Whether ``row`` reproduces a paper's accuracy ``paper`` (percent), by :data:`REPRODUCED_RULE`: True (shown
    within the margin), False (shown beyond it), None where nothing decides it (no run, one seed, or an interval
    that straddles a margin)."""
    iv = difference_interval(row, paper)
    if iv is None:
        return None
    lo, hi = iv
    if -MARGIN_POINTS <= lo and hi <= MARGIN_POINTS:
        return True
    if lo > MARGIN_POINTS or hi < -MARGIN_POINTS:
        return False
    return None


@dataclass(frozen=True)
class PaperCell:
    """One paper number of ``configs/papers.yaml`` with the leaderboard row it is compared with."""

    paper: str
    #: the paper as a plot's legend names it (the section's ``short``, else its ``paper``)
    short: str
    dataset: str
    split: str
    method: str
    #: the target epsilon of the row compared: None = a non-private method, inf = a private one run without noise
    target: float | None
    #: the paper's own epsilon (``paper_epsilon`` where the paper reports one, else the target)
    epsilon: float | None
    accuracy: float
    reason: str
    row: Any | None
    reproduced: bool | None
    #: the method run at the paper's own setting (``setting_method``, else ``method``: the paper's GCN is our `rw`)
    setting_method: str = ""
    #: what still differs at the paper's setting (``differs``: keys of ``reasons`` or sentences, ``;``-separated)
    differs: str = ""
    #: the row of the settings export at the paper's setting, and its verdict (None where not run)
    setting_row: Any | None = None
    setting_reproduced: bool | None = None
    #: the target epsilon the paper-setting row ran at (``setting_epsilon``, else ``target``): a paper's own noise
    #: parameter can spend more than the cell's target under a sound account (PrivGNN's lambda 0.2)
    setting_target: float | None = None
    #: the name the paper-setting table gives the row (``setting_label``, else the method's)
    setting_label: str = ""
    #: a cell only the paper's setting runs (``setting_only``: e.g. the authors' code, which no tuned row runs):
    #: left out of the tuned table and the plots
    setting_only: bool = False
    #: the paper-setting row adds noise under a ledger that gives no guarantee (``not_private``: the authors' code of
    #: PrivGNN, noise on unbounded log-probabilities); it runs with no target (inf)
    not_private: bool = False


def paper_cells(rows: Iterable[Any], sec: dict[str, Any], setting_rows: Iterable[Any] = ()) -> list[PaperCell]:
    """The cells of one paper section, each matched to its tuned row and its row at the paper's own setting
    (:func:`paper_row`) and judged (:func:`reproduces`): what "Papers vs ours" prints and the plots draw."""
    rows, setting_rows = list(rows), list(setting_rows)
    out = []
    for cell in sec["cells"]:
        target = _eps_key(cell["epsilon"]) if "epsilon" in cell else None
        eps = math.inf if target is None else target
        only = bool(cell.get("setting_only", False))
        row = None if only else paper_row(rows, sec["dataset"], sec["split"], cell["method"], eps)
        method = str(cell.get("setting_method") or cell["method"])
        at_target = _eps_key(cell["setting_epsilon"]) if "setting_epsilon" in cell else target
        at = paper_row(setting_rows, sec["dataset"], sec["split"], method, math.inf if at_target is None else at_target)
        paper = float(cell["paper"])
        own = cell.get("paper_epsilon")
        label = str(cell.get("setting_label") or "") or (
            method + (f" (the paper's {cell['method']})" if method != cell["method"] else ""))
        out.append(PaperCell(sec["paper"], str(sec.get("short") or sec["paper"]), sec["dataset"], sec["split"],
                             cell["method"], target, float(own) if own is not None else target, paper,
                             str(cell.get("reason", "")), row, None if only else reproduces(row, paper), method,
                             str(cell.get("differs", "")), at, reproduces(at, paper), at_target, label, only,
                             bool(cell.get("not_private", False))))
    return out


def _ours(row: Any | None, paper: float) -> tuple[str, str, str, str]:
    """(ours with its CI and seeds, spent epsilon, difference with its t-interval, verdict) of one row."""
    if row is None or not row.accs:
        return "not run yet", "not run yet", "not run yet", "-"
    acc = 100 * row.acc_mean
    ours = f"{acc:.1f}" + (f" [{100 * row.ci[0]:.1f}, {100 * row.ci[1]:.1f}]" if row.ci else "") \
        + f" ({len(row.accs)} seed{'s' if len(row.accs) != 1 else ''})"
    spent = "-" if row.unit == "none" else ("inf" if math.isinf(row.spent_max) else f"{row.spent_max:.3g}")
    iv = difference_interval(row, paper)
    diff = f"{acc - paper:+.1f}" + (f" [{iv[0]:+.1f}, {iv[1]:+.1f}]" if iv else "")
    verdict = "-" if len(row.accs) < 2 else {True: "yes", False: "no", None: "inconclusive"}[reproduces(row, paper)]
    return ours, spent, diff, verdict


def _target_text(target: float | None, not_private: bool = False) -> str:
    """A cell's target epsilon as the tables print it: '-' for a non-private method, 'inf (no noise)' for a private
    one run without noise, 'none (not private)' for a noisy release whose ledger gives no guarantee."""
    if not_private:
        return "none (not private)"
    return "-" if target is None else "inf (no noise)" if math.isinf(target) else f"{target:g}"


def papers_md(rows: list[Any], papers: dict[str, Any] | None = None,
              setting_rows: list[Any] | None = None) -> str:
    """Two tables per paper section: the paper's number beside the tuned leaderboard row, and beside the same method
    run at the paper's own setting (``setting`` of the section, a config under ``configs/papers/``; its runs are
    ``setting_rows``): ours (mean and 95% CI over seeds, spent epsilon), the difference in points, whether ours
    reproduces it (:func:`reproduces`), and why the two may differ or what still differs."""
    papers = papers if papers is not None else load_papers()
    if not papers["papers"]:
        return ""
    setting_rows = list(setting_rows or [])
    reasons = papers["reasons"]
    used: list[str] = []

    def why(text: str) -> str:
        parts = [x.strip() for x in text.split(";") if x.strip()]
        used.extend(x for x in parts if x in reasons and x not in used)
        return "; ".join(parts) or "-"

    out = ["## Papers vs ours", "",
           "The papers' headline numbers next to the matching rows above (accuracy in percent; difference = ours - "
           "paper, in points, with its t-interval). Ours is the mean over the row's seeds; 'not run yet' where the "
           f"export holds no run. Reproduced: {REPRODUCED_RULE}; '-' with fewer than two seeds. The plots draw each "
           "private paper number as a star at the paper's epsilon, filled where reproduced, hollow where not, "
           "half-filled where undecided (the tuned rows' verdict). Under each section, the same numbers against our "
           "runs at the paper's own setting (its delta, batch size, model, optimizer, split, degree bound, epochs and "
           "number of seeds; the config it names), with what still differs.",
           ""]
    present = {(r.dataset, r.split) for r in rows}
    sections = [sec for sec in papers["papers"] if (sec["dataset"], sec["split"]) in present]
    if not sections:
        return ""
    for sec in sections:
        cells = paper_cells(rows, sec, setting_rows)
        out += [f"### {sec['paper']}: ours on {sec['dataset']} ({sec['split']})", "",
                "Tuned leaderboard rows:", "",
                "| method | target eps | paper | ours (95% CI) | ours spent eps | difference [90% t-interval] | reproduced | "
                "why they may differ |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for c in cells:
            if c.setting_only:
                continue
            paper_txt = f"{c.accuracy:.1f}"
            if c.epsilon is not None and c.epsilon != c.target:
                paper_txt += f" (paper's eps {c.epsilon:g})"
            ours, spent, diff, verdict = _ours(c.row, c.accuracy)
            out.append(f"| {c.method} | {_target_text(c.target)} | {paper_txt} | {ours} | {spent} | {diff} | "
                       f"{verdict} | {why(c.reason)} |")
        out.append("")
        if sec.get("setting"):
            out += [f"At the paper's setting (`{sec['setting']}`; `bench leaderboard --run {sec['setting']} --site "
                    "docs/paper-settings --no-track` re-runs it):", "",
                    "| method | target eps | paper | ours at the paper's setting (95% CI) | ours spent eps | "
                    "difference [90% t-interval] | reproduced | what still differs |",
                    "| --- | --- | --- | --- | --- | --- | --- | --- |"]
            for c in cells:
                ours, spent, diff, verdict = _ours(c.setting_row, c.accuracy)
                out.append(f"| {c.setting_label} | {_target_text(c.setting_target, c.not_private)} | "
                           f"{c.accuracy:.1f} | {ours} | {spent} | {diff} | {verdict} | {why(c.differs)} |")
            out.append("")
    if used:
        out += ["Reasons:", ""] + [f"* {k}: {' '.join(str(reasons[k]).split())}" for k in used] + [""]
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# What the page was built from
# --------------------------------------------------------------------------------------


def _when(ms: Any) -> str:
    try:
        return _dt.datetime.fromtimestamp(float(ms) / 1000, _dt.timezone.utc).strftime("%Y-%m-%d")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _shown(path: str | None) -> str | None:
    """``path`` as a reader should type it: relative to the working directory when it lies under it, so a page
    built by a script with absolute paths names the same files as one built by hand."""
    if not path:
        return path
    slash = "/" if str(path).endswith(("/", os.sep)) else ""  # a sharded export (a directory) says so
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve())) + slash
    except ValueError:
        return str(path)


def provenance_md(records: list[dict[str, Any]], export: str | None, config: str | None = None,
                  planned: int | None = None, done: int | None = None) -> str:
    """Paragraphs: the records the page holds, the machines and compute they took, the grid's progress and where
    the hyperparameters come from."""
    export, config = _shown(export), _shown(config)
    runs = [r for r in records if r.get("kind", "run") == "run" and r.get("status", "FINISHED") == "FINISHED"]
    checks = [r for r in records if r.get("kind") in ("verify", "audit") and r.get("status", "FINISHED") == "FINISHED"]
    fit = sum(float(r.get("metrics", {}).get("fit_seconds") or 0) for r in runs)
    machines = sorted({r.get("params", {}).get("host") for r in runs if r.get("params", {}).get("host")})
    devices = sorted({r.get("params", {}).get("device") for r in runs if r.get("params", {}).get("device")})
    attacks = [r for r in records if r.get("kind") == "edge-attack" and r.get("status", "FINISHED") == "FINISHED"]
    features = [r for r in records if r.get("kind") == "feature-attack" and r.get("status", "FINISHED") == "FINISHED"]
    whitebox = [r for r in records if r.get("kind") == "whitebox-audit" and r.get("status", "FINISHED") == "FINISHED"]
    records = [r for r in records if r.get("kind") not in (*ATTACK_KINDS, "whitebox-audit")]
    commits = sorted({(r.get("git_commit") or "?")[:10] for r in records})
    starts = [r.get("start_time") for r in records if r.get("start_time")]
    paras = []
    src = f"`{export}`" if export else "the MLflow store"
    rebuild = f"`bench leaderboard --site {Path(export).parent}`" if export else "`bench leaderboard --site DIR`"
    paras.append(f"Built from {src}: {len(runs)} training runs and {len(checks)} verifications or audits "
                 f"(one record each, with its params, released metrics and ledger). {rebuild} rebuilds this page "
                 "from the export alone; `bench sweep CONFIG --export FILE` resumes the grid from it on any machine.")
    if config:
        prog = f" {done} of {planned} cells are done" if planned else ""
        paras.append(f"Grid: `{config}`;{prog}. Regenerate everything with `bench leaderboard --run {config} "
                     f"--site {Path(export).parent if export else 'DIR'}` (resumable; it reads the checked-in tuned "
                     "hyperparameters, `configs/hparams_tuned.yaml`, which `python -m scripts.tune` rewrites from the "
                     "grids of `configs/tuning.yaml`; `python -m scripts.build_leaderboard` does both, dataset by "
                     "dataset)."
                     + (" Rows still missing cells are partial: their seed count says so." if planned and done is not
                        None and done < planned else "") + _previous_text(records))
    if starts:
        first, last = _when(min(starts)), _when(max(starts))
        paras.append(f"Compute: {_hours(fit)} of training (the sum of the runs' fit times) "
                     + (f"on {first}" if first == last else f"between {first} and {last}") + ", on "
                     + (", ".join(machines) if machines else "machines not recorded")
                     + (f" (devices: {', '.join(devices)})" if devices else "")
                     + f"; code {', '.join(commits[:6])}{' ...' if len(commits) > 6 else ''}.")
    def attacked(recs: list[dict[str, Any]]) -> str:
        """How many records attacked the recorded run's own released model, and how many a labelled refit."""
        from bench import release

        own = sum(r.get("attacked_model") in (release.SOURCE_RECORDED, release.SOURCE_REEXECUTED) for r in recs)
        text = f"{own} of them attack the recorded run's released model, loaded from the artefact the run logged"
        if own < len(recs):
            text += (f"; {len(recs) - own} attack a refit (records from before runs logged their model; the row says "
                     "'attacked: refit ...')")
        return text

    if attacks:
        secs = sum(sum((r.get("seconds") or {}).values()) for r in attacks)
        paras.append(f"Edge attacks: {len(attacks)} runs of the attack seeds (edge-level rows and the non-private "
                     "references on their split), each attacked with link stealing and LinkTeller on held-out edges "
                     f"and non-edges (`python -m scripts.unit_attacks`, records in `attacks/edge.jsonl`); "
                     f"{attacked(attacks)}; {_hours(secs)} of attacks; code "
                     f"{', '.join(sorted({(r.get('git_commit') or '?')[:10] for r in attacks}))}. No epsilon is "
                     "derived from them: an attack on one model is not a game between neighbouring datasets.")
    if features:
        secs = sum(sum((r.get("seconds") or {}).values()) for r in features)
        paras.append(f"Feature attacks: {len(features)} runs of the attack seeds, each attacked in the two feature "
                     "games (`python -m scripts.unit_attacks --level feature`, records in `attacks/feature.jsonl`): "
                     "weights only (which of two rows, a training node's own or an unfitted class-mate's, the node "
                     "held, from the released model's weights: what feature-level DP bounds) and released predictions "
                     "(the same, seeing the node's served posterior: what it does not bound); "
                     f"{attacked(features)}; {_hours(secs)} of attacks; code "
                     f"{', '.join(sorted({(r.get('git_commit') or '?')[:10] for r in features}))}.")
    if whitebox:
        pooled = [r for r in whitebox if (r.get("whitebox") or {}).get("source") == "pooled"]
        paras.append(f"White-box bounds: {len(whitebox)} private cells (seed 0) carry two white-box epsilon lower "
                     "bounds (`python -m scripts.whitebox_audits`, records in `attacks/whitebox.jsonl`), one that "
                     "assumes nothing (Clopper-Pearson) and one that assumes the mechanism's trade-off family (f-DP; "
                     "GDP for Gaussian releases), each read against the claim of the row's seed-0 run: GAP, ProGAP, "
                     "EdgeRand, PrivGNN and PATE rows from the mechanism-level audits of that run's own ledger events, "
                     "composed as privacy-loss distributions (at node level only GAP's NAP releases, not its DP-SGD "
                     f"heads); {len(pooled)} DP-SGD cells from a whole-run pooled audit of fresh runs of the "
                     "configuration (`bench audit --level whitebox`; the cell names them and their claim; on "
                     f"{', '.join(sorted({(r.get('params') or {}).get('dataset', '?') for r in pooled})) or 'no dataset yet'}). "
                     f"{_hours(sum(float(r.get('seconds') or 0) for r in whitebox))} of audits; code "
                     f"{', '.join(sorted({(r.get('git_commit') or '?')[:10] for r in whitebox}))}.")
    sources: dict[str, int] = {}
    for r in runs:
        s = r.get("params", {}).get("hp_source") or "defaults"
        kind = "tuned" if TUNED_LABEL in s or "(tuned" in s else "paper" if "(paper" in s else \
            "measured" if "(measured" in s else "defaults"
        sources[kind] = sources.get(kind, 0) + 1
    if sources:
        parts = {"paper": "the paper's stated values (configs/hparams.yaml)",
                 "tuned": f"tuned: chosen on mean validation accuracy over {_seeds_text(tuning_seeds())} from the "
                          f"grids of configs/tuning.yaml (configs/hparams_tuned.yaml) -- {TUNED_LABEL}"
                          + _disjoint_text(tuning_seeds(), runs),
                 "measured": "settings from an earlier one-seed measurement (configs/hparams.yaml)",
                 "defaults": "the method's defaults (the papers' values where they state them)"}
        paras.append("Hyperparameters: " + "; ".join(f"{n} run{'s' if n != 1 else ''}: {parts[k]}"
                                                     for k, n in sorted(sources.items()))
                     + ". Validation accuracy is a diagnostic (private labels no ledger covers): it chose settings and "
                       "is not released here.")
    return "\n\n".join(paras)


def _previous_text(records: list[dict[str, Any]]) -> str:
    """How many rows show a previous setting's records (:func:`bench.leaderboard.config_records`)."""
    from bench.records import row_key

    rows = {row_key(r) for r in records if r.get("previous_setting")}
    if not rows:
        return ""
    return (f" {len(rows)} row{'s' if len(rows) != 1 else ''} marked '(previous setting)' show the runs of the "
            "hyperparameters chosen before the current tuning, until the current setting's cells are run.")


TUNING_PATH = Path(__file__).resolve().parents[1] / "configs" / "tuning.yaml"


def tuning_seeds(path: str | os.PathLike | None = None) -> list[int]:
    """The seeds the tuned hyperparameters were chosen on (``configs/tuning.yaml``); empty without the file."""
    import yaml

    p = Path(path) if path is not None else TUNING_PATH
    if not p.is_file():
        return []
    return [int(x) for x in (yaml.safe_load(p.read_text()) or {}).get("seeds") or []]


def _seeds_text(seeds: list[int]) -> str:
    return f"seeds {', '.join(map(str, seeds))}" if seeds else "the tuning seeds"


def _disjoint_text(tuning: list[int], runs: list[dict[str, Any]]) -> str:
    """Whether the seeds the page reports are disjoint from the tuning seeds, stated either way."""
    reported = sorted({int(r["params"]["seed"]) for r in runs if str((r.get("params") or {}).get("seed", "")).isdigit()})
    if not tuning or not reported:
        return ""
    shared = sorted(set(tuning) & set(reported))
    if shared:
        return f" (NOT disjoint from the reported seeds: {', '.join(map(str, shared))} were also tuned on)"
    return f", disjoint from the seeds reported here ({', '.join(map(str, reported))})"


def site_texts(rows: list[Any], export: str | None, config: str | None = None,
               records: list[dict[str, Any]] | None = None, planned: int | None = None,
               done: int | None = None, setting_rows: list[Any] | None = None) -> tuple[str, str, str]:
    """(title, intro markdown, closing markdown) of the published leaderboard: the closing sections are "Papers vs
    ours" and, when the site holds a regeneration's progress file beside its export, "Cost of this leaderboard"
    (:mod:`bench.leaderboard.cost`)."""
    from bench.leaderboard.cost import site_cost_md

    if records is None:
        from bench import records as rec

        records = rec.load(export) if export and Path(export).exists() else []
    cost = site_cost_md(Path(str(export).rstrip("/")).parent) if export else ""
    closing = "\n".join(x.rstrip("\n") for x in (papers_md(rows, setting_rows=setting_rows), absent_md(), cost)
                        if x.strip())
    return TITLE, provenance_md(records, export, config, planned, done), closing


__all__ = ["ABSENT_HEADING", "REPRODUCED_RULE", "absent_md", "PaperCell", "SiteError", "load_papers", "load_setting_records", "paper_cells", "paper_row", "papers_md",
           "provenance_md", "reproduces", "site_texts"]
