"""A run's released model as an MLflow artefact, and how attacks and audits of a recorded run load it back.

Every tracked run logs, under the artefact folder ``release/``:

* ``release.pt``: the tensors the run releases under its ledger, and only those, as named CPU tensors
  (:meth:`methods.base.Fitted.release`: the weights; edge-level GAP/ProGAP's NAP outputs X(1..K); EdgeRand's
  randomised graph, kept sparse). Loads with ``torch.load(..., weights_only=True)``; empty when the method declares
  no release;
* ``served.pt.gz``: the served model (release + serving state; the serving state is NOT a release): the
  :class:`~methods.base.Fitted` object, pickled by ``torch.save``, gzip level 1. Besides the release it holds what
  the server keeps to answer queries (:meth:`methods.base.Fitted.serving_state`: raw feature rows, GAP/ProGAP's X(0)
  and, at node level, every cached aggregate; a served graph that is the task's own), which no ledger
  covers: it is data, kept like the training data, never published. Attacks query this object, so they hit exactly
  what the run served, and their records say so (:data:`SERVED_MODEL`). A Fitted that cannot be pickled (a plugin's
  holding a lambda) is not saved: the manifest says why, the run still finishes, and attacks of it are refused;
* ``manifest.json``: the format, the Fitted's class, the keys of the release and of the serving state
  (``serving_keys``; ``None`` in a manifest written before serving state was declared: unknown), the sha256 of both
  files, the released predictions' hashes (:func:`posteriors_hash`, the full served posteriors;
  :func:`bench.provenance.predictions_hash`, the tag the leaderboard's records carry) and the torch version that
  wrote them.

:func:`load` downloads the three files and checks their digests against the run's tags in the tracking store
(``release.sha256``, ``release.served_sha256``, ``release.posteriors_sha256``: a manifest rewritten beside tampered
files does not pass), then against the manifest; it rebuilds the served model onto the device asked for
(``map_location``: a model fitted on a GPU loads on a CPU and back) with the restricted unpickler of
:mod:`bench.safe_load` (``weights_only=True``, an allowlist of served-state classes checked before anything is
unpickled: a payload is refused, never run), and checks that it serves the recorded posteriors and that its release
is ``release.pt``'s, before any attack sees it. A run logged before ``release.served_sha256`` was tagged has its
served model checked through the posteriors and the release only.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import pickle
import shutil
import tempfile
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from methods.errors import BenchError

ARTIFACT_DIR = "release"
RELEASE_FILE = "release.pt"
SERVED_FILE = "served.pt.gz"
MANIFEST_FILE = "manifest.json"
FORMAT = 1
#: how the leaderboard and attack records name the model an attack or audit saw
SOURCE_RECORDED = "recorded artefact"
SOURCE_REEXECUTED = "re-execution (same posteriors as the recorded run)"
SOURCE_REFIT = "refit (not the recorded run)"
#: what an attack of a served model queried (the ``attacked_state`` of its record, beside ``attacked_model``): the
#: served model, whose serving state is not a release, so an attack's success is not a property of the release alone
SERVED_MODEL = "served model (release + serving state, not a release)"


class ReleaseMissing(BenchError):
    """The run logged no released model (a run from before artefacts were logged, or ``--no-release``)."""


@dataclass(frozen=True)
class Manifest:
    format: int
    fitted_class: str
    release_keys: tuple[str, ...]
    release_sha256: str
    served_sha256: str
    posteriors_sha256: str
    predictions_hash: str
    release_bytes: int
    served_bytes: int
    torch: str
    #: why the served model could not be saved ("" when it was): a plugin's Fitted holding a lambda, say
    served_error: str = ""
    #: the keys of the serving state (:meth:`methods.base.Fitted.serving_state`) held in ``served.pt.gz`` and not in
    #: ``release.pt``; ``None``: unknown (a manifest written before serving state was declared)
    serving_keys: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["release_keys"] = list(self.release_keys)
        d["serving_keys"] = None if self.serving_keys is None else list(self.serving_keys)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Manifest":
        if int(d.get("format", 0)) != FORMAT:
            raise BenchError(f"released-model manifest format {d.get('format')} (this version reads {FORMAT})")
        serving = d.get("serving_keys")
        return cls(**{**d, "release_keys": tuple(d.get("release_keys") or ()),
                      "serving_keys": None if serving is None else tuple(serving)})


def posteriors_hash(proba: torch.Tensor) -> str:
    """sha256 of the served posteriors of every node (float32, CPU): equal hashes mean the same released outputs,
    not only the same predicted classes."""
    p = torch.as_tensor(proba).detach().to("cpu", torch.float32).contiguous()
    return hashlib.sha256(p.numpy().tobytes()).hexdigest()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _cpu(release: dict[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
    """The release as CPU tensors in their own layout: a sparse adjacency stays sparse (COO coalesced), so the file
    grows with its entries, not with #nodes squared (EdgeRand's graph on Physics would be 4.8 GB dense)."""
    out = {}
    for k, v in (release or {}).items():
        v = torch.as_tensor(v).detach().to("cpu")
        if v.layout == torch.sparse_coo:
            v = v.coalesce()
        elif v.layout == torch.strided:
            v = v.contiguous()
        out[str(k)] = v
    return out


def save(fitted: Any, task: Any, folder: str | Path) -> Manifest:
    """Write the three files of ``fitted`` (trained on ``task``) into ``folder``; return the manifest."""
    from bench.provenance import predictions_hash

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    proba = fitted.predict_proba()
    release = _cpu(fitted.release())
    serving_state = getattr(fitted, "serving_state", None)  # a plugin's Fitted may predate the method
    serving = sorted(map(str, (serving_state() if callable(serving_state) else None) or {}))
    torch.save(release, folder / RELEASE_FILE)
    served_error = ""
    try:
        with gzip.open(folder / SERVED_FILE, "wb", compresslevel=1) as f:
            torch.save(fitted, f)
    except (pickle.PicklingError, AttributeError, TypeError) as e:  # what pickle raises for a lambda or a lock
        served_error = f"{type(e).__name__}: {e}"
        (folder / SERVED_FILE).unlink(missing_ok=True)
    served = folder / SERVED_FILE
    cls = type(fitted)
    manifest = Manifest(FORMAT, f"{cls.__module__}.{cls.__qualname__}", tuple(sorted(release)),
                        _sha256(folder / RELEASE_FILE), _sha256(served) if served.exists() else "",
                        posteriors_hash(proba), predictions_hash(task, proba), (folder / RELEASE_FILE).stat().st_size,
                        served.stat().st_size if served.exists() else 0, torch.__version__, served_error,
                        tuple(serving))
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest.to_dict(), indent=2, sort_keys=True))
    return manifest


#: the run tags that :func:`log` writes and :func:`load` checks the downloaded files against, by manifest field
TAGS = {"release_sha256": "release.sha256", "served_sha256": "release.served_sha256",
        "posteriors_sha256": "release.posteriors_sha256"}


def _check_tags(manifest: Manifest, tags: dict[str, str]) -> None:
    """The manifest's digests equal the ones the run tagged when it logged the artefact (a tag the run predates is
    skipped; the release and the posteriors are tagged by every run that logged an artefact)."""
    for field, tag in TAGS.items():
        want = tags.get(tag)
        if want is None and tag != TAGS["served_sha256"]:
            raise BenchError(f"released model: the run has no {tag} tag to check its artefact against")
        if want is not None and getattr(manifest, field) != want:
            raise BenchError(f"released model: the artefact's {field} is not the one the run tagged ({tag}): the "
                             "files were changed after the run logged them")


def _same_release(fitted: Any, folder: Path) -> None:
    """The served model's release is the file ``release.pt`` (and so the tagged release): an attack of the served
    model attacks the weights the run released."""
    def dense(t: torch.Tensor) -> torch.Tensor:
        return t.to_dense() if t.layout != torch.strided else t

    served, released = _cpu(fitted.release()), release_tensors(folder)
    if set(served) != set(released) or any(
            served[k].shape != released[k].shape or not torch.equal(dense(served[k]), dense(released[k]))
            for k in served):
        raise BenchError("released model: the served model's release is not release.pt's")


def read(folder: str | Path, task: Any, device: Any = "cpu", tags: dict[str, str] | None = None
         ) -> tuple[Any, Manifest]:
    """The served model in ``folder`` (written by :func:`save`: release + serving state, the latter not a release) on
    ``device``, checked against the run's ``tags`` (:data:`TAGS`; a tracked run's, when given) and its manifest, and
    rebuilt without running code (:mod:`bench.safe_load`)."""
    from bench import safe_load

    folder = Path(folder)
    if not (folder / MANIFEST_FILE).is_file():
        raise ReleaseMissing(f"no released model in {folder} ({MANIFEST_FILE} missing)")
    manifest = Manifest.from_dict(json.loads((folder / MANIFEST_FILE).read_text()))
    if tags is not None:
        _check_tags(manifest, tags)
    if manifest.served_error:
        raise ReleaseMissing(f"the run logged its release but not its served model, which could not be pickled "
                             f"({manifest.served_error}): give the Fitted picklable attributes (no lambdas) to make "
                             "its recorded model attackable")
    for name, want in ((RELEASE_FILE, manifest.release_sha256), (SERVED_FILE, manifest.served_sha256)):
        if _sha256(folder / name) != want:
            raise BenchError(f"released model: {name} does not match its manifest's sha256 (corrupted artefact)")
    try:
        with gzip.open(folder / SERVED_FILE, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise BenchError(f"released model: {SERVED_FILE} is not a gzip file ({e})") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: "sparse CSR support is in beta" on a CSR adjacency
        fitted = safe_load.load(data, device)
    if not callable(getattr(fitted, "predict_proba", None)):
        raise BenchError(f"released model: {SERVED_FILE} holds a {type(fitted).__name__}, not a fitted model")
    _same_release(fitted, folder)
    got = posteriors_hash(fitted.predict_proba())
    if got != manifest.posteriors_sha256:
        raise BenchError(f"released model: the loaded model serves other posteriors than the run recorded "
                         f"({got[:12]} != {manifest.posteriors_sha256[:12]})")
    from bench.provenance import predictions_hash

    if predictions_hash(task, fitted.predict_proba()) != manifest.predictions_hash:
        raise BenchError("released model: its predictions on this task's evaluated nodes differ from the recorded "
                         "ones (a different split or dataset than the run's?)")
    return fitted, manifest


def release_tensors(folder: str | Path) -> dict[str, torch.Tensor]:
    """The tensors released under the ledger in ``folder`` (``release.pt``; never the serving state), loaded without
    unpickling code; sparse ones sparse."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: sparse invariant checks / "sparse CSR support is in beta"
        return torch.load(Path(folder) / RELEASE_FILE, map_location="cpu", weights_only=True)


def log(run: Any, fitted: Any, task: Any) -> Manifest | None:
    """Log ``fitted``'s release into the tracked ``run`` (a :class:`bench.tracking.TrackedRun`; nothing when it is not
    tracked) under ``release/``; the manifest's hashes also go into the run's tags."""
    if not run.enabled:
        return None
    with tempfile.TemporaryDirectory(prefix="bench-release-") as d:
        manifest = save(fitted, task, d)
        run.log_artifacts(d, ARTIFACT_DIR)
    run.set_tags({**{tag: getattr(manifest, field) for field, tag in TAGS.items()},
                  "release.bytes": manifest.served_bytes})
    return manifest


def load(run_id: str, task: Any, device: Any = "cpu") -> tuple[Any, Manifest]:
    """The served model a tracked run logged (release + serving state, :func:`read`), on ``device``;
    :class:`ReleaseMissing` when it logged none."""
    from bench import tracking

    d = tempfile.mkdtemp(prefix="bench-release-")
    try:
        try:
            folder = tracking.download_artifacts(run_id, ARTIFACT_DIR, d)
        except FileNotFoundError as e:
            raise ReleaseMissing(f"run {run_id} logged no released model ({e})") from None
        return read(folder, task, device, dict(tracking.client().get_run(run_id).data.tags))
    finally:
        shutil.rmtree(d, ignore_errors=True)


__all__ = ["ARTIFACT_DIR", "Manifest", "ReleaseMissing", "SERVED_MODEL", "SOURCE_RECORDED", "SOURCE_REEXECUTED",
           "SOURCE_REFIT", "TAGS", "load", "log", "posteriors_hash", "read", "release_tensors", "save"]
