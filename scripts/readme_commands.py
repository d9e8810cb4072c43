"""The README's quickstart commands, read from the README itself, so CI runs exactly what a newcomer is told to.

    python3 scripts/readme_commands.py demo     # prints the demo command line
    python3 scripts/readme_commands.py tests    # prints the test command line

The commands are the lines of the first ```bash block under the README's "## Quickstart" heading that run
``tox -e demo`` and ``tox -e tests``. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
TOX_ENV = re.compile(r"\btox\b.*\s-e\s+(\w+)")


def quickstart_block(text: str) -> list[str]:
    """The lines of the first ```bash block after the "## Quickstart" heading."""
    m = re.search(r"^## Quickstart\b.*?^```bash\n(.*?)^```", text, flags=re.M | re.S)
    if not m:
        raise SystemExit(f"error: {README.name} has no ```bash block under '## Quickstart'")
    return [line for line in m.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def commands(text: str | None = None) -> dict[str, str]:
    """``{"demo": line, "tests": line}``: each quickstart line keyed by the tox environment it runs."""
    out: dict[str, str] = {}
    for line in quickstart_block(README.read_text() if text is None else text):
        m = TOX_ENV.search(line.split(" #", 1)[0])
        if m:
            out.setdefault(m.group(1), line.strip())
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: readme_commands.py demo|tests", file=sys.stderr)
        return 2
    found = commands()
    if argv[0] not in found:
        print(f"error: the README's quickstart has no `tox -e {argv[0]}` command (found: {', '.join(found)})",
              file=sys.stderr)
        return 2
    print(found[argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
