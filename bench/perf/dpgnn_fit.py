"""``bench perf dpgnn-fit``: a whole DP-GNN fit against its non-private twin on the same trees.

    bench perf dpgnn-fit [--dataset physics] [--split random-75-10-15] [--method dpgnn-adam] [--epsilon 12]
                         [--set max_degree=3 --set batch_size=2000 ...] [--rounds 3] [--baseline-rev REV] [--json]

The defaults are the README's Physics configuration (the paper's relation ``in-edges`` with K = 3, m = 2000, 30
epochs, hidden 32, max_children 10, lr 0.03; epsilon 12 at the run's default delta; ``--set relation=input-graph
--set max_degree=K`` times the default relation under a bound K the dataset satisfies, e.g. K = 382 on Physics).
``private`` is ``Method.fit`` as ``bench run`` calls it (trees, noise calibration, DP-Adam/DP-SGD steps with
per-example clipping and noise, the ledger after every epoch, validation). The ``twin`` runs the same loop without privacy: the same trees (the method's own
``prepare`` on the same ``subgraphs`` stream, without the per-tree Gram matrices only the clipping reads), the
same initialisation, the same number of steps over the same batches (same ``sampler`` stream), the same
optimiser, a plain mean loss and ``backward()``, and the same per-epoch validation; no clipping, no noise, no
accounting. Both read the same data path (sparse rows for bag-of-words features). Rounds alternate the two;
the ratio is the median over rounds of private / twin.

``--baseline-rev REV`` also times ``bench run`` of the same method and configuration from revision REV (in a
subprocess, once): the "before" of a change to the fit's speed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time


from bench.cliargs import list_arg
from bench.perf import baseline_tree, benchmark, common_args, emit, format_table, machine, set_threads

#: the README's Physics configuration for dpgnn-adam: the paper's K = 3 under the paper's relation (Algorithm 1;
#: the default relation input-graph would refuse K = 3 on Physics, whose bound is the graph's own degree)
README_CONFIG = {"relation": "in-edges", "max_degree": 3, "batch_size": 2000, "epochs": 30, "hidden": 32,
                 "max_children": 10, "lr": 0.03}


def _overrides(items: list[str]) -> dict:
    from methods.base import ConfigError

    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set takes KEY=VALUE (got {item!r})")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def twin_fit(method, task, seed: int, steps: int, device: str = "cpu") -> dict:
    """The non-private twin of a DP-GNN fit (see the module docstring); returns its phase times."""
    import torch
    import torch.nn.functional as F

    from methods.base import Budget, FitContext
    from methods.device import resolve_device
    from methods.dpgnn import DPGNNModel
    from methods.dpsgd import FixedSizeSampler
    from methods.streams import RunStreams

    c = method.config
    streams = RunStreams(seed)
    ctx = FitContext(task, Budget(), streams, resolve_device(device), False)
    dev = ctx.device
    t0 = time.perf_counter()
    with streams.global_torch("dropout", device=dev):
        prep = method.prepare(task, ctx.generator("subgraphs"), grams=False)
        t1 = time.perf_counter()
        n = prep.num_train
        m = min(c.batch_size, n)  # as DPGNN._fit
        steps_per_epoch = math.ceil(n / m)
        with ctx.init():
            model = DPGNNModel(task.num_features, task.num_classes, c.backbone, c.hidden, c.layers, c.encoder_layers,
                               c.decoder_layers, c.heads, c.activation).to(dev)
        opt = (torch.optim.SGD(model.parameters(), lr=c.lr) if method.optimizer == "sgd"
               else torch.optim.Adam(model.parameters(), lr=c.lr))
        sampler = FixedSizeSampler(n, m, ctx.generator("sampler"), unit="node")
        prep.to(dev)
        eval_graph = prep.eval_graph.to(dev)
        eval_x = prep.eval_input(dev)
        val_idx = task.val_mask.nonzero().view(-1)
        done, val_acc = 0, float("nan")
        while done < steps:
            for _ in range(min(steps_per_epoch, steps - done)):
                inputs, target = prep.batch(sampler.sample(), dev)
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(*inputs), target).backward()
                opt.step()
                done += 1
            if val_idx.numel():
                with torch.no_grad():
                    pred = model.full_graph(eval_x, eval_graph.edge_index)[val_idx.to(dev)].argmax(1).cpu()
                val_acc = float((pred == task.data.y[val_idx]).float().mean())
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "prepare_seconds": t1 - t0, "training_seconds": t2 - t1, "steps": done,
            "val_acc": val_acc}


def perf_dpgnn_fit(dataset: str = "physics", split: str = "random-75-10-15", method: str = "dpgnn-adam",
                   epsilon: float = 12.0, delta: float | None = None, overrides: dict | None = None, seed: int = 0,
                   rounds: int = 3, data_root: str | None = None, device: str = "cpu") -> dict:
    import torch
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods.base import Budget, ConfigError, default_delta, get_method
    from methods.dpgnn import DPGNN

    cls = get_method(method)
    if not issubclass(cls, DPGNN):
        raise ConfigError(f"dpgnn-fit times DP-GNN methods (dpgnn, dpgnn-adam), not {method}")
    t = time.perf_counter()
    task = make_task(load_dataset(dataset, data_root), split, seed)
    load_s = time.perf_counter() - t
    units = task.num_nodes if task.setting == "transductive" else int(task.train_mask.sum())
    budget = Budget(epsilon, delta if delta is not None else default_delta(units))
    overrides = dict(overrides or {})
    try:  # one-time imports of the accountant (scipy.signal, ~1 s) are not the fit's cost
        import dp_accounting  # noqa: F401
    except ImportError:
        pass
    times: dict[str, list[float]] = {"private": [], "twin": []}
    info, twin = {}, {}
    for _ in range(rounds):
        m = cls(**overrides)
        t = time.perf_counter()
        fitted = m.fit(task, budget, seed=seed, device=device)
        times["private"].append(time.perf_counter() - t)
        info = {"steps": int(fitted.info["steps"]), "noise_multiplier": fitted.info["noise_multiplier"],
                "epsilon": fitted.epsilon(budget.delta),
                "val_acc": fitted.history[-1].get("val_acc", float("nan")) if fitted.history else float("nan"),
                "test_acc": float((fitted.predict_proba()[task.test_mask].argmax(1)
                                   == task.data.y[task.test_mask]).float().mean())}
        twin = twin_fit(cls(**overrides), task, seed, info["steps"], device)
        times["twin"].append(twin["seconds"])
    ratio = statistics.median(p / t for p, t in zip(times["private"], times["twin"]))
    return {"benchmark": "dpgnn-fit", "dataset": task.dataset, "split": split, "method": method, "seed": seed,
            "setting": task.setting, "epsilon": epsilon, "delta": budget.delta, "config": overrides,
            "nodes": task.num_nodes, "features": task.num_features, "threads": torch.get_num_threads(),
            "device": device, "load_seconds": load_s, "rounds": rounds,
            "seconds": {k: statistics.median(v) for k, v in times.items()}, "ratio": ratio, "private": info,
            "twin": twin}


def baseline_fit(rev: str, dataset: str, split: str, method: str, epsilon: float, delta: float | None,
                 overrides: dict, seed: int, threads: int, data_root: str | None) -> dict:
    """``bench run`` of the same fit from revision ``rev`` (subprocess); its fit seconds and accuracy."""
    tree = baseline_tree(rev)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "run.json")
        argv = [sys.executable, "-m", "bench", "run", "-m", method, "-d", dataset, "-s", split, "--epsilon",
                str(epsilon), "--seeds", str(seed), "--no-track", "--no-progress", "--output", out_file]
        argv += ["--delta", str(delta)] if delta is not None else []
        argv += ["--threads", str(threads)] if threads else []
        argv += ["--data-root", data_root] if data_root else []
        old = "relation" not in (tree / "methods" / "dpgnn.py").read_text()
        for k, v in overrides.items():
            if k == "relation" and old:  # a revision before the relation field ran Algorithm 1 only
                if v != "in-edges":
                    return {"rev": rev, "error": [f"revision {rev} runs Algorithm 1 only (relation in-edges)"]}
                continue
            argv += ["--set", f"{k}={v}"]
        t = time.perf_counter()
        res = subprocess.run(argv, cwd=str(tree), env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if res.returncode != 0 or not os.path.exists(out_file):
            return {"rev": rev, "error": (res.stderr or res.stdout).strip().splitlines()[-1:]}
        with open(out_file) as f:
            r = json.load(f)[0]
    return {"rev": rev, "seconds": r["seconds"], "wall_seconds": wall, "test_acc": r["metrics"].get("test_acc"),
            "epsilon": r["epsilon"]}


@benchmark("dpgnn-fit", "a DP-GNN fit vs its non-private twin (same trees and batches, no clipping or noise)")
def _args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--dataset", default="physics")
    q.add_argument("--split", default="random-75-10-15")
    q.add_argument("--method", default="dpgnn-adam", choices=["dpgnn", "dpgnn-adam"])
    q.add_argument("--epsilon", type=float, default=12.0)
    q.add_argument("--delta", type=float, help="default: the run's default (largest power of ten below 1/#units)")
    list_arg(q, "--set", dest="overrides", commas=False, default=[], metavar="KEY=VALUE",
                   help="hyperparameter override on top of the README's Physics configuration "
                        + " ".join(f"{k}={v}" for k, v in README_CONFIG.items()))
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--rounds", type=int, default=3, help="alternating private/twin rounds (medians reported)")
    q.add_argument("--device", default="cpu")
    q.add_argument("--data-root")
    common_args(q)
    q.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from methods.base import ConfigError

    if args.rounds < 1:
        raise ConfigError("--rounds must be >= 1")
    set_threads(args.threads)
    start = machine()
    overrides = {**{k: str(v) for k, v in README_CONFIG.items()}, **_overrides(args.overrides)}
    out = perf_dpgnn_fit(args.dataset, args.split, args.method, args.epsilon, args.delta, overrides, args.seed,
                         args.rounds, args.data_root, args.device)
    out["machine"] = start
    if args.baseline_rev:
        out["baseline"] = baseline_fit(args.baseline_rev, args.dataset, args.split, args.method, args.epsilon,
                                       args.delta, overrides, args.seed, args.threads, args.data_root)
    return emit(out, args, _render)


def _render(out: dict) -> None:
    cfg = ", ".join(f"{k}={v}" for k, v in out["config"].items())
    print(f"# {out['method']} on {out['dataset']} ({out['split']}, {out['setting']}), epsilon {out['epsilon']:g}, "
          f"delta {out['delta']:g}, seed {out['seed']}: {cfg}; {out['threads']} threads, {out['device']}",
          file=sys.stderr)
    p, t, s = out["private"], out["twin"], out["seconds"]
    rows = [["private (Method.fit)", f"{s['private']:.1f}", f"{s['private'] / 60:.2f}", f"{out['ratio']:.2f}x",
             f"{p['steps']} steps, lambda {p['noise_multiplier']:.3g}, eps {p['epsilon']:.3f}, "
             f"test acc {p['test_acc']:.3f}"],
            ["non-private twin", f"{s['twin']:.1f}", f"{s['twin'] / 60:.2f}", "1.00x",
             f"prepare {t['prepare_seconds']:.1f}s, training {t['training_seconds']:.1f}s, val acc {t['val_acc']:.3f}"]]
    base = out.get("baseline")
    if base and "seconds" in base:
        rows.append([f"private @ {base['rev']}", f"{base['seconds']:.1f}", f"{base['seconds'] / 60:.2f}",
                     f"{base['seconds'] / s['twin']:.2f}x", f"{base['seconds'] / s['private']:.1f}x this fit, test acc "
                     f"{base.get('test_acc', float('nan')):.3f}"])
    elif base:
        print(f"# baseline {base.get('rev')} failed: {base.get('error')}", file=sys.stderr)
    print(format_table(["fit", "s", "min", "vs twin", "notes"], rows))
