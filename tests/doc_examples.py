"""The runnable examples of README.md and the docs/ pages, found by Sybil and run the way a reader would run them.

Sybil (``pip install -e ".[docs]"``) parses the Markdown: every ```` ```bash ```` and ```` ```python ```` fence is an
example, and ``<!-- skip: next "reason" -->`` right above a fence (Sybil's skip directive) marks it as not run, with
the reason. This module turns the parse into :class:`DocExample` records and runs one:

* bash: ``bash -e -o pipefail -c SOURCE`` from the repository root, so every command must succeed;
* python: a fresh interpreter from the repository root, the source compiled under the page's name and line numbers
  (a traceback points into the page);
* both with :func:`example_env`: a throw-away MLflow store, cache and ``TMPDIR``, ``BENCH_OFFLINE=1``, no other
  ``BENCH_*`` / ``MLFLOW_*`` setting, and this interpreter's ``bin`` (with ``bench``) first on ``PATH``.

A line ``--8<-- "path"`` (pymdownx.snippets, as mkdocs includes a file) is replaced by that repository file.

:func:`convention_problems` lists what the pages may not do: a fence without a language or with an alias that
would escape the run (``sh``, ``py``, ...), a skip directive without a reason or not directly above a fence.
No conftest: tests/test_docs.py imports this module.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: generated results beside the pages (bench leaderboard --site, scripts.verify_zoo): data, not examples
GENERATED = ("docs/leaderboard/", "docs/quick/", "docs/verify/")
#: fence languages that run, and those that are shown only
RUN = ("bash", "python")
SHOWN = ("text", "yaml", "toml", "json", "ini")
SNIPPET = re.compile(r'^[ \t]*--8<--[ \t]+"([^"]+)"[ \t]*$', re.M)
#: seconds one example may take (a generous bound: the whole set takes about a minute)
TIMEOUT_S = 600


def doc_files() -> list[Path]:
    """README.md and every page under docs/, the generated results left out."""
    pages = sorted(p for p in (REPO / "docs").rglob("*.md")
                   if not p.relative_to(REPO).as_posix().startswith(GENERATED))
    return [REPO / "README.md", *pages]


@dataclass(frozen=True)
class DocExample:
    path: Path
    line: int  # the opening fence's line, 1-based
    language: str
    source: str
    skip: str | None  # the skip directive's reason, None: it runs

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO).as_posix()}:{self.line}"


def _sybil_parsers():
    from sybil.parsers.markdown import CodeBlockParser, SkipParser

    return [CodeBlockParser(language, evaluator=lambda example: None) for language in RUN] + [SkipParser()]


def _fences(path: Path):
    """Every fenced block of the page, whatever its info string: ``(start, end, line, info)``."""
    from sybil import Document
    from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

    lexer = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.M), mapping={"info": "info"})
    document = Document(path.read_text(encoding="utf-8"), str(path))
    for region in lexer(document):
        yield region.start, region.end, document.text.count("\n", 0, region.start) + 1, region.lexemes["info"]


def parse(path: Path) -> tuple[list[DocExample], list[str]]:
    """The page's runnable examples, in order, and its convention problems."""
    from sybil import Document

    rel = path.relative_to(REPO).as_posix()
    try:
        document = Document.parse(str(path), *_sybil_parsers())
    except ValueError as e:  # Sybil refuses a malformed directive (e.g. `skip:` with no action)
        return [], [f"{rel}: {e}"]
    fences = list(_fences(path))
    text = document.text
    problems: list[str] = []
    examples: list[DocExample] = []
    pending = None  # (line, end, reason) of a skip directive waiting for its fence
    for example in document:
        region = example.region
        if isinstance(region.parsed, tuple):  # a skip directive: (action, reason)
            if any(start <= region.start < end for start, end, _, _ in fences):
                continue  # shown inside a fence, as on docs/development.md: not a directive
            if pending is not None:
                problems.append(f"{rel}:{pending[0]}: a skip directive with no fence right below it")
            action, reason = region.parsed
            try:
                why = ast.literal_eval(reason) if reason else None
            except (ValueError, SyntaxError):
                why = None
            if action != "next" or not isinstance(why, str) or not why.strip():
                problems.append(f'{rel}:{example.line}: write <!-- skip: next "why it cannot run" --> (got skip: '
                                f"{action} {reason or ''})")
                why = "(malformed skip directive)"
            pending = (example.line, region.end, why)
            continue
        language = next(lang for lang in RUN if region.lexemes.get("arguments") == lang)
        skip = None
        if pending is not None:
            # the directive's region ends before its closing `-->`: only that and blank lines may separate them
            if re.sub(r"^[ \t]*-+>", "", text[pending[1]:region.start]).strip():
                problems.append(f"{rel}:{pending[0]}: a skip directive must sit right above the fence it skips")
            else:
                skip = pending[2]
            pending = None
        examples.append(DocExample(path, example.line, language, str(region.parsed), skip))
    if pending is not None:
        problems.append(f"{rel}:{pending[0]}: a skip directive with no fence right below it")
    for _, _, line, info in fences:
        if info.strip() not in RUN + SHOWN:
            problems.append(f"{rel}:{line}: fence language {info.strip() or '(none)'!r}: use one of "
                            f"{', '.join(RUN)} (run) or {', '.join(SHOWN)} (shown only)")
    return examples, problems


def collect() -> tuple[list[DocExample], list[str]]:
    """Every page's examples and convention problems."""
    examples: list[DocExample] = []
    problems: list[str] = []
    for path in doc_files():
        found, wrong = parse(path)
        examples += found
        problems += wrong
    return examples, problems


def expand_snippets(source: str) -> str:
    """``--8<-- "path"`` lines replaced by the repository file they include (as pymdownx.snippets does)."""
    return SNIPPET.sub(lambda m: (REPO / m.group(1)).read_text(encoding="utf-8").rstrip("\n"), source)


def example_env(tmp: Path) -> dict[str, str]:
    """The environment an example runs in: isolated stores under ``tmp``, offline, this environment's ``bench``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "MLFLOW_"))}
    (tmp / "tmp").mkdir(parents=True, exist_ok=True)
    env.update({
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}",
        "BENCH_CACHE_DIR": str(tmp / "cache"),
        "BENCH_OFFLINE": "1",
        "TMPDIR": str(tmp / "tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_MKDOCS_2_WARNING": "1",
    })
    return env


_PYTHON = """\
import sys
page, line, file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
source = open(file, encoding="utf-8").read()
sys.argv = [page]
exec(compile("\\n" * line + source, page, "exec"), {"__name__": "__main__", "__file__": page})
"""


def run(example: DocExample, tmp: Path) -> subprocess.CompletedProcess:
    """Run one example as its page shows it; the finished process (its output captured)."""
    env = example_env(tmp)
    if shutil.which("bench", path=env["PATH"]) is None:
        raise RuntimeError(f"no `bench` command beside {sys.executable}: install the package (pip install -e .)")
    source = expand_snippets(example.source)
    if example.language == "bash":
        argv = ["bash", "-e", "-o", "pipefail", "-c", source]
    else:
        file = tmp / "example.py"
        file.write_text(source, encoding="utf-8")
        argv = [sys.executable, "-c", _PYTHON, example.path.relative_to(REPO).as_posix(), str(example.line),
                str(file)]
    return subprocess.run(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
