"""The simulation engine (``xce.sim.engine``): schedules checked against independent
computations, sessions, walltime enforcement, unrunnable jobs, clusters with requirement
mixes and running work, and the exact session shortcuts.

Acceptance (issue 5): "With `--picker strict` on a single-slot-per-host cluster, every
job's start time equals an independent strict-FIFO computation written in the tests
(fungible processors, no backfilling); with `fcfs` the schedule is never worse for any job
that `strict` could start immediately (table tests)."
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from strategies import Scenario, scenarios
from test_sim_properties import timed_scenarios
from xce.alloc import Dispatched, Pending, PendReason
from xce.cluster import AdvanceReservation, ClusterState, PendingJob, load_state
from xce.core import Session
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.generate import generate_workload
from xce.sim.model import SimJob
from xce.sim.swf import read_swf

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cluster.yaml"
TRACES = Path(__file__).parent.parent.parent / "shared/data/traces"
KTH = TRACES / "KTH-SP2-1996-2.1-cln.swf.gz"
needs_kth = pytest.mark.skipif(not KTH.exists(), reason=f"trace not found: {KTH}")


# --- the independent strict-FIFO computation ---------------------------------------------


def strict_fifo_starts(
    jobs: Sequence[SimJob], processors: int, interval: float | None = None
) -> dict[str, float]:
    """Start time of every job that fits the machine under strict FIFO on ``processors``
    fungible processors: no backfilling, one queue in submit order (ties in list order).

    Event-driven: at each time, finishes first, then submissions, then jobs start from the
    head of the queue while they fit. A job that runs 0 s ends at its start time, which is
    an event of its own, so the queue is looked at again at that same time. With
    ``interval``, jobs start only at multiples of it, one decision per multiple.
    """
    order = sorted(
        (job for job in enumerate(jobs) if (job[1].tasks or 1) <= processors),
        key=lambda ij: (ij[1].submit, ij[0]),
    )
    arrivals = deque(job for _, job in order)
    queue: deque[SimJob] = deque()
    ends: list[tuple[float, int]] = []  # (end time, processors) of running jobs
    free, now, decided = processors, -math.inf, -math.inf
    starts: dict[str, float] = {}
    while arrivals or queue:
        times = [ends[0][0]] if ends else []
        if arrivals:
            times.append(arrivals[0].submit)
        if interval is not None and queue:
            tick = math.ceil(now / interval) * interval
            times.append(tick if tick > decided else tick + interval)
        now = min(times)
        while ends and ends[0][0] <= now:
            free += heapq.heappop(ends)[1]
        while arrivals and arrivals[0].submit <= now:
            queue.append(arrivals.popleft())
        if interval is not None and (now % interval != 0 or now == decided):
            continue
        decided = now
        while queue and (queue[0].tasks or 1) <= free:
            job = queue.popleft()
            starts[job.id] = now
            free -= job.tasks or 1
            heapq.heappush(ends, (now + job.runtime, job.tasks or 1))
    return starts


def run(jobs: Sequence[SimJob], cluster: ClusterState, **options: object) -> SimResult:
    """Simulate and check the end-of-run invariants."""
    result = Simulation(cluster, jobs, SimOptions(**options)).run()  # type: ignore[arg-type]
    verify(result, jobs)
    return result


def starts(result: SimResult) -> dict[str, float]:
    return {r.job.id: r.start for r in result.records if r.start is not None}


def waits(result: SimResult) -> dict[str, float]:
    return {r.job.id: r.wait for r in result.records if r.wait is not None}


def test_the_oracle_on_a_hand_made_case() -> None:
    """The oracle itself, on a case worked out by hand (4 processors)."""
    jobs = [
        SimJob("a", 0, 10, 3),
        SimJob("b", 1, 5, 2),  # waits for a: 10
        SimJob("c", 2, 1, 1),  # fits beside a, but b is ahead: 10
        SimJob("d", 2, 0, 1),  # 0 s: starts and ends at 10 (beside b and c)
        SimJob("e", 3, 4, 4),  # waits for b: 15
        SimJob("big", 0, 1, 5),  # never fits: left out
    ]
    assert strict_fifo_starts(jobs, 4) == {"a": 0, "b": 10, "c": 10, "d": 10, "e": 15}
    assert strict_fifo_starts(jobs, 4, interval=4) == {"a": 0, "b": 12, "c": 12, "d": 12, "e": 20}


# --- strict == the oracle ----------------------------------------------------------------

fungible_jobs = st.lists(
    st.tuples(
        st.integers(0, 60),  # submit: ties are frequent
        st.sampled_from((0, 1, 5, 10, 30, 100)) | st.integers(0, 50),  # runtime, 0 s too
        st.integers(1, 6) | st.integers(1, 10),  # tasks: some wider than the machine
    ),
    min_size=1,
    max_size=30,
).map(lambda rows: [SimJob(f"j{i}", float(s), float(r), t) for i, (s, r, t) in enumerate(rows)])


@given(jobs=fungible_jobs, hosts=st.integers(1, 8), sort=st.booleans())
def test_strict_matches_the_independent_fifo(jobs: list[SimJob], hosts: int, sort: bool) -> None:
    """Acceptance: on single-slot hosts, every start under ``strict`` equals the oracle's;
    jobs wider than the machine are unrunnable. (Unsorted input: ties in list order.)"""
    if sort:
        jobs = sorted(jobs, key=lambda j: j.submit)
    result = run(jobs, uniform_cluster(hosts, 1), picker="strict", single_queue=True)
    assert starts(result) == strict_fifo_starts(jobs, hosts)
    too_big = {j.id for j in jobs if (j.tasks or 1) > hosts}
    assert {r.job.id for r in result.unrunnable} == too_big


@needs_kth
def test_strict_matches_the_independent_fifo_on_kth_prefix() -> None:
    """Acceptance: the first 1,500 jobs of KTH-SP2 on 100 single-slot hosts."""
    jobs = read_swf(KTH, limit=1500).jobs
    assert len(jobs) == 1500
    result = run(jobs, uniform_cluster(100, 1), picker="strict", single_queue=True)
    expected = strict_fifo_starts(jobs, 100)
    assert len(expected) == 1500
    assert starts(result) == expected


def test_strict_with_queues_uses_the_queue_order_not_one_fifo() -> None:
    """Without ``--single-queue`` each queue is its own FIFO: a blocked queue does not
    hold another (the oracle applies to ``--single-queue`` only)."""
    jobs = [SimJob("a", 0, 100, 1), SimJob("b", 1, 5, 2), SimJob("c", 2, 5, 1, queue="q2")]
    split = run(jobs, uniform_cluster(2, 1), picker="strict")
    single = run(jobs, uniform_cluster(2, 1), picker="strict", single_queue=True)
    assert starts(single) == strict_fifo_starts(jobs, 2) == {"a": 0, "b": 100, "c": 105}
    assert starts(split) == {"a": 0, "b": 100, "c": 2}  # q2 is not behind b
    assert {r.job.queue for r in single.records} == {"normal"}


# --- fcfs vs strict ----------------------------------------------------------------------

FCFS_VS_STRICT = {
    # name: (hosts, jobs (id, submit, runtime, tasks)); a big head job blocks strict.
    "big head blocks small jobs": (4, [("big", 0, 100, 4), ("wide", 1, 50, 4), ("s1", 2, 10, 1)]),
    "backfill beside a running job": (
        4,
        [("a", 0, 100, 2), ("big", 1, 10, 4), ("s1", 2, 10, 1), ("s2", 3, 10, 1), ("s3", 50, 5, 1)],
    ),
    "late arrivals find the machine free": (
        3,
        [("a", 0, 20, 2), ("b", 1, 10, 3), ("c", 2, 5, 1), ("d", 100, 5, 3), ("e", 101, 5, 1)],
    ),
    "zero-runtime jobs": (2, [("a", 0, 0, 2), ("b", 0, 10, 2), ("c", 0, 0, 1), ("d", 5, 1, 1)]),
    "equal submit times": (3, [("a", 5, 10, 2), ("b", 5, 10, 2), ("c", 5, 10, 1), ("d", 5, 1, 1)]),
}


@pytest.mark.parametrize(("hosts", "rows"), list(FCFS_VS_STRICT.values()), ids=list(FCFS_VS_STRICT))
def test_fcfs_never_worse_for_jobs_strict_starts_at_once(
    hosts: int, rows: list[tuple[str, float, float, int]]
) -> None:
    """Acceptance (table): every job whose wait is 0 under ``strict`` also waits 0 under
    ``fcfs``, and in these cases fcfs's total wait is no more than strict's."""
    jobs = [SimJob(*row) for row in rows]
    cluster = uniform_cluster(hosts, 1)
    strict = waits(run(jobs, cluster, picker="strict", single_queue=True))
    fcfs = waits(run(jobs, cluster, picker="fcfs", single_queue=True))
    for job, wait in strict.items():
        if wait == 0:
            assert fcfs[job] == 0, job
    assert sum(fcfs.values()) <= sum(strict.values())


def test_fcfs_starts_the_small_jobs_strict_holds_behind_a_big_head() -> None:
    jobs = [SimJob("a", 0, 100, 2), SimJob("big", 1, 10, 4), SimJob("s", 2, 10, 1)]
    strict = starts(run(jobs, uniform_cluster(4, 1), picker="strict", single_queue=True))
    fcfs = starts(run(jobs, uniform_cluster(4, 1), picker="fcfs", single_queue=True))
    assert strict == {"a": 0, "big": 100, "s": 110}
    assert fcfs == {"a": 0, "big": 100, "s": 2}


def test_fcfs_can_delay_a_job_strict_starts_at_once_later_in_a_run() -> None:
    """Why the acceptance claim holds per session, not over a whole run: C backfills
    under fcfs, which delays the wide B, and B then holds the machine when D arrives, so
    D (no wait under strict) waits under fcfs. This pins down the limit of the claim."""
    jobs = [
        SimJob("A", 0, 10, 1),
        SimJob("B", 1, 50, 2),
        SimJob("C", 2, 20, 1),
        SimJob("D", 65, 1, 1),
    ]
    strict = waits(run(jobs, uniform_cluster(2, 1), picker="strict", single_queue=True))
    fcfs = waits(run(jobs, uniform_cluster(2, 1), picker="fcfs", single_queue=True))
    assert strict["D"] == 0
    assert fcfs["D"] == 7


def _single_queue(scenario: Scenario) -> ClusterState:
    state = scenario.state
    return replace(state, jobs=tuple(replace(j, queue="normal") for j in state.jobs))


@given(scenario=scenarios(max_jobs=15))
def test_in_one_session_fcfs_starts_whatever_strict_starts(scenario: Scenario) -> None:
    """The claim per session, on random clusters and requirement mixes: given the same
    state and one queue, strict and fcfs decide alike up to strict's first job held
    (``QUEUE_BLOCKED``); when that job waits behind a head, strict starts nothing more,
    so fcfs dispatches every job strict dispatches, on the same hosts. (A job held by a
    job waiting on a limit, issue 9, is what lets strict go on, and differ.)"""
    state = _single_queue(scenario)
    strict = Session(state, picker="strict").run().decisions
    fcfs = {d.job: d for d in Session(state, picker="fcfs").run().decisions}
    held = False
    for decision in strict:
        if isinstance(decision, Pending) and decision.info.reason is PendReason.QUEUE_BLOCKED:
            held = True
        if not held:
            assert type(fcfs[decision.job]) is type(decision)
            if isinstance(decision, Dispatched):
                assert fcfs[decision.job] == decision
            else:
                assert fcfs[decision.job].info.reason is decision.info.reason
    if not state.limits:  # nobody can wait on a limit: every held job waits behind a head
        for decision in strict:
            if isinstance(decision, Dispatched):
                assert fcfs[decision.job] == decision


# --- sessions every --interval ----------------------------------------------------------

off_grid_jobs = st.lists(
    st.tuples(st.integers(0, 20), st.integers(1, 9), st.integers(0, 40), st.integers(1, 5)),
    min_size=1,
    max_size=25,
).map(
    lambda rows: sorted(
        (SimJob(f"j{i}", 10.0 * k + off, float(r), t) for i, (k, off, r, t) in enumerate(rows)),
        key=lambda j: j.submit,
    )
)


@given(jobs=off_grid_jobs, hosts=st.integers(1, 5), picker=st.sampled_from(("strict", "fcfs")))
def test_interval_sessions_only_at_multiples(jobs: list[SimJob], hosts: int, picker: str) -> None:
    """With ``interval=10`` every job starts at a multiple of 10, and (strict) exactly
    when sessions every 10 s would start it. Submit times are off the grid here; see the
    xfail test below for submissions on it."""
    result = run(jobs, uniform_cluster(hosts, 1), picker=picker, single_queue=True, interval=10)
    assert all(start % 10 == 0 for start in starts(result).values())
    if picker == "strict":
        assert starts(result) == strict_fifo_starts(jobs, hosts, interval=10)


class _SessionLog(Simulation):
    """The engine, noting the time of every session it runs."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.session_times: list[float] = []

    def _session(self, now: float) -> None:
        self.session_times.append(now)
        super()._session(now)


@pytest.mark.parametrize(("interval", "expected"), [(None, [3, 4, 28]), (10, [10, 20, 30, 40])])
def test_session_times(interval: float | None, expected: list[float]) -> None:
    """Sessions at every event time with jobs pending, or at the multiples of the
    interval while jobs wait (none while the cluster is idle)."""
    jobs = [SimJob("a", 3, 25, 1), SimJob("b", 4, 5, 1), SimJob("c", 200, 5, 1)]
    options = SimOptions(interval=interval, incremental=False, plain_replay=False)
    sim = _SessionLog(uniform_cluster(1, 1), jobs, options)
    result = sim.run()
    verify(result, jobs)
    assert sim.session_times == [*expected, 200]  # 200 is on the grid: a session there
    assert result.stats.sessions == len(sim.session_times)


def test_interval_job_submitted_on_a_multiple_starts_there() -> None:
    alone = [SimJob("X", 0.5, 100, 2), SimJob("A", 20, 5, 1)]
    with_waiting = [*alone, SimJob("Y", 1, 5, 3)]
    a_alone = starts(run(alone, uniform_cluster(3, 1), picker="fcfs", interval=10))["A"]
    a_waiting = starts(run(with_waiting, uniform_cluster(3, 1), picker="fcfs", interval=10))["A"]
    assert a_waiting == 20  # a session was due at 20 anyway
    assert a_alone == a_waiting


def test_default_sessions_at_every_event_time() -> None:
    jobs = [SimJob("a", 3, 25, 1), SimJob("b", 4, 5, 1)]
    assert starts(run(jobs, uniform_cluster(1, 1))) == {"a": 3, "b": 28}


# --- --enforce-walltime -----------------------------------------------------------------

WALLTIME = {
    # name: (runtime, requested_time, enforce, (end, killed))
    "overrun, enforced": (100.0, 60.0, True, (60.0, True)),
    "overrun, not enforced": (100.0, 60.0, False, (100.0, False)),
    "within, enforced": (30.0, 60.0, True, (30.0, False)),
    "exactly the request": (60.0, 60.0, True, (60.0, False)),
    "no request, enforced": (100.0, None, True, (100.0, False)),
}


@pytest.mark.parametrize(
    ("runtime", "requested", "enforce", "expected"), list(WALLTIME.values()), ids=list(WALLTIME)
)
def test_enforce_walltime(
    runtime: float, requested: float | None, enforce: bool, expected: tuple[float, bool]
) -> None:
    """A job that overruns its requested time ends there (``killed``) when enforced; the
    job behind it starts when it ends."""
    jobs = [SimJob("a", 0, runtime, 1, requested_time=requested), SimJob("b", 1, 5, 1)]
    result = run(jobs, uniform_cluster(1, 1), enforce_walltime=enforce)
    a, b = result.records
    assert (a.end, a.killed) == expected
    assert b.start == expected[0]
    assert not b.killed


QUEUE_LIMITS = {
    # name: (runtime, requested_time, queue's max_runtime, default_runtime, (end, killed))
    "request capped by max_runtime": (100.0, 80.0, 50.0, None, (50.0, True)),
    "request within max_runtime": (100.0, 40.0, 50.0, None, (40.0, True)),
    "no request: default_runtime": (100.0, None, None, 30.0, (30.0, True)),
    "no request, no default: max_runtime": (100.0, None, 70.0, None, (70.0, True)),
    "within the queue's limit": (20.0, None, 70.0, 30.0, (20.0, False)),
}


@pytest.mark.parametrize("backfill", ["none", "easy"])
@pytest.mark.parametrize(
    ("runtime", "requested", "max_runtime", "default", "expected"),
    list(QUEUE_LIMITS.values()),
    ids=list(QUEUE_LIMITS),
)
def test_enforce_walltime_kills_at_the_queues_limit(
    runtime: float,
    requested: float | None,
    max_runtime: float | None,
    default: float | None,
    expected: tuple[float, bool],
    backfill: str,
) -> None:
    """--enforce-walltime kills a job at the time limit planning assumes for it: its
    requested time capped by the queue's max_runtime, else the queue's default_runtime,
    else its max_runtime, as Slurm's MaxTime and DefaultTime (it was the requested time
    alone: a job past max_runtime ran on, and one without a request never ended early).
    The same in the plain replay (none) and the planning one (easy)."""
    limits = {"max_runtime": max_runtime, "default_runtime": default}
    state = (
        ClusterBuilder()
        .queue("normal", 1, **{k: v for k, v in limits.items() if v is not None})
        .hosts(1, slots=1)
        .backfill(backfill)
        .build()
    )
    jobs = [SimJob("a", 0, runtime, 1, requested_time=requested), SimJob("b", 1, 5, 1)]
    for fast in (True, False):
        result = run(jobs, state, enforce_walltime=True, fast_paths=fast)
        a, b = result.records
        assert (a.end, a.killed) == expected, fast
        assert b.start == expected[0]


# --- unrunnable jobs ---------------------------------------------------------------------

UNRUNNABLE = {
    # name: (resreq, tasks, words of the reason)
    "too many tasks": ("", 600, "600 slot"),
    "no host matches the select": ("select[type==SPARC]", 1, "no host matches"),
    "select on an amount no host has": ("select[mem>2000000]", 1, "no host matches"),
    "span over too few hosts": ("span[hosts=1]", 40, "span[hosts=1]"),
    "more licences than exist": ("rusage[lic_x=5]", 1, "lic_x"),
    "a compound that cannot fit": ("40*{select[type==ARM]} + 1*{-}", None, "40 slot"),
}


@pytest.mark.parametrize(
    ("resreq", "tasks", "why"), list(UNRUNNABLE.values()), ids=list(UNRUNNABLE)
)
@pytest.mark.parametrize("picker", ["fcfs", "strict"])
def test_unrunnable_jobs_are_reported_and_do_not_stop_the_run(
    resreq: str, tasks: int | None, why: str, picker: str
) -> None:
    """A job that cannot run even on the empty cluster is reported (with why), never
    started, does not block a strict queue, and the run goes on to the end."""
    cluster = load_state(EXAMPLE)
    jobs = [
        SimJob("before", 0, 10, 1),
        SimJob("never", 1, 10, tasks, resreq=resreq),
        SimJob("after", 2, 10, 1),
    ]
    result = run(jobs, cluster, picker=picker, single_queue=True)
    before, never, after = result.records
    assert (never.start, never.end, never.hosts) == (None, None, ())
    assert why in (never.unrunnable or "")
    assert result.unrunnable == [never]
    assert (before.start, after.start) == (0, 2)


def test_a_job_blocked_by_work_that_never_ends_is_unrunnable() -> None:
    """Running work without a runtime holds its hosts for ever: a job that needs them is
    reported, the rest run on what is left."""
    cluster = ClusterBuilder().hosts(2).running("r1", on={"h0": 1}).build()
    jobs = [SimJob("wide", 0, 10, 2), SimJob("x", 0, 10, 1), SimJob("y", 0, 10, 1)]
    result = run(jobs, cluster, picker="strict")
    wide, x, y = result.records
    assert wide.unrunnable is not None
    assert (x.start, y.start) == (0, 10)
    assert x.hosts == y.hosts == ("h1",)


# --- clusters with requirements and running work -------------------------------------------


@pytest.fixture(scope="module")
def example_cluster() -> ClusterState:
    return load_state(EXAMPLE)


@pytest.fixture(scope="module")
def mixed_workload(example_cluster: ClusterState) -> list[SimJob]:
    return generate_workload(300, seed=5, cluster=example_cluster)


@pytest.mark.parametrize("picker", ["fcfs", "strict", "fairshare"])
def test_compound_and_alternative_jobs_run_on_the_example_cluster(
    example_cluster: ClusterState, mixed_workload: list[SimJob], picker: str
) -> None:
    """The generated mix (compound, alternative, select, licences, limits) runs to the end
    on examples/cluster.yaml: every job ends, alternatives say which one they used, and
    each claim lands on a host whose type the chosen alternative allows."""
    result = run(mixed_workload, example_cluster, picker=picker)
    assert result.unrunnable == []
    compound = [r for r in result.records if r.job.tasks is None]
    alternative = [r for r in result.records if "||" in r.job.resreq]
    assert compound
    assert alternative
    assert all(r.alternative is not None for r in alternative)
    assert all(r.slots > 0 and r.end is not None for r in compound)
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    types = {h["name"]: h["attributes"]["type"] for h in doc["hosts"]}
    for r in alternative:
        chosen = r.job.resreq.split("||")[r.alternative or 0]
        for wanted in ("ARM", "X86_64"):
            if f"type=={wanted}" in chosen:
                assert {types[h] for h in r.hosts} == {wanted}, r
    assert not any("node07" in r.hosts for r in result.records)  # closed


RUNNING = {
    # name: (start_time, runtime, expected start of the 2-task job)
    "ends during the run": (0.0, 50.0, 50.0),
    "started before time 0": (-30.0, 50.0, 20.0),
    "already over at time 0": (-100.0, 50.0, 0.0),
}


@pytest.mark.parametrize(
    ("start_time", "runtime", "expected"), list(RUNNING.values()), ids=list(RUNNING)
)
def test_running_work_in_the_cluster_file_is_honoured(
    start_time: float, runtime: float, expected: float
) -> None:
    """Running work holds its hosts until start_time + runtime; the cluster's pending jobs
    are ignored (the workload replaces them)."""
    cluster = (
        ClusterBuilder()
        .hosts(2)
        .running("r1", on={"h0": 1}, start_time=start_time, runtime=runtime)
        .job("ignored", 1)
        .build()
    )
    result = run([SimJob("x", 0, 10, 2)], cluster)
    (x,) = result.records
    assert x.start == expected
    assert [r.job.id for r in result.records] == ["x"]


def test_running_work_of_the_example_cluster_holds_its_hosts(
    example_cluster: ClusterState,
) -> None:
    """r1 holds 8 slots of node01 and node02 for ever: a job wanting 16 slots on one of
    them never gets it; node07 is closed."""
    job = SimJob("x", 0, 10, 16, resreq="select[model==XeonE5] span[hosts=1]")
    (record,) = run([job], example_cluster).records
    assert record.start == 0
    assert record.hosts == ("node03",) or record.hosts == ("node04",)


# --- exact session shortcuts -------------------------------------------------------------


def _same_records(cluster: ClusterState, jobs: list[SimJob], **options: object) -> None:
    fast = run(jobs, cluster, **options)
    exact = run(jobs, cluster, incremental=False, **options)
    assert fast.records == exact.records


def test_a_volatile_job_behind_a_blocked_strict_head_waits_for_it() -> None:
    """Regression (found by the property below): nothing is freed between t=1 and t=5, so
    the incremental session at t=2 tries the new select[slots<3] job j7, whose select
    can turn true as resources fall; under strict it must still wait behind j0 (3 tasks,
    2 free), which starts only when j6 ends at t=5."""
    cluster = ClusterBuilder().host("h0", 3).host("h1", 1).running("r0", on={"h0": 1}).build()
    jobs = [SimJob("j0", 1.0, 0.0, None, resreq="1*{-} + 2*{-}")]
    jobs += [SimJob(f"j{i}", 0.0, 5.0 if i == 6 else 0.0, 1) for i in range(1, 7)]
    jobs.append(SimJob("j7", 2.0, 0.0, 1, resreq="select[slots<3]"))
    _same_records(cluster, jobs, picker="strict")
    starts = {r.job.id: r.start for r in run(jobs, cluster, picker="strict").records}
    assert (starts["j0"], starts["j7"]) == (5.0, 5.0)


@given(case=timed_scenarios(), picker=st.sampled_from(("fcfs", "strict")), single=st.booleans())
def test_shortcuts_give_the_same_records_on_random_mixes(
    case: tuple[Scenario, list[SimJob]], picker: str, single: bool
) -> None:
    """``incremental=False`` (a full session at every event time) gives exactly the
    records of the default, on random clusters, requirement mixes and queues."""
    scenario, jobs = case
    _same_records(scenario.state, jobs, picker=picker, single_queue=single)


@st.composite
def reserved_scenarios(draw: st.DrawFn) -> tuple[ClusterState, list[SimJob]]:
    """A timed scenario whose cluster has one or two advance reservations: some hosts,
    windows opening and closing while the jobs come and run, some admitting a user."""
    scenario, jobs = draw(timed_scenarios())
    state = scenario.state
    n = state.hosts.n
    reservations = []
    for k in range(draw(st.integers(1, 2))):
        hosts = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        start = float(draw(st.integers(0, 60)))
        users = draw(st.none() | st.just((jobs[0].user,)))
        length = float(draw(st.sampled_from((3, 10, 40))))
        reservations.append(
            AdvanceReservation(f"r{k}", tuple(sorted(hosts)), start, start + length, users)
        )
    return replace(state, reservations=tuple(reservations)), jobs


class _Incremental(Simulation):
    """Counts the sessions that tried only the jobs that could start (the shortcut)."""

    shortcut_sessions = 0

    def _candidates(self) -> tuple[list[PendingJob], set[str]]:
        _Incremental.shortcut_sessions += 1
        return super()._candidates()


@given(case=reserved_scenarios(), picker=st.sampled_from(("fcfs", "strict")), single=st.booleans())
def test_shortcuts_give_the_same_records_beside_reservations(
    case: tuple[ClusterState, list[SimJob]], picker: str, single: bool
) -> None:
    """Advance reservations keep the session shortcuts exact: a window's bounds make a
    full session, and between them a job kept out stays out (Simulation._incremental)."""
    state, jobs = case
    _same_records(state, jobs, picker=picker, single_queue=single)


def test_random_reserved_cases_take_the_shortcut() -> None:
    """The property above is not vacuous: its cases run sessions that try only the new
    jobs while a reservation is in force or ahead."""
    _Incremental.shortcut_sessions = 0

    @settings(max_examples=40, derandomize=True, database=None, deadline=None)
    @given(case=reserved_scenarios())
    def collect(case: tuple[ClusterState, list[SimJob]]) -> None:
        state, jobs = case
        _Incremental(state, jobs, SimOptions(plain_replay=False)).run()

    collect()
    assert _Incremental.shortcut_sessions > 0


@given(
    jobs=fungible_jobs,
    hosts=st.integers(1, 6),
    picker=st.sampled_from(("fcfs", "strict")),
    walltime=st.booleans(),
)
def test_shortcuts_give_the_same_records_on_fungible_workloads(
    jobs: list[SimJob], hosts: int, picker: str, walltime: bool
) -> None:
    jobs = [replace(j, requested_time=j.runtime / 2 or None) for j in jobs]
    _same_records(uniform_cluster(hosts, 1), jobs, picker=picker, enforce_walltime=walltime)


@pytest.mark.parametrize("picker", ["fcfs", "strict"])
def test_shortcuts_give_the_same_records_on_the_example_mix(
    example_cluster: ClusterState, mixed_workload: list[SimJob], picker: str
) -> None:
    _same_records(example_cluster, mixed_workload[:150], picker=picker)


@needs_kth
@pytest.mark.parametrize("picker", ["fcfs", "strict"])
def test_shortcuts_give_the_same_records_on_kth_prefix(picker: str) -> None:
    jobs = read_swf(KTH, limit=800).jobs
    _same_records(uniform_cluster(100, 1), jobs, picker=picker, single_queue=True)


def test_a_replay_keeps_an_applications_own_gc_freeze() -> None:
    """The replay's collector tuning is undone afterwards, and leaves alone objects the
    application froze itself (review finding)."""
    import gc

    thresholds = gc.get_threshold()
    gc.freeze()
    try:
        Simulation(uniform_cluster(2, 1), [SimJob("a", 0, 1, 1)]).run()
        assert gc.get_freeze_count() > 0  # still frozen: not the replay's to undo
        assert gc.get_threshold() == thresholds
    finally:
        gc.unfreeze()
    Simulation(uniform_cluster(2, 1), [SimJob("a", 0, 1, 1)]).run()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds


def test_single_queue_says_the_clusters_other_queues_are_not_used() -> None:
    """--single-queue puts every job in queue normal: a cluster's other queues (and what
    they set: preemption, say) go unused, and the replay says so (it was silent)."""
    state = ClusterBuilder().queue("high", 50, preempts=["low"]).queue("low", 10).hosts(2).build()
    jobs = [SimJob("a", 0, 10, 1, queue="high"), SimJob("b", 1, 10, 1, queue="low")]
    together = Simulation(state, jobs, SimOptions(single_queue=True)).run()
    (line,) = [w for w in together.warnings if "--single-queue" in w]
    assert "queue(s) high, low" in line
    apart = Simulation(state, jobs).run()
    assert not [w for w in apart.warnings if "--single-queue" in w]
