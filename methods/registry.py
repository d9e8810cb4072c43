"""One registry type and one discovery rule for every extension point: methods, attacks, verification checks,
mechanism kinds, accountants and datasets.

A :class:`Registry` maps names to what registered them, in registration order (or by each entry's declared
``order``, where the kind has one: the battery's checks, the audited mechanisms, dataset listings). A built-in of any kind is one
module in its kind's folder that registers itself; :func:`discover` imports exactly the modules of a folder whose
source calls the kind's register function (read from the source, so nothing else is imported and no list of
modules is kept anywhere), and :func:`declared_names` reads the names they register without importing them (the
CLI's fast error for an unknown name). A plugin registers with the same function."""

from __future__ import annotations

import ast
import importlib
import math
import pkgutil
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, TypeVar

from methods.errors import ConfigError

T = TypeVar("T")


class Registry(dict, Generic[T]):
    """Name -> registered object of one ``kind`` (a dict: lookups, iteration and membership as usual).

    ``builtins``: imports the kind's built-ins (:func:`discover`), run before the first :meth:`lookup` or
    :meth:`available`. ``sort``: :meth:`available` sorted by name (methods, attacks) instead of in order."""

    def __init__(self, kind: str, builtins: Callable[[], None] | None = None, sort: bool = False):
        super().__init__()
        self.kind, self._builtins, self._sort = kind, builtins, sort
        self._order: dict[str, float] = {}

    def add(self, name: str, obj: T, *, same: Callable[[Any, Any], bool] | None = None,
            order: float | None = None, what: str | None = None) -> T:
        """Register ``obj`` as ``name``; a name another object holds is a ConfigError (``same(prev, obj)``: whether
        a second registration is the same object again, e.g. a module imported twice). ``order``: where it goes
        (entries without one follow in registration order)."""
        prev = super().get(name)
        if prev is not None and not (same or (lambda a, b: a is b))(prev, obj):
            raise ConfigError(f"{what or f'{self.kind} name {name!r} is already registered'}"
                              + (f" by {_where(prev)}" if what is None and _where(prev) else ""))
        self[name] = obj
        self._order[name] = math.inf if order is None else float(order)
        if order is not None or any(math.isfinite(o) for o in self._order.values()):
            items = sorted(self.items(), key=lambda kv: self._order.get(kv[0], math.inf))
            self.clear()
            self.update(items)
        return obj

    def remove(self, name: str) -> None:
        self.pop(name, None)
        self._order.pop(name, None)

    def load(self) -> None:
        if self._builtins is not None:
            self._builtins()

    def lookup(self, name: str, hint: str = "") -> T:
        """The object registered as ``name`` (a ConfigError naming every registered one if none)."""
        self.load()
        try:
            return self[name]
        except KeyError:
            known = sorted(self) if self._sort else list(self)
            raise ConfigError(f"unknown {self.kind} {name!r}; available: {', '.join(known)}{hint}") from None

    def available(self) -> dict[str, T]:
        self.load()
        return dict(sorted(self.items())) if self._sort else dict(self)


def _where(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else None
    return f"{cls.__module__}.{cls.__qualname__}" if cls is not None else ""


def _calls(tree: ast.AST, function: str) -> Iterable[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == function:
            yield node


def _files(root: Path, name: str, ispkg: bool) -> list[Path]:
    return sorted((root / name).rglob("*.py")) if ispkg else [root / f"{name}.py"]


def _parse(path: Path) -> ast.AST | None:
    try:
        return ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return None


def _registering(path: Iterable[str], function: str) -> Iterable[tuple[str, list[Path]]]:
    for root in map(Path, path):
        for mod in sorted(pkgutil.iter_modules([str(root)]), key=lambda m: m.name):
            if mod.name.startswith("_"):
                continue
            files = _files(root, mod.name, mod.ispkg)
            if any(next(_calls(t, function), None) is not None for t in map(_parse, files) if t is not None):
                yield mod.name, files


def registering_modules(package: str, path: Iterable[str], function: str) -> list[str]:
    """The modules (and subpackages) of ``package`` whose source calls ``function`` (its kind's register
    function), by name: the folder is the list."""
    return [f"{package}.{name}" for name, _ in _registering(path, function)]


def registering_files(path: Iterable[str], function: str) -> list[Path]:
    """The source files of those modules (every file of a subpackage)."""
    return [f for _, files in _registering(path, function) for f in files]


def discover(package: str, path: Iterable[str], function: str) -> list[str]:
    """Import every module of ``package`` that registers something (:func:`registering_modules`); returns them."""
    names = registering_modules(package, path, function)
    for name in names:
        importlib.import_module(name)
    return names


def declared_names(files: Iterable[str | Path], function: str) -> frozenset[str]:
    """The string names ``files`` pass as first argument to ``function(...)`` (a decorator or a call), read from
    their source without importing them; a file that cannot be read or parsed declares none."""
    names: set[str] = set()
    for path in files:
        tree = _parse(Path(path))
        if tree is None:
            continue
        for call in _calls(tree, function):
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                names.add(call.args[0].value)
    return frozenset(names)
