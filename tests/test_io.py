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
