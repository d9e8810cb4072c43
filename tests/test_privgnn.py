"""PrivGNN, PATE-M/PATE-G and B1/B2: data flow (what each teacher may touch), ledgers, errors, caching."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from methods import Budget, BudgetError, ConfigError, get_method
from methods.privacy import presets as P
from methods.privgnn.common import Graphs, choose_queries, noisy_argmax, split_graphs, teacher_cache
from methods.streams import RunStreams
from methods.privgnn.pate import PATEG, PATEM, partition
from methods.privgnn.privgnn import PrivGNN, nearest, poisson_subsample

SMALL = {"epochs": 6, "hidden": 8, "teacher_batch": 4}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # tiny models: OpenMP synchronisation dominates with 2 threads on a shared machine
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def pp_task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=240,classes=3,features=8,degree=6"), "private-public", 0)


def perturb(graphs: Graphs, node: int) -> Graphs:
    """The same graphs with private node ``node``'s features and label changed and its edges removed."""
    x = graphs.x_private.clone()
    x[node] = 5.0 - x[node]
    y = graphs.y_private.clone()
    y[node] = (y[node] + 1) % graphs.num_classes
    e = graphs.edges_private
    keep = (e[0] != node) & (e[1] != node)
    return Graphs(graphs.private_ids, graphs.public_ids, x, y, e[:, keep], graphs.x_public, graphs.edges_public,
                  graphs.agg_x_public, graphs.query_candidates, graphs.y_public, graphs.num_classes)


def test_split_graphs_keeps_private_and_public_apart(pp_task):
    g = split_graphs(pp_task)
    assert g.num_private == int(pp_task.train_mask.sum())
    assert g.x_public.size(0) == int(pp_task.public_mask.sum())
    assert int(g.edges_private.max()) < g.num_private and int(g.edges_public.max()) < g.x_public.size(0)
    # query candidates are exactly the public-train nodes
    assert torch.equal(g.public_ids[g.query_candidates].sort().values, pp_task.query_mask.nonzero().view(-1))


def test_queries_are_public_train_nodes_and_a_prefix_across_counts(pp_task):
    g = split_graphs(pp_task)
    q10, q25 = choose_queries(g, 10, 3), choose_queries(g, 25, 3)
    assert torch.equal(q10, q25[:10]) and q25.unique().numel() == 25
    assert set(q25.tolist()) <= set(g.query_candidates.tolist())
    # more queries than public-train nodes: every one of them, in the stream's order
    every = choose_queries(g, 10_000, 0)
    assert sorted(every.tolist()) == sorted(g.query_candidates.tolist())


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 400), rate=st.floats(0.0, 1.0), seed=st.integers(0, 10_000))
def test_poisson_subsample_is_a_set_of_private_nodes(n, rate, seed):
    s = poisson_subsample(n, rate, torch.Generator().manual_seed(seed))
    assert s.numel() == s.unique().numel() and (s.numel() == 0 or (0 <= int(s.min()) and int(s.max()) < n))
    if rate == 0.0:
        assert s.numel() == 0
    if rate == 1.0:
        assert s.numel() == n


def test_poisson_subsample_rate():
    s = poisson_subsample(200_000, 0.3, torch.Generator().manual_seed(0))
    assert abs(s.numel() / 200_000 - 0.3) < 0.005  # 0.3 +- 5 standard deviations


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 60), k=st.integers(1, 70), seed=st.integers(0, 1000), metric=st.sampled_from(["euclidean",
                                                                                                         "cosine"]))
def test_nearest_returns_the_k_closest(m, k, seed, metric):
    g = torch.Generator().manual_seed(seed)
    cand = torch.randn(m, 5, generator=g)
    q = torch.randn(5, generator=g)
    idx = nearest(q, cand, k, metric)
    assert idx.numel() == min(k, m) and idx.unique().numel() == idx.numel()
    if metric == "cosine":
        d = 1 - torch.nn.functional.cosine_similarity(cand, q.unsqueeze(0))
    else:
        d = ((cand - q) ** 2).sum(1)
    chosen = d[idx].max()
    rest = torch.ones(m, dtype=torch.bool)
    rest[idx] = False
    assert not rest.any() or bool((d[rest] >= chosen - 1e-6).all())


def test_a_teacher_only_sees_its_subsample(pp_task):
    """Query i's posterior is a function of the private nodes in its Poisson subsample: changing any
    other private node (features, label, edges) leaves it bit-identical; changing one inside does not."""
    method = PrivGNN(queries=3, k=20, sampling_rate=0.3, **SMALL)
    g = split_graphs(pp_task)
    q = choose_queries(g, 3, 0)
    base = method.teacher_log_posteriors(g, q, 0, torch.device("cpu"))
    chosen = method.select(g, 0, int(q[0]), 0)
    sample = poisson_subsample(g.num_private, 0.3, RunStreams(0).torch("sampler", 0))
    outside = sorted(set(range(g.num_private)) - set(sample.tolist()))
    assert outside and chosen.numel() > 0
    out = method.teacher_log_posteriors(perturb(g, outside[0]), q[:1], 0, torch.device("cpu"))
    assert torch.equal(out[0], base[0])
    inside = method.teacher_log_posteriors(perturb(g, int(chosen[0])), q[:1], 0, torch.device("cpu"))
    assert not torch.equal(inside[0], base[0])


def test_teachers_are_independent_of_batching_and_of_later_queries(pp_task):
    g = split_graphs(pp_task)
    q = choose_queries(g, 6, 1)
    a = PrivGNN(queries=6, k=20, **{**SMALL, "teacher_batch": 6}).teacher_log_posteriors(g, q, 1, torch.device("cpu"))
    b = PrivGNN(queries=6, k=20, **{**SMALL, "teacher_batch": 1}).teacher_log_posteriors(g, q, 1, torch.device("cpu"))
    c = PrivGNN(queries=6, k=20, **SMALL).teacher_log_posteriors(g, q[3:], 1, torch.device("cpu"), offset=3)
    assert torch.allclose(a, b, atol=1e-5) and torch.allclose(a[3:], c, atol=1e-5)


def test_pate_changing_one_private_node_moves_at_most_one_vote_per_query(pp_task):
    g = split_graphs(pp_task)
    q = choose_queries(g, 20, 0)
    for cls in (PATEM, PATEG):
        m = cls(teachers=5, queries=20, epochs=6, hidden=8)
        base = m.vote_counts(g, q, 0, torch.device("cpu"))
        assert torch.equal(base.sum(1), torch.full((20,), 5.0))
        for node in (0, 17, 55):
            votes = m.vote_counts(perturb(g, node), q, 0, torch.device("cpu"))
            assert float((votes - base).abs().sum(1).max()) <= 2.0


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 300), parts=st.integers(1, 25), seed=st.integers(0, 1000))
def test_partition_is_disjoint_and_covers_the_private_nodes(n, parts, seed):
    ps = partition(n, parts, torch.Generator().manual_seed(seed))
    allv = torch.cat(ps)
    assert len(ps) == parts and allv.numel() == n and allv.unique().numel() == n


def test_noisy_argmax():
    scores = torch.eye(4).repeat(2500, 1)
    assert torch.equal(noisy_argmax(scores, None, torch.Generator().manual_seed(0)), scores.argmax(1))
    assert (noisy_argmax(scores, 1e6, torch.Generator().manual_seed(0)) == scores.argmax(1)).all()
    noisy = noisy_argmax(scores, 0.2, torch.Generator().manual_seed(0))
    agree = float((noisy == scores.argmax(1)).float().mean())
    assert 0.25 < agree < 0.5  # Laplace(5) noise: mostly noise, a little signal
    # the noise is independent Laplace(1/lambda) per coordinate: for scores (0, 1) and lambda = 1,
    # P(argmax = 1) = P(L0 - L1 < 1) = 1 - exp(-1) (1 + 1/2) / 2 for the difference of two Laplace(1)
    picks = noisy_argmax(torch.tensor([[0.0, 1.0]]).expand(40_000, 2), 1.0, torch.Generator().manual_seed(1)).float().mean()
    assert abs(float(picks) - (1 - 0.75 * math.exp(-1))) < 0.012


def test_privgnn_fit_ledger_calibration_and_budget_errors(pp_task):
    m = PrivGNN(queries=6, k=20, **SMALL)
    fitted = m.fit(pp_task, Budget(3.0, 1e-4), seed=0)
    lam = fitted.info["lam"]
    assert fitted.ledger == P.privgnn(6, lam, 0.3)
    assert 2.99 < fitted.epsilon(1e-4) <= 3.0
    assert P.privgnn(6, lam * 1.01, 0.3).epsilon(1e-4) > 3.0  # the largest lambda that fits
    fixed = PrivGNN(queries=6, k=20, lam=0.5, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=0)
    assert fixed.info["lam"] == 0.5 and fixed.epsilon(1e-4) == P.privgnn(6, 0.5, 0.3).epsilon(1e-4)
    with pytest.raises(BudgetError, match="lam=5 spends"):
        PrivGNN(queries=6, k=20, lam=5.0, **SMALL).fit(pp_task, Budget(1.0, 1e-4), seed=0)
    free = PrivGNN(queries=6, k=20, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=0)
    assert free.info["lam"] is None and free.ledger.non_private_use and free.epsilon(1e-4) == math.inf
    single = PrivGNN(queries=6, k=20, lam=0.5, ablation="singlegnn", **SMALL).fit(pp_task, Budget(math.inf, 1e-4), 0)
    assert single.ledger == P.privgnn(6, 0.5, 0.3, single_teacher=True)
    assert single.epsilon(1e-4) > fixed.epsilon(1e-4)
    knnrem = PrivGNN(queries=6, k=20, lam=0.5, ablation="knnrem", **SMALL).fit(pp_task, Budget(math.inf, 1e-4), 0)
    assert knnrem.ledger == fixed.ledger and knnrem.info["diagnostic"]["mean_teacher_nodes"] > fixed.info["diagnostic"]["mean_teacher_nodes"]
    # the authors' code perturbs log-probabilities: unbounded sensitivity, so never private
    logp = PrivGNN(queries=6, k=20, lam=0.5, noise_on="log_posterior", **SMALL)
    assert logp.fit(pp_task, Budget(math.inf, 1e-4), 0).ledger.non_private_use
    with pytest.raises(BudgetError, match="no finite sensitivity"):
        logp.fit(pp_task, Budget(8.0, 1e-4), 0)


def test_pate_fit_ledger(pp_task):
    f = PATEG(teachers=4, queries=10, lam=0.3, epochs=6, hidden=8).fit(pp_task, Budget(math.inf, 1e-4), seed=0)
    assert f.ledger == P.privgnn_pate(10, 0.3)
    f = PATEM(teachers=4, queries=10, epochs=6, hidden=8).fit(pp_task, Budget(5.0, 1e-4), seed=0)
    assert f.epsilon(1e-4) <= 5.0 and f.ledger == P.privgnn_pate(10, f.info["lam"])


def test_baselines_use_the_labels_they_should(pp_task):
    b1 = get_method("privgnn-b1")(epochs=5, hidden=8).fit(pp_task, Budget(), seed=0)
    b2 = get_method("privgnn-b2")(epochs=5, hidden=8).fit(pp_task, Budget(), seed=0)
    assert b1.info["labels"] == int(pp_task.train_mask.sum()) and b1.info["inference_private"] is False
    assert b2.info["labels"] == int(pp_task.query_mask.sum())
    assert b1.ledger.non_private_use and b2.ledger.non_private_use


def test_public_predictions_never_depend_on_private_data(pp_task):
    """The released student serves public nodes from the public graph only."""
    f = PrivGNN(queries=6, k=20, lam=1.0, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=0)
    p = f.predict_proba()
    g = f.graph
    x = g.x.clone()
    x[pp_task.train_mask] = 3.0
    from methods.training import ModelFitted

    f2 = ModelFitted(f.model, type(g)(x, g.edge_index, g.edge_weight), f.ledger, f.history)
    assert torch.equal(f2.predict_proba()[pp_task.public_mask], p[pp_task.public_mask])


def test_cache_gives_the_same_results_as_separate_fits(pp_task, tmp_path):
    plain = [PrivGNN(queries=q, k=20, lam=lam, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=2).predict_proba()
             for q, lam in ((6, 0.5), (3, 1.0))]
    with teacher_cache(str(tmp_path)) as cache:
        cached = [PrivGNN(queries=q, k=20, lam=lam, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=2)
                  .predict_proba() for q, lam in ((6, 0.5), (3, 1.0))]
        assert len(cache["rows"]) == 1 and list(tmp_path.iterdir())
    assert all(torch.equal(a, b) for a, b in zip(plain, cached))


def test_cached_teachers_are_keyed_by_labels_and_features_too(pp_task, tmp_path):
    """A task whose labels (or features) differ, on the same split and seed, never reads another task's rows:
    the label-use check's premise would otherwise be void under a cache."""
    import dataclasses

    data = pp_task.data.clone()
    data.y = (data.y + 1) % pp_task.num_classes
    relabelled = dataclasses.replace(pp_task, data=data)
    data2 = pp_task.data.clone()
    data2.x = data2.x + 1.0
    shifted = dataclasses.replace(pp_task, data=data2)
    with teacher_cache(str(tmp_path)) as cache:
        fits = [PrivGNN(queries=4, k=20, lam=1.0, **SMALL).fit(t, Budget(math.inf, 1e-4), seed=2)
                for t in (pp_task, relabelled, shifted, pp_task)]
        assert len(cache["rows"]) == 3
    assert [f.info["teachers_reused"] for f in fits] == [0, 0, 0, 4]
    fresh = PrivGNN(queries=4, k=20, lam=1.0, **SMALL).fit(relabelled, Budget(math.inf, 1e-4), seed=2)
    assert torch.equal(fresh.predict_proba(), fits[1].predict_proba())


@pytest.mark.parametrize("bad", [{"sampling_rate": 0.0}, {"sampling_rate": 1.5}, {"k": 0}, {"queries": 0},
                                 {"lam": -1.0}, {"dropout": 1.0}, {"distance": "manhattan"},
                                 {"ablation": "nothing"}])
def test_bad_hyperparameters_are_config_errors(bad):
    with pytest.raises(ConfigError):
        PrivGNN(**bad)


def test_transductive_task_is_refused_with_a_clear_error(small_task):
    for name in ("privgnn", "pate-m", "pate-g", "privgnn-b1", "privgnn-b2"):
        cls = get_method(name)
        budget = Budget(1.0, 1e-4) if cls.privacy_unit != "none" else Budget()
        with pytest.raises(ConfigError, match="private-public"):
            cls(**cls.smoke_config).fit(small_task, budget, seed=0)


@pytest.mark.data
@pytest.mark.slow
def test_computers_end_to_end(data_root):
    """A short PrivGNN run on the real split: teachers beat chance by far, the ledger is the preset's."""
    from bench.datasets import load_dataset
    from bench.splits import make_task

    task = make_task(load_dataset("computers", str(data_root)), "private-public", 0)
    f = PrivGNN(queries=16, lam=1.0, teacher_epochs=100, epochs=100).fit(task, Budget(math.inf, 1e-4), seed=0)
    assert f.info["teacher_label_accuracy"] > 0.6
    assert f.epsilon(1e-4) == pytest.approx(P.privgnn(16, 1.0, 0.3).epsilon(1e-4))
    assert f.predict_proba().shape == (task.num_nodes, task.num_classes)


def test_query_nodes_are_published_for_attack2(pp_task):
    """PrivGNN's Attack-2 (queried vs un-queried public nodes) needs the queried nodes as task indices."""
    from attacks.membership import query_nodes

    for cls, kw in ((PrivGNN, {"queries": 6, "k": 20, "lam": 0.5}), (PATEM, {"queries": 6, "teachers": 3, "lam": 0.5})):
        fitted = cls(**kw, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=0)
        q = query_nodes(pp_task, fitted)
        assert q.numel() == 6 and q.unique().numel() == 6
        assert bool(pp_task.query_mask[q].all()) and not bool(pp_task.train_mask[q].any())


def test_saved_teacher_rows_are_not_read_by_other_code(pp_task, tmp_path, monkeypatch):
    from methods.privgnn import common

    def fit():
        with teacher_cache(str(tmp_path)):
            return PrivGNN(queries=4, k=20, lam=1.0, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=3)

    assert fit().info["teachers_reused"] == 0 and len(list(tmp_path.iterdir())) == 1
    assert fit().info["teachers_reused"] == 4  # a new cache block reads the saved file
    monkeypatch.setattr(common, "code_version", lambda: "other")
    assert fit().info["teachers_reused"] == 0 and len(list(tmp_path.iterdir())) == 2


def test_fresh_bypasses_the_cache_without_reading_or_writing(pp_task, tmp_path):
    from methods.reuse import fresh, reuse_allowed

    def fit():
        return PrivGNN(queries=4, k=20, lam=1.0, **SMALL).fit(pp_task, Budget(math.inf, 1e-4), seed=4)

    with teacher_cache(str(tmp_path)) as cache:
        with fresh():
            assert not reuse_allowed()
            first = fit()
        assert reuse_allowed()
        assert first.info["teachers_reused"] == 0 and not cache["rows"] and not list(tmp_path.iterdir())
        fit()
        with fresh():
            assert fit().info["teachers_reused"] == 0  # rows exist now, and are still not read
        assert fit().info["teachers_reused"] == 4


def test_verification_under_the_cache_retrains_its_determinism_fit_and_so_checks_the_cache(pp_task, tmp_path):
    """A verification inside a teacher cache takes its base fit from rows an earlier fit saved; the determinism
    fit recomputes them, so rows that differ from what the teacher code computes are a determinism violation."""
    from audits.verify import _Battery, VerifyConfig
    from methods.privgnn import common

    budget = Budget(math.inf, 1e-4)  # noise-free pseudo-labels: any change of a row's argmax reaches the student

    def make():
        return PrivGNN(queries=4, k=20, **SMALL)

    def battery():
        b = _Battery(make, pp_task, budget, VerifyConfig(quick=True, seeds=[0]), 0, 0.05)
        b.run("epsilon-accounted")
        return b, b.run("determinism")

    with teacher_cache(str(tmp_path)) as cache:
        make().fit(pp_task, budget, seed=0)
        b, check = battery()
        assert b.base.info["teachers_reused"] == 4 and b.probe_fit.info["teachers_reused"] == 0
        assert check.verdict == "PASS", check
        (key,) = cache["rows"]
        cache["rows"][key] = cache["rows"][key].roll(1, -1)  # rows no teacher computed: every argmax moves
        b, check = battery()
        assert b.base.info["teachers_reused"] == 4
        assert check.verdict == "VIOLATION" and "posteriors differ" in check.detail
    assert common._CACHE is None
