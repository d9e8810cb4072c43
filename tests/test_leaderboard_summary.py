"""The page's opening (bench.leaderboard.summary): the releases its records name, the download links beside the
page, and the per-unit summary of which method wins each (dataset, split, target epsilon) contest."""

from __future__ import annotations

import math

from bench.leaderboard import collect_records, to_html, to_markdown
from bench.leaderboard.page import anchor
from bench.leaderboard.summary import HEADING, downloads, opening, releases, wins


def rec(method, eps, seed, acc, dataset="cora", unit="edge", commit="c" * 40, **params):
    return {"cell_id": f"{method}-{eps}-{seed}-{dataset}-{sorted(params.items())}", "run_id": f"r{seed}{method}{dataset}",
            "kind": "run", "status": "FINISHED", "start_time": 1_763_800_000_000 + seed, "git_commit": commit,
            "params": {"method": method, "dataset": dataset, "split": "random-75-10-15", "seed": seed,
                       "privacy_unit": unit, "target_epsilon": str(eps), "delta": "1e-05",
                       "config_hash": f"{method}{eps}{seed}{dataset}{sorted(params.items())}", **params},
            "metrics": {"test_acc": acc, "epsilon": eps if math.isfinite(eps) else "inf"}}


def _records():
    recs = []
    for s in range(2):
        recs += [rec("gap-edge", 1.0, s, 0.70), rec("progap-edge", 1.0, s, 0.60),  # cora: gap-edge wins
                 rec("gap-edge", 1.0, s, 0.50, "citeseer"), rec("progap-edge", 1.0, s, 0.50, "citeseer"),  # a tie
                 rec("progap-edge", math.inf, s, 0.99),  # no claim: no contest
                 rec("gcn", math.inf, s, 0.95, unit="none"),  # a reference: never a contestant
                 # node level: the papers' relation would win, but it is not node-level DP for the input graph
                 rec("gap-node", 4.0, s, 0.90, unit="node", **{"hp.relation": "cut-off-graph"}),
                 rec("gap-node", 4.0, s, 0.40, unit="node", **{"hp.relation": "input-graph"}),
                 rec("dp-mlp", 4.0, s, 0.55, unit="node")]
    return recs


def test_wins_count_contests_ties_and_leave_out_references_infinite_targets_and_the_papers_relations():
    body, excluded = wins(collect_records(_records()))
    got = {(u, e): (n, text) for u, e, n, text in body}
    assert got[("edge", "1")] == ("2", "gap-edge (2), progap-edge (1)")  # cora won, citeseer tied
    assert ("edge", "inf") not in got and not any("gcn" in text for _, text in got.values())
    assert got[("node", "4")] == ("1", "dp-mlp (1)")  # 0.90 under the cut-off relation does not compete
    assert excluded == ["node (after cut-off)"]
    assert [u for u, *_ in body] == ["edge", "node"]  # the page's unit order


def test_releases_name_each_commit_newest_release_first_then_others():
    named = {"v1.0.2": "a" * 40, "v1.1.0": "b" * 40}
    recs = [{"git_commit": "a" * 40}] * 3 + [{"git_commit": "b" * 40}] * 2 + [{"git_commit": "d" * 40}]
    assert releases(recs, named) == [("v1.1.0", "bbbbbbb", 2), ("v1.0.2", "aaaaaaa", 3),
                                     ("not a release", "ddddddd", 1)]
    assert releases([{"git_commit": "a" * 40}], named) == [("v1.0.2", "aaaaaaa", 1)]  # a release with none: absent


def test_downloads_link_the_export_beside_the_page_and_nothing_outside_it(tmp_path):
    site = tmp_path / "site"
    for name in ("runs/cora.jsonl", "runs/citeseer.jsonl", "runs/manifest.json", "attacks/edge.jsonl"):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text("")
    got = downloads(site / "runs", site, site / "attacks")
    assert got == [("runs", (("citeseer", "runs/citeseer.jsonl"), ("cora", "runs/cora.jsonl"))),
                   ("attacks", (("edge", "attacks/edge.jsonl"),)), ("manifests", (("runs", "runs/manifest.json"),))]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.jsonl").write_text("")
    assert downloads(elsewhere, site) == []
    assert downloads(site / "runs" / "cora.jsonl", site) == []  # a single file export: nothing to list


def test_the_page_opens_with_the_banner_downloads_and_summary_in_both_documents(tmp_path):
    recs = _records()
    rows = collect_records(recs)
    site = tmp_path / "site"
    (site / "runs").mkdir(parents=True)
    (site / "runs" / "cora.jsonl").write_text("")
    head = opening(rows, recs, site / "runs", site, named={"v9": "c" * 40})
    md = to_markdown(rows, "T", opening=head)
    title, banner = md.splitlines()[0], md.splitlines()[2]
    assert title == "# T" and banner.startswith("> ") and "v9 (ccccccc)" in banner and f"{len(recs)} records" in banner
    assert "[cora](runs/cora.jsonl)" in md
    assert md.index("Contents:") < md.index(f"## {HEADING}") < md.index("## Conventions")
    assert f"* [{HEADING}](#{anchor(HEADING)})" in md
    assert "| edge | 1 | 2 | gap-edge (2), progap-edge (1) |" in md
    page = to_html(rows, "T", {}, opening=head)
    assert page.index("class='banner'") < page.index("<nav id='contents'") < page.index(f"id='{anchor(HEADING)}'")
    assert "<a href='runs/cora.jsonl'>cora</a>" in page and "<td>gap-edge (2), progap-edge (1)</td>" in page
    # without an opening the page is as before
    assert HEADING not in to_markdown(rows, "T") and "class='banner'" not in to_html(rows, "T", {})
