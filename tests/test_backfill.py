"""Backfill (EASY, conservative) and advance reservations in sessions and replays
(issue 12; docs/backfill.md).

Hand-computed tables first (each docstring shows the arithmetic), then advance
reservations, then ``none`` against today's sessions, then properties of small random
replays. Hosts are ``h0``, ``h1``, ... so a host's number is its index in allocations.
"""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from strategies import states
from xce.alloc import AllocOptions, Decision, Dispatched, JobAllocation, Pending, PendReason
from xce.cluster import ClusterState, state_from_dict
from xce.core.session import Session, SessionResult
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.model import SimJob

POLICIES = ("easy", "conservative")


def run(state: ClusterState, **kwargs: object) -> dict[str, Decision]:
    """One session's decisions by job id."""
    result = Session(state, **kwargs).run()  # type: ignore[arg-type]
    return {d.job: d for d in result.decisions}


def hosts(allocation: JobAllocation) -> list[int]:
    return sorted(c.host for c in allocation.claims)


def dispatched(d: Decision, *, backfilled: bool | None = None) -> list[int]:
    """The hosts of a dispatched decision (asserting it is one)."""
    assert isinstance(d, Dispatched), d
    if backfilled is not None:
        assert d.backfilled is backfilled, d
    return hosts(d.allocation)


def pending(d: Decision, reason: PendReason | None = None) -> Pending:
    assert isinstance(d, Pending), d
    if reason is not None:
        assert d.info.reason is reason, d.info
    return d


def planned(d: Decision) -> tuple[float, list[int]]:
    """The planned start and hosts of a pending decision (asserting it has a plan)."""
    p = pending(d)
    assert p.plan is not None, d
    return p.plan.start, hosts(p.plan.allocation)


def starts(result: SimResult) -> dict[str, float | None]:
    return {r.job.id: r.start for r in result.records}


# -------------------------------------------------------------- the running example
#
# 4 hosts of 1 slot at t=0. r1 holds h0 until 100, r2 holds h1 until 50 (estimates).
# big (4 tasks, est 10) fits nowhere before 100: the first job that cannot start.


def running_example(policy: str | None = None, **queue: object) -> ClusterBuilder:
    b = ClusterBuilder().hosts(4, slots=1).at(0)
    if queue:
        b.queue("normal", **queue)  # type: ignore[arg-type]
    b.running("r1", {"h0": 1}, requested_time=100, start_time=0)
    b.running("r2", {"h1": 1}, requested_time=50, start_time=0)
    b.job("big", 4, requested_time=10)
    b.job("short", 1, requested_time=100)
    b.job("long", 1, requested_time=200)
    b.job("two", 2, requested_time=40)
    if policy is not None:
        b.backfill(policy)
    return b


def test_easy_on_the_running_example() -> None:
    """issue 12 acceptance: a backfilled job never delays the reserved one (easy).

    Free now: h2, h3. big (4 tasks) pends; all 4 hosts are free at max(100, 50) = 100:
    shadow S = 100, planned on [h0..h3] for [100, 110), so nothing is spare at S.
    short (est 100): 0 + 100 = 100 <= S: backfilled, on h2 (first free host).
    long (est 200): fits now on h3 but 200 > S and no host is spare at S: RESERVED.
    two (2 tasks): only h3 free: NOT_ENOUGH_SLOTS; easy plans only the first job.
    big's plan is the one it gets alone: the backfilled short delays it by nothing.
    """
    got = run(running_example("easy").build())
    assert planned(got["big"]) == (100, [0, 1, 2, 3])
    assert dispatched(got["short"], backfilled=True) == [2]
    assert pending(got["long"], PendReason.RESERVED).plan is None
    assert pending(got["two"], PendReason.NOT_ENOUGH_SLOTS).plan is None
    b = ClusterBuilder().hosts(4, slots=1).at(0).backfill("easy")
    b.running("r1", {"h0": 1}, requested_time=100, start_time=0)
    b.running("r2", {"h1": 1}, requested_time=50, start_time=0)
    alone = run(b.job("big", 4, requested_time=10).build())
    assert planned(alone["big"]) == planned(got["big"])


def test_reserved_message_names_the_planned_job() -> None:
    """issue 12 acceptance: RESERVED's message names the planned job and its start.

    long (est 200) would hold h3 over [0, 200), past big's planned start 100.
    """
    msg = pending(run(running_example("easy").build())["long"], PendReason.RESERVED).info.message
    assert "job big" in msg
    assert "100" in msg


def test_conservative_on_the_running_example() -> None:
    """issue 12 acceptance: a backfilled job never delays any earlier job's planned start
    in the same plan (conservative).

    big: planned at 100 on [h0..h3] over [100, 110).
    short (est 100): [0, 100) on h2 ends by 100: starts now, backfilled.
    long (est 200): now on h3 it would hold [0, 200), over big's [100, 110): RESERVED;
      planned at 110, when big ends (all four hosts freed at 110: normal order, h0).
    two (2 tasks, est 40): h1 frees at 50, h3 is free; [50, 90) ends before big's 100:
      planned at 50 on [h1, h3].
    Each job's plan is the same as in a session of only it and the jobs before it: no
    later job moved an earlier one's planned start (or hosts).
    """
    state = running_example("conservative").build()
    got = run(state)
    assert planned(got["big"]) == (100, [0, 1, 2, 3])
    assert dispatched(got["short"], backfilled=True) == [2]
    assert planned(pending(got["long"], PendReason.RESERVED)) == (110, [0])
    assert planned(got["two"]) == (50, [1, 3])
    order = list(state.jobs)
    for k in range(1, len(order) + 1):
        prefix = {d.job: d for d in Session(state).run(order[:k]).decisions}
        for job in order[:k]:
            if isinstance(got[job.id], Pending):
                assert planned(prefix[job.id]) == planned(got[job.id]), (k, job.id)


def test_none_on_the_running_example_is_todays_fcfs() -> None:
    """Without backfill every job that fits starts, in order: short on h2, long on h3;
    nothing is planned or marked backfilled."""
    got = run(running_example("none").build())
    assert pending(got["big"], PendReason.NOT_ENOUGH_SLOTS).plan is None
    assert dispatched(got["short"], backfilled=False) == [2]
    assert dispatched(got["long"], backfilled=False) == [3]
    assert pending(got["two"], PendReason.NOT_ENOUGH_SLOTS).plan is None


# ------------------------------------------------------- replays with exact estimates
#
# 4 hosts of 1 slot; runtime == requested_time (the oracle's CLASSIC trace,
# tests/test_backfill_oracle.py).
CLASSIC = [  # id, submit, runtime (= estimate), tasks
    ("A", 0, 10, 3),
    ("B", 1, 5, 4),
    ("C", 2, 3, 1),
    ("D", 6, 20, 1),
    ("E", 6, 4, 1),
]


def classic_jobs() -> list[SimJob]:
    return [SimJob(i, s, r, t, requested_time=r) for i, s, r, t in CLASSIC]


def test_easy_replay_reserved_job_starts_by_its_reservation() -> None:
    """issue 12 acceptance: the reserved job never starts later than its reservation when
    estimates are exact (easy).

    t=0  A (3 tasks, 10 s) starts on h0-h2; h3 free.
    t=1  B (4 tasks) cannot start: all 4 hosts free at 10: reservation S = 10.
    t=2  C (1 task, 3 s): 2 + 3 = 5 <= 10: backfilled on h3, ends 5.
    t=6  D (20 s): 26 > 10 and nothing spare at S: waits. E (4 s): 6 + 4 = 10 <= 10:
         backfilled, ends 10.
    t=10 A and E end: B starts (by its reservation, 10), ends 15; D waits for B.
    t=15 D starts.
    """
    jobs = classic_jobs()
    result = Simulation(
        ClusterBuilder().hosts(4, slots=1).build(), jobs, SimOptions(backfill="easy")
    ).run()
    verify(result, jobs)
    assert starts(result) == {"A": 0, "B": 10, "C": 2, "D": 15, "E": 6}
    records = {r.job.id: r for r in result.records}
    assert records["B"].planned_start == 10
    assert records["B"].start is not None
    assert records["B"].start <= 10
    assert {r.job.id for r in result.records if r.backfilled} == {"C", "E"}


def test_conservative_replay_keeps_every_planned_start() -> None:
    """issue 12 acceptance: with exact estimates every job starts by its planned start
    (conservative).

    t=1  B planned at 10 (all hosts free when A ends), held over [10, 15).
    t=2  C [2, 5) on h3 ends before 10: starts (backfilled).
    t=6  D (20 s): [6, 26) meets B at 10; at 10 every host is B's; at 15: planned 15.
         E [6, 10) on h3: starts (backfilled).
    Starts equal the planned starts at submission: A 0, B 10, C 2, D 15, E 6.
    """
    jobs = classic_jobs()
    result = Simulation(
        ClusterBuilder().hosts(4, slots=1).build(), jobs, SimOptions(backfill="conservative")
    ).run()
    verify(result, jobs)
    assert starts(result) == {"A": 0, "B": 10, "C": 2, "D": 15, "E": 6}
    assert {r.job.id: r.planned_start for r in result.records} == starts(result)


# -------------------------------------------------------------- hosts of a plan


@pytest.mark.parametrize("policy", POLICIES)
def test_planned_hosts_prefer_those_freed_latest(policy: str) -> None:
    """issue 12 acceptance: the hosts of a planned placement prefer those freed latest.

    5 hosts: h0 free, h1 busy until 10, h2 and h3 until 30, h4 until 100. triple (3
    tasks, est 50): 2 hosts free from 10 (h0, h1), 4 from 30: planned at 30. Freed
    latest by 30: h2, h3 (30), then h1 (10), then h0 (free all along): [h1, h2, h3];
    the normal order would have taken [h0, h1, h2]. So h0 stays out of the plan, and
    one (1 task, est 1000) starts on it now, backfilled (easy: h0 is spare at the shadow
    time 30; conservative: nothing planned ever needs h0).
    """
    b = ClusterBuilder().hosts(5, slots=1).at(0).backfill(policy)
    for i, end in ((1, 10), (2, 30), (3, 30), (4, 100)):
        b.running(f"r{i}", {f"h{i}": 1}, requested_time=end, start_time=0)
    b.job("triple", 3, requested_time=50)
    b.job("one", 1, requested_time=1000)
    got = run(b.build())
    assert planned(got["triple"]) == (30, [1, 2, 3])
    assert dispatched(got["one"], backfilled=True) == [0]


def test_planned_hosts_take_latest_freed_leaving_the_rest_spare() -> None:
    """Easy's spare at the shadow time, on hosts: the plan takes the hosts freed latest,
    so the host free all along is spare and a job ending long after S may use it.

    h0, h1 busy until 100 (one job), h2 until 50, h3 free. big (3 tasks): at 50 only h2,
    h3 are free (2 < 3); at 100 all four: S = 100. Freed latest by 100: h0, h1 (100),
    then h2 (50), then h3 (free all along): planned on [h0, h1, h2]; h3 is spare at S.
    long (1 task, est 1000): 1000 > S but fits in the spare h3: starts, backfilled.
    """
    b = ClusterBuilder().hosts(4, slots=1).at(0).backfill("easy")
    b.running("r1", {"h0": 1, "h1": 1}, requested_time=100, start_time=0)
    b.running("r2", {"h2": 1}, requested_time=50, start_time=0)
    b.job("big", 3, requested_time=10)
    b.job("long", 1, requested_time=1000)
    got = run(b.build())
    assert planned(got["big"]) == (100, [0, 1, 2])
    assert dispatched(got["long"], backfilled=True) == [3]


# --------------------------------------------------------- estimates in planning


@pytest.mark.parametrize(
    ("requested", "queue", "backfills"),
    [
        pytest.param(None, {}, False, id="no-estimate"),
        pytest.param(None, {"default_runtime": 50}, True, id="queue-default-50"),
        pytest.param(None, {"default_runtime": 150}, False, id="queue-default-150"),
        pytest.param(None, {"max_runtime": 80}, True, id="queue-max-is-the-default"),
        pytest.param(1000, {"max_runtime": 100}, True, id="capped-by-queue-max"),
        pytest.param(100, {}, True, id="own-estimate-100"),
        pytest.param(101, {}, False, id="own-estimate-101"),
    ],
)
@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_without_estimate_never_backfills_ahead_of_a_reservation(
    policy: str, requested: float | None, queue: dict[str, float], backfills: bool
) -> None:
    """issue 12 acceptance: a job without an estimate (no requested_time, no queue
    default) never backfills ahead of a reservation.

    2 hosts, h0 busy until 100 (r1 in queue "other", estimate 100); big (2 tasks) is
    planned at 100 on both hosts. job (1 task) fits now on h1; it may start only if its
    estimate ends by 100: none (no end) never does; the queue's default_runtime, else
    max_runtime, stands in for a missing requested_time; max_runtime caps it.
    """
    b = ClusterBuilder().hosts(2, slots=1).at(0).backfill(policy)
    b.queue("normal", **queue)  # type: ignore[arg-type]
    b.queue("other")
    b.running("r1", {"h0": 1}, requested_time=100, start_time=0, queue="other")
    b.job("big", 2, requested_time=10)
    b.job("job", 1, requested_time=requested)
    got = run(b.build())
    assert planned(got["big"]) == (100, [0, 1])
    if backfills:
        assert dispatched(got["job"], backfilled=True) == [1]
    else:
        pending(got["job"], PendReason.RESERVED)


@pytest.mark.parametrize("shortcuts", [True, False])
def test_a_job_of_no_duration_is_planned_where_the_instant_has_room(shortcuts: bool) -> None:
    """A run of no duration (requested_time 0; a predictor's 0 s) is placed on what its
    start has. h1 and h2 are free from 50 until big's plan takes all three hosts at 100:
    zero (2 tasks, 0 s) is planned at 50, with the planner's exact screens on or off (the
    all-hosts screen once read a duration of 0 as for ever and passed 50 over, planning
    it at 200; found as fast_paths on and off disagreeing in a predicted replay)."""
    b = ClusterBuilder().hosts(3, slots=1).at(0).backfill("conservative").queue("normal")
    b.running("r1", {"h0": 1}, requested_time=100, start_time=0)
    b.running("r2", {"h1": 1, "h2": 1}, requested_time=50, start_time=0)
    b.job("big", 3, requested_time=100)
    b.job("zero", 2, requested_time=0)
    got = run(b.build(), options=AllocOptions(shortcuts=shortcuts))
    assert planned(got["big"]) == (100, [0, 1, 2])
    assert planned(got["zero"]) == (50, [1, 2])


@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_no_instant_has_room_for_takes_easys_one_offer(policy: str) -> None:
    """docs/backfill.md ("Which jobs are planned"): wide (3 tasks) fits only with the
    closed h2, so no instant has room for it: it pends with no plan. Under easy it was
    the job offered the queue's one reservation, so next (2 tasks, which fits once r1
    ends at 100) gets none; under conservative next is planned at 100."""
    b = ClusterBuilder().host("h0", 1).host("h1", 1).host("h2", 1, status="closed")
    b.at(0).backfill(policy).queue("normal")
    b.running("r1", {"h0": 1}, requested_time=100, start_time=0)
    b.job("wide", 3, requested_time=10)
    b.job("next", 2, requested_time=10)
    got = run(b.build())
    assert pending(got["wide"], PendReason.NOT_ENOUGH_SLOTS).plan is None
    if policy == "easy":
        assert pending(got["next"]).plan is None
    else:
        assert planned(got["next"]) == (100, [0, 1])


@pytest.mark.parametrize("policy", POLICIES)
def test_a_running_job_past_its_estimate_ends_now_but_keeps_its_hosts(policy: str) -> None:
    """issue 12 acceptance: a running job past its estimate counts as ending now for
    planning, but nothing starts on its hosts.

    now = 100; r1 started at 0 with estimate 50 on h0: past it, so planning frees h0 at
    100 (now). a (1 task, est 10) starts on h1, the one really free host. b (1 task,
    est 10): the books still hold h0 and a holds h1: it pends; it is planned (easy:
    the first that cannot start; conservative: every one) at 100 = now on h0, where
    r1 is assumed to end. Nothing is dispatched on h0.
    """
    b = ClusterBuilder().hosts(2, slots=1).at(100).backfill(policy)
    b.running("r1", {"h0": 1}, requested_time=50, start_time=0)
    b.job("a", 1, requested_time=10)
    b.job("b", 1, requested_time=10)
    got = run(b.build())
    assert dispatched(got["a"], backfilled=False) == [1]
    assert planned(got["b"]) == (100, [0])
    assert not any(0 in hosts(d.allocation) for d in got.values() if isinstance(d, Dispatched))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_planned_at_now_past_an_estimate_blocks_nobody_wrongly(policy: str) -> None:
    """The same overrun, wide: big (2 tasks, est 10) is planned at now = 100 on [h0, h1]
    (r1 assumed to end now) but cannot start (h0 is really held). small (1 task, est 5)
    fits now on h1, but over [100, 105) h1 is big's from 100: RESERVED, naming big."""
    b = ClusterBuilder().hosts(2, slots=1).at(100).backfill(policy)
    b.running("r1", {"h0": 1}, requested_time=50, start_time=0)
    b.job("big", 2, requested_time=10)
    b.job("small", 1, requested_time=5)
    got = run(b.build())
    assert planned(got["big"]) == (100, [0, 1])
    p = pending(got["small"], PendReason.RESERVED)
    assert "job big" in p.info.message
    if policy == "conservative":
        assert planned(p) == (110, [0])


# ------------------------------------------------------- where the policy is set


def test_per_queue_backfill_overrides_the_default() -> None:
    """issue 12 acceptance: a queue's ``backfill:`` overrides the state's default and
    the session's.

    The running example (see test_easy_on_the_running_example): under easy long pends
    RESERVED; under none it starts on h3.
    """
    easy_queue = run(running_example("none", backfill="easy").build())
    assert pending(easy_queue["long"], PendReason.RESERVED)
    assert planned(easy_queue["big"]) == (100, [0, 1, 2, 3])
    none_queue = run(running_example("easy", backfill="none").build())
    assert dispatched(none_queue["long"], backfilled=False) == [3]
    assert pending(none_queue["big"]).plan is None
    # the session's --backfill stands for queues that name none, not for this one
    overridden = run(running_example("none", backfill="none").build(), backfill="easy")
    assert dispatched(overridden["long"], backfilled=False) == [3]
    # and for those that name none, it beats the state's default
    by_session = run(running_example("none").build(), backfill="easy")
    assert pending(by_session["long"], PendReason.RESERVED)


@pytest.mark.parametrize("policy", POLICIES)
def test_strict_picker_with_backfill_does_not_block_the_queue(policy: str) -> None:
    """issue 12 acceptance: strict + easy (or conservative) does not block the queue:
    the plan, not the picker, decides who may pass big.

    strict alone: big pends, the three others QUEUE_BLOCKED behind it. With backfill
    the decisions are those of fcfs with the same policy: short is backfilled.
    """
    strict = run(running_example("none").picker("strict").build())
    assert pending(strict["big"], PendReason.NOT_ENOUGH_SLOTS)
    for job in ("short", "long", "two"):
        pending(strict[job], PendReason.QUEUE_BLOCKED)
    with_backfill = run(running_example(policy).picker("strict").build())
    assert with_backfill == run(running_example(policy).picker("fcfs").build())
    assert dispatched(with_backfill["short"], backfilled=True) == [2]


# ------------------------------------------------------- advance reservations
#
# 4 hosts of 1 slot at t=0; reservation "maint" of h0, h1 over [50, 150).


def reserved(now: float = 0, **admits: list[str]) -> ClusterBuilder:
    b = ClusterBuilder().hosts(4, slots=1).at(now)
    return b.reservation("maint", 50, 150, hosts=["h0", "h1"], **admits)  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["none", *POLICIES])
@pytest.mark.parametrize(
    ("requested", "now", "expected"),
    [
        pytest.param(100, 0, [2], id="overlaps-the-window"),
        pytest.param(None, 0, [2], id="no-estimate-overlaps"),
        pytest.param(50, 0, [0], id="ends-as-it-opens"),
        pytest.param(51, 0, [2], id="ends-just-inside"),
        pytest.param(5, 60, [2], id="inside-the-window"),
        pytest.param(5, 145, [2], id="ends-after-the-window"),
        pytest.param(1000, 150, [0], id="after-the-window"),
        pytest.param(1000, 200, [0], id="long-after-the-window"),
    ],
)
def test_other_jobs_never_use_reserved_hosts_in_the_window(
    policy: str, requested: float | None, now: float, expected: list[int]
) -> None:
    """issue 12 acceptance: reservations are honoured: a job whose estimated run
    [now, now + est) overlaps [50, 150) cannot start on h0, h1 (it goes to h2, the
    first other host); one that ends by 50, or starts at 150 or later, uses h0."""
    b = reserved(now).backfill(policy)
    got = run(b.job("j", 1, requested_time=requested).build())
    assert dispatched(got["j"]) == expected


@pytest.mark.parametrize("policy", ["none", *POLICIES])
def test_a_job_that_fits_only_on_reserved_hosts_pends_reserved(policy: str) -> None:
    """issue 12 acceptance: a job whose estimate would overlap the window cannot start
    there; it can start on the reserved hosts if it ends before the window opens.

    wide (3 tasks, est 100): [0, 100) overlaps [50, 150); outside the reservation only h2,
    h3: RESERVED, naming the reservation; under a policy that plans, planned at 150
    (the window's end; all four hosts free, normal order). quick (3 tasks, est 50)
    ends by 50: starts on h0-h2.
    """
    got = run(reserved().backfill(policy).job("wide", 3, requested_time=100).build())
    p = pending(got["wide"], PendReason.RESERVED)
    assert "maint" in p.info.message
    if policy != "none":
        assert planned(p) == (150, [0, 1, 2])
    else:
        assert p.plan is None
    quick = run(reserved().backfill(policy).job("quick", 3, requested_time=50).build())
    assert dispatched(quick["quick"]) == [0, 1, 2]


def test_a_reserved_message_names_every_reservation_in_the_way() -> None:
    """Two reservations keep h0, h1 (maint) and h2 (course) over [50, 150): a 3-task job
    estimated 100 fits now only on them; its RESERVED message names both (it named
    maint alone)."""
    b = reserved().reservation("course", 50, 150, hosts=["h2"])
    p = pending(run(b.job("wide", 3, requested_time=100).build())["wide"], PendReason.RESERVED)
    assert "advance reservations maint from" in p.info.message
    assert ", course from" in p.info.message


def test_reservation_holds_against_a_plan_too() -> None:
    """Planned jobs keep out of the window as well: conservative, hosts h2, h3 busy until
    200. a (2 tasks, est 60): at 0, only h0, h1 are free and [0, 60) overlaps the window:
    pends RESERVED; candidates 50, 150: at 150 h0, h1 are free for [150, 210): planned
    at 150 on [h0, h1]."""
    b = reserved().backfill("conservative")
    b.running("r", {"h2": 1, "h3": 1}, requested_time=200, start_time=0)
    got = run(b.job("a", 2, requested_time=60).build())
    assert planned(pending(got["a"], PendReason.RESERVED)) == (150, [0, 1])


@pytest.mark.parametrize(
    ("now", "requested", "reason", "in_message"),
    [
        pytest.param(
            0, 10, PendReason.RESERVATION, "begin at t=50 s (in 50 s)", id="before-the-window"
        ),
        pytest.param(
            60,
            100,
            PendReason.RESERVATION,
            "maint at t=150 s (in 1 min 30 s)",
            id="would-pass-the-end",
        ),
        pytest.param(150, 10, PendReason.RESERVATION, "maint has ended", id="after-the-window"),
    ],
)
@pytest.mark.parametrize("policy", ["none", *POLICIES])
def test_a_job_naming_a_reservation_waits_for_its_window(
    policy: str, now: float, requested: float, reason: PendReason, in_message: str
) -> None:
    """issue 12 acceptance: a job naming a reservation runs only inside the window: before
    50 it pends RESERVATION saying when it begins (50); at 60 an estimate of 100 would
    run to 160 > 150; at 150 the reservation has ended. Free hosts h2, h3 never help."""
    b = reserved(now).backfill(policy)
    got = run(b.job("mine", 1, requested_time=requested, reservation="maint").build())
    p = pending(got["mine"], reason)
    assert in_message in p.info.message, p.info.message


@pytest.mark.parametrize("policy", ["none", *POLICIES])
def test_a_job_naming_a_reservation_starts_inside_its_window(policy: str) -> None:
    """issue 12 acceptance: inside the window (now = 60) a job naming "maint" starts on
    h0 (est 10: [60, 70) inside [50, 150))."""
    b = reserved(60).backfill(policy)
    got = run(b.job("mine", 1, requested_time=10, reservation="maint").build())
    assert dispatched(got["mine"]) == [0]


@pytest.mark.parametrize("policy", ["none", *POLICIES])
def test_a_job_naming_a_reservation_runs_only_on_its_hosts(policy: str) -> None:
    """issue 12 acceptance: a job naming a reservation runs only on its hosts.

    2 hosts, "maint" holds h1 over [50, 150); now = 60: mine (1 task, est 10) must start
    on h1, not on h0 (the first free host in the normal order). With h1 taken (a running
    job), mine pends although h0 is free.
    """
    b = ClusterBuilder().hosts(2, slots=1).at(60).backfill(policy)
    b.reservation("maint", 50, 150, hosts=["h1"])
    got = run(b.job("mine", 1, requested_time=10, reservation="maint").build())
    assert dispatched(got["mine"]) == [1]
    b = ClusterBuilder().hosts(2, slots=1).at(60).backfill(policy)
    b.reservation("maint", 50, 150, hosts=["h1"])
    b.running("r", {"h1": 1}, requested_time=1000, start_time=0)
    got = run(b.job("mine", 1, requested_time=10, reservation="maint").build())
    pending(got["mine"])


@pytest.mark.parametrize("policy", ["none", *POLICIES, "slurm"])
def test_a_job_naming_a_reservation_never_fits_in_more_than_its_hosts(policy: str) -> None:
    """A 3-task job naming "maint" (h0, h1 of 1 slot) pends inside the window, though the
    cluster has 4 free hosts: NEVER_RUNNABLE, saying its reservation can never hold it;
    its breakdown counts h2, h3 as RESERVED and its message the 2 hosts of maint only
    (it was NOT_ENOUGH_SLOTS over "the 4 eligible hosts"); unplanned; and so with the
    shortcuts off too. Two tasks fit maint: with h1 held they pend NOT_ENOUGH_SLOTS
    (h0 free, h1 full, h2 and h3 RESERVED). A select only h3 matches: never runnable
    either, because of the reservation (cause RESERVED)."""
    for options in (AllocOptions(), AllocOptions(shortcuts=False, cache=False)):
        b = reserved(60).backfill(policy)
        got = run(b.job("wide", 3, requested_time=10, reservation="maint").build(), options=options)
        p = pending(got["wide"], PendReason.NEVER_RUNNABLE)
        assert "can never run in its reservation maint" in p.info.message
        assert "the 2 eligible host(s) have 2 free" in p.info.message
        assert p.info.cause is PendReason.NOT_ENOUGH_SLOTS
        assert p.info.hosts == {"RESERVED": 2, "NOT_ENOUGH_SLOTS": 2}
        assert p.plan is None
        b = reserved(60).backfill(policy).running("r", {"h1": 1}, requested_time=20, start_time=55)
        got = run(b.job("two", 2, requested_time=10, reservation="maint").build(), options=options)
        p = pending(got["two"], PendReason.NOT_ENOUGH_SLOTS)
        assert "the 2 eligible host(s) have 1 free" in p.info.message
        assert p.info.hosts == {"RESERVED": 2, "NOT_ENOUGH_SLOTS": 2}
        b = reserved(10).backfill(policy)  # before the window: never runnable there either
        got = run(b.job("wide", 3, requested_time=10, reservation="maint").build(), options=options)
        p = pending(got["wide"], PendReason.NEVER_RUNNABLE)
        assert "can never run in its reservation maint" in p.info.message
        b = ClusterBuilder().hosts(3, slots=1).host("h3", 1, fast=True).at(60).backfill(policy)
        b.reservation("maint", 50, 150, hosts=["h0", "h1"])
        b.job("h3", 1, requested_time=10, reservation="maint", resreq="select[fast]")
        p = pending(run(b.build(), options=options)["h3"], PendReason.NEVER_RUNNABLE)
        assert p.info.cause is PendReason.RESERVED
        assert "closed to it by advance reservations" in p.info.message


@pytest.mark.parametrize(
    ("admits", "who", "expected"),
    [
        pytest.param({"users": ["alice"]}, {"user": "alice"}, [0], id="user-listed"),
        pytest.param({"users": ["alice"]}, {"user": "bob"}, [2], id="user-not-listed"),
        pytest.param({"queues": ["fast"]}, {"queue": "fast"}, [0], id="queue-listed"),
        pytest.param({"queues": ["fast"]}, {"queue": "normal"}, [2], id="queue-not-listed"),
        pytest.param({"projects": ["p1"]}, {"project": "p1"}, [0], id="project-listed"),
        pytest.param(
            {"users": ["alice"], "queues": ["fast"]},
            {"user": "alice", "queue": "normal"},
            [2],
            id="every-list-must-match",
        ),
        pytest.param(
            {"users": ["alice"], "queues": ["fast"]},
            {"user": "alice", "queue": "fast"},
            [0],
            id="both-lists-match",
        ),
    ],
)
def test_consumer_lists_admit_other_jobs(
    admits: dict[str, list[str]], who: dict[str, str], expected: list[int]
) -> None:
    """issue 12 acceptance: a reservation's users/queues/projects lists admit jobs that do
    not name it. j (1 task, est 100: [0, 100) overlaps [50, 150)) goes to h0 when it is
    admitted, else to h2."""
    got = run(reserved(**admits).job("j", 1, requested_time=100, **who).build())  # type: ignore[arg-type]
    assert dispatched(got["j"]) == expected


# ------------------------------------------------------- none is today, byte for byte


def test_none_without_reservations_never_plans() -> None:
    """issue 12 acceptance: ``none`` is today's behaviour: a session with backfill none
    (default, state or session) and no reservation makes no plan over future time."""
    assert not Session(running_example().build()).plans()
    assert not Session(running_example("none").build()).plans()
    assert not Session(running_example().build(), backfill="none").plans()
    assert not Session(running_example(backfill="none").build(), backfill="none").plans()
    assert Session(running_example("easy").build()).plans()
    assert Session(running_example(backfill="conservative").build()).plans()
    assert Session(running_example().build(), backfill="easy").plans()
    assert Session(running_example().reservation("m", 50, 150, hosts=["h0"]).build()).plans()
    result = Session(running_example("none").build()).run()
    assert result.stats.planned == result.stats.backfilled == 0
    assert not any(isinstance(d, Pending) and d.plan is not None for d in result.decisions)


@pytest.mark.parametrize("policy", ["none", *POLICIES])
def test_a_far_reservation_plans_no_gated_job_under_none(policy: str) -> None:
    """A reservation far in the future makes the session plan (for jobs naming it), but
    under none a job at a gate (a begin time) gets no plan, so nothing is kept for it:
    j3 starts on a (it pended RESERVED "reserved for job j1", as if j1's begin-time plan
    were backfill's). A policy that plans does plan j1 at its begin time and keep a."""
    b = ClusterBuilder().hosts(2, slots=4).at(1000).backfill(policy)
    b.reservation("far", 900_000, 900_100, hosts=["h1"])
    b.running("r1", {"h1": 4}, requested_time=3600, start_time=500)
    b.job("j1", 4, requested_time=600, submit_time=900)
    b.job("j3", 4, requested_time=3600, submit_time=950)
    doc = b.to_dict()
    doc["jobs"][0]["begin_time"] = 2000
    got = run(state_from_dict(doc, "<gate>"))
    if policy == "none":
        assert pending(got["j1"], PendReason.BEGIN_TIME).plan is None
        assert dispatched(got["j3"]) == [0]
    else:
        assert planned(got["j1"])[0] == 2000
        pending(got["j3"], PendReason.RESERVED)


def _comparable(result: SessionResult) -> tuple[object, ...]:
    s = result.stats
    return (
        result.decisions,
        repr(result.decisions),
        (s.jobs, s.dispatched, s.pending, dict(s.pending_by_reason), s.planned, s.backfilled),
    )


@given(state=states(), picker=st.sampled_from(("fcfs", "strict", "fairshare")))
@settings(max_examples=40, deadline=None)
def test_none_through_the_planner_is_byte_identical(state: ClusterState, picker: str) -> None:
    """issue 12 acceptance: ``none`` is byte-identical to today: forcing the planner on
    (``Session.plans`` true) with policy none gives exactly the decisions of a session
    without it (the planner's "view equals the books" path)."""
    today = Session(state, picker=picker).run()
    with mock.patch.object(Session, "plans", return_value=True):
        forced = Session(state, picker=picker).run()
    assert _comparable(forced) == _comparable(today)


# ------------------------------------------------------- properties of one session

NOW = 100.0


@st.composite
def planning_states(draw: st.DrawFn, reservations: bool) -> ClusterState:
    """1-5 hosts of 1-3 slots at now = 100; running jobs (started 0-100, estimate none or
    1-150, so some are past it) that fit; up to 10 plain pending jobs (estimate none or
    1-100); with ``reservations``, up to two advance reservations that admit nobody."""
    caps = draw(st.lists(st.integers(1, 3), min_size=1, max_size=5))
    b = ClusterBuilder().at(NOW)
    for i, slots in enumerate(caps):
        b.host(f"h{i}", slots=slots)
    free = list(caps)
    for r in range(draw(st.integers(0, 4))):
        on: dict[str, int] = {}
        for i in draw(st.sets(st.integers(0, len(caps) - 1), min_size=1, max_size=2)):
            if free[i]:
                take = draw(st.integers(1, free[i]))
                free[i] -= take
                on[f"h{i}"] = take
        if on:
            b.running(
                f"r{r}",
                on,
                start_time=float(draw(st.integers(0, 100))),
                requested_time=draw(st.none() | st.integers(1, 150).map(float)),
            )
    if reservations:
        for k in range(draw(st.integers(0, 2))):
            start = float(draw(st.integers(90, 200)))
            chosen = draw(st.sets(st.integers(0, len(caps) - 1), min_size=1))
            b.reservation(
                f"m{k}",
                start,
                start + draw(st.integers(1, 100)),
                hosts=[f"h{i}" for i in sorted(chosen)],
            )
    for j in range(draw(st.integers(1, 10))):
        b.job(
            f"j{j}",
            draw(st.integers(1, sum(caps))),
            requested_time=draw(st.none() | st.integers(1, 100).map(float)),
        )
    return b.build()


Interval = tuple[float, float, int]  # [start, end) holding slots


def held_over_time(
    state: ClusterState, decisions: dict[str, Decision]
) -> dict[int, list[Interval]]:
    """Per host: what running jobs (to their estimated end, "now" when past it), the jobs
    started now (to now + estimate) and the planned jobs hold over time, computed from
    the requests alone (no planner code)."""
    inf = float("inf")
    index = {name: i for i, name in enumerate(state.hosts.names)}
    estimate = {j.id: j.requested_time for j in state.jobs}
    out: dict[int, list[Interval]] = {}
    for r in state.running:
        end = inf if r.requested_time is None else max(r.start_time + r.requested_time, NOW)
        for a in r.alloc:
            out.setdefault(index[a.host], []).append((r.start_time, end, a.slots))
    for job, d in decisions.items():
        est = estimate[job]
        span = inf if est is None else est
        if isinstance(d, Dispatched):
            for c in d.allocation.claims:
                out.setdefault(c.host, []).append((NOW, NOW + span, c.slots))
        elif d.plan is not None:
            for c in d.plan.allocation.claims:
                out.setdefault(c.host, []).append((d.plan.start, d.plan.start + span, c.slots))
    return out


def overbooked(state: ClusterState, held: dict[int, list[Interval]]) -> list[tuple[int, float]]:
    """(host, instant) where the intervals hold more slots than the host has."""
    caps = [int(s) for s in state.hosts.capacity["slots"]]
    bad = []
    for host, spans in held.items():
        for t, _, _ in spans:
            if t < NOW:
                continue
            use = sum(k for s, e, k in spans if s <= t < e)
            if use > caps[host]:
                bad.append((host, t))
    return bad


@pytest.mark.parametrize("policy", POLICIES)
@given(state=planning_states(reservations=True))
@settings(max_examples=30, deadline=None)
def test_what_starts_now_leaves_every_plan_its_placement(policy: str, state: ClusterState) -> None:
    """issue 12 acceptance: a backfilled job never delays the reserved one (easy) or any
    earlier job's planned start in the same plan (conservative); reservations are
    honoured.

    After one session, at every instant from now on, each host holds no more slots than
    it has when it carries the running jobs (until their estimated ends), the jobs just
    started (until now + their estimate) and every planned job (over its planned run)
    at once: so every planned placement stays free for its job. Easy plans at most one
    job per queue. No job started or planned overlaps an advance reservation's window
    on its hosts (these reservations admit nobody).
    """
    decisions = run(state, backfill=policy)
    plans = [d for d in decisions.values() if isinstance(d, Pending) and d.plan is not None]
    if policy == "easy":
        assert len(plans) <= 1
    held = held_over_time(state, decisions)
    assert overbooked(state, held) == []
    inf = float("inf")
    estimate = {j.id: j.requested_time for j in state.jobs}
    for job, d in decisions.items():
        span = inf if estimate[job] is None else estimate[job]
        if isinstance(d, Dispatched):
            start, on = NOW, hosts(d.allocation)
        elif d.plan is not None:
            start, on = d.plan.start, hosts(d.plan.allocation)
        else:
            continue
        for r in state.reservations:
            if start < r.end and r.start < start + span:  # type: ignore[operator]
                assert not set(on) & set(r.hosts), (job, r.name, start, on)


@pytest.mark.parametrize("policy", POLICIES)
@given(state=planning_states(reservations=True))
@settings(max_examples=15, deadline=None)
def test_threaded_sessions_plan_alike(policy: str, state: ClusterState) -> None:
    """A threaded session (picker and allocator threads) gives the synchronous session's
    decisions, plans and backfilled marks included."""
    session = Session(state, backfill=policy)
    assert session.run(threads=True).decisions == session.run().decisions


# ------------------------------------------------------- properties of replays


@st.composite
def workloads(
    draw: st.DrawFn, exact: bool, max_hosts: int = 4, max_jobs: int = 12
) -> tuple[ClusterState, list[SimJob]]:
    """1-4 hosts of 1, 2 or 8 slots and up to 12 plain jobs (submit 0-30, runtime 1-30,
    1 up to every slot tasks); ``exact``: requested_time == runtime, else a mix of none,
    exact, over and under."""
    n = draw(st.integers(1, max_hosts))
    slots = draw(st.sampled_from((1, 2, 8)))
    state = ClusterBuilder().hosts(n, slots=slots).build()
    jobs = []
    for i in range(draw(st.integers(1, max_jobs))):
        runtime = float(draw(st.integers(1, 30)))
        if exact:
            requested: float | None = runtime
        else:
            requested = draw(st.sampled_from((None, runtime, runtime + 7, max(runtime - 5, 1.0))))
        jobs.append(
            SimJob(
                f"j{i}",
                float(draw(st.integers(0, 30))),
                runtime,
                draw(st.integers(1, n * slots)),
                requested_time=requested,
            )
        )
    return state, jobs


@pytest.mark.parametrize("policy", POLICIES)
@given(case=workloads(exact=False))
@settings(max_examples=25, deadline=None)
def test_replays_never_over_allocate_and_end_every_job_once(
    policy: str, case: tuple[ClusterState, list[SimJob]]
) -> None:
    """issue 12 acceptance: no over-allocation at any instant of a replay, and every job
    ends exactly once (``verify``), under easy and conservative, estimates or not."""
    state, jobs = case
    result = Simulation(state, jobs, SimOptions(backfill=policy)).run()
    verify(result, jobs)
    assert all(r.start is not None for r in result.records)


def replay_with_plans(
    state: ClusterState, jobs: list[SimJob], policy: str
) -> tuple[SimResult, dict[str, list[float]]]:
    """The replay, and every planned start each job was given, in any session (a spy on
    the session's planned decisions)."""
    given_plans: dict[str, list[float]] = {}
    decide = Session._decide_planned

    def spy(self: Session, pick: object, planner: object) -> Decision:
        d = decide(self, pick, planner)  # type: ignore[arg-type]
        if isinstance(d, Pending) and d.plan is not None:
            given_plans.setdefault(d.job, []).append(d.plan.start)
        return d

    with mock.patch.object(Session, "_decide_planned", spy):
        result = Simulation(state, jobs, SimOptions(backfill=policy)).run()
    return result, given_plans


def check_plans_held(state: ClusterState, jobs: list[SimJob], policy: str) -> None:
    result, given_plans = replay_with_plans(state, jobs, policy)
    verify(result, jobs)
    records = {r.job.id: r for r in result.records}
    late = [
        (r.job.id, r.planned_start, r.start)
        for r in result.records
        if r.planned_start is not None and (r.start is None or r.start > r.planned_start)
    ]
    assert late == []
    broken = [
        (job, plans, records[job].start)
        for job, plans in given_plans.items()
        if records[job].start is None or records[job].start > min(plans)  # type: ignore[operator]
    ]
    assert broken == []


@pytest.mark.parametrize("policy", POLICIES)
@given(case=workloads(exact=True))
@settings(max_examples=25, deadline=None)
def test_plans_hold_when_estimates_are_exact(
    policy: str, case: tuple[ClusterState, list[SimJob]]
) -> None:
    """issue 12 acceptance: the plan's promises hold when estimates are exact: with
    runtime == requested_time, a job given a planned start (easy: the reserved job;
    conservative: every job) starts no later than it: the planned start its record keeps
    (its first session's) and every one it was given in any later session."""
    state, jobs = case
    check_plans_held(state, jobs, policy)


# A conservative replay whose promises break with exact estimates (found by the
# thorough property below; shrunk by hand). 7 hosts of 1 slot.
BROKEN_PROMISE = [  # id, submit, runtime (= estimate), tasks
    ("j24", 2, 13, 1),
    ("j35", 2, 15, 6),
    ("j26", 3, 1, 3),
    ("j19", 4, 1, 6),
    ("j3", 5, 3, 1),
    ("j6", 5, 2, 1),
    ("j21", 5, 1, 3),
]


def broken_promise_jobs() -> list[SimJob]:
    return [SimJob(i, s, r, t, requested_time=r) for i, s, r, t in BROKEN_PROMISE]


def test_conservative_promise_survives_replanning() -> None:
    """issue 12 acceptance: the plan's promises hold when estimates are exact
    (conservative), on a replay where host placements move between sessions.

    7 hosts of 1 slot. t=2: j24 on h0 [2, 15), j35 on h1-h6 [2, 17).
    t=5 plans (order j26, j19, j3, j6, j21): j26 (3 tasks) 17 on h1-h3 [17, 18);
      j19 (6) 18 on h1-h6 [18, 19); j3 (1, 3 s) 15 on h0 [15, 18); j6 (1, 2 s) 18 on h0
      [18, 20); j21 (3, 1 s) 17 on h4-h6 [17, 18). All consistent: every promise can
      be kept with everything ending on time.
    t=17: j26 starts on h1-h3; j21's promise is to start now (h4-h6 are free until j19
      at 18 in the t=5 plan). Re-planned from scratch by "freed latest" alone, j19 would
      move to h0-h5 (h0 now rises at 18 and comes before h6, free all along), j6 to 17
      on h6, and j21 would find only h4, h5 for [17, 18) and start at 19. Each job's
      last planned hosts are tried first (the session's plan hints), so j19 keeps
      h1-h6 and j21 starts at 17 on h4-h6, as promised.
    """
    jobs = broken_promise_jobs()
    state = ClusterBuilder().hosts(7, slots=1).build()
    result = Simulation(state, jobs, SimOptions(backfill="conservative")).run()
    verify(result, jobs)
    records = {r.job.id: r for r in result.records}
    assert records["j21"].planned_start == 17
    assert records["j21"].start == 17


@pytest.mark.slow
@given(case=workloads(exact=True, max_hosts=8, max_jobs=30))
@settings(max_examples=100, deadline=None)
def test_easy_plans_hold_when_estimates_are_exact_thorough(
    case: tuple[ClusterState, list[SimJob]],
) -> None:
    """The reserved job's promise (easy), on more and larger replays (slow suite)."""
    state, jobs = case
    check_plans_held(state, jobs, "easy")


@pytest.mark.slow
@given(case=workloads(exact=True, max_hosts=8, max_jobs=30))
@example(case=(ClusterBuilder().hosts(7, slots=1).build(), broken_promise_jobs()))
@settings(max_examples=100, deadline=None)
def test_conservative_plans_hold_when_estimates_are_exact_thorough(
    case: tuple[ClusterState, list[SimJob]],
) -> None:
    """Every job's promise (conservative), on more and larger replays (slow suite; the
    explicit example is the replay of test_conservative_promise_survives_replanning)."""
    state, jobs = case
    check_plans_held(state, jobs, "conservative")


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
@given(case=workloads(exact=False, max_hosts=8, max_jobs=30))
@settings(max_examples=100, deadline=None)
def test_replays_never_over_allocate_thorough(
    policy: str, case: tuple[ClusterState, list[SimJob]]
) -> None:
    """No over-allocation, every job ends once, on more and larger replays (slow suite)."""
    state, jobs = case
    result = Simulation(state, jobs, SimOptions(backfill=policy)).run()
    verify(result, jobs)


# ------------------------------------------- the planner's shortcuts change nothing


@st.composite
def resource_states(draw: st.DrawFn) -> ClusterState:
    """Hosts with memory and a GPU tag, a licence pool, running jobs holding slots,
    memory and licences with mixed estimates, and pending jobs asking for memory per
    task, licences, GPU hosts, several terms or none of these: what the planner's
    screens (slots, per-task memory, licences over a run; a job no instant can fit)
    and its start-now probe (and its answer kept for jobs alike) look at."""
    b = ClusterBuilder().at(NOW)
    n = draw(st.integers(2, 5))
    for i in range(n):
        mem = float(draw(st.sampled_from((4, 8))))
        b.host(f"h{i}", draw(st.sampled_from((2, 4))), mem=mem, gpu=i == 0 or draw(st.booleans()))
    licences = draw(st.integers(1, 3))
    b.shared("lic", float(licences))
    busy = draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True))
    for r, h in enumerate(busy):
        b.running(
            f"r{r}",
            {f"h{h}": 1},
            rusage={"mem": 2.0},
            shared={"lic": 1.0} if r < licences and draw(st.booleans()) else None,
            start_time=float(draw(st.integers(0, 100))),
            requested_time=draw(st.none() | st.integers(1, 150).map(float)),
        )
    shapes = (
        "",
        "rusage[mem=2]",
        "rusage[mem=3]",
        "rusage[lic=1]",
        "select[gpu] rusage[mem=1]",
        "1*{rusage[lic=1]} + 2*{rusage[mem=1]}",
        "span[ptile=2]",
    )
    for j in range(draw(st.integers(1, 8))):
        resreq = draw(st.sampled_from(shapes))
        tasks = None if resreq.startswith("1*{") else draw(st.integers(1, 6))
        b.job(
            f"j{j}",
            tasks,
            resreq=resreq,
            requested_time=draw(st.none() | st.integers(1, 100).map(float)),
        )
    return b.build(check_resreq=None)


def _decided(state: ClusterState, policy: str, shortcuts: bool) -> tuple[Decision, ...]:
    from xce.alloc import AllocOptions

    return (
        Session(state, backfill=policy, options=AllocOptions(shortcuts=shortcuts)).run().decisions
    )


@pytest.mark.parametrize("policy", POLICIES)
@given(state=resource_states())
@settings(max_examples=40, deadline=None)
def test_the_planner_shortcuts_change_no_decision(policy: str, state: ClusterState) -> None:
    """issue 12 (every shortcut behind one switch): with ``AllocOptions(shortcuts=False)``
    the planner tries every candidate instant, places every job starting now on its view
    and asks no screen; the decisions, plans and backfilled marks are the same."""
    assert _decided(state, policy, False) == _decided(state, policy, True)


def test_a_known_fit_is_forgotten_when_a_job_starts() -> None:
    """issue 12 (the probe's answer kept for jobs alike): job a (two tasks on one host)
    fits the books now but pends RESERVED (w is planned on every host before a would
    end); c then starts, one task on each free host; b, like a, no longer fits the
    books (three slots free, none two on one host): it pends for want of a host, not
    RESERVED, with the shortcut on or off."""
    from xce.alloc import AllocOptions

    b = ClusterBuilder().at(0.0)
    b.host("h0", 2).host("h1", 2).host("h2", 2).host("h3", 2)
    b.running("r0", {"h0": 2}, start_time=0.0, requested_time=10.0)
    b.job("w", 8, requested_time=100.0)
    b.job("a", 2, resreq="span[hosts=1]", requested_time=50.0)
    b.job("c", 3, resreq="span[ptile=1]", requested_time=5.0)
    b.job("b", 2, resreq="span[hosts=1]", requested_time=50.0)
    state = b.build()
    runs = []
    for shortcuts in (True, False):
        options = AllocOptions(shortcuts=shortcuts)
        decided = Session(state, backfill="conservative", options=options).run().decisions
        got = {d.job: d for d in decided}
        assert pending(got["a"], PendReason.RESERVED)
        assert isinstance(got["c"], Dispatched)
        assert got["c"].backfilled
        assert isinstance(got["b"], Pending)
        assert got["b"].info.reason is not PendReason.RESERVED, got["b"].info
        runs.append(decided)
    assert runs[0] == runs[1]


def test_random_cases_reach_every_planner_shortcut() -> None:
    """The property above is not vacuous: over 150 derandomized states, each shortcut
    of the planner (candidates screened out by slots or amounts over the run, a view
    short of slots, a job no instant can ever fit, a job wider than the free slots, one
    that does not fit the books, one too wide for the plan's slots over its run, whether
    a job of the same requirement and owner fits the unchanged books, a started job's
    hold kept out of a profile not yet read) actually spares work somewhere."""
    from hypothesis import Phase

    import xce.core.session as session_module
    from xce.alloc.planner import Planner

    made: list[Planner] = []

    class Recording(Planner):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    @settings(max_examples=150, derandomize=True, database=None, phases=[Phase.generate])
    @given(state=resource_states(), policy=st.sampled_from(POLICIES))
    def collect(state: ClusterState, policy: str) -> None:
        _decided(state, policy, True)

    with mock.patch.object(session_module, "Planner", Recording):
        collect()
    reached: dict[str, int] = {}
    for planner in made:
        for key, count in planner.reached.items():
            reached[key] = reached.get(key, 0) + count
    expected = {
        "candidates screened out",
        "views short of slots",
        "never fits",
        "no view tried",
        "reserved by totals",
        "too wide for what is free",
        "fit now known",
        "hold deferred",
    }
    assert {k for k, v in reached.items() if v} >= expected, reached


@pytest.mark.parametrize("policy", POLICIES)
@given(state=resource_states())
@settings(max_examples=30, deadline=None)
def test_plans_no_one_reads_change_no_decision(policy: str, state: ClusterState) -> None:
    """issue 12 (the simulator asks for the planned starts of a session's new jobs only):
    ``Session.run(plans_for=...)`` skips the plans of other jobs once no later job could
    start now; every decision and backfilled mark is the same, and so is the plan of
    every job asked for."""
    asked = {j.id for j in state.jobs[: len(state.jobs) // 2]}  # the later ones can skip
    full = Session(state, backfill=policy).run().decisions
    some = Session(state, backfill=policy).run(plans_for=asked).decisions

    def without_plan(d: Decision) -> Decision:
        return d if isinstance(d, Dispatched) or d.job in asked else replace(d, plan=None)

    assert [without_plan(d) for d in some] == [without_plan(d) for d in full]
