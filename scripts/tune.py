"""``python -m scripts.tune``: :mod:`bench.studies.tune` (``bench study tune``; ``--help``)."""

import sys

from bench.studies.tune import main

if __name__ == "__main__":
    sys.exit(main())
