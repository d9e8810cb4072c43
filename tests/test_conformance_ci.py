"""Our accountants against the shipped conformance corpus: the `ci` slice on every test run (sound, and no value
moved from the committed golden file: an upgrade of dp-accounting or numpy that changes one shows here), the
whole corpus in the slow run (sound everywhere, and TIGHT with the tighter of the two on at least 80% of the cases:
287 of 356 measured; docs/accountants/index.md says which are not)."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "data" / "accountants_golden_ci.json"
OURS = ["ours-rdp", "ours-pld"]


def test_our_accountants_are_sound_on_the_ci_slice_and_nothing_moved_from_the_golden_file():
    from bench import api

    outcome = api.check_accountants(OURS, tags=["ci"], against=GOLDEN, rtol=1e-6)
    report = outcome.report
    assert len(report.cases) >= 30
    assert not report.failures, [(r.case, r.accountant, r.verdict, r.detail) for r in report.failures]
    assert outcome.comparison is not None and outcome.comparison.ok, [
        d.describe() for d in outcome.comparison.differences]
    assert not outcome.failed


@pytest.mark.slow
def test_our_accountants_are_sound_on_the_whole_corpus_and_tight_on_nine_cases_in_ten():
    from bench import api
    from scripts.accountant_conformance import _best_of_ours

    outcome = api.check_accountants(OURS)
    assert not outcome.report.failures, [(r.case, r.accountant, r.detail) for r in outcome.report.failures]
    best = _best_of_ours(outcome.report.results)
    assert best["cases"] >= 300 and best["unsound"] == 0
    assert best["tight"] >= 0.9 * best["cases"], best
