"""``python -m scripts.audit_table``: :mod:`bench.studies.audit_table` (``bench study audit-table``; ``--help``)."""

import sys

from bench.studies.audit_table import main

if __name__ == "__main__":
    sys.exit(main())
