"""Our accountants against the shipped conformance corpus: the `ci` slice on every test run (sound, and no value
moved from the committed golden file: an upgrade of dp-accounting or numpy that changes one shows here), the cases
with extreme delta and epsilon on every test run too (a fast subset: sound, and clear of every exact limit by their
outward rounding, whatever the CPU), the whole corpus in the slow run (sound everywhere, TIGHT with the tighter
of ours on at least 90% of the cases, and ours-tight, what runs report, alone on at least 97%: docs/accountants/index.md
says which are not)."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "data" / "accountants_golden_ci.json"
OURS = ["ours-tight", "ours-rdp", "ours-pld"]
#: the regimes where a float's rounding is largest next to the epsilon or delta (the tags of
#: methods/privacy/conformance/corpus)
EXTREME_TAGS = ("tiny-delta", "eps-small", "eps-large")


def _margins() -> dict[str, tuple[float, float]]:
    from methods.privacy.accountant import PLD_MARGIN, RDP_MARGIN

    # tight's value carries the rounding of the bound it took (RDP, PLD or the closed form): the smallest of them
    return {"ours-rdp": RDP_MARGIN, "ours-pld": PLD_MARGIN, "ours-tight": RDP_MARGIN}


def extreme_cases(fast: bool = True) -> list:
    """Every corpus case with an extreme delta or epsilon; ``fast``: without noise multipliers below 1, Laplace
    epsilons above 20 and sampling rates from 1/2 (wide PLDs: seconds each), which the slow run keeps."""
    from methods.privacy.conformance.check import corpus_cases
    from methods.privacy.events import event_from_dict

    def cheap(case) -> bool:
        evs = [event_from_dict(e) for e in case.events]
        return "small-sigma" not in case.tags and not any(
            getattr(e, "rate", 0) >= 0.5 or getattr(e, "sensitivity", 0) > 20 * getattr(e, "scale", 1) for e in evs)

    return [c for c in corpus_cases() if set(EXTREME_TAGS) & set(c.tags) and (not fast or cheap(c))]


def assert_sound_with_room(report, cases) -> None:
    """No failure, and on every case whose lower limit is the exact epsilon each of ours lies above it by at least
    half its relative margin: its floating-point error (1e-8 relative for the PLD at delta 1e-10, 1e-13 for RDP)
    cannot take it below the truth on any CPU. Without the outward rounding the PLD sits within 1e-8 of the exact
    Gaussian epsilon, and below it on some machines."""
    assert not report.failures, [(r.case, r.accountant, r.verdict, r.detail) for r in report.failures]
    exact = {c.id for c in cases if c.lower_limit_method.startswith("exact")}
    margins = _margins()
    short = [(r.case, r.accountant, r.value, r.lower_limit) for r in report.results
             if r.case in exact and r.value is not None
             and r.value < r.lower_limit * (1 + margins[r.accountant][0] / 2)]
    assert not short, short


def test_our_accountants_are_sound_on_the_ci_slice_and_nothing_moved_from_the_golden_file():
    from bench import api

    outcome = api.check_accountants(OURS, tags=["ci"], against=GOLDEN, rtol=1e-6)
    report = outcome.report
    assert len(report.cases) >= 30
    assert not report.failures, [(r.case, r.accountant, r.verdict, r.detail) for r in report.failures]
    assert outcome.comparison is not None and outcome.comparison.ok, [
        d.describe() for d in outcome.comparison.differences]
    assert not outcome.failed


def test_our_accountants_clear_the_exact_epsilon_at_extreme_delta_and_epsilon():
    from methods.privacy.conformance.check import check

    cases = extreme_cases()
    tags = {t for c in cases for t in c.tags}
    assert len(cases) >= 30 and set(EXTREME_TAGS) <= tags
    assert any(c.id == "gaussian/z=2/T=100/delta=1e-10" for c in cases)
    assert_sound_with_room(check(cases, OURS), cases)


@pytest.mark.slow
def test_our_accountants_clear_the_exact_epsilon_on_every_extreme_case():
    from methods.privacy.conformance.check import check

    cases = extreme_cases(fast=False)
    assert_sound_with_room(check(cases, OURS), cases)


@pytest.mark.slow
def test_our_accountants_are_sound_on_the_whole_corpus_and_tight_on_nine_cases_in_ten():
    from bench import api
    from methods.privacy.conformance.check import corpus_cases
    from bench.studies.accountant_conformance import _best_of_ours

    outcome = api.check_accountants(OURS)
    assert_sound_with_room(outcome.report, corpus_cases())
    best = _best_of_ours(outcome.report.results)
    assert best["cases"] >= 300 and best["unsound"] == 0
    assert best["tight"] >= 0.9 * best["cases"], best
    tight = outcome.report.summary()["ours-tight"]  # what runs report: TIGHT on at least 97%, sound on all
    assert tight["sound"] == tight["cases"] >= 300 and tight["tight"] >= 0.97 * tight["cases"], tight
