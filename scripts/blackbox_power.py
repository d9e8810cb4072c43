"""``python -m scripts.blackbox_power``: :mod:`bench.studies.blackbox_power` (``bench study blackbox-power``; ``--help``)."""

import sys

from bench.studies.blackbox_power import main

if __name__ == "__main__":
    sys.exit(main())
