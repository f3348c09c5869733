"""issue 28: dependencies and think time in replays (xce.sim.flow).

SWF feedback (fields 17 and 18: a job is submitted think-time seconds after its
preceding job ends) and Slurm dependencies in jobs files (``afterok``, ``afterany``,
``afternotok``, ``after:+M``, ``singleton``, ``,`` and ``?``), with a job's failure from
SWF's status or ``failed: true``. Slurm's default for a dependency that can never hold
(pending with reason DependencyNeverSatisfied, unless ``kill_invalid_depend``) becomes
"never run" with that reason in a finite replay.

Properties over random workloads with dependencies and feedback: every exact shortcut
off (``SimOptions(fast_paths=False)``: the plain replay, the session shortcuts, idle
sessions) changes no record, timeline sample or metric; every job ends once or is
recorded as never run; no dependent job starts before its dependency holds, read from
the records; think time is kept exactly. Bad references are exit 2 at the file and line.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.cli.main import app
from xce.cluster import ClusterState
from xce.cluster.jobflow import DependencyItem, DepKind, parse_dependency
from xce.errors import InputError
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.flow import Changes
from xce.sim.metrics import metrics
from xce.sim.model import JobRecord, SimJob
from xce.sim.plain import plain_replay
from xce.sim.swf import read_swf
from xce.sim.workload import load_jobs_file, write_jobs_file

DATA = Path(__file__).resolve().parent / "data" / "swf-feedback"
NEVER = "DependencyNeverSatisfied"


def job(
    job_id: str, submit: float = 0.0, runtime: float = 10.0, tasks: int = 1, **kw: Any
) -> SimJob:
    dep = kw.pop("dependency", None)
    return SimJob(
        job_id,
        submit,
        runtime,
        tasks,
        dependency=parse_dependency(dep) if dep is not None else None,
        **kw,
    )


def replay(jobs: list[SimJob], slots: int = 4, **options: Any) -> dict[str, JobRecord]:
    sim = Simulation(uniform_cluster(1, slots), jobs, SimOptions(**options))
    result = sim.run()
    verify(result, sim.jobs)
    return {r.job.id: r for r in result.records}


def xce(*args: str | Path) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, ["simulate", *map(str, args)])


# --- SWF feedback ----------------------------------------------------------------------


def test_swf_fields_11_17_and_18_are_read() -> None:
    trace = read_swf(DATA / "feedback.swf")
    by_id = {j.id: j for j in trace.jobs}
    assert (by_id["3"].preceding, by_id["3"].think) == ("1", 60.0)
    assert (by_id["4"].preceding, by_id["4"].think) == ("3", 0.0)  # -1: unknown, read as 0
    assert by_id["1"].preceding is None
    assert by_id["1"].think == 0.0
    assert [j.id for j in trace.jobs if j.failed] == ["2", "8"]  # status 0 and 5


@pytest.mark.parametrize(("status", "failed"), [(1, False), (0, True), (5, True), (4, True),
                                                (3, False), (2, False), (-1, False)])  # fmt: skip
def test_swf_status_says_whether_a_job_failed(tmp_path: Path, status: int, failed: bool) -> None:
    path = tmp_path / "s.swf"
    path.write_text(f"1 0 0 10 1 -1 -1 1 10 -1 {status} 1 1 -1 1 -1 -1 -1\n", encoding="utf-8")
    assert read_swf(path).jobs[0].failed is failed


def test_swf_feedback_replayed(tmp_path: Path) -> None:
    """Job 3 is submitted 60 s after job 1 ends (not at its logged 20 s), job 4 the
    instant job 3 ends; job 5 names job 99, not in the trace: its logged time, one
    warning; job 7 follows job 6, which can never run here: never submitted."""
    result = xce("--workload", DATA / "feedback.swf", "--out", tmp_path)
    assert result.exit_code == 0, result.stderr
    rows = {r["job"]: r for r in _csv(tmp_path / "jobs.csv")}
    assert rows["1"]["end"] == "100"
    assert (rows["3"]["submit"], rows["3"]["start"]) == ("160", "160")
    assert rows["4"]["submit"] == rows["3"]["end"] == "190"
    assert rows["5"]["submit"] == "40"
    assert (
        rows["7"]["unrunnable"] == "never submitted: its preceding job 6 (SWF field 17) never ran"
    )
    assert result.stderr.count("xce: warning: feedback: 1 job(s) name a preceding job") == 1
    fields = (tmp_path / "schedule.swf").read_text(encoding="utf-8").splitlines()[-6].split()
    assert fields[0] == "3"
    assert fields[1] == "160"  # the replay's submit time
    assert fields[16:] == ["1", "60"]


def test_a_preceding_job_preempted_feeds_back_from_its_last_end() -> None:
    """The successor waits for its preceding job's final end, not a run cut short."""
    state = (
        ClusterBuilder().host("h0", slots=1).queue("lo", 0).queue("hi", 10, preempts=["lo"]).build()
    )
    jobs = [
        job("p", 0.0, 100.0, queue="lo"),
        job("x", 10.0, 20.0, queue="hi"),
        job("s", 0.0, 5.0, queue="lo", preceding="p", think=7.0),
    ]
    sim = Simulation(state, jobs, SimOptions())
    records = {r.job.id: r for r in sim.run().records}
    assert records["p"].preempted == 1
    assert records["p"].end == 130.0
    assert records["s"].job.submit == 137.0
    assert records["s"].start == 137.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("5 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 5 0", "is the job itself"),
        ("5 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 6 0", "is job 6, which comes later (line 3)"),
    ],
)
def test_a_bad_preceding_job_exits_2_at_its_field(tmp_path: Path, line: str, message: str) -> None:
    column = len(" ".join(line.split()[:16])) + 2  # where field 17 starts
    path = tmp_path / "bad.swf"
    path.write_text(
        f"; MaxProcs: 4\n{line}\n6 1 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n", "utf-8"
    )
    result = xce("--workload", path)
    assert result.exit_code == 2, result.stderr
    assert f"{path}:2:{column}" in result.stderr
    assert message in result.stderr
    lenient = read_swf(path, lenient=True)
    assert lenient.jobs[0].preceding is None
    assert lenient.skipped == {"preceding job not before it (field 17 ignored)": 1}


# --- jobs files ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_jobs_files_give_dependency_name_and_failed(tmp_path: Path, suffix: str) -> None:
    jobs = [
        job("a", failed=True, name="step"),
        job("b", 1.0, dependency="afterok:a?afternotok:a", name="step"),
        job("c", 2.0, dependency="singleton", name="step"),
    ]
    path = tmp_path / f"w{suffix}"
    write_jobs_file(jobs, path)
    loaded = load_jobs_file(path)
    assert loaded == jobs
    assert loaded[1].dependency is not None
    assert loaded[1].dependency.any_of


def test_failed_in_a_flow_mapping_keeps_every_other_error_in_place(tmp_path: Path) -> None:
    """``failed`` is taken out of the text before the state loader reads it, keeping
    lines and columns: a bad requirement on the same line is still shown at its column."""
    path = tmp_path / "w.yaml"
    path.write_text(
        'jobs:\n  - {id: a, failed: true, runtime: 5, resreq: "select[mem>]"}\n', "utf-8"
    )
    with pytest.raises(InputError) as err:
        load_jobs_file(path)
    line = '  - {id: a, failed: true, runtime: 5, resreq: "select[mem>]"}'
    assert (err.value.line, err.value.column) == (2, line.index("]") + 1)
    assert err.value.text == line  # as written, not as the loader read it


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        (
            "w.yaml",
            "jobs:\n  - {id: a, runtime: 5}\n  - {id: b, runtime: 5, failed: maybe}\n",
            ":3:",
        ),
        ("w.jsonl", '{"id": "a", "runtime": 5}\n{"id": "b", "runtime": 5, "failed": 1}\n', ":2:"),
    ],
)
def test_failed_must_be_true_or_false(tmp_path: Path, name: str, text: str, where: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = xce("--workload", path, "--hosts", "1")
    assert result.exit_code == 2
    assert f"{path}{where}" in result.stderr
    assert "failed must be true or false" in result.stderr


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("w.yaml", "jobs:\n  - {id: a, runtime: 5, bogus: 1}\n"),
        ("w.yaml", "jobs:\n  - {id: a, runtime: 5, failed: true, bogus: 1}\n"),
        ("w.jsonl", '{"id": "a", "runtime": 5, "bogus": 1}\n'),
    ],
)
def test_an_unknown_key_lists_failed_among_the_keys_a_job_may_have(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = xce("--workload", path, "--hosts", "1")
    assert result.exit_code == 2
    assert 'unknown key "bogus"; expected one of: id, ' in result.stderr
    assert ", accrue_time, failed\n" in result.stderr


BAD_DEPENDENCIES = {
    "unknown": ([{"id": "a", "dependency": "afterok:zz"}], "names job 'zz', which is not in", 1),
    "itself": ([{"id": "a"}, {"id": "b", "dependency": "afterany:b"}], "names the job itself", 2),
    "cycle": (
        [
            {"id": "a", "dependency": "afterok:c"},
            {"id": "b", "dependency": "afterany:a"},
            {"id": "c", "dependency": "after:b"},
        ],
        "jobs wait for each other in a cycle: a -> c -> b -> a",
        1,
    ),
}


@pytest.mark.parametrize(
    ("jobs", "message", "line"), BAD_DEPENDENCIES.values(), ids=list(BAD_DEPENDENCIES)
)
def test_bad_dependencies_exit_2_at_their_line(
    tmp_path: Path, jobs: list[dict[str, str]], message: str, line: int
) -> None:
    """At the line of the job to blame, in JSONL and in YAML."""
    entries = [{**j, "runtime": 5} for j in jobs]
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    result = xce("--workload", path, "--hosts", "1")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"xce: error: {path}:{line}:")
    assert message in result.stderr
    yaml_path = tmp_path / "w.yaml"
    yaml_path.write_text("jobs:\n" + "".join(f"  - {json.dumps(e)}\n" for e in entries), "utf-8")
    result = xce("--workload", yaml_path, "--hosts", "1")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"xce: error: {yaml_path}:{line + 1}:")
    assert message in result.stderr


# --- Slurm's semantics, one item at a time ------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "failed", "runs"),
    [
        ("afterany", False, True),
        ("afterany", True, True),
        ("afterok", False, True),
        ("afterok", True, False),
        ("aftercorr", True, False),  # read as afterok (no array tasks in a replay)
        ("afternotok", False, False),
        ("afternotok", True, True),
        ("afterburstbuffer", True, True),  # read as afterany
    ],
)
def test_a_dependency_on_how_a_job_ended(kind: str, failed: bool, runs: bool) -> None:
    """The dependent job starts the instant the job it names ends as it asks (the slots
    are free before), or never: recorded with Slurm's reason and the job's outcome."""
    records = replay(
        [job("x", 0.0, 50.0, failed=failed), job("j", 0.0, 5.0, dependency=f"{kind}:x")]
    )
    j = records["j"]
    if runs:
        assert j.start == 50.0
    else:
        assert j.start is None
        assert j.unrunnable is not None
        assert NEVER in j.unrunnable
        ended = "unsuccessfully" if failed else "successfully"
        assert f"{kind}:x: job x ended {ended}" in j.unrunnable


def test_killed_at_its_requested_time_is_a_failure() -> None:
    jobs = [job("x", 0.0, 50.0, requested_time=20.0), job("ok", 0.0, 5.0, dependency="afterok:x"),
            job("notok", 0.0, 5.0, dependency="afternotok:x")]  # fmt: skip
    records = replay(jobs, enforce_walltime=True)
    assert records["x"].killed
    assert records["notok"].start == 20.0
    assert records["ok"].start is None


def test_after_with_a_delay_holds_minutes_after_the_start() -> None:
    records = replay([job("x", 5.0, 1000.0), job("j", 0.0, 5.0, dependency="after:x+2"),
                      job("k", 0.0, 5.0, dependency="after:x")])  # fmt: skip
    assert records["j"].start == 5.0 + 120.0
    assert records["k"].start == 5.0  # a session at the instant x starts (after it)


def test_a_dependency_on_a_job_submitted_later_waits_for_it() -> None:
    """The core would read an id it does not know as a job that has ended: the replay
    holds the job until the one it names is submitted."""
    records = replay([job("j", 0.0, 5.0, dependency="afterany:x"), job("x", 30.0, 10.0)])
    assert records["j"].start == 40.0


def test_any_of_holds_with_the_first_item_and_never_only_when_all_fail() -> None:
    jobs = [job("a", 0.0, 10.0, failed=True), job("b", 0.0, 30.0),
            job("either", 0.0, 5.0, dependency="afterok:a?afterok:b"),
            job("neither", 0.0, 5.0, dependency="afterok:a?afternotok:b")]  # fmt: skip
    records = replay(jobs)
    assert records["either"].start == 30.0
    neither = records["neither"].unrunnable
    assert neither is not None
    assert (
        "afterok:a: job a ended unsuccessfully; afternotok:b: job b ended successfully" in neither
    )


def test_a_chain_of_doomed_jobs_and_jobs_waiting_for_unrunnable_ones() -> None:
    """Never is passed on: a job waiting for a doomed job, or for one no state of the
    cluster could run, never runs either."""
    jobs = [job("x", 0.0, 10.0, failed=True), job("y", 0.0, 5.0, dependency="afterok:x"),
            job("z", 0.0, 5.0, dependency="afterany:y"), job("wide", 0.0, 5.0, tasks=9),
            job("w", 0.0, 5.0, dependency="after:wide")]  # fmt: skip
    records = replay(jobs)
    assert [r for r in records if records[r].start is None] == ["y", "z", "wide", "w"]
    assert "afterany:y: job y never ran" in (records["z"].unrunnable or "")
    assert "after:wide: job wide never started" in (records["w"].unrunnable or "")


def test_singleton_is_the_cores_gate() -> None:
    jobs = [job("a", 0.0, 50.0, name="n"), job("b", 1.0, 5.0, name="n", dependency="singleton"),
            job("c", 2.0, 5.0, name="other", dependency="singleton")]  # fmt: skip
    records = replay(jobs)
    assert records["b"].start == 50.0
    assert records["c"].start == 2.0


def test_backfill_plans_a_dependent_job_from_the_end_of_the_one_it_waits_for() -> None:
    """Sessions and plans see the dependent job as a state file's: planned from the
    estimated end of the job it waits for, with nothing held for it."""
    jobs = [job("x", 0.0, 100.0, tasks=2, requested_time=100.0),
            job("j", 0.0, 10.0, tasks=4, requested_time=10.0, dependency="afterok:x")]  # fmt: skip
    records = replay(jobs, backfill="easy")
    assert records["j"].planned_start == 100.0
    assert records["j"].planned_ahead
    assert records["j"].start == 100.0


def test_the_worked_example(tmp_path: Path) -> None:
    """docs/simulation.md, "Dependencies and think time"."""
    result = xce("--workload", DATA / "chain.yaml", "--hosts", "3", "--slots-per-host", "4",
                 "--out", tmp_path)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    rows = {r["job"]: (r["start"], r["end"], r["unrunnable"]) for r in _csv(tmp_path / "jobs.csv")}
    assert rows == {
        "prep": ("0", "600", ""),
        "sim": ("600", "4200", ""),
        "watch": ("1200", "1320", ""),
        "post": ("4200", "4500", ""),
        "rescue": ("", "", f"never started: its dependency can never be satisfied ({NEVER}: "
                   "afternotok:sim: job sim ended successfully)"),
        "flaky": ("60", "160", ""),
        "retry": ("", "", f"never started: its dependency can never be satisfied ({NEVER}: "
                  "afterok:flaky: job flaky ended unsuccessfully)"),
        "notify": ("160", "170", ""),
    }  # fmt: skip


def test_the_plain_replay_declines_jobs_that_wait_for_others() -> None:
    state = uniform_cluster(2, 2)
    plain = [job("a"), job("b", 1.0)]
    assert plain_replay(Simulation(state, plain)) is not None
    waiting = [plain[0], replace(plain[1], dependency=parse_dependency("afterok:a"))]
    assert plain_replay(Simulation(state, waiting)) is None
    fed = [plain[0], replace(plain[1], preceding="a")]
    assert plain_replay(Simulation(state, fed)) is None
    dangling = [plain[0], replace(plain[1], preceding="gone")]  # keeps its time: plain
    assert plain_replay(Simulation(state, dangling)) is not None


def test_a_predictor_shadow_core_is_told_of_every_change() -> None:
    """With a predictor planning beside the requested times (a shadow core), updates
    and removals reach both cores; ``limit`` predicts every job at its limit, so the
    decisions are those without a predictor."""
    jobs = [job("x", 0.0, 50.0, requested_time=60.0, failed=True),
            job("y", 0.0, 5.0, requested_time=10.0, dependency="afterok:x"),
            job("z", 0.0, 5.0, requested_time=10.0, dependency="afternotok:x"),
            job("w", 1.0, 5.0, tasks=4, requested_time=10.0, dependency="after:x+1")]  # fmt: skip
    with_predictor = replay(jobs, backfill="easy", predictor="limit")
    without = replay(jobs, backfill="easy")
    assert [(r.start, r.unrunnable) for r in with_predictor.values()] == [
        (r.start, r.unrunnable) for r in without.values()
    ]


# --- properties over random workloads -----------------------------------------------------

KINDS = ("after", "after", "afterany", "afterok", "afterok", "afternotok", "singleton")
PICKERS = ("fcfs", "strict", "fairshare")
BACKFILLS = (None, None, "easy", "conservative")
INTERVALS = (None, None, None, 0.5, 3.0)
TIMES = (0.0, 0.0, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
RUNTIMES = (0.0, 1.0, 5.0, 10.0, 30.0, 90.0)
ESTIMATES = (None, 5.0, 10.0, 100.0)


@dataclass(frozen=True)
class Case:
    """A random replay whose jobs wait for each other; its repr is the whole input."""

    hosts: tuple[int, ...]
    picker: str
    backfill: str | None
    interval: float | None
    preempting: bool
    walltime: bool
    jobs: tuple[SimJob, ...]

    def state(self) -> ClusterState:
        b = ClusterBuilder()
        for i, slots in enumerate(self.hosts):
            b.host(f"h{i}", slots=slots)
        b.queue("lo", 0)
        b.queue("hi", 10, preempts=["lo"] if self.preempting else ())
        return b.build()

    def options(self, **changes: Any) -> SimOptions:
        return SimOptions(
            picker=self.picker,
            backfill=self.backfill,
            interval=self.interval,
            enforce_walltime=self.walltime,
            **changes,
        )


@st.composite
def dependencies(draw: st.DrawFn, i: int) -> str | None:
    """A dependency of job ``i`` on jobs before it in the workload (no cycle), which
    may well be submitted after it."""
    if i == 0 or draw(st.integers(0, 2)) == 0:
        return None
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(KINDS))
        if kind == "singleton":
            parts.append(kind)
            continue
        other = draw(st.integers(0, i - 1))
        delay = "+1" if kind == "after" and draw(st.booleans()) else ""
        parts.append(f"{kind}:j{other}{delay}")
    return draw(st.sampled_from(",?")).join(parts)


@st.composite
def cases(draw: st.DrawFn, *, preemption: bool = True) -> Case:
    hosts = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    total = sum(hosts)
    jobs = []
    for i in range(draw(st.integers(1, 12))):
        preceding = None
        if i and draw(st.integers(0, 3)) == 0:
            preceding = draw(st.sampled_from([f"j{k}" for k in range(i)] + ["gone"]))
        dep = draw(dependencies(i))
        jobs.append(
            SimJob(
                f"j{i}",
                draw(st.sampled_from(TIMES)),
                draw(st.sampled_from(RUNTIMES)),
                draw(st.integers(1, total + (1 if draw(st.integers(0, 9)) == 0 else 0))),
                user=draw(st.sampled_from(("u1", "u2"))),
                queue=draw(st.sampled_from(("lo", "lo", "hi"))),
                requested_time=draw(st.sampled_from(ESTIMATES)),
                dependency=parse_dependency(dep) if dep else None,
                name=draw(st.sampled_from((None, "n", "m"))),
                failed=draw(st.integers(0, 3)) == 0,
                preceding=preceding,
                think=draw(st.sampled_from((0.0, 0.5, 5.0, 60.0))) if preceding else 0.0,
            )
        )
    return Case(
        hosts,
        draw(st.sampled_from(PICKERS)),
        draw(st.sampled_from(BACKFILLS)),
        draw(st.sampled_from(INTERVALS)),
        preemption and draw(st.booleans()),
        draw(st.integers(0, 3)) == 0,
        tuple(jobs),
    )


class _Watched(Simulation):
    """A simulation that counts what its jobs' flow did, and which shortcut paths ran
    while a job waited for another."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: Counter[str] = Counter()

    def _apply_flow(self, changes: Changes) -> None:
        self.seen["updated"] += len(changes.views)
        self.seen["held"] += sum(v.hold for v in changes.views.values())
        self.seen["doomed"] += len(changes.doomed)
        self.seen["fed back"] += len(changes.submits)
        self.seen["woken"] += len(changes.wakes)
        super()._apply_flow(changes)

    def _strict_in_batches(self, now: float) -> None:
        if any(j.gated for j in self.core.pending_jobs()):
            self.seen["strict batches with a job at a gate"] += 1
        super()._strict_in_batches(now)

    def _candidates(self) -> Any:
        if any(j.gated for j in self.core.pending_jobs()):
            self.seen["candidates with a job at a gate"] += 1
        return super()._candidates()


def run(case: Case, **changes: Any) -> tuple[SimResult, _Watched]:
    sim = _Watched(case.state(), list(case.jobs), case.options(**changes))
    result = sim.run()
    verify(result, sim.jobs)
    return result, sim


def assert_same(fast: SimResult, slow: SimResult) -> None:
    assert list(fast.records) == list(slow.records)
    assert list(fast.timeline.times) == list(slow.timeline.times)
    assert list(fast.timeline.busy) == list(slow.timeline.busy)
    assert list(fast.timeline.pending) == list(slow.timeline.pending)
    assert json.dumps(metrics(fast)) == json.dumps(metrics(slow))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_shortcut_off_changes_no_decision(case: Case) -> None:
    fast, _ = run(case)
    slow, _ = run(case, fast_paths=False)
    assert_same(fast, slow)
    assert run(case, plain_replay=False)[0].records == fast.records


REACHED = (
    "updated",
    "held",
    "doomed",
    "fed back",
    "woken",
    "strict batches with a job at a gate",
    "candidates with a job at a gate",
)


def test_random_cases_reach_every_change_and_shortcut() -> None:
    """The property's cases do reach what they are meant to check (not assumed). The
    cases are 400 drawn derandomized: a random draw of 150 missed the rarest (a strict
    batch with a job at a gate) about one run in eight, so this check would flake."""
    seen: Counter[str] = Counter()

    @settings(
        max_examples=400,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(cases())
    def collect(case: Case) -> None:
        seen.update(run(case)[1].seen)

    collect()
    for what in REACHED:
        assert seen[what], (what, seen)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(preemption=False))
def test_dependencies_hold_at_every_start_and_think_time_is_kept(case: Case) -> None:
    """From the records alone: each job ran once or is recorded never run (verify); a
    job that started had its dependency satisfied then; one that never ran, without
    being unrunnable here, could not have it satisfied; a fed back job was submitted its
    think time after its preceding job ended, or never if that job never ran."""
    result, _ = run(case)
    records = {r.job.id: r for r in result.records}
    logged = {j.id: j for j in case.jobs}
    for r in result.records:
        j = logged[r.job.id]
        # every job can run here, alone: none is left pending when the run ends
        assert not (r.unrunnable or "").startswith("never started: pending"), r
        if j.preceding in records:
            before = records[j.preceding]
            if before.end is None:
                assert r.start is None
                assert (r.unrunnable or "").startswith("never submitted")
                continue
            assert r.job.submit == before.end + j.think
        else:
            assert r.job.submit == j.submit
        if j.dependency is None:
            continue
        if r.start is not None:
            assert _holds(j, r, records), (j, r)
        elif r.unrunnable and NEVER in r.unrunnable:
            assert not _can_hold(j, records), (j, r)


def _holds(j: SimJob, r: JobRecord, records: dict[str, JobRecord]) -> bool:
    assert j.dependency is not None
    assert r.start is not None
    held = [_item_held(item, j, r, records) for item in j.dependency.items]
    return any(held) if j.dependency.any_of else all(held)


def _item_held(
    item: DependencyItem, j: SimJob, r: JobRecord, records: dict[str, JobRecord]
) -> bool:
    start = r.start
    assert start is not None
    assert r.sequence is not None
    if item.kind is DepKind.SINGLETON:  # no job of its user and name ran when it started
        return j.name is None or not any(
            o.job.user == j.user and o.job.name == j.name and o.job.id != j.id
            and o.sequence is not None and o.sequence[0] < r.sequence[0] < o.sequence[1]
            for o in records.values()
        )  # fmt: skip
    assert item.job is not None
    x = records[item.job]
    if x.start is None or x.end is None:
        return False
    if item.kind is DepKind.AFTER:
        return start >= x.start + item.delay
    ok = not (x.job.failed or x.killed)
    wanted = {DepKind.AFTEROK: ok, DepKind.AFTERNOTOK: not ok}.get(item.kind, True)
    return wanted and start >= x.end


def _can_hold(j: SimJob, records: dict[str, JobRecord]) -> bool:
    """Whether some item could have held at any time (singleton always can)."""
    assert j.dependency is not None
    late = JobRecord(j, math.inf, math.inf, sequence=(1 << 60, 1 << 60))
    held = [
        item.kind is DepKind.SINGLETON or _item_held(item, j, late, records)
        for item in j.dependency.items
    ]
    return any(held) if j.dependency.any_of else all(held)


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))
