"""Plugins: modules or ``*.py`` files whose classes register methods, attacks or accountants when imported.

``bench --plugin X`` loads them with :func:`load_plugin`, which also remembers them, so that a sweep's worker
processes (local or on a Ray cluster) load the same plugins before they run a cell: :data:`PLUGINS_ENV` carries
them (files by absolute path: on a cluster the file must exist at that path on every node).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from methods.errors import BenchError

#: the plugins a worker process loads before it runs a cell (:func:`load_from_env`), ``os.pathsep``-separated
PLUGINS_ENV = "BENCH_PLUGINS"

_loaded: list[str] = []


def loaded_plugins() -> list[str]:
    """The plugins loaded in this process, in order: absolute file paths and module names."""
    return list(_loaded)


def _remember(spec: str) -> None:
    if spec not in _loaded:
        _loaded.append(spec)


def load_plugin(spec: str) -> None:
    """Import a plugin module (dotted name) or file (``*.py``); its classes register themselves."""
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        if not path.is_file():
            raise BenchError(f"plugin file {spec} not found")
        name = f"bench_plugin_{abs(hash(str(path.resolve())))}"
        if name in sys.modules:
            _remember(str(path.resolve()))
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
        except (Exception, SystemExit) as e:  # a plugin that exits while importing must not end the command quietly
            del sys.modules[name]
            raise BenchError(f"plugin {spec} failed to import: {type(e).__name__}: {e}") from e
        _remember(str(path.resolve()))
        return
    try:
        importlib.import_module(spec)
    except ModuleNotFoundError as e:
        raise BenchError(f"plugin module {spec!r} not found ({e})") from e
    except BenchError:
        raise
    except (Exception, SystemExit) as e:
        raise BenchError(f"plugin {spec} failed to import: {type(e).__name__}: {e}") from e
    _remember(spec)


def load_from_env() -> None:
    """Load the plugins named by :data:`PLUGINS_ENV` (in a worker process; each is imported once)."""
    for spec in filter(None, os.environ.get(PLUGINS_ENV, "").split(os.pathsep)):
        load_plugin(spec)


__all__ = ["PLUGINS_ENV", "load_from_env", "load_plugin", "loaded_plugins"]
