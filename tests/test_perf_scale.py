"""``bench perf scale``: a tiny grid end to end (records, resume, report), the memory cap, slopes and extrapolation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.perf import scale

REPO = Path(__file__).resolve().parents[1]
TINY = ["--nodes", "300", "600", "--degrees", "4", "--families", "dp-mlp", "gcn", "--features", "8", "--classes", "3",
        "--max-epochs", "1", "--threads", "1", "--timeout", "300"]


def bench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", "perf", "scale", *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def test_tiny_grid_writes_records_resumes_and_reports(tmp_path):
    rec, work, out = tmp_path / "records.jsonl", tmp_path / "work", tmp_path / "report"
    res = bench(*TINY, "--records", str(rec), "--work", str(work), "--json")
    assert res.returncode == 0, res.stderr[-2000:]
    records = scale.load_records(rec)
    assert len(records) == 4 and {r["status"] for r in records} == {"ok"}, records
    assert {(r["nodes"], r["method"]) for r in records} == {(n, m) for n in (300, 600) for m in ("dp-mlp", "gcn")}
    for r in records:
        assert r["fit_seconds"] > 0 and r["peak_rss"] > 0 and r["build_seconds"] > 0 and r["extrapolated"]
        assert r["edges"] > 0 and r["commit"] and isinstance(r["dirty"], bool) and r["threads"] == 1
        assert (r["epsilon_spent"] is None) == (r["method"] == "gcn")
    assert len(json.loads(res.stdout)["records"]) == 4
    assert not list(REPO.glob("graph-*.pt")) and any(work.glob("graph-*.pt"))  # graphs in --work only

    again = bench(*TINY, "--records", str(rec), "--work", str(work))
    assert again.returncode == 0, again.stderr[-2000:]
    assert "4 of 4 fits already recorded" in again.stderr
    assert len(scale.load_records(rec)) == 4

    rep = bench("--report", "--records", str(rec), "--out", str(out))
    assert rep.returncode == 0, rep.stderr[-2000:]
    text = (out / "index.md").read_text()
    assert "| gcn (baseline) |" in text and "| dp-mlp |" in text and "extrapolated" in text
    assert (out / "gcn.png").stat().st_size > 0 and (out / "dp-mlp.png").stat().st_size > 0


def test_a_child_over_the_memory_cap_is_recorded_as_oom(tmp_path):
    rec = tmp_path / "records.jsonl"
    res = bench("--nodes", "300", "--degrees", "4", "--families", "gcn", "--features", "8", "--classes", "3",
                "--mem-cap", "0.05", "--records", str(rec), "--work", str(tmp_path / "work"))
    assert res.returncode == 0, res.stderr[-2000:]
    (r,) = scale.load_records(rec)
    assert r["status"] == "oom" and "out of memory" in r["reason"] and "cap 0.05 GiB" in r["reason"], r
    assert "oom" in scale.describe(r)


def test_run_child_kills_at_the_cap_and_reports_a_failure(tmp_path):
    res = scale.run_child(["build", "csbm:nodes=300,classes=3,features=8,degree=4", str(tmp_path / "g.pt")],
                          timeout=300, mem_cap_gib=0.05, log=tmp_path / "log", threads=1)
    assert res["status"] == "oom" and res["watched_peak_rss"] > 0.05 * 2 ** 30
    bad = scale.run_child(["fit", str(tmp_path / "absent.pt"), "gcn", "cpu", "0", "0"], timeout=300, mem_cap_gib=8,
                          log=tmp_path / "log", threads=1)
    assert bad["status"] == "error" and bad["reason"], bad


def test_resume_retries_failures_only_under_a_larger_cap():
    assert scale.settled({"status": "ok"}, 24, 3600)
    assert scale.settled({"status": "oom", "mem_cap_gib": 24}, 24, 3600)
    assert not scale.settled({"status": "oom", "mem_cap_gib": 8}, 24, 3600)
    assert not scale.settled({"status": "timeout", "timeout_s": 600}, 24, 3600)
    assert not scale.settled({"status": "error"}, 24, 3600)


def test_slope_is_least_squares_on_log_log():
    edges = [1e5, 1e6, 1e7, 3e7]
    assert scale.fit_slope(edges, [2e-4 * e for e in edges]) == pytest.approx(1.0)
    assert scale.fit_slope(edges, [3e-9 * e ** 1.5 for e in edges]) == pytest.approx(1.5)
    noisy = [1.0 * e ** 0.8 * f for e, f in zip(edges, (1.1, 0.9, 1.1, 0.9))]
    assert 0.7 < scale.fit_slope(edges, noisy) < 0.9
    assert scale.fit_slope([1e5], [1.0]) is None and scale.fit_slope([1e5, 1e5], [1.0, 2.0]) is None


def _rec(nodes, edges, seconds, method="gcn", status="ok", degree=10, **kw):
    return {"graph": f"csbm:nodes={nodes},degree={degree}", "nodes": nodes, "degree": degree, "edges": edges, "method": method,
            "device": "cpu", "max_epochs": 0, "status": status, "fit_seconds": seconds, "full_fit_seconds": seconds,
            "peak_rss": edges * 100, "extrapolated": False, "commit": "abc", "dirty": False, **kw}


def test_summary_fits_from_100k_nodes_up_and_marks_failures():
    recs = [_rec(10_000, 5e4, 50.0), _rec(100_000, 5e5, 1.0), _rec(1_000_000, 5e6, 10.0),
            _rec(2_400_000, 6e7, None, status="oom", reason="out of memory: killed at 24.1 GiB RSS (cap 24 GiB)")]
    (m,) = scale.summarize(recs)["methods"]
    assert m["slope"] == pytest.approx(1.0) and m["slope_points"] == 2  # the 10k point is left out
    assert m["largest"]["nodes"] == 1_000_000
    a, b, c, d = m["rss_fit"]  # one degree: the line through its two largest points
    assert a + b * 2.4e6 + c * 6e7 == pytest.approx(6e9) and d == 10 and b == 0
    recs.append(_rec(100_000, 2.5e6, 3.0, degree=50))
    recs[-1]["peak_rss"] = 1e9 + 10 * 1e5 + 300 * 2.5e6
    for r in recs[1:3]:
        r["peak_rss"] = 1e9 + 10 * r["nodes"] + 300 * r["edges"]
    a, b, c, d = scale.summarize(recs)["methods"][0]["rss_fit"]  # two sizes, two degrees: a + b nodes + c edges
    assert d == -1 and a == pytest.approx(1e9) and b == pytest.approx(10) and c == pytest.approx(300)
    assert scale.describe(recs[3]).startswith("oom: out of memory")


def test_report_from_records(tmp_path):
    recs = [_rec(100_000, 5e5, 1.0), _rec(1_000_000, 5e6, 12.0), _rec(100_000, 5e5, 2.0, method="dp-mlp"),
            _rec(1_000_000, 5e6, None, method="dp-mlp", status="timeout", reason="timed out after 10 s")]
    path = scale.write_report(recs, tmp_path)
    text = path.read_text()
    assert "| gcn (baseline) |" in text and "1.08" in text and "timeout: timed out" in text
    assert (tmp_path / "gcn.png").exists()


def test_epoch_caps_and_grid():
    from methods.base import ConfigError, get_method

    over, factor = scale.epoch_overrides(get_method("gap-edge"), 5)
    assert over == {"encoder_epochs": 5, "epochs": 5} and factor == pytest.approx(20.0)
    assert scale.epoch_overrides(get_method("gap-node"), 10) == ({}, 1.0)  # 5 + 5 epochs: nothing to cap
    assert scale.grid(None, None)[-1] == (2_400_000, 51)
    assert scale.grid([500, 2000], [4]) == [(500, 4), (2000, 4)]
    assert scale.resolve_families(["baseline", "pate", "gcn"]) == ["gcn", "pate-m"]
    with pytest.raises(ConfigError, match="unknown family 'nope'"):
        scale.resolve_families(["nope"])
    with pytest.raises(ConfigError, match="--nodes must be >= 2"):
        scale.grid([0], None)
    assert math.isclose(2_400_000 * 51 / 2, 61.2e6)
