"""Check that constraints/lowest.txt pins every dependency of pyproject.toml at its lower bound, and nothing else.

Run by `tox -e lowest` before the suite, so that the floors stated in pyproject.toml are the versions tested.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
    floors: dict[str, str | None] = {}
    for req in requirements:
        m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*(;.*)?", req)
        name, spec = canonical(m.group(1)), m.group(2)
        lower = re.search(r">=\s*([^,\s]+)", spec)
        floors[name] = lower.group(1) if lower else None
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints" / "lowest.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonical(name)] = version.strip()
    errors = [f"{name}: no lower bound in pyproject.toml" for name, v in floors.items() if v is None]
    errors += [f"{name}>={v} in pyproject.toml, but lowest.txt pins {pins.get(name)}"
               for name, v in floors.items() if v is not None and pins.get(name) != v]
    errors += [f"{name}=={v} in lowest.txt is not a dependency" for name, v in pins.items() if name not in floors]
    for e in errors:
        print(f"check_lowest: {e}", file=sys.stderr)
    if not errors:
        print(f"check_lowest: {len(pins)} lower bounds of pyproject.toml pinned by constraints/lowest.txt")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
