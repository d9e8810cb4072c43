"""The leaderboard's privacy-utility plots: per dataset and unit, accuracy against the spent epsilon, as small PNGs."""

from __future__ import annotations

import base64
import io
import math
from typing import Any

from bench.leaderboard.rows import Row
from bench.leaderboard.tables import sections


def plot_section(rows: list[Row], dataset: str, unit: str):
    """Accuracy against SPENT epsilon (log x) for one dataset and unit; references as dashed lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = sections(rows).get((dataset, unit), [])
    private = [r for r in rs if r.unit != "none" and math.isfinite(r.spent_max)]
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in private:
        groups.setdefault((r.label, r.split), []).append(r)
    multi_split = len({s for _, s in groups}) > 1
    cmap = plt.get_cmap("tab20" if len(groups) > 10 else "tab10")
    for i, ((method, split), g) in enumerate(sorted(groups.items())):
        g = sorted(g, key=lambda r: r.spent_max)
        label = (f"{method} ({split})" if multi_split else method) + (f" [{g[0].unit_label}]"
                                                                       if g[0].unit_label != unit else "")
        err = [[r.acc_mean - (r.ci or (r.acc_mean,) * 2)[0] for r in g],
               [(r.ci or (r.acc_mean,) * 2)[1] - r.acc_mean for r in g]]
        ax.errorbar([r.spent_max for r in g], [r.acc_mean for r in g], yerr=err, marker="o", capsize=3, label=label,
                    color=cmap(i % cmap.N))
    refs = [r for r in rs if r.unit == "none"]
    ref_splits = len({r.split for r in refs}) > 1
    for j, r in enumerate(refs):
        ax.axhline(r.acc_mean, linestyle="--", linewidth=1, color=plt.get_cmap("Greys")(0.45 + 0.1 * (j % 4)),
                   label=f"{r.label} ({r.split + ', ' if ref_splits else ''}non-private)")
    if private:
        ax.set_xscale("log")
    deltas = sorted({f"{r.delta:.0e}" for r in private if not math.isnan(r.delta)})
    ax.set_xlabel("spent epsilon (the ledger's, log scale)")
    ax.set_ylabel("test accuracy (mean, 95% bootstrap CI)")
    ax.set_title(f"{dataset}: {unit}-level" + (f", delta {', '.join(deltas)}" if deltas else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def _png(fig) -> bytes:
    """The figure as a 256-colour PNG: line plots lose nothing visible and shrink ~3.5x, which keeps the
    self-contained page (every plot inlined) small enough to commit."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    buf.seek(0)
    small = io.BytesIO()
    Image.open(buf).convert("RGB").quantize(colors=256).save(small, format="PNG", optimize=True)
    return small.getvalue()


def _png_b64(fig) -> str:
    return _b64(_png(fig))


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _plot_keys(rows: list[Row]) -> list[tuple[str, str]]:
    """(dataset, unit) of every section with a private row: one plot each."""
    return [key for key, rs in sections(rows).items() if any(r.unit != "none" for r in rs)]


def _figures(rows: list[Row]) -> dict[tuple[str, str], Any]:
    return {key: plot_section(rows, *key) for key in _plot_keys(rows)}
