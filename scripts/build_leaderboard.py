"""``python -m scripts.build_leaderboard``: :mod:`bench.studies.build_leaderboard` (``bench study build-leaderboard``; ``--help``)."""

import sys

from bench.studies.build_leaderboard import main

if __name__ == "__main__":
    sys.exit(main())
