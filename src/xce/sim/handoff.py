"""The plain replay's sessions that plan (issue 15): handed to the scheduling core.

A queue whose backfill policy plans (``BackfillPolicy.plans``: ``easy``,
``conservative``) changes a session only once one of its jobs cannot start: that job is
planned, and the jobs after it are placed on what the plan leaves. A session in which
every job starts decides exactly as without planning (the planner's view is then the
books: no planned hold, no reservation). For plain jobs that is known before the
session: a plain job fits iff it wants at most the slots free on the ok hosts (the
fill plan takes any host's free slots), and free slots only fall within a session.

So the plain replay keeps such a session (:meth:`CoreHandoff.native`): every job is new
(none pended in an earlier session, so none holds a plan or a placement hint from one)
and their tasks add up to at most the free slots. Any other session is run by the
simulation's own :class:`~xce.core.SchedulerCore`, the general path's code: the core is
first brought up to date (:meth:`CoreHandoff.sync`: the jobs that ended since it last
ran a session finish, then the jobs it does not know yet are submitted in arrival
order, and those of them running start, on their hosts, at their start times; jobs that
started and ended in between never reach it), the session runs, and its dispatches
start in both. What the general path records of a planned session (each job's planned
start in the first planned session that decides it, backfilled starts) is recorded
alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from xce.alloc import Dispatched, JobAllocation
from xce.alloc.outcome import Claim, ClaimRun
from xce.cluster import PendingJob
from xce.core.events import JobFinished, JobPreempted, JobStarted, JobSubmitted
from xce.errors import EventError, InternalError

if TYPE_CHECKING:
    from xce.sim.plain import Placed, PlainReplay

__all__ = ["CoreHandoff"]


class CoreHandoff:
    """What the simulation's core knows of a plain replay that plans, and the sessions
    it runs for it (see the module docstring)."""

    __slots__ = (
        "decided",
        "in_core",
        "incremental",
        "planning",
        "preempted",
        "preempts",
        "replay",
        "started_in_core",
    )

    def __init__(self, replay: PlainReplay, planning: list[bool]) -> None:
        self.replay = replay
        self.planning = planning  # per queue: its backfill policy plans
        self.in_core: set[int] = set()  # jobs submitted to the core, not finished there
        self.started_in_core: set[int] = set()  # of those, the ones running there
        self.decided: set[int] = set()  # jobs a planned session has decided (recorded)
        self.preempted = False  # the last session preempted: another follows at once
        # the engine's session shortcuts apply (every picker monotone, nothing plans)
        self.incremental = not any(planning) and all(o is None for o in replay.orders)
        queues = replay.sim.core.state.queues
        self.preempts = [  # per queue: it preempts another
            bool(queues[q.name].preempts) if q.name in queues else False
            for q in replay.queue_objects
        ]

    def native(self, new: list[int], old: int) -> bool:
        """Whether the session may be kept: ``old`` jobs pend from earlier sessions
        (none may), and the ``new`` jobs all fit the free slots together."""
        if old:
            return False
        replay = self.replay
        tasks = replay.tasks
        return sum(tasks[i] for i in new) <= replay.space.total

    def planned(self, new: list[int]) -> bool:
        """Whether a session over ``new`` jobs plans (some job's queue plans)."""
        queue_of, planning = self.replay.queue_of, self.planning
        return any(planning[queue_of[i]] for i in new)

    def sync(self) -> None:
        """Bring the core up to date (module docstring)."""
        replay = self.replay
        jobs = replay.sim.jobs
        table = replay.table
        running = replay.running
        ended = [i for i in self.started_in_core if i not in running]
        ended.sort(key=lambda i: (table.end[i], table.seq_end[i]))
        for i in ended:
            self._apply(JobFinished(jobs[i].id, float(table.end[i])))
            self.started_in_core.discard(i)
            self.in_core.discard(i)
        unknown = [i for i in replay.waiting() if i not in self.in_core]
        unknown += [i for i in running if i not in self.in_core]
        unknown.sort(key=lambda i: replay.arrival[i])
        for i in unknown:
            self._apply(JobSubmitted(replay.make_pending(jobs[i], 0)))
            self.in_core.add(i)
        for i in sorted((i for i in unknown if i in running), key=lambda i: running[i][2]):
            start, placed, _, _ = running[i]
            self._apply(JobStarted(jobs[i].id, _allocation(placed), start))
            self.started_in_core.add(i)

    def session(self, now: float, new: list[int]) -> list[int]:
        """One session run by the core at ``now`` (``new``: the jobs submitted at this
        instant); its dispatches started in both. Returns the jobs started."""
        replay = self.replay
        self.sync()
        core = replay.sim.core
        stats = replay.sim.stats
        if self.incremental and not replay.freed:
            jobs = self._candidates(new)
            if not jobs:
                return []
            result = core.run_session(jobs=jobs, skip_blocked=True, now=now)
        elif self.incremental and not any(replay.strict):
            result = core.run_session(jobs=self._may_start(), now=now)
        else:
            result = core.run_session(now=now)
        stats.decisions += result.stats.jobs
        planned = result.stats.now is not None
        index = replay.index
        started: list[int] = []
        for decision in result.decisions:
            i = index[decision.job]
            plan: tuple[float | None, bool] = (None, False)  # as the engine records it
            if planned and i not in self.decided:  # the first planned session deciding it
                self.decided.add(i)
                if isinstance(decision, Dispatched):
                    plan = (now, False)
                elif decision.plan is not None:
                    plan = (decision.plan.start, True)
            backfilled = isinstance(decision, Dispatched) and decision.backfilled
            replay.table.extras(i, 0, 0.0, backfilled, *plan)  # adds; keeps an earlier plan
            if isinstance(decision, Dispatched):
                if not backfilled:
                    replay.table.not_backfilled(i)
                self._apply(JobStarted(decision.job, decision.allocation, now))
                self.started_in_core.add(i)
                stats.backfilled += backfilled
                replay.start_placed(i, now, _placed(decision.allocation, replay))
                started.append(i)
            elif decision.preemption is not None:
                for victim in decision.preemption.victims:
                    self._preempt(index[victim], now)
                # it starts at once on what it was promised (as the engine does)
                promise = decision.preemption.promise
                self._apply(JobStarted(decision.job, promise, now))
                self.started_in_core.add(i)
                replay.start_placed(i, now, _placed(promise, replay))
                started.append(i)
                self.preempted = True
        return started

    def _candidates(self, new: list[int]) -> list[PendingJob]:
        """The engine's exact shortcut for pickers that are ``monotone_in_session`` with
        no policy that plans (``Simulation._candidates``): with nothing freed since the
        last session (no job ended or was preempted), a job that pended pends again and
        could not preempt either (what started since took only what was free), so only
        the new jobs are tried, but not those of a strict queue a job already holds (the
        queue's head pends for resources: plain jobs pend for nothing else)."""
        replay = self.replay
        queue_of, strict = replay.queue_of, replay.strict
        fresh = set(new)
        held = {queue_of[i] for i in replay.waiting() if i not in fresh and strict[queue_of[i]]}
        return [self._in_core(i) for i in new if queue_of[i] not in held]

    def _may_start(self) -> list[PendingJob]:
        """The engine's other exact shortcut there (no queue blocking at its head): a job
        wanting more slots than are free pends without charging anything, unless its
        queue preempts; every other pending job is tried."""
        replay = self.replay
        free, tasks, queue_of = replay.space.total, replay.tasks, replay.queue_of
        return [
            self._in_core(i)
            for i in replay.waiting()
            if tasks[i] <= free or self.preempts[queue_of[i]]
        ]

    def _in_core(self, i: int) -> PendingJob:
        """Pending job ``i`` as the core numbered it."""
        job_id = self.replay.sim.jobs[i].id
        pending = self.replay.sim.core.pending(job_id)
        if pending is None:
            raise InternalError(f"job {job_id} pends in the replay, not in the core")
        return pending

    def _preempt(self, victim: int, now: float) -> None:
        """``victim`` is preempted now and goes back to its queue, in both (as the
        engine's ``_preempt``: released, its work lost, submitted again)."""
        replay = self.replay
        job = replay.sim.jobs[victim]
        self._apply(JobPreempted(job.id, now))
        self.started_in_core.discard(victim)
        replay.preempt(victim, now)
        self._apply(JobSubmitted(replay.make_pending(job, 0)))

    def _apply(self, event: JobSubmitted | JobStarted | JobFinished | JobPreempted) -> None:
        try:
            self.replay.sim.core.apply(event)
        except EventError as err:  # the replay's own state does not fit the core's: a bug
            raise InternalError(str(err)) from err


def _allocation(placed: Placed) -> JobAllocation:
    """The plain replay's placement as the core's allocation (slots only)."""
    hosts, slots, lowest, count = placed
    if hosts is None:
        if count == 1:
            return JobAllocation((Claim(lowest, int(slots[0]), ()),))
        return JobAllocation((ClaimRun(np.arange(lowest, lowest + count), int(slots[0])),))
    return JobAllocation(
        tuple(
            Claim(int(h), int(s), ()) for h, s in zip(hosts.tolist(), slots.tolist(), strict=True)
        )
    )


def _placed(allocation: JobAllocation, replay: PlainReplay) -> Placed:
    """The core's allocation of a plain job as the replay's placement (hosts in claim
    order), charged to its free slots."""
    columns = allocation.columns()
    hosts = columns.hosts
    slots = columns.slots.astype(np.int64)
    if len(np.unique(hosts)) != len(hosts):
        raise InternalError("a plain job's allocation names a host twice")
    replay.space.charge(hosts, slots)
    return hosts.astype(replay.space.small), slots, int(hosts.min()), len(hosts)
