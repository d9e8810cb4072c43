"""The studies behind the published pages: the leaderboard's build, tuning and regeneration, the unit attacks and
white-box bounds on published runs, the papers' grids and tables, the verification zoo, the accountant corpus and
conformance page, and the performance and measurement studies. One module each, with its own ``main(argv)``:
``bench study NAME ...`` (:func:`bench.api.study`), or ``python -m scripts.NAME ...`` as the pages cite them.

Each builds its grid and runs it through :mod:`bench.api` (a resumable :func:`bench.api.sweep` followed by
:func:`bench.api.leaderboard`, or single :func:`bench.api.audit` calls): a rerun skips what its MLflow experiment
already has FINISHED. ``--dry-run`` prints the plan without training. They read and write this checkout's
``configs/`` and ``docs/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).resolve().parent


def study_names() -> dict[str, str]:
    """Every study (module name, dashes for underscores) and the first line of its docstring, read from the source
    without importing it: the modules of this folder with a ``main``."""
    out = {}
    for path in sorted(HERE.glob("[!_]*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            doc = (ast.get_docstring(tree) or "").strip().split("\n\n")[0]
            out[path.stem.replace("_", "-")] = " ".join(doc.split())
    return out


def run_study(name: str, argv: list[str]) -> int:
    """Run study ``name`` (dashes or underscores) with its own arguments; an unknown name is a ConfigError."""
    import importlib

    from methods.errors import ConfigError

    known = study_names()
    key = name.replace("_", "-")
    if key not in known:
        raise ConfigError(f"unknown study {name!r}; available: {', '.join(known)}")
    return int(importlib.import_module(f"{__name__}.{key.replace('-', '_')}").main(list(argv)) or 0)


__all__ = ["run_study", "study_names"]
