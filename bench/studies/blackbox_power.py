"""What a black-box audit detects: one-run audits of DP-MLP run with a fraction of its accounted noise.

    nice -n 10 python -m scripts.blackbox_power --dataset csbm:nodes=300,classes=2,features=16,degree=4 \\
        --canaries 50 --set epochs=20 --factors 1 0.5 0.25 0.1 0.01 --handwritten --seeds 0 1 2

Each variant ``dp-mlp-x<F>`` is DP-MLP whose DP-SGD steps draw F x the noise its ledger accounts (ledger and
claim unchanged); ``--handwritten`` adds ``handwritten-dpsgd`` (``tests/plugins/hidden_bugs.py``: its own
DP-SGD loop at 0.5x its ledger's noise). Every audit is one untracked :func:`bench.api.audit` call (black-box input
canaries); the true epsilon is the DP-MLP ledger of the canary world at F x the calibrated noise multiplier.
Prints one line per audit and appends it to ``--out`` (JSON Lines) when given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench import api
from bench.cli import load_plugin

ROOT = Path(__file__).resolve().parents[2]
#: the true epsilon of the last fit of each variant (its ledger at the noise it drew)
TRUE: dict[str, float] = {}


def scaled_dp_mlp(factor: float) -> str:
    """Register ``dp-mlp-x<factor>``: DP-MLP drawing ``factor`` x its ledger's noise; returns the name."""
    import methods.dp_mlp as mod
    from methods.base import available_methods, register
    from methods.dp_mlp import DPMLP

    name = f"dp-mlp-x{factor:g}"
    if name in available_methods():
        return name

    class Scaled(DPMLP):
        description = f"DP-MLP drawing {factor:g}x its accounted noise (scripts.blackbox_power)"

        def _fit(self, ctx):
            real_opt, real_cal = mod.DPOptimizer, mod.calibrate_noise

            class Weak(real_opt):
                def step(self, inputs, target, noise_std, denominator):
                    return super().step(inputs, target, noise_std * factor, denominator)

            def calibrate(ledger_for, epsilon, delta):
                z = real_cal(ledger_for, epsilon, delta)
                TRUE[name] = float(ledger_for(z * factor).epsilon(delta))
                return z

            mod.DPOptimizer, mod.calibrate_noise = Weak, calibrate
            try:
                return super()._fit(ctx)
            finally:
                mod.DPOptimizer, mod.calibrate_noise = real_opt, real_cal

    register(name)(Scaled)
    return name


def handwritten_true_epsilon(name: str) -> None:
    """Record the true epsilon of ``handwritten-dpsgd``'s fits (its ledger at noise_factor x z)."""
    import hidden_bugs

    cls = hidden_bugs.HandwrittenDPSGD
    if getattr(cls, "_measured", False):
        return
    real = cls._fit

    def _fit(self, ctx):
        import methods.privacy as P

        out = real(self, ctx)
        n = int(ctx.task.train_mask.sum())
        c = self.config
        z = out.info["noise_multiplier"] * c.noise_factor
        led = P.presets.dp_mlp(num_train=n, batch_size=c.batch_size, noise_multiplier=z, steps=out.info["steps"])
        TRUE[name] = float(led.epsilon(ctx.budget.delta))
        return out

    cls._fit, cls._measured = _fit, True


def auc(details: dict) -> float | None:
    """The canary scores' AUC (in vs out): how far apart the worlds are, whatever the bound makes of it."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    if "scores" in details:
        y, s = np.asarray(details["included"], bool), np.asarray(details["scores"], float)
    else:
        s = np.concatenate([details["scores_in"], details["scores_out"]])
        y = np.r_[np.ones(len(details["scores_in"]), bool), np.zeros(len(details["scores_out"]), bool)]
    return round(float(roc_auc_score(y, s)), 4) if 0 < y.sum() < y.size else None


def pooled_one_run(runs):
    """One result for the canaries of several one-run audits: the one-run bound over all of them (the default
    grid and a finer one fixed in advance, Bonferroni over both), the largest claim, the runs' canaries. Each run's
    scores are replaced by their ranks within the run (in [0, 1]): a function of that run's released model only,
    which puts the runs on one scale."""
    import dataclasses

    import numpy as np
    from scipy import stats

    from audits.bounds import guess_grid, one_run_audit
    from audits.runner import verdict

    scores = np.concatenate([stats.rankdata(np.asarray(r.details["scores"], float)) / len(r.details["scores"])
                             for r in runs])
    inc = np.concatenate([np.asarray(r.details["included"], bool) for r in runs])
    m = scores.size
    fine = sorted({(max(1, int(m * f)),) * 2 for f in (0.01, 0.02)} | set(guess_grid(m)))
    conf = runs[0].confidence
    bound = one_run_audit(scores, inc, runs[0].delta, conf, grid=fine)
    claimed = max(r.claimed_epsilon for r in runs)
    details = {"bound": bound.to_dict(), "scores": scores.tolist(), "included": inc.tolist()}
    return dataclasses.replace(runs[0], claimed_epsilon=claimed, epsilon_lb=bound.epsilon_lb,
                               verdict=verdict(claimed, bound.epsilon_lb), trials=len(runs), canaries=m,
                               details=details)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="csbm:nodes=300,classes=2,features=16,degree=4")
    p.add_argument("--split")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--mode", default="one-run", choices=["one-run", "multi-run"])
    p.add_argument("--canaries", type=int, default=200)
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--hops", type=int, default=2)
    p.add_argument("--canary-degree", type=int, default=1)
    p.add_argument("--canary-scale", type=float, default=3.0)
    p.add_argument("--fresh-anchors", action="store_true")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--factors", type=float, nargs="*", default=[1.0, 0.5, 0.25, 0.1])
    p.add_argument("--handwritten", action="store_true", help="also handwritten-dpsgd (0.5x noise)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--pool-runs", type=int, default=1,
                   help="one-run mode: pool the canaries of this many runs (seeds SEED, SEED+1, ...) into one one-run "
                        "bound (each canary changes only its own run, so the runs together are one mechanism in "
                        "which every canary is as private as the claim: Steinke et al.'s theorem holds for the pool)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", help="append JSON lines here")
    p.add_argument("--save-scores", help="also save every run's scores and inclusion bits here (.npz)")
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests" / "plugins"))
    load_plugin(str(ROOT / "tests" / "plugins" / "hidden_bugs.py"))
    names = [scaled_dp_mlp(f) for f in a.factors]
    if a.handwritten:
        handwritten_true_epsilon("handwritten-dpsgd")
        names.append("handwritten-dpsgd")
    for seed in a.seeds:
        for name in names:
            t0 = time.perf_counter()
            runs = []
            for k in range(a.pool_runs):
                out = api.audit(name, a.dataset, split=a.split, epsilon=a.epsilon, mode=a.mode, trials=a.trials,
                                canaries=a.canaries, hops=a.hops, canary_degree=a.canary_degree,
                                canary_scale=a.canary_scale, fresh_anchors=a.fresh_anchors,
                                seed=seed * 1000 + k if a.pool_runs > 1 else seed,
                                overrides=a.overrides, device="cpu", track=False, threads=a.threads)
                runs.append(out.result)
            r = runs[0] if len(runs) == 1 else pooled_one_run(runs)
            if a.save_scores:
                import numpy as np

                np.savez(a.save_scores.replace(".npz", f"-{name}-{seed}.npz"),
                         **{f"scores{k}": x.details["scores"] for k, x in enumerate(runs)},
                         **{f"included{k}": x.details["included"] for k, x in enumerate(runs)})
            row = {"method": name, "dataset": a.dataset, "epsilon": a.epsilon, "mode": a.mode, "seed": seed,
                   "canaries": r.canaries, "trials": r.trials, "hops": a.hops, "canary_degree": a.canary_degree,
                   "canary_scale": a.canary_scale, "pool_runs": a.pool_runs, "overrides": a.overrides, "claimed": r.claimed_epsilon,
                   "true_epsilon": TRUE.get(name), "epsilon_lb": r.epsilon_lb, "verdict": r.verdict,
                   "auc": auc(r.details), "correct": r.details["bound"].get("correct"),
                   "guesses": r.details["bound"].get("guesses"), "seconds": round(time.perf_counter() - t0, 1)}
            print(json.dumps(row), flush=True)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
