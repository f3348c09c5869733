"""Entry points of installed packages, scanned once per ``sys.path``.

Every registry (allocator plugins, pickers, preemptors, backfill policies) finds its
third-party members through an entry-point group. Scanning the installed distributions
costs ~10 ms; a driver that makes many sessions (tests, sweeps) would pay it for each.
The scan is kept for as long as ``sys.path`` is the same, so a package made importable
later (a plugin installed into a new path) is still found.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points

__all__ = ["advertised"]


def advertised(group: str) -> tuple[EntryPoint, ...]:
    """The entry points installed packages advertise in ``group``."""
    return _scan(tuple(sys.path), group)


@lru_cache(maxsize=64)
def _scan(path: tuple[str, ...], group: str) -> tuple[EntryPoint, ...]:
    del path  # the cache key: a new search path means a new scan
    return tuple(entry_points(group=group))
