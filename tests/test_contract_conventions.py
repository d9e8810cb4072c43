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
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
import torch

from bench.cli import load_plugin
from bench.run import RELEASED_HISTORY
from methods import Budget, available_methods, get_method
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))
PRIVATE = sorted(n for n, c in available_methods().items() if c.privacy_unit != "none")
BUDGET = Budget(4.0, 1e-4)


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


def _drop_node(task, v: int):
    """``task`` without node ``v`` and its edges (the other nodes keep their order)."""
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


def _fit(cls, task):
    return cls(**cls.smoke_config).fit(task, BUDGET, seed=0, device="cpu")


def check_released_facts(cls, task, name: str | None = None) -> Dependence:
    """Fit ``cls`` on a task and on its neighbour (same seed) and explain every released difference (see the
    module docstring)."""
    name = name or cls.name
    base, near, other = neighbours(task, cls.privacy_unit)
    f0, f1 = _fit(cls, base), _fit(cls, near)
    r0, r1 = released(cls, f0), released(cls, f1)
    diff = differing(r0, r1)
    if not diff:
        return Dependence(name, {}, [])
    p0, p1 = f0.ledger.public_facts, f1.ledger.public_facts
    facts = sorted(k for k in p0.keys() | p1.keys() if p0.get(k) != p1.get(k))
    if not facts:
        return Dependence(name, {}, [
            f"{name}: {k} differs between neighbouring datasets ({_short(r0.get(k))} vs {_short(r1.get(k))}) and "
            f"its ledger names no public fact that explains it (PrivacyLedger.conventions: {p0 or 'none'})"
            for k in diff])
    f2 = _fit(cls, other)
    if f2.ledger.public_facts != p1:
        return Dependence(name, {}, [f"{name}: the two neighbours disagree on the public facts "
                                     f"({p1} vs {f2.ledger.public_facts}); the check needs a pair that agrees"])
    r2 = released(cls, f2)
    return Dependence(name, {k: facts for k in diff}, [
        f"{name}: {k} differs between two datasets that agree on the public facts {p1} ({_short(r1.get(k))} vs "
        f"{_short(r2.get(k))}): it depends on private data the ledger's conventions do not name"
        for k in differing(r1, r2)])


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _task_for(cls, small_task, private_public):
    if small_task.setting in cls.settings:
        return small_task
    if private_public.setting in cls.settings:
        return private_public
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
        assert led.public_facts == {"num_train": n} and led.epsilon(1e-4) <= 4.0
        assert led.describe_conventions()[0].startswith(f"num_train = {n}: the training-set size")
