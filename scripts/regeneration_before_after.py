"""``python -m scripts.regeneration_before_after``: :mod:`bench.studies.regeneration_before_after` (``bench study regeneration-before-after``; ``--help``)."""

import sys

from bench.studies.regeneration_before_after import main

if __name__ == "__main__":
    sys.exit(main())
