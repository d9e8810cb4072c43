"""`bench accountants`: the conformance tool on the mini corpus (tests/data/conformance_mini.json).

Verdicts on the example plugin's accountants (an unsound one, a sound but loose one), the libraries' gaps
(UNSUPPORTED) and the GDP approximation's unsoundness, golden files, JUnit XML, bad input, and that listing the
accountants loads no torch.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from bench.cli import main
from methods.privacy.conformance import adapters as A
from methods.privacy.conformance.cases import load_cases
from methods.privacy.conformance.check import SOUNDNESS_SLACK, TIGHT_FACTOR, evaluate, fmt_value, verdict
from tests.conformance_mini import PATH, build_cases, gaussian_exact_epsilon, rr_exact_epsilon
from tests.conftest import REPO, bench_env

MINI = str(PATH)
PLUGIN = str(REPO / "tests" / "plugins" / "accountant_plugin.py")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def check_json(capsys, *args: str, plugin: bool = False) -> tuple[int, dict]:
    pre = ["--plugin", PLUGIN] if plugin else []
    code, out, _ = cli(capsys, *pre, "accountants", "check", "--corpus", MINI, "--json", *args)
    return code, json.loads(out)


def result(doc: dict, case: str, accountant: str) -> dict:
    (r,) = [r for r in doc["results"] if r["case"] == case and r["accountant"] == accountant]
    return r


# --------------------------------------------------------------------------------------------------------------
# the fixture itself


def test_the_mini_corpus_is_what_its_builder_derives():
    stored = {c.id: c for c in load_cases([PATH])}
    built = {c.id: c for c in build_cases()}
    assert set(stored) == set(built) and len(stored) == 8
    for cid, c in built.items():
        s = stored[cid]
        assert s.events == c.events and s.delta == c.delta and s.tags == c.tags
        assert s.lower_limit == pytest.approx(c.lower_limit, rel=1e-9), cid
        assert [r.epsilon for r in s.references] == pytest.approx([r.epsilon for r in c.references], rel=1e-9)


@pytest.mark.parametrize("mu,delta", [(1.0, 1e-5), (0.2, 1e-7), (3.0, 1e-6)])
def test_the_exact_gaussian_limit_lies_between_the_optimistic_and_pessimistic_plds(mu, delta):
    from dp_accounting.pld import privacy_loss_distribution as PLD

    exact = gaussian_exact_epsilon(mu, delta)
    low = PLD.from_gaussian_mechanism(1 / mu, pessimistic_estimate=False, use_connect_dots=False)
    high = PLD.from_gaussian_mechanism(1 / mu)
    assert low.get_epsilon_for_delta(delta) <= exact * (1 + 1e-9) <= high.get_epsilon_for_delta(delta) * (1 + 2e-9)
    assert high.get_epsilon_for_delta(delta) - exact < 1e-3


def test_the_randomized_response_closed_form():
    # binary RR with ratio e: at delta = 0 exactly eps0; delta(eps) of the closed form is the hockey stick
    assert rr_exact_epsilon(1.0, 0.0) == pytest.approx(1.0, rel=1e-12)
    p = math.e / (1 + math.e)
    eps = rr_exact_epsilon(1.0, 0.05)
    assert p - math.exp(eps) * (1 - p) == pytest.approx(0.05, rel=1e-12)


# --------------------------------------------------------------------------------------------------------------
# verdicts


def test_verdict_boundaries():
    assert verdict(1.0 * (1 - SOUNDNESS_SLACK), 1.0, 1.0)[0] == "TIGHT"
    assert verdict(1.0 * (1 - 3 * SOUNDNESS_SLACK), 1.0, 1.0)[0] == "UNSOUND"
    assert verdict(TIGHT_FACTOR * 2.0, 1.0, 2.0)[0] == "TIGHT"
    v, detail = verdict(TIGHT_FACTOR * 2.0 * (1 + 1e-6), 1.0, 2.0)
    assert v == "LOOSE" and detail == "x1.01"
    assert verdict(3.0, 1.0, 1.5) == ("LOOSE", "x2")
    assert verdict(0.5, 0.0, 0.0) == ("LOOSE", "xinf") and verdict(0.0, 0.0, 0.0)[0] == "TIGHT"
    assert verdict(math.inf, 1.0, 1.0) == ("LOOSE", "xinf")


def test_our_accountants_are_sound_on_the_mini_corpus(capsys):
    code, doc = check_json(capsys)
    assert code == 0 and doc["ok"]
    assert {r["accountant"] for r in doc["results"]} == {"ours-tight", "ours-rdp", "ours-pld"}
    assert len(doc["results"]) == 24
    assert all(r["verdict"] in ("TIGHT", "LOOSE") for r in doc["results"])
    # the PLD is tight on the exact Gaussian compositions; the RDP conversion is not
    assert result(doc, "mini-gaussian-1x1", "ours-pld")["verdict"] == "TIGHT"
    rdp = result(doc, "mini-gaussian-1x1", "ours-rdp")
    assert rdp["verdict"] == "LOOSE" and rdp["ratio"] == pytest.approx(rdp["value"] / rdp["reference"])
    # fixed-size steps: the PLD is the Gaussian without subsampling (sound, loose at a small fraction), Theorem 27
    # the tight one, and the tight accountant takes it
    wor = {a: result(doc, "mini-wor-gaussian", a) for a in ("ours-tight", "ours-rdp", "ours-pld")}
    assert wor["ours-pld"]["verdict"] == "LOOSE" and wor["ours-tight"]["value"] == wor["ours-rdp"]["value"]
    s = doc["summary"]["ours-pld"]
    assert (s["cases"], s["sound"], s["tight"], s["unsupported"], s["unsound"]) == (8, 8, 6, 0, 0)
    t = doc["summary"]["ours-tight"]
    assert (t["cases"], t["sound"], t["tight"], t["unsupported"], t["unsound"]) == (8, 8, 7, 0, 0)
    for case in {r["case"] for r in doc["results"]}:  # never above either of the two it takes the smaller of
        tight = result(doc, case, "ours-tight")["value"]
        assert tight <= min(result(doc, case, a)["value"] for a in ("ours-rdp", "ours-pld")) * (1 + 1e-9)
    # DP-GNN: the PLD of Theorem 1's pair, below Theorem 1's RDP (the mini case has no reference: LOOSE to its limit)
    assert result(doc, "mini-hypergeometric", "ours-pld")["value"] < result(doc, "mini-hypergeometric", "ours-rdp")["value"]


def test_the_unsound_plugin_accountant_is_unsound_and_fails_the_check(capsys):
    code, doc = check_json(capsys, "--accountant", "rdp-x0.9", plugin=True)
    assert code == 1 and not doc["ok"]
    r = result(doc, "mini-gaussian-1x1", "rdp-x0.9")
    assert r["verdict"] == "UNSOUND" and r["value"] < r["lower_limit"]
    assert r["value"] == pytest.approx(0.9 * result(check_json(capsys)[1], "mini-gaussian-1x1", "ours-rdp")["value"])
    # where the lower limit is far below the RDP bound, shaving 10% goes unnoticed: the limit decides, not the ratio
    assert result(doc, "mini-poisson-gaussian", "rdp-x0.9")["verdict"] == "LOOSE"
    assert doc["summary"]["rdp-x0.9"]["unsound"] == sum(r["verdict"] == "UNSOUND" for r in doc["results"]) >= 4


def test_basic_composition_is_loose_by_the_right_factor(capsys):
    code, doc = check_json(capsys, "--accountant", "basic-composition", "--cases", "mini-gaussian-*", plugin=True)
    assert code == 0
    # 100 Gaussians of mu = 1/5 at delta/100 each, against the exact composition (mu = 2)
    expected = 100 * gaussian_exact_epsilon(0.2, 1e-7) / gaussian_exact_epsilon(2.0, 1e-5)
    r = result(doc, "mini-gaussian-100x5", "basic-composition")
    assert r["verdict"] == "LOOSE" and r["ratio"] == pytest.approx(expected, rel=1e-9)
    assert r["detail"] == f"x{expected:.5g}" and 9 < expected < 10
    # one Gaussian: basic composition is exact
    assert result(doc, "mini-gaussian-1x1", "basic-composition")["verdict"] == "TIGHT"


def test_opacus_is_unsupported_without_poisson_and_its_gdp_is_unsound_on_subsampling(capsys):
    code, doc = check_json(capsys, "-a", "opacus-rdp", "opacus-prv", "opacus-gdp", "--cases", "mini-[pw]*")
    assert {r["case"] for r in doc["results"]} == {"mini-poisson-gaussian", "mini-wor-gaussian"}
    for acc in ("opacus-rdp", "opacus-prv", "opacus-gdp"):
        r = result(doc, "mini-wor-gaussian", acc)
        assert r["verdict"] == "UNSUPPORTED" and "fixed_size_gaussian" in r["detail"] and r["value"] is None
    assert result(doc, "mini-poisson-gaussian", "opacus-rdp")["verdict"] == "LOOSE"
    assert result(doc, "mini-poisson-gaussian", "opacus-prv")["verdict"] == "TIGHT"
    assert result(doc, "mini-poisson-gaussian", "opacus-gdp")["verdict"] == "UNSOUND"  # a CLT, not a bound
    assert code == 1


def test_dp_accounting_refuses_what_it_cannot_account():
    from methods.privacy.events import (Gaussian, HypergeometricGaussian, Laplace, PoissonGaussian,
                                        RandomizedResponse)

    rdp, pld = A.get_accountant("dp-accounting-rdp"), A.get_accountant("dp-accounting-pld")
    hyper = [HypergeometricGaussian(num_train=100, occurrence_bound=3, batch_size=10, noise_multiplier=2.0)]
    mixed = [PoissonGaussian(rate=0.1, noise_multiplier=1.0), RandomizedResponse(epsilon=1.0)]
    for acc in (rdp, pld):
        for events, why in ((hyper, "hypergeometric"), (mixed, "mixes relations")):
            with pytest.raises(A.Unsupported, match=why):
                acc.epsilon(events, 1e-5)
    # relation-free events ride along either relation, with their own meaning: a Gaussian beside randomized
    # response (replace-one) gives what our PLD gives
    both = [RandomizedResponse(epsilon=1.0), Gaussian(sensitivity=1.0, sigma=3.0)]
    assert pld.epsilon(both, 1e-5) == pytest.approx(A.get_accountant("ours-pld").epsilon(both, 1e-5), rel=1e-6)
    with pytest.raises(A.Unsupported, match="mixes relations"):  # its PLD has Laplace under add/remove only
        pld.epsilon([RandomizedResponse(epsilon=1.0), Laplace(scale=2.0)], 1e-5)
    assert rdp.epsilon([RandomizedResponse(epsilon=1.0), Laplace(scale=2.0)], 1e-5) > 1.0


def test_an_accountant_that_crashes_or_returns_nan_is_an_error(capsys):
    @A.register_accountant("test-broken")
    class Broken:
        description = "raises on Gaussians, nan otherwise"

        def version(self):
            return "0"

        def epsilon(self, events, delta):
            if any(e.kind == "gaussian" for e in events):
                raise ZeroDivisionError("boom\nsecond line")
            return float("nan")

    try:
        code, doc = check_json(capsys, "-a", "test-broken", "--cases", "mini-[gr]*")
        assert code == 1
        g = result(doc, "mini-gaussian-1x1", "test-broken")
        assert g["verdict"] == "ERROR" and g["detail"] == "ZeroDivisionError: boom"
        assert result(doc, "mini-rr", "test-broken")["verdict"] == "ERROR"
        assert doc["summary"]["test-broken"]["error"] == 4
    finally:
        A.unregister_accountant("test-broken")


def test_the_table_and_summary(capsys):
    code, out, err = cli(capsys, "--plugin", PLUGIN, "accountants", "check", "--corpus", MINI, "-a",
                         "rdp-x0.9,ours-pld", "--tag", "ci")
    assert code == 1
    lines = out.splitlines()
    assert lines[1].split() == ["case", "accountant", "value", "lower", "limit", "reference", "(what", "it", "is)",
                                "ratio", "verdict"]
    assert any(line.startswith("mini-gaussian-1x1") and "UNSOUND: " in line for line in lines)
    assert any(line.startswith("accountant ") and "unsound" in line and "seconds" in line for line in lines)
    assert lines[-1].startswith("FAIL: ") and "unsound" in lines[-1]
    assert "mini-laplace" not in out  # not tagged ci
    # every ratio is read against the reference printed beside it, whose name says what it is
    _, doc = check_json(capsys, "-a", "rdp-x0.9,ours-pld", "--tag", "ci", plugin=True)
    for r in doc["results"]:
        (row,) = [ln for ln in lines if ln.startswith(r["case"] + " ") and f" {r['accountant']} " in ln]
        what = "lower limit: no sound reference" if r["reference_name"] == "lower limit" else r["reference_name"]
        assert f" {fmt_value(r['reference'])} ({what}) " in row, row
        if r["value"] is not None:
            assert f" {fmt_value(r['value'] / r['reference'])} " in row, row
    wor = result(doc, "mini-wor-gaussian", "rdp-x0.9")  # a reference far above the lower limit: shown, not implied
    assert wor["reference"] > 2 * wor["lower_limit"] and "dp-accounting RDP" in wor["reference_name"]
    # the per-event-kind summary: a row per (kind, accountant) counting the verdicts of its cases
    start = next(i for i, ln in enumerate(lines) if ln.startswith("event kind "))
    assert lines[start].split() == ["event", "kind", "accountant", "cases", "tight", "loose", "unsound",
                                    "unsupported", "error"]
    table = {tuple(ln.split()[:2]): [int(x) for x in ln.split()[2:]] for ln in lines[start + 2:-1]}
    cases = {c.id: c for c in load_cases([PATH])}
    for (kind, acc), counts in table.items():
        mine = [r for r in doc["results"] if r["accountant"] == acc and cases[r["case"]].kind == kind]
        assert counts == [len(mine)] + [sum(r["verdict"] == v for r in mine)
                                        for v in ("TIGHT", "LOOSE", "UNSOUND", "UNSUPPORTED", "ERROR")]
    assert {k for k, _ in table} == {"gaussian", "poisson_gaussian", "fixed_size_gaussian"}
    assert doc["by_kind"]["gaussian"]["rdp-x0.9"]["unsound"] == table[("gaussian", "rdp-x0.9")][3] > 0


def test_the_default_corpus_is_read_from_the_package_from_any_directory(tmp_path):
    """No --corpus: the shipped corpus comes from the installed package, wherever the command runs."""
    done = subprocess.run([sys.executable, "-m", "bench", "accountants", "check", "--tag", "ci", "--cases",
                           "gaussian/z=2/*", "-a", "ours-rdp", "--no-progress"], cwd=tmp_path, env=bench_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gaussian/z=2/T=1/delta=1e-05" in done.stdout and done.stdout.splitlines()[-1].startswith("OK")
    # and the documented examples use it, not a corpus file that only a checkout of the repository has
    import re

    for page in sorted((REPO / "docs" / "accountants").glob("*.md")):
        for block in re.findall(r"```(?:bash|python)\n(.*?)```", page.read_text(), re.S):
            assert not re.search(r"(--corpus|corpus=)\s*['\"]?tests/", block), (page.name, block[:200])


def test_the_check_through_the_python_api():
    from bench import api

    out = api.check_accountants("ours-rdp", cases="mini-gaussian-*", corpus=MINI)
    assert not out.failed and len(out.report.results) == 3
    assert out.report.summary()["ours-rdp"]["loose"] == 3
    case = load_cases([PATH], "mini-rr")[0]
    assert evaluate(case, A.get_accountant("ours-pld")).verdict == "TIGHT"


# --------------------------------------------------------------------------------------------------------------
# golden files and JUnit XML


def test_golden_round_trip_and_a_moved_value(capsys, tmp_path):
    golden = tmp_path / "golden.json"
    args = ["--plugin", PLUGIN, "accountants", "check", "--corpus", MINI, "-a", "ours-rdp,basic-composition"]
    code, out, _ = cli(capsys, *args, "--record", str(golden))
    assert code == 0 and f"recorded 16 results in {golden}" in out
    doc = json.loads(golden.read_text())
    assert doc["libraries"]["dp-accounting"] and doc["accountants"]["basic-composition"]["version"]
    assert len(doc["results"]) == 16

    code, out, _ = cli(capsys, *args, "--against", str(golden))
    assert code == 0 and "16 results compared at rtol 1e-06: no difference" in out

    for row in doc["results"]:
        if row["case"] == "mini-laplace" and row["accountant"] == "ours-rdp":
            row["value"] *= 1 + 1e-3
        if row["case"] == "mini-gaussian-1x1" and row["accountant"] == "ours-rdp":
            row["value"] *= 1 + 1e-8  # inside the default tolerance
        if row["case"] == "mini-wor-gaussian" and row["accountant"] == "basic-composition":
            row.update(status="value", value=2.0)  # the golden run had a value: support changed
    golden.write_text(json.dumps(doc))
    xml = tmp_path / "junit.xml"
    code, out, _ = cli(capsys, *args, "--against", str(golden), "--junit", str(xml))
    diffs = [line for line in out.splitlines() if line.startswith("  DIFF ")]
    assert code == 1 and len(diffs) == 2, out
    failed = {(tc.get("classname"), tc.get("name")): tc.find("failure")
              for tc in ET.parse(xml).getroot().iter("testcase") if tc.find("failure") is not None}
    assert set(failed) == {("accountants.ours-rdp", "mini-laplace"), ("accountants.basic-composition",
                                                                       "mini-wor-gaussian")}
    assert all(f.get("type") == "GOLDEN" for f in failed.values())
    assert "mini-laplace / ours-rdp: value" in diffs[0] or "mini-laplace / ours-rdp: value" in diffs[1]
    assert any("mini-wor-gaussian / basic-composition: support 2 -> unsupported" in d for d in diffs)
    assert "FAIL: 0 unsound, 0 errors, 2 golden differences" in out

    code, doc2 = check_json(capsys, "-a", "ours-rdp", "--against", str(golden), "--rtol", "1e-2")
    assert code == 0 and doc2["golden"]["differences"] == [] and doc2["golden"]["compared"] == 8


def test_a_library_version_change_is_reported(capsys, tmp_path):
    golden = tmp_path / "golden.json"
    assert cli(capsys, "accountants", "check", "--corpus", MINI, "-a", "dp-accounting-rdp", "--cases", "mini-rr",
               "--record", str(golden))[0] == 0
    doc = json.loads(golden.read_text())
    doc["libraries"]["dp-accounting"] = "0.0.1"
    golden.write_text(json.dumps(doc))
    code, out, _ = cli(capsys, "accountants", "check", "--corpus", MINI, "-a", "dp-accounting-rdp", "--cases",
                       "mini-rr", "--against", str(golden))
    assert code == 0 and "version of dp-accounting: 0.0.1 -> " in out


def test_junit_xml_counts_failures_and_skips(capsys, tmp_path):
    xml = tmp_path / "conformance.xml"
    code, doc = check_json(capsys, "-a", "rdp-x0.9,basic-composition", "--junit", str(xml), plugin=True)
    assert code == 1
    root = ET.parse(xml).getroot()
    unsound = sum(r["verdict"] == "UNSOUND" for r in doc["results"])
    unsupported = sum(r["verdict"] == "UNSUPPORTED" for r in doc["results"])
    assert unsound >= 4 and unsupported == 3
    assert root.tag == "testsuites" and int(root.get("tests")) == 16
    assert int(root.get("failures")) == unsound and int(root.get("skipped")) == unsupported
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 16 and len(root.findall("./testsuite/testcase/failure")) == unsound
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert int(suites["accountants.basic-composition"].get("skipped")) == 3
    assert int(suites["accountants.rdp-x0.9"].get("failures")) == unsound
    bad = [tc for tc in cases if tc.find("failure") is not None]
    assert {tc.get("name") for tc in bad} == {r["case"] for r in doc["results"] if r["verdict"] == "UNSOUND"}
    assert all(tc.find("failure").get("type") == "UNSOUND" for tc in bad)


# --------------------------------------------------------------------------------------------------------------
# bad input: one error line, exit 2, nothing checked


def _bad(tmp_path):
    not_json = tmp_path / "broken.json"
    not_json.write_text("{not json")
    wrong_kind = tmp_path / "wrong.json"
    wrong_kind.write_text(json.dumps({"version": 1, "results": []}))
    bad_event = tmp_path / "bad_event.json"
    bad_event.write_text(json.dumps({"version": 1, "cases": [
        {"id": "x", "events": [{"kind": "gaussian", "sigma": -1.0, "sensitivity": 1.0, "count": 1}], "delta": 1e-5,
         "lower_limit": 0.0, "lower_limit_method": "none"}]}))
    other = tmp_path / "other-golden.json"
    other.write_text(json.dumps({"version": 1, "kind": "accountant-conformance-golden", "libraries": {},
                                 "accountants": {}, "results": [{"case": "elsewhere", "accountant": "ours-rdp",
                                                                 "status": "value", "value": 1.0}]}))
    return {
        "golden file of other cases": (["--against", str(other)], "holds none of the selected cases"),
        "unknown accountant": (["-a", "nope"], "unknown accountant 'nope'"),
        "tag matching nothing": (["--tag", "no-such-tag"], "no case has tag 'no-such-tag'"),
        "tag and glob matching nothing together": (["--tag", "laplace", "--cases", "mini-gaussian-*"],
                                                   "no selected case has tag 'laplace'"),
        "glob matching nothing": (["--cases", "zzz*"], "matches no case id"),
        "missing corpus": (["--corpus", str(tmp_path / "missing.json")], "not found"),
        "malformed corpus": (["--corpus", str(not_json)], "is not JSON"),
        "invalid event": (["--corpus", str(bad_event)], "case x: invalid event"),
        "missing golden file": (["--against", str(tmp_path / "none.json")], "golden file"),
        "malformed golden file": (["--against", str(not_json)], "is not JSON"),
        "not a golden file": (["--against", str(wrong_kind)], "not a version-1 accountant golden file"),
        "negative rtol": (["--rtol", "-1"], "--rtol must be"),
        "unwritable record": (["--record", str(tmp_path / "no" / "dir" / "g.json")], "--record"),
        "unwritable junit": (["--junit", str(tmp_path)], "--junit"),
    }


def test_bad_input_exits_2_with_one_error_line(capsys, tmp_path):
    for name, (args, message) in _bad(tmp_path).items():
        corpus = [] if "--corpus" in args else ["--corpus", MINI]
        code, out, err = cli(capsys, "accountants", "check", *corpus, *args)
        lines = err.strip().splitlines()
        assert code == 2, (name, out, err)
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (name, err)
        assert out == "", name  # refused before any accountant ran


def test_an_empty_corpus_folder_is_bad_input(capsys, monkeypatch, tmp_path):
    from methods.privacy.conformance import cases as C

    monkeypatch.setattr(C, "CORPUS_DIR", tmp_path)
    code, out, err = cli(capsys, "accountants", "check")
    assert code == 2 and err.startswith("error: ") and "holds no case file" in err


# --------------------------------------------------------------------------------------------------------------
# listing and imports


def test_list_shows_builtins_and_plugins(capsys):
    code, out, _ = cli(capsys, "--plugin", PLUGIN, "accountants", "list", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0
    assert {"ours-rdp", "ours-pld", "dp-accounting-rdp", "dp-accounting-pld", "opacus-rdp", "opacus-prv",
            "opacus-gdp", "basic-composition", "rdp-x0.9"} <= set(rows)
    assert rows["opacus-rdp"]["version"].startswith("opacus ") and "CLT" in rows["opacus-gdp"]["description"]
    code, out, _ = cli(capsys, "accountants", "list")
    assert code == 0 and out.splitlines()[0].split() == ["name", "version", "description"]


def test_a_plugin_cannot_take_a_builtin_name_or_skip_the_interface():
    from methods.errors import ConfigError

    with pytest.raises(ConfigError, match="already registered"):
        @A.register_accountant("ours-rdp")
        class Impostor:
            description = "x"

            def version(self):
                return "0"

            def epsilon(self, events, delta):
                return 0.0

    with pytest.raises(ConfigError, match="epsilon"):
        @A.register_accountant("no-epsilon")
        class Incomplete:
            description = "x"

            def version(self):
                return "0"
    assert "no-epsilon" not in A.available_accountants()


def test_bench_help_lists_the_command():
    r = subprocess.run([sys.executable, "-m", "bench", "--help"], capture_output=True, text=True, env=bench_env(),
                       cwd=REPO, timeout=120)
    assert r.returncode == 0 and "    accountants " in r.stdout


def test_importing_the_adapters_and_listing_loads_no_torch():
    code = ("import sys\nimport methods.privacy.conformance.adapters as A, methods.privacy.conformance.check\n"
            "from bench.cli import main\n"
            "rows = [A.describe(n) for n in A.available_accountants()]\n"
            "assert main(['accountants', 'list']) == 0\n"
            "print('LOADED', sorted(m for m in ('torch', 'opacus', 'torch_geometric') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=bench_env(), cwd=REPO,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "LOADED []"


def test_each_case_is_timed_with_the_accountants_caches_cold():
    """``seconds`` must not depend on which accountant ran before: every memo cache is empty when a case starts."""
    from methods.privacy import accountant, events, rdp

    caches = [accountant._one_pld, accountant._tight_epsilon, events._cached_rdp, events._cached_tight_rdp,
              rdp._zw_log_a, rdp._wor_log_even_moments]
    ev = [events.PoissonGaussian(rate=0.01, noise_multiplier=1.0, count=10)]
    accountant.epsilon(ev, 1e-5, "tight")
    assert sum(c.cache_info().currsize for c in caches) > 0
    seen = []

    class Probe:
        name = "probe"

        def epsilon(self, events_, delta):
            seen.append(sum(c.cache_info().currsize for c in caches))
            return 1.0

    evaluate(load_cases([PATH])[0], Probe())
    assert seen == [0]
