"""The plain replay: an exact fast path of :class:`~xce.sim.engine.Simulation` for
plain workloads (issue 15).

A replay is *plain* when every job asks for slots alone (a fixed task count; no select,
``order[]``, ``rusage``, ``span``, ``same``, affinity or compute units: one primary of one
alternative) and nothing but free slots can keep a job out: no limits, no advance
reservations, no job waiting for another (no
dependency, no SWF feedback: :mod:`xce.sim.flow`) nor at a gate (no hold, no begin
time after the job's submission: the core's :mod:`xce.core.gates` decide them), builtin
allocator plugins only, sessions at every event time (no ``interval``), and every
queue's picker declares ``monotone_in_session`` (it offers jobs first come, first
served) or offers its own order through :class:`~xce.core.pickers.PlainOrder` (``fairshare``) or
:class:`~xce.core.pickers.ClockedPlainOrder` (``multifactor``, ``lsf-fairshare``: the
replay then keeps a copy of the state's usage books and charges them as the core does;
not with a policy that plans or a queue that preempts). The engine asks the
pickers through their Protocols (:func:`~xce.core.pickers.picker_traits`,
:func:`~xce.core.pickers.plain_order`), never their names. A backfill policy that plans,
or a queue that preempts, changes a session only once a job in it cannot start: such
sessions are run by the simulation's own core (:mod:`xce.sim.handoff`).

Work running when the replay begins (a snapshot's, e.g. ``xce predict``'s forward
replay) is taken when each piece holds slots alone on ok hosts and has a runtime: it
holds its slots until then, and planning counts it as the core does (until its start
plus its estimate). Not with a picker that has an order of its own (it counts the
slots its users hold), nor when sessions that plan go to the core.

Such a replay needs none of the layers a session goes through (picker cursors, the
allocator's contexts and plan iterators, the core's events): this module keeps one array
of free slots per host and decides each job exactly as the allocator would (spec Req 2-4):

- a job of one task takes the first host (in host order) with a free slot (seqjob);
- a job of ``n`` tasks takes the first plan of ``k = 1, 2, ...`` balanced buckets that
  fits: ``r = n mod k`` buckets of ``ceil(n/k)`` and ``k - r`` of ``floor(n/k)``, largest
  first, each on a fresh host iterator, so the large buckets take the first ``r`` hosts
  with ``ceil(n/k)`` free and the small ones the first ``k - r`` others with
  ``floor(n/k)`` free. Plan ``k`` fits iff ``r`` hosts have ``ceil(n/k)`` free and ``k``
  have ``floor(n/k)``: one histogram of free slots answers it for every ``k`` at once;
- failing every balanced plan, the fill plan: each host in order takes what it can of
  the rest (it fits iff the ok hosts have ``n`` slots free in all).

Claims are kept in the allocator's claim order. The session semantics are the core's:
at each event time, finishes, then submissions (a job no state of the cluster could run
is reported unrunnable, with the engine's own triage message), then one session over the
pending jobs in pick order (queue priority high first, then arrival); in a queue whose
picker blocks at its head (``strict``), the first job that cannot start holds the rest.
Records, the timeline and the end-of-run checks are the engine's.

It is on with ``SimOptions.fast_paths`` and ``SimOptions.plain_replay`` (both default
True); tests replay random plain workloads both ways (tests/test_plain_replay.py) and
compare every record, the timeline and ``metrics.json``.
"""

from __future__ import annotations

import heapq
import math
import time
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xce.alloc.outcome import same_slots
from xce.alloc.request import PreparedPrimary, prepare_requirement
from xce.cluster import SLOTS, HostStatus, PendingJob, Queue
from xce.cluster.estimates import estimate
from xce.cluster.schema import MAX_NUMBER
from xce.core.pickers import (
    ClockedPlainOrder,
    PlainCursor,
    PlainOrder,
    PlainSession,
    clocked_plain_order,
    picker_traits,
    plain_order,
)
from xce.errors import InputError, InternalError, clip
from xce.sim.handoff import CoreHandoff
from xce.sim.model import RecordTable, SimJob, Timeline, pending_job, run_length
from xce.sim.placement import at_least, balanced, fill
from xce.sim.planned import array_planning
from xce.sim.result import SimResult

if TYPE_CHECKING:
    from xce.sim.engine import Simulation

__all__ = ["PlainReplay", "plain_replay"]

IntArray = npt.NDArray[np.int64]
HostArray = npt.NDArray[np.unsignedinteger[Any]]  # host indices, smallest type
# hosts in claim order (None: a run of consecutive hosts), slots, lowest host, host count
Placed = tuple[HostArray | None, IntArray, int, int]
Order = PlainOrder | ClockedPlainOrder  # a picker's own order of its queue's jobs
_FIRST_CHUNK = 64  # hosts scanned before growing chunks (see _Free.first)


def plain_replay(sim: Simulation) -> PlainReplay | None:
    """The plain replay of ``sim``, or None when ``sim`` is not plain (module docstring)."""
    options = sim.options
    if not (options.fast_paths and options.plain_replay) or options.interval is not None:
        return None
    if options.predictor is not None:  # predictions move plans (xce.sim.predicted)
        return None
    if sim.flow is not None:  # jobs wait for other jobs (xce.sim.flow): not plain
        return None
    if any(j.hold or (j.begin_time is not None and j.begin_time > j.submit) for j in sim.jobs):
        return None  # a gate (xce.core.gates) that can close: the core decides those
    if options.allocators or not sim.allocators.builtin_only():
        return None
    core = sim.core
    state = core.state
    if state.limits or state.reservations or state.shared_used:
        return None
    capacity = _slot_capacity(sim)
    if capacity is None:
        return None
    initial = _initial_work(sim, capacity)
    if initial is None:
        return None
    tasks = _plain_tasks(sim)
    if tasks is None or not _numbers_in_range(sim):
        return None
    verdicts = _verdicts(sim, tasks, int(capacity.sum()))
    if verdicts is None:
        return None
    queues = sorted({j.queue for j in sim.jobs})
    strict: list[bool] = []
    orders: list[Order | None] = []  # a picker's own order (not monotone)
    for name in queues:
        picker = sim.picker_registry.get(core.picker_name(name))
        traits = picker_traits(picker)
        order: Order | None = None
        if not traits.monotone_in_session:
            order = plain_order(picker) or clocked_plain_order(picker)
            if order is None:
                return None
        strict.append(traits.blocks_queue_at_head)
        orders.append(order)
    planning = [core.backfill_for(name).plans for name in queues]
    preempting = any(q.preempts for q in state.queues.values())
    if initial and any(o is not None for o in orders):
        return None  # an order of its own counts the initial work's users' slots
    clocked = any(isinstance(o, ClockedPlainOrder) for o in orders)
    if clocked and (any(planning) or preempting):
        # the core's usage books would miss the work that never reached it (handoff)
        return None
    replay = PlainReplay(
        sim,
        capacity,
        tasks,
        queues,
        strict,
        verdicts,
        orders,
        planning,
        preempting=preempting,
        initial=initial,
    )
    if initial and replay.handoff is not None and replay.arrays is None:
        return None  # the core's sessions would have to be told of the initial work
    return replay


def _verdicts(sim: Simulation, tasks: list[int], total: int) -> dict[int, str | None] | None:
    """The engine's own triage of each task count (why no state of the cluster could run
    a job of that many tasks; None: some state could), asked of the simulation; None when
    it lets in a job wider than the cluster's ok slots (one that would pend to the end:
    the general path reports it)."""
    verdicts: dict[int, str | None] = {}
    for i, n in enumerate(tasks):
        if n not in verdicts:
            why, _ = sim.triage(pending_job(sim.jobs[i]))
            if why is None and n > total:
                return None
            verdicts[n] = why
    return verdicts


def _numbers_in_range(sim: Simulation) -> bool:
    """Whether the core would take every job's times, and every start and end the replay
    can reach: finite numbers of at most MAX_NUMBER (the general path refuses the others
    with the core's own error, so it replays them). No start or end can pass the last
    submission plus every job's run one after the other."""
    jobs = sim.jobs
    estimates = [j.requested_time for j in jobs if j.requested_time is not None]
    kinds = {type(j.submit) for j in jobs} | {type(j.runtime) for j in jobs}
    kinds |= {type(e) for e in estimates}
    if not all(issubclass(k, int | float) and not issubclass(k, bool) for k in kinds):
        return False
    try:
        submit = np.fromiter((j.submit for j in jobs), dtype=np.float64, count=len(jobs))
        runtime = np.fromiter((j.runtime for j in jobs), dtype=np.float64, count=len(jobs))
        estimate = np.array(estimates, dtype=np.float64)
    except OverflowError:
        return False
    for values in (submit, runtime, estimate):
        if not (np.isfinite(values).all() and (np.abs(values) <= MAX_NUMBER).all()):
            return False
    latest = float(np.abs(submit).max()) if len(submit) else 0.0
    for run in sim.core.state.running:  # the work running when it begins ends first
        if run.runtime is not None and math.isfinite(run.start_time + run.runtime):
            latest = max(latest, abs(run.start_time + run.runtime))
    return latest + float(runtime.sum()) <= MAX_NUMBER


def _slot_capacity(sim: Simulation) -> IntArray | None:
    """Each host's slots if it is ok (0 if not), when every count is a whole number and
    nothing but the slots of the work running is held; None otherwise."""
    state = sim.core.state
    slots = state.hosts.capacity[SLOTS]
    ok = np.asarray(state.hosts.status == HostStatus.OK)
    mine = np.where(ok, slots, 0.0)
    if not np.all(np.isfinite(mine)) or np.any(mine < 0) or np.any(mine != np.floor(mine)):
        return None
    if any(np.any(used != 0) for name, used in state.used.items() if name != SLOTS):
        return None
    return mine.astype(np.int64)


Initial = tuple[float, float, npt.NDArray[np.intp], IntArray]
"""Work running when the replay begins: its end, its estimated end, hosts, slots."""


def _initial_work(sim: Simulation, capacity: IntArray) -> list[Initial] | None:
    """The work running when the replay begins, when every piece of it holds slots
    alone, each once per host, on ok hosts, ends (a runtime) at a time the core takes,
    and adds up to what the books say is held; None otherwise. Ordered as the state
    lists it (the order the general path queues their ends in)."""
    state = sim.core.state
    index = state.hosts.index
    held = np.zeros(len(capacity), dtype=np.int64)
    out: list[Initial] = []
    for run in state.running:
        if run.runtime is None or run.shared:
            return None
        times = [run.start_time, run.runtime]
        if run.requested_time is not None:
            times.append(run.requested_time)
        if not all(isinstance(t, int | float) and math.isfinite(t) for t in times):
            return None
        if abs(run.start_time) + abs(run.runtime) > MAX_NUMBER:
            return None
        hosts: list[int] = []
        slots: list[int] = []
        for a in run.alloc:
            h = index.get(a.host)
            if h is None or a.resources or capacity[h] == 0 or a.slots < 1:
                return None
            hosts.append(h)
            slots.append(a.slots)
        if not hosts or len(set(hosts)) != len(hosts):
            return None
        at = np.asarray(hosts, dtype=np.intp)
        units = np.asarray(slots, dtype=np.int64)
        held[at] += units
        planned = estimate(run.requested_time, state.queues.get(run.queue))
        out.append((run.start_time + run.runtime, run.start_time + planned, at, units))
    books = state.used.get(SLOTS)
    if books is None:
        books = np.zeros(len(capacity))
    if not np.array_equal(held, books) or np.any(held > capacity):
        return None
    return out


def _plain_tasks(sim: Simulation) -> list[int] | None:
    """Each job's task count, if every job is plain (slots alone); None otherwise."""
    tasks: list[int] = []
    for job in sim.jobs:
        if job.tasks is None or job.tasks < 1:
            return None  # a compound requirement's own task count, or none
        tasks.append(job.tasks)
    catalog = sim.core.catalog
    # What makes a requirement plain does not depend on the task count a job gives it
    # (every job's requirement and count were checked when the simulation was made).
    first: dict[str, int] = {}
    for job, n in zip(sim.jobs, tasks, strict=True):
        first.setdefault(job.resreq, n)
    for text, n in first.items():
        try:
            requirement = prepare_requirement(text, catalog, n, n)
        except (InputError, RecursionError):
            return None  # the general path reports it
        alternatives = requirement.alternatives
        if not (
            len(alternatives) == 1
            and len(alternatives[0]) == 1
            and _plain_primary(alternatives[0][0], n)
        ):
            return None
    return tasks


def _plain_primary(pp: PreparedPrimary, n: int) -> bool:
    p = pp.primary
    w = pp.wants
    return (
        pp.select is None
        and not p.order
        and p.span is None
        and not p.same
        and p.affinity is None
        and p.cu is None
        and p.min_tasks == p.max_tasks == n
        and not (w.per_task or w.per_host or w.per_job or w.shared)
    )


class _Free:
    """Free slots per host and first-fit placement (the module docstring's rules).

    Hosts come back as arrays of the smallest index type (a job's record keeps them), or
    as a run of consecutive hosts (no array at all)."""

    __slots__ = ("free", "lo", "small", "top", "total")

    def __init__(self, capacity: IntArray) -> None:
        self.free = capacity.copy()
        self.total = int(capacity.sum())
        self.top = int(capacity.max()) if len(capacity) else 0
        self.lo = 0  # every host before it has no slot free
        self.small = np.uint16 if len(capacity) <= 1 << 16 else np.uint32

    def first(self, need: int) -> int:
        """The first host with ``need`` slots free (-1: none), scanning in growing
        chunks from ``lo``."""
        free = self.free
        n = len(free)
        at = self.lo
        chunk = _FIRST_CHUNK
        while at < n:
            part = free[at : at + chunk] >= need
            i = int(part.argmax())
            if part[i]:
                if need == 1:
                    self.lo = at + i  # every host before it is full
                return at + i
            at += chunk
            chunk *= 4
        if need == 1:
            self.lo = n
        return -1

    def place(self, n: int) -> Placed | None:
        """Where ``n`` tasks go, charged (None: nowhere now): the hosts in claim order
        (None for a run of consecutive hosts, the commonest first-fit claim: then
        ``lowest`` and ``count`` say which), their slots, the lowest host, the count."""
        if n > self.total:
            return None
        h = self.first(n) if n <= self.top else -1
        if h >= 0:
            self.free[h] -= n
            self.total -= n
            return None, same_slots(n, 1), h, 1
        self.total -= n
        if self.top == 1:  # one-slot hosts: the plan of n buckets of one, nothing else
            at = self.lo
            hosts = self.free[at:].nonzero()[0][:n]
            first, last = int(hosts[0]) + at, int(hosts[-1]) + at
            self.lo = last + 1  # the first n free hosts: none is left before
            slots = same_slots(1, n)
            if last - first == n - 1:  # ascending, distinct: first, first + 1, ...
                self.free[first : last + 1] = 0
                return None, slots, first, n
            hosts += at
            self.free[hosts] = 0
            return hosts.astype(self.small), slots, first, n
        found = self._balanced(n)
        hosts, slots = found if found is not None else self._fill(n)
        self.free[hosts] -= slots  # a plan's hosts are distinct
        return hosts.astype(self.small), slots, int(hosts.min()), len(hosts)

    def _balanced(self, n: int) -> tuple[IntArray, IntArray] | None:
        """The first balanced plan of k >= 2 buckets that fits, placed."""
        return balanced(self.free, n, self._at_least())

    def _at_least(self) -> Callable[[IntArray], IntArray]:
        """How many hosts have at least s slots free, for each s of an array."""
        return at_least(self.free, self.top)

    def _fill(self, n: int) -> tuple[IntArray, IntArray]:
        """The fill plan: hosts in order, each taking what it can of the rest."""
        return fill(self.free, n)

    def charge(self, hosts: npt.NDArray[np.intp], slots: IntArray) -> None:
        """Take ``slots`` on distinct ``hosts`` (a placement made elsewhere)."""
        self.free[hosts] -= slots
        self.total -= int(slots.sum())

    def give_back(self, hosts: npt.NDArray[np.intp], slots: IntArray) -> None:
        """Give back what :meth:`charge` took."""
        self.free[hosts] += slots
        self.total += int(slots.sum())
        self.lo = min(self.lo, int(hosts.min()))

    def release(self, placed: Placed, n: int) -> None:
        """Give back what :meth:`place` charged for ``n`` slots."""
        hosts, slots, lowest, count = placed
        if hosts is None:
            if count == 1:
                self.free[lowest] += n
            else:
                self.free[lowest : lowest + count] += slots
        elif self.top == 1:
            self.free[hosts] = 1
        else:
            self.free[hosts] += slots  # a plan's hosts are distinct
        if lowest < self.lo:
            self.lo = lowest
        self.total += n


class _ByWidth:
    """Per priority level, its pending jobs' task counts by place in arrival order, in
    a min segment tree: what finds a level's first job, from a place on, that wants at
    most so many slots in O(log n) (an exact shortcut, ``SimOptions.width_index``). A
    place holds a job's tasks while it pends from that arrival, else no value.

    With estimates (:meth:`with_estimates`, for planned sessions), per level and class
    of task counts (``2**c`` to ``2**(c + 1) - 1``) a min tree of the jobs' estimates
    too: what finds the first job that wants at most so many slots *and* is estimated
    to run at most so long (:meth:`first_short`)."""

    __slots__ = ("estimates", "short", "size", "trees")

    def __init__(self, jobs: int, levels: int) -> None:
        self.size = 1
        while self.size < jobs + 1:
            self.size *= 2
        self.trees = [[_NO_JOB] * (2 * self.size) for _ in range(levels)]
        self.estimates: list[float] | None = None
        self.short: list[dict[int, list[float]]] = [{} for _ in range(levels)]

    def with_estimates(self, estimates: list[float]) -> None:
        """Keep the trees of estimates too (each job's, by job)."""
        self.estimates = estimates

    def set(self, lv: int, at: int, tasks: int, job: int = -1) -> None:
        """Place ``at`` of level ``lv`` holds job ``job`` of ``tasks`` (``_NO_JOB``:
        none)."""
        if at >= self.size:
            self._grow(at)
        tree = self.trees[lv]
        leaf = at + self.size
        if self.estimates is not None:
            old = tree[leaf]
            if old != _NO_JOB:
                _put(self._short_tree(lv, old), leaf, math.inf)
            if tasks != _NO_JOB:
                _put(self._short_tree(lv, tasks), leaf, self.estimates[job])
        _put(tree, leaf, tasks)

    def first(self, lv: int, at: int, slots: int) -> int:
        """The first place from ``at`` on of level ``lv`` whose job wants at most
        ``slots`` tasks (-1: none)."""
        return _first(self.trees[lv], self.size, at, slots)

    def first_short(self, lv: int, at: int, slots: int, seconds: float) -> int:
        """The first place from ``at`` on of level ``lv`` whose job wants at most
        ``slots`` tasks and is estimated to run at most ``seconds`` (-1: none)."""
        best = -1
        tasks = self.trees[lv]
        for c, tree in self.short[lv].items():
            if 1 << c > slots:
                continue
            p = at
            while True:
                p = _first(tree, self.size, p, seconds)
                if p < 0 or (best >= 0 and p >= best):
                    break
                if tasks[p + self.size] <= slots:  # (a class may want more than slots)
                    best = p
                    break
                p += 1
        return best

    def _short_tree(self, lv: int, tasks: int) -> list[float]:
        c = max(tasks, 1).bit_length() - 1
        tree = self.short[lv].get(c)
        if tree is None:
            tree = self.short[lv][c] = [math.inf] * (2 * self.size)
        return tree

    def _grow(self, at: int) -> None:
        size = self.size
        while size <= at:
            size *= 2
        old = self.size
        self.trees = [_grown(tree, old, size, _NO_JOB) for tree in self.trees]
        self.short = [
            {c: _grown(tree, old, size, math.inf) for c, tree in classes.items()}
            for classes in self.short
        ]
        self.size = size


def _first(tree: list[Any], size: int, at: int, most: float) -> int:
    """The first leaf from ``at`` on of a min segment tree of ``size`` leaves whose
    value is at most ``most`` (-1: none)."""
    if at >= size:
        return -1
    i = at + size
    while tree[i] > most:
        while i & 1:  # a right child: up to the first node with a right sibling
            i >>= 1
        if not i:
            return -1
        i += 1
    while i < size:  # down to the leftmost leaf within reach
        i *= 2
        if tree[i] > most:
            i += 1
    return i - size


def _put(tree: list[Any], i: int, value: Any) -> None:
    """Leaf ``i`` of a min segment tree takes ``value``; its ancestors follow."""
    tree[i] = value
    i >>= 1
    while i:
        left, right = tree[2 * i], tree[2 * i + 1]
        low = right if right < left else left  # min(), without the call
        if tree[i] == low:
            break
        tree[i] = low
        i >>= 1


def _grown(tree: list[Any], old: int, size: int, empty: Any) -> list[Any]:
    """A min segment tree of ``old`` leaves as one of ``size`` leaves."""
    grown = [empty] * (2 * size)
    grown[size : size + old] = tree[old : 2 * old]
    for i in range(size - 1, 0, -1):
        grown[i] = min(grown[2 * i], grown[2 * i + 1])
    return grown


_NO_JOB = 1 << 62  # a place of no pending job (more tasks than any job wants)


class PlainReplay:
    """One plain replay of a :class:`~xce.sim.engine.Simulation` (see :func:`plain_replay`).

    Pending jobs are kept per priority level (high first), each in arrival order (the pick
    order: queue priority, then submit time, then arrival)."""

    def __init__(
        self,
        sim: Simulation,
        capacity: IntArray,
        tasks: list[int],
        queues: list[str],
        strict: list[bool],
        verdicts: dict[int, str | None],
        orders: list[Order | None],
        planning: list[bool] | None = None,
        *,
        preempting: bool = False,
        initial: list[Initial] | None = None,
    ) -> None:
        self.sim = sim
        self.initial = initial or []  # the work running when the replay begins
        # its claims, as the general path gives them (none is preempted here)
        self.base = [
            (a.host, run.start_time, run.start_time + (run.runtime or 0.0), a.slots)
            for run in sim.core.state.running
            for a in run.alloc
        ]
        self.verdicts = verdicts
        self.capacity = capacity
        self.tasks = tasks
        index = {name: i for i, name in enumerate(queues)}
        self.queue_of = [index[j.queue] for j in sim.jobs]
        self.strict = strict
        state = sim.core.state
        priorities = sorted({state.queue_priority(q) for q in queues}, reverse=True)
        level = {p: i for i, p in enumerate(priorities)}
        self.level_of = [level[state.queue_priority(q)] for q in queues]
        self.width = [self.level_of.count(lv) for lv in range(len(priorities))]  # queues
        self.level_queues = [
            [q for q, at in enumerate(self.level_of) if at == lv] for lv in range(len(priorities))
        ]
        self.orders = orders
        # per queue: its order follows the slots its users hold (PlainOrder), or the
        # session's time and the usage books (ClockedPlainOrder)
        self.by_slots = [o if isinstance(o, PlainOrder) else None for o in orders]
        self.by_books = [o if isinstance(o, ClockedPlainOrder) else None for o in orders]
        self.holds = [o is not None for o in self.by_slots]
        # per level: every queue's picker is one order, whose cursors then merge by its
        # merge key when they have one (as the core's session merges them)
        self.keyed = [
            orders[qs[0]] is not None and all(orders[q] is orders[qs[0]] for q in qs)
            for qs in self.level_queues
        ]
        # orders that follow the session's time and the usage books (ClockedPlainOrder):
        # the replay keeps a copy of the state's priority books and charges them as the
        # core does, and the work running, in the order it started
        self.clocked = any(o is not None for o in self.by_books)
        setup = state.priority.copy() if self.clocked and state.priority is not None else None
        self.books = replace(state, running=(), jobs=(), priority=setup) if self.clocked else state
        self.work: dict[int, _Work] = {}  # running jobs (clocked orders), by start
        self.view: PlainSession | None = None  # the session's, made when first asked
        self.started_now: list[int] = []  # jobs started in this session (clocked orders)
        # a level with a queue whose picker has an order of its own (PlainOrder) merges
        # its queues' cursors; of the others, a level whose queues are all strict keeps
        # each queue's jobs apart (a session tries only the queues' heads), and the rest
        # keep one list in arrival order
        self.ordered = [any(orders[q] is not None for q in qs) for qs in self.level_queues]
        self.all_strict = [
            all(strict[q] for q in qs) and not ordered
            for qs, ordered in zip(self.level_queues, self.ordered, strict=True)
        ]
        self.queue_objects = [state.queues.get(name) or Queue(name) for name in queues]
        # per queue: a job too wide to start may be left out of its session (ordered
        # levels): a queue in arrival order, or one with an order of its own alone at its
        # priority (merged with others, its next job's submit time decides which queue
        # goes next: leaving one out could let a job of its pass a job of another queue)
        self.wide_out = [
            not strict[q] and (orders[q] is None or self.width[self.level_of[q]] == 1)
            for q in range(len(queues))
        ]
        # per queue with an order of its own: the slots its users' running jobs hold
        self.held_slots: list[dict[str, float]] = [{} for _ in queues]
        self.pending_jobs: dict[int, PendingJob] = {}  # ordered levels' jobs, by arrival
        self.make_pending: Callable[[SimJob, int], PendingJob]  # set by run
        self.space = _Free(capacity)
        self.levels: list[list[int]] = [[] for _ in priorities]
        self.queued: list[deque[int]] = [deque() for _ in queues]
        self.arrival = array("q", bytes(8 * len(tasks)))  # each job's place in arrival order
        self.by_arrival = array("q")  # the jobs in arrival order (set by run)
        self.new_from = [0] * len(priorities)  # per level: its jobs new since the last session
        self.held: list[set[int]] = [set() for _ in priorities]  # strict queues held, per level
        self.freed = True  # something was freed since the last session
        self.pending = 0
        self.queue_pending = [0] * len(queues)  # per queue: its jobs pending
        self.busy = 0
        self.steps = 0  # starts and ends so far (a record's sequence)
        # (end, start step, job); the initial work's k-th piece is job len(jobs) + k, of
        # start step -1 - k
        self.ends: list[tuple[float, int, int]] = []
        # started jobs: (start, where, start step, killed)
        self.running: dict[int, tuple[float, Placed, int, bool]] = {}
        # queues whose backfill policy plans: the sessions that may plan go to the core
        # and, with a queue that preempts, every session in which a job cannot start
        planning = planning or [False] * len(queues)
        self.handoff = CoreHandoff(self, planning) if any(planning) or preempting else None
        self.preempted: dict[int, tuple[int, float]] = {}  # job: (times, slot-seconds lost)
        self.index: dict[str, int] = (
            {j.id: i for i, j in enumerate(sim.jobs)} if self.handoff is not None else {}
        )
        self.table = RecordTable((), ())  # set by run
        # per level: the pending jobs by task count (SimOptions.width_index), and whether
        # the level mixes strict queues with others (their heads hold: tried in order)
        self.mixed_strict = [
            any(strict[q] for q in qs) and not all_strict
            for qs, all_strict in zip(self.level_queues, self.all_strict, strict=True)
        ]
        self.by_width = _ByWidth(len(tasks), len(priorities)) if sim.options.width_index else None
        # what a driver may ask of a run (xce.predict.plain): the ends it took (the
        # initial work's included), and how many came before its last session
        self.ends_seen = 0
        self.ends_by_last_session = 0
        # the sessions that plan, decided on the replay's own arrays (xce.sim.planned)
        self.arrays = array_planning(self)

    def run(self) -> SimResult:
        self.make_pending = pending_job

        sim = self.sim
        perf_counter = time.perf_counter
        began = perf_counter()
        jobs = sim.jobs
        tasks = self.tasks
        stats = sim.stats
        names = sim.core.hosts.names
        total = int(np.nansum(sim.core.state.hosts.capacity[SLOTS]))
        times = array("d")  # the timeline's columns (8 bytes a sample)
        busy_at = array("q")
        pending_at = array("q")
        submitted = np.fromiter((j.submit for j in jobs), dtype=np.float64, count=len(jobs))
        order = array("q")  # by submit time, then file order (8 bytes a job)
        order.frombytes(np.argsort(submitted, kind="stable").astype(np.int64).tobytes())
        self.by_arrival = order  # job order[k] is the (k + 1)-th to arrive
        del submitted
        submits = [jobs[i].submit for i in order]
        count = len(order)
        table = self.table = RecordTable(jobs, names)
        handoff = self.handoff
        arrays = self.arrays
        new: list[int] = []  # jobs submitted at this instant (with a handoff)
        claimed, claimed_slots, killed_jobs = table.hosts, table.host_slots, table.killed
        starts, finishes, first_step, last_step = (
            table.start,
            table.end,
            table.seq_start,
            table.seq_end,
        )
        verdicts = self.verdicts
        ends = self.ends
        running = self.running
        space = self.space
        first_initial = len(jobs)
        self._begin_initial(first_initial)
        queue_of, holds, clocked = self.queue_of, self.holds, self.clocked
        ended = step_count = nxt = 0
        progress = sim.progress
        every = sim.progress_every
        pop = heapq.heappop
        again = False  # a session preempted: another follows at the same instant
        now = 0.0
        while nxt < count or ends or again:
            if not again:
                now = submits[nxt] if nxt < count else math.inf
            if ends and ends[0][0] <= now:
                now = ends[0][0]
                while ends and ends[0][0] == now:  # finishes first
                    _, start_step, i = pop(ends)
                    if i >= first_initial:  # work running when the replay began
                        self._end_initial(i, now)
                        stats.events += 1
                        self.ends_seen += 1
                        continue
                    if i not in running or running[i][2] != start_step:
                        continue  # preempted: this end was cancelled
                    self.ends_seen += 1
                    t0, placed, step, killed = running.pop(i)
                    if arrays is not None:
                        arrays.ended(i, now)
                    n = tasks[i]
                    if holds[queue_of[i]]:
                        self._hold(i, -n)
                    if clocked:
                        self._charge(i, t0, now)
                    space.release(placed, n)
                    self.busy -= n
                    starts[i], finishes[i] = t0, now
                    hosts, claimed_slots[i], lowest, width = placed
                    if hosts is None:
                        table.run_of_hosts(i, lowest, width)
                    else:
                        claimed[i] = hosts
                    first_step[i], last_step[i] = step, self.steps
                    if killed:
                        killed_jobs[i] = True
                    self.steps += 1
                    ended += 1
                    stats.events += 1
                self.freed = True
            while nxt < count and submits[nxt] == now:
                i = order[nxt]
                nxt += 1
                stats.events += 1
                why = verdicts[tasks[i]]
                if why is not None:
                    table.never(i, why)
                    ended += 1
                    continue
                if handoff is not None:
                    new.append(i)
                self._enqueue(i, nxt)
            if self.pending:
                stats.sessions += 1
                self.ends_by_last_session = self.ends_seen
                deciding = perf_counter()
                if handoff is None:
                    self._session(now)
                elif handoff.native(new, self.pending - len(new)):
                    self._session(now)
                    if handoff.planned(new):  # the general path records these plans
                        for i in new:
                            table.extras(i, 0, 0.0, False, now, False)
                            handoff.decided.add(i)
                else:
                    handoff.preempted = False
                    run = handoff.session if arrays is None else arrays.session
                    self._forget(run(now, new))
                new.clear()
                # a preemption freed what its victims held (the engine's _preempt)
                self.freed = handoff is not None and handoff.preempted
                stats.alloc_seconds += perf_counter() - deciding
            again = handoff is not None and handoff.preempted
            if again and not self.pending:
                again = False
            if times and times[-1] == now:  # Timeline.add, inline
                busy_at[-1], pending_at[-1] = self.busy, self.pending
            else:
                times.append(now)
                busy_at.append(self.busy)
                pending_at.append(self.pending)
            step_count += 1
            if progress is not None and step_count % every == 0:
                progress(ended, now)
        if self.pending or running:
            raise InternalError("the plain replay ended with jobs pending or running")
        stats.wall_seconds = perf_counter() - began
        if progress is not None:
            progress(ended, times[-1] if times else 0.0)
        table.slots[:] = tasks
        table.slots[np.isnan(table.start)] = 0  # never ran: no slots
        lost = [j.id for i, j in enumerate(jobs) if not table.written(i)]
        if lost:
            raise InternalError(f"jobs never ended: {', '.join(clip(x) for x in lost[:5])}")
        capacity = sim.core.state.hosts.capacity[SLOTS]
        per_host = {name: int(capacity[h]) for h, name in enumerate(names)}
        timeline = Timeline(total, times, busy_at, pending_at)
        return SimResult(table, timeline, stats, total, per_host, self.base, names)

    def _begin_initial(self, first: int) -> None:
        """The work running when the replay begins holds its slots; its ends are queued
        (job ``first + k``: its ``k``-th piece)."""
        for k, (end, planned, hosts, slots) in enumerate(self.initial):
            self.space.charge(hosts, slots)
            self.busy += int(slots.sum())
            heapq.heappush(self.ends, (end, -1 - k, first + k))
            if self.arrays is not None:
                self.arrays.began(first + k, planned, hosts, slots)

    def _end_initial(self, i: int, now: float) -> None:
        """Piece ``i`` of the initial work ends at ``now``: its slots are free."""
        _, _, hosts, slots = self.initial[i - len(self.tasks)]
        self.space.give_back(hosts, slots)
        self.busy -= int(slots.sum())
        self.freed = True
        if self.arrays is not None:
            self.arrays.ended(i, now)

    # --- sessions (each exactly a full session of the core, see the module docstring) --
    def _start(self, i: int, now: float, placed: Placed) -> None:
        job = self.sim.jobs[i]
        queue = self.sim.core.state.queues.get(job.queue)
        duration, killed = run_length(job, queue, self.sim.options.enforce_walltime)
        self.running[i] = (now, placed, self.steps, killed)
        if self.by_width is not None:
            lv = self.level_of[self.queue_of[i]]
            self.by_width.set(lv, self.arrival[i] - 1, _NO_JOB)
        if self.arrays is not None:
            self.arrays.started(i, now, placed)
        if self.holds[self.queue_of[i]]:
            self._hold(i, self.tasks[i])
        if self.clocked:
            self.work[i] = _Work(job, now, float(self.tasks[i]))
            self.started_now.append(i)
        heapq.heappush(self.ends, (now + duration, self.steps, i))
        self.steps += 1
        self.busy += self.tasks[i]
        self.pending -= 1
        self.queue_pending[self.queue_of[i]] -= 1
        self.sim.stats.dispatched += 1

    def _enqueue(self, i: int, arrival: int) -> None:
        """Job ``i`` pends, the ``arrival``-th to arrive."""
        lv = self.level_of[self.queue_of[i]]
        self.arrival[i] = arrival
        if self.all_strict[lv]:
            self.queued[self.queue_of[i]].append(i)
        else:
            self.levels[lv].append(i)
        self.pending += 1
        self.queue_pending[self.queue_of[i]] += 1
        if self.by_width is not None:
            self.by_width.set(lv, arrival - 1, self.tasks[i], i)

    def preempt(self, i: int, now: float) -> None:
        """Running job ``i`` is preempted now (a session of the core said so): its slots
        are released, its work is lost, and it pends again, arriving now (as the engine
        requeues it)."""
        t0, placed, _, _ = self.running.pop(i)  # its end, still queued, is now cancelled
        n = self.tasks[i]
        if self.holds[self.queue_of[i]]:
            self._hold(i, -n)
        if self.clocked:  # (a clocked order is never replayed with preemption)
            raise InternalError("the plain replay preempted under a clocked order")
        self.space.release(placed, n)
        self.busy -= n
        self.freed = True
        lost = n * (now - t0)
        stats = self.sim.stats
        stats.preemptions += 1
        stats.lost_slot_seconds += lost
        times, before = self.preempted.get(i, (0, 0.0))
        self.preempted[i] = (times + 1, before + lost)
        self.table.extras(i, times + 1, before + lost, False, None, False)
        self.steps += 1
        self.by_arrival.append(i)
        self._enqueue(i, len(self.by_arrival))

    def start_placed(self, i: int, now: float, placed: Placed) -> None:
        """Start job ``i`` at ``now`` where another path placed it (already charged)."""
        self._start(i, now, placed)

    def waiting(self) -> list[int]:
        """The pending jobs (in no particular order)."""
        out = [i for level in self.levels for i in level]
        for jobs in self.queued:
            out += jobs
        return out

    def _forget(self, started: list[int]) -> None:
        """Take the jobs a session of the core started out of the pending jobs; every
        queue is held by nobody (a session of the replay's own runs only when no job
        pends from an earlier one, see :mod:`xce.sim.handoff`)."""
        gone = set(started)
        arrival = self.arrival
        for i in started:  # out of the level where it stands (levels keep arrival order)
            lv = self.level_of[self.queue_of[i]]
            if self.all_strict[lv]:
                continue
            level = self.levels[lv]
            at = bisect_left(level, arrival[i], key=arrival.__getitem__)
            if at < len(level) and level[at] == i:
                del level[at]
            else:  # (not found where arrival order puts it: look everywhere)
                level[:] = [j for j in level if j not in gone]
        for lv, level in enumerate(self.levels):
            self.new_from[lv] = len(level)
            self.held[lv] = set()
        if gone:
            for q, jobs in enumerate(self.queued):
                if jobs and any(i in gone for i in jobs):
                    self.queued[q] = deque(i for i in jobs if i not in gone)
            for i in gone:
                self.pending_jobs.pop(arrival[i], None)

    def _hold(self, i: int, slots: int) -> None:
        """Job ``i``'s user holds ``slots`` more slots in its queue (fewer if negative)."""
        held = self.held_slots[self.queue_of[i]]
        user = self.sim.jobs[i].user
        held[user] = held.get(user, 0.0) + slots

    def _strict_level(self, lv: int, now: float) -> None:
        """A priority level of strict queues: their heads in arrival order, each queue
        tried until its first job that cannot start (it holds the rest). With nothing
        freed since the last session, a queue it held is held still (its head pends
        again: free slots only fell)."""
        queued, arrival = self.queued, self.arrival
        held = set() if self.freed else self.held[lv]
        place, tasks = self.space.place, self.tasks
        queues = self.level_queues[lv]
        if len(queues) == 1:  # one queue: its jobs in order, no merge of heads
            q = queues[0]
            jobs = queued[q]
            while jobs and q not in held:
                i = jobs[0]
                placed = place(tasks[i])
                self.sim.stats.decisions += 1
                if placed is None:
                    held.add(q)
                else:
                    self._start(i, now, placed)
                    jobs.popleft()
            self.held[lv] = held
            return
        heads = [
            (arrival[queued[q][0]], q) for q in self.level_queues[lv] if queued[q] and q not in held
        ]
        heapq.heapify(heads)
        while heads:
            q = heapq.heappop(heads)[1]
            jobs = queued[q]
            i = jobs[0]
            placed = place(tasks[i])
            self.sim.stats.decisions += 1
            if placed is None:
                held.add(q)
                continue
            self._start(i, now, placed)
            jobs.popleft()
            if jobs:
                heapq.heappush(heads, (arrival[jobs[0]], q))
        self.held[lv] = held

    def _session(self, now: float) -> None:
        """Any number of queues and priority levels, strict and fcfs mixed: each level in
        turn, its jobs in arrival order; a strict queue's first job that cannot start
        holds the rest of that queue."""
        space, tasks, queue_of, strict = self.space, self.tasks, self.queue_of, self.strict
        place = space.place
        self.view = None
        self.started_now.clear()
        for lv, level in enumerate(self.levels):
            if self.all_strict[lv]:
                self._strict_level(lv, now)
                continue
            if self.ordered[lv]:
                if level:
                    self._ordered_level(lv, now)
                continue
            if not level:
                continue
            if self.by_width is not None and not self.mixed_strict[lv]:
                self._fitting(lv, now)
                continue
            # nothing freed since the last session: its pending jobs pend again (free
            # slots only fell), and the queues it held are held still
            first = 0 if self.freed else self.new_from[lv]
            keep = level[:first]
            held = set() if self.freed else self.held[lv]
            width = self.width[lv]
            for at in range(first, len(level)):
                i = level[at]
                q = queue_of[i]
                if q in held:
                    keep.append(i)
                    continue
                n = tasks[i]
                placed = place(n) if n <= space.total else None  # (place's own first test)
                self.sim.stats.decisions += 1
                if placed is not None:
                    self._start(i, now, placed)
                    continue
                keep.append(i)
                if strict[q]:
                    held.add(q)
                    if len(held) == width:
                        keep += level[at + 1 :]
                        break
            level[:] = keep
            self.new_from[lv] = len(level)
            self.held[lv] = held

    def _fitting(self, lv: int, now: float) -> None:
        """A priority level of fcfs queues, its jobs in arrival order, each started if it
        fits (wants at most the free slots: the fill plan takes any host's): the level's
        first job from the last start on that wants at most the free slots, found in
        its index (:class:`_ByWidth`), starts, until none does; the others pend, untried
        (free slots only fall within a session)."""
        by_width = self.by_width
        assert by_width is not None
        space, tasks, by_arrival = self.space, self.tasks, self.by_arrival
        started: list[int] = []
        at = 0
        while space.total > 0:
            at = by_width.first(lv, at, space.total)
            if at < 0:
                break
            i = by_arrival[at]
            placed = space.place(tasks[i])
            if placed is None:
                raise InternalError(f"a plain job of {tasks[i]} tasks fit no free slots")
            self._start(i, now, placed)
            started.append(i)
            at += 1
        self.sim.stats.decisions += len(started) + 1
        level = self.levels[lv]
        arrival = self.arrival
        for i in started:  # few: out of the level where they stand
            del level[bisect_left(level, arrival[i], key=arrival.__getitem__)]
        self.new_from[lv] = len(level)

    def _ordered_level(self, lv: int, now: float) -> None:
        """A priority level with a queue whose picker has an order of its own
        (:class:`~xce.core.pickers.PlainOrder`): each queue's cursor (the picker's, or
        arrival order for a monotone picker), merged as the core's session merges them
        (the queue whose next job was submitted first). A strict queue's first job that
        cannot start holds the rest of it.

        Left out, as the picker's promise allows: a job wanting more slots than are free
        (it would pend) of an fcfs queue, or of a queue with its own order alone at its
        priority; and with nothing freed since the last session, every job that pended
        then (it pends again, and a strict queue held then is held still; every job left
        out was submitted before every new one, so in the merge it came first and
        changed nothing). A queue offering one job needs no cursor (a cursor offers each
        of its jobs once)."""
        level = self.levels[lv]
        tasks, queue_of = self.tasks, self.queue_of
        held = set() if self.freed else self.held[lv]
        free = self.space.total
        wide_out = self.wide_out
        offered: dict[int, list[int]] = {}
        for at in range(0 if self.freed else self.new_from[lv], len(level)):
            i = level[at]
            q = queue_of[i]
            if q not in held and (tasks[i] <= free or not wide_out[q]):
                offered.setdefault(q, []).append(i)
        if len(offered) == 1:
            ((q, jobs),) = offered.items()
            started = self._one_queue(q, jobs, now, held)
        elif offered:
            started = self._merged(offered, now, held, self.keyed[lv])
        else:
            started = []
        if len(started) == len(level):
            level.clear()
        elif started:
            gone = set(started)
            level[:] = [i for i in level if i not in gone]
        for i in started:
            self.pending_jobs.pop(self.arrival[i], None)
        self.new_from[lv] = len(level)
        self.held[lv] = held

    def _job(self, i: int) -> PendingJob:
        """Job ``i`` as the core's pending job, made once, numbered by its arrival."""
        at = self.arrival[i]
        job = self.pending_jobs.get(at)
        if job is None:
            job = self.pending_jobs[at] = self.make_pending(self.sim.jobs[i], at)
        return job

    def _cursor(self, q: int, jobs: list[int], now: float) -> PlainCursor:
        offered = [self._job(i) for i in jobs]
        by_slots, by_books = self.by_slots[q], self.by_books[q]
        if by_slots is not None:
            return by_slots.start_plain(self.queue_objects[q], offered, self.held_slots[q])
        if by_books is not None:
            return by_books.start_plain_at(self.queue_objects[q], offered, self._view(now))
        return _InArrival(offered)

    def _view(self, now: float) -> PlainSession:
        """The session as a clocked order sees it: the work running at its start."""
        view = self.view
        if view is None:
            fresh = set(self.started_now)
            running = [w for i, w in self.work.items() if i not in fresh]
            view = self.view = PlainSession(self.books, running, now)
        return view

    def _charge(self, i: int, start: float, end: float) -> None:
        """Job ``i`` ran from ``start`` to ``end``: charged to the priority books (as
        the core's JobFinished does) and no longer running."""
        work = self.work.pop(i)
        setup = self.books.priority
        if setup is not None:
            setup.charge(work.user, work.project, work.queue, work.slots, start, end)

    def _one_queue(self, q: int, jobs: list[int], now: float, held: set[int]) -> list[int]:
        """The jobs of the one queue offering any, in its cursor's order; those started."""
        space, tasks = self.space, self.tasks
        stats = self.sim.stats
        started: list[int] = []
        if len(jobs) == 1:  # its cursor could only offer it
            i = jobs[0]
            placed = space.place(tasks[i])
            stats.decisions += 1
            if placed is not None:
                self._start(i, now, placed)
                started.append(i)
            elif self.strict[q]:
                held.add(q)
            return started
        cursor = self._cursor(q, jobs, now)
        by_arrival = self.by_arrival
        while True:
            job = cursor.pop_job()
            if job is None:
                return started
            if space.total == 0:  # it and every job left pend
                if self.strict[q]:
                    held.add(q)
                return started
            i = by_arrival[job.order - 1]
            n = tasks[i]
            placed = space.place(n)
            stats.decisions += 1
            if placed is not None:
                self._start(i, now, placed)
                started.append(i)
                cursor.started(job, float(n))
            elif self.strict[q]:
                held.add(q)
                return started

    def _merged(
        self, offered: dict[int, list[int]], now: float, held: set[int], keyed: bool
    ) -> list[int]:
        """The jobs of several queues, their cursors merged (``keyed``: one picker's
        cursors, merged by their merge key if they have one); those started."""
        space, tasks, strict = self.space, self.tasks, self.strict
        # queues by name, as the core's session takes them
        live = [(q, self._cursor(q, offered[q], now)) for q in sorted(offered)]
        merge = getattr(live[0][1], "merge_key", None) if keyed else None
        started: list[int] = []
        while live:
            if space.total == 0:  # every job left pends: a strict queue's next one holds it
                held.update(q for q, _ in live if strict[q])
                break
            k = self._next_queue(live, merge) if len(live) > 1 else 0
            if k < 0:
                break
            q, cursor = live[k]
            job = cursor.pop_job()
            if job is None:
                live.pop(k)
                continue
            i = self.by_arrival[job.order - 1]
            n = tasks[i]
            placed = space.place(n)
            self.sim.stats.decisions += 1
            if placed is None:
                if strict[q]:
                    held.add(q)
                    live.pop(k)
                continue
            self._start(i, now, placed)
            started.append(i)
            cursor.started(job, float(n))
        return started

    @staticmethod
    def _next_queue(
        live: list[tuple[int, PlainCursor]],
        merge: Callable[[PendingJob], tuple[float, ...]] | None = None,
    ) -> int:
        """Which of the ``live`` cursors offers the job that comes first: by ``merge``
        (the cursors' merge key), else submitted first (-1: none has a job left; the
        exhausted ones are dropped)."""
        best: tuple[float, ...] | None = None
        chosen = -1
        k = 0
        while k < len(live):
            job = live[k][1].peek_job()
            if job is None:
                live.pop(k)
                continue
            key = (job.submit_time, job.order) if merge is None else merge(job)
            if best is None or key < best:
                best, chosen = key, k
            k += 1
        return chosen


class _InArrival:
    """A monotone picker's jobs in a level merged with others: arrival order (which is
    FCFS order), one after the other."""

    __slots__ = ("_at", "_jobs")

    def __init__(self, jobs: list[PendingJob]) -> None:
        self._jobs = jobs
        self._at = 0

    def peek_job(self) -> PendingJob | None:
        return self._jobs[self._at] if self._at < len(self._jobs) else None

    def pop_job(self) -> PendingJob | None:
        job = self.peek_job()
        self._at += 1
        return job

    def started(self, job: PendingJob, slots: float) -> None:
        return None


class _Work:
    """A running job as a clocked order reads it (a ``RunningWork``)."""

    __slots__ = ("project", "queue", "requested_time", "slots", "start_time", "user")

    def __init__(self, job: SimJob, start: float, slots: float) -> None:
        self.user = job.user
        self.project = job.project
        self.queue = job.queue
        self.start_time = start
        self.slots = slots
        self.requested_time = job.requested_time
