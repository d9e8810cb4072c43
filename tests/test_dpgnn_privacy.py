"""DP-GNN's privacy argument, checked on the implementation: which trees change when one node is removed from the
input graph with all its edges (relation ``input-graph``: exactly the trees that held it, at most N(K, r)), the
paper's own relation (``in-edges``: a node owns its incoming edge list) and the gadget on which Algorithm 1 breaks
for input graphs, the clipped-sum and count sensitivities, the joint (gradient, count) accounting of adaptive
clipping, and that the noise, batches and ledger of a fit are what the ledger claims."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import methods.dpgnn as D
from methods.base import Budget, BudgetError
from methods.dpsgd import PerExampleGradients
from methods.privacy import HypergeometricGaussian
from methods.samplers.dpgnn import max_train_in_degree, occurrence_bound, sample_subgraphs


def trees_of(ei, n, train, k, r, key, cap=None, relation="input-graph"):
    lists, trees = sample_subgraphs(ei, n, train, k, r, key=key, max_children=cap, relation=relation)
    return {int(root): (trees.nodes[i][trees.nodes[i] >= 0].tolist(), trees.parent[i][trees.nodes[i] >= 0].tolist())
            for i, root in enumerate(trees.roots)}


def containing(trees, v):
    return {root for root, (nodes, _) in trees.items() if v in nodes}


def canonical(tree, ids=None):
    """A tree as nested (node, sorted children) with its nodes renamed by ``ids``: equal for the same tree whatever
    the order of the children."""
    nodes, parent = tree
    ids = ids if ids is not None else list(range(max(nodes) + 1))
    kids = {}
    for pos, par in enumerate(parent):
        if par >= 0:
            kids.setdefault(par, []).append(pos)

    def rec(pos):
        return ids[nodes[pos]], tuple(sorted(rec(c) for c in kids.get(pos, [])))

    return rec(0)


def remove_node(ei, n, train, v, mode):
    """The input graph without node v and ALL its edges (the add/remove relation on input graphs). ``isolated``: v
    keeps its id, with no edge and not training; ``deleted``: v is gone and the nodes after it are renumbered.
    Returns (edge_index, num_nodes, train_mask, old id of every new id)."""
    ei = ei[:, (ei[0] != v) & (ei[1] != v)]
    if mode == "isolated":
        train = train.clone()
        train[v] = False
        return ei, n, train, list(range(n))
    old = [i for i in range(n) if i != v]
    return ei - (ei > v).long(), n - 1, train[torch.tensor(old, dtype=torch.long)], old


@st.composite
def graph_and_node(draw, max_nodes=25):
    n = draw(st.integers(2, max_nodes))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=8 * n))
    if draw(st.booleans()):
        pairs = pairs + [(v, u) for u, v in pairs]
    ei = torch.tensor(pairs, dtype=torch.long).t()
    train = torch.tensor(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=torch.bool)
    train[draw(st.integers(0, n - 1))] = True
    return ei, n, train, draw(st.integers(0, n - 1))


# --------------------------------------------------------------------------------------
# relation input-graph: removing v with all its edges changes exactly the trees that held v
# --------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(g=graph_and_node(), extra=st.integers(0, 3), r=st.integers(1, 3), key=st.integers(0, 2 ** 62 - 1),
       cap=st.sampled_from([None, 1, 2]))
def test_removing_a_node_changes_exactly_the_trees_that_held_it(g, extra, r, key, cap):
    """``input-graph``, K >= the graph's largest training in-degree, v kept as an isolated id: under the same key
    the trees that differ between G and G - v (v's own tree gone) are exactly the trees of G that contain v, at
    most N(K, r) of them, with or without ``max_children``."""
    ei, n, train, v = g
    k = max(1, max_train_in_degree(ei, n, train)) + extra
    before = trees_of(ei, n, train, k, r, key, cap)
    ei2, n2, train2, _ = remove_node(ei, n, train, v, "isolated")
    after = trees_of(ei2, n2, train2, k, r, key, cap)
    assert set(after) == set(before) - {v}
    changed = {root for root in before if after.get(root) != before[root]}
    holding = containing(before, v)
    assert changed == holding
    assert len(holding) <= occurrence_bound(k, r)
    assert not containing(after, v)


@settings(max_examples=100, deadline=None)
@given(g=graph_and_node(), extra=st.integers(0, 3), r=st.integers(1, 3), key=st.integers(0, 2 ** 62 - 1),
       cap=st.sampled_from([None, 2]))
def test_deleting_a_node_and_renumbering_changes_only_the_trees_that_held_it(g, extra, r, key, cap):
    """The same with v deleted and the nodes after it renumbered. The coins hash node ids, so renumbering changes
    the priority order of out-lists (equal in law, not edge for edge): the trees are compared as unordered trees
    of original ids, and with ``max_children`` (which keeps the top of that order) v is the last id, so that no
    other id moves."""
    ei, n, train, v = g
    if cap is not None:
        v = n - 1
    k = max(1, max_train_in_degree(ei, n, train)) + extra
    before = trees_of(ei, n, train, k, r, key, cap)
    ei2, n2, train2, old = remove_node(ei, n, train, v, "deleted")
    after = {old[root]: canonical(t, old) for root, t in trees_of(ei2, n2, train2, k, r, key, cap).items()}
    assert set(after) == set(before) - {v}
    changed = {root for root in before if after.get(root) != canonical(before[root])}
    holding = containing(before, v)
    assert changed == holding and len(holding) <= occurrence_bound(k, r)


# --------------------------------------------------------------------------------------
# relation in-edges (the paper's): its own relation holds, input graphs do not
# --------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(g=graph_and_node(), k=st.integers(1, 10), r=st.integers(1, 3), key=st.integers(0, 2 ** 62 - 1),
       cap=st.sampled_from([None, 2]))
def test_under_the_papers_own_relation_only_trees_containing_the_node_change(g, k, r, key, cap):
    """The PAPER'S relation (Definition 1 + Remark 2), not neighbouring input graphs: node v owns its features,
    label and incoming edge list; v stays a training root with its out-edges (they belong to the other nodes'
    in-lists). Dropping v's incoming list changes only the trees that contained v -- at most N(K, r) of them
    (Lemma 1) -- under the same coins of Algorithm 1."""
    ei, n, train, v = g
    before = trees_of(ei, n, train, k, r, key, cap, relation="in-edges")
    after = trees_of(ei[:, ei[1] != v], n, train, k, r, key, cap, relation="in-edges")
    assert before.keys() == after.keys()
    changed = {root for root in before if before[root] != after[root]}
    holding = containing(before, v)
    assert changed <= holding
    assert len(holding) <= occurrence_bound(k, r)
    assert containing(after, v) <= {v}  # v is nobody's child any more


def gadget(s):
    """Training v = 0 and w_i = i, non-training u_i = s + i (i = 1..s); undirected edges w_i - u_i and v - u_i.
    Every u_i has the training in-list {w_i, v}: with K = 2 Algorithm 1 keeps (w_i, u_i) with probability 1/2 in G
    and always in G - v."""
    w = torch.arange(1, s + 1)
    u = w + s
    und = torch.cat([torch.stack([w, u]), torch.stack([torch.zeros_like(u), u])], 1)
    train = torch.zeros(2 * s + 1, dtype=torch.bool)
    train[: s + 1] = True
    return torch.cat([und, und.flip(0)], 1), 2 * s + 1, train


def changed_without_v(s, key, relation):
    ei, n, train = gadget(s)
    before = trees_of(ei, n, train, 2, 1, key, relation=relation)
    ei2, n2, train2, _ = remove_node(ei, n, train, 0, "isolated")
    after = trees_of(ei2, n2, train2, 2, 1, key, relation=relation)
    return len({root for root in before if after.get(root) != before[root]} - containing(before, 0))


def test_algorithm_1_changes_unboundedly_many_trees_that_never_held_the_removed_node():
    """Removing v with its edges (a neighbouring input graph) changes about S/2 of the w_i's trees under
    ``in-edges``, none of which contains v, against the ledger's N(2, 1) = 3; the count grows with S. The law of
    each such tree changes (u_i kept w.p. 1/2 vs always), so no coupling of the coins avoids it. Under
    ``input-graph`` (K = 2 bounds every training in-degree here) none changes."""
    keys = range(20)
    means = []
    for s in (8, 32, 128):
        counts = [changed_without_v(s, key, "in-edges") for key in keys]
        mean = sum(counts) / len(counts)
        assert abs(mean - s / 2) < 4 * math.sqrt(s / 4 / len(counts))
        means.append(mean)
        assert all(changed_without_v(s, key, "input-graph") == 0 for key in keys[:5])
    assert means[0] < means[1] < means[2] and means[-1] > 10 * occurrence_bound(2, 1)


@settings(max_examples=25, deadline=None)
@given(g=graph_and_node(14), extra=st.integers(0, 2), r=st.integers(1, 2), key=st.integers(0, 2 ** 62 - 1),
       backbone=st.sampled_from(["gcn", "gin", "gat"]), clip=st.floats(0.05, 3.0), seed=st.integers(0, 99),
       cap=st.sampled_from([None, 2]))
def test_clipped_sum_and_count_sensitivity(g, extra, r, key, backbone, clip, seed, cap):
    """Lemma 2 with per-layer clipping on neighbouring input graphs (``input-graph``, v removed with all its edges):
    for every batch B of G's trees, the clipped gradient sums on G and G - v (v's own tree absent there) differ by
    <= 2 C |B n S(v)| and the clipping counts by <= |B n S(v)|, S(v) = the trees of G holding v."""
    ei, n, train, v = g
    k = max(1, max_train_in_degree(ei, n, train)) + extra
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=gen)
    y = torch.randint(0, 3, (n,), generator=gen)
    torch.manual_seed(seed)
    model = D.DPGNNModel(5, 3, backbone, hidden=4, layers=r, heads=2)
    grads = PerExampleGradients(model)

    def per_tree(edge_index, mask):
        _, trees = sample_subgraphs(edge_index, n, mask, k, r, key=key, max_children=cap)
        out = {}
        for i, root in enumerate(trees.roots.tolist()):
            nodes, parent = trees.nodes[i:i + 1], trees.parent[i:i + 1]
            xb = x[nodes.clamp(min=0)] * (nodes >= 0).unsqueeze(-1)
            sums, norms, _ = grads.norms_and_sum((xb, parent), y[nodes[:, 0]], clip, per_layer=True)
            out[root] = (torch.cat([s.reshape(-1) for s in sums]), float(norms[0] <= clip))
        return trees, out

    t1, first = per_tree(ei, train)
    ei2, _, train2, _ = remove_node(ei, n, train, v, "isolated")
    _, second = per_tree(ei2, train2)
    roots = t1.roots.tolist()
    zero = (torch.zeros_like(first[roots[0]][0]), 0.0)
    g1 = torch.stack([first[r_][0] for r_ in roots])
    g2 = torch.stack([second.get(r_, zero)[0] for r_ in roots])
    c1 = torch.tensor([first[r_][1] for r_ in roots])
    c2 = torch.tensor([second.get(r_, zero)[1] for r_ in roots])
    assert (g1.norm(dim=1) <= clip * (1 + 1e-4)).all() and (g2.norm(dim=1) <= clip * (1 + 1e-4)).all()
    holding = torch.tensor([v in t1.members(i) for i in range(t1.num_subgraphs)])
    assert int(holding.sum()) <= occurrence_bound(k, r)
    for trial in range(6):
        batch = torch.rand(t1.num_subgraphs, generator=gen) < 0.5 if trial else torch.ones(t1.num_subgraphs, dtype=torch.bool)
        rho = int((batch & holding).sum())
        assert float((g1[batch].sum(0) - g2[batch].sum(0)).norm()) <= 2 * clip * rho * (1 + 1e-4) + 1e-6
        assert abs(float(c1[batch].sum() - c2[batch].sum())) <= rho
        assert torch.allclose(g1[batch & ~holding], g2[batch & ~holding], atol=1e-6)  # the other trees: the same


@pytest.mark.parametrize("n,occ,m,lam_g,lam_c", [(500, 11, 50, 1.3, 4.0), (40, 13, 40, 0.8, 2.5), (2000, 4, 300, 2.0, 8.0)])
def test_joint_gradient_and_count_release_is_theorem_1_with_the_effective_multiplier(n, occ, m, lam_g, lam_c):
    """Direct computation of the joint mechanism's RDP (a rho-dependent Gaussian on (sum, count) with noise
    stds lambda_g 2 C N(K,r) and lambda_c N(K,r), per-tree sensitivities 2C and 1) against the ledger's event."""
    from scipy.special import logsumexp
    from scipy.stats import hypergeom

    c = 0.7
    sg, sc = lam_g * 2 * c * occ, lam_c * occ
    rho = np.arange(0, min(m, occ) + 1)
    logp = hypergeom(n, occ, m).logpmf(rho)
    lam = D.effective_noise_multiplier(lam_g, lam_c)
    assert lam < min(lam_g, lam_c)
    event = HypergeometricGaussian(num_train=n, occurrence_bound=occ, batch_size=m, noise_multiplier=lam)
    orders = np.array([1.5, 2.0, 4.0, 10.0, 33.0])
    ours = event.rdp(orders)
    for a, got in zip(orders, ours):
        half_sq = (rho * 2 * c / sg) ** 2 / 2 + (rho / sc) ** 2 / 2  # squared Mahalanobis sensitivity / 2
        direct = logsumexp(logp + a * (a - 1) * half_sq) / (a - 1)
        assert got == pytest.approx(direct, rel=1e-9, abs=1e-12)
    assert D.gradient_noise_multiplier(lam, lam_c) == pytest.approx(lam_g)
    with pytest.raises(BudgetError, match="count"):
        D.gradient_noise_multiplier(3.0, 2.0)


def record_steps(monkeypatch):
    calls = []
    real = D.DPOptimizer.step

    def step(self, inputs, target, noise_std, denominator):
        calls.append({"noise_std": noise_std, "clip": self.clip, "denominator": denominator,
                      "roots": inputs[0].shape[0], "quantile": self.quantile})
        return real(self, inputs, target, noise_std, denominator)

    monkeypatch.setattr(D.DPOptimizer, "step", step)
    samples = []
    real_sample = D.FixedSizeSampler.sample

    def sample(self):
        idx = real_sample(self)
        samples.append(idx.clone())
        return idx

    monkeypatch.setattr(D.FixedSizeSampler, "sample", sample)
    return calls, samples


@pytest.mark.parametrize("relation,k", [("input-graph", 12), ("in-edges", 4)])
@pytest.mark.parametrize("name", ["dpgnn", "dpgnn-adam"])
def test_noise_batches_and_ledger_are_what_the_ledger_claims(monkeypatch, small_task, name, relation, k):
    """(small_task's largest training in-degree is 12, the least K input-graph accepts.)"""
    from methods import get_method

    calls, samples = record_steps(monkeypatch)
    cls = get_method(name)
    cfg = {**cls.smoke_config, "epochs": 3, "batch_size": 40, "max_degree": k, "layers": 1, "relation": relation}
    budget = Budget(3.0, 1e-4)
    method = cls(**cfg)
    fitted = method.fit(small_task, budget, seed=1)
    (event,) = fitted.ledger.events
    occ = occurrence_bound(k, 1)
    # the relation that ran: its label, the family's recipe and what the ledger names public or notes
    assert method.relation_label() == {"input-graph": "node (declared max degree)",
                                       "in-edges": "node (in-edges)"}[relation]
    assert fitted.ledger.recipe.kwargs()["relation"] == relation
    notes = " ".join(fitted.ledger.notes)
    assert f"relation {relation}" in notes
    if relation == "input-graph":
        assert fitted.ledger.public_facts["max_degree"] == k
    else:
        assert "max_degree" not in fitted.ledger.public_facts and "not node-level DP for the input graph" in notes
        assert notes.count("a node owns its features") == 1  # the family's note, not repeated
    n = int(small_task.train_mask.sum())
    assert (event.num_train, event.occurrence_bound, event.batch_size) == (n, occ, 40)
    assert event.count == fitted.info["steps"] == len(calls) == 3 * math.ceil(n / 40)
    assert event.noise_multiplier == fitted.info["noise_multiplier"] > 0
    for call in calls:  # sigma = lambda 2 C N(K, r) on the sum, divided by the fixed batch size m
        assert call["noise_std"] == pytest.approx(event.noise_multiplier * 2 * call["clip"] * occ, rel=1e-12)
        assert call["denominator"] == 40 and call["roots"] == 40
    for idx in samples:  # m distinct subgraphs each step (without replacement)
        assert idx.numel() == 40 and idx.unique().numel() == 40
    eps = fitted.epsilon(budget.delta)
    assert eps <= budget.epsilon and eps == fitted.ledger.epsilon(budget.delta)
    assert fitted.info["inference_private"] is False
    assert [h["epsilon"] for h in fitted.history] == sorted(h["epsilon"] for h in fitted.history)


def test_adaptive_clipping_puts_its_counts_in_the_ledger(monkeypatch, small_task):
    from methods import get_method

    calls, _ = record_steps(monkeypatch)
    cls = get_method("dpgnn-adam")
    cfg = {**cls.smoke_config, "epochs": 3, "batch_size": 40, "adaptive_clipping": True, "count_noise_std": 40.0,
           "clip": 5.0, "clip_quantile": 0.5, "max_degree": 12}
    budget = Budget(3.0, 1e-4)
    fitted = cls(**cfg).fit(small_task, budget, seed=0)
    (event,) = fitted.ledger.events
    occ = occurrence_bound(cfg["max_degree"], 1)
    lam_g = fitted.info["gradient_noise_multiplier"]
    assert event.noise_multiplier == pytest.approx(D.effective_noise_multiplier(lam_g, 40.0 / occ), rel=1e-9)
    assert lam_g > event.noise_multiplier
    clips = [c["clip"] for c in calls]
    assert len(set(clips)) > 1  # the threshold moved
    for call in calls:
        assert call["quantile"].count_noise_std == 40.0
        assert call["noise_std"] == pytest.approx(lam_g * 2 * call["clip"] * occ, rel=1e-12)
    assert fitted.epsilon(budget.delta) <= budget.epsilon
    # the same calibrated multiplier without counts: the identical epsilon (one joint event per step)
    plain = HypergeometricGaussian(num_train=event.num_train, occurrence_bound=occ, batch_size=40,
                                   noise_multiplier=event.noise_multiplier, count=event.count)
    assert fitted.ledger.epsilon(1e-4) == pytest.approx(type(fitted.ledger)((plain,)).epsilon(1e-4))
    with pytest.raises(BudgetError, match="count"):
        cls(**{**cfg, "count_noise_std": 0.5}).fit(small_task, budget, seed=0)


def test_fixed_noise_multiplier_trains_until_the_budget_is_spent(small_task):
    from methods import get_method
    from methods.privacy import presets

    cls = get_method("dpgnn")
    n = int(small_task.train_mask.sum())
    cfg = {**cls.smoke_config, "epochs": 50, "batch_size": 40, "noise_multiplier": 2.0, "max_degree": 3,
           "relation": "in-edges"}
    budget = Budget(2.0, 1e-4)
    fitted = cls(**cfg).fit(small_task, budget, seed=0)
    t = fitted.info["steps"]
    assert 0 < t < 50 * math.ceil(n / 40)
    assert presets.dpgnn(n, 40, 3, 1, 2.0, t).epsilon(1e-4) <= 2.0 < presets.dpgnn(n, 40, 3, 1, 2.0, t + 1).epsilon(1e-4)
    assert fitted.ledger.events[0].count == t
    with pytest.raises(BudgetError, match="one step"):
        cls(**{**cfg, "noise_multiplier": 0.01}).fit(small_task, Budget(0.1, 1e-4), seed=0)
