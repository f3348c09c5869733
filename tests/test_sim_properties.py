"""End-of-run invariants of the simulator (``xce.sim.engine.verify``), on random
workloads, and on deliberately broken engines.

Acceptance (issue 5): "The end-of-run invariants are tested on random workloads
(hypothesis) and trigger on a deliberately broken engine in a test."
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from builders import ClusterBuilder
from strategies import Scenario, capacities, running_use, scenarios
from xce.cli.main import app
from xce.errors import InternalError
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import _FINISH, SimOptions, SimResult, Simulation, verify
from xce.sim.model import JobRecord, SimJob

BUG = "internal error (a bug in xce, please report it)"


@st.composite
def timed_scenarios(draw: st.DrawFn, max_jobs: int = 20) -> tuple[Scenario, list[SimJob]]:
    """A random cluster (its running work holds its hosts for ever) and a workload of its
    requirement mix with submit times (ties frequent), runtimes (0 s too) and requested
    times (some shorter than the runtime)."""
    scenario = draw(scenarios(max_jobs=max_jobs))
    jobs = []
    for job in scenario.jobs:
        runtime = float(draw(st.sampled_from((0, 1, 5, 20)) | st.integers(0, 60)))
        jobs.append(
            SimJob(
                job.id,
                float(draw(st.integers(0, 40))),
                runtime,
                job.tasks,
                user=job.user,
                queue=job.queue,
                project=job.project,
                resreq=job.resreq,
                requested_time=draw(st.none() | st.just(max(runtime - 3.0, 1.0))),
            )
        )
    return scenario, jobs


def _expected_end(record: JobRecord, enforce: bool) -> float:
    job = record.job
    assert record.start is not None
    kill = enforce and job.requested_time is not None and job.runtime > job.requested_time
    return record.start + (job.requested_time if kill and job.requested_time else job.runtime)


def check_records(
    result: SimResult, jobs: list[SimJob], enforce: bool, interval: float | None
) -> None:
    """Every job exactly once, in workload order; each ran once (start >= submit, for its
    runtime, or until its requested time when enforced) or is unrunnable and never ran."""
    assert [r.job.id for r in result.records] == [j.id for j in jobs]
    for record in result.records:
        if record.unrunnable is not None:
            assert (record.start, record.end, record.hosts, record.slots) == (None, None, (), 0)
            continue
        assert record.start is not None
        assert record.start >= record.job.submit
        assert record.end == _expected_end(record, enforce)
        assert record.killed == (record.end - record.start < record.job.runtime)
        assert sum(record.host_slots) == record.slots >= (record.job.tasks or 1)
        if interval is not None:
            assert record.start % interval == 0


def over_allocated(
    records: list[JobRecord],
    capacity: dict[str, float],
    held: dict[str, float] | None = None,
) -> list[str]:
    """Hosts that held more slots than they have at some time (frees before starts at a
    time), counting ``held`` slots of work that runs for the whole simulation."""
    events: dict[str, list[tuple[float, int]]] = {}
    for r in records:
        if r.start is None or r.end is None:
            continue
        for host, slots in zip(r.hosts, r.host_slots, strict=True):
            events.setdefault(host, []).extend([(r.start, slots), (r.end, -slots)])
    bad = []
    for host, changes in events.items():
        in_use = (held or {}).get(host, 0.0)
        for _, delta in sorted(changes):
            in_use += delta
            if in_use > capacity[host]:
                bad.append(host)
                break
    return bad


@given(
    case=timed_scenarios(),
    picker=st.sampled_from(("fcfs", "strict", "fairshare")),
    single=st.booleans(),
    enforce=st.booleans(),
    interval=st.sampled_from((None, None, 5.0)),
)
def test_invariants_hold_on_random_workloads(
    case: tuple[Scenario, list[SimJob]],
    picker: str,
    single: bool,
    enforce: bool,
    interval: float | None,
) -> None:
    """``verify`` passes, and the same invariants checked independently: every job ends
    exactly once or is unrunnable; no host ever holds more slots than it has (counting
    the running work of the cluster, which ``verify`` does not see); closed and
    unavailable hosts get nothing new."""
    scenario, jobs = case
    options = SimOptions(
        picker=picker, single_queue=single, enforce_walltime=enforce, interval=interval
    )
    result = Simulation(scenario.state, jobs, options).run()
    verify(result, jobs)
    check_records(result, jobs, enforce, interval)
    slots = {name: caps["slots"] for name, caps in capacities(scenario).items()}
    held = {name: use.get("slots", 0.0) for name, use in running_use(scenario).items()}
    assert over_allocated(result.records, slots, held) == []
    shut = {h.name for h in scenario.hosts if h.status != "ok"}
    assert not any(shut & set(r.hosts) for r in result.records)


@given(
    jobs=st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 20), st.integers(1, 12)),
        min_size=1,
        max_size=30,
    ),
    hosts=st.integers(1, 4),
    slots=st.integers(1, 3),
)
def test_unrunnable_exactly_when_wider_than_the_machine(
    jobs: list[tuple[int, int, int]], hosts: int, slots: int
) -> None:
    """On a uniform cluster a plain job is unrunnable exactly when it wants more slots
    than the machine has; everything else runs."""
    workload = [SimJob(f"j{i}", float(s), float(r), t) for i, (s, r, t) in enumerate(jobs)]
    result = Simulation(uniform_cluster(hosts, slots), workload).run()
    verify(result, workload)
    check_records(result, workload, False, None)
    assert {r.job.id for r in result.unrunnable} == {
        j.id for j in workload if (j.tasks or 1) > hosts * slots
    }
    names = [f"n{i}" for i in range(hosts)]
    assert over_allocated(result.records, dict.fromkeys(names, float(slots))) == []


def test_the_independent_sweep_frees_before_it_starts() -> None:
    """The checker above: back-to-back jobs on a 1-slot host are fine, overlap is not."""
    a = JobRecord(SimJob("a", 0, 10, 1), 0, 10, hosts=("h",), host_slots=(1,), slots=1)
    b = JobRecord(SimJob("b", 0, 10, 1), 10, 20, hosts=("h",), host_slots=(1,), slots=1)
    c = replace(b, start=9)
    assert over_allocated([a, b], {"h": 1}) == []
    assert over_allocated([a, c], {"h": 1}) == ["h"]
    assert over_allocated([b], {"h": 1}, {"h": 1}) == ["h"]


# --- deliberately broken engines -------------------------------------------------------

Tamper = Callable[[list[JobRecord]], list[JobRecord]]


def _edit(job_id: str, **changes: object) -> Tamper:
    def tamper(records: list[JobRecord]) -> list[JobRecord]:
        return [replace(r, **changes) if r.job.id == job_id else r for r in records]  # type: ignore[arg-type]

    return tamper


class TamperedRecords(Simulation):
    """An engine that reports its records wrong (``tamper`` edits the list)."""

    tamper: Tamper = staticmethod(lambda records: records)  # type: ignore[assignment]

    def run(self) -> SimResult:
        result = super().run()
        result.records = self.tamper(list(result.records))
        return result


class GeneralPath(Simulation):
    """The general event loop always (the plain replay, xce.sim.plain, has none of the
    methods the breakages below override)."""

    def _plain_replay(self) -> None:
        return None


class FinishesTwice(GeneralPath):
    """Schedules every job's finish twice."""

    def _push(self, at: float, kind: int, job_id: str) -> None:
        super()._push(at, kind, job_id)
        if kind == _FINISH:
            super()._push(at, kind, job_id)


class LosesAFinish(GeneralPath):
    """Never schedules the finish of job ``lost``: it holds its hosts for ever."""

    lost = "b"

    def _push(self, at: float, kind: int, job_id: str) -> None:
        if not (kind == _FINISH and job_id == self.lost):
            super()._push(at, kind, job_id)


class LosesTheLastFinish(LosesAFinish):
    """... of the last job, so that no job is left waiting behind it."""

    lost = "c"


def _tampered(tamper: Tamper) -> type[Simulation]:
    return type("Tampered", (TamperedRecords,), {"tamper": staticmethod(tamper)})


# 2 single-slot hosts: a and b run side by side at 0-10 (h0, h1), c (2 wide) at 10-15.
WORKLOAD = [SimJob("a", 0, 10, 1), SimJob("b", 0, 10, 1), SimJob("c", 1, 5, 2)]

BROKEN: dict[str, tuple[type[Simulation], str]] = {
    "a record dropped": (_tampered(lambda rs: rs[:-1]), "one to one"),
    "a record duplicated": (_tampered(lambda rs: [*rs, rs[0]]), "one to one"),
    "a record of another job": (
        _tampered(lambda rs: [*rs[:-1], replace(rs[-1], job=SimJob("z", 1, 5, 2))]),
        "one to one",
    ),
    "a record without its end": (_tampered(_edit("b", end=None)), "did not run exactly once"),
    "started before submitted": (_tampered(_edit("c", start=0.0)), "did not run exactly once"),
    "ended before started": (_tampered(_edit("c", end=9.0)), "did not run exactly once"),
    "unrunnable but started": (_tampered(_edit("a", unrunnable="no")), "unrunnable but started"),
    "claims do not add up": (_tampered(_edit("c", slots=3)), "do not add up"),
    "a claim of more slots": (
        _tampered(_edit("a", host_slots=(2,), slots=2)),
        "over-allocated",
    ),
    "overlapping jobs on one host": (
        _tampered(_edit("b", hosts=("n0",))),
        "host n0 was over-allocated",
    ),
    "a start moved earlier": (
        _tampered(_edit("c", start=5.0, end=10.0)),
        "over-allocated",
    ),
    "an unknown host": (_tampered(_edit("a", hosts=("nowhere",))), "unknown host"),
    "a finish twice": (FinishesTwice, "finished but was not running"),
    "a finish lost, a job waiting": (LosesAFinish, "still pending"),
}


@pytest.mark.parametrize(("engine", "message"), list(BROKEN.values()), ids=list(BROKEN))
def test_a_broken_engine_is_caught(engine: type[Simulation], message: str) -> None:
    """Each deliberate breakage raises InternalError, from the engine's own checks or
    from ``verify`` at the end of the run."""
    with pytest.raises(InternalError, match=message) as caught:
        _run_and_verify(engine)
    assert BUG in str(caught.value)


def _run_and_verify(engine: type[Simulation]) -> None:
    verify(engine(uniform_cluster(2, 1), WORKLOAD).run(), WORKLOAD)


def test_a_lost_finish_with_nothing_waiting_is_an_internal_error() -> None:
    with pytest.raises(InternalError, match="c"):
        _run_and_verify(LosesTheLastFinish)


def test_verify_takes_a_record_without_claims() -> None:
    """A record that ran with no claims and no slots (an engine's odd but consistent
    record) is checked, not crashed on: its claims add up to its 0 slots (review
    finding: the columnar check read the first slot count of an empty column)."""
    engine = _tampered(_edit("a", hosts=(), host_slots=(), slots=0))
    verify(engine(uniform_cluster(2, 1), WORKLOAD).run(), WORKLOAD)


def test_the_unbroken_engine_passes() -> None:
    result = Simulation(uniform_cluster(2, 1), WORKLOAD).run()
    verify(result, WORKLOAD)
    assert [(r.start, r.end) for r in result.records] == [(0, 10), (0, 10), (10, 15)]


def test_verify_counts_the_running_work_of_the_cluster() -> None:
    """h0 has 2 slots, 1 held for ever by running work; an engine recording a 2-slot
    claim on h0 has over-allocated it."""
    cluster = ClusterBuilder().host("h0", 2).running("r1", on={"h0": 1}).build()
    jobs = [SimJob("a", 0, 10, 1)]
    engine = _tampered(_edit("a", host_slots=(2,), slots=2))
    result = engine(cluster, jobs).run()
    with pytest.raises(InternalError, match="over-allocated"):
        verify(result, jobs)


def test_verify_orders_one_times_starts_and_ends_as_the_run_did() -> None:
    """A 0-second job z holds its slot during the session that starts it: y may take the
    same 1-slot host at the same time only after z's end (review finding: a sweep that
    ends every job first at a time never counts z)."""
    jobs = [SimJob("z", 0, 0, 1), SimJob("y", 0, 10, 1)]
    result = Simulation(uniform_cluster(1, 1), jobs).run()
    verify(result, jobs)
    z, y = result.records
    assert (z.start, z.end, y.start) == (0, 0, 0)
    assert z.sequence is not None
    assert y.sequence is not None
    assert z.sequence[1] < y.sequence[0]  # z ended before y started
    # an engine that started y while z still held the host
    result.records = [replace(z, sequence=(0, 2)), replace(y, sequence=(1, 3))]
    with pytest.raises(InternalError, match="host n0 was over-allocated"):
        verify(result, jobs)


def _jsonl(tmp_path: Path) -> str:
    """WORKLOAD as a jobs file."""
    path = tmp_path / "w.jsonl"
    rows = [
        {"id": j.id, "tasks": j.tasks, "submit_time": j.submit, "runtime": j.runtime}
        for j in WORKLOAD
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("engine", "message"),
    [BROKEN["overlapping jobs on one host"], BROKEN["a finish twice"]],
    ids=["verify", "engine check"],
)
def test_cli_exits_1_saying_it_is_a_bug(
    engine: type[Simulation],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``xce simulate`` on a broken engine: exit 1, and stderr says it is a bug in xce."""
    monkeypatch.setattr("xce.sim.engine.Simulation", engine)
    args = ["simulate", "--workload", _jsonl(tmp_path), "--hosts", "2", "--slots-per-host", "1"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert BUG in result.stderr
    assert message in result.stderr
    assert result.stdout == ""


def test_cli_passes_with_the_real_engine(tmp_path: Path) -> None:
    """The same command with the real engine succeeds (the breakage is what fails)."""
    args = ["simulate", "--workload", _jsonl(tmp_path), "--hosts", "2", "--slots-per-host", "1"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["ran"] == 3
