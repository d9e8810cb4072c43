"""``bench leaderboard --check EXPORT``: does every published record say what its own contents say?

Each line of an export (a file or a directory of per-dataset files, :mod:`bench.records`) is checked on its own:

* fields: the ones every record kind needs (identity, status, commit, parameters; a run's ledger, test accuracy
  and epsilon);
* epsilon: a run's published ``metrics.epsilon`` equals the epsilon recomputed from its ledger at its delta with
  the accountant it names (:func:`bench.records.spent_epsilon`), and the target is at least what was spent;
* recipe: a ledger stamped with the family function that built it (``methods.privacy.presets``) is what that
  function rebuilds from the stamped parameters;
* delta: at most the rule's value, the largest power of ten below 1 / #privacy units (the count a run logs as
  ``privacy_units``, public by convention: the published dataset's size; for records older than that parameter,
  counted on the dataset when it can be loaded); the conventions a run states (``noise``,
  ``conventions.delta_units``) agree with its ``secure_noise`` and ``privacy_units``;
* rates: attack AUCs and TPRs lie in [0, 1]; verification and audit lower bounds are >= 0, their alphas in [0, 1];
* white-box bounds (``whitebox-audit`` records of ``scripts.whitebox_audits``): both lower bounds, assumption-free
  and f-DP (with the family it assumes), in [0, claimed], and no PASS whose realised pair exceeds the claim;
* unit attacks (``edge-attack`` and ``feature-attack`` records of ``scripts.unit_attacks``, e.g.
  ``docs/leaderboard/attacks``): which model was attacked, rates in [0, 1], the TPR its counts give, at most 1%
  FPR, and no epsilon (an attack on one model is not a game between neighbouring datasets);
* manifest: the export holds exactly the records its manifest (:mod:`bench.manifest`, written by the page build
  and at a sweep's end) lists, each unedited: a record deleted, added or edited within its ranges since fails;
* commit: the record names a commit of this repository's history (an ancestor of HEAD) without ``-dirty``.
  Records started before :data:`DIRTY_CUTOFF` that name a dirty commit are counted, not failed: they are
  regenerated when the whole leaderboard is next rebuilt. A newer one fails. ``strict`` drops that exemption (and
  needs the history: a shallow clone or no git is bad input rather than a note); ``release=TAG`` (strict too)
  requires every record to name exactly the commit the git tag ``TAG`` points to: an export regenerated from a
  release (``scripts.regenerate``) carries no other. A record made where there was no git (a lent accelerator's
  copy) names its commit by a manifest (:mod:`bench.gitless`) and carries the tree its files hashed to
  (``code_tree``): that must be the commit's tree.

:func:`check_export` returns a :class:`CheckReport`; the command prints one line per failing record and a summary
and exits 1 when any record fails.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from bench import manifest
from bench.records import ATTACK_KINDS
from bench.version import RELEASES_FILE, cited_release, registered_releases, release_commit
from methods.errors import BenchError

#: records started from this instant on (ms since the epoch; 2026-11-25 00:00 UTC) must name a clean commit
DIRTY_CUTOFF = 1795564800000
#: the repository whose history the commits are looked up in (this package's checkout)
REPO = Path(__file__).resolve().parents[1]
REQUIRED = ("cell_id", "kind", "run_id", "status", "name", "git_commit", "start_time", "params")
RUN_PARAMS = ("method", "dataset", "split", "seed", "privacy_unit", "target_epsilon", "delta")
RTOL = 1e-9
#: how far an epsilon recomputed from a record's ledger may sit from the published one (relative): the accountants'
#: floating-point results differ slightly between CPUs (vectorised code sums in another order): the v1.0.2 records
#: recomputed on an AVX-512 machine differ from the publishing machine's by up to 4.1e-9; 1e-7 is far above that and
#: far below the 3-4 significant figures the page shows
EPS_RTOL = 1e-7


@dataclass
class CheckReport:
    checked: int = 0
    runs: int = 0
    epsilons: int = 0  # runs whose epsilon was recomputed from their ledger
    failures: list[tuple[str, list[str]]] = field(default_factory=list)  # (where, problems)
    legacy_dirty: int = 0
    strict: bool = False
    release: str | None = None  # "TAG (sha)[, TAG (sha)]" when every record must name one of those commits
    delta_unchecked: dict[str, int] = field(default_factory=dict)  # dataset -> runs whose unit count is unknown
    commits_checked: bool = True
    notes: list[str] = field(default_factory=list)
    planned: int | None = None  # cells of the --config grid, when one was given
    manifest: tuple[str, int] | None = None  # the manifest compared (path, records it lists)

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        lines = [f"# checked {self.checked} records ({self.runs} runs): {len(self.failures)} failing; epsilon "
                 f"recomputed from the ledger for {self.epsilons} runs"]
        if self.release:
            lines.append(f"# release {self.release}: every record must name {'this commit' if ',' not in self.release else 'one of these commits'}, clean")
        elif self.strict:
            lines.append("# strict: every record must name a clean commit of this history (no legacy exemption)")
        if self.legacy_dirty:
            lines.append(f"# {self.legacy_dirty} records from before the clean-commit rule name a -dirty commit; "
                         "they are regenerated when the leaderboard is next rebuilt")
        for ds, n in sorted(self.delta_unchecked.items()):
            lines.append(f"# delta rule not checked for {n} runs of {ds}: they predate the privacy_units parameter "
                         "and the dataset is not on this machine (set BENCH_DATA_ROOT)")
        if self.manifest is not None:
            lines.append(f"# manifest {self.manifest[0]}: the export must hold exactly its {self.manifest[1]} records, "
                         "unedited")
        if self.planned is not None:
            lines.append(f"# the config's grid: {self.planned} cells, each must have a finished record")
        lines += [f"# {n}" for n in self.notes]
        return "\n".join(lines)


def _float(v: Any) -> float:
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v)  # "inf", "0.0001"
    return float(v)


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-12)


class _Commits:
    """Which commits are in this repository's history (ancestors of HEAD), asked once per commit."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.known: dict[str, bool] = {}
        self.trees: dict[str, str | None] = {}
        self.shallow = False
        try:
            out = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=repo, capture_output=True,
                                 text=True, timeout=10)
            self.available = out.returncode == 0 and out.stdout.strip() == "true"
            if self.available:  # a shallow clone lacks the history a commit is looked up in
                shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=repo,
                                         capture_output=True, text=True, timeout=10)
                self.shallow = shallow.stdout.strip() == "true"
        except (OSError, subprocess.SubprocessError):
            self.available = False

    def tree_of(self, sha: str) -> str | None:
        """The root tree id of commit ``sha`` (None when this history lacks it)."""
        if sha not in self.trees:
            r = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{sha}^{{tree}}"], cwd=self.repo,
                               capture_output=True, text=True, timeout=30)
            self.trees[sha] = r.stdout.strip() if r.returncode == 0 else None
        return self.trees[sha]

    def in_history(self, sha: str) -> bool:
        if sha not in self.known:
            r = subprocess.run(["git", "merge-base", "--is-ancestor", sha, "HEAD"], cwd=self.repo,
                               capture_output=True, text=True, timeout=30)
            self.known[sha] = r.returncode == 0
        return self.known[sha]


class _Units:
    """The number of privacy units of a record's task, for the delta rule: its ``privacy_units`` parameter, else
    counted on the dataset (loaded once) when it can be loaded, else None."""

    def __init__(self) -> None:
        self.cache: dict[tuple, int | None] = {}

    def __call__(self, params: dict[str, Any]) -> int | None:
        if params.get("privacy_units") not in (None, ""):
            return int(params["privacy_units"])
        key = (params.get("dataset"), params.get("split"), params.get("privacy_unit"), int(params.get("seed", 0)))
        if key not in self.cache:
            self.cache[key] = self._count(*key)
        return self.cache[key]

    @staticmethod
    def _count(dataset: str, split: str, unit: str, seed: int) -> int | None:
        try:
            from bench.datasets import is_available, load_dataset
            from bench.run import privacy_units
            from bench.splits import make_task

            if not is_available(dataset):  # found locally: a check never downloads a dataset
                return None
            return privacy_units(make_task(load_dataset(dataset), split, seed), unit)
        except BenchError:
            return None


def check_record(rec: dict[str, Any], commits: _Commits | None = None, units: _Units | None = None,
                 report: CheckReport | None = None, strict: bool = False,
                 release: tuple[str, str] | list[tuple[str, str]] | None = None) -> list[str]:
    """The problems of one record (empty: it checks out); ``strict`` and ``release`` ((tag, sha) or a list): the commit rule
    of :func:`check_export`."""
    from bench.records import KINDS

    problems = [f"no {k}" for k in REQUIRED if rec.get(k) in (None, "")]
    kind, params = rec.get("kind"), rec.get("params") or {}
    if kind and kind not in KINDS:
        problems.append(f"unknown kind {kind!r}")
    if rec.get("status") not in (None, "FINISHED"):
        return problems  # only finished records are published numbers
    if kind == "run":
        problems += [f"no params.{k}" for k in RUN_PARAMS if params.get(k) in (None, "")]
        metrics = rec.get("metrics") or {}
        problems += [f"no metrics.{k}" for k in ("test_acc", "epsilon") if metrics.get(k) is None]
        if not rec.get("ledger"):
            problems.append("no ledger: its epsilon cannot be recomputed")
        elif not problems:
            problems += _check_ledger(rec, metrics, params, units, report)
        problems += _check_conventions(params)
        problems += _check_metrics(metrics)
        for name, variants in (rec.get("attacks") or {}).items():
            for variant, vals in (variants or {}).items():
                for k in ("auc", "tpr_at_1pct_fpr"):
                    v = _float((vals or {}).get(k))
                    if (vals or {}).get(k) is not None and not 0.0 <= v <= 1.0:
                        problems.append(f"attack {name}.{variant} {k} = {v} is not a rate in [0, 1]")
    elif kind in ATTACK_KINDS:
        problems += [f"no params.{k}" for k in RUN_PARAMS if params.get(k) in (None, "")]
        problems += _check_unit_attacks(rec, params)
    elif kind == "whitebox-audit":
        problems += [f"no params.{k}" for k in RUN_PARAMS if params.get(k) in (None, "")]
        problems += _check_whitebox(rec)
    elif kind == "verify":
        ver = rec.get("verify") or {}
        if ver.get("verdict") not in ("PASS", "VIOLATION", "INCONCLUSIVE", "NOT APPLICABLE"):
            problems.append(f"verification verdict {ver.get('verdict')!r} is not PASS, VIOLATION, INCONCLUSIVE or "
                            "NOT APPLICABLE")
        for c in ver.get("checks") or []:
            problems += _check_bounds(f"check {c.get('name')}", c.get("epsilon_lb"), c.get("alpha"))
    elif kind == "audit":
        m = rec.get("metrics") or {}
        problems += _check_bounds("audit", m.get("epsilon_lb"), None)
    problems += _check_commit(rec, commits, report, strict, release)
    return problems


#: metrics of a run record that are rates (a fraction of nodes): each must be a number in [0, 1]
RATE_METRICS = ("test_acc", "test_macro_f1", "val_acc", "val_macro_f1", "train_acc")


def _check_metrics(metrics: dict) -> list[str]:
    """Rates in [0, 1] and a spent epsilon that is a number >= 0 (inf: no guarantee)."""
    problems = []
    for k in RATE_METRICS:
        if metrics.get(k) is not None and not 0.0 <= _float(metrics[k]) <= 1.0:
            problems.append(f"metrics.{k} = {metrics[k]} is not a rate in [0, 1]")
    eps = _float(metrics.get("epsilon"))
    if metrics.get("epsilon") is not None and not eps >= 0.0:
        problems.append(f"metrics.epsilon = {metrics['epsilon']} is not a number >= 0")
    return problems


def _check_ledger(rec: dict, metrics: dict, params: dict, units: _Units | None,
                  report: CheckReport | None) -> list[str]:
    from bench.records import accountant_of, ledger_of, spent_epsilon
    from methods.base import default_delta
    from methods.privacy import LedgerError
    from methods.privacy import presets as P

    problems = []
    try:
        ledger = ledger_of(rec)
        eps = spent_epsilon(rec)
    except (BenchError, KeyError, TypeError, ValueError) as e:
        return [f"ledger cannot be read or accounted ({type(e).__name__}: {e})"]
    if report is not None:
        report.epsilons += 1
    published = _float(metrics.get("epsilon"))
    if not (math.isfinite(eps) and math.isfinite(published) and math.isclose(eps, published, rel_tol=EPS_RTOL)
            or eps == published):
        problems.append(f"published epsilon {published:.6g} but the ledger gives {eps:.6g} ({accountant_of(rec)}, "
                        f"delta {params.get('delta')})")
    target = _float(params.get("target_epsilon"))
    if not eps <= target * (1 + EPS_RTOL):
        problems.append(f"spent epsilon {eps:.6g} exceeds the target {target:g}")
    if ledger.recipe is not None:
        try:
            rebuilt = P.rebuild(ledger.recipe)
            if not rebuilt.same_events(ledger):
                problems.append(f"the ledger's recipe ({ledger.recipe.family}) rebuilds {rebuilt.describe()}, not the "
                                f"logged {ledger.describe()}")
        except LedgerError as e:
            problems.append(f"the ledger's recipe does not rebuild: {e}")
    delta = _float(params.get("delta"))
    if math.isfinite(target) and ledger.non_private_use is None:
        n = units(params) if units is not None else (int(params["privacy_units"]) if params.get("privacy_units")
                                                     else None)
        if n is None:
            if report is not None:
                ds = str(params.get("dataset"))
                report.delta_unchecked[ds] = report.delta_unchecked.get(ds, 0) + 1
        elif not delta <= default_delta(n) * (1 + RTOL):
            problems.append(f"delta {delta:g} is above the rule's {default_delta(n):g} for {n} privacy units")
    return problems


def _check_conventions(params: dict) -> list[str]:
    """The conventions a run record states (``noise``, ``conventions.delta_units``:
    :func:`bench.plan.convention_params`) say what its params say: the noise mode its ``secure_noise`` ran, and the count its ``privacy_units`` publishes.
    A record from before runs stated them is read from those params (:func:`bench.records.conventions_of`)."""
    from bench.records import CONVENTION_PREFIX, DELTA_UNITS, NOISE, noise_text

    problems = []
    stated = params.get(NOISE)
    if stated not in (None, ""):
        want = noise_text(params.get("secure_noise"), str(params.get("privacy_unit") or "none") != "none")
        if str(stated).split(" ", 1)[0] != want.split(" ", 1)[0]:
            problems.append(f"noise {str(stated).split(' ', 1)[0]!r} but secure_noise is "
                            f"{params.get('secure_noise')!r}")
    named = params.get(CONVENTION_PREFIX + DELTA_UNITS)
    if named not in (None, "") and not str(named).startswith(f"privacy_units = {params.get('privacy_units')}:"):
        problems.append(f"{CONVENTION_PREFIX}{DELTA_UNITS} names another count than privacy_units "
                        f"{params.get('privacy_units')!r}: {str(named)[:60]!r}")
    return problems


def _check_unit_attacks(rec: dict, params: dict) -> list[str]:
    """An ``edge-attack`` or ``feature-attack`` record (``scripts.unit_attacks``): it names the run it attacked and
    which model it saw (:mod:`bench.release`: the recorded artefact, or a labelled refit), rates in [0, 1], the TPR
    and FPR its counts give, FPR at most 1%, and no epsilon: an attack on one trained model is not a game between
    neighbouring datasets, so no epsilon follows from its rates."""
    from bench import release

    problems = []
    if not rec.get("target_config_hash") and not params.get("config_hash"):
        problems.append("no target_config_hash: the run it attacks is not named")
    sources = (release.SOURCE_RECORDED, release.SOURCE_REEXECUTED, release.SOURCE_REFIT)
    if rec.get("attacked_model") not in sources:
        problems.append(f"attacked_model {rec.get('attacked_model')!r} does not say which model was attacked (one of "
                        f"{', '.join(map(repr, sources))})")
    for name, variants in (rec.get("attacks") or {}).items():
        for variant, vals in (variants or {}).items():
            vals, what = vals or {}, f"attack {name}.{variant}"
            for k in ("auc", "tpr_at_1pct_fpr"):
                v = _float(vals.get(k))
                if not 0.0 <= v <= 1.0:
                    problems.append(f"{what} {k} = {v} is not a rate in [0, 1]")
            for k in vals:
                if "eps" in k.lower():
                    problems.append(f"{what} carries {k}: an attack on one model bounds no epsilon")
            try:
                tp, pos, fp, neg = (int(vals[k]) for k in ("tp", "members", "fp", "non_members"))
                if not (0 <= tp <= pos and 0 <= fp <= neg and pos > 0 and neg > 0):
                    raise ValueError(f"tp={tp} of {pos}, fp={fp} of {neg}")
            except (KeyError, TypeError, ValueError) as e:
                problems.append(f"{what}: counts missing or out of range ({e})")
                continue
            if not _close(tp / pos, _float(vals.get("tpr_at_1pct_fpr"))):
                problems.append(f"{what}: tpr_at_1pct_fpr {vals.get('tpr_at_1pct_fpr')} but the counts give {tp}/{pos}")
            if fp > 0.01 * neg + 1e-9:
                problems.append(f"{what}: {fp} false positives of {neg} is above 1% FPR")
    for k in rec:
        if "eps" in k.lower():
            problems.append(f"the record carries {k}: an attack on one model bounds no epsilon")
    return problems


def _check_whitebox(rec: dict) -> list[str]:
    """A ``whitebox-audit`` record (``scripts.whitebox_audits``): a named target run, a known source, both lower bounds
    (``epsilon_lb_cp``, assumption-free; ``epsilon_lb_fdp`` with what its family assumes, ``fdp_assumes``) in [0,
    claimed] (a bound above its claim is a privacy violation to investigate, never a number to publish), the ratios
    they give, and a realised pair whose exact epsilon exceeds the claim is not published as a PASS."""
    w = rec.get("whitebox") or {}
    problems = []
    if not rec.get("target_config_hash"):
        problems.append("no target_config_hash: the run it audits is not named")
    if w.get("source") not in ("composed", "pooled"):
        problems.append(f"white-box source {w.get('source')!r} is neither composed nor pooled")
    claimed = _float(w.get("claimed"))
    if not claimed > 0:
        problems.append(f"white-box claimed {w.get('claimed')} is not > 0")
    if not str(w.get("fdp_assumes") or "").strip():
        problems.append("white-box fdp_assumes is missing: the f-DP bound must name the family it assumes")
    for key, ratio in (("epsilon_lb_cp", "ratio_cp"), ("epsilon_lb_fdp", "ratio_fdp")):
        lb = _float(w.get(key))
        if not lb >= 0:
            problems.append(f"white-box {key} {w.get(key)} is not >= 0")
        elif claimed > 0 and lb > claimed * (1 + RTOL):
            problems.append(f"white-box {key} {lb:.6g} exceeds the claim {claimed:.6g}: a violation to investigate")
        elif claimed > 0 and not _close(lb / claimed, _float(w.get(ratio))):
            problems.append(f"white-box {ratio} {w.get(ratio)} but {key} / claimed is {lb / claimed:.6g}")
    # the audit decides the realised pair at its draw rates' lower confidence bounds (pair_epsilon_low) when it
    # records them (audits.pooled.PooledOutcome.pair_exceeds_claim)
    pair = w.get("pair_epsilon_low", w.get("pair_epsilon"))
    if pair is not None and claimed > 0 and _float(pair) > claimed * (1 + RTOL) and w.get("verdict") != "VIOLATION":
        problems.append(f"white-box pair epsilon {_float(pair):.6g} exceeds the claim {claimed:.6g} but the verdict is "
                        f"{w.get('verdict')!r}, not VIOLATION")
    if w.get("verdict") == "VIOLATION":  # e.g. the realised pair's exact epsilon above the claim
        problems.append(f"white-box verdict VIOLATION ({w.get('reason') or 'no reason recorded'}): a violation to "
                        "investigate")
    return problems


def _check_bounds(what: str, lb: Any, alpha: Any) -> list[str]:
    out = []
    if lb is not None and not _float(lb) >= 0:
        out.append(f"{what}: epsilon lower bound {lb} is negative")
    if alpha is not None and not 0.0 <= _float(alpha) <= 1.0:
        out.append(f"{what}: alpha {alpha} is not in [0, 1]")
    return out


def _check_commit(rec: dict, commits: _Commits | None, report: CheckReport | None, strict: bool = False,
                  release: tuple[str, str] | list[tuple[str, str]] | None = None) -> list[str]:
    """The commit rule; ``strict``: no legacy exemption for dirty records; ``release`` (tag, sha), or a list of them:
    the record names exactly that commit (one of them)."""
    releases = [release] if isinstance(release, tuple) else list(release or [])
    commit = str(rec.get("git_commit") or "")
    if not commit:
        return []  # reported as a missing field
    sha, dirty = commit.removesuffix("-dirty"), commit.endswith("-dirty")
    problems = []
    if sha == "unknown" or len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
        problems.append(f"git_commit {commit!r} is not a commit id")
    elif releases and sha not in {r[1] for r in releases}:
        names = " or ".join(f"the release {t}'s commit {c[:12]}" for t, c in releases)
        problems.append(f"commit {sha[:12]} is not {names}")
    elif commits is not None and commits.available and not commits.in_history(sha):
        problems.append(f"commit {sha[:12]} is not in this repository's history")
    elif rec.get("code_tree") and commits is not None and commits.available and not dirty \
            and commits.tree_of(sha) != rec["code_tree"]:
        problems.append(f"commit {sha[:12]} named by a manifest: the files that ran hash to tree "
                        f"{str(rec['code_tree'])[:12]}, not the commit's {str(commits.tree_of(sha))[:12]}")
    if dirty:
        if strict or releases or (rec.get("start_time") or 0) >= DIRTY_CUTOFF:
            problems.append(f"commit {sha[:12]} is -dirty: the code that ran cannot be checked out")
        elif report is not None:
            report.legacy_dirty += 1
    return problems


def lines_of(export: str | Path) -> Iterable[tuple[str, dict[str, Any] | None, str | None]]:
    """(where, record or None, why not) for every line of an export."""
    p = Path(export)
    files = sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    for f in files:
        try:
            text = f.read_text()
        except UnicodeDecodeError:
            yield str(f), None, "not a JSON-Lines export (not UTF-8 text)"
            continue
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                yield f"{f}:{i}", None, "not a JSON record"
                continue
            yield f"{f}:{i}", (rec if isinstance(rec, dict) else None), \
                None if isinstance(rec, dict) else "not a JSON object"


def check_export(export: str | Path, repo: str | Path | None = None, count_units: bool = True,
                 strict: bool = False, release: str | list[str] | tuple[str, ...] | None = None,
                 config: str | Path | None = None) -> CheckReport:
    """Check every record of ``export`` (a file or a directory of ``*.jsonl``). ``repo``: the git checkout whose
    history the commits must be in (default: this package's). ``count_units``: load datasets for the delta rule
    of records without a ``privacy_units`` parameter. ``strict``: a dirty, missing or unknown commit fails whenever
    the record started (no legacy exemption); ``release``: a git tag (or several: a site whose rows come from more
    than one release) every record must name the commit of, one of them (implies
    ``strict``); ``config``: a sweep config whose every cell must have a finished record (a deleted record fails).
    Duplicated lines, two finished records of one cell, rates outside [0, 1] and any difference from the manifest
    beside the export fail. A forgery consistent with itself and with a rewritten manifest (an accuracy edited
    within [0, 1], an epsilon and its ledger edited together) cannot be caught without re-running the cell. Bad input (no export, no such tag, no history to check against under ``strict``): BenchError."""
    p = Path(export)
    if not p.exists():
        raise BenchError(f"export {export} not found")
    if p.is_dir() and not any(p.glob("*.jsonl")):
        raise BenchError(f"export {export} holds no *.jsonl file")
    repo = Path(repo) if repo is not None else REPO
    strict = strict or release is not None
    plan, plan_name = None, config
    if config is not None:
        from bench.sweep.config import load_config

        plan = [c for c in load_config(config).cells if c.skip is None]
    commits, units = _Commits(repo), _Units() if count_units else None
    report = CheckReport(commits_checked=commits.available, strict=strict)
    if not commits.available:
        no_history = f"{repo} is not a git work tree"
    elif commits.shallow:
        no_history = f"{repo} is a shallow clone (git fetch --unshallow)"
        commits.available = False
        report.commits_checked = False
    else:
        no_history = None
    if no_history and strict:
        raise BenchError(f"{'--release' if release else '--strict'} checks every commit against the history, but "
                         f"{no_history}")
    if no_history:
        report.notes.append(f"commits not checked against a history: {no_history}")
    tagged = None
    if release is not None:
        tags = [release] if isinstance(release, str) else list(release)
        tagged = [(t, release_commit(t, repo)) for t in tags]
        report.release = ", ".join(f"{t} ({c[:12]})" for t, c in tagged)
        for t, c in tagged:
            if not commits.in_history(c):
                raise BenchError(f"--release {t}: its commit {c[:12]} is not in this checkout's history")
    seen = _Seen()
    for where, rec, why in lines_of(p):
        report.checked += 1
        if rec is None:
            report.failures.append((where, [why or "unreadable"]))
            continue
        if rec.get("kind") == "run":
            report.runs += 1
        problems = check_record(rec, commits, units, report, strict, tagged) + seen(where, rec)
        if problems:
            report.failures.append((f"{where} {rec.get('name') or rec.get('cell_id') or ''}".strip(), problems))
    listed = manifest.load(p)
    if listed is None:
        report.notes.append(f"no manifest beside the export ({manifest.manifest_path(p)}): a deleted record or an "
                            "edit within a record's ranges cannot be seen (a page build or a sweep's end writes one)")
    else:
        differences = manifest.compare(p, listed)
        report.failures += differences
        report.manifest = (str(manifest.manifest_path(p)), sum(len(v) for v in listed["files"].values()))
    if plan is not None:
        missing = [c for c in plan if (c.kind, c.cell_id) not in seen.cells]
        report.planned = len(plan)
        if missing:
            report.failures.append((str(plan_name), [f"{len(missing)} of its {len(plan)} cells have no finished "
                                                     f"record: {', '.join(c.label for c in missing[:5])}"
                                                     + (", ..." if len(missing) > 5 else "")]))
    return report


class _Seen:
    """Records seen so far: a second line of one run (``run_id``) is a duplicate; a second finished record of one cell
    (its kind and ``cell_id``) overrides the first on the page (the newest wins), so it fails too: a re-run of a
    cell moves the older record to ``superseded/`` (:mod:`bench.superseded`)."""

    def __init__(self) -> None:
        self.runs: dict[str, str] = {}
        self.cells: dict[tuple[str, str], str] = {}

    def __call__(self, where: str, rec: dict[str, Any]) -> list[str]:
        problems = []
        run_id, key = rec.get("run_id"), (str(rec.get("kind")), str(rec.get("cell_id")))
        if run_id and run_id in self.runs:
            problems.append(f"duplicate of {self.runs[run_id]} (run {run_id})")
        elif rec.get("status") in (None, "FINISHED") and rec.get("cell_id") and key in self.cells:
            problems.append(f"a second finished record of cell {key[1]} ({key[0]}), beside {self.cells[key]}: one "
                            "overrides the other on the page")
        if run_id:
            self.runs.setdefault(run_id, where)
        if rec.get("status") in (None, "FINISHED") and rec.get("cell_id"):
            self.cells.setdefault(key, where)
        return problems


__all__ = ["CheckReport", "DIRTY_CUTOFF", "RELEASES_FILE", "check_export", "check_record", "cited_release",
           "registered_releases", "release_commit"]
