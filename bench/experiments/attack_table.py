"""Issue 8's tables: membership-inference AUC and TPR@1%FPR for trained targets, one row per (target, attack, variant).

    python -m bench.experiments.attack_table --out /tmp/attacks/table.md \\
        [--datasets cora citeseer computers] [--methods gcn sage] [--epsilons 1 8] [--references 8] [--seeds 0]

    python -m bench.experiments.attack_table summarise /tmp/attacks/*.jsonl --out /tmp/attacks/summary.md

Targets are trained and attacked through ``bench.run`` (``RunSpec(attacks=...)``), exactly as
``bench run --attacks`` does, without MLflow tracking. The reported epsilon is the accountant's
(``RunResult.epsilon``), never the target; non-private methods report ``inf``.

Attacks per method (``--attacks`` overrides): non-private and node/feature-level methods get the node
attacks (``threshold``, ``shadow``, ``lira``); edge-level methods get ``link-stealing`` and ``linkteller``
(the edge game) plus ``threshold``. ``linkteller`` reports "not applicable" for every built-in method
(no ``Fitted.predict_proba_features``). Splits: Planetoid ``public``; everything else ``random-75-10-15``
(``--split`` overrides). Every finished target is appended to ``<out>.jsonl`` at once, so a long
measurement that is stopped keeps what it finished; the markdown is rewritten after every target.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from bench.run import RunSpec, prepare, run_one
from methods import get_method

NODE_ATTACKS = ["threshold", "shadow", "lira"]
EDGE_ATTACKS = ["threshold", "link-stealing", "linkteller"]
PLANETOID = {"cora", "citeseer", "pubmed"}


def attacks_for(method: str) -> list[str]:
    return EDGE_ATTACKS if get_method(method).privacy_unit == "edge" else NODE_ATTACKS


def _fmt(v: dict | None) -> str:
    if not v or v.get("value") is None or (isinstance(v["value"], float) and math.isnan(v["value"])):
        return "n/a"
    if isinstance(v.get("low"), float) and math.isnan(v["low"]):
        return f"{v['value']:.3f}"
    return f"{v['value']:.3f} [{v['low']:.2f}, {v['high']:.2f}]"


def rows_of(result: dict) -> list[list[str]]:
    eps = result["epsilon"]
    eps_s = "inf" if eps is None or (isinstance(eps, float) and math.isinf(eps)) or eps == "inf" else f"{float(eps):.3g}"
    target = result["target_epsilon"]
    target_s = "inf" if target in (None, "inf") or (isinstance(target, float) and math.isinf(target)) else f"{float(target):g}"
    base = [result["dataset"], result["split"], result["method"], target_s, eps_s,
            f"{result['metrics'].get('test_acc', float('nan')):.3f}"]
    out = []
    for a in result["attacks"]:
        if a["status"] != "ok":
            out.append(base + [a["attack"], "-", "n/a", "n/a", f"not applicable: {a['reason'][:80]}"])
            continue
        for vname, v in a["variants"].items():
            out.append(base + [a["attack"], vname, _fmt(v["auc"]), _fmt(v["tpr_at_1pct_fpr"]),
                               f"{a['evaluated_members']}/{a['evaluated_non_members']}"])
    return out


HEADER = ["dataset", "split", "method", "target eps", "spent eps", "test acc", "attack", "variant", "AUC [95% CI]",
          "TPR@1%FPR [95% CI]", "members/non-members (evaluated)"]


def write_markdown(path: Path, results: list[dict], note: str) -> None:
    lines = [note, "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in results:
        lines += ["| " + " | ".join(row) + " |" for row in rows_of(r)]
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


#: the variants of the compact summary, fixed in advance (no post-hoc pick of the best variant on the evaluated nodes)
SUMMARY = [("threshold", "loss"), ("shadow", "mlp"), ("lira", "online"), ("lira", "offline"),
           ("link-stealing", "cosine"), ("link-stealing", "correlation"), ("link-stealing", "ref-features-cosine")]


def summarise(paths: list[str], out: Path) -> None:
    """One row per target, ``AUC / TPR@1%FPR`` per fixed variant, from the ``.jsonl`` files of earlier runs."""
    results: dict[tuple, dict] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            key = (r["dataset"], r["split"], r["method"], str(r["target_epsilon"]), r["seed"])
            prev = results.setdefault(key, {**r, "attacks": []})
            done = {a["attack"] for a in prev["attacks"]}
            prev["attacks"] += [a for a in r["attacks"] if a["attack"] not in done]
    header = ["dataset", "split", "method", "target eps", "spent eps", "test acc",
              *[f"{a} {v}" for a, v in SUMMARY]]
    lines = ["Cells: AUC / TPR@1%FPR (point estimates; the 95% intervals are in the full tables). "
             "ref-features-cosine: the edge game scored on raw features, no model.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in sorted(results, key=lambda k: (k[0], k[1], k[2] not in ("gcn", "sage"), k[2], k[3])):
        r = results[key]
        eps = r["epsilon"]
        eps_s = "inf" if eps in (None, "inf") or (isinstance(eps, float) and math.isinf(eps)) else f"{float(eps):.3g}"
        cells = [r["dataset"], r["split"], r["method"], str(r["target_epsilon"]), eps_s,
                 f"{r['metrics'].get('test_acc', float('nan')):.3f}"]
        by = {a["attack"]: a for a in r["attacks"]}
        for attack, variant in SUMMARY:
            a = by.get(attack)
            if a is None:
                cells.append("")
            elif a["status"] != "ok":
                cells.append("n/a")
            else:
                v = a["variants"].get(variant)
                cells.append("" if v is None else f"{v['auc']['value']:.3f} / {v['tpr_at_1pct_fpr']['value']:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    out.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "summarise":
        ap = argparse.ArgumentParser(prog="attack_table summarise")
        ap.add_argument("jsonl", nargs="+")
        ap.add_argument("--out", required=True)
        a = ap.parse_args(argv[1:])
        summarise(a.jsonl, Path(a.out))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="markdown table path (a .jsonl with every result goes beside it)")
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer", "computers"])
    ap.add_argument("--split", help="split for every dataset (default: public for Planetoid, else random-75-10-15)")
    ap.add_argument("--methods", nargs="+", default=["gcn", "sage"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[],
                    help="target epsilons for private methods (required when a method is private)")
    ap.add_argument("--delta", type=float, help="target delta (default: bench's per-dataset default)")
    ap.add_argument("--attacks", nargs="+", help="attacks for every method (default: by privacy unit)")
    ap.add_argument("--references", type=int, default=8, help="LiRA reference models (default: %(default)s)")
    ap.add_argument("--shadows", type=int, default=1, help="shadow models (default: %(default)s)")
    ap.add_argument("--pairs", type=int, default=1000, help="edge pairs for the edge attacks (default: %(default)s)")
    ap.add_argument("--bootstrap", type=int, default=500)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="method hyperparameter override, as bench run --set")
    ap.add_argument("--plot-dir", help="also save every ROC plot (linear and log-log) as a PNG here")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: on a shared 2-core machine more threads oversubscribe)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    jsonl = out.with_suffix(".jsonl")
    results: list[dict] = []
    note = (f"Membership inference (issue 8). LiRA: {args.references} reference models; shadow: {args.shadows} "
            f"shadow model(s); edge attacks: {args.pairs} edges + as many non-edges; bootstrap {args.bootstrap}; "
            f"seeds {args.seeds}. Attacker knows half the candidates (stratified); metrics on the other half.")
    for dataset in args.datasets:
        split = args.split or ("public" if dataset in PLANETOID else "random-75-10-15")
        for method in args.methods:
            private = get_method(method).privacy_unit != "none"
            for eps in (args.epsilons if private else [None]):
                if private and eps is None:
                    raise SystemExit(f"error: {method} is private: give --epsilons")
                attacks = args.attacks or attacks_for(method)
                sets = ([f"lira.references={args.references}"] if "lira" in attacks else []) + \
                       ([f"shadow.shadows={args.shadows}"] if "shadow" in attacks else []) + \
                       [f"{a}.pairs={args.pairs}" for a in ("link-stealing", "linkteller") if a in attacks]
                spec = RunSpec(methods=[method], dataset=dataset, split=split, seeds=args.seeds, epsilon=eps,
                               delta=args.delta if private else None, overrides=args.overrides, track=False,
                               progress=False, attacks=[",".join(attacks)], attack_overrides=sets,
                               bootstrap=args.bootstrap, plot_dir=args.plot_dir)
                t0 = time.time()
                try:
                    prepared = prepare(spec)
                    for seed in args.seeds:
                        r = run_one(prepared, prepared.classes[0], seed).to_dict()
                        r["seconds_total"] = time.time() - t0
                        results.append(r)
                        with jsonl.open("a") as f:
                            f.write(json.dumps(r, default=str) + "\n")
                        write_markdown(out, results, note)
                        print(f"{dataset} {method} eps={eps}: acc {r['metrics'].get('test_acc'):.3f}, spent eps "
                              f"{r['epsilon']}, {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
                except Exception as e:  # one failing target must not lose the others
                    print(f"{dataset} {method} eps={eps}: FAILED {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    write_markdown(out, results, note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
