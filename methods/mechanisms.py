"""A seam for verification: every DP mechanism reports what it released, while an observer is listening.

DP-SGD steps have their own hook (:func:`methods.dpsgd.gradient_hook`); the other mechanisms -- NAP's Gaussian
aggregation, the Laplace noise on PrivGNN's posteriors and PATE's votes, EdgeRand's randomized response and its
Laplace edge count, an adaptive clipping threshold's noisy count -- call :func:`release` with the facts a verifier
needs to hold them to the ledger: the noise actually drawn (or the flip probabilities), and whether the query met
the precondition its sensitivity assumes (unit rows for NAP, probability vectors for PrivGNN). Without an
observer (:func:`observing`) a call costs one list lookup.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

#: kinds of release (``Release.kind``)
KINDS = ("gaussian", "laplace", "randomized_response", "count")


@dataclass
class Release:
    """One mechanism call: ``kind``; ``declared`` the noise parameter the method says it uses (Gaussian std,
    Laplace scale, keep / flip probabilities); ``drawn`` the noise's empirical scale (Gaussian: RMS, Laplace: mean
    absolute value) and the number of draws; ``precondition``: whether the query satisfied what its sensitivity
    assumes (None: nothing to check); ``facts``: anything else (e.g. the query's max row norm)."""

    kind: str
    declared: dict[str, float] = field(default_factory=dict)
    drawn_scale: float | None = None
    draws: int = 0
    precondition: bool | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    source: str = ""


_OBSERVERS: list[list[Release]] = []


@contextlib.contextmanager
def observing() -> Iterator[list[Release]]:
    """Within this block every :func:`release` call is recorded in the yielded list."""
    seen: list[Release] = []
    _OBSERVERS.append(seen)
    try:
        yield seen
    finally:
        _OBSERVERS.remove(seen)


def active() -> bool:
    return bool(_OBSERVERS)


def release(kind: str, *, source: str = "", declared: dict[str, float] | None = None, noise: Any = None,
            precondition: bool | None = None, **facts: Any) -> None:
    """Report one DP release to the observers (a no-op without one). ``noise``: the noise tensor drawn (its
    empirical scale is computed here, only when someone listens)."""
    if not _OBSERVERS:
        return
    scale, draws = None, 0
    if noise is not None:
        import torch

        n = torch.as_tensor(noise).detach().double().reshape(-1)
        draws = int(n.numel())
        if draws:
            scale = float(n.abs().mean()) if kind == "laplace" else float(n.pow(2).mean().sqrt())
    rec = Release(kind, dict(declared or {}), scale, draws, precondition, facts, source)
    for seen in _OBSERVERS:
        seen.append(rec)


__all__ = ["KINDS", "Release", "active", "observing", "release"]
