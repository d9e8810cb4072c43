"""``python -m scripts.verify_zoo``: :mod:`bench.studies.verify_zoo` (``bench study verify-zoo``; ``--help``)."""

import sys

from bench.studies.verify_zoo import main

if __name__ == "__main__":
    sys.exit(main())
