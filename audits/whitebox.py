"""White-box gradient canaries for DP-SGD methods (``--canary-type gradient``).

The black-box audit can only see what the released model predicts; DP-SGD's guarantee is much stronger: it
covers every noisy gradient sum of every step, whatever the clipped gradient of any example is. The
gradient canary audits that guarantee directly, in the style of the "Dirac canaries" of Nasr et al.
(2021, 2023) and Steinke et al. (2023, Section 6):

* the worlds are the node/feature-unit canary worlds of :mod:`audits.canaries` with the ``dedicated``
  pattern, so canary k is the only node whose feature column ``F + k`` is non-zero;
* during a fit, every DP-SGD example (a node for DP-MLP, a whole subgraph for DRW and DP-GNN) whose
  input contains a canary's column is taken out of the model's batch, and the auditor puts in its place a
  clipped gradient of its own: the threshold ``C`` (per-layer clipping: the first layer's share) on the
  coordinate ``W1[0, F + k]`` of the first layer's weight -- the weight that reads canary k's column, so
  no other example ever has a gradient there (for an example holding several canaries the budget is split
  evenly, ``C / sqrt(j)`` each, so its norm stays ``C``);
* canary k's score is the sum over all steps of the released noisy gradient sum at that coordinate,
  divided by the threshold: about (number of canary-k examples drawn) + N(0, sum_t (sigma_t / C_t)^2).

Both moves are inside the threat model of every DP-SGD accountant: an example's clipped gradient may be
any vector of norm <= C, and the accountant composes over the release of every step's noisy sum. So for a
correct method the audit's bound stays below the claim, while a method that lets one node reach more
examples than its ledger assumes (DP-GNN without the degree bound, DRW with overlapping walks) or adds less
noise than it accounts for shows at once: the signal is the number of examples holding the node.

Only methods whose DP-SGD examples read the raw node features support it (``Method.gradient_canaries``:
``dp-mlp``, ``drw``, ``drw-r``, ``drw-d``, ``dpgnn``, ``dpgnn-adam``); GAP/ProGAP train on noisy
aggregates, whose canary sits in the aggregation perturbation, not in a DP-SGD example.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from methods.base import ConfigError


class GradientCanaries:
    """A :class:`methods.dpsgd.GradientHook` for ``m`` dedicated-column canaries.

    ``columns[k]`` is canary k's feature column, ``num_features`` the width of the world's features.
    After a fit: ``scores`` [m] (float64), ``occurrences`` [m] (canary examples drawn), ``max_per_step`` [m]
    (the most examples holding canary k in one batch: at most the method's occurrence bound when it is
    correct), ``steps``.
    """

    def __init__(self, columns: Tensor, num_features: int, record_steps: bool = False, lenient: bool = False) -> None:
        # columns [m] (the examples read the raw rows) or [m, blocks]: the input columns that carry canary k's
        # feature column in each block of an input that concatenates blocks of the raw width (a node's own row,
        # aggregates of other nodes' rows: :func:`audits.checks._layout.trace_layout`); ``num_features`` is then the
        # examples' input width
        cols = torch.as_tensor(columns, dtype=torch.long)
        self.positions = cols.view(-1, 1) if cols.dim() <= 1 else cols
        self.columns = self.positions[:, 0].contiguous()  # where the auditor writes canary k's gradient
        if self.columns.numel() == 0:
            raise ConfigError("gradient canaries: no canary column")
        if int(self.positions.max()) >= num_features or int(self.positions.min()) < 0:
            raise ConfigError("gradient canaries: a canary column lies outside the features")
        self.num_features = int(num_features)
        m = int(self.columns.numel())
        self.scores = torch.zeros(m, dtype=torch.float64)
        self.occurrences = torch.zeros(m, dtype=torch.long)
        self.max_per_step = torch.zeros(m, dtype=torch.long)
        self.steps = 0
        self._param: int | None = None
        self._threshold = 0.0
        # per step (record_steps): the released values at the canary coordinates / C, and the noise std / C
        self.record_steps = record_steps
        self.trace: list[Tensor] = []
        self.noise_scale: list[float] = []
        # per step (record_steps): the signed number of examples holding canary k that were drawn (the shift the
        # auditor put in: +1 per example holding +f_k, -1 per example holding only -f_k)
        self.shifts: list[Tensor] = []
        self._shift: Tensor | None = None
        # lenient: steps of an optimiser whose examples do not read the raw features (GAP's classifier on
        # aggregates) pass through untouched instead of being an error
        self.lenient = lenient
        self._active = False
        self._opt_param: dict[int, int] = {}

    # -- where the canary gradient goes --------------------------------------------------

    def _locate(self, opt) -> int:
        key = id(opt)
        if key not in self._opt_param:
            for i, (_, p) in enumerate(opt.grads.params):
                if p.dim() == 2 and p.size(1) == self.num_features:
                    self._opt_param[key] = i
                    break
            else:
                raise ConfigError("gradient canaries: the model has no first-layer weight reading the "
                                  f"{self.num_features} input features (not a DP-SGD method on raw features)")
        self._param = self._opt_param[key]
        return self._param

    @staticmethod
    def threshold(opt, index: int) -> float:
        """The clipping threshold that applies to parameter tensor ``index`` at this step."""
        clip = opt.clip
        if not opt.per_layer:
            return float(clip)
        thresholds = getattr(opt, "thresholds", None)  # an Opacus per-layer optimiser's own (methods.opacus_bridge)
        if thresholds is not None:
            return float(thresholds[index])
        if isinstance(clip, (list, tuple)):
            return float(clip[index])
        return float(clip) / math.sqrt(len(opt.grads.params))

    # -- the hook ------------------------------------------------------------------------

    def split(self, opt, inputs: tuple[Tensor, ...], target: Tensor):
        self.last_keep = None  # the examples left to the model when some were taken out (an Opacus step reads it)
        if not inputs:
            if self.lenient:
                return inputs, target, None
            raise ConfigError("gradient canaries: the step's inputs were not seen")
        x = inputs[0]
        self._active = False
        self._shift = None
        if x.size(-1) != self.num_features:
            if self.lenient:
                return inputs, target, None
            raise ConfigError("gradient canaries: this method's DP-SGD examples do not read the raw node features "
                              f"(width {x.size(-1)}, expected {self.num_features})")
        index = self._locate(opt)
        self._active = True
        self._threshold = c = self.threshold(opt, index)
        b = int(target.numel())
        if b == 0:
            return inputs, target, None
        cols = self.columns.to(x.device)
        where = self.positions.to(x.device)
        m, blocks = where.shape
        vals = x.index_select(-1, where.reshape(-1)).reshape(b, -1, m, blocks)  # any block holding canary k's data
        pos, neg = (vals > 0).any(3).any(1), (vals < 0).any(3).any(1)  # [B, m]
        present = pos | neg
        hit = present.any(1)
        if not bool(hit.any()):
            return inputs, target, None
        # +1 for an example holding +f_k, -1 for one holding only -f_k (signed canaries: the replace-one pair)
        sign = (pos.to(torch.float64) - (neg & ~pos).to(torch.float64))[hit]
        rows = present[hit].to(torch.float64)
        per = sign / rows.sum(1, keepdim=True).sqrt()  # an example with j canaries: C / sqrt(j) on each
        counts = present.sum(0).cpu()
        self._shift = (pos.to(torch.int16) - (neg & ~pos).to(torch.int16)).sum(0).cpu()
        self.occurrences += counts
        self.max_per_step = torch.maximum(self.max_per_step, counts)
        params = opt.grads.params
        extra = [torch.zeros_like(p) for _, p in params]
        w = extra[index]
        w[0, cols] = (per.sum(0) * c).to(w.dtype).to(w.device)
        keep = ~hit
        self.last_keep = keep
        return tuple(t[keep] for t in inputs), target[keep], extra

    def observe(self, opt, noisy_sums: list[Tensor]) -> None:
        if not self._active:
            return
        index = self._locate(opt)
        c = self._threshold or self.threshold(opt, index)
        cols = self.columns.to(noisy_sums[index].device)
        values = noisy_sums[index][0, cols].detach().double().cpu() / c
        self.scores += values
        self.steps += 1
        if self.record_steps:
            self.trace.append(values)
            shift, self._shift = self._shift, None
            self.shifts.append(torch.zeros(values.numel(), dtype=torch.int16) if shift is None else shift)

    def observe_noise(self, opt, noise, noise_std: float) -> None:
        if self.record_steps and self._active:
            c = self._threshold or self.threshold(opt, self._locate(opt))
            self.noise_scale.append(float(noise_std) / c)

    def likelihood_scores(self, rate: float) -> Tensor:
        """The Neyman-Pearson statistic of "canary in" for Poisson-like inclusion at ``rate`` per step: at step t
        the released value is y_t ~ N(b_t, s_t^2) with b_t = 1 w.p. ``rate`` if the canary is in, 0 if out, so
        the log-likelihood ratio is sum_t log(1 - q + q exp((y_t - 1/2) / s_t^2)). It weighs a step by how
        surprising its value is, where the plain sum weighs every step alike (Nasr et al. 2023's optimal test
        for subsampled DP-SGD). Needs ``record_steps``."""
        if not self.trace:
            return self.scores.clone()
        y = torch.stack(self.trace)  # [T, m]
        s2 = torch.tensor(self.noise_scale, dtype=torch.float64).clamp(min=1e-12).view(-1, 1) ** 2
        q = min(max(float(rate), 1e-12), 1.0)
        if q >= 1.0:
            return ((y - 0.5) / s2).sum(0)
        return torch.logaddexp(torch.full_like(y, math.log1p(-q)), math.log(q) + (y - 0.5) / s2).sum(0)

    def shift_likelihood_scores(self, shifts_in: "Shifts", shifts_out: "Shifts") -> Tensor:
        """The Neyman-Pearson statistic of "canary in" when a step's released value (in units of C) is
        y_t ~ N(J, s_t^2) with the shift J drawn from ``shifts_in`` in the "in" world and from ``shifts_out`` in
        the "out" world (each a :class:`Shifts`: the canary's examples drawn in one step, signed):
        sum_t [log E_in exp((y_t J - J^2/2) / s_t^2) - log E_out exp(...)]. Any score gives a valid audit; this
        one is the most powerful for the step model it is given. Needs ``record_steps``."""
        if not self.trace:
            raise ConfigError("gradient canaries: no step was recorded (record_steps=True and a fit first)")
        y = torch.stack(self.trace).unsqueeze(-1)  # [T, m, 1]
        s2 = torch.tensor(self.noise_scale, dtype=torch.float64).clamp(min=1e-12).view(-1, 1, 1) ** 2

        def log_mean(sh: Shifts) -> Tensor:
            v = torch.tensor(sh.values, dtype=torch.float64).view(1, 1, -1)
            logp = torch.tensor(sh.probs, dtype=torch.float64).clamp(min=1e-300).log().view(1, 1, -1)
            return torch.logsumexp(logp + (y * v - v * v / 2) / s2, dim=-1)

        return (log_mean(shifts_in) - log_mean(shifts_out)).sum(0)


class Shifts:
    """The distribution of one step's canary shift (in units of C): ``values`` with ``probs``. The examples
    holding the canary are drawn independently at rate ``q`` (Poisson; a binomial approximation of fixed-size
    sampling, which only makes the score a little less than optimal): ``count`` of them, each ``sign``."""

    def __init__(self, values, probs) -> None:
        self.values = [float(v) for v in values]
        self.probs = [float(p) for p in probs]

    @classmethod
    def binomial(cls, count: int, q: float, sign: float = 1.0) -> "Shifts":
        from scipy import stats

        j = list(range(count + 1))
        return cls([sign * k for k in j], stats.binom.pmf(j, count, min(max(q, 0.0), 1.0)))


def canary_columns(num_features: int, m: int) -> Tensor:
    """The dedicated columns of :func:`audits.canaries.make_canaries`: the last ``m`` of the world."""
    return torch.arange(num_features - m, num_features)
