"""The contract every registered method must meet (parametrized over the registry, plugins included): the checks of
``bench.testing``, the helpers a plugin author's own pytest uses, and what only the suite's fixtures can check."""


import pytest

from bench.cli import load_plugin
from bench.testing import fit, parametrize_with_methods
from methods import Budget, BudgetError, get_method
from tests.conftest import REPO

# user plugins are held to the same contract as built-in methods
load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))


@parametrize_with_methods()
def test_method_contract(method, check):
    """The importable contract (bench.testing), as a plugin author's own test runs it."""
    check(method)


@pytest.mark.parametrize("eps,delta", [(0, 1e-5), (-1, 1e-5), (float("nan"), 1e-5), (1, 1.0), (1, -0.1), (1, 2)])
def test_budget_validation(eps, delta):
    with pytest.raises(BudgetError):
        Budget(eps, delta)


def test_the_contract_rejects_a_history_ending_on_a_checkpoint_and_a_misreported_population(small_task):
    """Whatever the method (plugins included): a per-step epsilon history must end on the ledger's epsilon, and a
    reported sampling population or rate must be the one the ledger was accounted with."""
    from methods.base import ContractViolation, check_fitted
    from methods.privacy import presets

    cls = get_method("dp-mlp")
    budget = Budget(4.0, 1e-4)
    fitted = fit(cls, small_task, budget=budget)
    method = cls(**cls.smoke_config)
    eps = fitted.epsilon(budget.delta)
    fitted.history.append({"epoch": 99, "epsilon": eps * 0.9})  # a checkpoint logged after the last step's value
    with pytest.raises(ContractViolation, match="must end on the final value"):
        check_fitted(method, fitted, budget)
    fitted.history[-1]["epsilon"] = eps
    check_fitted(method, fitted, budget)
    fitted.info["sampling_rate"] *= 1.5
    with pytest.raises(ContractViolation, match="sampling_rate"):
        check_fitted(method, fitted, budget)
    # a fixed-size ledger and the population a run reports for it
    fitted.info.pop("sampling_rate")
    fitted.history = [{"epoch": 5}]
    fitted.ledger = presets.drw(200, 2, 20, 3.0, 5, batchable_subgraphs=114)
    fitted.info["accounting_population"] = 115  # e.g. a resample no step used
    with pytest.raises(ContractViolation, match="accounting_population"):
        check_fitted(method, fitted, budget)
    fitted.info["accounting_population"] = 114
    check_fitted(method, fitted, budget)
