"""Checked-in hyperparameters (configs/hparams.yaml, configs/hparams_tuned.yaml): valid entries, used by bench run,
the sweep and bench verify unless --set says otherwise, and named in the run's hp_source."""

from __future__ import annotations

import math

import pytest

from bench import api
from bench import hparams as H
from bench.options import field_names
from methods.base import available_methods, get_method

CSBM = "csbm:nodes=200,classes=3,features=8,degree=4"


@pytest.mark.parametrize("path", [H.DEFAULT_PATH, H.TUNED_PATH], ids=["hparams", "hparams_tuned"])
def test_every_shipped_entry_names_a_method_its_hyperparameters_and_a_source(path):
    if not path.exists():
        pytest.skip(f"{path.name} not written yet")
    table = H.table(path)
    for method, per in table.items():
        assert method in available_methods(), f"{path.name}: unknown method {method}"
        known = set(field_names(get_method(method).Config))
        for key, e in per.items():
            assert e.get("source") in H.SOURCES, (method, key)
            assert e.get("note"), f"{path.name}: {method}/{key} says nowhere where its values come from"
            values = dict(e.get("set") or {})
            for eps in (e.get("by_epsilon") or {}).values():
                values.update(eps.get("set", eps))
            assert values and set(values) <= known, (method, key, set(values) - known)
            get_method(method)(**{k: str(v) for k, v in values.items()})  # types and ranges check out
            if e["source"] == "tuned":
                assert "@" in key and "grid" in e["note"] and "seeds" in e["note"], (method, key)


@pytest.fixture
def entry_file(tmp_path, monkeypatch):
    p = tmp_path / "hp.yaml"
    p.write_text("dp-mlp:\n  csbm:\n    source: paper\n    note: test entry\n    set: {hidden: 8, epochs: 2}\n"
                 "    by_epsilon: {4: {lr: 0.05}}\n")
    monkeypatch.setenv("BENCH_HPARAMS", str(p))
    return p


def test_bench_run_uses_the_entry_and_logs_where_it_came_from(entry_file):
    (r,) = api.run("dp-mlp", CSBM, epsilon=4.0, track=False)
    assert r.metrics["test_acc"] >= 0
    from bench.plan import RunSpec, plan_run

    (m,) = plan_run(RunSpec(methods=["dp-mlp"], dataset=CSBM, epsilon=4.0, track=False)).methods
    assert m.entry.values == {"hidden": 8, "epochs": 2, "lr": 0.05}
    assert m.overrides["hidden"] == "8" and m.overrides["lr"] == "0.05"
    # --set wins over the entry; hparams=False ignores it
    (m,) = plan_run(RunSpec(methods=["dp-mlp"], dataset=CSBM, epsilon=8.0, overrides=["hidden=4"], track=False)).methods
    assert m.overrides["hidden"] == "4" and "lr" not in m.overrides
    (m,) = plan_run(RunSpec(methods=["dp-mlp"], dataset=CSBM, epsilon=8.0, track=False, hparams=False)).methods
    assert m.entry is None and "hidden" not in m.overrides


def test_the_sweep_puts_the_entry_in_the_cells_identity(entry_file):
    raw = {"experiment": "t", "datasets": [CSBM], "splits": ["random-75-10-15"], "seeds": [0], "epsilons": [4],
           "methods": ["dp-mlp"]}
    (with_hp,) = api.cells(raw)
    (without,) = api.cells({**raw, "hparams": False})
    assert "hidden=8" in with_hp.overrides and "lr=0.05" in with_hp.overrides
    assert not without.overrides and with_hp.cell_id != without.cell_id


def test_the_tracked_run_names_its_source(entry_file, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'm.db'}")
    (r,) = api.run("dp-mlp", CSBM, epsilon=4.0, experiment="hp")
    runs = api.runs("hp")
    assert runs and "dp-mlp/csbm (paper)" in runs[0]["params"]["hp_source"]
    assert math.isfinite(r.epsilon)
