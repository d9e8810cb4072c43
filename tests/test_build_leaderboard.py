"""scripts.build_leaderboard: a dataset's slice of the leaderboard config holds exactly that dataset's cells."""

from pathlib import Path

import yaml

from bench import api
from bench.studies.build_leaderboard import CONFIG, dataset_config, main


def test_dataset_slices_partition_the_leaderboard_cells():
    raw = yaml.safe_load(Path(CONFIG).read_text())
    full = {c.cell_id: c.dataset for c in api.cells(raw)}
    seen: dict[str, str] = {}
    for d in raw["datasets"]:
        ids = {c.cell_id for c in api.cells(dataset_config(raw, d))}
        assert ids == {i for i, ds in full.items() if ds == d}
        assert not ids & seen.keys()
        seen.update(dict.fromkeys(ids, d))
    assert seen == full


def test_unknown_dataset_is_an_error(capsys):
    assert main(["--datasets", "no-such-dataset", "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("error: no-such-dataset not in")


def _cell(cid, method="gcn", eps=1.0, kind="run", dataset="cora"):
    from types import SimpleNamespace

    return SimpleNamespace(cell_id=cid, kind=kind, row=(method, dataset, "public", eps))


def _rec(cid, method="gcn", eps=1.0, dataset="cora", status="FINISHED"):
    return {"cell_id": cid, "status": status, "params": {"method": method, "dataset": dataset, "split": "public",
                                                         "target_epsilon": str(eps)}}


def test_superseded_records_move_out_once_their_row_is_rerun_and_nothing_is_lost(tmp_path):
    import json

    from bench.studies.build_leaderboard import prune_superseded

    export, old = tmp_path / "runs.jsonl", tmp_path / "superseded.jsonl"  # a file export
    cells = [_cell("a"), _cell("c", eps=2.0), _cell("c-verify", eps=2.0, kind="verify")]
    recs = [_rec("a"), _rec("b"), {"x": 3}, _rec("d", eps=2.0), _rec("e", method="sage")]
    export.write_text("".join(json.dumps(r) + "\n" for r in recs))
    # b: row (gcn, eps 1) rerun in full -> out; d: row (gcn, eps 2) not rerun yet -> stays (the page shows it as
    # the row's previous setting); e: a row the grid no longer has -> out; no cell id -> stays
    assert prune_superseded(export, cells, old) == 2
    assert [json.loads(x) for x in export.read_text().splitlines()] == [recs[0], recs[2], recs[3]]
    assert [json.loads(x) for x in old.read_text().splitlines()] == [recs[1], recs[4]]
    assert prune_superseded(export, cells, old) == 0 and len(old.read_text().splitlines()) == 2
    with open(export, "a") as fh:  # a failed run of the new cell is not the row rerun
        fh.write(json.dumps(_rec("c", eps=2.0, status="FAILED")) + "\n")
    assert prune_superseded(export, cells, old) == 0
    with open(export, "a") as fh:  # its training cell finished (its verification need not have): d goes
        fh.write(json.dumps(_rec("c", eps=2.0)) + "\n")
    assert prune_superseded(export, cells, old) == 1
    assert json.loads(old.read_text().splitlines()[-1]) == recs[3]
    assert prune_superseded(tmp_path / "absent.jsonl", [], old) == 0


def test_superseded_records_move_out_of_every_file_of_a_sharded_export(tmp_path):
    import json

    from bench.studies.build_leaderboard import prune_superseded

    d = tmp_path / "runs"
    d.mkdir()
    (d / "cora.jsonl").write_text(json.dumps(_rec("a")) + "\n" + json.dumps(_rec("x")) + "\n")
    (d / "citeseer.jsonl").write_text(json.dumps(_rec("y", dataset="citeseer")) + "\n")
    assert prune_superseded(d, [_cell("a")], tmp_path / "superseded") == 2  # a directory: one file per dataset
    assert (d / "cora.jsonl").read_text() == json.dumps(_rec("a")) + "\n"
    assert (d / "citeseer.jsonl").read_text() == ""
    assert (tmp_path / "superseded" / "cora.jsonl").read_text() == json.dumps(_rec("x")) + "\n"
    assert (tmp_path / "superseded" / "citeseer.jsonl").read_text() == json.dumps(_rec("y", dataset="citeseer")) + "\n"


def test_method_selection_keeps_the_other_cells_identity():
    from bench.studies.build_leaderboard import select_methods

    raw = yaml.safe_load(Path(CONFIG).read_text())
    family = ["privgnn", "pate-m", "pate-g"]
    full = {c.cell_id: c.method for c in api.cells(dataset_config(raw, "photo"))}
    rest = {c.cell_id for c in api.cells(dataset_config(select_methods(raw, None, family), "photo"))}
    only = {c.cell_id for c in api.cells(dataset_config(select_methods(raw, family, None), "photo"))}
    assert only and rest and not rest & only
    assert rest | only == full.keys()
    assert {full[i] for i in only} == set(family)
    assert not dataset_config(select_methods(raw, family, None), "cora")["methods"]


def test_unknown_or_empty_method_selection_is_an_error(capsys):
    assert main(["--methods", "no-such-method", "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("error: no method no-such-method in")
    assert main(["--methods", "mlp", "--skip-methods", "mlp", "--dry-run"]) == 2
    assert "leave no method" in capsys.readouterr().err


def test_seed_selection_keeps_the_cells_identity_and_drops_attacked_seeds():
    from bench.studies.build_leaderboard import select_methods, select_seeds

    raw = select_methods(yaml.safe_load(Path(CONFIG).read_text()), ["privgnn"], None)
    full = {c.cell_id: c for c in api.cells(dataset_config(raw, "photo"))}
    cheap = {c.cell_id: c for c in api.cells(dataset_config(select_seeds(raw, [2, 3, 4]), "photo"))}
    assert cheap and set(cheap) < set(full)
    assert {c.seed for c in cheap.values()} == {2, 3, 4} == {full[i].seed for i in cheap}
    assert {i for i, c in full.items() if c.seed in (2, 3, 4)} == set(cheap)
    assert select_seeds(raw, None) is raw


def test_no_verify_keeps_exactly_the_run_cells_with_their_identity():
    from bench.studies.build_leaderboard import select_methods, without_verify

    raw = select_methods(yaml.safe_load(Path(CONFIG).read_text()), ["privgnn"], None)
    full = {c.cell_id: c.kind for c in api.cells(dataset_config(raw, "photo"))}
    runs = {c.cell_id: c.kind for c in api.cells(dataset_config(without_verify(raw, True), "photo"))}
    assert "verify" in full.values() and set(runs.values()) == {"run"}
    assert runs == {i: k for i, k in full.items() if k == "run"}
    assert without_verify(raw, False) is raw


def test_unknown_seed_is_an_error(capsys):
    assert main(["--seeds", "7", "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("error: seed 7 not in")
