"""Build the published leaderboard (configs/leaderboard.yaml -> docs/leaderboard/) dataset by dataset, resumably.

    python -m scripts.build_leaderboard [--datasets D ...] [--methods M ... | --skip-methods M ...] [--seeds S ...]
                                        [--no-verify] [--teacher-cache DIR] [--workers 2] [--threads 1]
                                        [--no-tune] [--no-site] [--dry-run] [--executor ray --address HOST:PORT --gpus-per-cell 1]

For each dataset, in the config's order: tune its methods on validation accuracy (``scripts.tune``: resumes from
docs/leaderboard/tuning.jsonl, rewrites configs/hparams_tuned.yaml), then run the config's cells on that dataset
(``bench.api.sweep`` with the export docs/leaderboard/runs/, one file per dataset: every cell in it counts as
done), move the export's records of cells a retune superseded to docs/leaderboard/superseded/ (once their
row's new cells are all done: until then the page shows them as the row's previous setting), then rebuild
the site (``bench leaderboard --config configs/leaderboard.yaml --site docs/leaderboard``). Everything it needs to
resume lives in those committed files, so a killed run continues in a later session or on another machine from the
same command; commit tuning.jsonl, hparams_tuned.yaml, runs/ and the site as it goes. A cell's identity is a hash
of its resolved configuration, tuned hyperparameters included, so tune a dataset before running its cells (the
default order does).

``--skip-methods privgnn pate-m pate-g`` leaves the PrivGNN family (1,000 teachers of 200 epochs per fit, about
16 min a fit on Computers with two fits sharing 2 cores) to a GPU or a later session, where the same command with ``--methods privgnn
pate-m pate-g`` fills those cells in; the other cells do not change identity either way. ``--seeds 2 3 4`` runs
the cells without attacks and verifications (one fit each) before the attacked seeds 0 and 1 (five fits each with
LiRA's four references), which suits the PrivGNN cells on 2 cores: one fit a cell fits in any session.
``--teacher-cache .cache/teachers`` lets a seed's epsilon-4 and epsilon-8 cells (and their LiRA references) share
their teachers (the same results; the second cell costs minutes) and makes a killed PrivGNN run cell resume its
teachers where it stopped; ``--no-verify`` runs those resumable cells before the verifications, which cannot
resume mid-way. A seed's first verification retrains five times (91 min on photo); with the cache its second (the other
epsilon) fits the same worlds and retrains only its determinism fit, which never reads the cache.

``--executor ray --address HOST:PORT`` runs each dataset's cells on a Ray cluster (``--workers`` of them at once,
each asking Ray for ``--gpus-per-cell`` GPUs); tuning and the site stay on this machine (docs/sweeps.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "leaderboard.yaml"
SITE = REPO / "docs" / "leaderboard"


def dataset_config(raw: dict, dataset: str) -> dict:
    """``raw`` restricted to one dataset (methods limited to other datasets dropped): the same cells as the full
    config on that dataset, since a cell's identity does not depend on the config file it came from."""
    methods = []
    for m in raw["methods"]:
        if isinstance(m, dict) and "datasets" in m:
            if dataset not in m["datasets"]:
                continue
            m = {**m, "datasets": [dataset]}
        methods.append(m)
    return {**raw, "datasets": [dataset], "methods": methods}


def _name(entry) -> str:
    """A config method entry's name (an entry is a name or a mapping with one)."""
    return entry["name"] if isinstance(entry, dict) else entry


def method_names(raw: dict) -> list[str]:
    """The config's method names, in order, each once."""
    return list(dict.fromkeys(_name(m) for m in raw["methods"]))


def select_methods(raw: dict, only: list[str] | None, skip: list[str] | None) -> dict:
    """``raw`` with only the method entries named in ``only`` (all when None), less those in ``skip``."""
    return {**raw, "methods": [m for m in raw["methods"]
                               if (not only or _name(m) in only) and _name(m) not in (skip or ())]}


def select_seeds(raw: dict, seeds: list[int] | None) -> dict:
    """``raw`` with only ``seeds`` of its seeds (all when None). A cell's identity does not depend on the other
    seeds, so e.g. ``[2, 3, 4]`` runs the cells without attacks or verifications first (the cheap ones), and a
    later run without the option fills in the rest."""
    return raw if not seeds else {**raw, "seeds": [s for s in raw["seeds"] if s in seeds]}


def without_verify(raw: dict, skip: bool) -> dict:
    """``raw`` without its verification cells when ``skip`` (a run cell's identity does not depend on them), so the
    resumable run cells can go first and a later run without the option adds the verifications."""
    return {k: v for k, v in raw.items() if k != "verify"} if skip else raw


def prune_superseded(export: Path, cells: list, superseded: Path) -> int:
    """Move the export's records of cells the config no longer has (a retune changed their hyperparameters, so
    their identity) to ``superseded``, once the row they belong to (method, dataset, split, epsilon) has all of its
    current training cells finished; until then they stay, and the page shows them marked as the row's previous
    setting (bench.leaderboard.config_records). Returns how many moved. Nothing is lost: the moved lines keep their
    content, and records without a cell id stay. ``cells`` are the config's (bench.sweep cells); ``export`` is a
    file or a sharded directory (bench.records); ``superseded`` a directory, one file per dataset, or the older
    single file (bench.superseded)."""
    from bench import superseded as S
    from bench.io import write_text_atomic
    from bench.records import row_key

    files = sorted(export.glob("*.jsonl")) if export.is_dir() else [export] if export.exists() else []
    lines = {f: [x for x in f.read_text().splitlines() if x.strip()] for f in files}
    keep = {c.cell_id for c in cells}
    finished = {r.get("cell_id") for ls in lines.values() for r in map(json.loads, ls)
                if r.get("status", "FINISHED") == "FINISHED"}
    rows: dict[tuple, bool] = {}  # row -> every current training cell of it finished
    for c in cells:
        if c.kind == "run":
            rows[c.row] = rows.get(c.row, True) and c.cell_id in finished
    total = 0
    for f, ls in lines.items():
        stay, moved = [], []
        for line in ls:
            rec = json.loads(line)
            cid = rec.get("cell_id")
            (moved if cid and cid not in keep and rows.get(row_key(rec), True) else stay).append(line)
        if moved:
            S.append_lines(superseded, moved)
            write_text_atomic(f, "\n".join(stay) + "\n" if stay else "")
            total += len(moved)
    return total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=str(CONFIG))
    p.add_argument("--site", default=str(SITE))
    p.add_argument("--datasets", nargs="*", help="only these datasets (default: the config's, in its order)")
    p.add_argument("--methods", nargs="*", help="only these methods (default: all of the config's)")
    p.add_argument("--skip-methods", nargs="*", default=[], help="all of the config's methods but these")
    p.add_argument("--seeds", nargs="*", type=int,
                   help="only these of the config's seeds (default: all; 2 3 4 are the cells without attacks)")
    p.add_argument("--workers", type=int, default=2, help="cells (and tuning fits) in parallel (default 2)")
    p.add_argument("--threads", type=int, default=1, help="torch/numba threads per cell (default 1)")
    p.add_argument("--no-tune", action="store_true", help="run the cells with the hyperparameters checked in now")
    p.add_argument("--dry-run", action="store_true", help="list what each dataset still needs and stop")
    p.add_argument("--no-site", action="store_true",
                   help="do not rebuild the site after each dataset (scripts.regenerate rebuilds it once per dataset)")
    p.add_argument("--no-verify", action="store_true",
                   help="run the cells but not their verifications (a later run without it adds them)")
    p.add_argument("--teacher-cache", metavar="DIR",
                   help="keep the PrivGNN family's noise-free teacher outputs in DIR (not committed) and reuse them "
                        "across the run cells of a seed: its epsilon-4 and epsilon-8 cells and their LiRA "
                        "references train the teachers once (exactly the same results), and so do a seed's "
                        "verifications, but for their determinism fit, which recomputes")
    p.add_argument("--executor", choices=["inprocess", "process", "ray"],
                   help="where the cells run (default: process with --workers > 1, else inprocess)")
    p.add_argument("--address", help="the Ray cluster's address (--executor ray; default: a local instance)")
    p.add_argument("--gpus-per-cell", type=float, default=0, help="GPUs each cell asks Ray for (--executor ray)")
    args = p.parse_args(argv)

    from bench import api
    from bench.superseded import site_superseded
    from bench.studies import tune

    raw = yaml.safe_load(Path(args.config).read_text())
    datasets = args.datasets or list(raw["datasets"])
    unknown = sorted(set(datasets) - set(raw["datasets"]))
    if unknown:
        print(f"error: {', '.join(unknown)} not in {args.config}", file=sys.stderr)
        return 2
    named = set(args.methods or []) | set(args.skip_methods)
    unknown = sorted(named - set(method_names(raw)))
    if unknown:
        print(f"error: no method {', '.join(unknown)} in {args.config}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.seeds or []) - set(raw["seeds"]))
    if unknown:
        print(f"error: seed {', '.join(map(str, unknown))} not in {args.config}", file=sys.stderr)
        return 2
    chosen = without_verify(select_seeds(select_methods(raw, args.methods, args.skip_methods), args.seeds),
                            args.no_verify)
    if not chosen["methods"]:
        print("error: --methods / --skip-methods leave no method to run", file=sys.stderr)
        return 2
    site = Path(args.site)
    site.mkdir(parents=True, exist_ok=True)
    export = site / "runs"  # sharded: one file per dataset (bench.records)
    export.mkdir(exist_ok=True)
    for d in datasets:
        t0 = time.perf_counter()
        part = dataset_config(chosen, d)
        if not part["methods"]:
            print(f"=== {d}: none of the chosen methods runs here", file=sys.stderr, flush=True)
            continue
        if not args.no_tune:
            print(f"=== {d}: tuning", file=sys.stderr, flush=True)
            rc = tune.main(["--datasets", d, "--methods", *method_names(part), "--workers", str(args.workers),
                            "--threads", str(args.threads)] + (["--dry-run"] if args.dry_run else []))
            if rc:
                return rc
        print(f"=== {d}: cells", file=sys.stderr, flush=True)
        api.sweep(part, executor=args.executor or ("process" if args.workers > 1 else "inprocess"),
                  workers=args.workers, threads=args.threads, export=export, dry_run=args.dry_run,
                  out=sys.stderr, teacher_cache=args.teacher_cache, address=args.address,
                  gpus_per_cell=args.gpus_per_cell)
        if args.dry_run:
            continue
        old = site_superseded(site)
        moved = prune_superseded(export, [c for c in api.cells(raw) if not c.skip], old)
        if moved:
            print(f"# moved {moved} records of superseded cells to {old}/", file=sys.stderr)
        if not args.no_site:
            from bench.cli import main as bench

            bench(["leaderboard", "--config", args.config, "--site", str(site), "--no-track"])
        print(f"=== {d}: done in {(time.perf_counter() - t0) / 60:.1f} min", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
