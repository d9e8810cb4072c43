"""One list syntax across the CLI: every list-valued option of every command (and subcommand) takes its values
space-separated, comma-separated, repeated or mixed (:class:`bench.cliargs.ListAction`). The parsers are walked,
so an option added later is covered."""

from __future__ import annotations

import argparse

import pytest

from bench.cli import build_parser, command_index
from bench.cliargs import ListAction

#: list options that cannot take space-separated values, and why
ONE_VALUE_PER_FLAG = {("bench", "--plugin"): "it comes before the command, whose name a list would swallow"}


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """(path, parser) of the top-level parser and of every command and subcommand, each command's real parser."""
    out = []

    def walk(path: str, p: argparse.ArgumentParser, command: str | None) -> None:
        out.append((path, p))
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    if command is None and path == "bench":
                        continue  # the top level: commands are walked each with its own real parser
                    walk(f"{path} {name}", sub, command)

    walk("bench", build_parser(None), None)
    for name in command_index():
        top = build_parser(name)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        walk(f"bench {name}", sub.choices[name], name)
    return out


def is_list(a: argparse.Action) -> bool:
    """Whether an option takes several values, however it was declared."""
    text = f"{a.help or ''} {a.metavar or ''}".lower()
    return (isinstance(a, (argparse._AppendAction, argparse._ExtendAction, ListAction))
            or a.nargs in ("+", "*") or (isinstance(a.nargs, int) and a.nargs > 1)
            or "comma" in text or "repeatable" in text or "[," in text)


def list_options() -> list[tuple[str, str, argparse.Action]]:
    found = []
    for path, p in parsers():
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) or not is_list(a):
                continue
            found.append((path, a.option_strings[0] if a.option_strings else a.dest, a))
    return found


LIST_OPTIONS = list_options()


def test_the_walk_finds_the_list_options():
    names = {(path, flag) for path, flag, _ in LIST_OPTIONS}
    assert {("bench run", "--seeds"), ("bench run", "--method"), ("bench verify", "--seeds"),
            ("bench verify", "--checks"), ("bench accountants check", "--accountant"), ("bench accountants list", "names"),
            ("bench perf scale", "--nodes"), ("bench", "--plugin")} <= names, sorted(names)


def sample(a: ListAction) -> tuple[str, str, str]:
    """Three values the option's item type reads, in its own syntax."""
    if not a.commas:
        return "a=1", "b=2,3", "c=x"
    if a.item is int:
        return "1", "2", "3"
    if a.item is float:
        return "0.5", "2", "3.25"
    return "alpha", "beta", "gamma"


@pytest.mark.parametrize("path,flag,action", LIST_OPTIONS, ids=[f"{p} {f}" for p, f, _ in LIST_OPTIONS])
def test_every_list_option_takes_the_one_syntax(path, flag, action):
    assert isinstance(action, ListAction), (f"{path} {flag} is a list option: declare it with "
                                            "bench.cliargs.list_arg")
    x, y, z = sample(action)
    want = [action.item(v) for v in (x, y, z)]

    def parse(*calls: list[str]) -> list:
        ns = argparse.Namespace(**{action.dest: action.default})
        for values in calls:
            action(None, ns, values if action.nargs is not None else values[0], flag)
        return getattr(ns, action.dest)

    assert parse([x], [y], [z]) == want  # repeated
    if (path, flag) not in ONE_VALUE_PER_FLAG:
        assert action.nargs in ("+", "*"), f"{path} {flag} must take space-separated values"
        assert parse([x, y, z]) == want  # space-separated
        assert parse([x], [y, z]) == want  # repeated and space-separated
    if action.commas:
        assert parse([f"{x},{y},{z}"]) == want  # comma-separated
        assert parse([f"{x},{y}"], [z]) == want  # mixed
        if action.nargs in ("+", "*"):
            assert parse([f"{x},", y, f" ,{z}"]) == want
    else:  # KEY=VALUE: a value keeps its commas
        assert parse([y]) == [y]


@pytest.mark.parametrize("argv,dest,want", [
    ("run -m mlp -d cora --seeds 0,1", "seeds", [0, 1]),
    ("run -m mlp -d cora --seeds 0 1", "seeds", [0, 1]),
    ("run -m mlp -d cora --seeds 0,1 2 --seeds 3", "seeds", [0, 1, 2, 3]),
    ("run -m mlp,gcn sage -d cora", "methods", ["mlp", "gcn", "sage"]),
    ("verify -m dp-mlp -d cora -e 1 --seeds 0,1", "seeds", [0, 1]),
    ("attack -m mlp -d cora -a threshold,lira shadow", "attacks", ["threshold", "lira", "shadow"]),
    ("perf fit --datasets csbm:nodes=500,classes=3,cora", "datasets", ["csbm:nodes=500,classes=3", "cora"]),
])
def test_through_the_real_parser(argv, dest, want):
    args = argv.split()
    assert getattr(build_parser(args[0]).parse_args(args), dest) == want


def test_a_default_is_replaced_not_extended():
    assert build_parser("run").parse_args("run -m mlp -d cora".split()).seeds == [0]
    assert build_parser("run").parse_args("run -m mlp -d cora --seeds 3".split()).seeds == [3]


def test_a_bad_item_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser("run").parse_args("run -m mlp -d cora --seeds 0,x".split())
    assert e.value.code == 2 and "invalid int value: 'x'" in capsys.readouterr().err
