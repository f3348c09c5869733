"""Events: the only way the scheduling core's state changes (sans-I/O).

A driver (``xce schedule``, the simulator, a daemon) feeds events to
:meth:`xce.core.SchedulerCore.apply` and applies the decisions sessions return as
``JobStarted`` events. An event naming an unknown job or host, or one that would leave
the state inconsistent (a host shrunk below what runs on it), is refused with an
:class:`~xce.errors.EventError` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xce.alloc import JobAllocation
from xce.cluster import HostStatus, Limit, PendingJob, Queue

__all__ = [
    "Event",
    "HostAdded",
    "HostChanged",
    "JobFinished",
    "JobKilled",
    "JobPreempted",
    "JobStarted",
    "JobSubmitted",
    "JobUpdated",
    "LimitsChanged",
    "QueuesChanged",
    "SharedChanged",
    "TimeLimitChanged",
]


@dataclass(frozen=True, slots=True)
class JobSubmitted:
    """A job joins the pending jobs (its ``order`` is assigned by the core)."""

    job: PendingJob


@dataclass(frozen=True, slots=True)
class JobStarted:
    """A pending job starts with an allocation (usually a session's decision)."""

    job_id: str
    allocation: JobAllocation
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class JobFinished:
    """A running job ended: what it held is free again."""

    job_id: str
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class JobKilled:
    """A pending or running job is removed (a running one frees what it held)."""

    job_id: str
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class JobPreempted:
    """A running job is preempted (docs/preemption.md): what it held is free again.
    Whether it comes back is the driver's choice (the simulator requeues it)."""

    job_id: str
    time: float = 0.0
    by: str | None = None  # the preemptor, when known


@dataclass(frozen=True, slots=True)
class HostAdded:
    """A new host, at the end of host order."""

    name: str
    slots: int
    resources: Mapping[str, float]
    attributes: Mapping[str, str | bool | float]
    status: HostStatus = HostStatus.OK


@dataclass(frozen=True, slots=True)
class HostChanged:
    """A host's status and/or consumable capacities change (None: unchanged)."""

    name: str
    status: HostStatus | None = None
    capacity: Mapping[str, float] | None = None


@dataclass(frozen=True, slots=True)
class SharedChanged:
    """A shared resource's total changes (it may not fall below what is held)."""

    name: str
    total: float


@dataclass(frozen=True, slots=True)
class LimitsChanged:
    limits: tuple[Limit, ...]


@dataclass(frozen=True, slots=True)
class QueuesChanged:
    queues: Mapping[str, Queue]
    default_picker: str | None = None


@dataclass(frozen=True, slots=True)
class TimeLimitChanged:
    """A pending or running job's requested time (its time limit, what planning
    assumes it runs) becomes ``requested_time`` (None: none), as ``scontrol update
    job TimeLimit=`` changes it; a predictor raising a prediction the job outlived
    (xce.sim.predicted) does the same."""

    job_id: str
    requested_time: float | None
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class JobUpdated:
    """A pending job's fields change (``scontrol update job``, ``qalter``, ``bmod``: a
    hold, a begin time, a dependency, a requirement); it keeps its place in arrival
    order (its ``order`` is the core's)."""

    job: PendingJob


Event = (
    JobSubmitted
    | JobStarted
    | JobFinished
    | JobKilled
    | JobPreempted
    | HostAdded
    | HostChanged
    | SharedChanged
    | LimitsChanged
    | QueuesChanged
    | TimeLimitChanged
    | JobUpdated
)
