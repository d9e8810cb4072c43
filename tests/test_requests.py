"""The request types (bench.request) generate the jobs' flags and API signatures, and state each default and rule once."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest

from bench import api
from bench.cli import build_parser
from bench.request import (MULTI_RUN_TRIALS, ONE_RUN_CANARIES, POOLED_CANARIES, POOLED_RUNS, AuditSpec,
                           ReproduceSpec, RunSpec, SweepError, SweepSpec, VerifySpec, build, flat_fields)
from methods.errors import ConfigError

JOBS = [("run", RunSpec, api.run), ("audit", AuditSpec, api.audit), ("verify", VerifySpec, api.verify),
        ("sweep", SweepSpec, api.sweep), ("reproduce", ReproduceSpec, api.reproduce)]
TRAINING = JOBS[:3]


def _actions(command: str) -> dict[str, argparse.Action]:
    top = build_parser(command)
    (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return {a.dest: a for a in sub.choices[command]._actions}


@pytest.mark.parametrize("command,cls,fn", JOBS, ids=[j[0] for j in JOBS])
def test_every_field_is_a_flag_and_a_parameter_with_its_declared_default(command, cls, fn):
    actions, params = _actions(command), inspect.signature(fn).parameters
    for f in flat_fields(cls):
        assert f.name in params, f"bench.api.{fn.__name__} lacks {f.name}"
        p = params[f.name]
        if f.required:
            assert p.default is inspect.Parameter.empty
        else:
            assert p.default == f.api_default, f.name
        if not f.meta.get("cli"):
            assert f.name not in actions, f"{f.name} is API only"
            continue
        a = actions[f.name]
        assert a.help == f.help, f.name
        if f.meta.get("negate"):
            assert a.option_strings == [f.meta.get("negate")] and a.default is True
        elif f.default is not dataclasses.MISSING:
            assert a.default == f.default, f.name
    # and nothing else: the flags a job has beyond its request are the command's own
    own = {"help", "output", "threads", "offline", "func", "runs", "mechanism", "mutation"}
    assert set(actions) - {f.name for f in flat_fields(cls)} <= own


@pytest.mark.parametrize("command,cls,fn", TRAINING, ids=[j[0] for j in TRAINING])
def test_the_command_line_and_the_api_build_the_same_request(command, cls, fn, monkeypatch):
    seen = []
    job = {"run": "bench.run.run_targets", "audit": "bench.audit.audit_one", "verify": "bench.verify.verify_one"}[command]
    monkeypatch.setattr(job, lambda spec, log=None: seen.append(spec))
    argv = [command, "-m", "dp-mlp", "-d", "csbm:nodes=300", "-e", "2", "--set", "hidden=8", "--no-track",
            "--device", "cpu"]
    from bench.cli import main

    main(argv + ["--no-progress"])
    fn("dp-mlp", "csbm:nodes=300", epsilon=2, overrides={"hidden": 8}, track=False, device="cpu")
    assert len(seen) == 2 and seen[0] == seen[1]


def test_an_audit_contains_its_run_and_resolves_its_defaults_once():
    run = RunSpec(methods=["dp-mlp"], dataset="cora", epsilon=1.0)
    blackbox = AuditSpec(run=run)
    assert (blackbox.mode, blackbox.canary_type, blackbox.trials, blackbox.canaries) == \
        ("one-run", "input", MULTI_RUN_TRIALS, ONE_RUN_CANARIES)
    white = AuditSpec(run=run, level="whitebox")
    assert (white.mode, white.canary_type, white.trials, white.canaries) == \
        ("pooled", "gradient", POOLED_RUNS, POOLED_CANARIES)
    assert dataclasses.replace(white) == white  # resolving twice changes nothing
    assert build(AuditSpec, method="dp-mlp", dataset="cora", epsilon=1.0, level="whitebox") == white
    with pytest.raises(ConfigError, match="contradicts"):
        AuditSpec(run=run, level="blackbox", canary_type="gradient")
    with pytest.raises(ConfigError, match="needs white-box gradient canaries"):
        AuditSpec(run=run, mode="pooled")
    with pytest.raises(dataclasses.FrozenInstanceError):
        white.mode = "one-run"  # type: ignore[misc]


def test_an_unknown_argument_is_a_type_error_and_a_request_passes_through(monkeypatch):
    with pytest.raises(TypeError):
        api.audit("dp-mlp", "cora", epsilon=1.0, canary_count=3)
    seen = []
    monkeypatch.setattr("bench.audit.audit_one", lambda spec, log=None: seen.append(spec))
    spec = AuditSpec(run=RunSpec(methods=["dp-mlp"], dataset="cora", epsilon=1.0))
    api.audit(spec)
    assert seen == [spec]
    with pytest.raises(TypeError):
        api.audit(spec, trials=3)


def test_values_are_normalised_where_the_request_is_built():
    spec = RunSpec(methods="gcn, sage", dataset="cora", seeds=(0, "1"), epsilon=4, overrides={"hidden": 16})
    assert spec.methods == ["gcn", "sage"] and spec.seeds == [0, 1] and spec.epsilon == 4.0
    assert isinstance(spec.epsilon, float) and spec.overrides == ["hidden=16"]


def test_a_sweep_request_states_its_rules_once(tmp_path, monkeypatch):
    with pytest.raises(SweepError, match="--address is for --executor ray"):
        SweepSpec(config="x.yaml", address="auto")
    with pytest.raises(SweepError, match="--workers must be >= 1"):
        api.sweep("x.yaml", workers=0)
    seen = []
    monkeypatch.setattr("bench.sweep.run_sweep", lambda *a, **k: seen.append((a, k)) or {})
    cfg = tmp_path / "grid.yaml"
    cfg.write_text("experiment: e\ndatasets: [csbm:nodes=60]\nmethods: [mlp]\nseeds: [0]\n")
    from bench.cli import main

    assert main(["sweep", str(cfg), "--dry-run", "--workers", "1", "--no-progress"]) == 0
    api.sweep(str(cfg), dry_run=True, threads=1)  # the command's default thread count; the API leaves them
    (a1, k1), (a2, k2) = seen
    assert a1[2:] == a2[2:] and k1 == k2
