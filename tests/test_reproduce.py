"""``bench reproduce``: a published cell re-run at its record's commit gives its record back (MATCH), and every
field that could differ is compared (a changed accuracy, epsilon, hash or attack rate is DIFFER)."""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from bench.cli import main
from bench.reproduce import DEFAULT_EXPORT, RATE_ATOL, compare, find_record
from methods.errors import BenchError
from tests.conftest import REPO

CHEAP = "mlp/cora/public/eps=inf/s0"  # a published cell of release 1.0.2 that re-runs in seconds


@pytest.fixture(scope="module")
def published():
    return find_record(CHEAP)


def test_every_compared_field_can_differ(published):
    fresh = copy.deepcopy(published)
    assert all(c.same and c.exact for c in compare(published, fresh))
    fields = {c.field for c in compare(published, fresh)}
    assert {"metrics.test_acc", "metrics.epsilon", "tags.predictions_hash", "params.config_hash"} <= fields
    assert any(f.startswith("attacks.lira.") for f in fields)
    for field, value in [("metrics.test_acc", 0.5), ("tags.predictions_hash", "0" * 16),
                         ("params.config_hash", "f" * 16), ("metrics.epsilon", 1.0)]:
        other = copy.deepcopy(published)
        section, key = field.split(".", 1)
        other[section][key] = value
        (c,) = [c for c in compare(published, other) if c.field == field]
        assert not c.same, field
    other = copy.deepcopy(published)
    other["attacks"]["lira"]["online"]["auc"] += RATE_ATOL / 10  # floating-point noise of another thread count
    (c,) = [c for c in compare(published, other) if c.field == "attacks.lira.online.auc"]
    assert c.same and not c.exact and c.verdict.startswith("same to")
    other["attacks"]["lira"]["online"]["auc"] += RATE_ATOL
    assert not [c for c in compare(published, other) if c.field == "attacks.lira.online.auc"][0].same
    assert all(not c.field.startswith("attacks.") for c in compare(published, other, attacks=False))


def test_names_that_find_no_record_or_a_secure_noise_run_are_bad_input(tmp_path, published, capsys):
    with pytest.raises(BenchError, match="no finished run record named 'nope/cora'"):
        find_record("nope/cora")
    assert find_record(published["cell_id"])["run_id"] == find_record(published["run_id"])["run_id"]
    export = tmp_path / "x.jsonl"
    secure = copy.deepcopy(published)
    secure["params"]["secure_noise"] = "true"
    export.write_text(json.dumps(secure) + "\n")
    with pytest.raises(BenchError, match="secure noise"):
        find_record(CHEAP, export)
    assert main(["reproduce", "nope", "--export", str(tmp_path / "missing")]) == 2
    assert "--export" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs the git history")
def test_a_published_cell_reproduces_from_its_commit(tmp_path, capsys):
    """The re-run checks the record's commit out (it is not this checkout's HEAD) and gives back its accuracy,
    epsilon and predictions hash (training only here: the attacks' LiRA references take minutes)."""
    out = tmp_path / "rep.json"
    code = main(["reproduce", CHEAP, "--no-attacks", "--export", str(DEFAULT_EXPORT), "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "MATCH" in text, text
    rep = json.loads(out.read_text())
    assert rep["verdict"] == "MATCH" and rep["config"] == "configs/leaderboard.yaml"
    assert {c["field"] for c in rep["comparisons"]} >= {"metrics.test_acc", "tags.predictions_hash"}


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs the git history")
def test_a_paper_setting_cell_reproduces_with_a_config_written_after_its_code(tmp_path, capsys):
    """The papers' settings ran release 1.1.0's code with configs written afterwards (configs/papers/): the cell is
    found in this checkout's config and re-run by the record's commit."""
    out = tmp_path / "rep.json"
    code = main(["reproduce", "mlp/cora/public/eps=inf/s0", "--no-attacks", "--export",
                 str(REPO / "docs" / "paper-settings" / "runs.jsonl"), "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "MATCH" in text, text
    rep = json.loads(out.read_text())
    assert rep["verdict"] == "MATCH" and rep["config"].endswith("configs/papers/drw.yaml")
