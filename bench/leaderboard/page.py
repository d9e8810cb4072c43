"""The leaderboard as a page: the markdown and the self-contained HTML documents, and the published site
(``index.html``, ``README.md``, ``plots/``). Its prose (title, provenance, papers) is :mod:`bench.site`'s."""

from __future__ import annotations

import html
from pathlib import Path

from bench.leaderboard.plots import _b64, _plot_keys, _png, _safe, plot_section
from bench.leaderboard.rows import Row
from bench.leaderboard.tables import COLUMN_NOTES, footnotes, header_for, row_cells, sections


def to_markdown(rows: list[Row], title: str) -> str:
    lines = [f"# {title}", ""]
    for (ds, unit), rs in sections(rows).items():
        header = header_for(unit)
        lines += [f"## {ds}: {unit}-level", "", "| " + " | ".join(header) + " |",
                  "|" + "|".join(" --- " for _ in header) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r, unit)) + " |" for r in rs]
        lines.append("")
    notes = footnotes(rows)
    lines += [f"* {n}" for n in notes + COLUMN_NOTES]
    return "\n".join(lines) + "\n"


CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1400px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}th,td{border:1px solid #ccc;padding:.3em .5em;text-align:right}
th{background:#f3f3f3}td:nth-child(-n+3){text-align:left}tr:nth-child(even){background:#fafafa}
.viol{color:#b00020;font-weight:bold}.pass{color:#1b7f3a}img{max-width:100%;border:1px solid #eee}
.note{color:#555;font-size:.85em}"""


def to_html(rows: list[Row], title: str, figures: dict[tuple[str, str], str], intro: str = "",
            extra: str = "") -> str:
    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
             f"<style>{CSS}</style></head><body>", f"<h1>{esc(title)}</h1>"]
    if intro:
        parts.append(intro)
    parts.append("<ul class='note'>" + "".join(f"<li>{esc(n)}</li>" for n in COLUMN_NOTES + footnotes(rows))
                 + "</ul>")
    for (ds, unit), rs in sections(rows).items():
        parts.append(f"<h2>{esc(ds)}: {esc(unit)}-level</h2>")
        if (ds, unit) in figures:
            parts.append(f"<img alt='privacy-utility plot, {esc(ds)}, {esc(unit)}' "
                         f"src='data:image/png;base64,{figures[(ds, unit)]}'>")
        parts.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header_for(unit)) + "</tr>")
        for r in rs:
            cells = row_cells(r, unit)
            tds = "".join(f"<td>{esc(c)}</td>" for c in cells[:-1])
            cls = "viol" if r.verdict == "VIOLATION" else "pass" if r.verdict else ""
            parts.append(f"<tr>{tds}<td class='{cls}'>{esc(cells[-1])}</td></tr>")
        parts.append("</table>")
    if extra:
        parts.append(extra)
    parts.append("</body></html>")
    return "\n".join(parts)


def build_site(rows: list[Row], out_dir: str | Path, title: str, intro_md: str = "", papers: str = "") -> list[Path]:
    """Write ``index.html`` (self-contained), ``README.md`` (the same tables) and the plots (PNG) into ``out_dir``."""
    import matplotlib.pyplot as plt

    from bench.io import write_text_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    pngs = {}
    for key in _plot_keys(rows):  # one figure open at a time: a full grid has dozens
        fig = plot_section(rows, *key)
        pngs[key] = _png(fig)
        plt.close(fig)
    for (ds, unit), png in pngs.items():
        p = plots / f"{_safe(ds)}_{unit}.png"
        p.write_bytes(png)
        written.append(p)
    md = to_markdown(rows, title)
    md = md.replace(f"# {title}\n\n", f"# {title}\n\n{intro_md}\n\n" if intro_md else f"# {title}\n\n", 1)
    if papers:
        md += "\n" + papers
    plot_md = "\n".join(f"![{ds} {unit}](plots/{_safe(ds)}_{unit}.png)" for (ds, unit) in pngs)
    write_text_atomic(out / "README.md", md + ("\n## Plots\n\n" + plot_md + "\n" if plot_md else ""))
    intro_html = _md_paragraphs(intro_md)
    write_text_atomic(out / "index.html", to_html(rows, title, {k: _b64(png) for k, png in pngs.items()},
                                                  intro_html, _md_table_html(papers)))
    return written + [out / "README.md", out / "index.html"]


def _md_paragraphs(md: str) -> str:
    return "".join(f"<p class='note'>{html.escape(p.strip())}</p>" for p in md.split("\n\n") if p.strip())


def _md_table_html(md: str) -> str:
    """A markdown section (a '## ' heading, paragraphs, one pipe table) as HTML."""
    if not md.strip():
        return ""
    esc = html.escape
    out, table = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= {"-", " ", ":"} for c in cells):
                continue
            table.append(cells)
            continue
        if table:
            out.append("<table>" + "".join("<tr>" + "".join(f"<{'th' if i == 0 else 'td'}>{esc(c)}"
                                                            f"</{'th' if i == 0 else 'td'}>" for c in row) + "</tr>"
                                           for i, row in enumerate(table)) + "</table>")
            table = []
        if line.startswith("## "):
            out.append(f"<h2>{esc(line[3:])}</h2>")
        elif line.strip():
            out.append(f"<p class='note'>{esc(line)}</p>")
    if table:
        out.append("<table>" + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                                       for row in table) + "</table>")
    return "\n".join(out)
