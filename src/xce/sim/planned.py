"""The plain replay's planned sessions on its own arrays (issue 29).

A plain replay whose queues plan (:mod:`xce.sim.handoff`) used to hand every session in
which a job cannot start to the scheduling core. For plain jobs that is not needed: the
core's planned session (``Session._decide_planned`` over a builtin
:class:`~xce.alloc.planner.Planner`) decides each job from free slots and one profile of
slots over future time, and each of its steps has a form on arrays:

- *may the job start now* (``Planner.start_now``): with no hint and no planned start
  before the job would end, it is placed on the free slots as without planning; else it
  pends when it wants more slots than are free, or when all hosts' slots together dip
  below its tasks during its run (the planner's exact screen); else it is placed on the
  free slots capped, per host, by the profile's lowest point over its run;
- *its earliest start* (``Planner.plan``): the first instant (now, or one at which the
  profile changes) at which the hosts' lowest points over its run add up to its tasks;
  placed there on them;
- a placement on a view is the allocator's on slots alone
  (:func:`xce.sim.placement.place`: the first plan of ``k = 1, 2, ...`` balanced
  buckets, else the fill plan), taking hosts in the view's order: the job's hint first
  (the hosts of its last planned placement, in claim order, when its policy
  ``keeps_placements``), then, for a plan, the hosts freed latest by its start, then
  host order. A plain job fits a view iff the view's slots add up to
  its tasks (the fill plan takes what any host has).

The profile (:mod:`xce.sim.slotprofile`) answers as the planner's own
(:class:`~xce.alloc.profile.Profile`, the same changes from the same books): on a dense
grid of instants by classes of alike hosts when the session is small enough, else on
that event table (``SimOptions.dense_profile``); it is made when a session first needs
it; the running jobs' claims are
kept across sessions (a job's columns are made once, when it starts) rather than read
back from the core. Which jobs plan and which keep their placements is asked of each
queue's policy (:class:`~xce.backfill.BackfillPolicy`: ``plans_job``,
``keeps_placements``), never its name.

Four exact shortcuts sit on top, each behind its switch: *kept plans*
(``SimOptions.kept_plans``: a job's plan from the last session held again where it
provably repeats, see :class:`_Session`; and a session's first plan on the rows, when
no job started or ended since the last one made it, see ``_Session._kept_first``),
*one plan on rows* (``SimOptions.one_plan_on_rows``: while a session holds one plan and
no hint, that plan and every start beside it are decided from the running claims' rows,
without building the profile, see :class:`_Head`: what EASY's sessions mostly are), and
that plan *placed when needed* (``SimOptions.lazy_first_plan``: its start found, its
hosts chosen only once something reads them, see ``_Session.place_first``); and the
*kept profile* (``SimOptions.kept_profile``: a session with only new jobs since the last
carries its profile and plans on and decides only them, where that provably is the
session made afresh, see ``ArrayPlanning._kept_session``).

Taken (:func:`array_planning`) when every queue of the replay plans by the builtin
planner and replaces its picker's blocking, no queue has an order of its own or
preempts, and ``SimOptions.plain_planning`` is on (the default): then no session reaches
the core. Off, the sessions go to the core as before; tests/test_plain_planning.py
replays random planned workloads both ways and against the general path.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xce.alloc.planner import Steps
from xce.backfill.protocol import plans_at_most
from xce.cluster.estimates import estimate
from xce.errors import InternalError
from xce.sim.placement import Placement, place
from xce.sim.slotprofile import SlotProfile, slot_profile

if TYPE_CHECKING:
    from xce.backfill import BackfillPolicy
    from xce.sim.plain import Placed, PlainReplay

__all__ = ["ArrayPlanning", "array_planning"]

IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]
_Plan = tuple[float, IndexArray, IntArray]  # a planned start, hosts, slots


class _Absent:
    """No kept plan (the job was not planned in the last session)."""


_ABSENT = _Absent()


def array_planning(replay: PlainReplay) -> ArrayPlanning | None:
    """The replay's planned sessions on arrays, or None when they go to the core (see
    the module docstring)."""
    sim = replay.sim
    if not sim.options.plain_planning or replay.handoff is None:
        return None
    if any(replay.handoff.preempts) or any(o is not None for o in replay.orders):
        return None
    core = sim.core
    policies = [core.backfill_for(q.name) for q in replay.queue_objects]
    for policy in policies:
        if not (policy.plans and policy.replaces_queue_blocking):
            return None
        if getattr(policy, "planner", None) is not None:  # plans by rules of its own
            return None
    return ArrayPlanning(replay, policies)


def _ordered_place(
    avail: FloatArray | IntArray, n: int, order: IndexArray | None
) -> Placement | None:
    """:func:`place` on ``avail`` (units, whole numbers) with hosts taken in ``order``
    (None: host order); hosts come back as host indices."""
    units = avail.astype(np.int64, copy=False)
    if order is None:
        return place(units, n)
    found = place(units[order], n)
    if found is None:
        return None
    at, slots = found
    return order[at], slots


class _Claims:
    """The running jobs' claims, kept across sessions in order of their estimated ends
    (ties: in order of their starts): a job's claim (its hosts and slots) is added when
    it starts and dropped when it ends, taken in at a session's start (:meth:`merged`),
    so no session reads them back job by job, and one that asks only for the earliest
    ends (EASY's plan on the rows) walks only those."""

    __slots__ = ("_added", "_arrays", "_by_job", "_claims", "_gone", "_keys", "_seq", "changes")

    def __init__(self) -> None:
        self._keys: list[tuple[float, int]] = []  # (end, sequence number), in order
        self._claims: dict[int, tuple[IndexArray, FloatArray, float]] = {}  # by number
        self._by_job: dict[int, tuple[float, int]] = {}  # a running job's key
        self._seq = 0
        self._added: list[tuple[int, float, IndexArray, IntArray]] = []
        self._gone: list[tuple[int, float]] = []  # (job, the end its claim holds)
        self._arrays: tuple[FloatArray, IndexArray, FloatArray] | None = None
        self.changes = 0  # claims added and dropped so far: every start and end

    def add(self, job: int, end: float, hosts: IndexArray, slots: IntArray) -> None:
        self._added.append((job, end, hosts, slots))
        self.changes += 1

    def drop(self, job: int, end: float) -> None:
        """Job ``job``'s claim (added with ``end``) goes."""
        self._gone.append((job, end))
        self.changes += 1

    def earliest(self) -> float:
        """The earliest end of the claims taken in (inf: none)."""
        return self._keys[0][0] if self._keys else math.inf

    def merged(self) -> None:
        """Take in what was added and dropped since (in that order)."""
        keys, claims, by_job = self._keys, self._claims, self._by_job
        for job, end, hosts, slots in self._added:
            key = (end, self._seq)
            self._seq += 1
            units = slots.astype(np.float64)
            claims[key[1]] = (hosts.astype(np.intp, copy=False), units, float(units.sum()))
            if job in by_job:  # (no job restarts on this path: nothing preempts)
                raise InternalError(f"job {job} claims twice")
            by_job[job] = key
            if not keys or keys[-1] < key:
                keys.append(key)
            else:
                bisect.insort(keys, key)
        for job, end in self._gone:
            key = by_job.pop(job, (math.nan, -1))
            at = bisect.bisect_left(keys, key) if key[0] == end else -1
            if at < 0 or at == len(keys) or keys[at] != key:
                raise InternalError(f"no claim of job {job} ending at {end} to drop")
            del keys[at]
            del claims[key[1]]
        if self._added or self._gone:
            self._arrays = None
            self._added.clear()
            self._gone.clear()

    def in_order(self) -> Iterator[tuple[float, IndexArray, FloatArray, float]]:
        """Each claim taken in: (estimated end, hosts, slots, their sum), ends rising."""
        claims = self._claims
        for end, seq in self._keys:
            hosts, slots, total = claims[seq]
            yield end, hosts, slots, total

    def due(self, at: float) -> list[tuple[float, IndexArray, FloatArray, float]]:
        """The claims taken in that end by ``at`` (as :meth:`in_order`)."""
        keys, claims = self._keys, self._claims
        upto = bisect.bisect_right(keys, (at, math.inf))
        return [(end, *claims[seq]) for end, seq in keys[:upto]]

    def rows(self) -> tuple[FloatArray, IndexArray, FloatArray]:
        """The claims taken in as rows (estimated end, host, slots), ends rising."""
        if self._arrays is None:
            claims = self._claims
            parts = [claims[seq] for _, seq in self._keys]
            if parts:
                counts = [len(p[0]) for p in parts]
                ends = np.repeat([end for end, _ in self._keys], counts).astype(np.float64)
                self._arrays = (
                    ends,
                    np.concatenate([p[0] for p in parts]),
                    np.concatenate([p[1] for p in parts]),
                )
            else:
                self._arrays = (np.zeros(0), np.zeros(0, dtype=np.intp), np.zeros(0))
        return self._arrays


class ArrayPlanning:
    """The planned sessions of one plain replay (see the module docstring)."""

    def __init__(self, replay: PlainReplay, policies: list[BackfillPolicy]) -> None:
        self.replay = replay
        self.keeps = [p.keeps_placements for p in policies]
        self.plans_job: list[Callable[[int], bool]] = [p.plans_job for p in policies]
        jobs, queues = replay.sim.jobs, replay.queue_objects
        state_queues = replay.sim.core.state.queues
        # what planning assumes each job runs (the core's estimate_of)
        self.estimates = [
            estimate(job.requested_time, state_queues.get(queues[q].name))
            for job, q in zip(jobs, replay.queue_of, strict=True)
        ]
        self.hints: dict[int, IndexArray] = {}  # a pending job's last planned hosts
        # a pending job's plan and the room per host it was placed from (see _Session)
        self.rooms: dict[int, tuple[_Plan, IntArray]] = {}
        self.claims = _Claims()  # the running jobs' claims
        self.decided = replay.handoff.decided if replay.handoff is not None else set()
        # kept plans (see _Session): each pending job's plan in the last session that
        # offered it one (None: no instant had room), the running jobs' estimated ends,
        # and the ends since the last session that came before the estimate
        # per queue: how many jobs its policy plans at most (None: some queue's has no
        # bound), what lets a session skip the jobs that can neither start nor plan
        bounds = [plans_at_most(p) for p in policies]
        self.caps: list[int] | None = None
        if all(b is not None for b in bounds):
            self.caps = [b for b in bounds if b is not None]
        self.hints_kept = any(self.keeps)  # some job may be planned on its last hosts
        if self.caps is not None and replay.by_width is not None:
            replay.by_width.with_estimates(self.estimates)
        self.keep_plans = replay.sim.options.kept_plans
        # a session with only new jobs planned on the last one's profile (_kept_session):
        # where every job is decided in pick order (no bound on plans) and every queue
        # keeps placements (a plan made afresh each session could take other hosts)
        self.keep_profile = (
            self.keep_plans
            and replay.sim.options.kept_profile
            and self.caps is None
            and all(self.keeps)
        )
        # the last session, with the claims' changes and the pending jobs at its end
        self.last: tuple[_Session, int, int] | None = None
        self.rows = replay.sim.options.one_plan_on_rows  # see _Head
        self.dense = replay.sim.options.dense_profile  # a session's profile on a grid
        # a first plan on the rows placed only when something needs it (place_first):
        # where no queue keeps placements (else a plan's hosts are read next session)
        self.lazy = self.rows and replay.sim.options.lazy_first_plan and not any(self.keeps)
        self.profiled = False  # the last session built its profile
        self.kept: dict[int, _Plan | None] = {}
        # the last first plan made on the rows, for a session that sees what it saw
        # (see _Session._kept_first): (tasks, claims' changes then, plan, rows at its start)
        self.first: tuple[int, int, _Plan | None, tuple[IntArray, FloatArray] | None] | None
        self.first = None
        self.expected: dict[int, float] = {}
        self.early: list[float] = []

    def session(self, now: float, new: list[int]) -> list[int]:
        """One planned session at ``now`` over every pending job, in pick order: as the
        core's (:meth:`xce.sim.handoff.CoreHandoff.session`), records included. Returns
        the jobs started.

        With the replay's index of pending jobs by task count (``SimOptions.width_index``)
        and every queue's policy planning at most so many jobs (``plans_at_most``), once
        each queue has had them (or has no job left), only the jobs that want at most the
        free slots and those planned last session are decided: any other can neither
        start (free slots only fall) nor be planned, and its decision changes nothing
        but its record, made as the core's would be (pending, no plan)."""
        replay = self.replay
        carried = self._kept_session(now, new) if self.last is not None else None
        if carried is not None:
            session, later = carried
            visit = _Visit(self, session, now)
            visit.kept = dict(self.kept)  # each earlier job's plan, held again as it was
            for i in later:
                visit(i)
        elif replay.by_width is None or self.caps is None:
            session = _Session(self, now)
            visit = _Visit(self, session, now)
            for i in self._pick_order():
                visit(i)
        else:
            session = _Session(self, now)
            visit = _Visit(self, session, now)
            self._capped(visit)
            for i in new:
                if i not in self.decided:  # not visited: pending, with no plan
                    self.decided.add(i)
                    replay.table.extras(i, 0, 0.0, False, None, False)
        replay.sim.stats.decisions += visit.pending
        self.profiled = session.profile is not None
        self.kept = visit.kept if self.keep_plans else {}
        if self.keep_profile:
            self.last = (session, self.claims.changes, replay.pending)
        self.early.clear()
        if len(self.hints) > 2 * replay.pending + 64:  # jobs that left without starting
            waiting = set(replay.waiting())
            self.hints = {i: h for i, h in self.hints.items() if i in waiting}
            self.rooms = {i: r for i, r in self.rooms.items() if i in waiting}
        return visit.started

    def _kept_session(self, now: float, new: list[int]) -> tuple[_Session, list[int]] | None:
        """The last session carried on to ``now``, and the new jobs in pick order, when
        that is this session (``SimOptions.kept_profile``, an exact shortcut); else None.

        It is when the last session built its profile; no job started or ended since;
        the pending jobs are the last session's and the new ones, the new ones last in
        pick order; each earlier job was offered a plan, by a policy that keeps
        placements, and has an estimate above 0; no running job's estimated end is at or
        before now; and no plan starts at or before now. Then the profile records no
        change after the last session's start up to now (its instants there are claims'
        ends, plans' starts and the ends of holds that start later; ``advance`` checks
        it). And each earlier job decides as last
        session: nothing it sees rose (no end gave room back; the free slots and the
        claims are the same; a claim ending from now on is at the same instant either
        way), so, its plan still ahead, it cannot start now and its plan is kept
        (``_Session``'s kept plans: its hosts hold its claims, the final profile of the
        last session never being below 0). A job planned afresh each session (a policy
        that does not keep placements, or no estimate above 0) could take other hosts
        now that the jobs started after it last session come before it as claims; such
        a session is made afresh. Its plan and the starts of the last session are
        what the profile holds, as a session at ``now`` would hold them again (a job
        started then holds from then what its claim holds from now on); so each new
        job is decided on it as it would be after them."""
        last = self.last
        assert last is not None
        session, changes, pending = last
        profile = session.profile
        claims = self.claims
        if (
            profile is None
            or session.head is not None
            or session.lazy is not None
            or claims.changes != changes  # (every end counts: no end before its estimate)
            or self.replay.pending != pending + len(new)
        ):
            return None
        claims.merged()
        if claims.earliest() <= now:
            return None
        if len(self.kept) != pending:  # some job was not offered a plan
            return None
        estimates = self.estimates
        for i, plan in self.kept.items():
            if not estimates[i] > 0 or (plan is not None and plan[0] <= now):
                return None  # planned afresh each session, or its plan is due
        later: list[int] = []
        if new:
            order = self._pick_order()
            later = order[len(order) - len(new) :]
            if set(later) != set(new):
                return None
        session.resume(now)
        return session, later

    def _capped(self, visit: _Visit) -> None:
        """The session's jobs in pick order until every queue has had its plans (or has
        no job left), then only those the index finds wanting at most the free slots,
        and those planned last session (see :meth:`session`)."""
        replay = self.replay
        caps = self.caps
        assert caps is not None
        assert replay.by_width is not None
        considered = visit.session.considered
        left = list(replay.queue_pending)  # per queue: its jobs not yet visited
        open_queues = sum(1 for q, n in enumerate(left) if n and caps[q] > 0)
        arrival = replay.arrival
        boundary = (len(replay.levels), 0)  # (level, place) from which the index decides
        for lv, i in self._walk():
            if not open_queues:
                boundary = (lv, arrival[i] - 1)
                break
            q = replay.queue_of[i]
            was_open = left[q] and considered.get(q, 0) < caps[q]
            visit(i)
            left[q] -= 1
            if was_open and not (left[q] and considered.get(q, 0) < caps[q]):
                open_queues -= 1
        level_of, queue_of = replay.level_of, replay.queue_of
        last = sorted(
            (level_of[queue_of[i]], arrival[i] - 1, i)
            for i in self.kept
            if (level_of[queue_of[i]], arrival[i] - 1) >= boundary and i not in replay.running
        )
        by_arrival = replay.by_arrival
        k = 0
        for lv in range(boundary[0], len(replay.levels)):
            at = boundary[1] if lv == boundary[0] else 0
            while True:
                found = self._next_to_try(visit.session, lv, at)
                if k < len(last) and last[k][0] == lv and (found < 0 or last[k][1] <= found):
                    place, i = last[k][1], last[k][2]
                    k += 1
                elif found >= 0:
                    place, i = found, by_arrival[found]
                else:
                    break
                visit(i)
                at = place + 1

    def _next_to_try(self, session: _Session, lv: int, at: int) -> int:
        """The first place from ``at`` on of level ``lv`` whose job may start now (-1:
        none): it wants at most the free slots; and with the session's one plan made on
        the rows and no job keeping placements, it ends (by its estimate) before that
        plan starts, or it wants at most what the plan leaves (``_start_now``'s tests;
        a place found may still pend)."""
        by_width, space = self.replay.by_width, self.replay.space
        assert by_width is not None
        total = space.total
        if total <= 0:
            return -1
        if session.lazy is not None:  # the first plan, unplaced: does any job need it?
            _, n, _, start, value, _ = session.lazy
            # beside it a job may take, past its start, at most what it leaves there
            wide = min(total, int(value) - n)
            found = by_width.first(lv, at, wide) if wide > 0 else -1
            if found < 0:
                before = start - session.now + 1e-9 * max(1.0, abs(start))
                found = by_width.first_short(lv, at, total, before)
            if found < 0:
                return -1  # none: it need not be placed
            session.place_first()
        head = session.head
        if head is None or self.hints_kept:
            return by_width.first(lv, at, total)
        wide = total - head.short  # any estimate
        found = by_width.first(lv, at, wide) if wide > 0 else -1
        if wide < total:  # ending before the plan's start (a hair of slack: superset)
            before = session.planned_from - session.now
            before += 1e-9 * max(1.0, abs(session.planned_from))
            short = by_width.first_short(lv, at, total, before)
            if short >= 0 and (found < 0 or short < found):
                found = short
        return found

    def _walk(self) -> Iterator[tuple[int, int]]:
        """(level, job) of the pending jobs in pick order (:meth:`_pick_order`), lazily."""
        replay = self.replay
        for lv, level in enumerate(replay.levels):
            if replay.all_strict[lv]:
                queues = [replay.queued[q] for q in replay.level_queues[lv]]
                jobs: Iterable[int] = (
                    queues[0]
                    if len(queues) == 1
                    else heapq.merge(*queues, key=replay.arrival.__getitem__)
                )
            else:
                jobs = level
            for i in jobs:
                yield lv, i

    def _pick_order(self) -> list[int]:
        """The pending jobs as the core's session picks them: priority levels high first,
        each in arrival order (every picker offers first come, first served)."""
        replay = self.replay
        arrival = replay.arrival
        out: list[int] = []
        for lv, level in enumerate(replay.levels):
            if replay.all_strict[lv]:
                queued = [i for q in replay.level_queues[lv] for i in replay.queued[q]]
                out += sorted(queued, key=lambda i: arrival[i])
            else:
                out += level
        return out

    def started(self, i: int, now: float, placed: Placed) -> None:
        """Job ``i`` started at ``now`` (in any session): its claim is kept."""
        hosts, slots = _columns(placed)
        self.began(i, now + self.estimates[i], hosts, slots)

    def began(self, i: int, end: float, hosts: IndexArray, slots: IntArray) -> None:
        """Claim ``i`` (a job started, or work running when the replay began) holds
        ``slots`` on ``hosts`` until its estimated ``end``."""
        self.claims.add(i, end, hosts, slots)
        self.expected[i] = end

    def ended(self, i: int, now: float) -> None:
        """Job ``i`` ended at ``now``: its claim is dropped; an end before its estimate
        gives back, until then, what the last session's plan counted as taken."""
        expected = self.expected.pop(i)
        self.claims.drop(i, expected)
        if expected > now:
            self.early.append(expected)


class _Visit:
    """A planned session's decision of one job at a time, its record and start (what
    :meth:`ArrayPlanning.session` does with each job it decides)."""

    __slots__ = ("kept", "now", "pending", "planning", "session", "started")

    def __init__(self, planning: ArrayPlanning, session: _Session, now: float) -> None:
        self.planning = planning
        self.session = session
        self.now = now
        self.pending = planning.replay.pending  # the jobs the session decides
        self.started: list[int] = []
        self.kept: dict[int, _Plan | None] = {}

    def __call__(self, i: int) -> None:
        planning = self.planning
        replay = planning.replay
        table = replay.table
        outcome = self.session.decide(i, self.kept)
        first = i not in planning.decided
        if first:
            planning.decided.add(i)
        if isinstance(outcome, tuple):  # started
            placed, backfilled = outcome
            table.extras(i, 0, 0.0, backfilled, self.now if first else None, False)
            if not backfilled:
                table.not_backfilled(i)
            replay.sim.stats.backfilled += backfilled
            replay.start_placed(i, self.now, placed)
            self.started.append(i)
        elif first:
            table.extras(i, 0, 0.0, False, outcome, outcome is not None)


class _Session:
    """One planned session's planner on arrays: the free slots (the replay's), the
    profile (made when first needed), the slots of all hosts together over time, and
    what has been planned.

    **Kept plans** (``SimOptions.kept_plans``, an exact shortcut). A job whose policy
    keeps placements, planned in the last session at ``T`` on hosts ``H`` (``T`` after
    now, a positive estimate), is planned at ``T`` on ``H`` again without a search when

    - no availability it sees rose since: ``rises`` holds the spans over which it may
      have (from an end before a running job's estimate, until the estimate; from a
      hold of the last session that is not held again this session, over that hold);
      its run from now, each earlier candidate's run, and its run from ``T`` must miss
      them all, else the candidates that meet them are tried (an earlier one with room
      means a fresh plan) and a run from ``T`` that meets one is planned afresh;
    - ``H`` still holds its claims over its run from ``T`` — checked only once a hold
      of this session came before it that the last one did not have (``moved``): else
      what it sees is the last session's final profile (never below 0) plus its own
      hold and the holds planned after it, so its claims fit.

    Then it cannot start now, no earlier instant has room (a run that meets no rise sees
    at most what it saw; an instant that was not a candidate then sees at most what the
    candidate before it saw), and with its hint first the same plan of the same buckets
    takes the same hosts (no fewer buckets fit on less; the hint's hosts come first and
    each still holds its claim). A job kept with no instant having room, with no rise
    at all, has none again.

    A run from ``T`` that meets a rise is still kept when ``T`` is an instant of this
    session's profile and the room over the run, per host, is the room its plan was
    placed from last session (``planning.rooms``): the same room gives the same
    buckets on the same hosts, whatever rose elsewhere (the earlier candidates are
    checked as above). And a plan that moves but keeps its hosts and slots (``_gone``
    with the new plan) frees only the part of its old run the new one does not cover."""

    __slots__ = (
        "base",
        "considered",
        "deferred",
        "head",
        "lazy",
        "moved",
        "now",
        "placed",
        "planned",
        "planned_from",
        "planning",
        "profile",
        "rises",
        "room_memo",
        "rows_memo",
    )

    def __init__(self, planning: ArrayPlanning, now: float) -> None:
        self.planning = planning
        self.now = now
        self.base = planning.replay.space.free.astype(np.float64)  # the books at its start
        planning.claims.merged()  # the claims of the jobs running at its start
        self.profile: SlotProfile | None = None
        # holds made before the profile (starts, and a plan made on rows: see _Head)
        self.deferred: list[tuple[float, float, IndexArray, FloatArray]] = []
        self.head: _Head | None = None
        # the first plan on the rows, not yet placed: (job, tasks, estimate, start, all
        # hosts' slots then, the kept plans it is noted in), see place_first
        self.lazy: tuple[int, int, float, float, float, dict[int, _Plan | None]] | None = None
        self.considered: dict[int, int] = {}  # per queue: jobs offered a plan so far
        self.planned = 0  # jobs planned (held) this session
        self.planned_from = math.inf  # the earliest planned start
        # spans over which availability may have risen since the last session, and
        # whether a hold came before that the last session did not have (class docstring)
        self.rises = _Spans((now, end) for end in planning.early if end > now)
        self.moved = False
        self.placed: tuple[_Plan, IntArray] | None = None  # the last plan placed, its room
        # the last window a kept plan's check read: (start, end, the window),
        # while nothing was held since (a hold drops it), for a fresh plan's candidate
        self.room_memo: tuple[float, float, IntArray | FloatArray] | None = None
        self.rows_memo: tuple[tuple[float, int, int], tuple[IntArray, FloatArray]] | None = None

    def resume(self, now: float) -> None:
        """Carry this session, its profile and what it holds, on to a session at
        ``now`` (see :meth:`ArrayPlanning._kept_session` for when that is one made
        afresh): what a fresh one would have found before its first new job."""
        assert self.profile is not None
        self.profile.advance(now)
        self.now = now
        self.base = self.planning.replay.space.free.astype(np.float64)
        self.rises = _Spans()
        self.moved = False
        self.placed = None
        self.room_memo = None
        self.rows_memo = None

    # --- the profile ---------------------------------------------------------------
    def _profile(self) -> SlotProfile:
        """The planner's profile: the books at the session's start, the running jobs'
        ends, then the holds of the jobs started since (as ``Planner._ready``); on a
        grid where it is small enough (:func:`~xce.sim.slotprofile.slot_profile`)."""
        profile = self.profile
        if profile is not None:
            return profile
        planning = self.planning
        profile = self.profile = slot_profile(
            self.now, self.base, planning.claims.rows(), dense=planning.dense
        )
        self.head = None  # the profile decides from now on
        deferred, self.deferred = self.deferred, []
        for start, end, hosts, units in deferred:
            self._hold(start, end, hosts, units)
        return profile

    def _steps(self) -> Steps:
        return self._profile().steps()

    def _hold(self, start: float, end: float, hosts: IndexArray, slots: FloatArray) -> None:
        """``slots`` on ``hosts`` are taken over ``[start, end)`` (put in the profile
        when it is made, in this order)."""
        if self.profile is None:
            self.deferred.append((start, end, hosts, slots))
            return
        if not end > start:
            return  # a job of no duration holds nothing over time
        self.room_memo = None
        self.profile.hold(start, end, hosts, slots)

    # --- one job -------------------------------------------------------------------
    def decide(self, i: int, kept: dict[int, _Plan | None]) -> tuple[Placed, bool] | float | None:
        """Job ``i``'s decision: (where it started, backfilled), or its planned start
        (None: pending without one). A plan offered is noted in ``kept``."""
        self.place_first()  # what this job sees includes the first plan's placement
        planning = self.planning
        replay = planning.replay
        q = replay.queue_of[i]
        n = replay.tasks[i]
        duration = planning.estimates[i]
        keeps = planning.keeps[q]
        hint = planning.hints.get(i) if keeps else None
        found = planning.kept.get(i, _ABSENT)
        last = None if isinstance(found, _Absent) else found
        had = not isinstance(found, _Absent)  # a plan was offered in the last session
        # its last plan may be kept (planned for later, a run, a policy keeping hosts)
        usable = had and keeps and duration > 0 and (last is None or last[0] > self.now)
        if not usable or self._meets(self.now, duration):
            placed = self._start_now(n, duration, hint)
        else:
            placed = None  # it cannot start now (class docstring)
        if placed is not None:
            planning.hints.pop(i, None)
            planning.rooms.pop(i, None)
            hosts, slots = _columns(placed)
            end = self.now + duration
            self._hold(self.now, end, hosts, slots.astype(np.float64))
            if self.head is not None:
                self.head.started(hosts, slots, duration, end, replay.space.free)
            if had:
                self._gone(last, duration)
            self.moved = True
            return placed, self.planned > 0
        considered = self._considered(q)
        if not planning.plans_job[q](considered):
            if had:
                self._gone(last, duration)
            return None
        again = self._again(i, n, duration, last) if usable else _ABSENT
        if not isinstance(again, _Absent):
            plan = again
        elif self._on_rows(hint):
            # (a plan of no duration holds nothing: any job that fits may start beside
            # it, which the index's test for an unplaced plan does not allow for)
            if planning.lazy and duration > 0 and self._kept_first(n) is None:
                instant = self._first_instant(n)
                if instant is not None:  # placed once something needs it (place_first)
                    start = instant[0]
                    kept[i] = (start, _NO_HOSTS, np.zeros(0, dtype=np.int64))
                    self.lazy = (i, n, duration, start, instant[1], kept)
                    return start
            plan = self._first_plan(n, duration)
        else:
            plan = self._plan(n, duration, hint)
            made = self.placed  # its room, for the next session's check (_same_room)
            if keeps and planning.keep_plans and made is not None and made[0] is plan:
                planning.rooms[i] = made
        if not (had and (plan is last or _same_plan(plan, last))):
            if had:
                self._gone(last, duration, plan)
            if plan is not None:
                self.moved = True  # a hold the last session did not have
        kept[i] = plan
        if plan is None:
            return None
        if keeps:
            planning.hints[i] = plan[1]
        return self._held(plan, duration)

    def _held(self, plan: _Plan, duration: float) -> float:
        """Hold ``plan`` (of a job of that estimate); returns its start."""
        planning = self.planning
        replay = planning.replay
        start, hosts, slots = plan
        first = self.profile is None and not self.planned and planning.rows
        avail = self._rows_at(start)[0] if first and duration > 0 else None
        self._hold(start, start + duration, hosts, slots.astype(np.float64))
        if first:
            self.head = _Head(start, hosts, slots, avail, replay.space.free)
        elif self.head is not None:
            self._profile()  # a second plan: the profile decides from now on
        if start < self.planned_from:
            self.planned_from = start
        self.planned += 1
        return start

    def place_first(self) -> None:
        """Place the session's first plan on the rows, if it was left unplaced
        (``SimOptions.lazy_first_plan``): made for job ``i`` at its start, it is placed
        and held as it would have been then, nothing having been decided since (every
        decision, and every search for a job that may start beside it, places it first).
        With no queue keeping placements, nothing reads an unplaced plan but its start:
        a session that needs no more never places it."""
        lazy = self.lazy
        if lazy is None:
            return
        self.lazy = None
        i, n, duration, start, _, kept = lazy
        plan = self._first_plan(n, duration, start)
        if plan is None or plan[0] != start:
            raise InternalError(f"the first plan placed late moved: {start} -> {plan}")
        kept[i] = plan
        self._held(plan, duration)

    def _gone(self, last: _Plan | None, duration: float, plan: _Plan | None = None) -> None:
        """The last session's plan ``last`` (of a job of that estimate) is not held
        again: what it held may rise. Where the job's new ``plan`` holds the same slots
        on the same hosts from another start, only the part of the old run the new one
        does not cover may."""
        if last is None:
            return
        start = last[0]
        end = start + duration
        self.moved = True
        if plan is None or not _same_hosts(plan, last):
            self.rises.add(start, end)
        elif plan[0] > start:  # later: from the old start until the new one
            self.rises.add(start, min(plan[0], end))
        else:  # earlier: from the new end until the old one
            self.rises.add(max(plan[0] + duration, start), end)

    def _meets(self, start: float, duration: float) -> bool:
        """Whether a run over ``[start, start + duration)`` meets a span of ``rises``."""
        return self.rises.meets(start, start + duration)

    def _again(self, i: int, n: int, duration: float, last: _Plan | None) -> _Plan | _Absent | None:
        """Job ``i``'s plan where the last one's ``last`` shows it (class docstring),
        else _ABSENT (to plan afresh)."""
        if last is None:
            return None if not self.rises else _ABSENT
        start, hosts, slots = last
        alike = False  # its run sees the room it was placed from
        if self._meets(start, duration):
            alike = self._same_room(i, last, duration)
            if not alike:
                return _ABSENT  # what its run sees may have risen: planned afresh
        if self.rises:  # earlier candidates whose run meets a rise: any with room?
            profile = self._profile()
            times = profile.times()  # from now on
            times = times[: int(times.searchsorted(start))]
            times = times[self.rises.touching(times, duration)]
            if len(times):
                times = times[self._steps().holds(times, duration, float(n))]
            for t in times.tolist():
                avail = profile.window(t, t + duration)
                if float(np.maximum(avail, 0.0).sum()) >= n:
                    return _ABSENT
        if self.moved and not alike:
            avail = self._profile().window(start, start + duration)
            if not bool(np.all(avail[hosts] >= slots)):
                return _ABSENT
        return last

    def _same_room(self, i: int, last: _Plan, duration: float) -> bool:
        """Whether plan ``last`` of job ``i`` starts at an instant of the profile whose
        room per host over its run is the room it was placed from (class docstring)."""
        found = self.planning.rooms.get(i)
        if found is None or found[0] is not last:
            return False
        start = last[0]
        profile = self._profile()
        times = profile.times()
        at = int(times.searchsorted(start))
        if at == len(times) or times[at] != start:
            return False
        avail = profile.window(start, start + duration)
        self.room_memo = (start, start + duration, avail)
        return bool(np.array_equal(np.maximum(avail, 0), found[1]))

    def _considered(self, q: int) -> int:
        """How many jobs of queue ``q`` were offered a plan before this one (it counts)."""
        before = self.considered.get(q, 0)
        self.considered[q] = before + 1
        return before

    def _start_now(self, n: int, duration: float, hint: IndexArray | None) -> Placed | None:
        """Where the job starts now, charged to the free slots (None: it pends):
        ``Planner.start_now`` for a plain job (module docstring)."""
        space = self.planning.replay.space
        now = self.now
        end = now + duration
        if n > space.total:
            return None
        if hint is None and self.planned_from >= end:
            return space.place(n)  # the view is the books: placed as without planning
        head = self.head
        if hint is None and head is not None:  # one plan, held from before ``end``
            if n > space.total - head.short:
                return None  # reserved: the plan needs what it would take
            found = place(np.minimum(space.free, head.left), n)
            if found is None:
                raise InternalError("a plain job that fits a view found no placement")
            hosts, slots = found
            space.charge(hosts, slots)
            return hosts.astype(space.small), slots, int(hosts.min()), len(hosts)
        if not self._steps().holds_at(now, duration, float(n)):
            return None  # reserved: all hosts together dip below its tasks in its run
        profile = self._profile()
        free = space.free
        avail = profile.window(now, end) if end > now else profile.at(now)
        avail = np.minimum(avail, free)
        order = _hint_order(hint, len(free)) if hint is not None and len(hint) else None
        found = _ordered_place(avail, n, order)
        if found is None:
            return None
        hosts, slots = found
        space.charge(hosts, slots)
        return hosts.astype(space.small), slots, int(hosts.min()), len(hosts)

    def _on_rows(self, hint: IndexArray | None) -> bool:
        """Whether the session's first plan is made on the rows (no profile, no hint;
        not when the last session needed the profile, as it then likely does again)."""
        planning = self.planning
        return (
            self.profile is None
            and not self.planned
            and hint is None
            and planning.rows
            and not planning.profiled
        )

    def _rows_at(self, at: float) -> tuple[IntArray, FloatArray]:
        """Per host, what the profile has at ``at`` (the free slots, the jobs started
        this session given back at their ends, the running jobs' at their estimated
        ends) and the latest instant up to ``at`` at which it rises (-inf: never),
        from the rows alone (no plan held yet). Asked twice for one plan (its placement,
        then its hold): the second time is the first's answer (nothing started or was
        held in between: the free slots' total and the holds so far say so)."""
        key = (at, len(self.deferred), self.planning.replay.space.total)
        if self.rows_memo is not None and self.rows_memo[0] == key:
            return self.rows_memo[1]
        found = self._rows_at_afresh(at)
        self.rows_memo = (key, found)
        return found

    def _rows_at_afresh(self, at: float) -> tuple[IntArray, FloatArray]:
        now, free = self.now, self.planning.replay.space.free
        hosts: list[IndexArray] = []
        slots: list[FloatArray] = []
        ends: list[float] = []
        for end, on, units, _ in self.planning.claims.due(at):  # the first
            hosts.append(on)
            slots.append(units)
            ends.append(end if end > now else now)
        avail = free.copy()
        rise = np.full(len(free), -np.inf)
        if hosts:
            on = np.concatenate(hosts)
            avail += np.bincount(on, weights=np.concatenate(slots), minlength=len(free)).astype(
                np.int64
            )
            np.maximum.at(rise, on, np.repeat(ends, [len(h) for h in hosts]))
        for start, end, on, units in self.deferred:  # this session's starts
            if end <= at:  # back by then (or never held: no duration)
                avail[on] += units.astype(np.int64)
                if end > start:
                    np.maximum.at(rise, on, end)
        return avail, rise

    def _first_plan(self, n: int, duration: float, start: float | None = None) -> _Plan | None:
        """:meth:`_plan` of the session's first plan, on the rows: with no plan held,
        availability only rises after now, so a run's lowest point is where it starts,
        the first instant whose slots add up to ``n`` is the plan's start, and there the
        hosts are taken freed latest first (hosts with none free then are never taken,
        so only those freed by then and those free now are ordered). The last session's,
        where it provably repeats (:meth:`_kept_first`). ``start``: the plan's start,
        where already found (:meth:`_first_instant`)."""
        planning = self.planning
        kept = self._kept_first(n)
        if kept is not None:
            plan, rows = kept
            if plan is not None and rows is not None:  # as _rows_at would find them
                key = (plan[0], len(self.deferred), planning.replay.space.total)
                self.rows_memo = (key, rows)
            return plan
        plan = self._first_plan_afresh(n, start)
        rows = self.rows_memo[1] if plan is not None and self.rows_memo is not None else None
        if planning.keep_plans:
            planning.first = (n, planning.claims.changes, plan, rows)
        return plan

    def _kept_first(self, n: int) -> tuple[_Plan | None, tuple[IntArray, FloatArray] | None] | None:
        """The last first plan on the rows and the rows at its start, if this one is
        provably the same (None: not; ``SimOptions.kept_plans``): it was made for ``n``
        tasks too, no job started or ended since (the claims' changes count every start
        and end), so the free slots are what they were then and the claims are what
        they were plus the starts it saw as this session's (given back at the same
        ends), and no claim's end is before now (what the rows count at now would
        differ: an end past its estimate counts from now)."""
        planning = self.planning
        kept = planning.first
        if kept is None or kept[0] != n or kept[1] != planning.claims.changes:
            return None
        if self.deferred or planning.claims.earliest() < self.now:
            return None
        return kept[2], kept[3]

    def _first_plan_afresh(self, n: int, start: float | None = None) -> _Plan | None:
        if start is None:
            instant = self._first_instant(n)
            if instant is None:
                return None
            start = instant[0]
        avail, rise = self._rows_at(start)
        risen = np.flatnonzero(rise > -np.inf)
        risen = risen[np.lexsort((risen, -rise[risen]))]  # freed latest first, then hosts
        others = np.flatnonzero((avail > 0) & (rise == -np.inf))  # in host order
        found = _ordered_place(avail, n, np.concatenate((risen, others)))
        if found is None:
            raise InternalError("a plain job whose instant has room found no placement")
        return start, found[0], found[1]

    def _first_instant(self, n: int) -> tuple[float, float] | None:
        """The first instant (now, a claim's end or the end of a job started this
        session) at which all hosts' slots add up to ``n``, with no plan held, and all
        hosts' slots then (None: never): the claims walked in order of their ends until
        they do, then those ending at that instant too."""
        now = self.now
        value = float(self.planning.replay.space.free.sum())
        back: list[tuple[float, float]] = []  # this session's starts, back at their ends
        for start, end, _, units in self.deferred:
            if not end > start:
                value += float(units.sum())  # never held
            elif math.isfinite(end):
                back.append((end, float(units.sum())))
        back.sort()
        claims = self.planning.claims.in_order()
        k = 0  # the starts given back so far
        found = now if value >= n else None
        if found is None:
            for end, _, _, total in claims:
                at = end if end > now else now
                if at == math.inf:
                    break
                while k < len(back) and back[k][0] < at:
                    value += back[k][1]
                    k += 1
                    if value >= n:
                        found = back[k - 1][0]
                        break
                if found is not None:
                    break  # (this claim ends after it)
                value += total
                if value >= n:
                    found = at
                    break
        while found is None and k < len(back):  # no claim (ending in time) was enough
            value += back[k][1]
            k += 1
            if value >= n:
                found = back[k - 1][0]
        if found is None:
            return None
        for end, _, _, total in claims:  # the rest of what is back by then
            if (end if end > now else now) > found:
                break
            value += total
        value += sum(amount for end, amount in back[k:] if end <= found)
        return found, value

    def _plan(
        self, n: int, duration: float, hint: IndexArray | None
    ) -> tuple[float, IndexArray, IntArray] | None:
        """The job's earliest start and placement (None: no instant has room):
        ``Planner.plan`` for a plain job (module docstring)."""
        profile = self._profile()
        times = profile.times()
        candidates = times[self._steps().holds(times, duration, float(n))]
        for start in candidates.tolist():
            found = self._place_at(start, duration, n, hint)
            if found is not None:
                return found
        return None

    def _place_at(
        self, start: float, duration: float, n: int, hint: IndexArray | None
    ) -> _Plan | None:
        """The job's placement from ``start`` (None: no room): on the lowest points of
        its run, the hint's hosts first, then the hosts freed latest, then host order."""
        profile = self._profile()
        end = start + duration
        memo = self.room_memo
        if memo is not None and memo[0] == start and memo[1] == end:
            avail = memo[2]  # read by a kept plan's check, nothing held since
        else:
            avail = profile.window(start, end) if end > start else profile.at(start)
        room = np.maximum(avail, 0).astype(np.int64)
        if int(room.sum()) < n:
            return None
        order = _room_order(room, profile.latest_rise(start), hint)
        found = _ordered_place(room, n, order)
        if found is None:
            return None
        plan = (start, found[0], found[1])
        self.placed = (plan, room)
        return plan


class _Spans:
    """Spans ``[a, b)`` of time, kept merged: sorted, disjoint and apart (a span that
    overlaps or touches others is joined to them, which no run can tell apart: a run
    meets the union iff it meets one of them); empty spans (``a >= b``) aside, as
    given, and tested one by one."""

    __slots__ = ("_arrays", "_empty", "_ends", "_starts")

    def __init__(self, spans: Iterable[tuple[float, float]] = ()) -> None:
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._empty: list[tuple[float, float]] = []
        self._arrays: tuple[FloatArray, FloatArray] | None = None
        for a, b in spans:
            self.add(a, b)

    def __bool__(self) -> bool:
        return bool(self._starts or self._empty)

    def add(self, a: float, b: float) -> None:
        if not a < b:
            self._empty.append((a, b))
            return
        starts, ends = self._starts, self._ends
        i = bisect.bisect_left(ends, a)  # the first ending at or after a ...
        j = bisect.bisect_right(starts, b)  # ... to the last starting at or before b
        if i < j:
            a, b = min(a, starts[i]), max(b, ends[j - 1])
        starts[i:j] = [a]
        ends[i:j] = [b]
        self._arrays = None

    def meets(self, start: float, end: float) -> bool:
        """Whether ``[start, end)`` meets a span (as ``a < end and start < b``)."""
        i = bisect.bisect_right(self._ends, start)  # the first ending after start
        if i < len(self._starts) and self._starts[i] < end:
            return True
        return any(a < end and start < b for a, b in self._empty)

    def touching(self, starts: FloatArray, duration: float) -> npt.NDArray[np.bool_]:
        """Per start, :meth:`meets` for ``[start, start + duration)``."""
        if self._arrays is None:
            self._arrays = (np.array(self._starts), np.array(self._ends))
        begin, end = self._arrays
        ends = starts + duration
        i = np.searchsorted(end, starts, side="right")
        inside = i < len(end)
        hit = np.zeros(len(starts), dtype=np.bool_)
        hit[inside] = begin[i[inside]] < ends[inside]
        for a, b in self._empty:
            hit |= (starts < b) & (ends > a)
        return hit


class _Head:
    """The session's one plan, made on the rows (``SimOptions.one_plan_on_rows``): a
    job that would run past its start may take, per host, the free slots but no more
    than the profile has there at the plan's start (``left``: the plan's hosts; no
    limit elsewhere), since before it availability only rises from now and after it
    only rises until the plan ends. ``short``: the free slots that limit withholds."""

    __slots__ = ("hosts", "left", "short", "start")

    def __init__(
        self,
        start: float,
        hosts: IndexArray,
        slots: IntArray,
        avail: IntArray | None,
        free: IntArray,
    ) -> None:
        self.start = start
        self.hosts = hosts
        self.left = np.full(len(free), _NO_LIMIT, dtype=np.int64)
        if avail is not None:  # (a plan of no duration holds nothing)
            self.left[hosts] = avail[hosts] - slots
        self.short = self._short(free)

    def _short(self, free: IntArray) -> int:
        hosts = self.hosts
        return int(np.maximum(free[hosts] - self.left[hosts], 0).sum())

    def started(
        self, hosts: IndexArray, slots: IntArray, duration: float, end: float, free: IntArray
    ) -> None:
        """A job started now on ``hosts`` (charged to ``free``): held past the plan's
        start, it lowers the profile there."""
        if duration > 0 and end > self.start:
            self.left[hosts] -= np.where(self.left[hosts] < _NO_LIMIT, slots, 0)
        self.short = self._short(free)


_NO_LIMIT = np.iinfo(np.int64).max // 2
_NO_HOSTS = np.zeros(0, dtype=np.intp)


def _same_hosts(plan: _Plan, last: _Plan) -> bool:
    """Whether two plans take the same slots of the same hosts (from any start)."""
    return np.array_equal(plan[1], last[1]) and np.array_equal(plan[2], last[2])


def _same_plan(plan: _Plan | None, last: _Plan | None) -> bool:
    if plan is None or last is None:
        return plan is last
    return plan[0] == last[0] and _same_hosts(plan, last)


def _columns(placed: Placed) -> Placement:
    """A placement's hosts (in claim order) and slots as arrays."""
    hosts, slots, lowest, count = placed
    if hosts is None:
        return np.arange(lowest, lowest + count, dtype=np.intp), np.asarray(slots)
    return hosts.astype(np.intp), np.asarray(slots)


def _room_order(room: IntArray, rise: FloatArray, hint: IndexArray | None) -> IndexArray:
    """The hosts with room (``room`` above 0) in the order a plan takes them: the
    hint's, in its order, then the others freed latest first (``rise``: per host, the
    latest instant its slots rose), then in host order. A placement never takes a host
    without room, and it takes the others as in the order of all hosts."""
    has = room > 0
    if hint is not None and len(hint):
        first = hint[has[hint]]
        has[hint] = False
    else:
        first = _NO_HOSTS
    others = np.flatnonzero(has)
    others = others[np.argsort(-rise[others], kind="stable")]
    return np.concatenate((first, others)) if len(first) else others


def _hint_key(hint: IndexArray, n: int) -> FloatArray:
    """Per host: its position in ``hint`` (``n`` where it is not in it). A hint is a
    plan's hosts, each once."""
    key = np.full(n, float(n))
    key[hint[::-1]] = np.arange(len(hint) - 1, -1, -1, dtype=np.float64)  # first wins
    return key


def _hint_order(hint: IndexArray, n: int) -> IndexArray:
    """Hosts in the order a view with ``hint`` takes them: the hint's hosts first, in
    its order, then the others in host order."""
    order: IndexArray = np.argsort(_hint_key(hint, n), kind="stable")
    return order
