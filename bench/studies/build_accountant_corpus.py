"""Regenerate the accountant conformance corpus: ``methods/privacy/conformance/corpus/*.json``.

    python -m scripts.build_accountant_corpus [--out DIR] [--only gaussian laplace ...] [--leaderboard-cap 150]

One file per event kind (a grid of parameters, hard regimes included on purpose) and ``leaderboard.json`` (the
composite ledgers of the published leaderboard cells, ``docs/leaderboard/runs/*.jsonl``, deduplicated by
(events, delta)). Every case gets a sound lower limit (:mod:`methods.privacy.conformance.limits`) and the independent
references that cover it (:mod:`methods.privacy.conformance.references`). Deterministic; a progress line per file.

Tags: the event kinds; ``source:grid`` or ``source:leaderboard`` (+ the methods and datasets); the regimes
``tiny-q`` (a rate <= 1e-4), ``large-sigma`` (a noise multiplier > 5), ``small-sigma`` (< 1), ``tiny-delta``
(delta <= 1e-9), ``eps-small`` (lower limit in [0.05, 0.2]), ``eps-large`` (in [25, 100]), ``low-orders`` (an RDP
reference's optimal order is below 2), ``composite`` (several kinds); ``ci`` on about 40 quick cases.

A sound reference below the lower limit is a finding (one of the two is wrong): it is printed, kept with
``sound=False`` and a note saying so, so the corpus stays consistent and the finding stays visible.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from methods.privacy.conformance import limits as L
from methods.privacy.conformance import references as R
from methods.privacy.conformance.cases import CORPUS_DIR, Case, Reference, save_cases
from methods.privacy.events import (FixedSizeGaussian, Gaussian, HypergeometricGaussian, Laplace, PoissonGaussian,
                                    PoissonLaplace, RandomizedResponse, event_from_dict)

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "leaderboard" / "runs"
RDP_NAMES = ("dp-accounting RDP", "Opacus RDP", "paper RDP (mpmath)")
LEADERBOARD_CI = 4


def g(x: float) -> str:
    """A short, stable rendering of a parameter for case ids."""
    return f"{x:.6g}"


Spec = tuple[str, list[dict[str, Any]], float, tuple[str, ...], str]  # id, events, delta, extra tags, note


def spec(case_id: str, events: list, delta: float, *tags: str) -> Spec:
    return case_id, [e.to_dict() for e in events], delta, tuple(tags), ""


# ----------------------------------------------------------------------------------------------------------
# Grids, one per event kind
# ----------------------------------------------------------------------------------------------------------


def gaussian_grid() -> Iterator[Spec]:
    def one(z: float, t: int, d: float, *tags: str, sens: float = 1.0) -> Spec:
        extra = "" if sens == 1.0 else f"/sens={g(sens)}"
        return spec(f"gaussian/z={g(z)}/T={t}/delta={g(d)}{extra}",
                    [Gaussian(sensitivity=sens, sigma=z * sens, count=t)], d, *tags)

    for z in (0.3, 0.5, 0.8, 1.0, 2.0, 5.0, 10.0, 30.0):
        for t in (1, 10, 100):
            yield one(z, t, 1e-5, *(("ci",) if t == 1 and z in (0.8, 2.0, 10.0) else ()))
    for z, t in ((0.8, 1), (2.0, 1), (10.0, 1), (0.8, 100), (2.0, 100), (10.0, 100)):
        yield one(z, t, 1e-10)
    for z, t in ((40.0, 1), (100.0, 10), (400.0, 100)):  # eps near 0.1
        yield one(z, t, 1e-5)
    for z, t in ((0.15, 1), (0.5, 12), (1.4, 100)):  # eps near 50
        yield one(z, t, 1e-5)
    yield one(4.963091270343464 / math.sqrt(2), 1, 1e-4, sens=math.sqrt(2))  # GAP/ProGAP edge level
    yield spec("gaussian/z=1+2/T=10+40/delta=1e-05",
               [Gaussian(sensitivity=1.0, sigma=1.0, count=10), Gaussian(sensitivity=1.0, sigma=2.0, count=40)],
               1e-5, "ci")


def laplace_grid() -> Iterator[Spec]:
    for e0 in (0.01, 0.1, 0.5, 1.0, 3.0):
        for t in (1, 10, 100, 1000):
            if e0 * t > 400:
                continue
            yield spec(f"laplace/eps0={g(e0)}/T={t}/delta=1e-05", [Laplace(scale=1.0 / e0, count=t)], 1e-5,
                       *(("ci",) if t <= 10 and e0 in (0.1, 1.0) else ()))
    for e0, t in ((1.0, 1), (0.1, 100), (1.0, 10)):
        yield spec(f"laplace/eps0={g(e0)}/T={t}/delta=1e-10", [Laplace(scale=1.0 / e0, count=t)], 1e-10)
    for e0, t in ((50.0, 1), (10.0, 5), (2.0, 40)):
        yield spec(f"laplace/eps0={g(e0)}/T={t}/delta=1e-05", [Laplace(scale=1.0 / e0, count=t)], 1e-5)
    yield spec("laplace/eps0=0.5+0.1/T=4+30/delta=1e-05",
               [Laplace(scale=2.0, count=4), Laplace(scale=5.0, sensitivity=0.5, count=30)], 1e-5, "ci")


def rr_grid() -> Iterator[Spec]:
    for e0 in (0.1, 0.5, 1.0, 2.0, 5.0):
        for t in (1, 10, 100, 1000):
            if e0 * t > 500:
                continue
            yield spec(f"randomized_response/eps0={g(e0)}/T={t}/delta=1e-05",
                       [RandomizedResponse(epsilon=e0, count=t)], 1e-5, *(("ci",) if t <= 10 and e0 <= 1 else ()))
    for e0, t in ((1.0, 1), (0.5, 100), (2.0, 10)):
        yield spec(f"randomized_response/eps0={g(e0)}/T={t}/delta=1e-10", [RandomizedResponse(epsilon=e0, count=t)],
                   1e-10)
    for e0, t in ((10.0, 5), (50.0, 1)):
        yield spec(f"randomized_response/eps0={g(e0)}/T={t}/delta=1e-05", [RandomizedResponse(epsilon=e0, count=t)],
                   1e-5)
    yield spec("randomized_response/eps0=1+0.2/T=3+20/delta=1e-05",
               [RandomizedResponse(epsilon=1.0, count=3), RandomizedResponse(epsilon=0.2, count=20)], 1e-5, "ci")


def poisson_gaussian_grid() -> Iterator[Spec]:
    def one(q: float, z: float, t: int, d: float, *tags: str) -> Spec:
        return spec(f"poisson_gaussian/q={g(q)}/z={g(z)}/T={t}/delta={g(d)}",
                    [PoissonGaussian(rate=q, noise_multiplier=z, count=t)], d, *tags)

    for q, t in ((0.001, 10000), (0.01, 1000), (0.1, 100), (0.5, 100)):
        for z in (0.6, 1.0, 2.0, 5.0, 10.0):
            yield one(q, z, t, 1e-5, *(("ci",) if q >= 0.1 and z in (1.0, 5.0) else ()))
    for q, z, t in ((0.01, 1.0, 10), (0.1, 2.0, 10)):
        yield one(q, z, t, 1e-5, "ci")
    for q in (1e-4,):  # tiny q, 1e5-1e6 steps
        for z, t in ((0.5, 100_000), (0.6, 100_000), (0.8, 100_000), (0.6, 1_000_000), (0.8, 1_000_000),
                     (1.0, 1_000_000)):
            yield one(q, z, t, 1e-5)
    for q, z, t in ((0.01, 0.8, 1000), (0.01, 2.0, 1000), (0.1, 1.0, 100), (0.001, 1.0, 10000)):
        yield one(q, z, t, 1e-10)
    for q, z, t in ((0.5, 0.5, 1000), (0.9, 0.5, 100), (0.99, 0.3, 20)):  # large epsilon
        yield one(q, z, t, 1e-5)
    for q, z, t in ((0.01, 8.0, 100), (0.001, 3.0, 1000), (0.02, 20.0, 1000)):  # small epsilon
        yield one(q, z, t, 1e-5)
    for q, z, t in ((0.99, 8.0, 100), (0.5, 20.0, 1000), (0.9, 12.0, 1000)):  # large sigma, dense sampling
        yield one(q, z, t, 1e-5)
    yield spec("poisson_gaussian/q=0.01+0.1/z=1+2/T=500+50/delta=1e-05",
               [PoissonGaussian(rate=0.01, noise_multiplier=1.0, count=500),
                PoissonGaussian(rate=0.1, noise_multiplier=2.0, count=50)], 1e-5)


def wor_grid() -> Iterator[Spec]:
    def one(n: int, m: int, z: float, t: int, d: float, *tags: str) -> Spec:
        return spec(f"fixed_size_gaussian/n={n}/m={m}/z={g(z)}/T={t}/delta={g(d)}",
                    [FixedSizeGaussian(population=n, sample_size=m, noise_multiplier=z, count=t, unit="feature")],
                    d, *tags)

    for m, t in ((1, 10000), (10, 1000), (100, 100), (360, 10), (900, 10)):
        for z in (0.7, 1.0, 2.0, 4.0, 8.0, 12.0):
            yield one(1000, m, z, t, 1e-5, *(("ci",) if m in (100, 360) and z in (2.0, 8.0) else ()))
    for z, t in ((6.0, 1), (7.0, 10), (8.0, 10), (10.0, 100), (12.0, 100), (20.0, 1000)):  # q ~ 1, large sigma
        yield one(1000, 999, z, t, 1e-5)
    for m, z, t in ((100, 1.0, 100), (10, 2.0, 1000)):
        yield one(1000, m, z, t, 1e-10)
    yield one(1000, 1000, 2.0, 10, 1e-5)  # q = 1: the Gaussian
    yield spec("fixed_size_gaussian/n=1371+1359/m=499/z=4/T=2+1/delta=0.0001",
               [FixedSizeGaussian(population=1371, sample_size=499, noise_multiplier=4.0, count=2, unit="feature"),
                FixedSizeGaussian(population=1359, sample_size=499, noise_multiplier=4.0, count=1, unit="feature")],
               1e-4, "ci")


def hypergeometric_grid() -> Iterator[Spec]:
    def one(n: int, occ: int, m: int, lam: float, t: int, d: float, *tags: str) -> Spec:
        return spec(f"hypergeometric_gaussian/N={n}/occ={occ}/m={m}/lambda={g(lam)}/T={t}/delta={g(d)}",
                    [HypergeometricGaussian(num_train=n, occurrence_bound=occ, batch_size=m, noise_multiplier=lam,
                                            count=t)], d, *tags)

    for n, occ, m in ((1000, 1, 100), (1000, 4, 100), (1000, 11, 500), (10000, 4, 1000), (10000, 111, 2000),
                      (2496, 4, 2000)):
        for lam, t in ((0.8, 10), (2.0, 100), (5.0, 1000)):
            yield one(n, occ, m, lam, t, 1e-5, *(("ci",) if t == 10 and occ <= 11 else ()))
    for n, occ, m, lam, t in ((1000, 4, 100, 2.0, 100), (10000, 11, 1000, 1.0, 50)):
        yield one(n, occ, m, lam, t, 1e-10)
    for n, occ, m, lam, t in ((1000, 4, 100, 10.0, 100), (1000, 4, 1000, 0.3, 20)):  # eps small / large
        yield one(n, occ, m, lam, t, 1e-5)


def poisson_laplace_grid() -> Iterator[Spec]:
    def one(q: float, e0: float, t: int, d: float, *tags: str) -> Spec:
        return spec(f"poisson_laplace/q={g(q)}/eps0={g(e0)}/T={t}/delta={g(d)}",
                    [PoissonLaplace(rate=q, scale=1.0 / e0, count=t)], d, *tags)

    for q in (0.01, 0.1, 0.3, 1.0):
        for e0, t in ((0.05, 1000), (0.5, 100), (2.0, 10)):
            yield one(q, e0, t, 1e-5, *(("ci",) if t <= 100 and q in (0.1, 0.3) else ()))
    for q, e0, t in ((0.3, 0.055, 1000), (0.1, 1.0, 100)):
        yield one(q, e0, t, 1e-10)
    for q, e0, t in ((0.001, 1.0, 100), (0.5, 10.0, 10)):  # small / large
        yield one(q, e0, t, 1e-5)
    scale = 36.39174197892792  # PrivGNN's SINGLEGNN ablation: one release of the [|Q|, C] posteriors, |Q| = 1000
    yield spec(f"poisson_laplace/q=0.3/eps0={g(2000 / scale)}/T=1/delta=0.0001/single-teacher",
               [PoissonLaplace(rate=0.3, scale=scale, sensitivity=2.0 * 1000, count=1)], 1e-4)


#: one corpus file per event type, named by its kind, in this order
GRIDS = {c.kind: grid for c, grid in ((Gaussian, gaussian_grid), (Laplace, laplace_grid), (RandomizedResponse, rr_grid),
                                      (PoissonGaussian, poisson_gaussian_grid), (FixedSizeGaussian, wor_grid),
                                      (HypergeometricGaussian, hypergeometric_grid),
                                      (PoissonLaplace, poisson_laplace_grid))}
KINDS = tuple(GRIDS)


# ----------------------------------------------------------------------------------------------------------
# The leaderboard's ledgers
# ----------------------------------------------------------------------------------------------------------


def leaderboard_specs(cap: int) -> list[Spec]:
    """The distinct (events, delta) of the published leaderboard runs, at most ``cap``: every method gets its
    share in turn (methods sorted, each one's ledgers by run name), so the rare families are all in."""
    found: dict[tuple[str, float], dict[str, Any]] = {}
    for f in sorted(RUNS.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            led = rec.get("ledger") or {}
            events = [e for e in led.get("events", []) if e.get("count")]
            delta = float(rec.get("params", {}).get("delta", 0) or 0)
            if not events or not delta > 0:
                continue
            key = (json.dumps(events, sort_keys=True), delta)
            method = rec.get("params", {}).get("method") or str(rec.get("name", "?")).split("/")[0]
            entry = found.setdefault(key, {"names": [], "methods": set(), "datasets": set(), "events": events,
                                           "delta": delta, "reported": rec.get("metrics", {}).get("epsilon")})
            entry["names"].append(str(rec["name"]))
            entry["methods"].add(method)
            entry["datasets"].add(str(rec.get("params", {}).get("dataset", "?")))
    by_method: dict[str, list[dict[str, Any]]] = {}
    for entry in found.values():
        entry["names"].sort()
        by_method.setdefault(min(entry["methods"]), []).append(entry)
    queues = {m: sorted(v, key=lambda e: e["names"][0]) for m, v in sorted(by_method.items())}
    chosen: list[dict[str, Any]] = []
    while len(chosen) < cap and any(queues.values()):
        for m in sorted(queues):
            if queues[m] and len(chosen) < cap:
                chosen.append(queues[m].pop(0))
    out = []
    quick = 0
    for e in sorted(chosen, key=lambda e: e["names"][0]):
        evs = [event_from_dict(d).to_dict() for d in e["events"]]
        tags = ("source:leaderboard", *sorted(e["methods"]), *(f"dataset:{d}" for d in sorted(e["datasets"])))
        note = f"runs: {', '.join(e['names'][:3])}{' ...' if len(e['names']) > 3 else ''}"
        if isinstance(e.get("reported"), (int, float)):
            note += f"; the run reported epsilon {e['reported']:.6g}"
        if quick < LEADERBOARD_CI and sum(d["count"] for d in evs) <= 10:  # a few quick leaderboard ledgers in CI
            tags += ("ci",)
            quick += 1
        out.append((f"leaderboard/{e['names'][0]}", evs, e["delta"], tags, note))
    return out


# ----------------------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------------------


def regime_tags(events: list[dict[str, Any]], delta: float, lower: float, refs: list[Reference]) -> list[str]:
    evs = [event_from_dict(e) for e in events]
    tags = sorted({e.kind for e in evs})
    if len(tags) > 1:
        tags.append("composite")
    rates = [getattr(e, "rate", None) for e in evs] + [e.sample_size / e.population for e in evs
                                                       if isinstance(e, FixedSizeGaussian)]
    if any(r is not None and 0 < r <= 1e-4 for r in rates):
        tags.append("tiny-q")
    zs = [e.noise_multiplier for e in evs if hasattr(e, "noise_multiplier")]
    if any(z > 5 for z in zs):
        tags.append("large-sigma")
    if any(z < 1 for z in zs):
        tags.append("small-sigma")
    if delta <= 1e-9:
        tags.append("tiny-delta")
    if 0.05 <= lower <= 0.2:
        tags.append("eps-small")
    if 25 <= lower <= 100:
        tags.append("eps-large")
    orders = [float(m.group(1)) for r in refs if r.name in RDP_NAMES
              for m in [re.search(r"optimal order ([0-9.]+)", r.note)] if m]
    if any(o < 2 for o in orders):
        tags.append("low-orders")
    return tags


def build_case(s: Spec, findings: list[str]) -> Case:
    case_id, events, delta, extra, note = s
    notes = [note] if note else []
    lower, method = L.lower_limit(events, delta)
    if not (math.isfinite(lower) and lower >= 0):
        raise SystemExit(f"error: {case_id}: lower limit {lower}")
    refs, failures = R.references(events, delta)
    checked = []
    for r in refs:
        if r.sound and r.epsilon < lower * (1 - 1e-6):
            msg = (f"{case_id}: {r.name} ({r.version}) = {r.epsilon:.8g} is BELOW the lower limit {lower:.8g}")
            findings.append(msg)
            r = replace(r, sound=False, note=f"{r.note}; FINDING: below the sound lower limit {lower:.8g}, so not a "
                                             f"valid upper bound here")
        checked.append(r)
    sound = [r for r in checked if r.sound]
    if len({r.name for r in sound}) < 2:
        notes.append("only one independent sound computation covers this ledger" if sound else
                     "no sound reference covers this ledger")
    notes += [f"reference failed: {f}" for f in failures]
    tags = regime_tags(events, delta, lower, checked)
    tags += [t for t in ("source:grid",) if not any(x.startswith("source:") for x in extra)]
    tags = sorted(set(tags) | set(extra))
    return Case(id=case_id, events=tuple(events), delta=delta, lower_limit=lower, lower_limit_method=method,
                references=tuple(checked), tags=tuple(tags), note="; ".join(notes))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(CORPUS_DIR), help="corpus directory (default: %(default)s)")
    ap.add_argument("--only", nargs="+", choices=[*KINDS, "leaderboard"], help="rebuild these files only")
    ap.add_argument("--leaderboard-cap", type=int, default=150, help="most leaderboard ledgers (default 150)")
    args = ap.parse_args(argv)
    logging.getLogger().setLevel(logging.ERROR)  # dp-accounting logs every RDP order it drops
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = {k: (lambda k=k: list(GRIDS[k]())) for k in KINDS}
    files["leaderboard"] = lambda: leaderboard_specs(args.leaderboard_cap)
    findings: list[str] = []
    start = time.perf_counter()
    for name, make in files.items():
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        specs = make()
        ids = [s[0] for s in specs]
        if len(set(ids)) != len(ids):
            raise SystemExit(f"error: duplicate case ids in {name}")
        cases = [build_case(s, findings) for s in specs]
        save_cases(out / f"{name}.json", cases)
        print(f"{name}.json: {len(cases)} cases, {sum('ci' in c.tags for c in cases)} ci, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    print(f"done in {time.perf_counter() - start:.1f} s", flush=True)
    for f in findings:
        print(f"FINDING: {f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
