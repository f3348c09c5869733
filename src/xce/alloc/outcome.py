"""What allocation produces: claims, job allocations, and pend reasons as values.

A job that cannot start is not an error: it gets a :class:`Pending` decision with a
reason code, a message and a per-host breakdown (design §5).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "AllocMode",
    "Claim",
    "ClaimColumns",
    "ClaimRun",
    "Decision",
    "Dispatched",
    "JobAllocation",
    "PendInfo",
    "PendReason",
    "Pending",
    "PlannedStart",
    "Preemption",
    "same_slots",
]


class AllocMode(Enum):
    """Which resource pool the allocator draws from (spec Req 9 AC 5).

    NORMAL draws on the session's books; PREEMPT on a view of them in which a candidate
    victim set's whole footprint is available again (:mod:`xce.alloc.preemption`). Plan
    and host iterators never test it: they read whatever books the attempt is given.
    """

    NORMAL = 0
    PREEMPT = 1


class PendReason(StrEnum):
    """Why a job waits; docs/allocation.md gives the precedence in which one is chosen.

    ``NEVER_RUNNABLE`` ranks first: the job could not run even on the empty cluster as
    configured (every host ok and free, no running work), so waiting will not help.
    ``INVALID`` is a job whose own definition is bad (``--lenient`` state loading).
    ``RESERVED``: what would fit the job now is set aside, over the job's estimated run,
    for a job planned to start later (backfill) or for an advance reservation it is not
    in. ``RESERVATION``: the job runs only in its advance reservation, whose window is
    not open yet, has ended, or is too short for the job's estimate (docs/backfill.md).
    ``HELD``, ``BEGIN_TIME``, ``DEPENDENCY`` and ``ARRAY_LIMIT`` are decided before any
    resource is looked at (xce.core.gates): the job is held, its begin time is still to
    come, it waits for other jobs, or its array runs as many tasks as its ``%N`` allows.
    """

    NEVER_RUNNABLE = "NEVER_RUNNABLE"
    INVALID = "INVALID"
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
    RESERVED = "RESERVED"
    RESERVATION = "RESERVATION"
    HELD = "HELD"
    BEGIN_TIME = "BEGIN_TIME"
    DEPENDENCY = "DEPENDENCY"
    ARRAY_LIMIT = "ARRAY_LIMIT"


def _no_hosts() -> Mapping[str, int]:
    return MappingProxyType({})


def _no_examples() -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PendInfo:
    """A pend reason with its message and, per host-level reason, how many hosts.

    ``hosts`` gives every host considered exactly one reason (the counts add up to the
    hosts considered); ``examples`` names a few hosts per reason. ``limits`` names the
    limits the job waits on (LIMIT, or a NEVER_RUNNABLE caused by a limit): a strict
    queue lets later jobs those limits do not apply to pass. ``cause`` is, for
    NEVER_RUNNABLE, the reason the job fails even on the empty cluster (SPAN, SELECT...).
    """

    reason: PendReason
    message: str
    hosts: Mapping[str, int] = field(default_factory=_no_hosts, compare=False)
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=_no_examples, compare=False)
    limits: tuple[str, ...] = field(default=(), compare=False)
    cause: PendReason | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Claim:
    """One bucket placed on one host: slots and the amounts debited there."""

    host: int
    slots: int
    amounts: tuple[tuple[str, float], ...]
    term: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class ClaimRun:
    """Equal buckets placed on distinct hosts at once (a bulk placement): its ``k``-th
    claim is ``Claim(hosts[k], slots, amounts, term)``, in claim order.

    Wide jobs claim thousands of hosts; a run keeps them as one read-only array, so no
    per-host object is made from the allocator to the core's books and the records.
    ``hosts`` must be a 1-D integer array; unless it is already a read-only array that
    owns its data, the run keeps a read-only copy (nobody can change it afterwards).
    """

    hosts: npt.NDArray[np.intp]
    slots: int
    amounts: tuple[tuple[str, float], ...] = ()
    term: int = 0

    def __post_init__(self) -> None:
        hosts = self.hosts
        if not isinstance(hosts, np.ndarray) or hosts.ndim != 1 or hosts.dtype.kind not in "iu":
            raise ValueError(f"ClaimRun hosts must be a 1-D array of host indices: {hosts!r}")
        if hosts.dtype != np.intp or hosts.flags.writeable or not hosts.flags.owndata:
            hosts = np.array(hosts, dtype=np.intp)
            hosts.flags.writeable = False
            object.__setattr__(self, "hosts", hosts)

    def __len__(self) -> int:
        return len(self.hosts)

    def claims(self) -> Iterator[Claim]:
        """The run as single claims (for display and the per-claim paths)."""
        for h in self.hosts.tolist():
            yield Claim(h, self.slots, self.amounts, self.term)


Part = Claim | ClaimRun
"""A piece of a job allocation: one claim, or a run of equal claims."""


class ClaimColumns(NamedTuple):
    """An allocation's claims as columns, one entry per claim in claim order."""

    hosts: npt.NDArray[np.intp]
    slots: npt.NDArray[np.int64]
    amounts: Mapping[str, npt.NDArray[np.float64]]  # 0 where a claim takes none


class JobAllocation:
    """A whole job's placement: its claims (one per bucket, in claim order) and the
    shared amounts it takes once. Immutable (its attributes cannot be set).

    ``parts`` holds the claims as the allocator made them: single :class:`Claim` objects
    and :class:`ClaimRun` blocks. :attr:`claims` expands them; :meth:`columns` gives them
    as arrays, which is what the books, the core and the simulator use. Two allocations
    are equal when their claims, shared amounts and alternative are.
    """

    __slots__ = ("_claims", "_columns", "alternative", "count", "parts", "shared", "slots")

    def __init__(
        self,
        claims: Iterable[Part] = (),
        shared: Iterable[tuple[str, float]] = (),
        alternative: int | None = None,
    ) -> None:
        parts = tuple(claims)
        count = slots = 0
        for p in parts:
            k = len(p.hosts) if isinstance(p, ClaimRun) else 1
            count += k
            slots += p.slots * k
        init = object.__setattr__
        init(self, "parts", parts)
        init(self, "shared", tuple(shared))
        init(self, "alternative", alternative)
        init(self, "count", count)  # claims (host entries)
        init(self, "slots", slots)
        init(self, "_claims", None)
        init(self, "_columns", None)

    parts: tuple[Part, ...]
    shared: tuple[tuple[str, float], ...]
    alternative: int | None
    count: int
    slots: int
    _claims: tuple[Claim, ...] | None
    _columns: ClaimColumns | None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"JobAllocation is immutable: cannot set {name!r}")

    def __reduce__(self) -> tuple[type[JobAllocation], tuple[object, ...]]:
        """Pickled as its parts (the cached expansions are made again when read): the
        default would set the slots one by one, which an immutable object refuses."""
        return (JobAllocation, (self.parts, self.shared, self.alternative))

    def __setstate__(self, state: tuple[object, dict[str, object]] | None) -> None:
        """Load a pickle made before :meth:`__reduce__` (a slots' state: (None, slots))."""
        slots = state[1] if isinstance(state, tuple) else None
        for name, value in (slots or {}).items():
            object.__setattr__(self, name, value)

    @property
    def claims(self) -> tuple[Claim, ...]:
        """Every claim, runs expanded (builds one object per claim: not for hot paths)."""
        if self._claims is None:
            out: list[Claim] = []
            for p in self.parts:
                if isinstance(p, ClaimRun):
                    out.extend(p.claims())
                else:
                    out.append(p)
            object.__setattr__(self, "_claims", tuple(out))
        assert self._claims is not None
        return self._claims

    def columns(self) -> ClaimColumns:
        """The claims as read-only arrays (computed once)."""
        if self._columns is None:
            object.__setattr__(self, "_columns", _columns(self.parts))
        assert self._columns is not None
        return self._columns

    def _key(self) -> tuple[object, ...]:
        return (self.claims, self.shared, self.alternative)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobAllocation):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"JobAllocation(claims={self.claims!r}, shared={self.shared!r}, "
            f"alternative={self.alternative!r})"
        )


_NO_COLUMNS: Mapping[str, npt.NDArray[np.float64]] = MappingProxyType({})


_SAME_SLOTS: dict[tuple[int, int], npt.NDArray[np.int64]] = {}


def same_slots(slots: int, count: int) -> npt.NDArray[np.int64]:
    """``count`` claims of ``slots`` each as a read-only column: a view of strides 0 (no
    memory per claim), shared by every allocation of that shape (a few hundred kept)."""
    column = _SAME_SLOTS.get((slots, count))
    if column is None:
        if len(_SAME_SLOTS) >= 1024:
            _SAME_SLOTS.clear()
        column = _SAME_SLOTS[(slots, count)] = np.broadcast_to(np.int64(slots), (count,))
    return column


def _columns(parts: tuple[Part, ...]) -> ClaimColumns:
    if len(parts) == 1 and isinstance(parts[0], ClaimRun) and not parts[0].amounts:
        run = parts[0]  # a wide job of slots alone: the common case
        # one slot count seen as a column (a read-only view of strides 0: no memory per
        # claim, whatever the width)
        return ClaimColumns(run.hosts, same_slots(run.slots, len(run.hosts)), _NO_COLUMNS)
    hosts: list[npt.NDArray[np.intp]] = []
    slots: list[npt.NDArray[np.int64]] = []
    names = {n for p in parts for n, _ in p.amounts}
    amounts: dict[str, list[npt.NDArray[np.float64]]] = {n: [] for n in sorted(names)}
    for p in parts:
        k = len(p.hosts) if isinstance(p, ClaimRun) else 1
        hosts.append(p.hosts if isinstance(p, ClaimRun) else np.array([p.host], dtype=np.intp))
        slots.append(np.full(k, p.slots, dtype=np.int64))
        mine: dict[str, float] = {}
        for name, amount in p.amounts:
            mine[name] = mine.get(name, 0.0) + amount
        for name, column in amounts.items():
            column.append(np.full(k, mine.get(name, 0.0)))
    if len(parts) == 1:
        cols = ClaimColumns(hosts[0], slots[0], {n: c[0] for n, c in amounts.items()})
    else:
        cols = ClaimColumns(
            np.concatenate(hosts) if hosts else np.zeros(0, dtype=np.intp),
            np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64),
            {n: np.concatenate(c) for n, c in amounts.items()},
        )
    for array in (cols.hosts, cols.slots, *cols.amounts.values()):
        array.flags.writeable = False
    cols = cols._replace(amounts=MappingProxyType(dict(cols.amounts)))
    return cols


@dataclass(frozen=True, slots=True)
class Dispatched:
    """The job starts now with this allocation; ``backfilled`` when it starts ahead of a
    job of the session that holds a planned start (docs/backfill.md)."""

    job: str
    allocation: JobAllocation
    backfilled: bool = False


@dataclass(frozen=True, slots=True)
class PlannedStart:
    """When and where a pending job is planned to start (backfill): ``start`` in
    seconds, on ``allocation``, assuming it runs until ``end`` (``math.inf``: no
    estimate). A promise only while estimates hold (docs/backfill.md)."""

    start: float
    end: float
    allocation: JobAllocation


@dataclass(frozen=True, slots=True)
class Preemption:
    """The running jobs a pending job preempts (reason PREEMPTING), and the allocation
    it is promised: it starts there once they have released (docs/preemption.md).
    ``hosts[i]`` are the host indices ``victims[i]`` holds."""

    victims: tuple[str, ...]
    hosts: tuple[tuple[int, ...], ...]
    promise: JobAllocation


@dataclass(frozen=True, slots=True)
class Pending:
    """The job waits; ``cached`` when the unsatisfiable cache answered (spec Req 7 AC 5);
    ``preemption`` when it waits for the jobs it preempts to release; ``plan`` when
    backfill planned its start."""

    job: str
    info: PendInfo
    cached: bool = False
    preemption: Preemption | None = None
    plan: PlannedStart | None = None


Decision = Dispatched | Pending
