"""Paper-reproduction scripts: ``python -m scripts.<name> --help``. Not part of the library.

Each builds a grid and runs it through :mod:`bench.api` (a resumable :func:`bench.api.sweep` followed by
:func:`bench.api.leaderboard`, or single :func:`bench.api.audit` calls): a rerun skips what its MLflow experiment
already has FINISHED. ``--dry-run`` prints the plan without training.
"""
