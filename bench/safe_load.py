"""Load a served model without running code it carries: ``torch.load(weights_only=True)`` with an allowlist built
for the file at hand, from the names its pickle references, each checked before anything is imported or built.

A pickled object names the classes and functions that rebuild it; an unrestricted unpickler calls whatever it names
(``os.system`` included). Here every name the file references (``torch.serialization.
get_unsafe_globals_in_checkpoint``, which reads the opcodes and imports nothing) must resolve, in a module under a
trusted root or a loaded plugin (:func:`bench.plugins.loaded_plugins`: the user runs that code anyway), to

* a class of served state: a ``torch.nn.Module``, a :class:`methods.base.Fitted`, a dataclass or enum of
  :mod:`methods` (ledgers, mechanism events, the graph input), or one of PyG's signature records; the unpickler
  allocates it and sets its state, or calls the class itself (its own constructor, never another callable); or
* a function or builtin type that is pure and safe to call on any argument (:func:`_safe_functions`: the scalar and
  container types, ``typing``'s forms, :data:`methods.training.SERVED_FUNCTIONS`; ``builtins.type`` is replaced by
  its one-argument form, which creates no class).

Anything else is refused, named, before a byte is unpickled; modules are imported only under the trusted roots.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import io
import operator
import sys
import typing
from typing import Any

import torch

from methods.errors import BenchError

#: the packages whose classes a served model may be built from (besides loaded plugins)
TRUSTED_ROOTS = ("methods", "torch", "torch_geometric")


def _type_of(obj: Any) -> type:
    """``type(obj)``: the only use of ``builtins.type`` a served model needs (PyG's signatures name ``NoneType``
    through it); the three-argument form would create a class."""
    return type(obj)


def _safe_functions() -> dict[str, Any]:
    from methods.training import SERVED_FUNCTIONS

    named = {"_operator.getitem": operator.getitem, "builtins.type": _type_of, "inspect._empty": inspect._empty}  # noqa: SLF001 - the name pickle writes for a missing annotation
    named.update({f"builtins.{t.__name__}": t for t in (bool, bytes, complex, dict, float, frozenset, int, list,
                                                        set, slice, str, tuple)})  # as annotations, or values
    named.update({f"typing.{n}": getattr(typing, n) for n in
                  ("Any", "Callable", "Dict", "List", "Optional", "OrderedDict", "Sequence", "Tuple", "Union")})
    named.update({f"{f.__module__}.{f.__qualname__}": f for f in SERVED_FUNCTIONS})
    return named


def _plugin_modules() -> set[str]:
    from bench.plugins import loaded_plugins

    named = [p for p in loaded_plugins() if not p.endswith(".py")]  # files load as bench_plugin_<hash>
    return {name for name in list(sys.modules)
            if name.startswith("bench_plugin_") or any(name == p or name.startswith(p + ".") for p in named)}


def _resolve(full: str, plugins: set[str]) -> Any:
    """The object ``module.qualname`` names, importing only trusted modules; ``None`` when none is trusted."""
    parts = full.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        root = parts[0]
        if module in plugins:
            mod = sys.modules[module]
        elif root in TRUSTED_ROOTS:
            try:
                mod = importlib.import_module(module)
            except ImportError:
                continue
        else:
            continue
        obj: Any = mod
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            continue
        return obj
    return None


def _pyg_records() -> tuple[type, ...]:
    try:
        from torch_geometric import inspector
    except ImportError:
        return ()
    return tuple(getattr(inspector, n) for n in ("Inspector", "Parameter", "Signature") if hasattr(inspector, n))


def _servable_class(obj: Any) -> bool:
    from methods.base import Fitted

    if not isinstance(obj, type):
        return False
    if issubclass(obj, (torch.nn.Module, Fitted)):
        return True
    if obj.__module__.split(".")[0] == "methods" and (dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum)):
        return True
    return obj in _pyg_records()


def allowlist(data: bytes) -> list[Any]:
    """The ``(object, name)`` pairs that let ``torch.load(weights_only=True)`` rebuild the served model in ``data``;
    :class:`BenchError` naming the first reference that is not served state."""
    functions = _safe_functions()
    plugins = _plugin_modules()
    allowed = []
    for full in sorted(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))):
        if full in functions:
            allowed.append((functions[full], full))
            continue
        obj = _resolve(full, plugins)
        if obj is None or not _servable_class(obj):
            raise BenchError(f"released model: the served model references {full}, which is not served state (a "
                             "module, Fitted, ledger or graph class of the suite, torch, PyG or a loaded plugin); "
                             "refused without unpickling it (load its plugin with --plugin if it is one; a Fitted should hold plain "
                             "modules and tensors, e.g. no training hooks)")
        allowed.append((obj, full))
    return allowed


def load(data: bytes, device: Any = "cpu") -> Any:
    """The object ``torch.save`` wrote into ``data``, rebuilt by the restricted unpickler (:func:`allowlist`)."""
    allowed = allowlist(data)
    try:
        with torch.serialization.safe_globals(allowed):
            return torch.load(io.BytesIO(data), map_location=torch.device(device), weights_only=True)
    except Exception as e:  # the restricted unpickler's refusals (UnpicklingError, RuntimeError) and corrupt data
        raise BenchError(f"released model: the served model cannot be rebuilt safely ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''})") from None


__all__ = ["TRUSTED_ROOTS", "allowlist", "load"]
