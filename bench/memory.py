"""What a request needs at the least, against what the machine has: a size no machine here can hold (a width of
10^11, a synthetic graph of 10^14 nodes) is an input error before any run opens, not an allocator failure inside
one. Only lower bounds are compared, so a request that could fit is never refused."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from methods.errors import ConfigError

#: bytes of one float32 value, the dtype every model and feature matrix of the suite holds
FLOAT = 4
#: the hyperparameters that are a layer's width: every model of the suite reads the node features into a layer at
#: least this wide, so ``features x width`` float32 weights are a lower bound on its memory (GAT's heads multiply
#: it for PyG's GATConv but divide it for DP-GNN's attention, so they are left out)
WIDTHS = ("hidden",)


def host_memory() -> int | None:
    """This machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def device_memory(device: Any = None) -> int | None:
    """The most memory a tensor could live in: the host's, or a CUDA device's when larger."""
    host = host_memory()
    if device is not None and str(device).startswith("cuda"):
        import torch

        try:
            total = torch.cuda.get_device_properties(device).total_memory
        except (RuntimeError, AssertionError):
            return host
        return max(host or 0, int(total))
    return host


def gib(n: float) -> str:
    v = n / 2 ** 30
    return f"{v:,.0f} GiB" if v >= 100 else f"{v:.3g} GiB"


def check_fits(what: str, needs: int, available: int | None, hint: str) -> None:
    """A :class:`ConfigError` when ``needs`` (a lower bound, bytes) exceeds ``available``."""
    if available is not None and needs > available:
        raise ConfigError(f"{what} needs at least {gib(needs)} ({hint}); this machine has {gib(available)}")


def least_model_bytes(hparams: Mapping[str, Any], num_features: int) -> tuple[int, str]:
    """The first layer's float32 weights, ``features x width``, and how it was computed (0 and "" without a width
    hyperparameter)."""
    widths = [(k, int(v)) for k, v in hparams.items() if k in WIDTHS and isinstance(v, int) and v > 0]
    if not widths:
        return 0, ""
    key, width = max(widths, key=lambda kv: kv[1])
    return FLOAT * int(num_features) * width, f"its first layer alone: {num_features} features x {key}={width}, float32"


def check_model_fits(method: str, hparams: Mapping[str, Any], num_features: int, device: Any = None) -> None:
    """Refuse a method whose hyperparameters cannot fit this machine (:func:`least_model_bytes`)."""
    needs, hint = least_model_bytes(hparams, num_features)
    if needs:
        check_fits(f"method {method}", needs, device_memory(device), hint)
