"""Job pickers (the spec's ``xce_job_picker_iface_t``): which pending job to try next.

A picker orders one queue's jobs for one session through a :class:`QueueCursor`; the
session merges the queues (priority high first; among queues of equal priority, the one
whose next job was submitted first). Builtins:

- ``fcfs``: submit time, then arrival order; a job that cannot start is pended and the
  next one tried.
- ``strict``: as fcfs, but the queue stops at its first job that cannot start (strict
  FIFO, as Slurm's main scheduler): later jobs pend as ``QUEUE_BLOCKED``.
- ``fairshare``: LSF-style user fairshare within the queue. A user's dynamic priority is
  ``share / (1 + slots)``, where ``share`` is the queue's ``shares[user]`` (else
  ``shares["default"]``, else 1) and ``slots`` the slots the user's jobs of this queue
  hold: running at session start plus dispatched so far this session. The user with the
  highest priority offers their next job (FCFS among their own); ties go to the earlier
  submitted job.

Third-party pickers are found through the entry-point group ``xce.pickers`` (an entry
point loads a class or factory called with no arguments).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

from xce.alloc import Decision, Dispatched, Pending
from xce.cluster import ClusterState, PendingJob, Queue
from xce.errors import InputError, RegistryError

__all__ = [
    "FairsharePicker",
    "FcfsPicker",
    "JobPicker",
    "Pick",
    "PickerRegistry",
    "QueueCursor",
    "StrictPicker",
    "default_pickers",
    "fairshare_priority",
]

PICKER_GROUP = "xce.pickers"


@dataclass(frozen=True, slots=True)
class Pick:
    """A job offered for allocation; ``blocked_by`` names the job it must wait behind
    (then it pends as ``QUEUE_BLOCKED`` without being allocated)."""

    job: PendingJob
    blocked_by: str | None = None


@runtime_checkable
class QueueCursor(Protocol):
    """One queue's jobs in one session, in its picker's order.

    - ``peek()`` returns the job the queue would offer next without taking it (None
      when the queue has no job left); it must not change the cursor.
    - ``pop()`` takes that job (the same one ``peek`` returned).
    - ``blocks_rest`` (optional attribute, default False): True if, once a pick is
      blocked, every later pick of this cursor is blocked too — then a session that only
      acts on dispatches (the simulator) may stop asking this cursor.
    - ``feedback(pick, decision)`` reports the decision on a popped pick. It is called
      for every pick, before the next ``peek``/``pop`` of this cursor, when
      ``needs_feedback`` is True; otherwise it may be called later or not at all, and the
      cursor's order must not depend on it (that lets the threaded pipeline run ahead).
    """

    needs_feedback: bool

    def peek(self) -> Pick | None: ...

    def pop(self) -> Pick | None: ...

    def feedback(self, pick: Pick, decision: Decision) -> None: ...


@runtime_checkable
class JobPicker(Protocol):
    """Contract of a picker: ``name`` (unique), and ``start`` called once per queue per
    session, at session start, with the queue's pending jobs (in file/arrival order) and
    the state; it returns a fresh :class:`QueueCursor`."""

    name: str

    def start(
        self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState
    ) -> QueueCursor: ...


def _fcfs_key(job: PendingJob) -> tuple[float, int]:
    return (job.submit_time, job.order)


class _ListCursor:
    """Jobs in a fixed order."""

    needs_feedback = False

    def __init__(self, jobs: Sequence[PendingJob]) -> None:
        self._jobs = sorted(jobs, key=_fcfs_key)
        self._i = 0

    def peek(self) -> Pick | None:
        return Pick(self._jobs[self._i]) if self._i < len(self._jobs) else None

    def pop(self) -> Pick | None:
        pick = self.peek()
        self._i += 1
        return pick

    def feedback(self, pick: Pick, decision: Decision) -> None:
        return None


class FcfsPicker:
    """First come, first served; a job that cannot start does not hold the queue."""

    name = "fcfs"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return _ListCursor(jobs)


class _StrictCursor(_ListCursor):
    needs_feedback = True
    blocks_rest = True

    def __init__(self, jobs: Sequence[PendingJob]) -> None:
        super().__init__(jobs)
        self._head: str | None = None

    def peek(self) -> Pick | None:
        pick = super().peek()
        return Pick(pick.job, self._head) if pick is not None and self._head else pick

    def feedback(self, pick: Pick, decision: Decision) -> None:
        if self._head is None and isinstance(decision, Pending):
            self._head = pick.job.id


class StrictPicker:
    """Strict FIFO per queue: the queue stops at its first job that cannot start."""

    name = "strict"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return _StrictCursor(jobs)


def fairshare_priority(share: float, slots: float) -> float:
    """A user's dynamic priority: their share over (1 + the slots they hold)."""
    return share / (1.0 + slots)


class _FairshareCursor:
    needs_feedback = True

    def __init__(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> None:
        self._by_user: dict[str, list[PendingJob]] = {}
        for job in sorted(jobs, key=_fcfs_key):
            self._by_user.setdefault(job.user, []).append(job)
        self._next = dict.fromkeys(self._by_user, 0)
        self._slots: dict[str, float] = {}
        for run in state.running:
            if run.queue == queue.name:
                self._slots[run.user] = self._slots.get(run.user, 0.0) + run.slots
        default = queue.shares.get("default", 1.0)
        self._share = {u: queue.shares.get(u, default) for u in self._by_user}

    def _best(self) -> str | None:
        best: tuple[float, float, int] | None = None
        chosen = None
        for user, jobs in self._by_user.items():
            i = self._next[user]
            if i >= len(jobs):
                continue
            prio = fairshare_priority(self._share[user], self._slots.get(user, 0.0))
            key = (-prio, *_fcfs_key(jobs[i]))
            if best is None or key < best:
                best, chosen = key, user
        return chosen

    def peek(self) -> Pick | None:
        user = self._best()
        return Pick(self._by_user[user][self._next[user]]) if user is not None else None

    def pop(self) -> Pick | None:
        user = self._best()
        if user is None:
            return None
        self._next[user] += 1
        return Pick(self._by_user[user][self._next[user] - 1])

    def feedback(self, pick: Pick, decision: Decision) -> None:
        if isinstance(decision, Dispatched):
            user = pick.job.user
            self._slots[user] = self._slots.get(user, 0.0) + decision.allocation.slots


class FairsharePicker:
    """User fairshare within a queue (see the module docstring for the formula)."""

    name = "fairshare"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return _FairshareCursor(queue, jobs, state)


PickerFactory = Callable[[], JobPicker]


class PickerRegistry:
    """Pickers by name; duplicate names are refused."""

    def __init__(self) -> None:
        self._pickers: dict[str, JobPicker] = {}

    def register(self, picker: JobPicker) -> None:
        if picker.name in self._pickers:
            raise RegistryError(f"a picker named {picker.name!r} is already registered")
        self._pickers[picker.name] = picker

    def get(self, name: str) -> JobPicker:
        """The picker called ``name``; an unknown name is bad input."""
        picker = self._pickers.get(name)
        if picker is None:
            known = ", ".join(sorted(self._pickers))
            raise InputError(f"unknown picker {name!r} (known: {known})")
        return picker

    def names(self) -> list[str]:
        return list(self._pickers)

    def __iter__(self) -> Iterator[JobPicker]:
        return iter(self._pickers.values())

    def load_entry_points(self, group: str = PICKER_GROUP) -> None:
        """Register every picker that installed packages advertise in ``group``."""
        for ep in entry_points(group=group):
            factory: PickerFactory = ep.load()
            self.register(factory())


def default_pickers(*, plugins: bool = True) -> PickerRegistry:
    """The builtin pickers, plus (by default) those found through entry points."""
    registry = PickerRegistry()
    for picker in (FcfsPicker(), StrictPicker(), FairsharePicker()):
        registry.register(picker)
    if plugins:
        registry.load_entry_points()
    return registry
