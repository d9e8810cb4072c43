"""The leaderboard as a page: the markdown and the self-contained HTML documents, and the published site
(``index.html``, ``README.md``, ``plots/``). Its prose (title, provenance, papers) is :mod:`bench.site`'s.

Both documents read in the same order: a contents list with an anchor per dataset and unit, the conventions every
epsilon on the page rests on (:mod:`~bench.leaderboard.conventions`), the legend, then per
dataset and unit the compact main table (:mod:`bench.leaderboard.compact`) beside its plot, with every other column,
the non-private references and the hyperparameters one click away (``<details>``); "Papers vs ours" and how the page
was built close it. The HTML sorts any table by a click on its header (a few lines of inline script: the page works
offline and loads nothing)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from bench.leaderboard.conventions import HEADING as CONVENTIONS_HEADING
from bench.leaderboard.conventions import conventions
from bench.leaderboard.compact import (LEGEND, Cell, best_rows, compact_cells, compact_header, is_multi_split,
                                       private_rows)
from bench.leaderboard.plots import _b64, _plot_keys, _png, _safe, plot_section
from bench.leaderboard.rows import Row
from bench.leaderboard.summary import HEADING as GLANCE_HEADING
from bench.leaderboard.summary import Opening, glance_html, glance_markdown, head_html, head_markdown
from bench.leaderboard.tables import COLUMN_NOTES, _num, footnotes, header_for, row_cells, sections

BUILT_HEADING = "How this page was built"
DETAILS_SUMMARY = "Details: every column (which attack, TPR, references, verification), hyperparameters"
NOTES_SUMMARY = "Notes on the detail tables' columns and on the methods"


def anchor(text: str) -> str:
    """The anchor of a heading as GitHub and the HTML page both spell it (lower case, punctuation dropped, spaces
    as hyphens): ``cora: edge-level`` -> ``cora-edge-level``."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def section_title(dataset: str, unit: str) -> str:
    return f"{dataset}: {unit}-level"


def _by_dataset(rows: list[Row]) -> dict[str, list[tuple[str, list[Row]]]]:
    out: dict[str, list[tuple[str, list[Row]]]] = {}
    for (ds, unit), rs in sections(rows).items():
        out.setdefault(ds, []).append((unit, rs))
    return out


def hparams_text(r: Row) -> str:
    return ", ".join(f"{k}={v}" for k, v in r.hparams) or "-"


HPARAMS_HEADER = ["method", "split", "target eps", "seeds", "hyperparameters", "chosen by"]


def hp_source_text(r: Row) -> str:
    """Where the row's hyperparameters come from, the tuning's long label shortened (the page's closing section
    says how they were tuned)."""
    from bench.site import TUNED_LABEL

    return (r.hp_source or "-").replace(f"({TUNED_LABEL})", "(tuned)").removesuffix(" + --set []")


def hparams_cells(r: Row) -> list[str]:
    return [r.label, r.split, _num(r.target_epsilon, "g"), str(len(r.accs)), hparams_text(r), hp_source_text(r)]


def _contents(rows: list[Row], extra: list[str], opening: Opening | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """The summary (when the opening has one), the conventions (when the page has private rows), (dataset,
    [(unit, anchor)]) per dataset, then the closing sections as (heading, [])."""
    items = [(ds, [(unit, anchor(section_title(ds, unit))) for unit, _ in units])
             for ds, units in _by_dataset(rows).items()]
    return (([(GLANCE_HEADING, [])] if opening is not None and opening.body else [])
            + ([(CONVENTIONS_HEADING, [])] if conventions(rows) else []) + items + [(h, []) for h in extra])


# --------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _md_table(header: list[str], body: list[list[str]]) -> list[str]:
    return [_md_row(header), "|" + "|".join(" --- " for _ in header) + "|"] + [_md_row(c) for c in body]


def to_markdown(rows: list[Row], title: str, plots: dict[tuple[str, str], str] | None = None, intro: str = "",
                extra: str = "", opening: Opening | None = None) -> str:
    """The page as markdown (GitHub renders the ``<details>`` blocks); ``plots`` maps (dataset, unit) to an image
    path shown under its table, ``intro`` (how the page was built) and ``extra`` ("Papers vs ours") close it;
    ``opening`` (:mod:`bench.leaderboard.summary`) opens it: the releases, the downloads and the summary."""
    plots = plots or {}
    closing = [x[3:] for x in extra.splitlines() if x.startswith("## ")] + ([BUILT_HEADING] if intro.strip() else [])
    lines = [f"# {title}", ""] + (head_markdown(opening) if opening is not None else []) + ["Contents:", ""]
    for ds, units in _contents(rows, closing, opening):
        links = " · ".join(f"[{u}](#{a})" for u, a in units)
        lines.append(f"* [{ds}](#{anchor(ds)})" + (f": {links}" if links else ""))
    glance = glance_markdown(opening) if opening is not None else []
    if glance:
        lines += [""] + glance
    stated = conventions(rows)
    if stated:
        lines += ["", f"## {CONVENTIONS_HEADING}", ""] + [f"* {n}" for n in stated]
    lines += ["", "## How to read the tables", ""] + [f"* {n}" for n in LEGEND]
    lines += ["", f"<details><summary>{NOTES_SUMMARY}</summary>", ""]
    lines += [f"* {n}" for n in footnotes(rows) + COLUMN_NOTES] + ["", "</details>", ""]
    for ds, units in _by_dataset(rows).items():
        lines += [f"## {ds}", ""]
        for unit, rs in units:
            lines += [f"### {section_title(ds, unit)}", ""]
            private, multi = private_rows(rs), is_multi_split(rs)
            best = best_rows(rs)
            if private:
                lines += _md_table(compact_header(unit, multi),
                                   [[c.text for c in compact_cells(r, unit, multi, id(r) in best)] for r in private])
                lines.append("")
            if (ds, unit) in plots:
                lines += [f"![privacy-utility plot, {ds}, {unit}-level]({plots[(ds, unit)]})", ""]
            lines += [f"<details><summary>{DETAILS_SUMMARY}</summary>", ""]
            lines += _md_table(header_for(unit), [row_cells(r, unit) for r in rs]) + [""]
            lines += _md_table(HPARAMS_HEADER, [hparams_cells(r) for r in rs]) + ["", "</details>", ""]
    if extra.strip():
        lines += [extra.rstrip(), ""]
    if intro.strip():
        lines += [f"## {BUILT_HEADING}", "", intro.strip(), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------


CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1500px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}h3{font-size:1.05em;margin:1.4em 0 .3em}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}th,td{border:1px solid #ccc;padding:.3em .5em;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}tr:nth-child(even){background:#fafafa}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#e6e6e6}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
tr.best td{font-weight:600;background:#eaf6ec}
.sec{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}.sec .main{flex:0 1 auto}.sec figure{flex:1 1 420px;max-width:760px;margin:.6em 0}
.viol{color:#b00020;font-weight:bold}.pass{color:#1b7f3a}img{max-width:100%;border:1px solid #eee}
.note{color:#555;font-size:.85em}.banner{background:#f3f6fa;border-left:4px solid #1a4d8f;padding:.5em .8em}details{margin:.4em 0 1em}summary{cursor:pointer;color:#1a4d8f}
details table td:nth-child(-n+3){text-align:left}nav ul{columns:2;padding-left:1.2em}nav li{margin:.15em 0}"""

#: sorts a table.sortable by the clicked column: a cell's leading number (as shown; 'inf' is infinite) numerically,
#: other text alphabetically, empty cells ('-') last in both directions
SORT_JS = """document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){
var t=th.closest('table'),b=t.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th),
d=th.getAttribute('aria-sort')==='ascending'?-1:1;
th.parentNode.querySelectorAll('th').forEach(function(h){h.removeAttribute('aria-sort')});
th.setAttribute('aria-sort',d>0?'ascending':'descending');
function key(r){var c=r.cells[i];if(!c)return[2,''];var v=c.textContent.trim();
if(v===''||v==='-')return[2,''];var n=/^inf/.test(v)?Infinity:parseFloat(v);return isNaN(n)?[1,v.toLowerCase()]:[0,n]}
Array.prototype.slice.call(b.rows).map(function(r,j){return[key(r),j,r]}).sort(function(x,y){
if(x[0][0]!==y[0][0])return x[0][0]-y[0][0];if(x[0][1]<y[0][1])return -d;if(x[0][1]>y[0][1])return d;return x[1]-y[1]})
.forEach(function(e){b.appendChild(e[2])})})})"""


def _td(c: Cell) -> str:
    esc = html.escape
    return f"<td{f' title={chr(39)}{esc(c.title)}{chr(39)}' if c.title else ''}>{esc(c.text)}</td>"


def _wrap(header: str) -> str:
    """A compact table's header on two lines (before its bracket, or after ``eps_lb``), so the table leaves room
    for its plot beside it."""
    for sep in (" (", " ["):
        if sep in header:
            k = header.index(sep)
            return f"{header[:k]}<br>{header[k + 1:]}"
    return header.replace("eps_lb ", "eps_lb<br>", 1)


def _html_table(header: list[str], body: list[str], cls: str = "sortable", wrap: bool = False) -> str:
    esc = html.escape
    return (f"<table class='{cls}'><thead><tr>"
            + "".join(f"<th>{_wrap(esc(h)) if wrap else esc(h)}</th>" for h in header)
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def _plain_rows(body: list[list[str]]) -> list[str]:
    esc = html.escape
    return ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>" for cells in body]


def to_html(rows: list[Row], title: str, figures: dict[tuple[str, str], str], intro: str = "",
            extra: str = "", opening: Opening | None = None) -> str:
    """The page as one self-contained HTML document: ``figures`` maps (dataset, unit) to a base64 PNG shown beside
    its table; ``intro`` (HTML: how the page was built) and ``extra`` (HTML: "Papers vs ours") close it;
    ``opening`` opens it, as in :func:`to_markdown`."""
    esc = html.escape
    closing = ([html.unescape(h) for h in re.findall(r"<h2 id='[^']*'>([^<]*)</h2>", extra)]
               + ([BUILT_HEADING] if intro.strip() else []))
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
             f"<style>{CSS}</style></head><body>", f"<h1>{esc(title)}</h1>"]
    toc = []
    for ds, units in _contents(rows, closing, opening):
        links = " · ".join(f"<a href='#{a}'>{esc(u)}</a>" for u, a in units)
        toc.append(f"<li><a href='#{anchor(ds)}'>{esc(ds)}</a>" + (f": {links}" if links else "") + "</li>")
    parts.append("<nav id='contents' aria-label='contents'><strong>Contents</strong><ul>" + "".join(toc)
                 + "</ul></nav>")
    if opening is not None:
        parts.insert(-1, head_html(opening))
        parts.append(glance_html(opening, anchor(GLANCE_HEADING)))
    stated = conventions(rows)
    if stated:
        parts.append(f"<h2 id='{anchor(CONVENTIONS_HEADING)}'>{esc(CONVENTIONS_HEADING)}</h2><ul class='note'>"
                     + "".join(f"<li>{esc(n)}</li>" for n in stated) + "</ul>")
    parts.append(f"<h2 id='{anchor('How to read the tables')}'>How to read the tables</h2><ul class='note'>"
                 + "".join(f"<li>{esc(n)}</li>" for n in LEGEND) + "</ul>")
    parts.append(f"<details><summary>{esc(NOTES_SUMMARY)}</summary><ul class='note'>"
                 + "".join(f"<li>{esc(n)}</li>" for n in footnotes(rows) + COLUMN_NOTES) + "</ul></details>")
    for ds, units in _by_dataset(rows).items():
        parts.append(f"<h2 id='{anchor(ds)}'>{esc(ds)}</h2>")
        for unit, rs in units:
            name = section_title(ds, unit)
            parts.append(f"<h3 id='{anchor(name)}'>{esc(name)}</h3><div class='sec'>")
            private, multi = private_rows(rs), is_multi_split(rs)
            best = best_rows(rs)
            if private:
                body = []
                for r in private:
                    cells = compact_cells(r, unit, multi, id(r) in best)
                    body.append(f"<tr{' class=' + chr(39) + 'best' + chr(39) if id(r) in best else ''}>"
                                + "".join(_td(c) for c in cells) + "</tr>")
                parts.append("<div class='main'>" + _html_table(compact_header(unit, multi), body, wrap=True)
                             + "</div>")
            if (ds, unit) in figures:
                parts.append(f"<figure><img alt='privacy-utility plot, {esc(ds)}, {esc(unit)}-level' "
                             f"src='data:image/png;base64,{figures[(ds, unit)]}'></figure>")
            parts.append("</div>")
            full = []
            for r in rs:
                cells = row_cells(r, unit)
                cls = "viol" if r.verdict == "VIOLATION" else "pass" if r.verdict else ""
                full.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells[:-1])
                            + f"<td class='{cls}'>{esc(cells[-1])}</td></tr>")
            parts.append(f"<details><summary>{esc(DETAILS_SUMMARY)}</summary>"
                         + _html_table(header_for(unit), full)
                         + _html_table(HPARAMS_HEADER, _plain_rows([hparams_cells(r) for r in rs]))
                         + "</details>")
    if extra:
        parts.append(extra)
    if intro:
        parts.append(f"<h2 id='{anchor(BUILT_HEADING)}'>{esc(BUILT_HEADING)}</h2>" + intro)
    parts.append(f"<script>{SORT_JS}</script></body></html>")
    return "\n".join(parts)


def build_site(rows: list[Row], out_dir: str | Path, title: str, intro_md: str = "", papers: str = "",
               opening: Opening | None = None) -> list[Path]:
    """Write ``index.html`` (self-contained), ``README.md`` (the same tables) and the plots (PNG) into ``out_dir``;
    ``opening`` as in :func:`to_markdown`."""
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
    paths = {(ds, unit): f"plots/{_safe(ds)}_{unit}.png" for (ds, unit) in pngs}
    write_text_atomic(out / "README.md", to_markdown(rows, title, paths, intro_md, papers, opening))
    write_text_atomic(out / "index.html", to_html(rows, title, {k: _b64(png) for k, png in pngs.items()},
                                                  _md_paragraphs(intro_md), _md_table_html(papers), opening))
    return written + [out / "README.md", out / "index.html"]


def _md_paragraphs(md: str) -> str:
    return "".join(f"<p class='note'>{html.escape(p.strip())}</p>" for p in md.split("\n\n") if p.strip())


def _md_table_html(md: str) -> str:
    """A markdown section ('## ' and '### ' headings, paragraphs, bullets, pipe tables) as HTML; a '## ' heading
    gets its anchor (:func:`anchor`)."""
    if not md.strip():
        return ""
    esc = html.escape
    out, table = [], []

    def flush() -> None:
        if table:
            head, *body = table
            out.append(_html_table(head, _plain_rows(body)))
            table.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= {"-", " ", ":"} for c in cells):
                continue
            table.append(cells)
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2 id='{anchor(line[3:])}'>{esc(line[3:])}</h2>")
        elif line.startswith("### "):
            out.append(f"<h3>{esc(line[4:])}</h3>")
        elif line.strip():
            out.append(f"<p class='note'>{esc(line)}</p>")
    flush()
    return "\n".join(out)
