"""Device resolution: ``auto`` picks CUDA when present, else the CPU."""

from __future__ import annotations

import torch

from methods.errors import BenchError


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``auto`` -> CUDA when available, else CPU. Asking for CUDA without one is a clear error."""
    if isinstance(device, torch.device):
        if device.type == "cuda" and not torch.cuda.is_available():
            raise BenchError("--device cuda was requested but no CUDA device is available (use --device auto or cpu)")
        return device
    name = (device or "auto").lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise BenchError("--device cuda was requested but no CUDA device is available (use --device auto or cpu)")
    if name != "cpu" and not name.startswith("cuda"):
        raise BenchError(f"unknown device {device!r}; use auto, cpu or cuda[:N]")
    return torch.device(name)
