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

from bench.cliargs import (COMMANDS, _float, command, data_args, join_negative_numbers,  # noqa: F401
                           target_args, tracking_args)


# --------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------


@command("run", "train and evaluate methods on a dataset split; tracked in MLflow")
def _run_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help=COMMANDS["run"][1], description="Train, evaluate and log one run per method and seed.")
    target_args(p)
    p.add_argument("--diagnostics", action="store_true",
                   help="also put the diagnostics (training loss, accuracy on private labels, exact counts: not "
                        "private, not released) into --output; MLflow always has them under diagnostic.*")
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

    from bench.run import check_writable

    methods = [m.strip() for item in args.method for m in item.split(",") if m.strip()]
    attack_opts = {k: getattr(args, k) for k in ("attacks", "attack_overrides", "bootstrap", "plot_dir")}
    spec = RunSpec(methods=methods, dataset=args.dataset, split=args.split, seeds=args.seeds, epsilon=args.epsilon,
                   delta=args.delta, overrides=args.overrides, device=args.device, data_root=args.data_root,
                   download=args.download, experiment=args.experiment, track=not args.no_track,
                   progress=not args.no_progress, secure_noise=args.secure_noise,
                   diagnostics=getattr(args, "diagnostics", False), **attack_opts)
    check_writable(args.output)
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
        write_json_atomic(args.output, [r.to_dict(diagnostics=args.diagnostics) for r in results])
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
    argv = join_negative_numbers(sys.argv[1:] if argv is None else list(argv))
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
