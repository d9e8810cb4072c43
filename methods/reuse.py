"""Whether a fit may reuse work an earlier fit saved (caches of noise-free intermediate results).

A cache may change how long a fit takes, never what it returns. A check that compares two fits of one world (the
verification's determinism check) runs its second fit under :func:`fresh`: every cache recomputes, so the check
covers the training code even when the first fit was served from a cache, and covers the cache as well."""

from __future__ import annotations

import contextlib
from typing import Iterator

_FRESH_DEPTH = 0


@contextlib.contextmanager
def fresh() -> Iterator[None]:
    """Inside this block no cache is read or written: everything is computed again."""
    global _FRESH_DEPTH
    _FRESH_DEPTH += 1
    try:
        yield
    finally:
        _FRESH_DEPTH -= 1


def reuse_allowed() -> bool:
    """False inside :func:`fresh`; caches consult this before every read and write."""
    return _FRESH_DEPTH == 0


__all__ = ["fresh", "reuse_allowed"]
