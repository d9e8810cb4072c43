"""``python -m scripts.gap_curves``: :mod:`bench.studies.gap_curves` (``bench study gap-curves``; ``--help``)."""

import sys

from bench.studies.gap_curves import main

if __name__ == "__main__":
    sys.exit(main())
