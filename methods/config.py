"""Typed hyperparameters: a method's (or attack's) dataclass built from defaults plus overrides given as text on the
command line or in a sweep config. A leaf module (no torch), so names and values are checked before the heavy
imports."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from methods.errors import ConfigError

#: the largest integer a hyperparameter may be: torch reads sizes and counts as int64
INT64_MAX = 2 ** 63 - 1

@dataclass
class NoConfig:
    """A method without hyperparameters."""


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Convert a CLI/config value to the dataclass field type ``tp``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a, key)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(f"{key}: cannot use {value!r} ({'; '.join(errors)})")
    if origin is Literal:
        for a in args:
            if str(a) == str(value):
                return a
        raise ConfigError(f"{key} must be one of {', '.join(map(str, args))} (got {value!r})")
    if origin in (tuple, list):
        items = value
        if isinstance(value, str):
            items = [v for v in value.replace(";", ",").split(",") if v.strip()]
        inner = args[0] if args else str
        seq = [_coerce(v, inner, key) for v in items]
        return tuple(seq) if origin is tuple else seq
    if tp is bool:
        if isinstance(value, bool):
            return value
        s = str(value).strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key} must be true or false (got {value!r})")
    if tp is int:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} must be an integer (got {value!r})") from None
        if not math.isfinite(f) or f != int(f):
            raise ConfigError(f"{key} must be an integer (got {value!r})")
        if abs(int(f)) > INT64_MAX:  # torch takes sizes and counts as int64
            raise ConfigError(f"{key} must be an integer of at most 2^63 - 1 in size (got {value!r})")
        return int(f)
    if tp is float:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} must be a number (got {value!r})") from None
        if not math.isfinite(f):  # no hyperparameter means anything at inf or nan (a budget is not a hyperparameter)
            raise ConfigError(f"{key} must be a finite number (got {value!r})")
        return f
    if tp is str:
        return str(value)
    return value


def make_config(cls: type, overrides: dict[str, Any] | None = None, owner: str = "method") -> Any:
    """Build the hyperparameter dataclass ``cls`` from defaults plus typed ``overrides``."""
    overrides = dict(overrides or {})
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        valid = ", ".join(sorted(fields)) or "(none)"
        raise ConfigError(f"unknown hyperparameter(s) {', '.join(unknown)} for {owner}; valid: {valid}")
    kwargs = {k: _coerce(v, hints[k], f"{owner}.{k}") for k, v in overrides.items()}
    cfg = cls(**kwargs)
    check = getattr(cfg, "validate", None)
    if callable(check):
        check()
    return cfg


def config_dict(cfg: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        out[f.name] = list(v) if isinstance(v, tuple) else v
    return out
