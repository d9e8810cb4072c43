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

import importlib as _importlib
import pkgutil as _pkgutil
from typing import Any

INFRASTRUCTURE = frozenset({"base", "models", "training", "dpsgd", "subgraphs", "privacy", "samplers", "errors",
                            "streams", "device", "progress", "mechanisms", "inference"})

_LAZY = {
    "BenchError": "methods.errors", "BudgetError": "methods.errors", "ConfigError": "methods.errors",
    "ContractViolation": "methods.errors", "RunStreams": "methods.streams",
    "Budget": "methods.base", "FitContext": "methods.base", "Fitted": "methods.base", "Method": "methods.base",
    "Task": "methods.base", "available_methods": "methods.base", "default_delta": "methods.base",
    "get_method": "methods.base", "register": "methods.base",
}

__all__ = sorted(_LAZY) + ["load_builtin_methods"]

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
