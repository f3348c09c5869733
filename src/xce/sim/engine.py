"""The simulation engine: a deterministic discrete-event loop around the real core.

Events are kept in a heap of ``(time, priority, sequence, ...)``: at one time, finishes
come first (what they free is available), then submissions, then the session. Sessions
run at every event time, or every ``interval`` seconds. Dispatched jobs start at the
session's time and finish after their runtime (or their requested time, with
``enforce_walltime``). The same inputs give the same schedule, always.

Sessions with an interval are at ``k * interval`` for whole k, strictly increasing by
construction (:func:`next_session_time`), at least :data:`MIN_INTERVAL` apart.

**Exact session shortcuts** (``incremental``, on by default; used only when every queue's
picker declares ``monotone_in_session``, as ``fcfs`` and ``strict`` do, see
:class:`~xce.core.pickers.JobPicker`; the engine asks the picker, never its name):
availability only falls, and limit usage only rises, between two sessions with no finish
in between, so a job that pended in the last session pends again. Such a session tries
only the jobs submitted since (in a queue whose picker declares ``blocks_queue_at_head``,
a *strict* queue, not those of a *settled* queue: one whose first pending job waits for
resources and is subject to no limit, so it holds the queue again), plus pending jobs
whose select could turn true as resources fall; a strict queue that is not settled (its
first pending job waits on a limit, or is subject to one: its reason may change) is
tried whole whenever anything is tried or the last session started a job. A session
stops trying a strict queue at its head. Tests check the schedule is identical with
``incremental=False``.

**Preemption** (docs/preemption.md): a job that pends ``PREEMPTING`` starts at once on
its promise, its victims released by ``JobPreempted`` and requeued; a full session
follows at the same time. The shortcuts above stay exact: a preemption counts as a
finish (resources were freed), a job of a preempting queue is tried even when it wants
more slots than are free, and a failed preemption stays failed until something is freed
(a victim that started since took only free resources).

**Dependencies and think time** (:mod:`xce.sim.flow`, issue 28): a job submitted by
SWF feedback is submitted when its preceding job ends plus its think time; a job with a
dependency is given to the core with what it still waits for, updated (``JobUpdated``)
as the jobs it names start and end, and removed, recorded as never run, when it can
never hold. Each update counts as freeing resources (a full session follows), and an
``after:X+M`` item holds at an event of its own (a *wake*), so the shortcuts above stay
exact: a gate never opens between two events.

**Begin times and holds** (a jobs file's ``begin_time`` and ``hold``, as a state
file's: :mod:`xce.core.gates`): the core holds a job until its begin time, planning it
no earlier; the instant it comes is an event of its own that counts as freeing
resources (a full session follows), so the shortcuts above stay exact. Nothing in a
replay releases a held job: it pends ``HELD`` to the end and is reported never started.

**Never silently wrong**: a job that no state of the cluster could ever run is reported
as unrunnable (:meth:`Simulation.triage`), not looped over; a job still pending when
nothing is left to happen is reported as never started, with its last pend reason;
:func:`verify` checks at the end that every job ended exactly once or was reported, and
that no host's slots were ever over-allocated; a violation is an
:class:`~xce.errors.InternalError`.
"""

from __future__ import annotations

import gc
import heapq
import math
import time
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from xce.alloc import (
    Allocator,
    AllocOptions,
    Decision,
    Dispatched,
    Pending,
    PendReason,
    default_registry,
)
from xce.cluster import SLOTS, ClusterState, PendingJob, RunningJob
from xce.cluster.schema import MAX_NUMBER, check_replay_time
from xce.core import (
    JobFinished,
    JobKilled,
    JobPreempted,
    JobStarted,
    JobSubmitted,
    JobUpdated,
    SchedulerCore,
    SessionStats,
    TimeLimitChanged,
    job_request,
)
from xce.core.pickers import (
    ClockedPicker,
    JobPicker,
    PickerRegistry,
    PickerTraits,
    QueueHold,
    default_pickers,
    holds_queue,
    picker_traits,
)
from xce.errors import EventError, InputError, InternalError, clip
from xce.preempt import PreemptorRegistry, default_preemptors
from xce.sim.caveats import endless_running, ignored_jobs
from xce.sim.checks import check_against, check_workload
from xce.sim.flow import Changes, View, check_flow
from xce.sim.idle import SAFE_RATIO, PlanSignature, chain_at, plan_signature, quiet_until
from xce.sim.model import HostIndices, RecordTable, SimJob, Timeline, pending_job, run_length
from xce.sim.options import MIN_INTERVAL, SimOptions
from xce.sim.plain import PlainReplay, plain_replay
from xce.sim.predicted import Predictions, ShadowPlans, check_backfill_with, shadow_state
from xce.sim.result import PROGRESS_EVERY, Progress, SimResult, SimStats
from xce.sim.verify import verify

__all__ = [
    "MIN_INTERVAL",
    "SimOptions",
    "SimResult",
    "SimStats",
    "Simulation",
    "forever_state",
    "next_session_time",
    "verify",
]

SlotArray = npt.NDArray[np.int64]

_FINISH, _SUBMIT, _SESSION, _OUTLIVED, _WAKE, _BEGIN = 0, 1, 2, 3, 4, 5
_EDGE = "reservation"  # a session event's "job" at an advance reservation's bound
_BATCH = 64  # pending jobs per strict batch (see Simulation._strict_in_batches)
_ORDER_SCAN = 256  # instants a quiet under a ClockedPicker looks ahead (_order_quiet)


class Simulation:
    """One simulation of ``jobs`` on ``cluster`` (its pending jobs are not replayed: a
    warning says so, :func:`~xce.sim.caveats.ignored_jobs`)."""

    def __init__(
        self,
        cluster: ClusterState,
        jobs: Sequence[SimJob],
        options: SimOptions | None = None,
        progress: Progress | None = None,
        pickers: PickerRegistry | None = None,
        preemptors: PreemptorRegistry | None = None,
        *,
        progress_every: int = PROGRESS_EVERY,
    ) -> None:
        self.options = options or SimOptions()
        _check_interval(self.options.interval)
        if isinstance(progress_every, bool) or not isinstance(progress_every, int):
            raise InputError(f"progress_every must be a whole number, got {progress_every!r}")
        if progress_every < 1:
            raise InputError(f"progress_every must be at least 1, got {progress_every}")
        self.jobs = (
            [j if j.queue == "normal" else replace(j, queue="normal") for j in jobs]
            if self.options.single_queue
            else list(jobs)
        )
        check_workload(self.jobs)
        # who waits for whom (xce.sim.flow); None: no job does
        self.flow, flow_warnings = check_flow(self.jobs)
        empty = replace(cluster, jobs=())
        check_backfill_with(self.options.backfill_with, self.options.predictor)
        self._predictions = (
            Predictions(self.options.predictor, empty.queues)
            if self.options.predictor is not None
            else None
        )
        # The simulator reports no per-host breakdowns of pend reasons: skip computing them.
        self._registry, picker = _pickers(pickers, self.options.picker)
        preemptor = self.options.preemptor
        if isinstance(preemptor, str):
            preemptor = (preemptors or default_preemptors()).get(preemptor)
        allocators = self.allocators = default_registry(extra=self.options.allocators)
        self.picker_registry = self._registry

        def new_core(state: ClusterState) -> SchedulerCore:
            return SchedulerCore(
                state,
                registry=allocators,
                picker=picker,
                options=_alloc_options(self.options.fast_paths),
                pickers=self._registry,
                preemptor=preemptor,
                backfill=self.options.backfill,
            )

        self.core = new_core(empty)
        self._shadow = (
            ShadowPlans(new_core(shadow_state(empty)))
            if self._predictions is not None and self.options.backfill_with == "requested"
            else None
        )
        self._shadow_outlives: list[tuple[float, str]] = []  # (when, job): see _outlive_at
        # answers "could this job ever run here?", with the same allocator plugins
        self._probe = Allocator(
            forever_state(empty), default_registry(extra=self.options.allocators)
        )
        self._never: dict[tuple[object, ...], tuple[str | None, bool]] = {}
        self.progress = progress
        self.progress_every = progress_every  # instants between two progress calls
        self._heap: list[tuple[float, int, int, str]] = []
        self._seq = 0
        self._finish_seq: dict[str, int] = {}  # running job -> its finish event
        self._cancelled: set[int] = set()  # finish events of runs cut short by preemption
        self._cut: dict[str, float] = {}  # initial running work preempted -> when
        self._preempted: dict[str, tuple[int, float]] = {}  # job -> (times, lost slot-s)
        # jobs that ended or can never run, by workload index (made by _begin_run: the
        # plain replay keeps its own)
        self._records = RecordTable((), self.core.hosts.names)
        self._index: dict[str, int] = {}
        # job -> (planned start, planned ahead) from the first session that decided it
        self._planned: dict[str, tuple[float | None, bool]] = {}
        self._backfilled: set[str] = set()  # jobs whose (last) start was a backfill
        # jobs running now: (job, start, hosts, host slots, slots, alternative, killed, step)
        self._started: dict[
            str, tuple[SimJob, float, HostIndices, SlotArray, int, int | None, bool, int]
        ] = {}
        self._steps = 0  # starts and ends so far (JobRecord.sequence)
        self._new: list[PendingJob] = []
        self._freed = True
        # strict queues with pending jobs (after each session): settled ones, whose first
        # pending job holds the queue until something is freed, and the others
        self._blocked: set[str] = set()
        self._unsettled: set[str] = set()
        self._first: dict[str, bool] = {}  # this session: strict queue -> its first pend settles it
        self._dirty = False  # the last session started a job
        self._queued: dict[str, dict[str, PendingJob]] = {}  # pending jobs by queue, in order
        self._limits = empty.limits
        # queues whose jobs may preempt: a job of theirs may start with no slot free
        self._preempting = {n for n, q in empty.queues.items() if q.preempts}
        self._limited_memo: dict[tuple[str, str, str], bool] = {}
        self._volatile: set[str] = set()
        self._session_queued = False
        # idle sessions (xce.sim.idle): a job started since the last session; the chain's
        # last session time, while its next session is left unqueued after a skip; the
        # last session's time and decisions if it planned; when its quiet ends (None: not
        # worked out yet); the last planned session's plans, and whether the one before,
        # with nothing between, planned alike
        self._started_since = False
        self._chain: float | None = None
        self._last_planned: tuple[float, Sequence[Decision]] | None = None
        self._last_session = -math.inf  # the time of the last session
        self._quiet: float | None = None
        self._plans: PlanSignature | None = None
        self._plans_repeat = False
        self._now = 0.0  # the time of the event being handled
        self._last_grid = -math.inf  # the multiple of the interval last given a session
        self._ended = 0
        self._busy = int(np.nansum(cluster.used[SLOTS]))  # slots held now
        self._total = int(np.nansum(cluster.hosts.capacity[SLOTS]))  # slots in all
        self._queues_seen: set[str] = set()
        self._fewest: dict[str, int] = {}
        self._traits: dict[str, PickerTraits] = {}  # by queue
        self._one_level: tuple[int, bool] | None = None
        self._all_monotone: tuple[int, bool] | None = None  # see _incremental
        # (queues seen, whether one's picker is a ClockedPicker): see _work_out_quiet
        self._clocked: tuple[int, bool] | None = None
        self.stats = SimStats()
        # known before the run (xce.sim.caveats, xce.sim.flow)
        self.warnings = (
            self._caveats() + flow_warnings + ignored_jobs(cluster) + endless_running(cluster)
        )
        # the replay's progress (see _begin_run)
        self._run_started = 0.0
        self._run_total = 0
        self._initial: list[RunningJob] = []
        self._timeline = Timeline(0, [], [], [])
        self._step_count = 0
        check_against(self.jobs, self.core.catalog, self.core.state.priority)

    def _caveats(self) -> list[str]:
        """What the user should know of this replay's inputs (xce.sim.caveats)."""
        from xce.sim.caveats import backfill_estimates, predictor_unused

        core = self.core
        plans = {q: core.backfill_for(q).plans for q in {j.queue for j in self.jobs}}
        predictor = self.options.predictor
        named = (
            predictor
            if isinstance(predictor, str) or predictor is None
            else str(getattr(predictor, "name", type(predictor).__name__))
        )
        unused = sorted(q for q in core.state.queues if q != "normal")
        single = (
            [
                f"--single-queue: every job runs in queue normal; the cluster's queue(s) "
                f"{', '.join(unused[:5])}{', ...' if len(unused) > 5 else ''} (their "
                "priorities, preemption, pickers and backfill) are not used"
            ]
            if self.options.single_queue and unused
            else []
        )
        return (
            backfill_estimates(self.jobs, core.state, plans)
            + predictor_unused(named, plans)
            + single
        )

    # --- the loop --------------------------------------------------------------------
    def run(self) -> SimResult:
        """Replay the workload to its end (run once)."""
        with _few_collections():
            plain = self._plain_replay()
            result = plain.run() if plain is not None else self._run()
        result.warnings[:] = self.warnings
        return result

    def run_plain(self) -> tuple[PlainReplay, SimResult] | None:
        """Replay the workload to its end on the plain replay, with what it counted,
        when the simulation is plain (None, and nothing run, otherwise)."""
        with _few_collections():
            plain = self._plain_replay()
            if plain is None:
                return None
            result = plain.run()
        result.warnings[:] = self.warnings
        return plain, result

    def _plain_replay(self) -> PlainReplay | None:
        """The plain replay of this simulation, if it is plain (:mod:`xce.sim.plain`)."""
        return plain_replay(self)

    def _run(self) -> SimResult:
        self._begin_run()
        while self._heap:
            self._step()
        return self._end_run()

    # The replay in three parts, its progress kept on the object between them (what lets
    # a driver stop between two steps, e.g. to save the simulation and resume it later).
    def _begin_run(self) -> None:
        """Queue every submission, reservation edge and initial job's finish."""
        self._run_started = time.perf_counter()
        self._records = RecordTable(self.jobs, self.core.hosts.names)
        self._index = {j.id: i for i, j in enumerate(self.jobs)}
        flow = self.flow
        for job in self.jobs:
            if flow is None or not flow.deferred(job.id):
                self._push(job.submit, _SUBMIT, job.id)
        for r in self.core.state.reservations:  # a window opening or closing changes plans
            for edge in (r.start, r.end):
                if math.isfinite(edge):
                    self._push(edge, _SESSION, _EDGE)
        self._initial = list(self.core.state.running)
        for run in self._initial:
            if run.runtime is not None:
                self._finish_seq[run.id] = self._push(run.start_time + run.runtime, _FINISH, run.id)
        self._run_total = int(np.nansum(self.core.state.hosts.capacity[SLOTS]))
        self._timeline = Timeline(self._run_total, array("d"), array("q"), array("q"))
        self._step_count = 0

    def _step(self) -> None:
        """Handle every event of the next instant, and its session if one is due."""
        now = self._now = self._heap[0][0]
        interval = self.options.interval
        on_grid = interval is not None and _on_grid(now, interval) and now != self._last_grid
        due, applied = self._take_events(now)
        session_due = due or interval is None or on_grid
        if on_grid and self.core.pending_count:
            self._last_grid = now  # one session per multiple of the interval
        ran = session_due and self.core.pending_count > 0
        skipped = ran and self._idle(now)
        if skipped:
            self.stats.idle_skipped += 1
        elif ran:
            self._session(now)
        if not (ran and not self._heap):  # else nothing can change any more
            self._queue_session(now, skipped)
        timeline = self._timeline
        pending = self.core.pending_count
        # an instant of a session that changed nothing adds no sample: the step function
        # is the same, and a skipped idle session's instant is not even visited
        if interval is None or applied or not timeline.repeats(self._busy, pending):
            timeline.add(now, self._busy, pending)
        self._step_count += 1
        if self.progress is not None and self._step_count % self.progress_every == 0:
            self.progress(self._ended, now)

    def _end_run(self) -> SimResult:
        """The replay's result, once no event is left."""
        timeline = self._timeline
        if self.core.pending_count:
            self._never_started()
        self.stats.wall_seconds = time.perf_counter() - self._run_started
        if self.progress is not None:
            self.progress(self._ended, timeline.times[-1] if timeline.times else 0.0)
        lost = [j.id for i, j in enumerate(self.jobs) if not self._records.written(i)]
        if lost:
            raise InternalError(f"jobs never ended: {', '.join(lost[:5])}")
        records = self._records
        base: list[tuple[str, float, float, int]] = []
        for run in self._initial:  # ends cut short by preemption included
            end = math.inf if run.runtime is None else run.start_time + run.runtime
            end = min(end, self._cut.get(run.id, end))
            base += [(a.host, run.start_time, end, a.slots) for a in run.alloc]
        hosts = self.core.state.hosts
        capacity = {n: int(hosts.capacity[SLOTS][i]) for i, n in enumerate(hosts.names)}
        total = self._run_total
        return SimResult(records, timeline, self.stats, total, capacity, base, hosts.names)

    def _never_started(self) -> None:
        """Nothing is left to happen (no finish, no submission, and with an interval the
        last session changed nothing), yet jobs pend: they never start. A volatile-select
        job the triage let through can be one (its select can turn true, but something
        else keeps it out for ever), and so are the jobs it holds behind it under strict.
        Each is reported with the reason a full session gives now. A job started but never
        ended, or a full session that would start a job, is a bug."""
        core = self.core
        stuck = ", ".join(j.id for j in list(core.pending_jobs())[:5])
        if self._started:
            lost = ", ".join(list(self._started)[:5])
            raise InternalError(
                f"the simulation ended with jobs still pending: {stuck} "
                f"(and jobs that started but never ended: {lost})"
            )
        result = core.run_session(now=self._now)
        if result.dispatched:
            raise InternalError(
                f"the simulation ended with jobs still pending: {stuck}; "
                f"a full session starts {result.dispatched[0].job}"
            )
        flow = self.flow
        for decision in result.pending:
            job = self.jobs[self._index[decision.job]]
            info = decision.info
            message = f"{info.reason.value}: {info.message}"
            held = flow.held_why(job.id) if flow is not None else None
            if held is not None:  # held by the replay (xce.sim.flow), not by the state
                message = f"DEPENDENCY: {held}"
            why = f"never started: pending when the run ended ({message})"
            self._records.never(self._index[job.id], why)
            self._ended += 1
        if flow is not None:  # what waits for them never runs either
            for decision in result.pending:
                self._apply_flow(flow.never(decision.job, self._now))

    def _push(self, at: float, kind: int, job_id: str) -> int:
        if not abs(at) <= MAX_NUMBER:
            check_replay_time(at, "a session" if kind == _SESSION else f"job {job_id}")
        seq = self._seq
        heapq.heappush(self._heap, (at, kind, seq, job_id))
        self._seq += 1
        return seq

    def _queue_session(self, now: float, skipped: bool = False) -> None:
        """With an interval: a session at the next boundary while jobs wait. After an
        idle session ``skipped`` at ``now``, the chain's first session at or after its
        quiet ends, if that comes before the next event (else none: the event queues the
        chain's first session after it); see xce.sim.idle."""
        interval = self.options.interval
        if interval is None or self._session_queued or not self.core.pending_count:
            return
        at: float | None
        if skipped:
            upto = self._quiet_until()
            ahead = self._heap[0][0] if self._heap else math.inf
            at = chain_at(now, min(upto, ahead), interval, strictly=False)
            if at is None:  # past the chain's whole multiples: step it as ever
                at = next_session_time(now, interval)
            elif upto >= ahead:
                self._chain = now
                return
        elif self._chain is not None:
            at = chain_at(self._chain, now, interval, strictly=True)
            self._chain = None
            if at is None:  # (the skip checked the next event was within the chain)
                raise InternalError(f"no session time after {now} on the chain")
        else:
            at = next_session_time(now, interval)
        self._push(at, _SESSION, "")
        self._session_queued = True

    def _take_events(self, now: float) -> tuple[bool, bool]:
        """Apply every event at ``now``: whether a session is due (interval mode), and
        whether any event but a session was applied."""
        due = applied = False
        while self._heap and self._heap[0][0] == now:
            _, kind, seq, job_id = heapq.heappop(self._heap)
            self.stats.events += 1
            if kind != _SESSION:
                applied = True
            if kind == _FINISH:
                if seq in self._cancelled:
                    self._cancelled.discard(seq)
                    continue  # the run it ended was preempted
                self._finish_seq.pop(job_id, None)
                self._finish(job_id, now)
            elif kind == _SUBMIT:
                self._submit(self.jobs[self._index[job_id]])
            elif kind == _OUTLIVED:
                self._outlived(job_id, now)
            elif kind == _WAKE:
                assert self.flow is not None
                self._apply_flow(self.flow.wake(job_id, now))
            elif kind == _BEGIN:
                self._freed = True  # its begin time came: a full session decides it
            else:
                self._session_queued, due = False, True
                self._last_grid = now
                if job_id == _EDGE:  # a window opened or closed: a full session
                    self._freed = True
        return due, applied

    def _outlived(self, job_id: str, now: float) -> None:
        """A running job has run as long as predicted: the core that plans with the
        predictions is told its raised one (xce.sim.predicted)."""
        assert self._predictions is not None
        started = self._started.get(job_id)
        if started is None:
            return  # it ended at this instant, or was preempted
        raised = self._predictions.outlived(started[0], now)
        if raised is None:
            return
        requested, again = raised
        if self._shadow is not None:
            self._shadow.time_limit(job_id, requested, now)
        else:
            self.core.apply(TimeLimitChanged(job_id, requested, now))
            self._freed = True  # plans change: no session shortcut may assume they do not
        if again is not None:
            self._outlive_at(again, job_id)

    def _outlive_at(self, at: float, job_id: str) -> None:
        """Job ``job_id`` outlives its prediction at ``at``: with backfill planning with
        predictions, an event (its plans change then); with a shadow, noted for the
        shadow's next session only, so the replay's own sessions stay where they are."""
        if self._shadow is None:
            self._push(at, _OUTLIVED, job_id)
        else:
            heapq.heappush(self._shadow_outlives, (at, job_id))

    def _shadow_up_to(self, now: float) -> None:
        """The shadow told of every prediction outlived by ``now``."""
        heap = self._shadow_outlives
        while heap and heap[0][0] <= now:
            at, job_id = heapq.heappop(heap)
            self._outlived(job_id, at)

    def _submit(self, job: SimJob) -> None:
        pending = pending_job(job)
        try:
            why, volatile = self.triage(pending)
        except InputError as err:
            raise InputError(f"workload job {clip(job.id)!r}: {err}") from None
        if why is not None:
            self._records.never(self._index[job.id], why)
            self._ended += 1
            if self.flow is not None:
                self._apply_flow(self.flow.never(job.id, self._now))
            return
        changes: Changes | None = None
        if self.flow is not None:
            view, changes = self.flow.submitted(job.id, self._now)
            if isinstance(view, str):  # its dependency can never hold
                self._records.never(self._index[job.id], view)
                self._ended += 1
                self._apply_flow(changes)
                return
            pending = _waiting(pending, view, job.hold)
        core = self.core
        if self._predictions is not None:
            predicted = self._predictions.submitted(pending)
            if self._shadow is not None:
                self._shadow.submitted(predicted)
            else:
                pending = predicted
        core.apply(JobSubmitted(pending))
        if job.begin_time is not None and job.begin_time > self._now:
            self._push(job.begin_time, _BEGIN, job.id)  # a gate opens then (module docstring)
        numbered = core.pending(job.id)
        assert numbered is not None
        self._new.append(numbered)  # with its arrival number: sessions order by it
        self._queued.setdefault(job.queue, {})[job.id] = numbered
        self._queues_seen.add(job.queue)
        if volatile:
            self._volatile.add(job.id)
        if changes:
            self._apply_flow(changes)

    # --- dependencies and think time (xce.sim.flow) -------------------------------------
    def _apply_flow(self, changes: Changes) -> None:
        """What a submission, start, end or wake changed for the jobs that wait for
        others: the doomed removed and recorded, the waiting told their dependency anew,
        the jobs fed back queued at their submit times, the wakes queued."""
        for job_id, why in changes.doomed.items():
            self._doom(job_id, why)
        for job_id, view in changes.views.items():
            if job_id not in changes.doomed:
                self._update_dependency(job_id, view)
        for at, job_id in changes.submits:
            i = self._index[job_id]
            self.jobs[i] = replace(self.jobs[i], submit=at)  # the replay's submit time
            self._push(at, _SUBMIT, job_id)
        for at, job_id in changes.wakes:
            self._push(at, _WAKE, job_id)

    def _doom(self, job_id: str, why: str) -> None:
        """A job whose dependency can never hold (or that is never submitted) never runs:
        recorded so, and removed from the core (it waited at a gate: it charged nothing
        and held no queue, so no other decision changes)."""
        i = self._index[job_id]
        if self._records.written(i):
            return  # recorded already (still pending when the run ended)
        if self.core.pending(job_id) is not None:
            self.core.apply(JobKilled(job_id, self._now))
            if self._shadow is not None:
                self._shadow.core.apply(JobKilled(job_id, self._now))
            self._unqueue(self.jobs[i])
            self._new = [j for j in self._new if j.id != job_id]
            self._freed = True
        self._records.never(i, why)
        self._ended += 1

    def _update_dependency(self, job_id: str, view: View) -> None:
        """Tell the core (and a shadow core) what a pending job still waits for; a full
        session follows (the shortcuts may not assume it still pends)."""
        cores = [self.core] + ([self._shadow.core] if self._shadow is not None else [])
        held = self.jobs[self._index[job_id]].hold  # (its jobs file's hold stays)
        for core in cores:
            current = core.pending(job_id)
            if current is None:
                raise InternalError(f"job {job_id}: its dependency changed, but it is not pending")
            core.apply(JobUpdated(_waiting(current, view, held)))
        updated = self.core.pending(job_id)
        assert updated is not None
        self._queued[updated.queue][job_id] = updated
        self._new = [updated if j.id == job_id else j for j in self._new]
        self._freed = True

    def _unqueue(self, job: SimJob) -> None:
        """``job`` is no longer pending (started, or removed)."""
        queued = self._queued[job.queue]
        del queued[job.id]
        if not queued:
            del self._queued[job.queue]
        self._volatile.discard(job.id)

    def triage(self, job: PendingJob) -> tuple[str | None, bool]:
        """Why no state of the cluster could ever run ``job`` (None: some state could),
        and whether its select can turn true as resources fall (it is then retried every
        session).

        The probe is the cluster with only the work that never ends running: the most it
        can ever offer. A job pending there is unrunnable if none of its primaries has a
        *volatile* select (one that can turn true as resources fall, like
        ``select[mem<500]``: false on the probe, true later), or if the allocator says it
        is ``NEVER_RUNNABLE`` (it can run on no state, volatile selects aside). Any
        other volatile job is let in: if it never starts, the end of the run reports
        it (:meth:`_never_started`)."""
        key: tuple[object, ...] = (job.resreq, job.min_tasks, job.max_tasks, job.tasks_given)
        if self._probe.state.limits:
            key += (job.user, job.queue, job.project)
        known = self._never.get(key)
        if known is None:
            request = job_request(job, self.core.catalog)
            self._probe.begin_session()
            decision = self._probe.decide(request)
            alternatives = request.requirement.alternatives
            volatile = not all(p.cacheable for alt in alternatives for p in alt)
            why = None
            if (
                isinstance(decision, Pending)
                and decision.preemption is None  # it runs once its victims release
                and (not volatile or decision.info.reason is PendReason.NEVER_RUNNABLE)
            ):
                why = decision.info.message
            known = self._never[key] = (why, volatile)
        return known

    def _finish(self, job_id: str, now: float) -> None:
        run = self.core.running(job_id)
        if run is None:
            raise InternalError(f"job {job_id} finished but was not running")
        self.core.apply(JobFinished(job_id, now))
        if self._shadow is not None:
            self._shadow.finished(job_id, now)
        self._busy -= run.slots
        self._freed = True
        started = self._started.pop(job_id, None)
        if started is not None:  # None: work that was running when the simulation began
            job, start, hosts, host_slots, slots, alternative, killed, step = started
            if self._predictions is not None:
                self._predictions.ended(job, start, now)
            times, lost = self._preempted.get(job_id, (0, 0.0))
            i = self._index[job_id]
            self._records.ended(
                i, start, now, hosts, host_slots, slots, alternative, killed, (step, self._steps)
            )
            planned, ahead = self._planned.get(job_id, (None, False))
            self._records.extras(i, times, lost, job_id in self._backfilled, planned, ahead)
            self._ended += 1
            self._steps += 1
            if self.flow is not None:  # killed at its requested time: ended unsuccessfully
                self._apply_flow(self.flow.ended(job_id, not (job.failed or killed), now))

    # --- sessions --------------------------------------------------------------------
    def _incremental(self) -> bool:
        """The exact session shortcuts apply: every queue's picker and backfill policy
        allows them. Advance reservations keep them exact: a window opening or closing
        is an event that makes the next session a full one, and between two bounds what
        the reservations keep from a job only grows as time passes (its run overlaps
        every window an earlier run did; a replay's job names none), so a job that could
        not start at the last session cannot now either."""
        if not (self.options.incremental and self.options.fast_paths):
            return False
        seen = len(self._queues_seen)  # queues only ever join this set; their traits stay
        if self._all_monotone is None or self._all_monotone[0] != seen:
            core = self.core
            monotone = all(
                self._picker(q).monotone_in_session and core.backfill_for(q).monotone_in_session
                for q in self._queues_seen
            )
            self._all_monotone = (seen, monotone)
        return self._all_monotone[1]

    def _picker(self, queue: str) -> PickerTraits:
        """What the picker of ``queue`` promises (the engine never asks its name)."""
        traits = self._traits.get(queue)
        if traits is None:
            picker = self._registry.get(self.core.picker_name(queue))
            traits = self._traits[queue] = picker_traits(picker)
        return traits

    def _session(self, now: float) -> None:
        core = self.core
        incremental = self._incremental()
        changed = bool(self._new) or self._freed or self._started_since  # since the last
        self._started_since = False
        self._quiet = None
        self._last_planned = None
        self._last_session = now
        tried: set[str] | None = None  # strict queues tried whole (None: every one)
        # beside an advance reservation every session plans, and a full one decides
        # every pending job: a shortcut's untried new jobs are noted as pending then
        new = list(self._new) if incremental and core.reservations else []
        if incremental and not self._freed:
            jobs, tried = self._candidates()
            if not jobs:
                self._new.clear()
                self._note_untried(new)
                return
            result = core.run_session(jobs=jobs, skip_blocked=True, now=now)
        elif incremental and self._strict_one_level():
            self._strict_in_batches(now)
            self._note_untried(new)
            return
        elif incremental and not any(
            self._picker(q).blocks_queue_at_head for q in self._queues_seen
        ):
            # no queue is ever blocked: every job is tried; one wanting more tasks than
            # the whole cluster has free now would pend without charging anything.
            free = self._total - self._busy
            jobs = [
                j
                for j in core.pending_jobs()
                if self._fewest_tasks(j) <= free or j.queue in self._preempting
            ]
            result = core.run_session(jobs=jobs, now=now)
        else:
            # Every pending job is planned, though only the new jobs' planned starts are
            # recorded: skipping the others' plans (Session.run(plans_for=)) decides this
            # session alike, but under a policy that keeps placements a skipped plan
            # leaves the job's last placement as its next session's hint, and later
            # schedules differ (LANL-CM5's first 1,500 jobs under conservative).
            result = core.run_session(skip_blocked=incremental, now=now)
        self._new.clear()
        self._freed = False
        self._dirty = False
        self._count(result.stats)
        planned = result.stats.now is not None
        if planned:
            self._note_plans(now, result.decisions, changed)
        self._apply(result.decisions, now, planned=planned)
        self._note_untried(new)
        self._settle(tried)

    def _note_untried(self, new: list[PendingJob]) -> None:
        """The first decision of each job in ``new`` that a shortcut session did not try
        and that pends: planned beside a reservation, with no plan (as a full session,
        which decides every pending job, would have noted it)."""
        plans = self._planned
        for job in new:
            if job.id not in plans and self.core.pending(job.id) is not None:
                plans[job.id] = (None, False)

    # --- idle sessions (xce.sim.idle) ---------------------------------------------------
    def _idle(self, now: float) -> bool:
        """Whether the session due at ``now`` has nothing new to decide: nothing was
        submitted, ended, preempted or started since the last one, and time alone has
        not reached an instant that could change what it decided (xce.sim.idle)."""
        options = self.options
        if not (options.idle_skip and options.incremental and options.fast_paths):
            return False
        if options.interval is None:
            return False
        if self._new or self._freed or self._started_since:
            return False
        if now / options.interval >= SAFE_RATIO:
            return False
        return now < self._quiet_until()

    def _quiet_until(self) -> float:
        """Until when (exclusive) a session decides as the last one did, with nothing
        happening: for ever without a plan; with one, until the plan's next change
        (xce.sim.idle.quiet_until), under the conditions the module docstring lists."""
        if self._quiet is None:
            self._quiet = self._work_out_quiet()
        return self._quiet

    def _work_out_quiet(self) -> float:
        last = self._last_planned
        if not self._any_clocked():
            return math.inf if last is None else self._plan_quiet(last)
        # a picker's order moves with time alone (xce.sim.idle)
        if last is None and all(self._picker(q).never_blocks for q in self._queues_seen):
            return math.inf  # every job is tried, in whatever order: each pends again
        return self._order_quiet(math.inf if last is None else self._plan_quiet(last))

    def _any_clocked(self) -> bool:
        """Whether a queue's picker is a ClockedPicker (its order moves with time)."""
        seen = len(self._queues_seen)  # queues only ever join this set
        if self._clocked is None or self._clocked[0] != seen:
            registry, core = self._registry, self.core
            self._clocked = (
                seen,
                any(
                    isinstance(registry.get(core.picker_name(q)), ClockedPicker)
                    for q in self._queues_seen
                ),
            )
        return self._clocked[1]

    def _plan_quiet(self, last: tuple[float, Sequence[Decision]]) -> float:
        """Until when the last planned session's plans hold with nothing happening
        (xce.sim.idle.quiet_until), under the module's conditions (else -inf)."""
        core = self.core
        if self._volatile:
            return -math.inf
        policies = {core.backfill_for(q) for q in self._queues_seen}
        if any(getattr(p, "planner", None) is not None for p in policies):
            return -math.inf  # a policy's own planning rules: not proven to stay put
        if any(p.keeps_placements for p in policies) and (
            self._preempting or not self._plans_repeat
        ):
            return -math.inf  # its hints may still move (xce.sim.idle)
        return quiet_until(last[0], last[1], core.state)

    def _order_quiet(self, upto: float) -> float:
        """Under a ClockedPicker: the chain's first session time after the last session
        at which a whole session would pick in another order than one at the last
        session's time, or ``upto``, or the next event, whichever comes first; -inf
        where the order is not known without deciding (xce.sim.idle)."""
        interval = self.options.interval
        core, last = self.core, self._last_session
        if upto == -math.inf or interval is None or last == -math.inf:
            return -math.inf
        order = core.pick_order(last)
        if order is None:
            return -math.inf
        stop = min(upto, self._heap[0][0] if self._heap else math.inf)
        at = last
        for _ in range(_ORDER_SCAN):  # a session at the last instant scans on from there
            at = next_session_time(at, interval)
            if at >= stop or at / interval >= SAFE_RATIO or core.pick_order(at) != order:
                break
        return min(at, stop)

    def _note_plans(self, now: float, decisions: Sequence[Decision], changed: bool) -> None:
        """A planned session's decisions, kept for :meth:`_quiet_until`; under a policy
        that keeps placements, whether they plan as the last session did with nothing
        between (``changed``: something happened since it)."""
        self._last_planned = (now, decisions)
        if not any(self.core.backfill_for(q).keeps_placements for q in self._queues_seen):
            return
        plans = plan_signature(decisions)
        self._plans_repeat = not changed and plans == self._plans
        self._plans = plans

    def _apply(self, decisions: Sequence[Decision], now: float, *, planned: bool = False) -> None:
        """Start the dispatched jobs; note each strict queue's first pending decision and,
        in a session that ``planned`` over future time, each job's first planned start."""
        first = self._first
        plans = self._planned
        shadow = self._shadow_starts(decisions, now) if planned else {}
        for decision in decisions:
            if decision.job in shadow and decision.job not in plans:
                plans[decision.job] = (shadow[decision.job], True)
            elif planned and decision.job not in plans:
                if isinstance(decision, Dispatched):
                    plans[decision.job] = (now, False)
                elif decision.plan is not None:
                    plans[decision.job] = (decision.plan.start, True)
                else:
                    plans[decision.job] = (None, False)
            if isinstance(decision, Dispatched):
                if decision.backfilled:
                    self._backfilled.add(decision.job)
                    self.stats.backfilled += 1
                else:
                    self._backfilled.discard(decision.job)
                self._start(decision, now)
                continue
            if decision.preemption is not None:
                self._preempt(decision.preemption.victims, now)
                # it starts at once on what it was promised: the session kept that out of
                # every later job's reach, and its victims have just released it
                self._start(Dispatched(decision.job, decision.preemption.promise), now)
                continue
            queue = self.jobs[self._index[decision.job]].queue
            if queue not in first and self._picker(queue).blocks_queue_at_head:
                first[queue] = self._settles(decision)

    def _shadow_starts(self, decisions: Sequence[Decision], now: float) -> dict[str, float | None]:
        """With a shadow core (xce.sim.predicted): the start it plans, with predicted
        runtimes, for each job this session plans ahead for the first time."""
        if self._shadow is None:
            return {}
        ahead = {
            d.job
            for d in decisions
            if isinstance(d, Pending) and d.plan is not None and d.job not in self._planned
        }
        if not ahead:
            return {}
        self._shadow_up_to(now)
        return self._shadow.starts(now, ahead)

    def _settles(self, decision: Pending) -> bool:
        """Whether a strict queue whose first pending job got ``decision`` is settled: the
        job waits for resources (it holds the queue) and no limit applies to it, so until
        something is freed it pends again, for resources again (a limit's usage only
        rises: a job subject to one may turn to pend ``LIMIT``, and hold less)."""
        if not holds_queue(decision.info.reason):
            return False
        job = self.core.pending(decision.job)
        return job is not None and not self._limited(job)

    def _settle(self, tried: set[str] | None) -> None:
        """After a session: the strict queues it tried (``None``: all) are settled or not
        by their first pending decision; a tried queue without one has no job waiting."""
        first = self._first
        if tried is None:
            self._blocked.clear()
            self._unsettled.clear()
        else:
            self._blocked -= tried
            self._unsettled -= tried
        for queue, settled in first.items():
            (self._blocked if settled else self._unsettled).add(queue)
        first.clear()

    def _limited(self, job: PendingJob) -> bool:
        """Whether some limit applies to ``job`` (only then can it pend ``LIMIT``)."""
        if not self._limits:
            return False
        consumer = (job.user, job.queue, job.project)
        limited = self._limited_memo.get(consumer)
        if limited is None:
            limited = any(lim.applies_to(*consumer) for lim in self._limits)
            self._limited_memo[consumer] = limited
        return limited

    def _strict_one_level(self) -> bool:
        """Every queue strict, all of one priority: arrival order is the pick order."""
        seen = len(self._queues_seen)  # queues only ever join this set
        if self._one_level is None or self._one_level[0] != seen:
            state = self.core.state
            one = (
                all(self._picker(q).blocks_queue_at_head for q in self._queues_seen)
                and len({state.queue_priority(q) for q in self._queues_seen}) <= 1
                and not self._queues_seen & self._preempting  # its heads may preempt
            )
            self._one_level = (seen, one)
        return self._one_level[1]

    def _strict_in_batches(self, now: float) -> None:
        """A full strict session, fed in arrival order a batch at a time: each queue
        stops at its head, so most of a long backlog is never looked at. Exact: every
        job of a batch comes before every job of the next in pick order, and a batch's
        dispatches are started before the next batch, as the session's books would have
        charged them; what a batch's cursors learnt of who holds whom (a head, jobs
        waiting on limits: :class:`~xce.core.pickers.QueueHold`) is carried to the next
        batches, whose jobs held that way are not tried (they would pend
        ``QUEUE_BLOCKED``).

        A job subject to no limit cannot start if it wants more tasks than the cluster's
        free slots less the fewest tasks of the jobs before it in its queue's part of the
        batch that are subject to no limit either (free slots only fall within a session,
        a task takes a slot, and the job is reached only if all of those started: such a
        job that pends holds its queue; one subject to a limit may pend ``LIMIT``
        and hold nothing). It would pend, for resources, and become its queue's head: the
        queue is marked so at once and the job is not tried. A job waiting at a gate (a
        dependency: xce.sim.flow) is always tried and never counted among those before
        a job: it neither starts nor holds the queue, so the jobs behind it are reached."""
        core = self.core
        self._new.clear()
        self._freed = False
        self._dirty = False
        holds: dict[str, QueueHold] = {}
        headed: set[str] = set()  # queues with a head: nothing more of them is tried
        tried: set[str] = set()  # jobs tried in an earlier batch (those pending stay so)
        first = True
        while True:
            free = self._total - self._busy
            ahead: dict[str, int] = {}  # per queue: fewest tasks of its jobs in the batch
            batch: list[PendingJob] = []
            heads: list[PendingJob] = []  # known to pend for resources without a try
            for job in core.pending_jobs():
                queue = job.queue
                if queue in headed or job.id in tried:
                    continue
                hold = holds.get(queue)
                if hold is not None and hold.blocker(job) is not None:
                    continue  # waits behind a job held by a limit
                if job.gated:  # at a gate it holds nobody and takes nothing: tried, not
                    batch.append(job)  # counted ahead of the jobs behind it
                    if len(batch) == _BATCH:
                        break
                    continue
                fewest = self._fewest_tasks(job)
                limited = bool(self._limits) and self._limited(job)
                before = ahead.get(queue, 0)
                if not limited and fewest > free - before:
                    headed.add(queue)
                    heads.append(job)
                    if headed >= self._queues_seen:
                        break
                    continue
                if not limited:
                    ahead[queue] = before + fewest
                batch.append(job)
                if len(batch) == _BATCH:
                    break
            if batch:
                result = core.run_session(jobs=batch, skip_blocked=True, now=now)
                self._count(result.stats, session=first)
                first = False
                # (planned beside an advance reservation: each start's planned start noted)
                self._apply(result.decisions, now, planned=result.stats.now is not None)
                tried.update(j.id for j in batch)
                for decision in result.decisions:
                    waiting = core.pending(decision.job)
                    if waiting is None or not isinstance(decision, Pending):
                        continue
                    hold = holds.get(waiting.queue)
                    if hold is None:
                        hold = holds[waiting.queue] = QueueHold(self._limits)
                    hold.record(waiting, decision)
                    if hold.head is not None:
                        headed.add(waiting.queue)
            for job in heads:  # each comes after its queue's jobs of the batch
                self._first.setdefault(job.queue, True)
            if len(batch) < _BATCH or headed >= self._queues_seen:
                break
        self._settle(None)

    def _fewest_tasks(self, job: PendingJob) -> int:
        """The fewest tasks any alternative of ``job`` needs."""
        fewest = self._fewest.get(job.id)
        if fewest is None:
            fewest = job_request(job, self.core.catalog).requirement.fewest_tasks
            self._fewest[job.id] = fewest
        return fewest

    def _candidates(self) -> tuple[list[PendingJob], set[str]]:
        """Who can possibly start when nothing was freed since the last session, and the
        strict queues they make up whole: the new jobs (under strict, not those of a
        settled queue) and volatile-select jobs. A strict queue with a job waiting is
        tried whole, in order, when it holds a new or volatile job (a volatile job can
        start only after the jobs ahead of it; its head may be volatile too), and every
        unsettled queue is, whenever anything is tried or the last session started a job
        (who holds whom in it may have changed).

        Preemption keeps this exact: a job that could not preempt cannot either after a
        job that might be its victim started, since that job took only what was free,
        so releasing it with any set gives back what that set alone gave before."""
        core = self.core
        blocked, unsettled = self._blocked, self._unsettled
        jobs: list[PendingJob] = []
        whole: set[str] = set()
        for job in self._new:
            queue = job.queue
            if (queue in blocked or queue in unsettled) and self._picker(
                queue
            ).blocks_queue_at_head:
                if queue in unsettled:
                    whole.add(queue)
                continue
            jobs.append(job)
        chosen = {j.id for j in jobs}
        for job_id in sorted(self._volatile):
            pending = core.pending(job_id)
            if pending is None or job_id in chosen:
                continue
            queue = pending.queue
            if (queue in blocked or queue in unsettled) and self._picker(
                queue
            ).blocks_queue_at_head:
                whole.add(queue)
            else:
                jobs.append(pending)
                chosen.add(job_id)
        if unsettled and (jobs or whole or self._dirty):
            whole |= unsettled
        for queue in sorted(whole):
            jobs += [j for j in self._queued.get(queue, {}).values() if j.id not in chosen]
        tried = {j.queue for j in jobs if self._picker(j.queue).blocks_queue_at_head}
        return jobs, tried

    def _count(self, s: SessionStats, *, session: bool = True) -> None:
        st = self.stats
        st.sessions += int(session)
        st.decisions += s.jobs
        st.dispatched += s.dispatched
        st.cache_hits += s.cache_hits
        st.cache_misses += s.cache_misses
        st.alloc_seconds += s.elapsed_s

    def _preempt(self, victims: Sequence[str], now: float) -> None:
        """Release the victims now (``JobPreempted``); workload jobs go back to their
        queue and restart from the beginning (``requeue``), the work done is lost; a
        session follows at once, at the same time, for what the preemptor left."""
        core = self.core
        for victim in victims:
            run = core.running(victim)
            if run is None:
                raise InternalError(f"job {victim} was preempted but is not running")
            core.apply(JobPreempted(victim, now))
            if self._shadow is not None:
                self._shadow.preempted(victim, now)
            cancelled = self._finish_seq.pop(victim, None)
            if cancelled is not None:
                self._cancelled.add(cancelled)
            self._busy -= run.slots
            self._freed = True
            lost = run.slots * (now - run.start_time)
            self.stats.preemptions += 1
            self.stats.lost_slot_seconds += lost
            started = self._started.pop(victim, None)
            if started is None:  # work running when the simulation began: it just ends
                self._cut[victim] = now
                continue
            times, before = self._preempted.get(victim, (0, 0.0))
            self._preempted[victim] = (times + 1, before + lost)
            self._steps += 1
            self._submit(started[0])
        self._push(now, _SESSION, "")

    def _start(self, decision: Dispatched, now: float) -> None:
        job = self.jobs[self._index[decision.job]]
        try:
            self.core.apply(JobStarted(decision.job, decision.allocation, now))
            if self._shadow is not None:
                self._shadow.started(decision.job, decision.allocation, now)
        except EventError as err:  # a session decision that does not fit is a bug
            raise InternalError(str(err)) from err
        self._unqueue(job)
        self._dirty = True
        self._started_since = True
        self._busy += decision.allocation.slots
        queue = self.core.state.queues.get(job.queue)
        duration, killed = run_length(job, queue, self.options.enforce_walltime)
        columns = decision.allocation.columns()
        self._started[job.id] = (
            job,
            now,
            _compact(columns.hosts, self.core.hosts.n),
            columns.slots,
            decision.allocation.slots,
            decision.allocation.alternative,
            killed,
            self._steps,
        )
        self._steps += 1
        self._finish_seq[job.id] = self._push(now + duration, _FINISH, job.id)
        if self._predictions is not None:
            outlives = self._predictions.started(job, now)
            if outlives is not None and outlives < now + duration:
                self._outlive_at(outlives, job.id)
        if self.flow is not None:
            self._apply_flow(self.flow.started(job.id, now))


def _alloc_options(fast_paths: bool) -> AllocOptions:
    """The scheduling core's allocator options: no per-host pend breakdowns (a replay
    shows none), and the exact shortcuts as ``SimOptions.fast_paths`` says."""
    if fast_paths:
        return AllocOptions(explain=False)
    return AllocOptions(
        explain=False, cache=False, shortcuts=False, cursors=False, reuse_failures=False
    )


def _compact(hosts: npt.NDArray[np.intp], n_hosts: int) -> npt.NDArray[np.unsignedinteger[Any]]:
    """A job's host indices in the smallest type that holds any of ``n_hosts`` (kept for
    every job until the end of the run: a quarter of the allocation's on most clusters)."""
    return hosts.astype(np.uint16 if n_hosts <= 1 << 16 else np.uint32)


def _pickers(
    registry: PickerRegistry | None, picker: str | JobPicker | None
) -> tuple[PickerRegistry, str | None]:
    """The picker registry (with ``picker`` in it when it is an object) and the default
    picker's name."""
    registry = registry if registry is not None else default_pickers()
    if picker is None or isinstance(picker, str):
        return registry, picker
    if picker.name in registry.names():
        if registry.get(picker.name) is not picker:
            raise InputError(f"a picker named {picker.name!r} is already registered")
        return registry, picker.name
    mine = PickerRegistry()
    for known in registry:
        mine.register(known)
    mine.register(picker)
    return mine, picker.name


def _waiting(job: PendingJob, view: View, held: bool) -> PendingJob:
    """``job`` as the core sees it while it waits for other jobs (xce.sim.flow); held
    if the replay holds it or its jobs file does (``held``)."""
    hold = view.hold or held
    if view.dependency is None and job.dependency is None and hold == job.hold:
        return job
    return replace(job, dependency=view.dependency, hold=hold)


def _check_interval(interval: float | None) -> None:
    if interval is None:
        return
    if not (isinstance(interval, int | float) and math.isfinite(interval)):
        raise InputError(f"the session interval must be a finite number of seconds, got {interval}")
    if interval < MIN_INTERVAL:
        raise InputError(
            f"the session interval must be at least {MIN_INTERVAL:g} s, got {interval:g}"
        )


def next_session_time(now: float, interval: float) -> float:
    """The first session time ``k * interval`` (k a whole number) strictly after ``now``.

    ``(floor(now / interval) + 1) * interval`` alone can round back to ``now`` (3.3, 0.7,
    1.1: issue 10), and a session queued at ``now`` again never lets time move on; so k
    grows until the product is past ``now`` (by doubling steps: it stops even where the
    interval is below the float resolution of ``now``)."""
    ratio = now / interval
    if not math.isfinite(ratio):
        raise InputError(f"time {now:g} s is too far out for sessions every {interval:g} s")
    k = math.floor(ratio) + 1
    step = 1
    while k * interval <= now:
        k += step
        step *= 2
    return k * interval


def _on_grid(now: float, interval: float) -> bool:
    """Whether ``now`` is a session time ``k * interval`` (as :func:`next_session_time`
    computes them)."""
    ratio = now / interval
    return math.isfinite(ratio) and round(ratio) * interval == now


@contextmanager
def _few_collections() -> Iterator[None]:
    """A replay makes objects that mostly live to its end (jobs, records): the garbage
    collector's default thresholds rescan them again and again (about a tenth of a long
    replay). Freeze what exists and collect less often; restored afterwards. An
    application that froze objects itself keeps its freeze (and this one is skipped)."""
    old = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(100_000, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()


def forever_state(state: ClusterState) -> ClusterState:
    """The cluster once everything that ends has ended: only running work without a
    runtime (it never finishes in the simulation) still holds what it holds."""
    used = {k: np.zeros_like(v) for k, v in state.used.items()}
    shared = dict.fromkeys(state.shared_used, 0.0)
    index = state.hosts.index
    forever = tuple(r for r in state.running if r.runtime is None)
    for run in forever:
        for a in run.alloc:
            used[SLOTS][index[a.host]] += a.slots
            for name, amount in a.resources.items():
                used[name][index[a.host]] += amount
        for name, amount in run.shared.items():
            shared[name] += amount
    return replace(state, running=forever, used=used, shared_used=shared)
