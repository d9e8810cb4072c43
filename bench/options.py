"""Typed options of methods and attacks: the one parser for scoped ``key=value`` overrides, and their documentation.

A leaf module (standard library and :mod:`methods.errors` only): ``bench run --set``, ``bench attack
--attack-set``, the sweep's ``set`` mappings and :mod:`bench.api` all go through :func:`scoped_overrides`;
``bench list METHOD`` prints :func:`option_table`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import textwrap
import tokenize
import types
import typing
from typing import Any, Iterable, Mapping

from methods.errors import ConfigError


def scoped_overrides(items: Iterable[str], fields: Mapping[str, Iterable[str]], *, flag: str = "--set",
                     noun: str = "hyperparameter", owners: str = "methods",
                     error: type[Exception] = ConfigError) -> dict[str, dict[str, str]]:
    """``["hidden=32", "gcn.lr=0.05"]`` -> ``{owner: {key: value}}`` for the owners in ``fields`` (owner -> its
    option names).

    ``owner.key=value`` sets ``key`` of that owner only; ``key=value`` sets it for every owner that has the key.
    A scope that is not an owner, or a key that no owner has, is an error naming the valid ones. Values stay
    strings: the owner's typed config converts them (``methods.base.make_config``).
    """
    valid = {o: set(f) for o, f in fields.items()}
    per: dict[str, dict[str, str]] = {o: {} for o in valid}
    for item in items:
        key, eq, value = str(item).partition("=")
        key = key.strip()
        if not eq or not key:
            raise error(f"{flag} expects key=value (got {item!r})")
        scope, dot, name = key.rpartition(".")
        if dot:
            if scope not in per:
                raise error(f"{flag} {item}: {scope!r} is not one of the {owners} being run ({', '.join(per)})")
            if name not in valid[scope]:
                raise error(f"unknown {noun} {name!r} for {scope}; valid ones are {', '.join(sorted(valid[scope])) or '(none)'}")
            per[scope][name] = value
            continue
        targets = [o for o in per if key in valid[o]]
        if not targets:
            listing = "; ".join(f"{o}: {', '.join(sorted(v)) or '(none)'}" for o, v in valid.items())
            raise error(f"unknown {noun} {key!r}; valid ones are {listing}")
        for o in targets:
            per[o][key] = value
    return per


def as_items(overrides: Iterable[str] | Mapping[str, Any] | None) -> list[str]:
    """Overrides given as ``{"hidden": 16, "gcn.lr": 0.02}`` or ``["hidden=16", ...]`` -> ``["hidden=16", ...]``."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{k}={scalar(v)}" for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return [str(x) for x in overrides]


def scalar(x: Any) -> str:
    """A Python or YAML value as the string ``--set`` takes (``True`` -> ``true``, ``(1, 2)`` -> ``1,2``)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if x is None:
        return "none"
    if isinstance(x, (list, tuple)):
        return ",".join(scalar(v) for v in x)
    return str(x)


def field_names(config_cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(config_cls)} if dataclasses.is_dataclass(config_cls) else set()


# --------------------------------------------------------------------------------------
# Documentation: type, default and the field's comment
# --------------------------------------------------------------------------------------


def option_table(config_cls: type) -> list[dict[str, str]]:
    """One row per field of a config dataclass: ``name``, ``type``, ``default`` and ``help`` (the field's
    ``metadata["help"]``, else its comment in the source: trailing, or the comment lines right above it)."""
    if not dataclasses.is_dataclass(config_cls):
        return []
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # an annotation that does not resolve: show it as written
        hints = {}
    rows = []
    for f in dataclasses.fields(config_cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = "(required)"
        rows.append({"name": f.name, "type": type_name(hints.get(f.name, f.type)), "default": scalar(default),
                     "help": str(f.metadata.get("help") or _comment(config_cls, f.name))})
    return rows


def type_name(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return "|".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("none" if a is type(None) else type_name(a) for a in args)
    if origin in (tuple, list):
        return f"list of {type_name(args[0]) if args else 'str'}"
    return getattr(tp, "__name__", str(tp))


def one_line(text: str, width: int = 110) -> str:
    """The first sentence of ``text``, cut to ``width`` characters."""
    first = text.split(". ")[0].strip().rstrip(".")
    return first if len(first) <= width else first[: width - 1].rstrip() + "…"


def _comment(cls: type, name: str) -> str:
    for klass in cls.__mro__:
        if name in getattr(klass, "__annotations__", {}):
            text = _class_comments(klass).get(name, "")
            if text:
                return text
    return ""


def _class_comments(klass: type) -> dict[str, str]:
    try:
        src = textwrap.dedent(inspect.getsource(klass))
        tree = ast.parse(src)
        comments = {tok.start[0]: tok.string.lstrip("#").strip()
                    for tok in tokenize.generate_tokens(io.StringIO(src).readline) if tok.type == tokenize.COMMENT}
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        return {}
    lines = src.splitlines()
    out = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        text = comments.get(node.end_lineno) or comments.get(node.lineno)
        if not text:
            above, ln = [], node.lineno - 1
            while ln >= 1 and lines[ln - 1].strip().startswith("#"):
                above.insert(0, comments.get(ln, ""))
                ln -= 1
            text = " ".join(a for a in above if a)
        if text:
            out[node.target.id] = " ".join(text.split())
    return out


__all__ = ["as_items", "field_names", "one_line", "option_table", "scalar", "scoped_overrides", "type_name"]
