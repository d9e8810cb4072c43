"""``bench reproduce NAME``: re-run one published cell at the commit its record names and compare it with the
record (:mod:`bench.reproduce`)."""

from __future__ import annotations

import argparse

from bench.cliargs import COMMANDS, FILE_RULE, check_common, command, request_args, request_kwargs, stderr
from bench.request import ReproduceSpec, build

#: the exit status of a re-run that does not give the record back (0: MATCH; 2: bad input; 1: the re-run failed)
DIFFER_EXIT = 3


@command("reproduce", "re-run a published cell at its record's commit and compare: MATCH or DIFFER")
def _reproduce_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("reproduce", help=COMMANDS["reproduce"][1],
                       description="Re-run the cell of one published run record with the code of the commit the "
                                   "record names (this checkout, or a temporary git worktree of the commit; no tag "
                                   "and no tracking store needed), then compare test accuracy, macro-F1, spent "
                                   "epsilon, predictions hash and every attack rate with the record. Exit 0 on "
                                   f"MATCH, {DIFFER_EXIT} on DIFFER.")
    request_args(p, ReproduceSpec)
    p.add_argument("--output", "-o", metavar="FILE", help=f"also write the comparison as JSON (atomically; {FILE_RULE})")
    p.set_defaults(func=cmd_reproduce)
    return p


def cmd_reproduce(args: argparse.Namespace) -> int:
    from bench.io import check_input, check_output_file, format_table, write_json_atomic
    from bench import api
    from bench.reproduce import DEFAULT_EXPORT, find_record

    check_common(args)
    spec = build(ReproduceSpec, **request_kwargs(ReproduceSpec, args))
    export = spec.export or str(DEFAULT_EXPORT)
    check_input(export, "--export", kind="any")
    check_output_file(args.output)
    find_record(spec.name, export)  # bad input before anything is checked out or run
    rep = api.reproduce(spec, log=stderr)
    rows = [[c.field, str(c.published), str(c.reproduced), c.verdict] for c in rep.comparisons]
    print(f"# {rep.name} (cell {rep.cell_id}, {rep.config}) re-run with the code of {rep.commit[:12]} ({rep.where}) "
          f"in {rep.seconds:.0f}s")
    print(format_table(["field", "published", "re-run", ""], rows))
    differ = [c.field for c in rep.comparisons if not c.same]
    print(f"{rep.verdict}" + (f": {', '.join(differ)} differ" if differ else f": all {len(rows)} fields the same"))
    if args.output:
        write_json_atomic(args.output, rep.to_dict())
    return 0 if rep.verdict == "MATCH" else DIFFER_EXIT
