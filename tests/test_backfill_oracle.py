"""Tests of the independent backfill oracle (tests/backfill_oracle.py, issue 12).

Hand-computed tables first (each docstring shows the arithmetic), then properties over
random small traces, then the seeded synthetic trace generator used by the later
differential test against the engine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backfill_oracle import POLICIES, Job, earliest_start, simulate, synthetic_trace


def starts(jobs: list[Job], processors: int, policy: str) -> dict[int | str, object]:
    return {k: v.start for k, v in sorted(simulate(jobs, processors, policy).items())}


# ---------------------------------------------------------------------------- tables

# 4 processors.
CLASSIC = [
    Job("A", 0, 10, 10, 3),
    Job("B", 1, 5, 5, 4),
    Job("C", 2, 3, 3, 1),
    Job("D", 6, 20, 20, 1),
    Job("E", 6, 4, 4, 1),
]


def test_classic_easy() -> None:
    """EASY on 4 processors.

    t=0  A(3p, est 10) starts; free 1.
    t=1  B(4p) does not fit: head. Running: A ends 10 -> free 4 at 10: shadow S=10,
         extra = 4 - 4 = 0.
    t=2  C(1p, est 3): fits (free 1), 2+3=5 <= 10 -> backfilled, ends 5.
    t=5  C ends. B still head, S=10.
    t=6  D(1p, est 20): fits (free 1), 6+20=26 > 10, 1 > extra 0 -> not backfilled
         (it would delay B). E(1p, est 4): 6+4=10 <= 10 -> backfilled ("by" S is
         inclusive), ends 10.
    t=10 A and E end: free 4; B starts (ends 15); D does not fit (free 0), head, S=15.
    t=15 B ends: D starts.
    """
    got = simulate(CLASSIC, 4, "easy")
    assert {k: v.start for k, v in got.items()} == {"A": 0, "B": 10, "C": 2, "D": 15, "E": 6}
    assert {k for k, v in got.items() if v.backfilled} == {"C", "E"}
    # one entry per pass; the repeat passes at 2 and 6 (after a backfill) repeat S=10
    assert sorted(set(got["B"].reservations)) == [(1, 10), (2, 10), (5, 10), (6, 10)]
    # planned start at submission: B got S=10; C and E started at once; D was not head.
    assert {k: v.planned_at_submit for k, v in got.items()} == {
        "A": 0,
        "B": 10,
        "C": 2,
        "D": None,
        "E": 6,
    }
    assert set(got["D"].reservations) == {(10, 15)}


def test_classic_strict() -> None:
    """Strict FIFO on the same trace: nothing passes B.

    A 0..10; B waits for 4 free: 10..15; C, D, E wait behind B and start at 15
    (1+1+1 <= 4). Start times are non-decreasing in submit order.
    """
    got = simulate(CLASSIC, 4, "fcfs_strict")
    assert {k: v.start for k, v in got.items()} == {"A": 0, "B": 10, "C": 15, "D": 15, "E": 15}
    assert not any(v.backfilled for v in got.values())
    assert {k: v.planned_at_submit for k, v in got.items()} == {
        "A": 0,
        "B": None,
        "C": None,
        "D": None,
        "E": None,
    }


def test_classic_conservative() -> None:
    """Conservative on the same trace gives EASY's starts.

    t=1  profile: 1 free on [1,10), 4 from 10. B(4p,10) placed at 10 -> [10,15).
    t=2  profile: 1 on [2,10), 0 on [10,15), 4 from 15. C(1p,3) fits [2,5): starts.
    t=6  profile: 1 on [6,10), 0 on [10,15), 4 from 15. D(1p,20): [6,26) meets 0 at 10;
         10 -> 0; 15 -> fits: planned 15. E(1p,4): [6,10) has 1: starts.
    """
    got = simulate(CLASSIC, 4, "conservative")
    assert {k: v.start for k, v in got.items()} == {"A": 0, "B": 10, "C": 2, "D": 15, "E": 6}
    assert {k: v.planned_at_submit for k, v in got.items()} == {
        "A": 0,
        "B": 10,
        "C": 2,
        "D": 15,
        "E": 6,
    }


def test_easy_extra_processors() -> None:
    """The "extra" rule: a long job backfills into what the head leaves spare at S.

    8 processors. t=0 A(4p, est 10) starts; free 4.
    t=1 B(6p) head: free at 10 = 8, S=10, extra = 8 - 6 = 2.
    t=2 C(2p, est 100): 102 > 10 but 2 <= extra 2 -> backfilled; extra 0, free 2.
        D(1p, est 100): fits now (free 2) but 102 > 10 and 1 > extra 0 -> waits.
        E(1p, est 5): 2+5=7 <= 10 -> backfilled (does not use extra); free 0.
    t=10 A ends: free 8-2=6 (E ended at 7); B(6p) starts, ends 20; D head.
    t=20 B ends: free 6; D starts.
    """
    jobs = [
        Job("A", 0, 10, 10, 4),
        Job("B", 1, 10, 10, 6),
        Job("C", 2, 100, 100, 2),
        Job("D", 2, 100, 100, 1),
        Job("E", 2, 5, 5, 1),
    ]
    assert starts(jobs, 8, "easy") == {"A": 0, "B": 10, "C": 2, "D": 20, "E": 2}
    # conservative: C fits [2,102) (2 free on [10,20) under B); D gets 20; E fits [2,7).
    assert starts(jobs, 8, "conservative") == {"A": 0, "B": 10, "C": 2, "D": 20, "E": 2}
    assert starts(jobs, 8, "fcfs_strict") == {"A": 0, "B": 10, "C": 10, "D": 20, "E": 20}


# 6 processors.
DIFFER = [
    Job("A", 0, 10, 10, 4),
    Job("B", 1, 10, 10, 4),
    Job("C", 1, 10, 10, 6),
    Job("D", 2, 100, 100, 2),
]


def test_easy_delays_second_waiting_job() -> None:
    """EASY protects only the head: D delays C (the second waiting job).

    6 processors. t=0 A(4p,10) starts; free 2.
    t=1 B(4p) head: S=10, extra = 6 - 4 = 2. C(6p) does not fit now.
    t=2 D(2p, est 100): 102 > 10, 2 <= extra -> backfilled, runs [2,102).
    t=10 A ends: free 4; B starts [10,20). C head: free 0 until 20, 4 until 102, S=102.
    t=102 D ends: C starts.
    """
    assert starts(DIFFER, 6, "easy") == {"A": 0, "B": 10, "C": 102, "D": 2}


def test_conservative_does_not_delay_second_waiting_job() -> None:
    """Conservative gives C a place too, and D may not take it.

    t=1 profile 2 free on [1,10), 6 from 10. B(4p,10) -> 10, holds [10,20).
        C(6p,10): 2 on [1,20), 6 from 20 -> 20, holds [20,30).
    t=2 D(2p,100): at 2 [2,102) meets 0 at [20,30); 10 likewise; 20 -> 0; 30 -> fits.
        D planned 30. Starts: C at 20 (as promised), D at 30.
    """
    got = simulate(DIFFER, 6, "conservative")
    assert {k: v.start for k, v in got.items()} == {"A": 0, "B": 10, "C": 20, "D": 30}
    assert {k: v.planned_at_submit for k, v in got.items()} == {
        "A": 0,
        "B": 10,
        "C": 20,
        "D": 30,
    }
    assert starts(DIFFER, 6, "fcfs_strict") == {"A": 0, "B": 10, "C": 20, "D": 30}


def test_job_without_estimate_holds_for_ever() -> None:
    """A has no estimate: planning assumes it never ends.

    4 processors. t=0 A(2p, no estimate, runs 50) starts; free 2.
    t=1 B(4p, est 10): the profile is 2 for ever: no shadow (None), unknown plan.
    t=2 C(1p, est 1000, runs 1000): nothing to protect -> starts (easy and
        conservative: C fits [2,1002) in a profile of 2).
    t=50 A ends: free 3 < 4. B now has a real shadow: C ends 1002.
    t=1002 B starts.
    """
    jobs = [Job("A", 0, 50, None, 2), Job("B", 1, 10, 10, 4), Job("C", 2, 1000, 1000, 1)]
    for policy in ("easy", "conservative"):
        got = simulate(jobs, 4, policy)
        assert {k: v.start for k, v in got.items()} == {"A": 0, "B": 1002, "C": 2}, policy
        assert got["B"].planned_at_submit is None
        assert got["B"].reservations[0] == (1, None)
        assert (50, 1002) in got["B"].reservations
    assert starts(jobs, 4, "fcfs_strict") == {"A": 0, "B": 50, "C": 60}


def test_job_without_estimate_never_backfills_before_shadow() -> None:
    """C has no estimate: it never ends "by" the shadow time, and extra is 0.

    4 processors. A(2p,10) 0..10. t=1 B(4p) head, S=10, extra 0.
    t=2 C(1p, no estimate): fits now but may not start. B 10..20, then C at 20.
    """
    jobs = [Job("A", 0, 10, 10, 2), Job("B", 1, 10, 10, 4), Job("C", 2, 3, None, 1)]
    assert starts(jobs, 4, "easy") == {"A": 0, "B": 10, "C": 20}
    assert starts(jobs, 4, "conservative") == {"A": 0, "B": 10, "C": 20}


def test_running_past_estimate_ends_now() -> None:
    """A overruns its estimate (est 5, runs 20): planning assumes it ends "now".

    4 processors. t=1 B(4p) head: A's estimated end 5 -> S=5.
    t=6 C(1p, est 3): A is past its estimate, so its end is taken as 6: S=6.
        6+3 > 6 and extra = 4 - 4 = 0 -> C waits (its processor is free, though).
    t=20 A ends: B starts [20,30); C at 30.
    """
    jobs = [Job("A", 0, 20, 5, 2), Job("B", 1, 10, 10, 4), Job("C", 6, 3, 3, 1)]
    got = simulate(jobs, 4, "easy")
    assert {k: v.start for k, v in got.items()} == {"A": 0, "B": 20, "C": 30}
    assert got["B"].reservations == [(1, 5), (6, 6)]


def test_conservative_promise_can_break_when_a_job_ends_early() -> None:
    """The plan is made afresh each session in queue order, so an early end can let an
    earlier job move up into a later job's promised slot (why the promise property
    below needs exact estimates).

    2 processors. t=0 A(1p, est 7, runs 4) and C(1p, est 4) start.
    t=2 D(2p, est 10): 2 free from 7 -> planned 7.
    t=3 B(1p, est 3): 0 free on [3,4), 1 on [4,7), 0 on [7,17) (D) -> planned 4.
    t=4 A ends early, C ends: fresh plan, D first: 2 free now -> D starts (est to 14,
        runs to 10); B: 0 free until 14 -> planned 14.
    t=10 D ends: B starts at 10, later than its promised 4.
    """
    jobs = [
        Job("A", 0, 4, 7, 1),
        Job("B", 3, 1, 3, 1),
        Job("C", 0, 4, 4, 1),
        Job("D", 2, 6, 10, 2),
    ]
    got = simulate(jobs, 2, "conservative")
    assert {k: v.start for k, v in got.items()} == {"A": 0, "B": 10, "C": 0, "D": 4}
    assert got["B"].planned_at_submit == 4
    assert got["D"].planned_at_submit == 7


def test_ends_before_submissions_at_same_time() -> None:
    """At t=10 A ends and B is submitted: the end is seen first, so B starts at 10."""
    jobs = [Job("A", 0, 10, 10, 2), Job("B", 10, 5, 5, 2)]
    for policy in POLICIES:
        assert starts(jobs, 2, policy) == {"A": 0, "B": 10}


def test_earliest_start() -> None:
    """Profile: 1 free on [0,10), 0 on [10,15), 4 from 15."""
    profile = [(0, 1), (10, 0), (15, 4)]
    assert earliest_start(profile, 1, 10) == 0  # [0,10) has 1
    assert earliest_start(profile, 1, 11) == 15  # [0,11) meets 0 at 10
    assert earliest_start(profile, 4, float("inf")) == 15
    assert earliest_start([(0, 2)], 3, 1) is None


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        simulate([Job(1, 0, 1, 1, 5)], 4, "easy")
    with pytest.raises(ValueError):
        simulate([Job(1, 0, 0, 1, 1)], 4, "easy")
    with pytest.raises(ValueError):
        simulate([Job(1, 0, 1, 1, 1)], 4, "backfill")


def test_oracle_imports_no_xce() -> None:
    source = (Path(__file__).parent / "backfill_oracle.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "xce" for a in node.names)
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] != "xce"


# ---------------------------------------------------------------------------- properties


@st.composite
def traces(draw: st.DrawFn, *, exact: bool = False, estimates: bool = True) -> tuple:
    processors = draw(st.integers(1, 6))
    n = draw(st.integers(1, 8))
    jobs = []
    for i in range(n):
        requested = draw(st.integers(1, 15))
        runtime = requested if exact else draw(st.integers(1, requested))
        est = requested if estimates or draw(st.booleans()) else None
        jobs.append(
            Job(i, draw(st.integers(0, 20)), runtime, est, draw(st.integers(1, processors)))
        )
    return jobs, processors


def check_replay(jobs: list[Job], processors: int, policy: str) -> dict:
    got = simulate(jobs, processors, policy)
    assert sorted(got) == sorted(j.id for j in jobs)  # each job starts exactly once
    by_id = {j.id: j for j in jobs}
    for k, o in got.items():
        assert o.start >= by_id[k].submit
        assert o.end == o.start + by_id[k].runtime
    for o in got.values():  # usage only rises at a start: check every start instant
        used = sum(by_id[k].procs for k, p in got.items() if p.start <= o.start < p.end)
        assert used <= processors
    return got


@given(traces(estimates=False), st.sampled_from(POLICIES))
def test_replay_is_sound(trace: tuple, policy: str) -> None:
    """No over-allocation; every job starts once, not before submit, runs its runtime."""
    check_replay(*trace, policy)


@given(traces())
def test_strict_starts_in_order(trace: tuple) -> None:
    """fcfs_strict: a job starts only when every earlier job has started, so starts are
    non-decreasing in queue order (submit, then input order); nothing is backfilled."""
    jobs, processors = trace
    got = check_replay(jobs, processors, "fcfs_strict")
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))
    seq = [got[jobs[i].id].start for i in order]
    assert seq == sorted(seq)
    assert not any(o.backfilled for o in got.values())


@given(traces(exact=True))
def test_easy_reservation_kept_when_estimates_exact(trace: tuple) -> None:
    """EASY: with runtime == estimate, the head starts no later than any shadow time it
    was ever given, and a job that starts at once was planned at its submit."""
    jobs, processors = trace
    got = check_replay(jobs, processors, "easy")
    for o in got.values():
        for _, shadow in o.reservations:
            assert shadow is not None
            assert o.start <= shadow
        if o.planned_at_submit is not None:
            assert o.start <= o.planned_at_submit


@given(traces())
def test_easy_reservation_kept_when_runtimes_within_estimates(trace: tuple) -> None:
    """EASY with runtime <= estimate: the head still starts no later than any shadow
    time it was given. Running jobs end by their estimates and backfilled jobs either
    end by S or use only the spare at S, so the free count at S never drops below the
    head's need, and a later shadow is never later than an earlier one."""
    jobs, processors = trace
    got = check_replay(jobs, processors, "easy")
    for o in got.values():
        assert all(o.start <= s for _, s in o.reservations if s is not None)


@given(traces(exact=True))
def test_conservative_promise_kept_when_estimates_exact(trace: tuple) -> None:
    """Conservative: with runtime == estimate every job starts exactly at its planned
    start at submission (so never later): the running jobs end as planned and later
    arrivals are placed after it in the order, so each fresh plan places it again at
    the same time."""
    jobs, processors = trace
    got = check_replay(jobs, processors, "conservative")
    for o in got.values():
        assert o.planned_at_submit is not None
        assert o.start == o.planned_at_submit


@given(traces(estimates=False))
def test_whole_machine_jobs_leave_nothing_to_backfill(trace: tuple) -> None:
    """When every job asks all processors no job can pass another: the three agree."""
    jobs, processors = trace
    jobs = [Job(j.id, j.submit, j.runtime, j.requested_time, processors) for j in jobs]
    results = [starts(jobs, processors, p) for p in POLICIES]
    assert results[0] == results[1] == results[2]


# ---------------------------------------------------------------------------- synthetic


@pytest.mark.parametrize(("processors", "host_size"), [(16, 1), (32, 8)])
def test_synthetic_trace(processors: int, host_size: int) -> None:
    trace = synthetic_trace(7, 200, processors, host_size=host_size)
    assert trace == synthetic_trace(7, 200, processors, host_size=host_size)
    assert trace != synthetic_trace(8, 200, processors, host_size=host_size)
    assert [j.id for j in trace] == list(range(1, 201))
    assert [j.submit for j in trace] == sorted(j.submit for j in trace)
    for j in trace:
        assert j.requested_time is not None
        assert 1 <= j.runtime <= j.requested_time
        assert j.procs % host_size == 0
        assert host_size <= j.procs <= processors
    assert any(j.runtime < j.requested_time for j in trace)  # type: ignore[operator]
    assert len({j.procs for j in trace}) > 1
    exact = synthetic_trace(7, 50, processors, host_size=host_size, exact=True)
    assert all(j.runtime == j.requested_time for j in exact)
    for policy in POLICIES:
        check_replay(trace, processors, policy)


def test_synthetic_trace_backfills() -> None:
    """On a synthetic trace EASY really backfills, and differs from strict FIFO."""
    trace = synthetic_trace(1, 200, 32, host_size=8)
    easy = simulate(trace, 32, "easy")
    assert any(o.backfilled for o in easy.values())
    assert starts(trace, 32, "easy") != starts(trace, 32, "fcfs_strict")


def test_synthetic_trace_no_estimates() -> None:
    trace = synthetic_trace(3, 100, 8, no_estimate_fraction=0.3)
    assert any(j.requested_time is None for j in trace)
    for policy in POLICIES:
        check_replay(trace, 8, policy)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_synthetic_traces_slow(seed: int) -> None:
    """Bigger traces: soundness, and the exact-estimate promises, on N x 1 and N x 8."""
    for processors, host_size in [(64, 1), (128, 8)]:
        trace = synthetic_trace(seed, 400, processors, host_size=host_size, exact=True)
        for policy in POLICIES:
            check_replay(trace, processors, policy)
        for o in simulate(trace, processors, "conservative").values():
            assert o.start == o.planned_at_submit
        for o in simulate(trace, processors, "easy").values():
            assert all(o.start <= s for _, s in o.reservations if s is not None)
