"""The ``slurm`` backfill policy (xce.backfill.slurm*): Slurm 22.05's sched/backfill rules
one by one on hand-made tables and states, each expected start worked out in the test's
docstring, then properties over random states, then the committed real-Slurm captures.

Host bit sets: bit 0 is the state's first host, bit 1 the second, ...
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from xce.alloc import Allocator, Dispatched, Pending, PendReason
from xce.backfill import SlurmBackfill, SlurmPlanner, default_backfills
from xce.backfill.slurm_select import Ending, Shape, choose_nodes, will_run
from xce.backfill.slurm_slots import NodeSpace
from xce.cluster import ClusterState, state_from_dict
from xce.core.session import Session, job_request

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "slurm" / "local-22.05.8-site-v0.0.38"
XCE = Path(sys.executable).parent / "xce"

# --- the slot table -------------------------------------------------------------------


def test_table_starts_as_one_slot_on_the_resolution_grid() -> None:
    """now=1000, R=60, window 600: [960, 1560) with every node free."""
    assert NodeSpace(1000, 60, 600, 0b11).table() == [(960, 1560, 0b11)]


@pytest.mark.parametrize(
    ("reservations", "table"),
    [
        # one reservation splits the table in three; nothing merges (all differ)
        ([(1020, 1200, 0b01)], [(960, 1020, 0b11), (1020, 1200, 0b10), (1200, 1560, 0b11)]),
        # a second, adjacent, on the same node: the two equal slots merge
        (
            [(1020, 1200, 0b01), (1200, 1320, 0b01)],
            [(960, 1020, 0b11), (1020, 1320, 0b10), (1320, 1560, 0b11)],
        ),
        # the third fills the gap between two: of the two pairs now equal, only the first
        # (from the slot before its start) merges, as Slurm merges at most one
        (
            [(1020, 1080, 0b01), (1140, 1200, 0b01), (1080, 1140, 0b01)],
            [(960, 1020, 0b11), (1020, 1140, 0b10), (1140, 1200, 0b10), (1200, 1560, 0b11)],
        ),
        # starting at the table's own start leaves Slurm's empty slot [960, 960)
        ([(960, 1020, 0b01)], [(960, 960, 0b11), (960, 1020, 0b10), (1020, 1560, 0b11)]),
        # shorter than the resolution: made one resolution long
        ([(1020, 1020, 0b01)], [(960, 1020, 0b11), (1020, 1080, 0b10), (1080, 1560, 0b11)]),
        # past the table's end: cut there
        ([(1500, 9999, 0b10)], [(960, 1500, 0b11), (1500, 1560, 0b01)]),
    ],
)
def test_reservations_split_and_merge(
    reservations: list[tuple[float, float, int]], table: list[tuple[float, float, int]]
) -> None:
    space = NodeSpace(1000, 60, 600, 0b11)
    for start, end, nodes in reservations:
        space.reserve(start, end, nodes)
    assert space.table() == table


@pytest.mark.parametrize(
    ("start", "end", "avail", "later"),
    [
        # n1 reserved over [1200, 1320): a window ending at 1200 collides (inclusive)...
        (1000, 1200, 0b10, 1320),
        # ...one ending a second earlier does not; later_start is then the end of the
        # first slot past the window whose successor frees n1 again
        (1000, 1199, 0b11, 1320),
        # from inside the reservation: n1 comes back at its end
        (1250, 1300, 0b10, 1320),
        # after it: all free, no later_start (no slot adds a node)
        (1320, 1400, 0b11, 0),
    ],
)
def test_candidates_and_later_start(start: float, end: float, avail: int, later: float) -> None:
    space = NodeSpace(1000, 60, 600, 0b11)
    space.reserve(1200, 1320, 0b01)
    assert space.candidates(0b11, start, end) == (avail, later)


@pytest.mark.parametrize(
    ("nodes", "start", "end", "hit"),
    [(0b01, 1260, 1380, True), (0b01, 1320, 1400, False), (0b01, 1100, 1200, False),
     (0b10, 1260, 1380, False)],
)  # fmt: skip
def test_overlap_with_a_reservation(nodes: int, start: float, end: float, hit: bool) -> None:
    """Slurm's _test_resv_overlap: a slot over the open interval lacks a chosen node."""
    space = NodeSpace(1000, 60, 600, 0b11)
    space.reserve(1200, 1320, 0b01)
    assert space.overlaps(nodes, start, end) is hit


# --- the will-run batches ---------------------------------------------------------------


def _ends(*jobs: tuple[str, float, int]) -> list[Ending[str]]:
    return [Ending(end, nodes, name) for name, end, nodes in jobs]


@pytest.mark.parametrize(
    ("running", "needed", "expected"),
    [
        # fits now
        (_ends(("a", 100, 1)), set(), (None, [])),
        # THE QUIRK: the job needs only a's end. a is removed (base 100+30-10=120, window
        # 30); the peek finds b (110, on another node) inside 150, so the batch goes on:
        # b is skipped with no window check and c (on the node, 500) is removed too. The
        # one test then runs without a and c: start = c's end, 500
        (_ends(("a", 100, 1), ("b", 110, 2), ("c", 500, 1)), {"a"}, (500, ["a", "c"])),
        # b ends past the window: the batch stops after a, which suffices: 100
        (_ends(("a", 100, 1), ("b", 200, 2), ("c", 500, 1)), {"a"}, (100, ["a"])),
        # a batch of two on the node: 130 <= 150, removed together
        (_ends(("a", 100, 1), ("b", 130, 1), ("c", 400, 1)), {"a", "b"}, (130, ["a", "b"])),
        # batches one after another; the window doubles (60, then 120): start 260
        (
            _ends(("a", 100, 1), ("b", 200, 1), ("c", 260, 1)),
            {"c"},
            (260, ["a", "b", "c"]),
        ),
        # never fits
        (_ends(("a", 100, 1)), {"z"}, None),
        # nothing runs on the candidates: no test, no fit
        (_ends(("a", 100, 2)), {"a"}, None),
    ],
)
def test_will_run_batches(
    running: list[Ending[str]],
    needed: set[str],
    expected: tuple[float | None, list[str]] | None,
) -> None:
    def fits(removed: Sequence[str]) -> bool:
        return needed <= set(removed)

    assert will_run(0b01, running, fits) == expected


# --- the node chooser --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "caps", "counts", "chosen"),
    [
        # one node: the smallest big enough (best fit), the first on ties
        (Shape(4, 1, 1), [4, 8, 6], None, [0]),
        (Shape(5, 1, 1), [4, 8, 6], None, [2]),
        (Shape(8, 1, 1), [8, 8], None, [0]),
        # -N 2 -n 8 on 4 and 8 free CPUs: in index order, 4 then 8 (no need for 4 each)
        (Shape(8, 2, 2), [4, 8], None, [0, 1]),
        # two consecutive sets ([0] and [2, 3]): the first set big enough wins
        (Shape(8, 2, 2), [4, 0, 8, 8], None, [2, 3]),
        # no -N: nodes in index order until the tasks are placed
        (Shape(12), [8, 8, 8], None, [0, 1]),
        # -N 2 -n 32 on 8, 8, 16, 16: the first pass takes 8 and finds no second node;
        # the knapsack retry drops the nodes of count <= 8, then 16 + 16 fits
        (Shape(32, 2, 2), [8, 8, 16, 16], [8, 8, 20, 20], [2, 3]),
        # too few nodes
        (Shape(2, 2, 2), [8, 0], None, None),
        # enough nodes, too few CPUs
        (Shape(20, 1, 2), [8, 8], None, None),
    ],
)
def test_choose_nodes(
    shape: Shape, caps: list[int], counts: list[int] | None, chosen: list[int] | None
) -> None:
    assert choose_nodes(shape, caps, counts or caps) == chosen


# --- the planner on hand-made states -------------------------------------------------------


def _plans(state: ClusterState, now: float) -> dict[str, float | None]:
    """{job: planned start} of a session under ``slurm`` (dispatched: -1)."""
    result = Session(state, backfill="slurm").run(now=now)
    out: dict[str, float | None] = {}
    for d in result.decisions:
        if isinstance(d, Dispatched):
            out[d.job] = -1
        else:
            out[d.job] = d.plan.start if d.plan is not None else None
    return out


def _hosts(state: ClusterState, now: float) -> dict[str, list[str]]:
    names = state.hosts.names
    result = Session(state, backfill="slurm").run(now=now)
    out: dict[str, list[str]] = {}
    for d in result.decisions:
        if isinstance(d, Dispatched):
            allocation = d.allocation
        elif d.plan is not None:
            allocation = d.plan.allocation
        else:
            continue
        out[d.job] = sorted({names[h] for h in allocation.columns().hosts.tolist()})
    return out


def test_a_planned_job_holds_its_nodes_whole() -> None:
    """n1-n4 of 8 slots full: A on n1 until 600, fillers until 3600. B (4 tasks, 30 min)
    is planned on n1 at A's end, 600, and reserves all of n1 over [600, 2400). C, the
    same, would fit beside B on n1, but n1 is reserved whole: at 0 its candidates are
    n2-n4 (later_start 2400), where the fillers end at 3600 > 2400, so it retries at
    2400 and fits on n1 (A gone): 2400, B's end. (Slurm's answer, checked live by
    test_real_slurm_site.test_slurm_backfill_reserves_whole_nodes; slot-granular
    conservative plans C at 600.)"""
    b = ClusterBuilder().hosts(4, "n", start=1, slots=8).at(0)
    b.running("A", on={"n1": 8}, start_time=0, requested_time=600)
    for n in ("n2", "n3", "n4"):
        b.running(f"F{n}", on={n: 8}, start_time=0, requested_time=3600)
    b.job("B", 4, requested_time=1800).job("C", 4, requested_time=1800)
    state = b.build()
    assert _plans(state, 0) == {"B": 600, "C": 2400}
    assert _hosts(state, 0) == {"B": ["n1"], "C": ["n1"]}
    conservative = Session(state, backfill="conservative").run(now=0)
    assert [d.plan.start for d in conservative.pending if d.plan] == [600, 600]


@pytest.mark.parametrize(("other_end", "start"), [(1205, 3600), (2000, 1200)])
def test_will_run_quirk_in_a_session(other_end: float, start: float) -> None:
    """n1 (partition a) runs r6 (4 slots, until 1200) and r1 (4 slots, until 3600); g1
    (partition b) runs rg until ``other_end``. J wants 4 slots of n1. r6's end would do;
    but with rg ending at 1205, inside r6's batch window (1230 + 30), the batch goes on
    past rg (not on n1) and removes r1 too: J is planned at r1's end, 3600. With rg
    ending at 2000 the batch stops after r6: 1200."""
    b = ClusterBuilder().at(0)
    b.host("n1", slots=8, a=True).host("g1", slots=8, b=True)
    b.running("r6", on={"n1": 4}, start_time=0, requested_time=1200)
    b.running("rg", on={"g1": 8}, start_time=0, requested_time=other_end)
    b.running("r1", on={"n1": 4}, start_time=0, requested_time=3600)
    b.job("J", 4, resreq="select[a]", requested_time=600)
    assert _plans(b.build(), 0) == {"J": start}


def _direct(state: ClusterState, now: float) -> tuple[SlurmPlanner, Allocator]:
    alloc = Allocator(state)
    alloc.begin_session()
    return SlurmPlanner(alloc, now), alloc


def test_gives_up_when_later_start_runs_out() -> None:
    """Slurm's give-up (jobs 25 and 26 of the real capture): n1 (bit 0) and n2, one slot
    each, nothing running, the table made by hand: n1 reserved over [600, 1200), both
    over [1200, 1800), n1 over [1800, 2400). J (n1 only, 600 s) at 0: its window [0, 600]
    includes the slot beginning at 600 (inclusive), where n1 is taken: no candidate.
    later_start looks one slot past the window: [1200, 1800)'s successor lacks n1 too, so
    there is none, and J gets no plan (N/A), although n1 is free from 2400. A 599 s job
    ends before 600 and starts now."""
    b = ClusterBuilder().at(0).host("n1", slots=1, a=True).host("n2", slots=1)
    state = b.job("J", 1, resreq="select[a]", requested_time=600).build()
    for duration, started in ((600.0, False), (599.0, True)):
        planner, _ = _direct(state, 0)
        for start, end, nodes in ((600, 1200, 0b01), (1200, 1800, 0b11), (1800, 2400, 0b01)):
            planner.space.reserve(start, end, nodes)
        job = state.jobs[0]
        request = job_request(job, state.catalog)
        decision = planner.start_now(job, request, duration)
        assert isinstance(decision, Dispatched) is started
        if not started:
            assert planner.plan(job, request, duration) is None


def test_retries_after_an_overlap_then_at_later_start() -> None:
    """n1 (one slot) runs r until 100; n1 is reserved over [120, 300) (by hand). J (90 s):
    at 0 the window [0, 90] leaves n1, later_start 300; will-run: r's end, 100. Rounded,
    J's run is [60, 180), which overlaps the reservation: retry at 100 exactly. Window
    [100, 190] now takes in [120, 300): no candidate; later_start 300: retry there, where
    n1 is free: planned at 300; its slot [300, 360) merges with the one before."""
    b = ClusterBuilder().at(0).host("n1", slots=1)
    b.running("r", on={"n1": 1}, start_time=0, requested_time=100)
    state = b.job("J", 1, requested_time=90).build()
    planner, _ = _direct(state, 0)
    planner.space.reserve(120, 300, 0b1)
    job = state.jobs[0]
    request = job_request(job, state.catalog)
    decision = planner.start_now(job, request, 90)
    assert isinstance(decision, Pending)
    plan = planner.plan(job, request, 90)
    assert plan is not None
    assert plan.start == 300
    planner.hold(job.id, plan)
    assert planner.space.table() == [(0, 120, 1), (120, 360, 0), (360, 86400, 1)]


def test_a_job_that_fits_now_outside_reservations_starts() -> None:
    """n1 (partition a) and n2, 2 slots each; r holds n1 until 600. P (n1 only) is
    planned at 600 and reserves n1 over [600, 1200). Q (2 tasks, 600 s): its window
    [0, 600] leaves only n2 (n1's reservation begins at 600, inclusive), where it fits
    now: dispatched. R (1 task, 60 s): nothing free now; will-run removes r and, in the
    same batch (600 <= 630 + 30), Q: 600, best fit n1; but n1 is reserved from 600:
    retry at 600 on n2 alone, free at Q's end: planned at 600."""
    b = ClusterBuilder().at(0).host("n1", slots=2, a=True).host("n2", slots=2)
    b.running("r", on={"n1": 2}, start_time=0, requested_time=600)
    b.job("P", 2, resreq="select[a]", requested_time=600).job("Q", 2, requested_time=600)
    b.job("R", 1, requested_time=60)
    plans = _plans(b.build(), 0)
    assert plans == {"P": 600, "Q": -1, "R": 600}


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        pytest.param((1200, 2000), 2000, id="opens-before-the-job-could-start"),
        pytest.param((0, 2000), 2000, id="open-already"),
        pytest.param((1550, 1560), 1560, id="a-short-window-in-its-run"),
        pytest.param((1600, 2000), 1500, id="opens-as-the-job-ends"),
    ],
)
def test_a_plan_never_overlaps_an_advance_reservation(
    window: tuple[float, float], expected: float
) -> None:
    """docs/backfill.md: jobs a reservation does not admit never use its hosts in the
    window, planned starts included. Host a (4 slots) runs r1 until 1500; j1 (4 tasks,
    100 s) fits at 1500, but maint holds a over the window: planned at its end (it was
    planned at 1500, inside it; with the window open, not at all). A window opening as
    j1 would end does not overlap its run (as everywhere in xce): 1500. As conservative
    plans them."""
    start, end = window
    b = ClusterBuilder().at(1000).host("a", slots=4)
    b.reservation("maint", start, end, hosts=["a"])
    b.running("r1", on={"a": 4}, start_time=500, requested_time=1000)
    b.job("j1", 4, requested_time=100)
    assert _plans(b.build(), 1000) == {"j1": expected}
    conservative = Session(b.build(), backfill="conservative").run(now=1000)
    (d,) = conservative.decisions
    assert isinstance(d, Pending)
    assert d.plan is not None
    assert d.plan.start == expected


def test_a_job_naming_a_reservation_is_planned_inside_its_window_only() -> None:
    """A job naming maint (host a, [3000, 9000)) is planned at the window's start (it
    was shown starting now, before the window); one naming win ([500, 3000)), whose
    host is held until 3500, gets no plan (it was planned at 3500, after the window)."""
    b = ClusterBuilder().at(1000).host("a", slots=8)
    b.reservation("maint", 3000, 9000, hosts=["a"])
    b.job("j1", 8, requested_time=1000, reservation="maint")
    assert _plans(b.build(), 1000) == {"j1": 3000}
    b = ClusterBuilder().at(1000).host("a", slots=4)
    b.reservation("win", 500, 3000, hosts=["a"])
    b.running("r1", on={"a": 4}, start_time=500, requested_time=3000)
    b.job("j1", 4, requested_time=600, reservation="win")
    assert _plans(b.build(), 1000) == {"j1": None}


def test_a_job_fitting_the_books_on_reserved_nodes_pends_reserved() -> None:
    """n1 (2 slots) runs r2 on one slot until 600. P (2 tasks) is planned at 600 and
    reserves n1 whole over [600, 1200). Q (1 task, 900 s) fits the free slot now, but its
    window [0, 900] takes in P's reservation: RESERVED; later_start 1200, where it fits
    (on the books as they are): planned at 1200."""
    b = ClusterBuilder().at(0).host("n1", slots=2, a=True)
    b.running("r2", on={"n1": 1}, start_time=0, requested_time=600)
    b.job("P", 2, resreq="select[a]", requested_time=600)
    b.job("Q", 1, resreq="select[a]", requested_time=900)
    result = Session(b.build(), backfill="slurm").run(now=0)
    q = next(d for d in result.pending if d.job == "Q")
    assert q.info.reason is PendReason.RESERVED
    assert "reserved, whole" in q.info.message
    assert q.plan is not None
    assert q.plan.start == 1200


def _with(state: ClusterBuilder, **jobs: dict[str, Any]) -> ClusterState:
    doc = state.to_dict()
    for job in doc["jobs"]:
        job.update(jobs.get(str(job["id"]), {}))
    return state_from_dict(doc)


def test_gated_jobs_reserve_nothing() -> None:
    """n1 (one slot) runs r until 600. L begins at 1000 (BEGIN_TIME): not in Slurm's
    queue, it is planned from its begin time on (1000, on n1) and reserves nothing, so
    J (600 s) after it is planned at r's end, 600, although its run would overlap L's."""
    b = ClusterBuilder().at(0).host("n1", slots=1)
    b.running("r", on={"n1": 1}, start_time=0, requested_time=600)
    b.job("L", 1, requested_time=600).job("J", 1, requested_time=600)
    state = _with(b, L={"begin_time": 1000})
    assert _plans(state, 0) == {"L": 1000, "J": 600}


def test_a_begin_time_past_the_window_is_planned_there() -> None:
    """A begin time past the 1-day table: no slot constrains it, it fits on the free n1
    at its begin time (and reserves nothing, being past the window)."""
    b = ClusterBuilder().at(0).host("n1", slots=1)
    b.job("L", 1, requested_time=600)
    state = _with(b, L={"begin_time": 100_000})
    assert _plans(state, 0) == {"L": 100_000}


def test_a_begin_time_job_slurm_cannot_place_shows_its_begin_time() -> None:
    """The give-up table of test_gives_up_when_later_start_runs_out, and J beginning at
    1: from 1 on, Slurm's rules give it no start; squeue --start shows such a job at its
    begin time ("earliest start"), and so does xce, on n1."""
    b = ClusterBuilder().at(0).host("n1", slots=1, a=True).host("n2", slots=1)
    b.job("J", 1, resreq="select[a]", requested_time=600)
    state = _with(b, J={"begin_time": 1})
    planner, _ = _direct(state, 0)
    for start, end, nodes in ((600, 1200, 0b01), (1200, 1800, 0b11), (1800, 2400, 0b01)):
        planner.space.reserve(start, end, nodes)
    job = state.jobs[0]
    plan = planner.plan(job, job_request(job, state.catalog), 600, earliest=1)
    assert plan is not None
    assert plan.start == 1
    assert plan.allocation.columns().hosts.tolist() == [0]


def test_registered_and_made_by_the_session() -> None:
    assert isinstance(default_backfills(plugins=False).get("slurm"), SlurmBackfill)
    b = ClusterBuilder().at(0).host("n1", slots=1)
    b.running("r", on={"n1": 1}, start_time=0, requested_time=60).job("J", 1)
    session = Session(b.build(), backfill="slurm")
    planner = session._new_planner(list(session.state.jobs), 0)
    assert type(planner) is SlurmPlanner


def test_resolution_from_the_state() -> None:
    """scheduler_resolution 300: J planned at r's end 1000 reserves [900, 1200)."""
    b = ClusterBuilder().at(0).host("n1", slots=1)
    b.running("r", on={"n1": 1}, start_time=0, requested_time=1000)
    b.job("J", 1, requested_time=300)
    doc = b.to_dict() | {"scheduler_resolution": 300}
    state = state_from_dict(doc)
    planner, _ = _direct(state, 0)
    job = state.jobs[0]
    request = job_request(job, state.catalog)
    planner.start_now(job, request, 300)
    plan = planner.plan(job, request, 300)
    assert plan is not None
    assert plan.start == 1000
    planner.hold(job.id, plan)
    assert planner.space.table()[:3] == [(0, 900, 1), (900, 1200, 0), (1200, 86400, 1)]


# --- properties ----------------------------------------------------------------------------


@st.composite
def _states(draw: st.DrawFn) -> ClusterState:
    b = ClusterBuilder().at(0)
    hosts = draw(st.integers(1, 4))
    slots = [draw(st.sampled_from([1, 2, 4, 8])) for _ in range(hosts)]
    for i, s in enumerate(slots):
        b.host(f"h{i}", slots=s, mem=1000 * s, part=bool(i % 2))
    free = list(slots)
    for k in range(draw(st.integers(0, 5))):
        h = draw(st.integers(0, hosts - 1))
        if not free[h]:
            continue
        n = draw(st.integers(1, free[h]))
        free[h] -= n
        b.running(
            f"r{k}",
            on={f"h{h}": n},
            rusage={"mem": 500},
            start_time=-draw(st.integers(0, 100)),
            requested_time=draw(st.sampled_from([60, 90, 600, 1000])),
        )
    for k in range(draw(st.integers(1, 6))):
        tasks = draw(st.integers(1, 8))
        span = draw(st.sampled_from(["", " span[hosts=1]", " span[ptile=2]"]))
        select = draw(st.sampled_from(["", "select[part] "]))
        b.job(
            f"j{k}",
            tasks,
            resreq=f"{select}rusage[mem=500]{span}".strip() or None,
            requested_time=draw(st.sampled_from([60, 300, 1000, 5000])),
        )
    return b.build()


@settings(max_examples=150, deadline=None)
@given(_states())
def test_never_over_allocates_in_plans_or_starts(state: ClusterState) -> None:
    """Every start fits the books (what the session charged never exceeds what was free);
    every plan fits its hosts at its start given the running and started jobs that have
    not ended by then; and planned jobs that share a host have disjoint rounded windows
    (whole-node reservations; jobs shorter than the resolution may share one, as in
    Slurm: none is generated)."""
    result = Session(state, backfill="slurm").run(now=0)
    cap = state.hosts.capacity["slots"]
    used = np.zeros(state.hosts.n)
    for r in state.running:
        for a in r.alloc:
            used[state.hosts.index[a.host]] += a.slots
    runs: list[tuple[float, np.ndarray]] = []  # (end, slots per host) of running work
    for r in state.running:
        held = np.zeros(state.hosts.n)
        for a in r.alloc:
            held[state.hosts.index[a.host]] += a.slots
        runs.append((r.start_time + (r.requested_time or 0), held))
    started = np.zeros(state.hosts.n)
    for d in result.dispatched:
        cols = d.allocation.columns()
        np.add.at(started, cols.hosts, cols.slots)
        job = next(j for j in state.jobs if j.id == d.job)
        runs.append((float(job.requested_time or 0), _per_host(cols, state.hosts.n)))
    assert np.all(used + started <= cap)
    plans = [(d.job, d.plan) for d in result.pending if d.plan is not None]
    for _, plan in plans:
        at = sum((h for end, h in runs if end > plan.start), np.zeros(state.hosts.n))
        assert np.all(at + _per_host(plan.allocation.columns(), state.hosts.n) <= cap)
    windows = []
    for _, plan in plans:
        s0 = plan.start // 60 * 60
        e0 = max(plan.end // 60 * 60, s0 + 60)
        windows.append((s0, e0, set(plan.allocation.columns().hosts.tolist())))
    for i, (s0, e0, hosts) in enumerate(windows):
        for t0, t1, others in windows[i + 1 :]:
            if hosts & others:
                assert e0 <= t0 or t1 <= s0


def _per_host(cols: Any, n: int) -> np.ndarray:
    out = np.zeros(n)
    np.add.at(out, cols.hosts, cols.slots)
    return out


# --- the committed real-Slurm captures ------------------------------------------------------

# Slurm's plan for 20, 26 and 28 follows job 24's second partition (-p prio,batch): its
# batch entry's reservation of n2 over [1796186340, 1796188740). The import keeps the
# second partition (jobs[].also_queues, with sprio's priority there), and the session
# plans each entry: every expected start is Slurm's.


def _capture(i: int, tmp: Path) -> tuple[dict[str, Any], dict[str, str]]:
    snap = DATA / f"capture-{i}"
    out = tmp / f"s{i}.json"
    subprocess.run([str(XCE), "import", "slurm", str(snap), "-o", str(out)], check=True,
                   capture_output=True)  # fmt: skip
    now = (snap / "time").read_text().strip()
    done = subprocess.run(
        [str(XCE), "schedule", str(out), "--backfill", "slurm", "--now", now, "--json"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    starts = {}
    for line in (snap / "squeue-start.txt").read_text().splitlines():
        job, start, _, reason = line.split()[:4]
        starts[job.split("_")[0]] = start if reason != "BeginTime" else f"begin:{start}"
    return json.loads(done.stdout), starts


def _cases() -> list[Any]:
    out = []
    for i in (1, 2, 3):
        for line in (DATA / f"capture-{i}" / "squeue-start.txt").read_text().splitlines():
            job = line.split()[0].split("_")[0]
            out.append(pytest.param(i, job, id=f"capture-{i}-{job}"))
    return out


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    tmp = tmp_path_factory.mktemp("slurm-captures")
    return {i: _capture(i, tmp) for i in (1, 2, 3)}


@pytest.mark.parametrize(("i", "job"), _cases())
def test_capture_expected_start(captures: dict[int, Any], i: int, job: str) -> None:
    """xce under ``slurm`` gives Slurm's expected start within bf_resolution (60 s), no
    plan where Slurm says N/A for a job in its queue (held, dependent and array-limited
    jobs are not: xce may show a plan there), and a begin-time job no earlier than its
    begin."""
    decisions, starts = captures[i]
    slurm = starts[job]
    ours = [e for e in decisions["pending"] if str(e["job"]).split("_")[0] == job]
    assert ours
    assert not [e for e in decisions["dispatched"] if str(e["job"]) == job]
    planned = ours[0].get("planned_start")
    if slurm.startswith("begin:"):
        assert planned is not None
        assert planned >= int(slurm.removeprefix("begin:"))
    elif slurm.isdigit():
        assert planned is not None
        assert abs(planned - int(slurm)) <= 60
    elif ours[0]["reason"] not in ("HELD", "DEPENDENCY", "ARRAY_LIMIT"):
        assert planned is None
