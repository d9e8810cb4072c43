"""The README's two commands are what CI runs: read from the README itself, run by .ci/newcomer in a fresh clone."""

from __future__ import annotations

import configparser
import importlib.util

from tests.conftest import REPO


def _module():
    spec = importlib.util.spec_from_file_location("readme_commands", REPO / "scripts" / "readme_commands.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_readme_quickstart_has_the_demo_and_test_commands():
    found = _module().commands()
    assert set(found) >= {"demo", "tests"}
    for env, line in found.items():
        assert "python3 -m pip install tox" in line and f"tox -e {env}" in line
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    for env in ("demo", "tests"):
        assert tox.has_section(f"testenv:{env}"), f"the README runs `tox -e {env}`, which tox.ini lacks"
    # the demo finds its data on a fresh machine by itself: tox does not point it at a folder beside the checkout
    assert "../shared" not in tox.get("testenv:demo", "set_env", fallback="")


def test_ci_runs_the_commands_it_reads_from_the_readme():
    """No copy of the commands to drift: .ci/newcomer asks scripts/readme_commands.py, and .ci/run calls it."""
    newcomer = (REPO / ".ci" / "newcomer").read_text()
    assert "readme_commands.py\" demo" in newcomer and "readme_commands.py\" tests" in newcomer
    assert "tox -e" not in newcomer.replace("`tox -e", "")  # no hard-coded command line
    assert ".ci/newcomer" in (REPO / ".ci" / "run").read_text()


def test_the_extraction_follows_the_readme_not_a_fixed_text():
    mod = _module()
    text = "# x\n\n## Quickstart\n\nsome words\n\n```bash\n# a comment\npython3 -m tox -e demo   # note\n" \
           "python3 -m tox -e tests\n```\n\n```bash\npython3 -m tox -e other\n```\n"
    assert mod.commands(text) == {"demo": "python3 -m tox -e demo   # note", "tests": "python3 -m tox -e tests"}
    assert mod.commands(text.replace("-e demo", "-e demo2")) == {"demo2": "python3 -m tox -e demo2   # note",
                                                                 "tests": "python3 -m tox -e tests"}
