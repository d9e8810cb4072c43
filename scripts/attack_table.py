"""``python -m scripts.attack_table``: :mod:`bench.studies.attack_table` (``bench study attack-table``; ``--help``)."""

import sys

from bench.studies.attack_table import main

if __name__ == "__main__":
    sys.exit(main())
