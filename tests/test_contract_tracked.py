"""The tracked contract, over the whole registry (plugins included): with tracking on, the epsilon a run returns,
the one its MLflow metric ends on, the one its export record publishes and the one its ledger gives are one number,
and the sampling population or rate it reports is the one its ledger was accounted with."""

from __future__ import annotations

import json
import math

import pytest

from bench import api, records, tracking
from bench.cli import load_plugin
from methods import available_methods, get_method
from methods.base import SAMPLING_INFO
from tests.conftest import REPO

load_plugin(str(REPO / "tests" / "plugins" / "example_plugin.py"))
PRIVATE = sorted(n for n, c in available_methods().items() if c.privacy_unit != "none")
GRAPH = "csbm:nodes=200,classes=3,features=8,degree=6"


def _split(cls) -> str:
    return "random-75-10-15" if "transductive" in cls.settings else "private-public"


@pytest.mark.parametrize("name", PRIVATE)
def test_returned_logged_exported_and_ledger_epsilon_agree(name):
    cls = get_method(name)
    (res,) = api.run(name, GRAPH, split=_split(cls), seeds=[0], epsilon=4.0, overrides=cls.smoke_config,
                     experiment="contract-tracked", hparams=False)
    run = tracking.client().get_run(res.run_id)
    rec = records.record_from_run(run)
    ledger = records.ledger_of(rec)
    delta = float(rec["params"]["delta"])
    eps = ledger.epsilon(delta)
    assert math.isfinite(eps) and 0 < eps <= 4.0 * (1 + 1e-9)
    assert res.epsilon == eps == rec["metrics"]["epsilon"] == records.spent_epsilon(rec)
    # what MLflow shows as the run's epsilon (its latest value) is the final one, not a checkpoint of its history
    assert run.data.metrics["epsilon"] == pytest.approx(eps, rel=1e-12)
    history = tracking.client().get_metric_history(res.run_id, "epsilon")
    last = max(history, key=lambda m: (m.step, m.timestamp))
    assert last.value == pytest.approx(eps, rel=1e-12)
    assert rec["params"]["accountant"] == records.accountant_of(rec) == "tight"
    assert int(rec["params"]["privacy_units"]) >= 1 and rec["tags"]["predictions_hash"]
    # the population / rate the run reports (info.json, what it releases) is the ledger's
    info = json.loads(tracking.client_download_text(res.run_id, "info.json"))
    have = ledger.sampling()
    for key, field in SAMPLING_INFO.items():
        if key in info:
            reported = sorted(info[key]) if isinstance(info[key], list) else [info[key]]
            assert reported == pytest.approx(have[field], rel=1e-12), (key, info[key], have)
