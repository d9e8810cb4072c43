"""Which commit a checkout is, where it has no ``.git``: a manifest of the commit's tree, checked file by file.

A copy of the work tree without its git directory (a lent accelerator's machine gets one) cannot ask git which commit
it is, so its records would name an ``unknown`` commit and fail ``bench leaderboard --check --release``. Where git
exists, ``python -m bench.gitless REF`` writes :data:`MANIFEST` (git-ignored; carry it with the copy): the commit id,
its root tree id, the mode and blob id of every tracked path outside :data:`NOT_CODE`, and the object
ids of the ``NOT_CODE`` top-level entries (results, which never make a record dirty).

On the copy, :func:`manifest_commit` hashes every listed code file as git would (``blob <size>\\0<bytes>``, a
symlink's target for a link), rebuilds the root tree id from those blob ids and the listed ``NOT_CODE`` entries, and
names the manifest's commit when that id is the manifest's tree id, the commit with ``-dirty`` otherwise (a missing
or changed file). As with git's own rule (:func:`bench.tracking.commit_of`), untracked files are not looked at, and a
file's mode is the manifest's (a copy may not keep the executable bit; its bytes are what runs).

The manifest is not trusted: the tree id rebuilt from the files travels with each record (``code_tree``) and the
release check compares it with ``git rev-parse COMMIT^{tree}`` where the history exists
(:func:`bench.check.release_commit` and ``_check_commit``). A manifest that names a commit its files do not hash to
yields a tree id that commit does not have.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: tracked paths no run reads: published results and documentation. A sweep appends to its export under docs/ as
#: it goes, so counting them would mark every run after the first of a committed grid ``-dirty``
NOT_CODE = ("docs",)
#: the manifest's file name at a checkout's root (``BENCH_COMMIT_MANIFEST`` names another path)
MANIFEST = ".commit-manifest.json"
ENV = "BENCH_COMMIT_MANIFEST"
SCHEMA = 1
TREE_MODE = "40000"


def blob_id(data: bytes) -> str:
    """git's object id of a blob with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _tree_id(entries: dict[str, tuple[str, str]]) -> str:
    """git's object id of a tree of ``name -> (mode, object id)``; git sorts a subtree as if its name ended in '/'."""
    def key(name: str) -> bytes:
        return name.encode() + (b"/" if entries[name][0] == TREE_MODE else b"")

    body = b"".join(f"{entries[n][0]} {n}".encode() + b"\0" + bytes.fromhex(entries[n][1])
                    for n in sorted(entries, key=key))
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


def tree_id(blobs: list[tuple[str, str, str]], subtrees: list[tuple[str, str]] = ()) -> str:
    """The root tree id of ``blobs`` (mode, path, blob id) and whole ``subtrees`` (path, tree id) given by id."""
    root: dict[str, Any] = {}
    for mode, path, oid in [*blobs, *((TREE_MODE, p, o) for p, o in subtrees)]:
        *dirs, name = path.split("/")
        node = root
        for d in dirs:
            node = node.setdefault(d, {})
        node[name] = (mode, oid)

    def walk(node: dict[str, Any]) -> str:
        return _tree_id({n: (TREE_MODE, walk(v)) if isinstance(v, dict) else v for n, v in node.items()})

    return walk(root)


def _file_blob(path: Path, mode: str) -> str | None:
    """The blob id of the file at ``path`` as a tree of ``mode`` holds it; None when it is missing."""
    try:
        if mode == "120000":
            return blob_id(os.readlink(path).encode())
        return blob_id(path.read_bytes())
    except OSError:
        return None


def write_manifest(ref: str = "HEAD", repo: Path | None = None, out: Path | None = None) -> Path:
    """Write the manifest of ``ref``'s commit (its tree as git stores it); the path written."""
    repo = Path(repo) if repo is not None else Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        r = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise ValueError(f"git {' '.join(args)}: {r.stderr.strip() or 'failed'}")
        return r.stdout

    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}").strip()
    tree = git("rev-parse", f"{commit}^{{tree}}").strip()
    files, results = [], []
    for line in git("ls-tree", "-r", "-z", "--full-tree", commit).split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        mode, kind, oid = meta.split()
        if kind != "blob":
            raise ValueError(f"{path}: a {kind} entry (submodules are not supported)")
        if path.split("/", 1)[0] not in NOT_CODE:
            files.append([mode, path, oid])
    for line in git("ls-tree", "-z", "--full-tree", commit).split("\0"):
        if line and line.split("\t", 1)[1] in NOT_CODE:
            meta, path = line.split("\t", 1)
            mode, _, oid = meta.split()
            results.append([path, mode.lstrip("0"), oid])  # ls-tree prints a tree's mode as 040000, a tree 40000
    data = {"schema": SCHEMA, "ref": ref, "commit": commit, "tree": tree, "files": files, "results": results}
    out = Path(out) if out is not None else repo / MANIFEST
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")))
    tmp.replace(out)
    return out


def manifest_path(root: Path) -> Path | None:
    p = Path(os.environ[ENV]) if os.environ.get(ENV) else Path(root) / MANIFEST
    return p if p.is_file() else None


def _verify(root: Path, manifest: Path) -> tuple[str, str]:
    data = json.loads(manifest.read_text())
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{manifest}: schema {data.get('schema')!r}, this code reads {SCHEMA}")
    blobs = []
    for mode, path, _recorded in data["files"]:
        found = _file_blob(root / path, mode)
        blobs.append((mode, path, found or "0" * 40))
    subtrees = []
    for path, mode, oid in data["results"]:
        if mode == TREE_MODE:
            subtrees.append((path, oid))
        else:
            blobs.append((mode, path, oid))
    tree = tree_id(blobs, subtrees)
    return data["commit"] + ("" if tree == data["tree"] else "-dirty"), tree


def manifest_commit(root: Path) -> tuple[str, str] | None:
    """(commit, code tree id) of a checkout without git from its manifest: the commit, ``-dirty`` when the files do
    not hash to the commit's tree; None without a manifest."""
    manifest = manifest_path(root)
    if manifest is None:
        return None
    return _verify(Path(root).resolve(), manifest.resolve())


def commit_of(root: Path) -> str:
    """HEAD's commit of the checkout at ``root``, with ``-dirty`` when a tracked file outside :data:`NOT_CODE`
    differs from it (:func:`bench.tracking.git_commit`); without ``.git``, the commit its manifest names, checked
    against its files (:func:`manifest_commit`); "unknown" when neither says."""
    if not (Path(root) / ".git").exists():
        found = manifest_commit(Path(root))
        if found is not None:
            return found[0]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                *(f":(exclude){p}" for p in NOT_CODE)], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not sha:
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.gitless",
                                description="Write the commit manifest a copy without .git names its commit by.")
    p.add_argument("ref", nargs="?", default="HEAD", help="the tag or commit (default HEAD)")
    p.add_argument("--out", type=Path, default=None, help=f"where to write it (default REPO/{MANIFEST})")
    args = p.parse_args(argv)
    try:
        out = write_manifest(args.ref, out=args.out)
    except (ValueError, OSError, subprocess.SubprocessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    data = json.loads(out.read_text())
    print(f"{out}: {data['commit']} ({args.ref}), {len(data['files'])} code files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
