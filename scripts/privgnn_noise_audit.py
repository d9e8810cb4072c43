"""``python -m scripts.privgnn_noise_audit``: :mod:`bench.studies.privgnn_noise_audit` (``bench study privgnn-noise-audit``; ``--help``)."""

import sys

from bench.studies.privgnn_noise_audit import main

if __name__ == "__main__":
    sys.exit(main())
