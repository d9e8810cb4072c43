"""What the terminal shows a newcomer: `bench run` names each run (id, name) and where it was tracked; `bench attack`
and the demo's summary (`bench leaderboard --site`) say what each attack infers and when that is outside the method's
privacy claim. The summaries are built from hand-made records (no training)."""

from __future__ import annotations

import json
import math

import pytest

from bench import tracking
from bench.cli import main

TINY = "csbm:nodes=60,classes=2"


# --------------------------------------------------------------------------------------
# bench run
# --------------------------------------------------------------------------------------


def test_bench_run_prints_each_runs_id_name_and_where_it_was_tracked(capsys):
    exp = "terminal-run-ids"
    assert main(["run", "-m", "mlp", "-d", TINY, "--set", "epochs=2", "--seeds", "0", "1", "--experiment", exp]) == 0
    out, err = capsys.readouterr()
    runs = {r.info.run_name: r.info.run_id for r in tracking.search_runs(exp)}
    assert len(runs) == 2
    assert f"experiment {exp!r} at {tracking.tracking_uri()}" in out and "bench account run RUN_ID" in out
    for seed in (0, 1):
        name = f"mlp/{TINY}/random-75-10-15/eps=inf/s{seed}"
        line = next(x for x in out.splitlines() if x.startswith(runs[name]))
        assert line.split() == [runs[name], name]
        assert f"mlp seed {seed}: " in err and f"run {runs[name]}" in err  # the progress line names it as it ends


def test_bench_run_without_tracking_says_so(capsys):
    assert main(["run", "-m", "mlp", "-d", TINY, "--set", "epochs=2", "--no-track"]) == 0
    out, err = capsys.readouterr()
    assert "not tracked" in out and f"mlp/{TINY}/random-75-10-15/eps=inf/s0" in out
    assert "not tracked" in err and tracking.tracking_uri() not in out


# --------------------------------------------------------------------------------------
# bench attack's table
# --------------------------------------------------------------------------------------


def _report(attack: str, level: str, auc: float) -> dict:
    est = {"value": auc, "low": math.nan, "high": math.nan}
    metrics = {k: est for k in ("auc", "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr", "advantage", "balanced_accuracy")}
    return {"attack": attack, "level": level, "status": "ok", "reason": "", "evaluated_members": 10,
            "evaluated_non_members": 10, "variants": {"v": {"threshold": 0.5, **metrics}}, "run_id": "c1"}


def _result(method: str, unit: str, label: str, attacks: list[dict]):
    from bench.run import RunResult

    return RunResult(method, "cora", "random-75-10-15", 0, unit, {"test_acc": 0.8}, 1.0, 1e-4, 1.0, "r1", 1.0,
                     attacks=attacks, unit_label=label)


def test_the_attack_table_names_what_each_attack_infers_and_flags_it_outside_the_claim():
    from bench.attack import attack_table

    results = [_result("progap-edge", "edge", "edge (undirected)",
                       [_report("threshold", "node", 0.84), _report("link-stealing", "edge", 0.61)]),
               _result("progap-node", "node", "node (degree-bounded)", [_report("threshold", "node", 0.55)])]
    lines = attack_table(results).splitlines()
    edge_node = next(x for x in lines if x.startswith("progap-edge") and "threshold" in x)
    edge_edge = next(x for x in lines if x.startswith("progap-edge") and "link-stealing" in x)
    node_node = next(x for x in lines if x.startswith("progap-node"))
    assert "threshold (node membership)" in edge_node and edge_node.rstrip().endswith("outside the edge-level claim")
    assert "link-stealing (edge membership)" in edge_edge and "outside" not in edge_edge
    assert "edge (undirected)" in edge_edge and "outside" not in node_node


@pytest.mark.parametrize("attack,unit,outside", [
    ("threshold", "edge", "outside the edge-level claim"),
    ("lira", "feature", "outside the feature-level claim"),
    ("link-stealing", "feature", "outside the feature-level claim"),
    ("threshold", "node", ""), ("link-stealing", "node", ""), ("link-stealing", "edge", ""), ("shadow", "none", ""),
    ("privgnn-attack1", "node", ""),
    ("privgnn-attack2", "node", "outside the node-level claim (public nodes)"),
])
def test_which_attacks_a_privacy_unit_covers(attack, unit, outside):
    from bench.attack import attack_unit

    assert attack_unit(attack, unit)["outside_claim"] == outside
    assert attack_unit("no-such-attack", unit) == {"attack_unit": "", "outside_claim": ""}


# --------------------------------------------------------------------------------------
# The demo's summary (bench leaderboard --run CONFIG --site DIR)
# --------------------------------------------------------------------------------------


def rec(method, unit, label, eps, acc, attacks, seed=0):
    return {"cell_id": f"{method}-{seed}", "run_id": f"r-{method}-{seed}", "kind": "run", "status": "FINISHED",
            "start_time": 1_763_800_000_000 + seed, "git_commit": "abc",
            "params": {"method": method, "dataset": "cora", "split": "random-75-10-15", "seed": seed,
                       "privacy_unit": unit, "target_epsilon": str(eps), "delta": "0.0001",
                       "config_hash": f"{method}{eps}{seed}", "host": "Test CPU, 2 cores", "device": "cpu"},
            "metrics": {"test_acc": acc, "epsilon": eps if math.isfinite(eps) else "inf", "fit_seconds": 1.0},
            "tags": {"unit_label": label},
            "attacks": {"threshold": {v: {"auc": a, "tpr_at_1pct_fpr": 0.01} for v, a in attacks.items()}}}


def verify_rec(method, eps, verdict="PASS", lb=0.12):
    return {"cell_id": f"verify-{method}", "run_id": f"v-{method}", "kind": "verify", "status": "FINISHED",
            "start_time": 1_763_800_000_500, "git_commit": "abc",
            "params": {"target_epsilon": str(eps)}, "metrics": {},
            "tags": {"method": method, "dataset": "cora", "split": "random-75-10-15", "verdict": verdict},
            "verify": {"verdict": verdict, "checks": [{"name": "one-run", "epsilon_lb": lb}]}}


DEMO = [rec("gcn", "none", "none", math.inf, 0.87, {"loss": 0.54, "entropy": 0.53}),
        rec("progap-edge", "edge", "edge (undirected)", 1.0, 0.80, {"loss": 0.84, "entropy": 0.80}),
        rec("progap-node", "node", "node (degree-bounded)", 8.0, 0.71, {"loss": 0.52, "entropy": 0.51}),
        verify_rec("progap-edge", 1.0), verify_rec("progap-node", 8.0)]


def test_the_summary_has_the_demo_columns_and_says_a_node_attack_is_outside_an_edge_claim():
    from bench.leaderboard import attack_unit_note, collect_records, terminal_summary

    rows = {r.method: r for r in collect_records(DEMO)}
    text = terminal_summary(list(rows.values()))
    lines = text.splitlines()
    header = lines[0]
    assert header.startswith("method ")
    for col in ("unit", "spent eps", "test acc", "attack AUC (what it infers)", "verification"):
        assert col in header
    edge = next(x for x in lines if x.startswith("progap-edge"))
    node = next(x for x in lines if x.startswith("progap-node"))
    gcn = next(x for x in lines if x.startswith("gcn"))
    assert "edge (undirected)" in edge and "0.8000 (1 seed)" in edge and "PASS (0.12)" in edge
    assert "0.84 (node membership; outside the edge-level claim)" in edge
    assert "0.52 (node membership)" in node and "outside" not in node
    assert "0.54 (node membership)" in gcn and "inf (not private)" in gcn and "outside" not in gcn
    assert any(x.startswith("* outside the X-level claim") for x in lines)
    # the same note, for the leaderboard's own tables (wired into row_cells / to_csv by the lead)
    assert attack_unit_note(rows["progap-edge"]) == " [node membership: outside the edge-level claim]"
    assert attack_unit_note(rows["progap-node"]) == attack_unit_note(rows["gcn"]) == ""


def test_a_full_grid_is_not_dumped_on_the_terminal():
    from bench.leaderboard import collect_records, terminal_summary

    rows = collect_records([rec(f"m{i}", "none", "none", math.inf, 0.5, {"loss": 0.5}) for i in range(5)])
    assert terminal_summary(rows, max_rows=4).startswith("5 leaderboard rows")


def test_bench_leaderboard_site_prints_the_table_and_the_page(tmp_path, capsys):
    site = tmp_path / "demo"
    site.mkdir()
    (site / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DEMO))
    assert main(["leaderboard", "--site", str(site), "--no-track"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("method "))
    assert any(x.startswith("progap-edge") and "outside the edge-level claim" in x for x in lines[start:])
    assert lines[-1].startswith(f"page: {site / 'index.html'}") and (site / "index.html").is_file()
