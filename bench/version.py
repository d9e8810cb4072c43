"""The version string a checkout runs as: the release's number at its commit, and off it which commit
(``1.1.0+12.gc89384b``, PEP 440's local part; ``.dirty`` when code files differ from that commit).

The package's ``__version__`` names the last release; the commit says what actually ran. The release's commit comes
from its git tag ``v<version>``, else ``docs/leaderboard/releases.json`` or ``CITATION.cff`` (clones without tags).
A copy without ``.git`` uses its commit manifest (:mod:`bench.gitless`); an installed package without either is its
``__version__``. Runs tag the string (``bench_version``, which their records keep), so records and reports carry
what ``bench --version`` prints.
"""

from __future__ import annotations

import json
import subprocess
from functools import lru_cache
from pathlib import Path

from bench import __version__
from bench.gitless import commit_of
from methods.errors import BenchError

REPO = Path(__file__).resolve().parents[1]


#: the releases whose records a published site holds, tag -> commit (committed beside the records, so a clone that did
#: not fetch tags still checks every release it publishes)
RELEASES_FILE = Path("docs") / "leaderboard" / "releases.json"


def registered_releases(repo: str | Path | None = None) -> dict[str, str]:
    """tag -> commit from ``repo``'s :data:`RELEASES_FILE` (empty when it is missing or unreadable)."""
    path = (Path(repo) if repo is not None else REPO) / RELEASES_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str) and len(v) == 40} \
        if isinstance(data, dict) else {}


def release_commit(tag: str, repo: str | Path | None = None) -> str:
    """The commit of the release ``tag``: the git tag's (peeled: an annotated tag's commit), or else the commit that
    ``repo``'s CITATION.cff names (its ``commit`` key) when its ``version`` is the tag's (a leading ``v`` aside), or
    the one :data:`RELEASES_FILE` registers, so a clone that did not fetch tags still checks a release. BenchError
    when none names one, or when two do and they disagree."""
    repo = Path(repo) if repo is not None else REPO
    try:
        out = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}"], cwd=repo,
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise BenchError(f"--release {tag}: git cannot be asked in {repo} ({e})") from None
    sha = out.stdout.strip() if out.returncode == 0 else ""
    cited = cited_release(repo)
    named = {"CITATION.cff": cited[1] if cited and cited[0] == tag.removeprefix("v") else None,
             str(RELEASES_FILE): registered_releases(repo).get(tag)}
    if len(sha) == 40:
        named["the git tag"] = sha
    found = {k: v for k, v in named.items() if v}
    for k, v in found.items():
        if len(sha) == 40 and v != sha:
            raise BenchError(f"--release {tag}: the git tag is {sha[:12]} but {k} names {v[:12]}")
    if len(set(found.values())) > 1:
        raise BenchError(f"--release {tag}: " + ", ".join(f"{k} names {v[:12]}" for k, v in found.items()))
    if found:
        return next(iter(found.values()))
    raise BenchError(f"--release {tag}: no git tag {tag!r} in {repo} and CITATION.cff names no commit of it, nor "
                     f"{RELEASES_FILE} (git fetch --tags, or git tag {tag} <commit>)")


def cited_release(repo: str | Path | None = None) -> tuple[str, str] | None:
    """(version, commit) from ``repo``'s CITATION.cff when it names the release's commit (CFF's ``commit`` key: 40
    hex digits), else None."""
    import yaml

    path = (Path(repo) if repo is not None else REPO) / "CITATION.cff"
    try:
        cff = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    commit = str(cff.get("commit", "")) if isinstance(cff, dict) else ""
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        return None
    return str(cff.get("version", "")), commit




def _git(*args: str, root: Path = REPO) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def describe(root: Path = REPO) -> str:
    """``__version__`` at the release's clean commit; otherwise ``<version>+<commits since it>.g<commit>``
    (``+g<commit>`` when the release's commit is not an ancestor or unknown), ``.dirty`` for changed code."""
    commit = commit_of(root)
    if commit == "unknown":
        return __version__
    sha, dirty = commit.removesuffix("-dirty"), commit.endswith("-dirty")
    try:
        release = release_commit(f"v{__version__}", root)
    except BenchError:
        release = None
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


__all__ = ["RELEASES_FILE", "cited_release", "current", "describe", "registered_releases", "release_commit"]
