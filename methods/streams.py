"""A run's random streams: one ``numpy.random.SeedSequence(seed)``, one named child per purpose.

Every random draw of a run -- the split, model initialisation, dropout, batch sampling, the subgraph
samplers, the DP noise, an audit's canaries and inclusion coins, an attack's shadow models -- comes from
the child stream of its purpose. Children are SeedSequence spawns (``spawn_key`` = the purpose's code
plus an optional path), so no stream can be computed from another: in particular the DP noise is
independent of the initial weights and of the batches (Salem et al.'s and our review's failure mode: three
generators seeded with one raw seed replay one stream, and the noise becomes a function of the weights).
No code seeds a generator from the raw seed itself.

Secure mode (``secure_noise=True``): the ``noise`` purpose is spawned from a root drawn from OS entropy
that is never logged or serialised, so a run's record cannot regenerate its noise. Everything else stays
reproducible from the seed. :meth:`RunStreams.describe` says which mode a run used.

Purposes are free-form names; the ones the suite uses are listed in :data:`PURPOSES`. A sub-run (an audit
trial, a shadow model) gets its own :class:`RunStreams` with :meth:`RunStreams.child`.
"""

from __future__ import annotations

import contextlib
import zlib
from typing import Any, Iterator

import numpy as np

#: the purposes the suite draws from (any other name is allowed and gets its own child)
PURPOSES = ("split", "init", "dropout", "sampler", "subgraphs", "noise", "queries", "partition",
            "canaries", "coins", "trial", "attack", "shadow", "game")

#: the purpose whose root is OS entropy in secure mode: every DP mechanism's randomness
NOISE = "noise"


def purpose_code(name: str) -> int:
    """A stable 32-bit code for a purpose name (its place in the spawn key)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a stream purpose must be a non-empty string (got {name!r})")
    return zlib.crc32(name.encode())


def _path_key(path: tuple[Any, ...]) -> tuple[int, ...]:
    out = []
    for p in path:
        if isinstance(p, str):
            out.append(purpose_code(p))
        else:
            v = int(p)
            if v < 0:
                raise ValueError(f"stream path entries must be non-negative (got {p!r})")
            out.append(v)
    return tuple(out)


class RunStreams:
    """The random streams of one run (see the module docstring)."""

    __slots__ = ("_root", "_noise_root", "seed", "secure_noise", "lineage")

    def __init__(self, seed: int = 0, *, secure_noise: bool = False) -> None:
        seed = int(seed)
        if seed < 0:
            raise ValueError(f"seed must be >= 0 (got {seed})")
        self.seed = seed
        self.secure_noise = bool(secure_noise)
        self._root = np.random.SeedSequence(seed)
        # secure: a root from OS entropy, kept only in memory
        self._noise_root = np.random.SeedSequence() if secure_noise else self._root
        self.lineage: tuple[str, ...] = ()

    @classmethod
    def of(cls, seed: "int | RunStreams") -> "RunStreams":
        """``seed`` as streams: an int becomes ``RunStreams(seed)``, streams pass through."""
        if isinstance(seed, RunStreams):
            return seed
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int or RunStreams (got {type(seed).__name__})")
        return cls(int(seed))

    # -- children ---------------------------------------------------------------------

    def sequence(self, purpose: str, *path: Any) -> np.random.SeedSequence:
        """The SeedSequence of ``purpose`` (and an optional sub-path, e.g. a teacher index)."""
        root = self._noise_root if purpose == NOISE else self._root
        key = (purpose_code(purpose),) + _path_key(path)
        return np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + key)

    def child(self, purpose: str, *path: Any) -> "RunStreams":
        """The streams of a sub-run (an audit trial, a shadow model), independent of this run's own."""
        out = object.__new__(RunStreams)
        out.seed = self.seed
        out.secure_noise = self.secure_noise
        key = (purpose_code(purpose),) + _path_key(path)
        out._root = np.random.SeedSequence(self._root.entropy, spawn_key=tuple(self._root.spawn_key) + key)
        out._noise_root = (np.random.SeedSequence(self._noise_root.entropy,
                                                  spawn_key=tuple(self._noise_root.spawn_key) + key)
                           if self.secure_noise else out._root)
        out.lineage = self.lineage + (":".join([purpose, *map(str, path)]),)
        return out

    def noise_variant(self, tag: int = 1) -> "RunStreams":
        """These streams with another noise root (every other purpose unchanged): a fit under it draws the same
        batches, initial weights and dropout and other noise. An audit's tool to tell which of a fit's inputs are
        noisy releases (:func:`audits.checks._layout.trace_layout`); it is marked like secure noise (never pickled,
        refused by a plugin that seeds its own noise), deterministic all the same."""
        out = object.__new__(RunStreams)
        out.seed, out.secure_noise, out._root = self.seed, True, self._root
        out._noise_root = np.random.SeedSequence(
            self._noise_root.entropy,
            spawn_key=tuple(self._noise_root.spawn_key) + (purpose_code("noise-variant"), int(tag)))
        out.lineage = self.lineage + (f"noise-variant:{int(tag)}",)
        return out

    def int_seed(self, purpose: str, *path: Any) -> int:
        """A 63-bit integer seed for libraries that take one (torch generators, numba)."""
        a, b = self.sequence(purpose, *path).generate_state(2, np.uint32)
        return ((int(a) << 32) | int(b)) & ((1 << 63) - 1)

    def numpy(self, purpose: str, *path: Any) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.sequence(purpose, *path)))

    def torch(self, purpose: str, *path: Any, device: Any = "cpu"):
        import torch

        return torch.Generator(device=device).manual_seed(self.int_seed(purpose, *path))

    @contextlib.contextmanager
    def global_torch(self, purpose: str, *path: Any, device: Any = None) -> Iterator[None]:
        """Within the block torch's global RNG (parameter initialisation, dropout) draws from ``purpose``;
        the caller's global state is restored afterwards."""
        import torch

        devices = []
        dev = torch.device(device) if device is not None else None
        if dev is not None and dev.type == "cuda" and torch.cuda.is_available():
            devices = [dev.index if dev.index is not None else torch.cuda.current_device()]
        with torch.random.fork_rng(devices=devices):
            s = self.int_seed(purpose, *path)
            torch.manual_seed(s)  # CPU and every CUDA device
            yield

    # -- records ----------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """What a run logs about its randomness (never the secure noise root)."""
        return {"seed": self.seed, "secure_noise": self.secure_noise,
                "streams": "numpy.random.SeedSequence(seed), one spawned child per purpose",
                **({"lineage": "/".join(self.lineage)} if self.lineage else {})}

    def __repr__(self) -> str:
        lin = f", lineage={'/'.join(self.lineage)!r}" if self.lineage else ""
        return f"RunStreams(seed={self.seed}, secure_noise={self.secure_noise}{lin})"

    def __reduce__(self):  # secure streams never leave the process (the noise root would travel)
        if self.secure_noise:
            raise TypeError("secure-noise streams cannot be pickled: their noise root must stay in memory")
        if self.lineage:
            raise TypeError("child streams cannot be pickled; pickle the root seed and rebuild the child")
        return (RunStreams, (self.seed,))
