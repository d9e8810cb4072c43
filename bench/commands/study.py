"""``bench study [NAME [ARGS ...]]``: the studies behind the published pages (:mod:`bench.studies`): without a name,
the list; with one, that study with its own arguments (``bench study tune --help``)."""

from __future__ import annotations

import argparse

from bench.cliargs import COMMANDS, command


@command("study", "the studies behind the published pages (tuning, regeneration, paper grids, tables)")
def _study_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("study", help=COMMANDS["study"][1],
                       description="The studies behind the published pages (bench.studies): the leaderboard's "
                                   "build, tuning and regeneration, unit attacks and white-box bounds on published "
                                   "runs, the papers' grids and tables, the verification zoo, the accountant "
                                   "corpus and conformance page. Without NAME: the list.")
    p.add_argument("name", nargs="?", metavar="NAME", help="the study to run (see `bench study`)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its own arguments (bench study NAME --help)")
    p.set_defaults(func=cmd_study)
    return p


def cmd_study(args: argparse.Namespace) -> int:
    from bench.studies import run_study, study_names

    if not args.name:
        from bench.io import format_table

        print(format_table(["study", "what it does"], [[n, d] for n, d in study_names().items()]))
        return 0
    return run_study(args.name, args.args)
