"""Methods: the interface, the registry, shared models and every built-in method family.

Importing this package is cheap: the interface (``from methods import Method, register``) loads on first
use, and the built-in families register themselves when the registry is first asked
(:func:`methods.base.get_method`, :func:`methods.base.available_methods`), which imports exactly the modules and
subpackages of ``methods`` whose source calls ``register(...)`` (:func:`methods.registry.discover`: the folder is
the list; the shared infrastructure registers nothing, so it is not imported). So ``import methods.privacy`` (the
accountant) loads neither torch, PyG nor any family, and a family registers itself just by living here:
``methods/<family>.py`` or ``methods/<family>/`` with ``@register(...)`` classes. ``methods`` imports none of
``bench``, ``attacks`` or ``audits``.
"""

from __future__ import annotations

import importlib as _importlib
from functools import lru_cache as _lru_cache
from typing import Any

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
    from methods.registry import discover

    discover(__name__, __path__, "register")
    _loaded = True


@_lru_cache(maxsize=None)
def builtin_method_names() -> frozenset[str]:
    """The names the built-in families register, read from their ``@register("name")`` decorators without
    importing them, so the CLI can reject an unknown name before torch loads. tests/test_fast_errors.py holds it
    equal to the registry the imports build."""
    from methods.registry import declared_names, registering_files

    return declared_names(registering_files(__path__, "register"), "register")
