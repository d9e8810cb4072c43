"""``python -m scripts.build_accountant_corpus``: :mod:`bench.studies.build_accountant_corpus` (``bench study build-accountant-corpus``; ``--help``)."""

import sys

from bench.studies.build_accountant_corpus import main

if __name__ == "__main__":
    sys.exit(main())
