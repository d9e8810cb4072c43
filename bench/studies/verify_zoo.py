"""The catch-rate table of ``bench verify`` against the mutant zoo, and its false-alarm rate on the shipped methods.

    python -m scripts.verify_zoo --out DIR [--mutants NAME ...] [--quick] [--seeds 0]
    python -m scripts.verify_zoo --false-alarms --out DIR [--datasets cora citeseer csbm:...] [--epsilons 1 8]
                                 [--seeds 0 1 2] [--methods ...] [--set privgnn.queries=50 ...] [--plugin FILE.py]

Zoo: every mutant of ``tests/plugins/mutants.py`` (``ZOO``) is verified at its recorded configuration and
dataset (epsilon 1, the default delta), untracked, through :func:`bench.api.verify`; the table is mutant x
check (``X`` caught, ``.`` passed, ``-`` not applicable) with the mutant's true epsilon. False alarms: every
shipped private method (its checked-in or default hyperparameters) on the given datasets, epsilons and seeds.
Results accumulate in ``DIR/verify_zoo.jsonl`` / ``DIR/false_alarms.jsonl`` (one line per verification, so a
rerun skips what is done) and the tables are written to ``DIR/*.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from audits.verify import CHECKS
from bench import api
from bench.cli import load_plugin

REPO = Path(__file__).resolve().parents[2]
MUTANTS = REPO / "tests" / "plugins" / "mutants.py"


def _done(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            out[rec["key"]] = rec
    return out


def _append(path: Path, rec: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(json.dumps(rec, sort_keys=True, default=str) + "\n")


def _verify(key: str, log: Path, **kw) -> dict:
    t0 = time.perf_counter()
    out = api.verify(track=False, progress=False, **kw)
    rep = out.report
    from bench.tracking import git_commit

    rec = {"key": key, "method": rep.method, "dataset": rep.dataset, "epsilon": kw.get("epsilon"), "commit": git_commit(),
           "seeds": rep.seeds, "verdict": rep.verdict, "violations": rep.violations, "seconds": time.perf_counter() - t0,
           "checks": {c.name: c.verdict for c in rep.checks}, "details": {c.name: c.detail for c in rep.checks
                                                                       if c.verdict == "VIOLATION"},
           **({"not_run": sorted({c.name for c in rep.not_run})} if rep.not_run else {})}
    _append(log, rec)
    return rec


def zoo(args) -> int:
    load_plugin(str(MUTANTS))
    import importlib

    mod = sys.modules.get("bench_plugin_" + str(abs(hash(str(MUTANTS.resolve()))))) or importlib.import_module(
        "tests.plugins.mutants")
    entries = mod.ZOO
    names = args.mutants or list(entries)
    log = Path(args.out) / "verify_zoo.jsonl"
    done = _done(log)
    for name in names:
        e = entries[name]
        key = f"{name}|{e.dataset}|quick={args.quick}|seeds={args.seeds}"
        if key in done:
            continue
        print(f"# verify {name} on {e.dataset}", file=sys.stderr, flush=True)
        try:
            rec = _verify(key, log, method=name, dataset=e.dataset, split=e.split, epsilon=1.0, seeds=args.seeds,
                          quick=args.quick, overrides={k: v for k, v in e.config.items()}, device="cpu",
                          threads=args.threads)
        except Exception as err:  # a mutant that breaks the battery is itself a finding: record it
            rec = {"key": key, "method": name, "verdict": "ERROR", "error": f"{type(err).__name__}: {err}"}
            _append(log, rec)
        print(f"  {rec['verdict']} {rec.get('violations', '')}", file=sys.stderr, flush=True)
    done = _done(log)
    rows, caught, tenfold, tenfold_caught = [], 0, 0, 0
    for name in names:
        e = entries[name]
        rec = next((r for k, r in done.items() if k.startswith(name + "|")), None)
        if rec is None:
            continue
        marks = [("X" if rec.get("checks", {}).get(c) == "VIOLATION" else
                  "." if rec.get("checks", {}).get(c) == "PASS" else "-") for c in CHECKS]
        hit = rec.get("verdict") == "VIOLATION"
        caught += hit
        big = e.claim_ratio >= 10
        tenfold += big
        tenfold_caught += big and hit
        rows.append([name, e.unit, str(e.true_epsilon), f"{e.claim_ratio:.3g}", *marks,
                     "caught" if hit else rec.get("verdict", "?")])
    header = ["mutant", "unit", "true eps", "true/claimed", *CHECKS, "verdict"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    summary = (f"\ncaught {caught} of {len(rows)} mutants ({caught / max(1, len(rows)):.0%}); "
               f"{tenfold_caught} of {tenfold} whose true epsilon is >= 10x the claim\n")
    text = "\n".join(lines) + "\n" + summary
    (Path(args.out) / "verify_zoo.md").write_text(text)
    print(text)
    return 0


def false_alarm_table(records: list[dict]) -> str:
    """Markdown: per dataset and method, how many verifications passed, raised a violation or failed to run, and
    their median time; then every alarm and error with its detail."""
    import statistics

    rows: dict[tuple[str, str, str], list[dict]] = {}
    for r in records:
        parts = r["key"].split("|")
        rows.setdefault((parts[1], r["method"], parts[6][4:] if len(parts) > 6 else "defaults"), []).append(r)
    runs = [r for r in records if r.get("verdict") in ("PASS", "VIOLATION", "INCONCLUSIVE")]
    alarms = [r for r in runs if r["verdict"] == "VIOLATION"]
    errors = [r for r in records if r.get("verdict") == "ERROR"]
    unsure = [r for r in runs if r["verdict"] == "INCONCLUSIVE"]  # a shipped method the battery cannot see into
    out = [f"{len(alarms)} false alarm(s) in {len(runs)} verifications of shipped methods"
           + (f"; {len(unsure)} INCONCLUSIVE" if unsure else "") + (f"; {len(errors)} did not run" if errors else ""),
           "",
           "| dataset | method | settings | verifications | PASS | INCONCLUSIVE | VIOLATION | ERROR | median seconds |",
           "|---|---|---|---|---|---|---|---|---|"]
    for (ds, m, over), rs in sorted(rows.items()):
        secs = [r["seconds"] for r in rs if "seconds" in r]
        n = {v: sum(r.get("verdict") == v for r in rs) for v in ("PASS", "INCONCLUSIVE", "VIOLATION", "ERROR")}
        counts = f"{n['PASS']} | {n['INCONCLUSIVE']} | {n['VIOLATION']} | {n['ERROR']}"
        out.append(f"| {ds} | {m} | {over} | {len(rs)} | {counts} | "
                   + (f"{statistics.median(secs):.0f} |" if secs else "- |"))
    out += [f"- VIOLATION {r['key']}: {r['violations']} {r.get('details')}" for r in alarms]
    out += [f"- INCONCLUSIVE {r['key']}: {r.get('not_run')}" for r in unsure]
    out += [f"- ERROR {r['key']}: {r.get('error')}" for r in errors]
    return "\n".join(out) + "\n"


def false_alarms(args) -> int:
    from methods.base import available_methods

    for plugin in args.plugin or []:  # a plugin's methods (e.g. tests/plugins/opacus_plugin.py) join the shipped ones
        load_plugin(plugin)

    methods = args.methods or sorted(n for n, c in available_methods().items() if c.privacy_unit != "none")
    log = Path(args.out) / "false_alarms.jsonl"
    done = _done(log)
    scoped: dict[str, list[str]] = {}
    for item in args.set or []:
        scope, dot, rest = item.partition(".")
        if not dot or scope not in available_methods():
            print(f"error: --set {item}: expected METHOD.key=value", file=sys.stderr)
            return 2
        scoped.setdefault(scope, []).append(rest)
    for ds in args.datasets:
        for name in methods:
            cls = available_methods()[name]
            split = "private-public" if "transductive" not in cls.settings else args.split
            over = scoped.get(name, [])
            for eps in args.epsilons:
                for seed in args.seeds:
                    key = f"{name}|{ds}|{split}|{eps}|{seed}|quick={args.quick}" + (f"|set={','.join(over)}" if over else "")
                    if key in done:
                        continue
                    print(f"# verify {name} on {ds}/{split} at eps {eps}, seed {seed} {' '.join(over)}",
                          file=sys.stderr, flush=True)
                    try:
                        rec = _verify(key, log, method=name, dataset=ds, split=split, epsilon=eps, seeds=[seed],
                                      quick=args.quick, device="cpu", threads=args.threads, overrides=over)
                    except Exception as err:
                        rec = {"key": key, "method": name, "verdict": "ERROR", "error": f"{type(err).__name__}: {err}"}
                        _append(log, rec)
                    print(f"  {rec['verdict']} {rec.get('violations', '')} {rec.get('error', '')}", file=sys.stderr,
                          flush=True)
    done = _done(log)
    text = false_alarm_table(list(done.values()))
    (Path(args.out) / "false_alarms.md").write_text(text)
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for the JSON-lines logs and the tables")
    p.add_argument("--false-alarms", action="store_true", help="verify the shipped methods instead of the zoo")
    p.add_argument("--mutants", nargs="*", help="zoo: a subset of the mutants")
    p.add_argument("--methods", nargs="*", help="false alarms: a subset of the methods")
    p.add_argument("--plugin", nargs="*", metavar="FILE.py",
                   help="false alarms: load these plugins first (name their methods with --methods)")
    p.add_argument("--datasets", nargs="*", default=["cora", "citeseer", "csbm:nodes=1000,classes=3,features=32"])
    p.add_argument("--split", default="random-75-10-15")
    p.add_argument("--epsilons", nargs="*", type=float, default=[1.0, 8.0])
    p.add_argument("--seeds", nargs="*", type=int, default=[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--set", nargs="*", metavar="METHOD.KEY=VALUE",
                   help="false alarms: a method's setting (part of the record's key), e.g. privgnn.queries=50")
    args = p.parse_args(argv)
    return false_alarms(args) if args.false_alarms else zoo(args)


if __name__ == "__main__":
    sys.exit(main())
