"""The published leaderboard's pieces: the papers file against the leaderboard config, "Papers vs ours", the site's
provenance, cell order, concurrent export appends, the tuned hyperparameter overlay and the tuner's choice."""

from __future__ import annotations

import json
import math
import multiprocessing as mp
from pathlib import Path

import pytest
import yaml

from bench import hparams as H
from bench import records
from bench.leaderboard import build_site, collect_records, config_records
from bench.site import load_papers, papers_md, provenance_md, site_texts
from bench.sweep import build_config, load_config

REPO = Path(__file__).resolve().parents[1]


def rec(method, eps, seed, acc, dataset="facebook-wisconsin87", split="random-75-10-15", unit="edge", cid=None,
        fit=10.0, hp_source="defaults"):
    return {"cell_id": cid or f"{method}-{eps}-{seed}-{dataset}-{split}", "run_id": f"r{seed}{method}", "kind": "run",
            "status": "FINISHED", "start_time": 1_763_800_000_000 + seed, "git_commit": "abc",
            "params": {"method": method, "dataset": dataset, "split": split, "seed": seed, "privacy_unit": unit,
                       "target_epsilon": str(eps), "delta": "1e-06", "config_hash": f"{method}{eps}{seed}{dataset}",
                       "host": "Test CPU, 2 cores", "device": "cpu", "hp_source": hp_source},
            "metrics": {"test_acc": acc, "epsilon": eps if math.isfinite(eps) else "inf", "fit_seconds": fit}}


def test_every_papers_cell_names_a_row_the_leaderboard_config_runs():
    papers = load_papers()
    cells = {(c.dataset, c.split, c.method, c.epsilon) for c in load_config(REPO / "configs" / "leaderboard.yaml").cells
             if c.kind == "run"}
    assert papers["papers"], "configs/papers.yaml lists no paper"
    for sec in papers["papers"]:
        for cell in sec["cells"]:
            if cell.get("setting_only"):  # no tuned row: the paper-setting test holds it
                continue
            eps = float(cell.get("epsilon", math.inf))
            assert (sec["dataset"], sec["split"], cell["method"], eps) in cells, (sec["paper"], cell)
            for part in str(cell.get("reason", "")).split(";"):
                part = part.strip()
                assert part, (sec["paper"], cell)
                # a reason is a key of `reasons` or a sentence of its own
                assert part in papers["reasons"] or " " in part, part


def test_papers_vs_ours_difference_and_missing_rows():
    papers = {"reasons": {"school": "another school"},
              "papers": [{"paper": "P", "dataset": "facebook-wisconsin87", "split": "random-75-10-15",
                          "cells": [{"method": "gap-edge", "epsilon": 1, "paper": 69.4, "reason": "school"},
                                    {"method": "progap-edge", "epsilon": 1, "paper": 77.2, "reason": "school"},
                                    {"method": "sage", "paper": 84.7, "reason": "school"}]}]}
    rows = collect_records([rec("gap-edge", 1.0, s, a) for s, a in enumerate([0.60, 0.62, 0.64])]
                           + [rec("sage", math.inf, 0, 0.80, unit="none")])
    md = papers_md(rows, papers)
    line = next(x for x in md.splitlines() if x.startswith("| gap-edge"))
    assert "| 69.4 |" in line and "62.0 [" in line and "(3 seeds)" in line
    # mean 62.0 - 69.4 over 3 seeds (sd 2): t(0.95, 2) = 2.92 gives -7.4 +- 3.37, wholly below -2 points: "no"
    assert "| -7.4 [-10.8, -4.0] | no |" in line
    assert "not run yet" in next(x for x in md.splitlines() if x.startswith("| progap-edge"))
    sage = next(x for x in md.splitlines() if x.startswith("| sage"))
    assert "80.0" in sage and "+-4.7" not in sage and "| -4.7 |" in sage and "| - |" in sage  # no epsilon spent
    assert "* school: another school" in md


def test_provenance_counts_compute_machines_progress_and_hparam_sources():
    recs = [rec("gap-edge", 1.0, 0, 0.6, fit=1800.0, hp_source="configs/hparams_tuned.yaml gap-edge/x (tuned on "
                "validation labels, outside the privacy budget, as the papers do)"),
            rec("sage", math.inf, 0, 0.8, unit="none", fit=1800.0),
            {"cell_id": "v", "kind": "verify", "status": "FINISHED", "start_time": 1_763_900_000_000,
             "git_commit": "def", "params": {}, "metrics": {}, "tags": {}}]
    text = provenance_md(recs, "docs/leaderboard/runs.jsonl", "configs/leaderboard.yaml", planned=10, done=3)
    assert "2 training runs and 1 verifications" in text
    assert "1.0 h of training" in text and "Test CPU, 2 cores" in text
    assert "3 of 10 cells are done" in text and "partial" in text
    assert "1 run: tuned" in text and "outside the privacy budget" in text and "1 run: the method's defaults" in text
    # a script passing absolute paths under the working directory gets the same, relative, text
    assert provenance_md(recs, str(Path.cwd() / "docs/leaderboard/runs.jsonl"),
                         str(Path.cwd() / "configs/leaderboard.yaml"), planned=10, done=3) == text
    assert "`configs/leaderboard.yaml`" in text and str(Path.cwd()) not in text
    title, intro, papers = site_texts(collect_records(recs), None, records=recs)
    assert title and "MLflow store" in intro and papers.startswith("## Papers vs ours")
    # edge-attack records get their own paragraph and change neither the training counts nor the compute dates
    attacks = [{"cell_id": f"e{i}", "kind": "edge-attack", "status": "FINISHED", "start_time": 1_900_000_000_000,
                "git_commit": "abc", "attacked_model": "recorded artefact" if i == 0 else "refit (not the recorded run)",
                "seconds": {"load": 60.0, "linkteller": 120.0}} for i in range(2)]
    more = provenance_md(recs + attacks, "docs/leaderboard/runs.jsonl", "configs/leaderboard.yaml", planned=10, done=3)
    assert "2 training runs and 1 verifications" in more and "Edge attacks: 2 runs of the attack seeds" in more
    assert "1 of them attack the recorded run's released model" in more and "1 attack a refit" in more
    assert "6 min of attacks" in more and "No epsilon is derived from them" in more
    compute = [[p for p in t.split("\n\n") if p.startswith("Compute:")] for t in (text, more)]
    assert compute[0] and compute[0] == compute[1]
    # a paper section only where the page has its dataset and split; the absent datasets are listed whatever it has
    assert "### ProGAP" in papers and "### Ayle et al." not in papers
    assert "## Datasets not on this page" in papers and "| PubMed | DRW 2023 |" in papers


def test_site_from_the_config_keeps_only_its_cells(tmp_path):
    raw = {"experiment": "t", "datasets": ["cora"], "splits": ["random-75-10-15"], "seeds": [0, 1],
           "methods": ["mlp"], "hparams": False}
    cfg_path = tmp_path / "lb.yaml"
    import yaml

    cfg_path.write_text(yaml.safe_dump(raw))
    cells = [c for c in load_config(cfg_path).cells]
    recs = [rec("mlp", math.inf, c.seed, 0.5 + 0.1 * c.seed, dataset="cora", unit="none", cid=c.cell_id)
            for c in cells[:1]]
    stale = rec("mlp", math.inf, 7, 0.1, dataset="cora", unit="none", cid="stale")
    kept, planned, done = config_records(str(cfg_path), recs + [stale])
    assert [r["cell_id"] for r in kept] == [cells[0].cell_id] and planned == 2 and done == 1
    files = build_site(collect_records(kept), tmp_path / "site", "T", "intro", "")
    assert (tmp_path / "site" / "index.html") in files and "intro" in (tmp_path / "site" / "README.md").read_text()


def test_a_retuned_row_shows_its_previous_setting_marked_until_its_new_cells_run(tmp_path):
    import yaml

    from bench.leaderboard import PREVIOUS_MARK, to_csv, to_markdown

    raw = {"experiment": "t", "datasets": ["cora"], "splits": ["random-75-10-15"], "seeds": [0, 1],
           "methods": ["mlp"], "hparams": False}
    cfg_path = tmp_path / "lb.yaml"
    cfg_path.write_text(yaml.safe_dump(raw))
    cells = load_config(cfg_path).cells

    def old(seed, lr, acc, t):
        r = rec("mlp", math.inf, seed, acc, dataset="cora", unit="none", cid=f"old-{lr}-{seed}")
        r["params"]["hp.lr"], r["start_time"] = str(lr), t
        return r

    previous = [old(0, 0.1, 0.7, 2), old(1, 0.1, 0.8, 3)]
    older = [old(0, 0.5, 0.2, 1)]  # an earlier setting still: never mixed in
    other = rec("mlp", math.inf, 0, 0.3, dataset="citeseer", unit="none", cid="elsewhere")  # not a row of the grid
    kept, planned, done = config_records(str(cfg_path), previous + older + [other])
    assert (planned, done) == (2, 0)
    assert sorted(r["cell_id"] for r in kept) == ["old-0.1-0", "old-0.1-1"]
    assert all(r["previous_setting"] for r in kept) and not any("previous_setting" in r for r in previous)
    (row,) = collect_records(kept)
    assert row.previous and sorted(row.accs) == [0.7, 0.8]
    md = to_markdown([row], "T")
    assert f"| mlp {PREVIOUS_MARK} |" in md and "not run yet" in md
    assert to_csv([row]).splitlines()[1].endswith(",True")
    text = provenance_md(kept, "runs.jsonl", str(cfg_path), planned, done)
    assert "1 row marked '(previous setting)'" in text
    # one current run of the row: the row is the current setting's (partial), never a mix of the two
    new = rec("mlp", math.inf, 0, 0.9, dataset="cora", unit="none", cid=cells[0].cell_id)
    kept, _, done = config_records(str(cfg_path), previous + older + [new])
    assert [r["cell_id"] for r in kept] == [cells[0].cell_id] and done == 1
    assert not collect_records(kept)[0].previous


def test_sweep_order_runs_dataset_by_dataset_then_seed_with_checks_next_to_their_run():
    raw = {"experiment": "t", "datasets": ["cora", "citeseer"], "splits": ["random-75-10-15"], "seeds": [0, 1],
           "epsilons": [8], "order": ["dataset", "seed"], "hparams": False, "verify": {"quick": True, "seeds": [0]},
           "methods": ["mlp", "dp-mlp"]}
    cells = build_config(raw).cells
    keys = [(c.dataset, c.seed) for c in cells]
    assert keys == sorted(keys, key=lambda k: (["cora", "citeseer"].index(k[0]), k[1]))
    i = next(i for i, c in enumerate(cells) if c.kind == "verify")
    assert cells[i - 1].kind == "run" and cells[i - 1].method == cells[i].method and cells[i - 1].seed == 0
    with pytest.raises(Exception, match="order"):
        build_config({**raw, "order": ["dataset", "colour"]})
    unordered = build_config({k: v for k, v in raw.items() if k != "order"}).cells
    assert {c.cell_id for c in unordered} == {c.cell_id for c in cells}  # order never changes identities


def _append_many(path: str, worker: int) -> None:
    for i in range(40):
        records.append(path, {"cell_id": f"w{worker}-{i}", "kind": "run", "blob": "x" * 20000})


def test_parallel_appends_never_interleave(tmp_path):
    path = str(tmp_path / "runs.jsonl")
    procs = [mp.get_context("spawn").Process(target=_append_many, args=(path, w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    lines = Path(path).read_text().splitlines()
    assert len(lines) == 120 and all(len(json.loads(x)["blob"]) == 20000 for x in lines)


def test_tuned_entries_override_the_hand_written_ones(tmp_path, monkeypatch):
    (tmp_path / "hparams.yaml").write_text(
        "dpgnn:\n  facebook-*:\n    source: measured\n    set: {max_degree: 3, lr: 2.0}\n"
        "  cora:\n    source: paper\n    set: {max_degree: 7}\n")
    (tmp_path / "hparams_tuned.yaml").write_text(
        "dpgnn:\n  facebook-wisconsin87@random-75-10-15:\n    source: tuned\n    set: {max_degree: 10, lr: 1.0}\n")
    monkeypatch.delenv("BENCH_HPARAMS", raising=False)
    monkeypatch.setattr(H, "DEFAULT_PATH", tmp_path / "hparams.yaml")
    monkeypatch.setattr(H, "TUNED_PATH", tmp_path / "hparams_tuned.yaml")
    e = H.lookup("dpgnn", "facebook-wisconsin87", "random-75-10-15")
    assert e.source == "tuned" and e.values == {"max_degree": 10, "lr": 1.0}
    assert H.lookup("dpgnn", "facebook-berkeley13", "random-75-10-15").source == "measured"
    assert H.lookup("dpgnn", "facebook-wisconsin87", "disjoint").source == "measured"  # tuned on another split
    assert H.lookup("dpgnn", "cora", "public").values == {"max_degree": 7}
    # the tuner reads the hand-written file alone
    assert H.lookup("dpgnn", "facebook-wisconsin87", "random-75-10-15", path=H.DEFAULT_PATH).source == "measured"


def test_the_tuner_picks_the_best_mean_and_waits_for_every_fit():
    from bench.studies.tune import choose, fit_key, points

    spec = {"epsilon": 8, "grid": {"lr": [0.01, 0.05], "hops": [1, 2]}}
    assert len(points(spec["grid"])) == 4
    seeds = [0, 1, 2]
    val = {(0.01, 1): [0.5, 0.5, 0.5], (0.01, 2): [0.9, 0.1, 0.2], (0.05, 1): [0.6, 0.6, 0.55], (0.05, 2): None}
    results = {}
    for (lr, hops), vs in val.items():
        for s in seeds:
            key = fit_key("m", "d", "sp", 8.0, {"lr": lr, "hops": hops}, s)
            results[key] = {"key": key, "val_acc": None if vs is None else vs[s], **({"error": "x"} if vs is None
                                                                                    else {})}
    best, score, scored = choose(results, "m", "d", "sp", spec, seeds)
    assert best == {"lr": 0.05, "hops": 1} and score == pytest.approx(0.5833, abs=1e-4) and len(scored) == 3
    results.pop(fit_key("m", "d", "sp", 8.0, {"lr": 0.01, "hops": 1}, 2))
    assert choose(results, "m", "d", "sp", spec, seeds) is None  # a fit still to run: no choice yet


def test_a_budget_coupled_grid_is_tuned_per_epsilon_and_looked_up_per_epsilon(tmp_path, monkeypatch):
    """DRW's noise multiplier: the winner at epsilon 8 may not allow one step at epsilon 1, so ``by_epsilon``
    epsilons get their own choice, and a run at epsilon 1 reads it (a run at 8, or at an untuned 4, does not)."""
    import bench.studies.tune as T

    spec = {"epsilon": 8, "by_epsilon": [1], "grid": {"noise_multiplier": [2, 8]}}
    cfg = {"seeds": [0, 1], "results": "r", "output": "o", "leaderboard": "l", "methods": {"drw": spec}}
    val = {(8.0, 2): 0.7, (8.0, 8): 0.6, (1.0, 2): None, (1.0, 8): 0.3}  # lambda 2 cannot step at epsilon 1
    results = {}
    for (eps, lam), v in val.items():
        for s in cfg["seeds"]:
            key = T.fit_key("drw", "cora", "sp", eps, {"noise_multiplier": lam}, s)
            results[key] = {"key": key, "val_acc": v}
    monkeypatch.setattr(T, "targets", lambda cfg: [("drw", "cora", "sp")])
    monkeypatch.setattr(T, "base_overrides", lambda *a: {"lr": 0.01})
    assert T.epsilons(spec) == [8.0, 1.0]
    (tmp_path / "hparams.yaml").write_text("{}\n")
    (tmp_path / "hparams_tuned.yaml").write_text(T.tuned_yaml(cfg, results))
    monkeypatch.delenv("BENCH_HPARAMS", raising=False)
    monkeypatch.setattr(H, "DEFAULT_PATH", tmp_path / "hparams.yaml")
    monkeypatch.setattr(H, "TUNED_PATH", tmp_path / "hparams_tuned.yaml")
    assert H.lookup("drw", "cora", "sp", 8.0).values == {"lr": 0.01, "noise_multiplier": 2}
    assert H.lookup("drw", "cora", "sp", 1.0).values == {"lr": 0.01, "noise_multiplier": 8}
    assert H.lookup("drw", "cora", "sp", 4.0).values == {"lr": 0.01, "noise_multiplier": 2}
    results.pop(T.fit_key("drw", "cora", "sp", 1.0, {"noise_multiplier": 8}, 1))
    assert "drw" not in T.tuned_yaml(cfg, results)  # an epsilon still tuning: no entry yet
    # ... unless the file had one: a retune under way keeps the earlier choice (never the defaults), and says so
    earlier = {"drw": {"cora@sp": {"source": "tuned", "note": "seeds [7]", "set": {"noise_multiplier": 4}}}}
    text = T.tuned_yaml(cfg, results, earlier)
    assert yaml.safe_load(text) == earlier and "keeping their earlier entry" in text and "drw on cora" in text
    results[T.fit_key("drw", "cora", "sp", 1.0, {"noise_multiplier": 8}, 1)] = {"val_acc": 0.3}
    assert yaml.safe_load(T.tuned_yaml(cfg, results, earlier))["drw"]["cora@sp"]["set"]["noise_multiplier"] == 2


def test_every_leaderboard_epsilon_of_a_budget_coupled_method_is_tuned_on_its_own():
    """A method whose grid holds the noise multiplier (how many steps a budget buys) is tuned at every finite target
    epsilon the leaderboard runs it at, and the checked-in tuned file has that choice: an epsilon that borrowed the
    epsilon-8 winner could allow no step (DRW-R on Cora at 0.5: lambda 2) or a single one (at 2)."""
    import bench.studies.tune as T

    cfg = T.load_tuning(T.REPO / "configs" / "tuning.yaml")
    tuned = yaml.safe_load((T.REPO / cfg["output"]).read_text())
    coupled = {m for m, spec in cfg["methods"].items() if "noise_multiplier" in spec["grid"]}
    assert coupled >= {"drw", "drw-r", "drw-d"}
    from bench import api

    need: dict[tuple[str, str, str], set[float]] = {}
    for c in api.cells(T.REPO / cfg["leaderboard"]):
        if c.kind == "run" and not c.skip and c.method in coupled and math.isfinite(c.epsilon):
            need.setdefault((c.method, c.dataset, c.split), set()).add(float(c.epsilon))
    assert need
    for (m, d, split), eps in sorted(need.items()):
        assert eps <= set(T.epsilons(cfg["methods"][m])), (m, d, split, sorted(eps))
        entry = tuned[m][f"{d}@{split}"]
        own = eps - {float(cfg["methods"][m]["epsilon"])}  # the base entry is the tuning epsilon's choice
        by_eps = {float(k) for k in entry.get("by_epsilon", {})}
        assert own <= by_eps, (m, d, split, sorted(own - by_eps))


def test_site_plots_are_palette_pngs_and_the_page_inlines_the_same_bytes(tmp_path):
    import base64

    from PIL import Image

    recs = [rec("gap-edge", e, s, 0.6 + 0.05 * s, dataset="cora") for e in (1.0, 4.0) for s in (0, 1)]
    recs += [rec("sage", math.inf, s, 0.8, dataset="cora", unit="none") for s in (0, 1)]
    files = build_site(collect_records(recs), tmp_path / "site", "T")
    (png,) = [f for f in files if f.suffix == ".png"]
    with Image.open(png) as im:
        assert im.mode == "P"  # 256 colours: ~3.5x smaller than the RGBA render
    assert base64.b64encode(png.read_bytes()).decode("ascii") in (tmp_path / "site" / "index.html").read_text()


def test_a_sharded_export_keeps_one_file_per_dataset_and_reads_like_one_file(tmp_path):
    """A directory export: appends and rewrites go to DIR/<dataset>.jsonl, loading merges the files (newest record
    of a cell wins), and a site directory with runs/ reads it by default."""
    d = tmp_path / "site" / "runs"
    d.mkdir(parents=True)
    a0 = rec("gap-edge", 1.0, 0, 0.6, dataset="cora", cid="a")
    b0 = rec("gap-edge", 1.0, 0, 0.7, dataset="facebook-wisconsin87", cid="b")
    records.append(str(d) + "/", a0)
    records.append(d, b0)
    assert sorted(p.name for p in d.iterdir()) == ["cora.jsonl", "facebook-wisconsin87.jsonl"]
    newer = {**a0, "start_time": a0["start_time"] + 5, "metrics": {**a0["metrics"], "test_acc": 0.65}}
    assert records.write(d, [newer]) == 2
    assert len((d / "cora.jsonl").read_text().splitlines()) == 1  # rewritten: deduplicated per cell
    got = {r["cell_id"]: r["metrics"]["test_acc"] for r in records.load(d)}
    assert got == {"a": 0.65, "b": 0.7} and records.done_cells(d) == {"a", "b"}
    assert records.site_export(tmp_path / "site") == f"{d}/"
    assert records.site_export(tmp_path / "elsewhere") == str(tmp_path / "elsewhere" / "runs.jsonl")
    assert records.load(tmp_path / "missing") == []


def test_the_tuner_refuses_seeds_the_leaderboard_reports(tmp_path):
    """Tuning on a reported seed would let that seed's split and noise choose the settings it is scored with."""
    import pytest
    import yaml

    import bench.studies.tune as T

    real = yaml.safe_load((T.REPO / "configs" / "tuning.yaml").read_text())
    board = yaml.safe_load((T.REPO / real["leaderboard"]).read_text())
    assert not set(real["seeds"]) & set(board["seeds"])  # the checked-in config tunes on other seeds
    T.load_tuning(T.REPO / "configs" / "tuning.yaml")
    bad = tmp_path / "tuning.yaml"
    bad.write_text(yaml.safe_dump({**real, "seeds": [board["seeds"][0], 100]}))
    with pytest.raises(SystemExit, match="also reported"):
        T.load_tuning(bad)


def test_every_paper_setting_config_runs_its_sections_cells():
    """A section's `setting` is a committed config that runs each of its cells (the cell's `setting_method` on the
    section's dataset and split at its `setting_epsilon`, else its epsilon), and every `differs` part is a reason key or a sentence."""
    papers = load_papers()
    with_setting = [sec for sec in papers["papers"] if sec.get("setting")]
    assert with_setting, "no paper section names its own setting"
    for sec in with_setting:
        cells = {(c.dataset, c.split, c.method, c.epsilon) for c in load_config(REPO / sec["setting"]).cells
                 if c.kind == "run"}
        for cell in sec["cells"]:
            eps = float(cell.get("setting_epsilon", cell.get("epsilon", math.inf)))
            method = cell.get("setting_method") or cell["method"]
            assert (sec["dataset"], sec["split"], method, eps) in cells, (sec["setting"], cell)
            assert cell.get("differs"), (sec["paper"], cell)
            for part in str(cell["differs"]).split(";"):
                assert part.strip() in papers["reasons"] or " " in part.strip(), part


def test_papers_vs_ours_prints_the_paper_setting_beside_the_tuned_row():
    papers = {"reasons": {"school": "another school", "backbone": "another backbone"},
              "papers": [{"paper": "P", "dataset": "facebook-wisconsin87", "split": "random-75-10-15",
                          "setting": "configs/papers/x.yaml",
                          "cells": [{"method": "dpgnn", "epsilon": 8, "paper": 62.6, "reason": "school",
                                     "setting_method": "dpgnn-adam", "differs": "school; backbone"},
                                    {"method": "sage", "paper": 84.7, "reason": "school", "differs": "school"}]}]}
    tuned = collect_records([rec("dpgnn", 8.0, s, a, unit="node") for s, a in enumerate([0.20, 0.22, 0.24])]
                            + [rec("sage", math.inf, 0, 0.80, unit="none")])
    # at the setting: dpgnn-adam within 2 points of the paper over 4 seeds, and no sage run
    setting = collect_records([rec("dpgnn-adam", 8.0, s, a, unit="node")
                               for s, a in enumerate([0.620, 0.625, 0.630, 0.627])])
    md = papers_md(tuned, papers, setting)
    head, at = md.split("At the paper's setting (`configs/papers/x.yaml`")
    tuned_line = next(x for x in head.splitlines() if x.startswith("| dpgnn "))
    assert "| no |" in tuned_line and "dpgnn-adam" not in head
    line = next(x for x in at.splitlines() if x.startswith("| dpgnn-adam (the paper's dpgnn)"))
    assert "62.5 [" in line and "(4 seeds)" in line and "| yes | school; backbone |" in line
    assert "not run yet" in next(x for x in at.splitlines() if x.startswith("| sage"))
    assert "* backbone: another backbone" in md
    # without a settings export the second table still says what was not run, never a tuned row
    assert "dpgnn-adam (the paper's dpgnn) | 8 | 62.6 | not run yet" in papers_md(tuned, papers)


def test_a_setting_only_cell_and_a_setting_epsilon_show_at_the_paper_setting_alone():
    """A paper's noise parameter that overspends the cell's target under a sound account runs at its own target
    (`setting_epsilon`); the authors' code, which no tuned row runs (`setting_only`), shows only in the second table,
    its target 'none (not private)', and never as a plot's star."""
    from bench.leaderboard.plots import paper_points

    papers = {"reasons": {"lambda-sound": "the paper's lambda spends more", "logp": "not private"},
              "papers": [{"paper": "P", "dataset": "computers", "split": "private-public",
                          "setting": "configs/papers/y.yaml",
                          "cells": [{"method": "privgnn", "epsilon": 8, "paper": 64.0, "reason": "sound",
                                     "setting_epsilon": 20, "differs": "lambda-sound"},
                                    {"method": "privgnn", "epsilon": 8, "paper": 64.0, "setting_only": True,
                                     "setting_epsilon": "inf", "not_private": True,
                                     "setting_label": "privgnn, the authors' code", "differs": "logp"}]}]}
    tuned = collect_records([rec("privgnn", 8.0, s, a, "computers", "private-public", "node")
                             for s, a in enumerate([0.10, 0.11, 0.12])])
    setting = collect_records([rec("privgnn", 20.0, s, a, "computers", "private-public", "node")
                               for s, a in enumerate([0.15, 0.16, 0.17])]
                              + [rec("privgnn", math.inf, s, a, "computers", "private-public", "node")
                                 for s, a in enumerate([0.60, 0.61, 0.605])])
    md = papers_md(tuned, papers, setting)
    head, at = md.split("At the paper's setting (`configs/papers/y.yaml`")
    assert len([x for x in head.splitlines() if x.startswith("| privgnn ")]) == 1 and "authors' code" not in head
    sound = next(x for x in at.splitlines() if x.startswith("| privgnn | 20 |"))
    assert "16.0 [" in sound and "| no | lambda-sound |" in sound
    logp = next(x for x in at.splitlines() if x.startswith("| privgnn, the authors' code | none (not private) |"))
    assert "60.5 [" in logp and "| no | logp |" in logp
    assert "* lambda-sound: the paper's lambda spends more" in md and "* logp: not private" in md
    assert [c.method for c in paper_points(tuned, papers)] == ["privgnn"]
