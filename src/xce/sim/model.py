"""What a simulation consumes and produces: workload jobs in, job records out."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BSLD_TAU", "JobRecord", "SimJob", "Timeline", "bounded_slowdown"]

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


@dataclass(frozen=True, slots=True)
class JobRecord:
    """How one job went: ``start``/``end`` are None for a job that never ran."""

    job: SimJob
    start: float | None
    end: float | None
    hosts: tuple[str, ...] = ()  # one entry per claim (a host may appear twice)
    host_slots: tuple[int, ...] = ()  # slots of each claim, parallel to ``hosts``
    slots: int = 0
    alternative: int | None = None
    killed: bool = False  # ended at its requested time (--enforce-walltime)
    unrunnable: str | None = None  # why it can never run on this cluster

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
