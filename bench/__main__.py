"""``python -m bench``: the ``bench`` command."""

import sys

from bench.cli import main

if __name__ == "__main__":  # an import (a documentation tool's inspection) runs nothing
    sys.exit(main())
