"""Canaries (neighbouring datasets per unit), the black-box runner, `bench audit`, and the mutants' detection."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from audits.canaries import CanaryConfig, make_canaries
from audits.runner import NOT_APPLICABLE, PASS, VIOLATION, audit
from methods.base import Budget, ConfigError, get_method

PLUGINS = Path(__file__).resolve().parent / "plugins"
MUTANTS = str(PLUGINS / "mutants.py")


@pytest.fixture(scope="module")
def task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=600,classes=3,features=32,degree=4"), "random-75-10-15", 0)


def _edges(t) -> set[tuple[int, int]]:
    e = t.data.edge_index
    return {(int(a), int(b)) for a, b in zip(e[0], e[1])}


# --------------------------------------------------------------------------------------
# Neighbouring datasets
# --------------------------------------------------------------------------------------


def test_node_worlds_differ_by_exactly_the_canary_nodes(task):
    cs = make_canaries(task, "node", 6, CanaryConfig(degree=2, hops=2), seed=1)
    inc = np.array([True, False, True, True, False, False])
    w_in, w_out = cs.world(inc), cs.world(np.zeros(6, bool))
    n, m = cs.num_base, 6
    assert w_out.num_nodes == n + m and w_in.num_nodes == n + m + 3
    # everything but the added canary nodes is identical
    assert torch.equal(w_in.data.x[: n + m], w_out.data.x) and torch.equal(w_in.data.y[: n + m], w_out.data.y)
    assert torch.equal(w_in.train_mask[: n + m], w_out.train_mask)
    extra = _edges(w_in) - _edges(w_out)
    assert all(max(a, b) >= n + m for a, b in extra) and _edges(w_out) <= _edges(w_in)
    # each included canary: a training node with its label, its row and an edge to each anchor
    for j, k in enumerate(np.flatnonzero(inc)):
        v = n + m + j
        assert bool(w_in.train_mask[v]) and int(w_in.data.y[v]) == int(cs.labels[k])
        assert torch.equal(w_in.data.x[v], cs.features[k])
        assert {b for a, b in extra if a == v} == set(cs.anchors[k])
        assert all(int(w_in.data.y[a]) == int(cs.labels[k]) for a in cs.anchors[k])
    # probes: isolated, unlabelled copies of the canary rows, present in both worlds
    for k in range(m):
        p = n + k
        assert torch.equal(w_out.data.x[p], cs.features[k]) and not bool(w_out.train_mask[p])
        assert not any(a == p for a, _ in _edges(w_in))


def test_canaries_are_hop_disjoint(task):
    from torch_geometric.utils import k_hop_subgraph

    hops = 2
    cs = make_canaries(task, "node", 8, CanaryConfig(degree=1, hops=hops), seed=0)
    w = cs.world(np.ones(8, bool))
    n, m = cs.num_base, 8
    canaries = list(range(n + m, n + 2 * m))
    for c in canaries:
        ball, _, _, _ = k_hop_subgraph(c, hops, w.data.edge_index, num_nodes=w.num_nodes)
        ball = set(ball.tolist())
        # no node within `hops` of one canary is within `hops` of another (receptive fields disjoint)
        for other in canaries:
            if other != c:
                ob, _, _, _ = k_hop_subgraph(other, hops, w.data.edge_index, num_nodes=w.num_nodes)
                assert not ball & set(ob.tolist())


def test_feature_worlds_differ_in_one_row_per_canary(task):
    cs = make_canaries(task, "feature", 5, CanaryConfig(degree=1), seed=0)
    inc = np.array([True, False, False, True, False])
    a, b = cs.world(inc), cs.world(~inc)
    assert a.num_nodes == b.num_nodes and _edges(a) == _edges(b) and torch.equal(a.data.y, b.data.y)
    assert torch.equal(a.train_mask, b.train_mask)
    differing = (a.data.x != b.data.x).any(1).nonzero().view(-1).tolist()
    assert differing == [cs.num_base + 5 + k for k in range(5)]  # every canary's row, one node each


def test_edge_worlds_differ_by_one_edge_per_canary(task):
    cs = make_canaries(task, "edge", 4, CanaryConfig(degree=2), seed=0)
    inc = np.array([False, True, False, False])
    a, b = cs.world(inc), cs.world(np.zeros(4, bool))
    assert a.num_nodes == b.num_nodes and torch.equal(a.data.x, b.data.x)
    diff = _edges(a) ^ _edges(b)
    n = cs.num_base
    assert diff == {(n + 1, n + 4 + 1), (n + 4 + 1, n + 1)}  # the undirected edge {a_1, b_1}
    assert a.num_edges == b.num_edges + 1


def test_fresh_anchors_and_edge_leaves(task):
    cs = make_canaries(task, "node", 3, CanaryConfig(degree=4, fresh_anchors=True), seed=0)
    inc = np.array([True, False, True])
    a, b = cs.world(inc), cs.world(np.zeros(3, bool))
    n = cs.num_base
    fresh = list(range(n + 3, n + 3 + 12))
    assert cs.anchors[0] == fresh[:4] and a.num_nodes == b.num_nodes + 2
    # anchors exist in both worlds: zero rows, training nodes labelled like their canary
    for w in (a, b):
        assert bool(w.train_mask[fresh].all()) and float(w.data.x[fresh].abs().sum()) == 0.0
        assert w.data.y[fresh].tolist() == cs.labels.repeat_interleave(4).tolist()
    # their only edges are to their own canary, and only where it exists
    assert not any(u in fresh for u, _ in _edges(b))
    canary0 = n + 3 + 12
    assert {v for u, v in _edges(a) if u == canary0} == set(cs.anchors[0])
    e = make_canaries(task, "edge", 2, CanaryConfig(degree=3), seed=0).world(np.array([True, False]))
    leaves = list(range(n + 4, n + 10))
    assert bool(e.train_mask[leaves].all()) and not bool(e.train_mask[n:n + 4].any())


def test_too_many_canaries_is_a_config_error_or_a_fallback(task):
    with pytest.raises(ConfigError, match="hop-disjoint.*--fresh-anchors"):
        make_canaries(task, "node", 400, CanaryConfig(degree=3, hops=3))
    with pytest.raises(ConfigError):
        make_canaries(task, "none", 3)
    # the one-run audit's default: as many as the graph holds (at least 2 here), the request kept for the note
    few = make_canaries(task, "node", 400, CanaryConfig(degree=3, hops=3), allow_fewer=2)
    assert 2 <= few.m < 400 and few.requested == 400
    assert few.world(np.ones(few.m, dtype=bool)).num_features == task.num_features + few.m


def test_scores_separate_without_noise(task):
    """At epsilon = inf the canaries are memorised: the one-run guesses are (nearly) all right."""
    cs = make_canaries(task, "node", 20, CanaryConfig(degree=1), seed=0)
    inc = np.arange(20) % 2 == 0
    fitted = get_method("mlp")().fit(cs.world(inc), Budget(), seed=0)
    s = cs.scores(fitted.predict_proba())
    assert s[inc].min() > s[~inc].max()


# --------------------------------------------------------------------------------------
# Runner and mutants (one fast default check per mutant family that fits the budget)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mutants():
    sys.path.insert(0, str(PLUGINS))
    import mutants as mod  # registers them

    return mod


def _audit(name, task, eps, **kw):
    cls = get_method(name)
    return audit(lambda: cls(**kw.pop("set", {})), task, Budget(eps, 1e-3), kw.pop("mode", "one-run"), **kw)


def test_non_private_method_is_not_applicable_with_note(task):
    r = _audit("gcn", task, math.inf)
    assert r.verdict == NOT_APPLICABLE and r.trials == 0 and "not private" in r.note and "not private" in r.reason


def test_dp_mlp_correct_passes_where_its_mutant_is_flagged(task):
    """Same configuration as test_cli_violation_exit_code_and_mlflow_run, which flags the mutant."""
    good = _audit("dp-mlp", task, 1.0, canaries=100, canary=CanaryConfig(degree=1))
    assert good.verdict == PASS and good.epsilon_lb <= good.claimed_epsilon <= 1.0 + 1e-9
    assert good.trials == 1 and good.canaries == 100 and len(good.details["scores"]) == 100


@pytest.mark.slow
def test_dp_mlp_mutant_multi_run(task, mutants):
    bad = _audit("mutant-dp-mlp-noise", task, 1.0, mode="multi-run", trials=40, canary=CanaryConfig(degree=1))
    assert bad.verdict == VIOLATION


@pytest.mark.slow
@pytest.mark.parametrize("mutant", [
    "mutant-gap-edge-nonorm", "mutant-drw-overlap", "mutant-privgnn-laplace", "mutant-dpgnn-nobound"])
def test_other_mutants(mutant, mutants):
    from bench.studies.audit_table import MUTANT_CONFIGS, run_audit

    cfg = MUTANT_CONFIGS[mutant]
    split = cfg.get("split", "random-75-10-15")
    kind = cfg.get("canary_type", "input")
    bad = run_audit(mutant, cfg["set"], cfg["dataset"], split, cfg["epsilon"], "one-run", 0, cfg["canaries"],
                    cfg["canary"], canary_type=kind)
    good = run_audit(cfg["correct"], cfg["set"], cfg["dataset"], split, cfg["epsilon"], "one-run", 0,
                     cfg["canaries"], cfg["canary"], canary_type=kind)
    assert good["verdict"] == PASS
    assert bad["verdict"] == VIOLATION


# --------------------------------------------------------------------------------------
# bench audit
# --------------------------------------------------------------------------------------


def test_cli_violation_exit_code_and_mlflow_run(tmp_path, capsys, mutants):
    from bench import tracking
    from bench.cli import main

    out = tmp_path / "audit.json"
    rc = main(["--plugin", MUTANTS, "audit", "--method", "mutant-dp-mlp-noise", "--dataset",
               "csbm:nodes=600,classes=3,features=32,degree=4", "--epsilon", "1", "--canaries", "100",
               "--experiment", "audit-test", "--no-progress", "--output", str(out)])
    captured = capsys.readouterr()
    assert rc == 3, captured.err
    assert "VIOLATION" in captured.out and "PRIVACY VIOLATION" in captured.err
    result = json.loads(out.read_text())
    assert result["verdict"] == "VIOLATION" and result["epsilon_lb"] > result["claimed_epsilon"]
    assert result["claimed_epsilon"] <= 1.0 + 1e-9  # the mutant's ledger still claims the target
    runs = tracking.search_runs("audit-test", "tags.kind = 'audit'")
    assert len(runs) == 1
    run = runs[0]
    assert run.data.tags["verdict"] == "VIOLATION" and run.data.tags["audit_mode"] == "one-run"
    assert run.data.tags["method"] == "mutant-dp-mlp-noise" and run.data.tags["split"] == "random-75-10-15"
    for key in ("trials", "canaries", "target_epsilon", "delta", "confidence", "privacy_unit", "config_hash"):
        assert key in run.data.params
    assert run.data.metrics["claimed_epsilon"] == pytest.approx(result["claimed_epsilon"])
    assert run.data.metrics["epsilon_lb"] == pytest.approx(result["epsilon_lb"])
    assert run.data.metrics["audit_seconds"] > 0


@pytest.mark.parametrize("argv, message", [
    (["--method", "dp-mlp", "--dataset", "csbm:nodes=200"], "give --epsilon"),
    (["--method", "gcn", "--dataset", "csbm:nodes=200", "--epsilon", "1"], "not private"),
    (["--method", "nope", "--dataset", "csbm:nodes=200", "--epsilon", "1"], "unknown method"),
    (["--method", "dp-mlp", "--dataset", "csbm:nodes=200", "--epsilon", "1", "--mode", "multi-run", "--trials", "1"],
     "--trials"),
    (["--method", "dp-mlp", "--dataset", "csbm:nodes=200", "--epsilon", "-1"], "epsilon"),
    (["--method", "dp-mlp", "--dataset", "csbm:nodes=200", "--epsilon", "1", "--confidence", "1.5"], "confidence"),
    (["--method", "dp-mlp", "--dataset", "csbm:nodes=200", "--epsilon", "1", "--canaries", "500",
      "--canary-degree", "3"], "hop-disjoint"),
    (["--method", "gap-node", "--dataset", "csbm:nodes=200", "--epsilon", "1", "--canary-type", "gradient"],
     "gradient canaries need a DP-SGD method"),
    (["--method", "dp-mlp", "--dataset", "csbm:nodes=200", "--epsilon", "1", "--canary-type", "gradient",
      "--canary-pattern", "random"], "dedicated"),
])
def test_cli_bad_input_is_one_line_error(argv, message, capsys, tmp_path):
    from bench.cli import main

    out = tmp_path / "x.json"
    rc = main(["audit", *argv, "--no-track", "--no-progress", "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error:") and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_non_private_is_not_applicable(capsys):
    from bench.cli import main

    rc = main(["audit", "--method", "mlp", "--dataset", "csbm:nodes=200", "--no-track", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "verdict         NOT APPLICABLE" in out and "PASS" not in out and "not private" in out
