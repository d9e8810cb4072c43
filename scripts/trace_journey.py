"""``python -m scripts.trace_journey``: :mod:`bench.studies.trace_journey` (``bench study trace-journey``; ``--help``)."""

import sys

from bench.studies.trace_journey import main

if __name__ == "__main__":
    sys.exit(main())
