"""A trial runner that audits the strongest of several candidate pairs (gadgets), chosen on the selection half.

The audit driver (:func:`audits.mechanism.audit_mechanism`) draws each world's scores in two halves from the
streams ``trial:select:W`` and ``trial:eval:W`` and picks its tests on the first. :class:`GadgetSearch` extends the
same split to the pair: every candidate runs on the selection half of both worlds, the strongest there is chosen
(the largest Clopper-Pearson bound of the selection's tail tests, at the driver's stricter selection level; ties,
e.g. bounds capped by the trials, go to the f-DP strength and then to the standardised mean shift), and the
evaluation half runs the chosen candidate alone. The selection half's scores returned are the chosen candidate's
own on those streams, so the driver's tests are chosen on the very scores the pair was, and the evaluation half,
whose bounds and verdict are reported, is independent of both choices: no correction for the search is needed.

Called with streams that are not a driver's half (a contract test, a plugin), the choice is made on the streams
``gadget-search:W`` of the same seed, for both worlds alike."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from audits.mechanisms.base import Mutation, Sampler
from audits.mechanisms._selection import (DEFAULT_DELTA, SELECT_STRICTNESS, _cp_epsilon, _rates, _select,
                                          _select_cp, _upper)
from audits.mechanisms.families import Family
from methods.streams import RunStreams

#: cached choices per search (an audit makes four calls; a few audits may interleave)
_CACHE_SIZE = 8


@dataclass(frozen=True)
class Gadget:
    """One candidate pair: its name, trial runner and the exact epsilon of its score pair as run (claimed
    strength, mutation, delta) -> epsilon."""

    name: str
    sample: Sampler
    epsilon: Callable[[float, Mutation, float], float]
    text: str = ""


def _halves(streams: RunStreams) -> tuple[dict[bool, RunStreams], bool]:
    """The selection half's streams of both worlds, and whether ``streams`` is one of them."""
    lineage = streams.lineage
    if not streams.secure_noise and len(lineage) == 1:
        parts = lineage[0].split(":")
        if len(parts) == 3 and parts[0] == "trial" and parts[1] in ("select", "eval") and parts[2] in ("0", "1"):
            root = RunStreams(streams.seed)
            return {w: root.child("trial", "select", int(w)) for w in (True, False)}, parts[1] == "select"
    root = RunStreams(streams.seed)
    return {w: root.child("gadget-search", int(w)) for w in (True, False)}, False


def strength(family: Family, scores_in: np.ndarray, scores_out: np.ndarray,
             confidence: float = 0.95) -> tuple[float, float, float]:
    """How strong a pair looks on one half: (the best assumption-free bound of its tail tests at the driver's
    selection level, the f-DP strength of its best test, the standardised mean shift)."""
    per = 1.0 - (1.0 - confidence) / 4.0
    t, d = _select_cp(scores_in, scores_out, per, DEFAULT_DELTA)
    fp, fn = _rates(scores_in, scores_out, np.array([t]), d)
    strict = 1.0 - (1.0 - per) / SELECT_STRICTNESS
    cp = float(_cp_epsilon(_upper(fp, scores_out.size, strict), _upper(fn, scores_in.size, strict), DEFAULT_DELTA)[0])
    t, d = _select(family, scores_in, scores_out, per)
    fp, fn = _rates(scores_in, scores_out, np.array([t]), d)
    fdp = float(family.strength_bound(_upper(fp, scores_out.size, per), _upper(fn, scores_in.size, per))[0])
    spread = math.sqrt((float(np.var(scores_in)) + float(np.var(scores_out))) / 2.0)
    gap = abs(float(np.mean(scores_in)) - float(np.mean(scores_out)))
    return cp, fdp, gap / spread if spread > 0 else (math.inf if gap > 0 else 0.0)


class GadgetSearch:
    """A :data:`~audits.mechanisms.base.Sampler` running the strongest of ``gadgets`` (module docstring)."""

    def __init__(self, kind: str, family: Family, gadgets: tuple[Gadget, ...]) -> None:
        if not gadgets or len({g.name for g in gadgets}) != len(gadgets):
            raise ValueError(f"{kind}: a search needs candidates with distinct names")
        self.kind, self.family, self.gadgets = kind, family, tuple(gadgets)
        self._cache: OrderedDict = OrderedDict()

    def select(self, s: float, trials: int, selection: dict[bool, RunStreams], m: Mutation) -> dict:
        """Run every candidate on the selection streams of both worlds and choose: ``chosen`` (its index),
        ``table`` (name and :func:`strength` per candidate) and ``scores`` (the chosen one's, per world)."""
        runs, table = [], []
        for g in self.gadgets:
            sc = {w: g.sample(s, w, trials, selection[w], m) for w in (True, False)}
            runs.append(sc)
            table.append((g.name, *strength(self.family, sc[True], sc[False])))
        best = max(range(len(table)), key=lambda i: table[i][1:])
        return {"chosen": best, "table": table, "scores": runs[best]}

    def choice(self, s: float, trials: int, streams: RunStreams, m: Mutation) -> dict:
        """The selection for the audit ``streams`` belongs to (computed once, then cached)."""
        selection, _ = _halves(streams)
        key = (float(s), int(trials), m, streams.seed, selection[True].lineage)
        if key not in self._cache:
            self._cache[key] = self.select(s, trials, selection, m)
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return self._cache[key]

    def chosen(self, s: float, trials: int, seed: int, m: Mutation = Mutation()) -> str:  # noqa: B008 - frozen
        """The candidate an audit with ``seed`` and ``trials`` runs at strength ``s``."""
        return self.gadgets[self.choice(s, trials, RunStreams(seed).child("trial", "select", 1), m)["chosen"]].name

    def __call__(self, s: float, world_in: bool, trials: int, streams: RunStreams, m: Mutation) -> np.ndarray:
        c = self.choice(s, trials, streams, m)
        if _halves(streams)[1]:
            return c["scores"][world_in].copy()
        return self.gadgets[c["chosen"]].sample(s, world_in, trials, streams, m)

    def pair_epsilon(self, s: float, m: Mutation, delta: float) -> float:
        """The most an audit of this search can show: the largest exact epsilon of the candidates' score pairs."""
        return max(g.epsilon(s, m, delta) for g in self.gadgets)

    def describe(self) -> str:
        return "; ".join(f"{g.name}: {g.text}" if g.text else g.name for g in self.gadgets)
