"""The ``bench`` commands: one module per command, each a parser and a thin handler (parse -> :mod:`bench.api`
-> print). Importing a command module loads argparse and :mod:`bench.cliargs` only; the jobs and their heavy
imports (torch, PyG, MLflow, the method families) load inside the handlers."""
