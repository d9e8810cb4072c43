"""``python -m scripts.dpgnn_grid``: :mod:`bench.studies.dpgnn_grid` (``bench study dpgnn-grid``; ``--help``)."""

import sys

from bench.studies.dpgnn_grid import main

if __name__ == "__main__":
    sys.exit(main())
