"""``python -m scripts.regenerate``: :mod:`bench.studies.regenerate` (``bench study regenerate``; ``--help``)."""

import sys

from bench.studies.regenerate import main

if __name__ == "__main__":
    sys.exit(main())
