"""The regeneration's before/after table pairs each retired cell with its regenerated one, like with like."""

from __future__ import annotations

import json

from bench.studies import regeneration_before_after as BA


def _rec(cell, method, eps, seed, acc, spent, accountant=None, start=1, **info):
    params = {"method": method, "dataset": "cora", "split": "random-75-10-15", "target_epsilon": str(eps),
              "seed": str(seed)}
    if accountant:
        params["accountant"] = accountant
    return {"cell_id": cell, "kind": "run", "status": "FINISHED", "start_time": start, "params": params,
            "metrics": {"epsilon": spent, "test_acc": acc, **{f"info.{k}": v for k, v in info.items()}}}


def _site(tmp_path, runs, retired):
    (tmp_path / "runs").mkdir()
    (tmp_path / "superseded").mkdir()
    (tmp_path / "runs" / "cora.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    (tmp_path / "superseded" / "cora.jsonl").write_text("".join(json.dumps(r) + "\n" for r in retired))
    return tmp_path


def test_cells_pair_on_target_epsilon_and_only_regenerations_count_as_before(tmp_path, capsys):
    why = {"superseded_because": "regenerated from v1.0.2 (fb337757e0f0)"}
    runs = [_rec("a", "dpgnn", 4, 0, 0.40, 3.99, "tight", noise_multiplier=7.0, steps=60),
            _rec("b", "dpgnn", 4, 1, 0.50, 3.99, "tight", noise_multiplier=7.4, steps=60),
            _rec("c", "drw", 8, 0, 0.30, 7.9, "tight", noise_multiplier=8.0, steps=54),
            _rec("d", "mlp", "inf", 0, 0.70, "inf", "tight"),
            _rec("e", "dpgnn", 8, 0, 0.55, 7.99, "tight", noise_multiplier=4.0)]  # nothing retired: no row
    retired = [{**_rec("a", "dpgnn", 4, 0, 0.30, 3.99, noise_multiplier=8.0, steps=60), **why},
               {**_rec("b", "dpgnn", 4, 1, 0.40, 3.99, noise_multiplier=8.0, steps=60), **why},
               # a retune, not a regeneration: not the "before" of this comparison
               {**_rec("b", "dpgnn", 4, 1, 0.10, 3.99, noise_multiplier=9.0, start=5), "superseded_because": "retuned"},
               {**_rec("c", "drw", 8, 0, 0.20, 7.7, noise_multiplier=8.0, steps=39), **why},
               {**_rec("d", "mlp", "inf", 0, 0.70, "inf"), **why},
               # a seed not regenerated yet: left out of both sides
               {**_rec("f", "drw", 8, 1, 0.90, 7.7, noise_multiplier=8.0, steps=39), **why}]
    rows = BA.pairs(_site(tmp_path, runs, retired))
    assert [(r["method"], r["epsilon"]) for r in rows] == [("dpgnn", 4.0), ("drw", 8.0)]
    dpgnn, drw = rows
    assert dpgnn["before"]["accountant"] == "rdp/improved" and dpgnn["after"]["accountant"] == "tight"
    assert abs(dpgnn["before"]["acc"] - 0.35) < 1e-12 and abs(dpgnn["after"]["acc"] - 0.45) < 1e-12
    assert dpgnn["before"]["n"] == dpgnn["after"]["n"] == 2
    # the parameter the calibration moved: the noise for DP-GNN, the steps DRW's budget bought
    assert BA.moved(dpgnn["before"], dpgnn["after"]) == "noise_multiplier"
    assert BA.moved(drw["before"], drw["after"]) == "steps"
    assert drw["before"]["n"] == drw["after"]["n"] == 1 and abs(drw["before"]["acc"] - 0.20) < 1e-12
    table = BA.table(rows)
    assert "| 35.0 -> 45.0 (+10.0) |" in table and "steps 39 -> 54" in table
    fams = BA.families_table(rows)
    assert "| dpgnn | 1 | cora | +0.0% | -10.0% | +10.00 (+10.0, +10.0) |" in fams, fams
    assert BA.main(["--site", str(tmp_path), "--families"]) == 0 and "| drw | 1 |" in capsys.readouterr().out


def test_a_site_without_regenerated_cells_is_one_error_line(tmp_path, capsys):
    site = _site(tmp_path, [_rec("a", "dpgnn", 4, 0, 0.4, 3.99, "tight")], [])
    assert BA.main(["--site", str(site)]) == 2
    assert BA.main(["--site", str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(x.startswith("error: ") for x in err)
