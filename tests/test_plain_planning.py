"""issue 29: the plain replay's planned sessions on its own arrays (xce.sim.planned) are
an exact shortcut of the sessions the core runs for it (xce.sim.handoff), proven by a
property over random plain workloads whose queues all plan (easy, conservative), with
``SimOptions.plain_planning`` on and off and against the general path (every record,
the timeline, ``metrics.json``); the random cases reach what the shortcut decides
(checked, not assumed); hand-made cases pin down the placement rules of a view."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import xce.sim.planned as planned_module
from test_plain_replay import (
    QUEUE_NAMES,
    Case,
    assert_same_result,
    hosts_of,
    plain_cases,
)
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.handoff import CoreHandoff
from xce.sim.model import SimJob
from xce.sim.placement import place
from xce.sim.plain import plain_replay
from xce.sim.slotprofile import GridSlots

EXAMPLES = 120
PLANNING = ("easy", "conservative")


@st.composite
def planned_cases(draw: st.DrawFn) -> Case:
    """A plain case (tests/test_plain_replay.py's strategy) whose every queue plans:
    the session's backfill easy or conservative, each declared queue easy,
    conservative or the session's; pickers fcfs, strict or the default (fairshare
    keeps its sessions in the core); no preemption. Half the cases submit their jobs
    within a few seconds, so the queue is deep."""
    case = draw(plain_cases())
    queues = tuple(
        (name, priority, draw(st.sampled_from((None, "fcfs", "strict"))), None,
         draw(st.sampled_from((None, *PLANNING))), default)
        for name, priority, _, _, _, default in case.queues
    )  # fmt: skip
    jobs = case.jobs
    if draw(st.booleans()):  # a burst: every job within 3 s, the queue grows deep
        jobs = tuple(dataclasses.replace(j, submit=float(k % 4)) for k, j in enumerate(jobs))
    return dataclasses.replace(
        case,
        queues=queues,
        jobs=jobs,
        default_picker=draw(st.sampled_from((None, "fcfs", "strict"))),
        picker=draw(st.sampled_from((None, "fcfs", "strict"))),
        backfill=draw(st.sampled_from(PLANNING)),
        preemptor=None,
        preempts=(),
    )


def run(case: Case, arrays: bool | None = None, **options: Any) -> SimResult:
    """The case replayed (``arrays``: asserted to plan on arrays, or not)."""
    sim = Simulation(case.state(), case.jobs, dataclasses.replace(case.options(True), **options))
    if arrays is not None:
        replayer = plain_replay(sim)
        assert replayer is not None
        assert (replayer.arrays is not None) is arrays, "not the path expected"
    result = sim.run()
    verify(result, sim.jobs)
    return result


def three_ways(case: Case) -> SimResult:
    """The case on arrays (asserted to be the path taken), with its sessions' profiles
    on a grid and on the event table (``dense_profile``), with kept plans and without,
    with a quiet session's profile carried on from the last and rebuilt
    (``kept_profile``),
    with a session's one plan on the rows and on the profile, with the index of pending
    jobs by task count and without (``width_index``: EASY's sessions decide only what
    may start), with that plan placed only when needed and at once
    (``lazy_first_plan``), through the core, and on the general path: asserted
    identical."""
    mine = run(case, arrays=True)
    listed = run(case, arrays=True, dense_profile=False)
    afresh = run(case, arrays=True, kept_plans=False)
    rebuilt = run(case, arrays=True, kept_profile=False)
    profiled = run(case, arrays=True, one_plan_on_rows=False)
    core = run(case, arrays=False, plain_planning=False)
    general = run(case, plain_replay=False)
    unindexed = run(case, arrays=True, width_index=False)
    placed = run(case, arrays=True, lazy_first_plan=False)
    assert_same_result(mine, listed)
    assert_same_result(mine, unindexed)
    assert_same_result(mine, placed)
    assert_same_result(mine, afresh)
    assert_same_result(mine, rebuilt)
    assert_same_result(mine, profiled)
    assert_same_result(mine, core)
    assert_same_result(mine, general)
    return mine


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(case=planned_cases())
def test_planned_sessions_on_arrays_decide_as_the_core(case: Case) -> None:
    """issue 29 property: random plain workloads whose queues all plan (easy,
    conservative; fcfs and strict pickers; one or several queues and priorities; hosts
    uniform, one-slot, mixed and not ok; estimates shorter than runtimes, none, or a
    queue's default) give on arrays, with plans kept from session to session
    (``kept_plans``) and planned afresh, with a session's first plan made on the
    running claims' rows (``one_plan_on_rows``) and on the profile, the records,
    timeline and metrics of the
    sessions run by the core, and of the general path: kept = rebuilt over the random
    event sequences (starts, ends before and at estimates, arrivals)."""
    three_ways(case)


@contextmanager
def traced(seen: Counter[str]) -> Iterator[None]:
    """Count what the array sessions decided, and how."""
    session = planned_module._Session
    start_now, plan, ordered = session._start_now, session._plan, planned_module._ordered_place
    again = session._again

    def traced_again(self: Any, i: int, n: int, duration: float, last: Any) -> Any:
        found = again(self, i, n, duration, last)
        meets = last is not None and self._meets(last[0], duration)
        if isinstance(found, planned_module._Absent):
            seen["kept plan refused, " + ("its run meets a rise" if meets else "room before")] += 1
        else:
            seen["kept plan" if found is not None else "kept: no room"] += 1
            if found is not None and meets:
                seen["kept plan whose run meets a rise, room alike"] += 1
            if found is not None and self.moved:
                seen["kept plan checked after a new hold"] += 1
            if found is not None and self.rises:
                seen["kept plan beside a rise"] += 1
        return found

    def traced_start_now(self: Any, n: int, duration: float, hint: Any) -> Any:
        books = hint is None and self.planned_from >= self.now + duration
        rows = not books and hint is None and self.head is not None
        placed = start_now(self, n, duration, hint)
        if rows:
            seen["started beside a plan on rows" if placed else "held beside a plan on rows"] += 1
        if placed is not None:
            seen["started on the books" if books else "started on a view"] += 1
            if hint is not None:
                seen["started with a hint"] += 1
            if self.planned:
                seen["backfilled"] += 1
        elif not books and n <= self.planning.replay.space.total:
            seen["reserved"] += 1
        return placed

    place_at = session._place_at

    def traced_place_at(self: Any, start: float, duration: float, n: int, hint: Any) -> Any:
        memo = self.room_memo
        if memo is not None and memo[0] == start and memo[1] == start + duration:
            seen["a fresh plan read the window a kept plan's check read"] += 1
        return place_at(self, start, duration, n, hint)

    gone = session._gone

    def traced_gone(self: Any, last: Any, duration: float, plan: Any = None) -> None:
        if last is not None and plan is not None and planned_module._same_hosts(plan, last):
            seen[
                "moved plan on the same hosts, " + ("later" if plan[0] > last[0] else "earlier")
            ] += 1
        gone(self, last, duration, plan)

    first_plan = session._first_plan
    kept_first = session._kept_first
    place_first = session.place_first

    def traced_place_first(self: Any) -> Any:
        if self.lazy is not None:
            seen["first plan placed when needed"] += 1
        return place_first(self)

    def traced_kept_first(self: Any, n: int) -> Any:
        found = kept_first(self, n)
        if found is not None:
            seen["first plan on rows kept from the last session"] += 1
        return found

    def traced_first_plan(self: Any, n: int, duration: float, start: Any = None) -> Any:
        found = first_plan(self, n, duration, start)
        seen["first plan on rows" if found is not None else "first plan on rows, no room"] += 1
        return found

    def traced_plan(self: Any, n: int, duration: float, hint: Any) -> Any:
        found = plan(self, n, duration, hint)
        seen["planned" if found is not None else "no instant has room"] += 1
        if found is not None and hint is not None:
            kept = np.array_equal(found[1], hint)
            seen["plan kept its hint" if kept else "plan moved off its hint"] += 1
        if found is not None and found[0] > self.now:
            seen["planned ahead"] += 1
        if not np.isfinite(duration):
            seen["no estimate"] += 1
        return found

    def traced_ordered(avail: Any, n: int, order: Any) -> Any:
        found = ordered(avail, n, order)
        if found is not None and order is not None:
            hosts = found[0]
            kind = "one host" if len(hosts) == 1 else "several hosts"
            seen[f"view placement in order, {kind}"] += 1
            if len(hosts) > 1 and not np.all(np.diff(hosts) > 0):
                seen["view placement out of host order"] += 1
        return found

    kept_session = planned_module.ArrayPlanning._kept_session

    def traced_kept_session(self: Any, now: float, new: list[int]) -> Any:
        found = kept_session(self, now, new)
        if found is not None:
            session_ = found[0]
            grid = isinstance(session_.profile, GridSlots)
            seen["profile carried on, " + ("grid" if grid else "event table")] += 1
            if found[1] and session_.planned:
                seen["profile carried on, new jobs after plans"] += 1
        return found

    next_to_try = planned_module.ArrayPlanning._next_to_try

    def traced_next(self: Any, session_: Any, lv: int, at: int) -> Any:
        found = next_to_try(self, session_, lv, at)
        if found < 0 and session_.lazy is not None:
            seen["first plan never placed"] += 1
        if found >= 0:
            beside = " beside a plan on rows" if session_.head is not None else ""
            seen["the width index found a job" + beside] += 1
        return found

    with (
        mock.patch.object(planned_module.ArrayPlanning, "_next_to_try", traced_next),
        mock.patch.object(planned_module.ArrayPlanning, "_kept_session", traced_kept_session),
        mock.patch.object(session, "_start_now", traced_start_now),
        mock.patch.object(session, "_plan", traced_plan),
        mock.patch.object(session, "_again", traced_again),
        mock.patch.object(session, "_gone", traced_gone),
        mock.patch.object(session, "_place_at", traced_place_at),
        mock.patch.object(session, "_first_plan", traced_first_plan),
        mock.patch.object(session, "_kept_first", traced_kept_first),
        mock.patch.object(session, "place_first", traced_place_first),
        mock.patch.object(planned_module, "_ordered_place", traced_ordered),
    ):
        yield


REACHED = {
    "started on the books",
    "started on a view",
    "started with a hint",
    "backfilled",
    "reserved",
    "planned",
    "no instant has room",
    "plan kept its hint",
    "plan moved off its hint",
    "planned ahead",
    "no estimate",
    "view placement in order, one host",
    "view placement in order, several hosts",
    "view placement out of host order",
    "kept plan",
    "kept: no room",
    "kept plan checked after a new hold",
    "kept plan beside a rise",
    "kept plan refused, its run meets a rise",
    "kept plan whose run meets a rise, room alike",
    "moved plan on the same hosts, later",
    "moved plan on the same hosts, earlier",
    "a fresh plan read the window a kept plan's check read",
    "first plan on rows",
    "first plan on rows, no room",
    "first plan on rows kept from the last session",
    "first plan placed when needed",
    "first plan never placed",
    "started beside a plan on rows",
    "held beside a plan on rows",
    "kept plan refused, room before",
    "the width index found a job",
    "the width index found a job beside a plan on rows",
    "profile carried on, grid",
    "profile carried on, event table",
    "profile carried on, new jobs after plans",
}


def test_random_planned_cases_reach_what_the_arrays_decide() -> None:
    """The property is not vacuous: its derandomized cases start jobs on the books and
    on views (with a hint, backfilled), reserve, plan (ahead, with and without room,
    keeping and leaving a hint, jobs without an estimate), place on views in an order
    of their own (one host, several, not in host order), and keep plans from the last
    session (with no room, checked after a new hold, beside a rise) or refuse to (a run
    that meets a rise, an earlier instant with room); make a session's first plan on
    the rows (with and without room; kept from the last session, nothing having
    started or ended since; placed only when needed, or never) and start or hold jobs
    beside it; carry a quiet session's profile on from the last (on a grid and on the
    event table, new jobs decided after kept plans); and decide,
    once every queue has had its plans, only what the width index finds (beside a
    plan on rows too)."""
    seen: Counter[str] = Counter()
    policies: Counter[str] = Counter()

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, phases=[Phase.generate])
    @given(case=planned_cases())
    def collect(case: Case) -> None:
        with traced(seen):
            run(case)
            run(case, dense_profile=False)  # the event table's sessions too
        policies.update(q[4] or case.backfill or "" for q in case.queues)
        policies[case.backfill or ""] += 1

    collect()
    missing = sorted(REACHED - set(seen))
    assert not missing, (missing, seen)
    assert set(PLANNING) <= set(policies), policies


def test_a_quiet_session_beside_a_queue_planned_afresh_is_made_afresh() -> None:
    """The kept profile (``kept_profile``) is taken only where every queue keeps its
    placements. Here queue ``mid`` (easy) plans j12 afresh each session: at 0 it is
    planned at 2 before j16 starts beside it; at 1 (only j17 is new) j16 is a claim on
    h0 ending at 2, so j12's plan takes h0 first, and j17 (no estimate) cannot take
    h0's last slot. Carried on, the last plan stood and j17 started there (found by the
    nine-way property at 800 random cases)."""

    def job(name: str, submit: float, runtime: float, tasks: int, queue: str,
            requested: float | None) -> SimJob:  # fmt: skip
        return SimJob(name, submit, runtime, tasks, queue=queue, requested_time=requested)

    case = Case(
        hosts=((3, "ok"),) * 6,
        queues=(("hi", 0, None, None, "conservative", None), ("mid", 0, None, None, None, None)),
        default_picker=None,
        jobs=(
            job("j0", 0.0, 0.0, 1, "hi", None),
            job("j4", 0.0, 0.0, 1, "hi", None),
            job("j8", 0.0, 2.0, 15, "hi", 2.0),
            job("j12", 0.0, 0.0, 5, "mid", None),
            job("j16", 0.0, 2.0, 2, "hi", 2.0),
            job("j17", 1.0, 0.0, 1, "hi", None),
        ),
        picker=None,
        single_queue=False,
        enforce_walltime=False,
        backfill="easy",
    )
    mine = three_ways(case)
    j17 = next(r for r in mine.records if r.job.id == "j17")
    assert j17.start == 2.0


def test_a_queue_that_preempts_or_orders_its_own_jobs_keeps_the_core() -> None:
    """Sessions go to the core (as before) when a queue preempts, has a picker with an
    order of its own (fairshare), or with ``plain_planning`` off."""
    jobs = [SimJob("a", 0.0, 10.0, 2, queue="hi", requested_time=10.0)]
    fair = hosts_of(2).queue("hi", 0, picker="fairshare").build()
    preempting = hosts_of(2).queue("hi", 10, preempts=["lo"]).queue("lo", 0).build()
    fcfs = hosts_of(2).queue("hi", 0).build()
    for state, options in (
        (fair, SimOptions(backfill="easy")),
        (preempting, SimOptions(backfill="easy", preemptor="lowest_priority_first")),
        (fcfs, SimOptions(backfill="easy", plain_planning=False)),
    ):
        replayer = plain_replay(Simulation(state, jobs, options))
        assert replayer is not None
        assert replayer.handoff is not None
        assert replayer.arrays is None
    replayer = plain_replay(Simulation(fcfs, jobs, SimOptions(backfill="conservative")))
    assert replayer is not None
    assert replayer.arrays is not None


def test_a_queue_that_does_not_plan_keeps_the_core() -> None:
    """A replay with a queue under ``none`` beside planning ones: its sessions go to the
    core (a session of that queue alone does not plan)."""
    state = hosts_of(2).queue("a", 0, backfill="none").queue(QUEUE_NAMES[0], 0).build()
    jobs = [SimJob("x", 0.0, 1.0, 1, queue="a"), SimJob("y", 0.0, 1.0, 1, queue="hi")]
    replayer = plain_replay(Simulation(state, jobs, SimOptions(backfill="easy")))
    assert replayer is not None
    assert replayer.handoff is not None
    assert replayer.arrays is None


# --- the placement rules of a view ---------------------------------------------------


@pytest.mark.parametrize(
    ("avail", "n", "hosts", "slots"),
    [
        ([0, 3, 5, 5], 4, [2], [4]),  # one host: the first with 4 free
        ([3, 4, 4], 7, [1, 0], [4, 3]),  # 2 buckets, the big one first
        ([2, 2, 2, 1], 7, [0, 1, 2, 3], [2, 2, 2, 1]),  # 4 buckets: 2 + 2 + 2 + 1
        ([3, 1, 1, 0, 1], 5, [0, 1, 2, 4], [2, 1, 1, 1]),  # 4 buckets, one big
        ([3, 1], 4, [0, 1], [3, 1]),  # no balanced plan: the fill plan
        ([1, 0, 1, 1], 3, [0, 2, 3], [1, 1, 1]),  # one-slot hosts
        ([1, 1], 3, None, None),  # no room
    ],
)
def test_place_on_a_view(avail: list[int], n: int, hosts: Any, slots: Any) -> None:
    """The allocator's rules on a view of slots (array order is the view's order): one
    host, the first balanced plan (big buckets first), the fill plan, no room."""
    found = place(np.array(avail, dtype=np.int64), n)
    if hosts is None:
        assert found is None
        return
    assert found is not None
    assert found[0].tolist() == hosts
    assert found[1].tolist() == slots


def test_easy_s_plan_of_no_duration_lets_any_job_that_fits_start_beside_it() -> None:
    """A head estimated to run 0 s holds nothing: beside its plan any job that fits the
    free slots starts (here ``k``, at 1, as the core decides), with its plan placed when
    needed or at once (``lazy_first_plan``: such a plan is placed at once, since the
    index's test for an unplaced plan assumes it holds its tasks)."""
    jobs = [
        SimJob("a", 0.0, 100.0, 1, requested_time=100.0),
        SimJob("j", 1.0, 5.0, 2, requested_time=0.0),
        SimJob("k", 1.0, 50.0, 1, requested_time=200.0),
    ]
    state = hosts_of(1, 1).build()
    runs = [
        Simulation(state, jobs, SimOptions(backfill="easy", **extra)).run()
        for extra in ({}, {"lazy_first_plan": False}, {"plain_planning": False})
    ]
    for other in runs[1:]:
        assert_same_result(runs[0], other)
    got = {r.job.id: r.start for r in runs[0].records}
    assert got == {"a": 0.0, "j": 100.0, "k": 1.0}


def test_a_conservative_plan_keeps_its_hosts_while_they_fit() -> None:
    """Conservative keeps placements: ``wide`` (6 tasks on three hosts of 2) is planned
    at 50 on h1, h2 (freed latest, by ``late``), then h0 (freed by ``early``'s estimate
    at 20); when ``early`` ends at 5, ahead of its estimate, the next session plans it
    again on those hosts in that order, and it starts there, as the core decides."""
    jobs = [
        SimJob("early", 0.0, 5.0, 2, requested_time=20.0),
        SimJob("late", 0.0, 50.0, 4, requested_time=50.0),
        SimJob("wide", 1.0, 10.0, 6, requested_time=10.0),
    ]
    state = hosts_of(2, 2, 2).build()
    case_options = {"backfill": "conservative", "picker": "fcfs"}
    sim = Simulation(state, jobs, SimOptions(**case_options))
    mine = sim.run()
    verify(mine, sim.jobs)
    core = Simulation(state, jobs, SimOptions(plain_planning=False, **case_options)).run()
    assert_same_result(mine, core)
    got = {r.job.id: r for r in mine.records}
    assert (got["wide"].planned_start, got["wide"].start) == (50.0, 50.0)
    assert got["wide"].planned_ahead
    assert got["wide"].hosts == ("h1", "h2", "h0")


def test_handoff_sessions_are_not_run_when_planning_on_arrays() -> None:
    """With the arrays planning, no session reaches the core."""
    jobs = [
        SimJob("run", 0.0, 100.0, 3, requested_time=100.0),
        SimJob("wide", 1.0, 50.0, 4, requested_time=50.0),
        SimJob("short", 2.0, 10.0, 1, requested_time=10.0),
    ]
    with mock.patch.object(CoreHandoff, "session", side_effect=AssertionError("core")):
        result = Simulation(hosts_of(4).build(), jobs, SimOptions(backfill="easy")).run()
    assert {r.job.id: r.start for r in result.records} == {"run": 0.0, "wide": 100.0, "short": 2.0}


def test_a_plan_of_a_queue_that_keeps_no_hosts_is_seen_by_one_that_does() -> None:
    """Found by the property (3,000 random cases): an easy job's plan (a policy that
    keeps no placements) held in the last session, and not held again, frees what a
    conservative job's kept plan was made beside: the later job is planned afresh.
    Five one-slot hosts, queues ``hi`` (easy, the session's), ``mid`` (conservative) and
    ``lo`` (easy, a higher priority); jobs without estimates hold their hosts for ever."""
    quick = [SimJob(f"j{k}", 0.0, 0.0, 1, queue="hi") for k in (*range(1, 10), *range(12, 19))]
    jobs = [
        SimJob("j0", 1.0, 0.0, 3, queue="hi"),
        *quick,
        SimJob("j10", 1.0, 0.0, 1, queue="mid"),
        SimJob("j11", 2.0, 0.0, 1, queue="lo"),
        SimJob("j19", 0.0, 3.0, 1, queue="hi"),
        SimJob("j20", 0.0, 2.0, 1, queue="hi", requested_time=1.0),
        SimJob("j21", 0.0, 3.0, 1, queue="hi"),
    ]
    case = Case(
        hosts=((1, "ok"),) * 5 + ((1, "closed"),),
        queues=(
            ("hi", 0, None, None, None, None),
            ("mid", 0, None, None, "conservative", None),
            ("lo", 10, None, None, None, None),
        ),
        default_picker=None,
        jobs=tuple(jobs),
        picker=None,
        single_queue=False,
        enforce_walltime=False,
        backfill="easy",
    )
    got = {r.job.id: r for r in three_ways(case).records}
    assert got["j10"].start == 2.0


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.sampled_from([0.0, 5.0, 5.0, 10.0, 20.0, np.inf])),
            st.tuples(st.just("drop"), st.integers(0, 30)),
            st.tuples(st.just("merge"), st.just(0.0)),
        ),
        max_size=40,
    ),
    at=st.sampled_from([0.0, 5.0, 7.0, 10.0, 30.0]),
)
def test_the_claims_stay_in_order_of_their_ends(steps: list[tuple[str, float]], at: float) -> None:
    """The running claims (xce.sim.planned._Claims) against a plain model: what is taken in
    at each merge (adds, then drops, since the last) comes out in order of the estimated
    ends, ties in order of the starts, as rows and as claims; ``due(at)`` is the claims
    ending by ``at``; ``earliest`` the first end; ``changes`` counts every add and drop."""
    claims = planned_module._Claims()
    model: list[tuple[float, int, int]] = []  # (end, order added, job), taken in
    added: list[tuple[float, int, int]] = []
    gone: list[int] = []
    running: dict[int, float] = {}
    changes = 0
    for k, (kind, value) in enumerate([*steps, ("merge", 0.0)]):
        if kind == "add":
            job = k
            hosts = np.array([k % 3, 3 + k % 2], dtype=np.intp)
            claims.add(job, value, hosts, np.array([1, k % 4 + 1], dtype=np.int64))
            added.append((value, k, job))
            running[job] = value
            changes += 1
        elif kind == "drop" and running:
            job = sorted(running)[int(value) % len(running)]
            claims.drop(job, running.pop(job))
            gone.append(job)
            changes += 1
        elif kind == "merge":
            claims.merged()
            model = sorted(model + added)
            model = [m for m in model if m[2] not in gone]
            added, gone = [], []
        assert claims.changes == changes
    ends = [end for end, _, _ in model]
    assert [(end, len(h)) for end, h, _, _ in claims.in_order()] == [(e, 2) for e in ends]
    assert [claim[0] for claim in claims.due(at)] == [e for e in ends if e <= at]
    assert claims.earliest() == (ends[0] if ends else np.inf)
    row_ends, row_hosts, row_slots = claims.rows()
    assert row_ends.tolist() == [e for e in ends for _ in range(2)]
    assert row_hosts.tolist() == [h for _, k, _ in model for h in (k % 3, 3 + k % 2)]
    assert row_slots.tolist() == [s for _, k, _ in model for s in (1.0, k % 4 + 1.0)]


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    spans=st.lists(
        st.tuples(
            st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 8.0]),
            st.sampled_from([0.0, 1.0, 2.0, 3.0, 6.0, np.inf]),
        ),
        max_size=12,
    ),
    runs=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, 7.0, 9.0]),
            st.sampled_from([0.0, 0.5, 1.0, 3.0, np.inf]),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_merged_rises_meet_a_run_as_the_spans_one_by_one(
    spans: list[tuple[float, float]], runs: list[tuple[float, float]]
) -> None:
    """The spans of rises a session keeps merged (xce.sim.planned._Spans: overlapping
    and touching spans joined, empty ones aside) meet a run ``[s, s + d)`` exactly when
    one of the spans as given does (``a < s + d and s < b``), one run at a time and
    many at once, after every span added."""
    kept = planned_module._Spans()
    given_so_far: list[tuple[float, float]] = []
    for a, b in spans:
        kept.add(a, b)
        given_so_far.append((a, b))
        starts = np.array([s for s, _ in runs])
        for d in {d for _, d in runs}:
            want = [any(x < s + d and s < y for x, y in given_so_far) for s in starts.tolist()]
            assert kept.touching(starts, d).tolist() == want
            assert [kept.meets(s, s + d) for s in starts.tolist()] == want
    assert bool(kept) == bool(spans)
