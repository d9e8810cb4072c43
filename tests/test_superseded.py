"""The superseded records (``bench.superseded``): one file per dataset, lines kept byte for byte, the older single
file still read; and the published split holds exactly the lines the single file held."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

import pytest

from bench import superseded as S
from tests.conftest import REPO

SITE = REPO / "docs" / "leaderboard"
#: the last commit that held the published superseded records as one file (docs/leaderboard/superseded.jsonl)
SINGLE_FILE_COMMIT = "5726f90"


def _line(cid, dataset, **extra):
    return json.dumps({"cell_id": cid, "params": {"dataset": dataset}, **extra}, separators=(",", ":"))


def test_lines_go_to_their_datasets_file_unchanged_and_the_single_file_still_works(tmp_path):
    new = [_line("a", "cora"), _line("b", "photo", x=1), _line("c", "cora"), " {\"cell_id\": \"d\", \"params\": "
           "{\"dataset\": \"csbm:nodes=5\"}}"]
    d = tmp_path / "superseded"
    assert S.append_lines(d, new) == 4
    assert (d / "cora.jsonl").read_text() == new[0] + "\n" + new[2] + "\n"
    assert (d / "photo.jsonl").read_text() == new[1] + "\n"
    assert (d / "csbm_nodes=5.jsonl").read_text() == new[3] + "\n"  # bench.records.shard's file name
    assert S.append_lines(d, [_line("e", "cora")]) == 1  # appended after what is there
    assert (d / "cora.jsonl").read_text().splitlines() == [new[0], new[2], _line("e", "cora")]
    one = tmp_path / "superseded.jsonl"  # the older layout: a path ending in .jsonl is one file
    assert S.append_lines(one, new) == 4 and one.read_text().splitlines() == new
    assert Counter(S.lines(d)) == Counter(S.lines(one)) + Counter([_line("e", "cora")])
    assert S.load(tmp_path / "absent") == [] and S.load(tmp_path / "absent.jsonl") == []


def test_the_scripts_write_into_the_directory_by_default():
    import argparse

    from bench.studies._common import record_args

    p = argparse.ArgumentParser()
    record_args(p, "", "", "")
    assert p.parse_args([]).superseded == "docs/leaderboard/superseded/"
    assert S.site_superseded(SITE) == SITE / "superseded" and not S.single_file(S.site_superseded(SITE))


def test_the_published_split_is_what_the_readers_load():
    """Every file holds only its dataset's records; the readers load exactly the union of the files' lines, whether
    given the directory or one file with the same lines (the older layout); no line was written twice, and no
    superseded record is still published (a cell may be superseded more than once: a retune's rerun, then the
    regeneration, so cell ids repeat)."""
    d = S.site_superseded(SITE)
    assert d.is_dir() and not (SITE / "superseded.jsonl").exists()
    files = sorted(d.glob("*.jsonl"))
    assert len(files) >= 9
    union = []
    for f in files:
        lines = [x for x in f.read_text().splitlines() if x.strip()]
        assert lines and all(json.loads(x)["params"]["dataset"] + ".jsonl" == f.name for x in lines), f
        union += lines
    assert S.lines(d) == union
    assert S.load(d) == [json.loads(x) for x in union]
    assert len(set(union)) == len(union) and all(r.get("cell_id") and r.get("run_id") for r in S.load(d))
    published = {json.loads(x).get("run_id") for f in (SITE / "runs").glob("*.jsonl")
                 for x in f.read_text().splitlines() if x.strip()}
    assert not published & {r["run_id"] for r in S.load(d)}


def test_the_split_kept_every_line_of_the_single_file_byte_for_byte_in_order(tmp_path):
    """Against the single file in git history: per dataset, its lines (same bytes, same order) begin that dataset's
    file (later writers only append), and nothing else was in it."""
    old = subprocess.run(["git", "show", f"{SINGLE_FILE_COMMIT}:docs/leaderboard/superseded.jsonl"], cwd=REPO,
                         capture_output=True, text=True)
    if old.returncode != 0:
        pytest.skip(f"git history without {SINGLE_FILE_COMMIT} (a shallow clone?)")
    by_dataset: dict[str, list[str]] = {}
    for x in old.stdout.splitlines():
        by_dataset.setdefault(json.loads(x)["params"]["dataset"], []).append(x)
    assert sum(map(len, by_dataset.values())) == 1003
    d = S.site_superseded(SITE)
    for ds, lines in by_dataset.items():
        assert (d / f"{ds}.jsonl").read_text().splitlines()[:len(lines)] == lines, ds
    single = tmp_path / "superseded.jsonl"
    single.write_text(old.stdout)
    assert Counter(S.lines(single)) <= Counter(S.lines(d))
