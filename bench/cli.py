"""``bench``: the command line. ``python -m bench --help`` lists the commands.

Errors caused by input (unknown names, bad budgets, missing files) print one line starting with
``error:`` and exit with status 2; unexpected failures exit 1 (``--debug`` shows the traceback);
Ctrl-C and SIGTERM exit 130/143 after marking open MLflow runs KILLED.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import signal
import sys
from pathlib import Path
from typing import Any, Callable

from methods.base import BenchError

COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], argparse.ArgumentParser], str]] = {}


def command(name: str, help_text: str):
    """Register ``fn(subparsers) -> parser`` as the builder of one subcommand."""

    def deco(fn):
        COMMANDS[name] = (fn, help_text)
        return fn

    return deco


def _float(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None


def data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-root", metavar="DIR", help="raw dataset folder (default: $BENCH_DATA_ROOT, else the cache)")
    p.add_argument("--download", action="store_true", help="download missing raw files into the cache (needs network)")


def target_args(p: argparse.ArgumentParser, output_help: str = "also write the results as JSON") -> None:
    """What picks the trained targets: methods, dataset, split, budget, seeds, overrides, device, output."""
    p.add_argument("--method", "-m", action="append", required=True, metavar="M[,M...]",
                   help="method name(s), comma-separated or repeated (see `bench list methods`)")
    p.add_argument("--dataset", "-d", required=True, help="dataset name, e.g. cora, computers, csbm:nodes=5000")
    p.add_argument("--split", "-s", help="split name (default: public for Planetoid, ogb for ogbn-*, else random-75-10-15)")
    p.add_argument("--epsilon", "-e", type=_float, help="target epsilon for private methods ('inf' = no noise)")
    p.add_argument("--delta", type=_float, help="target delta (default: the largest power of ten below 1/#units)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], metavar="SEED", help="seeds (default: 0)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="hyperparameter override; 'method.key=value' targets one method (repeatable)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] (default: auto)")
    p.add_argument("--output", "-o", metavar="FILE", help=output_help)
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def tracking_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experiment", default="dp-gnn-bench", help="MLflow experiment name (default: %(default)s)")
    p.add_argument("--no-track", action="store_true", help="do not log to MLflow")


# --------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------


@command("run", "train and evaluate methods on a dataset split; tracked in MLflow")
def _run_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help=COMMANDS["run"][1], description="Train, evaluate and log one run per method and seed.")
    target_args(p)
    _attack_options(p)
    data_args(p)
    tracking_args(p)
    p.set_defaults(func=cmd_run)
    return p


def _attack_options(p: argparse.ArgumentParser) -> None:
    """``--attacks`` and its options (bench.attack)."""
    from bench.attack import attack_args

    attack_args(p, required=False)


def run_targets(args: argparse.Namespace) -> list:
    """Train and evaluate every method x seed that ``target_args`` picked (attacks included when asked for),
    reporting progress on stderr; the shared body of ``bench run`` and ``bench attack``."""
    from bench.run import RunSpec, prepare, run_one

    methods = [m.strip() for item in args.method for m in item.split(",") if m.strip()]
    attack_opts = {k: getattr(args, k) for k in ("attacks", "attack_overrides", "bootstrap", "plot_dir")}
    spec = RunSpec(methods=methods, dataset=args.dataset, split=args.split, seeds=args.seeds, epsilon=args.epsilon,
                   delta=args.delta, overrides=args.overrides, device=args.device, data_root=args.data_root,
                   download=args.download, experiment=args.experiment, track=not args.no_track,
                   progress=not args.no_progress, **attack_opts)
    prepared = prepare(spec)
    ds = prepared.dataset
    if spec.epsilon is not None:
        plain = [c.name for c in prepared.classes if c.privacy_unit == "none"]
        if plain:
            print(f"# note: {', '.join(plain)} not private: run at epsilon=inf", file=sys.stderr)
    changed = ", ".join(f"{k}={v}" for k, v in ds.changes.items() if v) or "nothing"
    print(f"# {ds.name}: {ds.num_nodes} nodes, {ds.data.edge_index.size(1) // 2} edges, "
          f"{ds.data.x.size(1)} features, {ds.num_classes} classes (normalised on load: {changed})", file=sys.stderr)
    results = []
    for cls in prepared.classes:
        for seed in spec.seeds:
            r = run_one(prepared, cls, seed)
            results.append(r)
            eps = "inf" if math.isinf(r.epsilon) else f"{r.epsilon:.4g}"
            attacks = f", {len(r.attacks)} attack(s)" if spec.attacks else ""
            print(f"  {r.method} seed {seed}: test acc {r.metrics.get('test_acc', float('nan')):.4f}, "
                  f"epsilon {eps}, {r.seconds:.1f}s{attacks}", file=sys.stderr)
    return results


def cmd_run(args: argparse.Namespace) -> int:
    from bench.run import results_table, write_json_atomic

    results = run_targets(args)
    print(results_table(results))
    if args.attacks:
        from bench.attack import attack_table

        print()
        print(attack_table(results))
    if args.output:
        write_json_atomic(args.output, [r.to_dict() for r in results])
    return 0


# --------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------


@command("list", "list methods (with privacy units), datasets and splits")
def _list_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("list", help=COMMANDS["list"][1])
    p.add_argument("what", nargs="?", choices=["all", "methods", "datasets", "splits", "attacks"], default="all")
    p.add_argument("--json", action="store_true", help="print JSON")
    data_args(p)
    p.set_defaults(func=cmd_list)
    return p


def cmd_list(args: argparse.Namespace) -> int:
    from bench.datasets import dataset_catalog
    from bench.run import format_table
    from bench.splits import split_catalog
    from methods.base import available_methods

    out: dict[str, list[dict[str, Any]]] = {}
    if args.what in ("all", "methods"):
        out["methods"] = [{"name": n, "privacy_unit": c.privacy_unit, "description": c.description}
                          for n, c in available_methods().items()]
    if args.what in ("all", "datasets"):
        out["datasets"] = dataset_catalog(args.data_root)
    if args.what in ("all", "splits"):
        out["splits"] = split_catalog()
    if args.what in ("all", "attacks"):
        from bench.attack import list_attacks

        out["attacks"] = list_attacks()
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for section, rows in out.items():
        print(f"{section}:")
        header = list(rows[0].keys())
        print("\n".join("  " + line for line in format_table(header, [[str(r[h]) for h in header] for r in rows])
                        .splitlines()))
        print()
    return 0


# --------------------------------------------------------------------------------------
# Plugins and main
# --------------------------------------------------------------------------------------


def load_plugin(spec: str) -> None:
    """Import a plugin module (dotted name) or file (``*.py``); its classes register themselves."""
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        if not path.is_file():
            raise BenchError(f"plugin file {spec} not found")
        name = f"bench_plugin_{abs(hash(str(path.resolve())))}"
        if name in sys.modules:
            return
        mod_spec = importlib.util.spec_from_file_location(name, path)
        if mod_spec is None or mod_spec.loader is None:
            raise BenchError(f"cannot import plugin file {spec}")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        try:
            mod_spec.loader.exec_module(module)
        except BenchError:
            del sys.modules[name]
            raise
        except Exception as e:
            del sys.modules[name]
            raise BenchError(f"plugin {spec} failed to import: {type(e).__name__}: {e}") from e
        return
    try:
        importlib.import_module(spec)
    except ModuleNotFoundError as e:
        raise BenchError(f"plugin module {spec!r} not found ({e})") from e
    except BenchError:
        raise
    except Exception as e:
        raise BenchError(f"plugin {spec} failed to import: {type(e).__name__}: {e}") from e


def _register_optional_commands() -> None:
    """Commands that live in their own modules register themselves on import."""
    for mod in ("bench.account", "bench.perf", "bench.attack", "bench.audit", "bench.sweep", "bench.leaderboard"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def build_parser() -> argparse.ArgumentParser:
    _register_optional_commands()
    parser = argparse.ArgumentParser(
        prog="bench", description="Audited benchmark suite for differentially private graph neural networks.")
    parser.add_argument("--plugin", action="append", default=[], metavar="FILE_OR_MODULE",
                        help="import a module or .py file that registers extra methods (repeatable; before the command)")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    sub.required = True
    for name, (builder, _) in COMMANDS.items():
        builder(sub)
    return parser


def _sigterm(signum, frame):  # noqa: ARG001
    raise SystemExit(143)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _sigterm)
    try:
        for plugin in args.plugin:
            load_plugin(plugin)
        return int(args.func(args) or 0)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # one line, not a traceback from deep inside torch
        if args.debug:
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"error: {type(e).__name__}: {msg} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
