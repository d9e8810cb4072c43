"""One version everywhere a user reads it: the package, pyproject.toml, CITATION.cff and the changelog's newest
release."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

import bench

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_the_same_everywhere() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    releases = re.findall(r"^## (\d+\.\d+\.\d+)\b", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)
    assert bench.__version__ == project == str(citation["version"]) == releases[0]
    assert "date-released" in citation or releases[0] == "0.1.0"


def test_the_cited_commit_is_the_release_of_its_version() -> None:
    """CITATION.cff's ``commit`` (what ``--release vX`` checks against where tags were not fetched) is in the
    history, its tree is that version (package, pyproject and CITATION.cff), and the tag, where it exists, agrees."""
    from bench.check import cited_release

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    cited = cited_release(ROOT)
    assert "commit" not in citation or cited is not None, "CITATION.cff's commit must be a full 40-hex commit id"
    if cited is None:
        pytest.skip("CITATION.cff names no commit")
    version, commit = cited
    assert version == str(citation["version"])

    def show(path: str) -> str:
        r = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"git cannot show {commit[:12]} here (no history?): {r.stderr.strip()}")
        return r.stdout

    assert tomllib.loads(show("pyproject.toml"))["project"]["version"] == version
    assert str(yaml.safe_load(show("CITATION.cff"))["version"]) == version
    assert f'__version__ = "{version}"' in show("bench/__init__.py")
    tag = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/tags/v{version}^{{commit}}"], cwd=ROOT,
                         capture_output=True, text=True).stdout.strip()
    assert tag in ("", commit), f"tag v{version} is {tag[:12]}, CITATION.cff names {commit[:12]}"
