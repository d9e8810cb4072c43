"""The leaderboard page a reader skims: a contents list with anchors, the legend before the tables, per dataset and
unit a compact sortable table with the best row per target epsilon marked and the plot beside it, everything else in
details; the committed page's compact numbers are those of the committed records; the plots' ticks and lines."""

from __future__ import annotations

import json
import math
import statistics
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bench.leaderboard import collect_records, to_html, to_markdown
from bench.leaderboard.compact import BEST_MARK, compact_header
from bench.leaderboard.page import anchor

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "docs" / "leaderboard"


class Page(HTMLParser):
    """The parts of a page these tests read: element ids in order, in-page links, the contents list's links, the
    tables (class, header, rows of cell texts, row classes, the heading above them) and where things come."""

    def __init__(self, text: str):
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.nav_links: list[str] = []
        self.tables: list[dict] = []
        self.order: list[str] = []  # "h2:<id>", "h3:<id>", "table", "img", "details", "script"
        self.external: list[str] = []
        self._nav = self._cell = None
        self._heading: str | None = None
        self._details = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        for k in ("src", "href"):
            v = a.get(k)
            if v and not v.startswith(("data:", "#")):
                self.external.append(v)
        if tag == "nav":
            self._nav = True
        if tag == "a" and a.get("href", "").startswith("#"):
            self.links.append(a["href"][1:])
            if self._nav:
                self.nav_links.append(a["href"][1:])
        if tag in ("h2", "h3"):
            self._heading = a.get("id", "")
            self.order.append(f"{tag}:{self._heading}")
        if tag == "details":
            self._details += 1
            self.order.append("details")
        if tag in ("img", "script"):
            self.order.append(tag)
        if tag == "table":
            self.tables.append({"cls": a.get("class", ""), "header": [], "rows": [], "row_cls": [],
                                "under": self._heading, "in_details": self._details > 0})
            self.order.append("table")
        if tag == "tr" and self.tables:
            self._row, self._row_cls = [], a.get("class", "")
        if tag in ("td", "th"):
            self._cell = []
        if tag == "br" and self._cell is not None:  # a header on two lines reads as one
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag == "nav":
            self._nav = False
        if tag == "details":
            self._details -= 1
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self.tables:
            t = self.tables[-1]
            if not t["header"]:
                t["header"] = self._row
            else:
                t["rows"].append(self._row)
                t["row_cls"].append(self._row_cls)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def rec(method, eps, seed, acc, dataset="cora", unit="edge", split="random-75-10-15"):
    return {"cell_id": f"{method}{eps}{seed}{dataset}{split}", "run_id": f"r{seed}{method}{eps}", "kind": "run",
            "status": "FINISHED", "start_time": 1 + seed,
            "params": {"method": method, "dataset": dataset, "split": split, "seed": seed, "privacy_unit": unit,
                       "target_epsilon": str(eps), "delta": "1e-04",
                       "config_hash": f"{method}{eps}{seed}{dataset}{split}"},
            "metrics": {"test_acc": acc, "epsilon": eps if math.isfinite(eps) else "inf"}}


@pytest.fixture(scope="module")
def rows():
    recs = []
    for ds in ("photo", "citeseer", "cora"):  # deliberately not in reading order
        for e in (1.0, 4.0):
            for s in (0, 1):
                recs += [rec("gap-edge", e, s, 0.60 + 0.05 * s + 0.01 * e, ds),
                         rec("edgerand", e, s, 0.62 + 0.01 * s, ds),
                         rec("gap-node", e * 2, s, 0.5 + 0.01 * s, ds, unit="node")]
        recs += [rec("sage", math.inf, s, 0.85, ds, "none") for s in (0, 1)]
        recs += [rec("gcn", math.inf, s, 0.80, ds, "none", split="public") for s in (0, 1)]
    return collect_records(recs)


def test_the_html_page_has_contents_anchors_legend_first_and_sortable_tables(rows):
    page = Page(to_html(rows, "T", {}, "<p>how it was built</p>"))
    assert not page.external  # offline: nothing loaded from elsewhere
    assert len(page.ids) == len(set(page.ids))  # every anchor names one place
    assert set(page.links) <= set(page.ids)  # every in-page link lands
    sections = [f"{ds}-{u}-level" for ds in ("cora", "citeseer", "photo") for u in ("edge", "node")]
    # the contents list links every dataset and every section, in reading order (Cora, CiteSeer first)
    assert [x for x in page.nav_links if x.endswith("-level")] == sections
    assert {"cora", "citeseer", "photo", anchor("How this page was built")} <= set(page.nav_links)
    assert [x.split(":", 1)[1] for x in page.order if x.startswith("h3:")] == sections
    # the legend comes before the first table
    assert page.order.index("h2:how-to-read-the-tables") < page.order.index("table")
    main = [t for t in page.tables if not t["in_details"]]
    assert len(main) == len(sections) and all("sortable" in t["cls"] for t in page.tables)
    assert "table.sortable th" in to_html(rows, "T", {})  # the sorter is inline
    # the compact table: private rows only, the references are in the details
    cora_edge = next(t for t in main if t["under"] == "cora-edge-level")
    assert cora_edge["header"] == compact_header("edge", multi_split=False)
    assert sorted(r[0] for r in cora_edge["rows"]) == ["edgerand", "edgerand", "gap-edge", "gap-edge"]
    details = [t for t in page.tables if t["in_details"] and t["under"] == "cora-edge-level"]
    assert any("sage" in [r[0] for r in t["rows"]] for t in details)


def test_the_best_row_per_target_epsilon_is_the_most_accurate_private_row(rows):
    page = Page(to_html(rows, "T", {}))
    t = next(t for t in page.tables if t["under"] == "cora-edge-level" and not t["in_details"])
    i_eps, i_acc = t["header"].index("target eps"), t["header"].index("test acc [95% CI]")
    for eps in ("1", "4"):
        at = [(float(r[i_acc].split()[0]), cls == "best", BEST_MARK in r[i_acc])
              for r, cls in zip(t["rows"], t["row_cls"]) if r[i_eps] == eps]
        top = max(a for a, _, _ in at)
        assert [(best, mark) for a, best, mark in at] == [(a == top, a == top) for a, _, _ in at]
    # gap-edge's means (0.635 at eps 1, 0.665 at 4) beat edgerand's (0.625 at both)
    rows_best = [r[0] for r, cls in zip(t["rows"], t["row_cls"]) if cls == "best"]
    assert rows_best == ["gap-edge", "gap-edge"]


def test_markdown_has_the_same_contents_anchors_and_plots_beside_their_tables(rows):
    md = to_markdown(rows, "T", {("cora", "edge"): "plots/cora_edge.png"}, "built so", "## Papers vs ours\n\nx")
    lines = md.splitlines()
    assert "* [cora](#cora): [edge](#cora-edge-level) · [node](#cora-node-level)" in lines
    heads = [ln for ln in lines if ln.startswith("#")]
    assert heads.index("## cora") < heads.index("## citeseer") < heads.index("## photo")
    assert heads[-2:] == ["## Papers vs ours", "## How this page was built"]
    # the plot right under its section's compact table, before the details
    i = lines.index("### cora: edge-level")
    j = next(k for k in range(i, len(lines)) if lines[k].startswith("!["))
    assert "plots/cora_edge.png" in lines[j] and lines.index("## How to read the tables") < i
    assert not any(ln.startswith("<details>") for ln in lines[i:j])


def test_plots_tick_plain_numbers_draw_their_splits_references_and_tell_methods_apart(rows):
    import matplotlib.pyplot as plt

    from bench.leaderboard.plots import plot_section

    fig = plot_section(rows, "cora", "edge")
    try:
        ax = fig.axes[0]
        fig.canvas.draw()
        ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert ticks == ["1", "2", "4"]  # not 10^0 or 2x10^0
        labels = ax.get_legend_handles_labels()[1]
        assert any(lb.startswith("sage") for lb in labels)
        assert not any(lb.startswith("gcn") for lb in labels)  # a public-split baseline on a random-split plot
        lines = [ln for ln in ax.get_lines() if ln.get_marker() not in (None, "None", "", "_")]
        assert len({(ln.get_marker(), ln.get_linestyle()) for ln in lines}) == len(lines) == 2
        # methods on the same point (edgerand's and gap-edge's eps 1 run) are drawn apart
        xs = [tuple(ln.get_xdata()) for ln in lines]
        assert xs[0] != xs[1] and all(abs(math.log(a / b)) < 0.05 for a, b in zip(*xs))
    finally:
        plt.close(fig)


def test_the_published_pages_compact_numbers_are_the_committed_records():
    """Cora's compact tables on the committed page, cell by cell, from the raw records: mean test accuracy and the
    max spent epsilon over each row's runs (the newest run per config_hash), the white-box bounds of its seed-0 run;
    the attack AUC is the full table's (the held-out choice is :meth:`Row.strongest`'s, tested there)."""
    from bench.leaderboard.tables import _num
    from bench.records import spent_epsilon

    page = Page((SITE / "index.html").read_text())
    assert {"cora", "cora-edge-level", "cora-node-level", "cora-feature-level"} <= set(page.nav_links)
    assert page.nav_links.index("cora") < page.nav_links.index("citeseer") < page.nav_links.index("photo")
    newest: dict[str, dict] = {}
    for line in (SITE / "runs" / "cora.jsonl").read_text().splitlines():
        r = json.loads(line)
        p = r.get("params") or {}
        if r.get("kind", "run") == "run" and r.get("status", "FINISHED") == "FINISHED" and "test_acc" in r["metrics"]:
            if p["config_hash"] not in newest or r["start_time"] > newest[p["config_hash"]]["start_time"]:
                newest[p["config_hash"]] = r
    whitebox = {}
    for line in (SITE / "attacks" / "whitebox.jsonl").read_text().splitlines():
        r = json.loads(line)
        whitebox[r["target_config_hash"]] = r["whitebox"]  # the file is in time order: the newest wins
    checked = 0
    for unit in ("edge", "node", "feature"):
        (t,) = [t for t in page.tables if t["under"] == f"cora-{unit}-level" and not t["in_details"]]
        full = next(t for t in page.tables if t["under"] == f"cora-{unit}-level" and t["in_details"])
        h = t["header"]
        for cells in t["rows"]:
            c = dict(zip(h, cells))
            split = c.get("split", "random-75-10-15")
            runs = [r for r in newest.values() if r["params"]["method"] == c["method"]
                    and r["params"]["privacy_unit"] == unit and r["params"]["split"] == split
                    and float(r["params"]["target_epsilon"]) == float(c["target eps"])]
            assert len(runs) >= 2, c
            accs = [r["metrics"]["test_acc"] for r in runs]
            assert c["test acc [95% CI]"].split()[0] == f"{statistics.fmean(accs):.4f}"
            assert c["spent eps"] == _num(max(spent_epsilon(r) for r in runs), ".4g")
            seed0 = next(r for r in runs if str(r["params"]["seed"]) == "0")
            w = whitebox.get(seed0["params"]["config_hash"])
            lb_cp, lb_fdp = c["eps_lb assumption-free"].rstrip("†‡"), c["eps_lb f-DP"].rstrip("†‡")
            if w is None:
                assert lb_cp == lb_fdp == "-"
            else:
                assert lb_cp == _num(float(w["epsilon_lb_cp"]), ".3g")
                assert lb_fdp == _num(float(w.get("epsilon_lb_fdp", w.get("epsilon_lb"))), ".3g")
            detail = next(d for d in full["rows"] if d[0] == c["method"] and d[2] == split and d[3] == c["target eps"])
            auc = c[next(k for k in h if k.startswith("attack AUC"))]
            column = next(i for i, k in enumerate(full["header"]) if k.startswith("strongest attack on"))
            assert detail[column].split()[0] == auc
            checked += 1
    assert checked >= 20


def attacked(record: dict, attacks: dict) -> dict:
    return {**record, "attacks": attacks}


@pytest.fixture(scope="module")
def attacked_rows():
    """Edge-level rows whose columns all differ: the in-unit attack (link stealing, cosine the strongest on both
    seeds), its TPR, a stronger node-membership attack and a stronger model-free reference; edgerand attacked at
    epsilon 1 only; node-level rows not attacked."""
    recs = []
    for e in (1.0, 4.0):
        for s in (0, 1):
            a = {"link-stealing": {"cosine": {"auc": 0.70 + 0.03 * s + 0.02 * e, "tpr_at_1pct_fpr": 0.11 + 0.01 * s},
                                   "euclidean": {"auc": 0.65 + 0.01 * s, "tpr_at_1pct_fpr": 0.05},
                                   "ref-features-cosine": {"auc": 0.95, "tpr_at_1pct_fpr": 0.4}},
                 "threshold": {"loss": {"auc": 0.88 - 0.01 * e + 0.02 * s, "tpr_at_1pct_fpr": 0.3}}}
            recs.append(attacked(rec("gap-edge", e, s, 0.60 + 0.01 * e), a))
            er = rec("edgerand", e, s, 0.62)
            recs.append(attacked(er, {"linkteller": {"influence": {"auc": 0.61 + 0.05 * s, "tpr_at_1pct_fpr": 0.07}},
                                      "lira": {"offline": {"auc": 0.93, "tpr_at_1pct_fpr": 0.2}}})
                        if e == 1.0 else er)
            recs.append(rec("gap-node", e * 2, s, 0.5, unit="node"))
    for s in (0, 1):
        recs.append(attacked(rec("sage", math.inf, s, 0.85, unit="none"),
                             {"link-stealing": {"cosine": {"auc": 0.99, "tpr_at_1pct_fpr": 0.5}},
                              "threshold": {"loss": {"auc": 0.999, "tpr_at_1pct_fpr": 0.1}}}))
        recs.append(attacked(rec("gcn", math.inf, s, 0.80, unit="none", split="public"),
                             {"link-stealing": {"cosine": {"auc": 0.97, "tpr_at_1pct_fpr": 0.5}}}))
    return collect_records(recs)


def _compact_attack_cells(page: Page, section: str) -> dict[str, list[tuple[float, str]]]:
    """method -> [(spent eps, attack AUC cell)] of a section's compact table, rows with an attack number only."""
    (t,) = [t for t in page.tables if t["under"] == section and not t["in_details"]]
    col = next(h for h in t["header"] if h.startswith("attack AUC"))
    out: dict[str, list[tuple[float, str]]] = {}
    for cells in t["rows"]:
        c = dict(zip(t["header"], cells))
        if c[col] != "-":
            out.setdefault(c["method"] + (f" ({c['split']})" if "split" in c else ""), []).append(
                (float(c["spent eps"]), c[col]))
    return {m: sorted(v) for m, v in out.items()}


def _drawn_methods(drawn: dict[str, list[tuple[float, float]]]) -> dict[str, list[tuple[float, float]]]:
    """The per-method series of :func:`plotted_leakage`, keyed as the compact table names methods (the plot's unit
    label suffix dropped); the horizontal lines (references, chance) left out."""
    return {k.split(" [")[0]: v for k, v in drawn.items()
            if not k.endswith("non-private)") and not k.startswith("chance")}


def test_the_leakage_panel_draws_the_compact_tables_attack_cells(attacked_rows):
    """The lower panel's points are the compact table's attack AUC cells (not the TPR, the node-membership column,
    the model-free reference or the strongest attack on any unit: each differs here), at each row's spent epsilon;
    the references' lines are the details table's in-unit attack on the plotted split; chance is marked."""
    import matplotlib.pyplot as plt

    from bench.leaderboard.plots import leakage_series, plot_section, plotted_leakage
    from bench.leaderboard.tables import sections

    cells = _compact_attack_cells(Page(to_html(attacked_rows, "T", {})), "cora-edge-level")
    assert cells == {"gap-edge": [(1.0, "0.735"), (4.0, "0.795")], "edgerand": [(1.0, "0.635")]}
    fig = plot_section(attacked_rows, "cora", "edge")
    try:
        assert len(fig.axes) == 2
        drawn = plotted_leakage(fig)
        methods = _drawn_methods(drawn)
        assert {m: [f"{y:.3f}" for _, y in pts] for m, pts in methods.items()} == \
            {m: [auc for _, auc in v] for m, v in cells.items()}
        # at each row's spent epsilon, dodged by the accuracy panel's constant factor
        series = leakage_series(sections(attacked_rows)[("cora", "edge")])
        for (label, _), pts in series.items():
            xy = methods[label]
            assert [y for _, y in xy] == [p.auc for p in pts]
            assert [p.spent for p in pts] == [s for s, _ in cells[label]]
            assert len({round(x / p.spent, 12) for (x, _), p in zip(xy, pts)}) == 1
            assert all(p.low <= p.auc <= p.high for p in pts)
        assert next(p for p in series[("gap-edge", "random-75-10-15")] if p.spent == 1.0).low == pytest.approx(0.72)
        # the random split's reference (its link-stealing AUC, not its node-membership one), never the public one's
        assert drawn["sage (non-private)"][0][1] == pytest.approx(0.99)
        assert not any(k.startswith("gcn") for k in drawn)
        assert drawn["chance (AUC 0.5)"][0][1] == 0.5
    finally:
        plt.close(fig)
    fig = plot_section(attacked_rows, "cora", "node")  # no attack numbers: the accuracy panel alone
    try:
        assert len(fig.axes) == 1 and plotted_leakage(fig) == {}
    finally:
        plt.close(fig)


def test_the_committed_pages_leakage_panels_draw_its_compact_attack_cells():
    """Cora's plots, built from the committed records as the page builds them, draw in their leakage panels exactly
    the attack AUC cells of the committed page's compact tables."""
    import matplotlib.pyplot as plt

    from bench import records
    from bench.leaderboard.plots import plot_section, plotted_leakage
    from bench.leaderboard.rows import config_records

    recs, _, _ = config_records(str(REPO / "configs" / "leaderboard.yaml"), records.load(SITE / "runs" / "cora.jsonl"))
    rows = collect_records(recs + records.attacks_beside(SITE / "runs"))
    page = Page((SITE / "index.html").read_text())
    checked = 0
    for unit in ("edge", "node", "feature"):
        cells = _compact_attack_cells(page, f"cora-{unit}-level")
        fig = plot_section(rows, "cora", unit)
        try:
            drawn = _drawn_methods(plotted_leakage(fig))
        finally:
            plt.close(fig)
        assert {m: [f"{y:.3f}" for _, y in pts] for m, pts in drawn.items()} == \
            {m: [auc for _, auc in v] for m, v in cells.items()}
        checked += sum(map(len, cells.values()))
    assert checked >= 20


# --------------------------------------------------------------------------------------
# The papers' own points on the plots
# --------------------------------------------------------------------------------------


FB = "facebook-wisconsin87"


@pytest.fixture(scope="module")
def paper_rows():
    """Edge-level rows on the Facebook graph: gap-edge at epsilon 1 (68, 69, 70) is shown within 2 points of 69.0,
    progap-edge (60, 61, 62) shown beyond them of 77.2, gap-edge at epsilon 4 (75, 76, 77) undecided against 79.0;
    edgerand has one seed; progap-edge at epsilon 4 is not run; a node-level dp-mlp row (50, 50, 50)."""
    recs = []
    for s, (g, p) in enumerate([(0.68, 0.60), (0.69, 0.61), (0.70, 0.62)]):
        recs += [rec("gap-edge", 1.0, s, g, FB), rec("progap-edge", 1.0, s, p, FB),
                 rec("gap-edge", 4.0, s, 0.75 + 0.01 * s, FB), rec("sage", math.inf, s, 0.85, FB, "none"),
                 rec("dp-mlp", 8.0, s, 0.5, FB, "node")]
    recs.append(rec("edgerand", 1.0, 0, 0.51, FB))
    return collect_records(recs)


PAPERS = {"reasons": {}, "papers": [
    {"paper": "ProGAP (long title)", "short": "ProGAP 2024", "dataset": FB, "split": "random-75-10-15",
     "cells": [{"method": "sage", "paper": 84.7},                              # non-private: no point
               {"method": "gap-edge", "epsilon": "inf", "paper": 80.5},        # no noise: no point
               {"method": "gap-edge", "epsilon": 1, "paper": 69.0},            # within 2 points: reproduced
               {"method": "progap-edge", "epsilon": 1, "paper": 77.2},         # beyond 2 points: not reproduced
               {"method": "edgerand", "epsilon": 1, "paper": 50.2},            # one seed: undecided
               {"method": "progap-edge", "epsilon": 4, "paper": 80.0},         # not run yet: undecided
               {"method": "gap-edge", "epsilon": 4, "paper": 79.0, "paper_epsilon": 4.5},  # at the paper's eps
               {"method": "dp-mlp", "epsilon": 8, "paper": 50.2}]},            # node level: not on this plot
    {"paper": "Other", "dataset": "cora", "split": "random-75-10-15",
     "cells": [{"method": "gap-edge", "epsilon": 1, "paper": 60.0}]}]}          # another dataset


def test_the_plot_draws_each_private_paper_number_at_its_epsilon_filled_where_ours_reproduces_it(paper_rows):
    """The accuracy panel draws a star per paper number of the section's dataset, unit and splits at the paper's
    finite epsilon (its own where it reports one) and accuracy, offset with its method's points; filled where the
    paper's accuracy lies inside the row's 95% CI, hollow where not, half-filled where no CI decides it; the
    non-private and noise-free numbers, other units' and other datasets' are not drawn; the legend says what the
    stars mean."""
    import matplotlib.pyplot as plt

    from bench.leaderboard.plots import PAPER_KEY, plot_section, plotted_papers

    fig = plot_section(paper_rows, FB, "edge", PAPERS)
    try:
        drawn = plotted_papers(fig)
        ax = fig.axes[0]
        labels = ax.get_legend().get_texts()
        lo, hi = ax.get_xlim()
        series = {c.get_label().split(" [")[0]: c.lines[0].get_xdata() for c in ax.containers}
    finally:
        plt.close(fig)
    got = {(lb.split(": ")[1].split()[0], round(y * 100, 1)): (x, fill, lb) for lb, x, y, fill in drawn}
    assert set(got) == {("gap-edge", 69.0), ("progap-edge", 77.2), ("edgerand", 50.2), ("progap-edge", 80.0),
                        ("gap-edge", 79.0)}
    fills = {k: f for k, (_, f, _) in got.items()}
    assert fills == {("gap-edge", 69.0): "full", ("progap-edge", 77.2): "none", ("edgerand", 50.2): "bottom",
                     ("progap-edge", 80.0): "bottom", ("gap-edge", 79.0): "bottom"}
    for (method, acc), (x, _, lb) in got.items():
        eps = {80.0: 4.0, 79.0: 4.5}.get(acc, 1.0)
        assert abs(math.log(x / eps)) < 0.05 and lo < x < hi, (method, x)
        assert lb.startswith("ProGAP 2024: ") and f"{acc:.1f}%" in lb
    # offset as the method's own points: the star at epsilon 1 sits on the method's errorbar at epsilon 1
    assert got[("gap-edge", 69.0)][0] == pytest.approx(series["gap-edge"][0])
    assert got[("progap-edge", 77.2)][0] == pytest.approx(series["progap-edge"][0])
    verdicts = {k: lb.rsplit(", ", 1)[1] for k, (_, _, lb) in got.items()}
    assert verdicts == {("gap-edge", 69.0): "reproduced", ("progap-edge", 77.2): "not reproduced",
                        ("edgerand", 50.2): "one seed: undecided", ("progap-edge", 80.0): "not run yet",
                        ("gap-edge", 79.0): "inconclusive (more seeds decide it)"}
    assert PAPER_KEY in [t.get_text() for t in labels]
    # the node-level section draws dp-mlp's number, and no edge method's
    fig = plot_section(paper_rows, FB, "node", PAPERS)
    try:
        assert [(lb.split(": ")[1].split()[0], x, fill) for lb, x, _, fill in plotted_papers(fig)] == \
            [("dp-mlp", 8.0, "full")]  # 50.0 on every seed: within 2 points of 50.2 (no CI held it)
    finally:
        plt.close(fig)


def test_a_plot_without_paper_numbers_draws_no_star_and_no_key(paper_rows):
    import matplotlib.pyplot as plt

    from bench.leaderboard.plots import PAPER_KEY, plot_section, plotted_papers

    fig = plot_section(paper_rows, FB, "edge", {"reasons": {}, "papers": []})
    try:
        assert plotted_papers(fig) == []
        assert PAPER_KEY not in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        plt.close(fig)


def test_reproduced_is_an_equivalence_test_within_two_points_and_the_plot_agrees(paper_rows):
    """The rule, and "Papers vs ours" and the plot deciding alike: the table's 'reproduced' column is the star's
    fill for every drawn cell."""
    import matplotlib.pyplot as plt

    from bench.leaderboard.plots import PAPER_FILL, plot_section, plotted_papers
    from bench.leaderboard.rows import Row
    from bench.site import difference_interval, papers_md, reproduces

    # 5 seeds, mean 70: the 90% t-interval of the mean is 70 +- 0.75 (t 2.13, sd 0.79)
    row = Row(FB, "edge", "gap-edge", "random-75-10-15", 1.0, accs=[0.69, 0.695, 0.70, 0.705, 0.71])
    (lo, hi) = difference_interval(row, 70.0)
    assert lo == pytest.approx(-0.7538, abs=1e-3) and hi == pytest.approx(0.7538, abs=1e-3)
    assert reproduces(row, 70.0) and reproduces(row, 71.2) and reproduces(row, 68.8)  # within 2 points, shown
    assert reproduces(row, 71.5) is None and reproduces(row, 68.5) is None  # the interval straddles a margin
    assert reproduces(row, 73.0) is False and reproduces(row, 67.0) is False  # shown beyond the margin
    tight = Row(FB, "edge", "x", "s", 1.0, accs=[0.708] * 5)  # precise and 0.8 points off: reproduced
    assert reproduces(tight, 70.0)
    assert reproduces(Row(FB, "edge", "x", "s", 1.0, accs=[0.69]), 69.0) is None  # one seed
    assert reproduces(None, 69.0) is None

    md = papers_md(paper_rows, PAPERS)
    lines = [ln.split(" | ") for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| method")]
    header = next(ln for ln in md.splitlines() if ln.startswith("| method")).strip("| ").split(" | ")
    col = header.index("reproduced")
    table = {(c[0].strip("| "), c[1], c[2].split()[0]): c[col] for c in lines if c[0] != "| ---"}
    assert table[("gap-edge", "1", "69.0")] == "yes" and table[("progap-edge", "1", "77.2")] == "no"
    assert table[("gap-edge", "4", "79.0")] == "inconclusive"
    assert table[("edgerand", "1", "50.2")] == "-" and table[("progap-edge", "4", "80.0")] == "-"
    assert "Reproduced: two one-sided t-tests over our seeds" in md
    fill_of = {v: k for k, v in PAPER_FILL.items()}
    fig = plot_section(paper_rows, FB, "edge", PAPERS)
    try:
        drawn = plotted_papers(fig)
    finally:
        plt.close(fig)
    as_table = {True: "yes", False: "no", None: "-"}
    for lb, _, y, fill in drawn:
        method = lb.split(": ")[1].split()[0]
        key = next(k for k in table if k[0] == method and k[2] == f"{100 * y:.1f}")
        want = {"-", "inconclusive"} if fill_of[fill] is None else {as_table[fill_of[fill]]}
        assert table[key] in want, (key, fill)


def test_every_private_paper_number_of_the_committed_records_is_on_exactly_one_plot():
    """Built from the committed records as the page builds them, the plots of the papers' datasets draw each
    private paper number of configs/papers.yaml once (of every method the records hold on its dataset), with the
    verdict "Papers vs ours" prints for it."""
    import matplotlib.pyplot as plt

    from bench import records
    from bench.leaderboard.plots import PAPER_FILL, _plot_keys, plot_section, plotted_papers
    from bench.leaderboard.rows import config_records
    from bench.site import load_papers, paper_cells

    papers = load_papers()
    datasets = sorted({sec["dataset"] for sec in papers["papers"]})
    recs = [r for ds in datasets for r in records.load(SITE / "runs" / f"{ds}.jsonl")]
    recs, _, _ = config_records(str(REPO / "configs" / "leaderboard.yaml"), recs)
    rows = collect_records(recs)
    # a method with no private record on the dataset yet (a dataset part-way through its regeneration) has no
    # section to draw its paper number on: "Papers vs ours" says "not run yet"
    held = {(r.dataset, r.method) for r in rows if r.unit != "none"}
    expected = sorted((c.dataset, c.method, round(c.accuracy, 1), PAPER_FILL[c.reproduced])
                      for sec in papers["papers"] for c in paper_cells(rows, sec)
                      if not c.setting_only and c.target is not None and math.isfinite(c.target)
                      and (c.dataset, c.method) in held)
    drawn = []
    for ds, unit in _plot_keys(rows):
        fig = plot_section(rows, ds, unit, papers)
        try:
            drawn += [(ds, lb.split(": ")[1].split()[0], round(100 * y, 1), fill)
                      for lb, _, y, fill in plotted_papers(fig)]
        finally:
            plt.close(fig)
    assert len(expected) >= 10 and sorted(drawn) == expected
