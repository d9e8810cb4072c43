"""The leaderboard's rows, from records (:mod:`bench.records`): one per (dataset, privacy unit, method, split, target
epsilon, hyperparameter variant), with its accuracy over seeds, the epsilon its ledgers spent, the attacks on it
(the strongest chosen on held-out seeds) and the verification of its configuration; and which records a sweep
config's page shows (:func:`config_records`)."""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field
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
    #: the values the runs' ledgers name for each public fact (e.g. max_degree -> {168}: the declared bound)
    public_values: dict[str, set] = field(default_factory=dict)
    #: the footnote of the row's unit label (the relation its records ran: :func:`unit_label_of`)
    unit_note: str = ""
    #: seed -> the run's ledger (``ledger.json``), and the accountants the runs name: what :attr:`composed` composes
    ledgers: dict[int, dict] = field(default_factory=dict)
    accountants: set = field(default_factory=set)
    #: how the runs drew their DP noise (:func:`bench.records.noise_text`): "reproducible" and/or "secure"
    noise: set = field(default_factory=set)
    _composed: float | None = field(default=None, repr=False, compare=False)

    @property
    def composed(self) -> float:
        """The epsilon of releasing every seed's model of the row together (:func:`compose_seeds`), at the row's
        delta; composed on first use (a composition of many ledgers is the costliest number of a row)."""
        if self._composed is None:
            self._composed = compose_seeds(self)
        return self._composed

    @composed.setter
    def composed(self, value: float) -> None:
        self._composed = value

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
                             mean(self.attack_tpr.get(best), seeds), len(cands), False, seen(best, seeds),
                             tuple(self.attack_auc[best][s] for s in seeds if s in self.attack_auc[best]))
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
        return Strongest(unit or attack_infers(name), name, f(aucs), f(tprs), len(cands), True, tuple(sorted(models)),
                         tuple(aucs))

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
    (:func:`attacked_model`), and the per-seed AUCs that ``auc`` averages (the spread a plot draws). No epsilon: an
    attack on one trained model is not a game between neighbouring datasets, so its rates bound no epsilon (the
    audits' columns are those games)."""

    unit: str
    name: str = ""
    auc: float = math.nan
    tpr: float = math.nan
    candidates: int = 0
    held_out: bool = False
    models: tuple[str, ...] = ()
    aucs: tuple[float, ...] = ()


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


def bootstrap_ci(xs: list[float], key: str = "", resamples: int = 2000) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of the mean over seeds (None with fewer than two seeds). The interval
    depends on the values and the row alone, never on the order its records arrive in: the values are sorted and
    the resampling is seeded by ``key`` (the row's identity), so a re-run or a reordered export prints the same
    interval."""
    import hashlib

    import numpy as np
    from scipy.stats import bootstrap

    if len(xs) < 2:
        return None
    a = np.sort(np.asarray(xs, dtype=float))
    if np.all(a == a[0]):
        return float(a[0]), float(a[0])
    entropy = int.from_bytes(hashlib.sha256(f"bootstrap|{key}".encode()).digest()[:16], "big")
    res = bootstrap((a,), np.mean, confidence_level=0.95, n_resamples=resamples, method="percentile",
                    random_state=np.random.default_rng(np.random.SeedSequence(entropy)))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _papers_relations() -> dict[str, str]:
    """The relation of a record that names none (no ``hp.relation``): what the method ran before its config chose
    one, the papers' relation (release v1.0.2's gap-node, progap-node, dpgnn and dpgnn-adam records: the cut-off
    graph, and DP-GNN's in-edge lists)."""
    from methods.privacy.presets import CUTOFF_GRAPH, IN_EDGES

    return {"gap-node": CUTOFF_GRAPH, "progap-node": CUTOFF_GRAPH, "dpgnn": IN_EDGES, "dpgnn-adam": IN_EDGES}


def relation_of(method: str, params: dict) -> str | None:
    """The neighbouring relation a run of ``method`` ran under: its ``hp.relation`` param, else the papers' relation
    for the methods that had no other (:func:`_papers_relations`), else None (the method has one relation)."""
    rel = params.get("hp.relation")
    return str(rel) if rel not in (None, "") else _papers_relations().get(method)


def unit_label_of(method: str, unit: str, params: dict | None = None, tags: dict | None = None) -> tuple[str, str]:
    """(unit label, footnote) of a record: the method's ``relation_labels`` entry for the relation it ran
    (:func:`relation_of`), else the label the record logged with the method's note when that is the method's own
    label, else the method's label and note; for a method not registered here, the logged label or the unit."""
    from methods.base import available_methods

    params, tags = params or {}, tags or {}
    cls = available_methods().get(method)
    logged = tags.get("unit_label") or params.get("unit_label") or ""
    if cls is None:
        return logged or unit, ""
    rel = relation_of(method, params)
    labels = getattr(cls, "relation_labels", None) or {}
    if rel in labels:
        return labels[rel]
    if not logged or logged == cls.label():
        return cls.label(), cls.unit_note
    return logged, ""


def _unit_label(method: str, unit: str, tags: dict, params: dict | None = None) -> str:
    return unit_label_of(method, unit, params, tags)[0]


def collect(experiment: str) -> list[Row]:
    """Rows from the FINISHED runs of ``experiment`` (method runs, their attack metrics, audit and verify runs)."""
    from bench.records import records_from_experiment

    return collect_records(records_from_experiment(experiment))


def collect_records(records: Iterable[dict[str, Any]]) -> list[Row]:
    """Rows from records (:mod:`bench.records`): run records give accuracy, spent epsilon and attacks; verify and
    audit records give the verification column of the configuration they checked."""
    from bench.records import NOISE, accountant_of, conventions_of, spent_epsilon

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
        row.unit_label, row.unit_note = unit_label_of(p["method"], row.unit, p, tags)
        if led:
            row.ledgers[seed] = led
            row.accountants.add(accountant_of(rec))
        if row.unit != "none":
            row.noise.add(conventions_of(rec)[NOISE].split(" ", 1)[0])
        row.inference_private = str(tags.get("inference_private", row.inference_private or ""))
        row.hp_source = p.get("hp_source", row.hp_source)
        row.previous = row.previous or bool(rec.get("previous_setting"))
        if led:
            row.public_facts |= public_facts(led)
            for fact, value in _conventions(led).items():
                row.public_values.setdefault(fact, set()).add(value if isinstance(value, (int, float, str))
                                                              else repr(value))
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
            label, note = unit_label_of(method, unit, p, tags)
            match = [rows.setdefault(key, Row(*key[:5], unit_label=label, unit_note=note))]
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
        row.ci = bootstrap_ci(row.accs, key="|".join(map(str, (row.dataset, row.unit, row.method, row.split,
                                                                 row.variant, row.target_epsilon))))
    return out


def compose_seeds(row: Row) -> float:
    """The epsilon of releasing every seed's model of ``row`` together, at the row's delta: the runs are
    independent mechanisms on the same data (each seed spawns its own noise root, :mod:`methods.streams`), so
    their ledgers compose (``PrivacyLedger.add``: sequential composition, Dwork & Roth 2014, Thm. 3.16, tightened
    by the accountants' own composition of RDP curves or privacy-loss distributions), accounted as the runs were
    (the accountant their records name). One seed: its own epsilon. inf when a run made no claim; NaN when a run has no ledger or the
    runs name different accountants or relations."""
    import json

    from methods.privacy import LedgerError, PrivacyLedger

    if row.unit == "none" or not row.seeds:
        return math.inf if row.unit == "none" else math.nan
    if len(row.ledgers) < len(set(row.seeds)) or len(row.accountants) != 1:
        return math.nan
    if len(row.ledgers) == 1:
        return row.spent_max
    try:
        ledgers = [PrivacyLedger.from_dict(row.ledgers[s]) for s in sorted(row.ledgers)]
        if any(led.non_private_use is not None for led in ledgers):
            return math.inf
        total = ledgers[0]
        for led in ledgers[1:]:
            for e in led.events:
                total = total.add(e)
    except (LedgerError, KeyError, TypeError, ValueError):
        return math.nan
    from bench.records import _epsilon

    delta = 0.0 if math.isnan(row.delta) else row.delta
    return _epsilon(json.dumps(total.to_dict(), sort_keys=True), delta, next(iter(row.accountants)))


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


def _conventions(ledger: dict) -> dict[str, Any]:
    """A logged ledger's ``conventions`` as fact -> value (``ledger.json`` holds a mapping; a list of pairs reads
    the same)."""
    conv = ledger.get("conventions") or {}
    if isinstance(conv, dict):
        return {str(k): v for k, v in conv.items()}
    return {str(c[0]): c[1] for c in conv}


def public_facts(ledger: dict) -> set[str]:
    """The facts a ledger's claim takes as public (its ``conventions``; for a record from before ledgers named
    them, what its recipe's family declares public, ``methods.privacy.presets.family``)."""
    named = set(_conventions(ledger))
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


#: what the claims of a privacy unit's rows protect, as attacks name it (``Attack.unit``)
CLAIM_UNITS = {"edge": "edge membership", "feature": "feature row (weights only)", "node": "node membership"}
#: the released-prediction game of the feature unit: what a feature-level claim does NOT bound (the served posterior of
#: a training node is a function of its own row), shown beside the game it does bound
RELEASED_PREDICTIONS = "feature row (released predictions)"


def section_attack_unit(section: str) -> str:
    """What a section's "strongest attack" column attacks: the unit its claims protect (:data:`CLAIM_UNITS`;
    node membership for anything else)."""
    return CLAIM_UNITS.get(section, "node membership")


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
