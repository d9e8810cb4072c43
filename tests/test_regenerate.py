"""``scripts.regenerate``: the plan of the whole regeneration, the checkout it refuses, and its resumable progress
and cost (a completed step is skipped on resume; a killed one keeps its cost and runs again)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.studies import regenerate as R


def _git(repo, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_dry_run_prints_the_plan_with_the_cells_of_each_stage_and_writes_nothing(tmp_path, capsys):
    from bench import api
    from bench.studies.build_leaderboard import dataset_config

    progress = tmp_path / "regeneration.json"
    assert R.main(["--ref", "HEAD", "--datasets", "cora", "--dry-run", "--progress", str(progress)]) == 0
    out = capsys.readouterr().out
    assert not progress.exists()
    cells = [c for c in api.cells(dataset_config(R.yaml.safe_load(R.CONFIG.read_text()), "cora")) if not c.skip]
    runs = sum(c.kind == "run" for c in cells)
    verify = sum(c.kind == "verify" for c in cells)
    attacked = sum(c.kind == "run" and bool(c.attacks) for c in cells)
    summary = [x for x in out.splitlines() if x.startswith("# cells per stage:")][0]
    assert f"train {runs} (" in summary and f"verify {verify} (" in summary and f"attacks {attacked} (" in summary
    assert "retire " in summary and "whitebox " in summary and "page 1 (" in summary
    rows = [x.split(" | ") for x in out.splitlines() if x.startswith("| cora | train |")]
    assert sum(int(r[3]) for r in rows) == runs and {r[2] for r in rows} >= {"baselines", "gap", "drw"}


def test_bad_input_and_a_checkout_other_than_the_ref_are_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(R, "execute", lambda *a, **k: ran.append(a) or 0)
    progress = ["--progress", str(tmp_path / "p.json"), "--site", str(tmp_path)]
    for argv, msg in ((["--ref", "no-such-tag-xyz"], "--ref no-such-tag-xyz: no such tag or commit"),
                      (["--ref", "HEAD~1"], "HEAD is "),
                      (["--ref", "HEAD", "--datasets", "nowhere"], "nowhere not in"),
                      (["--ref", "HEAD", "--workers", "0"], "--workers and --threads must be >= 1")):
        assert R.main(argv + progress) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and msg in err[0], err
    assert not ran and not (tmp_path / "p.json").exists()


def test_code_changes_are_refused_results_under_docs_are_not(tmp_path):
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "m.py").write_text("x = 1\n")
    (repo / "docs" / "r.jsonl").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "0")
    sha = _git(repo, "rev-parse", "HEAD")
    (repo / "docs" / "r.jsonl").write_text("{}\n")  # a result: allowed
    (repo / "docs" / "new.json").write_text("{}\n")
    assert R.checkout_problems(sha, "v", repo) == []
    (repo / "plugin.py").write_text("")  # untracked code: a registry would import it
    assert "plugin.py" in R.checkout_problems(sha, "v", repo)[0]
    (repo / "plugin.py").unlink()
    (repo / "m.py").write_text("x = 2\n")
    assert "m.py" in R.checkout_problems(sha, "v", repo)[0]
    assert "not v" in R.checkout_problems("0" * 40, "v", repo)[0]


def test_the_record_scripts_accept_results_under_docs_but_not_changed_code(tmp_path, monkeypatch):
    """A stage's records land under docs/ before the next stage's script checks the tree (bench.studies._common)."""
    from bench.studies import _common

    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    code = repo / "bench" / "studies" / "_common.py"
    code.parent.mkdir(parents=True)
    code.write_text("")
    (repo / "docs" / "r.jsonl").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "0")
    monkeypatch.setattr(_common, "__file__", str(code))
    (repo / "docs" / "r.jsonl").write_text("{}\n")
    assert _common.clean_commit() == _git(repo, "rev-parse", "HEAD")
    code.write_text("x = 1\n")
    with pytest.raises(SystemExit, match="uncommitted changes"):
        _common.clean_commit()


def test_retire_moves_the_datasets_records_of_other_commits_to_superseded(tmp_path):
    site, ref = tmp_path / "site", "a" * 40
    (site / "runs").mkdir(parents=True)
    (site / "attacks").mkdir()

    def rec(cid, commit, ds="cora", kind="run"):
        return json.dumps({"cell_id": cid, "kind": kind, "git_commit": commit, "params": {"dataset": ds}},
                          sort_keys=True, separators=(",", ":"))

    (site / "runs" / "cora.jsonl").write_text("\n".join([rec("new", ref), rec("old", "b" * 40),
                                                         rec("dirty", ref + "-dirty")]) + "\n")
    (site / "runs" / "photo.jsonl").write_text(rec("p", "b" * 40, "photo") + "\n")
    (site / "attacks" / "edge.jsonl").write_text("\n".join([rec("e1", "b" * 40, kind="edge-attack"),
                                                            rec("e2", "b" * 40, "photo", "edge-attack")]) + "\n")
    ctx = R.Context("v1", ref, R.CONFIG, site, tmp_path / "store", 1, 1, [])
    assert R.retire(ctx, "cora") == 3 and R.retire(ctx, "cora") == 0
    assert (site / "runs" / "cora.jsonl").read_text() == rec("new", ref) + "\n"
    assert (site / "runs" / "photo.jsonl").read_text() == rec("p", "b" * 40, "photo") + "\n"
    assert (site / "attacks" / "edge.jsonl").read_text() == rec("e2", "b" * 40, "photo", "edge-attack") + "\n"
    moved = [json.loads(x) for x in (site / "superseded" / "cora.jsonl").read_text().splitlines()]
    assert sorted(r["cell_id"] for r in moved) == ["dirty", "e1", "old"]
    assert {r["superseded_because"] for r in moved} == {f"regenerated from v1 ({ref[:12]})"}


# ---- the driver on a tiny fake plan ----------------------------------------------------------------------------


def _fake(monkeypatch, tmp_path, steps):
    monkeypatch.setattr(R, "checkout_problems", lambda *a: [])
    monkeypatch.setattr(R, "plan", lambda ctx, datasets, stages: steps)
    return ["--ref", "HEAD", "--site", str(tmp_path), "--tracking-dir", str(tmp_path / "store"),
            "--progress", str(tmp_path / "regeneration.json")]


def _cmd(log, code="", sleep=0.0):
    """A stage command: appends a line to ``log``, sleeps, runs ``code``."""
    return [sys.executable, "-c", f"import time, os; open({str(log)!r}, 'a').write(os.environ['BENCH_TRACKING_DIR']"
                                  f" + chr(10)); time.sleep({sleep}); {code}"]


def test_a_completed_step_is_skipped_on_resume_and_timings_accumulate(tmp_path, monkeypatch):
    a_log, b_log, gate = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "gate"
    steps = [R.Step("cora", "train", "gap", 4, 4, [(_cmd(a_log, sleep=0.1), 2)]),
             R.Step("cora", "attacks", "gap", 2, 2, [(_cmd(b_log, f"raise SystemExit(0 if os.path.exists("
                                                               f"{str(gate)!r}) else 3)", 0.2), 3)])]
    argv = _fake(monkeypatch, tmp_path, steps)
    assert R.main(argv) == 1  # the second step fails
    first = json.loads((tmp_path / "regeneration.json").read_text())
    a, b = first["steps"]["cora/train/gap"], first["steps"]["cora/attacks/gap"]
    assert a["status"] == "done" and b["status"] == "failed" and b["attempts"] == 1 and not first["complete"]
    assert a["wall_s"] >= 0.1 and a["core_s"] == pytest.approx(2 * a["wall_s"], abs=1e-2)
    assert a_log.read_text() == str((tmp_path / "store").resolve()) + "\n"  # the run's own tracking store
    gate.touch()
    assert R.main(argv) == 0
    second = json.loads((tmp_path / "regeneration.json").read_text())
    a2, b2 = second["steps"]["cora/train/gap"], second["steps"]["cora/attacks/gap"]
    assert len(a_log.read_text().splitlines()) == 1 and a2 == a  # done: skipped, its cost unchanged
    assert len(b_log.read_text().splitlines()) == 2 and b2["status"] == "done" and b2["attempts"] == 2
    assert b2["wall_s"] >= b["wall_s"] + 0.2 and b2["core_s"] == pytest.approx(3 * b2["wall_s"], abs=1e-2)
    assert second["complete"] and second["wall_s"] == pytest.approx(a2["wall_s"] + b2["wall_s"], abs=1e-2)
    assert second["core_hours"] == pytest.approx((a2["core_s"] + b2["core_s"]) / 3600, abs=1e-4)
    assert second["started"] == first["started"] and second["commit"] == R.ref_commit("HEAD")
    assert R.main(argv) == 0 and len(b_log.read_text().splitlines()) == 2  # all done: nothing runs


def test_a_killed_step_keeps_the_cost_it_ran_and_runs_again(tmp_path, monkeypatch):
    log = tmp_path / "a.log"
    steps = [R.Step("cora", "train", "drw", 1, 1, [(_cmd(log, sleep=30), 2)])]
    argv = _fake(monkeypatch, tmp_path, steps)
    monkeypatch.setattr(R, "HEARTBEAT_S", 0.1)
    saves = []
    real_save = R.Progress.save

    def save(self):
        real_save(self)
        saves.append(1)
        if len(saves) == 5:  # the step started (1 save) and ran 3 heartbeats: the machine goes away
            raise KeyboardInterrupt

    monkeypatch.setattr(R.Progress, "save", save)
    t0 = R.time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        R.main(argv)
    assert R.time.perf_counter() - t0 < 20  # the stage's process was stopped, not waited for
    e = json.loads((tmp_path / "regeneration.json").read_text())["steps"]["cora/train/drw"]
    assert e["status"] == "running" and e["attempts"] == 1 and e["wall_s"] >= 0.3
    monkeypatch.setattr(R.Progress, "save", real_save)
    steps[0].commands = [(_cmd(log), 2)]
    assert R.main(argv) == 0
    e2 = json.loads((tmp_path / "regeneration.json").read_text())["steps"]["cora/train/drw"]
    assert e2["status"] == "done" and e2["attempts"] == 2 and e2["wall_s"] > e["wall_s"]


def test_a_step_whose_sweep_left_cells_without_a_record_fails_and_runs_again(tmp_path, monkeypatch, capsys):
    """A sweep goes on past a failed cell and exits 0: the step is done only when every cell has its record."""
    log, gate = tmp_path / "a.log", tmp_path / "gate"
    missing = lambda: [] if gate.exists() else ["drw-r/cora/random-75-10-15/eps=0.5/s0"]  # noqa: E731
    steps = [R.Step("cora", "train", "drw", 5, 5, [(_cmd(log), 2)], missing),
             R.Step("cora", "attacks", "drw", 5, 5, [(_cmd(tmp_path / "b.log"), 2)])]
    argv = _fake(monkeypatch, tmp_path, steps)
    assert R.main(argv) == 1
    err = capsys.readouterr().err
    assert "error: cora/train/drw: 1 of 5 cells have no record after the step" in err and "eps=0.5/s0" in err
    e = json.loads((tmp_path / "regeneration.json").read_text())["steps"]
    assert e["cora/train/drw"]["status"] == "failed" and "cora/attacks/drw" not in e  # stopped there
    gate.touch()
    assert R.main(argv) == 0 and len(log.read_text().splitlines()) == 2  # not "done before": it ran again
    e = json.loads((tmp_path / "regeneration.json").read_text())["steps"]
    assert e["cora/train/drw"]["status"] == "done" and e["cora/attacks/drw"]["status"] == "done"


def test_the_plans_steps_name_the_cells_without_a_record_of_the_ref(tmp_path):
    """``Step.missing`` reads the site's records when called: a cell whose record names another commit, or that
    failed, is missing; one finished at the ref's commit is not."""
    from bench import api
    from bench.studies.build_leaderboard import dataset_config

    raw = R.yaml.safe_load(R.CONFIG.read_text())
    ctx = R.Context("HEAD", "c" * 40, R.CONFIG, tmp_path, tmp_path / "store", 1, 1, ["cora"], raw=raw)
    (tmp_path / "runs").mkdir()
    step = next(s for s in R.plan(ctx, ["cora"], ["train"]) if s.family == "drw")
    cells = [c for c in api.cells(dataset_config(raw, "cora")) if not c.skip and c.kind == "run"
             and c.method in ("rw", "drw", "drw-r", "drw-d")]
    assert step.missing is not None and sorted(step.missing()) == sorted(c.label for c in cells)

    def rec(c, commit, status="FINISHED"):
        return json.dumps({"cell_id": c.cell_id, "git_commit": commit, "status": status, "kind": "run",
                           "params": {"dataset": "cora", "method": c.method}})

    lines = [rec(c, "c" * 40) for c in cells[1:-2]] + [rec(cells[0], "d" * 40), rec(cells[-1], "c" * 40, "FAILED")]
    (tmp_path / "runs" / "cora.jsonl").write_text("\n".join(lines) + "\n")
    assert sorted(step.missing()) == sorted([cells[0].label, cells[-2].label, cells[-1].label])
    assert all(s.missing is None for s in R.plan(ctx, ["cora"], ["attacks"]))


def test_a_progress_file_of_another_commit_is_refused(tmp_path, monkeypatch, capsys):
    argv = _fake(monkeypatch, tmp_path, [])
    (tmp_path / "regeneration.json").write_text(json.dumps({"ref": "v0", "commit": "f" * 40, "steps": {}}))
    assert R.main(argv) == 2
    assert "records a regeneration from v0" in capsys.readouterr().err


def test_help_names_every_stage_and_option(capsys):
    with pytest.raises(SystemExit):
        R.main(["--help"])
    out = capsys.readouterr().out
    for word in (*R.STAGES, "--ref", "--datasets", "--stages", "--dry-run", "--progress", "--tracking-dir",
                 "regeneration.json", "core seconds"):
        assert word in out, word


def test_commit_to_a_branch_keeps_head_and_the_index_and_carries_only_the_site(tmp_path, monkeypatch):
    """A partial run outlives its session: the site goes onto a branch, whose code stays the branch's (a new one:
    the ref's), HEAD stays put."""
    for k in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(k, "t")
    for k in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(k, "t@t")
    repo = tmp_path / "repo"
    site = repo / "docs" / "leaderboard"
    (site / "runs").mkdir(parents=True)
    (repo / "m.py").write_text("x = 1\n")
    (site / "runs" / "a.jsonl").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "0")
    base = _git(repo, "rev-parse", "HEAD")
    assert R.commit_site(site, "regen", base, "nothing", repo=repo) is None  # the site as committed: no commit
    (site / "runs" / "a.jsonl").write_text('{"a": 1}\n')
    (site / "regeneration.json").write_text("{}\n")
    (repo / "scratch.py").write_text("")  # outside the site: never committed
    first = R.commit_site(site, "regen", base, "step 1", repo=repo)
    assert first and _git(repo, "rev-parse", "regen") == first and _git(repo, "rev-parse", f"{first}^") == base
    assert _git(repo, "rev-parse", "HEAD") == base and _git(repo, "diff", "--cached", "--name-only") == ""
    assert sorted(_git(repo, "diff", "--name-only", base, first).splitlines()) == [
        "docs/leaderboard/regeneration.json", "docs/leaderboard/runs/a.jsonl"]
    (site / "runs" / "a.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    second = R.commit_site(site, "regen", base, "step 2", repo=repo)
    assert _git(repo, "rev-parse", f"{second}^") == first
    assert len(_git(repo, "show", f"{second}:docs/leaderboard/runs/a.jsonl").splitlines()) == 2
    assert _git(repo, "show", f"{second}:m.py") == "x = 1"
    assert R.commit_site(site, "regen", base, "unchanged", repo=repo) is None
    # a branch whose code moved on since the ref (main, where results land) keeps its code and takes the site
    _git(repo, "checkout", "-q", "-b", "later", base)
    (repo / "m.py").write_text("x = 2\n")
    _git(repo, "commit", "-qam", "later code")
    later = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "--detach", base)
    (site / "runs" / "a.jsonl").write_text('{"c": 3}\n')
    third = R.commit_site(site, "later", base, "step 3", repo=repo)
    assert _git(repo, "rev-parse", f"{third}^") == later and _git(repo, "rev-parse", "HEAD") == base
    assert _git(repo, "show", f"{third}:m.py") == "x = 2" and (repo / "m.py").read_text() == "x = 1\n"
    assert _git(repo, "show", f"{third}:docs/leaderboard/runs/a.jsonl") == '{"c": 3}'
    assert sorted(_git(repo, "diff", "--name-only", later, third).splitlines()) == [
        "docs/leaderboard/regeneration.json", "docs/leaderboard/runs/a.jsonl"]


def test_commit_to_refuses_a_bad_branch_name(tmp_path, capsys):
    assert R.main(["--ref", "HEAD", "--datasets", "cora", "--site", str(tmp_path / "site"),
                   "--commit-to", "bad..name", "--progress", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
