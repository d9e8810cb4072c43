"""``python -m scripts.drw_table``: :mod:`bench.studies.drw_table` (``bench study drw-table``; ``--help``)."""

import sys

from bench.studies.drw_table import main

if __name__ == "__main__":
    sys.exit(main())
