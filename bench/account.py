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
ledger with, so an account and a run cannot disagree; the dp-mlp, dpgnn and drw forms' options are that function's
parameters, read from its signature (:data:`SIGNATURE_FORMS`). Sound conventions are the defaults: an undirected edge
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
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from bench.cliargs import _float, command
from methods.errors import BenchError, BudgetError
from methods.privacy.accountant import ACCOUNTANTS
from methods.privacy.presets import DPGNN_RELATIONS, INPUT_GRAPH, NODE_RELATIONS

PAPER_NOTE = "the paper's convention, not a sound bound for this mechanism on undirected graphs"


def _common(p: argparse.ArgumentParser, noise_flag: str | None, noise_help: str) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    if noise_flag:
        g.add_argument(noise_flag, type=_float, help=noise_help)
    g.add_argument("--epsilon", type=_float, help="calibrate the noise to this epsilon instead")
    p.add_argument("--delta", type=_float, required=True)
    _output(p)


def _output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--conversion", choices=["improved", "standard"],
                   help="the RDP -> DP conversion of --accountant rdp (implied by this option; default improved; "
                        "standard = Mironov Prop. 3, as papers report)")
    p.add_argument("--accountant", metavar="NAME",
                   help="tight (default, what runs report and calibrate with): the smallest sound bound the suite "
                        "has; rdp: the RDP bound (the papers'); pld: privacy-loss distributions; or a registered "
                        "accountant (`bench accountants list`) that passes the conformance suite, as a run's")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _relation(p: argparse.ArgumentParser, choices: tuple[str, ...], default: str | None, declared: str, papers: str,
              node_only: bool = False) -> None:
    """``--relation``: the methods' ``relation`` option (the sound default first, then the papers')."""
    p.add_argument("--relation", choices=choices, default=default,
                   help=f"{'node level: ' if node_only else ''}the neighbouring relation of the epsilon: "
                        f"{choices[0]} (default, as the method's: --max-degree is {declared}, named public) or "
                        f"{choices[1]} (the paper's: {papers})")


def _convention(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--convention", choices=["sound", "paper"], default="sound",
                   help=f"sound (default) or the paper's {what}")


def _resolve_accountant(args: argparse.Namespace) -> None:
    """``--conversion`` names an RDP conversion, so alone it means ``--accountant rdp``; with another accountant it
    is refused (no other accountant converts). A registered accountant is admitted as a run's is."""
    if not hasattr(args, "conversion"):
        return
    if args.accountant is None:
        args.accountant = "rdp" if args.conversion else "tight"
    elif args.conversion and args.accountant != "rdp":
        raise BenchError(f"--conversion applies to --accountant rdp only (got --accountant {args.accountant})")
    elif args.accountant not in ACCOUNTANTS:
        from bench.conformance.check import admit

        admit(args.accountant)  # a registered accountant accounts here as it would a run: once admitted
    args.conversion = args.conversion or "improved"


def _label(args: argparse.Namespace) -> str:
    return f"rdp, {args.conversion}" if args.accountant == "rdp" else args.accountant


@command("account", "compute epsilon for a mechanism (or calibrate its noise to a target epsilon)")
def _account_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("account", help="compute epsilon for a mechanism (or calibrate its noise to a target epsilon)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mech = p.add_subparsers(dest="mechanism", metavar="MECHANISM", title="mechanisms")
    mech.required = True

    q = mech.add_parser("dpsgd", help="DP-SGD with Poisson or fixed-size (without replacement) batches")
    q.add_argument("--sampling", choices=["poisson", "fixed"], required=True)
    q.add_argument("--sampling-rate", type=_float, help="Poisson rate q")
    q.add_argument("--population", type=int, help="fixed: number of examples N")
    q.add_argument("--batch-size", type=int, help="fixed: batch size M")
    q.add_argument("--steps", type=int, required=True)
    q.add_argument("--unit", choices=["node", "edge", "feature"], default="node")
    _common(q, "--noise-multiplier", "noise std / per-example sensitivity")

    for name, form in SIGNATURE_FORMS.items():
        _signature_form(mech.add_parser(name, help=form.title), name, form)

    for name, title in (("gap", "GAP (Sajadmanesh et al. 2023): edge or node level"),
                        ("progap", "ProGAP (Sajadmanesh & Gatica-Perez 2023), Theorems 4.1 (edge) and 4.2 (node)")):
        q = mech.add_parser(name, help=title)
        q.add_argument("--level", choices=["edge", "node"], required=True)
        q.add_argument("--depth", type=int, required=True, help="K (NAP releases)")
        q.add_argument("--num-train", type=int, help="node level: training nodes (the Poisson population)")
        q.add_argument("--batch-size", type=int)
        q.add_argument("--max-degree", type=int)
        if name == "gap":
            q.add_argument("--encoder-steps", type=int)
            q.add_argument("--classifier-steps", type=int)
        else:
            q.add_argument("--steps-per-stage", type=int)
            q.add_argument("--sigma-ap", type=_float,
                           help="node level: std of the aggregation noise (default: multiplier x sqrt(D))")
            q.add_argument("--num-nodes", type=int,
                           help="node level, --convention paper only: the theorem's N (all nodes)")
        g = q.add_mutually_exclusive_group(required=True)
        g.add_argument("--sigma", type=_float, help="edge level: std of the aggregation noise")
        g.add_argument("--noise-multiplier", type=_float, help="node level: DP-SGD noise multiplier z")
        g.add_argument("--epsilon", type=_float, help="calibrate the noise to this epsilon instead")
        q.add_argument("--delta", type=_float, required=True)
        _relation(q, NODE_RELATIONS, None, "a declared public bound on every node's degree (the run refuses a graph "
                  "above it)", "relative to the graph after the random out-degree cut-off to D", node_only=True)
        _convention(q, "edge sensitivity 1 (one directed entry) and, for ProGAP node level, population N")
        _output(q)

    q = mech.add_parser("edgerand", help="EdgeRand: randomized response on the adjacency + a Laplace edge count")
    q.add_argument("--epsilon-link", type=_float, required=True)
    q.add_argument("--epsilon-density", type=_float, required=True)
    q.add_argument("--delta", type=_float, default=0.0)
    _output(q)

    q = mech.add_parser("privgnn", help="PrivGNN (Olatunji et al. 2023): Poisson-subsampled Laplace per query")
    q.add_argument("--queries", type=int, required=True)
    q.add_argument("--sampling-rate", type=_float, required=True, help="gamma")
    q.add_argument("--sensitivity", type=_float, default=None,
                   help="L1 sensitivity of a posterior vector (default 2, sound; 1 with --convention paper)")
    q.add_argument("--single-teacher", action="store_true",
                   help="the SINGLEGNN ablation: one subsample and one teacher answer every query")
    _convention(q, "formulas behind its Tables 2-3 (not a sound bound)")
    _common(q, "--lam", "lambda = 1 / Laplace scale")

    q = mech.add_parser("pate", help="PATE-M / PATE-G (PrivGNN's baselines): Laplace-noisy vote counts per query")
    q.add_argument("--queries", type=int, required=True)
    _convention(q, "data-independent moments accountant (Papernot et al. 2017), as PrivGNN's Table 2")
    _common(q, "--lam", "lambda = 1 / Laplace scale on each vote count")

    q = mech.add_parser("run", help="re-account a tracked run: rebuild its logged ledger and print its epsilon")
    q.add_argument("run_id", metavar="RUN_ID", help="MLflow run id (bench run prints it in --output JSON)")
    q.add_argument("--delta", type=_float, help="delta (default: the run's own)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_account)
    return p


@dataclass(frozen=True)
class Form:
    """A family form whose options are its ledger function's parameters (:data:`methods.privacy.presets.FAMILIES`:
    name, type, default, required): ``noise`` is the one ``--epsilon`` calibrates instead; ``exclusive`` parameters
    exclude each other; ``skip`` ones have no flag (structured values only a run records); ``relation``: the
    methods' relation option ``(choices, default, declared, papers)``, whose command-line default is the methods'
    (the signature's keeps recorded recipes rebuilding as they ran)."""

    title: str
    noise_help: str
    noise: str = "noise_multiplier"
    help: dict[str, str] = field(default_factory=dict)
    exclusive: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    relation: tuple[tuple[str, ...], str, str, str] | None = None


SIGNATURE_FORMS = {
    "dp-mlp": Form("DP-MLP: DP-SGD over Poisson batches of the training nodes", "noise std / clipping threshold"),
    "dpgnn": Form("DP-GNN (Daigavane et al. 2022), Theorem 1", "lambda = sigma / (2 C N(K,r))",
                  relation=(DPGNN_RELATIONS, INPUT_GRAPH, "a declared public bound on every node's number of training "
                            "in-neighbours (the run refuses a graph above it)", "Algorithm 1's in-degree sampling, a "
                            "node owning its incoming edge list")),
    "drw": Form("random-walk DP-SGD (Ayle et al. 2022): DRW, DRW-R, DRW-D", "lambda = sigma / (2C)",
                help={"num_subgraphs": "the actual number of subgraphs (default: the M_min bound)",
                      "batchable_subgraphs": "transductive runs: the number of subgraphs rooted at training nodes (the "
                                             "population batches are drawn from; the run logs it as num_subgraphs)"},
                exclusive=("num_subgraphs", "batchable_subgraphs"), skip=("segments",)),
}


def _signature_form(q: argparse.ArgumentParser, name: str, form: Form) -> None:
    """The options of family ``name``'s ledger function, one per parameter (see :class:`Form`)."""
    import inspect
    import typing

    from methods.privacy.presets import FAMILIES

    fn = FAMILIES[name]
    hints = typing.get_type_hints(fn)
    group = q.add_mutually_exclusive_group() if form.exclusive else None
    for p in inspect.signature(fn).parameters.values():
        if p.name in (form.noise, *form.skip):
            continue
        if p.name == "relation" and form.relation is not None:
            choices, default, declared, papers = form.relation
            _relation(q, choices, default, declared, papers)
            continue
        tp = hints.get(p.name)
        base = ([a for a in typing.get_args(tp) if a is not type(None)] or [tp])[0]
        required = p.default is inspect.Parameter.empty
        kw: dict[str, Any] = {"type": _float if base is float else base, "help": form.help.get(p.name) or (
            "(required)" if required else f"(default: {p.default})")}
        target = group if p.name in form.exclusive else q
        target.add_argument("--" + p.name.replace("_", "-"), required=required,
                            **({} if required else {"default": p.default}), **kw)
    _common(q, "--" + form.noise.replace("_", "-"), form.noise_help)


def _signature_builder(args: argparse.Namespace) -> tuple[Callable[[float], Any], str, dict]:
    """A signature form's (noise -> ledger, noise name, fixed parameters): every parameter as given."""
    import inspect

    from methods.privacy.presets import FAMILIES

    name, form = args.mechanism, SIGNATURE_FORMS[args.mechanism]
    fn = FAMILIES[name]
    fixed = {p: getattr(args, p) for p in inspect.signature(fn).parameters if p != form.noise and p not in form.skip}
    return (lambda z: fn(**{form.noise: z}, **fixed)), form.noise, fixed


#: the smallest value of every count a family form takes, checked before the accountant runs (whose own errors
#: name its parameters, not the options)
AT_LEAST = {"steps": 0, "population": 1, "batch_size": 1, "num_train": 1, "max_degree": 0, "layers": 0,
            "num_nodes": 1, "walk_length": 0, "restarts": 1, "num_subgraphs": 1, "batchable_subgraphs": 1,
            "depth": 0, "encoder_steps": 0, "classifier_steps": 0, "steps_per_stage": 0, "queries": 0}


def check_numbers(args: argparse.Namespace) -> None:
    """Counts, rates and scales given on the command line are in range (one ``error:`` line naming the option)."""
    for name, low in AT_LEAST.items():
        value = getattr(args, name, None)
        if value is not None and value < low:
            raise BenchError(f"--{name.replace('_', '-')} must be >= {low} (got {value})")
    rate = getattr(args, "sampling_rate", None)
    if rate is not None and not 0 <= rate <= 1:
        raise BenchError(f"--sampling-rate must be in [0, 1] (got {rate})")
    for name in ("sigma_ap", "sensitivity"):
        value = getattr(args, name, None)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise BenchError(f"--{name.replace('_', '-')} must be > 0 and finite (got {value})")


def _need(args, *names: str) -> None:
    missing = [n for n in names if getattr(args, n.replace("-", "_"), None) is None]
    if missing:
        raise BenchError(f"account {args.mechanism}: missing " + ", ".join("--" + m for m in missing))


def _refuse(args, *names: str, why: str) -> None:
    given = [n for n in names if getattr(args, n.replace("-", "_"), None) is not None]
    if given:
        raise BenchError(f"account {args.mechanism}: {', '.join('--' + n for n in given)} {why}")


def _builder(args) -> tuple[Callable[[float], Any], str, dict]:
    """(noise -> ledger, the noise parameter's name, the fixed parameters) for a family form."""
    from methods.privacy import presets as P

    m = args.mechanism
    if m == "dpsgd":
        if args.sampling == "poisson":
            _need(args, "sampling-rate")
            return (lambda z: P.dpsgd_poisson(args.sampling_rate, z, args.steps, args.unit)), "noise_multiplier", \
                {"sampling": "poisson", "sampling_rate": args.sampling_rate, "steps": args.steps}
        _need(args, "population", "batch-size")
        return (lambda z: P.dpsgd_fixed(args.population, args.batch_size, z, args.steps, args.unit)), \
            "noise_multiplier", {"sampling": "fixed", "population": args.population, "batch_size": args.batch_size,
                                 "steps": args.steps}
    if m in SIGNATURE_FORMS:
        build, noise, fixed = _signature_builder(args)
        if m == "drw":
            fixed = {**fixed, "m_min": P.drw_min_subgraphs(args.num_nodes, args.walk_length, args.restarts)}
        return build, noise, fixed
    if m in ("gap", "progap"):
        conv = args.convention
        if args.level == "edge":
            _refuse(args, "noise-multiplier", why="is node-level; edge level takes --sigma (or --epsilon)")
            _refuse(args, "num-train", "batch-size", "max-degree", "encoder-steps", "classifier-steps",
                    "steps-per-stage", "sigma-ap", "num-nodes", "relation", why="apply to --level node only")
            fixed = {"level": "edge", "depth": args.depth, "convention": conv,
                     "sensitivity": P.edge_sensitivity(conv)}
            return (lambda s: P.aggregation_edge(args.depth, s, conv)), "sigma", fixed
        _refuse(args, "sigma", why="is edge-level; node level takes --noise-multiplier (or --epsilon)")
        relation = args.relation or INPUT_GRAPH  # the methods' default
        if m == "gap":
            if conv == "paper":
                raise BenchError("account gap --level node: GAP's node-level ledger has no paper convention here "
                                 "(its code composes the same parts; use the default)")
            _need(args, "num-train", "batch-size", "encoder-steps", "classifier-steps", "max-degree")
            fixed = {"level": "node", "depth": args.depth, "num_train": args.num_train,
                     "batch_size": args.batch_size, "encoder_steps": args.encoder_steps,
                     "classifier_steps": args.classifier_steps, "max_degree": args.max_degree, "relation": relation}
            kw = {k: v for k, v in fixed.items() if k != "level"}
            return (lambda z: P.gap_node(noise_multiplier=z, **kw)), "noise_multiplier", fixed
        _need(args, "batch-size", "steps-per-stage", "max-degree")
        if conv == "paper":
            _need(args, "num-nodes")
        elif args.num_nodes is not None:
            raise BenchError("account progap --level node: --num-nodes is the paper's population (all nodes), "
                             "which understates the sampling rate; the sound ledger samples the training nodes: "
                             "give --num-train (or --convention paper with --num-nodes)")
        else:
            _need(args, "num-train")
        fixed = {"level": "node", "depth": args.depth, "num_train": args.num_train, "num_nodes": args.num_nodes,
                 "batch_size": args.batch_size, "steps_per_stage": args.steps_per_stage,
                 "max_degree": args.max_degree, "convention": conv, "relation": relation}
        kw = {k: v for k, v in fixed.items() if k != "level"}
        if kw["num_train"] is None:
            kw["num_train"] = kw["num_nodes"]
        if args.epsilon is None and args.sigma_ap is not None:
            fixed["sigma_ap"] = args.sigma_ap
            return (lambda z: P.progap_node(noise_multiplier=z, sigma_ap=args.sigma_ap, **kw)), "noise_multiplier", \
                fixed
        return (lambda z: P.progap_node(noise_multiplier=z, **kw)), "noise_multiplier", fixed
    if m == "privgnn":
        if args.sensitivity is None:
            args.sensitivity = 1.0 if args.convention == "paper" else 2.0
        fixed = {"queries": args.queries, "sampling_rate": args.sampling_rate, "sensitivity": args.sensitivity,
                 "single_teacher": args.single_teacher, "convention": args.convention}
        # calibrating lambda: epsilon grows with lambda, so search the Laplace scale 1/lambda instead
        return (lambda scale: P.privgnn(args.queries, 1.0 / scale, args.sampling_rate, args.sensitivity,
                                        single_teacher=args.single_teacher)), "laplace_scale", fixed
    if m == "pate":
        fixed = {"queries": args.queries, "convention": args.convention}
        return (lambda scale: P.privgnn_pate(args.queries, 1.0 / scale)), "laplace_scale", fixed
    raise BenchError(f"unknown mechanism {m}")  # pragma: no cover


def cmd_account(args: argparse.Namespace) -> int:
    check_numbers(args)
    _resolve_accountant(args)
    if args.mechanism == "run":
        return _account_run(args)
    if args.mechanism == "edgerand":
        return _account_edgerand(args)
    if not 0 < args.delta < 1:
        raise BudgetError(f"delta must be in (0, 1) (got {args.delta})")
    from methods.privacy import LedgerError, calibrate_noise

    build, noise_name, params = _builder(args)
    given = {"dpsgd": "noise_multiplier", "privgnn": "lam", "pate": "lam"}.get(args.mechanism)
    if args.mechanism in SIGNATURE_FORMS:
        given = SIGNATURE_FORMS[args.mechanism].noise
    if args.mechanism in ("privgnn", "pate") and args.convention == "paper":
        return _paper_convention(args, params)
    if args.mechanism in ("gap", "progap"):
        given = "sigma" if args.level == "edge" else "noise_multiplier"
    out = {"mechanism": args.mechanism, **params, "delta": args.delta, "conversion": args.conversion,
           "accountant": args.accountant}
    try:
        if args.epsilon is not None:
            if not args.epsilon > 0:
                raise BudgetError(f"epsilon must be > 0 (got {args.epsilon})")
            noise = calibrate_noise(build, args.epsilon, args.delta, accountant=args.accountant,
                                    conversion=args.conversion, rtol=1e-4)
            out["target_epsilon"] = args.epsilon
        else:
            value = getattr(args, given)
            if value is None or not value > 0:
                raise BudgetError(f"--{given.replace('_', '-')} must be > 0 (got {value})")
            noise = 1.0 / value if args.mechanism in ("privgnn", "pate") else value
        ledger = build(noise)
        eps, order = ledger.epsilon_and_order(args.delta, args.accountant, args.conversion)
    except LedgerError as e:
        raise BenchError(str(e)) from None
    if args.mechanism in ("privgnn", "pate"):
        out["lam"] = 1.0 / noise
    else:
        out[noise_name] = noise
    if args.mechanism == "progap" and args.level == "node" and "sigma_ap" not in out:
        out["sigma_ap"] = noise * math.sqrt(args.max_degree)
    if getattr(args, "convention", "sound") == "paper":
        out["note"] = PAPER_NOTE
    out.update(epsilon=eps, order=_order(order), ledger=ledger.describe(),
               recipe=ledger.recipe.to_dict() if ledger.recipe else None, conventions=ledger.public_facts)
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    if args.epsilon is not None:
        name = "lam" if args.mechanism in ("privgnn", "pate") else noise_name
        print(f"{name} = {out[name]:.6g}  (meets epsilon {args.epsilon:g}: spent {eps:.6g} at delta {args.delta:g})")
    _print_eps(eps, args.delta, out["order"], _label(args))
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


def _account_edgerand(args: argparse.Namespace) -> int:
    from methods.privacy import presets as P

    if not 0 <= args.delta < 1:
        raise BudgetError(f"delta must be in [0, 1) (got {args.delta})")
    if not (args.epsilon_link > 0 and args.epsilon_density > 0):
        raise BudgetError("--epsilon-link and --epsilon-density must be > 0")
    ledger = P.edgerand(args.epsilon_link, args.epsilon_density)
    eps, order = ledger.epsilon_and_order(args.delta, args.accountant, args.conversion)
    out = {"mechanism": "edgerand", "epsilon_link": args.epsilon_link, "epsilon_density": args.epsilon_density,
           "delta": args.delta, "conversion": args.conversion, "accountant": args.accountant, "epsilon": eps,
           "order": _order(order), "ledger": ledger.describe(), "recipe": ledger.recipe.to_dict(),
           "conventions": ledger.public_facts}
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    _print_eps(eps, args.delta, out["order"], _label(args))
    _print_conventions(ledger)
    print(f"ledger: {ledger.describe()}")
    return 0


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


def _account_run(args: argparse.Namespace) -> int:
    if args.delta is not None and not 0 <= args.delta < 1:
        raise BudgetError(f"delta must be in [0, 1) (got {args.delta})")
    out = account_run(args.run_id, args.delta)
    if args.json:
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


def _paper_convention(args: argparse.Namespace, params: dict) -> int:
    """PrivGNN's published conventions (methods/privgnn/paper_accounting.py): a regression aid, not a bound."""
    from methods.privgnn import paper_accounting as PA

    if args.epsilon is not None:
        raise BenchError("--convention paper computes the paper's epsilon for a given --lam; calibration "
                         "(--epsilon) uses the sound accountant only")
    if args.lam is None or not args.lam > 0:
        raise BudgetError(f"--lam must be > 0 (got {args.lam})")
    if args.queries < 0:
        raise BenchError(f"--queries must be >= 0 (got {args.queries})")
    if args.mechanism == "privgnn":
        if args.single_teacher:
            raise BenchError("--convention paper has no SINGLEGNN formula (the paper claims PrivGNN's); "
                             "use the sound convention")
        if not 0 <= args.sampling_rate <= 1 or not args.sensitivity > 0:
            raise BenchError("--sampling-rate must be in [0, 1] and --sensitivity > 0")
        eps, order = PA.privgnn_epsilon(args.queries, args.lam, args.sampling_rate, args.delta, args.sensitivity)
        method = ("Zhu & Wang exact Poisson-subsampled Laplace RDP, standard conversion over integer orders 2..32 "
                  "(paper Tables 2-3)")
        extra = {"theorem7_epsilon": PA.theorem7_epsilon(args.queries, args.lam, args.sampling_rate, args.delta)}
    else:
        eps, order = PA.pate_moments_epsilon(args.queries, args.lam, args.delta)
        method = "Papernot et al. (2017) data-independent moments accountant, l = 1..8 (paper Table 2)"
        extra = {}
    out = {"mechanism": args.mechanism, **params, "lam": args.lam, "delta": args.delta, "epsilon": eps,
           "order": order, "method": method, **extra,
           "note": "the paper's convention, not a sound bound for this mechanism; see bench account --help"}
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    print(f"epsilon = {eps:.6g}  delta = {args.delta:g}  order = {order:g}  (paper convention)")
    print(f"method: {method}")
    if "theorem7_epsilon" in extra:
        print(f"the paper's closed form (Theorem 7, Eq. 2) gives {extra['theorem7_epsilon']:.6g}")
    return 0
