"""The version string a checkout runs as: the release's number at its commit, and off it which commit
(``1.1.0+12.gc89384b``, PEP 440's local part; ``.dirty`` when code files differ from that commit).

The package's ``__version__`` names the last release; the commit says what actually ran. The release's commit comes
from its git tag ``v<version>``, else ``docs/leaderboard/releases.json`` or ``CITATION.cff`` (clones without tags).
A copy without ``.git`` uses its commit manifest (:mod:`bench.gitless`); an installed package without either is its
``__version__``. Runs tag the string (``bench_version``), so records and reports carry what ``bench --version``
prints.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

from bench import __version__

REPO = Path(__file__).resolve().parents[1]


def _git(*args: str, root: Path = REPO) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def release_commit(version: str = __version__, root: Path = REPO) -> str | None:
    """The commit of release ``version`` (:func:`bench.check.release_commit` of ``v<version>``: its tag's, else what
    ``CITATION.cff`` or the releases file names); None when none does."""
    from bench.check import release_commit as of_tag
    from methods.errors import BenchError

    try:
        return of_tag(f"v{version}", root)
    except BenchError:
        return None


def describe(root: Path = REPO) -> str:
    """``__version__`` at the release's clean commit; otherwise ``<version>+<commits since it>.g<commit>``
    (``+g<commit>`` when the release's commit is not an ancestor or unknown), ``.dirty`` for changed code."""
    from bench.tracking import commit_of

    commit = commit_of(root)
    if commit == "unknown":
        return __version__
    sha, dirty = commit.removesuffix("-dirty"), commit.endswith("-dirty")
    release = release_commit(__version__, root)
    if release == sha and not dirty:
        return __version__
    ahead = None
    if release and _git("merge-base", "--is-ancestor", release, sha, root=root) is not None:
        ahead = _git("rev-list", "--count", f"{release}..{sha}", root=root)
    local = f"{ahead}.g{sha[:7]}" if ahead else f"g{sha[:7]}"
    return f"{__version__}+{local}" + (".dirty" if dirty else "")


@lru_cache(maxsize=None)
def current() -> str:
    """:func:`describe` of this checkout, computed once per process."""
    return describe()


__all__ = ["current", "describe", "release_commit"]
