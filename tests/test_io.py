"""Atomic writes (bench.io): a file the suite writes gets the mode a plain write would give it."""

import os
import stat

import pytest

from bench.io import write_json_atomic, write_text_atomic


@pytest.mark.parametrize("mask, want", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_written_file_respects_the_umask_not_the_temporary_files_0600(tmp_path, mask, want):
    old = os.umask(mask)
    try:
        write_text_atomic(tmp_path / "page.html", "<html></html>")
        write_json_atomic(tmp_path / "out.json", {"a": 1})
    finally:
        os.umask(old)
    for name in ("page.html", "out.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == want


def test_a_replaced_file_keeps_its_own_mode(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("old")
    path.chmod(0o640)
    write_text_atomic(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_wide_table_wraps_its_widest_cells_to_the_width_and_keeps_every_word():
    from bench.io import format_table

    header = ["method", "dataset", "verdict", "detail", "epsilon_lb"]
    rows = [["gap-edge", "cora", "PASS", "the occurrence counts match the ledger within the 95% interval; the canaries "
             "moved as the noise predicts", "0.12"], ["dp-mlp", "citeseer", "INCONCLUSIVE", "0/3 conclusive", "-"]]
    wide = format_table(header, rows, None)
    assert max(map(len, wide.splitlines())) > 80 and len(wide.splitlines()) == 4
    table = format_table(header, rows, 80)
    lines = table.splitlines()
    assert max(map(len, lines)) <= 80 and len(lines) > 4
    assert lines[0].split() == header  # the header on one line, the rule under it
    words = " ".join(lines[2:]).split()
    for cell in (c for r in rows for c in r):
        assert all(w in words for w in cell.split())
    assert format_table(header, rows[1:], 80) == format_table(header, rows[1:], None)  # narrow: as it was


def test_tables_wrap_only_on_a_terminal(monkeypatch):
    import sys

    from bench.io import WIDE_ENV, table_width

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv(WIDE_ENV, raising=False)
    assert table_width() == 80
    monkeypatch.setenv(WIDE_ENV, "1")
    assert table_width() is None
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    monkeypatch.delenv(WIDE_ENV)
    assert table_width() is None
