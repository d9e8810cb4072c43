"""The leaderboard's privacy-utility plots: per dataset and unit, accuracy against the spent epsilon, as small PNGs."""

from __future__ import annotations

import base64
import io
import math
from typing import Any

from bench.leaderboard.rows import Row
from bench.leaderboard.tables import sections


#: marker and line style per method, cycled: methods whose points coincide (drw and drw-d on Cora) stay apart
MARKERS = "osD^vPX*<>ph"
LINESTYLES = ("-", "--", "-.", ":")
REFERENCE_STYLES = ((0, (6, 2)), (0, (2, 1.5)), (0, (6, 2, 1.5, 2)), (0, (10, 3)), (0, (1, 3)))
#: the factor between neighbouring methods' x positions: the points of one epsilon spread by a few percent
DODGE = 1.02


def plot_section(rows: list[Row], dataset: str, unit: str):
    """Accuracy against SPENT epsilon (log x, plain-number ticks) for one dataset and unit: one marker and line
    style per method, each method's points shifted by a small constant factor so that methods on the same point
    stay visible (the x label says by how much); the non-private references of the splits the private rows use as
    horizontal lines."""
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
    n = len(groups)
    for i, ((method, split), g) in enumerate(sorted(groups.items())):
        g = sorted(g, key=lambda r: r.spent_max)
        label = (f"{method} ({split})" if multi_split else method) + (f" [{g[0].unit_label}]"
                                                                       if g[0].unit_label != unit else "")
        err = [[r.acc_mean - (r.ci or (r.acc_mean,) * 2)[0] for r in g],
               [(r.ci or (r.acc_mean,) * 2)[1] - r.acc_mean for r in g]]
        shift = DODGE ** (i - (n - 1) / 2)
        ax.errorbar([r.spent_max * shift for r in g], [r.acc_mean for r in g], yerr=err, capsize=3, label=label,
                    color=cmap(i % cmap.N), marker=MARKERS[i % len(MARKERS)],
                    linestyle=LINESTYLES[(i // len(MARKERS) + i) % len(LINESTYLES)], markersize=5)
    for j, r in enumerate(section_references(rs)):
        ax.axhline(r.acc_mean, linestyle=REFERENCE_STYLES[j % len(REFERENCE_STYLES)], linewidth=1.1,
                   color=plt.get_cmap("Greys")(0.85 - 0.12 * (j % 4)),
                   label=f"{r.label} ({r.split + ', ' if multi_split else ''}non-private)")
    dodged = ""
    if private:
        _log_axis(ax, [r.spent_max for r in private])
        if n > 1:
            dodged = f"; methods offset by up to {100 * (DODGE ** ((n - 1) / 2) - 1):.0f}% to stay apart"
    deltas = sorted({f"{r.delta:.0e}" for r in private if not math.isnan(r.delta)})
    ax.set_xlabel(f"spent epsilon (the ledger's, log scale{dodged})")
    ax.set_ylabel("test accuracy (mean, 95% bootstrap CI)")
    ax.set_title(f"{dataset}: {unit}-level" + (f", delta {', '.join(deltas)}" if deltas else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def section_references(rs: list[Row]) -> list[Row]:
    """The non-private rows a section's plot draws: those on a split its private rows use (a public-split baseline
    says nothing about a random split's numbers); all of them when the section has no private row."""
    splits = {r.split for r in rs if r.unit != "none"}
    return [r for r in rs if r.unit == "none" and (not splits or r.split in splits)]


def _log_axis(ax, xs: list[float]) -> None:
    """A log x axis with ticks at powers of two written as plain numbers (0.5, 1, 2, 4, 8), no minor labels; at
    most about eight ticks (every second or fourth power over a wide range)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    lo, hi = min(xs) / 1.3, max(xs) * 1.3
    k0, k1 = math.ceil(math.log2(lo)), math.floor(math.log2(hi))
    if k0 > k1:  # no power of two inside: the nearest one, and the axis widened to hold it
        k0 = k1 = round(math.log2(math.sqrt(lo * hi)))
        lo, hi = min(lo, 2.0 ** k0 / 1.3), max(hi, 2.0 ** k0 * 1.3)
    step = max(1, math.ceil((k1 - k0) / 8))
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator([2.0 ** k for k in range(k0, k1 + 1, step)]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo, hi)


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
