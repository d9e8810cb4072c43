"""``bench account``: epsilon of a method family's ledger, the calibrated noise for a target, or a tracked run's.

    bench account dpsgd --sampling poisson --sampling-rate Q --noise-multiplier S --steps T --delta D
    bench account dpsgd --sampling fixed --population N --batch-size M --noise-multiplier S --steps T --delta D
    bench account dp-mlp --num-train N --batch-size B --noise-multiplier S --steps T --delta D
    bench account dpgnn --num-train N --batch-size M --max-degree K --layers R --noise-multiplier L --steps T --delta D
                        [--relation input-graph|in-edges]
    bench account drw --num-nodes N --walk-length L [--restarts R] --batch-size M --noise-multiplier L --steps T --delta D
                      [--num-subgraphs M | --batchable-subgraphs M_TRAIN]
    bench account gap --level edge --depth K --sigma S --delta D            (ProGAP's edge level is the same ledger)
    bench account gap --level node --depth K --num-train N --batch-size B --encoder-steps T1 --classifier-steps T2
                      --noise-multiplier S --max-degree D --delta D [--relation input-graph|cut-off-graph]
    bench account progap --level edge --depth K --sigma S --delta D
    bench account progap --level node --depth K --num-train N --batch-size B --steps-per-stage T
                         --noise-multiplier S --max-degree D [--sigma-ap SAP] --delta D
                         [--relation input-graph|cut-off-graph]
    bench account edgerand --epsilon-link E1 --epsilon-density E2 --delta D
    bench account privgnn --queries Q --lam LAMBDA --sampling-rate GAMMA --delta D [--single-teacher]
    bench account pate --queries Q --lam LAMBDA --delta D
    bench account run RUN_ID [--delta D] [--json]

Each family form calls the same function (``methods.privacy.presets``) that the method's ``fit`` builds its
ledger with, so an account and a run cannot disagree; a form's options are those functions' parameters, read from
their signatures (:data:`FORMS`: ``--sampling`` and ``--level`` pick the function; the form adds only help, the
command line's defaults and its own rules), and one request (:class:`AccountSpec`) carries them to
:func:`account`, which :func:`bench.api.account` calls too. Sound conventions are the defaults: an undirected edge
has NAP sensitivity sqrt(2); ProGAP/GAP's node-level Poisson population is the training nodes
(``--num-train``); PrivGNN's posterior has L1 sensitivity 2. ``--convention paper`` gives the papers' own
values (edge sensitivity 1; ProGAP's population ``--num-nodes``, all nodes; PrivGNN's and PATE's published
accountants, methods/privgnn/paper_accounting.py), labelled as not sound where they are not.

Every family form takes ``--conversion improved|standard`` (default improved), ``--accountant tight|rdp|pld|NAME``
(default tight; NAME a registered accountant that passes the conformance suite) and ``--json``; ``--epsilon E`` in
place of the noise prints the smallest noise that meets (E, delta). ``run RUN_ID`` rebuilds a tracked run's ledger
from the recipe logged with it (family + parameters), checks it against the logged events, and prints its epsilon
at the run's delta (or ``--delta``).

The node-level DP-GNN, GAP and ProGAP forms take ``--relation``, the methods' ``relation`` option: ``input-graph``
(the default, as the methods': node-level DP on input graphs within the declared degree bound ``--max-degree``,
which the ledger then names public) or the papers' relation (``in-edges``: DP-GNN's Algorithm 1; ``cut-off-graph``:
GAP's and ProGAP's random cut-off), whose epsilon is relative to what the note says. The events are the same.

Every form prints the facts its epsilon takes as public by convention, as the family names them (``public by
convention: num_train = N: the training-set size ...``; ``conventions`` in ``--json``): a calibration that reads
the training-set size holds for neighbouring datasets of that size.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from bench.cliargs import _float, command, request_args
from bench.request import _opt, _set, option
from methods.errors import BenchError, BudgetError
from methods.privacy.accountant import ACCOUNTANTS
from methods.privacy.presets import DPGNN_RELATIONS, INPUT_GRAPH, NODE_RELATIONS

@dataclass(frozen=True)
class AccountSpec:
    """An account request (``bench account FORM``): a form's parameters (its ledger families', named by option;
    :data:`FORMS`), and what to compute with which accountant. Built, it holds the family the form's
    selector picks, every option's value with the defaults in, and the parameter the target calibrates
    (:func:`resolve`: each rule of a form is written there once)."""

    form: str = option(help="the form: dpsgd, dp-mlp, dpgnn, drw, gap, progap, edgerand, privgnn, pate (a method "
                            "family's ledger), or run (a tracked run's)", cli=False)
    params: dict[str, Any] = option(help="the form's options by name, e.g. {'level': 'edge', 'depth': 2, 'sigma': 7}",
                                    factory=dict, cli=False)
    delta: float | None = option(None, "the delta of the epsilon")
    epsilon: float | None = option(None, "calibrate the noise to this epsilon instead", group="noise")
    accountant: str | None = option(None, "tight (default, what runs report and calibrate with): the smallest sound "
                                          "bound the suite has; rdp: the RDP bound (the papers'); pld: privacy-loss "
                                          "distributions; or a registered accountant (`bench accountants list`) that "
                                          "passes the conformance suite, as a run's", metavar="NAME")
    conversion: str | None = option(None, "the RDP -> DP conversion of --accountant rdp (implied by this option; "
                                          "default improved; standard = Mironov Prop. 3, as papers report)",
                                    choices=("improved", "standard"))

    family: str | None = field(default=None, init=False, compare=False)
    values: dict[str, Any] = field(default_factory=dict, init=False, compare=False)
    noise: str | None = field(default=None, init=False, compare=False)

    REQUIRED: ClassVar[tuple[str, ...]] = ("form",)

    def __post_init__(self) -> None:
        _set(self, form=str(self.form), params=dict(self.params or {}), delta=_opt(float, self.delta),
             epsilon=_opt(float, self.epsilon))
        _set(self, **resolve(self))

    @classmethod
    def of(cls, form: str, *, delta: float | None = None, epsilon: float | None = None, accountant: str | None = None,
           conversion: str | None = None, **params: Any) -> "AccountSpec":
        """``AccountSpec.of("gap", level="edge", depth=2, sigma=7.0, delta=1e-4)``: the form's options as keywords."""
        return cls(form, params, delta=delta, epsilon=epsilon, accountant=accountant, conversion=conversion)



PAPER_NOTE = "the paper's convention, not a sound bound for this mechanism on undirected graphs"
SOUND = "sound"


@dataclass(frozen=True)
class Form:
    """A ``bench account`` form: the ledger families it accounts (:data:`methods.privacy.presets.FAMILIES`), one or
    several picked by the option ``selector`` (``--sampling``, ``--level``). Its options are the families' parameters,
    read from their signatures (name, type, default; required where every family requires it, else checked once the
    family is known); the form adds only what a signature cannot say.

    ``noise``: each family's parameter that ``--epsilon`` calibrates instead (default ``noise_multiplier``; None: the
    form has none); ``inverse``: that parameter is an inverse scale (lambda = 1 / b), so the calibration searches b
    (epsilon grows with lambda); ``flags``: an option's name where it differs from the parameter's; ``defaults``: the
    command line's defaults where they differ from the signatures' (the methods' relation: those keep recorded
    recipes rebuilding as they ran); ``exclusive`` options exclude each other; ``skip`` parameters have no option
    (structured values only a run records); ``relation``: the methods' relation option (choices, declared, papers);
    ``convention``: ``--convention``'s help where the form has one; ``pure``: delta may be 0 (its default);
    ``rules``: the form's own rules on its parameters (named by option), once defaults are in; ``derived``: the facts
    it reports beside them; ``paper``: the papers' own accountant for ``--convention paper``."""

    title: str
    families: Mapping[str, str]
    selector: str | None = None
    noise: Mapping[str, str | None] = field(default_factory=dict)
    noise_help: Mapping[str, str] = field(default_factory=dict)
    inverse: bool = False
    flags: Mapping[str, str] = field(default_factory=dict)
    help: Mapping[str, str] = field(default_factory=dict)
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    exclusive: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    relation: tuple[tuple[str, ...], str, str] | None = None
    convention: str | None = None
    pure: bool = False
    rules: Callable[[dict[str, Any]], None] | None = None
    derived: Callable[[dict[str, Any], float], dict[str, Any]] | None = None
    paper: Callable[[AccountSpec], dict[str, Any]] | None = None

    def noise_of(self, family: str) -> str | None:
        return self.noise.get(family, "noise_multiplier")

    def option(self, param: str) -> str:
        return self.flags.get(param, param)

    def parameters(self, family: str) -> list[inspect.Parameter]:
        """The family's parameters that are options here (its noise included)."""
        from methods.privacy.presets import FAMILIES

        return [p for p in inspect.signature(FAMILIES[family]).parameters.values() if p.name not in self.skip]

    def options(self) -> dict[str, tuple[inspect.Parameter, list[str]]]:
        """Every option but the selector, ``--epsilon`` and the output's: option name -> (its parameter in the first
        family that has it, the families that have it), in signature order."""
        out: dict[str, tuple[inspect.Parameter, list[str]]] = {}
        for fam in self.families.values():
            for p in self.parameters(fam):
                name = self.option(p.name)
                out.setdefault(name, (p, []))[1].append(fam)
        if self.convention is not None:
            out.setdefault("convention", (inspect.Parameter("convention", inspect.Parameter.KEYWORD_ONLY,
                                                            default=SOUND), []))
        return out

    def default(self, name: str, param: inspect.Parameter) -> Any:
        """An option's value when not given: the form's default, else the signature's (None: required)."""
        if name in self.defaults:
            return self.defaults[name]
        return None if param.default is inspect.Parameter.empty else param.default


def _edgerand_rules(p: dict[str, Any]) -> None:
    if not ((p["epsilon_link"] or 0) > 0 and (p["epsilon_density"] or 0) > 0):
        raise BudgetError("--epsilon-link and --epsilon-density must be > 0")


def _progap_rules(p: dict[str, Any]) -> None:
    """Sound: the Poisson population is the training nodes (``--num-train``); the paper's is all nodes."""
    if p.get("level") != "node":
        return
    if p["convention"] == "paper":
        if p.get("num_nodes") is None:
            raise BenchError("account progap: missing --num-nodes")
        if p.get("num_train") is None:
            p["num_train"] = p["num_nodes"]  # not read under the paper's convention
    elif p.get("num_nodes") is not None:
        raise BenchError("account progap --level node: --num-nodes is the paper's population (all nodes), which "
                         "understates the sampling rate; the sound ledger samples the training nodes: give --num-train "
                         "(or --convention paper with --num-nodes)")


def _privgnn_rules(p: dict[str, Any]) -> None:
    if p["sensitivity"] is None:  # the paper's posterior sensitivity is 1, a sound one 2
        p["sensitivity"] = 1.0 if p["convention"] == "paper" else 2.0


def _gap_derived(p: dict[str, Any], noise: float) -> dict[str, Any]:
    from methods.privacy import presets as P

    if p.get("level") == "node":
        return {"sigma_ap": noise * math.sqrt(p["max_degree"])} if p.get("sigma_ap", 0) is None else {}
    return {"sensitivity": P.edge_sensitivity(p["convention"])}


def _drw_derived(p: dict[str, Any], noise: float) -> dict[str, Any]:
    from methods.privacy import presets as P

    return {"m_min": P.drw_min_subgraphs(p["num_nodes"], p["walk_length"], p["restarts"])}


_DECLARED = "a declared public bound on every node's degree (the run refuses a graph above it)"
_CUTOFF = "relative to the graph after the random out-degree cut-off to D"
_LEVEL = {"edge": "aggregation-edge"}
_NOISE_HELP = {"sigma": "edge level: std of the aggregation noise", "noise_multiplier": "node level: DP-SGD noise "
               "multiplier z"}
_CONVENTION = "edge sensitivity 1 (one directed entry) and, for ProGAP node level, population N"

FORMS: dict[str, Form] = {
    "dpsgd": Form("DP-SGD with Poisson or fixed-size (without replacement) batches",
                  {"poisson": "dpsgd-poisson", "fixed": "dpsgd-fixed"}, selector="sampling",
                  noise_help={"noise_multiplier": "noise std / per-example sensitivity"}, flags={"rate": "sampling_rate"},
                  help={"rate": "Poisson rate q", "population": "fixed: number of examples N",
                        "batch_size": "fixed: batch size M"},
                  choices={"unit": ("node", "edge", "feature")}),
    "dp-mlp": Form("DP-MLP: DP-SGD over Poisson batches of the training nodes", {"": "dp-mlp"},
                   noise_help={"noise_multiplier": "noise std / clipping threshold"}),
    "dpgnn": Form("DP-GNN (Daigavane et al. 2022), Theorem 1", {"": "dpgnn"},
                  noise_help={"noise_multiplier": "lambda = sigma / (2 C N(K,r))"}, defaults={"relation": INPUT_GRAPH},
                  relation=(DPGNN_RELATIONS, "a declared public bound on every node's number of training in-neighbours "
                            "(the run refuses a graph above it)", "Algorithm 1's in-degree sampling, a node owning its "
                            "incoming edge list")),
    "drw": Form("random-walk DP-SGD (Ayle et al. 2022): DRW, DRW-R, DRW-D", {"": "drw"},
                noise_help={"noise_multiplier": "lambda = sigma / (2C)"},
                help={"num_subgraphs": "the actual number of subgraphs (default: the M_min bound)",
                      "batchable_subgraphs": "transductive runs: the number of subgraphs rooted at training nodes (the "
                                             "population batches are drawn from; the run logs it as num_subgraphs)"},
                exclusive=("num_subgraphs", "batchable_subgraphs"), skip=("segments",), derived=_drw_derived),
    "gap": Form("GAP (Sajadmanesh et al. 2023): edge or node level", {**_LEVEL, "node": "gap-node"},
                selector="level", noise={"aggregation-edge": "sigma"}, noise_help=_NOISE_HELP,
                help={"depth": "K (NAP releases)", "num_train": "node level: training nodes (the Poisson population)"},
                defaults={"relation": INPUT_GRAPH}, convention=_CONVENTION,
                relation=(NODE_RELATIONS, _DECLARED, _CUTOFF), derived=_gap_derived),
    "progap": Form("ProGAP (Sajadmanesh & Gatica-Perez 2023), Theorems 4.1 (edge) and 4.2 (node)",
                   {**_LEVEL, "node": "progap-node"}, selector="level", noise={"aggregation-edge": "sigma"},
                   noise_help=_NOISE_HELP,
                   help={"depth": "K (NAP releases)", "num_train": "node level: training nodes (the Poisson population)",
                         "sigma_ap": "node level: std of the aggregation noise (default: multiplier x sqrt(D))",
                         "num_nodes": "node level, --convention paper only: the theorem's N (all nodes)"},
                   defaults={"relation": INPUT_GRAPH}, convention=_CONVENTION,
                   relation=(NODE_RELATIONS, _DECLARED, _CUTOFF), rules=_progap_rules, derived=_gap_derived),
    "edgerand": Form("EdgeRand: randomized response on the adjacency + a Laplace edge count", {"": "edgerand"},
                     noise={"edgerand": None}, pure=True, rules=_edgerand_rules),
    "privgnn": Form("PrivGNN (Olatunji et al. 2023): Poisson-subsampled Laplace per query", {"": "privgnn"},
                    noise={"privgnn": "lam"}, noise_help={"lam": "lambda = 1 / Laplace scale"}, inverse=True,
                    help={"sampling_rate": "gamma", "sensitivity": "L1 sensitivity of a posterior vector (default 2, "
                                                                   "sound; 1 with --convention paper)",
                          "single_teacher": "the SINGLEGNN ablation: one subsample and one teacher answer every query"},
                    defaults={"sensitivity": None}, convention="formulas behind its Tables 2-3 (not a sound bound)",
                    rules=_privgnn_rules, paper=lambda spec: _paper_convention(spec)),
    "pate": Form("PATE-M / PATE-G (PrivGNN's baselines): Laplace-noisy vote counts per query", {"": "pate"},
                 noise={"pate": "lam"}, noise_help={"lam": "lambda = 1 / Laplace scale on each vote count"},
                 inverse=True, convention="data-independent moments accountant (Papernot et al. 2017), as PrivGNN's "
                                          "Table 2", paper=lambda spec: _paper_convention(spec)),
}


def _relation(p: argparse.ArgumentParser, relation: tuple[tuple[str, ...], str, str], node_only: bool) -> None:
    """``--relation``: the methods' ``relation`` option (the sound default first, then the papers')."""
    choices, declared, papers = relation
    p.add_argument("--relation", choices=choices,
                   help=f"{'node level: ' if node_only else ''}the neighbouring relation of the epsilon: "
                        f"{choices[0]} (default, as the method's: --max-degree is {declared}, named public) or "
                        f"{choices[1]} (the paper's: {papers})")


def _form_args(q: argparse.ArgumentParser, form: Form) -> None:
    """A form's options (see :class:`Form`), then the request's."""
    import typing

    from methods.privacy.presets import FAMILIES

    if form.selector:
        q.add_argument("--" + form.selector, choices=list(form.families), required=True)
    options = form.options()
    noises = list(dict.fromkeys(n for n in (form.noise_of(f) for f in form.families.values()) if n))
    group = q.add_mutually_exclusive_group() if form.exclusive else None
    noise = q.add_mutually_exclusive_group(required=True) if noises else None
    for name, (p, fams) in options.items():
        flag = "--" + name.replace("_", "-")
        if p.name in noises:  # with --epsilon, after the rest (one group in the usage line)
            continue
        if name == "relation" and form.relation is not None:
            _relation(q, form.relation, node_only=len(form.families) > 1)
            continue
        if name == "convention" and form.convention is not None:
            q.add_argument("--convention", choices=[SOUND, "paper"],
                           default=SOUND if len(fams) in (0, len(form.families)) else None,
                           help=f"{SOUND} (default) or the paper's {form.convention}")
            continue
        hints = typing.get_type_hints(FAMILIES[fams[0]])
        tp = hints.get(p.name)
        base = ([a for a in typing.get_args(tp) if a is not type(None)] or [tp])[0]
        everywhere = len(fams) == len(form.families)  # a parameter of every family the form accounts
        required = everywhere and p.default is inspect.Parameter.empty and name not in form.defaults
        target = group if name in form.exclusive else q
        if base is bool:
            target.add_argument(flag, action="store_true", help=form.help.get(name) or form.help.get(p.name))
            continue
        default = form.default(name, p) if everywhere else None
        text = form.help.get(name) or form.help.get(p.name) or (
            "(required)" if required else f"(default: {default})" if everywhere else None)
        kw: dict[str, Any] = {"type": _float if base is float else base, "help": text}
        if name in form.choices:
            kw["choices"] = list(form.choices[name])
        target.add_argument(flag, required=required, **({} if required else {"default": default}), **kw)
    if noise is None:  # a pure mechanism: delta may be 0
        request_args(q, AccountSpec, only=("delta",), helps={"delta": "delta (default 0)"})
    else:
        for name in noises:
            noise.add_argument("--" + form.option(name).replace("_", "-"), type=_float, help=form.noise_help.get(name))
        request_args(q, AccountSpec, only=("epsilon",), groups={"noise": noise})
        request_args(q, AccountSpec, only=("delta",), required={"delta": True})
    request_args(q, AccountSpec, only=("conversion", "accountant"))
    q.add_argument("--json", action="store_true", help="print one JSON object")


@command("account", "compute epsilon for a mechanism (or calibrate its noise to a target epsilon)")
def _account_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("account", help="compute epsilon for a mechanism (or calibrate its noise to a target epsilon)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mech = p.add_subparsers(dest="mechanism", metavar="MECHANISM", title="mechanisms")
    mech.required = True
    for name, form in FORMS.items():
        _form_args(mech.add_parser(name, help=form.title), form)
    q = mech.add_parser("run", help="re-account a tracked run: rebuild its logged ledger and print its epsilon")
    q.add_argument("run_id", metavar="RUN_ID", help="MLflow run id (bench run prints it in --output JSON)")
    request_args(q, AccountSpec, only=("delta",), helps={"delta": "delta (default: the run's own)"})
    q.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_account)
    return p


#: the smallest value of every count a family form takes, checked before the accountant runs (whose own errors
#: name its parameters, not the options)
AT_LEAST = {"steps": 0, "population": 1, "batch_size": 1, "num_train": 1, "max_degree": 0, "layers": 0,
            "num_nodes": 1, "walk_length": 0, "restarts": 1, "num_subgraphs": 1, "batchable_subgraphs": 1,
            "depth": 0, "encoder_steps": 0, "classifier_steps": 0, "steps_per_stage": 0, "queries": 0}


def check_numbers(params: Mapping[str, Any]) -> None:
    """Counts, rates and scales a form is given are in range (one ``error:`` line naming the option)."""
    for name, low in AT_LEAST.items():
        value = params.get(name)
        if value is not None and value < low:
            raise BenchError(f"--{name.replace('_', '-')} must be >= {low} (got {value})")
    rate = params.get("sampling_rate")
    if rate is not None and not 0 <= rate <= 1:
        raise BenchError(f"--sampling-rate must be in [0, 1] (got {rate})")
    for name in ("sigma_ap", "sensitivity"):
        value = params.get(name)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise BenchError(f"--{name.replace('_', '-')} must be > 0 and finite (got {value})")


def _flags(names: Iterable[str]) -> str:
    return ", ".join("--" + n.replace("_", "-") for n in names)


def _float_params(family: str) -> set[str]:
    import typing

    from methods.privacy.presets import FAMILIES

    hints = typing.get_type_hints(FAMILIES[family])
    return {n for n, tp in hints.items() if float in (tp, *typing.get_args(tp))}


def resolve(spec: AccountSpec) -> dict[str, Any]:
    """An account request's rules, in the order its errors name them: the numbers in range, the accountant admitted,
    delta in range, the family the selector picks, the form's defaults and rules, no option of another family, no
    missing one, the noise or a positive target. Returns what :class:`AccountSpec` resolves: ``family``, ``values``
    (every option of the family and the form, defaults in), ``noise`` (the calibrated parameter's name, or None)."""
    form = FORMS.get(spec.form)
    if form is None and spec.form != "run":
        raise BenchError(f"unknown account form {spec.form!r}; available: {', '.join([*FORMS, 'run'])}")
    params = dict(spec.params)
    check_numbers(params)
    if spec.form == "run":
        if spec.delta is not None and not 0 <= spec.delta < 1:
            raise BudgetError(f"delta must be in [0, 1) (got {spec.delta})")
        if not params.get("run_id"):
            raise BenchError("account run: give the run id")
        return {"family": None, "values": params, "noise": None, "delta": spec.delta, "accountant": None,
                "conversion": None}
    accountant, conversion = resolve_accountant(spec.accountant, spec.conversion)
    known = set(form.options()) | ({form.selector} if form.selector else set())
    unknown = sorted(set(params) - known)
    if unknown:
        raise BenchError(f"account {spec.form}: no option {_flags(unknown)} (it takes {_flags(sorted(known))})")
    delta = 0.0 if spec.delta is None and form.pure else spec.delta
    if form.pure:
        if not 0 <= delta < 1:
            raise BudgetError(f"delta must be in [0, 1) (got {delta})")
    elif delta is None or not 0 < delta < 1:
        raise BudgetError(f"delta must be in (0, 1) (got {delta})")
    if form.selector:
        choice = params.get(form.selector)
        if choice not in form.families:
            raise BenchError(f"account {spec.form}: --{form.selector} must be one of {', '.join(form.families)} "
                             f"(got {choice})")
        family = form.families[choice]
    else:
        family = next(iter(form.families.values()))
    options = form.options()
    mine = {name for name, (_, fams) in options.items() if family in fams or not fams}
    values = {form.selector: params[form.selector]} if form.selector else {}
    floats = _float_params(family)
    for name, (p, _) in options.items():
        if name in mine:
            v = params.get(name)
            if p.name in floats and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)  # as the command line parses it: a ledger states its noise and rates as floats
            values[name] = form.default(name, p) if v is None else v
    noise = form.noise_of(family)
    others = {name: p for name, (p, fams) in options.items() if name not in mine}
    wrong_noise = [n for n in others if others[n].name in {form.noise_of(f) for f in form.families.values()}
                   and params.get(n) is not None]
    if wrong_noise:
        other = next(k for k, f in form.families.items() if form.noise_of(f) == others[wrong_noise[0]].name)
        raise BenchError(f"account {spec.form}: {_flags(wrong_noise)} is {other}-{form.selector}; {params[form.selector]} "
                         f"{form.selector} takes {_flags([noise])} (or --epsilon)")
    extra = [n for n in others if params.get(n) is not None]
    if extra:
        other = next(k for k, f in form.families.items() if f != family)
        raise BenchError(f"account {spec.form}: {_flags(extra)} apply to --{form.selector} {other} only")
    if form.rules is not None:
        form.rules(values)
    missing = [name for name, (p, _) in options.items() if name in mine and p.name != noise and values[name] is None
               and p.default is inspect.Parameter.empty]
    if missing:
        raise BenchError(f"account {spec.form}: missing {_flags(missing)}")
    if noise is not None and not (form.paper is not None and values.get("convention") == "paper"):
        if spec.epsilon is not None:
            if not spec.epsilon > 0:
                raise BudgetError(f"epsilon must be > 0 (got {spec.epsilon})")
        else:
            value = values.get(noise)
            if value is None or not value > 0:
                raise BudgetError(f"--{noise.replace('_', '-')} must be > 0 (got {value})")
    return {"family": family, "values": values, "noise": noise, "delta": delta, "accountant": accountant,
            "conversion": conversion}


def resolve_accountant(accountant: str | None, conversion: str | None) -> tuple[str, str]:
    """``--conversion`` names an RDP conversion, so alone it means ``--accountant rdp``; with another accountant it
    is refused (no other accountant converts). A registered accountant is admitted as a run's is."""
    if accountant is None:
        accountant = "rdp" if conversion else "tight"
    elif conversion and accountant != "rdp":
        raise BenchError(f"--conversion applies to --accountant rdp only (got --accountant {accountant})")
    elif accountant not in ACCOUNTANTS:
        from methods.privacy.conformance.check import admit

        admit(accountant)  # a registered accountant accounts here as it would a run: once admitted
    return accountant, conversion or "improved"


def _label(spec: AccountSpec) -> str:
    return f"rdp, {spec.conversion}" if spec.accountant == "rdp" else spec.accountant


def account(spec: AccountSpec) -> dict[str, Any]:
    """The account a request asks for: the family's ledger at the given noise (or the noise calibrated to
    ``epsilon``), its epsilon at delta with the request's accountant, the facts it takes as public (``bench account
    FORM --json``'s object); or a tracked run's (:func:`account_run`)."""
    return _account(spec)[0]


def _account(spec: AccountSpec) -> tuple[dict[str, Any], Any]:
    """(:func:`account`'s object, the ledger it accounts, or None)."""
    from methods.privacy import LedgerError, calibrate_noise
    from methods.privacy.presets import FAMILIES

    if spec.form == "run":
        return account_run(spec.values["run_id"], spec.delta), None
    form, values, noise = FORMS[spec.form], dict(spec.values), spec.noise
    if form.paper is not None and values.get("convention") == "paper":
        return form.paper(spec), None
    fn = FAMILIES[spec.family]
    kwargs = {p.name: values[form.option(p.name)] for p in form.parameters(spec.family) if p.name != noise}
    reported = {k: v for k, v in values.items() if k != form.option(noise or "")}
    if noise is None:
        build = lambda _: fn(**kwargs)  # noqa: E731
    elif form.inverse:  # calibrate the scale 1 / lambda: epsilon decreases in it
        build = lambda b: fn(**{noise: 1.0 / b}, **kwargs)  # noqa: E731
    else:
        build = lambda z: fn(**{noise: z}, **kwargs)  # noqa: E731
    out = {"mechanism": spec.form, **reported, "delta": spec.delta, "conversion": spec.conversion,
           "accountant": spec.accountant}
    try:
        if noise is None:
            value = None
        elif spec.epsilon is not None:
            value = calibrate_noise(build, spec.epsilon, spec.delta, accountant=spec.accountant,
                                    conversion=spec.conversion, rtol=1e-4)
            out["target_epsilon"] = spec.epsilon
        else:
            value = 1.0 / values[noise] if form.inverse else values[noise]
        ledger = build(value)
        eps, order = ledger.epsilon_and_order(spec.delta, spec.accountant, spec.conversion)
    except LedgerError as e:
        raise BenchError(str(e)) from None
    if noise is not None:
        out[noise] = 1.0 / value if form.inverse else value
    if form.derived is not None:
        out.update(form.derived(values, value))
    if values.get("convention", SOUND) == "paper":
        out["note"] = PAPER_NOTE
    out.update(epsilon=eps, order=_order(order), ledger=ledger.describe(),
               recipe=ledger.recipe.to_dict() if ledger.recipe else None, conventions=ledger.public_facts)
    return out, ledger


def cmd_account(args: argparse.Namespace) -> int:
    form = FORMS.get(args.mechanism)
    names = ["run_id"] if form is None else [*([form.selector] if form.selector else []), *form.options()]
    spec = AccountSpec(args.mechanism, {n: getattr(args, n) for n in names if getattr(args, n, None) is not None},
                       delta=args.delta, epsilon=getattr(args, "epsilon", None),
                       accountant=getattr(args, "accountant", None), conversion=getattr(args, "conversion", None))
    out, ledger = _account(spec)
    if spec.form == "run":
        return _print_run(out, args.json)
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    if "method" in out:  # the papers' own accountant
        return _print_paper(out)
    noise = spec.noise
    if spec.epsilon is not None:
        print(f"{noise} = {out[noise]:.6g}  (meets epsilon {spec.epsilon:g}: spent {out['epsilon']:.6g} at delta "
              f"{spec.delta:g})")
    _print_eps(out["epsilon"], spec.delta, out["order"], _label(spec))
    _print_conventions(ledger)
    print(f"ledger: {ledger.describe()}")
    if "relation" in out:  # what the papers' relations' epsilon is relative to (the family's note)
        notes = [n for n in ledger.notes if "relation" in n or "relative to" in n]
        if out["relation"] == INPUT_GRAPH:
            notes = [f"node-level DP on input graphs within the declared bound max_degree = {out['max_degree']}, "
                     "public (above)"]
        print(f"relation: {out['relation']}" + (f" ({notes[0]})" if notes else ""))
    if "note" in out:
        print(f"note: {out['note']}")
    return 0


def _order(order: float) -> float | None:
    return None if math.isnan(order) or math.isinf(order) else order


def _print_eps(eps: float, delta: float, order: float | None, how: str) -> None:
    order_s = "-" if order is None else f"{order:g}"
    print(f"epsilon = {eps:.6g}  delta = {delta:g}  order = {order_s}  ({how})")


def _print_conventions(ledger) -> None:
    """The facts the epsilon takes as public (``PrivacyLedger.conventions``), under the epsilon they qualify."""
    for line in ledger.describe_conventions():
        print(f"public by convention: {line}")


def account_run(run_id: str, delta: float | None = None) -> dict[str, Any]:
    """Re-account a tracked run: its logged ledger rebuilt from the recipe (the family function ``fit`` used),
    checked against the logged events, and its epsilon at the run's delta (or ``delta``)."""
    from bench import tracking
    from methods.privacy import LedgerError, PrivacyLedger
    from methods.privacy import presets as P

    try:
        run = tracking.client().get_run(run_id)
    except Exception as e:  # MLflow raises its own types for unknown ids
        raise BenchError(f"no tracked run {run_id!r} in {tracking.tracking_uri()} ({type(e).__name__})") from None
    try:
        logged = PrivacyLedger.from_dict(json.loads(tracking.client_download_text(run_id, "ledger.json")))
    except FileNotFoundError:
        raise BenchError(f"run {run_id} has no ledger.json artifact (not a bench run?)") from None
    params, metrics = run.data.params, run.data.metrics
    d = float(params.get("delta", "nan")) if delta is None else float(delta)
    if not 0 <= d < 1:
        raise BudgetError(f"delta must be in [0, 1) (got {d})")
    out: dict[str, Any] = {"run_id": run_id, "method": params.get("method"), "dataset": params.get("dataset"),
                           "delta": d, "reported_epsilon": _metric_eps(metrics.get("epsilon"))}
    if logged.recipe is not None:
        try:
            rebuilt = P.rebuild(logged.recipe)
        except LedgerError as e:
            raise BenchError(f"run {run_id}: {e}") from None
        match = rebuilt.same_events(logged)
        out.update(family=logged.recipe.family, params=logged.recipe.to_dict()["params"], events_match=match)
        if not match:
            raise BenchError(f"run {run_id}: the ledger rebuilt from its recipe ({rebuilt.describe()}) differs from "
                             f"the logged events ({logged.describe()})")
        ledger = rebuilt.mark_non_private(logged.non_private_use) if logged.non_private_use else rebuilt
    else:
        out.update(family=None, params=None, events_match=None)
        ledger = logged
    eps, order = ledger.epsilon_and_order(d)
    out.update(epsilon=eps, order=_order(order), ledger=ledger.describe(), conventions=ledger.public_facts,
               conventions_text=ledger.describe_conventions())
    return out


def _metric_eps(v: Any) -> float | None:
    if v is None:
        return None
    v = float(v)
    return math.inf if v >= 1e307 else v


def _print_run(out: dict[str, Any], as_json: bool) -> int:
    if as_json:
        print(json.dumps({k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in out.items()},
                         indent=2, default=str))
        return 0
    _print_eps(out["epsilon"], out["delta"], out["order"], "rdp, improved")
    for line in out["conventions_text"]:
        print(f"public by convention: {line}")
    rep = out["reported_epsilon"]
    print(f"reported by the run: {'-' if rep is None else f'{rep:.6g}'}")
    if out["family"]:
        args_s = ", ".join(f"{k}={v}" for k, v in out["params"].items())
        print(f"family: {out['family']}({args_s})  [events match the log]")
    print(f"ledger: {out['ledger']}")
    return 0


def _paper_convention(spec: AccountSpec) -> dict[str, Any]:
    """PrivGNN's published conventions (methods/privgnn/paper_accounting.py): a regression aid, not a bound."""
    from methods.privgnn import paper_accounting as PA

    v = spec.values
    if spec.epsilon is not None:
        raise BenchError("--convention paper computes the paper's epsilon for a given --lam; calibration "
                         "(--epsilon) uses the sound accountant only")
    lam = v.get("lam")
    if lam is None or not lam > 0:
        raise BudgetError(f"--lam must be > 0 (got {lam})")
    if spec.form == "privgnn":
        if v["single_teacher"]:
            raise BenchError("--convention paper has no SINGLEGNN formula (the paper claims PrivGNN's); "
                             "use the sound convention")
        eps, order = PA.privgnn_epsilon(v["queries"], lam, v["sampling_rate"], spec.delta, v["sensitivity"])
        method = ("Zhu & Wang exact Poisson-subsampled Laplace RDP, standard conversion over integer orders 2..32 "
                  "(paper Tables 2-3)")
        extra = {"theorem7_epsilon": PA.theorem7_epsilon(v["queries"], lam, v["sampling_rate"], spec.delta)}
    else:
        eps, order = PA.pate_moments_epsilon(v["queries"], lam, spec.delta)
        method = "Papernot et al. (2017) data-independent moments accountant, l = 1..8 (paper Table 2)"
        extra = {}
    return {"mechanism": spec.form, **{k: x for k, x in v.items() if k != "lam"}, "lam": lam, "delta": spec.delta,
            "epsilon": eps, "order": order, "method": method, **extra,
            "note": "the paper's convention, not a sound bound for this mechanism; see bench account --help"}


def _print_paper(out: dict[str, Any]) -> int:
    print(f"epsilon = {out['epsilon']:.6g}  delta = {out['delta']:g}  order = {out['order']:g}  (paper convention)")
    print(f"method: {out['method']}")
    if "theorem7_epsilon" in out:
        print(f"the paper's closed form (Theorem 7, Eq. 2) gives {out['theorem7_epsilon']:.6g}")
    return 0
