"""``bench leaderboard``: tables and privacy-utility plots from tracked runs or from a compact export.

Rows come from records (:mod:`bench.records`): the FINISHED top-level runs of an MLflow experiment, or an export
file, so a published leaderboard rebuilds without the MLflow store. Per dataset and privacy unit, one row per
(method, split, target epsilon, hyperparameter variant):

* test accuracy: mean over seeds with a 95% percentile bootstrap interval (``scipy.stats.bootstrap``);
* spent epsilon: the max over seeds of what the accountant computed from each run's ledger (never the target),
  with the run's delta; the unit and neighbouring relation the epsilon holds for (the method's ``unit_label``,
  e.g. ``node (in-edges)``, footnoted); whether inference is private;
* the strongest attack on the unit the claim protects (edge membership for edge-level rows, from the
  ``edge-attack`` records of ``scripts.unit_attacks``; feature rows from the weights for feature-level rows, with the
  released-prediction game beside it; node membership elsewhere), chosen on held-out data: for each seed, the
  attack variant with the best mean AUC on the OTHER seeds is taken and its AUC and TPR at 1% FPR on this seed
  reported (averaged over seeds), so the choice is never made on the numbers it reports. No epsilon is derived
  from an attack on one model (not a neighbouring-dataset game); the row names the model an attack saw when it
  is not the recorded run's own. Model-free reference variants
  (``ref-*``) are never candidates; the row says how many variants were. With one seed the maximum is reported and
  marked as such. Edge-level sections keep the strongest node-membership attack as a secondary column;
* verification: the verdict of ``bench verify`` runs (and of ``bench audit`` runs) of the configuration, and the
  largest empirical epsilon lower bound among their checks.

A configuration run twice with the same seed counts once (the newest run). Plots: one per dataset and unit,
accuracy against SPENT epsilon (log scale), non-private references as dashed lines, delta in the title.
``--site DIR`` writes ``DIR/index.html`` (self-contained), ``DIR/README.md`` (the same tables) and the plots;
``--run CONFIG`` first runs the config's sweep with its export in ``DIR/runs/`` (one file per dataset) when that
directory exists, else ``DIR/runs.jsonl`` (resumable).
"""

from __future__ import annotations

import base64
import csv
import functools
import html
import io
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from bench.records import ATTACK_KINDS
from methods.errors import BenchError

BIG = 1e307  # tracking stores inf as 1e308
REFERENCE_PREFIXES = ("ref-", "reference")


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
    seeds: list[int] = field(default_factory=list)
    spent: list[float] = field(default_factory=list)
    #: attack variant ("attack.variant") -> seed -> AUC / TPR at 1% FPR
    attack_auc: dict[str, dict[int, float]] = field(default_factory=dict)
    attack_tpr: dict[str, dict[int, float]] = field(default_factory=dict)
    #: attack variant -> seed -> which model the attack saw (:func:`attacked_model`): the recorded run's own, or a refit
    attack_source: dict[str, dict[int, str]] = field(default_factory=dict)
    audit_lb: list[float] = field(default_factory=list)
    #: the white-box lower bound of the row's seed-0 cell (``whitebox-audit`` records of scripts.whitebox_audits)
    whitebox: dict[str, Any] | None = None
    audit_verdicts: list[str] = field(default_factory=list)
    audit_modes: set = field(default_factory=set)
    ci: tuple[float, float] | None = None
    hparams: tuple = ()  # (key, value) pairs of the runs' hp.* params
    variant: str = ""  # the hyperparameters that tell this row from others of the same method, split and epsilon
    unit_label: str = ""
    delta: float = math.nan
    inference_private: str = ""
    hp_source: str = ""
    #: seed -> what identifies the run that seed made: its ledger's events and its released predictions (the
    #: predictions hash, or the test accuracy and macro-F1 of records without one)
    run_keys: dict[int, tuple] = field(default_factory=dict)
    #: rows of other methods whose runs are identical to this row's on every seed, with the reason when the
    #: method declares one (``Method.degenerates_to``): a degenerate comparison, shown in the row
    same_as: list[tuple[str, str]] = field(default_factory=list)
    #: the runs are of a setting a retune has since replaced (:func:`config_records`): shown until the new cells run
    previous: bool = False
    #: facts about the private data the rows' claims take as public by convention (``PrivacyLedger.conventions``)
    public_facts: set = field(default_factory=set)

    @property
    def label(self) -> str:
        return f"{self.method} [{self.variant}]" if self.variant else self.method

    @property
    def acc_mean(self) -> float:
        return statistics.fmean(self.accs) if self.accs else math.nan

    @property
    def spent_max(self) -> float:
        return max(self.spent) if self.spent else math.nan

    @property
    def claim_unit(self) -> str:
        """What the row's privacy claim protects, as attacks name it (:data:`CLAIM_UNITS`: ``edge membership``,
        ``feature row``, ``node membership``); non-private rows keep node membership."""
        return section_attack_unit(self.unit)

    def candidates(self, unit: str | None = None) -> list[str]:
        """Attack variants eligible as "the strongest attack" (on ``unit``, e.g. ``edge membership``; None = any):
        every variant but the model-free references."""
        return sorted(v for v in self.attack_auc
                      if not any(part.startswith(REFERENCE_PREFIXES) for part in v.split(".")[1:])
                      and (unit is None or attack_infers(v) == unit))

    def strongest(self, unit: str | None = None) -> "Strongest":
        """The strongest attack on ``unit`` (None: any), chosen on held-out seeds (see the module docstring): its
        AUC and TPR at 1% FPR on each seed, averaged, and which models it saw; ``held_out`` is False when only one
        seed has attack results (then: the max)."""
        cands = self.candidates(unit)
        if not cands:
            return Strongest(unit or "")
        seeds = sorted({s for v in cands for s in self.attack_auc[v]})

        def mean(d: dict[int, float] | None, ss: list[int]) -> float:
            xs = [d[s] for s in ss if d and s in d]
            return statistics.fmean(xs) if xs else math.nan

        def seen(v: str, ss: list[int]) -> tuple[str, ...]:
            src = self.attack_source.get(v, {})
            return tuple(sorted({src.get(s, SOURCE_UNKNOWN) for s in ss if s in self.attack_auc[v]}))

        if len(seeds) < 2:
            best = max(cands, key=lambda v: statistics.fmean(self.attack_auc[v].values()))
            return Strongest(unit or attack_infers(best), best, mean(self.attack_auc[best], seeds),
                             mean(self.attack_tpr.get(best), seeds), len(cands), False, seen(best, seeds))
        aucs, tprs, chosen, models = [], [], [], set()
        for s in seeds:
            others = {v: [a for t, a in self.attack_auc[v].items() if t != s] for v in cands}
            pick = max((v for v in cands if others[v] and s in self.attack_auc[v]),
                       key=lambda v: statistics.fmean(others[v]), default=None)
            if pick is None:
                continue
            chosen.append(pick)
            aucs.append(self.attack_auc[pick][s])
            models.update(seen(pick, [s]))
            if s in self.attack_tpr.get(pick, {}):
                tprs.append(self.attack_tpr[pick][s])
        # the most frequent pick; among equals the earliest seed's (a set's order would vary with the hash seed)
        name = max(dict.fromkeys(chosen), key=chosen.count) if chosen else ""
        f = lambda xs: statistics.fmean(xs) if xs else math.nan  # noqa: E731
        return Strongest(unit or attack_infers(name), name, f(aucs), f(tprs), len(cands), True, tuple(sorted(models)))

    def strongest_attack(self, unit: str | None = None) -> tuple[str, float, float, int, bool]:
        """(name, AUC, TPR at 1% FPR, candidates, held_out) of :meth:`strongest`."""
        b = self.strongest(unit)
        return b.name, b.auc, b.tpr, b.candidates, b.held_out

    def references(self, unit: str | None = None) -> dict[str, float]:
        """The model-free reference variants (``ref-*``: e.g. link stealing on raw features) on ``unit``, each with
        its mean AUC over seeds: what the data alone give the attack's game, shown beside the strongest attack."""
        return {v: statistics.fmean(a.values()) for v, a in sorted(self.attack_auc.items())
                if a and any(part.startswith(REFERENCE_PREFIXES) for part in v.split(".")[1:])
                and (unit is None or attack_infers(v) == unit)}

    def shown_attack(self) -> "Strongest":
        """The attack a one-column summary shows: the strongest on the unit the claim protects when the row has one,
        else the strongest on any unit (then marked outside the claim where it is)."""
        b = self.strongest(self.claim_unit)
        return b if b.name else self.strongest()

    def best_attack(self, which: str) -> tuple[str, float]:
        """The strongest attack's name and its AUC (``which="auc"``) or TPR at 1% FPR (``"tpr"``)."""
        name, auc, tpr, _, _ = self.strongest_attack()
        return name, auc if which == "auc" else tpr

    @property
    def verdict(self) -> str:
        """The row's verification verdict: VIOLATION beats INCONCLUSIVE (a check that applies did not run), which
        beats PASS; NOT APPLICABLE only when every check says so (:mod:`audits.verdicts`)."""
        from audits.verdicts import INCONCLUSIVE, NOT_APPLICABLE, PASS, VIOLATION

        if not self.audit_verdicts:
            return ""
        for v in (VIOLATION, INCONCLUSIVE):
            if v in self.audit_verdicts:
                return v
        return NOT_APPLICABLE if set(self.audit_verdicts) == {NOT_APPLICABLE} else PASS


@dataclass
class Strongest:
    """A row's strongest attack on one unit: the variant (``attack.variant``), its seed-averaged AUC and TPR at 1% FPR,
    the number of candidates, whether held out, and which models the reported seeds' attacks saw
    (:func:`attacked_model`). No epsilon: an attack on one trained model is not a game between neighbouring
    datasets, so its rates bound no epsilon (the audits' columns are those games)."""

    unit: str
    name: str = ""
    auc: float = math.nan
    tpr: float = math.nan
    candidates: int = 0
    held_out: bool = False
    models: tuple[str, ...] = ()


#: which model an attack saw (``attacked_model`` of attack records; :mod:`bench.release` names them)
SOURCE_OWN = "recorded run"
SOURCE_REPRODUCED = "refit, same predictions as the recorded run"
SOURCE_OTHER = "refit, NOT the recorded run"
SOURCE_UNKNOWN = "unknown"


def attacked_model(rec: dict[str, Any]) -> str:
    """What model an ``edge-attack``/``feature-attack`` record attacked: the recorded run's released model (loaded
    from its artefact, or a re-execution that serves the same posteriors), or a refit, labelled by whether it
    released the recorded predictions (records from before artefacts were logged carry ``reproduces_run``)."""
    from bench import release

    src = rec.get("attacked_model")
    if src in (release.SOURCE_RECORDED, release.SOURCE_REEXECUTED):
        return SOURCE_OWN
    if src == release.SOURCE_REFIT or rec.get("reproduces_run") is False:
        return SOURCE_OTHER
    if rec.get("reproduces_run"):
        return SOURCE_REPRODUCED
    return SOURCE_UNKNOWN


@functools.lru_cache(maxsize=None)
def attack_infers(variant: str) -> str:
    """What the attack of ``attack.variant`` infers (``node membership``, ``edge membership``; "" if unregistered)."""
    from bench.attack import attack_unit

    return attack_unit(variant.split(".", 1)[0], "none")["attack_unit"]


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


# --------------------------------------------------------------------------------------
# Rows from records
# --------------------------------------------------------------------------------------


def _unit_label(method: str, unit: str, tags: dict) -> str:
    if tags.get("unit_label"):
        return tags["unit_label"]
    try:
        from methods.base import get_method

        return get_method(method).label()
    except BenchError:
        return unit


def collect(experiment: str) -> list[Row]:
    """Rows from the FINISHED runs of ``experiment`` (method runs, their attack metrics, audit and verify runs)."""
    from bench.records import records_from_experiment

    return collect_records(records_from_experiment(experiment))


def collect_records(records: Iterable[dict[str, Any]]) -> list[Row]:
    """Rows from records (:mod:`bench.records`): run records give accuracy, spent epsilon and attacks; verify and
    audit records give the verification column of the configuration they checked."""
    from bench.records import spent_epsilon

    newest: dict[Any, dict] = {}
    checks, unit_attacks, whitebox = [], [], []
    for rec in records:
        if rec.get("status", "FINISHED") != "FINISHED":
            continue
        kind = rec.get("kind", "run")
        if kind in ("audit", "verify"):
            checks.append(rec)
            continue
        if kind in ATTACK_KINDS:
            unit_attacks.append(rec)
            continue
        if kind == "whitebox-audit":
            whitebox.append(rec)
            continue
        p, m = rec.get("params", {}), rec.get("metrics", {})
        if "test_acc" not in m or "method" not in p:
            continue
        key = p.get("config_hash") or rec["run_id"]
        if key not in newest or (rec.get("start_time") or 0) > (newest[key].get("start_time") or 0):
            newest[key] = rec
    rows: dict[tuple, Row] = {}
    runs_of: dict[str, tuple[Row, int]] = {}  # a run's config_hash -> its row and seed
    for rec in newest.values():
        p, m, tags = rec["params"], rec["metrics"], rec.get("tags", {})
        eps = _f(p.get("target_epsilon", "inf"))
        hps = tuple(sorted((k[3:], v) for k, v in p.items() if k.startswith("hp.")))
        key = (p.get("dataset"), p.get("privacy_unit", "?"), p["method"], p.get("split", "?"), eps, hps)
        row = rows.setdefault(key, Row(*key[:5], hparams=hps))
        seed = int(p.get("seed", len(row.accs)))
        if p.get("config_hash"):
            runs_of[p["config_hash"]] = (row, seed)
        row.accs.append(float(m["test_acc"]))
        row.seeds.append(seed)
        # the ledger's epsilon; only a hand-made record without a ledger falls back to its metric (the published
        # export has a ledger on every run: `bench leaderboard --check` rejects one without)
        row.spent.append(spent_epsilon(rec) if rec.get("ledger") else _f(m.get("epsilon", math.inf)))
        led = rec.get("ledger")
        released = (rec.get("tags") or {}).get("predictions_hash") or (m.get("test_acc"), m.get("test_macro_f1"))
        row.run_keys[seed] = (_events_key(led) if led else round(row.spent[-1], 9), released)
        row.delta = _f(p.get("delta"))
        row.unit_label = _unit_label(p["method"], row.unit, tags)
        row.inference_private = str(tags.get("inference_private", row.inference_private or ""))
        row.hp_source = p.get("hp_source", row.hp_source)
        row.previous = row.previous or bool(rec.get("previous_setting"))
        if led:
            row.public_facts |= public_facts(led)
        for name, variants in (rec.get("attacks") or {}).items():
            for variant, vals in variants.items():
                full = f"{name}.{variant}"
                if vals.get("auc") is not None:
                    row.attack_auc.setdefault(full, {})[seed] = _f(vals["auc"])
                if vals.get("tpr_at_1pct_fpr") is not None:
                    row.attack_tpr.setdefault(full, {})[seed] = _f(vals["tpr_at_1pct_fpr"])
                row.attack_source.setdefault(full, {})[seed] = SOURCE_OWN  # attacked in the run, its own model
        for k, v in m.items():  # runs logged without the records' attack field (older exports)
            if k.startswith("attack.") and k.endswith(".auc"):
                row.attack_auc.setdefault(k[len("attack."):-len(".auc")], {})[seed] = _f(v)
                row.attack_source.setdefault(k[len("attack."):-len(".auc")], {})[seed] = SOURCE_OWN
            elif k.startswith("attack.") and k.endswith(".tpr_at_1pct_fpr"):
                row.attack_tpr.setdefault(k[len("attack."):-len(".tpr_at_1pct_fpr")], {})[seed] = _f(v)
    _join_attack_records(unit_attacks, runs_of)
    _join_whitebox_records(whitebox, runs_of)
    for rec in checks:
        tags, p, m = rec.get("tags", {}), rec.get("params", {}), rec.get("metrics", {})
        eps = _f(p.get("target_epsilon", m.get("claimed_epsilon")))
        method, dataset = tags.get("method") or p.get("method"), tags.get("dataset") or p.get("dataset")
        split = tags.get("split") or p.get("split")
        if not method or not dataset:  # a check that does not say what it checked belongs to no row
            continue
        match = [row for (d, _, meth, sp, e, _h), row in rows.items()
                 if d == dataset and meth == method and e == eps and (not split or split == sp)]
        if not match:  # a check of a configuration without accuracy runs still gets a row
            from methods.base import available_methods

            cls = available_methods().get(method)
            unit = cls.privacy_unit if cls else p.get("privacy_unit", "?")
            key = (dataset, unit, method, split or "?", eps, ())
            match = [rows.setdefault(key, Row(*key[:5], unit_label=_unit_label(method, unit, tags)))]
        lbs = []
        if rec.get("kind") == "verify":
            lbs = [c["epsilon_lb"] for c in (rec.get("verify") or {}).get("checks", [])
                   if c.get("epsilon_lb") is not None]
            verdict = (rec.get("verify") or {}).get("verdict") or tags.get("verdict")
            mode = "verify"
        else:
            if "epsilon_lb" in m:
                lbs = [m["epsilon_lb"]]
            verdict, mode = tags.get("verdict"), tags.get("audit_mode", "audit")
        for row in match:
            row.audit_lb += [_f(x) for x in lbs]
            if verdict:
                row.audit_verdicts.append(verdict)
            row.audit_modes.add(mode)
    _name_variants(list(rows.values()))
    mark_identical(list(rows.values()))
    out = sorted(rows.values(), key=lambda r: (r.dataset, r.unit, r.method, r.split, r.variant, r.target_epsilon))
    for row in out:
        row.ci = bootstrap_ci(row.accs)
    return out


def _join_attack_records(recs: list[dict[str, Any]], runs_of: dict[str, tuple[Row, int]]) -> None:
    """Add the attacks of ``edge-attack`` and ``feature-attack`` records (``scripts.unit_attacks``: the recorded run's
    released model, or a labelled refit) to the row and seed of the run they attacked (its ``config_hash``), with
    which model they saw (:func:`attacked_model`); a record of a run no row holds (a setting since retuned) is left
    out. Per run and kind, the newest record wins."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in recs:
        h = rec.get("target_config_hash") or (rec.get("params") or {}).get("config_hash")
        key = (h, rec.get("kind", ""))
        if h in runs_of and (key not in newest
                             or (rec.get("start_time") or 0) >= (newest[key].get("start_time") or 0)):
            newest[key] = rec
    for (h, _), rec in newest.items():
        row, seed = runs_of[h]
        source = attacked_model(rec)
        for name, variants in (rec.get("attacks") or {}).items():
            for variant, vals in variants.items():
                full = f"{name}.{variant}"
                for key, into in (("auc", row.attack_auc), ("tpr_at_1pct_fpr", row.attack_tpr)):
                    if vals.get(key) is not None:
                        into.setdefault(full, {})[seed] = _f(vals[key])
                row.attack_source.setdefault(full, {})[seed] = source


def _join_whitebox_records(recs: list[dict[str, Any]], runs_of: dict[str, tuple[Row, int]]) -> None:
    """Give each row the white-box bound of ``whitebox-audit`` records (``scripts.whitebox_audits``) naming one of its
    runs (by ``config_hash``), with that run's own claim (its ledger's epsilon, as the row's spent column shows it):
    a bound measured on other runs (a pooled audit trains its own) says so and names their claim. The newest record
    wins."""
    for rec in sorted(recs, key=lambda r: r.get("start_time") or 0):
        h = rec.get("target_config_hash") or (rec.get("params") or {}).get("config_hash")
        if h in runs_of and rec.get("whitebox"):
            row, seed = runs_of[h]
            spent = row.spent[row.seeds.index(seed)] if seed in row.seeds else math.nan
            row.whitebox = {**rec["whitebox"], "row_seed": seed, "row_claimed": spent}


def whitebox_bounds(w: dict[str, Any]) -> tuple[float, float, str]:
    """(assumption-free lower bound, f-DP lower bound, what the f-DP one assumes) of a white-box record; a record
    that predates the two named bounds gives NaN for the one it does not name."""
    cp = _f(w.get("epsilon_lb_cp"))
    fdp = _f(w.get("epsilon_lb_fdp", w.get("epsilon_lb")))
    text = str(w.get("fdp_assumes") or ("Gaussian" if w.get("source") == "pooled" else ""))
    short = "/".join(n for k, n in (("Gaussian", "GDP"), ("randomized-response", "RR")) if k in text)
    return cp, fdp, short or text or "?"


def whitebox_claim(w: dict[str, Any]) -> tuple[float, str]:
    """The claim a white-box bound is read against: the row's own run's (its ledger's epsilon), and a note when the
    audit measured other runs whose ledgers claim another epsilon (a pooled audit's fresh fits)."""
    own, audited = _f(w.get("row_claimed")), _f(w.get("claimed"))
    if math.isnan(own):
        return audited, ""
    runs = w.get("runs")
    if w.get("source") == "pooled" or (not math.isnan(audited) and not math.isclose(own, audited, rel_tol=1e-6)):
        what = f"{runs} fresh runs" if runs else "other runs"
        return own, f"measured on {what} of this configuration, claiming {_num(audited, '.4g')}"
    return own, ""


def whitebox_cell(r: Row) -> str:
    """``assumption-free / f-DP of claim (source; what f-DP assumes; other runs)``, or ``-``."""
    w = r.whitebox
    if not w:
        return "-"
    src = {"composed": "mechanisms composed", "pooled": "whole run"}.get(w.get("source"), w.get("source", "?"))
    part = " of part of the ledger" if w.get("left_out") else ""
    cp, fdp, assumes = whitebox_bounds(w)
    claim, other = whitebox_claim(w)
    notes = [f"{src}{part}", f"f-DP assumes {assumes}"] + ([other] if other else [])
    if w.get("pair_epsilon") is not None:
        notes.append(f"pair eps {_num(w.get('pair_epsilon'), '.3g')}")
    if w.get("verdict") and w.get("verdict") != "PASS":
        notes.append(str(w["verdict"]))
    return f"{_num(cp, '.3g')} / {_num(fdp, '.3g')} of {_num(claim, '.4g')} ({'; '.join(notes)})"


def public_facts(ledger: dict) -> set[str]:
    """The facts a ledger's claim takes as public (its ``conventions``; for a record from before ledgers named
    them, what its recipe's family declares public, ``methods.privacy.presets.family``)."""
    named = {str(c[0]) for c in ledger.get("conventions") or []}
    if named:
        return named
    from methods.privacy import presets

    fam = presets.FAMILIES.get(str((ledger.get("recipe") or {}).get("family")))
    return set(getattr(fam, "public", ()) or ())


def _events_key(ledger: dict) -> str:
    """A ledger's mechanisms as canonical text (the recipe and notes left out: the events are what ran)."""
    import json

    return json.dumps({"events": sorted(json.dumps(e, sort_keys=True) for e in ledger.get("events") or []),
                       "non_private_use": ledger.get("non_private_use") is not None}, sort_keys=True)


def mark_identical(rows: list[Row]) -> None:
    """Fill ``same_as``: rows of different methods at the same dataset, split and target epsilon whose runs are
    identical seed by seed (>= 2 seeds, the same ledgers and the same released predictions) compare nothing. A
    method that declares when it degenerates into another (``degenerates_to = {"drw": "no resample"}``) carries
    the mark alone, with its reason; otherwise both rows do."""
    from methods.base import available_methods

    methods = available_methods()
    by: dict[tuple, list[Row]] = {}
    for r in rows:
        if len(r.run_keys) >= 2:
            by.setdefault((r.dataset, r.split, r.target_epsilon), []).append(r)
    for group in by.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if a.method == b.method or a.run_keys != b.run_keys:
                    continue
                why_a = getattr(methods.get(a.method), "degenerates_to", {}).get(b.method)
                why_b = getattr(methods.get(b.method), "degenerates_to", {}).get(a.method)
                if why_a is not None or why_b is None:
                    a.same_as.append((b.label, why_a or ""))
                if why_b is not None or why_a is None:
                    b.same_as.append((a.label, why_b or ""))


def _name_variants(rows: list[Row]) -> None:
    """Rows of one method at one epsilon that differ in hyperparameters (a lam grid) are labelled by the keys that
    differ there. Settings tuned per epsilon (one per epsilon) are one method's curve, not variants."""
    by: dict[tuple, list[Row]] = {}
    for r in rows:
        by.setdefault((r.dataset, r.unit, r.method, r.split), []).append(r)
    for rs in by.values():
        keys_set: set[str] = set()
        for eps in {r.target_epsilon for r in rs}:
            dicts = [dict(h) for h in {r.hparams for r in rs if r.hparams and r.target_epsilon == eps}]
            if len(dicts) > 1:
                keys_set |= {k for d in dicts for k in d if len({x.get(k) for x in dicts}) > 1}
        if not keys_set:
            continue
        keys = sorted(keys_set)
        for r in rs:
            d = dict(r.hparams)
            r.variant = ",".join(f"{k}={d.get(k, '-')}" for k in keys)


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------

BASE_HEADER = ["method", "unit", "split", "target eps", "spent eps (max)", "delta", "inference", "test acc", "95% CI",
               "seeds"]


#: what the claims of a privacy unit's rows protect, as attacks name it (``Attack.unit``)
CLAIM_UNITS = {"edge": "edge membership", "feature": "feature row (weights only)", "node": "node membership"}
#: the released-prediction game of the feature unit: what a feature-level claim does NOT bound (the served posterior of
#: a training node is a function of its own row), shown beside the game it does bound
RELEASED_PREDICTIONS = "feature row (released predictions)"


def section_attack_unit(section: str) -> str:
    """What a section's "strongest attack" column attacks: the unit its claims protect (:data:`CLAIM_UNITS`;
    node membership for anything else)."""
    return CLAIM_UNITS.get(section, "node membership")


WHITEBOX_HEADER = "white-box eps_lb: assumption-free / f-DP, of the run's claim"


def header_for(section: str) -> list[str]:
    """The columns of a section's table: the strongest attack on the unit its claims protect with its TPR at 1% FPR
    (AUC and TPR, never an epsilon: see :class:`Strongest`); feature-level sections add the released-prediction game
    beside it, edge- and feature-level sections the strongest node-membership attack; then the white-box bounds of
    the row's run and the verification."""
    unit = section_attack_unit(section)
    return (BASE_HEADER + [f"strongest attack on {unit} (AUC)", "TPR@1%FPR"]
            + ([f"attack on {RELEASED_PREDICTIONS} (AUC)", "TPR@1%FPR (released predictions)"] if section == "feature" else [])
            + (["node membership attack (AUC)"] if section in ("edge", "feature") else [])
            + [WHITEBOX_HEADER, "verification (eps_lb)"])


HEADER = header_for("node")


def _num(x: float, fmt: str = ".4f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x) or x >= BIG:
        return "inf"
    return format(x, fmt)


def inference_flag(r: Row) -> bool | None:
    """Whether the row's served predictions are private: derived from the method's declared inference reads and its
    unit (:func:`methods.base.inference_private_of`, the one rule ``fit`` applies), so a record tagged under an
    older, typed flag shows what the method's inference is; the record's tag only where the method is unknown."""
    from methods.base import Budget, available_methods, inference_private_of

    cls = available_methods().get(r.method)
    if cls is not None:
        return inference_private_of(cls, Budget(r.target_epsilon, 0.0 if math.isnan(r.delta) else r.delta))
    return {"true": True, "false": False}.get(str(r.inference_private).strip().lower())


def _inference(r: Row) -> str:
    if r.unit == "none":
        return "-"
    return {True: "private", False: "not private"}.get(inference_flag(r), "?")


def _section_of(r: Row) -> str:
    return r.unit if r.unit != "none" else "node"


def attack_cell(r: Row, b: Strongest) -> str:
    """``AUC (attack.variant; held-out choice of N; the model attacked)`` with the model-free reference and the
    outside-claim mark, or ``-``."""
    if not b.name:
        return "-"
    refs = r.references(b.unit) if b.unit else {}
    seen = "" if b.models == (SOURCE_OWN,) else f"; attacked: {', '.join(b.models) or SOURCE_UNKNOWN}"
    return (f"{_num(b.auc, '.3f')} ({b.name}; {'held-out choice' if b.held_out else 'max'} of {b.candidates}{seen})"
            + "".join(f"; reference {v} (no model): {_num(a, '.3f')}" for v, a in refs.items())
            + attack_unit_note(r, b))


def row_cells(r: Row, section: str | None = None) -> list[str]:
    """The cells of ``r`` in the table of ``section`` (a privacy unit; default the row's own, node for a
    non-private row): :func:`header_for`'s columns."""
    section = section or _section_of(r)
    b = r.strongest(section_attack_unit(section))
    ci = "-" if r.ci is None else f"[{r.ci[0]:.4f}, {r.ci[1]:.4f}]"
    verification = "-"
    if r.verdict:
        verification = f"{r.verdict} ({_num(max(r.audit_lb), '.3g')})" if r.audit_lb else r.verdict
    acc = _num(r.acc_mean)
    cells = [r.label + marks(r), r.unit_label or r.unit, r.split, _num(r.target_epsilon, "g"), _num(r.spent_max, ".4g"),
             "-" if r.unit == "none" or math.isnan(r.delta) or math.isinf(r.spent_max) else f"{r.delta:.0e}",
             _inference(r), acc, ci, str(len(r.accs)), attack_cell(r, b), _num(b.tpr, ".3f") if b.name else "-"]
    if section == "feature":
        rp = r.strongest(RELEASED_PREDICTIONS)
        cells += [attack_cell(r, rp), _num(rp.tpr, ".3f") if rp.name else "-"]
    if section in ("edge", "feature"):
        cells.append(attack_cell(r, r.strongest("node membership")))
    return cells + [whitebox_cell(r), verification]


def marks(r: Row) -> str:
    """What the method cell adds to the row's name: identical runs of another row, a previous setting."""
    return same_as_text(r) + (f" {PREVIOUS_MARK}" if r.previous else "")


PREVIOUS_MARK = "(previous setting)"
PREVIOUS_NOTE = (f"method '{PREVIOUS_MARK}': the row's runs used the hyperparameters chosen before the current "
                 "tuning (their record's hp_source says from where); the current setting's cells are not run yet, and "
                 "their records replace the row when they are.")


def same_as_text(r: Row) -> str:
    """`` (= drw at this budget: no resample)`` for a row whose runs another row's repeat exactly."""
    return "".join(f" (= {other} at this budget: {why})" if why else f" (= {other}: identical runs on every seed)"
                   for other, why in r.same_as)


def sections(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    """Rows by (dataset, unit); the non-private references join every unit's section of their dataset."""
    out: dict[tuple[str, str], list[Row]] = {}
    units: dict[str, set[str]] = {}
    for r in rows:
        if r.unit != "none":
            units.setdefault(r.dataset, set()).add(r.unit)
    for r in rows:
        if r.unit == "none":
            for u in sorted(units.get(r.dataset) or {"none"}):
                out.setdefault((r.dataset, u), []).append(r)
        else:
            out.setdefault((r.dataset, r.unit), []).append(r)
    return dict(sorted(out.items()))


def footnotes(rows: list[Row]) -> list[str]:
    from methods.base import available_methods

    notes: dict[str, str] = {}
    methods = available_methods()
    for r in rows:
        cls = methods.get(r.method)
        if cls is not None and cls.unit_note:
            notes.setdefault(cls.label(), cls.unit_note)
    from methods.privacy.ledger import PUBLIC_FACTS

    public: dict[str, set[str]] = {}
    for r in rows:
        for fact in r.public_facts:
            public.setdefault(fact, set()).add(r.method)
    conventions = [f"public by convention ({', '.join(sorted(ms))}): {fact}, {PUBLIC_FACTS.get(fact, '')}; their "
                   "epsilon holds for neighbouring datasets of that size (docs/accounting.md)"
                   for fact, ms in sorted(public.items())]
    return ([f"{label}: {note}" for label, note in sorted(notes.items())] + conventions + identical_results(rows)
            + ([PREVIOUS_NOTE] if any(r.previous for r in rows) else []))


def identical_results(rows: list[Row]) -> list[str]:
    """Notes on rows of different methods whose test accuracy is the same on every one of >= 2 common seeds at
    different spent epsilons: different trainings whose test predictions agree (a model that predicts one class).
    Identical runs (the same ledgers too) are marked in their rows instead (:func:`mark_identical`)."""
    groups: dict[tuple, dict[str, tuple]] = {}
    for r in rows:
        if len(set(r.seeds)) >= 2 and len(r.seeds) == len(set(r.seeds)):
            key = (r.dataset, r.split, r.target_epsilon, tuple(sorted(zip(r.seeds, r.accs))))
            spent = tuple(round(e, 9) for _, e in sorted(zip(r.seeds, r.spent)))
            groups.setdefault(key, {})[r.label] = spent
    same_pred: dict[tuple[str, ...], list[str]] = {}
    for (ds, split, eps, _), spent_of in groups.items():
        if len(set(spent_of.values())) > 1:
            same_pred.setdefault(tuple(sorted(spent_of)), []).append(f"{ds} ({split}) at eps {eps:g}")
    return [f"{' and '.join(k)}: the same test accuracy on every seed on {', '.join(sorted(v))}, at different "
            "spent epsilons: different trainings whose test predictions agree (e.g. each predicts one class)."
            for k, v in sorted(same_pred.items())]


COLUMN_NOTES = [
    "test acc: mean over seeds, 95% percentile bootstrap interval (scipy).",
    "spent eps: the accountant's epsilon recomputed from each run's ledger (max over seeds), never the target or a "
    "logged metric; delta as run.",
    "method '(= other ...)': every seed's run is identical to the other row's (the same ledger and the same test "
    "predictions): the two rows compare nothing at this budget.",
    "strongest attack on <unit>: among the attacks on what the section's claims protect (edge membership in "
    "edge-level sections: link stealing and LinkTeller on held-out edges and non-edges; feature row (weights only) "
    "in feature-level sections: attribute inference from the released model's weights, which of two rows, a "
    "training node's own or an unfitted class-mate's, it held; both scripts/unit_attacks; node membership "
    "elsewhere), per seed the variant with the best mean AUC on the other seeds (held out), its AUC and TPR at 1% "
    "FPR on this seed, averaged; model-free references (ref-*) are never candidates but are shown beside it "
    "('reference ... (no model)': link stealing on raw features, what feature homophily alone gives the edge game; "
    "the candidate row's cosine to its node's neighbours' rows in the feature game; an attack near it finds little "
    "the model adds); 'of N' = candidates; '-': no attack on that unit ran for the row. Attack strength is AUC and "
    "TPR at low FPR, never an epsilon: members and non-members are many edges or rows of one trained model, not "
    "neighbouring datasets, so no epsilon follows from these rates (the white-box and verification columns are "
    "such games).",
    "attacked: which model the attack saw, when not the row's recorded run itself (its own model in the run, or "
    "its released model loaded from the run's artefact): 'refit, same predictions as the recorded run' (a refit "
    "that released the recorded test predictions) or 'refit, NOT the recorded run' (its numbers describe another "
    "model).",
    "attack on feature row (released predictions) (feature-level sections): the same two-row game when the "
    "attacker also sees the released posteriors of the training nodes (attacks.features released-prediction: the "
    "candidate row whose query reproduces the node's released posterior). A feature-level epsilon bounds the "
    "weights only: a training node's served posterior is a deterministic function of its own row, so this game "
    "is outside the claim, and near 1 for a model that serves them (inference 'not private').",
    "white-box eps_lb: two empirical lower bounds on epsilon in the white-box threat model (every release "
    "observed), of the claim of the row's seed-0 run (its ledger's epsilon): assumption-free (Clopper-Pearson "
    "rates, no assumption on the mechanism) / f-DP (the strongest member of an assumed family of trade-off "
    "curves that the measured point rules out; 'f-DP assumes GDP': Gaussian trade-off; a mechanism whose curve "
    "is not of that shape can make it exceed what the data show). GAP/ProGAP/EdgeRand/PrivGNN/PATE from the "
    "mechanism-level audits of the run's own ledger events, composed as privacy-loss distributions "
    "(scripts/whitebox_audits; 'of part of the ledger': node-level GAP's DP-SGD heads are left out); DP-SGD rows "
    "from a whole-run pooled audit with gradient canaries of fresh runs of the configuration (named, with their "
    "claim; 'pair eps': the exact epsilon of the audited pair, the most this audit could show); '-': not run "
    "(pooled audits on Cora only).",
    "node membership attack (edge- and feature-level sections): the strongest node-membership attack, kept for "
    "comparison; an edge- or feature-level claim does not cover it.",
    "verification: bench verify / bench audit verdicts of the configuration and the largest empirical epsilon lower "
    "bound of their checks.",
]


def to_markdown(rows: list[Row], title: str) -> str:
    lines = [f"# {title}", ""]
    for (ds, unit), rs in sections(rows).items():
        header = header_for(unit)
        lines += [f"## {ds}: {unit}-level", "", "| " + " | ".join(header) + " |",
                  "|" + "|".join(" --- " for _ in header) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r, unit)) + " |" for r in rs]
        lines.append("")
    notes = footnotes(rows)
    lines += [f"* {n}" for n in notes + COLUMN_NOTES]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ["dataset", "privacy_unit", "unit_label", "method", "split", "target_epsilon", "spent_epsilon_max",
               "delta", "inference_private", "test_acc_mean", "ci_low", "ci_high", "seeds", "strongest_attack_unit",
               "strongest_attack", "strongest_attack_auc", "strongest_attack_tpr_at_1pct_fpr",
               "strongest_attack_attacked_model", "attack_candidates", "held_out_choice",
               "strongest_attack_outside_claim", "node_membership_attack", "node_membership_auc",
               "node_membership_tpr_at_1pct_fpr", "node_membership_attacked_model", "edge_membership_attack",
               "edge_membership_auc", "edge_membership_tpr_at_1pct_fpr", "edge_membership_attacked_model",
               "edge_membership_reference", "edge_membership_reference_auc", "feature_row_attack", "feature_row_auc",
               "feature_row_tpr_at_1pct_fpr", "feature_row_attacked_model", "feature_row_reference",
               "feature_row_reference_auc", "released_predictions_attack", "released_predictions_auc",
               "released_predictions_tpr_at_1pct_fpr", "released_predictions_attacked_model",
               "whitebox_epsilon_lb_assumption_free", "whitebox_epsilon_lb_fdp", "whitebox_fdp_assumes",
               "whitebox_claimed", "whitebox_measured_on", "whitebox_source", "verification_epsilon_lb",
               "verification_verdict", "hp_source", "same_as", "previous_setting"]


def to_csv(rows: list[Row]) -> str:
    """One line per row (:data:`CSV_COLUMNS`). ``strongest_attack*``: the strongest attack on the unit the row's
    claim protects (:attr:`Row.claim_unit`; node membership for non-private rows); ``node_membership_*``,
    ``edge_membership_*`` and ``feature_row_*``: the strongest on each unit, whatever the row's (empty where none
    ran)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_COLUMNS)

    def nums(b: Strongest) -> list[Any]:
        return [b.name, *("" if not b.name or math.isnan(x) else x for x in (b.auc, b.tpr)), "; ".join(b.models)]

    def whitebox(w: dict[str, Any] | None) -> list[Any]:
        if not w:
            return [""] * 6
        cp, fdp, assumes = whitebox_bounds(w)
        claim, other = whitebox_claim(w)
        return ["" if math.isnan(cp) else cp, "" if math.isnan(fdp) else fdp, assumes, claim,
                other or "the row's seed-0 run", w.get("source", "")]

    for r in rows:
        b = r.strongest(r.claim_unit)
        outside = strongest_attack_unit(r, b)[1]
        refs, frefs = r.references("edge membership"), r.references(CLAIM_UNITS["feature"])
        w.writerow([r.dataset, r.unit, r.unit_label, r.label, r.split, r.target_epsilon, r.spent_max, r.delta,
                    "" if inference_flag(r) is None else str(inference_flag(r)).lower(), r.acc_mean, "" if r.ci is None else r.ci[0], "" if r.ci is None else r.ci[1],
                    len(r.accs), r.claim_unit, *nums(b), b.candidates, b.held_out, outside,
                    *nums(r.strongest("node membership")), *nums(r.strongest("edge membership")),
                    "; ".join(refs), "; ".join(str(a) for a in refs.values()),
                    *nums(r.strongest(CLAIM_UNITS["feature"])), "; ".join(frefs),
                    "; ".join(str(a) for a in frefs.values()), *nums(r.strongest(RELEASED_PREDICTIONS)),
                    *whitebox(r.whitebox), max(r.audit_lb) if r.audit_lb else "", r.verdict, r.hp_source,
                    "; ".join(f"{o}: {w}" if w else o for o, w in r.same_as), r.previous])
    return buf.getvalue()


# --------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------


def plot_section(rows: list[Row], dataset: str, unit: str):
    """Accuracy against SPENT epsilon (log x) for one dataset and unit; references as dashed lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = sections(rows).get((dataset, unit), [])
    private = [r for r in rs if r.unit != "none" and math.isfinite(r.spent_max)]
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in private:
        groups.setdefault((r.label, r.split), []).append(r)
    multi_split = len({s for _, s in groups}) > 1
    cmap = plt.get_cmap("tab20" if len(groups) > 10 else "tab10")
    for i, ((method, split), g) in enumerate(sorted(groups.items())):
        g = sorted(g, key=lambda r: r.spent_max)
        label = (f"{method} ({split})" if multi_split else method) + (f" [{g[0].unit_label}]"
                                                                       if g[0].unit_label != unit else "")
        err = [[r.acc_mean - (r.ci or (r.acc_mean,) * 2)[0] for r in g],
               [(r.ci or (r.acc_mean,) * 2)[1] - r.acc_mean for r in g]]
        ax.errorbar([r.spent_max for r in g], [r.acc_mean for r in g], yerr=err, marker="o", capsize=3, label=label,
                    color=cmap(i % cmap.N))
    refs = [r for r in rs if r.unit == "none"]
    ref_splits = len({r.split for r in refs}) > 1
    for j, r in enumerate(refs):
        ax.axhline(r.acc_mean, linestyle="--", linewidth=1, color=plt.get_cmap("Greys")(0.45 + 0.1 * (j % 4)),
                   label=f"{r.label} ({r.split + ', ' if ref_splits else ''}non-private)")
    if private:
        ax.set_xscale("log")
    deltas = sorted({f"{r.delta:.0e}" for r in private if not math.isnan(r.delta)})
    ax.set_xlabel("spent epsilon (the ledger's, log scale)")
    ax.set_ylabel("test accuracy (mean, 95% bootstrap CI)")
    ax.set_title(f"{dataset}: {unit}-level" + (f", delta {', '.join(deltas)}" if deltas else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def _png(fig) -> bytes:
    """The figure as a 256-colour PNG: line plots lose nothing visible and shrink ~3.5x, which keeps the
    self-contained page (every plot inlined) small enough to commit."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    buf.seek(0)
    small = io.BytesIO()
    Image.open(buf).convert("RGB").quantize(colors=256).save(small, format="PNG", optimize=True)
    return small.getvalue()


def _png_b64(fig) -> str:
    return _b64(_png(fig))


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1400px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}th,td{border:1px solid #ccc;padding:.3em .5em;text-align:right}
th{background:#f3f3f3}td:nth-child(-n+3){text-align:left}tr:nth-child(even){background:#fafafa}
.viol{color:#b00020;font-weight:bold}.pass{color:#1b7f3a}img{max-width:100%;border:1px solid #eee}
.note{color:#555;font-size:.85em}"""


def to_html(rows: list[Row], title: str, figures: dict[tuple[str, str], str], intro: str = "",
            extra: str = "") -> str:
    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
             f"<style>{CSS}</style></head><body>", f"<h1>{esc(title)}</h1>"]
    if intro:
        parts.append(intro)
    parts.append("<ul class='note'>" + "".join(f"<li>{esc(n)}</li>" for n in COLUMN_NOTES + footnotes(rows))
                 + "</ul>")
    for (ds, unit), rs in sections(rows).items():
        parts.append(f"<h2>{esc(ds)}: {esc(unit)}-level</h2>")
        if (ds, unit) in figures:
            parts.append(f"<img alt='privacy-utility plot, {esc(ds)}, {esc(unit)}' "
                         f"src='data:image/png;base64,{figures[(ds, unit)]}'>")
        parts.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header_for(unit)) + "</tr>")
        for r in rs:
            cells = row_cells(r, unit)
            tds = "".join(f"<td>{esc(c)}</td>" for c in cells[:-1])
            cls = "viol" if r.verdict == "VIOLATION" else "pass" if r.verdict else ""
            parts.append(f"<tr>{tds}<td class='{cls}'>{esc(cells[-1])}</td></tr>")
        parts.append("</table>")
    if extra:
        parts.append(extra)
    parts.append("</body></html>")
    return "\n".join(parts)


# --------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------


def _plot_keys(rows: list[Row]) -> list[tuple[str, str]]:
    """(dataset, unit) of every section with a private row: one plot each."""
    return [key for key, rs in sections(rows).items() if any(r.unit != "none" for r in rs)]


def _figures(rows: list[Row]) -> dict[tuple[str, str], Any]:
    return {key: plot_section(rows, *key) for key in _plot_keys(rows)}


def render(rows: list[Row], fmt: str, title: str) -> tuple[str, dict]:
    """``(text, figures)``: the leaderboard in ``fmt`` (md, csv, html) and the matplotlib figures it drew."""
    figs = _figures(rows) if fmt == "html" else {}
    if fmt == "md":
        return to_markdown(rows, title), figs
    if fmt == "csv":
        return to_csv(rows), figs
    return to_html(rows, title, {k: _png_b64(f) for k, f in figs.items()}), figs


def build(experiment: str, fmt: str, track: bool = True, export: str | None = None) -> tuple[str, list[Row]]:
    """The leaderboard of ``experiment`` (or of the export file ``export``) rendered as ``fmt``; with ``track``,
    also logged as a run tagged ``kind=leaderboard`` with the tables and plots."""
    import matplotlib.pyplot as plt

    if export:
        from bench import records

        rows = collect_records(records.load(export))
        source = f"export {export}"
    else:
        rows = collect(experiment)
        source = f"experiment {experiment!r}"
    if not rows:
        raise LeaderboardError(f"{source} has no FINISHED runs with test accuracy")
    title = f"Leaderboard: {source}"
    text, figs = render(rows, fmt, title)
    if track:
        from bench import tracking

        figs = figs or _figures(rows)
        with tracking.tracked_run(experiment, "leaderboard", tags={"kind": "leaderboard"}) as run:
            run.log_params({"rows": len(rows), "runs": sum(len(r.accs) for r in rows), "source": source})
            run.log_text(to_markdown(rows, title), "leaderboard.md")
            run.log_text(to_csv(rows), "leaderboard.csv")
            run.log_text(to_html(rows, title, {k: _png_b64(f) for k, f in figs.items()}), "leaderboard.html")
            for (ds, unit), f in figs.items():
                run.log_figure(f, f"plots/privacy_utility_{_safe(ds)}_{unit}.png")
    for f in figs.values():
        plt.close(f)
    return text, rows


def config_records(config: str, recs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
    """The records of ``config``'s cells (a cell whose hyperparameters changed since is another cell), with the
    number of cells the config plans and how many of them the records finish.

    A row of the grid none of whose training runs is there yet (a retune changed its setting and the new cells are
    not run) keeps the records of its previous setting, marked ``previous_setting`` (the row says so): the page
    stays whole while a regeneration is under way, and never mixes two settings in one row."""
    from bench.records import row_key
    from bench.sweep import load_config

    cfg = [c for c in load_config(config).cells if not c.skip]
    cells = {c.cell_id for c in cfg}
    kept = [r for r in recs if r.get("cell_id") in cells]
    finished = [r for r in kept if r.get("status", "FINISHED") == "FINISHED"]
    done = len({r["cell_id"] for r in finished})
    ran = {row_key(r) for r in finished if r.get("kind", "run") == "run"}
    pending = {c.row for c in cfg} - ran
    return kept + previous_setting([r for r in recs if r.get("cell_id") not in cells], pending), len(cells), done


def previous_setting(recs: list[dict[str, Any]], rows: set[tuple]) -> list[dict[str, Any]]:
    """Copies, marked ``previous_setting``, of the FINISHED records of ``rows`` (row keys,
    :func:`bench.records.row_key`) at the setting of each row's newest training run: one setting per row, its runs
    and their checks."""
    from bench.records import hparams_of, row_key

    by_row: dict[tuple, list[dict[str, Any]]] = {}
    for r in recs:
        k = row_key(r)
        if k in rows and r.get("status", "FINISHED") == "FINISHED":
            by_row.setdefault(k, []).append(r)
    out = []
    for group in by_row.values():
        runs = [r for r in group if r.get("kind", "run") == "run"]
        if not runs:
            continue
        setting = hparams_of(max(runs, key=lambda r: r.get("start_time") or 0))
        out += [{**r, "previous_setting": True} for r in group if hparams_of(r) == setting]
    return out


def build_site(rows: list[Row], out_dir: str | Path, title: str, intro_md: str = "", papers: str = "") -> list[Path]:
    """Write ``index.html`` (self-contained), ``README.md`` (the same tables) and the plots (PNG) into ``out_dir``."""
    import matplotlib.pyplot as plt

    from bench.io import write_text_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    pngs = {}
    for key in _plot_keys(rows):  # one figure open at a time: a full grid has dozens
        fig = plot_section(rows, *key)
        pngs[key] = _png(fig)
        plt.close(fig)
    for (ds, unit), png in pngs.items():
        p = plots / f"{_safe(ds)}_{unit}.png"
        p.write_bytes(png)
        written.append(p)
    md = to_markdown(rows, title)
    md = md.replace(f"# {title}\n\n", f"# {title}\n\n{intro_md}\n\n" if intro_md else f"# {title}\n\n", 1)
    if papers:
        md += "\n" + papers
    plot_md = "\n".join(f"![{ds} {unit}](plots/{_safe(ds)}_{unit}.png)" for (ds, unit) in pngs)
    write_text_atomic(out / "README.md", md + ("\n## Plots\n\n" + plot_md + "\n" if plot_md else ""))
    intro_html = _md_paragraphs(intro_md)
    write_text_atomic(out / "index.html", to_html(rows, title, {k: _b64(png) for k, png in pngs.items()},
                                                  intro_html, _md_table_html(papers)))
    return written + [out / "README.md", out / "index.html"]


def _md_paragraphs(md: str) -> str:
    return "".join(f"<p class='note'>{html.escape(p.strip())}</p>" for p in md.split("\n\n") if p.strip())


def _md_table_html(md: str) -> str:
    """A markdown section (a '## ' heading, paragraphs, one pipe table) as HTML."""
    if not md.strip():
        return ""
    esc = html.escape
    out, table = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= {"-", " ", ":"} for c in cells):
                continue
            table.append(cells)
            continue
        if table:
            out.append("<table>" + "".join("<tr>" + "".join(f"<{'th' if i == 0 else 'td'}>{esc(c)}"
                                                            f"</{'th' if i == 0 else 'td'}>" for c in row) + "</tr>"
                                           for i, row in enumerate(table)) + "</table>")
            table = []
        if line.startswith("## "):
            out.append(f"<h2>{esc(line[3:])}</h2>")
        elif line.strip():
            out.append(f"<p class='note'>{esc(line)}</p>")
    if table:
        out.append("<table>" + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                                       for row in table) + "</table>")
    return "\n".join(out)


__all__ = ["CSV_COLUMNS", "LeaderboardError", "Row", "Strongest", "attack_infers", "bootstrap_ci", "build",
           "build_site", "collect", "collect_records", "config_records", "render"]


# --------------------------------------------------------------------------------------
# Attack units and the terminal summary (bench leaderboard --site, the demo)
# --------------------------------------------------------------------------------------


def strongest_attack_unit(r: Row, b: Strongest | None = None) -> tuple[str, str]:
    """(what the attack ``b`` -- default the row's shown attack, :meth:`Row.shown_attack` -- infers, e.g. ``node
    membership``; why the row's privacy claim does not cover it, e.g. ``outside the edge-level claim``, or ""). Both
    "" without an attack or for an attack not registered."""
    b = b if b is not None else r.shown_attack()
    if not b.name:
        return "", ""
    from bench.attack import attack_unit

    u = attack_unit(b.name.split(".", 1)[0], r.unit)
    return u["attack_unit"], u["outside_claim"]


def attack_unit_note(r: Row, b: Strongest | None = None) -> str:
    """`` [node membership: outside the edge-level claim]`` when the attack ``b`` (default the row's shown attack)
    infers something the row's privacy unit does not protect (a node-membership attack on an edge- or feature-level
    method), else "": appended to an attack cell so the row itself says the AUC is no evidence against its claim."""
    unit, outside = strongest_attack_unit(r, b)
    return f" [{unit}: {outside}]" if outside else ""


SUMMARY_HEADER = ["method", "unit", "spent eps", "test acc (mean, seeds)", "attack AUC (what it infers)",
                  "verification (eps_lb)"]


def summary_cells(r: Row, datasets: bool = False) -> list[str]:
    """One row of :func:`terminal_summary`."""
    b = r.shown_attack()
    attack = "-"
    if b.name:
        unit, outside = strongest_attack_unit(r, b)
        attack = f"{_num(b.auc, '.2f')} ({'; '.join(x for x in (unit or b.name, outside) if x)})"
    verification = "-"
    if r.verdict:
        verification = f"{r.verdict} ({_num(max(r.audit_lb), '.3g')})" if r.audit_lb else r.verdict
    seeds = len(r.accs)
    spent = "inf (not private)" if r.unit == "none" else _num(r.spent_max, ".3g")
    cells = [r.label + marks(r), r.unit_label or r.unit, spent,
             f"{_num(r.acc_mean)} ({seeds} seed{'s' if seeds != 1 else ''})", attack, verification]
    return cells[:2] + [f"{r.dataset} ({r.split})"] + cells[2:] if datasets else cells


def terminal_summary(rows: list[Row], max_rows: int = 40) -> str:
    """The leaderboard as a plain-text table for a terminal or a log (what ``bench leaderboard --site`` prints, the
    demo's result): per row its method, unit, spent epsilon, test accuracy (mean over its seeds), the strongest
    attack's AUC with what that attack infers (and, where the method's privacy unit does not cover it, that it is
    outside the claim) and the verification verdict. A dataset column when the rows hold more than one dataset or
    split. More than ``max_rows`` rows (a full grid) give one line that says so: the page holds them."""
    from bench.io import format_table

    if len(rows) > max_rows:
        return (f"{len(rows)} leaderboard rows ({len({r.dataset for r in rows})} datasets): too many for a terminal; "
                "the page and its README.md hold the tables")

    datasets = len({(r.dataset, r.split) for r in rows}) > 1
    header = SUMMARY_HEADER[:2] + ["dataset"] + SUMMARY_HEADER[2:] if datasets else SUMMARY_HEADER
    text = format_table(header, [summary_cells(r, datasets) for r in rows])
    notes = []
    if not datasets and rows:
        notes.append(f"{rows[0].dataset}, split {rows[0].split}; spent eps: the ledger's (max over seeds), delta as "
                     "run.")
    if any(strongest_attack_unit(r)[1] for r in rows):
        notes.append("outside the X-level claim: the attack infers something the method's privacy unit does not "
                     "protect (e.g. a node's training membership against an edge-level guarantee); its AUC is no "
                     "evidence for or against the claim.")
    if any(r.verdict for r in rows):
        notes.append("verification: bench verify's verdict and the largest empirical epsilon lower bound of its "
                     "checks.")
    return text + "".join(f"\n* {n}" for n in notes)
