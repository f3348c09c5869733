"""What allocation produces: claims, job allocations, and pend reasons as values.

A job that cannot start is not an error: it gets a :class:`Pending` decision with a
reason code, a message and a per-host breakdown (design §5).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType

__all__ = [
    "AllocMode",
    "Claim",
    "Decision",
    "Dispatched",
    "JobAllocation",
    "PendInfo",
    "PendReason",
    "Pending",
]


class AllocMode(Enum):
    """Which resource pool the allocator draws from (spec Req 9 AC 5).

    Only NORMAL is implemented by this allocator; PREEMPT is the extension point the
    preemption layer fills in (it counts victims' resources as borrowable).
    """

    NORMAL = 0
    PREEMPT = 1


class PendReason(StrEnum):
    """Why a job waits; design §5 gives the precedence in which one is chosen."""

    SELECT = "SELECT"
    NOT_ENOUGH_SLOTS = "NOT_ENOUGH_SLOTS"
    NOT_ENOUGH_RESOURCE = "NOT_ENOUGH_RESOURCE"
    SPAN = "SPAN"
    SAME = "SAME"
    SHARED_RESOURCE = "SHARED_RESOURCE"
    LIMIT = "LIMIT"
    HOST_STATUS = "HOST_STATUS"
    QUEUE_BLOCKED = "QUEUE_BLOCKED"
    PREEMPTING = "PREEMPTING"


def _no_hosts() -> Mapping[str, int]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PendInfo:
    """A pend reason with its message and, per host-level reason, how many hosts."""

    reason: PendReason
    message: str
    hosts: Mapping[str, int] = field(default_factory=_no_hosts, compare=False)


@dataclass(frozen=True, slots=True)
class Claim:
    """One bucket placed on one host: slots and the amounts debited there."""

    host: int
    slots: int
    amounts: tuple[tuple[str, float], ...]
    term: int = 0


@dataclass(frozen=True, slots=True)
class JobAllocation:
    """A whole job's placement: one claim per bucket (claim order), shared amounts once."""

    claims: tuple[Claim, ...]
    shared: tuple[tuple[str, float], ...] = ()
    alternative: int | None = None

    @property
    def slots(self) -> int:
        return sum(c.slots for c in self.claims)


@dataclass(frozen=True, slots=True)
class Dispatched:
    """The job starts now with this allocation."""

    job: str
    allocation: JobAllocation


@dataclass(frozen=True, slots=True)
class Pending:
    """The job waits; ``cached`` when the unsatisfiable cache answered (spec Req 7 AC 5)."""

    job: str
    info: PendInfo
    cached: bool = False


Decision = Dispatched | Pending
