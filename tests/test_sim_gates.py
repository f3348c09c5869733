"""A jobs file's gates and priority inputs in a replay: what a state file's job may say
beyond its requirement is honoured as the core honours it, or refused at its key —
never dropped.

Honoured: ``begin_time`` (no start, and no plan, before it: ``sbatch --begin``),
``hold`` (nothing in a replay releases the job: it is reported never started, HELD),
``priority`` (the ``priority`` picker), ``qos``, ``nice``, ``nodes`` and
``accrue_time`` (the ``multifactor`` picker). Refused: a range of task counts, an array
record, further queues. Informational keys the core does not read either (``reason``,
``scheduler_start``) are accepted.
"""

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
from xce.cluster import ClusterState, state_from_dict
from xce.errors import InputError
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.model import SimJob
from xce.sim.plain import PlainReplay, plain_replay
from xce.sim.workload import load_jobs_file, write_jobs_file

SUFFIXES = (".yaml", ".json", ".jsonl")


def run(state: ClusterState, jobs: list[SimJob], **options: Any) -> SimResult:
    sim = Simulation(state, jobs, SimOptions(**options))
    result = sim.run()
    verify(result, sim.jobs)
    return result


def starts(result: SimResult) -> dict[str, float | None]:
    return {r.job.id: r.start for r in result.records}


# --- the keys are read, written and refused -------------------------------------------


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_gates_and_priority_inputs_round_trip(tmp_path: Path, suffix: str) -> None:
    """Every key this file is about survives write and read in every format."""
    jobs = [
        SimJob("a", 0.0, 10.0, 1, hold=True, priority=7.5, qos="urgent"),
        SimJob("b", 1.0, 10.0, 2, begin_time=500.0, nice=-20, nodes=2, accrue_time=0.5),
        SimJob("c", 2.0, 10.0, 1),
    ]
    path = tmp_path / f"w{suffix}"
    write_jobs_file(jobs, path)
    assert load_jobs_file(path) == jobs


@pytest.mark.parametrize(
    ("entry", "key", "said"),
    [
        ("min_tasks: 2, max_tasks: 8", "max_tasks", "asks for 2 to 8 tasks"),
        ("max_tasks: 4", "max_tasks", "asks for 1 to 4 tasks"),
        ('array: "0-9%2"', "array", "is an array record (array: 0-9%2)"),
        ("also_queues: [{queue: other}]", "also_queues", "may run in further queues"),
    ],
)
def test_what_a_replay_cannot_model_is_refused_at_its_key(
    tmp_path: Path, entry: str, key: str, said: str
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        f"jobs:\n  - {{id: 1, runtime: 5}}\n  - {{id: 2, runtime: 5, {entry}}}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        load_jobs_file(path)
    assert info.value.path == f"jobs[1].{key}"
    assert info.value.line == 3
    line = path.read_text().split("\n")[2]
    assert info.value.column == line.index(key) + 1  # the caret under the key
    assert said in info.value.message


def test_a_refused_key_in_block_style_yaml_is_shown_at_its_own_line(tmp_path: Path) -> None:
    """A job written over several lines: the error is at the key's line and column, not
    the job's first line (found by review)."""
    path = tmp_path / "w.yaml"
    path.write_text(
        'jobs:\n  - id: 1\n    runtime: 5\n  - id: 2\n    runtime: 5\n    array: "1-3"\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        load_jobs_file(path)
    assert (info.value.path, info.value.line, info.value.column) == ("jobs[1].array", 6, 5)
    assert info.value.text == '    array: "1-3"'


def test_a_refused_key_exits_2_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"id": 1, "runtime": 5}\n{"id": 2, "runtime": 5, "array": "1-3"}\n', encoding="utf-8"
    )
    result = CliRunner().invoke(
        app, ["simulate", "--workload", str(path), "--hosts", "2", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    column = '{"id": 2, "runtime": 5, "array"'.index('"array"') + 1
    assert f"{path}:2:{column}" in result.stderr
    assert "^" in result.stderr
    assert "array record" in result.stderr
    assert not (tmp_path / "o").exists()  # nothing half-written


def test_informational_keys_are_accepted(tmp_path: Path) -> None:
    """``reason`` and ``scheduler_start`` are what a real scheduler said; the core does
    not read them either, so a capture's jobs replay with them."""
    path = tmp_path / "w.yaml"
    path.write_text(
        "jobs:\n  - {id: 1, runtime: 5, reason: Priority, scheduler_start: 99}\n",
        encoding="utf-8",
    )
    assert [j.id for j in load_jobs_file(path)] == ["1"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_an_unknown_qos_is_an_error_at_its_key_when_the_file_is_read(
    tmp_path: Path, suffix: str
) -> None:
    """Given the cluster's QOS names (``xce simulate --cluster`` gives them), the loader
    checks each job's as a state file's: at the key, with a caret, exit 2."""
    path = tmp_path / f"w{suffix}"
    write_jobs_file([SimJob("a", 0.0, 5.0, 1), SimJob("b", 0.0, 5.0, 1, qos="gold")], path)
    with pytest.raises(InputError) as info:
        load_jobs_file(path, qos={"normal", "urgent"})
    assert info.value.line == {".yaml": 3, ".json": 3, ".jsonl": 2}[suffix]  # b's line
    assert info.value.column is not None
    assert "unknown QOS 'gold'" in info.value.message
    assert [j.qos for j in load_jobs_file(path)] == [None, "gold"]  # no names: any QOS
    cluster = tmp_path / "site.yaml"
    data = _site_data()
    cluster.write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "--cluster",
            str(cluster),
            "--workload",
            str(path),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2
    assert f"{path}:{info.value.line}:{info.value.column}" in result.stderr
    assert not (tmp_path / "o").exists()


def test_an_unknown_qos_is_an_error_naming_the_job_and_its_line(tmp_path: Path) -> None:
    """Checked against the cluster's QOS before the replay, as a requirement's names are:
    at the file (and, in JSONL, the line) that wrote the job."""
    path = tmp_path / "w.jsonl"
    path.write_text('{"id": 1, "runtime": 5}\n{"id": 2, "runtime": 5, "qos": "gold"}\n')
    jobs = load_jobs_file(path)
    with pytest.raises(InputError) as info:
        Simulation(_site(), jobs, SimOptions())
    assert info.value.source == str(path)
    assert info.value.line == 2
    assert "job '2': unknown QOS 'gold'" in info.value.message


# --- begin times ----------------------------------------------------------------------


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
def test_a_job_starts_at_its_begin_time_on_an_idle_cluster(backfill: str) -> None:
    """No other event happens then: the begin time is an event of its own. (b says it
    ends long before: a backfill policy lets it run ahead of a's plan.)"""
    jobs = [
        SimJob("a", 0.0, 10.0, 1, begin_time=5000.0),
        SimJob("b", 3.0, 10.0, 1, requested_time=10.0),
    ]
    result = run(uniform_cluster(1, 1), jobs, backfill=backfill)
    assert starts(result) == {"a": 5000.0, "b": 3.0}
    assert result.records[0].wait == 5000.0  # counted from the submission, as sacct does


def test_conservative_backfill_plans_a_job_from_its_begin_time() -> None:
    """As the core plans a state file's job (``xce schedule``): b holds the slot from its
    begin time, so d (which would run past it) waits for b, and e, short enough to end
    before it, backfills."""
    jobs = [
        SimJob("b", 0.0, 100.0, 1, requested_time=100.0, begin_time=5000.0),
        SimJob("d", 20.0, 6000.0, 1, requested_time=6000.0),
        SimJob("e", 30.0, 60.0, 1, requested_time=60.0),
    ]
    result = run(uniform_cluster(1, 1), jobs, backfill="conservative")
    assert starts(result) == {"b": 5000.0, "d": 5100.0, "e": 30.0}
    assert run(uniform_cluster(1, 1), jobs, backfill="none").records[1].start == 20.0


@st.composite
def begin_workloads(draw: st.DrawFn) -> list[SimJob]:
    """Up to 25 slot-only jobs on one instant grid, a third with a begin time (before,
    at or after the submission), some held."""
    times = st.sampled_from((0.0, 0.0, 10.0, 25.0, 40.0, 100.0))
    jobs = []
    for k in range(draw(st.integers(1, 25))):
        submit = draw(times)
        begin = draw(st.sampled_from((None, None, 0.0, 30.0, 60.0, 150.0)))
        jobs.append(
            SimJob(
                f"j{k}",
                submit,
                draw(st.sampled_from((0.0, 5.0, 20.0, 50.0))),
                draw(st.integers(1, 4)),
                requested_time=draw(st.sampled_from((None, 20.0, 80.0))),
                begin_time=begin,
                hold=draw(st.sampled_from((False,) * 9 + (True,))),
            )
        )
    return jobs


@settings(max_examples=120, derandomize=True, database=None, deadline=None)
@given(
    jobs=begin_workloads(),
    backfill=st.sampled_from(("none", "easy", "conservative")),
    interval=st.sampled_from((None, None, 7.0)),
    picker=st.sampled_from(("fcfs", "strict")),
)
def test_begin_times_hold_and_the_shortcuts_stay_exact(
    jobs: list[SimJob], backfill: str, interval: float | None, picker: str
) -> None:
    """Property: no job starts before its begin time; a held job never starts and is
    reported HELD; every job ends exactly once (``verify``); and the replay's session
    shortcuts decide as full sessions at every step (``incremental=False``): the begin
    time's own event makes a gate open only at an event. Under fcfs and strict (whose
    full sessions go in batches, a gated job tried and holding nobody)."""
    state = uniform_cluster(3, 2)
    fast = run(state, jobs, backfill=backfill, interval=interval, picker=picker)
    full = run(state, jobs, backfill=backfill, interval=interval, picker=picker, incremental=False)
    assert [(r.start, r.end, tuple(r.hosts)) for r in fast.records] == [
        (r.start, r.end, tuple(r.hosts)) for r in full.records
    ]
    for record in fast.records:
        job = record.job
        if job.hold:
            assert record.start is None
            assert record.unrunnable is not None
            assert "HELD" in record.unrunnable
        elif record.start is not None and job.begin_time is not None:
            assert record.start >= job.begin_time


def test_the_plain_replay_leaves_gated_jobs_to_the_core() -> None:
    jobs = [SimJob("a", 0.0, 1.0, 1), SimJob("b", 0.0, 1.0, 1)]
    state = uniform_cluster(2, 1)
    assert isinstance(plain_replay(Simulation(state, jobs, SimOptions())), PlainReplay)
    for gated in (SimJob("c", 0.0, 1.0, 1, begin_time=5.0), SimJob("c", 0.0, 1.0, 1, hold=True)):
        assert plain_replay(Simulation(state, [*jobs, gated], SimOptions())) is None
    begun = SimJob("c", 5.0, 1.0, 1, begin_time=5.0)  # a capture's: no later than its submission
    assert isinstance(plain_replay(Simulation(state, [*jobs, begun], SimOptions())), PlainReplay)


# --- holds ------------------------------------------------------------------------------


def test_a_held_job_never_starts_and_holds_nothing_up() -> None:
    jobs = [SimJob("h", 0.0, 10.0, 1, hold=True), SimJob("b", 5.0, 10.0, 1)]
    result = run(uniform_cluster(1, 1), jobs, backfill="conservative")
    held, other = result.records
    assert held.start is None
    assert held.unrunnable is not None
    assert "HELD" in held.unrunnable
    assert other.start == 5.0


def test_a_held_job_stays_held_once_its_dependency_holds() -> None:
    """Its dependency is the replay's to tell the core (xce.sim.flow); telling it must
    not release the file's hold."""
    jobs = [
        SimJob("a", 0.0, 10.0, 1),
        SimJob("h", 0.0, 10.0, 1, hold=True, dependency=_dependency("afterany:a")),
    ]
    result = run(uniform_cluster(1, 1), jobs)
    assert starts(result) == {"a": 0.0, "h": None}
    assert "HELD" in (result.records[1].unrunnable or "")


# --- priority inputs ----------------------------------------------------------------------


def test_the_priority_picker_reads_each_jobs_priority() -> None:
    """A blocker runs first; then one slot goes by the scheduler's priority, high first."""
    jobs = [
        SimJob("x", 0.0, 10.0, 1),
        SimJob("a", 1.0, 10.0, 1, priority=1.0),
        SimJob("b", 2.0, 10.0, 1, priority=30.0),
        SimJob("c", 3.0, 10.0, 1, priority=20.0),
    ]
    result = run(uniform_cluster(1, 1), jobs, picker="priority")
    assert starts(result) == {"x": 0.0, "b": 10.0, "c": 20.0, "a": 30.0}


def _site() -> ClusterState:
    return state_from_dict(_site_data(), "<site>")


def _site_data() -> dict[str, Any]:
    data = ClusterBuilder().host("h0", 1).picker("multifactor").to_dict()
    data["priority"] = {
        "PriorityWeightAge": 1000,
        "PriorityWeightQOS": 1000,
        "PriorityMaxAge": "0-00:10:00",
        "qos": {"normal": {"priority": 0}, "urgent": {"priority": 100}},
        "default_qos": "normal",
        "usage_time": 0,
    }
    return data


@pytest.mark.parametrize("plain", [True, False])
def test_multifactor_reads_each_jobs_qos_nice_and_accrue_time(plain: bool) -> None:
    """After a blocker: c (QOS urgent) goes before a and b, which came earlier; then
    b's older accrue time outweighs a's earlier submission; d's nice puts it last. The
    plain replay and the general path alike (the general path's core once dropped the
    QOS, nice, nodes and accrue time of a submitted job with no gate or priority)."""
    jobs = [
        SimJob("x", 0.0, 100.0, 1),
        SimJob("d", 1.0, 10.0, 1, nice=100),
        SimJob("a", 2.0, 10.0, 1),
        SimJob("b", 3.0, 10.0, 1, accrue_time=-500.0),
        SimJob("c", 4.0, 10.0, 1, qos="urgent"),
    ]
    sim = Simulation(_site(), jobs, SimOptions(plain_replay=plain))
    assert isinstance(plain_replay(sim), PlainReplay) is plain
    result = sim.run()
    verify(result, sim.jobs)
    assert starts(result) == {"x": 0.0, "c": 100.0, "b": 110.0, "a": 120.0, "d": 130.0}


def _dependency(text: str) -> Any:
    from xce.cluster.jobflow import parse_dependency

    return parse_dependency(text)
