"""A planned session repeats the last one's decisions where they provably repeat
(xce.core.repeat; docs/backfill.md "Sessions that repeat the last plan"): an exact
shortcut. Sequences of sessions driven through the core (submissions, time passing,
jobs finishing, the dispatched jobs started) decide alike with the shortcuts on and off,
and the random cases do repeat plans."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import xce.core.session as session_module
from builders import ClusterBuilder
from xce.alloc import AllocOptions, Decision, Dispatched, PendReason
from xce.alloc.planner import Planner
from xce.cluster import ClusterState, PendingJob
from xce.core import JobFinished, JobStarted, JobSubmitted, SchedulerCore

POLICIES = ("conservative", "easy")
PICKERS = ("fcfs", "strict", "fairshare")
SHAPES = ("", "span[ptile=1]", "rusage[mem=3]", "select[mem>=3] rusage[mem=1]")

# a step: time passed since the last session, jobs submitted (tasks, resreq, estimate,
# and optionally the reservation it names), whether the oldest running job finishes;
# then a session
Step = tuple[float, list[tuple[Any, ...]], bool]


@contextmanager
def recorded_planners() -> Iterator[list[Planner]]:
    """Every Planner the sessions make in the block (to read what shortcuts reached)."""
    made: list[Planner] = []

    class Recording(Planner):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    with mock.patch.object(session_module, "Planner", Recording):
        yield made


def repeated(planners: list[Planner]) -> int:
    return sum(p.reached["plan repeated"] for p in planners)


def key(d: Decision) -> tuple[Any, ...]:
    """What a decision says (not how it was found: the cache's mark is left out)."""
    if isinstance(d, Dispatched):
        cols = d.allocation.columns()
        return ("run", d.job, cols.hosts.tolist(), cols.slots.tolist(), d.backfilled)
    plan = d.plan
    planned = None
    if plan is not None:
        cols = plan.allocation.columns()
        planned = (plan.start, plan.end, cols.hosts.tolist(), cols.slots.tolist())
    return ("pend", d.job, d.info.reason, d.info.message, planned)


def drive(
    state: ClusterState, steps: list[Step], policy: str, shortcuts: bool, picker: str = "fcfs"
) -> list[Any]:
    """Sessions over ``steps`` (see Step), every dispatched job started at its session."""
    options = AllocOptions(shortcuts=shortcuts)
    core = SchedulerCore(state, options=options, backfill=policy, picker=picker)
    now, out, made = state.now or 0.0, [], 0
    running = [r.id for r in state.running]
    for dt, submitted, finish in steps:
        now += dt
        for tasks, resreq, estimate, *named in submitted:
            reservation = named[0] if named else None
            job = PendingJob(
                f"n{made}", "u", "normal", "default", tasks, tasks, resreq, now, None, 0,
                requested_time=estimate, reservation=reservation,
            )  # fmt: skip
            made += 1
            core.apply(JobSubmitted(job))
        if finish and running:
            core.apply(JobFinished(running.pop(0), now))
        result = core.run_session(now=now)
        out.append([key(d) for d in result.decisions])
        for d in result.dispatched:
            core.apply(JobStarted(d.job, d.allocation, now))
            running.append(d.job)
    return out


@st.composite
def scenarios(draw: st.DrawFn, reservations: bool = False) -> tuple[ClusterState, list[Step]]:
    """A few hosts, running jobs with estimates (some past, some none), a queue of jobs
    of mixed shapes (one whose select reads availability), then sessions after small
    steps of time (often not past any estimated end), submissions and finishes. With
    ``reservations``, one or two advance reservations (opening or closing between
    sessions, some admitting user u) and jobs naming one."""
    b = ClusterBuilder().at(0.0)
    n = draw(st.integers(2, 5))
    slots = draw(st.sampled_from((1, 2, 4)))
    for i in range(n):
        b.host(f"h{i}", slots, mem=8.0)
    named: list[str | None] = [None]
    windows = st.tuples(st.sampled_from((0.0, 2.0, 25.0, 160.0)), st.sampled_from((30.0, 300.0)))
    some = st.lists(windows, min_size=1, max_size=2) if reservations else st.just([])
    for k, (start, length) in enumerate(draw(some)):
        hosts = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        users = ["u"] if draw(st.booleans()) else None
        b.reservation(f"r{k}", start, start + length, hosts=[f"h{h}" for h in hosts], users=users)
        named.append(f"r{k}")
    for r, h in enumerate(draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True))):
        b.running(
            f"r{r}",
            {f"h{h}": draw(st.integers(1, slots))},
            rusage={"mem": 1.0},
            start_time=-float(draw(st.integers(0, 50))),
            requested_time=draw(st.none() | st.integers(1, 400).map(float)),
        )
    estimates = st.none() | st.integers(1, 300).map(float)
    fields = [st.integers(1, n * slots), st.sampled_from(SHAPES), estimates]
    if reservations:  # the reservation the job names, or none
        fields.append(st.sampled_from(named + [None] * 3))
    jobs = st.tuples(*fields)
    for j, (tasks, resreq, estimate, *own) in enumerate(
        draw(st.lists(jobs, min_size=1, max_size=7))
    ):
        user = "u" if reservations else None  # (u: whom some reservations admit)
        named_one = own[0] if own else None
        b.job(
            f"j{j}", tasks, user=user, resreq=resreq, requested_time=estimate, reservation=named_one
        )
    step = st.tuples(
        st.sampled_from((0.0, 1.0, 3.0, 20.0, 150.0)),
        st.lists(jobs, max_size=2),
        st.booleans(),
    )
    return b.build(), draw(st.lists(step, min_size=2, max_size=6))


@given(case=scenarios(), policy=st.sampled_from(POLICIES), picker=st.sampled_from(PICKERS))
@settings(max_examples=150, deadline=None)
def test_repeated_sessions_decide_as_fresh_ones(
    case: tuple[ClusterState, list[Step]], policy: str, picker: str
) -> None:
    """Every session of a driven sequence decides the same with the shortcuts (the
    repeat among them) on and off, under every builtin picker: dispatches, pend reasons
    and messages, plans."""
    state, steps = case
    fresh = drive(state, steps, policy, False, picker)
    assert drive(state, steps, policy, True, picker) == fresh


@given(case=scenarios(reservations=True), policy=st.sampled_from(POLICIES))
@settings(max_examples=150, deadline=None)
def test_repeated_sessions_beside_reservations_decide_as_fresh_ones(
    case: tuple[ClusterState, list[Step]], policy: str
) -> None:
    """As above, beside advance reservations (their bounds end a repeat: next_change)
    and jobs naming one (decided on their reservation's view: they stop a repeat)."""
    state, steps = case
    fresh = drive(state, steps, policy, False)
    assert drive(state, steps, policy, True) == fresh


def test_random_cases_repeat_plans() -> None:
    """The property above is not vacuous: over derandomized cases, sessions do repeat
    the last one's plans."""

    @settings(max_examples=60, derandomize=True, database=None, phases=[Phase.generate])
    @given(case=scenarios(), policy=st.sampled_from(POLICIES))
    def collect(case: tuple[ClusterState, list[Step]], policy: str) -> None:
        drive(*case, policy, True)

    with recorded_planners() as made:
        collect()
    assert repeated(made) > 0
    assert sum(p.reached["plan repeated from now"] for p in made) > 0


def test_random_reserved_cases_repeat_plans() -> None:
    """The reservations' property is not vacuous: sessions beside a reservation repeat
    the last one's plans."""

    @settings(max_examples=60, derandomize=True, database=None, phases=[Phase.generate])
    @given(case=scenarios(reservations=True), policy=st.sampled_from(POLICIES))
    def collect(case: tuple[ClusterState, list[Step]], policy: str) -> None:
        drive(*case, policy, True)

    with recorded_planners() as made:
        collect()
    assert repeated([p for p in made if p.reservations]) > 0


def queue_behind_two_ends() -> ClusterState:
    """h0 and h1 busy until 100 and 200 (estimated); j1 needs both (planned at 200),
    j2 one host for 500 s (planned after j1)."""
    b = ClusterBuilder().at(0.0)
    b.host("h0", 1).host("h1", 1)
    b.running("r0", {"h0": 1}, start_time=0.0, requested_time=100.0)
    b.running("r1", {"h1": 1}, start_time=0.0, requested_time=200.0)
    b.job("j1", 2, requested_time=50.0)
    b.job("j2", 1, requested_time=500.0)
    return b.build()


def plans_of(decisions: list[Any]) -> dict[str, Any]:
    return {k[1]: k[4] for k in decisions if k[0] == "pend"}


def test_a_submission_before_the_next_end_repeats_the_plan() -> None:
    """A job submitted at 10 (before any estimated end): j1 and j2 are decided as at 5,
    without planning them again; the newcomer is planned after them. (At 5 they are
    planned again: their first plans were made without a hint of hosts.)"""
    steps: list[Step] = [(0.0, [], False), (5.0, [], False), (5.0, [(1, "", 30.0)], False)]
    with recorded_planners() as made:
        got = drive(queue_behind_two_ends(), steps, "conservative", True)
    assert [p.reached["plan repeated"] for p in made] == [0, 0, 2]
    assert plans_of(got[2])["j1"][:2] == (200.0, 250.0)
    assert plans_of(got[2])["j2"] == plans_of(got[1])["j2"]
    assert "n0" in plans_of(got[2])
    assert got == drive(queue_behind_two_ends(), steps, "conservative", False)


def test_no_repeat_past_an_estimated_end_or_after_a_finish() -> None:
    """Time passing r0's estimated end (100), or a job finishing, changes what the plan
    rests on: every job is planned again."""
    for steps in (
        [(0.0, [], False), (150.0, [(1, "", 30.0)], False)],
        [(0.0, [], False), (10.0, [], True)],
    ):
        with recorded_planners() as made:
            got = drive(queue_behind_two_ends(), steps, "conservative", True)
        assert repeated(made) == 0, steps
        assert got == drive(queue_behind_two_ends(), steps, "conservative", False)


def test_a_job_planned_now_stops_the_repeat() -> None:
    """r0 is past its estimate: the plan frees h0 now, the books do not, so j2 is planned
    to start now and pends; a session later it would be planned at that later now. The
    repeat stops at it, and later jobs are planned again."""
    b = ClusterBuilder().at(0.0)
    b.host("h0", 1).host("h1", 1)
    b.running("r0", {"h0": 1}, start_time=-100.0, requested_time=10.0)
    b.running("r1", {"h1": 1}, start_time=0.0, requested_time=200.0)
    b.job("j2", 1, requested_time=500.0)
    b.job("j3", 2, requested_time=50.0)
    state = b.build()
    steps: list[Step] = [(0.0, [], False), (5.0, [], False)]
    with recorded_planners() as made:
        got = drive(state, steps, "conservative", True)
    first = plans_of(got[0])
    assert first["j2"][0] == 0.0
    assert plans_of(got[1])["j2"][0] == 5.0
    assert repeated(made) == 0
    assert got == drive(state, steps, "conservative", False)


def test_a_repeated_reserved_pend_names_its_own_end() -> None:
    """A job that fits now but not beside the plan pends RESERVED; repeated later, its
    message is made for the later session (it names the plan's first job only while
    that one starts before this job would end)."""
    b = ClusterBuilder().at(0.0)
    b.host("h0", 1).host("h1", 1)
    b.running("r1", {"h1": 1}, start_time=0.0, requested_time=100.0)
    b.job("wide", 2, requested_time=50.0)  # planned at 100 on both hosts
    b.job("long", 1, requested_time=200.0)  # fits h0 now, would hold it past 100
    state = b.build()
    steps: list[Step] = [(0.0, [], False), (5.0, [], False), (5.0, [], False)]
    with recorded_planners() as made:
        got = drive(state, steps, "conservative", True)
    assert repeated(made) >= 1
    reasons = {k[1]: k[2:4] for k in got[2] if k[0] == "pend"}
    assert reasons["long"][0] is PendReason.RESERVED
    assert got == drive(state, steps, "conservative", False)


def test_a_job_without_estimate_planned_now_repeats_from_now() -> None:
    """As above, but j2 has no estimate: planned now, it holds h0 for ever from now,
    which a session later is the same from then on; it repeats with its start moved to
    that session's time, and so does j3 behind it."""
    b = ClusterBuilder().at(0.0)
    b.host("h0", 1).host("h1", 1)
    b.running("r0", {"h0": 1}, start_time=-100.0, requested_time=10.0)
    b.running("r1", {"h1": 1}, start_time=0.0, requested_time=200.0)
    b.job("j2", 1)
    b.job("j3", 1, requested_time=50.0)
    state = b.build()
    steps: list[Step] = [(0.0, [], False), (5.0, [], False), (5.0, [], False)]
    with recorded_planners() as made:
        got = drive(state, steps, "conservative", True)
    assert [plans_of(g)["j2"][:2] for g in got] == [
        (0.0, math.inf),
        (5.0, math.inf),
        (10.0, math.inf),
    ]
    assert made[2].reached["plan repeated from now"] == 1
    assert made[2].reached["plan repeated"] == 2
    assert got == drive(state, steps, "conservative", False)


def reserved_until_fifty() -> ClusterState:
    """h0 busy until 100 (estimated); h1 in a maintenance window [20, 50); j1 needs both
    hosts (planned at 100), j2 one host for 30 s (its run would meet the window until
    the window closes)."""
    b = ClusterBuilder().at(0.0)
    b.host("h0", 1).host("h1", 1)
    b.running("r0", {"h0": 1}, start_time=0.0, requested_time=100.0)
    b.reservation("maint", 20.0, 50.0, hosts=["h1"])
    b.job("j1", 2, requested_time=50.0)
    b.job("j2", 1, requested_time=30.0)
    return b.build()


def test_a_reservation_bound_between_sessions_stops_the_repeat() -> None:
    """The window [20, 50) keeps j2 off h1 at 0, 5 and 25, and those sessions repeat
    (no estimated end or window bound between them but 20, which the session at 25 is
    past: it plans afresh). At 55 the window has closed: j2 starts on h1, where a repeat
    of the session at 25 would have left it planned at 50, in the past."""
    steps: list[Step] = [(0.0, [], False), (5.0, [], False), (20.0, [], False)]
    steps += [(5.0, [], False), (25.0, [], False)]
    with recorded_planners() as made:
        got = drive(reserved_until_fifty(), steps, "conservative", True)
    assert [p.reached["plan repeated"] for p in made] == [0, 0, 0, 2, 0]
    assert [k[:2] for k in got[4]] == [("pend", "j1"), ("run", "j2")]
    assert got == drive(reserved_until_fifty(), steps, "conservative", False)
