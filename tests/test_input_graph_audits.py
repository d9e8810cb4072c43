"""The mechanism audits on neighbouring INPUT graphs (audits.mechanisms.nap_node_input, .dpgnn_input): the gadgets
move exactly what their analysis says through the methods' own code (degree_bounded_graph then nap;
sample_subgraphs, against the paper's pseudo-code), the papers' relations are flagged and their controls are not,
the search chooses the gadget that breaks a relation and the proven worst case of the sound one, and the shipped
relations raise no false alarm."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from audits.mechanism import MECHANISMS, audit_mechanism
from audits.mechanisms import dpgnn_input as dpi
from audits.mechanisms import nap_node_input as npi
from audits.mechanisms.base import Mutation
from methods.base import ConfigError
from methods.gap.nap import CUTOFF_GRAPH, INPUT_GRAPH
from methods.samplers.dpgnn import IN_EDGES
from methods.streams import RunStreams

SOUND = ("nap-node-input", "dpgnn-input")
PAPERS = ("nap-node-cutoff-input", "dpgnn-in-edges-input")
SMALL = 2_000  # trials per world and half in these tests


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _scores(g, world, trials, relation, degree, seed=0):
    """The gadget's score without noise (NAP's sigma 0: the aggregation itself)."""
    return npi.run_graph(g, world, trials, RunStreams(seed).child("t", int(world)), 0.0, degree, relation)


def test_the_swap_gadget_moves_the_witnesses_under_the_cut_off_and_nothing_within_the_bound():
    """Witnesses' sum: S D - Bin(S, D / (D + 1)) with v and S D without it under the cut-off D; S in both worlds on
    the input graph itself."""
    s, d = 60, npi.CUTOFF_DEGREE
    g = npi.swap(s, d)
    with_v = _scores(g, True, 4_000, CUTOFF_GRAPH, d) * np.sqrt(d)
    without = _scores(g, False, 4_000, CUTOFF_GRAPH, d) * np.sqrt(d)
    assert np.allclose(without, s * d)
    lost = s * d - with_v
    assert np.allclose(lost, np.round(lost)) and lost.min() >= 0
    assert lost.mean() == pytest.approx(s * d / (d + 1), rel=0.02)
    assert lost.var() == pytest.approx(s * d / (d + 1) ** 2, rel=0.1)
    b = g.max_degree
    assert np.allclose(_scores(g, True, 50, INPUT_GRAPH, b), _scores(g, False, 50, INPUT_GRAPH, b))
    with pytest.raises(ConfigError, match="max_degree"):  # the methods' refusal of an input above the bound
        _scores(g, True, 5, INPUT_GRAPH, b - 1)


def test_the_cut_off_does_not_bind_in_the_control():
    """deg(u_i) = D (D - 1 witnesses): the cut-off keeps every edge, the witnesses do not move, no violation."""
    d = npi.CUTOFF_DEGREE
    g = npi.swap(60, d - 1)
    assert np.allclose(_scores(g, True, 200, CUTOFF_GRAPH, d), _scores(g, False, 200, CUTOFF_GRAPH, d))
    mech = MECHANISMS["nap-node-cutoff-input"]
    search = npi.cutoff_search(swaps=((60, d - 1),))
    control = dataclasses.replace(mech, sample=search, pair_epsilon=search.pair_epsilon)
    for eps in (1.0, 4.0):
        r = audit_mechanism(mech.name, eps, trials=SMALL, seed=3, mechanism=control)
        assert r.verdict == "ok" and r.epsilon_lb_cp <= eps and r.epsilon_true == pytest.approx(eps, rel=1e-6)


def test_dpgnn_tree_signs_are_the_papers_pseudo_code():
    """The runner's trees (sample_subgraphs, vectorised) are Algorithms 1-2 as written, under both relations."""
    from methods.samplers.dpgnn import draw_key, reference_dfs_tree, reference_sample_edgelists

    g, trials = dpi.inedges(6), 7
    for relation in (INPUT_GRAPH, IN_EDGES):
        for world in (True, False):
            streams = RunStreams(5).child("t", int(world))
            got = dpi.tree_signs(g, world, trials, streams, dpi.K, relation)
            local = [p for p in g.edges if world or g.target not in p]
            e = torch.tensor([(a + t * g.size, b + t * g.size) for t in range(trials) for a, b in local]).t()
            e = torch.cat([e, e.flip(0)], 1)
            train = torch.zeros(trials * g.size, dtype=torch.bool)
            for t in range(trials):
                train[[t * g.size + j for j in g.train]] = True
            key = draw_key(streams.torch("subgraphs"))
            lists = reference_sample_edgelists(e, trials * g.size, train, dpi.K, key, relation=relation)
            e1 = {t * g.size + j for t in range(trials) for j in g.e1}
            want = [[1.0 if any(node in e1 for node, depth in reference_dfs_tree(t * g.size + r, lists, dpi.DEPTH)
                                if depth >= 1) else -1.0 for r in g.read] for t in range(trials)]
            assert np.array_equal(got, np.array(want)), (relation, world)
            if relation == INPUT_GRAPH:  # every in-edge kept: each w_i tree holds its u_i in both worlds
                assert (got == 1).all()


def test_the_w_tree_gadget_changes_trees_without_v_under_algorithm_1_only():
    g = dpi.inedges(40)
    with_v = dpi.tree_signs(g, True, 500, RunStreams(1).child("a"), dpi.K, IN_EDGES)
    without = dpi.tree_signs(g, False, 500, RunStreams(1).child("b"), dpi.K, IN_EDGES)
    assert (without == 1).all() and ((with_v == 1).mean() == pytest.approx(0.5, abs=0.02))
    assert (dpi.tree_signs(g, True, 50, RunStreams(1).child("c"), 4, IN_EDGES) == 1).all()  # K = 4: all kept


def test_dpgnn_control_with_k_4_is_no_violation():
    """K = 4 under the paper's relation: u_i keeps both in-edges (probability K / 4 = 1), no tree without v changes."""
    mech = MECHANISMS["dpgnn-in-edges-input"]
    search = dpi.in_edges_search(4)
    control = dataclasses.replace(mech, sample=search, event=dpi._event(4), pair_epsilon=search.pair_epsilon)
    for eps in (1.0, 4.0):
        s = control.strength_for_epsilon(eps, 1e-5)
        assert [g.epsilon(s, Mutation(), 1e-5) for g in search.gadgets][1:] == [0.0] * len(dpi.SIZES)
        r = audit_mechanism(mech.name, eps, trials=SMALL, seed=3, mechanism=control)
        assert r.verdict == "ok" and r.epsilon_lb_cp <= eps


@pytest.mark.parametrize("name,expected", [("nap-node-input", "star-60"), ("nap-node-cutoff-input", "swap-60-5"),
                                           ("dpgnn-input", "plain-2"), ("dpgnn-in-edges-input", "inedges-60")])
def test_the_search_chooses_the_worst_case_of_the_sound_relation_and_the_gadget_that_breaks_the_papers(name,
                                                                                                    expected):
    mech = MECHANISMS[name]
    s = mech.strength_for_epsilon(4.0, 1e-5)
    assert mech.sample.chosen(s, SMALL, seed=0) == expected
    true = mech.true_epsilon(s, Mutation(), 1e-5)
    assert true == pytest.approx(4.0, rel=1e-6) if name in SOUND else true > 20


@pytest.mark.parametrize("name", SOUND)
def test_no_false_alarms_on_the_shipped_relations(name):
    """Five seeds at claims 1 and 4: every audit passes (the search never inflates the evaluation half)."""
    out = [audit_mechanism(name, eps, trials=SMALL, seed=100 + seed) for seed in range(5) for eps in (1.0, 4.0)]
    assert [r.verdict for r in out] == ["ok"] * len(out), [(r.epsilon_claimed, r.epsilon_lb_cp) for r in out]
    assert all(r.epsilon_lb_cp <= r.epsilon_claimed and r.epsilon_lb_fdp <= r.epsilon_claimed * 1.001 for r in out)


@pytest.mark.slow
@pytest.mark.parametrize("name", SOUND)
def test_no_false_alarms_and_power_at_more_trials(name):
    """Twenty seeds at claim 1 and 20,000 trials: at most one false alarm (95% each); the noise-1/1.5 mutant is
    flagged in at least 9 of 10 (noise 1/1.25 needs the default trials: test_mechanism_audit.py's slow test)."""
    false = sum(audit_mechanism(name, 1.0, trials=20_000, seed=200 + s).verdict == "VIOLATION" for s in range(20))
    caught = sum(audit_mechanism(name, 1.0, trials=20_000, seed=300 + s, mutation=Mutation(noise=1.5)).verdict
                 == "VIOLATION" for s in range(10))
    assert false <= 1 and caught >= 9, (false, caught)


@pytest.mark.parametrize("name", PAPERS)
def test_the_papers_relations_show_far_more_than_their_ledgers(name):
    """At claim 1 the assumption-free bound alone is several times the ledger's epsilon (the issue measured 1.14 at
    claim 1 with S 20 and 5,000 trials; S 60 is searched here)."""
    r = audit_mechanism(name, 1.0, trials=SMALL, seed=7)
    assert r.verdict == "VIOLATION" and r.epsilon_lb_cp > 3.0 and r.epsilon_accounted < 1.01


def test_the_selection_half_is_the_chosen_gadgets_own_run_and_the_choice_is_order_free():
    """Each half's scores are the chosen gadget's on that half's streams, whichever half is asked first."""
    mech = MECHANISMS["dpgnn-in-edges-input"]
    s = mech.strength_for_epsilon(1.0, 1e-5)
    root = RunStreams(11)
    first = dpi.in_edges_search()  # a fresh cache: the evaluation half asked first
    late = {(h, w): first(s, w, 400, root.child("trial", h, int(w)), Mutation())
            for h in ("eval", "select") for w in (False, True)}
    second = dpi.in_edges_search()
    c = second.choice(s, 400, root.child("trial", "eval", 1), Mutation())
    chosen = second.gadgets[c["chosen"]]
    for (h, w), got in late.items():
        assert np.array_equal(got, chosen.sample(s, w, 400, root.child("trial", h, int(w)), Mutation())), (h, w)


def test_chunks_run_every_trial_with_their_own_streams(monkeypatch):
    """Trial counts above one call's size run in chunks: every trial scored, the law unchanged (noiseless: the
    same values), each chunk's cut-off and noise from its own child streams."""
    g = npi.swap(20, npi.CUTOFF_DEGREE)
    whole = _scores(g, False, 300, CUTOFF_GRAPH, npi.CUTOFF_DEGREE)
    monkeypatch.setattr(npi, "CHUNK_EDGES", 2 * len(g.edges) * 70)
    parts = _scores(g, False, 300, CUTOFF_GRAPH, npi.CUTOFF_DEGREE)
    assert parts.shape == (300,) and np.array_equal(parts, whole)
    monkeypatch.setattr(dpi, "CHUNK_POSITIONS", 500)
    signs = dpi.tree_signs(dpi.inedges(20), True, 90, RunStreams(0).child("c"), dpi.K, IN_EDGES)
    assert signs.shape == (90, 20) and 0.3 < (signs == 1).mean() < 0.7
