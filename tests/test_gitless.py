"""bench.gitless: a copy without .git names its commit by a manifest checked against its files, as git would."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import check, gitless, tracking

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True,
                          check=True).stdout.strip()


def make_repo(root: Path, files: dict[str, bytes], executable: tuple[str, ...] = (),
              links: dict[str, str] | None = None) -> str:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    for path, data in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if path in executable:
            p.chmod(p.stat().st_mode | stat.S_IXUSR)
    for path, target in (links or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / path)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "x")
    return git(root, "rev-parse", "HEAD")


def copy_without_git(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return dst


FILES = {"bench/a.py": b"print(1)\n", "bench/sub/b.py": b"x = 2\n", "bench/sub.py": b"", "bench-x": b"y",
         "run.sh": b"#!/bin/sh\necho\n", "docs/leaderboard/runs/cora.jsonl": b"{}\n", "README.md": b"# r\n"}


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    commit = make_repo(root, FILES, executable=("run.sh",), links={"bench/link.py": "a.py"})
    return root, commit


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=300))
def test_blob_id_is_gits(data: bytes) -> None:
    out = subprocess.run(["git", "hash-object", "--stdin"], input=data, capture_output=True, check=True)
    assert gitless.blob_id(data) == out.stdout.decode().strip()


NAME = st.text(alphabet="ab.-_", min_size=1, max_size=3).filter(lambda s: s not in (".", ".."))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(NAME, min_size=1, max_size=3), min_size=1, max_size=8))
def test_tree_id_is_gits(tmp_path_factory, paths: list[list[str]]) -> None:
    """Names that sort differently as files and as directories ('a' vs 'a.b' vs 'a-'): git's tree order."""
    files: dict[str, bytes] = {}
    for parts in paths:
        path = "/".join(parts)
        if any(path.startswith(f + "/") or f.startswith(path + "/") or f == path for f in files):
            continue  # a file cannot also be a directory
        files[path] = path.encode()
    root = tmp_path_factory.mktemp("t")
    make_repo(root, files)
    blobs = [("100644", p, gitless.blob_id(d)) for p, d in files.items()]
    assert gitless.tree_id(blobs) == git(root, "rev-parse", "HEAD^{tree}")


def test_copy_without_git_names_the_commit(repo, tmp_path: Path) -> None:
    root, commit = repo
    gitless.write_manifest("HEAD", repo=root)
    data = json.loads((root / gitless.MANIFEST).read_text())
    assert data["commit"] == commit and data["tree"] == git(root, "rev-parse", "HEAD^{tree}")
    assert not any(p.startswith("docs/") for _, p, _ in data["files"])
    copy = copy_without_git(root, tmp_path / "copy")
    assert tracking.commit_of(copy) == commit
    assert gitless.manifest_commit(copy) == (commit, data["tree"])
    # results may change under docs/ (a sweep appends to its export): still the commit
    (copy / "docs/leaderboard/runs/cora.jsonl").write_text('{"a": 1}\n')
    (copy / "docs/new.md").write_text("n")
    assert tracking.commit_of(copy) == commit
    # the executable bit is the manifest's (a copy may not keep it)
    (copy / "run.sh").chmod(0o644)
    assert tracking.commit_of(copy) == commit


@pytest.mark.parametrize("change", ["edit", "remove", "relink"])
def test_a_changed_code_file_is_dirty(repo, tmp_path: Path, change: str) -> None:
    root, commit = repo
    gitless.write_manifest("HEAD", repo=root)
    copy = copy_without_git(root, tmp_path / "copy")
    if change == "edit":
        (copy / "bench/sub/b.py").write_text("x = 3\n")
    elif change == "remove":
        (copy / "README.md").unlink()
    else:
        (copy / "bench/link.py").unlink()
        os.symlink("sub.py", copy / "bench/link.py")
    found, tree = gitless.manifest_commit(copy)
    assert found == commit + "-dirty"
    assert tree != git(root, "rev-parse", "HEAD^{tree}")
    assert tracking.commit_of(copy) == commit + "-dirty"


def test_no_manifest_is_unknown_and_env_names_one(repo, tmp_path: Path, monkeypatch) -> None:
    root, commit = repo
    copy = copy_without_git(root, tmp_path / "copy")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git must not find an enclosing repository
    assert tracking.commit_of(copy) == "unknown"
    elsewhere = gitless.write_manifest("HEAD", repo=root, out=tmp_path / "m.json")
    monkeypatch.setenv(gitless.ENV, str(elsewhere))
    assert tracking.commit_of(copy) == commit


def _record(commit: str, tree: str | None) -> dict:
    return {"git_commit": commit, **({"code_tree": tree} if tree else {})}


def test_release_check_compares_the_tree_with_the_commits(repo, tmp_path: Path) -> None:
    """A manifest naming a commit its files do not hash to: the record's tree is not the commit's tree."""
    root, commit = repo
    commits = check._Commits(root)
    good = git(root, "rev-parse", "HEAD^{tree}")
    assert check._check_commit(_record(commit, good), commits, None, release=("v", commit)) == []
    # forge: the manifest of a modified tree relabelled with the commit id
    (root / "bench/a.py").write_text("print('changed')\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "y")
    forged = gitless.write_manifest("HEAD", repo=root)
    data = json.loads(forged.read_text())
    data["commit"] = commit
    forged.write_text(json.dumps(data))
    copy = copy_without_git(root, tmp_path / "copy")
    found, tree = gitless.manifest_commit(copy)
    assert found == commit  # the manifest agrees with itself ...
    problems = check._check_commit(_record(found, tree), commits, None, release=("v", commit))
    assert problems and "hash to tree" in problems[0]  # ... but not with the commit's tree


def test_regenerate_checks_a_copy_by_its_manifest(repo, tmp_path: Path) -> None:
    from bench.studies import regenerate

    root, commit = repo
    git(root, "tag", "v9")
    gitless.write_manifest("v9", repo=root)
    copy = copy_without_git(root, tmp_path / "copy")
    assert regenerate.ref_commit("v9", copy) == commit
    assert regenerate.ref_commit(commit, copy) == commit
    with pytest.raises(regenerate.Refused, match="no commit manifest of v8"):
        regenerate.ref_commit("v8", copy)
    assert regenerate.checkout_problems(commit, "v9", copy) == []
    (copy / "bench/a.py").write_text("print(2)\n")
    problems = regenerate.checkout_problems(commit, "v9", copy)
    assert problems and "-dirty" in problems[0]


def test_cli_refuses_a_bad_ref(tmp_path: Path, capsys) -> None:
    assert gitless.main(["no-such-ref", "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.json").exists()
