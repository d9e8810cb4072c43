"""The whole mutant zoo through `bench verify` at default settings (slow: ~22 verifications, a few minutes on 2 cores).

Every mutant of tests/plugins/mutants.py must get a VIOLATION from at least one of the checks its ZOO record says
should catch it, and its shipped base method must PASS the same battery on the same configuration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import api

PLUGINS = Path(__file__).resolve().parent / "plugins"
if str(PLUGINS) not in sys.path:
    sys.path.insert(0, str(PLUGINS))
import mutants  # noqa: E402  (registers the mutants; the module tests/test_mutants.py imports)

ZOO = mutants.ZOO
pytestmark = pytest.mark.slow


def _verify(name: str, entry, quick: bool):
    return api.verify(name, entry.dataset, split=entry.split, epsilon=1.0, seeds=[0], quick=quick,
                      overrides=dict(entry.config), device="cpu", track=False)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_mutant_is_caught_by_a_check_meant_for_it(name):
    entry = ZOO[name]
    out = _verify(name, entry, quick=False)
    assert out.verdict == "VIOLATION", [(c.name, c.verdict, c.detail) for c in out.report.checks]
    caught = set(out.report.violations)
    assert caught & (set(entry.expected_checks) | set(entry.also_checks)), (caught, entry.expected_checks)


@pytest.mark.parametrize("base", sorted({e.base for e in ZOO.values()}))
def test_each_mutants_base_method_passes_where_its_mutant_is_caught(base):
    entry = next(e for e in ZOO.values() if e.base == base)
    out = _verify(base, entry, quick=True)
    assert out.verdict == "PASS", [(c.name, c.verdict, c.detail) for c in out.report.checks if c.verdict != "PASS"]
