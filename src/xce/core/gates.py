"""What keeps a job waiting before any resource is looked at: a hold, a begin time
still to come, a dependency on other jobs, an array's ``%N`` limit.

A job stopped at a gate pends with the gate's reason (``HELD``, ``BEGIN_TIME``,
``DEPENDENCY``, ``ARRAY_LIMIT``) and charges nothing, so it changes no other job's
decision; it holds no strict queue. When the session plans (backfill), a gate also
says the earliest instant the job may start, and the job is planned no earlier:

- a begin time: that time;
- a dependency on a running job: its estimated end (``after``: its start plus the
  delay); on a pending job: its planned end this session (``after``: its planned
  start), now plus its estimate if it started this session, and unknown (no plan)
  while it has no plan yet; an id the state does not hold is a job that has ended
  (satisfied). ``,`` takes the latest of the items, ``?`` the earliest;
  ``singleton``: the latest end of the running jobs of the same user and name;
- a held job: never (no plan).

Planning assumes every job ends as planned and successfully, so ``afternotok`` waits
for its job's end as ``afterany`` does (docs/state-file.md, "Dependencies").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from xce import timefmt
from xce.alloc import PendInfo, PendReason
from xce.cluster import ClusterState, PendingJob, RunningJob, estimate, estimated_end
from xce.cluster.jobflow import Dependency, DependencyItem, DepKind

__all__ = ["Gate", "Gates"]

_UNKNOWN = math.nan  # an earliest start not known yet (a pending job without a plan)


@dataclass(frozen=True, slots=True)
class Gate:
    """Why a job waits at a gate, and the earliest it may start (None: never planned,
    NaN: not known this session)."""

    info: PendInfo
    earliest: float | None


class Gates:
    """The gates of one session over ``state`` at ``now``; told of each decision
    (:meth:`started`, :meth:`planned`) so later jobs see the earlier ones."""

    def __init__(self, state: ClusterState, now: float) -> None:
        self.now = now
        self._state = state
        self._running: Mapping[str, RunningJob] = {r.id: r for r in state.running}
        self._pending = {j.id: j for j in state.jobs}
        self._started: dict[str, float] = {}  # this session: job -> estimated end
        self._planned: dict[str, tuple[float, float]] = {}  # job -> (start, end)
        self._names: dict[tuple[str, str], float] = {}  # (user, name) -> latest end
        for r in state.running:
            if r.name is not None:
                self._note_name(r.user, r.name, self._running_end(r))
        self._array_running: Counter[str] = Counter(
            r.array_job for r in state.running if r.array_job is not None
        )
        self._array_ends: dict[str, list[float]] = {}
        self._array_began: dict[str, float] = {}  # record -> its running tasks' last start
        for r in state.running:
            if r.array_job is not None:
                self._array_ends.setdefault(r.array_job, []).append(self._running_end(r))
                began = self._array_began.get(r.array_job, r.start_time)
                self._array_began[r.array_job] = max(began, r.start_time)

    # --- what the session tells ------------------------------------------------------
    def started(self, job: PendingJob) -> None:
        """``job`` was dispatched in this session (it runs from now)."""
        end = self.now + self._estimate(job)
        self._started[job.id] = end
        if job.name is not None:
            self._note_name(job.user, job.name, end)
        if job.array_job is not None:
            self._array_running[job.array_job] += 1
            self._array_ends.setdefault(job.array_job, []).append(end)
            self._array_began[job.array_job] = self.now

    def planned(self, job_id: str, start: float, end: float) -> None:
        """Job ``job_id`` (pending) is planned over ``[start, end)`` this session."""
        self._planned[job_id] = (start, end)

    # --- what a job waits on ---------------------------------------------------------
    def check(self, job: PendingJob) -> Gate | None:
        """The gate ``job`` waits at now, or None when only resources decide."""
        if job.hold:
            return Gate(PendInfo(PendReason.HELD, "held: it does not start until released"), None)
        waits: list[str] = []
        earliest = self.now
        if job.dependency is not None:
            when, waiting = self._dependency(job, job.dependency)
            if waiting:
                waits.append(waiting)
                earliest = max(earliest, when) if not math.isnan(when) else _UNKNOWN
        if job.begin_time is not None and job.begin_time > self.now:
            if not math.isnan(earliest):
                earliest = max(earliest, job.begin_time)
            begins = timefmt.when(job.begin_time, self.now, self._state.timezone)
            # a session before the job's submission (ClusterState.seen_at) waits for it
            late = job.begin_time == job.submit_time
            what = "it is submitted at" if late else "its begin time is"
            if not waits:
                return Gate(PendInfo(PendReason.BEGIN_TIME, f"{what} {begins}"), earliest)
            waits.append(f"and {what} {begins}")
        if waits:
            return Gate(PendInfo(PendReason.DEPENDENCY, "; ".join(waits)), earliest)
        record = self._pending.get(job.array_job) if job.array_job is not None else None
        return self.array_limit(record) if record is not None else None

    def running_tasks(self, record_id: str) -> int:
        """How many tasks of array ``record_id`` run (started this session included)."""
        return self._array_running[record_id]

    def array_limit(self, record: PendingJob) -> Gate | None:
        """The record's ``%N`` limit, when as many of its tasks run as it allows; the
        earliest start is the earliest end of one of them."""
        array = record.array
        if array is None or array.limit is None:
            return None
        running = self._array_running[record.id]
        if running < array.limit:
            return None
        ends = self._array_ends.get(record.id, [])
        message = f"{running} of its tasks run, as many as its %{array.limit} allows"
        return Gate(PendInfo(PendReason.ARRAY_LIMIT, message), min(ends, default=_UNKNOWN))

    def _dependency(self, job: PendingJob, dep: Dependency) -> tuple[float, str]:
        """(earliest start, what it still waits for: "" when satisfied now)."""
        times: list[float] = []
        waiting: list[str] = []
        left_out = self._state.left_out
        for item in dep.items:
            when = self._item_time(job, item)
            if when is not None:
                times.append(when)
                gone = item.job is not None and item.job.removesuffix("_*") in left_out
                note = f"; {item.job} is an INVALID entry, left out: it never runs" if gone else ""
                waiting.append(_describe(item) + note)
            elif dep.any_of:
                return self.now, ""  # one item holds: satisfied
            else:
                times.append(self.now)
        if not waiting:
            return self.now, ""
        pick: Callable[[list[float]], float] = min if dep.any_of else max
        known = [t for t in times if not math.isnan(t)]
        if len(known) < len(times) and not dep.any_of:
            when = _UNKNOWN
        else:
            when = pick(known) if known else _UNKNOWN
        joiner = " or " if dep.any_of else ", "
        return when, "waits for " + joiner.join(waiting)

    def _item_time(self, job: PendingJob, item: DependencyItem) -> float | None:
        """None when ``item`` holds now (the job it names has ended, or has started as
        ``after`` asks); else the earliest instant it may hold (NaN: not known this
        session). A job that still runs is waited for whatever its estimate says, even
        when it overruns it (planned to end now)."""
        if item.kind is DepKind.SINGLETON:
            if job.name is None:
                return None
            return self._names.get((job.user, job.name))
        assert item.job is not None
        job_id = item.job.removesuffix("_*")  # Slurm's "every task of array 412"
        after_start = item.kind is DepKind.AFTER
        if self._task_pending(job_id):  # a task its record still holds
            return _UNKNOWN
        running = self._running.get(job_id)
        if running is not None:
            if after_start:
                began = running.start_time + item.delay
                return began if began > self.now else None
            return self._running_end(running)
        if job_id in self._started:  # dispatched in this very session: not begun yet
            return self.now + item.delay if after_start else self._started[job_id]
        if job_id in self._pending:
            plan = self._planned.get(job_id)
            if plan is None:
                return _UNKNOWN
            return plan[0] + item.delay if after_start else plan[1]
        ends = self._array_ends.get(job_id)
        if ends:  # an array whose record is gone and whose tasks run: its last end
            if after_start:  # or its last task's start
                began = self._array_began[job_id] + item.delay
                return began if began > self.now else None
            return max(ends)
        if job_id in self._state.left_out:  # an INVALID entry: it never runs, never ends
            return _UNKNOWN
        return None  # not in the state: it has ended

    def _task_pending(self, job_id: str) -> bool:
        """Whether ``job_id`` is task ``REC_N`` of a pending array record holding N."""
        record_id, sep, index = job_id.rpartition("_")
        record = self._pending.get(record_id) if sep and index.isdigit() else None
        return record is not None and record.array is not None and int(index) in record.array

    def _note_name(self, user: str, name: str, end: float) -> None:
        key = (user, name)
        self._names[key] = max(self._names.get(key, end), end)

    def _running_end(self, r: RunningJob) -> float:
        est = estimate(r.requested_time, self._state.queues.get(r.queue))
        return estimated_end(r.start_time, est, self.now)

    def _estimate(self, job: PendingJob) -> float:
        return estimate(job.requested_time, self._state.queues.get(job.queue))


def _describe(item: DependencyItem) -> str:
    if item.kind is DepKind.SINGLETON:
        return "the running job of the same user and name to end (singleton)"
    what = {
        DepKind.AFTER: "to start",
        DepKind.AFTERANY: "to end",
        DepKind.AFTEROK: "to end successfully",
        DepKind.AFTERNOTOK: "to end unsuccessfully",
        DepKind.AFTERCORR: "to end successfully (its corresponding task)",
        DepKind.AFTERBURSTBUFFER: "to end and stage out",
    }[item.kind]
    delay = f" plus {timefmt.duration(item.delay)}" if item.delay else ""
    return f"job {item.job} {what}{delay} ({item.kind.value})"
