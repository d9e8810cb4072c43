"""``python -m scripts.accountant_conformance``: :mod:`bench.studies.accountant_conformance` (``bench study accountant-conformance``; ``--help``)."""

import sys

from bench.studies.accountant_conformance import main

if __name__ == "__main__":
    sys.exit(main())
