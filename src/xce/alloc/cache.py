"""The session-level unsatisfiable-requirement cache (spec Req 7).

Keyed by a primary's fingerprint plus the job's user, queue and project; the value is
the pend reason found when every plan failed, so a hit reports the same reason (AC 5).
Cleared at every session start (AC 2) and never written to a snapshot. Sound because
availability only falls within a session; the engine keeps out the two cases where that
is not enough (design §3).
"""

from __future__ import annotations

from xce.alloc.outcome import PendInfo
from xce.resreq import Fingerprint

__all__ = ["CacheKey", "UnsatCache"]

CacheKey = tuple[Fingerprint, str, str, str]
"""(fingerprint, user, queue, project): O(1) to hash, the fingerprint's hash is precomputed."""


class UnsatCache:
    """A dict from :data:`CacheKey` to the original :class:`PendInfo`."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[CacheKey, PendInfo] = {}

    def lookup(self, key: CacheKey) -> PendInfo | None:
        """The original pend reason if this key was proven unsatisfiable this session."""
        return self._entries.get(key)

    def insert(self, key: CacheKey, info: PendInfo) -> None:
        self._entries[key] = info

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
