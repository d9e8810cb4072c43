"""The attack tables: membership-inference AUC and TPR@1%FPR for trained targets, one row per (target, attack, variant).

    python -m scripts.attack_table --out attacks.md [--datasets cora citeseer computers] [--methods gcn sage]
        [--epsilons 1 8] [--references 8] [--seeds 0]
    python -m scripts.attack_table summarise EXPERIMENT [EXPERIMENT ...] --out summary.md

Targets are trained and attacked by a resumable sweep (every attack an MLflow child run of its target, with its
ROC plot), exactly as ``bench run --attacks`` does. The reported epsilon is the accountant's, never the target;
non-private methods report ``inf``. Attacks per method (``--attacks`` overrides): non-private and node/feature-
level methods get the node attacks (``threshold``, ``shadow``, ``lira``); edge-level methods get ``link-stealing``
and ``linkteller`` (the edge game) plus ``threshold``. ``linkteller`` applies to the non-private baselines and
``edgerand`` (``Fitted.predict_proba_features``) and reports "not applicable" for GAP/ProGAP, with why. Splits:
Planetoid ``public``, everything else ``random-75-10-15`` (``--split`` overrides). The tables are read back from the experiment's runs.
"""

from __future__ import annotations

import argparse
import math
import sys

from bench import api
from bench.studies._common import common_args, markdown, save, sweep

NODE_ATTACKS = ["threshold", "shadow", "lira"]
EDGE_ATTACKS = ["threshold", "link-stealing", "linkteller"]
#: the variants of the compact summary, fixed in advance (no post-hoc pick of the best variant on the evaluated nodes)
SUMMARY = [("threshold", "loss"), ("shadow", "mlp"), ("lira", "online"), ("lira", "offline"),
           ("link-stealing", "cosine"), ("link-stealing", "correlation"), ("link-stealing", "ref-features-cosine")]
HEADER = ["dataset", "split", "method", "target eps", "spent eps", "test acc", "attack", "variant", "AUC [95% CI]",
          "TPR@1%FPR [95% CI]", "members/non-members (evaluated)"]


def configs(args: argparse.Namespace) -> list[dict]:
    """One sweep config per attack set (node attacks, edge attacks), all in one experiment."""
    from methods import get_method

    groups: dict[tuple[str, ...], list[str]] = {}
    private = [m for m in args.methods if get_method(m).privacy_unit != "none"]
    if private and not args.epsilons:
        raise SystemExit(f"error: {', '.join(private)} private: give --epsilons")
    for m in args.methods:
        attacks = args.attacks or (EDGE_ATTACKS if get_method(m).privacy_unit == "edge" else NODE_ATTACKS)
        groups.setdefault(tuple(attacks), []).append(m)
    out = []
    for attacks, methods in groups.items():
        sets = ([f"lira.references={args.references}"] if "lira" in attacks else []) + \
               ([f"shadow.shadows={args.shadows}"] if "shadow" in attacks else []) + \
               [f"{a}.pairs={args.pairs}" for a in ("link-stealing", "linkteller") if a in attacks]
        out.append({"experiment": args.experiment, "datasets": args.datasets, "splits": [args.split or "default"],
                    "epsilons": args.epsilons or ["inf"], "seeds": args.seeds, "set": args.overrides,
                    "attacks": list(attacks), "attack_set": sets, "bootstrap": args.bootstrap, "methods": methods,
                    **({"delta": args.delta} if args.delta is not None else {})})
    return out


def _eps(x) -> str:
    x = float(x)
    return "inf" if not math.isfinite(x) or x >= 1e307 else f"{x:.3g}"


def _ci(m: dict, key: str) -> str:
    if key not in m:
        return "n/a"
    lo, hi = m.get(f"{key}_low", math.nan), m.get(f"{key}_high", math.nan)
    return f"{m[key]:.3f}" if math.isnan(lo) else f"{m[key]:.3f} [{lo:.2f}, {hi:.2f}]"


def targets(experiments: list[str]) -> list[tuple[dict, list[dict]]]:
    """(target run, its attack child runs) of the experiments' FINISHED runs."""
    out = []
    for exp in experiments:
        runs = api.runs(exp, children=True)
        children: dict[str, list[dict]] = {}
        for r in runs:
            if r["parent"]:
                children.setdefault(r["parent"], []).append(r)
        out += [(r, children.get(r["run_id"], [])) for r in runs if not r["parent"] and "test_acc" in r["metrics"]]
    return out


def table(experiment: str) -> str:
    rows = []
    for t, attacks in targets([experiment]):
        p, m = t["params"], t["metrics"]
        base = [p["dataset"], p["split"], p["method"], _eps(p["target_epsilon"]), _eps(m["epsilon"]),
                f"{m['test_acc']:.3f}"]
        for a in sorted(attacks, key=lambda a: a["tags"]["attack"]):
            if a["tags"].get("status") != "ok":
                rows.append(base + [a["tags"]["attack"], "-", "n/a", "n/a",
                                    f"not applicable: {a['tags'].get('reason', '')[:80]}"])
                continue
            am, ap = a["metrics"], a["params"]
            for variant in sorted(k[:-4] for k in am if k.endswith(".auc")):
                rows.append(base + [a["tags"]["attack"], variant, _ci(am, f"{variant}.auc"),
                                    _ci(am, f"{variant}.tpr_at_1pct_fpr"),
                                    f"{ap.get('evaluated_members')}/{ap.get('evaluated_non_members')}"])
    return markdown(HEADER, rows)


def summarise(experiments: list[str]) -> str:
    """One row per target, ``AUC / TPR@1%FPR`` per fixed variant."""
    rows = []
    for t, attacks in targets(experiments):
        p, m = t["params"], t["metrics"]
        by = {a["tags"]["attack"]: a for a in attacks}
        cells = [p["dataset"], p["split"], p["method"], _eps(p["target_epsilon"]), _eps(m["epsilon"]),
                 f"{m['test_acc']:.3f}"]
        for attack, variant in SUMMARY:
            a = by.get(attack)
            am = a["metrics"] if a else {}
            cells.append("" if a is None else "n/a" if a["tags"].get("status") != "ok" else
                         "" if f"{variant}.auc" not in am else
                         f"{am[f'{variant}.auc']:.3f} / {am[f'{variant}.tpr_at_1pct_fpr']:.3f}")
        rows.append(cells)
    rows.sort(key=lambda c: (c[0], c[1], c[2] not in ("gcn", "sage"), c[2], c[3]))
    return ("Cells: AUC / TPR@1%FPR (point estimates; the 95% intervals are in the full tables). ref-features-cosine: "
            "the edge game scored on raw features, no model.\n\n"
            + markdown(["dataset", "split", "method", "target eps", "spent eps", "test acc",
                        *[f"{a} {v}" for a, v in SUMMARY]], rows))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "summarise":
        ap = argparse.ArgumentParser(prog="attack_table summarise")
        ap.add_argument("experiments", nargs="+")
        ap.add_argument("--out", required=True)
        a = ap.parse_args(argv[1:])
        save(a.out, summarise(a.experiments))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="markdown table path")
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer", "computers"])
    ap.add_argument("--split", help="split for every dataset (default: public for Planetoid, else random-75-10-15)")
    ap.add_argument("--methods", nargs="+", default=["gcn", "sage"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[], help="target epsilons for private methods")
    ap.add_argument("--delta", type=float, help="target delta (default: bench's per-dataset default)")
    ap.add_argument("--attacks", nargs="+", help="attacks for every method (default: by privacy unit)")
    ap.add_argument("--references", type=int, default=8, help="LiRA reference models (default: %(default)s)")
    ap.add_argument("--shadows", type=int, default=1, help="shadow models (default: %(default)s)")
    ap.add_argument("--pairs", type=int, default=1000, help="edge pairs for the edge attacks (default: %(default)s)")
    ap.add_argument("--bootstrap", type=int, default=500)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="method hyperparameter override, as bench run --set")
    common_args(ap, "paper-attacks")
    args = ap.parse_args(argv)
    ok = all([sweep(cfg, args) for cfg in configs(args)])
    if not args.dry_run:
        note = (f"Membership inference (issue 8). LiRA: {args.references} reference models; shadow: {args.shadows} "
                f"shadow model(s); edge attacks: {args.pairs} edges + as many non-edges; bootstrap {args.bootstrap}; "
                f"seeds {args.seeds}. Attacker knows half the candidates (stratified); metrics on the other half.")
        save(args.out, note + "\n\n" + table(args.experiment))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
