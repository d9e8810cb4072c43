"""``bench perf all``: every benchmark's ratios in one run, at sizes that take minutes, as one table.

    bench perf all [--device cpu] [--only dpsgd whitebox ...] [--timeout 600] [--json]

Each benchmark runs in its own subprocess (``python -m bench perf NAME ... --json``, so each gets a fresh
interpreter and its own threads) at a small configuration listed in :data:`SUITE`; the table shows each ratio with
what it compares and which way is better, and the benchmark's own command for the full-size measurement. A ratio
is always between two variants measured in the same benchmark run. ``--device cuda`` runs the device variants
(DP-SGD steps on the GPU, captured and eager, and whole fits against the CPU).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

from bench.cliargs import list_arg
from bench.perf import REPO, benchmark, format_table, machine

Extract = Callable[[dict], list[tuple[str, float, str]]]  # (what is compared, ratio, which way is better)


def _dpsgd(out: dict) -> list[tuple[str, float, str]]:
    """The like-for-like ratios first (eager / eager, captured / captured), then any other route (vmap) against the
    eager non-private step, then the suite's step against Opacus's on the same model (hooks, ghost clipping)."""
    like = out.get("like_for_like") or {}
    where = f"DP step / non-private, {out.get('model', 'benchmark')} model, {out['features']} features"
    rows = [(f"{where}, like for like ({k})", float(v), "lower") for k, v in like.items()]
    covered = {"bookkeeping", "bookkeeping (graph)"} if like else set()
    rows += [(f"{where}: {k}", float(v), "lower") for k, v in out.get("ratio", {}).items()
             if not k.startswith("non-private") and k not in covered and not k.startswith("opacus")]
    rows += [(f"DP step / Opacus's ({k[len('opacus-'):]}), {out.get('model', 'benchmark')} model, {out['features']} "
              "features", float(v), "lower") for k, v in (out.get("vs_opacus") or {}).items()]
    return rows


def _single(key: str, what: str, better: str, reference: str | None = None) -> Extract:
    """The ratio ``out[key]`` (or each entry of it, but the ``reference`` entry itself: 1 by definition)."""
    def get(out: dict) -> list[tuple[str, float, str]]:
        v = out.get(key)
        if isinstance(v, dict):
            return [(f"{what}: {k}", float(x), better) for k, x in v.items() if k != reference]
        return [] if v is None else [(what, float(v), better)]
    return get


@dataclass(frozen=True)
class Entry:
    name: str
    argv: tuple[str, ...]
    extract: Extract
    devices: tuple[str, ...] = ("cpu", "cuda")


CSBM = "csbm:nodes=300,classes=2,features=8,degree=4"

#: the quick configuration of each benchmark (``{device}`` is replaced by ``--device``)
SUITE: tuple[Entry, ...] = (
    *(Entry("dpsgd", ("dpsgd", "--model", model, "--features", f, "--no-vmap", "--opacus", "--min-run-time", "1",
                      "--rounds", "5", "--device", "{device}"), _dpsgd)
      for model in ("benchmark", "gcn") for f in ("128", "1433")),
    Entry("whitebox", ("whitebox", "--dataset", CSBM, "--split", "random-75-10-15", "--runs", "4", "--canaries",
                       "200", "--workers", "2", "--device", "{device}"),
          _single("ratio", "pooled white-box audit", "lower")),
    Entry("dpgnn-fit", ("dpgnn-fit", "--dataset", "csbm:nodes=5000,degree=10", "--rounds", "1", "--set", "epochs=3",
                        "--device", "{device}"),
          _single("ratio", "DP-GNN fit / its non-private twin (same trees and batches; in-edges, K 3)", "lower")),
    *(Entry("dpgnn-sampler", ("dpgnn-sampler", "--dataset", "csbm:nodes=20000,degree=10", "--relation", relation,
                              "--repeats", "1"),
            _single("ratio", f"DP-GNN sampler ({relation})", "higher"), ("cpu",))
      for relation in ("input-graph", "in-edges")),
    Entry("drw-sampler", ("drw-sampler", "--dataset", "csbm:nodes=20000,degree=10", "--repeats", "1"),
          _single("speedup", "DRW sampler: pure-Python reference / compiled", "higher"), ("cpu",)),
    Entry("privgnn", ("privgnn", "--teachers", "4", "--epochs", "10", "--rounds", "1"),
          _single("speedup_vs_pyg_loop", "PrivGNN teachers per second vs the one-by-one PyG loop", "higher",
                  reference="one-by-one (PyG)"),
          ("cpu",)),
    Entry("fit", ("fit", "--methods", "dp-mlp", "--datasets", "cora", "--device", "cuda", "--reference", "cpu"),
          lambda out: [(f"whole fit {r.get('method')} on {r.get('dataset')}: cpu / cuda", float(r["speedup"]),
                        "higher") for r in out.get("rows", out.get("results", [])) if "speedup" in r], ("cuda",)),
)


def run_suite(device: str = "cpu", only: list[str] | None = None, timeout: float = 600.0,
              log: Callable[[str], None] = lambda s: None) -> dict:
    """Run every entry of :data:`SUITE` for ``device`` (or those named in ``only``); a benchmark that fails or
    times out is reported with its error, not skipped silently."""
    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    rows, failures = [], []
    for e in SUITE:
        if kind not in e.devices or (only and e.name not in only):
            continue
        argv = [a.replace("{device}", device) for a in e.argv]
        cmd = [sys.executable, "-m", "bench", "perf", *argv, "--json"]
        log(f"# bench perf {' '.join(argv)}")
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            failures.append({"benchmark": e.name, "argv": argv, "error": f"timed out after {timeout:g} s"})
            continue
        seconds = time.perf_counter() - t0
        try:
            out = json.loads(p.stdout)
        except json.JSONDecodeError:
            failures.append({"benchmark": e.name, "argv": argv,
                             "error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]})
            continue
        for what, ratio, better in e.extract(out):
            rows.append({"benchmark": e.name, "compared": what, "ratio": ratio, "better": better,
                         "seconds": round(seconds, 1), "command": "bench perf " + " ".join(argv)})
    return {"benchmark": "all", "device": device, "rows": rows, "failures": failures}


@benchmark("all", "every benchmark's ratios in one run, at small sizes (one table)")
def _args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--device", default="cpu")
    list_arg(q, "--only", metavar="NAME", help="only these benchmarks (names as in bench perf)")
    q.add_argument("--timeout", type=float, default=600.0, help="seconds per benchmark (default %(default)s)")
    q.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from bench.perf import emit
    from methods.base import ConfigError

    names = {e.name for e in SUITE}
    unknown = sorted(set(args.only or []) - names)
    if unknown:
        raise ConfigError(f"--only: unknown benchmark {', '.join(unknown)} (one of {', '.join(sorted(names))})")
    if not args.timeout > 0:
        raise ConfigError(f"--timeout must be > 0 (got {args.timeout})")
    start = machine()
    out = run_suite(args.device, args.only, args.timeout, log=lambda s: print(s, file=sys.stderr, flush=True))
    out["machine"] = start
    emit(out, args, _render)
    return 1 if out["failures"] else 0


def _render(out: dict) -> None:
    rows = [[r["benchmark"], r["compared"], f"{r['ratio']:.2f}x", f"{r['better']} is better", f"{r['seconds']:.0f}"]
            for r in out["rows"]]
    print(format_table(["benchmark", "compared (in the same run)", "ratio", "", "s"], rows))
    for f in out["failures"]:
        print(f"FAILED {f['benchmark']} ({' '.join(f['argv'])}): {f['error']}")
