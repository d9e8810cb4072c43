"""The page's opening: which releases its records come from, where to download them, and a summary across
datasets of which private method has the best mean test accuracy at each privacy unit and target epsilon.

A contest is one (dataset, split) section's private rows at one finite target epsilon; its winner is the row with
the highest mean test accuracy over seeds (every row tied at it wins), as the tables' best mark. Rows run under one of
the papers' node-level relations (:func:`bench.leaderboard.conventions.relation_labels`) do not compete: their
epsilon is not node-level DP for the input graph, so they are not like for like with the rows that are. A win is a
higher mean, not a significant difference: the tables' intervals say how close each contest was."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.leaderboard.compact import private_rows
from bench.leaderboard.rows import Row
from bench.leaderboard.tables import _num, sections

HEADING = "At a glance"
DOWNLOADS = "Download the records (JSON lines, checked by `bench leaderboard --check`):"
HEADER = ["unit", "target eps", "contests", "best mean test accuracy: method (contests won)"]


@dataclass(frozen=True)
class Opening:
    """What the page opens with: ``releases`` as (name, short commit, records), ``downloads`` as
    (group, [(name, path relative to the page)]) (:func:`downloads`), and the summary table's ``body`` under
    :data:`HEADER`."""

    releases: tuple[tuple[str, str, int], ...]
    downloads: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    body: tuple[tuple[str, ...], ...]
    excluded: tuple[str, ...]  # the papers' relation labels left out of the contests


def wins(rows: list[Row]) -> tuple[list[tuple[str, ...]], list[str]]:
    """The summary table's rows (units in the page's order, target epsilons ascending) and the relation labels that
    were left out of the contests (sorted)."""
    from bench.leaderboard.conventions import relation_labels

    _, papers = relation_labels()
    excluded: set[str] = set()
    contests: dict[tuple[str, float], dict[tuple[str, str], list[Row]]] = {}
    units: list[str] = []
    for (ds, unit), rs in sections(rows).items():
        if unit not in units:
            units.append(unit)
        for r in private_rows(rs):
            if not r.accs or math.isnan(r.acc_mean) or math.isinf(r.target_epsilon):
                continue  # an infinite target is no privacy claim: nothing to compare at a budget
            if r.unit_label in papers:
                excluded.add(r.unit_label)
                continue
            contests.setdefault((unit, r.target_epsilon), {}).setdefault((ds, r.split), []).append(r)
    body = []
    for unit, eps in sorted(contests, key=lambda k: (units.index(k[0]), k[1])):
        won: Counter[str] = Counter()
        for rs in contests[(unit, eps)].values():
            top = max(r.acc_mean for r in rs)
            won.update({r.label for r in rs if r.acc_mean == top})
        text = ", ".join(f"{m} ({n})" for m, n in sorted(won.items(), key=lambda kv: (-kv[1], kv[0])))
        body.append((unit, _num(eps, "g"), str(len(contests[(unit, eps)])), text))
    return body, sorted(excluded)


def releases(records: list[dict[str, Any]], named: dict[str, str]) -> list[tuple[str, str, int]]:
    """(release, short commit, records) for every commit the records name: the releases newest first (``named``
    lists them oldest first, as ``releases.json`` does), then each commit no release names."""
    count = Counter(str(r.get("git_commit") or "unknown") for r in records)
    by_commit = {c: tag for tag, c in named.items()}
    out = []
    for tag, c in reversed(list(named.items())):  # the newest release first
        if count.get(c):
            out.append((tag, c[:7], count[c]))
    out += [("not a release", c[:7] or c, n) for c, n in sorted(count.items()) if c not in by_commit]
    return out


def downloads(export: str | Path | None, site: str | Path,
              attacks: str | Path | None = None) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """The export files beside the page as (group, [(name, path relative to ``site``)]): the runs (one file per
    dataset), the attacks on refits (one per attack game) and their manifests; a folder outside the site, or a
    single-file export, gives none."""
    site = Path(site).resolve()
    out: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    manifests: list[tuple[str, str]] = []
    for group, source in (("runs", export), ("attacks", attacks)):
        if source is None or not Path(source).is_dir():
            continue
        folder = Path(source).resolve()
        try:
            rel = folder.relative_to(site)
        except ValueError:
            continue
        files = tuple((f.stem, (rel / f.name).as_posix()) for f in sorted(folder.glob("*.jsonl")))
        if files:
            out.append((group, files))
        if (folder / "manifest.json").is_file():
            manifests.append((group, (rel / "manifest.json").as_posix()))
    return out + ([("manifests", tuple(manifests))] if manifests else [])


def opening(rows: list[Row], records: list[dict[str, Any]], export: str | Path | None, site: str | Path,
            attacks: str | Path | None = None, named: dict[str, str] | None = None) -> Opening:
    """The page's :class:`Opening` for ``rows`` built from ``records`` (``named``: release -> commit, default the
    repository's registered releases)."""
    if named is None:
        from bench.version import registered_releases

        named = registered_releases()
    body, excluded = wins(rows)
    return Opening(tuple(releases(records, named)), tuple(downloads(export, site, attacks)), tuple(body),
                   tuple(excluded))


def banner_text(o: Opening) -> str:
    parts = [f"{tag} ({c}): {n:,} records" if tag != "not a release" else f"commit {c}, not a release: {n:,} records"
             for tag, c, n in o.releases]
    return ("Every record names the commit that ran it: " + "; ".join(parts) + "."
            + " Benchmark runs draw reproducible noise (see Conventions).") if parts else ""


def note_text(o: Opening) -> str:
    text = ("A contest is one dataset and split at one target epsilon; its winner has the highest mean test accuracy "
            "over seeds among the section's private rows at a finite target (the tables' best mark; rows tied at it "
            "each win): a higher mean, not a significant difference.")
    if o.excluded:
        text += (" Rows under the papers' node-level relations (" + ", ".join(o.excluded) + ") do not compete: "
                 "their epsilon is not node-level DP for the input graph.")
    return text


def head_markdown(o: Opening) -> list[str]:
    """The lines under the page's title: the releases and the downloads (empty when there are none)."""
    lines: list[str] = []
    banner = banner_text(o)
    if banner:
        lines += [f"> {banner}", ""]
    if o.downloads:
        lines += [DOWNLOADS + " " + " · ".join(f"{group}: " + ", ".join(f"[{name}]({path})" for name, path in links)
                                               for group, links in o.downloads), ""]
    return lines


def glance_markdown(o: Opening) -> list[str]:
    """The summary section (empty without a contest)."""
    if not o.body:
        return []
    return ([f"## {HEADING}", "", note_text(o), "", "| " + " | ".join(HEADER) + " |",
             "|" + "|".join(" --- " for _ in HEADER) + "|"] + ["| " + " | ".join(row) + " |" for row in o.body])


def head_html(o: Opening) -> str:
    import html

    esc = html.escape
    parts = []
    banner = banner_text(o)
    if banner:
        parts.append(f"<p class='banner'>{esc(banner)}</p>")
    if o.downloads:
        parts.append(f"<p class='note'>{esc(DOWNLOADS)} " + " · ".join(
            f"{esc(group)}: " + ", ".join(f"<a href='{esc(path)}'>{esc(name)}</a>" for name, path in links)
            for group, links in o.downloads) + "</p>")
    return "".join(parts)


def glance_html(o: Opening, heading_id: str) -> str:
    """The summary section as HTML (``heading_id``: its heading's anchor; empty without a contest)."""
    import html

    esc = html.escape
    if not o.body:
        return ""
    return (f"<h2 id='{heading_id}'>{esc(HEADING)}</h2><p class='note'>{esc(note_text(o))}</p>"
            "<table class='sortable'><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in HEADER)
            + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in o.body)
            + "</tbody></table>")
