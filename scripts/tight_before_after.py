"""``python -m scripts.tight_before_after``: :mod:`bench.studies.tight_before_after` (``bench study tight-before-after``; ``--help``)."""

import sys

from bench.studies.tight_before_after import main

if __name__ == "__main__":
    sys.exit(main())
