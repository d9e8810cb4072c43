"""``bench list``: methods (with their privacy units), datasets (and whether their files are found), splits and
attacks; ``bench list METHOD`` (or ``ATTACK``) shows its hyperparameters with type, default and meaning."""

from __future__ import annotations

import argparse
import json

from bench.cliargs import COMMANDS, check_common, command, data_args

SECTIONS = ("all", "methods", "datasets", "splits", "attacks")


@command("list", "list methods (with privacy units), datasets and splits; `bench list METHOD`: its hyperparameters")
def _list_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("list", help=COMMANDS["list"][1])
    p.add_argument("what", nargs="?", default="all", metavar="WHAT",
                   help=f"{', '.join(SECTIONS)} (default: all), or a method or attack name: its hyperparameters")
    p.add_argument("--json", action="store_true", help="print JSON")
    data_args(p)
    p.set_defaults(func=cmd_list)
    return p


def builtin_attack_names() -> frozenset[str]:
    """The attacks the suite registers (``@register_attack("name")``), read from the sources of the ``attacks``
    package without importing it (it loads torch)."""
    import importlib.util

    from methods.registry import declared_names, registering_files

    spec = importlib.util.find_spec("attacks")
    path = list(spec.submodule_search_locations or []) if spec else []
    return declared_names(registering_files(path, "register_attack"), "register_attack")


def check_name(what: str) -> None:
    """An unknown method or attack name is an input error before the harness loads (a plugin's names are the
    registry's to judge, once it has loaded)."""
    from bench.plugins import loaded_plugins
    from methods import builtin_method_names
    from methods.errors import ConfigError

    if what in SECTIONS or loaded_plugins():
        return
    methods, attacks = builtin_method_names(), builtin_attack_names()
    if what not in methods and what not in attacks:
        raise ConfigError(f"unknown method {what!r}; available: {', '.join(sorted(methods))} "
                          f"(attacks: {', '.join(sorted(attacks))})")


def cmd_list(args: argparse.Namespace) -> int:
    check_common(args)
    check_name(args.what)
    from bench import api
    from bench.io import format_table
    from bench.options import one_line

    if args.what not in SECTIONS:
        info = api.options(args.what)
        if args.json:
            print(json.dumps(info, indent=2))
            return 0
        unit = f"privacy unit: {info['privacy_unit']}" if info["kind"] == "method" else f"level: {info['level']}"
        print(f"{info['name']} ({info['kind']}, {unit}): {info['description']}")
        for rel, lab in info.get("relation_labels", {}).items():
            print(f"  relation {rel}: {lab['label']} ({one_line(lab['note'])})")
        flag = "--set" if info["kind"] == "method" else "--attack-set"
        rows = [[o["name"], o["type"], o["default"], one_line(o["help"]) or "-"] for o in info["options"]]
        if not rows:
            print("  no hyperparameters")
            return 0
        print(f"hyperparameters ({flag} key=value):")
        print(_indent(format_table(["name", "type", "default", "meaning"], rows)))
        return 0
    out = api.catalog(args.what, args.data_root)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for section, rows in out.items():
        print(f"{section}:")
        header = list(rows[0].keys())
        print(_indent(format_table(header, [[str(r[h]) for h in header] for r in rows])))
        print()
    return 0


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
