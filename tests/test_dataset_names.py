"""Dataset names resolve case-insensitively to one dataset with one default split, or are refused, the same way
at every entry point: the registry (:func:`bench.datasets.resolve_dataset`), ``bench.splits.default_split``, the
run's plan (``bench run/audit/verify/attack`` and :mod:`bench.api` all go through ``bench.plan.plan_run``)
and sweep configs. Registry-wide: a dataset added later is covered."""

from __future__ import annotations

import types

import pytest

from bench.datasets import SPECS, DatasetError, resolve_dataset
from bench.datasets.facebook import FB100_SCHOOLS
from bench.splits import default_split

#: every registered dataset, and a few Facebook100 schools (resolved by their own rule)
NAMES = [*SPECS, *(f"facebook-{s.lower()}" for s in FB100_SCHOOLS[:3])]


def spellings(name: str) -> list[str]:
    """Lower, upper, title and alternating case: what a user may type."""
    alt = "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(name))
    return list(dict.fromkeys([name.lower(), name.upper(), name.title(), alt, f" {name.capitalize()} "]))


@pytest.mark.parametrize("name", NAMES)
def test_every_spelling_is_the_same_dataset_with_the_same_default_split(name):
    ref = resolve_dataset(name)
    assert ref.name == name.lower() and ref.key == name.lower()
    for spelled in spellings(name):
        got = resolve_dataset(spelled)
        assert (got.name, got.key, got.spec.key) == (ref.name, ref.key, ref.spec.key), spelled
        assert default_split(spelled) == ref.default_split == ref.spec.default_split, spelled


def test_the_documented_defaults():
    assert [default_split(n) for n in ("Cora", "CITESEER", "PubMed", "OGBN-Arxiv", "Computers", "csbm")] == [
        "public", "public", "public", "ogb", "random-75-10-15", "random-75-10-15"]


def test_option_keys_are_case_insensitive_and_canonical():
    assert resolve_dataset("CSBM:Nodes=500,CLASSES=3").name == resolve_dataset("csbm:nodes=500,classes=3").name
    with pytest.raises(DatasetError, match="bad option"):
        resolve_dataset("csbm:nodez=5")


@pytest.mark.parametrize("bad", ["", "  ", "coraa", "Cora-x", "facebook-nowhere"])
def test_unknown_names_are_refused(bad):
    with pytest.raises(DatasetError):
        resolve_dataset(bad)


def test_a_name_matching_two_datasets_is_refused(monkeypatch):
    monkeypatch.setitem(SPECS, "Cora", SPECS["cora"])  # e.g. a plugin registering a second spelling
    with pytest.raises(DatasetError, match="ambiguous"):
        resolve_dataset("CORA")


def test_two_school_folders_differing_in_case_are_refused(tmp_path):
    for school in ("MySchool1", "myschool1"):
        (tmp_path / "facebook100" / school).mkdir(parents=True)
    if len(list((tmp_path / "facebook100").iterdir())) < 2:
        pytest.skip("case-insensitive file system")
    with pytest.raises(DatasetError, match="ambiguous"):
        resolve_dataset("facebook-MYSCHOOL1", tmp_path)


class _Loaded(str):
    """What the replaced loader returns: the name, with the one attribute the plan reads (a feature width)."""

    data = types.SimpleNamespace(x=types.SimpleNamespace(size=lambda dim: 1))


@pytest.mark.parametrize("name", NAMES)
def test_a_run_prepares_the_canonical_dataset_and_its_default_split(name, monkeypatch):
    """``bench.plan.plan_run`` (every CLI command and bench.api that trains): the dataset it loads and the split it
    runs are the canonical name's, however the name was typed (no data is loaded: the loader is replaced)."""
    import bench.plan as P

    loaded = []
    monkeypatch.setattr(P, "load_dataset", lambda n, *a, **k: loaded.append(n.name) or _Loaded(n.name))
    ref = resolve_dataset(name)
    for spelled in spellings(name):
        p = P.plan_run(P.RunSpec(methods=["mlp"], dataset=spelled, track=False, progress=False))
        assert (p.split, p.dataset, loaded[-1]) == (ref.default_split, ref.name, ref.name), spelled


def test_a_sweep_config_reads_names_as_a_run_does():
    from bench import api
    from bench.sweep import SweepError

    cells = api.cells({"methods": ["mlp"], "datasets": ["Cora", "cora", "CSBM:Nodes=60"], "seeds": [0]})
    assert [(c.dataset, c.split) for c in cells] == [("cora", "public"), ("csbm:nodes=60", "random-75-10-15")]
    with pytest.raises(SweepError, match="unknown dataset 'nosuch'"):
        api.cells({"methods": ["mlp"], "datasets": ["nosuch"]})
    with pytest.raises(SweepError, match="unknown dataset 'coraa'"):
        api.cells({"methods": [{"name": "mlp", "datasets": ["coraa"]}], "datasets": ["cora"]})


def test_a_plugin_registers_a_dataset_every_command_can_name():
    """A dataset is one registration (``register_dataset``), a built-in's or a plugin's: the name then resolves and
    loads like any other, after the built-ins in listings; a second spec under a taken name is refused."""
    from bench.datasets import load_dataset
    from bench.datasets.base import Spec
    from bench.datasets.csbm import DEFAULTS, _build
    from bench.datasets.registry import register_dataset
    from methods.errors import ConfigError

    spec = Spec("tiny-plugin-graph", "a plugin's graph", lambda o: [], _build, {**DEFAULTS, "nodes": 60},
                synthetic=True)
    register_dataset(spec)
    try:
        assert list(SPECS)[-1] == "tiny-plugin-graph" and resolve_dataset("Tiny-Plugin-Graph").name == spec.key
        assert load_dataset("tiny-plugin-graph").num_nodes == 60
        with pytest.raises(ConfigError, match="a dataset named 'cora' is already registered"):
            register_dataset(Spec("cora", "another Cora", lambda o: [], _build))
    finally:
        SPECS.remove("tiny-plugin-graph")
