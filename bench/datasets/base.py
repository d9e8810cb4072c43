"""What every dataset module shares: the error type, the loaded dataset and a loader's spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from methods.errors import BenchError


class DatasetError(BenchError):
    """A dataset that is unknown, missing or malformed."""


@dataclass(eq=False)
class GraphDataset:
    name: str
    data: Any  # torch_geometric.data.Data with x, y, edge_index (+ node_year for ogbn-arxiv)
    num_classes: int
    source: str
    changes: dict[str, int] = field(default_factory=dict)
    planetoid_masks: dict[str, Any] | None = None  # train/val/test boolean tensors
    ogb_name: str | None = None
    ogb_split: dict[str, Any] | None = None  # train/valid/test index tensors

    @property
    def num_nodes(self) -> int:
        return int(self.data.num_nodes)

    def stats(self) -> dict[str, Any]:
        return {"name": self.name, "nodes": self.num_nodes, "edges": int(self.data.edge_index.size(1)) // 2,
                "features": int(self.data.x.size(1)), "classes": self.num_classes}


@dataclass(frozen=True)
class Fetch:
    """The stock download of a dataset's raw files, done by its loader's own code.

    ``url()`` is where the loader downloads from (it may import the loader). ``run(folder, options, base)``
    downloads the raw files into ``folder`` in the layout of :attr:`Spec.files`, from ``base`` instead (a mirror
    serving the same file names) when that is not None; it does not process them."""

    url: Callable[[], str]
    run: Callable[[Path, dict, str | None], None]


@dataclass(frozen=True)
class Spec:
    """A named dataset: its raw files (relative to the data root, given the options) and how to build it.

    ``build(work, options)`` returns ``{"data", "num_classes", "source"}`` (+ ``planetoid_masks``, ``ogb_name``,
    ``ogb_split``, ``pre_changes``); ``work`` is the folder the raw files are staged in (None: synthetic).
    ``fetch`` is the stock download (None: there is none). ``default_split`` is the split a run uses when none
    is named (:mod:`bench.splits`): the dataset's own published split where it has one."""

    key: str
    description: str
    files: Callable[[dict], list[str]]
    build: Callable[[Path | None, dict], dict]
    options: dict[str, Any] = field(default_factory=dict)
    synthetic: bool = False
    fetch: Fetch | None = None
    default_split: str = "random-75-10-15"
