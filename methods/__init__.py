"""Methods: the interface, the registry, shared models and every built-in method family.

Importing this package is cheap: the interface (``from methods import Method, register``) loads on first
use, and the built-in families register themselves when the registry is first asked
(:func:`methods.base.get_method`, :func:`methods.base.available_methods`), which imports every module and
subpackage of ``methods`` except the shared infrastructure in ``INFRASTRUCTURE``. So
``import methods.privacy`` (the accountant) loads neither torch, PyG nor any family, and a family
registers itself just by living here: ``methods/<family>.py`` or ``methods/<family>/__init__.py`` with
``@register(...)`` classes. ``methods`` imports none of ``bench``, ``attacks`` or ``audits``.
"""

from __future__ import annotations

import ast as _ast
import importlib as _importlib
import pkgutil as _pkgutil
from functools import lru_cache as _lru_cache
from pathlib import Path as _Path
from typing import Any

INFRASTRUCTURE = frozenset({"base", "budget", "config", "models", "training", "dpsgd", "subgraphs", "privacy",
                            "samplers", "errors", "streams", "device", "progress", "mechanisms", "inference"})

_LAZY = {
    "BenchError": "methods.errors", "BudgetError": "methods.errors", "ConfigError": "methods.errors",
    "ContractViolation": "methods.errors", "RunStreams": "methods.streams",
    "Budget": "methods.budget", "FitContext": "methods.base", "Fitted": "methods.base", "Method": "methods.base",
    "Task": "methods.base", "available_methods": "methods.base", "default_delta": "methods.budget",
    "get_method": "methods.base", "register": "methods.base",
}

__all__ = sorted(_LAZY) + ["builtin_method_names", "load_builtin_methods"]

_loaded = False


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'methods' has no attribute {name!r}")


def load_builtin_methods() -> None:
    """Import every built-in method family (each registers its methods on import)."""
    global _loaded
    if _loaded:
        return
    for mod in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not mod.name.startswith("_") and mod.name not in INFRASTRUCTURE:
            _importlib.import_module(f"{__name__}.{mod.name}")
    _loaded = True


@_lru_cache(maxsize=None)
def builtin_method_names() -> frozenset[str]:
    """The names the built-in families register, read from their ``@register("name")`` decorators without
    importing them, so the CLI can reject an unknown name before torch loads. tests/test_fast_errors.py holds it
    equal to the registry the imports build."""
    files: list[_Path] = []
    for mod in _pkgutil.iter_modules(__path__):
        if mod.name.startswith("_") or mod.name in INFRASTRUCTURE:
            continue
        root = _Path(__path__[0]) / mod.name
        files += sorted(root.rglob("*.py")) if mod.ispkg else [root.with_suffix(".py")]
    return declared_names(files, "register")


def declared_names(files, decorator: str) -> frozenset[str]:
    """The string names ``files`` pass to ``@decorator("name")`` (a call by that name or attribute), read from
    their source without importing them; a file that cannot be read or parsed declares none."""
    names: set[str] = set()
    for path in files:
        try:
            tree = _ast.parse(_Path(path).read_text())
        except (OSError, SyntaxError, ValueError):
            continue
        for node in _ast.walk(tree):
            for deco in getattr(node, "decorator_list", ()):
                if (isinstance(deco, _ast.Call) and getattr(deco.func, "id", getattr(deco.func, "attr", None))
                        == decorator and deco.args and isinstance(deco.args[0], _ast.Constant)
                        and isinstance(deco.args[0].value, str)):
                    names.add(deco.args[0].value)
    return frozenset(names)
