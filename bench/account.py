"""``bench account``: epsilon of a mechanism's ledger, or with ``--epsilon`` the calibrated noise.

    bench account dpsgd --sampling poisson --sampling-rate Q --noise-multiplier S --steps T --delta D
    bench account dpsgd --sampling fixed --population N --batch-size M --noise-multiplier S --steps T --delta D
    bench account dpgnn --num-train N --batch-size M --max-degree K --layers R --noise-multiplier L --steps T --delta D
    bench account drw --num-nodes N --walk-length L [--restarts R] --batch-size M --noise-multiplier L --steps T --delta D
    bench account progap --level edge --depth K --sigma S --delta D
    bench account progap --level node --depth K --num-nodes N --batch-size B --steps-per-stage T
                         --noise-multiplier S --max-degree D --sigma-ap SAP --delta D
    bench account privgnn --queries Q --lam LAMBDA --sampling-rate GAMMA --delta D [--single-teacher]
                          [--convention sound|paper] [--sensitivity S]
    bench account pate --queries Q --lam LAMBDA --delta D [--convention sound|paper]

Every form takes ``--conversion improved|standard`` (default improved), ``--accountant rdp|pld``
(default rdp) and ``--json``. Giving ``--epsilon E`` instead of the noise prints the smallest noise that
meets (E, delta). For ``progap --level node`` one multiplier z is calibrated for both mechanisms:
gradient noise multiplier z and sigma_AP = z * sqrt(D) (equal noise-to-sensitivity, as GAP's code does).

``privgnn --convention paper`` and ``pate --convention paper`` reproduce PrivGNN's published
numbers with the paper's own formulas (methods/privgnn/paper_accounting.py): for privgnn, Zhu & Wang's
exact subsampling formula, L1 sensitivity 1 (unless --sensitivity), the standard conversion over
orders 2..32; for pate, Papernot et al.'s data-independent moments accountant (l = 1..8). Note that
the paper's tables used delta = 1e-3 where it states 1e-4 (1e-4 where it states 1e-5). The default
``--convention sound`` is the suite's accountant: sensitivity 2, Zhu & Wang's general upper bound.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Callable

from bench.cli import COMMANDS, _float, command
from methods.base import BenchError, BudgetError
from methods.privacy import LedgerError, PrivacyLedger, calibrate_noise
from methods.privacy import presets as P


def _common(p: argparse.ArgumentParser, noise_flag: str, noise_help: str) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument(noise_flag, type=_float, help=noise_help)
    g.add_argument("--epsilon", type=_float, help="calibrate the noise to this epsilon instead")
    p.add_argument("--delta", type=_float, required=True)
    p.add_argument("--conversion", choices=["improved", "standard"], default="improved",
                   help="RDP -> DP conversion (default: improved; standard = Mironov Prop. 3, as papers report)")
    p.add_argument("--accountant", choices=["rdp", "pld"], default="rdp")
    p.add_argument("--json", action="store_true", help="print one JSON object")


@command("account", "compute epsilon for a mechanism (or calibrate its noise to a target epsilon)")
def _account_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("account", help=COMMANDS["account"][1], description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
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

    q = mech.add_parser("dpgnn", help="DP-GNN (Daigavane et al. 2022), Theorem 1")
    for f in ("--num-train", "--batch-size", "--max-degree", "--layers", "--steps"):
        q.add_argument(f, type=int, required=True)
    _common(q, "--noise-multiplier", "lambda = sigma / (2 C N(K,r))")

    q = mech.add_parser("drw", help="random-walk DP-SGD (Ayle et al. 2022): DRW, DRW-R, DRW-D")
    for f in ("--num-nodes", "--walk-length", "--batch-size", "--steps"):
        q.add_argument(f, type=int, required=True)
    q.add_argument("--restarts", type=int, default=1)
    g = q.add_mutually_exclusive_group()
    g.add_argument("--num-subgraphs", type=int, help="the actual number of subgraphs (default: the M_min bound)")
    g.add_argument("--batchable-subgraphs", type=int,
                   help="transductive runs: the number of subgraphs rooted at training nodes (the population "
                        "batches are drawn from; the run logs it as num_subgraphs)")
    _common(q, "--noise-multiplier", "lambda = sigma / (2C)")

    q = mech.add_parser("progap", help="ProGAP (Sajadmanesh et al. 2023), Theorems 4.1 (edge) and 4.2 (node)")
    q.add_argument("--level", choices=["edge", "node"], required=True)
    q.add_argument("--depth", type=int, required=True, help="K")
    q.add_argument("--num-nodes", type=int)
    q.add_argument("--batch-size", type=int)
    q.add_argument("--steps-per-stage", type=int)
    q.add_argument("--max-degree", type=int)
    q.add_argument("--sigma-ap", type=_float, help="node level: std of the aggregation noise")
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--sigma", type=_float, help="edge level: std of the aggregation noise")
    g.add_argument("--noise-multiplier", type=_float, help="node level: DP-SGD noise multiplier")
    g.add_argument("--epsilon", type=_float, help="calibrate the noise to this epsilon instead")
    q.add_argument("--delta", type=_float, required=True)
    q.add_argument("--conversion", choices=["improved", "standard"], default="improved")
    q.add_argument("--accountant", choices=["rdp", "pld"], default="rdp")
    q.add_argument("--json", action="store_true")

    q = mech.add_parser("privgnn", help="PrivGNN (Olatunji et al. 2023): Poisson-subsampled Laplace per query")
    q.add_argument("--queries", type=int, required=True)
    q.add_argument("--sampling-rate", type=_float, required=True, help="gamma")
    q.add_argument("--sensitivity", type=_float, default=None,
                   help="L1 sensitivity of a posterior vector (default 2, sound; 1 with --convention paper)")
    q.add_argument("--single-teacher", action="store_true",
                   help="the SINGLEGNN ablation: one subsample and one teacher answer every query")
    q.add_argument("--convention", choices=["sound", "paper"], default="sound",
                   help="paper: the formulas behind the paper's Tables 2-3 (not a sound bound)")
    _common(q, "--lam", "lambda = 1 / Laplace scale")

    q = mech.add_parser("pate", help="PATE-M / PATE-G (PrivGNN's baselines): Laplace-noisy vote counts per query")
    q.add_argument("--queries", type=int, required=True)
    q.add_argument("--convention", choices=["sound", "paper"], default="sound",
                   help="paper: Papernot et al.'s data-independent moments accountant, as the paper's Table 2")
    _common(q, "--lam", "lambda = 1 / Laplace scale on each vote count")
    p.set_defaults(func=cmd_account)
    return p


def _need(args, *names: str) -> None:
    missing = [n for n in names if getattr(args, n.replace("-", "_")) is None]
    if missing:
        raise BenchError(f"account {args.mechanism}: missing " + ", ".join("--" + m for m in missing))


def _builder(args) -> tuple[Callable[[float], PrivacyLedger], str, dict]:
    """(noise -> ledger, the noise parameter's name, the fixed parameters)."""
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
    if m == "dpgnn":
        fixed = {"num_train": args.num_train, "batch_size": args.batch_size, "max_degree": args.max_degree,
                 "layers": args.layers, "steps": args.steps}
        return (lambda z: P.dpgnn(noise_multiplier=z, **fixed)), "noise_multiplier", fixed
    if m == "drw":
        fixed = {"num_nodes": args.num_nodes, "walk_length": args.walk_length, "restarts": args.restarts,
                 "batch_size": args.batch_size, "steps": args.steps, "num_subgraphs": args.num_subgraphs,
                 "batchable_subgraphs": args.batchable_subgraphs}
        extra = {"m_min": P.drw_min_subgraphs(args.num_nodes, args.walk_length, args.restarts)}
        return (lambda z: P.drw(noise_multiplier=z, **fixed)), "noise_multiplier", {**fixed, **extra}
    if m == "progap":
        if args.level == "edge":
            if args.noise_multiplier is not None:
                raise BenchError("progap --level edge takes --sigma (or --epsilon), not --noise-multiplier")
            return (lambda s: P.progap_edge(args.depth, s)), "sigma", {"level": "edge", "depth": args.depth}
        _need(args, "num-nodes", "batch-size", "steps-per-stage", "max-degree")
        if args.sigma is not None:
            raise BenchError("progap --level node takes --noise-multiplier and --sigma-ap (or --epsilon)")
        fixed = {"level": "node", "depth": args.depth, "num_nodes": args.num_nodes, "batch_size": args.batch_size,
                 "steps_per_stage": args.steps_per_stage, "max_degree": args.max_degree}
        kw = {k: v for k, v in fixed.items() if k != "level"}
        if args.epsilon is None:
            _need(args, "sigma-ap")
            fixed["sigma_ap"] = args.sigma_ap
            return (lambda z: P.progap_node(noise_multiplier=z, sigma_ap=args.sigma_ap, **kw)), \
                "noise_multiplier", fixed
        root_d = math.sqrt(args.max_degree)
        return (lambda z: P.progap_node(noise_multiplier=z, sigma_ap=z * root_d, **kw)), "noise_multiplier", fixed
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
    if not 0 < args.delta < 1:
        raise BudgetError(f"delta must be in (0, 1) (got {args.delta})")
    build, noise_name, params = _builder(args)
    given = {"dpsgd": "noise_multiplier", "dpgnn": "noise_multiplier", "drw": "noise_multiplier",
             "privgnn": "lam", "pate": "lam"}.get(args.mechanism)
    if getattr(args, "convention", "sound") == "paper":
        return _paper_convention(args, params)
    if args.mechanism == "progap":
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
    out.update(epsilon=eps, order=None if math.isnan(order) else (None if math.isinf(order) else order),
               ledger=ledger.describe())
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    order_s = "-" if out["order"] is None else f"{out['order']:g}"
    if args.epsilon is not None:
        name = "lam" if args.mechanism in ("privgnn", "pate") else noise_name
        print(f"{name} = {out[name]:.6g}  (meets epsilon {args.epsilon:g}: spent {eps:.6g} at delta {args.delta:g})")
    print(f"epsilon = {eps:.6g}  delta = {args.delta:g}  order = {order_s}  ({args.accountant}, {args.conversion})")
    print(f"ledger: {ledger.describe()}")
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
