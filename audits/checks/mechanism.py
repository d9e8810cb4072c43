"""``mechanism``: for every mechanism the method's ledger holds, the mechanism-level audit of
:mod:`audits.mechanism` (one release through the methods' own code, on the auditor's worst-case pair, Nasr et al.
2023), so a regression in a shared mechanism (NAP, a DP-SGD step, the PATE argmax, EdgeRand's randomized
response) fails the verification of every method that uses it.

The audits run at 1/20 of each mechanism's default trials (1/40 with ``quick``; seconds each: 0.4-10 s on a shared
2-core machine), at the run's target epsilon clamped to
[0.5, 4] (the range the audits are measured over, docs/audits.md), and at a confidence of at least 0.999 each:
the check spends at most ``MAX_ALPHA`` of its error budget share, split over the mechanisms it audits (the shipped
mechanisms were flagged 1/140 times at 0.95). Ledger kinds meet mechanism names in one place:
:func:`audits.mechanism.mechanism_for`."""

from __future__ import annotations

import time

from audits.checks.base import PASS, VIOLATION, Check, skipped
from audits.checks.registry import UNITS, register
from audits.mechanism import AUDITED_KINDS

#: the most error budget the check spends (its share may be larger): confidence >= 0.999 over its audits
MAX_ALPHA = 1e-3
#: trials per world and half: the mechanism's default (docs/audits.md) divided by this (quick: by QUICK_DIVISOR)
TRIALS_DIVISOR, QUICK_DIVISOR = 20, 40
EPSILON_RANGE = (0.5, 4.0)


def audited(ledger) -> list[str]:
    """The mechanisms whose audits cover the ledger's events, in the order of :data:`audits.mechanism.MECHANISMS`."""
    from audits.mechanism import MECHANISMS, mechanism_for

    found = {mechanism_for(e) for e in ledger.events} - {None}
    return [n for n in MECHANISMS if n in found]


@register("mechanism", order=13, units=UNITS, kinds=AUDITED_KINDS, statistical=True, group="mechanism",
          no_kind="no ledger event that a mechanism-level audit covers")
def mechanism(b, alpha: float) -> Check:
    from audits.mechanism import MECHANISMS, audit_mechanism

    names = audited(b.probe_fit.ledger)
    if not names:
        kinds = sorted({f"{e.kind} ({e.unit})" for e in b.probe_fit.ledger.events})
        return skipped("mechanism", b.seed, f"no mechanism-level audit covers {', '.join(kinds) or 'the ledger'}")
    spent = min(alpha, MAX_ALPHA)
    confidence = 1 - spent / len(names)
    epsilon = min(max(b.budget.epsilon, EPSILON_RANGE[0]), EPSILON_RANGE[1])
    t0 = time.perf_counter()
    results, problems = [], []
    for name in names:
        seed = b.streams.int_seed("mechanism", name) % (1 << 31)
        trials = max(100, MECHANISMS[name].trials // (QUICK_DIVISOR if b.cfg.quick else TRIALS_DIVISOR))
        a = audit_mechanism(name, epsilon, delta=b.budget.delta, trials=trials, seed=seed, confidence=confidence)
        results.append(a)
        if a.verdict == VIOLATION:
            problems.append(f"{name}: the measured release rules out its own claim epsilon {a.epsilon_claimed:.4g} "
                            f"(lower bounds CP {a.epsilon_lb_cp:.4g}, f-DP {a.epsilon_lb_fdp:.4g})")
    return Check("mechanism", b.seed, VIOLATION if problems else PASS,
                 "; ".join(f"{a.mechanism} lb {max(a.epsilon_lb_cp, a.epsilon_lb_fdp):.4g} ({a.trials} trials, "
                           f"{a.seconds:.1f}s)" for a in results),
                 f"<= claimed {epsilon:.4g} each at {confidence:.5g}", "; ".join(problems), alpha=spent,
                 seconds=time.perf_counter() - t0,
                 data={"mechanisms": names, "epsilon": epsilon, "confidence": confidence,
                       "audits": [a.to_dict() for a in results],
                       **{f"seconds.{a.mechanism}": a.seconds for a in results}})
