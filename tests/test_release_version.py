"""One version everywhere a user reads it: the package, pyproject.toml, CITATION.cff and the changelog's newest
release."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

import bench

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_the_same_everywhere() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    releases = re.findall(r"^## (\d+\.\d+\.\d+)\b", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)
    assert bench.__version__ == project == str(citation["version"]) == releases[0]
    assert "date-released" in citation or releases[0] == "0.1.0"
