"""The requests of the jobs, and what they name, checked before anything heavy loads.

Each job that trains has one frozen request type: :class:`RunSpec` (``bench run``, ``bench attack``),
:class:`AuditSpec` and :class:`VerifySpec`, each of the last two containing the :class:`RunSpec` of its target.
A field declares its type, default and help once (:func:`option`); the command's flags
(:func:`bench.cliargs.request_args`) and the :mod:`bench.api` function's signature (:func:`signature`) are
generated from the fields, and :func:`build` turns the flat arguments of either into the request. A request
normalises its values and enforces its own rules when it is built (``__post_init__``: the audit's level picks its
canaries and mode, the mode its defaults), so no caller restates a default or a rule.

A leaf module (no torch): ``bench run -m nope`` answers its one ``error:`` line in a fraction of a second, and
the library builds the same request with the same rules, so the CLI and the library never disagree on what is valid.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bench import DEFAULT_EXPERIMENT
from bench.options import as_items
from methods.budget import Budget
from methods.errors import BenchError, ConfigError

#: ``bench attack --bootstrap``'s default (attacks.metrics.DEFAULT_BOOTSTRAP; not imported: it loads torch)
DEFAULT_BOOTSTRAP = 1000
#: the rule of every output option, as its ``--help`` ends (checked by :mod:`bench.io` before any work):
#: a file's folder must already exist (a typo never becomes a new folder tree); a folder may be new, not its parent
FILE_RULE = "its folder must exist"
DIR_RULE = "created if missing; its parent folder must exist"
ATTACK_NAMES = "threshold, shadow, lira, privgnn-attack1, privgnn-attack2, link-stealing, linkteller, or all"

# --------------------------------------------------------------------------------------
# Fields: type, default and help, declared once
# --------------------------------------------------------------------------------------


def option(default: Any = dataclasses.MISSING, help: str = "", *, factory: Callable[[], Any] | None = None,
           flags: tuple[str, ...] | None = None, choices: Sequence[str] | None = None, metavar: str | None = None,
           parse: Callable[[str], Any] | None = None, many: bool = False, commas: bool = True,
           negate: str | None = None, cli: bool = True, api: Any = dataclasses.MISSING,
           group: str | None = None) -> Any:
    """A request field with what its command-line flag and its API parameter are generated from.

    ``help`` is the flag's help and the parameter's meaning; ``flags`` the option strings (default
    ``--field-name``); ``parse`` converts one command-line value (default: by the field's type); ``many``: a list
    option (:class:`bench.cliargs.ListAction`: space-, comma-separated or repeated; ``commas=False`` for
    ``KEY=VALUE`` items); ``negate``: a boolean that the command line switches off with this flag (``--no-track``;
    the command line's default is then True); ``cli=False``: the API only (``tags``); ``api``: the API's default
    where it differs from the field's, e.g. ``progress`` is off in a library call; ``group``: flags of one group
    exclude each other."""
    meta = {"help": help, "flags": flags, "choices": tuple(choices) if choices else None, "metavar": metavar,
            "parse": parse, "many": many, "commas": commas, "negate": negate, "cli": cli, "api": api, "group": group}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Flat:
    """One argument of a job's flat form (its flags, its API parameter), as plain data: the field it sets, in the
    request or in the request's target run (``target``), under the job's name for it, with the field's
    :func:`option` metadata (``meta``) and its defaults (a request copies what it is given, so a shared default
    list is never changed)."""

    name: str
    field: dataclasses.Field
    meta: Mapping[str, Any]
    default: Any  # the field's default (a single field: the first of its list's default); MISSING: required
    api_default: Any  # the API's default (option's ``api``, else ``default``)
    target: bool = False
    single: bool = False  # a list field of the run that this job takes one value of (an audit's --method, --seed)
    help: str = ""
    required: bool = False


def _flat(name: str, f: dataclasses.Field, target: bool, single: bool, help: str, required: bool) -> Flat:
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    if single and value is not dataclasses.MISSING:
        value = value[0] if value else value
    api = f.metadata.get("api", dataclasses.MISSING)
    return Flat(name, f, f.metadata, value, value if api is dataclasses.MISSING else api, target, single, help,
                required)


def flat_fields(cls: type) -> list[Flat]:
    """The arguments of ``cls``'s job: a job containing a run request (``TARGET``: run field -> its name here, and
    ``TARGET_HELP``/``REQUIRED``/``SINGLE``) takes those of the run's fields, then its own."""
    out = []
    target = getattr(cls, "TARGET", None)
    if target is not None:
        run_fields = {f.name: f for f in dataclasses.fields(RunSpec)}
        helps, required, single = cls.TARGET_HELP, cls.REQUIRED, cls.SINGLE
        for run_name, name in target.items():
            f = run_fields[run_name]  # every target field is an init field
            out.append(_flat(name, f, True, run_name in single, helps.get(name, f.metadata.get("help", "")),
                             name in required))
    for f in dataclasses.fields(cls):
        if (f.name == "run" and target is not None) or not f.init:
            continue
        out.append(_flat(f.name, f, False, False, f.metadata.get("help", ""), f.name in getattr(cls, "REQUIRED", ())))
    return out


def build(cls: type, **kwargs: Any) -> Any:
    """The request of ``cls`` from its flat arguments (a command line's or an API call's); an unknown argument is a
    TypeError, as for any function, and a missing one takes the field's default."""
    flats = {f.name: f for f in flat_fields(cls)}
    unknown = sorted(set(kwargs) - set(flats))
    if unknown:
        raise TypeError(f"unexpected argument(s) for {cls.__name__}: {', '.join(unknown)}")
    run_kw, own = {}, {}
    for name, value in kwargs.items():
        f = flats[name]
        if f.target:
            run_kw[f.field.name] = [value] if f.single else value
        else:
            own[name] = value
    if getattr(cls, "TARGET", None) is None:
        return cls(**own)
    return cls(run=RunSpec(**run_kw), **own)


def signature(cls: type, fn: Callable[..., Any]) -> inspect.Signature:
    """The API signature of ``cls``'s job: its flat arguments (the required ones positional, the rest keyword-only
    with the API's defaults), then ``fn``'s own keyword-only parameters (``threads``, ``log``)."""
    own = [p for p in inspect.signature(fn).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    hints = typing.get_type_hints(RunSpec) | typing.get_type_hints(cls)
    params = []
    for f in flat_fields(cls):
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if f.required else inspect.Parameter.KEYWORD_ONLY
        default = inspect.Parameter.empty if f.required else f.api_default
        tp = hints.get(f.field.name, inspect.Parameter.empty)
        if f.single:
            tp = typing.get_args(tp)[0] if typing.get_args(tp) else tp
        params.append(inspect.Parameter(f.name, kind, default=default, annotation=tp))
    return inspect.Signature(params + own)


def api_job(cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make ``fn(request, *, <own keyword-only>)`` a :mod:`bench.api` function that takes ``cls``'s flat arguments
    (its signature: :func:`signature`), builds the request from them (a missing one takes the API default,
    :func:`option`'s ``api``) and calls ``fn`` with it; given a ``cls`` request itself, it passes it on."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = signature(cls, fn)
        own = [p.name for p in inspect.signature(fn).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        flats = flat_fields(cls)

        @functools.wraps(fn)
        def job(*args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and isinstance(args[0], cls):  # the request itself, built by a command or a caller
                unknown = sorted(set(kwargs) - set(own))
                if unknown:
                    raise TypeError(f"{fn.__name__}() given a {cls.__name__} takes only {', '.join(own)} besides "
                                    f"(got {', '.join(unknown)})")
                return fn(args[0], **kwargs)
            bound = sig.bind(*args, **kwargs)
            given = bound.arguments
            values = {f.name: given.get(f.name, f.api_default) for f in flats}
            return fn(build(cls, **values), **{k: given[k] for k in own if k in given})

        job.__signature__ = sig  # type: ignore[attr-defined]
        del job.__wrapped__  # the documentation tools would read fn's own signature through it
        return job

    return deco


def names(x: str | Iterable[str]) -> list[str]:
    """``"gcn,sage"`` or ``["gcn", "sage"]`` -> ``["gcn", "sage"]``."""
    items = [x] if isinstance(x, str) else list(x)
    return [n.strip() for item in items for n in str(item).split(",") if n.strip()]


def _set(obj: Any, **values: Any) -> None:
    for k, v in values.items():
        object.__setattr__(obj, k, v)


def _opt(convert: Callable[[Any], Any], x: Any) -> Any:
    return None if x is None else convert(x)


# --------------------------------------------------------------------------------------
# The requests
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunSpec:
    """A run request: every method x seed trained and evaluated, one tracked run each."""

    methods: list[str] = option(help="method name(s), space- or comma-separated or repeated (see `bench list "
                                     "methods`)", flags=("--method", "-m"), many=True, metavar="M")
    dataset: str = option(help="dataset name, e.g. cora, computers, csbm:nodes=5000", flags=("--dataset", "-d"))
    split: str | None = option(None, "split name (default: public for Planetoid, ogb for ogbn-*, else "
                                     "random-75-10-15)", flags=("--split", "-s"))
    seeds: list[int] = option(help="seeds, e.g. 0 1 2 or 0,1,2 (default: 0)", factory=lambda: [0], many=True,
                              parse=int, metavar="SEED")
    epsilon: float | None = option(None, "target epsilon for private methods ('inf' = no noise)",
                                   flags=("--epsilon", "-e"))
    delta: float | None = option(None, "target delta (default: the largest power of ten below 1/#units)")
    overrides: list[str] = option(help="hyperparameter override(s); 'method.key=value' targets one method "
                                       "(space-separated or repeated)", factory=list, flags=("--set",), many=True,
                                  commas=False, metavar="KEY=VALUE")
    device: str = option("auto", "auto | cpu | cuda[:N] (default: auto)")
    data_root: str | None = option(None, "the only folder searched for raw dataset files (default: $BENCH_DATA_ROOT, "
                                         "else the user cache, then the bundled copies, then the stock download)",
                                   metavar="DIR")
    download: bool = option(False, "download missing raw files into the user cache even with --data-root, "
                                   "$BENCH_DATA_ROOT or $BENCH_OFFLINE set (needs network)", group="network")
    experiment: str = option(DEFAULT_EXPERIMENT, "MLflow experiment name (default: %(default)s)")
    track: bool = option(True, "do not log to MLflow", negate="--no-track")
    progress: bool = option(False, "hide progress bars", negate="--no-progress")
    # membership-inference attacks on every trained model (bench.attack): names, "key=value" options,
    # bootstrap resamples for their intervals, an optional folder for ROC plots
    attacks: list[str] = option(help="also run these membership-inference attacks on every trained model "
                                     f"({ATTACK_NAMES})", factory=list, many=True, metavar="A")
    attack_overrides: list[str] = option(help="attack option(s), e.g. references=4 or lira.references=4 "
                                              "(space-separated or repeated); see `bench list ATTACK`", factory=list,
                                         flags=("--attack-set",), many=True, commas=False, metavar="KEY=VALUE")
    bootstrap: int = option(DEFAULT_BOOTSTRAP, "bootstrap resamples for the 95%% intervals (default: %(default)s; "
                                               "0 = none)")
    plot_dir: str | None = option(None, f"also save every ROC plot as a PNG in DIR ({DIR_RULE})", metavar="DIR")
    tags: dict[str, str] = option(help="extra MLflow tags on every run (bench.sweep marks its cells and their owner "
                                       "process with them)", factory=dict, cli=False)
    secure_noise: bool = option(False, "draw the DP noise from OS entropy, never logged, so the run's record cannot "
                                       "regenerate its noise (default: reproducible from the seed; the run logs which "
                                       "mode it used)")
    diagnostics: bool = option(False, "also put the diagnostics (training loss, accuracy on private labels, exact "
                                      "counts: not private, not released) into --output; MLflow always has them "
                                      "under diagnostic.*")
    hparams: bool = option(True, "use the checked-in hyperparameters of configs/hparams*.yaml for a method and "
                                 "dataset (bench.hparams; False: the methods' defaults)", cli=False)
    log_release: bool = option(True, "log the released model (bench.release: weights, cached noisy aggregates, a "
                                     "released graph, the served model) as the run's artefact release/, which "
                                     "attacks and audits of the recorded run load", cli=False)
    accountant: str | None = option(None, "the accountant that calibrates the noise and reports epsilon: tight "
                                          "(default), rdp, rdp/standard, pld, or a registered one (`bench "
                                          "accountants list`, a plugin's) once it passes the conformance suite on "
                                          "its whole corpus", metavar="NAME")

    #: the dataset named canonically (bench.datasets.registry.DatasetName), resolved with the split when the request
    #: is built
    dataset_name: Any = field(default=None, init=False, repr=False, compare=False)

    REQUIRED: ClassVar[tuple[str, ...]] = ("methods", "dataset")

    def __post_init__(self) -> None:
        _set(self, methods=names(self.methods), seeds=[int(s) for s in self.seeds],
             epsilon=_opt(float, self.epsilon), delta=_opt(float, self.delta), overrides=as_items(self.overrides),
             data_root=_opt(lambda p: str(os.fspath(p)), self.data_root), download=bool(self.download),
             track=bool(self.track), progress=bool(self.progress), attacks=names(self.attacks),
             attack_overrides=as_items(self.attack_overrides), bootstrap=int(self.bootstrap),
             plot_dir=_opt(lambda p: str(os.fspath(p)), self.plot_dir), tags=dict(self.tags or {}),
             hparams=bool(self.hparams), log_release=bool(self.log_release))
        # the request's rules: a method, a known dataset and split, distinct seeds, a valid budget (the method names
        # are the registry's, read where the methods are planned)
        name, split = check_request(self.methods, self.dataset, self.split, self.seeds, self.epsilon, self.delta)
        _set(self, dataset_name=name, split=split)


AUDIT_MODES = ("one-run", "multi-run", "pooled")
AUDIT_LEVELS = ("blackbox", "whitebox")
#: the pooled white-box design's defaults: runs, and gradient canaries per run
POOLED_RUNS, POOLED_CANARIES = 8, 1000
#: the other modes': models per world (multi-run), canaries (one-run)
MULTI_RUN_TRIALS, ONE_RUN_CANARIES = 50, 200

#: the run fields an audit or a verification takes, under their names there
_TARGET = {"methods": "method", "dataset": "dataset", "split": "split", "epsilon": "epsilon", "delta": "delta",
           "seeds": "seeds", "overrides": "overrides", "device": "device", "data_root": "data_root",
           "download": "download", "experiment": "experiment", "track": "track", "progress": "progress",
           "tags": "tags", "accountant": "accountant"}


@dataclass(frozen=True)
class AuditSpec:
    """An audit request: one method trained on neighbouring datasets with canaries, its membership guesses turned
    into an epsilon lower bound and compared with the ledger's claim. Its defaults follow from ``level`` and
    ``mode`` (resolved when the request is built)."""

    #: the target the audit trains: one method (``run.methods``), its data, budget, overrides, device and tracking,
    #: at the audit's seed (``run.seeds``: one; the split, canaries, inclusion bits and training seeds)
    run: RunSpec
    level: str | None = option(None, "blackbox: canaries in the data, the released model only (the default); "
                                     "whitebox: gradient canaries in every DP-SGD step, all steps observed "
                                     "(--canary-type gradient; default mode pooled: worst-case signed canaries, each "
                                     "an independent trial); mechanism: one release of each mechanism through the "
                                     "methods' code on a worst-case pair, many trials, no training (--mechanism, "
                                     "--epsilon, --trials, --mutation; no --method or --dataset)",
                               choices=(*AUDIT_LEVELS, "mechanism"))
    mode: str | None = option(None, "one-run: m canaries in one training run (Steinke et al. 2023); multi-run: T "
                                    "models with and T without one canary, Clopper-Pearson; pooled (white box only): "
                                    "R runs of m gradient canaries, every canary an independent trial, "
                                    "Clopper-Pearson and GDP bounds (default: pooled with --level whitebox, else "
                                    "one-run)", choices=AUDIT_MODES)
    trials: int | None = option(None, f"multi-run: models per world (default: {MULTI_RUN_TRIALS}); pooled: runs "
                                      f"(default: {POOLED_RUNS}); --level mechanism: trials per world in each of the "
                                      "selection and evaluation halves (default: 400000; nap-edge 2000000; "
                                      "dpgnn-step 200000; pate-votes 4000000; edgerand-count 25000; "
                                      "privgnn-posterior 1000000)")
    canaries: int | None = option(None, f"one-run: number of canaries m (default: {ONE_RUN_CANARIES}); pooled: "
                                        f"canaries per run (default: {POOLED_CANARIES})")
    confidence: float = option(0.95, "confidence of the bound (default: %(default)s)")
    hops: int | None = option(None, "receptive field the canaries are made hop-disjoint for (0 = anchors only "
                                    "distinct; default: 2; refused by the pooled white-box design, whose canaries "
                                    "are isolated)")
    canary_degree: int | None = option(None, "anchor edges per canary node (node/feature units; default: 1; pooled "
                                             "white box: its fresh anchors, default the worst-case design's: the "
                                             "declared max_degree, 3 without one)")
    canary_scale: float = option(3.0, "canary feature norm / median row norm (default: %(default)s)")
    canary_pattern: str = option("dedicated", "canary rows: one extra feature column each, or random +-1 rows "
                                              "(default: %(default)s)", choices=("dedicated", "random"))
    canary_type: str = option("input", "input: black box, score = the released model's confidence on the canary's "
                                       "label; gradient: white box for DP-SGD methods on raw features (dp-mlp, drw*, "
                                       "dpgnn*), the canary's examples get a clipped gradient on a coordinate of their "
                                       "own and the score is the sum of the released noisy gradients there (default: "
                                       "%(default)s)", choices=("input", "gradient"))
    fresh_anchors: bool = option(False, "anchor each canary to new zero-row training nodes of its own instead of "
                                        "existing ones (the pooled white-box design always does)")
    workers: int | None = option(None, "--level mechanism: audits run in this many processes (default: 1); pooled "
                                       "white-box audits: runs fitted in this many processes (default: one per core, "
                                       "at most one per run); one torch thread each, the same results")

    TARGET: ClassVar[dict[str, str]] = {**_TARGET, "seeds": "seed"}
    SINGLE: ClassVar[tuple[str, ...]] = ("methods", "seeds")
    REQUIRED: ClassVar[tuple[str, ...]] = ("method", "dataset")
    TARGET_HELP: ClassVar[dict[str, str]] = {
        "method": "method name (plugins via `bench --plugin FILE audit ...`); required unless --level mechanism",
        "dataset": "dataset name, e.g. csbm:nodes=2000,features=32 or cora; required unless --level mechanism",
        "split": "split name (default as in bench run)",
        "epsilon": "target epsilon ('inf' for non-private methods)",
        "seed": "audit seed: split, canaries, inclusion bits, training seeds",
        "overrides": "method hyperparameter override(s) (space-separated or repeated)"}

    @property
    def seed(self) -> int:
        """The audit's seed: its run's one seed."""
        return self.run.seeds[0]

    def canary_design(self) -> Any:
        """The canary design this request asks for (:class:`audits.canaries.CanaryConfig`, whose defaults fill
        what the request leaves out): for a pooled audit the isolated dedicated canaries its worst-case design
        starts from, fresh anchors only where ``canary_degree`` asks for them
        (:func:`audits.pooled.worst_case_design`)."""
        from audits.canaries import CanaryConfig

        if self.mode == "pooled":
            return CanaryConfig(hops=0, degree=self.canary_degree or 0, scale=self.canary_scale, pattern="dedicated",
                                fresh_anchors=self.canary_degree is not None)
        given = {k: v for k, v in (("hops", self.hops), ("degree", self.canary_degree)) if v is not None}
        return CanaryConfig(**given, scale=self.canary_scale, pattern=self.canary_pattern,
                            fresh_anchors=self.fresh_anchors)

    def __post_init__(self) -> None:
        if self.level == "mechanism":
            raise ConfigError("--level mechanism audits mechanisms, not a method's run (bench.api.audit_mechanisms)")
        if self.level is not None and self.level not in AUDIT_LEVELS:
            raise ConfigError(f"unknown audit level {self.level!r} (choose {', '.join(AUDIT_LEVELS)} or mechanism)")
        canary_type = self.canary_type
        if self.level is not None:
            wanted = "gradient" if self.level == "whitebox" else "input"
            if canary_type not in ("input", wanted):
                raise ConfigError(f"--level {self.level} contradicts --canary-type {canary_type}")
            canary_type = wanted
        mode = self.mode or ("pooled" if self.level == "whitebox" else "one-run")
        pooled = mode == "pooled"
        _set(self, canary_type=canary_type, mode=mode,
             trials=int(self.trials if self.trials is not None else POOLED_RUNS if pooled else MULTI_RUN_TRIALS),
             canaries=int(self.canaries if self.canaries is not None
                          else POOLED_CANARIES if pooled else ONE_RUN_CANARIES),
             confidence=float(self.confidence), hops=_opt(int, self.hops), canary_degree=_opt(int, self.canary_degree),
             canary_scale=float(self.canary_scale), fresh_anchors=bool(self.fresh_anchors))
        self._validate()

    def _validate(self) -> None:
        if len(self.run.methods) != 1 or len(self.run.seeds) != 1:
            raise ConfigError("an audit trains one method at one seed")
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise ConfigError(f"--workers must be a positive integer (got {self.workers!r})")
        if self.workers not in (None, 1) and self.mode != "pooled":
            raise ConfigError("--workers needs --level mechanism or the pooled white-box mode")
        if self.mode not in AUDIT_MODES:
            raise ConfigError(f"unknown audit mode {self.mode!r} (choose {', '.join(AUDIT_MODES)})")
        if self.mode == "multi-run" and self.trials < 2:
            raise ConfigError(f"--trials must be >= 2 (got {self.trials})")
        if self.mode == "pooled":
            if self.canary_type != "gradient":
                raise ConfigError("--mode pooled needs white-box gradient canaries (--level whitebox)")
            if self.trials < 1:
                raise ConfigError(f"--trials (runs) must be >= 1 (got {self.trials})")
            if self.canaries < 4:
                raise ConfigError(f"--canaries must be >= 4 (got {self.canaries})")
        if self.mode == "one-run" and self.canaries < 2:
            raise ConfigError(f"--canaries must be >= 2 (got {self.canaries})")
        if not 0 < self.confidence < 1:
            raise ConfigError(f"--confidence must be in (0, 1) (got {self.confidence})")
        if (self.hops is not None and self.hops < 0) or (self.canary_degree is not None and self.canary_degree < 0):
            raise ConfigError("--hops and --canary-degree must be >= 0")
        if self.mode == "pooled":
            # the pooled design (audits.pooled.worst_case_design) acts on the anchors and refuses what it cannot do
            if self.hops not in (None, 0):
                raise ConfigError("--hops: the pooled white-box design keeps every canary isolated, with fresh anchors "
                                  "of its own (leave --hops out)")
            if self.canary_pattern != "dedicated":
                raise ConfigError("--canary-pattern: the pooled white-box design needs dedicated canary columns")
            if self.fresh_anchors and self.canary_degree == 0:
                raise ConfigError("--fresh-anchors with --canary-degree 0: no anchor to make")
        if self.canary_pattern not in ("dedicated", "random"):
            raise ConfigError(f"unknown --canary-pattern {self.canary_pattern!r} (choose dedicated or random)")
        if self.canary_type not in ("input", "gradient"):
            raise ConfigError(f"unknown --canary-type {self.canary_type!r} (choose input or gradient)")
        if not self.canary_scale > 0:
            raise ConfigError(f"--canary-scale must be > 0 (got {self.canary_scale})")


@dataclass(frozen=True)
class VerifySpec:
    """A verification request: every check that applies to one method's privacy unit, once per seed, the
    statistical ones sharing the error budget ``1 - confidence``."""

    #: the target the battery fits: one method (``run.methods``), its data, budget, seeds (each a base fit and its
    #: checks), overrides, device and tracking
    run: RunSpec
    quick: bool = option(False, "fewer canaries (100) and inference probes: a few minutes")
    canaries: int | None = option(None, "canaries of the one-run audits (default 200; --quick 100)")
    trials: int = option(0, "also a multi-run audit with this many models per world (default 0: none)")
    confidence: float = option(0.95, "family-wise: a correct method fails with probability <= 1 - this (default: "
                                     "%(default)s)")
    checks: list[str] | None = option(None, "a subset of the checks (default: all that apply)", many=True,
                                      metavar="CHECK")
    inference_tries: int | None = option(None, "units the private-inference check changes, one refit each (default "
                                               "6; --quick 3)", metavar="N")

    TARGET: ClassVar[dict[str, str]] = _TARGET
    SINGLE: ClassVar[tuple[str, ...]] = ("methods",)
    REQUIRED: ClassVar[tuple[str, ...]] = ("method", "dataset")
    TARGET_HELP: ClassVar[dict[str, str]] = {
        "method": "method name (plugins via `bench --plugin FILE verify ...`)",
        "dataset": "dataset name, e.g. cora or csbm:nodes=2000,features=32",
        "split": "split name (default as in bench run)",
        "epsilon": "target epsilon (finite; required for a private method, left out for a non-private one)",
        "seeds": "seeds: the battery runs once per seed, the error budget shared by all (default: 0)",
        "overrides": "method hyperparameter override(s) (space-separated or repeated)",
        "progress": "hide progress lines and bars"}

    def __post_init__(self) -> None:
        if len(self.run.methods) != 1:
            raise ConfigError("a verification checks one method")
        _set(self, quick=bool(self.quick), canaries=_opt(int, self.canaries), trials=int(self.trials),
             confidence=float(self.confidence), checks=None if self.checks is None else names(self.checks) or None,
             inference_tries=self.inference_tries)


class SweepError(BenchError):
    """A sweep request or config that cannot be read or is malformed."""


@dataclass(frozen=True)
class SweepSpec:
    """A sweep request: a resumable grid of tracked runs, audits and verifications from a config (cells already
    FINISHED in the experiment are not run again)."""

    #: a YAML path, the same mapping as a dict, or a :class:`bench.sweep.SweepConfig`
    config: Any = option(help="YAML sweep config (see configs/)", flags=("config",))
    experiment: str | None = option(None, "MLflow experiment (overrides the config's)")
    executor: str = option("inprocess", "where cells run: this process, local worker processes, or Ray (default: "
                                        "%(default)s)", choices=("inprocess", "process", "ray"))
    workers: int = option(1, "parallel cells for process/ray executors (default: 1)")
    max_retries: int = option(1, "retries of a FAILED cell, and on Ray of a cell whose worker died (default: "
                                 "%(default)s)")
    address: str | None = option(None, "Ray cluster address (e.g. ray://host:10001 or auto); default: a local "
                                       "instance")
    dry_run: bool = option(False, "list what would run and what is already done")
    reclaim_remote: bool = option(False, "also mark KILLED RUNNING cells owned by sweeps on other hosts (they cannot "
                                         "be checked)")
    progress: bool = option(False, "hide the progress bar", negate="--no-progress")
    export: str | None = option(None, "a compact export of the cells (bench.records): its cells count as done "
                                      "(resume on another machine without the MLflow store) and every cell finished "
                                      "now is appended as it ends, as is (at the start and the end, interrupted too) "
                                      "every cell FINISHED in the store that it lacks; a directory holds one file per "
                                      f"dataset (a file: {FILE_RULE}; a directory: {DIR_RULE})",
                                metavar="FILE.jsonl|DIR/")
    teacher_cache: str | None = option(None, "keep the PrivGNN family's noise-free teacher outputs in DIR and reuse "
                                             "them across the run and verify cells of one seed (epsilons, LiRA "
                                             "references, verification worlds): the same results, teachers trained "
                                             "once (a verification's determinism fit recomputes); a cache: created "
                                             "with any missing parent folders", metavar="DIR")
    gpus_per_cell: float = option(0.0, "GPUs each cell's Ray task asks for (e.g. 1: one GPU per cell; 0.5: two cells "
                                       "share one); Ray makes only those visible to the cell (default: %(default)s)",
                                  metavar="N")

    REQUIRED: ClassVar[tuple[str, ...]] = ("config",)

    def __post_init__(self) -> None:
        config = self.config
        if isinstance(config, os.PathLike):
            config = os.fspath(config)
        _set(self, config=config, workers=int(self.workers), max_retries=int(self.max_retries),
             dry_run=bool(self.dry_run), reclaim_remote=bool(self.reclaim_remote), progress=bool(self.progress),
             export=_opt(lambda p: str(os.fspath(p)), self.export),
             teacher_cache=_opt(lambda p: str(os.fspath(p)), self.teacher_cache),
             gpus_per_cell=float(self.gpus_per_cell))
        if self.workers < 1:
            raise SweepError("--workers must be >= 1")
        if self.max_retries < 0:
            raise SweepError("--max-retries must be >= 0")
        if self.address and self.executor != "ray":
            raise SweepError("--address is for --executor ray")
        if self.gpus_per_cell < 0:
            raise SweepError("--gpus-per-cell must be >= 0")
        if self.gpus_per_cell and self.executor != "ray":
            raise SweepError("--gpus-per-cell is for --executor ray")


@dataclass(frozen=True)
class ReproduceSpec:
    """A reproduction request: one published run record's cell re-run with the code of the commit it names, and
    compared with the record."""

    name: str = option(help="the record's name as the page shows it (e.g. gap-edge/cora/random-75-10-15/eps=4/s0), "
                            "its cell id or its run id", flags=("name",), metavar="NAME")
    export: str | None = option(None, "the export to find the record in (default: this checkout's "
                                      "docs/leaderboard/runs)", metavar="PATH")
    attacks: bool = option(True, "re-run the training only (the attacks, LiRA's reference models above all, take "
                                 "longest)", negate="--no-attacks")
    data_root: str | None = option(None, "the folder with the raw dataset files (default: $BENCH_DATA_ROOT, else "
                                         "the user cache, then the bundled copies)", metavar="DIR")

    REQUIRED: ClassVar[tuple[str, ...]] = ("name",)

    def __post_init__(self) -> None:
        _set(self, name=str(self.name), export=_opt(lambda p: str(os.fspath(p)), self.export),
             attacks=bool(self.attacks), data_root=_opt(lambda p: str(os.fspath(p)), self.data_root))




def check_request(methods: Sequence[str], dataset: str, split: str | None, seeds: Sequence[int],
                  epsilon: float | None, delta: float | None, known: Collection[str] | None = None) -> tuple[Any, str]:
    """Raise a :class:`~methods.errors.BenchError` for the first invalid part of a request, in the order a run
    plan checks them; return the resolved dataset name (:class:`bench.datasets.registry.DatasetName`) and split.

    ``known``: the method names to accept (the built-in ones: :func:`methods.builtin_method_names`); ``None``
    leaves the names to the registry (:func:`methods.base.get_method`), e.g. once a plugin has registered more."""
    from bench.datasets.registry import resolve_dataset
    from bench.split_names import check_split

    if not methods:
        raise ConfigError("no method given")
    if known is not None:
        check_method_names(methods, known)
    if len(set(methods)) != len(methods):
        raise ConfigError("a method is listed twice")
    name = resolve_dataset(dataset)  # the one reading of the name: canonical, with its default split
    split = split or name.default_split
    check_split(split, name.name)
    seeds = tuple(seeds)
    if not seeds:
        raise ConfigError("no seed given")
    if len(seeds) == 1 and seeds[0] < 0:
        raise ConfigError(f"a seed must be a non-negative integer (got {seeds[0]})")
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be distinct non-negative integers (got {list(seeds)})")
    if epsilon is not None:
        Budget(epsilon, delta or 0.0)  # validates epsilon > 0 and delta in [0, 1)
    elif delta is not None:
        Budget(math.inf, delta)
    return name, split


def check_method_names(methods: Sequence[str], known: Collection[str]) -> None:
    """An unknown method name is the registry's own error (:func:`methods.base.get_method`'s words)."""
    for m in methods:
        if m not in known:
            raise ConfigError(f"unknown method {m!r}; available: {', '.join(sorted(known))}")


def check_sweep_config(path: str) -> None:
    """A sweep config's method names, read with the YAML parser alone, before the sweep's imports: the first unknown
    one is the error the config's loader would give (a plugin's names, or a file the loader will reject for
    another reason, are left to it)."""
    from bench.plugins import loaded_plugins
    from methods import builtin_method_names

    if loaded_plugins():
        return
    try:
        import yaml

        with open(path, encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
        entries = raw.get("methods") or []
        names = [e if isinstance(e, str) else e.get("name") for e in entries]
    except Exception:
        return
    check_method_names([n for n in names if isinstance(n, str)], builtin_method_names())


def check_cli_methods(methods: str | Sequence[str] | None) -> None:
    """A command line's method names, before its command imports the harness: the built-in names read from their
    declarations unless a plugin is loaded (then the registry decides, after the imports the plugin made anyway).
    The rest of the request is checked where it is built (:class:`RunSpec`)."""
    from bench.plugins import loaded_plugins
    from methods import builtin_method_names

    if not methods or loaded_plugins():
        return
    check_method_names([methods.strip()] if isinstance(methods, str) else list(methods), builtin_method_names())
