"""A planned session that repeats the last one's decisions (an exact shortcut of
backfill; docs/backfill.md "Sessions that repeat the last plan").

Under backfill every session plans the whole queue afresh. When nothing happened since
the last planned session at ``t0`` but submissions (and the starts of the jobs it
dispatched, at ``t0``), and time moved to ``t1`` without passing an instant at which
the last plan's availability changes, the old jobs' decisions and plans come out the
same, job by job, for as long as the pick order is the same. :class:`PlanMemory` keeps
the last session's decisions and hands them back; the session replays each one's hold
in a plan made afresh (so the plan is exactly the one planning would have made), and
decides normally from the first job that differs (a new job, a job in another place).

Why a repeated job decides the same at ``t1`` (all of these are checked):

- The state is the one the job saw at ``t0``: only jobs picked before every pending
  job started at ``t0`` (so each pending job saw all of them), nothing ended, no host,
  queue, limit or shared resource changed (the core says so: only submissions and those
  starts were applied), no preemption. An advance reservation's window opens and closes
  with time alone: its bounds count among the instants below, and between two of them
  what it keeps from a job only grows as time passes (a run from ``t1`` overlaps every
  window one from ``t0`` did, and must end by the same end of its own reservation).
- The profile is the same from ``t1`` on: a running job's end at or before ``t0`` is
  "now" at both; no end, no planned start or end, no reservation bound falls in
  ``(t0, t1]``; the jobs started at ``t0`` give back at the same estimated ends. Each
  hold before the job is the same (by induction), so are the candidate instants after
  ``t1`` and the views on them.
- The job cannot start now, nor at ``t1``: its placement can only stop succeeding as
  availability falls (no select that reads availability), and the lowest availability
  over ``[t1, t1 + d)`` is at most that over ``[t0, t0 + d)``, as the profile does not
  change in between. Its last plan did not start at ``t0`` — unless it has no estimate:
  over ``[t1, inf)`` and ``[t0, inf)`` the lowest availability is the same, so it is
  planned again at ``t1`` on the same hosts, and holds them from ``t1`` on as before.
- It is placed with the same hint (the hosts of its last placement): a job planned at
  ``t0`` on the hosts it was hinted keeps that hint.

A repeated RESERVED pend's message is made again (it names the end of the job's run).
A job naming a reservation stops the repeat: it is decided on a view of its
reservation's hosts, not by the allocator on the books, and while it waits for the
window its message names times from now; it is decided again, as is every job after it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from xce.alloc import Decision, Dispatched, JobAllocation, Pending, PlannedStart
from xce.cluster import PendingJob

__all__ = ["Decided", "PlanMemory", "Started"]

Started = tuple[str, float, JobAllocation]
"""A job start applied since the last session: (job, time, allocation)."""

IndexArray = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class Decided:
    """A pending job's decision in a planned session, with what it was decided from."""

    job: PendingJob
    blocked_by: str | None
    decision: Pending
    hint: IndexArray | None  # the hosts of its last placement, tried first
    considered: bool  # offered a plan (counted by its queue's BackfillPolicy.plans_job)


@dataclass(frozen=True, slots=True)
class _Last:
    now: float
    next_change: float  # the first instant after ``now`` at which the plan changes
    started: dict[str, JobAllocation]
    decided: list[Decided]


class PlanMemory:
    """The last planned session's pending decisions, in pick order, and this session's
    position in them. A session calls :meth:`begin`, then for each pick :meth:`repeat`
    (and :meth:`note` when it decided the job itself), then :meth:`end`."""

    def __init__(self) -> None:
        self._last: _Last | None = None
        self._repeating: list[Decided] | None = None
        self._since = 0.0  # the last session's time
        self._at = 0
        self._record: list[Decided] | None = None

    def begin(self, now: float, since: Sequence[Started] | None, usable: bool) -> None:
        """Start a session at ``now``. ``since``: the starts applied since the last
        session, when nothing else but submissions changed the state (None: unknown).
        ``usable``: the session may repeat and be repeated (planned, shortcuts on, no
        queue that preempts, every plan read)."""
        last, self._last = self._last, None
        self._repeating, self._at = None, 0
        self._record = [] if usable else None
        if not usable or last is None or since is None:
            return
        if not last.now <= now < last.next_change or len(since) != len(last.started):
            return
        for job, when, allocation in since:
            if when != last.now or last.started.get(job) is not allocation:
                return
        self._repeating, self._since = last.decided, last.now

    def repeat(
        self, job: PendingJob, blocked_by: str | None, hint: IndexArray | None, steady: bool
    ) -> Decided | None:
        """The last session's decision of the job picked now, if it repeats; None stops
        repeating for the rest of the session. ``hint``: the hosts the job would be
        placed on first now; ``steady``: its placement can only stop succeeding as
        availability falls (:func:`xce.alloc.planner.monotone`)."""
        entries = self._repeating
        if entries is None:
            return None
        at = self._at
        entry = entries[at] if at < len(entries) else None
        if (
            not steady
            or entry is None
            or entry.job is not job
            or entry.blocked_by != blocked_by
            or entry.job.reservation is not None  # decided on its reservation's view
            or not _same_hosts(entry.hint, hint)
            or not self._plan_repeats(entry)
        ):
            self._repeating = None
            return None
        self._at = at + 1
        return entry

    def _plan_repeats(self, entry: Decided) -> bool:
        """A plan repeats if it starts after the last session's time; or at it, when the
        job has no estimate: its plan is then made again at this session's time, on the
        same window's availability (from now on, unchanged), so on the same hosts, and
        it holds them from now on as before (its start moves to now: see ``moved``)."""
        plan = entry.decision.plan
        return plan is None or plan.start > self._since or math.isinf(plan.end)

    def moved(self, plan: PlannedStart, now: float) -> PlannedStart:
        """``plan`` as this session makes it again: one planned at the last session's
        time (no estimate) starts now."""
        return replace(plan, start=now) if plan.start == self._since else plan

    @property
    def repeating(self) -> bool:
        """Whether this session still repeats the last one."""
        return self._repeating is not None

    @property
    def recording(self) -> bool:
        """Whether this session's decisions are kept for the next one."""
        return self._record is not None

    def note(self, entry: Decided) -> None:
        """A pending decision of this session, in pick order (decided or repeated)."""
        if self._record is not None:
            self._record.append(entry)

    def end(
        self, now: float, decisions: Sequence[Decision], next_change: Callable[[], float] | None
    ) -> None:
        """The session is over: keep its decisions for the next one when every job it
        started was picked before every job left pending and one was left pending (a
        session that started all its jobs leaves the next one nothing to repeat).
        ``next_change`` gives the first instant after ``now`` at which its plan changes
        (asked only when kept: it may build the session's whole profile); None: keep
        nothing."""
        record, self._record, self._repeating = self._record, None, None
        if not record or next_change is None:
            return
        started: dict[str, JobAllocation] = {}
        waiting = False
        for d in decisions:
            if isinstance(d, Dispatched):
                if waiting:
                    return  # a job started past a pending one: that one saw less
                started[d.job] = d.allocation
            else:
                waiting = True
        if len(record) + len(started) != len(decisions):
            return  # a pending decision not noted
        self._last = _Last(now, next_change(), started, record)

    def forget(self) -> None:
        self._last = self._repeating = self._record = None


def _same_hosts(a: IndexArray | None, b: IndexArray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a is b or bool(np.array_equal(a, b))
