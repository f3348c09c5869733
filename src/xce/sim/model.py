"""What a simulation consumes and produces: workload jobs in, job records out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import numpy.typing as npt

__all__ = [
    "BSLD_TAU",
    "HostColumn",
    "JobRecord",
    "SimJob",
    "SlotColumn",
    "Timeline",
    "bounded_slowdown",
]

BSLD_TAU = 10.0
"""Seconds: runtimes shorter than this count as this long in the bounded slowdown."""


@dataclass(frozen=True, slots=True)
class SimJob:
    """One job of a workload: when it arrives, what it asks for, how long it runs."""

    id: str
    submit: float
    runtime: float
    tasks: int | None  # None: a compound requirement fixes its own task count
    user: str = "nobody"
    queue: str = "normal"
    project: str = "default"
    resreq: str = ""
    requested_time: float | None = None  # the user's walltime estimate, if known
    partition: str | None = None  # kept from SWF traces; not used for placement
    # where the job was written (a jobs file, its line), for errors found later
    source: str | None = field(default=None, compare=False, repr=False)
    line: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class JobRecord:
    """How one job went: ``start``/``end`` are None for a job that never ran."""

    job: SimJob
    start: float | None
    end: float | None
    hosts: Sequence[str] = ()  # one entry per claim (a host may appear twice)
    host_slots: Sequence[int] = ()  # slots of each claim, parallel to ``hosts``
    slots: int = 0
    alternative: int | None = None
    killed: bool = False  # ended at its requested time (--enforce-walltime)
    unrunnable: str | None = None  # why it can never run on this cluster
    # (start, end) positions in the run's order of starts and ends: several sessions can
    # happen at one time (a 0-second job ends at the time it starts), so the end-of-run
    # check orders starts and ends of one time by these
    sequence: tuple[int, int] | None = None
    preempted: int = 0  # times it was preempted (each time requeued, restarted)
    lost_slot_seconds: float = 0.0  # the work of its preempted runs
    backfilled: bool = False  # started ahead of a job holding a planned start
    # its planned start in the first session that decided it, if that session planned
    # (backfill or reservations): that session's
    # time if it started there, its plan's start if it was planned, else None
    planned_start: float | None = None
    planned_ahead: bool = False  # that session planned it (it did not start there)

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.job.submit

    @property
    def ran(self) -> float | None:
        """Seconds it held its hosts."""
        return None if self.start is None or self.end is None else self.end - self.start

    @property
    def bsld(self) -> float | None:
        if self.wait is None or self.ran is None:
            return None
        return bounded_slowdown(self.wait, self.ran)


class _Column:
    """A read-only numpy column seen as a sequence, equal to any equal sequence."""

    __slots__ = ("array",)

    def __init__(self, array: npt.NDArray[Any]) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def _items(self) -> tuple[Any, ...]:
        return tuple(self.array.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Column):
            return self._items() == other._items()
        if isinstance(other, tuple):
            return self._items() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items())

    def __repr__(self) -> str:
        return repr(self._items())


class SlotColumn(_Column, Sequence[int]):
    """The slots of a job's claims, kept as the allocation's array."""

    __slots__ = ()

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...
    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        if isinstance(index, slice):
            return tuple(self.array[index].tolist())
        return int(self.array[index])

    def __iter__(self) -> Iterator[int]:
        return iter(self.array.tolist())


class HostColumn(_Column, Sequence[str]):
    """The hosts of a job's claims: indices (``array``) into the cluster's ``names``."""

    __slots__ = ("names",)

    def __init__(self, array: npt.NDArray[np.integer[Any]], names: Sequence[str]) -> None:
        super().__init__(array)
        self.names = names

    def _items(self) -> tuple[Any, ...]:
        names = self.names
        return tuple(names[i] for i in self.array.tolist())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return self._items()[index]
        return self.names[int(self.array[index])]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())


def bounded_slowdown(wait: float, runtime: float, tau: float = BSLD_TAU) -> float:
    """max(1, (wait + runtime) / max(runtime, tau))."""
    return max(1.0, (wait + runtime) / max(runtime, tau))


@dataclass(slots=True)
class Timeline:
    """The cluster over simulated time, one sample per event time: busy slots and the
    number of pending jobs just after that time's session (step functions)."""

    total_slots: int
    times: list[float]
    busy: list[int]
    pending: list[int]

    def add(self, time: float, busy: int, pending: int) -> None:
        if self.times and self.times[-1] == time:
            self.busy[-1], self.pending[-1] = busy, pending
        else:
            self.times.append(time)
            self.busy.append(busy)
            self.pending.append(pending)
