"""``noise-calibration``: the noise drawn is at least what the ledger states.

DP-SGD: the noise at every step has at least the std the ledger's noise multiplier requires for the step's
threshold C (chi-square test on every draw), and a single example's clipped gradient, read off a released sum, has
norm <= C; an adaptive clipping count's noise keeps the joint multiplier the ledger records. Every other release
(:mod:`methods.mechanisms`) draws at least the noise its ledger event states (Gaussian: chi-square, Laplace: gamma
test), on a query that meets its sensitivity's precondition (unit rows, probability vectors, vote counts; at node
level no row in more NAP sums than the degree bound the ledger's sqrt(D) assumes);
randomized response keeps a likelihood ratio <= e^epsilon of the ledger's event."""

from __future__ import annotations

import math
import time

import numpy as np

from audits.checks.base import (PASS, TOLERANCE, VIOLATION, Check, dpsgd_events, sensitivity_factor, skipped,
                                statistics_mean)
from audits.checks.registry import ANY, UNITS, register
from methods.privacy.events import HypergeometricGaussian


@register("noise-calibration", order=7, units=UNITS, kinds=ANY, statistical=True, group="white-box")
def noise_calibration(b, alpha: float) -> Check:
    if not b.dpsgd():
        if not b.other_releases():
            return skipped("noise-calibration", b.seed, "no DP-SGD step and no other release seen")
        problems, stat = release_calibration(b, alpha)
        return Check("noise-calibration", b.seed, VIOLATION if problems else PASS, stat,
                     f"noise >= {1 - TOLERANCE:g} x the ledger's (at {alpha:.2g}); preconditions; RR ratio",
                     "; ".join(problems), alpha=alpha)
    check = dpsgd_calibration(b, alpha)
    if b.other_releases() or any(r.kind == "count" for r in b.releases):
        problems, stat = release_calibration(b, alpha)
        if problems:
            check.verdict = VIOLATION
            check.detail = "; ".join(([check.detail] if check.detail else []) + problems)
        check.statistic += f"; {stat}"
    return check


def release_calibration(b, alpha: float) -> tuple[list[str], str]:
    """The non-DP-SGD releases against the ledger (see the module docstring)."""
    from scipy import stats

    led = b.probe_fit.ledger
    problems, stats_txt = [], []
    # the ledger's events by the kind of release that draws their noise (the seam's vocabulary)
    drawn = {kind: [e for e in led.events if e.released_as == kind] for kind in ("gaussian", "laplace",
                                                                                  "randomized_response")}
    gauss, rr = drawn["gaussian"], drawn["randomized_response"]
    releases = b.releases
    for kind in ("gaussian", "laplace"):
        evs = drawn[kind]
        rel = [r for r in releases if r.kind == kind and r.drawn_scale is not None and r.draws]
        if not rel or not evs:
            continue
        need = min(e.noise_scale for e in evs)  # a Gaussian's std, a Laplace scale
        need *= 1 - TOLERANCE
        n = sum(r.draws for r in rel)
        if kind == "gaussian":  # chi-square on the pooled draws
            stat = sum(r.draws * r.drawn_scale ** 2 for r in rel) / need ** 2
            p_value = float(stats.chi2.cdf(stat, n))
        else:  # sum |X| ~ Gamma(n, scale) for Laplace(scale)
            p_value = float(stats.gamma.cdf(sum(r.draws * r.drawn_scale for r in rel), a=n, scale=need))
        ratio = statistics_mean([r.drawn_scale for r in rel]) / (need / (1 - TOLERANCE))
        stats_txt.append(f"{kind} noise / ledger {ratio:.3g}")
        if p_value < alpha:
            problems.append(f"the {kind} noise drawn ({', '.join(sorted({r.source for r in rel}))}) is "
                            f"{ratio:.3g}x what the ledger states (p = {p_value:.2g})")
    for r in releases:
        if r.precondition is False:
            what = {"nap": f"rows of norm up to {r.facts.get('max_row_norm', float('nan')):.3g} > 1",
                    "noisy_argmax": f"scores that are not {r.facts.get('domain')}"}.get(r.source, "its query")
            problems.append(f"{r.source} noised {what}: the ledger's sensitivity does not hold")
            break
    node_gauss = [e for e in gauss if e.unit == "node"]
    fanout = max((r.facts.get("max_fanout_sq", 0.0) for r in releases if r.source == "nap"), default=0.0)
    if node_gauss and fanout > 0:  # node level: one node's row may enter at most D sums (sensitivity sqrt(D))
        sens = min(e.sensitivity for e in node_gauss)
        stats_txt.append(f"NAP fan-out sqrt {math.sqrt(fanout):.3g} vs sensitivity {sens:.3g}")
        if math.sqrt(fanout) > sens * (1 + 1e-6):
            problems.append(f"nap sums one node's row into aggregates of total weight sqrt({fanout:.4g}) = "
                            f"{math.sqrt(fanout):.4g} > the ledger's node-level sensitivity {sens:.4g}")
    for r in releases:
        if r.kind != "randomized_response" or not rr:
            continue
        keep, flip = r.declared.get("keep"), r.declared.get("flip_in")
        if keep is None or flip is None:
            continue
        eps_rr = max(e.pure_epsilon() for e in rr)
        ratio = math.inf if flip <= 0 else keep / flip
        other = math.inf if keep >= 1 else (1 - flip) / (1 - keep)
        worst = math.log(max(ratio, other)) if max(ratio, other) > 0 else 0.0
        stats_txt.append(f"RR log-ratio {worst:.3g} vs eps {eps_rr:.3g}")
        if worst > eps_rr * (1 + 1e-6) + 1e-9:
            problems.append(f"randomized response with likelihood ratio e^{worst:.3g} > e^{eps_rr:.3g} (the "
                            "ledger's event)")
    counts = [r for r in releases if r.kind == "count"]
    if counts:
        c_std = min(r.declared.get("std", 0.0) for r in counts)
        stats_txt.append(f"clipping-count noise std {c_std:.3g}")
        hyper = [e for e in dpsgd_events(led) if isinstance(e, HypergeometricGaussian)]
        grad = b.measured_multiplier()
        if hyper and grad is not None:
            occ = hyper[0].occurrence_bound
            lam_c = c_std / occ if c_std > 0 else 0.0
            joint = 0.0 if lam_c == 0 or grad == 0 else (grad ** -2 + lam_c ** -2) ** -0.5
            need = min(e.noise_multiplier for e in hyper) * (1 - TOLERANCE)
            if joint < need:
                problems.append(f"with the clipping count's noise (std {c_std:.3g}) the joint noise multiplier "
                                f"is {joint:.3g} < the ledger's {need / (1 - TOLERANCE):.3g}")
        elif c_std <= 0:
            problems.append("an adaptive clipping count is released without noise")
    return problems, "; ".join(stats_txt) or "-"


def dpsgd_calibration(b, alpha: float) -> Check:
    from scipy import stats

    from audits.structural import ClippingProbe, StopFit

    probe, led = b.probe, b.probe_fit.ledger
    events = dpsgd_events(led)
    factor = min(e.noise_multiplier * sensitivity_factor(e) for e in events)  # required std / C
    stat, dof, ratios = 0.0, 0, []
    for r in probe.records:
        need = factor * r.clip * (1 - TOLERANCE)
        if r.noise_entries == 0 or need <= 0:
            continue
        stat += r.noise_sq_sum / need ** 2
        dof += r.noise_entries
        ratios.append(math.sqrt(r.noise_sq_sum / r.noise_entries) / (factor * r.clip))
    problems = []
    p_value = float(stats.chi2.cdf(stat, dof)) if dof else 1.0
    if dof and p_value < alpha:
        problems.append(f"the noise drawn is {np.mean(ratios):.3g}x the std the ledger requires "
                        f"(chi-square p = {p_value:.2g} < {alpha:.2g} against {1 - TOLERANCE:g}x)")
    clip_probe = ClippingProbe()
    t0 = time.perf_counter()
    try:
        b.fit(streams=b.streams.child("clipping"), hook=clip_probe)
    except StopFit:
        pass
    secs = time.perf_counter() - t0
    over = [(n, c) for n, c in zip(clip_probe.norms, clip_probe.clips) if n > c * (1 + 1e-3) + 1e-6]
    if over:
        problems.append(f"one example's clipped gradient has norm {over[0][0]:.4g} > C = {over[0][1]:.4g}")
    return Check("noise-calibration", b.seed, VIOLATION if problems else PASS,
                 f"noise std / required {np.mean(ratios) if ratios else float('nan'):.4f}; "
                 f"max clipped norm / C {max((n / c for n, c in zip(clip_probe.norms, clip_probe.clips)), default=0):.4f}",
                 f"std >= {1 - TOLERANCE:g} x required (chi-square at {alpha:.2g}); norm <= C", "; ".join(problems),
                 alpha=alpha,
                 seconds=secs, data={"p_value": p_value, "ratio": float(np.mean(ratios)) if ratios else None})
