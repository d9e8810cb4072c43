"""A run's released model as an artefact (bench.release): every method's served model round-trips, tracked runs log
it, and attacks of a recorded run hit that artefact, never a refit."""

import dataclasses
import gzip
import json
import os
import shutil
import subprocess
import sys
from urllib.parse import unquote, urlsplit

from pathlib import Path

import pytest
import torch

from bench import release
from bench.cli import load_plugin
from methods import Budget, available_methods, get_method
from tests.conftest import REPO, bench_env

load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))
METHODS = sorted(available_methods())


@pytest.fixture(scope="module")
def pp_task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=200,classes=3,features=8,degree=6"), "private-public", 0)


def _fit(name, small_task, pp_task):
    cls = get_method(name)
    task = small_task if small_task.setting in cls.settings else pp_task
    budget = Budget(4.0, 1e-4) if cls.privacy_unit != "none" else Budget()
    return cls(**cls.smoke_config).fit(task, budget, seed=3, device="cpu"), task


@pytest.mark.parametrize("name", METHODS)
def test_every_methods_served_model_round_trips(name, small_task, pp_task, tmp_path):
    """Registry-wide (plugins included): the saved served model loads back and serves the same posteriors, answers the
    same feature queries, and its release tensors are the Fitted's own."""
    fitted, task = _fit(name, small_task, pp_task)
    manifest = release.save(fitted, task, tmp_path)
    loaded, m2 = release.read(tmp_path, task, "cpu")
    assert m2 == manifest
    assert torch.equal(loaded.predict_proba(), fitted.predict_proba())
    declared = fitted.release() or {}
    tensors = release.release_tensors(tmp_path)
    assert set(tensors) == set(declared)
    def dense(t):
        return t.to_dense() if t.layout != torch.strided else t

    for k, v in declared.items():
        assert tensors[k].layout == v.layout
        assert torch.equal(dense(tensors[k]), dense(v.cpu()))
    # the serving state travels in the served model only, named in the manifest, never in release.pt
    serving = fitted.serving_state() or {}
    assert manifest.serving_keys == tuple(sorted(serving)) and not set(serving) & set(tensors)
    for k, v in serving.items():
        assert torch.equal(dense(loaded.serving_state()[k].cpu()), dense(v.cpu()))
    query = getattr(fitted, "predict_proba_rows", None)
    if callable(query):
        rows, values = torch.tensor([0, 5]), torch.rand(2, task.num_features)
        assert torch.allclose(loaded.predict_proba_rows(rows, values), query(rows, values))


def test_a_sparse_release_stays_sparse_so_the_file_grows_with_its_edges(tmp_path):
    """EdgeRand releases its randomised graph as a sparse adjacency; written dense it took #nodes^2 x 4 bytes (1.3 GB
    per run on facebook-wisconsin87, 4.8 GB on Physics)."""
    from bench.datasets import load_dataset
    from bench.splits import make_task

    task = make_task(load_dataset("csbm:nodes=3000,classes=3,features=8,degree=6"), "random-75-10-15", 0)
    cls = get_method("edgerand")
    fitted = cls(**cls.smoke_config).fit(task, Budget(1.0, 1e-4), seed=0, device="cpu")
    adj = fitted.release()["graph.edge_index"]
    assert adj.layout != torch.strided
    manifest = release.save(fitted, task, tmp_path)
    n = task.data.num_nodes
    assert manifest.release_bytes < n * n * 4 / 20
    got = release.release_tensors(tmp_path)["graph.edge_index"]
    assert got.layout != torch.strided and torch.equal(got.to_dense(), adj.to_dense())


def test_release_pt_holds_only_what_the_ledger_covers(small_task, tmp_path):
    """Node-level ProGAP: release.pt holds the weights; the raw feature matrix (X(0)) and every node's own cached
    aggregate are serving state, held in served.pt.gz and named in the manifest."""
    fitted, task = _fit("progap-node", small_task, None)
    manifest = release.save(fitted, task, tmp_path)
    tensors = release.release_tensors(tmp_path)
    assert tensors and all(k.startswith("model.") for k in tensors)
    assert manifest.serving_keys == ("input.0", "input.1", "input.2")
    loaded, _ = release.read(tmp_path, task)
    assert torch.allclose(loaded.serving_state()["input.0"], task.data.x)


def test_a_manifest_from_before_serving_state_reads_as_unknown(small_task, tmp_path):
    fitted, task = _fit("dp-mlp", small_task, None)
    release.save(fitted, task, tmp_path)
    m = json.loads((tmp_path / release.MANIFEST_FILE).read_text())
    assert m["format"] == 1 and m["serving_keys"] == ["graph.edge_index", "graph.x"]
    del m["serving_keys"]
    (tmp_path / release.MANIFEST_FILE).write_text(json.dumps(m))
    _, old = release.read(tmp_path, task)
    assert old.serving_keys is None


def _rewrite_served(folder, obj):
    """Replace the served model by ``obj`` and make the manifest beside it agree (what a forger would do)."""
    with gzip.open(folder / release.SERVED_FILE, "wb") as f:
        torch.save(obj, f)
    manifest = json.loads((folder / release.MANIFEST_FILE).read_text())
    manifest["served_sha256"] = release._sha256(folder / release.SERVED_FILE)
    (folder / release.MANIFEST_FILE).write_text(json.dumps(manifest))


class _Payload:
    """A pickle that runs a shell command when an unrestricted unpickler loads it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_corrupted_or_foreign_artefact_is_refused(small_task, tmp_path):
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods.errors import BenchError

    fitted, task = _fit("dp-mlp", small_task, None)
    release.save(fitted, task, tmp_path)
    other = make_task(load_dataset("csbm:nodes=200,classes=3,features=8,degree=6"), "random-75-10-15", 1)
    with pytest.raises(BenchError, match="differ from the recorded"):
        release.read(tmp_path, other)
    # a model that serves other posteriors than the manifest records (files rewritten consistently): through its
    # serving state, then through weights that are not release.pt's
    tweaked = fitted
    tweaked.graph = dataclasses.replace(tweaked.graph, x=tweaked.graph.x.flip(0))
    tweaked._proba = None
    _rewrite_served(tmp_path, tweaked)
    with pytest.raises(BenchError, match="other posteriors"):
        release.read(tmp_path, task)
    with torch.no_grad():
        next(tweaked.model.parameters()).add_(1.0)
    _rewrite_served(tmp_path, tweaked)
    with pytest.raises(BenchError, match="is not release.pt's"):
        release.read(tmp_path, task)
    (tmp_path / release.RELEASE_FILE).write_bytes(b"x")
    with pytest.raises(BenchError, match="sha256"):
        release.read(tmp_path, task)
    with pytest.raises(release.ReleaseMissing):
        release.read(tmp_path / "nothing", task)


def test_a_tracked_run_logs_its_release_and_attacks_of_it_load_it(monkeypatch):
    """``bench.api.attack_recorded`` attacks the artefact: it must train nothing (a refit would call Method.fit) and
    the attacked model serves the recorded run's posteriors."""
    from bench import api, tracking
    from bench.provenance import predictions_hash
    from bench.recorded import recorded_setting
    from methods.base import Method

    [r] = api.run("dp-mlp", "csbm:nodes=200,classes=3,features=8,degree=6", split="random-75-10-15", epsilon=4,
                  seeds=[2], overrides={"epochs": 2}, experiment="release-test")
    run = tracking.client().get_run(r.run_id)
    assert run.data.tags["release.posteriors_sha256"]
    setting = recorded_setting(dict(run.data.params))
    loaded, manifest = release.load(r.run_id, setting.task)
    assert manifest.predictions_hash == run.data.tags["predictions_hash"] == predictions_hash(setting.task,
                                                                                              loaded.predict_proba())

    def no_training(*a, **k):
        raise AssertionError("an attack of a recorded run trained a model")

    monkeypatch.setattr(Method, "fit", no_training)
    [res] = api.attack_recorded(r.run_id, "threshold", bootstrap=0, experiment="release-test", device="cpu")
    [rep] = res.attacks
    assert rep["status"] == "ok" and rep["attacked_model"] == release.SOURCE_RECORDED
    assert rep["attacked_state"] == release.SERVED_MODEL  # queried with its serving state, which is not a release
    child = tracking.client().get_run(rep["run_id"])
    assert child.data.tags["mlflow.parentRunId"] == r.run_id


def test_an_unpicklable_served_model_is_named_and_refused_not_a_failed_run(small_task, tmp_path):
    fitted, task = _fit("mlp", small_task, None)
    fitted.query = lambda x: x  # a plugin's Fitted may hold one
    manifest = release.save(fitted, task, tmp_path)
    assert "lambda" in manifest.served_error and not (tmp_path / release.SERVED_FILE).exists()
    assert set(release.release_tensors(tmp_path)) == set(fitted.release())
    with pytest.raises(release.ReleaseMissing, match="could not be pickled"):
        release.read(tmp_path, task)


def test_a_run_without_artefact_is_an_error_before_any_attack():
    from bench import api

    [r] = api.run("mlp", "csbm:nodes=200,classes=3,features=8,degree=6", split="random-75-10-15", seeds=[0],
                  overrides={"epochs": 2}, experiment="release-test-none", log_release=False)
    with pytest.raises(release.ReleaseMissing):
        api.attack_recorded(r.run_id, "threshold", experiment="release-test-none", device="cpu")


def test_a_planted_payload_or_a_zeroed_release_is_refused_with_exit_2_and_no_payload_runs(tmp_path, capsys):
    """Artefacts load without running code and are checked against the run's tags, not only the manifest beside
    them: a served model carrying a payload (manifest rewritten to match) and a zeroed release.pt (likewise) are each
    refused by ``bench attack --run`` with one ``error:`` line and exit 2, and the payload never runs."""
    from bench import api, tracking

    [r] = api.run("dp-mlp", "csbm:nodes=200,classes=3,features=8,degree=6", split="random-75-10-15", epsilon=4,
                  seeds=[1], overrides={"epochs": 2}, experiment="release-tamper")
    folder = Path(unquote(urlsplit(tracking.client().get_run(r.run_id).info.artifact_uri).path)) / release.ARTIFACT_DIR
    pristine = tmp_path / "pristine"
    shutil.copytree(folder, pristine)
    marker = tmp_path / "payload-ran"
    # the payload is live: an unrestricted loader runs it (so this test can fail)
    probe = tmp_path / "probe.pt"
    torch.save(_Payload(marker), probe)
    torch.load(probe, weights_only=False)
    assert marker.exists()
    marker.unlink()

    argv = ["attack", "--run", r.run_id, "--attack", "threshold", "--no-progress", "--bootstrap", "0",
            "--experiment", "release-tamper"]

    def attack(subprocess_=False):
        """``bench attack --run``: as a process (the payload case), else through the CLI's ``main`` (faster)."""
        if subprocess_:
            return subprocess.run([sys.executable, "-m", "bench", *argv], capture_output=True, text=True,
                                  env=bench_env(), cwd=tmp_path, timeout=300)
        from bench.cli import main

        rc = main(argv)
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(argv, rc, captured.out, captured.err)

    _rewrite_served(folder, _Payload(marker))
    out = attack()
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error:") and "(release.served_sha256)" in out.stderr
    assert not marker.exists()
    # a run logged before the served model's digest was tagged: the restricted loader refuses the payload itself
    tracking.client().delete_tag(r.run_id, release.TAGS["served_sha256"])
    out = attack(subprocess_=True)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error:") and "posix.system" in out.stderr
    assert not marker.exists()
    with pytest.raises(release.BenchError, match="posix.system"):
        release.read(folder, None)  # no tags: the restricted loader alone refuses it
    assert not marker.exists()

    shutil.rmtree(folder)
    shutil.copytree(pristine, folder)
    zeroed = {k: torch.zeros_like(v) for k, v in release.release_tensors(folder).items()}
    torch.save(zeroed, folder / release.RELEASE_FILE)
    manifest = json.loads((folder / release.MANIFEST_FILE).read_text())
    manifest["release_sha256"] = release._sha256(folder / release.RELEASE_FILE)
    (folder / release.MANIFEST_FILE).write_text(json.dumps(manifest))
    out = attack()
    assert out.returncode == 2, out.stderr
    assert "not the one the run tagged (release.sha256)" in out.stderr.strip().splitlines()[-1]

    shutil.rmtree(folder)
    shutil.copytree(pristine, folder)
    from bench.recorded import recorded_setting

    setting = recorded_setting(dict(tracking.client().get_run(r.run_id).data.params))
    release.load(r.run_id, setting.task)  # the untouched artefact loads (less its deleted tag)
