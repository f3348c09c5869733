"""Preemption in the simulator (issue 11): victims are released by ``JobPreempted``,
requeued and restarted from the beginning; the preemptor starts at once; metrics count
preemptions and lost work; every job still ends exactly once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.cli.main import app
from xce.cluster import ClusterState
from xce.sim.engine import SimOptions, Simulation, verify
from xce.sim.metrics import metrics
from xce.sim.model import SimJob


def two_queues(hosts: int = 2, slots: int = 4) -> ClusterBuilder:
    return (
        ClusterBuilder()
        .queue("high", 50, preempts=["low"])
        .queue("low", 10)
        .hosts(hosts, slots=slots)
    )


def test_the_youngest_low_job_is_preempted_requeued_and_restarted() -> None:
    """issue 11 (simulation): two 4-slot hosts full of low jobs l1 (t=0) and l2 (t=1);
    h (high, 4 tasks) arrives at 10 and preempts the younger l2 at once, running 10-30;
    l2 goes back to its queue, restarts when h ends (30-130), and 4 slots x 9 s of its
    work are lost; l3, behind l2 in arrival order, waits for l1's end at 100."""
    state = two_queues().build()
    jobs = [
        SimJob("l1", 0, 100, 4, queue="low"),
        SimJob("l2", 1, 100, 4, queue="low"),
        SimJob("h", 10, 20, 4, queue="high"),
        SimJob("l3", 11, 5, 2, queue="low"),
    ]
    result = Simulation(state, jobs).run()
    verify(result, jobs)
    got = {r.job.id: (r.start, r.end, r.preempted, r.lost_slot_seconds) for r in result.records}
    assert got == {
        "l1": (0, 100, 0, 0.0),
        "l2": (30, 130, 1, 36.0),
        "h": (10, 30, 0, 0.0),
        "l3": (100, 105, 0, 0.0),
    }
    data = metrics(result)
    assert (data["preemptions"], data["lost_work_slot_s"]) == (1, 36.0)
    assert data["by_queue"]["low"]["preempted"] == 1
    assert data["by_queue"]["high"]["mean_wait_s"] == 0.0


def test_work_running_when_the_simulation_began_can_be_preempted() -> None:
    """issue 11: initial running work of a low queue is preempted and just ends (it has
    no job to requeue); the capacity check sees it end then."""
    state = (
        two_queues(hosts=1)
        .running("old", {"h0": 4}, queue="low", start_time=0, runtime=1000)
        .build()
    )
    jobs = [SimJob("h", 5, 10, 4, queue="high")]
    result = Simulation(state, jobs).run()
    verify(result, jobs)
    (record,) = result.records
    assert (record.start, record.end) == (5, 15)
    assert result.stats.preemptions == 1
    assert result.stats.lost_slot_seconds == 4 * 5


def test_without_preempting_queues_nothing_changes() -> None:
    """issue 11: the same workload where high lists nothing: no preemption, h waits."""
    state = ClusterBuilder().queue("high", 50).queue("low", 10).hosts(1, slots=4).build()
    jobs = [SimJob("l", 0, 100, 4, queue="low"), SimJob("h", 10, 20, 4, queue="high")]
    result = Simulation(state, jobs).run()
    starts = {r.job.id: r.start for r in result.records}
    assert starts == {"l": 0, "h": 100}
    assert result.stats.preemptions == 0


@pytest.mark.parametrize("policy", ["none", "easy", "conservative"])
def test_a_replay_never_preempts_onto_a_reserved_host(policy: str) -> None:
    """docs/backfill.md, advance reservations, in a replay: host a (2 slots) is in
    maint over [100, 1000). h1 (high, 2 tasks, 300 s) arrives at 50; its run would
    overlap the window, so it does not preempt l1 (low, 0-90) on a: it starts when the
    window closes, at 1000, and l1 runs to its end (before: h1 ran 50-350 and l1 was
    preempted and restarted at 1000). The same with l1 estimated to end as it opens."""
    for requested in (95, 100):
        state = (
            ClusterBuilder()
            .queue("high", 5, preempts=["low"])
            .queue("low", 1)
            .host("a", 2)
            .reservation("maint", 100, 1000, hosts=["a"])
            .backfill(policy)
            .build()
        )
        jobs = [
            SimJob("l1", 0, 90, 2, queue="low", requested_time=requested),
            SimJob("h1", 50, 300, 2, queue="high", requested_time=300),
        ]
        result = Simulation(state, jobs).run()
        verify(result, jobs)
        got = {r.job.id: (r.start, r.end, r.preempted) for r in result.records}
        assert got == {"l1": (0, 90, 0), "h1": (1000, 1300, 0)}, (requested, got)
        assert result.stats.preemptions == 0


@st.composite
def workloads(draw: st.DrawFn) -> tuple[ClusterState, list[SimJob]]:
    hosts = draw(st.integers(1, 3))
    slots = draw(st.integers(1, 4))
    state = two_queues(hosts, slots).build()
    jobs = []
    t = 0.0
    for i in range(draw(st.integers(1, 12))):
        t += draw(st.integers(0, 20))
        tasks = draw(st.integers(1, hosts * slots))
        queue = draw(st.sampled_from(["high", "low", "low"]))
        span = draw(st.sampled_from(["", "span[hosts=1]"])) if tasks <= slots else ""
        runtime = float(draw(st.integers(0, 50)))
        jobs.append(SimJob(f"j{i}", t, runtime, tasks, queue=queue, resreq=span))
    return state, jobs


@settings(max_examples=60)
@given(workloads(), st.sampled_from([None, 7.0]))
def test_every_job_ends_exactly_once_and_no_work_is_lost_unaccounted(
    case: tuple[ClusterState, list[SimJob]], interval: float | None
) -> None:
    """issue 11 (property): with preemption, every job ends exactly once (or is
    reported), no host is over-allocated (``verify``), a high job is never preempted,
    and the lost work is exactly the slot-seconds of the runs cut short."""
    state, jobs = case
    result = Simulation(state, jobs, SimOptions(interval=interval)).run()
    verify(result, jobs)
    assert all(r.preempted == 0 for r in result.records if r.job.queue == "high")
    assert result.stats.preemptions == sum(r.preempted for r in result.records)
    assert (
        abs(result.stats.lost_slot_seconds - sum(r.lost_slot_seconds for r in result.records))
        < 1e-9
    )
    for r in result.records:
        if r.preempted:
            assert r.lost_slot_seconds >= 0


def test_random_workloads_do_preempt() -> None:
    """issue 11: the property above is not vacuous: over 100 derandomized workloads,
    preemptions happen (with and without an interval)."""
    seen: list[int] = []

    @settings(max_examples=100, derandomize=True, database=None)
    @given(workloads(), st.sampled_from([None, 7.0]))
    def collect(case: tuple[ClusterState, list[SimJob]], interval: float | None) -> None:
        state, jobs = case
        seen.append(Simulation(state, jobs, SimOptions(interval=interval)).run().stats.preemptions)

    collect()
    assert sum(1 for n in seen if n) >= 5, seen


def _jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.jsonl"
    rows = [
        {"id": "l", "submit_time": 0, "runtime": 100, "tasks": 2, "queue": "low"},
        {"id": "h", "submit_time": 10, "runtime": 20, "tasks": 2, "queue": "high"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_queues_file_with_hosts_preempts(tmp_path: Path) -> None:
    """issue 11: ``xce simulate --hosts N --queues FILE`` takes the queues (preempts
    included) of a state file for the uniform cluster; metrics.json counts preemptions
    and lost work, and the summary shows them."""
    queues = tmp_path / "queues.yaml"
    queues.write_text(
        "queues:\n  high: {priority: 50, preempts: [low]}\n  low: {priority: 10}\n",
        encoding="utf-8",
    )
    args = ["simulate", "--workload", str(_jsonl(tmp_path)), "--hosts", "1", "--slots-per-host"]
    result = CliRunner().invoke(app, [*args, "2", "--queues", str(queues), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["preemptions"], data["lost_work_slot_s"]) == (1, 20.0)
    table = CliRunner().invoke(app, [*args, "2", "--queues", str(queues)])
    assert table.exit_code == 0, table.output
    assert "preemptions" in table.stdout
    assert "work lost to preemption" in table.stdout


def test_cli_queues_file_refuses_hosts_and_bad_modes(tmp_path: Path) -> None:
    """issue 11: --queues holds queues and limits only; --preempt-mode knows requeue."""
    queues = tmp_path / "queues.yaml"
    queues.write_text("hosts: [{name: a, slots: 1}]\nqueues: {low: {}}\n", encoding="utf-8")
    base = ["simulate", "--workload", str(_jsonl(tmp_path)), "--hosts", "1"]
    result = CliRunner().invoke(app, [*base, "--queues", str(queues)])
    assert result.exit_code == 2
    assert "--queues takes queues and limits only; it has hosts" in result.stderr
    assert str(queues) in result.stderr
    result = CliRunner().invoke(app, [*base, "--preempt-mode", "suspend"])
    assert result.exit_code == 2
    assert "--preempt-mode: unknown mode 'suspend' (known: requeue)" in result.stderr


def _schedule(result: Any) -> list[tuple[Any, ...]]:
    return [
        (r.job.id, r.start, r.end, tuple(r.hosts), r.preempted, r.lost_slot_seconds)
        for r in result.records
    ]


@settings(max_examples=80)
@given(workloads(), st.sampled_from([None, 7.0]), st.sampled_from(["fcfs", "strict"]))
def test_incremental_sessions_preempt_as_full_sessions_do(
    case: tuple[ClusterState, list[SimJob]], interval: float | None, picker: str
) -> None:
    """issue 11: the engine's exact session shortcuts stay exact with preemption — a
    pending job that could not preempt is retried when a job of a queue it may preempt
    has started; the schedule equals that of full sessions at every event."""
    state, jobs = case
    fast = Simulation(state, jobs, SimOptions(interval=interval, picker=picker)).run()
    full = Simulation(
        state, jobs, SimOptions(interval=interval, picker=picker, incremental=False)
    ).run()
    assert _schedule(fast) == _schedule(full)
