"""Input errors answer before the heavy imports: a mistyped method, dataset, split, seed or budget on ``bench run``,
``attack``, ``verify`` or ``audit`` gets its ``error:`` line without loading torch, and the same line the library's
run plan gives (:func:`bench.request.check_request` is the one rule both apply)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.request import check_request
from methods import builtin_method_names
from methods.base import available_methods
from methods.errors import BenchError

D = "csbm:nodes=60,classes=2"

# (command line, the error it must give)
CASES = [
    ("run -m nope -d cora", "unknown method 'nope'"),
    ("run -m gcn,gcn -d cora", "a method is listed twice"),
    ("run -m gcn -d nope", "unknown dataset 'nope'"),
    ("run -m gcn -d cora -s ogb", "split 'ogb' exists only for ogbn-* datasets"),
    ("run -m gcn -d cora -s nope", "unknown split 'nope'"),
    ("run -m gcn -d csbm:nodes=abc", "csbm.nodes must be an integer"),
    ("run -m gcn -d cora --seeds 1,1", "seeds must be distinct non-negative integers"),
    ("run -m dp-mlp -d cora -e 0", "epsilon must be > 0"),
    ("attack -m nope -d cora -a threshold", "unknown method 'nope'"),
    ("verify -m gcn -d cora --delta 1", "delta must be in [0, 1)"),
    ("audit -m nope -d cora -e 1", "unknown method 'nope'"),
    ("list nope", "unknown method 'nope'"),
]

PROBE = """
import json, sys
from bench.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "torch": "torch" in sys.modules}))
"""


def test_static_method_names_are_the_registry():
    """The names the CLI checks before importing anything are exactly those the built-in families register."""
    from bench.plugins import loaded_plugins

    registered = set(available_methods())
    if not loaded_plugins():
        assert builtin_method_names() == registered
    assert builtin_method_names() <= registered


def test_static_attack_names_are_the_registry():
    """``bench list NAME`` checks the attack names the same way, read from ``@register_attack`` declarations."""
    from attacks.base import available_attacks
    from bench.commands.list import builtin_attack_names

    assert builtin_attack_names() == set(available_attacks())


@pytest.mark.parametrize("line,message", CASES, ids=[c[0] for c in CASES])
def test_input_error_before_torch(line, message):
    proc = subprocess.run([sys.executable, "-c", PROBE, *line.split()], capture_output=True, text=True, timeout=120)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert result["rc"] == 2 and len(errors) == 1 and message in errors[0], proc.stderr
    assert not result["torch"], f"{line!r} imported torch before rejecting its input"


@pytest.mark.parametrize("line,message", [c for c in CASES if c[0].startswith("run ")],
                         ids=[c[0] for c in CASES if c[0].startswith("run ")])
def test_library_gives_the_same_error(line, message):
    """The library (building the request, then planning it, as every entry point does) rejects the same request with
    the same message."""
    from bench.plan import RunSpec, plan_run

    argv = line.split()[1:]
    opts = dict(zip(argv[::2], argv[1::2]))
    seeds = [int(s) for s in opts.get("--seeds", "0").split(",")]
    with pytest.raises(BenchError, match=message.replace("*", r"\*").replace("[", r"\[").replace("(", r"\(")):
        plan_run(RunSpec(methods=tuple(opts["-m"].split(",")), dataset=opts["-d"], split=opts.get("-s"), seeds=seeds,
                         epsilon=float(opts["-e"]) if "-e" in opts else None, track=False, progress=False))


def test_plugin_names_are_left_to_the_registry():
    """With ``known=None`` (a plugin loaded) a name outside the built-ins passes this check; the registry decides."""
    name, split = check_request(["some-plugin-method"], "cora", None, [0], 1.0, 1e-5, known=None)
    assert name.name == "cora" and split == "public"
    with pytest.raises(BenchError, match="unknown method 'some-plugin-method'"):
        check_request(["some-plugin-method"], "cora", None, [0], 1.0, 1e-5, known=builtin_method_names())


def test_memory_lower_bounds():
    """The bound compared is the first layer's weights, exactly; a request under the machine's memory passes."""
    from bench.memory import check_fits, least_model_bytes

    assert least_model_bytes({"hidden": 16, "lr": 0.01}, 1433) == (4 * 1433 * 16, least_model_bytes(
        {"hidden": 16}, 1433)[1])
    assert least_model_bytes({"lr": 0.01}, 1433) == (0, "")
    check_fits("x", 10, 10, "")
    with pytest.raises(BenchError, match="x needs at least"):
        check_fits("x", 11, 10, "")


def test_a_sweep_config_naming_an_unknown_method_is_rejected_before_torch(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("experiment: x\ndatasets: [cora]\nmethods: [gcn, {name: nope, epsilons: [1]}]\n")
    proc = subprocess.run([sys.executable, "-c", PROBE, "sweep", str(cfg), "--dry-run"], capture_output=True,
                          text=True, timeout=120)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert result["rc"] == 2 and len(errors) == 1 and "unknown method 'nope'" in errors[0], proc.stderr
    assert not result["torch"]
    # the loader's own rule gives the same words
    from bench.sweep import load_config

    with pytest.raises(BenchError, match="unknown method 'nope'"):
        load_config(cfg)
