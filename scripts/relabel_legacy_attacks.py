"""``python -m scripts.relabel_legacy_attacks``: :mod:`bench.studies.relabel_legacy_attacks` (``bench study relabel-legacy-attacks``; ``--help``)."""

import sys

from bench.studies.relabel_legacy_attacks import main

if __name__ == "__main__":
    sys.exit(main())
