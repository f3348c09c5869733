"""issue 15: the plain replay (xce.sim.plain) is an exact fast path of the simulator,
proven equivalent to the general path by a property test over random workloads, with
the two paths run side by side.

A plain workload (slot-only jobs of a fixed task count, no limits, reservations,
preempting queues or initial work, no interval, builtin allocators, fcfs, strict and
fairshare queues with any backfill policy: sessions that plan are run by the core,
xce.sim.handoff) is replayed with ``SimOptions(plain_replay=True)`` (the
plain replay) and ``plain_replay=False`` (the general event loop, the reference): every
``JobRecord``, the timeline, the host capacities and names and ``metrics.json`` are the
same, and both pass ``verify``. The random cases reach every placement rule of
``_Free.place`` (checked, not assumed); hand-made cases pin down claim order, the fill
plan and the pick order; and every non-plain option or input keeps the general path.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import xce.sim.plain as plain_module
from builders import ClusterBuilder
from xce.cluster import ClusterState, PendingJob, Queue
from xce.core import FcfsPicker, QueueCursor, default_pickers
from xce.errors import EventError
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.handoff import CoreHandoff
from xce.sim.metrics import metrics, write_jobs_csv, write_metrics
from xce.sim.model import RecordTable, SimJob
from xce.sim.plain import PlainReplay, plain_replay
from xce.sim.workload import load_workload

QUEUE_NAMES = ("hi", "mid", "lo")
PICKERS = (None, "fcfs", "strict", "fairshare")  # None: the default (cluster's, else fcfs)
USERS = ("u1", "u2", "u3")
BACKFILLS = (None, None, "none", "easy", "conservative")
SHARES = (None, None, {"u1": 3.0}, {"u2": 0.5, "default": 2.0}, {"u1": 0.0, "u3": 4.0})
STATUSES = ("ok", "ok", "ok", "ok", "closed", "unavail")
TIMES = (0.0, 0.0, 1.0, 2.0, 2.5, 3.0, 5.0, 8.0, 13.0, 20.0, 40.0)  # repeats: same instants
RUNTIMES = (0.0, 0.0, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 20.0, 30.0)  # repeats: same ends
ESTIMATES = (None, None, 0.0, 1.0, 2.0, 5.0, 10.0, 30.0)
EXAMPLES = 150


@dataclass(frozen=True)
class Case:
    """A random plain replay: hosts (slots, status), declared queues (name, priority,
    picker), the workload and the options. Its repr is the whole input, to replay a
    failure by hand."""

    hosts: tuple[tuple[int, str], ...]
    # (name, priority, picker, shares, backfill, default_runtime)
    queues: tuple[
        tuple[str, int, str | None, dict[str, float] | None, str | None, float | None], ...
    ]
    default_picker: str | None  # the cluster's (state file's ``picker``)
    jobs: tuple[SimJob, ...]
    picker: str | None  # SimOptions.picker
    single_queue: bool
    enforce_walltime: bool
    backfill: str | None = None  # SimOptions.backfill (queues may name their own)
    preemptor: str | None = None  # SimOptions.preemptor (a declared queue may preempt)
    preempts: tuple[tuple[str, str], ...] = ()  # (queue, a queue it preempts)
    # work running when the replay begins: (host slots, start, runtime, estimate, queue)
    running: tuple[tuple[dict[str, int], float, float, float | None, str], ...] = ()

    def state(self) -> ClusterState:
        b = ClusterBuilder()
        for i, (slots, status) in enumerate(self.hosts):
            b.host(f"h{i}", slots, status=None if status == "ok" else status)
        for name, priority, picker, shares, backfill, default in self.queues:
            b.queue(
                name, priority, picker=picker, shares=shares, backfill=backfill,
                default_runtime=default,
                preempts=[lo for hi, lo in self.preempts if hi == name],
            )  # fmt: skip
        if self.default_picker is not None:
            b.picker(self.default_picker)
        for k, (on, start, runtime, estimate, queue) in enumerate(self.running):
            b.running(
                f"r{k}", on, user=USERS[k % len(USERS)], queue=queue, start_time=start,
                runtime=runtime, requested_time=estimate,
            )  # fmt: skip
        return b.build()

    def options(self, plain: bool) -> SimOptions:
        return SimOptions(
            picker=self.picker,
            single_queue=self.single_queue,
            enforce_walltime=self.enforce_walltime,
            backfill=self.backfill,
            preemptor=self.preemptor,
            plain_replay=plain,
        )


@st.composite
def host_shapes(draw: st.DrawFn) -> tuple[tuple[int, str], ...]:
    """1-12 hosts: all of one size (2-8 slots), all of one slot, or of mixed sizes;
    some closed or unavailable."""
    n = draw(st.integers(1, 12))
    shape = draw(st.sampled_from(("uniform", "one-slot", "mixed")))
    if shape == "uniform":
        slots = [draw(st.sampled_from((2, 3, 4, 8)))] * n
    elif shape == "one-slot":
        slots = [1] * n
    else:
        slots = draw(st.lists(st.integers(1, 8), min_size=n, max_size=n))
    statuses = draw(st.lists(st.sampled_from(STATUSES), min_size=n, max_size=n))
    return tuple(zip(slots, statuses, strict=True))


@st.composite
def plain_cases(draw: st.DrawFn) -> Case:
    """A plain workload of 1-40 jobs on a random cluster: one-task jobs, jobs that fit
    one host, jobs wider than any host (balanced plans, with remainders, and the fill
    plan), jobs wider than the cluster's ok slots (unrunnable); submissions and ends at
    shared instants, zero-second runtimes, estimates shorter than runtimes, 0-3 declared
    queues of equal or different priorities with fcfs, strict, fairshare (random shares)
    or the default picker, and backfill none, easy or conservative (the session's or a
    queue's; some queues with a default runtime); three users."""
    hosts = draw(host_shapes())
    ok = [s for s, status in hosts if status == "ok"]
    top, total = max(ok, default=0), sum(ok)
    tasks = [st.just(1), st.integers(1, 3)]
    if top >= 1:
        tasks += [st.integers(1, top), st.integers(1, total), st.integers(1, total)]
    if total > top:
        tasks += [st.integers(top + 1, total)] * 3  # wider than any host
    tasks.append(st.integers(total + 1, total + 3))  # wider than the cluster
    declared = draw(st.lists(st.sampled_from(QUEUE_NAMES), max_size=3, unique=True))
    queues = tuple(
        (
            name,
            draw(st.sampled_from((0, 10, 20))),
            draw(st.sampled_from(PICKERS)),
            draw(st.sampled_from(SHARES)),
            draw(st.sampled_from(BACKFILLS)),
            draw(st.sampled_from((None, None, 4.0))),
        )
        for name in declared
    )
    queue = st.sampled_from((*declared, "normal"))
    # a declared queue of a higher priority may preempt a lower declared one
    ranked = [(q[0], q[1]) for q in queues]
    preempts = tuple(
        (hi, lo) for hi, p in ranked for lo, r in ranked if p > r and draw(st.booleans())
    )
    jobs = []
    for j in range(draw(st.integers(1, 40))):
        jobs.append(
            SimJob(
                f"j{j}",
                draw(st.sampled_from(TIMES)),
                draw(st.sampled_from(RUNTIMES)),
                draw(st.one_of(tasks)),
                user=draw(st.sampled_from(USERS)),
                queue=draw(queue),
                requested_time=draw(st.sampled_from(ESTIMATES)),
            )
        )
    return Case(
        hosts,
        queues,
        draw(st.sampled_from(PICKERS)),
        tuple(jobs),
        draw(st.sampled_from(PICKERS)),
        draw(st.booleans()),
        draw(st.booleans()),
        draw(st.sampled_from(BACKFILLS)),
        draw(st.sampled_from((None, "lowest_priority_first"))),
        preempts,
    )


def replay(
    state: ClusterState, jobs: tuple[SimJob, ...] | list[SimJob], options: SimOptions
) -> tuple[Simulation, SimResult]:
    sim = Simulation(state, jobs, options)
    result = sim.run()
    verify(result, sim.jobs)
    return sim, result


def assert_same_result(fast: SimResult, general: SimResult) -> None:
    """Every record (element-wise, in workload order), the timeline, the hosts and
    ``metrics.json`` are the general path's."""
    assert len(fast.records) == len(general.records)
    for mine, theirs in zip(fast.records, general.records, strict=True):
        assert mine == theirs
    assert fast.timeline.times == general.timeline.times
    assert fast.timeline.busy == general.timeline.busy
    assert fast.timeline.pending == general.timeline.pending
    assert fast.timeline.total_slots == general.timeline.total_slots
    assert fast.total_slots == general.total_slots
    assert fast.host_capacity == general.host_capacity
    assert list(fast.host_names) == list(general.host_names)
    assert fast.base_load == general.base_load
    assert metrics(fast) == metrics(general)
    if isinstance(fast.records, RecordTable) and isinstance(general.records, RecordTable):
        assert np.array_equal(fast.records.slots, general.records.slots)  # 0 if never ran


def both_ways(case: Case) -> tuple[SimResult, SimResult]:
    """The case replayed by the plain replay (asserted to be the path taken), by it
    without the index of pending jobs by task count (``width_index``), and by the
    general path; asserted identical."""
    state = case.state()
    fast_sim = Simulation(state, case.jobs, case.options(True))
    assert isinstance(plain_replay(fast_sim), PlainReplay), "the case is not plain"
    fast = fast_sim.run()
    verify(fast, fast_sim.jobs)
    general_sim = Simulation(state, case.jobs, case.options(False))
    assert plain_replay(general_sim) is None
    general = general_sim.run()
    verify(general, general_sim.jobs)
    assert_same_result(fast, general)
    # the index of pending jobs by task count off: every job tried
    unindexed = Simulation(
        state, case.jobs, dataclasses.replace(fast_sim.options, width_index=False)
    )
    assert_same_result(unindexed.run(), general)
    return fast, general


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(case=plain_cases())
def test_plain_replay_decides_as_the_general_path(case: Case) -> None:
    """issue 15 property: random plain workloads on random clusters (uniform, one-slot
    and mixed hosts, some not ok; several queues and priorities; fcfs, strict and
    fairshare;
    single_queue on and off; enforce_walltime on and off) reach the plain replay, and it
    gives the general path's records, timeline, hosts and metrics."""
    both_ways(case)


def initial_work(
    draw: st.DrawFn, case: Case
) -> tuple[tuple[dict[str, int], float, float, float | None, str], ...]:
    """0-6 pieces of work running when the replay begins, each on 1-3 ok hosts with
    room for it (what the pieces before it left), started up to 20 s before 0, ending
    before the first submission, at one, or long after; estimates none, shorter or
    longer than the runtime (some overdue by the first session); in any queue."""
    left = {f"h{i}": slots for i, (slots, status) in enumerate(case.hosts) if status == "ok"}
    names = [q[0] for q in case.queues] + ["normal"]
    out = []
    for _ in range(draw(st.integers(0, 6))):
        free = sorted(h for h, n in left.items() if n > 0)
        if not free:
            break
        on = {}
        for h in draw(st.lists(st.sampled_from(free), min_size=1, max_size=3, unique=True)):
            on[h] = draw(st.integers(1, left[h]))
            left[h] -= on[h]
        start = -draw(st.sampled_from((0.0, 1.0, 5.0, 20.0)))
        runtime = draw(st.sampled_from((0.5, 1.0, 2.0, 10.0, 25.0, 60.0))) - start
        estimate = draw(st.sampled_from((None, 1.0, 3.0, 30.0, 100.0)))
        out.append((on, start, runtime, estimate, draw(st.sampled_from(names))))
    return tuple(out)


@st.composite
def cases_with_initial_work(draw: st.DrawFn) -> Case:
    """A plain case (fcfs, strict or the default picker: an order of its own counts
    the slots of the initial work's users; no queue preempting: its sessions go to the
    core; both leave it to the general path) with work running when it begins."""
    case = draw(plain_cases())
    monotone = st.sampled_from((None, "fcfs", "strict"))
    # every queue plans (its sessions on the arrays), or none does
    plans = draw(st.booleans())
    policies = st.sampled_from((None, "easy", "conservative") if plans else (None, "none"))
    session = draw(st.sampled_from(("easy", "conservative") if plans else (None, "none")))
    queues = tuple((q[0], q[1], draw(monotone), None, draw(policies), q[5]) for q in case.queues)
    case = dataclasses.replace(
        case,
        queues=queues,
        default_picker=draw(monotone),
        picker=draw(monotone),
        backfill=session,
        preempts=(),
    )
    return dataclasses.replace(case, running=initial_work(draw, case))


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(case=cases_with_initial_work())
def test_initial_work_replays_as_the_general_path(case: Case) -> None:
    """issue 27 property: random plain workloads that begin with work running (on
    random ok hosts, ending before, at and long after the first submission, estimates
    none, shorter and longer) reach the plain replay, and it gives the general path's
    records, timeline, hosts, base load and metrics (any backfill: sessions that plan
    go to the core or the arrays, see tests/test_plain_planning.py)."""
    both_ways(case)


def _into_queues(draw: st.DrawFn, case: Case, queues: Any, **changes: Any) -> Case:
    """``case`` with ``queues`` declared and each job in one of them (drawn), the
    session's picker and single queue off, and ``changes``."""
    names = [q[0] for q in queues]
    jobs = tuple(dataclasses.replace(job, queue=draw(st.sampled_from(names))) for job in case.jobs)
    return dataclasses.replace(
        case, queues=queues, jobs=jobs, single_queue=False, picker=None, **changes
    )


@st.composite
def merged_cases(draw: st.DrawFn) -> Case:
    """A plain case whose jobs all go to 2-3 queues of one priority, the first under
    fairshare: the replay merges a cursor with an order of its own with others."""
    case = draw(plain_cases())
    pickers = ["fairshare", draw(st.sampled_from(PICKERS)), draw(st.sampled_from(PICKERS))]
    names = QUEUE_NAMES[: draw(st.integers(2, 3))]
    queues = tuple(
        (name, 0, picker, draw(st.sampled_from(SHARES)), None, None)
        for name, picker in zip(names, pickers, strict=False)
    )
    return _into_queues(draw, case, queues, backfill=None, preempts=())


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(case=merged_cases())
def test_fairshare_merged_with_other_queues_decides_as_the_general_path(case: Case) -> None:
    """issue 15 property, for the merge: fairshare with fcfs, strict or fairshare queues
    of its priority (the replay leaves a too-wide job out of a fairshare cursor only
    when it is alone at its priority)."""
    both_ways(case)


@st.composite
def preempting_cases(draw: st.DrawFn) -> Case:
    """A plain case whose jobs go to three queues, ``hi`` (priority 20) and ``mid`` (10)
    preempting the ones below them, under a preemptor; random pickers and backfill."""
    case = draw(plain_cases())
    names = ("hi", "mid", "lo")
    queues = tuple(
        (name, level, draw(st.sampled_from(PICKERS)), None, draw(st.sampled_from(BACKFILLS)), None)
        for name, level in zip(names, (20, 10, 0), strict=True)
    )
    return _into_queues(
        draw,
        case,
        queues,
        preemptor="lowest_priority_first",
        preempts=(("hi", "mid"), ("hi", "lo"), ("mid", "lo")),
    )


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(case=preempting_cases())
def test_preempting_queues_decide_as_the_general_path(case: Case) -> None:
    """issue 15 property, for preemption: three queues preempting the ones below them,
    fcfs, strict or fairshare, with or without backfill: the sessions in which a job
    cannot start run by the core, its preemptions applied to both alike."""
    both_ways(case)


def test_preempting_cases_preempt() -> None:
    """The preemption property is not vacuous: its cases preempt, and restart jobs."""
    seen: Counter[str] = Counter()

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, phases=[Phase.generate])
    @given(case=preempting_cases())
    def collect(case: Case) -> None:
        fast, _ = both_ways(case)
        seen["preempted"] += any(r.preempted for r in fast.records)
        seen["restarted and ran"] += any(r.preempted and r.start is not None for r in fast.records)

    collect()
    assert seen["preempted"] >= 10, seen
    assert seen["restarted and ran"] >= 10, seen


# --- reach: the random cases exercise what the property is about -----------------------


@contextmanager
def recorded_placements(seen: Counter[str]) -> Iterator[None]:
    """Count which rule of ``_Free.place`` decided each placement in the block."""
    free = plain_module._Free
    place, balanced, fill = free.place, free._balanced, free._fill

    def traced_balanced(self: Any, n: int) -> Any:
        found = balanced(self, n)
        if found is not None:
            slots = found[1]
            seen["balanced, remainder" if len(set(slots.tolist())) > 1 else "balanced, even"] += 1
        return found

    def traced_fill(self: Any, n: int) -> Any:
        seen["fill"] += 1
        return fill(self, n)

    def traced_place(self: Any, n: int) -> Any:
        top = self.top
        placed = place(self, n)
        if placed is None:
            seen["no room"] += 1
        elif n == 1:
            seen["one task"] += 1
        elif placed[3] == 1:
            seen["one host"] += 1
        elif top == 1:  # kept as a run of consecutive hosts, or as an array
            seen["one-slot hosts, " + ("in a run" if placed[0] is None else "scattered")] += 1
        return placed

    native = CoreHandoff.native

    def traced_native(self: Any, new: list[int], old: int) -> bool:
        kept = native(self, new, old)
        seen["planning session kept" if kept else "planning session run by the core"] += 1
        return kept

    with (
        mock.patch.object(free, "place", traced_place),
        mock.patch.object(free, "_balanced", traced_balanced),
        mock.patch.object(free, "_fill", traced_fill),
        mock.patch.object(CoreHandoff, "native", traced_native),
    ):
        yield


def out_of_fcfs_order(case: Case, result: SimResult) -> bool:
    """Whether two jobs of one queue started at one instant in the other order than
    their submissions: only fairshare does that (a job that fits after another fits
    before it, since a job fits iff it wants at most the free slots)."""
    ran = [(i, r) for i, r in enumerate(result.records) if r.start is not None]
    for i, a in ran:
        for j, b in ran:
            if (
                a.job.queue == b.job.queue
                and a.start == b.start
                and (a.job.submit, i) < (b.job.submit, j)
                and a.sequence is not None
                and b.sequence is not None
                and b.sequence[0] < a.sequence[0]
            ):
                return True
    return False


def features(case: Case, result: SimResult) -> set[str]:
    """What a replayed case exercised, beyond the placement rules."""
    out = set()
    records = result.records
    if any(r.unrunnable for r in records):
        out.add("unrunnable")
    ran = [r for r in records if r.start is not None]
    if any(r.killed for r in ran):
        out.add("killed at walltime")
    if any(r.start == r.end for r in ran):
        out.add("zero-second run")
    if any(n > 1 for n in Counter(j.submit for j in case.jobs).values()):
        out.add("same-instant submissions")
    if any(n > 1 for n in Counter(r.end for r in ran).values()):
        out.add("same-instant ends")
    if any(r.wait for r in ran):
        out.add("waited")
    if any(status != "ok" for _, status in case.hosts):
        out.add("host not ok")
    if len({s for s, _ in case.hosts}) > 1:
        out.add("mixed host sizes")
    sim = Simulation(case.state(), case.jobs, case.options(True))
    replayer = plain_replay(sim)
    assert replayer is not None
    if any(replayer.strict) and not all(replayer.strict):
        out.add("strict and fcfs queues mixed")
    if all(replayer.strict):
        out.add("strict only")
    if not any(replayer.strict):
        out.add("fcfs only")
    if any(order is not None for order in replayer.orders):
        out.add("fairshare")
    for lv, ordered in enumerate(replayer.ordered):
        if ordered and len(replayer.level_queues[lv]) > 1:
            out.add("fairshare merged with other queues")
    if out_of_fcfs_order(case, result):
        out.add("fairshare reordered")
    if len(set(replayer.level_of)) > 1:
        out.add("several priorities")
    if len(replayer.level_of) > len(set(replayer.level_of)):
        out.add("queues of one priority")
    out.add(f"single_queue={case.single_queue}")
    if any(r.preempted for r in records):
        out.add("preempted")
    if replayer.handoff is not None:
        out.add("backfill plans")
        if any(r.backfilled for r in records):
            out.add("backfilled")
        if any(r.planned_ahead for r in records):
            out.add("planned ahead")
    return out


PLACEMENTS = {
    "no room",
    "one task",
    "one host",
    "one-slot hosts, in a run",
    "one-slot hosts, scattered",
    "balanced, even",
    "balanced, remainder",
    "fill",
    "planning session kept",
    "planning session run by the core",
}
FEATURES = {
    "unrunnable",
    "killed at walltime",
    "zero-second run",
    "same-instant submissions",
    "same-instant ends",
    "waited",
    "host not ok",
    "mixed host sizes",
    "strict and fcfs queues mixed",
    "strict only",
    "fcfs only",
    "several priorities",
    "queues of one priority",
    "fairshare",
    "fairshare merged with other queues",
    "fairshare reordered",
    "backfill plans",
    # "preempted": the cases of test_preempting_cases_preempt preempt (at least 10 of
    # them); these reach it only by chance (none since --enforce-walltime kills at a
    # queue's default_runtime, as some of these queues have one)
    "backfilled",
    "planned ahead",
    "single_queue=True",
    "single_queue=False",
}


def test_random_cases_reach_every_placement_rule() -> None:
    """The property is not vacuous: over its derandomized cases (the same strategy and
    count), the plain replay places one-task jobs, jobs on one host, jobs on one-slot
    hosts (a run of consecutive hosts and scattered ones), balanced plans even and with
    a remainder, the fill plan, and finds no room; and the cases have unrunnable jobs,
    walltime kills, zero-second runs, shared instants, hosts not ok, mixed sizes, mixed
    strict/fcfs queues and priorities."""
    placements: Counter[str] = Counter()
    seen: Counter[str] = Counter()

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, phases=[Phase.generate])
    @given(case=plain_cases())
    def collect(case: Case) -> None:
        with recorded_placements(placements):
            fast, _ = both_ways(case)
        seen.update(features(case, fast))

    collect()
    missing = sorted(PLACEMENTS - {k for k, v in placements.items() if v})
    assert not missing, (missing, placements)
    missing = sorted(FEATURES - set(seen))
    assert not missing, (missing, seen)


# --- hand-made cases ----------------------------------------------------------------


def hosts_of(*slots: int) -> ClusterBuilder:
    b = ClusterBuilder()
    for i, s in enumerate(slots):
        b.host(f"h{i}", s)
    return b


def plain_and_general(state: ClusterState, jobs: list[SimJob], **options: Any) -> dict[str, Any]:
    """Both paths over ``jobs`` (the first asserted plain), asserted identical; the
    records by job id."""
    fast_sim = Simulation(state, jobs, SimOptions(**options))
    assert plain_replay(fast_sim) is not None
    fast = fast_sim.run()
    verify(fast, fast_sim.jobs)
    _, general = replay(state, jobs, SimOptions(plain_replay=False, **options))
    assert_same_result(fast, general)
    return {r.job.id: r for r in fast.records}


def test_a_balanced_plan_with_a_remainder_claims_big_buckets_first() -> None:
    """7 tasks on hosts of 3, 4 and 4 slots: no host holds 7; the plan of 2 buckets
    (4 + 3) fits, its big bucket on the first host with 4 free (h1), then the small one
    on the first other host with 3 free (h0): claims in that order, h1 before h0."""
    got = plain_and_general(hosts_of(3, 4, 4).build(), [SimJob("a", 0.0, 10.0, 7)])
    a = got["a"]
    assert tuple(a.hosts) == ("h1", "h0")
    assert tuple(a.host_slots) == (4, 3)
    assert (a.start, a.end, a.slots) == (0.0, 10.0, 7)


def test_seven_tasks_on_hosts_of_four_take_four_and_three() -> None:
    """7 tasks on three hosts of 4 slots, one of them half taken by an earlier job:
    buckets of 4 then 3, the 4 on the first host with 4 free (h1, after the busy h0)."""
    got = plain_and_general(
        hosts_of(4, 4, 4).build(),
        [SimJob("busy", 0.0, 50.0, 2), SimJob("a", 1.0, 10.0, 7)],
    )
    assert tuple(got["busy"].hosts) == ("h0",)
    assert tuple(got["a"].hosts) == ("h1", "h2")
    assert tuple(got["a"].host_slots) == (4, 3)


def test_the_fill_plan_when_no_balanced_plan_fits() -> None:
    """5 tasks on hosts of 1, 3 and 1 slots (5 in all): no host holds 5, no balanced
    plan fits (2 buckets need two hosts of 2+, 3 buckets two of 2), so the fill plan
    takes each host in order as far as it goes: 1, 3, 1."""
    got = plain_and_general(hosts_of(1, 3, 1).build(), [SimJob("a", 0.0, 5.0, 5)])
    assert tuple(got["a"].hosts) == ("h0", "h1", "h2")
    assert tuple(got["a"].host_slots) == (1, 3, 1)


def test_hosts_far_wider_than_the_cluster_is_long() -> None:
    """A host of 1,000 slots among three of 4: the plain replay counts free hosts by
    searching the sorted free slots (no histogram 1,000 wide). With 700 of the big
    host held, 310 tasks fit no balanced plan (two buckets of 155 need two hosts that
    large) and the fill plan takes 4, 300, 4 and 2; the jobs behind wait for its end
    and then place first fit on the big host."""
    state = hosts_of(4, 1000, 4, 4).build()
    jobs = [
        SimJob("big", 0.0, 50.0, 700),
        SimJob("wide", 1.0, 10.0, 310),
        SimJob("even", 2.0, 10.0, 8),
        SimJob("odd", 3.0, 10.0, 5),
    ]
    got = plain_and_general(state, jobs)
    assert tuple(got["big"].hosts) == ("h1",)
    assert tuple(got["wide"].hosts) == ("h0", "h1", "h2", "h3")  # the fill plan: 4, 300, 4, 2
    assert tuple(got["wide"].host_slots) == (4, 300, 4, 2)
    assert got["even"].start == got["odd"].start == 11.0  # when "wide" ends
    assert tuple(got["even"].hosts) == tuple(got["odd"].hosts) == ("h1",)


def test_one_slot_hosts_take_the_first_free_hosts() -> None:
    """On one-slot hosts a job of n tasks takes the first n free hosts in host order
    (here h0 is held, so h1-h3)."""
    got = plain_and_general(
        hosts_of(1, 1, 1, 1, 1).build(),
        [SimJob("one", 0.0, 20.0, 1), SimJob("three", 1.0, 5.0, 3)],
    )
    assert tuple(got["one"].hosts) == ("h0",)
    assert tuple(got["three"].hosts) == ("h1", "h2", "h3")


def test_a_strict_queue_holds_behind_its_head_while_fcfs_starts() -> None:
    """Queues ``s`` (strict) and ``f`` (fcfs) of one priority on 4 slots: with 3 taken,
    s's 4-task head pends and holds s's 1-task job behind it, though a slot is free;
    f's 1-task job, later, starts at once. Once the slots free, the head starts, then
    the held job."""
    state = hosts_of(2, 2).queue("s", 0, picker="strict").queue("f", 0, picker="fcfs").build()
    jobs = [
        SimJob("blocker", 0.0, 100.0, 3, queue="f"),
        SimJob("head", 1.0, 10.0, 4, queue="s"),
        SimJob("held", 2.0, 5.0, 1, queue="s"),
        SimJob("free-rider", 3.0, 5.0, 1, queue="f"),
    ]
    got = plain_and_general(state, jobs)
    assert got["free-rider"].start == 3.0
    assert got["head"].start == 100.0
    assert got["held"].start == 110.0


def test_a_higher_priority_queue_goes_first() -> None:
    """On one host of 2 slots, held until 10: ``lo`` (priority 0) submits first, ``hi``
    (priority 10) later; at 10 hi's job starts, lo's only at 20."""
    state = hosts_of(2).queue("hi", 10).queue("lo", 0).build()
    jobs = [
        SimJob("run", 0.0, 10.0, 2, queue="lo"),
        SimJob("lo-job", 1.0, 10.0, 2, queue="lo"),
        SimJob("hi-job", 2.0, 10.0, 2, queue="hi"),
    ]
    got = plain_and_general(state, jobs, picker="fcfs")
    assert got["hi-job"].start == 10.0
    assert got["lo-job"].start == 20.0


def test_fairshare_takes_turns_between_users_in_one_session() -> None:
    """fairshare on one host of 2 slots: u1 submits three jobs, then u2 one, all at 0.
    u1's first job starts (equal priorities: the earlier job); u1 now holds a slot, so
    u2's job goes next, though submitted after u1's second; u1's others wait."""
    jobs = [SimJob(f"a{k}", 0.0, 10.0, 1, user="u1") for k in range(3)]
    jobs.append(SimJob("b", 0.0, 10.0, 1, user="u2"))
    got = plain_and_general(hosts_of(2).build(), jobs, picker="fairshare")
    assert got["a0"].start == got["b"].start == 0.0
    assert got["a1"].start == got["a2"].start == 10.0


def test_fairshare_counts_slots_held_by_running_jobs() -> None:
    """fairshare: u1's long job holds a slot of the 2; u2's blocker holds the other
    until 10. ``a`` (u1) and ``b`` (u2) wait from 2; at 10 one slot frees and u2, who
    holds none then, goes first although ``a`` was submitted first."""
    jobs = [
        SimJob("long", 0.0, 100.0, 1, user="u1"),
        SimJob("blocker", 1.0, 9.0, 1, user="u2"),
        SimJob("a", 2.0, 5.0, 1, user="u1"),
        SimJob("b", 2.0, 5.0, 1, user="u2"),
    ]
    got = plain_and_general(hosts_of(2).build(), jobs, picker="fairshare")
    assert got["b"].start == 10.0
    assert got["a"].start == 15.0


def test_fairshare_merged_with_a_strict_queue_of_its_priority() -> None:
    """A fairshare queue (u2 has share 3) and a strict queue of one priority on 4
    slots: the session merges them by the submit time of each queue's next job; the
    strict queue's head that cannot start holds it, the fairshare queue goes on."""
    state = (
        hosts_of(2, 2)
        .queue("fs", 0, picker="fairshare", shares={"u2": 3.0})
        .queue("st", 0, picker="strict")
        .build()
    )
    jobs = [
        SimJob("run", 0.0, 10.0, 3, queue="st"),
        SimJob("head", 1.0, 10.0, 2, queue="st"),
        SimJob("held", 1.0, 5.0, 1, queue="st"),
        SimJob("x1", 2.0, 10.0, 1, queue="fs", user="u1"),
        SimJob("y1", 3.0, 4.0, 1, queue="fs", user="u2"),
        SimJob("x2", 3.0, 4.0, 1, queue="fs", user="u1"),
    ]
    got = plain_and_general(state, jobs)
    assert got["x1"].start == 2.0
    assert got["head"].start == 10.0  # it waited for "run"; "held" behind it
    assert got["held"].start >= got["head"].start


def test_fairshare_merged_with_fcfs_keeps_a_too_wide_job_in_the_merge() -> None:
    """(Found by a review.) A fairshare queue and an fcfs queue of one priority: at 10,
    fairshare's next job is D (5 tasks, submitted at 3; only 4 slots free), so the fcfs
    queue's C (submitted at 2) goes before it, and then fairshare's B. Leaving D out of
    the merge because it is too wide would put B (submitted at 1) first: the replay
    leaves too-wide jobs out of a queue with its own order only when it is alone at its
    priority."""
    state = (
        ClusterBuilder()
        .host("h0", 4)
        .host("h1", 1)
        .queue("fs", 0, picker="fairshare", shares={"u1": 2.0})
        .queue("ff", 0, picker="fcfs")
        .build()
    )
    jobs = [
        SimJob("A", 0.0, 10.0, 4, user="u0", queue="fs"),
        SimJob("E", 0.0, 100.0, 1, user="u2", queue="ff"),
        SimJob("B", 1.0, 1.0, 2, user="u0", queue="fs"),
        SimJob("C", 2.0, 1.0, 3, user="u2", queue="ff"),
        SimJob("D", 3.0, 1.0, 5, user="u1", queue="fs"),
    ]
    got = plain_and_general(state, jobs)
    assert got["C"].start == 10.0
    assert got["B"].start == 11.0


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_backfill_sessions_that_plan_decide_as_the_general_path(backfill: str) -> None:
    """A plain workload under a backfill policy that plans takes the plain replay; a
    session in which a job cannot start is planned (on the replay's arrays,
    xce.sim.planned; through the core with ``plain_planning`` off) as on the general
    path: on one host of 4 slots, ``wide`` (4 tasks) waits for ``run`` and is planned at
    100; ``short`` (ends by its estimate at 12) backfills; ``long`` would delay ``wide``
    and waits for it."""
    jobs = [
        SimJob("run", 0.0, 100.0, 3, requested_time=100.0),
        SimJob("wide", 1.0, 50.0, 4, requested_time=50.0),
        SimJob("short", 2.0, 10.0, 1, requested_time=10.0),
        SimJob("long", 3.0, 200.0, 1, requested_time=200.0),
    ]
    got = plain_and_general(hosts_of(4).build(), jobs, picker="fcfs", backfill=backfill)
    core = plain_and_general(
        hosts_of(4).build(), jobs, picker="fcfs", backfill=backfill, plain_planning=False
    )
    assert got == core
    assert (got["run"].start, got["run"].planned_start) == (0.0, 0.0)
    assert (got["wide"].start, got["wide"].planned_start) == (100.0, 100.0)
    assert got["wide"].planned_ahead
    assert got["short"].start == 2.0
    assert got["short"].backfilled
    assert got["long"].start == 150.0
    assert not got["long"].backfilled


def test_a_preempting_queue_takes_the_plain_replay_its_sessions_run_by_the_core() -> None:
    """A queue that preempts keeps the plain replay; a session in which a job cannot
    start is run by the core: ``high`` (preempts ``low``) takes 2 of the 4 slots ``L``
    holds at 5; L goes back to its queue (its 20 slot-seconds lost), pends in the session
    that follows at once, and restarts when H ends."""
    state = hosts_of(4).queue("low", 0).queue("high", 10, preempts=["low"]).build()
    jobs = [
        SimJob("L", 0.0, 100.0, 4, queue="low"),
        SimJob("H", 5.0, 10.0, 2, queue="high"),
    ]
    got = plain_and_general(state, jobs, preemptor="lowest_priority_first")
    assert got["H"].start == 5.0
    assert (got["L"].start, got["L"].end) == (15.0, 115.0)
    assert (got["L"].preempted, got["L"].lost_slot_seconds) == (1, 20.0)


class LatestFirst:
    """A picker neither monotone nor offering PlainOrder: newest job first."""

    name = "latest"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        cursor = FcfsPicker().start(queue, list(reversed(jobs)), state)
        cursor._jobs.reverse()  # type: ignore[attr-defined]
        return cursor


def test_a_picker_without_a_plain_order_takes_the_general_path() -> None:
    """A picker that is not monotone_in_session and offers no ``start_plain`` keeps
    the general path (its order is its own): the plain replay is not taken."""
    registry = default_pickers(plugins=False)
    registry.register(LatestFirst())
    jobs = [SimJob(f"j{i}", 0.0, 10.0, 2) for i in range(3)]
    sim = Simulation(hosts_of(2).build(), jobs, SimOptions(picker="latest"), pickers=registry)
    assert plain_replay(sim) is None
    result = sim.run()
    verify(result, sim.jobs)
    assert [r.start for r in result.records] == [20.0, 10.0, 0.0]


def test_a_job_wider_than_the_ok_hosts_is_unrunnable_with_the_engines_message() -> None:
    """A job wider than the ok hosts' slots (a closed host's slots do not count) is
    reported unrunnable with the general path's triage message, and never starts."""
    state = ClusterBuilder().host("h0", 4).host("h1", 4, status="closed").build()
    got = plain_and_general(state, [SimJob("wide", 0.0, 5.0, 6), SimJob("ok", 0.0, 5.0, 4)])
    assert got["wide"].start is None
    assert got["wide"].unrunnable
    assert "6 slot" in got["wide"].unrunnable
    assert tuple(got["ok"].hosts) == ("h0",)


def test_walltime_kills_and_zero_second_jobs_at_one_instant() -> None:
    """enforce_walltime: a job whose estimate (3) is under its runtime (10) ends at 3,
    killed; a zero-second job starts and ends at its submission; jobs submitted together
    and ending together are sequenced alike on both paths."""
    jobs = [
        SimJob("killed", 0.0, 10.0, 2, requested_time=3.0),
        SimJob("zero", 0.0, 0.0, 2),
        SimJob("same-end", 1.0, 2.0, 2),
        SimJob("after", 3.0, 1.0, 4),
    ]
    got = plain_and_general(hosts_of(2, 2).build(), jobs, enforce_walltime=True)
    assert (got["killed"].end, got["killed"].killed) == (3.0, True)
    assert (got["zero"].start, got["zero"].end) == (0.0, 0.0)
    assert got["after"].start == 3.0


# --- eligibility ----------------------------------------------------------------------


def base_cluster() -> ClusterBuilder:
    return ClusterBuilder().hosts(3, slots=4, mem=16.0, type="X86_64")


BASE_JOBS = [SimJob(f"j{i}", float(i), 10.0, 1 + i % 5) for i in range(8)]


def test_the_base_of_the_eligibility_cases_is_plain() -> None:
    """The workload every case below changes in one way is plain: so each None below
    is that one change's doing."""
    sim = Simulation(base_cluster().build(), BASE_JOBS, SimOptions())
    assert plain_replay(sim) is not None


def _with_resreq(text: str) -> Callable[[], tuple[ClusterState, list[SimJob], SimOptions]]:
    def make() -> tuple[ClusterState, list[SimJob], SimOptions]:
        jobs = list(BASE_JOBS)
        jobs[3] = SimJob("j3", 3.0, 10.0, 2, resreq=text)
        return base_cluster().build(), jobs, SimOptions()

    return make


def _with_options(**options: Any) -> Callable[[], tuple[ClusterState, list[SimJob], SimOptions]]:
    def make() -> tuple[ClusterState, list[SimJob], SimOptions]:
        return base_cluster().build(), list(BASE_JOBS), SimOptions(**options)

    return make


def _with_cluster(
    change: Callable[[ClusterBuilder], ClusterBuilder],
) -> Callable[[], tuple[ClusterState, list[SimJob], SimOptions]]:
    def make() -> tuple[ClusterState, list[SimJob], SimOptions]:
        return change(base_cluster()).build(), list(BASE_JOBS), SimOptions()

    return make


def _queue_picked_by(picker: str) -> Callable[[], tuple[ClusterState, list[SimJob], SimOptions]]:
    def make() -> tuple[ClusterState, list[SimJob], SimOptions]:
        state = base_cluster().queue("normal", 0, picker=picker).build()
        return state, list(BASE_JOBS), SimOptions()

    return make


NOT_PLAIN = {
    "select": _with_resreq("select[mem>=1]"),
    "rusage": _with_resreq("rusage[mem=1]"),
    "span": _with_resreq("span[ptile=1]"),
    "order": _with_resreq("order[slots]"),
    "same": _with_resreq("same[type]"),
    "interval": _with_options(interval=60.0),
    "fast_paths off": _with_options(fast_paths=False),
    "plain_replay off": _with_options(plain_replay=False),
    "limits": _with_cluster(lambda b: b.limit("cap", slots=6)),
    "reservation": _with_cluster(lambda b: b.reservation("maint", 50.0, 60.0, hosts=["h0"])),
    "initial work that never ends": _with_cluster(
        lambda b: b.running("r0", {"h0": 2}, start_time=0.0)
    ),
    "initial work holding memory": _with_cluster(
        lambda b: (
            b.resource("mem", "consumable")
            .host("hm", 4, resources={"mem": 100})
            .running("r0", {"hm": 2}, rusage={"mem": 10}, start_time=0.0, runtime=30.0)
        )
    ),
    "initial work under fairshare": _with_cluster(
        lambda b: b.picker("fairshare").running("r0", {"h0": 2}, start_time=0.0, runtime=30.0)
    ),
}


PLAIN_FAIRSHARE = {
    "picker fairshare": _with_options(picker="fairshare"),
    "queue picker fairshare": _queue_picked_by("fairshare"),
}


@pytest.mark.parametrize("name", list(PLAIN_FAIRSHARE))
def test_fairshare_queues_take_the_plain_replay(name: str) -> None:
    """fairshare is not monotone, but offers its order through PlainOrder: a workload
    under it (as the default picker or a queue's) is plain, and replayed as the general
    path replays it."""
    state, jobs, options = PLAIN_FAIRSHARE[name]()
    assert isinstance(plain_replay(Simulation(state, jobs, options)), PlainReplay)
    plain_and_general(state, jobs, picker=options.picker)


@pytest.mark.parametrize("name", list(NOT_PLAIN))
def test_non_plain_replays_take_the_general_path(name: str) -> None:
    """Each non-plain input or option (a select, rusage, span, order or same requirement, an
    interval, fast paths or the plain
    replay off, limits, a reservation, initial work that never ends, holds more than
    slots, or runs under a picker with an order of its own) makes
    ``plain_replay`` None; the general path still replays it: every job ends once,
    within capacity."""
    state, jobs, options = NOT_PLAIN[name]()
    sim = Simulation(state, jobs, options)
    assert plain_replay(sim) is None
    with mock.patch.object(PlainReplay, "run", side_effect=AssertionError("plain path taken")):
        result = sim.run()
    verify(result, sim.jobs)
    assert all(r.start is not None and r.unrunnable is None for r in result.records)


@pytest.mark.parametrize(
    "job",
    [
        SimJob("bad", 3.0, 10.0, 2, requested_time=math.nan),
        SimJob("bad", 3.0, 10.0, 2, requested_time=math.inf),
        SimJob("bad", 3.0, 1e16, 2),
        SimJob("bad", 3.0, True, 2),
    ],
    ids=["estimate nan", "estimate inf", "runtime past the limit", "runtime a bool"],
)
def test_numbers_the_core_refuses_take_the_general_path(job: SimJob) -> None:
    """A job whose times the core refuses (built in Python: the loaders refuse them
    first) is not replayed plain: the general path refuses it with the core's error,
    where the plain replay would have run it (review finding)."""
    jobs = [*BASE_JOBS[:3], job]
    sim = Simulation(base_cluster().build(), jobs, SimOptions())
    assert plain_replay(sim) is None
    with pytest.raises(EventError, match="JobSubmitted: job 'bad'"):
        sim.run()


def test_the_last_end_past_the_limit_takes_the_general_path() -> None:
    """Valid times whose schedule could end past MAX_NUMBER: not plain (the core would
    refuse such a start or end)."""
    jobs = [SimJob("a", 0.0, 6e14, 1), SimJob("b", 1.0, 6e14, 12)]
    assert plain_replay(Simulation(base_cluster().build(), jobs, SimOptions())) is None


# --- whole traces (the slow suite) -------------------------------------------------------

TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "traces"


def _files(
    jobs: list[SimJob], hosts: int, policy: tuple[str, str | None], plain: bool, out: Path
) -> bytes:
    """``jobs.csv`` and ``metrics.json`` of one replay on ``hosts`` one-slot hosts."""
    picker, backfill = policy
    options = SimOptions(picker=picker, backfill=backfill, single_queue=True, plain_replay=plain)
    sim = Simulation(uniform_cluster(hosts, 1), jobs, options)
    assert (sim._plain_replay() is not None) is plain
    result = sim.run()
    verify(result, sim.jobs)
    out.mkdir(parents=True, exist_ok=True)
    write_jobs_csv(result.records, out / "jobs.csv")
    write_metrics(metrics(result), out / "metrics.json")
    return (out / "jobs.csv").read_bytes() + (out / "metrics.json").read_bytes()


LANL = ("LANL-CM5-1994-4.1-cln.swf.gz", 1024)
KTH = ("KTH-SP2-1996-2.1-cln.swf.gz", 100)
WHOLE = {  # (trace, hosts), (picker, backfill), job limit (None: whole)
    "LANL-CM5-strict": (LANL, ("strict", None), None),
    "LANL-CM5-fcfs": (LANL, ("fcfs", None), None),
    "LANL-CM5-fairshare": (LANL, ("fairshare", None), None),
    "KTH-SP2-strict": (KTH, ("strict", None), None),
    "KTH-SP2-fcfs": (KTH, ("fcfs", None), None),
    "KTH-SP2-fairshare": (KTH, ("fairshare", None), None),
    "KTH-SP2-fcfs+easy": (KTH, ("fcfs", "easy"), None),
    "KTH-SP2-fcfs+conservative-3000": (KTH, ("fcfs", "conservative"), 3_000),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WHOLE))
def test_whole_trace_same_bytes_both_ways(name: str, tmp_path: Path) -> None:
    """A whole trace (a prefix under conservative) on its machine, the plain replay and
    the general loop (its other shortcuts on) side by side, under strict, fcfs,
    fairshare and backfill: byte-identical ``jobs.csv`` and ``metrics.json``."""
    (trace, hosts), policy, limit = WHOLE[name]
    path = TRACES / trace
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    jobs, _ = load_workload(str(path), limit=limit)
    fast = _files(jobs, hosts, policy, True, tmp_path / "plain")
    general = _files(jobs, hosts, policy, False, tmp_path / "general")
    assert fast == general


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(
    jobs=st.integers(0, 20),
    ops=st.lists(
        st.tuples(st.booleans(), st.integers(0, 70), st.integers(0, 9), st.integers(0, 1)),
        max_size=60,
    ),
)
def test_the_width_index_finds_the_first_job_that_fits(
    jobs: int, ops: list[tuple[bool, int, int, int]]
) -> None:
    """``_ByWidth`` (the plain replay's index of pending jobs by task count, per level)
    answers "the first place from ``at`` on whose job wants at most ``slots``" as a scan
    does, after any sequence of jobs pending and leaving, at places past its first size
    too (it grows)."""
    index = plain_module._ByWidth(jobs, 2)
    held: list[dict[int, int]] = [{}, {}]
    for put, at, value, lv in ops:
        if put:
            tasks = value + 1 if value < 8 else plain_module._NO_JOB
            index.set(lv, at, tasks)
            held[lv][at] = tasks
        else:
            fits = [p for p, t in sorted(held[lv].items()) if p >= at and t <= value]
            assert index.first(lv, at, value) == (fits[0] if fits else -1)


def test_random_cases_reach_the_width_index_past_a_job_that_pends() -> None:
    """The property's derandomized cases have fcfs sessions in which the width index
    starts a job past one that pends (the jobs it leaves untried), the shortcut
    ``width_index`` stands for."""
    skipped = 0
    fitting = PlainReplay._fitting

    def traced(self: PlainReplay, lv: int, now: float) -> None:
        nonlocal skipped
        before = list(self.levels[lv])
        fitting(self, lv, now)
        after = set(self.levels[lv])
        started = [k for k, i in enumerate(before) if i not in after]
        skipped += any(k > 0 and before[0] in after for k in started)

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, phases=[Phase.generate])
    @given(case=plain_cases())
    def collect(case: Case) -> None:
        with mock.patch.object(PlainReplay, "_fitting", traced):
            Simulation(case.state(), case.jobs, case.options(True)).run()

    collect()
    assert skipped >= 5, skipped
