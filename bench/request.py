"""What a request names, checked before anything heavy loads: the methods, the dataset and split, the seeds and
the budget. A leaf module (no torch): ``bench run -m nope`` answers its one ``error:`` line in a fraction of a
second, and :func:`bench.plan.plan_run` applies the same rules (it calls :func:`check_request` too), so the CLI and
the library never disagree on what is valid."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from methods.budget import Budget
from methods.errors import ConfigError


def check_request(methods: Sequence[str], dataset: str, split: str | None, seeds: Sequence[int],
                  epsilon: float | None, delta: float | None, known: Collection[str] | None = None) -> tuple[Any, str]:
    """Raise a :class:`~methods.errors.BenchError` for the first invalid part of a request, in the order a run
    plan checks them; return the resolved dataset name (:class:`bench.datasets.registry.DatasetName`) and split.

    ``known``: the method names to accept (the built-in ones: :func:`methods.builtin_method_names`); ``None``
    leaves the names to the registry (:func:`methods.base.get_method`), e.g. once a plugin has registered more."""
    from bench.datasets.registry import resolve_dataset
    from bench.split_names import check_split

    if not methods:
        raise ConfigError("no method given")
    if known is not None:
        check_method_names(methods, known)
    if len(set(methods)) != len(methods):
        raise ConfigError("a method is listed twice")
    name = resolve_dataset(dataset)  # the one reading of the name: canonical, with its default split
    split = split or name.default_split
    check_split(split, name.name)
    seeds = tuple(seeds)
    if not seeds:
        raise ConfigError("no seed given")
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be distinct non-negative integers (got {list(seeds)})")
    if epsilon is not None:
        Budget(epsilon, delta or 0.0)  # validates epsilon > 0 and delta in [0, 1)
    elif delta is not None:
        Budget(math.inf, delta)
    return name, split


def check_method_names(methods: Sequence[str], known: Collection[str]) -> None:
    """An unknown method name is the registry's own error (:func:`methods.base.get_method`'s words)."""
    for m in methods:
        if m not in known:
            raise ConfigError(f"unknown method {m!r}; available: {', '.join(sorted(known))}")


def check_sweep_config(path: str) -> None:
    """A sweep config's method names, read with the YAML parser alone, before the sweep's imports: the first unknown
    one is the error the config's loader would give (a plugin's names, or a file the loader will reject for
    another reason, are left to it)."""
    from bench.plugins import loaded_plugins
    from methods import builtin_method_names

    if loaded_plugins():
        return
    try:
        import yaml

        with open(path, encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
        entries = raw.get("methods") or []
        names = [e if isinstance(e, str) else e.get("name") for e in entries]
    except Exception:
        return
    check_method_names([n for n in names if isinstance(n, str)], builtin_method_names())


def check_cli_request(methods: str | Sequence[str] | None, dataset: str | None, split: str | None,
                      seeds: Sequence[int], epsilon: float | None, delta: float | None) -> None:
    """:func:`check_request` for a command line, before its command imports the harness: the built-in method
    names are read from their declarations unless a plugin is loaded (then the registry decides, after the
    imports the plugin made anyway). Nothing is checked without both a method and a dataset (``bench attack
    --run``, ``bench audit --level mechanism``): those requests are checked where they are read."""
    from bench.plugins import loaded_plugins
    from methods import builtin_method_names

    if not methods or not dataset:
        return
    names = [methods.strip()] if isinstance(methods, str) else list(methods)
    check_request(names, dataset, split, seeds, epsilon, delta,
                  known=None if loaded_plugins() else builtin_method_names())
