"""``multi-run``: a multi-run black-box audit (:func:`audits.runner.audit`), ``trials`` fits per world; only where
the configuration asks for trials (they cost 2 x trials fits)."""

from __future__ import annotations

from audits.checks.base import PASS, VIOLATION, Check, timed
from audits.checks.registry import ANY, UNITS, register


@register("multi-run", order=12, units=UNITS, kinds=ANY, statistical=True, group="black-box",
          enabled=lambda cfg: bool(cfg.trials))
def multi_run(b, alpha: float) -> Check:
    from audits.canaries import CanaryConfig
    from audits.runner import audit

    cfg = CanaryConfig(hops=0, degree=b.cfg.canary_degree, scale=b.cfg.canary_scale, pattern="dedicated",
                       fresh_anchors=b.unit != "edge" and b.cfg.canary_degree > 0)
    res, secs = timed(lambda: audit(b.make, b.task, b.budget, "multi-run", trials=b.cfg.trials,
                                    confidence=1 - alpha, canary=cfg,
                                    seed=b.streams.child("multi-run"), device=b.cfg.device))
    bad = res.verdict == VIOLATION
    return Check("multi-run", b.seed, VIOLATION if bad else PASS,
                 f"epsilon_lb {res.epsilon_lb:.4g} ({2 * b.cfg.trials} fits)",
                 f"<= claimed {res.claimed_epsilon:.4g} at {1 - alpha:.4g}", "", alpha=alpha, seconds=secs,
                 data={"epsilon_lb": res.epsilon_lb, "claimed": res.claimed_epsilon})
