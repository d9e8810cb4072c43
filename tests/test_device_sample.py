"""scripts.device_sample: the leaderboard refit on a device, sampled; and the committed sample held to the CPU grid."""

import math
import statistics

import pytest

from bench import api, records
from bench.studies import device_sample as D
from tests.conftest import REPO

RUNS = REPO / "docs" / "leaderboard" / "runs"
SAMPLE = REPO / D.DEFAULT_OUT


@pytest.fixture(scope="module")
def current():
    return api.config_records(str(REPO / "configs" / "leaderboard.yaml"), records.load(RUNS))


def test_the_sample_covers_every_row_group_once_at_seed_0_and_the_median_epsilon(current):
    sample = D.select(current)
    groups = D.groups(current)
    assert len(sample) == len(groups) == len({r["cell_id"] for r in sample})
    for r in sample:
        p = r["params"]
        recs = groups[(p["method"], p["dataset"], p["split"])]
        epsilons = sorted({float(x["params"]["target_epsilon"]) for x in recs})
        assert float(p["target_epsilon"]) == epsilons[(len(epsilons) - 1) // 2]
        assert int(p["seed"]) == min(int(x["params"]["seed"]) for x in recs
                                     if float(x["params"]["target_epsilon"]) == float(p["target_epsilon"]))
    # round-robin: the first len(methods) picks are one per method, so a time budget still covers every method
    methods = {r["params"]["method"] for r in sample}
    assert {r["params"]["method"] for r in sample[:len(methods)]} == methods


def test_prediction_interval_is_the_t_interval_for_one_more_draw():
    from scipy import stats

    xs = [0.70, 0.72, 0.71, 0.69, 0.73]
    lo, hi = D.prediction_interval(xs)
    half = stats.t.ppf(0.975, 4) * statistics.stdev(xs) * math.sqrt(1.2)
    assert math.isclose(hi - lo, 2 * half) and math.isclose((lo + hi) / 2, statistics.fmean(xs))
    assert D.prediction_interval([0.5]) == (0.5, 0.5)


def test_report_counts_cells_outside_and_scales_the_grid_by_the_device_ratio(current):
    picked = D.select(current)[:2]
    fake = []
    for r, acc in zip(picked, (float(picked[0]["metrics"]["test_acc"]), -1.0)):
        p = r["params"]
        fake.append({"name": r["name"], "params": p, "test_acc": acc, "cpu_test_acc": float(r["metrics"]["test_acc"]),
                     "device_fit_seconds": 0.5 * float(r["metrics"]["fit_seconds"]),
                     "cpu_fit_seconds": float(r["metrics"]["fit_seconds"]), "ledger_equal": True, "host": "x"})
    rep = D.report(fake, current)
    assert rep["sampled"] == 2 and rep["inside"] == 1  # an accuracy of -1 is outside any interval
    assert set(rep["ratio_by_method"].values()) == {0.5}
    sampled_methods = {r["params"]["method"] for r in picked}
    cpu_of = sum(float(r["metrics"].get("fit_seconds", 0.0)) for r in current
                 if r.get("kind", "run") == "run" and r["params"]["method"] in sampled_methods)
    assert math.isclose(rep["device_seconds_estimate"], rep["cpu_seconds"] - 0.5 * cpu_of)
    assert "outside" in D.format_report(rep, fake)


@pytest.mark.data
def test_a_refit_spends_the_recorded_ledger(current, data_root):
    import torch

    rec = next(r for r in D.select(current) if r["params"]["method"] == "dp-mlp" and r["params"]["dataset"] == "cora")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the record ran; more only oversubscribe a test worker
    try:
        out = D.refit(rec, "cpu", "0" * 40, {})
    finally:
        torch.set_num_threads(threads)
    assert out["ledger_equal"] and math.isclose(out["epsilon"], out["cpu_epsilon"], rel_tol=D.LEDGER_RTOL)
    assert 0 <= out["test_acc"] <= 1 and out["device_fit_seconds"] > 0


def test_the_committed_device_sample_agrees_with_the_cpu_grid(current):
    """The refits on an accelerator (docs/scale/device_sample.jsonl, when one was measured) spent exactly the CPU
    records' ledgers, and their accuracies fall inside the CPU rows' 95% prediction intervals about as often as
    95% intervals should (at least 85% of the cells: a sample of a few dozen)."""
    if not SAMPLE.exists():
        pytest.skip(f"no device sample committed ({SAMPLE.relative_to(REPO)})")
    sample = records.load(SAMPLE)
    assert sample, "empty device sample"
    # compare with the rows of the code the sample refit: the grid's base release; rows regenerated since by a
    # later release (node-level GAP/ProGAP/DP-GNN and PATE from 1.1.0) ran other code
    from collections import Counter

    base = Counter(r.get("git_commit") for r in current if r.get("kind", "run") == "run").most_common(1)[0][0]
    current = [r for r in current if r.get("git_commit") == base]
    held = {(r["params"]["method"], r["params"]["dataset"], r["params"]["split"], D._eps(r)) for r in current
            if r.get("kind", "run") == "run"}
    sample = [s for s in sample if (s["params"]["method"], s["params"]["dataset"], s["params"]["split"],
                                    float(s["params"]["target_epsilon"])) in held]
    assert len(sample) >= 100, len(sample)
    rep = D.report(sample, current)
    assert rep["ledgers_equal"] == rep["sampled"], [c["name"] for c in rep["cells"] if not c["ledger_equal"]]
    assert all(s["epsilon"] is None or math.isclose(s["epsilon"], s["cpu_epsilon"], rel_tol=1e-9) for s in sample)
    assert rep["inside"] >= 0.85 * rep["sampled"], D.format_report(rep, sample)
    assert all(len(s["git_commit"]) == 40 for s in sample)  # a full commit anyone can check out
