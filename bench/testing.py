"""The contract every registered method, attack and accountant is held to, importable (scikit-learn's
``parametrize_with_checks``): a plugin author's own pytest holds their classes to the checks the suite's tests run.

.. code-block:: python

    from bench.testing import parametrize_with_accountants, parametrize_with_methods

    import my_plugin  # registers "my-method" and "my-accountant"

    @parametrize_with_methods(["my-method"])
    def test_method_contract(method, check):
        check(method)

    @parametrize_with_accountants(["my-accountant"])
    def test_accountant_contract(accountant, check):
        check(accountant)

Each check takes a registered name and raises AssertionError (or the contract's own
:class:`~methods.errors.ContractViolation`) naming what failed. Method checks fit the method's ``smoke_config`` on
two small seeded tasks (:func:`contract_tasks`: a transductive and a private-public contextual SBM); accountant
checks run the conformance suite's admission (:func:`methods.privacy.conformance.check.admit`); attack checks play each
attack's game against a GCN on both tasks. The helpers live at the top
layer because the contract needs the harness's datasets and splits (``methods`` may not import them).
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace
from typing import Any, Callable, Iterable

#: the contract's small dataset: 200 nodes, 3 classes, 8 features, mean degree 6 (fits in about a second)
CONTRACT_DATASET = "csbm:nodes=200,classes=3,features=8,degree=6"


@functools.lru_cache(maxsize=1)
def contract_tasks() -> dict[str, Any]:
    """The contract's tasks by setting: ``transductive`` (random-75-10-15) and ``private-public``, seed 0."""
    from bench.datasets import load_dataset
    from bench.splits import make_task

    ds = load_dataset(CONTRACT_DATASET)
    return {"transductive": make_task(ds, "random-75-10-15", 0), "private-public": make_task(ds, "private-public", 0)}


def task_for(cls: type) -> Any:
    """The transductive contract task, or the private-public one for a method that declares only that setting."""
    tasks = contract_tasks()
    for setting in ("transductive", "private-public"):
        if setting in cls.settings:
            return tasks[setting]
    raise AssertionError(f"{cls.name} supports neither the transductive nor the private-public setting")


def budget_for(cls: type) -> Any:
    """(4, 1e-4) for a private method; none for a non-private one."""
    from methods import Budget

    return Budget(4.0, 1e-4) if cls.privacy_unit != "none" else Budget()


def fit(cls: type, task: Any, seed: int = 0, budget: Any = None) -> Any:
    """How the harness fits (``fit_method``: a method that overrides ``fit`` gets the same integer seed)."""
    from methods.base import fit_method
    from methods.streams import RunStreams

    return fit_method(cls(**cls.smoke_config), task, budget or budget_for(cls), RunStreams.of(seed), device="cpu")


# --------------------------------------------------------------------------------------------------------------
# method checks
# --------------------------------------------------------------------------------------------------------------


def check_fits_and_returns_valid_probabilities(name: str) -> None:
    """A fit passes the fitted-model contract (``check_fitted``), derives its inference flag from its unit and
    declared reads, and serves one probability row per node, the same for a subset as for all."""
    import torch

    from methods import get_method
    from methods.base import check_fitted, inference_private_of

    cls = get_method(name)
    task = task_for(cls)
    fitted = fit(cls, task)
    check_fitted(cls(**cls.smoke_config), fitted, budget_for(cls))
    assert fitted.info["inference_private"] is inference_private_of(cls, budget_for(cls))
    p = fitted.predict_proba()
    assert p.shape == (task.num_nodes, task.num_classes), f"{name}: predict_proba shape {tuple(p.shape)}"
    assert torch.isfinite(p).all() and (p >= 0).all(), f"{name}: probabilities must be finite and >= 0"
    assert torch.allclose(p.sum(1), torch.ones(task.num_nodes), atol=1e-5), f"{name}: rows must sum to 1"
    idx = torch.tensor([3, 1, 4])
    assert torch.equal(fitted.predict_proba(idx), p[idx]), f"{name}: predict_proba(idx) differs from the rows"
    assert len(fitted.history) >= 1, f"{name}: a fit's history has at least one entry"


def check_deterministic_for_a_fixed_seed(name: str) -> None:
    """Two fits with one seed give the same probabilities on the CPU."""
    import torch

    from methods import get_method

    cls = get_method(name)
    task = task_for(cls)
    a, b = fit(cls, task, seed=7).predict_proba(), fit(cls, task, seed=7).predict_proba()
    assert torch.allclose(a, b, atol=1e-6), f"{name}: two fits with seed 7 differ"


def check_reported_epsilon_is_the_ledgers(name: str) -> None:
    """The reported epsilon is the ledger's, finite and within the budget for a private method, inf (with its
    non-private use named) for one that is not."""
    from methods import get_method

    cls = get_method(name)
    budget = budget_for(cls)
    fitted = fit(cls, task_for(cls), budget=budget)
    eps = fitted.epsilon(budget.delta)
    assert eps == fitted.ledger.epsilon(budget.delta), f"{name}: reported {eps}, the ledger's is different"
    if cls.privacy_unit == "none":
        assert eps == math.inf and fitted.ledger.non_private_use, f"{name}: not private, yet a finite epsilon"
    else:
        assert math.isfinite(eps) and 0 < eps <= budget.epsilon * (1 + 1e-9), f"{name}: epsilon {eps} over 4"


def check_refuses_bad_budgets(name: str) -> None:
    """A negative epsilon is a BudgetError; a non-private method refuses any finite budget."""
    from methods import Budget, BudgetError, get_method

    cls = get_method(name)
    task = task_for(cls)
    try:
        cls(**cls.smoke_config).fit(task, SimpleNamespace(epsilon=-1.0, delta=0.5), seed=0)
    except BudgetError:
        pass
    else:
        raise AssertionError(f"{name}: epsilon -1 was accepted")
    if cls.privacy_unit == "none":
        try:
            cls(**cls.smoke_config).fit(task, Budget(1.0, 1e-5), seed=0)
        except BudgetError as e:
            assert "not private" in str(e), f"{name}: the error must say the method is not private ({e})"
        else:
            raise AssertionError(f"{name}: not private, yet it accepted epsilon 1")


def check_hyperparameters_are_typed(name: str) -> None:
    """An unknown hyperparameter is a ConfigError; the defaults are valid; the unit and description are set."""
    from methods import get_method
    from methods.base import ConfigError, make_config

    cls = get_method(name)
    try:
        cls(not_a_field=1)
    except ConfigError as e:
        assert "unknown hyperparameter" in str(e), f"{name}: {e}"
    else:
        raise AssertionError(f"{name}: an unknown hyperparameter was accepted")
    make_config(cls.Config, {}, owner=name)
    assert cls.privacy_unit in ("none", "edge", "node", "feature") and cls.description, name


def check_served_predictions_read_only_what_is_declared(name: str) -> None:
    """Every output is served from the release plus what ``inference_reads`` declares: whenever a change to data
    the method says it does not read (another node's row, an edge) leaves the release bit-identical, no served
    posterior moves (:func:`audits.structural.check_inference_reads`). A private-inference claim is derived from
    that declaration, so this holds the claim too, and a claim needs a declared release. Nothing to check (a
    pass) when the method declares it reads everything, declares no release, or every change reached it."""
    from audits.structural import check_inference_reads, undeclared_changes
    from methods import get_method
    from methods.streams import RunStreams

    cls = get_method(name)
    if not undeclared_changes(cls.inference_reads):
        return
    found = check_inference_reads(lambda: cls(**cls.smoke_config), task_for(cls), budget_for(cls), RunStreams(3))
    if found.claimed:
        assert found.declared_release, f"{name} claims private inference but does not declare its release"
    elif not found.declared_release:
        return
    assert found.max_change == 0, (f"{name}: with the release unchanged, a {found.moved_by} change (node "
                                   f"{found.unit}) moved a served posterior by {found.max_change:.3g}, though "
                                   f"{name} declares its inference reads only {sorted(cls.inference_reads)}")


#: every method check, in the order they run
METHOD_CHECKS: tuple[Callable[[str], None], ...] = (
    check_hyperparameters_are_typed, check_fits_and_returns_valid_probabilities, check_deterministic_for_a_fixed_seed,
    check_reported_epsilon_is_the_ledgers, check_refuses_bad_budgets,
    check_served_predictions_read_only_what_is_declared)


# --------------------------------------------------------------------------------------------------------------
# accountant checks
# --------------------------------------------------------------------------------------------------------------


def check_accountant_interface(name: str) -> None:
    """A registered accountant has a one-line description, a version and an ``epsilon(events, delta)`` that
    returns 0 for an empty ledger or says it cannot account one."""
    from methods.privacy.registry import Unsupported, get_accountant

    acc = get_accountant(name)
    assert isinstance(acc.description, str) and acc.description.strip(), f"{name}: no description"
    assert str(acc.version()), f"{name}: version() is empty"
    try:
        assert float(acc.epsilon([], 1e-5)) == 0.0, f"{name}: an empty ledger spends nothing"
    except Unsupported:
        pass


def check_accountant_is_admitted(name: str) -> None:
    """Sound on every case of the conformance suite's admission corpus it supports: what lets it account a run
    (:func:`methods.privacy.conformance.check.admit`)."""
    from methods.privacy.conformance.check import admit
    from methods.errors import BenchError

    try:
        admit(name)
    except BenchError as e:
        raise AssertionError(str(e)) from None


ACCOUNTANT_CHECKS: tuple[Callable[[str], None], ...] = (check_accountant_interface, check_accountant_is_admitted)


# --------------------------------------------------------------------------------------------------------------
# attack checks
# --------------------------------------------------------------------------------------------------------------


def check_attack_declares(name: str) -> None:
    """A registered attack states its level and description; its ``smoke_config`` is valid and an unknown option is
    a ConfigError."""
    from attacks import get_attack
    from methods.base import ConfigError

    cls = get_attack(name)
    assert cls.level in ("node", "edge", "feature") and cls.description, name
    cls(**cls.smoke_config)
    try:
        cls(not_an_option=1)
    except ConfigError:
        pass
    else:
        raise AssertionError(f"{name}: an unknown option was accepted")


def check_attack_plays_its_game(name: str) -> None:
    """Against a GCN on each contract task (transductive, private-public) the attack either says why it does not
    apply there or plays its game: every variant's AUC in [0, 1], the same for the same seed."""
    from attacks import get_attack, run_attack
    from attacks.base import Target
    from methods import Budget, get_method

    cls = get_attack(name)
    model = get_method("gcn")(**get_method("gcn").smoke_config)
    for setting, task in contract_tasks().items():
        def play(task=task):
            fitted = model.fit(task, Budget(), 0)
            return run_attack(cls(**cls.smoke_config), Target(task, model, Budget(), fitted, 0), n_bootstrap=0)

        first = play()
        if first.status != "ok":
            assert first.reason, f"{name} on the {setting} task: 'not applicable' needs a reason"
            continue
        aucs = {v.name: v.metrics["auc"].value for v in first.variants}
        assert aucs and all(0.0 <= a <= 1.0 for a in aucs.values()), f"{name} on the {setting} task: AUCs {aucs}"
        again = {v.name: v.metrics["auc"].value for v in play().variants}
        assert again == aucs, f"{name} on the {setting} task: two games with seed 0 differ ({aucs} vs {again})"


ATTACK_CHECKS: tuple[Callable[[str], None], ...] = (check_attack_declares, check_attack_plays_its_game)


# --------------------------------------------------------------------------------------------------------------
# pytest helpers
# --------------------------------------------------------------------------------------------------------------


def _parametrize(argname: str, names: Iterable[str], checks: tuple[Callable[[str], None], ...]):
    import pytest

    pairs = [(n, c) for n in names for c in checks]
    return pytest.mark.parametrize(f"{argname}, check", pairs, ids=[f"{n}-{c.__name__[6:]}" for n, c in pairs])


def parametrize_with_methods(names: Iterable[str] | None = None):
    """``pytest.mark.parametrize("method, check", ...)`` over every (method, check) pair: ``names`` (default: every
    registered method, plugins loaded so far included) x :data:`METHOD_CHECKS`."""
    from methods import available_methods

    return _parametrize("method", sorted(available_methods()) if names is None else list(names), METHOD_CHECKS)


def parametrize_with_accountants(names: Iterable[str] | None = None):
    """The same over accountants: ``names`` (default: every registered one) x :data:`ACCOUNTANT_CHECKS`."""
    from methods.privacy.conformance import adapters  # noqa: F401 - the suite's adapters register themselves
    from methods.privacy.registry import available_accountants

    return _parametrize("accountant", list(available_accountants()) if names is None else list(names),
                        ACCOUNTANT_CHECKS)


def parametrize_with_attacks(names: Iterable[str] | None = None):
    """The same over attacks: ``names`` (default: every registered one) x :data:`ATTACK_CHECKS`."""
    from attacks import available_attacks

    return _parametrize("attack", sorted(available_attacks()) if names is None else list(names), ATTACK_CHECKS)


def check_attack(name: str) -> None:
    """Every attack check on ``name``, outside pytest."""
    for check in ATTACK_CHECKS:
        check(name)


def check_method(name: str) -> None:
    """Every method check on ``name``, outside pytest (the first failure raises)."""
    for check in METHOD_CHECKS:
        check(name)


def check_accountant(name: str) -> None:
    """Every accountant check on ``name``, outside pytest."""
    for check in ACCOUNTANT_CHECKS:
        check(name)


__all__ = ["ACCOUNTANT_CHECKS", "ATTACK_CHECKS", "CONTRACT_DATASET", "METHOD_CHECKS", "budget_for", "check_accountant",
           "check_attack", "check_method", "contract_tasks", "fit", "parametrize_with_accountants",
           "parametrize_with_attacks", "parametrize_with_methods", "task_for"]
