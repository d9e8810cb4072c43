"""Dataset names: ``cora``, ``citeseer``, ``pubmed`` (Planetoid), ``computers``, ``photo`` (Amazon), ``cs``,
``physics`` (Coauthor), ``reddit``, ``flickr``, ``ogbn-arxiv``, ``ogbn-products``, ``facebook-<school>``
(Facebook100, GAP's task) and ``csbm`` (synthetic). Options follow a colon: ``csbm:nodes=5000,classes=5`` or
``facebook-wisconsin87:min_class_size=500``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.datasets import facebook
from bench.datasets.base import DatasetError, Spec
from methods.registry import Registry, discover

#: every dataset by name, in the order listings give them (:class:`methods.registry.Registry`): the built-ins are
#: the modules of this folder that register theirs, each with its place (:func:`register_dataset`); Facebook100's
#: schools are named on the fly (``facebook-<school>``)
SPECS: Registry[Spec] = Registry("dataset")


def register_dataset(spec: Spec, order: float | None = None) -> Spec:
    """Make ``spec`` a dataset every command can name (``spec.key``); a plugin file registers its own the same way.
    ``order``: its place in listings (one without follows the built-ins)."""
    return SPECS.add(spec.key, spec, same=lambda prev, new: prev == new, order=order,
                     what=f"a dataset named {spec.key!r} is already registered")


@dataclass(frozen=True)
class DatasetName:
    """A dataset name resolved once: ``name`` the canonical spelling (lower case, non-default options only),
    ``key`` the dataset without options, its ``spec`` and ``options``, and the ``default_split`` a run uses when
    none is named."""

    name: str
    key: str
    spec: Spec
    options: dict[str, Any]

    @property
    def default_split(self) -> str:
        return self.spec.default_split


def resolve_dataset(name: str, root: Path | None = None) -> DatasetName:
    """The one reading of a dataset name, used by every entry point (CLI, :mod:`bench.api`, sweep configs): the
    name and its option keys match case-insensitively (``Cora``, ``CSBM:Nodes=500``); a name that matches no
    dataset, or more than one, is a :class:`DatasetError` naming the candidates."""
    from methods.config import _coerce
    from methods.errors import ConfigError

    if not isinstance(name, str) or not name.strip():
        raise DatasetError("dataset name is empty")
    base, _, opt_str = name.strip().partition(":")
    base = base.strip()
    matches = [k for k in SPECS if k.lower() == base.lower()]
    if len(matches) > 1:
        raise DatasetError(f"dataset name {name!r} is ambiguous: it matches {', '.join(matches)}")
    if matches:
        base = matches[0]
        spec = SPECS[base]
    elif base.lower().startswith("facebook-"):
        base = base.lower()
        spec = facebook.spec(base, root)
    else:
        raise DatasetError(f"unknown dataset {name!r}; available: {', '.join(SPECS)}, facebook-<school>")
    opts = dict(spec.options)
    keys = {k.lower(): k for k in spec.options}
    if opt_str:
        for item in opt_str.split(","):
            k, eq, v = item.partition("=")
            k = keys.get(k.strip().lower(), k.strip())
            if not eq or k not in opts:
                valid = ", ".join(opts) or "(none)"
                raise DatasetError(f"bad option {item!r} for dataset {base}; valid options: {valid}")
            try:
                opts[k] = _coerce(v.strip(), type(spec.options[k]), f"{base}.{k}")
            except ConfigError as e:
                raise DatasetError(str(e)) from None
    canonical = base if opts == spec.options else base + ":" + ",".join(
        f"{k}={opts[k]}" for k in spec.options if opts[k] != spec.options[k])
    return DatasetName(canonical, base, spec, opts)


def parse_dataset_name(name: str, root: Path | None = None) -> tuple[str, Spec, dict[str, Any]]:
    """``"CSBM:nodes=500"`` -> (canonical name, spec, options): :func:`resolve_dataset` as a tuple."""
    d = resolve_dataset(name, root)
    return d.name, d.spec, d.options


def canonical_dataset(name: str) -> str:
    """The canonical spelling of a dataset name (``Cora`` -> ``cora``); a DatasetError for an unknown one."""
    return resolve_dataset(name).name


def expected_files(name: str, root: Path | None = None) -> list[str]:
    _, spec, opts = parse_dataset_name(name, root)
    return spec.files(opts)


discover(__package__, [str(Path(__file__).parent)], "register_dataset")
