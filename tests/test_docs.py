"""The docs: README.md stays a newcomer's page, the site builds strictly, and every example in it runs.

* every ```bash and ```python block of README.md and docs/*.md runs (tests/doc_examples.py; Sybil parses the
  Markdown), unless a ``<!-- skip: next "reason" -->`` right above it says why it cannot;
* ``mkdocs build --strict`` passes (skipped without the docs extra: ``pip install -e ".[docs]"``);
* every nav entry exists and every page is in the nav; the README is at most 250 lines, its links resolve, it links
  every page of the nav, and its results excerpt says what the published leaderboard says.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
import yaml

from tests import doc_examples
from tests.doc_examples import REPO

pytestmark = pytest.mark.docs

README = REPO / "README.md"
MKDOCS = REPO / "mkdocs.yml"
HAVE_SYBIL = importlib.util.find_spec("sybil") is not None
NO_SYBIL = 'Sybil is not installed (pip install -e ".[docs]")'


def _examples():
    if not HAVE_SYBIL:
        return [pytest.param(None, id="sybil-missing", marks=pytest.mark.skip(reason=NO_SYBIL))]
    examples, _ = doc_examples.collect()
    return [pytest.param(e, id=e.name) for e in examples]


@pytest.mark.parametrize("example", _examples())
def test_example(example, tmp_path):
    if example.skip:
        pytest.skip(f"not run ({example.name}): {example.skip}")
    done = doc_examples.run(example, tmp_path)
    if done.returncode != 0:
        out = (done.stdout + done.stderr)[-4000:]
        pytest.fail(f"the {example.language} example at {example.name} exited {done.returncode}:\n{out}",
                    pytrace=False)


@pytest.mark.skipif(not HAVE_SYBIL, reason=NO_SYBIL)
def test_examples_follow_the_conventions():
    examples, problems = doc_examples.collect()
    assert not problems, "\n".join(problems)
    ran = [e for e in examples if not e.skip]
    assert len(ran) >= 2 * (len(examples) - len(ran)), "most examples must run: keep skip directives rare"


@pytest.mark.skipif(not HAVE_SYBIL, reason=NO_SYBIL)
def test_the_conventions_catch_what_they_should(tmp_path, monkeypatch):
    monkeypatch.setattr(doc_examples, "REPO", tmp_path)
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\nbench list\n```\n\n"
        "```\nno language\n```\n\n"
        "<!-- skip: next -->\n```bash\nbench list\n```\n\n"
        '<!-- skip: next "a reason" -->\n\nText in between.\n\n```python\nprint(1)\n```\n\n'
        "```text\n<!-- skip: next \"shown, not a directive\" -->\n```\n\n"
        '<!-- skip: next "a good one" -->\n```bash\nexit 1\n```\n\n'
        "```python\nprint(2)\n```\n"
    )
    examples, problems = doc_examples.parse(page)
    assert [(e.language, e.skip) for e in examples] == [
        ("bash", "(malformed skip directive)"), ("python", None), ("bash", "a good one"), ("python", None)]
    assert examples[-1].source == "print(2)\n" and examples[-1].line == 31
    text = "\n".join(problems)
    assert "page.md:1: fence language 'sh'" in text and "page.md:5: fence language '(none)'" in text
    assert 'page.md:9: write <!-- skip: next "why it cannot run" -->' in text
    assert "page.md:14: a skip directive must sit right above the fence it skips" in text
    assert len(problems) == 4


def test_a_failing_example_fails_and_tracebacks_point_into_the_page(tmp_path):
    page = REPO / "docs" / "example.md"  # never written: only its name and line numbers are used
    bad = doc_examples.DocExample(page, 10, "bash", "true\nfalse\necho never\n", None)
    assert doc_examples.run(bad, tmp_path).returncode == 1
    piped = doc_examples.DocExample(page, 10, "bash", "false | cat\n", None)
    assert doc_examples.run(piped, tmp_path).returncode == 1
    py = doc_examples.DocExample(page, 10, "python", "x = 1\nraise ValueError(x)\n", None)
    done = doc_examples.run(py, tmp_path)
    assert done.returncode == 1 and 'File "docs/example.md", line 12' in done.stderr
    env = doc_examples.DocExample(page, 1, "bash", 'test -n "$MLFLOW_TRACKING_URI" && test "$BENCH_OFFLINE" = 1 '
                                  '&& test -z "${BENCH_DATA_ROOT:-}" && command -v bench\n', None)
    assert doc_examples.run(env, tmp_path).returncode == 0


def test_snippets_include_the_repository_file():
    src = doc_examples.expand_snippets('--8<-- "tests/plugins/example_plugin.py"\n')
    assert src.startswith('"""An example user plugin') and '@register("centroid")' in src


# --------------------------------------------------------------------------------------------------------------
# the site


def _nav_pages(nav) -> list[str]:
    out: list[str] = []
    for item in nav:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


def _config() -> dict:
    return yaml.safe_load(MKDOCS.read_text())


def test_every_nav_entry_exists_and_every_page_is_in_the_nav():
    config = _config()
    docs = REPO / config.get("docs_dir", "docs")
    nav = _nav_pages(config["nav"])
    missing = [p for p in nav if not (docs / p).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist: {missing}"
    excluded = {line.strip().lstrip("/") for line in config.get("exclude_docs", "").splitlines()}
    pages = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")} - excluded
    assert pages - set(nav) == set(), "pages missing from mkdocs.yml's nav"
    assert {p.relative_to(docs).as_posix() for p in doc_examples.doc_files()[1:]} <= set(nav)


@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("mkdocs", "material", "mkdocstrings_handlers")),
                    reason='mkdocs-material and mkdocstrings are not installed (pip install -e ".[docs]")')
def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    env = doc_examples.example_env(tmp_path)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(MKDOCS),
                           "--site-dir", str(site)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    api = (site / "api" / "index.html").read_text()
    assert 'id="bench.api.run"' in api and 'id="bench.api.verify"' in api  # mkdocstrings rendered bench.api
    assert (site / "leaderboard" / "index.html").is_file() and (site / "verify" / "false_alarms" / "index.html").is_file()
    plugin = (site / "plugins" / "index.html").read_text()
    assert "CentroidFitted" in plugin  # the snippet included the real example plugin


# --------------------------------------------------------------------------------------------------------------
# the README


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_is_a_newcomers_page():
    lines = _readme().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move reference material to docs/"
    text = _readme()
    assert "../shared" not in text, "a newcomer's machine has no ../shared"
    assert "my_method" not in text


def _links(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"\]\(([^)\s]+)\)", text)]


def test_the_readme_links_resolve_and_cover_the_docs():
    links = [link for link in _links(_readme()) if not re.match(r"[a-z]+://", link)]
    broken = [link for link in links if not link.startswith("#") and not (REPO / link.split("#")[0]).exists()]
    assert not broken, f"README.md links to missing files: {broken}"
    linked = {link.split("#")[0] for link in links}
    docs = REPO / _config().get("docs_dir", "docs")
    pages = {f"{docs.relative_to(REPO).as_posix()}/{p}" for p in _nav_pages(_config()["nav"]) if p.endswith(".md")}
    pages = {p for p in pages if not p.startswith(doc_examples.GENERATED)}
    assert pages - linked == set(), "README.md's documentation list misses pages of the nav"


def _table(text: str, heading: str) -> list[dict[str, str]]:
    """The first Markdown table under ``heading``, as rows keyed by the header."""
    part = text.split(heading, 1)[1]
    lines: list[str] = []
    for line in part.splitlines()[1:]:
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            break
    assert lines, f"no table under {heading!r}"
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]


def test_the_readme_results_excerpt_matches_the_published_leaderboard():
    published = (REPO / "docs" / "leaderboard" / "README.md").read_text(encoding="utf-8")
    excerpt = _table(_readme(), "## Results")
    assert len(excerpt) >= 5
    for row in excerpt:
        level = "edge" if row["unit"] == "none" else row["unit"].split()[0]
        section = published.split(f"## cora: {level}-level", 1)[1]  # every column: the details under the main table
        candidates = [r for r in _table(section, "<summary>Details")
                      if r["method"] == row["method"] and r["split"] == "random-75-10-15"
                      and r["target eps"] == row["target eps"]]
        assert len(candidates) == 1, f"no published cora row for {row['method']} at eps {row['target eps']}"
        pub = candidates[0]
        for key in ("unit", "spent eps (max)", "test acc", "95% CI", "verification (eps_lb)"):
            assert row[key] == pub[key], (row["method"], key, row[key], pub[key])
        # "0.844 (edge)": the strongest attack on what the row's unit protects, as the page's column on that unit;
        # "0.493 (feature row, weights only)": the feature game that feature-level DP bounds
        value, infers = row["strongest attack on its unit (AUC)"].split(" (", 1)
        infers = infers.split(":")[0].rstrip(")")
        unit = ("feature row (weights only)" if infers.startswith("feature row") else f"{infers} membership")
        column = f"strongest attack on {unit} (AUC)"
        column = column if column in pub else f"{unit} attack (AUC)"
        assert pub[column].startswith(value + " "), (row["method"], column, value, pub[column])
        assert ("outside the" in pub[column]) == ("outside the claim" in row["strongest attack on its unit (AUC)"])
        # feature rows: the released-prediction game beside it, which feature-level DP does not bound
        released = row["released predictions (AUC)"]
        if level == "feature":
            assert pub["attack on feature row (released predictions) (AUC)"].startswith(released.split(" ")[0] + " ")
        else:
            assert released == "-", row["method"]
        # "1.21 / 2.51 of 7.996": both white-box bounds (assumption-free / f-DP) and the claim of the row's run
        wb = pub["white-box eps_lb: assumption-free / f-DP, of the run's claim"]
        assert row["white-box eps_lb: assumption-free / f-DP"] == ("-" if wb == "-" else wb.split(" (")[0]), (
            row["method"], wb)
