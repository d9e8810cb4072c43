"""The leaderboard's privacy-utility plots: per dataset and unit, accuracy against the spent epsilon with the papers'
own numbers (``configs/papers.yaml``) as stars and, where the rows were attacked, the strongest in-unit attack's AUC
against the same axis, as small PNGs."""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from typing import Any

from bench.site import PaperCell

from bench.leaderboard.compact import compact_attack
from bench.leaderboard.rows import Row, Strongest, section_attack_unit
from bench.leaderboard.tables import sections


#: marker and line style per method, cycled: methods whose points coincide (drw and drw-d on Cora) stay apart; no
#: star, which marks the papers' points (:data:`PAPER_MARKER`)
MARKERS = "osD^vPX<>ph"
LINESTYLES = ("-", "--", "-.", ":")
REFERENCE_STYLES = ((0, (6, 2)), (0, (2, 1.5)), (0, (6, 2, 1.5, 2)), (0, (10, 3)), (0, (1, 3)))
#: the factor between neighbouring methods' x positions: the points of one epsilon spread by a few percent
DODGE = 1.02


def plot_section(rows: list[Row], dataset: str, unit: str, papers: dict[str, Any] | None = None):
    """Accuracy (mean, 95% bootstrap CI as error bars) against SPENT epsilon (each row's max over seeds, recomputed
    from the ledgers; log x, plain-number ticks) for one dataset and unit: one marker and line style per method,
    each method's points shifted by a small constant factor so that methods on the same point stay visible (the x
    label says by how much); the non-private references of the splits the private rows use as horizontal lines;
    the papers' own numbers (``papers``, default ``configs/papers.yaml``; :func:`paper_points`) as stars at the
    paper's epsilon in their method's colour and offset, filled where ours reproduces them
    (:func:`bench.site.reproduces`, the rule of "Papers vs ours"). Where the section's rows were attacked, a
    leakage panel under it on the same x axis (:func:`leakage_series`): the compact table's attack AUC per method
    in the same styles, the references' AUC as lines, chance (AUC 0.5) marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = sections(rows).get((dataset, unit), [])
    private = [r for r in rs if r.unit != "none" and math.isfinite(r.spent_max)]
    leak = leakage_series(rs)
    if leak:
        fig, (ax, lax) = plt.subplots(2, 1, figsize=(8.5, 7.4), height_ratios=(1.15, 1))
    else:
        fig, ax = plt.subplots(figsize=(8.5, 4.6))
        lax = None
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in private:
        groups.setdefault((r.label, r.split), []).append(r)
    multi_split = len({s for _, s in groups}) > 1
    cmap = plt.get_cmap("tab20" if len(groups) > 10 else "tab10")
    n = len(groups)
    colours, shifts = {}, {}
    for i, ((method, split), g) in enumerate(sorted(groups.items())):
        g = sorted(g, key=lambda r: r.spent_max)
        label = (f"{method} ({split})" if multi_split else method) + (f" [{g[0].unit_label}]"
                                                                       if g[0].unit_label != unit else "")
        err = [[r.acc_mean - (r.ci or (r.acc_mean,) * 2)[0] for r in g],
               [(r.ci or (r.acc_mean,) * 2)[1] - r.acc_mean for r in g]]
        shift = DODGE ** (i - (n - 1) / 2)
        colours[(method, split)], shifts[(method, split)] = cmap(i % cmap.N), shift
        style = dict(capsize=3, label=label, color=cmap(i % cmap.N), marker=MARKERS[i % len(MARKERS)],
                     linestyle=LINESTYLES[(i // len(MARKERS) + i) % len(LINESTYLES)], markersize=5)
        ax.errorbar([r.spent_max * shift for r in g], [r.acc_mean for r in g], yerr=err, **style)
        if lax is not None and (method, split) in leak:
            pts = leak[(method, split)]
            lax.errorbar([p.spent * shift for p in pts], [p.auc for p in pts],
                         yerr=[[p.auc - p.low for p in pts], [p.high - p.auc for p in pts]], **style)
    refs = section_references(rs)
    for j, r in enumerate(refs):
        style = dict(linestyle=REFERENCE_STYLES[j % len(REFERENCE_STYLES)], linewidth=1.1,
                     color=plt.get_cmap("Greys")(0.85 - 0.12 * (j % 4)),
                     label=f"{r.label} ({r.split + ', ' if multi_split else ''}non-private)")
        ax.axhline(r.acc_mean, **style)
        b = leakage_of_reference(r, unit)
        if lax is not None and b.name:
            lax.axhline(b.auc, **style)
    points = paper_points(rs, papers)
    for c in points:
        key = (c.row.label if c.row is not None else c.method, c.split)
        colour = colours.get(key, "black")
        ax.plot([c.epsilon * shifts.get(key, 1.0)], [c.accuracy / 100], linestyle="none", marker=PAPER_MARKER,
                markersize=12, color=colour, markeredgecolor=colour, markeredgewidth=1.2,
                fillstyle=PAPER_FILL[c.reproduced], zorder=5, label=paper_label(c, multi_split), gid=PAPER_GID)
    if points:
        ax.plot([], [], linestyle="none", label=PAPER_KEY)
    xs = [r.spent_max for r in private] + [c.epsilon for c in points]
    dodged = ""
    if private:
        _log_axis(ax, xs)
        if n > 1:
            dodged = f"; methods offset by up to {100 * (DODGE ** ((n - 1) / 2) - 1):.0f}% to stay apart"
    deltas = sorted({f"{r.delta:.0e}" for r in private if not math.isnan(r.delta)})
    xlabel = f"spent epsilon (the ledger's, log scale{dodged})"
    ax.set_ylabel("test accuracy (mean, 95% bootstrap CI)")
    ax.set_title(f"{dataset}: {unit}-level" + (f", delta {', '.join(deltas)}" if deltas else ""))
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()  # as drawn, then the stars' key and the papers' points
    order = sorted(range(len(handles)), key=lambda k: (labels[k] == PAPER_KEY or _is_paper(handles[k]),
                                                       labels[k] != PAPER_KEY))
    ax.legend([handles[k] for k in order], [labels[k] for k in order], fontsize=7,
              loc="upper left" if lax is not None else "center left",
              bbox_to_anchor=(1.01, 1.0) if lax is not None else (1.01, 0.5))
    if lax is None:
        ax.set_xlabel(xlabel)
    else:
        lax.set_label(LEAKAGE_PANEL)
        lax.axhline(0.5, color="#b00020", linewidth=1.0, linestyle=(0, (1, 1.5)), label="chance (AUC 0.5)")
        _log_axis(lax, xs)
        lax.set_xlabel(xlabel)
        lax.set_ylabel("attack AUC (mean, min-max over seeds)")
        lax.set_title(f"leakage: strongest attack on {section_attack_unit(unit)}", fontsize=10)
        lax.grid(True, alpha=0.3)
        lax.legend(handles=[h for h in lax.get_lines() if h.get_label().startswith("chance")], fontsize=7,
                   loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


#: a paper's point: a star (no method uses one), filled where ours reproduces the paper's number, hollow where it
#: does not, half-filled where nothing decides it (no CI: one seed, or the row not run yet)
PAPER_MARKER = "*"
PAPER_FILL = {True: "full", False: "none", None: "bottom"}
#: the ``gid`` of a paper point's artist (:func:`plotted_papers` finds them by it)
PAPER_GID = "paper-point"
#: the legend line that says what the stars mean
PAPER_KEY = "paper's number (star, at its eps):\nfilled = reproduced (within 2 points), hollow = not, half = undecided"


def paper_verdict(c: PaperCell) -> str:
    if c.reproduced is None:
        if c.row is None or not c.row.accs:
            return "not run yet"
        return "one seed: undecided" if len(c.row.accs) < 2 else "inconclusive (more seeds decide it)"
    return "reproduced" if c.reproduced else "not reproduced"


def paper_label(c: PaperCell, multi_split: bool = False) -> str:
    """A paper point's legend entry: the paper, the method, its number, whether ours reproduces it (the star sits at
    the paper's epsilon)."""
    return f"{c.short}: {c.method}{f' ({c.split})' if multi_split else ''} {c.accuracy:.1f}%, {paper_verdict(c)}"


def paper_points(rs: list[Row], papers: dict[str, Any] | None = None) -> list[PaperCell]:
    """The papers' own numbers a section's plot draws (its rows ``rs``): the cells of ``papers`` (default
    ``configs/papers.yaml``) matched to a private row of the section, or, not run yet, naming a method and split the
    section has; each with the row and verdict of "Papers vs ours" (:func:`bench.site.paper_cells`). A
    non-private number (no epsilon, or inf: no noise) has no place on an epsilon axis, nor a cell that only the
    paper's setting runs (no tuned row to compare); the tables hold them."""
    from bench.site import load_papers, paper_cells

    papers = papers if papers is not None else load_papers()
    private = [r for r in rs if r.unit != "none"]
    datasets = {r.dataset for r in private}
    out = []
    for sec in papers["papers"]:
        if sec["dataset"] not in datasets:
            continue
        for c in paper_cells(private, sec):
            if c.setting_only or c.target is None or not math.isfinite(c.target) or c.epsilon is None or not 0 < c.epsilon < math.inf:
                continue
            if c.row is None and not any(r.method == c.method and r.split == c.split for r in private):
                continue  # the method's cell of another unit's section
            out.append(c)
    return out


def plotted_papers(fig) -> list[tuple[str, float, float, str]]:
    """What a figure's accuracy panel draws as papers' points, read back from its artists: (legend label, x (offset
    with its method's points, as drawn), accuracy, fill style) per point, in drawing order."""
    ax = fig.axes[0]
    return [(line.get_label(), float(line.get_xdata()[0]), float(line.get_ydata()[0]), line.get_fillstyle())
            for line in ax.get_lines() if _is_paper(line)]


def _is_paper(artist) -> bool:
    return getattr(artist, "get_gid", lambda: None)() == PAPER_GID


#: the label of a figure's leakage panel (:func:`plotted_leakage` finds it by it)
LEAKAGE_PANEL = "leakage"


@dataclass(frozen=True)
class LeakagePoint:
    """One private row's point on the leakage panel: its spent epsilon (max over seeds, before the dodge), the
    compact table's attack AUC (:func:`bench.leaderboard.compact.compact_attack`: the mean over the attack seeds
    of the held-out strongest attack on what the claim protects) and the min and max of what it averages."""

    row: Row
    spent: float
    auc: float
    low: float
    high: float


def leakage_series(rs: list[Row]) -> dict[tuple[str, str], list[LeakagePoint]]:
    """Per (method label, split) of a section's private rows with a finite spent epsilon, the leakage points of its
    attacked rows in order of spent epsilon; empty when no row of the section was attacked (no panel then)."""
    out: dict[tuple[str, str], list[LeakagePoint]] = {}
    for r in sorted((r for r in rs if r.unit != "none" and math.isfinite(r.spent_max)), key=lambda r: r.spent_max):
        b = compact_attack(r)
        if b.name and not math.isnan(b.auc):
            aucs = b.aucs or (b.auc,)
            out.setdefault((r.label, r.split), []).append(LeakagePoint(r, r.spent_max, b.auc, min(aucs), max(aucs)))
    return out


def leakage_of_reference(r: Row, unit: str) -> Strongest:
    """A non-private reference's attack on the leakage panel of ``unit``: the details table's (the strongest attack
    on what the section's claims protect)."""
    return r.strongest(section_attack_unit(unit))


def plotted_leakage(fig) -> dict[str, list[tuple[float, float]]]:
    """What a figure's leakage panel draws, read back from its artists: per method label its (x, AUC) points (x
    dodged as drawn), and per reference label the AUC of its horizontal line ("chance (AUC 0.5)" included); empty
    when the figure has no leakage panel."""
    axes = [a for a in fig.axes if a.get_label() == LEAKAGE_PANEL]
    if not axes:
        return {}
    out: dict[str, list[tuple[float, float]]] = {}
    for c in axes[0].containers:  # the errorbar of each method
        line = c.lines[0]
        out[c.get_label()] = [(float(x), float(y)) for x, y in zip(line.get_xdata(), line.get_ydata())]
    for line in axes[0].get_lines():  # the horizontal lines (the errorbars' own lines are unlabelled)
        if not line.get_label().startswith("_"):
            out[line.get_label()] = [(math.nan, float(line.get_ydata()[0]))]
    return out


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
