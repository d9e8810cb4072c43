"""``python -m scripts.input_graph_gadgets``: :mod:`bench.studies.input_graph_gadgets` (``bench study input-graph-gadgets``; ``--help``)."""

import sys

from bench.studies.input_graph_gadgets import main

if __name__ == "__main__":
    sys.exit(main())
