"""``python -m scripts.unit_attacks``: :mod:`bench.studies.unit_attacks` (``bench study unit-attacks``; ``--help``)."""

import sys

from bench.studies.unit_attacks import main

if __name__ == "__main__":
    sys.exit(main())
