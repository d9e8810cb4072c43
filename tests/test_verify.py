"""The verification battery (audits.verify): correct methods pass, seeded bugs are caught by the check meant for
them. Fast cases here; the whole mutant zoo is in the slow tests (tests/test_verify_zoo.py)."""

import pytest

from audits.verify import (CHECKS, INCONCLUSIVE, NOT_APPLICABLE, PASS, SKIPPED, VIOLATION, Check, VerifyConfig,
                           VerifyReport, chernoff_sf, verify)
from bench.cli import load_plugin
from bench.datasets import load_dataset
from bench.splits import make_task
from methods import Budget, get_method
from methods.base import ConfigError
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "mutants.py"))
load_plugin(str(REPO / "tests" / "plugins" / "hidden_bugs.py"))
CFG = VerifyConfig(quick=True, canaries=60, inference_tries=2)


@pytest.fixture(scope="module")
def task():
    return make_task(load_dataset("csbm:nodes=600,classes=3,features=32,degree=4"), "random-75-10-15", 0)


def run(name, task, eps=1.0, **over):
    cls = get_method(name)
    rep = verify(lambda: cls(**over), task, Budget(eps, 1e-4), CFG)
    for c in rep.checks:  # every SKIPPED check says why; one that applies and did not run, what would run it
        assert c.verdict != SKIPPED or c.detail.strip(), c
        assert not c.remedy or c.detail.strip(), c
    return rep


def by_name(report):
    return {c.name: c for c in report.checks}


DPMLP = {"epochs": 20, "hidden": 16, "batch_size": 128}
DPGNN = {"batch_size": 128, "epochs": 2, "per_layer_clipping": False, "hidden": 16}
#: DP-GNN's Algorithm 1 (the paper's relation): an in-degree bound the sampler enforces, the mutant's missing one
ALG1 = {**DPGNN, "relation": "in-edges", "max_degree": 1}


def declared(task):
    """The default relation (input-graph): K declared at the task's own largest number of training in-neighbours."""
    from methods.samplers.dpgnn import max_train_in_degree

    return {**DPGNN, "max_degree": max_train_in_degree(task.data.edge_index, task.num_nodes, task.train_mask)}


def test_a_correct_dp_sgd_method_passes_every_check(task):
    rep = run("dp-mlp", task, **DPMLP)
    checks = by_name(rep)
    assert rep.verdict == PASS, [(c.name, c.detail) for c in rep.checks if c.verdict == VIOLATION]
    for name in ("epsilon-accounted", "determinism", "noise-independence", "private-inference", "label-use",
                 "ledger-counts", "noise-calibration", "occurrences", "gradient-canaries", "input-canaries"):
        assert checks[name].verdict == PASS, name
    # the error budget: Bonferroni over the statistical checks, summing to at most 1 - confidence
    assert sum(c.alpha for c in rep.checks) <= 1 - CFG.confidence + 1e-12
    assert checks["noise-calibration"].data["ratio"] == pytest.approx(1.0, abs=0.02)


def test_too_little_noise_is_caught_white_box_and_black_box(task):
    rep = run("mutant-dp-mlp-noise", task, **DPMLP)
    checks = by_name(rep)
    assert rep.verdict == VIOLATION
    assert checks["noise-calibration"].verdict == VIOLATION and "0.01x" in checks["noise-calibration"].detail
    assert checks["gradient-canaries"].verdict == VIOLATION


def test_a_missing_occurrence_bound_is_caught_by_counting_the_canarys_examples(task):
    bad, good = run("mutant-dpgnn-nobound", task, **ALG1), run("dpgnn", task, **ALG1)
    assert by_name(bad)["occurrences"].verdict == VIOLATION
    assert by_name(good)["occurrences"].verdict == PASS and good.verdict == PASS


def test_dpgnn_under_its_default_relation_passes_with_canaries_within_the_declared_bound(task):
    """relation input-graph: K is a declared bound the run refuses to exceed, so the canaries get at most K anchors
    (a canary of K training in-neighbours, in all N(K, 1) = K + 1 of its trees: nothing is dropped)."""
    over = declared(task)
    rep = run("dpgnn", task, **over)
    checks = by_name(rep)
    assert rep.verdict == PASS, [(c.name, c.verdict, c.detail) for c in rep.checks if c.verdict != PASS]
    assert checks["occurrences"].data["degree"] == over["max_degree"]


def test_edge_level_methods_get_edge_canaries_and_no_white_box_checks(task):
    rep = run("edgerand", task, epochs=5)
    checks = by_name(rep)
    assert "edge-canaries" in checks and "input-canaries" not in checks
    # no DP-SGD: its randomized response and Laplace count are held to the ledger through methods.mechanisms
    assert checks["occurrences"].verdict == SKIPPED and checks["gradient-canaries"].verdict == SKIPPED
    assert checks["ledger-counts"].verdict == PASS and checks["noise-calibration"].verdict == PASS
    assert "RR log-ratio" in checks["noise-calibration"].statistic
    # every edge change reaches its release (the randomised graph); private-inference holds it fixed by transplanting
    # the base fit's release into each neighbouring fit, so its changes are conclusive and the headline is a PASS
    pi = checks["private-inference"]
    assert pi.verdict == PASS and not pi.remedy and not pi.statistic.startswith("0/")
    assert pi.data["transplanted"] == pi.data["conclusive"] >= 1
    assert rep.verdict == PASS and not rep.not_run


def test_non_private_and_bad_input():
    t = make_task(load_dataset("csbm:nodes=100,classes=2,features=4,degree=3"), "random-75-10-15", 0)
    rep = verify(lambda: get_method("mlp")(), t, Budget(), CFG)
    assert rep.verdict == NOT_APPLICABLE and rep.checks == [] and "not private" in rep.note
    with pytest.raises(ConfigError):
        verify(lambda: get_method("dp-mlp")(), t, Budget(1.0, 1e-3), VerifyConfig(checks=("nonsense",)))
    with pytest.raises(ConfigError):
        VerifyConfig(seeds=()).validate()
    assert set(CFG.checks) == set(CHECKS)


def test_chernoff_p_value_is_a_valid_binomial_tail_bound():
    from scipy import stats

    for n, p, s in [(1000, 0.1, 130), (500, 0.3, 180), (50, 0.5, 40), (10_000, 0.01, 130)]:
        assert stats.binom.sf(s - 1, n, p) <= chernoff_sf(s, n, p) <= 1.0
    assert chernoff_sf(10, 1000, 0.1) == 1.0


@pytest.mark.parametrize("name,over,check", [
    ("mutant-gap-edge-nonorm", {"epochs": 5, "encoder_epochs": 5}, "noise-calibration"),
    ("mutant-edgerand-keepall", {"epochs": 5}, "noise-calibration"),
    ("mutant-gap-node-bestval", {"batch_size": 64, "encoder_epochs": 10, "epochs": 10, "max_degree": 10,
                                 "relation": "cut-off-graph"}, "label-use"),
])
def test_non_dpsgd_mechanisms_and_label_use_are_held_to_the_ledger(name, over, check, task):
    rep = run(name, task, **over)
    assert by_name(rep)[check].verdict == VIOLATION, [(c.name, c.verdict, c.detail) for c in rep.checks]


def test_dp_sgd_checks_run_on_sparse_bag_of_words_inputs():
    """Bag-of-words features (Cora, CiteSeer, Amazon, Coauthor) reach DP-SGD as sparse rows; every white-box
    probe must read them (the clipping probe once failed on them with an AttributeError)."""
    import dataclasses

    from methods.models import SparseFeatures

    base = make_task(load_dataset("csbm:nodes=600,classes=3,features=64,degree=4"), "random-75-10-15", 0)
    data = base.data.clone()
    data.x = (data.x > 2.0).float()  # ~2% non-zero: the sparse input path
    assert SparseFeatures.maybe(data.x) is not None
    task = dataclasses.replace(base, data=data)
    rep = run("dpgnn-adam", task, eps=8.0, **ALG1)
    checks = by_name(rep)
    assert rep.verdict == PASS, [(c.name, c.detail) for c in rep.checks if c.verdict != PASS]
    assert checks["noise-calibration"].verdict == PASS and checks["gradient-canaries"].verdict == PASS


def test_a_hand_written_dp_sgd_loop_is_inconclusive_not_pass(task):
    """A plugin with its own DP-SGD loop (not methods.dpsgd) and half the noise its ledger accounts: the white-box
    checks cannot see its steps, so the headline is INCONCLUSIVE, naming them and what would make them run."""
    rep = run("handwritten-dpsgd", task, epochs=5, hidden=8, batch_size=128)
    checks = by_name(rep)
    assert rep.verdict == INCONCLUSIVE and not rep.violations, [(c.name, c.verdict, c.detail) for c in rep.checks]
    blind = {"ledger-counts", "noise-calibration", "occurrences", "gradient-canaries", "mechanism"}
    for name in blind:
        assert checks[name].verdict == SKIPPED and "poisson_gaussian" in checks[name].detail, name
        assert "methods.dpsgd.DPOptimizer" in checks[name].remedy, name
    assert checks["noise-independence"].verdict == PASS and checks["noise-independence"].remedy  # seeds only
    assert {c.name for c in rep.not_run} == blind | {"noise-independence"}
    head = rep.headline()
    assert head.startswith("INCONCLUSIVE") and "DPOptimizer" in head and all(n in head for n in blind)
    assert checks["input-canaries"].verdict == PASS  # the black-box audit ran, and cannot see a 2x leak here


def test_the_headline_is_pass_only_when_every_check_that_applies_ran():
    def report(*checks):
        return VerifyReport("m", "node", "d", "s", 1.0, 1e-5, 0.95, [0], list(checks))

    ok = Check("a", 0, PASS, "-", "-")
    skip = Check("b", 0, SKIPPED, "-", "-", "labels are public at the edge level")
    blind = Check("c", 0, SKIPPED, "-", "-", "no step seen", remedy="use the DP optimiser")
    partial = Check("d", 0, PASS, "-", "-", "seeds only", remedy="use the DP optimiser")
    bad = Check("e", 0, VIOLATION, "-", "-", "too little noise")
    assert report(ok, skip).verdict == PASS  # a check that does not apply does not count against PASS
    assert report(ok, blind).verdict == INCONCLUSIVE and report(ok, partial).verdict == INCONCLUSIVE
    assert report(ok, blind, bad).verdict == VIOLATION  # a violation beats everything
    assert report(ok, blind).to_dict()["not_run"] == [{"name": "c", "seed": 0, "why": "no step seen",
                                                       "remedy": "use the DP optimiser"}]
    assert VerifyReport("gcn", "none", "d", "s", float("inf"), 0.0, 0.95, [0], []).verdict == NOT_APPLICABLE
    chosen = VerifyReport("m", "node", "d", "s", 1.0, 1e-5, 0.95, [0], [ok], deselected=["determinism"])
    assert chosen.verdict == INCONCLUSIVE and "determinism" in chosen.headline()  # a subset is not a PASS


def test_a_skipped_check_without_a_reason_cannot_be_made():
    with pytest.raises(ValueError, match="must say why"):
        Check("x", 0, SKIPPED, "-", "-")
    with pytest.raises(ValueError, match="must say why"):
        Check("x", 0, SKIPPED, "-", "-", "  ", remedy="something")


def test_the_command_says_why_and_exits_4_on_inconclusive_0_on_not_applicable(capsys):
    from bench.cli import main

    plugin = str(REPO / "tests" / "plugins" / "hidden_bugs.py")
    rc = main(["--plugin", plugin, "verify", "-m", "handwritten-dpsgd", "-d", "csbm:nodes=100,classes=2", "-e", "1",
               "--set", "epochs=2", "--checks", "ledger-counts,noise-calibration", "--no-track", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 4 and "NOT RUN: the ledger accounts poisson_gaussian" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("INCONCLUSIVE (no check found a violation): ledger-counts, noise-calibration apply")
    assert "determinism" in last and "were not selected (--checks)" in last
    assert "SKIPPED - -" not in out and "  SKIPPED\n" not in out
    rc = main(["verify", "-m", "gcn", "-d", "csbm:nodes=100,classes=2", "--no-track", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and out.strip().splitlines()[-1].startswith("NOT APPLICABLE (gcn is not private")


@pytest.mark.parametrize("layout, blocks", [("sage", 2), ("sum", 2), ("gcn", 1)])
def test_dpsgd_examples_that_read_the_neighbours_are_caught_whatever_the_layout(task, layout, blocks):
    """A node-level DP-SGD whose examples read the neighbours' rows ([x_v | mean x_u] of width 2F, a sum, a
    GCN-normalised input) under a ledger of independent nodes: the layout is traced (which input columns carry a
    canary's data, in which block) and each canary is counted in its anchors' examples too. A first layer of width
    2F used to be "the DP-SGD examples do not read the raw features": SKIPPED, and PASS overall."""
    rep = run("neighbour-reading-dpsgd", task, layout=layout, **DPMLP)
    occ = by_name(rep)["occurrences"]
    assert occ.verdict == VIOLATION and rep.verdict == VIOLATION, occ
    assert occ.data["blocks"] == blocks and occ.data["drawn"] > 2 * occ.data["allowed_mean"]


def test_correct_methods_keep_their_occurrence_counts_under_the_traced_layout(task):
    for name, over in (("dp-mlp", DPMLP), ("dpgnn", DPGNN)):
        rep = run(name, task, **(declared(task) if name == "dpgnn" else over))
        occ = by_name(rep)["occurrences"]
        assert occ.verdict == PASS and occ.data["blocks"] == 1, (name, occ)


def test_an_input_layout_that_cannot_be_traced_is_inconclusive_not_skipped(task):
    """A correct DP-MLP on a public rotation of each row: no input column is a raw column, so the canary checks
    cannot say which columns hold a node's data. They say so, with what would make them run."""
    rep = run("projected-dp-mlp", task, **DPMLP)
    checks = by_name(rep)
    for name in ("occurrences", "gradient-canaries"):
        c = checks[name]
        assert c.verdict == SKIPPED and c.remedy and "could not be traced" in c.detail, c
    assert rep.verdict == INCONCLUSIVE and rep.violations == []


def test_no_white_box_check_passes_a_method_it_cannot_see(task):
    """Registry-wide: on a DP-SGD loop the suite cannot see into (handwritten-dpsgd) or an input layout it cannot
    trace (projected-dp-mlp), every registered white-box or mechanism check that applies either found a violation
    or says it did not run (a remedy), and the headline is not PASS -- whatever checks plugins add."""
    from audits.checks import REGISTRY

    for name in ("handwritten-dpsgd", "projected-dp-mlp"):
        rep = run(name, task, **({"epochs": 3} if name == "handwritten-dpsgd" else DPMLP),
                  **({"noise_factor": 1.0} if name == "handwritten-dpsgd" else {}))
        assert rep.verdict != PASS, name
        blind = {"handwritten-dpsgd": {s for s, spec in REGISTRY.items() if spec.group in ("white-box", "mechanism")},
                 "projected-dp-mlp": {"occurrences", "gradient-canaries"}}[name]
        for c in rep.checks:
            if c.name in blind and c.verdict != VIOLATION:
                assert c.remedy, (name, c)


def test_shuffled_fixed_size_batches_accounted_as_poisson_are_a_violation(task):
    """The ledger's counts and means match shuffling (so ledger-counts and occurrences passed it); the batch sizes'
    spread does not: a Poisson ledger with one size at almost every step is a VIOLATION."""
    rep = run("shuffled-dp-mlp", task, **DPMLP)
    lc = by_name(rep)["ledger-counts"]
    assert lc.verdict == VIOLATION and "look like fixed-size (shuffled) batches" in lc.detail
    assert by_name(run("dp-mlp", task, **DPMLP))["ledger-counts"].verdict == PASS


def test_every_seed_is_verified_after_the_preflight_fit(task):
    """The battery runs each seed of the configuration, the first from the preflight's base fit."""
    from audits.verify import preflight

    cls = get_method("dp-mlp")
    cfg = VerifyConfig(seeds=(0, 1), quick=True, canaries=60, inference_tries=2, checks=("ledger-counts",))
    budget = Budget(1.0, 1e-4)
    first = preflight(lambda: cls(**DPMLP), task, budget, cfg)
    rep = verify(lambda: cls(**DPMLP), task, budget, cfg, first=first)
    seeds = {c.seed for c in rep.checks}
    assert seeds == {0, 1}, [(c.name, c.seed) for c in rep.checks]
    assert by_name(rep)["ledger-counts"].verdict == PASS
