"""The verdicts of audits and verification, in one place.

PASS: every check or bound that applies ran and none refutes the claim. VIOLATION: one refutes it. INCONCLUSIVE
(``bench verify``): none refutes it, but a check that applies to the method did not run. NOT APPLICABLE: a
non-private method claims nothing, so there is nothing to refute. SKIPPED (one check): it does not apply to the
method, or could not run; it always says why.
"""

PASS, VIOLATION, SKIPPED = "PASS", "VIOLATION", "SKIPPED"
INCONCLUSIVE, NOT_APPLICABLE = "INCONCLUSIVE", "NOT APPLICABLE"

__all__ = ["INCONCLUSIVE", "NOT_APPLICABLE", "PASS", "SKIPPED", "VIOLATION"]
