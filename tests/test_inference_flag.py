"""``info["inference_private"]`` is derived from what a method's inference reads and what its unit protects
(methods.inference), written by the fit template, and refused by the contract when a fit says otherwise."""

from __future__ import annotations

import pytest
import torch

from methods import Budget, get_method
from methods import inference as I
from methods.base import (ConfigError, ContractViolation, Fitted, Method, check_fitted, fit_method,
                          inference_private_of, register, unregister)
from methods.privacy import PrivacyLedger
from methods.streams import RunStreams

PRIVATE = Budget(4.0, 1e-4)


@pytest.mark.parametrize("unit,reads,private", [
    # node and edge level: the queried node's own row is the querier's input (GAP/ProGAP's convention)
    ("node", {I.OWN_FEATURES}, True),
    ("node", {I.OWN_FEATURES, I.RELEASE, I.PUBLIC}, True),
    ("node", {I.OWN_FEATURES, I.OTHER_FEATURES}, False),
    ("node", {I.OWN_FEATURES, I.EDGES}, False),
    ("node", {I.LABELS}, False),
    ("edge", {I.OWN_FEATURES, I.OTHER_FEATURES, I.RELEASE}, True),  # features are public at edge level
    ("edge", {I.OWN_FEATURES, I.EDGES}, False),
    # feature level: the row is the protected unit, and training nodes' predictions are served to anyone
    ("feature", {I.OWN_FEATURES}, False),
    ("feature", {I.EDGES, I.LABELS, I.PUBLIC, I.RELEASE}, True),
    ("none", set(), False),
])
def test_the_rule(unit, reads, private):
    assert I.inference_private(unit, reads) is private
    assert I.inference_private(unit, reads, claim=False) is False  # no finite epsilon, no private inference


@pytest.mark.parametrize("name,private", [
    ("dp-mlp-feature", False),  # typed True (inherited from dp-mlp) before the flag was derived
    ("drw", False), ("drw-d", False), ("dpgnn", False), ("gcn", False), ("mlp", False),
    ("dp-mlp", True), ("gap-edge", True), ("gap-node", True), ("progap-node", True), ("edgerand", True),
    ("privgnn", True), ("pate-m", True),
])
def test_the_built_in_methods_flags(name, private):
    cls = get_method(name)
    assert inference_private_of(cls, PRIVATE) is private
    assert inference_private_of(cls, Budget()) is False


def test_the_template_writes_the_flag_and_refuses_a_typed_one_that_disagrees(small_task):
    cls = get_method("dp-mlp-feature")
    fitted = cls(**cls.smoke_config).fit(small_task, PRIVATE, seed=0)
    assert fitted.info["inference_private"] is False

    class TypedAsItsParent(cls):
        def _fit(self, ctx):
            fitted = super()._fit(ctx)
            fitted.info["inference_private"] = True  # what DP-MLP at feature level inherited by hand
            return fitted

    with pytest.raises(ContractViolation, match="inference reads own-features, which the feature-level unit"):
        TypedAsItsParent(**cls.smoke_config).fit(small_task, PRIVATE, seed=0)


class _Constant(Fitted):
    def __init__(self, n, c, info):
        self.p = torch.full((n, c), 1.0 / c)
        self.ledger = PrivacyLedger.non_private("a constant")
        self.history = [{"epoch": 1}]
        self.info = info

    def predict_proba(self, nodes=None):
        return self.p if nodes is None else self.p[torch.as_tensor(nodes)]


class _WholeFitPlugin(Method):
    """A plugin that overrides ``fit`` whole and types the flag, as the attack instruments' ``kd-queries`` did."""

    description = "a constant (test)"
    privacy_unit = "none"
    typed: dict = {}

    def fit(self, task, budget, seed=0, device="cpu", progress=False):
        return _Constant(task.num_nodes, task.num_classes, dict(self.typed))


def test_a_plugin_that_overrides_fit_gets_the_flag_and_is_held_to_it(small_task):
    method = _WholeFitPlugin()
    fitted = fit_method(method, small_task, Budget(), RunStreams(0))
    assert fitted.info["inference_private"] is False
    check_fitted(method, fitted, Budget())
    _WholeFitPlugin.typed = {"inference_private": True}
    try:
        fitted = fit_method(method, small_task, Budget(), RunStreams(0))
        with pytest.raises(ContractViolation, match="there is no privacy claim"):
            check_fitted(method, fitted, Budget())
    finally:
        _WholeFitPlugin.typed = {}
    fitted.info.pop("inference_private")
    with pytest.raises(ContractViolation, match="missing"):
        check_fitted(method, fitted, Budget())


@pytest.mark.parametrize("reads", [{"own-features", "neighbours"}, "own-features"])
def test_a_declaration_outside_the_vocabulary_is_refused_at_registration(reads):
    class Odd(_WholeFitPlugin):
        inference_reads = reads

    with pytest.raises(ConfigError, match="inference_reads must be a set of"):
        register("odd-reads")(Odd)
    unregister("odd-reads")


class _NeighbourMean(torch.nn.Module):
    """Serves a trained MLP on each row plus its neighbours' mean row: what an honest MLP's weights, served over the
    graph, would answer."""

    def __init__(self, mlp, edge_index):
        super().__init__()
        self.mlp, self.ei = mlp, edge_index

    def forward(self, g):
        x = g.x.to_dense() if g.x.layout != torch.strided else g.x
        deg = torch.bincount(self.ei[0], minlength=x.size(0)).clamp(min=1).to(x.dtype).view(-1, 1)
        mean = torch.zeros_like(x).index_add_(0, self.ei[0], x[self.ei[1]]) / deg
        return self.mlp(type(g)(x + mean, g.edge_index, g.edge_weight))


def test_a_declaration_narrower_than_what_is_served_is_caught(small_task):
    """An MLP trained on rows alone but served over the graph, still declaring that it reads only the queried node's
    row: a test node's row moves its neighbours' served posteriors while the release (the weights) stays put, so the
    declaration-checking contract test fails on it; the honest MLP passes."""
    from audits.structural import check_inference_reads

    mlp = get_method("mlp")

    class ServedOverTheGraph(mlp):
        def _fit(self, ctx):
            fitted = super()._fit(ctx)
            fitted.model = _NeighbourMean(fitted.model, ctx.task.data.edge_index)
            return fitted

    lying = check_inference_reads(lambda: ServedOverTheGraph(**mlp.smoke_config), small_task, Budget(), RunStreams(3),
                                  tries=3, enough=1)
    assert lying.conclusive >= 1 and lying.max_change > 1e-4 and lying.moved_by in ("features", "edge")
    honest = check_inference_reads(lambda: mlp(**mlp.smoke_config), small_task, Budget(), RunStreams(3), tries=3,
                                   enough=1)
    assert honest.kinds == ("features", "edge") and honest.conclusive >= 2 and honest.max_change == 0


def test_the_accounting_page_lists_every_private_methods_inference_as_derived():
    import re

    from methods import available_methods
    from tests.conftest import REPO

    page = (REPO / "docs" / "accounting.md").read_text(encoding="utf-8")
    listed = {}
    for row in re.findall(r"^\| (private|not private) \| (.+) \|$", page, flags=re.M):
        for name in re.findall(r"`([a-z0-9-]+)`", row[1]):
            listed[name] = row[0] == "private"
    want = {n: inference_private_of(c, PRIVATE) for n, c in available_methods().items()
            if c.privacy_unit != "none" and c.__module__.startswith("methods.")}
    assert listed == want


class _ServedOverHiddenEdges(torch.nn.Module):
    """GAP's classifier plus an exact (noise-free) neighbour sum of the cached X(0), over edges the module keeps to
    itself: served state that neither the release nor the serving state declares."""

    def __init__(self, inner, edge_index):
        super().__init__()
        self.inner, self.ei = inner, edge_index

    def forward(self, *inputs):
        x = inputs[0].to_dense() if inputs[0].layout != torch.strided else inputs[0]
        total = torch.zeros(x.size(0), dtype=x.dtype).index_add_(0, self.ei[0], x[self.ei[1]].sum(1))
        out = self.inner(*inputs)
        return out + total.view(-1, 1) * torch.eye(out.size(1), dtype=out.dtype)[0]


@pytest.mark.parametrize("name", ["gap-edge", "progap-edge", "edgerand", "gap-node", "progap-node"])
def test_private_inference_is_conclusive_for_noisy_releases_by_transplanting_the_served_state(name, small_task):
    """A noisy release differs between two fits one unit apart, so a check that needs the two releases bit-identical
    could never run on GAP, ProGAP or EdgeRand. Transplanting the base fit's release and serving rows into the
    neighbouring fit (``Fitted.with_state``) holds the served model fixed whatever the noise: every change tried is
    conclusive, and the honest methods serve the base's posteriors to every other node."""
    from audits.structural import check_private_inference

    cls = get_method(name)
    budget = Budget(1.0 if cls.privacy_unit == "edge" else 8.0, 1e-4)
    kw = {**cls.smoke_config, **({"max_degree": 20} if cls.privacy_unit == "node" else {})}
    found = check_private_inference(lambda: cls(**kw), small_task, budget, RunStreams(3), cls.privacy_unit, tries=2)
    assert found.claimed and found.tried == 2 and found.conclusive == found.transplanted == 2
    assert found.max_change == 0


def test_a_served_model_reading_undeclared_edges_is_caught_despite_a_noisy_release(small_task):
    """GAP at edge level whose served model also sums X(0) over edges it keeps to itself: each removed edge moves its
    endpoints' posteriors. Before the transplant every change reached the (noisy) release, so the check could not
    run; now it is a violation. The honest GAP passes on the same changes."""
    from audits.structural import check_private_inference

    gap = get_method("gap-edge")

    class HiddenEdges(gap):
        def _fit(self, ctx):
            fitted = super()._fit(ctx)
            fitted.model = _ServedOverHiddenEdges(fitted.model, ctx.task.data.edge_index)
            return fitted

    budget = Budget(1.0, 1e-4)
    lying = check_private_inference(lambda: HiddenEdges(**gap.smoke_config), small_task, budget, RunStreams(3), "edge",
                                    tries=2)
    assert lying.conclusive == lying.transplanted == 2 and lying.max_change > 1e-4 and lying.violated
    honest = check_private_inference(lambda: gap(**gap.smoke_config), small_task, budget, RunStreams(3), "edge",
                                     tries=2)
    assert honest.conclusive == 2 and honest.max_change == 0 and not honest.violated


def test_with_state_refuses_tensors_the_model_does_not_release_or_serve(small_task):
    from methods.base import BenchError

    cls = get_method("gap-edge")
    fitted = fit_method(cls(**cls.smoke_config), small_task, PRIVATE, RunStreams(0))
    release, serving = fitted.release(), fitted.serving_state()
    same = fitted.with_state(release, serving)
    assert torch.equal(same.predict_proba(), fitted.predict_proba())
    with pytest.raises(BenchError, match="with_state: expected release keys"):
        fitted.with_state({**release, "extra": torch.zeros(1)}, serving)
