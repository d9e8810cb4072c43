"""``bench leaderboard --check``: a published record that does not say what its contents say is caught, one way of
being wrong at a time, and the published export itself checks out."""

from __future__ import annotations

import copy
import json

import pytest

from bench.check import DIRTY_CUTOFF, check_export
from bench.cli import main
from bench.records import spent_epsilon
from tests.conftest import REPO

EXPORT = REPO / "docs" / "leaderboard" / "runs"
RELEASE = ["v1.0.2", "v1.1.0"]  # the releases the published export names; .ci/run checks against the same


def _published(kind: str, pred) -> dict:
    for f in sorted(EXPORT.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if rec["kind"] == kind and not rec["git_commit"].endswith("-dirty") and pred(rec):
                return rec
    pytest.skip(f"no clean {kind} record in the export")


@pytest.fixture(scope="module")
def good():
    """A real run record with attacks and a ledger recipe, and a real verification, both from clean commits; the run
    carries the unit count new runs log (20,000 nodes: the delta rule allows 1e-5)."""
    run = copy.deepcopy(_published("run", lambda r: r.get("attacks") and (r.get("ledger") or {}).get("recipe")
                                   and r["params"]["delta"] == "1e-05" and r["params"]["method"] == "dp-mlp"))
    run["params"]["privacy_units"] = "20000"
    ver = copy.deepcopy(_published("verify", lambda r: (r.get("verify") or {}).get("checks")))
    return run, ver


def _write(tmp_path, records, name="x.jsonl"):
    d = tmp_path / "runs"
    d.mkdir(exist_ok=True)
    (d / name).write_text("".join(json.dumps(r) + "\n" if isinstance(r, dict) else r for r in records))
    return d


def _set(rec, path, value):
    *head, last = path.split(".")
    cur = rec
    for k in head:
        cur = cur[k]
    if value is _DELETE:
        del cur[last]
    else:
        cur[last] = value


_DELETE = object()


def test_real_records_check_out(tmp_path, good, capsys):
    d = _write(tmp_path, list(good))
    report = check_export(d, count_units=False)
    assert report.ok and report.checked == 2 and report.epsilons == 1, report.failures
    assert main(["leaderboard", "--check", str(d)]) == 0
    assert "2 records (1 runs): 0 failing" in capsys.readouterr().out


def _eps_times(factor):
    return lambda rec: _set(rec, "metrics.epsilon", rec["metrics"]["epsilon"] * factor)


def _ledger_count(rec):
    rec["ledger"]["events"][0]["count"] += 7


RUN_CORRUPTIONS = {
    # the published epsilon is a checkpoint, below what the ledger spent (the DRW bug)
    "published epsilon": _eps_times(0.7),
    # the events no longer match what the recipe's family function builds
    "rebuilds": _ledger_count,
    "no ledger": lambda rec: _set(rec, "ledger", _DELETE),
    "delta 0.0001 is above the rule's 1e-05": lambda rec: _set(rec, "params.delta", "0.0001"),
    "exceeds the target": lambda rec: _set(rec, "params.target_epsilon", "0.5"),
    "is -dirty": lambda rec: (_set(rec, "git_commit", rec["git_commit"] + "-dirty"),
                              _set(rec, "start_time", DIRTY_CUTOFF + 1)),
    "not in this repository's history": lambda rec: _set(rec, "git_commit", "0123456789abcdef" * 2 + "01234567"),
    "is not a commit id": lambda rec: _set(rec, "git_commit", "unknown"),
    "no run_id": lambda rec: _set(rec, "run_id", _DELETE),
    "no params.delta": lambda rec: _set(rec, "params.delta", _DELETE),
    "no metrics.test_acc": lambda rec: _set(rec, "metrics.test_acc", _DELETE),
    "not a rate in [0, 1]": lambda rec: rec["attacks"][next(iter(rec["attacks"]))].__setitem__(
        "x", {"auc": 1.2, "tpr_at_1pct_fpr": 0.1}),
    "unknown kind": lambda rec: _set(rec, "kind", "runn"),
    "metrics.test_acc = 1.5 is not a rate in [0, 1]": lambda rec: _set(rec, "metrics.test_acc", 1.5),
    "metrics.epsilon = -1.0 is not a number >= 0": lambda rec: _set(rec, "metrics.epsilon", -1.0),
}


@pytest.mark.parametrize("factor, ok", [(1 + 4e-9, True), (1 - 4e-9, True), (1 + 1e-6, False), (1 - 1e-6, False)])
def test_published_epsilon_tolerates_cross_machine_rounding_only(tmp_path, good, factor, ok):
    # an accountant recomputed on another CPU differs in the last digits (4.1e-9 relative seen); more is a mismatch
    rec = copy.deepcopy(good[0])
    _eps_times(factor)(rec)
    report = check_export(_write(tmp_path, [rec]), count_units=False)
    assert report.ok == ok, report.failures
    assert ok or "published epsilon" in str(report.failures)


@pytest.mark.parametrize("what", sorted(RUN_CORRUPTIONS))
def test_each_corruption_of_a_run_record_fails_the_check(tmp_path, good, what, capsys):
    rec = copy.deepcopy(good[0])
    RUN_CORRUPTIONS[what](rec)
    d = _write(tmp_path, [good[1], rec])
    report = check_export(d, count_units=False)
    assert len(report.failures) == 1 and what in "; ".join(report.failures[0][1]), report.failures
    assert main(["leaderboard", "--check", str(d)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL ") and what in out and "1 failing" in out


VERIFY_CORRUPTIONS = {
    "is negative": lambda rec: rec["verify"]["checks"][0].__setitem__("epsilon_lb", -0.5),
    "alpha 1.5 is not in [0, 1]": lambda rec: rec["verify"]["checks"][0].__setitem__("alpha", 1.5),
    "is not PASS, VIOLATION, INCONCLUSIVE or NOT APPLICABLE": lambda rec: rec["verify"].__setitem__("verdict", "MAYBE"),
}


@pytest.mark.parametrize("what", sorted(VERIFY_CORRUPTIONS))
def test_each_corruption_of_a_verification_fails_the_check(tmp_path, good, what):
    rec = copy.deepcopy(good[1])
    VERIFY_CORRUPTIONS[what](rec)
    report = check_export(_write(tmp_path, [good[0], rec]), count_units=False)
    assert len(report.failures) == 1 and what in "; ".join(report.failures[0][1]), report.failures


def test_a_duplicated_line_and_a_second_record_of_one_cell_fail(tmp_path, good):
    run, ver = good
    report = check_export(_write(tmp_path, [run, ver, run]), count_units=False)
    assert [w for w, _ in report.failures] == [f"{tmp_path / 'runs' / 'x.jsonl'}:3 {run['name']}"]
    assert "duplicate of" in report.failures[0][1][-1]
    other = {**copy.deepcopy(run), "run_id": "f" * 32}  # another run of the same cell: it overrides the first
    report = check_export(_write(tmp_path, [run, ver, other]), count_units=False)
    assert len(report.failures) == 1 and "overrides the other on the page" in report.failures[0][1][-1]
    other["status"] = "FAILED"  # a failed attempt beside its finished one is no published number
    assert check_export(_write(tmp_path, [run, ver, other]), count_units=False).ok


def test_a_record_missing_from_the_grid_its_config_plans_fails(tmp_path, good, capsys):
    from bench.sweep.config import load_config

    config = tmp_path / "grid.yaml"
    config.write_text("experiment: g\ndatasets: [cora]\nsplits: [random-75-10-15]\nseeds: [0, 1]\n"
                      "methods:\n  - {name: dp-mlp, epsilons: [4]}\n")
    cells = [c for c in load_config(config).cells if c.skip is None]
    assert len(cells) == 2
    recs = [{**copy.deepcopy(good[0]), "cell_id": c.cell_id, "run_id": f"{i}" * 32} for i, c in enumerate(cells)]
    assert check_export(_write(tmp_path, recs), count_units=False, config=config).ok
    d = _write(tmp_path, recs[:1])  # a deleted record: every line left checks out
    assert check_export(d, count_units=False).ok
    report = check_export(d, count_units=False, config=config)
    assert len(report.failures) == 1 and cells[1].label in report.failures[0][1][0], report.failures
    assert main(["leaderboard", "--check", str(d), "--config", str(config)]) == 1
    assert "1 of its 2 cells have no finished record" in capsys.readouterr().out


def test_a_broken_line_and_an_old_dirty_record(tmp_path, good):
    old = copy.deepcopy(good[0])
    old["git_commit"] += "-dirty"
    old["start_time"] = DIRTY_CUTOFF - 1  # before the rule: counted, regenerated later, not failed
    report = check_export(_write(tmp_path, [old, '{"cell_id": "trunc\n']), count_units=False)
    assert report.legacy_dirty == 1
    assert [p for _, p in report.failures] == [["not a JSON record"]]


def test_a_missing_export_is_bad_input(tmp_path, capsys):
    assert main(["leaderboard", "--check", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "not found" in err[0]


def test_the_delta_rule_counts_units_on_the_dataset_for_older_records(tmp_path, good):
    """A record without privacy_units has its unit count taken from its dataset and split (csbm needs no files)."""
    rec = copy.deepcopy(good[0])
    del rec["params"]["privacy_units"]
    rec["params"].update(dataset="csbm:nodes=500,classes=3", split="random-75-10-15", privacy_unit="node")
    report = check_export(_write(tmp_path, [rec]))  # 500 nodes: the rule allows 1e-3, the record's 1e-5 is below
    assert report.ok, report.failures
    rec["params"]["delta"] = "0.01"
    rec["metrics"]["epsilon"] = spent_epsilon(rec)  # consistent with its ledger at that delta: only the rule fails
    report = check_export(_write(tmp_path, [rec]))
    assert [p for _, p in report.failures] == [["delta 0.01 is above the rule's 0.001 for 500 privacy units"]]


@pytest.mark.slow
def test_the_published_export_checks_out():
    """What CI publishes: every record's epsilon is its ledger's, its recipe rebuilds it, deltas follow the rule,
    attacks are rates, and every record names the release's commit, clean. Slow (about a minute) and out of the
    default run: ``.ci/run`` runs the same check, with the delta rule's unit counts, as ``bench leaderboard --check
    docs/leaderboard/runs --release v1.0.2`` right after the tests."""
    report = check_export(EXPORT, count_units=False, release=RELEASE)
    assert report.ok, "\n".join(f"{w}: {'; '.join(p)}" for w, p in report.failures[:20])
    assert report.runs > 1000 and report.epsilons == report.runs
    assert report.strict and report.legacy_dirty == 0


def test_a_run_is_dirty_when_code_differs_from_its_commit_not_when_results_do(tmp_path):
    """A sweep appends to its export under docs/ as it runs: that alone must not make its records -dirty."""
    import subprocess

    from bench.tracking import commit_of

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runs.jsonl").write_text("{}\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    sha = commit_of(tmp_path)
    assert len(sha) == 40 and not sha.endswith("-dirty")
    (tmp_path / "docs" / "runs.jsonl").write_text("{}\n{}\n")
    assert commit_of(tmp_path) == sha
    (tmp_path / "code.py").write_text("x = 2\n")
    assert commit_of(tmp_path) == sha + "-dirty"


ATTACKS = REPO / "docs" / "leaderboard" / "attacks"


def _edge_record(commit: str) -> dict:
    return {"kind": "edge-attack", "cell_id": "e1", "run_id": "r1", "name": "edge-attacks/x", "status": "FINISHED",
            "git_commit": commit, "start_time": DIRTY_CUTOFF + 1, "target_config_hash": "h",
            "attacked_model": "recorded artefact",
            "params": {"method": "edgerand", "dataset": "cora", "split": "random-75-10-15", "seed": "0",
                       "privacy_unit": "edge", "target_epsilon": "1.0", "delta": "0.0001"},
            "attacks": {"link-stealing": {"cosine": {"auc": 0.8, "tpr_at_1pct_fpr": 0.2, "tp": 100, "members": 500,
                                                     "fp": 5, "non_members": 500}}}}


EDGE_CORRUPTIONS = {
    "not a rate in [0, 1]": lambda v: v.__setitem__("auc", 1.3),
    "but the counts give 100/500": lambda v: v.__setitem__("tpr_at_1pct_fpr", 0.25),
    "above 1% FPR": lambda v: v.__setitem__("fp", 9),
    # an attack on one model is no game between neighbouring datasets: no epsilon may ride along its rates
    "carries implied_epsilon: an attack on one model bounds no epsilon":
        lambda v: v.__setitem__("implied_epsilon", 1.2),
    "counts missing": lambda v: v.pop("members"),
}


@pytest.mark.parametrize("model", [None, "a refit, probably", ""])
def test_a_unit_attack_record_must_say_which_model_it_attacked(tmp_path, good, model):
    rec = _edge_record(good[0]["git_commit"])
    if model is None:
        rec.pop("attacked_model")
    else:
        rec["attacked_model"] = model
    report = check_export(_write(tmp_path, [rec]), count_units=False)
    assert len(report.failures) == 1 and "does not say which model was attacked" in report.failures[0][1][0]


def test_a_legacy_attack_record_fails_until_relabelled_as_a_refit(tmp_path, good):
    from bench.leaderboard import rows as leaderboard
    from bench.studies.relabel_legacy_attacks import relabel_file

    rec = _edge_record(good[0]["git_commit"])
    rec.pop("attacked_model")
    rec["reproduces_run"] = True
    rec["implied_epsilon_rule"] = "Clopper-Pearson at TPR@1%FPR"
    rec["attacks"]["link-stealing"]["cosine"]["implied_epsilon"] = 0.7
    path = _write(tmp_path, [rec])
    assert not check_export(path, count_units=False).ok
    assert relabel_file(path / "x.jsonl") == 1
    report = check_export(path, count_units=False)
    assert report.ok, report.failures
    (out,) = [json.loads(x) for x in (path / "x.jsonl").read_text().splitlines()]
    assert leaderboard.attacked_model(out) == leaderboard.SOURCE_OTHER  # never shown as the recorded run
    assert out["relabelled"]["implied_epsilons_dropped"] == 1
    assert out["attacks"]["link-stealing"]["cosine"]["auc"] == 0.8  # the measured rates stay
    assert relabel_file(path / "x.jsonl") == 0


def _feature_record(commit: str) -> dict:
    rec = _edge_record(commit)
    rec.update(kind="feature-attack", name="feature-attacks/x", attacks={"attribute-inference": {
        "paired": rec["attacks"]["link-stealing"]["cosine"]}})
    rec["params"].update(method="drw", privacy_unit="feature", target_epsilon="8.0")
    return rec


@pytest.mark.parametrize("kind", ["edge", "feature"])
@pytest.mark.parametrize("what", sorted(EDGE_CORRUPTIONS))
def test_unit_attack_records_check_out_and_each_corruption_fails(tmp_path, good, what, kind):
    rec = (_edge_record if kind == "edge" else _feature_record)(good[0]["git_commit"])
    assert check_export(_write(tmp_path, [rec]), count_units=False).ok
    EDGE_CORRUPTIONS[what](next(iter(next(iter(rec["attacks"].values())).values())))
    report = check_export(_write(tmp_path, [rec]), count_units=False)
    assert len(report.failures) == 1 and what in "; ".join(report.failures[0][1]), report.failures


def test_the_published_unit_attacks_check_out():
    if not ATTACKS.is_dir():
        pytest.skip("no published unit attacks")
    report = check_export(ATTACKS, count_units=False)
    assert report.ok, "\n".join(f"{w}: {'; '.join(p)}" for w, p in report.failures[:20])
    assert report.checked > 0 and report.legacy_dirty == 0


def _whitebox_record(commit: str) -> dict:
    return {"kind": "whitebox-audit", "cell_id": "w1", "run_id": "r1", "name": "whitebox/x", "status": "FINISHED",
            "git_commit": commit, "start_time": DIRTY_CUTOFF + 1, "target_config_hash": "h",
            "params": {"method": "gap-edge", "dataset": "cora", "split": "random-75-10-15", "seed": "0",
                       "privacy_unit": "edge", "target_epsilon": "4.0", "delta": "0.0001"},
            "whitebox": {"source": "composed", "epsilon_lb_cp": 1.5, "ratio_cp": 0.375, "epsilon_lb_fdp": 3.5,
                         "ratio_fdp": 0.875, "fdp_assumes": "GDP", "claimed": 4.0}}


WHITEBOX_CORRUPTIONS = {
    "white-box verdict VIOLATION (the realised pair": lambda w: w.update(
        verdict="VIOLATION", reason="the realised pair's exact epsilon 5 exceeds the claim 4"),
    "epsilon_lb_fdp 4.5 exceeds the claim": lambda w: w.update(epsilon_lb_fdp=4.5, ratio_fdp=1.125),
    "epsilon_lb_cp -1.0 is not >= 0": lambda w: w.update(epsilon_lb_cp=-1.0),
    "epsilon_lb_cp None is not >= 0": lambda w: w.pop("epsilon_lb_cp"),
    "neither composed nor pooled": lambda w: w.update(source="guess"),
    "but epsilon_lb_fdp / claimed is": lambda w: w.update(ratio_fdp=0.5),
    "fdp_assumes is missing": lambda w: w.pop("fdp_assumes"),
    "pair epsilon 5 exceeds the claim 4 but the verdict is 'PASS'": lambda w: w.update(pair_epsilon=5.0,
                                                                                         verdict="PASS"),
}


@pytest.mark.parametrize("what", sorted(WHITEBOX_CORRUPTIONS))
def test_whitebox_records_check_out_and_each_corruption_fails(tmp_path, good, what):
    rec = _whitebox_record(good[0]["git_commit"])
    assert check_export(_write(tmp_path, [rec]), count_units=False).ok
    WHITEBOX_CORRUPTIONS[what](rec["whitebox"])
    report = check_export(_write(tmp_path, [rec]), count_units=False)
    assert len(report.failures) == 1 and what in "; ".join(report.failures[0][1]), report.failures


def test_strict_fails_the_legacy_dirty_records_the_default_check_counts(tmp_path, good, capsys):
    """``--strict``: a record from before the clean-commit rule that names a -dirty commit fails (the default counts
    it); so do an unknown commit and a missing one, each on its record's line."""
    old = copy.deepcopy(good[0])
    old["git_commit"] += "-dirty"
    old["start_time"] = DIRTY_CUTOFF - 1
    d = _write(tmp_path, [good[1], old])
    assert check_export(d, count_units=False).ok
    report = check_export(d, count_units=False, strict=True)
    assert report.legacy_dirty == 0 and [p for _, p in report.failures] == [
        [f"commit {good[0]['git_commit'][:12]} is -dirty: the code that ran cannot be checked out"]]
    assert main(["leaderboard", "--check", str(d)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "--check", str(d), "--strict"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len([x for x in out if x.startswith("FAIL ")]) == 1 and "is -dirty" in out[0]
    assert "# strict: every record must name a clean commit of this history (no legacy exemption)" in out
    unknown, missing = copy.deepcopy(old), copy.deepcopy(old)
    unknown["git_commit"] = "0123456789abcdef" * 2 + "01234567-dirty"
    missing["git_commit"] = ""
    missing["run_id"], missing["cell_id"] = "e" * 32, "e" * 16  # another cell: no duplicate
    report = check_export(_write(tmp_path, [good[1], unknown, missing]), count_units=False, strict=True)
    assert [p for _, p in report.failures] == [
        ["commit 0123456789ab is not in this repository's history",
         "commit 0123456789ab is -dirty: the code that ran cannot be checked out"],
        ["no git_commit"]]


def _tagged_repo(tmp_path):
    """A git repository with a tag ``v1`` on its first commit and a second commit after it: (repo, tag sha, later
    sha)."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    for i in range(2):
        (repo / "f").write_text(str(i))
        git("add", "f")
        git("commit", "-qm", str(i))
        if i == 0:
            git("tag", "-a", "v1", "-m", "release")  # annotated: the check peels it to its commit
    return repo, git("rev-parse", "v1^{commit}"), git("rev-parse", "HEAD")


def test_release_requires_every_record_to_name_the_tags_clean_commit(tmp_path, good, monkeypatch, capsys):
    import bench.check

    repo, tagged, later = _tagged_repo(tmp_path)
    recs = []
    for commit in (tagged, later, tagged + "-dirty"):
        run, ver = copy.deepcopy(good)
        run["git_commit"] = ver["git_commit"] = commit
        run["cell_id"], ver["cell_id"] = run["cell_id"] + commit[-6:], ver["cell_id"] + commit[-6:]
        recs.append([run, ver])
    d = _write(tmp_path, recs[0])
    report = check_export(d, repo=repo, count_units=False, release="v1")
    assert report.ok and report.strict and report.release == f"v1 ({tagged[:12]})", report.failures
    assert check_export(_write(tmp_path, recs[1]), repo=repo, count_units=False).ok  # in history: the default passes
    report = check_export(_write(tmp_path, recs[1]), repo=repo, count_units=False, release="v1")
    assert [p for _, p in report.failures] == [[f"commit {later[:12]} is not the release v1's commit {tagged[:12]}"]] * 2
    report = check_export(_write(tmp_path, recs[2]), repo=repo, count_units=False, release="v1")
    assert [p for _, p in report.failures] == [[f"commit {tagged[:12]} is -dirty: the code that ran cannot be "
                                                "checked out"]] * 2
    monkeypatch.setattr(bench.check, "REPO", repo)
    assert main(["leaderboard", "--check", str(_write(tmp_path, recs[0])), "--release", "v1"]) == 0
    assert f"# release v1 ({tagged[:12]}): every record must name this commit, clean" in capsys.readouterr().out
    assert main(["leaderboard", "--check", str(_write(tmp_path, recs[1])), "--release", "v1"]) == 1
    assert capsys.readouterr().out.count("is not the release v1's commit") == 2


def test_a_release_without_its_tag_is_the_commit_citation_cff_names(tmp_path, good):
    """A clone without tags checks a release by CITATION.cff's ``commit`` of the same version; a CITATION.cff of
    another version, a malformed commit, or a tag that disagrees with it does not pass."""
    import subprocess

    from bench.check import cited_release, release_commit
    from methods.errors import BenchError

    repo, tagged, later = _tagged_repo(tmp_path)
    cff = repo / "CITATION.cff"
    assert cited_release(repo) is None
    cff.write_text(f"cff-version: 1.2.0\nversion: 1.0.0\ncommit: {tagged}\n")
    assert cited_release(repo) == ("1.0.0", tagged)
    with pytest.raises(BenchError, match="no git tag 'v2' in .* and CITATION.cff names no commit of it"):
        release_commit("v2", repo)  # CITATION.cff names 1.0.0's commit, not 2's
    assert release_commit("v1.0.0", repo) == release_commit("1.0.0", repo) == tagged
    run, ver = copy.deepcopy(good)
    run["git_commit"] = ver["git_commit"] = tagged
    report = check_export(_write(tmp_path, [run, ver]), repo=repo, count_units=False, release="v1.0.0")
    assert report.ok and report.release == f"v1.0.0 ({tagged[:12]})", report.failures
    cff.write_text(f"version: 1.0.0\ncommit: {later}\n")
    subprocess.run(["git", "tag", "v1.0.0", tagged], cwd=repo, check=True)
    with pytest.raises(BenchError, match=f"the git tag is {tagged[:12]} but CITATION.cff names {later[:12]}"):
        release_commit("v1.0.0", repo)
    cff.write_text(f"version: 1.0.0\ncommit: {tagged[:12]}\n")  # not a full commit id: ignored
    assert cited_release(repo) is None and release_commit("v1.0.0", repo) == tagged


def test_a_site_of_two_releases_checks_each_record_against_either_and_reads_the_register(tmp_path, good):
    """A site whose rows come from two releases (a release that regenerated some methods' rows): each record names
    one of the releases' clean commits; a clone without tags reads both from docs/leaderboard/releases.json, and a
    register that disagrees with a tag is refused."""
    import subprocess

    from bench.check import RELEASES_FILE, registered_releases, release_commit
    from methods.errors import BenchError

    repo, first, second = _tagged_repo(tmp_path)
    subprocess.run(["git", "tag", "v2", second], cwd=repo, check=True)
    recs = []
    for commit in (first, second):
        run, ver = copy.deepcopy(good)
        run["git_commit"] = ver["git_commit"] = commit
        run["cell_id"], ver["cell_id"] = run["cell_id"] + commit[-6:], ver["cell_id"] + commit[-6:]
        run["run_id"], ver["run_id"] = run["run_id"][:26] + commit[-6:], ver["run_id"][:26] + commit[-6:]
        recs += [run, ver]
    d = _write(tmp_path, recs)
    report = check_export(d, repo=repo, count_units=False, release=["v1", "v2"])
    assert report.ok and report.release == f"v1 ({first[:12]}), v2 ({second[:12]})", report.failures
    report = check_export(d, repo=repo, count_units=False, release=["v1"])
    assert [p for _, p in report.failures] == [[f"commit {second[:12]} is not the release v1's commit {first[:12]}"]] * 2
    subprocess.run(["git", "tag", "-d", "v1", "v2"], cwd=repo, check=True, capture_output=True)
    with pytest.raises(BenchError, match="no git tag 'v2'"):
        release_commit("v2", repo)
    (repo / RELEASES_FILE).parent.mkdir(parents=True)
    (repo / RELEASES_FILE).write_text(json.dumps({"v1": first, "v2": second, "bad": "123"}))
    assert registered_releases(repo) == {"v1": first, "v2": second}
    assert check_export(d, repo=repo, count_units=False, release=["v1", "v2"]).ok
    subprocess.run(["git", "tag", "v2", first], cwd=repo, check=True)
    with pytest.raises(BenchError, match=f"the git tag is {first[:12]} but .*releases.json names {second[:12]}"):
        release_commit("v2", repo)


def test_release_of_a_missing_tag_and_strict_without_history_are_bad_input(tmp_path, good, monkeypatch, capsys):
    import bench.check

    repo, _, _ = _tagged_repo(tmp_path)
    d = _write(tmp_path, list(good))
    monkeypatch.setattr(bench.check, "REPO", repo)
    assert main(["leaderboard", "--check", str(d), "--release", "v9"]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --release v9: no git tag 'v9'") and not cap.out
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setattr(bench.check, "REPO", plain)  # not a git work tree: the default notes it, strict refuses
    assert main(["leaderboard", "--check", str(d)]) == 0
    assert main(["leaderboard", "--check", str(d), "--strict"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: --strict checks every commit")
    assert main(["leaderboard", "--strict"]) == 2


def _dataset(rec: dict) -> str | None:
    return (rec.get("params") or {}).get("dataset") or (rec.get("tags") or {}).get("dataset")


def test_a_regenerated_dataset_holds_only_records_of_the_cited_release():
    """A dataset whose regeneration retired its older records (a done ``retire`` step in a progress file of the site:
    ``regeneration.json``, or ``regeneration-<ref>.json`` of a release that regenerated only some methods) publishes
    runs, verifications and attacks of that release's clean commit only: for each record, the latest regeneration
    that covers its dataset and method, whose commit is a registered release (``docs/leaderboard/releases.json``;
    the newest is the one ``CITATION.cff`` cites). Cheap (no epsilon is recomputed) and needs no git history, so it
    holds part-way through a regeneration, on every clone."""
    from bench.check import cited_release, registered_releases

    files = sorted(EXPORT.parent.glob("regeneration*.json"))
    if not files:
        pytest.skip("no regeneration in progress or done")
    progresses = sorted((json.loads(f.read_text()) for f in files), key=lambda p: p["started"])
    releases = registered_releases(REPO)
    cited = cited_release(REPO)
    if cited is None:
        pytest.skip("CITATION.cff names no commit (the release commit itself, before it is cited)")
    assert releases.get(f"v{cited[0]}") == cited[1], (cited, releases)
    assert progresses[-1]["commit"] == cited[1], "the newest regeneration is of the cited release"
    covers = []
    for prog in progresses:
        assert prog["commit"] in releases.values(), f"regeneration of {prog['ref']} is not a registered release"
        regenerated = {k.split("/")[0] for k, v in prog["steps"].items()
                       if k.split("/")[1] == "retire" and v["status"] == "done"}
        assert regenerated, "a progress file without a done retire step"
        covers.append((regenerated, set(prog["methods"]) if prog.get("methods") else None, prog["commit"]))

    def expected(rec: dict) -> str | None:
        method = (rec.get("params") or {}).get("method") or rec.get("method")
        want = None
        for datasets, methods, commit in covers:
            if _dataset(rec) in datasets and (methods is None or method in methods):
                want = commit
        return want

    seen, other = {}, []
    for f in [*sorted(EXPORT.glob("*.jsonl")), *sorted(ATTACKS.glob("*.jsonl"))]:
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            want = expected(rec)
            if want is not None:
                seen[_dataset(rec)] = seen.get(_dataset(rec), 0) + 1
                if rec["git_commit"] != want:
                    other.append(f"{f.name} {rec.get('name')}: {rec['git_commit']}")
    assert not other, f"{len(other)} records of regenerated datasets name another commit: {other[:10]}"
    # every dataset retired and then trained has published records (a retire alone may leave none yet)
    for prog in progresses:
        trained = {k.split("/")[0] for k, v in prog["steps"].items()
                   if k.split("/")[1] == "train" and v["status"] == "done"}
        assert trained <= set(seen), trained - set(seen)


def test_the_manifest_catches_a_deleted_added_or_edited_record(tmp_path, good, capsys):
    """Edits no single record shows (an accuracy moved within [0, 1], a deleted line, an added one) fail against the
    manifest written when the page was built; the export it describes checks out."""
    from bench import manifest

    run, ver = good
    other = {**copy.deepcopy(run), "run_id": "e" * 32, "cell_id": "c" * 16}
    d = _write(tmp_path, [run, ver, other])
    assert check_export(d, count_units=False).ok  # no manifest: nothing to compare with, said in a note
    manifest.write(d)
    report = check_export(d, count_units=False)
    assert report.ok and report.manifest == (str(d / "manifest.json"), 3), report.failures

    edited = copy.deepcopy(other)
    edited["metrics"]["test_acc"] = min(1.0, float(edited["metrics"]["test_acc"]) + 0.05)
    (tmp_path / "bare").mkdir()
    assert check_export(_write(tmp_path / "bare", [run, ver, edited]), count_units=False).ok  # in range: no record's
    # own check sees it
    report = check_export(_write(tmp_path, [run, ver, edited]), count_units=False)
    assert len(report.failures) == 1 and "edited since" in report.failures[0][1][0], report.failures

    report = check_export(_write(tmp_path, [run, ver]), count_units=False)  # a deleted record
    assert len(report.failures) == 1 and "missing: run(s) " + "e" * 32 in report.failures[0][1][0], report.failures

    added = {**copy.deepcopy(run), "run_id": "d" * 32, "cell_id": "d" * 16}
    report = check_export(_write(tmp_path, [run, ver, other, added]), count_units=False)
    assert len(report.failures) == 1 and "not in the manifest" in report.failures[0][1][0], report.failures
    report = check_export(_write(tmp_path, [added], name="y.jsonl"), count_units=False)  # a file added
    assert any("not in the manifest" in p[0] for _, p in report.failures)

    (d / "y.jsonl").unlink()
    _write(tmp_path, [run, ver, other])
    assert main(["leaderboard", "--check", str(d)]) == 0
    assert "the export must hold exactly its 3 records" in capsys.readouterr().out
    (d / "manifest.json").write_text("{not json")
    assert main(["leaderboard", "--check", str(d)]) == 2
