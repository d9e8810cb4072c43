"""What a run releases besides its noisy outputs depends on private data only through the facts its ledger names
public (registry-wide, plugins included).

A run releases facts that are not outputs of a mechanism: ``info`` (noise multipliers, steps, sampling rates), the
ledger's events, recipe and notes, and the history's released keys (``bench.run.RELEASED_HISTORY``). Two
neighbouring datasets (one private unit apart, in the method's own unit) fitted with the same seed must give the same
such facts. DP-SGD calibrated to the training-set size n gives different steps and noise for n and n - 1 (DP-GNN at
epsilon 4, m 2000, K 10: T 150 and lambda 3.019 for n = 10000, T 180 and lambda 3.298 for n = 10001), so a released
step count reveals n: the claim holds only if n is public, and then the ledger must say so
(``PrivacyLedger.conventions``, set by the family function). So a difference is allowed only where the ledgers name a
public fact whose value differs, and only if a third dataset that agrees with the neighbour on every named fact, but
differs in private data (another unit removed), releases exactly the same facts. Excluded: ``info["diagnostic"]``,
the keys the method declares noisy (``Method.noisy_info``) and wall-clock measurements (``*_seconds``, like the fit
time).

Delta is an input too: each task's budget is resolved by the harness's own rule (:func:`bench.plan.resolve_budget`:
the largest power of ten below 1 / #privacy units), on tasks cut to exactly 100 units, so that the neighbour's 99
cross a power of ten and the rule's delta (1e-3 against 1e-2), with the noise calibrated to it, changes. The count
is read by the harness, not by a ledger's family, so the run's record names it public
(:func:`bench.plan.harness_conventions`, logged as ``conventions.delta_units``); a released fact that changes with
delta alone (the base task refitted at the neighbour's delta) passes only if that count is named.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
import torch

import bench.plan as plan
from bench.cli import load_plugin
from bench.records import DELTA_UNITS
from bench.run import RELEASED_HISTORY
from methods import Budget, available_methods, get_method
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))
PRIVATE = sorted(n for n, c in available_methods().items() if c.privacy_unit != "none")
EPSILON = 4.0
#: the base task's number of privacy units: a power of ten, so a neighbour's count crosses it
UNITS = 100


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models: torch's intra-op threads only contend (every private method's check takes ~10 s of CPU on one
    thread, several times that with two threads on a busy 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------
# neighbouring tasks
# --------------------------------------------------------------------------------------


def _permute(task, order: torch.Tensor):
    """``task`` with its nodes in ``order`` (node i of the result is node order[i] of ``task``)."""
    n = task.num_nodes
    inv = torch.empty(n, dtype=torch.long)
    inv[order] = torch.arange(n)
    data = task.data.__class__(x=task.data.x[order], y=task.data.y[order], edge_index=inv[task.data.edge_index])
    data.num_nodes = n
    opt = {k: (getattr(task, k)[order] if getattr(task, k) is not None else None)
           for k in ("query_mask", "public_mask", "node_ids")}
    return dataclasses.replace(task, data=data, train_mask=task.train_mask[order], val_mask=task.val_mask[order],
                               test_mask=task.test_mask[order], **opt)


def _drop_node(task, v):
    """``task`` without node ``v`` (an index, or a tensor of them) and its edges (the other nodes keep their
    order)."""
    from torch_geometric.utils import subgraph

    keep = torch.ones(task.num_nodes, dtype=torch.bool)
    keep[v] = False
    idx = keep.nonzero().view(-1)
    ei, _ = subgraph(idx, task.data.edge_index, relabel_nodes=True, num_nodes=task.num_nodes)
    data = task.data.__class__(x=task.data.x[idx], y=task.data.y[idx], edge_index=ei)
    data.num_nodes = int(idx.numel())
    opt = {k: (getattr(task, k)[idx] if getattr(task, k) is not None else None)
           for k in ("query_mask", "public_mask", "node_ids")}
    return dataclasses.replace(task, data=data, train_mask=task.train_mask[idx], val_mask=task.val_mask[idx],
                               test_mask=task.test_mask[idx], **opt)


def _drop_edge(task, a: int, b: int):
    ei = task.data.edge_index
    keep = ~(((ei[0] == a) & (ei[1] == b)) | ((ei[0] == b) & (ei[1] == a)))
    data = task.data.clone()
    data.edge_index = ei[:, keep]
    return dataclasses.replace(task, data=data)


def _replace_row(task, v: int):
    data = task.data.clone()
    data.x = data.x.clone()
    data.x[v] = data.x[v] + 1.0
    return dataclasses.replace(task, data=data)


def at_power_of_ten(task, unit: str, units: int = UNITS):
    """``task`` cut to exactly ``units`` privacy units (:func:`bench.plan.privacy_units`): edges dropped at edge
    level (the first in index order of the unordered pairs kept), nodes at node level (training nodes outside the
    transductive setting, where the count is theirs), drawn with a fixed generator so every split part keeps
    nodes. A feature-level neighbour replaces a row and keeps the count: the task as is."""
    n = plan.privacy_units(task, unit)
    if unit == "feature" or n == units:
        return task
    if n < units:
        pytest.fail(f"the task has {n} {unit} units, fewer than {units}")
    if unit == "edge":
        ei = task.data.edge_index
        upper = ei[:, ei[0] < ei[1]]
        kept = upper[:, :units]
        data = task.data.clone()
        data.edge_index = torch.cat([kept, kept.flip(0)], dim=1)
        return dataclasses.replace(task, data=data)
    pool = (torch.arange(task.num_nodes) if task.setting == "transductive"
            else task.train_mask.nonzero().view(-1))
    order = torch.randperm(pool.numel(), generator=torch.Generator().manual_seed(0))
    out = _drop_node(task, pool[order[:n - units]])
    assert plan.privacy_units(out, unit) == units
    return out


def neighbours(task, unit: str):
    """(base, neighbour, other): ``neighbour`` and ``other`` each differ from ``base`` in one private unit of
    ``unit`` -- a training node removed with its edges (node), an undirected edge removed (edge), a training
    node's feature row replaced (feature) -- and from each other in private data only. The two units differ as
    much as the graph allows (degree, label). For the node unit the two nodes are moved to the end of ``base``,
    so removing either leaves every other node's index (which a run may release, e.g. its query nodes) as is."""
    deg = torch.bincount(task.data.edge_index[0], minlength=task.num_nodes)
    train = task.train_mask.nonzero().view(-1)
    by_deg = train[torch.argsort(deg[train], stable=True)]
    v = int(by_deg[-1])
    others = [int(w) for w in by_deg if int(task.data.y[w]) != int(task.data.y[v])] or [int(by_deg[0])]
    w = others[0]
    if unit == "node":
        rest = [i for i in range(task.num_nodes) if i not in (v, w)]
        base = _permute(task, torch.tensor(rest + [w, v]))
        n = base.num_nodes
        return base, _drop_node(base, n - 1), _drop_node(base, n - 2)
    if unit == "edge":
        ei = task.data.edge_index
        upper = ei[:, ei[0] < ei[1]]
        load = deg[upper[0]] + deg[upper[1]]
        hi, lo = upper[:, int(load.argmax())], upper[:, int(load.argmin())]
        return task, _drop_edge(task, int(hi[0]), int(hi[1])), _drop_edge(task, int(lo[0]), int(lo[1]))
    if unit == "feature":
        return task, _replace_row(task, v), _replace_row(task, w)
    raise ValueError(f"no neighbouring relation for unit {unit!r}")


# --------------------------------------------------------------------------------------
# what a run releases that is not a noisy output
# --------------------------------------------------------------------------------------


def released(cls, fitted) -> dict[str, Any]:
    """The released facts of ``fitted`` that no mechanism randomises, by name (the conventions left out: they
    are what may explain a difference)."""
    out: dict[str, Any] = {}
    for k, v in fitted.info.items():
        if k == "diagnostic" or k in cls.noisy_info or k.endswith("_seconds"):
            continue
        out[f"info.{k}"] = v
    led = fitted.ledger.to_dict()
    led.pop("conventions", None)
    out.update({f"ledger.{k}": v for k, v in led.items()})
    out["history.rows"] = len(fitted.history)
    for key in sorted(RELEASED_HISTORY):
        values = [row.get(key) for row in fitted.history]
        if any(x is not None for x in values):
            out[f"history.{key}"] = values
    return out


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and torch.equal(a.cpu(), b.cpu()))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return sorted(k for k in a.keys() | b.keys() if not same(a.get(k), b.get(k)))


@dataclasses.dataclass
class Dependence:
    """What :func:`check_released_facts` found for one method."""

    method: str
    depends: dict[str, list[str]]  # released key -> the public facts that explain its difference
    problems: list[str]


def budget_for(cls, task) -> Budget:
    """The budget the harness runs ``cls`` at on ``task``: the target epsilon and the rule's delta."""
    return plan.resolve_budget(EPSILON, None, cls(**cls.smoke_config), task)


def _fit(cls, task, budget: Budget | None = None):
    return cls(**cls.smoke_config).fit(task, budget or budget_for(cls, task), seed=0, device="cpu")


def check_released_facts(cls, task, name: str | None = None) -> Dependence:
    """Fit ``cls`` on a task and on its neighbour (same seed) and explain every released difference (see the
    module docstring), in two steps whose chain ends at the runs the harness makes: the data changed at the base's
    delta (explained by the ledgers' conventions, with a third dataset), then the neighbour's own delta from the
    harness's rule (explained only by the record naming the count public: :func:`bench.plan.harness_conventions`)."""
    name = name or cls.name
    base, near, other = neighbours(task, cls.privacy_unit)
    b0, b1 = budget_for(cls, base), budget_for(cls, near)
    f0, f1 = _fit(cls, base, b0), _fit(cls, near, b0)
    r0, r1 = released(cls, f0), released(cls, f1)
    depends: dict[str, list[str]] = {}
    problems: list[str] = []
    diff = differing(r0, r1)
    if diff:
        p0, p1 = f0.ledger.public_facts, f1.ledger.public_facts
        facts = sorted(k for k in p0.keys() | p1.keys() if p0.get(k) != p1.get(k))
        if not facts:
            problems += [f"{name}: {k} differs between neighbouring datasets ({_short(r0.get(k))} vs "
                         f"{_short(r1.get(k))}) and its ledger names no public fact that explains it "
                         f"(PrivacyLedger.conventions: {p0 or 'none'})" for k in diff]
        else:
            f2 = _fit(cls, other, b0)
            if f2.ledger.public_facts != p1:
                return Dependence(name, {}, [f"{name}: the two neighbours disagree on the public facts "
                                             f"({p1} vs {f2.ledger.public_facts}); the check needs a pair that agrees"])
            r2 = released(cls, f2)
            problems += [f"{name}: {k} differs between two datasets that agree on the public facts {p1} "
                         f"({_short(r1.get(k))} vs {_short(r2.get(k))}): it depends on private data the ledger's "
                         "conventions do not name" for k in differing(r1, r2)]
            depends = {k: list(facts) for k in diff}
    if b1.delta != b0.delta:  # the count crossed a power of ten: the neighbour runs at another delta
        by_delta = differing(r1, released(cls, _fit(cls, near, b1)))
        method = cls(**cls.smoke_config)
        c0, c1 = plan.harness_conventions(method, base), plan.harness_conventions(method, near)
        if by_delta and (DELTA_UNITS not in c1 or c0.get(DELTA_UNITS) == c1.get(DELTA_UNITS)):
            n0, n1 = plan.privacy_units(base, cls.privacy_unit), plan.privacy_units(near, cls.privacy_unit)
            problems += [f"{name}: {k} changes with delta alone ({b0.delta:g} for {n0} privacy units, {b1.delta:g} "
                         f"for {n1}) and no convention names the count public (the record's "
                         f"conventions.{DELTA_UNITS})" for k in by_delta]
        for k in by_delta:
            depends.setdefault(k, []).append(DELTA_UNITS)
    return Dependence(name, depends, problems)


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _task_for(cls, small_task, private_public):
    """The task ``cls`` is checked on, cut to :data:`UNITS` privacy units (:func:`at_power_of_ten`)."""
    if small_task.setting in cls.settings:
        return at_power_of_ten(small_task, cls.privacy_unit)
    if private_public.setting in cls.settings:
        return at_power_of_ten(private_public, cls.privacy_unit)
    pytest.fail(f"{cls.name} supports neither the transductive nor the private-public setting")


@pytest.fixture(scope="module")
def private_public_task():
    from bench.datasets import load_dataset
    from bench.splits import make_task

    return make_task(load_dataset("csbm:nodes=200,classes=3,features=8,degree=6"), "private-public", 0)


@pytest.mark.parametrize("name", PRIVATE)
def test_released_facts_depend_on_private_data_only_through_named_conventions(name, small_task,
                                                                              private_public_task):
    cls = get_method(name)
    found = check_released_facts(cls, _task_for(cls, small_task, private_public_task))
    assert not found.problems, "\n".join(found.problems)


def test_a_training_set_size_the_ledger_does_not_name_fails_naming_the_keys(small_task, monkeypatch):
    """dp-mlp's rate B / n and steps ceil(n / B) are released: without its family's ``public=("num_train",)`` the
    check fails and names them; with it, every difference is explained by num_train."""
    from methods.privacy import presets

    cls = get_method("dp-mlp")
    found = check_released_facts(cls, small_task)
    assert not found.problems
    assert {"info.sampling_rate", "info.noise_multiplier", "ledger.events", "ledger.recipe"} <= set(found.depends)
    assert all(v == ["num_train"] for v in found.depends.values())

    declared = presets.dp_mlp

    def undeclared(**kw):
        return dataclasses.replace(declared(**kw), conventions=())

    monkeypatch.setattr(presets, "dp_mlp", undeclared)
    problems = "\n".join(check_released_facts(cls, small_task).problems)
    for key in ("info.sampling_rate", "info.noise_multiplier", "ledger.events"):
        assert f"dp-mlp: {key} differs between neighbouring datasets" in problems


def test_every_checked_task_crosses_a_power_of_ten_where_removing_a_unit_changes_the_count(small_task,
                                                                                            private_public_task):
    """The registry-wide check sees delta's inputs: at node and edge level the base task holds 100 privacy units and
    its neighbour 99, so the harness's rule gives them different deltas (1e-3, 1e-2), and the record of each names
    the count public (``conventions.delta_units``)."""
    for name in PRIVATE:
        cls = get_method(name)
        task = _task_for(cls, small_task, private_public_task)
        base, near, _ = neighbours(task, cls.privacy_unit)
        method = cls(**cls.smoke_config)
        counts = plan.privacy_units(base, cls.privacy_unit), plan.privacy_units(near, cls.privacy_unit)
        deltas = budget_for(cls, base).delta, budget_for(cls, near).delta
        if cls.privacy_unit == "feature":  # a replaced row: the count, and delta, stay
            assert counts[0] == counts[1] and deltas[0] == deltas[1], name
        else:
            assert counts == (UNITS, UNITS - 1) and deltas == (1e-3, 1e-2), (name, counts, deltas)
        assert plan.harness_conventions(method, near) == {DELTA_UNITS: counts[1]}, name


def test_a_delta_from_a_count_the_record_does_not_name_fails(small_task, monkeypatch):
    """dp-mlp's noise is calibrated to delta: at 100 training-graph nodes against 99 the rule's delta changes and
    with it the released noise multiplier and ledger, which the record's naming of the count explains; without it
    (no harness convention) the check fails, naming the keys that change with delta alone, although the ledger's
    num_train explains the data's part."""
    cls = get_method("dp-mlp")
    task = at_power_of_ten(small_task, "node")
    found = check_released_facts(cls, task)
    assert not found.problems, "\n".join(found.problems)
    assert {"info.noise_multiplier", "ledger.events"} <= {k for k, v in found.depends.items() if DELTA_UNITS in v}

    monkeypatch.setattr(plan, "harness_conventions", lambda method, task: {})
    problems = check_released_facts(cls, task).problems
    assert problems and all("changes with delta alone (0.001 for 100 privacy units, 0.01 for 99)" in p
                            for p in problems)
    assert any(p.startswith("dp-mlp: info.noise_multiplier changes with delta alone") for p in problems)


def test_the_record_states_the_noise_and_names_the_count_delta_is_set_from(small_task):
    """The params a run states its conventions in (:func:`bench.plan.convention_params`, which ``bench run`` logs):
    the noise mode, and the count the rule's delta reads, public by convention; the checker reads them back."""
    from bench.check import _check_conventions
    from bench.records import NOISE_NONE, NOISE_REPRODUCIBLE, NOISE_SECURE, conventions_of

    task = at_power_of_ten(small_task, "node")
    method = get_method("dp-mlp")(**get_method("dp-mlp").smoke_config)
    budget = plan.resolve_budget(EPSILON, None, method, task)
    params = plan.convention_params(method, task, budget, None, False)
    assert params["noise"] == NOISE_REPRODUCIBLE
    named = params[f"conventions.{DELTA_UNITS}"]
    assert named.startswith("privacy_units = 100: the number of nodes of the graph, public by convention")
    assert "delta 0.001 is the largest power of ten below 1 / privacy_units" in named
    assert "given" in plan.convention_params(method, task, Budget(EPSILON, 1e-5), 1e-5, False)[
        f"conventions.{DELTA_UNITS}"]
    assert plan.convention_params(method, task, budget, None, True)["noise"] == NOISE_SECURE
    plain = get_method("mlp")()
    assert plan.convention_params(plain, task, plan.resolve_budget(None, None, plain, task), None, False) == {
        "noise": NOISE_NONE}
    # a record carries them (its params); one from before reads the same from secure_noise and privacy_units
    rec = {"params": {"privacy_unit": "node", "setting": "transductive", "privacy_units": "100", "delta": "0.001",
                      "secure_noise": "false", **params}}
    old = {"params": {k: v for k, v in rec["params"].items() if k != "noise" and not k.startswith("conventions.")}}
    assert conventions_of(rec) == conventions_of(old) == {"noise": NOISE_REPRODUCIBLE, DELTA_UNITS: named}
    assert _check_conventions(rec["params"]) == []
    assert _check_conventions({**rec["params"], "secure_noise": "true"}) == [
        "noise 'reproducible' but secure_noise is 'true'"]
    assert "names another count" in _check_conventions({**rec["params"], "privacy_units": "99"})[0]


def test_a_private_count_released_under_a_named_convention_still_fails(private_public_task):
    """Naming a public fact excuses only what is a function of it: PATE releasing the number of private edges
    (which removing one node or another changes differently) fails even if its ledger named num_train."""
    from methods.privgnn.pate import PATEM

    class Leaky(PATEM):
        def _fit(self, ctx):
            fitted = super()._fit(ctx)
            fitted.ledger = fitted.ledger.with_conventions({"num_train": int(ctx.task.train_mask.sum())})
            ei = ctx.task.data.edge_index
            fitted.info["private_edges"] = int((ctx.task.train_mask[ei[0]] & ctx.task.train_mask[ei[1]]).sum())
            return fitted

    problems = check_released_facts(Leaky, private_public_task, name="leaky").problems
    assert problems and all("info.private_edges" in p for p in problems)
    assert "agree on the public facts" in problems[0]


def test_every_private_family_that_reads_the_training_set_size_names_it():
    """The families whose parameters add/remove neighbours do not share name them; bench account prints them."""
    from methods.privacy import presets

    assert {f: fn.public for f, fn in presets.FAMILIES.items() if fn.public} == {
        "dp-mlp": ("num_train",), "dpgnn": ("num_train",), "gap-node": ("num_train",),
        "progap-node": ("num_train", "num_nodes")}


def test_dpgnn_calibration_reads_the_training_set_size_and_its_ledger_says_so():
    """DP-GNN's released steps and lambda are functions of N (the numbers of the example in docs/accounting.md):
    the ledger built from them names N public, and bench account prints it."""
    from methods.dpgnn import DPGNNSGDConfig, calibrate, run_ledger

    c = DPGNNSGDConfig(batch_size=2000, max_degree=10, layers=1, epochs=30)
    budget = Budget(4.0, 1e-4)
    plans = {n: calibrate(n, c, budget) for n in (10000, 10001)}
    assert [(m, t) for m, _, t, _ in plans.values()] == [(2000, 150), (2000, 180)]
    assert [round(lam, 3) for *_, lam in plans.values()] == [2.777, 3.035]
    for n, (_, _, t, lam) in plans.items():
        led = run_ledger(n, c, lam, t)
        # N named public (and, under the input-graph relation, the declared degree bound K)
        assert led.public_facts.get("num_train") == n and set(led.public_facts) <= {"num_train", "max_degree"}
        assert led.epsilon(1e-4) <= 4.0
        assert any(line.startswith(f"num_train = {n}: the training-set size") for line in led.describe_conventions())
