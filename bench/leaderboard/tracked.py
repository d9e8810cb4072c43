"""``bench leaderboard`` without ``--site``: the leaderboard of an experiment or an export in one format, optionally
logged as a tracked run with its tables and plots."""

from __future__ import annotations

from bench.leaderboard.export import to_csv
from bench.leaderboard.page import to_html, to_markdown
from bench.leaderboard.plots import _figures, _png_b64, _safe
from bench.leaderboard.rows import LeaderboardError, Row, collect, collect_records


def render(rows: list[Row], fmt: str, title: str) -> tuple[str, dict]:
    """``(text, figures)``: the leaderboard in ``fmt`` (md, csv, html) and the matplotlib figures it drew."""
    figs = _figures(rows) if fmt == "html" else {}
    if fmt == "md":
        return to_markdown(rows, title), figs
    if fmt == "csv":
        return to_csv(rows), figs
    return to_html(rows, title, {k: _png_b64(f) for k, f in figs.items()}), figs


def build(experiment: str, fmt: str, track: bool = True, export: str | None = None) -> tuple[str, list[Row]]:
    """The leaderboard of ``experiment`` (or of the export file ``export``) rendered as ``fmt``; with ``track``,
    also logged as a run tagged ``kind=leaderboard`` with the tables and plots."""
    import matplotlib.pyplot as plt

    if export:
        from bench import records

        rows = collect_records(records.load(export) + records.attacks_beside(export))
        source = f"export {export}"
    else:
        rows = collect(experiment)
        source = f"experiment {experiment!r}"
    if not rows:
        raise LeaderboardError(f"{source} has no FINISHED runs with test accuracy")
    title = f"Leaderboard: {source}"
    text, figs = render(rows, fmt, title)
    if track:
        from bench import tracking

        figs = figs or _figures(rows)
        with tracking.tracked_run(experiment, "leaderboard", tags={"kind": "leaderboard"}) as run:
            run.log_params({"rows": len(rows), "runs": sum(len(r.accs) for r in rows), "source": source})
            run.log_text(to_markdown(rows, title), "leaderboard.md")
            run.log_text(to_csv(rows), "leaderboard.csv")
            run.log_text(to_html(rows, title, {k: _png_b64(f) for k, f in figs.items()}), "leaderboard.html")
            for (ds, unit), f in figs.items():
                run.log_figure(f, f"plots/privacy_utility_{_safe(ds)}_{unit}.png")
    for f in figs.values():
        plt.close(f)
    return text, rows
