"""A scheduling session: every pending job, in picker order, gets exactly one decision.

Session start resets the session's books, the evaluation memo and the unsatisfiable
cache (spec Req 7 AC 2) before any job is picked; each dispatched job is charged to the
books at once, so no later job of the session can be given the same resources.

Two modes give identical decisions: synchronous (one thread) and threaded — a picker
thread feeding an allocator thread through a bounded queue, as in the spec. In the
threaded mode the picker runs ahead of the allocator while its queues' pickers need no
feedback (fcfs), and waits for each decision when they do (strict, fairshare).
"""

from __future__ import annotations

import heapq
import itertools
import math
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType
from typing import cast

import numpy as np
import numpy.typing as npt

from xce.alloc import (
    Allocator,
    AllocatorRegistry,
    AllocOptions,
    CancelToken,
    Decision,
    Dispatched,
    JobRequest,
    PendInfo,
    Pending,
    PendReason,
    PlannedStart,
    prepare_requirement,
)
from xce.alloc.planner import Planner, monotone
from xce.backfill import BackfillPolicy, BackfillRegistry, default_backfills
from xce.cluster import SLOTS, ClusterState, PendingJob, Queue
from xce.cluster.catalog import ResourceCatalog
from xce.core.gates import Gate, Gates
from xce.core.pickers import (
    ClockedPicker,
    JobPicker,
    Pick,
    PickerRegistry,
    QueueCursor,
    default_pickers,
    holds_queue,
)
from xce.core.repeat import Decided, PlanMemory, Started
from xce.errors import Cancelled, InputError, InternalError
from xce.preempt import Preemptor

__all__ = [
    "PickOrder",
    "PickSequence",
    "Session",
    "SessionResult",
    "SessionStats",
    "array_task",
    "fcfs_order",
    "job_request",
    "pick_order",
]

_QUEUE_DEPTH = 16  # batches in flight between the picker and the allocator thread
_BATCH = 64  # picks per batch when no decision is awaited
_POLL_S = 0.05  # how often a waiting thread looks at the cancel token


def fcfs_order(state: ClusterState, jobs: Iterable[PendingJob] | None = None) -> list[PendingJob]:
    """Queue priority high first, then submit time, then file order."""
    pending = state.jobs if jobs is None else jobs
    return sorted(pending, key=lambda j: (-state.queue_priority(j.queue), j.submit_time, j.order))


def _fold_entries(
    decisions: tuple[Decision, ...], entries: Mapping[str, str], own: Mapping[str, str]
) -> tuple[Decision, ...]:
    """One decision per job that has entries in further queues (``entries``: entry id ->
    job id; ``own``: job id -> its own queue), under the job's id, at its first entry's
    place: the dispatch if one entry started, else the pending entry planned to start
    first (else its first entry's: :func:`_winner`)."""
    mains = set(entries.values())
    groups: dict[str, list[Decision]] = {}
    for d in decisions:
        main = entries.get(d.job, d.job)
        if main in mains:
            groups.setdefault(main, []).append(d)
    out: list[Decision] = []
    for d in decisions:
        main = entries.get(d.job, d.job)
        group = groups.pop(main, None) if main in mains else [d]
        if group is None:
            continue  # an entry of a job already placed
        out.append(replace(_winner(group, main, own[main]), job=main) if main in mains else d)
    return tuple(out)


def _winner(group: list[Decision], main: str, own: str) -> Decision:
    """Job ``main``'s decision from its entries' (in pick order; ``own``: the queue of
    its own entry): a start; else the earliest plan; else the first entry's pend, unless
    that one can never run and another entry can: then the first such, its message
    saying in which queue (a job is never runnable only when none of its queues could
    ever run it). An entry's id is ``main@queue``."""
    started = [d for d in group if isinstance(d, Dispatched)]
    if started:
        return started[0]
    planned = [d for d in group if isinstance(d, Pending) and d.plan is not None]
    if planned:
        return min(planned, key=lambda d: d.plan.start if d.plan is not None else math.inf)
    first = group[0]
    if not isinstance(first, Pending) or first.info.reason is not PendReason.NEVER_RUNNABLE:
        return first
    for d in group[1:]:
        if isinstance(d, Pending) and d.info.reason is not PendReason.NEVER_RUNNABLE:
            queue = own if d.job == main else d.job[len(main) + 1 :]
            return replace(d, info=replace(d.info, message=f"in queue {queue}: {d.info.message}"))
    return first


def _fold_arrays(
    decisions: tuple[Decision, ...], task_of: Mapping[str, PendingJob]
) -> tuple[Decision, ...]:
    """The pending tasks of each array record (``task_of``: this session's tasks and
    their records) as one decision under the record's id, at its first pending task's
    place, saying how many of its tasks wait: those it still holds less those dispatched
    this session."""
    started: dict[str, list[int]] = {}
    for d in decisions:
        record = task_of.get(d.job)
        if isinstance(d, Dispatched) and record is not None:
            started.setdefault(record.id, []).append(int(d.job.rpartition("_")[2]))
    out: list[Decision] = []
    folded: set[str] = set()
    for d in decisions:
        record = task_of.get(d.job)
        if record is None or not isinstance(d, Pending):
            out.append(d)
            continue
        if record.id in folded:
            continue
        folded.add(record.id)
        left = record.array
        assert left is not None
        for i in started.get(record.id, ()):
            left = left.without(i)
        message = f"{len(left)} task(s) {record.id}_[{left.text()}] wait: {d.info.message}"
        out.append(replace(d, job=record.id, info=replace(d.info, message=message)))
    return tuple(out)


def array_task(record: PendingJob, index: int) -> PendingJob:
    """Task ``index`` of array record ``record``: a job of its own, ``412_7``, asking
    what the record asks."""
    return replace(record, id=f"{record.id}_{index}", array=None, array_job=record.id)


def job_request(job: PendingJob, catalog: ResourceCatalog) -> JobRequest:
    """The allocator's view of a pending job (its requirement prepared, memoised)."""
    tasks = (job.min_tasks, job.max_tasks) if job.tasks_given else (None, None)
    requirement = prepare_requirement(job.resreq, catalog, *tasks)
    return JobRequest(job.id, job.user, job.queue, job.project, requirement)


class PickSequence:
    """The merged picker order of one session: queues by priority (high first); among
    queues of equal priority, the one whose next job was submitted first."""

    def __init__(
        self,
        state: ClusterState,
        jobs: Iterable[PendingJob],
        picker_for: Callable[[Queue], JobPicker],
        *,
        skip_blocked: bool = False,
        now: float | None = None,
    ) -> None:
        """``now``: the session's time, for a picker whose order depends on it
        (:class:`~xce.core.pickers.ClockedPicker`; default the state's session time)."""
        self._skip_blocked = skip_blocked
        by_queue: dict[str, list[PendingJob]] = {}
        for job in jobs:
            by_queue.setdefault(job.queue, []).append(job)
        levels: dict[int, list[QueueCursor]] = {}
        for name in sorted(by_queue):
            q = state.queues.get(name) or _default_queue(name)
            picker = picker_for(q)
            if _clocked(picker):
                if now is None:
                    now = state.session_time()
                clocked = cast(ClockedPicker, picker)
                cursor = clocked.start_at(q, by_queue[name], state, now)
            else:
                cursor = picker.start(q, by_queue[name], state)
            levels.setdefault(q.priority, []).append(cursor)
        self._levels = [levels[p] for p in sorted(levels, reverse=True)]
        self._owner: dict[str, QueueCursor] = {}

    def next(self) -> Pick | None:
        """The next pick, or None when every queue is done."""
        while self._levels:
            heads: list[tuple[tuple[float, ...], int]] = []
            level = self._levels[0]
            if self._skip_blocked:  # a cursor whose picks are all blocked from now on
                level[:] = [c for c in level if not _blocked_for_good(c)]
            if len(level) == 1:  # one queue at this priority: its order is the order
                pick = level[0].peek()
                if pick is not None:
                    pick = level[0].pop()
                    assert pick is not None
                    self._owner[pick.job.id] = level[0]
                    return pick
            key = _merge_key(level)
            for i, cursor in enumerate(level):
                pick = cursor.peek()
                if pick is not None:
                    heads.append((key(pick.job), i))
            if heads:
                cursor = self._levels[0][min(heads)[1]]
                pick = cursor.pop()
                assert pick is not None
                self._owner[pick.job.id] = cursor
                return pick
            self._levels.pop(0)
        return None

    def needs_feedback(self, pick: Pick) -> bool:
        return self._owner[pick.job.id].needs_feedback

    def feedback(self, pick: Pick, decisions: Sequence[Decision]) -> None:
        """The decisions on ``pick`` to its cursor, in order (an array record's: one per
        task tried)."""
        cursor = self._owner.pop(pick.job.id)
        for decision in decisions:
            cursor.feedback(pick, decision)


PickOrder = tuple[tuple[str, str | None], ...]
"""A session's picks in turn, each as (job, the job it is blocked behind or None)."""


def pick_order(
    state: ClusterState,
    jobs: Iterable[PendingJob],
    picker_for: Callable[[Queue], JobPicker],
    now: float,
) -> PickOrder | None:
    """The order a whole session at ``now`` over ``jobs`` picks them in while none of
    them starts, as (job, blocked behind) per pick; None where that order is not known
    without deciding: a cursor whose picks follow its decisions (``needs_feedback``), or
    a job the session expands first (an array record, a job with further queues).

    Two sessions over one state with one pick order try the same jobs in the same turn
    on the same books; only a :class:`~xce.core.pickers.ClockedPicker` can make two such
    orders differ (xce.sim.idle)."""
    pending = list(jobs)
    if any(j.array is not None or j.also_queues for j in pending):
        return None
    picks = PickSequence(state, pending, picker_for, now=now)
    out: list[tuple[str, str | None]] = []
    while (pick := picks.next()) is not None:
        if picks.needs_feedback(pick):
            return None
        out.append((pick.job.id, pick.blocked_by))
    return tuple(out)


def _named_in_file(
    err: InputError, state: ClusterState, path: tuple[str, ...] | None
) -> InputError:
    """An unknown name the state file gives at ``path`` (None: an option gave it),
    located in the file when it can be."""
    if path is None:
        return err
    from xce.cluster.load import locate_error

    return locate_error(err, state.source, path)


@lru_cache(maxsize=1024)
def _default_queue(name: str) -> Queue:
    """A queue the state does not declare (immutable: made once per name)."""
    return Queue(name)


def _arrival(job: PendingJob) -> tuple[float, int]:
    return (job.submit_time, job.order)


def _clocked(picker: JobPicker) -> bool:
    """Whether ``picker`` offers ``start_at`` (cheaper than a Protocol isinstance)."""
    return callable(getattr(picker, "start_at", None))


def _merge_key(level: list[QueueCursor]) -> Callable[[PendingJob], tuple[float, ...]]:
    """How the queues of one priority merge: by their cursors' common ``merge_key``
    (QueueCursor), else by submit time, then arrival order."""
    keys = {getattr(c, "merge_key", None) for c in level}
    if len(keys) == 1:
        (key,) = keys
        if key is not None:
            return key  # type: ignore[no-any-return]
    return _arrival


def _blocked_for_good(cursor: QueueCursor) -> bool:
    if not getattr(cursor, "blocks_rest", False):
        return False
    pick = cursor.peek()
    return pick is not None and pick.blocked_by is not None


def _no_reasons() -> Mapping[str, int]:
    return MappingProxyType({})


_NONE = _no_reasons()


@dataclass(frozen=True, slots=True)
class SessionStats:
    """What a session did and what it cost."""

    jobs: int = 0
    dispatched: int = 0
    pending: int = 0
    pending_by_reason: Mapping[str, int] = field(default_factory=_no_reasons)
    cache_hits: int = 0
    cache_misses: int = 0
    cache_inserts: int = 0
    failures_reused: int = 0
    preemptions: int = 0
    planned: int = 0  # pending jobs given a planned start (backfill)
    backfilled: int = 0  # jobs started ahead of a job holding a planned start
    plans_tried: int = 0
    host_tries: int = 0
    iterators: int = 0
    elapsed_s: float = 0.0
    threads: int = 1
    now: float | None = None  # the session's time, when it planned over future time


@dataclass(frozen=True, slots=True)
class SessionResult:
    decisions: tuple[Decision, ...]
    stats: SessionStats

    @property
    def dispatched(self) -> list[Dispatched]:
        return [d for d in self.decisions if isinstance(d, Dispatched)]

    @property
    def pending(self) -> list[Pending]:
        return [d for d in self.decisions if isinstance(d, Pending)]


class Session:
    """Scheduling sessions over one state: pickers order the jobs, the allocator decides."""

    def __init__(
        self,
        state: ClusterState,
        *,
        registry: AllocatorRegistry | None = None,
        options: AllocOptions | None = None,
        token: CancelToken | None = None,
        pickers: PickerRegistry | None = None,
        picker: str | None = None,
        preemptor: Preemptor | None = None,
        backfills: BackfillRegistry | None = None,
        backfill: str | None = None,
    ) -> None:
        """``preemptor``: the victim-set iterator for queues that list ``preempts``
        (default ``lowest_priority_first``). ``backfill``: the policy of queues that name
        none (default the state's ``backfill``, else ``none``)."""
        self.state = state
        self.allocator = Allocator(state, registry, options, token, preemptor)
        self.pickers = pickers if pickers is not None else default_pickers()
        self.default_picker = picker or state.default_picker or "fcfs"
        self.backfills = backfills if backfills is not None else default_backfills()
        self.default_backfill = backfill or state.default_backfill or "none"
        self._requests: dict[int, tuple[PendingJob, JobRequest]] = {}
        self._check_pickers()
        self._check_backfills()
        self._planner: Planner | None = None
        self._considered: Counter[str] = Counter()  # queue -> jobs offered a plan
        self._report: frozenset[str] | None = None  # jobs whose plans are reported
        self._report_left = 0  # of those, not yet decided this session
        self._startable: _Startable | None = None
        self._planned = 0
        self._backfilled = 0
        self._decided: set[str] = set()  # jobs decided so far in this session
        # job -> (host table, hosts) of its last planned placement, across sessions
        self._hints: dict[str, tuple[object, npt.NDArray[np.intp]]] = {}
        self._memory = PlanMemory()  # the last planned session's decisions, to repeat
        self._gates: Gates | None = None  # this session's, when a job may wait at one
        self._array_waits: dict[tuple[str, str], PendInfo] = {}  # (record, queue) -> why
        self._entries: dict[str, str] = {}  # this session's entries in further queues: job
        self._own_queue: dict[str, str] = {}  # a job with such entries: its own queue
        self._started_in: dict[str, str] = {}  # job with entries -> the queue it started in
        self._task_of: dict[str, PendingJob] = {}  # this session's array tasks: their record

    def _check_pickers(self) -> None:
        """An unknown picker is bad input, said now and where it was named."""
        state = self.state
        named: list[tuple[str, tuple[str, ...] | None]] = [
            (self.default_picker, ("picker",) if state.default_picker else None)
        ]
        named += [
            (q.picker, ("queues", q.name, "picker")) for q in state.queues.values() if q.picker
        ]
        for name, path in named:
            try:
                self.pickers.get(name)
            except InputError as err:
                raise _named_in_file(err, state, path) from None

    def _check_backfills(self) -> None:
        """An unknown backfill policy is bad input, said now and where it was named."""
        state = self.state
        named: list[tuple[str, tuple[str, ...] | None]] = [
            (self.default_backfill, ("backfill",) if state.default_backfill else None)
        ]
        named += [
            (q.backfill, ("queues", q.name, "backfill"))
            for q in state.queues.values()
            if q.backfill
        ]
        for name, path in named:
            try:
                self.backfills.get(name)
            except InputError as err:
                raise _named_in_file(err, state, path) from None

    def backfill_for(self, queue: str) -> BackfillPolicy:
        """The queue's own backfill policy, else the session's default."""
        q = self.state.queues.get(queue)
        own = q.backfill if q is not None else None
        return self.backfills.get(own or self.default_backfill)

    def plans(self, jobs: Iterable[PendingJob] | None = None) -> bool:
        """Whether a session over ``jobs`` (default: all pending) needs a plan over future
        time: some job's queue plans (backfill), or an advance reservation is in force."""
        if self.state.reservations:
            return True
        pending = self.state.jobs if jobs is None else jobs
        return any(self.backfill_for(q).plans for q in {j.queue for j in pending})

    def _new_planner(self, pending: Sequence[PendingJob], now: float) -> Planner:
        """The session's planner: the builtin one, or the one the planning queues'
        backfill policy makes (BackfillPolicy.planner); queues that would plan by
        different rules in one session are bad input."""
        policies = {self.backfill_for(q) for q in {j.queue for j in pending}}
        factories = {getattr(p, "planner", None) for p in policies if p.plans}
        if len(factories) > 1:
            names = ", ".join(sorted(p.name for p in policies if p.plans))
            raise InputError(f"backfill policies {names} plan by different rules: use one")
        factory = next(iter(factories), None)
        if factory is None:
            return Planner(self.allocator, now)
        planner = factory(self.allocator, now)
        if not isinstance(planner, Planner):
            raise InternalError(f"a backfill policy's planner gave {planner!r}, not a Planner")
        return planner

    def picker_for(self, q: Queue) -> JobPicker:
        """The queue's own picker, else the session's default."""
        return self.pickers.get(q.picker or self.default_picker)

    def _request(self, job: PendingJob) -> JobRequest:
        """The job's allocator request, kept across sessions while the job object lives."""
        entry = self._requests.get(id(job))
        if entry is None or entry[0] is not job:
            entry = self._requests[id(job)] = (job, job_request(job, self.state.catalog))
        return entry[1]

    def _hint(self, job_id: str) -> npt.NDArray[np.intp] | None:
        """The hosts of the job's last planned placement (made on this host table)."""
        found = self._hints.get(job_id)
        if found is None or found[0] is not self.state.hosts:
            return None
        return found[1]

    def _decide(self, pick: Pick) -> tuple[Decision, ...]:
        """The decisions on one pick: one, or for an array record one per task tried."""
        gates = self._gates
        if gates is None:
            return (self._decide_one(pick),)
        job = pick.job
        main = job.entry_of or job.id
        started_in = self._started_in.get(main)
        if started_in is not None:  # started from another of its queues this session
            info = PendInfo(PendReason.QUEUE_BLOCKED, f"started in queue {started_in}")
            return (Pending(job.id, info),)  # folded away (_fold_entries)
        record = job.array_job
        if record is not None and (record, job.queue) in self._array_waits:
            # a later task of a record one of whose tasks waits: it waits alike (the same
            # request on books that only fell), and, as Slurm plans an array's remaining
            # tasks as one job, unplanned; folded into the record's decision at the end
            if self._planner is not None:
                self._decided.add(job.id)
            return (Pending(job.id, self._array_waits[record, job.queue]),)
        gate = gates.check(job)
        if gate is None:
            decision = self._decide_one(pick)
            self._tell(gates, replace(job, id=main) if main != job.id else job, decision)
        else:
            decision = self._at_gate(job, gate, gates)
        if record is not None and isinstance(decision, Pending):
            self._array_waits[record, job.queue] = decision.info
        if isinstance(decision, Dispatched) and (job.also_queues or job.entry_of):
            self._started_in[main] = job.queue
        return (decision,)

    def _expand_entries(self, pending: list[PendingJob]) -> list[PendingJob]:
        """Each job that may also run in further queues (``also_queues``, Slurm's
        ``sbatch -p a,b``) as one entry per queue, with the priority and requirement it
        has there (``24@prio``): each is picked in its own queue's order, the first that
        starts wins and the others then step aside, and each that waits plans (Slurm's
        backfill keeps a reservation for every partition of such a job). The session's
        decisions fold them into one under the job's id (``_fold_entries``)."""
        out: list[PendingJob] = []
        for job in pending:
            out.append(job)
            if job.also_queues:
                self._own_queue[job.id] = job.queue
            for e in job.also_queues:
                entry = replace(
                    job,
                    id=f"{job.id}@{e.queue}",
                    queue=e.queue,
                    priority=e.priority if e.priority is not None else job.priority,
                    resreq=e.resreq,
                    also_queues=(),
                    entry_of=job.id,
                )
                self._entries[entry.id] = job.id
                out.append(entry)
        return out

    def _expand_arrays(self, pending: list[PendingJob], gates: Gates) -> list[PendingJob]:
        """Each array record not stopped at a gate as its first tasks, each a job of its
        own (``412_7``) that the pickers order as any other (under fairshare, other
        users' jobs come between them): as many as could start this session, plus one
        to wait for the rest. A task wants at least ``fewest_tasks`` slots, and free
        slots only fall in a session, so no more can start (preempting queues: as many
        as the cluster's slots could hold). So ``1-100000`` on a full cluster is one
        job, whatever its length. An exact bound: with the allocator's shortcuts off
        (``AllocOptions(shortcuts=False)``) every task is made a job, and decisions are
        the same (tests/test_job_arrays.py)."""
        out: list[PendingJob] = []
        alloc = self.allocator
        free = alloc.books.total_slots
        capacity = float(np.nansum(self.state.hosts.capacity[SLOTS]))
        for job in pending:
            array = job.array
            if array is None or gates.check(job) is not None:
                out.append(job)
                continue
            need = max(self._request(job).requirement.fewest_tasks, 1)
            queue = self.state.queues.get(job.queue)
            room = (capacity if queue is not None and queue.preempts else free) // need + 1
            if not alloc.options.shortcuts:  # the switch off: every task, as many jobs
                room = len(array)
            if array.limit is not None:
                room = min(room, max(array.limit - gates.running_tasks(job.id), 0) + 1)
            for i in itertools.islice(array, int(room)):
                task = array_task(job, i)
                self._task_of[task.id] = job
                out.append(task)
        return out

    def _tell(self, gates: Gates, job: PendingJob, decision: Decision) -> None:
        """What a later job's gate needs of a decision: a start, or a planned run."""
        if isinstance(decision, Dispatched):
            gates.started(job)
        elif isinstance(decision, Pending) and decision.plan is not None:
            gates.planned(job.id, decision.plan.start, decision.plan.end)

    def _at_gate(self, job: PendingJob, gate: Gate, gates: Gates) -> Pending:
        """A job waiting at a gate: its reason, and in a planned session a plan from the
        gate's earliest instant on. Only a begin time's plan is held (reserved): as in
        Slurm, whose backfill reserves nothing for a job with an unsatisfied dependency
        or at its array's limit, the others' plans are shown and hold nothing."""
        decision = Pending(job.id, gate.info)
        planner = self._planner
        if planner is None:
            return decision
        self._decided.add(job.id)
        if not self.backfill_for(job.queue).plans:  # e.g. none beside a reservation
            return decision
        if self._report is not None and job.id in self._report:
            self._report_left -= 1
        earliest = gate.earliest
        if earliest is None or math.isnan(earliest) or not math.isfinite(earliest):
            return decision
        request = self._request(job)
        plan = planner.plan(job, request, planner.estimate_of(job), None, earliest=earliest)
        if plan is None:
            return decision
        if gate.info.reason is PendReason.BEGIN_TIME:
            planner.hold(job.id, plan)
        self._planned += 1
        gates.planned(job.id, plan.start, plan.end)
        return replace(decision, plan=plan)

    def _decide_one(self, pick: Pick) -> Decision:
        planner = self._planner
        if planner is not None:
            self._decided.add(pick.job.id)
            if self._report is not None and pick.job.id in self._report:
                self._report_left -= 1
            return self._decide_noted(pick, planner)
        if pick.blocked_by is not None:
            return self._blocked(pick)
        return self.allocator.decide(self._request(pick.job))

    def _blocked(self, pick: Pick) -> Pending:
        self.allocator.token.checkpoint()
        head = pick.blocked_by or ""
        head = self._entries.get(head, head)  # an entry in a further queue: its job
        record = self._task_of.get(head)  # an array's task stands for its record
        message = (
            f"waiting behind job {record.id if record else head}, in strict queue "
            f"{pick.job.queue} "
            "(it waits for resources, or on a limit that applies to this job too)"
        )
        return Pending(pick.job.id, PendInfo(PendReason.QUEUE_BLOCKED, message))

    def _decide_noted(self, pick: Pick, planner: Planner) -> Decision:
        """:meth:`_decide_planned`, or the last session's decision repeated when it
        provably repeats (xce.core.repeat); pending decisions are noted for the next."""
        job, memory = pick.job, self._memory
        hint = self._hint(job.id)
        if memory.repeating:
            steady = monotone(self._request(job))
            entry = memory.repeat(job, pick.blocked_by, hint, steady)
            if entry is not None:
                repeated = self._repeated(entry, planner)
                memory.note(replace(entry, decision=repeated))
                return repeated
        before = self._considered[job.queue]
        decision = self._decide_planned(pick, planner)
        if isinstance(decision, Pending):
            considered = self._considered[job.queue] != before
            memory.note(Decided(job, pick.blocked_by, decision, hint, considered))
        return decision

    def _repeated(self, entry: Decided, planner: Planner) -> Pending:
        """``entry``'s decision again, with what deciding it does: its plan held, its
        offer of a plan counted, a RESERVED message made for this session's time, and
        a pend the allocator gave asked of it again (on the same books, so the same
        answer; the unsatisfiable cache then holds what it held, for later jobs)."""
        job, decision = entry.job, entry.decision
        policy = self.backfill_for(job.queue)
        if entry.blocked_by is not None and not policy.replaces_queue_blocking:
            self.allocator.token.checkpoint()  # as _blocked does
        elif decision.info.reason is PendReason.RESERVED:
            end = planner.now + planner.estimate_of(job)
            info = replace(decision.info, message=planner.why_reserved(job, end))
            decision = replace(decision, info=info)
        else:
            again = self.allocator.decide(self._request(job))
            if not isinstance(again, Pending):  # the books are the same: cannot be
                raise InternalError(f"job {job.id}: a repeated pend was dispatched")
            decision = replace(again, plan=decision.plan)
        if entry.considered:
            self._considered[job.queue] += 1
        if decision.plan is not None:
            plan = self._memory.moved(decision.plan, planner.now)
            if plan is not decision.plan:
                decision = replace(decision, plan=plan)
                planner.reached["plan repeated from now"] += 1
            planner.hold(job.id, plan)
            self._planned += 1
        planner.reached["plan repeated"] += 1
        return decision

    def _repeatable(self, threads: bool) -> bool:
        """Whether this session may repeat the last one's decisions, and be repeated."""
        state = self.state
        return (
            not threads
            and self.allocator.options.shortcuts
            and self._report is None
            and not any(q.preempts for q in state.queues.values())
            and self._gates is None  # a gate opens with time, not only with resources
            and type(self._planner) is Planner  # a policy's own rules: not proven to repeat
        )

    def _decide_planned(self, pick: Pick, planner: Planner) -> Decision:
        """A decision in a session with a plan over future time (docs/backfill.md)."""
        job = pick.job
        policy = self.backfill_for(job.queue)
        if pick.blocked_by is not None and not policy.replaces_queue_blocking:
            return self._blocked(pick)
        request = self._request(job)
        duration = planner.estimate_of(job)
        hint = self._hint(job.id) if policy.keeps_placements else None
        decision = planner.start_now(job, request, duration, hint)
        if isinstance(decision, Dispatched):
            self._hints.pop(job.id, None)
            planner.started(decision.allocation, duration)
            if planner.planned:
                self._backfilled += 1
                return Dispatched(decision.job, decision.allocation, backfilled=True)
            return decision
        reason = decision.info.reason
        if decision.preemption is not None:  # the jobs planned after it plan around it
            planner.preempted(decision.preemption, duration)
        if reason is PendReason.RESERVATION:
            # waiting for its own reservation's window: planned there whatever the
            # policy (only its reservation's hosts, which it shares with few)
            return self._with_plan(job, request, duration, decision, planner, policy)
        if not policy.plans or reason is PendReason.PREEMPTING or not holds_queue(reason):
            return decision
        considered = self._considered[job.queue]
        self._considered[job.queue] = considered + 1
        if not policy.plans_job(considered):
            return decision
        return self._with_plan(job, request, duration, decision, planner, policy)

    def _with_plan(
        self,
        job: PendingJob,
        request: JobRequest,
        duration: float,
        decision: Pending,
        planner: Planner,
        policy: BackfillPolicy,
    ) -> Pending:
        """``decision`` with the job's planned start, held in the plan (unchanged when
        it has none, or when no one reads it and it can change no decision)."""
        if self._report is not None and job.id not in self._report and not self._report_left:
            startable = self._startable
            if startable is not None and not startable.any(self.allocator.books.total_slots):
                # no later job can start now, nor is one's plan reported: this job's
                # plan would change nothing anyone reads
                return decision
        keep = policy.keeps_placements
        hint = self._hint(job.id) if keep else None
        plan: PlannedStart | None = planner.plan(job, request, duration, hint)
        if plan is None:
            return decision
        if keep:
            self._hints[job.id] = (self.state.hosts, plan.allocation.columns().hosts)
        planner.hold(job.id, plan)
        self._planned += 1
        return replace(decision, plan=plan)

    def run(
        self,
        jobs: Iterable[PendingJob] | None = None,
        *,
        threads: bool = False,
        token: CancelToken | None = None,
        skip_blocked: bool = False,
        now: float | None = None,
        plans_for: Iterable[str] | None = None,
        since: Sequence[Started] | None = None,
    ) -> SessionResult:
        """Begin a session and decide every job (all pending jobs of the state by default).

        ``token`` replaces the cancel token for this and later sessions. ``skip_blocked``
        leaves out the jobs of a queue whose picker blocks the rest of it (strict), which
        would all pend ``QUEUE_BLOCKED`` (not applied to queues whose backfill policy
        replaces the blocking). ``now``: the session's time (default
        :meth:`~xce.cluster.ClusterState.session_time`), which planning counts from.
        ``plans_for``: the jobs whose planned starts the caller reads (default: every
        job); another job is planned only while a later job of the session could still
        start now (its plan could keep that job out), which changes no decision.
        ``since``: the job starts applied to the state since the last session, when
        nothing else but submissions changed it (the core says; None: unknown). A planned
        session may then repeat the last one's decisions where they provably repeat
        (docs/backfill.md), an exact shortcut.
        Raises :class:`~xce.errors.Cancelled` if cancelled; the state is never changed.
        """
        start = time.perf_counter()
        alloc = self.allocator
        if token is not None:
            alloc.token = token
        alloc.begin_session()  # all resets happen before the first job is picked
        pending = list(self.state.jobs if jobs is None else jobs)
        self._considered.clear()
        self._report = frozenset(plans_for) if plans_for is not None else None
        self._startable = None
        self._report_left = (
            sum(1 for j in pending if j.id in self._report) if self._report is not None else 0
        )
        self._planned = self._backfilled = 0
        self._decided.clear()
        if len(self._requests) > 2 * len(self.state.jobs) + 64:  # jobs no longer pending
            live = {id(j) for j in self.state.jobs}
            self._requests = {k: v for k, v in self._requests.items() if k in live}
        if len(self._hints) > 2 * len(pending) + 64:  # jobs that left without starting
            ids = {j.id for j in pending}
            self._hints = {k: v for k, v in self._hints.items() if k in ids}
        self._planner = None
        self._gates = None
        when: float | None = None
        self._array_waits.clear()
        self._task_of.clear()
        self._entries.clear()
        self._own_queue.clear()
        self._started_in.clear()
        if self.state.gated and any(j.gated for j in pending):
            at = self.state.session_time() if now is None else now
            self._gates = Gates(self.state, at)
            pending = self._expand_arrays(pending, self._gates)
            pending = self._expand_entries(pending)
        if self.plans(pending):
            when = self.state.session_time() if now is None else now
            self._planner = self._new_planner(pending, when)
            skip_blocked = False  # a plan, not the picker, may decide who waits
            if self._report is not None:
                self._startable = _Startable(
                    [(self._request(j).requirement.fewest_tasks, j.id) for j in pending],
                    self._decided,
                )
            self._memory.begin(when, since, self._repeatable(threads))
        else:
            self._memory.forget()
        try:
            picks = PickSequence(
                self.state, pending, self.picker_for, skip_blocked=skip_blocked, now=now
            )
            decisions = self._threaded(picks) if threads else self._synchronous(picks)
            planner = self._planner
            if planner is not None and when is not None:
                changes = planner.next_change if self._memory.recording else None
                self._memory.end(when, decisions, changes)
        except BaseException:
            self._memory.forget()
            raise
        finally:
            self._planner = None
        if self._entries:
            decisions = _fold_entries(decisions, self._entries, self._own_queue)
        if self._task_of:
            decisions = _fold_arrays(decisions, self._task_of)
        stats = self._stats(decisions, start, 2 if threads else 1)
        if when is not None:
            stats = replace(stats, now=when)
        return SessionResult(decisions, stats)

    def _synchronous(self, picks: PickSequence) -> tuple[Decision, ...]:
        out: list[Decision] = []
        while (pick := picks.next()) is not None:
            decisions = self._decide(pick)
            picks.feedback(pick, decisions)
            out.extend(decisions)
        return tuple(out)

    def _threaded(self, picks: PickSequence) -> tuple[Decision, ...]:
        pipe = _Pipeline(self, picks)
        return pipe.run()

    def _stats(self, decisions: tuple[Decision, ...], start: float, threads: int) -> SessionStats:
        s = self.allocator.stats
        reasons: Counter[str] = Counter()
        for d in decisions:
            if isinstance(d, Pending):
                reasons[d.info.reason.value] += 1
        pending = sum(reasons.values())
        return SessionStats(
            jobs=len(decisions),
            dispatched=len(decisions) - pending,
            pending=pending,
            pending_by_reason=MappingProxyType(dict(sorted(reasons.items()))) if reasons else _NONE,
            cache_hits=s.cache_hits,
            cache_misses=s.cache_misses,
            cache_inserts=s.cache_inserts,
            failures_reused=s.failures_reused,
            preemptions=s.preemptions,
            planned=self._planned,
            backfilled=self._backfilled,
            plans_tried=s.plans_tried,
            host_tries=s.host_tries,
            iterators=s.iterators,
            elapsed_s=time.perf_counter() - start,
            threads=threads,
        )


class _Startable:
    """Whether some job not yet decided in this session could start now: one needing no
    more slots than are free (a necessary condition; free slots only fall in a session,
    so once none could, none can)."""

    def __init__(self, needs: list[tuple[int, str]], decided: set[str]) -> None:
        heapq.heapify(needs)
        self._heap = needs
        self._decided = decided
        self._never = False

    def any(self, free_slots: float) -> bool:
        if self._never:
            return False
        heap = self._heap
        while heap and heap[0][1] in self._decided:
            heapq.heappop(heap)
        self._never = not heap or heap[0][0] > free_slots
        return not self._never


_END = object()


class _Pipeline:
    """A picker thread and an allocator thread joined by a bounded queue."""

    def __init__(self, session: Session, picks: PickSequence) -> None:
        self.session = session
        self.picks = picks
        self.token = session.allocator.token
        self.work: queue.Queue[object] = queue.Queue(maxsize=_QUEUE_DEPTH)
        self.replies: queue.Queue[tuple[Decision, ...]] = queue.Queue()
        self.decisions: list[Decision] = []
        self.failure: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> tuple[Decision, ...]:
        picker = threading.Thread(target=self._guard, args=(self._pick,), name="xce-picker")
        allocator = threading.Thread(
            target=self._guard, args=(self._allocate,), name="xce-allocator"
        )
        picker.start()
        allocator.start()
        picker.join()
        allocator.join()
        if self.failure is not None:
            raise self.failure
        return tuple(self.decisions)

    def _guard(self, body: Callable[[], None]) -> None:
        try:
            body()
        except BaseException as err:
            if self.failure is None or isinstance(self.failure, Cancelled):
                self.failure = err
            self.stop.set()

    def _put(self, item: object) -> None:
        while True:
            self.token.checkpoint()
            if self.stop.is_set():
                raise Cancelled()
            try:
                self.work.put(item, timeout=_POLL_S)
                return
            except queue.Full:
                continue

    def _reply(self) -> tuple[Decision, ...]:
        while True:
            self.token.checkpoint()
            if self.stop.is_set():
                raise Cancelled()
            try:
                return self.replies.get(timeout=_POLL_S)
            except queue.Empty:
                continue

    def _pick(self) -> None:
        """Picks go over in batches (a queue hand-off costs more than a pick); a pick
        whose queue needs the decision ends its batch, and the picker waits for it."""
        picks = self.picks
        batch: list[tuple[Pick, bool]] = []
        while (pick := picks.next()) is not None:
            self.token.checkpoint()
            wait = picks.needs_feedback(pick)
            batch.append((pick, wait))
            if wait or len(batch) >= _BATCH:
                self._put(batch)
                batch = []
            if wait:
                picks.feedback(pick, self._reply())
        if batch:
            self._put(batch)
        self._put(_END)

    def _allocate(self) -> None:
        while True:
            if self.stop.is_set():
                raise Cancelled()
            try:
                item = self.work.get(timeout=_POLL_S)
            except queue.Empty:
                self.token.checkpoint()
                continue
            if item is _END:
                return
            assert isinstance(item, list)
            for pick, wait in item:
                decisions = self.session._decide(pick)
                self.decisions.extend(decisions)
                if wait:
                    self.replies.put(decisions)
