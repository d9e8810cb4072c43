"""``python -m scripts.privgnn_grid``: :mod:`bench.studies.privgnn_grid` (``bench study privgnn-grid``; ``--help``)."""

import sys

from bench.studies.privgnn_grid import main

if __name__ == "__main__":
    sys.exit(main())
