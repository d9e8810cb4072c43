"""LiRA, the likelihood-ratio attack (Carlini et al. 2022, "Membership inference attacks from first principles").

The attacker trains ``references`` reference models through ``Method.fit`` (the target's method,
hyperparameters and budget) on tasks built from the attacker task (``NodeView.reference``). Each
reference model trains on ``in_fraction`` of the candidates ("in"), the others are "out". Default
(``in_fraction=0``): the target's member fraction, so reference models see as much training data as
the target (Carlini et al. sample reference sets of the target's size; for a DP method the size also
sets the noise calibration). ``in_fraction=0.5`` is Carlini et al.'s random halves with a balanced
assignment (each candidate in exactly half of the models). With a small member fraction (Cora's public
split: 6%) many candidates have no "in" model; online LiRA then fills their in-mean (see below) and
offline LiRA is the one to read. For each candidate it records the logit-scaled confidence of its true label

    phi = log p_y - log(sum_{c != y} p_c)      (float64; both sums clamped at 1e-300)

under every reference model and under the target, and fits Gaussians per candidate:

* ``online``: log N(phi_target; mu_in, sigma_in^2) - log N(phi_target; mu_out, sigma_out^2);
* ``offline``: only the out models: -log P[Z > phi_target], Z ~ N(mu_out, sigma_out^2) (a one-sided
  test; the log survival function keeps far-right members apart instead of saturating at 1).

Variances: ``per-node`` (each candidate's own, floored at 1e-3 of the global one) needs many models;
``global`` pools the residuals of all candidates (Carlini et al.'s advice below 64 models);
``auto`` (default) is per-node from 32 references on. When the method chooses the members itself
(PrivGNN's queried public nodes) a candidate can lack in (or out) observations; its missing mean is
its other mean shifted by the average in-out difference of the candidates that have both.

Default: 8 reference models (a compromise for 2-core CPUs; Carlini et al. use 64-256). Each reference
model also keeps the non-candidate structure of the attacker task (e.g. the validation nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from attacks.base import Attack, NodeAttackConfig, NodeView, register_attack
from attacks.membership import NotApplicable
from methods.base import ConfigError
from methods.progress import progress_bar

_TINY = 1e-300


#: the most reference models an attack trains (Carlini et al., S&P 2022, use up to 256): each is a full fit
MAX_REFERENCES = 1024


@dataclass
class LiRAConfig(NodeAttackConfig):
    references: int = 8
    variance: Literal["auto", "global", "per-node"] = "auto"

    def validate(self) -> None:
        super().validate()
        if not 2 <= self.references <= MAX_REFERENCES:
            raise ConfigError(f"references must be in [2, {MAX_REFERENCES}] (got {self.references}): every candidate "
                              f"needs an out model, and each reference is a full training run")


def logit_confidence(p: Tensor, y: Tensor) -> Tensor:
    """phi = log p_y - log sum_{c != y} p_c, computed without 1 - p_y (which rounds to 0 for confident rows)."""
    p = p.double()
    py = p.gather(1, y.view(-1, 1)).view(-1)
    rest = p.scatter(1, y.view(-1, 1), 0.0).sum(1)
    return py.clamp(min=_TINY).log() - rest.clamp(min=_TINY).log()


def balanced_assignment(n: int, k: int, gen: torch.Generator) -> Tensor:
    """[k, n] booleans: each of the n candidates is "in" for exactly floor(k/2) of the k models, at random."""
    ranks = torch.argsort(torch.rand(n, k, generator=gen), dim=1)
    return (ranks < k // 2).t().contiguous()


def sized_assignment(n: int, k: int, fraction: float, gen: torch.Generator) -> Tensor:
    """[k, n] booleans: each model is "in" for a uniformly random round(fraction * n) of the n candidates
    (at least one in and one out)."""
    m = min(max(1, round(fraction * n)), n - 1)
    ranks = torch.argsort(torch.rand(k, n, generator=gen), dim=1)
    return ranks < m


def lira_scores(phi_target: np.ndarray, phi_ref: np.ndarray, inside: np.ndarray, variance: str = "global"
                ) -> dict[str, np.ndarray]:
    """Online and offline LiRA scores.

    ``phi_target`` [n]; ``phi_ref`` [k, n]; ``inside`` [k, n] booleans (reference j trained on candidate i).
    """
    from scipy.stats import norm

    phi_ref = np.asarray(phi_ref, dtype=np.float64)
    inside = np.asarray(inside, dtype=bool)
    n_in, n_out = inside.sum(0), (~inside).sum(0)
    if not n_out.any():
        raise NotApplicable("no candidate has an out (non-member) reference model")

    def means(mask: np.ndarray, counts: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, (phi_ref * mask).sum(0) / np.maximum(counts, 1), np.nan)

    mu_in, mu_out = means(inside, n_in), means(~inside, n_out)
    both = (n_in > 0) & (n_out > 0)
    shift = float(np.mean(mu_in[both] - mu_out[both])) if both.any() else math.nan
    online = bool(both.any())
    if online:
        mu_in = np.where(n_in > 0, mu_in, mu_out + shift)
        mu_out = np.where(n_out > 0, mu_out, mu_in - shift)

    def sigma(mask: np.ndarray, mu: np.ndarray, counts: np.ndarray) -> np.ndarray:
        resid = np.where(mask, phi_ref - mu[None, :], 0.0)
        dof = max(int(counts.sum()) - int((counts > 0).sum()), 1)
        pooled = math.sqrt(float((resid ** 2).sum()) / dof)
        pooled = max(pooled, 1e-6)
        if variance == "global":
            return np.full(mu.shape, pooled)
        with np.errstate(invalid="ignore", divide="ignore"):
            own = np.sqrt((resid ** 2).sum(0) / np.maximum(counts - 1, 1))
        own = np.where(counts > 1, own, pooled)
        return np.maximum(own, 1e-3 * pooled)

    s_out = sigma(~inside, mu_out, n_out)
    out = {"offline": -norm.logsf(phi_target, loc=mu_out, scale=s_out)}
    if online:
        s_in = sigma(inside, mu_in, n_in)
        out = {"online": norm.logpdf(phi_target, mu_in, s_in) - norm.logpdf(phi_target, mu_out, s_out), **out}
    return out


@register_attack("lira")
class LiRAAttack(Attack):
    description = ("LiRA (Carlini et al. 2022), online and offline: per-node Gaussians of logit-scaled "
                   "confidences under reference models trained on random subsets of the target's training-set size")
    level = "node"
    Config = LiRAConfig
    smoke_config = {"references": 4}

    def scores(self, view: NodeView) -> dict[str, Tensor]:
        c = self.config
        cand = view.candidates
        n, k = int(cand.numel()), c.references
        frac = view.in_fraction(c.in_fraction)
        gen = view.generator("assignment")
        assign = balanced_assignment(n, k, gen) if frac == 0.5 else sized_assignment(n, k, frac, gen)
        y = view.labels[cand].long()
        phi_ref = np.zeros((k, n))
        inside = np.zeros((k, n), dtype=bool)
        bar = progress_bar(k, f"{self.name} references", view.progress)
        for j in range(k):
            ref = view.reference(cand[assign[j]], cand[~assign[j]])
            fitted, members, _ = view.fit(ref, seed=view.streams("reference", j))
            phi_ref[j] = logit_confidence(view.reference_posteriors(fitted, cand), y).numpy()
            inside[j] = members[cand].numpy()
            bar.update(1)
        bar.close()
        phi_t = logit_confidence(view.posteriors(cand), y).numpy()
        variance = c.variance if c.variance != "auto" else ("per-node" if k >= 32 else "global")
        view.notes["variance"] = variance
        view.notes["in_fraction"] = round(frac, 4)
        view.notes["mean_in_per_candidate"] = float(inside.sum(0).mean())
        return {name: torch.as_tensor(s) for name, s in lira_scores(phi_t, phi_ref, inside, variance).items()}


__all__ = ["LiRAAttack", "balanced_assignment", "sized_assignment", "lira_scores", "logit_confidence"]
