"""``python -m scripts.device_sample``: :mod:`bench.studies.device_sample` (``bench study device-sample``; ``--help``)."""

import sys

from bench.studies.device_sample import main

if __name__ == "__main__":
    sys.exit(main())
