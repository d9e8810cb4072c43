"""``bench --version`` (bench.version): the release's number at its commit, and off it how far and which commit;
runs tag the same string."""

import json
import subprocess
import sys

from bench import __version__
from bench.version import current, describe
from tests.conftest import REPO, bench_env


def _git(root, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_version_names_the_commits_since_the_release_and_a_dirty_tree(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("repo")
    _git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("a = 1\n")
    _git(tmp_path, "add", "code.py")
    _git(tmp_path, "commit", "-qm", "release")
    release = _git(tmp_path, "rev-parse", "HEAD")
    _git(tmp_path, "tag", f"v{__version__}")
    assert describe(tmp_path) == __version__
    (tmp_path / "code.py").write_text("a = 2\n")
    assert describe(tmp_path) == f"{__version__}+0.g{release[:7]}.dirty"  # the release's commit, changed
    _git(tmp_path, "commit", "-qam", "work")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert describe(tmp_path) == f"{__version__}+1.g{head[:7]}"
    (tmp_path / "code.py").write_text("a = 3\n")
    assert describe(tmp_path) == f"{__version__}+1.g{head[:7]}.dirty"
    _git(tmp_path, "checkout", "-q", "code.py")
    # a clone without tags finds the release's commit where the published records name it
    _git(tmp_path, "tag", "-d", f"v{__version__}")
    assert describe(tmp_path) == f"{__version__}+g{head[:7]}"
    (tmp_path / "docs" / "leaderboard").mkdir(parents=True)
    (tmp_path / "docs" / "leaderboard" / "releases.json").write_text(json.dumps({f"v{__version__}": release}))
    assert describe(tmp_path) == f"{__version__}+1.g{head[:7]}"
    # no git at all: the package's number
    plain = tmp_path_factory.mktemp("copy")
    assert describe(plain) == __version__


def test_bench_version_prints_what_runs_and_their_records_carry():
    from bench import api, tracking

    out = subprocess.run([sys.executable, "-m", "bench", "--version"], capture_output=True, text=True, env=bench_env(),
                         cwd=REPO, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"bench {describe()}"
    [r] = api.run("mlp", "csbm:nodes=120,classes=3,features=8,degree=4", split="random-75-10-15", seeds=[0],
                  overrides={"epochs": 1}, experiment="version-test", log_release=False)
    assert tracking.client().get_run(r.run_id).data.tags["bench_version"] == current()
    from bench.records import record_for

    assert record_for(r.run_id)["tags"]["bench_version"] == current()  # and the export's record carries it
