"""Entry points only: ``python -m scripts.<name> --help`` runs the study :mod:`bench.studies.<name>` (the pages cite
these commands; ``bench study <name>`` is the same). ``readme_commands.py`` reads the README's quickstart for CI.
"""
