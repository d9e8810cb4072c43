"""scripts/privgnn_noise_audit.py: on its gadget the authors' noise on log-probabilities beats the paper's claim for
one query, and Algorithm 1's noise on probabilities stays inside the suite's sound claim."""

from __future__ import annotations

import json

from bench.studies import privgnn_noise_audit as audit


def test_log_probability_noise_is_refuted_and_probability_noise_is_not(tmp_path, capsys):
    out = tmp_path / "audit.json"
    assert audit.main(["--trials", "400", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    claims = r["claims_one_query"]
    assert 0 < claims["paper_pure"] < claims["ours_pure"] <= claims["ours_ledger"] * (1 + 1e-3)
    assert r["log_posterior"]["beats_paper_claim"] and r["log_posterior"]["epsilon_lb"] > 1.0
    assert r["log_posterior"]["epsilon_lb"] > claims["paper_rdp"]  # even the accountant's looser number falls
    assert not r["posterior"]["beats_sound_claim"]
    assert r["teacher_log_gap"]["without"]["median"] < -10  # the unbounded quantity the noise was calibrated to


def test_bad_arguments_are_one_error_line(capsys):
    assert audit.main(["--trials", "1"]) == 2
    assert capsys.readouterr().err.startswith("error:")
