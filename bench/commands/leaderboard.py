"""``bench leaderboard``: tables and plots of tracked runs or of an export (:mod:`bench.leaderboard`), and the
published site (``--site``: :mod:`bench.site`), optionally after running a sweep config (``--run``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.cliargs import DIR_RULE, FILE_RULE, check_threads, command, list_arg
import bench.leaderboard as _lb
from bench.leaderboard import LeaderboardError, build, build_site, collect_records, config_records

_DESCRIPTION = (_lb.__doc__ or "").split("\n\n")[0]

@command("leaderboard", "tables and privacy-utility plots of an experiment's runs or of an export (md, html, csv)")
def _leaderboard_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("leaderboard", help="tables and privacy-utility plots of an experiment's runs or of an export",
                       description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiment", default="dp-gnn-bench", help="MLflow experiment (default: %(default)s)")
    p.add_argument("--export", metavar="FILE.jsonl|DIR/",
                   help="build from this export (a file, or a directory of per-dataset files) instead of the MLflow "
                        "store; it must exist, unless --run writes it")
    p.add_argument("--format", choices=["md", "html", "csv"], default="md", help="output format (default: md)")
    p.add_argument("--output", "-o", metavar="PATH", help=f"write to PATH (atomically; {FILE_RULE}) instead of stdout")
    p.add_argument("--site", metavar="DIR", help="write DIR/index.html, DIR/README.md and DIR/plots/ (the published "
                                                 "leaderboard; from DIR/runs/ or DIR/runs.jsonl unless --export or "
                                                 f"--experiment; {DIR_RULE})")
    p.add_argument("--run", metavar="CONFIG",
                   help="first run CONFIG's sweep (resumable; its export is the site's with --site), then build")
    p.add_argument("--config", metavar="CONFIG",
                   help="with --site: only the cells of this sweep config (and its progress); implied by --run; with "
                        "--check: every cell of CONFIG must have a finished record in the export")
    p.add_argument("--write-export", metavar="FILE.jsonl",
                   help=f"also write the experiment's runs to this export (merged with what it holds; {FILE_RULE})")
    p.add_argument("--threads", type=int, default=None, help="with --run: torch/numba threads per cell")
    p.add_argument("--workers", type=int, default=1,
                   help="with --run: cells in parallel (separate processes when > 1; default: %(default)s)")
    p.add_argument("--no-track", action="store_true", help="do not log a leaderboard run with the tables and plots")
    p.add_argument("--check", metavar="EXPORT",
                   help="only check an export (a file, or a directory of per-dataset files): every record's epsilon "
                        "recomputed from its ledger, its ledger from its recipe, the delta rule, target >= spent, "
                        "rates in [0, 1], its commit in this repository's history and clean, no duplicated line and no "
                        "second finished record of a cell; one line per failing record, then a summary; exit 1 if any fails. Records started before the clean-commit rule "
                        "that name a -dirty commit are counted, not failed, unless --strict or --release")
    p.add_argument("--strict", action="store_true",
                   help="with --check: no legacy exemption: any -dirty, missing or unknown commit (not an ancestor of "
                        "HEAD) fails")
    list_arg(p, "--release", metavar="TAG",
                   help="with --check (implies --strict): every record must name exactly the commit the git tag TAG "
                        "points to (an export regenerated from that release: scripts/regenerate.py); repeat it for a "
                        "site whose rows come from several releases (each record names one of them)")
    p.set_defaults(func=cmd_leaderboard)
    return p


def cmd_check(export: str, strict: bool = False, release: str | list[str] | None = None,
              config: str | None = None) -> int:
    from bench.check import check_export

    report = check_export(export, strict=strict, release=release, config=config)
    for where, problems in report.failures:
        print(f"FAIL {where}: {'; '.join(problems)}")
    print(report.summary())
    return 0 if report.ok else 1


def check_arguments(args: argparse.Namespace) -> None:
    """Every path and number of a build, checked before a sweep cell runs or a file is written: the inputs exist
    (``--export`` unless ``--run`` writes it, ``--run``, ``--config``), the outputs can be written
    (:mod:`bench.io`'s rule), and options that apply only with another are not given alone."""
    from bench.io import check_input, check_output_dir, check_output_file, check_writable

    if not args.experiment.strip():
        raise LeaderboardError("--experiment must be a non-empty name")
    if not args.run and (args.workers != 1 or args.threads is not None):
        raise LeaderboardError("--workers and --threads apply with --run only")
    if args.workers < 1:
        raise LeaderboardError(f"--workers must be >= 1 (got {args.workers})")
    check_threads(args.threads, LeaderboardError)
    if args.config and not args.site:
        raise LeaderboardError("--config picks the cells of a --site build: give --site too")
    if args.site and args.output:
        raise LeaderboardError("--output does not combine with --site (the site's files go into its folder)")
    check_input(args.run, "--run")
    check_input(args.config, "--config")
    if args.run:
        check_writable(args.export, "--export", directory_ok=True)
    else:
        check_input(args.export, "--export", kind="any")
    check_output_file(args.output)
    check_output_dir(args.site, "--site")
    check_writable(args.write_export, "--write-export", directory_ok=True)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from bench.io import write_text_atomic

    if args.check:
        others = [o for o, v in (("--run", args.run), ("--site", args.site), ("--export", args.export),
                                 ("--output", args.output), ("--write-export", args.write_export)) if v]
        if others:
            raise LeaderboardError(f"--check only checks an export; it does not combine with {', '.join(others)}")
        return cmd_check(args.check, args.strict, args.release, args.config)
    if args.strict or args.release:
        raise LeaderboardError(f"{'--release' if args.release else '--strict'} applies with --check only")

    check_arguments(args)
    export = args.export
    if args.site:
        from bench.records import site_export

        export = export or site_export(args.site)
    if args.run:
        from bench import api

        api.sweep(args.run, experiment=None if args.experiment == "dp-gnn-bench" else args.experiment,
                  executor="process" if args.workers > 1 else "inprocess", workers=args.workers,
                  threads=args.threads, export=export, progress=True)
    if args.write_export:
        from bench import records

        n = records.write(args.write_export, records.records_from_experiment(args.experiment))
        print(f"# wrote {args.write_export}: {n} records", file=sys.stderr)
    if args.site:
        from bench import records
        from bench.site import load_setting_records, site_texts

        recs = records.load(export) if Path(export).exists() else records.records_from_experiment(args.experiment)
        config, planned, done = args.run or args.config, None, None
        if config:
            recs, planned, done = config_records(config, recs)
        # attack records beside the export (SITE/attacks/ for SITE/runs/), joined to the rows of the runs they refit
        recs = recs + records.attacks_beside(export)
        rows = collect_records(recs)
        if not rows:
            raise LeaderboardError(f"no FINISHED runs with test accuracy in {export}"
                                   + (f" for the cells of {config}" if config else ""))
        # the papers' own settings (configs/papers/*.yaml) beside the tuned rows in "Papers vs ours"
        setting_rows = collect_records(load_setting_records())
        title, intro, papers = site_texts(rows, export, config=config, records=recs, planned=planned, done=done,
                                          setting_rows=setting_rows)
        from bench.leaderboard.summary import opening

        head = opening(rows, recs, export, args.site, records.site_attacks(args.site))
        files = build_site(rows, args.site, title, intro, papers, head)
        from bench import manifest

        # what the page was built from, so `--check` sees a record deleted, added or edited since
        for source in (export, records.site_attacks(args.site)):
            if Path(str(source).rstrip("/")).exists():
                files.append(manifest.write(source))
        print(_lb.terminal_summary(rows))
        print(f"\npage: {Path(args.site) / 'index.html'} ({len(files)} files written to {args.site})")
        return 0
    text, rows = build(args.experiment, args.format, track=not args.no_track and not export, export=export)
    if args.output:
        write_text_atomic(args.output, text)
        print(f"# wrote {args.output}: {len(rows)} rows", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
