"""The library entry points: every job the ``bench`` command runs, callable from Python with plain arguments.

    from bench import api

    results = api.run(methods=["gcn", "dp-mlp"], dataset="cora", epsilon=8, seeds=[0, 1], track=False)
    print(api.results_table(results))
    results[0].metrics["test_acc"], results[0].epsilon, results[0].run_id

Jobs (each validates its whole input first: bad input raises a :class:`~methods.errors.BenchError` before any
run opens; an error inside a run raises :class:`~bench.tracking.RunFailed` with the failed ``run_id``, the run
marked FAILED in MLflow):

* :func:`run` -- train and evaluate methods x seeds; one tracked run each (``bench run``);
* :func:`attack` -- the same, plus membership-inference attacks on every trained model, each a child run
  (``bench attack``);
* :func:`audit` -- an empirical privacy audit of one method, one run (``bench audit``);
* :func:`verify` -- every privacy check that applies to one method, one run with a child per check
  (``bench verify``);
* :func:`sweep` -- a resumable grid of runs and audits from a YAML file or a dict (``bench sweep``); its cells
  go through :func:`run` and :func:`audit`;
* :func:`leaderboard` -- tables and plots of an experiment's runs (``bench leaderboard``);
* :func:`account` -- the epsilon of a method family's ledger, the noise for a target epsilon, or a tracked run's
  epsilon (``bench account``);
* :func:`check_accountants` -- privacy accountants (ours, libraries', a plugin's) against the conformance corpus:
  sound, how tight, what a library upgrade changed (``bench accountants check``).

Helpers: :func:`results_table`, :func:`attack_table`, :func:`runs` (an experiment's runs as plain data),
:func:`catalog` (methods, datasets, splits, attacks) and :func:`options` (a method's or attack's hyperparameters
with type, default and meaning).

``track=True`` logs to MLflow (``MLFLOW_TRACKING_URI``, else ``mlflow/mlflow.db`` in the checkout);
``threads`` sets torch and numba threads for the job (0: every core; None, the default here: as they are);
``log`` gets the progress lines the command prints on stderr.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from bench import DEFAULT_EXPERIMENT
from bench.cliargs import check_threads
from bench.options import as_items
from bench.request import (AuditSpec, ReproduceSpec, RunSpec, SweepError, SweepSpec, VerifySpec, api_job,
                           names)

if TYPE_CHECKING:
    from bench.account import AccountSpec

Overrides = Iterable[str] | Mapping[str, Any] | None


@api_job(RunSpec)
def run(spec: RunSpec, *, threads: int | None = None, log: Callable[[str], None] | None = None) -> list:
    """Train and evaluate every method x seed; returns one :class:`bench.run.RunResult` per run (``run_id``,
    ``metrics``, the spent ``epsilon`` from the ledger, ``info``; ``diagnostics``/``history`` with
    ``diagnostics=True``). The arguments are the fields of :class:`bench.request.RunSpec`, where each is explained.

    ``overrides``: hyperparameters, ``{"hidden": 16, "gcn.lr": 0.02}`` or ``["hidden=16", "gcn.lr=0.02"]``
    (``method.key`` scopes one method). Private methods need ``epsilon`` (``math.inf``: no noise); ``delta``
    defaults to the largest power of ten below 1/#privacy units. ``attacks``: also attack every trained model
    (see :func:`attack`). ``hparams=False``: ignore the checked-in hyperparameters (configs/hparams*.yaml).
    ``log_release=False``: do not log the released model (:mod:`bench.release`), which :func:`attack_recorded` reads.
    ``accountant``: what calibrates and reports (default ``tight``; a registered one once the conformance suite
    admits it, :func:`methods.privacy.conformance.check.admit`)."""
    from bench.run import run_targets, using_threads

    with using_threads(threads):
        return run_targets(spec, log)


def cells(config: str | os.PathLike | Mapping[str, Any]) -> list:
    """The cells of a sweep config (a YAML path or the same mapping), validated and in run order; nothing runs.
    Each :class:`bench.sweep.Cell` has its ``kind``, method, dataset, split, epsilon, seed, ``cell_id`` and
    ``skip`` (why it cannot run, or None)."""
    from bench.sweep import build_config, load_config

    cfg = build_config(dict(config), "config") if isinstance(config, Mapping) else load_config(config)
    return list(cfg.cells)


def config_records(config: str | os.PathLike, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of ``config``'s current cells among ``records`` (an export, :func:`bench.records.load`): what
    its leaderboard shows (:func:`bench.leaderboard.config_records`)."""
    from bench.leaderboard import config_records as select

    return select(str(config), records)[0]


def attack(methods: str | Iterable[str] | RunSpec, dataset: str | None = None, attacks: str | Iterable[str] = (),
           **kwargs: Any) -> list:
    """Train every method x seed (as :func:`run`, same keyword arguments) and attack each trained model with
    ``attacks`` (names, ``"a,b"`` or ``"all"``; options in ``attack_overrides``, e.g. ``{"lira.references": 4}``;
    ``bootstrap`` resamples for the 95% intervals). Every attack is an MLflow child run of its target; each
    result's ``attacks`` holds one report per attack with its ``run_id``. ``methods`` may be a built
    :class:`~bench.request.RunSpec` (then only ``threads`` and ``log`` besides)."""
    if not (methods.attacks if isinstance(methods, RunSpec) else names(attacks)):
        from methods.errors import ConfigError

        raise ConfigError("no attack given")
    if isinstance(methods, RunSpec):
        return run(methods, **kwargs)
    return run(methods, dataset, attacks=attacks, **kwargs)


def attack_recorded(run_ids: str | Iterable[str], attacks: str | Iterable[str], *, attack_overrides: Overrides = None,
                    bootstrap: int = 1000, plot_dir: str | os.PathLike | None = None, device: str = "auto",
                    data_root: str | os.PathLike | None = None, experiment: str = DEFAULT_EXPERIMENT,
                    progress: bool = False) -> list:
    """Attack the released models that tracked runs logged (``run_ids``: ids or ``"a,b"``): each run's artefact
    ``release/`` is loaded (:mod:`bench.release`) and checked against its recorded posteriors, and every attack is a
    child run of that run. Returns one :class:`bench.run.RunResult` per run, its ``attacks`` as in :func:`attack`."""
    from bench.attack import plan_attacks
    from bench.recorded import attack_recorded as _attack_recorded
    from methods.errors import ConfigError

    if not names(attacks):
        raise ConfigError("no attack given")
    plan = plan_attacks(names(attacks), as_items(attack_overrides), int(bootstrap),
                        None if plot_dir is None else str(plot_dir))
    return _attack_recorded(plan, names(run_ids), experiment=experiment, device=device,
                            data_root=None if data_root is None else str(data_root), progress=progress)


@api_job(AuditSpec)
def audit(spec: AuditSpec, *, threads: int | None = None, log: Callable[[str], None] | None = None):
    """Audit ``method``: train on neighbouring datasets with canaries, turn membership guesses into an epsilon
    lower bound at ``confidence`` and compare it with the ledger's claim. The arguments are the fields of
    :class:`bench.request.AuditSpec` (the audit's) and of its target :class:`bench.request.RunSpec` (``method``,
    ``dataset``, ``seed``, ...). ``level``: ``blackbox`` (input canaries, the default) or ``whitebox`` (gradient
    canaries, mode ``pooled``); ``mode``: ``one-run`` (``canaries`` canaries in one training run), ``multi-run``
    (``trials`` models per world) or ``pooled`` (white box: ``trials`` runs of ``canaries`` worst-case gradient
    canaries, each an independent trial, :mod:`audits.pooled`), each with its own defaults; the canary design:
    ``hops``, ``canary_degree``, ``canary_scale``, ``canary_pattern``, ``canary_type`` (input: black box; gradient:
    white box for DP-SGD methods), ``fresh_anchors`` (new anchor nodes of the canary's own). Returns a
    :class:`bench.audit.AuditOutcome` (``verdict`` PASS, VIOLATION or NOT APPLICABLE, ``result.reason``,
    ``result.epsilon_lb``, ``result.claimed_epsilon``, ``run_id``). ``workers`` (pooled): fit that many runs at
    once in processes of one torch thread each, the same results (default: one per core, at most one per run).
    ``accountant``: what calibrates the target and states its claim (as :func:`run`'s)."""
    from bench.audit import audit_one
    from bench.run import using_threads

    with using_threads(threads):
        return audit_one(spec, log)


def audit_mechanisms(mechanisms: str | Iterable[str] | None = None, epsilons: Iterable[float] = (0.5, 1.0, 2.0, 4.0), *,
                     delta: float = 1e-5, trials: int | None = None, seed: int = 0,
                     mutation: Mapping[str, float] | None = None, confidence: float = 0.95,
                     progress: bool = False, workers: int = 1) -> list:
    """Mechanism-level audits (:mod:`audits.mechanism`): each of ``mechanisms`` (default: all) calibrated so that
    its claim (the ledger event's tightest sound epsilon) is each of ``epsilons`` at ``delta``, ``trials`` trials per
    world in each half (default: each mechanism's own). Each result carries the assumption-free bound
    (``epsilon_lb_cp``) and the f-DP one (``epsilon_lb_fdp``, assuming ``fdp_assumes``). ``mutation``
    (``noise``, ``sensitivity``, ``rate`` factors) runs the code with less noise than it states. Returns one
    :class:`audits.mechanism.MechanismAudit` per (mechanism, epsilon), in that order; nothing is tracked.
    ``workers`` > 1 runs the audits in that many processes (the same results: each audit has its own seeded
    streams)."""
    from audits.mechanism import MECHANISMS, Mutation, run_audits, validate_audit
    from methods.base import ConfigError
    from methods.progress import progress_bar

    wanted = list(MECHANISMS) if mechanisms is None else names(mechanisms)
    unknown = [n for n in wanted if n not in MECHANISMS]
    if unknown or not wanted:
        raise ConfigError(f"unknown mechanism {', '.join(unknown) or '(none given)'} (known: {', '.join(MECHANISMS)})")
    epsilons = [float(e) for e in epsilons]
    if not epsilons:
        raise ConfigError("no epsilon given")
    try:
        mut = Mutation(**dict(mutation or {}))
    except TypeError:
        raise ConfigError(f"a mutation names noise, sensitivity or rate (got {sorted(dict(mutation or {}))})") from None
    jobs = [(n, e) for n in wanted for e in epsilons]
    for n, e in jobs:  # every bad input fails before the first audit runs
        if not (e > 0 and e < float("inf")):
            raise ConfigError(f"epsilon must be a positive finite number (got {e})")
        validate_audit(n, e, delta=delta, trials=MECHANISMS[n].trials if trials is None else trials,
                                 mutation=mut, confidence=confidence, seed=seed)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers must be a positive integer (got {workers!r})")
    with progress_bar(len(jobs), "mechanism audits", enabled=progress) as bar:
        return run_audits(jobs, workers=workers, on_done=lambda: bar.update(1), delta=delta,
                          trials=None if trials is None else int(trials), seed=seed, mutation=mut,
                          confidence=confidence)


@api_job(VerifySpec)
def verify(spec: VerifySpec, *, threads: int | None = None, log: Callable[[str], None] | None = None):
    """Run every check that applies to ``method``'s privacy unit (:mod:`audits.verify`): structural checks,
    white-box DP-SGD checks and black-box one-run audits (a multi-run audit too with ``trials`` > 0), the
    statistical ones sharing the error budget ``1 - confidence`` (Bonferroni), once per seed. The arguments are the
    fields of :class:`bench.request.VerifySpec` and of its target :class:`bench.request.RunSpec`. Returns a
    :class:`bench.verify.VerifyOutcome` (``verdict``: PASS, VIOLATION, INCONCLUSIVE or NOT APPLICABLE;
    ``report.checks``, ``report.not_run``, ``run_id``). ``accountant``: what calibrates the fits and states the
    claim (as :func:`run`'s)."""
    from bench.run import using_threads
    from bench.verify import verify_one

    with using_threads(threads):
        return verify_one(spec, log)


@api_job(SweepSpec)
def sweep(spec: SweepSpec, *, threads: int | None = None, out: Any = None) -> dict[str, Any]:
    """Run a resumable grid (the arguments: the fields of :class:`bench.request.SweepSpec`): ``config`` is a YAML
    path, the same mapping as a dict, or a :class:`bench.sweep.SweepConfig`. Cells already FINISHED in ``experiment`` (default: the config's) are not
    run again. Returns the summary: ``results`` (one per cell run now: ``status``, ``run_id``, ``error``),
    ``done_before``, ``skipped``, ``gave_up``, ``reclaimed``, ... Progress lines go to ``out`` (stderr).
    ``export``: a JSON-Lines export (:mod:`bench.records`): its cells count as done, finished cells are appended
    (a sweep resumes from the file on another machine), and so are the cells FINISHED in the store that it lacks
    (:mod:`bench.sweep.export`; the summary's ``export_repaired``, a dry run's ``export_missing``).
    ``teacher_cache``: a directory where the run and verify cells keep the PrivGNN family's noise-free teacher
    outputs (:func:`bench.sweep.execute.reuse_teachers`): a seed's cells at several epsilons train their teachers
    once, with exactly the results of separate fits; a verification's determinism fit always recomputes. Not
    committed.
    ``gpus_per_cell`` (Ray only): the GPUs each cell's Ray task asks for (fractions share a GPU); Ray makes only
    those visible to the cell (``CUDA_VISIBLE_DEVICES``). ``max_retries`` on Ray also bounds the retries of a cell
    whose worker process or node died (the dead attempt's runs are marked KILLED)."""
    from bench.sweep import SweepConfig, build_config, load_config, run_sweep
    from bench.sweep.execute import TEACHER_CACHE_ENV

    check_threads(threads, SweepError)
    config, teacher_cache = spec.config, spec.teacher_cache
    if isinstance(config, SweepConfig):
        cfg = config
    elif isinstance(config, Mapping):
        cfg = build_config(dict(config), "config")
    else:
        cfg = load_config(config)
    if spec.experiment:
        cfg.experiment = spec.experiment
    before = os.environ.get(TEACHER_CACHE_ENV)
    if teacher_cache is not None:  # read by run cells here and passed on to worker processes (runner.ENV_KEYS)
        os.environ[TEACHER_CACHE_ENV] = os.path.abspath(os.fspath(teacher_cache))
    try:
        return run_sweep(cfg, _sweep_cell, spec.executor, spec.workers, spec.max_retries, spec.address,
                         spec.dry_run, spec.reclaim_remote, progress=spec.progress, out=out, threads=threads,
                         export=spec.export, gpus_per_cell=spec.gpus_per_cell)
    finally:
        if teacher_cache is not None:
            if before is None:
                os.environ.pop(TEACHER_CACHE_ENV, None)
            else:
                os.environ[TEACHER_CACHE_ENV] = before


def _sweep_cell(*job: Any) -> dict[str, Any]:
    """What a sweep's executor runs per cell: the cell through this module's :func:`run`, :func:`audit` and
    :func:`verify` (the job's last item is the export file or None)."""
    from bench.sweep.execute import execute_cell

    *args, export = job
    return execute_cell(*args, run=run, audit=audit, verify=verify, export=export)


def account(form: str | AccountSpec, *, delta: float | None = None, epsilon: float | None = None,
            accountant: str | None = None, conversion: str | None = None, **params: Any) -> dict[str, Any]:
    """The account of one form (``bench account FORM --json``'s object): ``form`` a method family's
    (``dpsgd``, ``dp-mlp``, ``dpgnn``, ``drw``, ``gap``, ``progap``, ``edgerand``, ``privgnn``, ``pate``) with its
    options as keywords, named as the command line's (``level="node"``, ``num_train=2000``, ``noise_multiplier=1``;
    the family's ledger function's parameters: :data:`bench.account.FORMS`), or ``"run"`` with ``run_id``.
    ``epsilon`` in place of the noise calibrates it; ``accountant`` and ``conversion`` as ``bench account``'s.
    Bad input raises :class:`~methods.errors.BenchError` before any accountant runs.

        api.account("gap", level="edge", depth=2, sigma=7.0189, delta=1e-4)["epsilon"]
        api.account("dp-mlp", num_train=1000, batch_size=100, steps=200, epsilon=2, delta=1e-5)["noise_multiplier"]
    """
    from bench.account import AccountSpec
    from bench.account import account as account_job

    spec = form if isinstance(form, AccountSpec) else AccountSpec.of(form, delta=delta, epsilon=epsilon,
                                                                      accountant=accountant, conversion=conversion,
                                                                      **params)
    return account_job(spec)


def check_accountants(accountants: str | Iterable[str] | None = None, *, cases: str | None = None,
                      tags: str | Iterable[str] = (),
                      corpus: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
                      against: str | os.PathLike | None = None, rtol: float = 1e-6,
                      record: str | os.PathLike | None = None, junit: str | os.PathLike | None = None,
                      progress: bool = False):
    """Run accountants over the conformance corpus (:mod:`methods.privacy.conformance`; ``bench accountants check``):
    each ``accountants`` name (default ``ours-tight``, ``ours-rdp`` and ``ours-pld``; ``"all"``: every registered one, plugins
    included) on each case of the ``corpus`` files (default: the shipped corpus) whose id matches the glob
    ``cases`` and that carries any of ``tags``. Each result is TIGHT, LOOSE, UNSOUND, UNSUPPORTED or ERROR.
    ``against``: a golden file to compare with (values moved beyond ``rtol``, relative, or support changed);
    ``record``: write the golden file of this check; ``junit``: write JUnit XML. Bad input raises a
    :class:`~methods.errors.BenchError` before any accountant runs. Returns a
    :class:`methods.privacy.conformance.check.CheckOutcome` (``failed``, ``report.results``, ``report.summary()``,
    ``comparison``)."""
    from bench.accountants import check_job

    corpus = [corpus] if isinstance(corpus, (str, os.PathLike)) else corpus
    return check_job(accountants, pattern=cases, tags=names(tags), corpus=corpus, against_path=against,
                     rtol=float(rtol), record_path=record, junit_path=junit, progress=progress)


@api_job(ReproduceSpec)
def reproduce(spec: ReproduceSpec, *, log: Callable[[str], None] | None = None):
    """Re-run the cell of one published run record (``name``: as the page shows it, its cell id or its run id, in
    ``export``, default this checkout's ``docs/leaderboard/runs``) with the code of the commit the record names
    (this checkout, or a temporary git worktree of that commit), and compare test accuracy, macro-F1, spent epsilon,
    predictions hash and, unless ``attacks=False``, every attack rate with the record. Returns a
    :class:`bench.reproduce.Reproduction` (``verdict`` MATCH or DIFFER, ``comparisons``)."""
    from bench.reproduce import DEFAULT_EXPORT
    from bench.reproduce import reproduce as rerun

    return rerun(spec.name, spec.export or DEFAULT_EXPORT, attacks=spec.attacks, data_root=spec.data_root, log=log)


def study(name: str, *argv: str) -> int:
    """Run a study behind the published pages (:mod:`bench.studies`: ``"tune"``, ``"regenerate"``, ...) with its own
    command-line arguments; returns its exit status. ``bench.studies.studynames()`` lists them."""
    from bench.studies import run_study

    return run_study(name, [str(a) for a in argv])


def leaderboard(experiment: str = DEFAULT_EXPERIMENT, fmt: str = "md", track: bool = False):
    """The experiment's leaderboard: ``(text, rows)``, ``text`` in ``fmt`` (md, html or csv) and one
    :class:`bench.leaderboard.Row` per (dataset, unit, method, split, target epsilon, hyperparameter variant).
    ``track=True`` also logs the tables and plots as a run tagged ``kind=leaderboard``."""
    from bench.leaderboard import build

    return build(experiment, fmt, track=track)


def runs(experiment: str = DEFAULT_EXPERIMENT, *, status: str | None = "FINISHED",
         children: bool = False) -> list[dict[str, Any]]:
    """The runs of an experiment as plain data: ``run_id``, ``name``, ``status``, ``parent`` (a child run's
    target), ``params``, ``metrics`` (a run's released ``info`` numbers as ``info.<key>``; diagnostics as
    ``diagnostic.<key>``) and ``tags``. Only top-level runs unless ``children``; ``status=None``: any status."""
    from bench import tracking

    out = []
    for r in tracking.search_runs(experiment, f"attributes.status = '{status}'" if status else ""):
        parent = r.data.tags.get("mlflow.parentRunId")
        if parent and not children:
            continue
        out.append({"run_id": r.info.run_id, "name": r.info.run_name, "status": r.info.status, "parent": parent,
                    "params": dict(r.data.params), "metrics": dict(r.data.metrics), "tags": dict(r.data.tags)})
    return out


def results_table(results: list) -> str:
    """The ``bench run`` table of :func:`run` results (mean ± std over seeds per method and budget)."""
    from bench.run import results_table as table

    return table(results)


def attack_table(results: list) -> str:
    """The ``bench attack`` table: one row per target, attack and variant, with 95% bootstrap intervals."""
    from bench.attack import attack_table as table

    return table(results)


def catalog(what: str = "all", data_root: str | os.PathLike | None = None) -> dict[str, list[dict[str, Any]]]:
    """What there is: ``methods`` (name, privacy unit, description), ``datasets`` (and whether their files are
    found under ``data_root``), ``splits``, ``attacks``; ``what`` picks one section (default: all)."""
    from methods.errors import ConfigError

    sections = ("methods", "datasets", "splits", "attacks")
    if what not in ("all", *sections):
        raise ConfigError(f"unknown section {what!r} (choose all, {', '.join(sections)})")
    out: dict[str, list[dict[str, Any]]] = {}
    if what in ("all", "methods"):
        from methods.base import available_methods

        out["methods"] = [{"name": n, "privacy_unit": c.privacy_unit, "description": c.description}
                          for n, c in available_methods().items()]
    if what in ("all", "datasets"):
        from bench.datasets import dataset_catalog

        out["datasets"] = dataset_catalog(None if data_root is None else str(data_root))
    if what in ("all", "splits"):
        from bench.splits import split_catalog

        out["splits"] = split_catalog()
    if what in ("all", "attacks"):
        from bench.attack import list_attacks

        out["attacks"] = list_attacks()
    return out


def options(name: str) -> dict[str, Any]:
    """A method's (or attack's) hyperparameters: ``{"name", "kind", "privacy_unit"/"level", "description",
    "options": [{"name", "type", "default", "help"}, ...]}``; a method whose ``relation`` option chooses its
    neighbouring relation also lists each relation's unit label and note (``relation_labels``; ``privacy_unit``
    is the class's label, its default relation's)."""
    from attacks.base import available_attacks
    from bench.options import option_table
    from methods.base import available_methods, get_method

    methods = available_methods()
    if name in methods:
        cls = methods[name]
        out = {"name": name, "kind": "method", "privacy_unit": cls.label(),
               "description": cls.description, "options": option_table(cls.Config)}
        if cls.relation_labels:
            out["relation_labels"] = {rel: {"label": label, "note": note}
                                      for rel, (label, note) in cls.relation_labels.items()}
        return out
    attacks = available_attacks()
    if name in attacks:
        cls = attacks[name]
        return {"name": name, "kind": "attack", "level": cls.level, "description": cls.description,
                "options": option_table(cls.Config)}
    get_method(name)  # the usual "unknown method ...; available: ..." error
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["account", "attack", "attack_recorded", "attack_table", "audit", "audit_mechanisms", "catalog", "cells",
           "check_accountants", "config_records", "leaderboard", "options", "reproduce", "results_table", "run", "runs",
           "study", "sweep", "verify"]
