"""The README's performance figures say where they were measured: every figure names its date and the commit it
ran at, and every commit named is one of this history, so a figure cannot outlive the code it measured unnoticed."""

import re
import subprocess

import pytest

from tests.conftest import REPO


def _bullets() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Performance\n", 1)[1].split("\n## ", 1)[0]
    return [b.replace("\n", " ") for b in re.split(r"\n- ", "\n" + section.strip()) if b.startswith("**")]


def test_every_performance_figure_names_its_date_and_commit():
    bullets = _bullets()
    assert bullets, "the README's Performance section lists its figures as bullets"
    for b in bullets:
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", b), f"no date: {b[:80]}"
        assert re.search(r"\bcommits? [0-9a-f]{7,40}\b", b), f"no commit: {b[:80]}"


def test_every_commit_a_figure_names_is_in_the_history():
    shas = {s for b in _bullets() for s in re.findall(r"\b[0-9a-f]{7,40}\b", b) if not s.isdigit()}
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=REPO, capture_output=True, text=True)
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True,
                             text=True)
    if inside.stdout.strip() != "true" or shallow.stdout.strip() == "true":
        pytest.skip("needs the repository's full history")
    for sha in sorted(shas):
        ok = subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=REPO, capture_output=True)
        assert ok.returncode == 0, f"the README names commit {sha}, which this history does not have"
