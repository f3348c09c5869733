"""The simulator against careless or hostile input (issue 10, "Nothing lost, nothing
hangs"): session intervals that once hung, bounded and located trace and jobs-file
errors, one utilisation figure, and the shortcuts a picker declares rather than a name.
"""

from __future__ import annotations

import gzip
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies import Scenario
from test_sim_properties import timed_scenarios
from xce.cluster import ClusterState, PendingJob, Queue
from xce.core.pickers import (
    FcfsPicker,
    PickerTraits,
    QueueCursor,
    StrictPicker,
    default_pickers,
    picker_traits,
)
from xce.errors import InputError
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import (
    MIN_INTERVAL,
    SimOptions,
    SimResult,
    Simulation,
    next_session_time,
    verify,
)
from xce.sim.generate import (
    MAX_GENERATED_JOBS,
    MAX_HOSTS,
    MAX_USERS,
    WorkloadModel,
    generate_workload,
)
from xce.sim.model import SimJob
from xce.sim.swf import read_swf
from xce.sim.workload import load_jobs_file, load_workload

# --- sessions every --interval -------------------------------------------------------------

_RUN_WITH_INTERVAL = """
import sys
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, Simulation, verify
from xce.sim.model import SimJob
jobs = [SimJob(str(i), float(i), 7.0, 1 + i % 2) for i in range(60)]
result = Simulation(uniform_cluster(2, 1), jobs, SimOptions(interval=float(sys.argv[1]))).run()
verify(result, jobs)
print(sum(r.start is not None for r in result.records))
"""


@pytest.mark.parametrize("interval", [3.3, 0.7, 1.1])
def test_interval_replay_ends(interval: float) -> None:
    """Issue 10, hang: ``--interval 3.3`` (0.7, 1.1) never ended, as the next session
    time ``(floor(now/iv)+1)*iv`` rounded back to ``now``. The replay runs in a child
    process so that a hang fails this test (after a generous guard) instead of the suite."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN_WITH_INTERVAL, str(interval)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["60"]


@pytest.mark.parametrize("interval", [3.3, 0.7, 1.1, 10.0, MIN_INTERVAL, 1e9])
def test_session_times_strictly_increase(interval: float) -> None:
    """Issue 10, hang: every session time is a whole multiple of the interval and
    strictly after the time it follows, at every session time (where rounding bit) and
    between them."""
    for k in range(3000):
        for now in (k * interval, k * interval + interval / 3):
            after = next_session_time(now, interval)
            assert after > now
            assert after <= now + interval * 1.000001
            assert after == round(after / interval) * interval


def test_session_times_past_float_resolution_still_advance() -> None:
    """Issue 10, hang: an interval finer than the float resolution of ``now`` still gives
    a later time (the multiple grows until it is past ``now``)."""
    now = 1e15  # its float resolution is 0.125 s
    assert next_session_time(now, MIN_INTERVAL) > now


@pytest.mark.parametrize(
    ("interval", "message"),
    [
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        (0.0, "at least"),
        (-5.0, "at least"),
        (1e-300, "at least"),
    ],
)
def test_bad_interval_is_input_error(interval: float, message: str) -> None:
    """Issue 10, hang: ``--interval nan/inf`` raised ValueError and ``1e-300`` an internal
    error; from the API too, a non-finite or too small interval is an InputError."""
    jobs = [SimJob("a", 0, 5, 1)]
    with pytest.raises(InputError, match=message):
        Simulation(uniform_cluster(1, 1), jobs, SimOptions(interval=interval))


# --- shortcuts a picker declares ----------------------------------------------------------


class _DeclaredFcfs:
    """A plugin picker ordering as fcfs and saying so."""

    name = "declared-fcfs"
    monotone_in_session = True
    blocks_queue_at_head = False

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return FcfsPicker().start(queue, jobs, state)


class _PlainFcfs:
    """The same order, with nothing declared."""

    name = "plain-fcfs"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return FcfsPicker().start(queue, jobs, state)


class _DeclaredStrict:
    name = "declared-strict"
    monotone_in_session = True
    blocks_queue_at_head = True

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return StrictPicker().start(queue, jobs, state)


class _PlainStrict:
    name = "plain-strict"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return StrictPicker().start(queue, jobs, state)


class _BlocksOnly:
    """Claims to block at its head but not to be monotone: no shortcut at all."""

    name = "blocks-only"
    monotone_in_session = False
    blocks_queue_at_head = True

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return StrictPicker().start(queue, jobs, state)


def test_picker_traits() -> None:
    """Issue 10, policy knowledge in the policy: the builtins declare what they promise;
    an undeclared (or non-True) attribute promises nothing; blocking alone gives nothing."""
    builtins = default_pickers(plugins=False)
    assert picker_traits(builtins.get("fcfs")) == PickerTraits(True, False, never_blocks=True)
    assert picker_traits(builtins.get("strict")) == PickerTraits(True, True)
    for name in ("fairshare", "priority", "multifactor", "lsf-fairshare"):
        assert picker_traits(builtins.get(name)) == PickerTraits(False, False, never_blocks=True)
    assert picker_traits(_PlainFcfs()) == PickerTraits(False, False)
    assert picker_traits(_BlocksOnly()) == PickerTraits(False, False)


def _busy_workload() -> list[SimJob]:
    """A long job holds the cluster while many more arrive, one at a time."""
    jobs = [SimJob("long", 0, 500, 2)]
    jobs += [SimJob(f"j{i}", 1 + i, 20 + i % 7, 1 + i % 2) for i in range(60)]
    return jobs


def _replay(picker: object, jobs: list[SimJob]) -> tuple[SimResult, dict[str, float]]:
    registry = default_pickers(plugins=False)
    registry.register(picker)  # type: ignore[arg-type]
    sim = Simulation(
        uniform_cluster(2, 1),
        jobs,
        SimOptions(picker=picker.name, single_queue=True),  # type: ignore[attr-defined]
        pickers=registry,
    )
    result = sim.run()
    verify(result, jobs)
    return result, {r.job.id: r.start for r in result.records if r.start is not None}


@pytest.mark.parametrize(
    ("declared", "plain", "builtin"),
    [(_DeclaredFcfs(), _PlainFcfs(), "fcfs"), (_DeclaredStrict(), _PlainStrict(), "strict")],
    ids=["fcfs-like", "strict-like"],
)
def test_plugin_picker_gets_the_shortcut_it_declares(
    declared: object, plain: object, builtin: str
) -> None:
    """Issue 10, policy knowledge in the policy: the engine once special-cased the names
    ``fcfs``/``strict``. A plugin picker declaring ``monotone_in_session`` (and
    ``blocks_queue_at_head``) gets the exact shortcuts: the same schedule as the builtin
    and the undeclared twin, with the same (fewer) decisions as the builtin; the
    undeclared twin is tried in full every session."""
    jobs = _busy_workload()
    fast, fast_starts = _replay(declared, jobs)
    slow, slow_starts = _replay(plain, jobs)
    reference = Simulation(
        uniform_cluster(2, 1), jobs, SimOptions(picker=builtin, single_queue=True)
    ).run()
    assert fast_starts == slow_starts
    assert fast_starts == {r.job.id: r.start for r in reference.records if r.start is not None}
    assert fast.stats.decisions == reference.stats.decisions
    assert fast.stats.decisions < slow.stats.decisions


def test_blocking_without_monotone_gets_no_shortcut() -> None:
    """Issue 10, policy knowledge in the policy: ``blocks_queue_at_head`` without
    ``monotone_in_session`` promises nothing the engine can use."""
    jobs = _busy_workload()
    blocks, _ = _replay(_BlocksOnly(), jobs)
    plain, _ = _replay(_PlainStrict(), jobs)
    assert blocks.stats.decisions == plain.stats.decisions


# --- reading traces and jobs files --------------------------------------------------------

FIELDS = 18


def swf_line(job: int, submit: float, procs: str = "1") -> str:
    values = ["-1"] * FIELDS
    values[0], values[1], values[3], values[4], values[7] = str(job), str(submit), "10", "1", procs
    return " ".join(values)


def swf_body(n: int) -> str:
    return "; MaxNodes: 4\n; MaxProcs: 4\n" + "".join(
        swf_line(i, i) + "\n" for i in range(1, n + 1)
    )


@pytest.mark.parametrize("lenient", [False, True])
def test_truncated_gzip_trace_is_a_located_input_error(tmp_path: Path, lenient: bool) -> None:
    """Issue 10, reading: a truncated ``.swf.gz`` gave EOFError, even with --lenient.
    It is an InputError naming the file and the line it broke off in (with --lenient
    too: a truncated archive is not a malformed line)."""
    whole = gzip.compress(swf_body(5000).encode())
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match="truncated") as caught:
        read_swf(path, lenient=lenient)
    err = caught.value
    assert err.source == str(path)
    assert err.line is not None
    assert 2 < err.line < 5003
    assert f"lines 1 to {err.line - 1} were read whole" in err.message


def test_a_gzip_trace_cut_in_its_first_line_says_no_line_was_read(tmp_path: Path) -> None:
    """Cut before its first line ends, a trace reads no line whole ("lines 1 to 0" once)."""
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(gzip.compress(("; " + "x" * 100_000 + "\n").encode())[:60])
    with pytest.raises(InputError, match="truncated") as caught:
        read_swf(path)
    assert caught.value.line == 1
    assert "(no line was read whole)" in caught.value.message


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
@pytest.mark.parametrize("name", ["t.swf", "t.swf.gz", "w.jsonl", "w.yaml"])
def test_trace_or_jobs_file_must_be_a_regular_file(tmp_path: Path, kind: str, name: str) -> None:
    """Issue 10, reading: a FIFO or ``/dev/zero`` given as an input was read without
    bound (or waited for a writer for ever). It is refused by what it is, unopened."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        path.symlink_to("/dev/zero")
    with pytest.raises(InputError, match="not a regular file") as caught:
        load_workload(path)
    assert caught.value.source == str(path)


@pytest.mark.parametrize("procs", ["1000000000000000000", "1e18", "-1e16"])
def test_huge_swf_field_is_a_located_error(tmp_path: Path, procs: str) -> None:
    """Issue 10, huge numbers: an SWF processor count of 10^18 was taken as a job. Every
    field is at most 10^15 (the state files' limit); beyond, the line is malformed: an
    error at file:line:column, or skipped and counted with --lenient."""
    bad = swf_line(2, 1, procs)
    path = tmp_path / "t.swf"
    path.write_text(swf_line(1, 0) + "\n" + bad + "\n" + swf_line(3, 2) + "\n")
    with pytest.raises(InputError, match="field 8") as caught:
        read_swf(path)
    err = caught.value
    assert (err.source, err.line, err.text) == (str(path), 2, bad)
    assert err.column == bad.index(procs) + 1
    assert str(err).startswith(f"{path}:2:{err.column}: ")
    trace = read_swf(path, lenient=True)
    assert [j.id for j in trace.jobs] == ["1", "3"]
    assert trace.skipped["malformed line"] == 1


@pytest.mark.parametrize("value", ["3e8", "1000001", "1e300"])
def test_huge_max_nodes_header_is_a_located_error(tmp_path: Path, value: str) -> None:
    """Issue 10, huge numbers: header ``MaxNodes 3e8`` led to a cluster of 3e8 hosts
    (memory exhaustion). Read with the limit, it is an error at the header's line."""
    path = tmp_path / "t.swf"
    path.write_text(f"; Version: 2\n; MaxNodes: {value}\n" + swf_line(1, 0) + "\n")
    trace = read_swf(path)
    assert trace.header_lines["MaxNodes"] == 2
    with pytest.raises(InputError, match="MaxNodes") as caught:
        trace.header_int("MaxNodes", limit=MAX_HOSTS)
    assert (caught.value.source, caught.value.line) == (str(path), 2)


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "x", "0"])
def test_non_numeric_max_nodes_header_is_absent(tmp_path: Path, value: str) -> None:
    """Issue 10, huge numbers: ``MaxNodes: inf`` raised OverflowError; a header that is
    not a finite positive number counts as absent."""
    path = tmp_path / "t.swf"
    path.write_text(f"; MaxNodes: {value}\n" + swf_line(1, 0) + "\n")
    assert read_swf(path).header_int("MaxNodes", limit=MAX_HOSTS) is None


def test_duplicate_swf_job_ids_name_both_lines(tmp_path: Path) -> None:
    """Issue 10, missing location: duplicate job ids in SWF named no line. The error is
    at the second line and names the first; --lenient skips and counts it."""
    path = tmp_path / "t.swf"
    path.write_text(
        "; MaxNodes: 4\n" + swf_line(7, 0) + "\n" + swf_line(8, 1) + "\n" + swf_line(7, 2) + "\n"
    )
    with pytest.raises(InputError, match="used on line 2") as caught:
        read_swf(path)
    assert (caught.value.line, caught.value.column) == (4, 1)
    trace = read_swf(path, lenient=True)
    assert [j.id for j in trace.jobs] == ["7", "8"]
    assert trace.skipped["duplicate job id"] == 1


def test_duplicate_jsonl_job_ids_name_both_lines(tmp_path: Path) -> None:
    """Issue 10, missing location: duplicate job ids in JSONL named no line."""
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"id": 1, "runtime": 5}\n\n{"id": 2, "runtime": 5}\n{"id": "1", "runtime": 5}\n'
    )
    with pytest.raises(InputError, match="on line 1 already") as caught:
        load_jobs_file(path)
    assert (caught.value.source, caught.value.line) == (str(path), 4)


def test_duplicate_ids_given_to_the_engine_name_both_lines() -> None:
    """Issue 10, missing location: jobs built elsewhere with one id twice are refused
    by the engine with the lines they came from."""
    jobs = [SimJob("a", 0, 5, 1, source="w.jsonl", line=3), SimJob("a", 1, 5, 1, line=9)]
    with pytest.raises(InputError, match=r"appears twice \(also line 3\)") as caught:
        Simulation(uniform_cluster(1, 1), jobs)
    assert caught.value.line == 9


BAD_REQUIREMENT = "select[mem>>1]"
JOBS_FILES = {
    "w.yaml": ('jobs:\n  - {id: 1, runtime: 5}\n  - {id: 2, runtime: 5, resreq: "%s"}\n', 3),
    "w.json": (
        '{"jobs": [\n  {"id": 1, "runtime": 5},\n  {"id": 2, "runtime": 5, "resreq": "%s"}\n]}\n',
        3,
    ),
    "w.jsonl": ('{"id": 1, "runtime": 5}\n{"id": 2, "runtime": 5, "resreq": "%s"}\n', 2),
}


@pytest.mark.parametrize("name", list(JOBS_FILES))
def test_jobs_file_requirement_errors_are_located_at_load(tmp_path: Path, name: str) -> None:
    """Issue 10, missing location: jobs-file requirement errors carried no file or line
    and appeared only when the replay reached the job. Every requirement is checked at
    load time: file, line, and a caret under the bad column of that line."""
    text, line = JOBS_FILES[name]
    path = tmp_path / name
    path.write_text(text % BAD_REQUIREMENT)
    with pytest.raises(InputError) as caught:
        load_jobs_file(path)
    err = caught.value
    assert (err.source, err.line) == (str(path), line)
    assert err.text is not None
    assert err.column is not None
    bad_line = (text % BAD_REQUIREMENT).split("\n")[line - 1]
    assert err.text == bad_line
    assert bad_line[err.column - 1] == ">"  # the second '>', where the parse fails
    assert bad_line[err.column - 2 : err.column] == ">>"


def test_jobs_file_task_count_errors_are_located_at_load(tmp_path: Path) -> None:
    """Issue 10, missing location: a requirement that cannot bind the job's task count
    (a compound requirement fixes its own) is an error at load, at its line."""
    path = tmp_path / "w.jsonl"
    path.write_text('{"id": 1, "runtime": 5, "tasks": 3, "resreq": "2*{-} + 2*{-}"}\n')
    with pytest.raises(InputError) as caught:
        load_jobs_file(path)
    assert (caught.value.source, caught.value.line) == (str(path), 1)


def test_unknown_resource_is_found_before_the_replay(tmp_path: Path) -> None:
    """Issue 10, missing location: a requirement naming what the cluster lacks was found
    only when the replay reached the job. With the cluster's catalog it is an error at
    load; without, the engine finds it before the first event, at the job's line."""
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"id": 1, "runtime": 5}\n'
        + "".join(f'{{"id": {i}, "submit_time": {i}, "runtime": 5}}\n' for i in range(2, 50))
        + '{"id": 99, "submit_time": 1000, "runtime": 5, "resreq": "rusage[gpus=1]"}\n'
    )
    cluster = uniform_cluster(2, 1)
    with pytest.raises(InputError, match="gpus") as caught:
        load_jobs_file(path, catalog=cluster.catalog)
    assert (caught.value.line, caught.value.text) == (50, path.read_text().split("\n")[49])
    jobs = load_jobs_file(path)
    with pytest.raises(InputError, match="gpus") as caught:
        Simulation(cluster, jobs)  # not run: the check is made before any event
    assert (caught.value.source, caught.value.line) == (str(path), 50)
    assert "rusage[gpus=1]\n" in caught.value.message  # quoted, with a caret below


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": 1, "runtime": 5, "runtime": 6}', "'runtime' appears twice"),
        ("[" * 100_000 + "]" * 100_000, "not a job"),
        ('{"id": 1, "runtime": ' + "9" * 5000 + "}", "not a job"),
    ],
    ids=["duplicate key", "deep nesting", "huge integer"],
)
def test_jsonl_hostile_lines_are_located_errors(tmp_path: Path, line: str, message: str) -> None:
    """Issue 10, crashes and silent acceptance: in a JSONL jobs file a duplicate key was
    accepted, and deep nesting or a 5000-digit integer raised RecursionError/ValueError.
    Each is an InputError at its line."""
    path = tmp_path / "w.jsonl"
    path.write_text('{"id": 0, "runtime": 5}\n' + line + "\n")
    with pytest.raises(InputError, match=message) as caught:
        load_jobs_file(path)
    assert (caught.value.source, caught.value.line) == (str(path), 2)


# --- generating -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [MAX_GENERATED_JOBS + 1, 10**30, -1])
def test_generate_refuses_too_many_jobs(n: int) -> None:
    """Issue 10, huge numbers: ``workload generate --jobs 1e30`` exhausted memory. The
    count is refused beyond ``MAX_GENERATED_JOBS`` before anything is drawn."""
    with pytest.raises(InputError, match="number of jobs"):
        generate_workload(n)


@pytest.mark.parametrize(
    ("knob", "value", "message"),
    [
        ("max_tasks", 1, "max_tasks must be at least 2"),
        ("users", 0, "users must be from 1"),
        ("users", MAX_USERS + 1, "users must be from 1"),
        ("peak_hour", 25.0, "peak_hour must be an hour"),
        ("peak_hour", math.nan, "peak_hour must be an hour"),
        ("runtime_sigma", math.inf, "runtime_sigma"),
        ("zipf_exponent", -1.0, "zipf_exponent"),
    ],
)
def test_each_workload_knob_has_its_own_message(knob: str, value: float, message: str) -> None:
    """Issue 10, wrong blame: ``--max-tasks``/``--users`` shared one message mentioning
    the internal ``zipf_exponent``, and ``--peak-hour 25`` was accepted. Each knob has a
    message naming it alone (the CLI maps knob names to its options)."""
    with pytest.raises(InputError, match=message) as caught:
        WorkloadModel(**{knob: value}).check()
    others = {"max_tasks", "users", "zipf_exponent", "peak_hour", "runtime_sigma"} - {knob}
    assert not any(other in caught.value.message for other in others)


@given(
    case=timed_scenarios(),
    twins=st.sampled_from(
        ((_DeclaredFcfs(), _PlainFcfs()), (_DeclaredStrict(), _PlainStrict())),
    ),
    single=st.booleans(),
    interval=st.sampled_from((None, None, 3.3)),
)
def test_declared_shortcuts_change_no_decision(
    case: tuple[Scenario, list[SimJob]],
    twins: tuple[object, object],
    single: bool,
    interval: float | None,
) -> None:
    """Issue 10, policy knowledge in the policy: on random clusters and workloads (limits,
    running work, requirement mixes), a plugin picker that declares the shortcuts gets
    the very schedule of its undeclared twin, which is tried in full every session."""
    scenario, jobs = case
    schedules = []
    for picker in twins:
        registry = default_pickers(plugins=False)
        registry.register(picker)  # type: ignore[arg-type]
        options = SimOptions(
            picker=picker.name,  # type: ignore[attr-defined]
            single_queue=single,
            interval=interval,
        )
        result = Simulation(scenario.state, jobs, options, pickers=registry).run()
        verify(result, jobs)
        schedules.append([(r.job.id, r.start, r.end, tuple(r.hosts)) for r in result.records])
    assert schedules[0] == schedules[1]


@pytest.mark.parametrize("name", list(JOBS_FILES))
def test_unknown_resource_with_the_catalog_is_located_at_load(tmp_path: Path, name: str) -> None:
    """Issue 10, missing location: given the cluster's catalog, a requirement naming a
    resource the cluster lacks is an error at load, at its line, the caret under it."""
    text, line = JOBS_FILES[name]
    path = tmp_path / name
    path.write_text(text % "rusage[gpus=1]")
    with pytest.raises(InputError, match="gpus") as caught:
        load_jobs_file(path, catalog=uniform_cluster(2, 1).catalog)
    err = caught.value
    assert (err.source, err.line) == (str(path), line)
    assert err.text is not None
    assert err.column is not None
    assert err.text[err.column - 1 :].startswith("gpus")


# --- a cluster file's own pending jobs ---------------------------------------------------


def test_a_cluster_files_pending_jobs_are_not_replayed_and_a_warning_says_so() -> None:
    """Nothing lost without a word: a state's pending jobs (a capture's queue, which has
    no runtimes) are not the replay's workload; the replay says it leaves them out."""
    state = uniform_cluster(2, 1)
    queued = PendingJob("p1", "u", "normal", "default", 1, 1, "", 0.0, None, 0)
    with_queue = replace(state, jobs=(queued,))
    jobs = [SimJob("a", 0.0, 5.0, 1)]
    assert not any("pending job" in w for w in Simulation(state, jobs).warnings)
    sim = Simulation(with_queue, jobs)
    [line] = [w for w in sim.warnings if "pending job" in w]
    assert "1 pending job(s) are not replayed" in line
    result = sim.run()
    assert [r.job.id for r in result.records] == ["a"]
    assert line in result.warnings


def test_a_cluster_files_running_jobs_without_runtime_are_said_to_hold_for_ever() -> None:
    """An imported capture's running jobs have no runtime: they hold their slots for the
    whole replay (docs/simulation.md), and a job that needs them reads "unrunnable";
    the replay says so rather than leave the user to find out (new user, 2026-12-07)."""
    from xce.cluster import HostAlloc, RunningJob

    state = uniform_cluster(2, 1)
    held = RunningJob("r1", "u", "normal", "default", 0.0, (HostAlloc("n0", 1),))
    ends = replace(held, id="r2", alloc=(HostAlloc("n1", 1),), runtime=30.0)
    jobs = [SimJob("a", 0.0, 5.0, 1)]
    assert not any(
        "no runtime" in w for w in Simulation(replace(state, running=(ends,)), jobs).warnings
    )
    sim = Simulation(replace(state, running=(held, ends)), jobs)
    [line] = [w for w in sim.warnings if "no runtime" in w]
    assert "its 1 running job(s) have no runtime" in line
    assert line in sim.run().warnings
