"""Job pickers (the spec's ``xce_job_picker_iface_t``): which pending job to try next.

A picker orders one queue's jobs for one session through a :class:`QueueCursor`; the
session merges the queues (priority high first; among queues of equal priority, the one
whose next job was submitted first). Builtins:

- ``fcfs``: submit time, then arrival order; a job that cannot start is pended and the
  next one tried.
- ``strict``: as fcfs, but a job that waits for resources holds its queue (strict FIFO,
  as Slurm's main scheduler): every later job pends as ``QUEUE_BLOCKED``. A job that
  waits on a limit (``LIMIT``) holds only the later jobs that limit applies to; a job
  that can never run (``NEVER_RUNNABLE``), is invalid (``INVALID``) or waits at a gate
  (``HELD``, ``BEGIN_TIME``, ``DEPENDENCY``, ``ARRAY_LIMIT``) holds nobody
  (:class:`QueueHold` says who waits behind whom).
- ``priority``: the scheduler's own job priority (``jobs[].priority``, kept by ``xce
  import``), high first, then submit time; queues of one priority merge by it too. The
  default of imported states that carry priorities.
- ``multifactor``: Slurm's multifactor priority (age, fair share over an association
  tree with decayed usage, job size, partition, QOS, nice, TRES), from the state's
  ``priority`` section (:mod:`xce.priority.multifactor`, docs/priority.md).
- ``lsf-fairshare``: LSF's hierarchical fairshare: share trees of users and user groups
  and the documented dynamic user priority over CPU time, run time and job slots
  (:mod:`xce.priority.lsf`, docs/priority.md).
- ``fairshare``: LSF-style user fairshare within the queue. A user's dynamic priority is
  ``share / (1 + slots)``, where ``share`` is the queue's ``shares[user]`` (else
  ``shares["default"]``, else 1) and ``slots`` the slots the user's jobs of this queue
  hold: running at session start plus dispatched so far this session. The user with the
  highest priority offers their next job (FCFS among their own); ties go to the earlier
  submitted job.

Third-party pickers are found through the entry-point group ``xce.pickers`` (an entry
point loads a class or factory called with no arguments).

What a driver may skip is part of the picker, never inferred from its name: a picker
declares ``monotone_in_session`` and ``blocks_queue_at_head`` (:class:`JobPicker`, read
with :func:`picker_traits`); ``fcfs`` declares the first, ``strict`` both, ``fairshare``
neither. A picker whose order is neither but follows only the slots users hold
(``fairshare``) may offer :class:`PlainOrder` for the simulator's plain replay, and one
that follows the session's time and the state's usage books (``multifactor``,
``lsf-fairshare``) :class:`ClockedPlainOrder`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from xce.alloc import Decision, Dispatched, Pending, PendReason
from xce.cluster import ClusterState, Limit, PendingJob, Queue
from xce.entry import NamedRegistry
from xce.errors import InputError

__all__ = [
    "ClockedPicker",
    "ClockedPlainOrder",
    "FairsharePicker",
    "FcfsPicker",
    "JobPicker",
    "ListCursor",
    "Pick",
    "PickerRegistry",
    "PickerTraits",
    "PlainCursor",
    "PlainOrder",
    "PlainSession",
    "PriorityPicker",
    "QueueCursor",
    "QueueHold",
    "RunningWork",
    "StrictPicker",
    "clocked_plain_order",
    "default_pickers",
    "fairshare_priority",
    "held_slots",
    "holds_queue",
    "picker_traits",
    "plain_order",
    "priority_key",
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
    - ``merge_key`` (optional attribute): a function of a job giving its place among
      the jobs of other queues of the same priority; when every cursor of a priority
      level has the same one, the session merges them by it (default: submit time,
      then arrival order).
    - ``blocks_rest`` (optional attribute, default False): True when the next pick is
      blocked and so is every later pick of this cursor (it may turn True as decisions
      come in, never back) — then a session that only acts on dispatches (the simulator)
      may stop asking this cursor.
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
    the state; it returns a fresh :class:`QueueCursor`.

    Three optional class attributes (default False; read them with :func:`picker_traits`)
    let a driver that replays many sessions (the simulator) skip work that cannot change
    a decision. Declare one only if every cursor of the picker keeps its promise; a
    picker that declares none is simply tried in full every session.

    - ``monotone_in_session``: the cursor offers the queue's jobs in first-come-first-
      served order (submit time, then arrival order), whatever the state; whether a pick
      is blocked depends only on the decisions on the earlier jobs of its queue, and with
      ``blocks_queue_at_head`` False no pick is ever blocked. Then, between two sessions
      with nothing freed (availability only falls, limit usage only rises), a job that
      pended pends again and charged nothing, so the driver may leave it out, try only
      the new jobs, and feed one session in arrival-order batches.
    - ``blocks_queue_at_head`` (meaningful with ``monotone_in_session``): picks are
      blocked exactly as :class:`QueueHold` says — a job pending for resources
      (:func:`holds_queue`) holds every later job of its queue, one pending ``LIMIT``
      holds the later jobs its limits apply to. The driver then knows a queue whose head
      waits for resources pends whole until something is freed.
    - ``never_blocks``: no cursor ever offers a blocked pick (``Pick.blocked_by`` is
      always None): every job of the queue is tried, in whatever order. Then a session
      that plans nothing, with nothing submitted, freed or started since the last one,
      decides as it did, even where the order moved with time alone (a
      :class:`ClockedPicker`'s): each job tried then is tried again on the same books.
      (``monotone_in_session`` without ``blocks_queue_at_head`` implies it.)

    The simulator's plain replay (:mod:`xce.sim.plain`) takes these two promises as the
    whole order: a plain workload under such pickers is replayed without cursors.
    """

    name: str

    def start(
        self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState
    ) -> QueueCursor: ...


@runtime_checkable
class ClockedPicker(Protocol):
    """Optional extension of a :class:`JobPicker` whose order depends on the session's
    time (a job's age: ``multifactor``). The session calls ``start_at(queue, jobs,
    state, now)`` instead of ``start``, with ``now`` the session's time (which may be
    later than the state's own in a replay); it returns what ``start`` would at that
    time. ``start`` itself must use the state's session time."""

    def start_at(
        self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState, now: float
    ) -> QueueCursor: ...


@runtime_checkable
class PlainCursor(Protocol):
    """One queue's jobs in one session of the simulator's plain replay, in its picker's
    order (see :class:`PlainOrder`).

    - ``peek_job()`` returns the job the queue would offer next without taking it (None
      when it has no job left); ``pop_job()`` takes that job. Each job the cursor was
      given is offered exactly once (so a cursor over one job offers just it: the
      replay does not ask for one).
    - ``started(job, slots)`` reports that ``job``, the job just taken, started holding
      ``slots`` slots; it is called before the next ``peek_job``/``pop_job``, and not at
      all for a job that did not start.
    """

    def peek_job(self) -> PendingJob | None: ...

    def pop_job(self) -> PendingJob | None: ...

    def started(self, job: PendingJob, slots: float) -> None: ...


@runtime_checkable
class PlainOrder(Protocol):
    """Optional extension of a :class:`JobPicker` whose order is not
    ``monotone_in_session`` but depends on the state only through the slots each user's
    running work of the queue holds (``fairshare``). It lets the simulator's plain
    replay (:mod:`xce.sim.plain`), which keeps no cluster state and no decisions, replay
    the picker's queues too.

    ``start_plain(queue, jobs, held)`` returns a fresh :class:`PlainCursor` over
    ``jobs`` (some of the queue's pending jobs, in arrival order) that offers them in
    exactly the order ``start`` would, with a state whose running work of ``queue``
    holds ``held[user]`` slots per user (0 for a user not in ``held``), when every
    decision is a dispatch reported through ``started`` or a pending decision.

    The promise that makes it worth it: leaving out of ``jobs`` any job that would not
    start this session does not change the order of the others. The replay leaves out
    the jobs that want more slots than are free, and, between two sessions with nothing
    freed, the jobs that pended (they pend again).
    """

    def start_plain(
        self, queue: Queue, jobs: Sequence[PendingJob], held: Mapping[str, float]
    ) -> PlainCursor: ...


def plain_order(picker: JobPicker) -> PlainOrder | None:
    """``picker`` as a :class:`PlainOrder`, if it offers ``start_plain``."""
    return picker if isinstance(picker, PlainOrder) else None


class RunningWork(Protocol):
    """What a :class:`ClockedPlainOrder` may read of one running job (a
    :class:`~xce.cluster.RunningJob` is one)."""

    @property
    def user(self) -> str: ...

    @property
    def project(self) -> str: ...

    @property
    def queue(self) -> str: ...

    @property
    def start_time(self) -> float: ...

    @property
    def slots(self) -> float: ...

    @property
    def requested_time(self) -> float | None: ...


@dataclass(frozen=True, slots=True, eq=False)
class PlainSession:
    """One session of the plain replay as a :class:`ClockedPlainOrder` sees it: the
    replay's cluster (``state``: its hosts, queues and ``priority`` section, whose usage
    books hold what the work ended so far used; its own ``running`` and ``jobs`` are
    empty), the work running at the session (in the order it started) and the session's
    time. One object per session: an order may keep what it computes for it by identity."""

    state: ClusterState
    running: Sequence[RunningWork]
    now: float


@runtime_checkable
class ClockedPlainOrder(Protocol):
    """Optional extension of a :class:`ClockedPicker` whose order depends on the state
    only through its time, its running work and its ``priority`` section's usage books
    (``multifactor``, ``lsf-fairshare``), for the simulator's plain replay
    (:mod:`xce.sim.plain`), which keeps those and nothing else of a state.

    ``start_plain_at(queue, jobs, session)`` returns a fresh :class:`PlainCursor` over
    ``jobs`` (some of the queue's pending jobs, in arrival order) that offers them in
    exactly the order ``start_at(queue, jobs, state, session.now)`` would, for a state
    that is ``session.state`` with ``session.running`` as its running work, when every
    decision is a dispatch reported through ``started`` or a pending decision. A cursor
    whose :class:`QueueCursor` twin has a ``merge_key`` has the same one (the replay
    merges queues of one priority by it, as the session does).

    The promise is :class:`PlainOrder`'s: leaving out of ``jobs`` any job that would not
    start this session does not change the order of the others."""

    def start_plain_at(
        self, queue: Queue, jobs: Sequence[PendingJob], session: PlainSession
    ) -> PlainCursor: ...


def clocked_plain_order(picker: JobPicker) -> ClockedPlainOrder | None:
    """``picker`` as a :class:`ClockedPlainOrder`, if it offers ``start_plain_at``."""
    return picker if isinstance(picker, ClockedPlainOrder) else None


@dataclass(frozen=True, slots=True)
class PickerTraits:
    """What a picker promises a driver (see :class:`JobPicker`); False unless declared."""

    monotone_in_session: bool = False
    blocks_queue_at_head: bool = False
    never_blocks: bool = False


def picker_traits(picker: JobPicker) -> PickerTraits:
    """The optional ``monotone_in_session``, ``blocks_queue_at_head`` and
    ``never_blocks`` attributes of ``picker`` (a picker that does not declare one does
    not promise it)."""
    monotone = getattr(picker, "monotone_in_session", False) is True
    blocks = monotone and getattr(picker, "blocks_queue_at_head", False) is True
    declared = getattr(picker, "never_blocks", False) is True
    return PickerTraits(monotone, blocks, not blocks and (declared or monotone))


def _fcfs_key(job: PendingJob) -> tuple[float, int]:
    return (job.submit_time, job.order)


class ListCursor:
    """Jobs in a fixed order (``key``: submit time, then arrival order); a
    :class:`QueueCursor`, and a :class:`PlainCursor` too."""

    needs_feedback = False

    def __init__(
        self,
        jobs: Sequence[PendingJob],
        key: Callable[[PendingJob], tuple[float, ...]] = _fcfs_key,
    ) -> None:
        self._jobs = sorted(jobs, key=key)
        self._i = 0

    def peek(self) -> Pick | None:
        return Pick(self._jobs[self._i]) if self._i < len(self._jobs) else None

    def pop(self) -> Pick | None:
        pick = self.peek()
        self._i += 1
        return pick

    def feedback(self, pick: Pick, decision: Decision) -> None:
        return None

    # as a PlainCursor: the order is fixed, so a dispatch changes nothing
    def peek_job(self) -> PendingJob | None:
        return self._jobs[self._i] if self._i < len(self._jobs) else None

    def pop_job(self) -> PendingJob | None:
        job = self.peek_job()
        self._i += 1
        return job

    def started(self, job: PendingJob, slots: float) -> None:
        return None


class FcfsPicker:
    """First come, first served; a job that cannot start does not hold the queue."""

    name = "fcfs"
    monotone_in_session = True  # fixed FCFS order, never blocked
    blocks_queue_at_head = False

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return ListCursor(jobs)


_NOT_A_HEAD = frozenset(
    {
        PendReason.LIMIT,
        PendReason.NEVER_RUNNABLE,
        PendReason.INVALID,
        PendReason.QUEUE_BLOCKED,
        PendReason.RESERVATION,  # waits for its own reservation's window, not for others
        PendReason.HELD,  # the gates (xce.core.gates): waits for no resource
        PendReason.BEGIN_TIME,
        PendReason.DEPENDENCY,
        PendReason.ARRAY_LIMIT,
    }
)
Consumer = tuple[str, str, str]  # (user, queue, project)


def holds_queue(reason: PendReason) -> bool:
    """True if a job tried and pending for ``reason`` holds the rest of its strict queue:
    it waits for resources. ``LIMIT`` holds only some later jobs (:class:`QueueHold`);
    ``NEVER_RUNNABLE``, ``INVALID``, ``RESERVATION``, ``QUEUE_BLOCKED`` (not tried) and
    the gates' reasons (``HELD``, ``BEGIN_TIME``, ``DEPENDENCY``, ``ARRAY_LIMIT``: not
    waiting for resources) hold nobody."""
    return reason not in _NOT_A_HEAD


class QueueHold:
    """Who waits behind whom in a strict queue (issue 9), from the decisions on the jobs
    tried so far, in the queue's order:

    - a job pending for resources (any reason but those below) is the queue's *head*:
      every later job waits behind it;
    - a job pending ``LIMIT`` holds only the later jobs that one of the limits it waits
      on (``PendInfo.limits``, matched by name in ``limits``) applies to
      (:meth:`~xce.cluster.Limit.applies_to`); when the decision names none (or only
      unknown ones), the later jobs of its own user, queue and project;
    - a job pending ``NEVER_RUNNABLE`` or ``INVALID``, and a job that was not tried
      (``QUEUE_BLOCKED``), holds nobody.

    The strict picker's cursors use it; so does the simulator, which feeds one strict
    session in batches and must carry the holds from one batch to the next.
    """

    __slots__ = ("_by_consumer", "_by_limit", "_limits", "_memo", "_tried", "head")

    def __init__(self, limits: Sequence[Limit] = ()) -> None:
        self.head: str | None = None
        self._limits: dict[str, list[Limit]] = {}
        for lim in limits:
            self._limits.setdefault(lim.name, []).append(lim)
        self._by_limit: dict[Limit, tuple[int, str]] = {}  # limit -> (rank, first job held)
        self._by_consumer: dict[Consumer, tuple[int, str]] = {}
        self._memo: dict[Consumer, str | None] = {}
        self._tried = 0  # LIMIT decisions recorded: the rank of the next one

    def blocker(self, job: PendingJob) -> str | None:
        """The job ``job`` must wait behind (it then pends ``QUEUE_BLOCKED``), or None."""
        if self.head is not None:
            return self.head
        if not self._by_limit and not self._by_consumer:
            return None
        consumer = (job.user, job.queue, job.project)
        if consumer in self._memo:
            return self._memo[consumer]
        found = self._by_consumer.get(consumer)
        for lim, held in self._by_limit.items():
            if (found is None or held < found) and lim.applies_to(*consumer):
                found = held
        by = self._memo[consumer] = found[1] if found is not None else None
        return by

    def record(self, job: PendingJob, decision: Decision) -> None:
        """Note the decision on ``job``, tried after every job recorded so far."""
        if self.head is not None or not isinstance(decision, Pending):
            return
        reason = decision.info.reason
        if holds_queue(reason):
            self.head = job.id
            return
        if reason is not PendReason.LIMIT:
            return
        rank = (self._tried, job.id)
        self._tried += 1
        known = True
        for name in decision.info.limits:
            found = self._limits.get(name)
            known = known and found is not None
            for lim in found or ():
                self._by_limit.setdefault(lim, rank)
        if not decision.info.limits or not known:
            self._by_consumer.setdefault((job.user, job.queue, job.project), rank)
        self._memo.clear()


class _StrictCursor(ListCursor):
    needs_feedback = True

    def __init__(self, jobs: Sequence[PendingJob], limits: Sequence[Limit]) -> None:
        super().__init__(jobs)
        self._hold = QueueHold(limits)

    @property
    def blocks_rest(self) -> bool:
        """Once the queue has a head, every later pick is blocked."""
        return self._hold.head is not None

    def peek(self) -> Pick | None:
        pick = super().peek()
        if pick is None:
            return None
        by = self._hold.blocker(pick.job)
        return Pick(pick.job, by) if by is not None else pick

    def feedback(self, pick: Pick, decision: Decision) -> None:
        if pick.blocked_by is None:
            self._hold.record(pick.job, decision)


class StrictPicker:
    """Strict FIFO per queue: a job waiting for resources holds the rest of its queue; a
    job waiting on a limit holds the later jobs that limit applies to (:class:`QueueHold`)."""

    name = "strict"
    monotone_in_session = True  # fixed FCFS order; blocked only by earlier decisions
    blocks_queue_at_head = True  # exactly as QueueHold

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return _StrictCursor(jobs, state.limits)


def fairshare_priority(share: float, slots: float) -> float:
    """A user's dynamic priority: their share over (1 + the slots they hold)."""
    return share / (1.0 + slots)


def held_slots(queue: str, state: ClusterState) -> dict[str, float]:
    """The slots each user's running work of ``queue`` holds (users holding none are
    left out)."""
    held: dict[str, float] = {}
    for run in state.running:
        if run.queue == queue:
            held[run.user] = held.get(run.user, 0.0) + run.slots
    return held


class _FairshareCursor:
    """The fairshare order; the best user is found from a heap of one entry per user
    with jobs left, ``(-priority, submit, order, rank, user)`` (the key of the user's
    next job; ``rank``, the user's place in FCFS order of first jobs, settles what the
    rest leaves equal, as the first-best scan it replaces did), so a pick costs
    O(log users). The entry of the user whose job was just taken
    goes back only at the next call, after ``feedback``/``started`` has counted its slots."""

    needs_feedback = True

    def __init__(self, queue: Queue, jobs: Sequence[PendingJob], held: dict[str, float]) -> None:
        self._by_user: dict[str, list[PendingJob]] = {}
        for job in sorted(jobs, key=_fcfs_key):
            self._by_user.setdefault(job.user, []).append(job)
        self._next = dict.fromkeys(self._by_user, 0)
        self._rank = {u: r for r, u in enumerate(self._by_user)}
        self._slots = held
        default = queue.shares.get("default", 1.0)
        self._share = {u: queue.shares.get(u, default) for u in self._by_user}
        self._heap = [self._entry(u) for u in self._by_user]
        heapq.heapify(self._heap)
        self._out: str | None = None  # the user whose entry is out of the heap

    def _entry(self, user: str) -> tuple[float, float, int, int, str]:
        job = self._by_user[user][self._next[user]]
        prio = fairshare_priority(self._share[user], self._slots.get(user, 0.0))
        return (-prio, job.submit_time, job.order, self._rank[user], user)

    def _settle(self) -> None:
        user = self._out
        if user is not None:
            self._out = None
            if self._next[user] < len(self._by_user[user]):
                heapq.heappush(self._heap, self._entry(user))

    def peek(self) -> Pick | None:
        job = self.peek_job()
        return Pick(job) if job is not None else None

    def peek_job(self) -> PendingJob | None:
        self._settle()
        if not self._heap:
            return None
        user = self._heap[0][4]
        return self._by_user[user][self._next[user]]

    def pop(self) -> Pick | None:
        job = self.pop_job()
        return Pick(job) if job is not None else None

    def pop_job(self) -> PendingJob | None:
        self._settle()
        if not self._heap:
            return None
        user = heapq.heappop(self._heap)[4]
        self._out = user
        self._next[user] += 1
        return self._by_user[user][self._next[user] - 1]

    def feedback(self, pick: Pick, decision: Decision) -> None:
        if isinstance(decision, Dispatched):
            self.started(pick.job, decision.allocation.slots)

    def started(self, job: PendingJob, slots: float) -> None:
        user = job.user
        self._slots[user] = self._slots.get(user, 0.0) + slots
        if user != self._out and user in self._by_user:  # not the job just taken: rekey
            self._heap = [e for e in self._heap if e[4] != user]
            heapq.heapify(self._heap)
            if self._next[user] < len(self._by_user[user]):
                heapq.heappush(self._heap, self._entry(user))


class FairsharePicker:
    """User fairshare within a queue (see the module docstring for the formula)."""

    name = "fairshare"
    never_blocks = True  # its cursor offers every job, none blocked
    monotone_in_session = False  # the order follows the slots users hold
    blocks_queue_at_head = False

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return _FairshareCursor(queue, jobs, held_slots(queue.name, state))

    def start_plain(
        self, queue: Queue, jobs: Sequence[PendingJob], held: Mapping[str, float]
    ) -> PlainCursor:
        # the order depends on the state only through the slots users hold; a job left
        # out that would not start charges no slots, and within a user's jobs the order
        # is FCFS, so the others keep their order (PlainOrder's promise)
        return _FairshareCursor(queue, jobs, dict(held))


PickerFactory = Callable[[], JobPicker]


class PickerRegistry(NamedRegistry[JobPicker]):
    """Pickers by name; duplicate names are refused. ``NAME:OPTION`` is the picker
    ``NAME`` configured by ``OPTION`` (its ``with_option(option)``, made once per text:
    ``multifactor:PriorityWeightAge=2000``); a picker without ``with_option`` takes
    none."""

    what = "picker"
    group = PICKER_GROUP

    def __init__(self) -> None:
        super().__init__()
        self._configured: dict[str, JobPicker] = {}

    def get(self, name: str) -> JobPicker:
        base, sep, option = name.partition(":")
        if not sep:
            return super().get(name)
        found = self._configured.get(name)
        if found is None:
            picker = super().get(base)
            configure = getattr(picker, "with_option", None)
            if not callable(configure):
                raise InputError(f"picker {base!r} takes no option (got {option!r})")
            found = self._configured[name] = configure(option)
        return found


def priority_key(job: PendingJob) -> tuple[float, float, int]:
    """A job's place in the ``priority`` picker's order: the scheduler's priority high
    first (none counts as 0), then submit time, then arrival order."""
    return (-(job.priority or 0.0), job.submit_time, job.order)


class _PriorityCursor(ListCursor):
    """Jobs by :func:`priority_key`; queues of equal priority merge by the same key."""

    merge_key = staticmethod(priority_key)

    def __init__(self, jobs: Sequence[PendingJob]) -> None:
        super().__init__(jobs, priority_key)


class PriorityPicker:
    """The scheduler's own order: each job's ``priority`` (as Slurm's, PBS's or LSF's
    scheduler computed it, kept by ``xce import``), high first, within the queue's
    priority (Slurm's partition tier); ties by submit time, then arrival order. Queues
    of equal priority are merged by the same key (Slurm orders jobs of partitions of one
    tier by job priority). A job that cannot start does not hold the queue (as fcfs;
    with backfill, what it would delay is kept by its plan)."""

    name = "priority"
    never_blocks = True  # its cursor offers every job, none blocked

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return _PriorityCursor(jobs)


def default_pickers(*, plugins: bool = True) -> PickerRegistry:
    """The builtin pickers, plus (by default) those found through entry points."""
    registry = PickerRegistry()
    from xce.priority.lsf import LsfFairsharePicker  # late: they build on this module
    from xce.priority.multifactor import MultifactorPicker

    builtins: tuple[JobPicker, ...] = (
        FcfsPicker(),
        StrictPicker(),
        FairsharePicker(),
        PriorityPicker(),
        MultifactorPicker(),
        LsfFairsharePicker(),
    )
    for picker in builtins:
        registry.register(picker)
    if plugins:
        registry.load_entry_points()
    return registry
