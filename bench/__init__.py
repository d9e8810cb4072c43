"""The benchmark harness: datasets and splits, the run, attack, audit and sweep jobs, tracking, and the CLI.

:mod:`bench.api` is the library entry point (``from bench import api``); ``bench`` (:mod:`bench.cli`) the command
line over it. Importing this package loads nothing heavy.
"""

__version__ = "1.1.0"

#: the MLflow experiment runs go to unless told otherwise
DEFAULT_EXPERIMENT = "dp-gnn-bench"
