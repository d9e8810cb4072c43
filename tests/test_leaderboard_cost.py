"""The page's "Cost of this leaderboard" section: read from the regeneration's progress file (the format
``scripts.regenerate.Progress`` writes), its totals and per-family cost; no file, no section and no crash."""

from __future__ import annotations

import json

import pytest

from bench.leaderboard.cost import HEADING, cost_md, load, site_cost_md
from bench.leaderboard.page import _md_table_html, anchor, to_html, to_markdown
from bench.studies import regenerate as R


def _progress(site):
    """A progress file as the driver writes it: two families over two stages on two datasets, one step done twice."""
    ctx = R.Context("v1.0.0", "c" * 40, R.CONFIG, site, site / "store", 2, 1, [])
    p = R.Progress(site / "regeneration.json", ctx)
    for ds, stage, fam, cells, wall, threads in (("cora", "train", "gap", 50, 3600.0, 2),
                                                 ("cora", "train", "gap", 50, 1800.0, 2),  # resumed: accumulates
                                                 ("cora", "attacks", "gap", 20, 720.0, 1),
                                                 ("cora", "train", "drw", 40, 360.0, 2),
                                                 ("photo", "train", "gap", 50, 7200.0, 2),
                                                 ("cora", "page", "*", 1, 36.0, 1)):
        step = R.Step(ds, stage, fam, cells, cells, [(["true"], threads)])
        p.add(step, wall, threads)
        p.entry(step)["status"] = "done"
    p.save()
    return json.loads((site / "regeneration.json").read_text())


def test_the_section_reports_wall_time_core_hours_and_the_cost_per_family_and_stage(tmp_path):
    data = _progress(tmp_path)
    assert data["wall_s"] == pytest.approx(13716.0) and data["core_hours"] == pytest.approx(26676 / 3600, abs=1e-4)
    md = site_cost_md(tmp_path)
    assert md.startswith(f"## {HEADING}\n") and "from v1.0.0 (cccccccccccc)" in md and "(complete)" in md
    assert f"{13716 / 3600:.2f} h of wall time, {26676 / 3600:.2f} core-hours" in md
    lines = md.splitlines()
    assert "| family | train | attacks | page | total |" in lines
    # gap: train on cora (5400 s x 2) and photo (7200 s x 2); attacks 720 s x 1; cells summed over datasets
    assert f"| gap | {25200 / 3600:.2f} (100) | {720 / 3600:.2f} (20) | - | {25920 / 3600:.2f} |" in lines
    assert f"| drw | {720 / 3600:.2f} (40) | - | - | {720 / 3600:.2f} |" in lines
    assert "| (per dataset) | - | - | 0.01 (1) | 0.01 |" in lines
    assert f"| photo | {2:.2f} | {4:.2f} |" in lines


def test_no_progress_file_no_section_and_a_broken_one_is_named(tmp_path):
    from bench.leaderboard import LeaderboardError

    assert load(tmp_path / "regeneration.json") is None and site_cost_md(tmp_path) == "" and cost_md(None) == ""
    (tmp_path / "regeneration.json").write_text('{"steps": {"a": {"wall_s": 1}}}')
    with pytest.raises(LeaderboardError, match="not a regeneration progress file"):
        site_cost_md(tmp_path)


def test_the_page_lists_the_section_in_its_contents_only_when_there_is_one(tmp_path):
    from bench.site import site_texts

    _progress(tmp_path)
    (tmp_path / "runs").mkdir()
    _, _, closing = site_texts([], f"{tmp_path / 'runs'}/", records=[])
    assert f"## {HEADING}" in closing
    md, page = to_markdown([], "T", extra=closing), to_html([], "T", {}, extra=_md_table_html(closing))
    assert f"* [{HEADING}](#{anchor(HEADING)})" in md and f"## {HEADING}" in md
    assert f"<a href='#{anchor(HEADING)}'>{HEADING}</a>" in page and f"<h2 id='{anchor(HEADING)}'>" in page
    (tmp_path / "regeneration.json").unlink()
    _, _, closing = site_texts([], f"{tmp_path / 'runs'}/", records=[])
    assert HEADING not in closing
    assert HEADING not in to_html([], "T", {}, extra=_md_table_html(closing))
