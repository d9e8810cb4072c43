"""``bench account run RUN_ID``: every private method's tracked run re-accounts to the epsilon it reported.

One source of truth: a method's fit builds its ledger with its family's function (methods.privacy.presets) and
stamps the recipe; ``bench account run`` rebuilds the ledger from that recipe with the same function, checks it
against the logged events and prints its epsilon. A method whose logged events, recipe and reported epsilon
disagree fails here, whatever family it belongs to (plugins included).
"""

import json
import math

import pytest

from bench.cli import load_plugin, main
from bench.plan import RunSpec, plan_run
from bench.run import run_one
from methods import available_methods, get_method
from methods.base import Method
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))
PRIVATE = sorted(n for n, c in available_methods().items() if c.privacy_unit != "none")
DATASET = "csbm:nodes=200,classes=3,features=8,degree=6"


def _tracked_run(name: str):
    cls = get_method(name)
    split = "random-75-10-15" if "transductive" in cls.settings else "private-public"
    spec = RunSpec(methods=[name], dataset=DATASET, split=split, epsilon=4.0, delta=1e-4,
                   overrides=[f"{k}={v}" for k, v in cls.smoke_config.items()], experiment="account-run",
                   progress=False)
    p = plan_run(spec)
    return run_one(p, p.methods[0], 0)


@pytest.mark.parametrize("name", PRIVATE)
def test_account_run_reproduces_the_reported_epsilon(name, capsys):
    r = _tracked_run(name)
    capsys.readouterr()
    assert main(["account", "run", r.run_id, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["run_id"] == r.run_id and d["delta"] == 1e-4
    assert math.isfinite(r.epsilon) and d["epsilon"] == pytest.approx(r.epsilon, rel=1e-12, abs=1e-12)
    if get_method(name).fit is Method.fit:  # built-in families stamp the recipe their fit used
        assert d["family"] and d["events_match"] is True
    # the facts the run's epsilon takes as public come from the family (the rebuilt ledger), as the run logged them
    from bench import tracking
    from methods.privacy import PrivacyLedger

    logged = PrivacyLedger.from_dict(json.loads(tracking.client_download_text(r.run_id, "ledger.json")))
    assert d["conventions"] == logged.public_facts
    if name == "dp-mlp":
        assert set(d["conventions"]) == {"num_train"}
    if name in ("dpgnn", "dpgnn-adam", "gap-node", "progap-node"):  # relation input-graph: the declared bound too
        assert set(d["conventions"]) == {"num_train", "max_degree"}
        assert d["conventions"]["max_degree"] == get_method(name).smoke_config["max_degree"]
    # a different delta re-accounts the same ledger
    assert main(["account", "run", r.run_id, "--delta", "1e-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"] <= d["epsilon"] + 1e-12


def test_account_run_text_and_bad_ids(capsys):
    r = _tracked_run("gap-edge")
    capsys.readouterr()
    assert main(["account", "run", r.run_id]) == 0
    out = capsys.readouterr().out
    assert out.startswith("epsilon = ") and "family: aggregation-edge(" in out and "events match" in out
    assert main(["account", "run", "0" * 32]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no tracked run")


@pytest.mark.parametrize("name, papers", [("gap-node", "cut-off-graph"), ("progap-node", "cut-off-graph"),
                                          ("dpgnn", "in-edges")])
def test_a_recipe_recorded_before_relations_rebuilds_as_the_papers_relation(name, papers):
    """Recipes logged before the ``relation`` parameter existed describe what ran then, the papers' relation: the
    family functions default to it, so they rebuild with the same events, no declared bound among the public
    facts and the note saying what the epsilon is relative to. A recipe with the relation rebuilds as logged."""
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods import Budget
    from methods.privacy import presets
    from methods.privacy.ledger import Recipe

    task = make_task(load_dataset(DATASET), "random-75-10-15", 0)
    cls = get_method(name)
    led = cls(**cls.smoke_config).fit(task, Budget(4.0, 1e-4), seed=0).ledger
    kwargs = led.recipe.kwargs()
    assert kwargs["relation"] == "input-graph"
    assert presets.rebuild(led.recipe).public_facts == led.public_facts  # as logged
    old = Recipe.of(led.recipe.family, {k: v for k, v in kwargs.items() if k != "relation"})
    rebuilt = presets.rebuild(old)
    assert rebuilt.recipe.kwargs()["relation"] == papers
    assert rebuilt.same_events(presets.rebuild(Recipe.of(led.recipe.family, {**kwargs, "relation": papers})))
    assert rebuilt.same_events(led)  # the relation changes the claim's scope, not the mechanism
    assert "max_degree" not in rebuilt.public_facts and "max_degree" in led.public_facts
    assert any("not node-level DP for the input graph" in n for n in rebuilt.notes)
