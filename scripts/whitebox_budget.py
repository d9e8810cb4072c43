"""``python -m scripts.whitebox_budget``: :mod:`bench.studies.whitebox_budget` (``bench study whitebox-budget``; ``--help``)."""

import sys

from bench.studies.whitebox_budget import main

if __name__ == "__main__":
    sys.exit(main())
