"""Exactness of the simulator (issue 9): the triage reports a job unrunnable only if no
state of the cluster could ever run it; a job that never starts ends the run cleanly;
incremental sessions give the schedule full sessions give, strict queues with limits
included; every repro of ``../shared/repros/exactness/simulator/`` is a regression test
(copied to ``tests/data/repros/simulator/``, see its README).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder
from strategies import Scenario
from test_sim_properties import check_records, timed_scenarios
from xce.alloc import Allocator, AllocMode, Decision, JobRequest, PendInfo, Pending, PendReason
from xce.cluster import ClusterState, PendingJob, load_state
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.model import SimJob
from xce.sim.workload import load_jobs_file

REPROS = Path(__file__).parent / "data" / "repros" / "simulator"
CASES = {  # name: (cluster, workload)
    "sim": ("sim_cluster.yaml", "sim_workload.jsonl"),
    "sim2": ("sim_cluster2.yaml", "sim_workload2.jsonl"),
    "sim3": ("sim_cluster3.yaml", "sim_workload3.jsonl"),
}
NEVER_STARTED = "never started: pending when the run ended"


def repro(name: str) -> tuple[ClusterState, list[SimJob]]:
    cluster, workload = CASES[name]
    return load_state(REPROS / cluster), load_jobs_file(REPROS / workload)


def replay(
    cluster: ClusterState,
    jobs: list[SimJob],
    engine: type[Simulation] = Simulation,
    **options: Any,
) -> SimResult:
    result = engine(cluster, jobs, SimOptions(**options)).run()
    verify(result, jobs)
    return result


class NoTriage(Simulation):
    """Submits every job, even one the probe says can never run (it pends to the end)."""

    def triage(self, job: PendingJob) -> tuple[str | None, bool]:
        return None, super().triage(job)[1]


def schedule(result: SimResult) -> list[tuple[object, ...]]:
    """The records without the wording of why a job did not run."""
    return [
        (r.job.id, r.start, r.end, tuple(r.hosts), tuple(r.host_slots), r.unrunnable is None)
        for r in result.records
    ]


@contextmanager
def naming_limits() -> Iterator[None]:
    """LIMIT decisions name the limits they wait on (``PendInfo.limits``), read from
    their message, as the allocator is to do itself (issue 9); a decision that names
    them already is left alone."""
    decide = Allocator.decide

    def named(self: Allocator, job: JobRequest, mode: AllocMode = AllocMode.NORMAL) -> Decision:
        decision = decide(self, job, mode)
        info = decision.info if isinstance(decision, Pending) else None
        if info is not None and info.reason is PendReason.LIMIT and not info.limits:
            names = tuple(dict.fromkeys(re.findall(r"limit '([^']*)'", info.message)))
            return replace(decision, info=replace(info, limits=names))
        return decision

    with patch.object(Allocator, "decide", named):
        yield


# --- the repros --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_repro_same_schedule_with_incremental_sessions_on_and_off(name: str) -> None:
    """issue 9: each simulator repro gives the same records with incremental sessions on
    and off (sim: the fill plan's order dependence started j1 at t=1000 or t=3)."""
    cluster, jobs = repro(name)
    fast = replay(cluster, jobs, incremental=True)
    exact = replay(cluster, jobs, incremental=False)
    assert fast.records == exact.records


@pytest.mark.parametrize("name", list(CASES))
def test_repro_same_schedule_as_a_replay_without_triage(name: str) -> None:
    """issue 9: the triage only removes jobs that could never run: each repro's schedule
    equals that of a replay that submits every job (sim2: the fill plan's order
    dependence made the probe call j1 unrunnable, yet it fits at t=1)."""
    cluster, jobs = repro(name)
    for incremental in (True, False):
        triaged = replay(cluster, jobs, incremental=incremental)
        untriaged = replay(cluster, jobs, NoTriage, incremental=incremental)
        assert schedule(triaged) == schedule(untriaged)


@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "full"])
def test_repro_sim3_a_volatile_select_is_not_unrunnable(incremental: bool) -> None:
    """issue 9: ``select[mem<500]`` is false on the empty cluster (1000 mem), yet true
    once big holds 800: small is not triaged unrunnable and starts at t=1."""
    cluster, jobs = repro("sim3")
    big, small = replay(cluster, jobs, incremental=incremental).records
    assert small.unrunnable is None
    assert (small.start, small.end, tuple(small.hosts)) == (1.0, 11.0, ("h1",))
    assert (big.start, big.end) == (0.0, 1000.0)


@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "full"])
def test_repro_sim2_j1_runs_at_submission(incremental: bool) -> None:
    """issue 9: sim2's j1 (3 tasks, a per-job scratch only hB has) fits at t=1: 1 task on
    hB (with the scratch) and 2 on hA beside x."""
    cluster, jobs = repro("sim2")
    _, j1 = replay(cluster, jobs, incremental=incremental).records
    assert j1.unrunnable is None
    assert (j1.start, j1.end, sorted(j1.hosts)) == (1.0, 11.0, ["hA", "hB"])


# --- the triage rule ---------------------------------------------------------------------


def forever_cluster() -> ClusterState:
    """h0: 2 slots and 1000 mem; work that never ends holds 1 slot and 100 mem of it."""
    return (
        ClusterBuilder()
        .host("h0", 2, mem=1000)
        .running("r", on={"h0": 1}, rusage={"mem": 100})
        .build()
    )


# Wants 2 slots of one host: never (1 is held for ever); its select is volatile, and the
# empty cluster could run it, so even the allocator's NEVER_RUNNABLE does not apply.
STUCK = "select[mem<500] span[hosts=1]"


@pytest.mark.parametrize("interval", [None, 5.0], ids=["every event", "interval"])
@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "full"])
@pytest.mark.parametrize("picker", ["fcfs", "strict"])
def test_a_volatile_job_that_never_starts_ends_the_run_cleanly(
    picker: str, incremental: bool, interval: float | None
) -> None:
    """issue 9: a volatile-select job the triage lets in but that can never start (its
    select can turn true, but 2 slots of h0 never can be free) ends the run: no internal
    error, no endless loop of interval sessions; it is reported as never started, with
    its last pend reason. Under strict it holds its queue, so the job after it never
    starts either (and is reported so); under fcfs that job runs."""
    jobs = [SimJob("stuck", 0, 10, 2, resreq=STUCK), SimJob("after", 1, 10, 1)]
    result = replay(
        forever_cluster(), jobs, picker=picker, incremental=incremental, interval=interval
    )
    check_records(result, jobs, False, interval)
    stuck, after = result.records
    assert (stuck.start, stuck.end) == (None, None)
    assert (stuck.unrunnable or "").startswith(NEVER_STARTED)
    if picker == "strict":
        assert (after.unrunnable or "").startswith(NEVER_STARTED + " (QUEUE_BLOCKED")
        assert "job stuck" in (after.unrunnable or "")
    else:
        assert after.unrunnable is None
        assert after.start == (1.0 if interval is None else 5.0)


def test_a_never_started_job_is_reported_after_the_last_event() -> None:
    """issue 9: the end of the run comes when nothing is left to happen: the stuck job is
    reported once the last job has ended (the timeline ends there too)."""
    jobs = [SimJob("stuck", 0, 10, 2, resreq=STUCK), SimJob("x", 3, 40, 1)]
    result = replay(forever_cluster(), jobs, interval=5.0)
    stuck, x = result.records
    assert (x.start, x.end) == (5.0, 45.0)
    assert (stuck.unrunnable or "").startswith(NEVER_STARTED)
    assert result.timeline.times[-1] == 45.0


@pytest.mark.parametrize("volatile", [True, False], ids=["volatile", "static"])
def test_the_triage_believes_never_runnable(volatile: bool) -> None:
    """issue 9: a job pending on the probe is unrunnable if no primary is volatile, or if
    the allocator says NEVER_RUNNABLE (here the probe is made to say so)."""
    cluster = ClusterBuilder().host("h0", 4, mem=1000).build()
    resreq = "select[mem<500]" if volatile else "select[mem>5000]"
    jobs = [SimJob("j", 0, 10, 1, resreq=resreq)]
    sim = Simulation(cluster, jobs)
    never = PendInfo(PendReason.NEVER_RUNNABLE, "no state of the cluster can run it")
    with patch.object(sim._probe, "decide", lambda job, *_: Pending(job.id, never)):
        result = sim.run()
    verify(result, jobs)
    (record,) = result.records
    assert record.unrunnable == "no state of the cluster can run it"


def test_a_volatile_job_pending_on_the_probe_for_another_reason_is_let_in() -> None:
    """issue 9: pending on the probe for any reason but NEVER_RUNNABLE, a volatile job
    is submitted (here the probe pends it SELECT; it starts once 800 mem are held)."""
    cluster = ClusterBuilder().host("h0", 4, mem=1000).build()
    jobs = [
        SimJob("big", 0, 100, 1, resreq="rusage[mem=800]"),
        SimJob("small", 1, 10, 1, resreq="select[mem<500] rusage[mem=100]"),
    ]
    sim = Simulation(cluster, jobs)
    assert sim.triage(_pending(jobs[1])) == (None, True)
    _, small = replay(cluster, jobs).records
    assert (small.start, small.unrunnable) == (1.0, None)


def _pending(job: SimJob) -> PendingJob:
    tasks = job.tasks or 1
    return PendingJob(
        job.id, job.user, job.queue, job.project, tasks, tasks, job.resreq, job.submit, None, 0
    )


def test_a_volatile_job_wanting_more_than_any_host_has_is_never_runnable() -> None:
    """issue 9: ``select[mem<500] rusage[mem=2000]`` on 1000-mem hosts: no state could
    run it (volatile selects aside, the empty cluster cannot), so the triage reports it
    at once, from the allocator's NEVER_RUNNABLE, and a strict queue is not held by it.
    (Passes once the allocator says NEVER_RUNNABLE.)"""
    cluster = ClusterBuilder().host("h0", 4, mem=1000).build()
    jobs = [
        SimJob("never", 0, 10, 1, resreq="select[mem<500] rusage[mem=2000]"),
        SimJob("after", 1, 10, 1),
    ]
    never, after = replay(cluster, jobs, picker="strict").records
    assert never.unrunnable is not None
    assert not never.unrunnable.startswith(NEVER_STARTED)
    assert after.start == 1.0


@given(case=timed_scenarios(), incremental=st.booleans())
def test_the_triage_changes_no_schedule_under_fcfs(
    case: tuple[Scenario, list[SimJob]], incremental: bool
) -> None:
    """issue 9: under fcfs (where a job that pends holds nobody) a replay that submits
    every job gives the schedule of the triaged one: the triage only removes jobs that
    would never have started."""
    scenario, jobs = case
    options: dict[str, Any] = {"picker": "fcfs", "incremental": incremental}
    triaged = replay(scenario.state, jobs, **options)
    untriaged = replay(scenario.state, jobs, NoTriage, **options)
    assert schedule(triaged) == schedule(untriaged)


# --- strict queues and limits ------------------------------------------------------------


def limited_cluster() -> ClusterState:
    """h0: 4 slots; alice may hold 2 slots in all (limit alice2)."""
    return ClusterBuilder().host("h0", 4).limit("alice2", users=["alice"], slots=2).build()


LIMITED = [  # one strict queue
    SimJob("a0", 0, 100, 2, user="alice"),  # runs: alice holds 2
    SimJob("a1", 1, 10, 1, user="alice"),  # LIMIT: holds only alice's later jobs
    SimJob("b1", 2, 48, 1, user="bob"),  # runs, past a1
    SimJob("a2", 3, 10, 1, user="alice"),  # held by a1
    SimJob("b2", 4, 10, 2, user="bob"),  # 1 slot free: waits for resources, the head
    SimJob("b3", 5, 10, 1, user="bob"),  # held by b2 although a slot is free
]


@pytest.mark.parametrize("named", [True, False], ids=["limits named", "limits unnamed"])
@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "full"])
def test_strict_passes_a_job_waiting_on_a_limit(named: bool, incremental: bool) -> None:
    """issue 9: under strict a job waiting on a limit holds only the later jobs it
    applies to; the first later job waiting for resources holds the rest of the queue.
    b1 starts past a1 at t=2; b2 starts when b1 ends (t=50); b3 waits behind b2 and a2
    behind a1, until a0 ends at t=100."""
    with naming_limits() if named else _nothing():
        result = replay(limited_cluster(), LIMITED, picker="strict", incremental=incremental)
    starts = {r.job.id: r.start for r in result.records}
    assert starts == {"a0": 0, "a1": 100, "b1": 2, "a2": 100, "b2": 50, "b3": 60}


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@given(case=timed_scenarios(), single=st.booleans(), named=st.booleans())
def test_strict_with_limits_same_records_with_incremental_sessions_on_and_off(
    case: tuple[Scenario, list[SimJob]], single: bool, named: bool
) -> None:
    """issue 9: under strict, on random clusters with limits (a job waiting on a limit
    holds only some later jobs; its reason may change between sessions), incremental
    sessions give the records of full ones, LIMIT decisions naming their limits or not."""
    scenario, jobs = case
    with naming_limits() if named else _nothing():
        fast = replay(scenario.state, jobs, picker="strict", single_queue=single)
        exact = replay(
            scenario.state, jobs, picker="strict", single_queue=single, incremental=False
        )
    assert fast.records == exact.records
