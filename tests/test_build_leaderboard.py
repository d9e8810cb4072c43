"""scripts.build_leaderboard: a dataset's slice of the leaderboard config holds exactly that dataset's cells."""

from pathlib import Path

import yaml

from bench import api
from scripts.build_leaderboard import CONFIG, dataset_config, main


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
