"""``bench perf scale``: fit seconds and peak memory of every method family on seeded ``csbm`` graphs of growing size.

    bench perf scale [--nodes 10000 100000 ...] [--degrees 10 50] [--families dp-mlp gap-edge ...]
                     [--max-epochs N] [--timeout 3600] [--mem-cap 24] [--work DIR] [--records FILE] [--threads 1]
    bench perf scale --report [--records FILE] [--out docs/scale]

Each graph is built once, in its own process (build seconds and peak RSS recorded apart), and saved under
``--work`` (default ``$BENCH_CACHE_DIR/scale``, never the repository). Each (graph, method) fit then runs in a fresh
subprocess that loads the saved graph: its fit seconds (``Method.fit`` plus the predictions, as ``bench perf fit``
times them) and peak resident memory (the child's ``ru_maxrss``; on CUDA also ``torch.cuda.max_memory_allocated``).
A watcher kills a child whose RSS passes ``--mem-cap`` GiB (recorded as ``oom``) or that runs past ``--timeout``
(``timeout``). One JSON record per fit is appended to ``--records`` as it finishes; a rerun skips the (graph,
method, device, epoch cap) pairs already recorded ok, or oom / timeout under a cap / timeout at least as large
(``--redo``: run them all again).

Settings: each method's defaults (the papers' values, which the leaderboard uses where no tuned entry exists) at the
leaderboard's headline budget (edge 1, node 8, feature 8). ``--max-epochs N`` caps every epoch count at N; such a
record keeps the measured seconds and an extrapolated full fit, labelled extrapolated: with N > 1 a one-epoch fit
runs after the capped one, and the two give a fixed cost and seconds per epoch (``--max-epochs 1`` scales the one fit up, an upper
bound). Before anything is timed, each child fits the same method once on a tiny graph (lazy initialisation and
compiled kernels are not the fit's cost). ``--report`` writes ``index.md`` (the table, the fitted slope k of log seconds against log edges
from 100k nodes up, per method) and one log-log PNG per method.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.cliargs import list_arg
from bench.perf import REPO, benchmark, common_args, machine

#: (nodes, mean degree, the real graph it stands in for); edges are undirected (PyG stores each twice)
POINTS: tuple[tuple[int, float, str], ...] = (
    (10_000, 10, "small benchmark graphs (Cora 2.7k nodes to Physics 34k)"),
    (10_000, 50, "Amazon Computers (13.8k nodes, 245k edges)"),
    (100_000, 10, "ogbn-arxiv (169k nodes, 1.17M edges, mean degree 13.7)"),
    (100_000, 50, "Reddit's node count (233k) at a tenth of its mean degree (492)"),
    (1_000_000, 10, "40% of ogbn-products' nodes at a fifth of its degree"),
    (1_000_000, 50, "Reddit's edge count (57M undirected, 114M stored) on 40% of ogbn-products' nodes"),
    (2_400_000, 51, "ogbn-products (2.45M nodes, 61.9M edges, mean degree 50.5)"),
)
#: features and classes of every default graph: ogbn-products' (the 2.4M-node target)
FEATURES, CLASSES = 100, 47
#: one method per family (the name in parentheses in the report is the family)
FAMILIES = {"baseline (gcn)": "gcn", "dp-mlp": "dp-mlp", "dpgnn": "dpgnn-adam", "drw": "drw", "gap-edge": "gap-edge",
            "gap-node": "gap-node", "progap-edge": "progap-edge", "progap-node": "progap-node",
            "edgerand": "edgerand", "privgnn": "privgnn", "pate": "pate-m"}
#: what each representative holds at 2.4M nodes / 61.2M edges (122.4M stored entries) / 100 features, read from the
#: code; every fit also holds the loaded graph: x 0.96 GB (float32) + edge_index 1.96 GB (int64) + ~0.4 GB process
MEMORY = {
    "gcn": "normalised adjacency as CSR with self-loops (col int64 1.0 GB + values 0.5 GB) and N x 64 activations "
           "(0.6 GB each); no N x N or E x hidden tensor; transient copies while the adjacency is normalised and "
           "converted (~0.2 KB per edge): measured 17.5 GiB at 2.4M nodes / 61.2M edges, under 24 GiB",
    "dp-mlp": "never reads the graph: N x 100 features and 256-row batches: ~3.5 GB",
    "dpgnn-adam": "one depth-1 tree (<= 11 nodes) per training node, built once (~0.3 GB); the full-graph passes "
                  "(validation every epoch, the predictions) gathered every edge's message at once, E x hidden "
                  "floats = 122.4M x 100 x 4 B = 49 GB: out of memory at 24 GiB (measured: 2.9 GiB at 100k nodes / "
                  "2.5M edges against 1.2 GiB at 0.5M). They now add messages in blocks of 2^20 edges (0.4 GB; "
                  "methods.dpgnn.MESSAGE_BLOCK, the same sums): measured 10.5 GiB at 2.4M nodes / 61.2M edges. "
                  "The GAT backbone (not the default) still forms E x heads attention weights",
    "drw": "the walk sampler's CSR (col int64 1.0 GB) and walk batches of fixed size: ~5-7 GB",
    "gap-edge": "the aggregation matrix as CSR (1.5 GB) and K+1 cached N x 16 aggregates (0.15 GB each): ~5-7 GB",
    "gap-node": "the out-degree cut (a copy of edge_index, 2 GB) then the CSR (1.5 GB), N x 16 aggregates: ~7-8 GB",
    "progap-edge": "as gap-edge, one CSR and one N x 16 aggregate per stage: ~5-7 GB",
    "progap-node": "as gap-node: ~7-8 GB",
    "edgerand": "randomised response on 61M upper-triangle keys (int64 0.5 GB, sorted copies), about as many "
                "released edges in both directions (2 GB) plus their sort, then GraphSAGE on the released CSR; "
                "measured 7.7 GiB at 1M nodes / 25M edges and 18.2 GiB at 2.4M / 61.2M: under 24 GiB",
    "privgnn": "the private-public split keeps several int64 copies of edge_index alive at once (the dataset's, "
               "the task's without private-public edges, split_graphs' private and public subgraphs, the serving "
               "graph), the edge lookups of the private and public graphs (int64 edge ids, ~0.25 GB each), the "
               "KNN's distance estimates for a block of queries against every private node (2^25 floats, 128 MB), "
               "the public aggregation in blocks of 2^20 edges: measured 13.6 GiB at 2.4M nodes / 61.2M edges",
    "pate-m": "the same private-public copies of edge_index (2 GB each at 2.4M) and 20 teachers on partitions: "
              "measured 3.8 GiB at 1M nodes / 5M edges, 8.8 GiB at 1M / 25M and 20.7 GiB at 2.4M / 61.2M (~0.25 KB "
              "per edge): within 24 GiB, narrowly. The public graph's mean aggregation gathered every edge's "
              "features at once (E_pub x 100 floats, several GB); it now adds them in blocks of 2^20 edges "
              "(methods.privgnn.teachers.MESSAGE_BLOCK, the same sums; the 20.7 GiB predates that)",
}
#: config fields that count epochs (capped by --max-epochs)
EPOCH_FIELDS = ("epochs", "encoder_epochs", "teacher_epochs")
#: the slope is fitted on the points with at least this many nodes
SLOPE_FROM = 100_000
SLOPE_GOAL = 1.1
DONE = ("ok", "oom", "timeout")
GIB = 2 ** 30


def graph_spec(nodes: int, degree: float, features: int = FEATURES, classes: int = CLASSES, seed: int = 0) -> str:
    return f"csbm:nodes={nodes},degree={degree:g},features={features},classes={classes},seed={seed}"


def stand_in(nodes: int, degree: float) -> str:
    return next((s for n, d, s in POINTS if n == nodes and d == degree), "")


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_child(argv: list[str], *, timeout: float, mem_cap_gib: float, log: Path, threads: int) -> dict[str, Any]:
    """Run ``python -m bench.perf.scale --child ...`` under the watcher. Returns ``{"status", "reason",
    "watched_peak_rss", "seconds"}`` plus what the child wrote (its last stdout line, JSON)."""
    env = dict(os.environ)
    if threads > 0:
        for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[k] = str(threads)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    cap = mem_cap_gib * GIB
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bench.perf.scale", "--child", *argv], cwd=str(REPO), env=env,
                                stdout=subprocess.PIPE, stderr=err, text=True)
        state = {"peak": 0, "killed": None}

        def watch() -> None:
            t0 = time.monotonic()
            while proc.poll() is None:
                rss = _rss(proc.pid)
                state["peak"] = max(state["peak"], rss)
                if rss > cap:
                    state["killed"] = ("oom", f"out of memory: killed at {rss / GIB:.2f} GiB RSS "
                                              f"(cap {mem_cap_gib:g} GiB)")
                elif time.monotonic() - t0 > timeout:
                    state["killed"] = ("timeout", f"timed out after {timeout:g} s")
                if state["killed"]:
                    proc.kill()
                    return
                time.sleep(0.05)

        t = time.perf_counter()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        out, _ = proc.communicate()
        watcher.join()
        seconds = time.perf_counter() - t
    res: dict[str, Any] = {"watched_peak_rss": state["peak"], "seconds": seconds}
    if state["killed"]:
        res["status"], res["reason"] = state["killed"]
        return res
    lines = [ln for ln in (out or "").splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        res.update(json.loads(lines[-1]))
        res.setdefault("status", "ok")
        return res
    tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    last = tail[-1].strip() if tail else f"exit status {proc.returncode}"
    if lines:
        res.update(json.loads(lines[-1]))
    if "MemoryError" in last or "DefaultCPUAllocator: can't allocate" in last or proc.returncode in (-9, 137):
        res["status"], res["reason"] = "oom", f"out of memory ({last[:200]})"
    else:
        res.setdefault("status", "error")
        res.setdefault("reason", last[:300])
    return res


# --------------------------------------------------------------------------------------
# the child processes
# --------------------------------------------------------------------------------------


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def _child_build(spec: str, path: str) -> dict[str, Any]:
    import torch

    from bench.datasets import load_dataset

    t = time.perf_counter()
    ds = load_dataset(spec)
    seconds = time.perf_counter() - t
    d = ds.data
    tmp = path + ".tmp"
    torch.save({"name": ds.name, "x": d.x, "y": d.y, "edge_index": d.edge_index, "num_classes": ds.num_classes,
                "source": ds.source}, tmp)
    os.replace(tmp, path)
    return {"build_seconds": seconds, "build_peak_rss": _peak_rss(), "nodes": ds.num_nodes,
            "edges": int(d.edge_index.size(1)) // 2}


def epoch_overrides(cls, max_epochs: int | None) -> tuple[dict[str, int], float]:
    """The overrides that cap ``cls``'s epoch counts at ``max_epochs`` and the factor full / capped epochs."""
    if not max_epochs:
        return {}, 1.0
    defaults = {f.name: f.default for f in dataclasses.fields(cls.Config)}
    full = {k: v for k, v in defaults.items() if k in EPOCH_FIELDS and isinstance(v, int) and v > 0}
    capped = {k: min(v, max_epochs) for k, v in full.items()}
    if not full or capped == full:
        return {}, 1.0
    return {k: v for k, v in capped.items() if v != full[k]}, sum(full.values()) / sum(capped.values())


def _epoch_defaults(cls) -> dict[str, int]:
    return {f.name: f.default for f in dataclasses.fields(cls.Config)
            if f.name in EPOCH_FIELDS and isinstance(f.default, int) and f.default > 0}


def _warm_up(cls, device: str) -> None:
    """One small fit of the same method first: lazy initialisation and compiled kernels are not the fit's cost."""
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods.base import Budget, fit_method
    from methods.streams import RunStreams

    try:
        split = "random-75-10-15" if "transductive" in cls.settings else "private-public"
        task = make_task(load_dataset("csbm:nodes=400,classes=3,features=8,degree=4"), split, 0)
        over = {**getattr(cls, "smoke_config", {}), **epoch_overrides(cls, 1)[0]}
        budget = Budget(8.0, 1e-4) if cls.privacy_unit != "none" else Budget()
        fit_method(cls(**over), task, budget, RunStreams(0), device=device).predict_proba()
    except Exception:
        pass


def _child_fit(path: str, method: str, device: str, seed: int, max_epochs: int) -> dict[str, Any]:
    import torch
    from torch_geometric.data import Data

    from bench.datasets.base import GraphDataset
    from bench.perf.fit import HEADLINE
    from bench.splits import make_task
    from methods.base import Budget, default_delta, fit_method, get_method
    from methods.streams import RunStreams

    t = time.perf_counter()
    g = torch.load(path, weights_only=True)  # a dict of tensors, names and counts: no code to run
    n = int(g["y"].numel())
    ds = GraphDataset(name=g["name"], data=Data(x=g["x"], y=g["y"], edge_index=g["edge_index"], num_nodes=n),
                      num_classes=int(g["num_classes"]), source=g["source"])
    del g
    cls = get_method(method)
    split = "random-75-10-15" if "transductive" in cls.settings else "private-public"
    task = make_task(ds, split, seed)
    load_seconds = time.perf_counter() - t
    units = task.num_nodes if task.setting == "transductive" else int(task.train_mask.sum())
    budget = (Budget(HEADLINE[cls.privacy_unit], default_delta(units)) if cls.privacy_unit in HEADLINE else Budget())
    overrides, factor = epoch_overrides(cls, max_epochs or None)
    _warm_up(cls, device)
    rss_loaded = _rss(os.getpid())
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    def timed(over: dict):
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        fitted = fit_method(cls(**over), task, budget, RunStreams(seed), device=device)
        proba = fitted.predict_proba()
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t, fitted, proba

    seconds, fitted, proba = timed(overrides)
    one_s = None
    if overrides and max_epochs > 1:  # then a one-epoch fit: fixed cost and seconds per epoch from two points
        one_s, _, _ = timed(epoch_overrides(cls, 1)[0])
    m = cls(**overrides)
    extra: dict[str, Any] = {}
    if overrides:
        ep_cap = sum(min(v, max_epochs) for v in _epoch_defaults(cls).values())
        ep_full = sum(_epoch_defaults(cls).values())
        ep_one = sum(min(v, 1) for v in _epoch_defaults(cls).values())
        if one_s is not None and ep_cap > ep_one and seconds > one_s:
            per_epoch = (seconds - one_s) / (ep_cap - ep_one)
            how = f"{ep_one} and {ep_cap} epochs: fixed {seconds - per_epoch * ep_cap:.2f} s + {per_epoch:.3f} s/epoch"
        else:
            per_epoch = seconds / ep_cap
            how = f"{ep_cap} epochs scaled up (an upper bound: fixed costs scaled too)"
        extra = {"seconds_per_epoch": per_epoch, "one_epoch_seconds": one_s, "epochs_run": ep_cap,
                 "epochs_full": ep_full, "extrapolation": how}
        full = seconds + per_epoch * (ep_full - ep_cap)
    else:
        full = seconds
    acc = float((proba[task.test_mask].argmax(1) == task.data.y[task.test_mask]).float().mean())
    eps = fitted.epsilon(budget.delta) if cls.privacy_unit != "none" else None
    return {"split": split, "epsilon_target": budget.epsilon if budget.is_private else None,
            "delta": budget.delta if budget.is_private else None,
            "settings": dataclasses.asdict(m.config), "capped_epochs": overrides, "epoch_factor": factor,
            "fit_seconds": seconds, "full_fit_seconds": full, "extrapolated": bool(overrides), **extra,
            "load_seconds": load_seconds, "rss_after_load": rss_loaded, "peak_rss": _peak_rss(),
            "gpu_peak_bytes": torch.cuda.max_memory_allocated() if cuda else None,
            "epsilon_spent": None if eps is None or math.isinf(eps) else eps, "test_acc": acc}


def _child(argv: list[str]) -> int:
    import torch

    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    if threads > 0:
        torch.set_num_threads(threads)
    kind = argv[0]
    if kind == "build":
        out = _child_build(argv[1], argv[2])
    else:
        out = _child_fit(argv[1], argv[2], argv[3], int(argv[4]), int(argv[5]))
    print(json.dumps(out, default=str), flush=True)
    return 0


# --------------------------------------------------------------------------------------
# the grid
# --------------------------------------------------------------------------------------


def resolve_families(names: list[str] | None) -> list[str]:
    """Family names or method names -> method names (unknown: ConfigError)."""
    from methods.base import ConfigError, get_method

    if not names:
        return list(FAMILIES.values())
    out = []
    for name in names:
        key = {k.split(" ")[0]: v for k, v in FAMILIES.items()}.get(name, name)
        try:
            get_method(key)
        except ConfigError:
            raise ConfigError(f"unknown family {name!r}; available: {', '.join(k.split(' ')[0] for k in FAMILIES)} "
                              "or any method name") from None
        out.append(key)
    return list(dict.fromkeys(out))


def grid(nodes: list[int] | None, degrees: list[float] | None) -> list[tuple[int, float]]:
    from methods.base import ConfigError

    for n in nodes or []:
        if n < 2:
            raise ConfigError(f"--nodes must be >= 2 (got {n})")
    for d in degrees or []:
        if not d > 0:
            raise ConfigError(f"--degrees must be > 0 (got {d:g})")
    if not nodes and not degrees:
        return [(n, d) for n, d, _ in POINTS]
    if not degrees:
        return [(n, d) for n, d, _ in POINTS if n in nodes] or [(n, d) for n in nodes for d in (10, 50)]
    return [(n, d) for n in (nodes or sorted({n for n, _, _ in POINTS})) for d in degrees]


def load_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def settled(r: dict, mem_cap: float, timeout: float) -> bool:
    """Whether a rerun skips ``r``: ok, or out of memory / out of time under a cap / timeout at least this large."""
    status = r.get("status")
    if status == "oom":
        return (r.get("mem_cap_gib") or 0) >= mem_cap
    if status == "timeout":
        return (r.get("timeout_s") or 0) >= timeout
    return status == "ok"


def record_key(r: dict) -> tuple:
    return (r["graph"], r["method"], r["device"], r.get("max_epochs") or 0)


def run_scale(args: argparse.Namespace, log=lambda s: None) -> list[dict]:
    from tqdm import tqdm

    from bench.provenance import host_description
    from bench.tracking import commit_of

    points = grid(args.nodes, args.degrees)
    methods = resolve_families(args.families)
    records_path = Path(args.records)
    work = Path(args.work).expanduser() if args.work else _default_work()
    work.mkdir(parents=True, exist_ok=True)
    done = {record_key(r) for r in load_records(records_path) if settled(r, args.mem_cap, args.timeout)}
    commit = commit_of(REPO)
    host = {**machine(), "host": host_description(args.device)}
    new: list[dict] = []
    jobs = [(n, d, m) for n, d in points for m in methods]
    todo = [(n, d, m) for n, d, m in jobs
            if args.redo or (graph_spec(n, d, args.features, args.classes, args.seed), m, args.device,
                             args.max_epochs or 0) not in done]
    log(f"{len(jobs) - len(todo)} of {len(jobs)} fits already recorded in {records_path}; {len(todo)} to run")
    built: dict[str, dict] = {}
    bar = tqdm(todo, desc="scale", unit="fit", file=sys.stderr, disable=not todo)
    for n, d, method in bar:
        spec = graph_spec(n, d, args.features, args.classes, args.seed)
        bar.set_postfix_str(f"{n} nodes, degree {d:g}, {method}")
        if spec not in built:
            built[spec] = _build(spec, work, args, log)
        b = built[spec]
        rec: dict[str, Any] = {"commit": commit.removesuffix("-dirty"), "dirty": commit.endswith("-dirty"),
                               "machine": host, "threads": args.threads, "device": args.device, "graph": spec,
                               "stands_in": stand_in(n, d), "nodes": n, "degree": d, "features": args.features,
                               "classes": args.classes, "edges": b.get("edges"), "method": method,
                               "family": next((k for k, v in FAMILIES.items() if v == method), method),
                               "max_epochs": args.max_epochs or 0, "build_seconds": b.get("build_seconds"),
                               "build_peak_rss": b.get("build_peak_rss"), "mem_cap_gib": args.mem_cap,
                               "timeout_s": args.timeout}
        if b.get("status", "ok") != "ok":
            rec.update(status=b["status"], reason="graph build: " + b.get("reason", ""))
        else:
            res = run_child(["fit", b["path"], method, args.device, str(args.seed), str(args.max_epochs or 0)],
                            timeout=args.timeout, mem_cap_gib=args.mem_cap, log=work / "last-fit.log",
                            threads=args.threads)
            res.pop("seconds", None)
            watched = res.pop("watched_peak_rss", 0)
            res.setdefault("peak_rss", watched)
            rec.update(res)
        rec["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        with open(records_path, "a") as f:
            f.write(json.dumps(rec, default=str) + "\n")
        new.append(rec)
        log(f"{n} nodes, degree {d:g}, {method}: {describe(rec)}")
    return new


def _default_work() -> Path:
    from bench.datasets.cache import cache_dir

    return cache_dir() / "scale"


def _build(spec: str, work: Path, args: argparse.Namespace, log) -> dict:
    """Build ``spec`` once into ``work`` (a saved graph and its build facts), reusing an earlier build."""
    import hashlib

    stem = work / ("graph-" + hashlib.sha1(spec.encode()).hexdigest()[:16])
    path, facts_path = str(stem) + ".pt", Path(str(stem) + ".json")
    if facts_path.exists() and Path(path).exists():
        return {**json.loads(facts_path.read_text()), "path": path}
    log(f"building {spec}")
    res = run_child(["build", spec, path], timeout=args.timeout, mem_cap_gib=args.mem_cap,
                    log=work / "last-build.log", threads=args.threads)
    res.pop("seconds", None)
    res["build_peak_rss"] = res.get("build_peak_rss") or res.pop("watched_peak_rss", 0)
    res.pop("watched_peak_rss", None)
    if res.get("status") == "ok":
        facts_path.write_text(json.dumps({**res, "spec": spec}))
    return {**res, "path": path}


# --------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------


def describe(r: dict) -> str:
    """One cell: seconds and peak RSS, or why there is none."""
    if r.get("status") != "ok":
        return f"{r.get('status')}: {r.get('reason', '')}"
    s = f"{r['fit_seconds']:.1f} s"
    if r.get("extrapolated"):
        s = f"{r['full_fit_seconds']:.0f} s extrapolated ({s} at <= {r['max_epochs']} epochs)"
    return f"{s}, {r['peak_rss'] / GIB:.2f} GiB"


def fit_slope(edges: list[float], seconds: list[float]) -> float | None:
    """Least-squares slope k of log(seconds) against log(edges) (None: fewer than two distinct edge counts)."""
    import numpy as np

    pts = [(e, s) for e, s in zip(edges, seconds) if e and e > 0 and s and s > 0]
    if len({e for e, _ in pts}) < 2:
        return None
    x = np.log([e for e, _ in pts])
    y = np.log([s for _, s in pts])
    return float(np.polyfit(x, y, 1)[0])


def latest(records: list[dict], device: str | None = None) -> dict[tuple, dict]:
    """The last record of every (graph, method, device, epoch cap), ok records preferred over errors."""
    out: dict[tuple, dict] = {}
    for r in records:
        if device and r.get("device") != device:
            continue
        key = record_key(r)
        old = out.get(key)
        if old is None or r.get("status") != "error" or old.get("status") == "error":
            out[key] = r
    return out


def _best(recs: list[dict]) -> dict:
    """Of one (graph, method)'s records, the uncapped ok one, else a capped ok one, else the last."""
    ok = [r for r in recs if r.get("status") == "ok"]
    return (sorted(ok, key=lambda r: (r.get("max_epochs") or 10 ** 9), reverse=True) or recs)[0] if ok else recs[-1]


def summarize(records: list[dict], device: str = "cpu") -> dict[str, Any]:
    """Per method: the cell of every point, the slope from SLOPE_FROM nodes up and the largest point done."""
    cells: dict[str, dict[tuple, dict]] = {}
    points: dict[tuple, dict] = {}
    for r in latest(records, device).values():
        p = (r["nodes"], r["degree"])
        points.setdefault(p, {"nodes": r["nodes"], "degree": r["degree"], "edges": r.get("edges"),
                              "stands_in": r.get("stands_in", ""), "build_seconds": r.get("build_seconds"),
                              "build_peak_rss": r.get("build_peak_rss"), "graph": r["graph"]})
        cells.setdefault(r["method"], {}).setdefault(p, []).append(r)  # type: ignore[arg-type]
    order = sorted(points, key=lambda p: (points[p]["edges"] or 0, p))
    methods = [m for m in FAMILIES.values() if m in cells] + sorted(set(cells) - set(FAMILIES.values()))
    out = {"points": [points[p] for p in order], "methods": []}
    for m in methods:
        row = {p: _best(rs) for p, rs in cells[m].items()}
        big = [r for p, r in row.items() if r.get("status") == "ok" and p[0] >= SLOPE_FROM]
        k = fit_slope([r["edges"] for r in big], [r["full_fit_seconds"] for r in big])
        ok = [r for r in row.values() if r.get("status") == "ok"]
        largest = max(ok, key=lambda r: (r["edges"] or 0), default=None)
        out["methods"].append({"method": m, "family": next((f for f, v in FAMILIES.items() if v == m), m),
                               "cells": {p: row.get(p) for p in order}, "slope": k, "slope_points": len(big),
                               "extrapolated": any(r.get("extrapolated") for r in big), "largest": largest,
                               "rss_fit": _rss_line(ok)})
    return out


def _rss_line(ok: list[dict], degree: float = 51) -> tuple[float, float, float, float] | None:
    """Peak RSS = a + b * nodes + c * edges, and a label: least squares over the ok points with at least
    SLOPE_FROM nodes when they span two sizes and two degrees ("fit"), else the line through the two largest points
    of the degree nearest ``degree`` (c only, b = 0; the label is that degree); None without two sizes."""
    import numpy as np

    big = [r for r in ok if r.get("edges") and r["nodes"] >= SLOPE_FROM]
    if len({r["nodes"] for r in big}) >= 2 and len({r["degree"] for r in big}) >= 2 and len(big) >= 3:
        a = np.array([[1.0, r["nodes"], r["edges"]] for r in big])
        coef = np.linalg.lstsq(a, np.array([float(r["peak_rss"]) for r in big]), rcond=None)[0]
        return float(coef[0]), float(coef[1]), float(coef[2]), -1.0
    by_degree: dict[float, dict[float, float]] = {}
    for r in ok:
        if r.get("edges"):
            by_degree.setdefault(r["degree"], {})[r["edges"]] = r["peak_rss"]
    usable = [d for d, pts in by_degree.items() if len(pts) >= 2]
    if not usable:
        return None
    d = min(usable, key=lambda x: (abs(x - degree), -x))
    (e0, m0), (e1, m1) = sorted(by_degree[d].items())[-2:]
    c = (m1 - m0) / (e1 - e0)
    return m0 - c * e0, 0.0, c, d


def _fmt_n(n: float) -> str:
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if n >= div:
            v = n / div
            return f"{v:.3g}{unit}"
    return f"{n:g}"


def write_report(records: list[dict], out: Path, device: str = "cpu", target_nodes: int = 2_400_000,
                 target_edges: int = 61_200_000) -> Path:
    """``out/index.md`` and one ``out/<method>.png`` from ``records``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    s = summarize(records, device)
    pts = s["points"]
    head = ["method (family)"] + [f"{_fmt_n(p['nodes'])} / {p['degree']:g}" for p in pts] + \
           [f"slope k ({_fmt_n(SLOPE_FROM)}+ nodes)", f"k <= {SLOPE_GOAL}",
            f"peak RSS estimate at {_fmt_n(target_nodes)} nodes, {_fmt_n(target_edges)} edges"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in s["methods"]:
        cells = []
        for p in pts:
            r = m["cells"][(p["nodes"], p["degree"])]
            cells.append("-" if r is None else describe(r).replace("|", "/"))
        k = m["slope"]
        verdict = "-" if k is None else ("yes" if k <= SLOPE_GOAL else "**no**")
        # a larger graph that ran out of time (or memory) says the slope of the smaller ones may not carry
        fitted = [p["edges"] for p in pts if (r := m["cells"][(p["nodes"], p["degree"])]) is not None
                  and r.get("status") == "ok"]
        stopped = [p for p in pts if (r := m["cells"][(p["nodes"], p["degree"])]) is not None
                   and r.get("status") in ("timeout", "oom") and fitted and p["edges"] > max(fitted)]
        if k is not None and stopped:
            verdict = f"not shown: {m['cells'][(stopped[0]['nodes'], stopped[0]['degree'])]['status']} at " \
                      f"{_fmt_n(stopped[0]['nodes'])} nodes"
        kk = "-" if k is None else f"{k:.2f}" + (" (extrapolated times)" if m["extrapolated"] else "") + \
             f" ({m['slope_points']} points)"
        line = m["rss_fit"]
        est = "-" if line is None else f"~{(line[0] + line[1] * target_nodes + line[2] * target_edges) / GIB:.1f} " \
            "GiB" + ("" if line[3] < 0 else f" (two points at degree {line[3]:g}: a rough guess)")
        name = m["method"] if m["family"] == m["method"] else f"{m['method']} ({m['family'].split(' ')[0]})"
        lines.append("| " + " | ".join([name] + cells + [kk, verdict, est]) + " |")
    graphs = ["| graph (nodes / mean degree) | edges | stands in for | build s | build peak RSS |",
              "|---|---|---|---|---|"]
    for p in pts:
        graphs.append(f"| `{p['graph']}` | {_fmt_n(p['edges'] or 0)} | {p['stands_in']} | "
                      f"{(p['build_seconds'] or 0):.1f} | {(p['build_peak_rss'] or 0) / GIB:.2f} GiB |")
    meta = sorted({(r.get("commit", "?")[:10] + ("-dirty" if r.get("dirty") else ""),
                    r.get("machine", {}).get("host", "?"), r.get("threads")) for r in records
                   if r.get("device") == device})
    text = [
        "# Scale track",
        "",
        "Generated by `bench perf scale --report` from [`records.jsonl`](records.jsonl) (one line per fit); the "
        "prose around the tables is in the module docstring and [Performance](../performance.md#scale-track).",
        "",
        f"Device {device}. Each cell: fit seconds (`Method.fit` plus predictions, the graph loaded beforehand) and "
        "the fit process's peak RSS (graph included), or why there is no number. Edges are undirected. "
        f"Slope k: least squares of log seconds against log edges over the ok points with at least "
        f"{_fmt_n(SLOPE_FROM)} nodes (the goal is k <= {SLOPE_GOAL}). The last column fits peak RSS = a + b nodes + "
        f"c edges to the ok points from {_fmt_n(SLOPE_FROM)} nodes up (two sizes and two degrees needed; else the "
        f"line through two points of one degree) and evaluates it at {_fmt_n(target_nodes)} nodes and "
        f"{_fmt_n(target_edges)} edges: an estimate, not a measurement (see "
        "[Memory at 2.4M nodes](#memory-at-24m-nodes)).",
        "",
        *lines,
        "",
        "## Graphs",
        "",
        *graphs,
        "",
        "## Runs",
        "",
        *[f"- commit `{c}`, {h}, {t} torch thread(s)" for c, h, t in meta],
        "",
        "## Memory at 2.4M nodes",
        "",
        "What each method holds on the ogbn-products stand-in (2.4M nodes, 61.2M edges, 100 features), read from "
        "the code; every fit also holds the loaded graph (x 0.96 GB, edge_index 1.96 GB) and the process (~0.4 GB). "
        "No family builds an N x N tensor; DP-GNN's full-graph passes built an E x hidden one and now stream it "
        "(below). The table's last column is the measured counterpart where two sizes are done; records made before "
        "a fix keep their numbers in records.jsonl, the table shows the latest.",
        "",
        *[f"- `{m}`: {text}" for m, text in MEMORY.items()],
        "",
        *_left_to_run(records, device),
        "## Plots",
        "",
    ]
    for m in s["methods"]:
        png = _plot(plt, m, pts, out)
        if png:
            text.append(f"![{m['method']}]({png.name})")
            text.append("")
    (out / "index.md").write_text("\n".join(text).rstrip() + "\n")
    return out / "index.md"


def _left_to_run(records: list[dict], device: str) -> list[str]:
    """The default grid's (point, method) pairs with no ok, oom or timeout record, and the command that runs them."""
    done = {(r["nodes"], r["degree"], r["method"]) for r in records
            if r.get("device") == device and r.get("status") in DONE and r.get("features") == FEATURES
            and r.get("classes") == CLASSES}
    left = [(n, d, m) for n, d, _ in POINTS for m in FAMILIES.values() if (n, d, m) not in done]
    if not left:
        return []
    by_point: dict[tuple, list[str]] = {}
    for n, d, m in left:
        by_point.setdefault((n, d), []).append(m)
    out = ["## Left to run", "", "Pairs of the default grid with no record yet (the command resumes: it runs only these):",
           ""]
    out += [f"- {_fmt_n(n)} nodes, degree {d:g}: {', '.join(ms)}" for (n, d), ms in by_point.items()]
    caps = sorted({r.get("max_epochs") or 0 for r in records if r.get("device") == device})
    cap = f" --max-epochs {caps[-1]}" if caps and caps[-1] else ""
    out += ["", "```text", f"bench perf scale --threads 1{cap} --device {device}", "bench perf scale --report",
            "```", ""]
    return out


def _plot(plt, m: dict, pts: list[dict], out: Path) -> Path | None:
    import numpy as np

    ok = [(p, m["cells"][(p["nodes"], p["degree"])]) for p in pts]
    ok = [(p, r) for p, r in ok if r is not None and r.get("status") == "ok"]
    if not ok:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    for deg in sorted({p["degree"] for p, _ in ok}):
        sel = [(p, r) for p, r in ok if p["degree"] == deg]
        e = [p["edges"] for p, _ in sel]
        a.plot(e, [r["full_fit_seconds"] for _, r in sel], "o-", label=f"mean degree {deg:g}")
        b.plot(e, [r["peak_rss"] / GIB for _, r in sel], "o-", label=f"mean degree {deg:g}")
    big = [(p, r) for p, r in ok if p["nodes"] >= SLOPE_FROM]
    if m["slope"] is not None:
        x = np.array([p["edges"] for p, _ in big], dtype=float)
        y = np.array([r["full_fit_seconds"] for _, r in big], dtype=float)
        c = np.mean(np.log(y)) - m["slope"] * np.mean(np.log(x))
        xs = np.geomspace(x.min(), x.max(), 20)
        a.plot(xs, np.exp(c) * xs ** m["slope"], "k--", lw=1, label=f"fit: k = {m['slope']:.2f}")
    for ax, ylab in ((a, "fit seconds"), (b, "peak RSS (GiB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("edges (undirected)")
        ax.set_ylabel(ylab)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{m['method']}: time and memory against edges" + (" (some times extrapolated)"
                                                                    if m["extrapolated"] else ""))
    fig.tight_layout()
    path = out / f"{m['method']}.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------


@benchmark("scale", "fit seconds and peak memory per method family on csbm graphs from 10k to 2.4M nodes")
def _args(q: argparse.ArgumentParser) -> None:
    list_arg(q, "--nodes", item=int, metavar="N",
                   help="graph sizes (default: the documented grid, 10k to 2.4M nodes)")
    list_arg(q, "--degrees", item=float, metavar="D",
                   help="mean degrees (with --nodes: every size at every degree; default: the grid's)")
    list_arg(q, "--families", metavar="NAME",
                   help=f"families or method names (default: every family: {', '.join(FAMILIES.values())})")
    q.add_argument("--features", type=int, default=FEATURES, help="feature width (default %(default)s)")
    q.add_argument("--classes", type=int, default=CLASSES, help="classes (default %(default)s)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default: %(default)s)")
    q.add_argument("--max-epochs", type=int, default=0, metavar="N",
                   help="cap every epoch count at N (0: the full settings); times are then extrapolated")
    q.add_argument("--timeout", type=float, default=3600.0, metavar="S", help="seconds per fit (default 3600)")
    q.add_argument("--mem-cap", type=float, default=24.0, metavar="GIB",
                   help="kill a fit whose RSS passes this many GiB (recorded as oom; default 24)")
    q.add_argument("--work", help="where built graphs are saved (default $BENCH_CACHE_DIR/scale)")
    q.add_argument("--records", default=str(REPO / "docs" / "scale" / "records.jsonl"),
                   help="JSONL the records are appended to (default docs/scale/records.jsonl)")
    q.add_argument("--redo", action="store_true", help="run pairs already recorded again")
    q.add_argument("--report", action="store_true", help="only write the report from --records")
    q.add_argument("--out", default=str(REPO / "docs" / "scale"), help="report folder (default docs/scale)")
    common_args(q, baseline=False)
    q.set_defaults(func=_run, threads=1)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    for name in ("features", "classes"):
        if getattr(args, name) < (2 if name == "classes" else 1):
            raise ConfigError(f"--{name} must be >= {2 if name == 'classes' else 1}")
    if args.max_epochs < 0:
        raise ConfigError(f"--max-epochs must be >= 0 (got {args.max_epochs})")
    if not args.timeout > 0 or not args.mem_cap > 0:
        raise ConfigError("--timeout and --mem-cap must be > 0")
    grid(args.nodes, args.degrees)
    resolve_families(args.families)
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("--device cuda: no CUDA device here (use --device cpu)")
    from bench.io import check_input, check_output_dir, check_output_file

    if args.report:
        check_input(args.records, "--records")
        check_output_dir(args.out, "--out")
        records = load_records(Path(args.records))
        if not records:
            raise ConfigError(f"no records in {args.records}")
        path = write_report(records, Path(args.out), args.device)
        print(path)
        return 0
    check_output_file(args.records, "--records")
    if args.work:
        check_output_dir(args.work, "--work", parents=True)
    start = machine()
    print(f"# {args.threads} torch thread(s) per fit, {start['cpu_count']} cores, load average "
          f"{start['load_average_1min']} at the start", file=sys.stderr)
    new = run_scale(args, log=lambda s: print(s, file=sys.stderr, flush=True))
    end = machine()
    if args.json:
        print(json.dumps({"benchmark": "scale", "machine": start, "machine_end": end, "records": new}, indent=2,
                         default=str))
        return 0
    print(f"# load average {end['load_average_1min']} at the end", file=sys.stderr)
    from bench.perf import format_table

    print(format_table(["nodes", "degree", "edges", "method", "result"],
                       [[str(r["nodes"]), f"{r['degree']:g}", str(r.get("edges")), r["method"], describe(r)]
                        for r in new]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(_child(sys.argv[2:]))
