"""Accuracy regressions of the non-private baselines on real data (the figures the baselines must reach)."""

import statistics

import pytest

from bench.run import RunSpec, run_targets


def mean_test_acc(method, dataset, split, seeds, data_root, **kw):
    spec = RunSpec(methods=[method], dataset=dataset, split=split, seeds=seeds, data_root=str(data_root),
                   track=False, progress=False, **kw)
    return statistics.fmean(r.metrics["test_acc"] for r in run_targets(spec))


@pytest.mark.data
def test_gcn_and_mlp_on_cora_public(data_root):
    assert mean_test_acc("gcn", "cora", "public", [0, 1, 2], data_root) >= 0.79
    assert mean_test_acc("mlp", "cora", "public", [0, 1, 2], data_root) >= 0.55


@pytest.mark.data
@pytest.mark.slow
def test_gcn_on_computers_random_split(data_root):
    assert mean_test_acc("gcn", "computers", "random-75-10-15", [0, 1, 2], data_root) >= 0.88
