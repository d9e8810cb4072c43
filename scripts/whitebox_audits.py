"""``python -m scripts.whitebox_audits``: :mod:`bench.studies.whitebox_audits` (``bench study whitebox-audits``; ``--help``)."""

import sys

from bench.studies.whitebox_audits import main

if __name__ == "__main__":
    sys.exit(main())
