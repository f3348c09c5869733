"""The Standard Workload Format reader (``xce.sim.swf.read_swf``) on small traces
written for each test, plain and gzipped.

Issue 5, Workloads: "validates lines (18 fields, numbers, sorted submit times), skips
what cannot run (no processor count) and reports how many and why; maps tasks =
requested processors (else allocated), runtime = run time, requested time,
user/group/queue/partition ids to names, requested memory to an rusage ... A malformed
line is an error naming the file and line, unless `--lenient` (then skipped and counted)."
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from xce.errors import InputError
from xce.sim.model import SimJob
from xce.sim.swf import read_swf

FIELDS = (
    "job", "submit", "wait", "run", "alloc", "cpu", "used_mem", "req_procs", "req_time",
    "req_mem", "status", "user", "group", "exe", "queue", "partition", "prev", "think",
)  # fmt: skip
HEADER = "; Version: 2.2\n; Computer: test\n; MaxNodes: 8\n; MaxProcs: 16\n; Note: a note\n"


def line(job: int, submit: float, **fields: Any) -> str:
    """One SWF job line: ``run`` 10 s on 1 processor unless told, other fields -1."""
    values: dict[str, Any] = dict.fromkeys(FIELDS, -1)
    values.update(job=job, submit=submit, run=10, alloc=1, req_procs=1)
    values.update(fields)
    return " ".join(str(values[f]) for f in FIELDS)


def write(tmp_path: Path, body: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(body)
    else:
        path.write_text(body, encoding="utf-8")
    return path


def only_job(tmp_path: Path, job_id: int = 1, **fields: Any) -> SimJob:
    (job,) = read_swf(write(tmp_path, HEADER + line(job_id, 0, **fields) + "\n")).jobs
    return job


# --- header and file types ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["t.swf", "t.swf.gz"])
def test_header_fields_and_jobs(tmp_path: Path, name: str) -> None:
    body = HEADER + line(1, 0) + "\n" + line(2, 5, run=20, req_procs=4) + "\n"
    trace = read_swf(write(tmp_path, body, name))
    assert trace.header_int("MaxNodes") == 8
    assert trace.header_int("MaxProcs") == 16
    assert "Note" not in trace.header  # not a header field a simulation uses
    assert trace.source == str(tmp_path / name)
    assert trace.lines == 2
    assert [(j.id, j.submit, j.runtime, j.tasks) for j in trace.jobs] == [
        ("1", 0, 10, 1),
        ("2", 5, 20, 4),
    ]
    assert not trace.skipped


def test_plain_and_gzipped_read_the_same(tmp_path: Path) -> None:
    body = HEADER + "".join(line(i, i * 3, run=i, req_procs=i % 4 + 1) + "\n" for i in range(1, 30))
    plain = read_swf(write(tmp_path, body))
    packed = read_swf(write(tmp_path, body, "t.swf.gz"))
    assert plain.jobs == packed.jobs
    assert plain.header == packed.header


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("; MaxNodes: 100", 100),
        (";MaxNodes:100", 100),
        ("; MaxNodes: 100 (some nodes)", 100),
        ("; MaxNodes: -1", None),
        ("; MaxNodes: 0", None),
        ("; MaxNodes: many", None),
        ("; Computer: IBM SP2", None),
    ],
)
def test_header_int(tmp_path: Path, text: str, expected: int | None) -> None:
    trace = read_swf(write(tmp_path, text + "\n" + line(1, 0) + "\n"))
    assert trace.header_int("MaxNodes") == expected


def test_blank_lines_and_comments_are_not_jobs(tmp_path: Path) -> None:
    body = HEADER + "\n" + line(1, 0) + "\n   \n; a comment\n" + line(2, 1) + "\n"
    trace = read_swf(write(tmp_path, body))
    assert [j.id for j in trace.jobs] == ["1", "2"]
    assert trace.lines == 2


# --- malformed lines -----------------------------------------------------------------------

MALFORMED = {
    # name: (the bad line, words of the message)
    "17 fields": (" ".join(["1"] * 17), "expected 18 fields, got 17"),
    "19 fields": (" ".join(["1"] * 19), "expected 18 fields, got 19"),
    "a word": (line(3, 9, run="ten"), "field 4 is not a number: 'ten'"),
    "a word in the last field": (line(3, 9, think="x"), "field 18"),
    "submit going backwards": (line(3, 1), "submit time 1 is before the previous job's (5)"),
}


@pytest.mark.parametrize("name", ["t.swf", "t.swf.gz"])
@pytest.mark.parametrize(("bad", "message"), list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_line_names_the_file_and_line(
    tmp_path: Path, bad: str, message: str, name: str
) -> None:
    """The error carries the file, the line number in the file (header lines and blank
    lines counted) and the line's text."""
    body = HEADER + line(1, 0) + "\n\n" + line(2, 5) + "\n" + bad + "\n" + line(4, 9) + "\n"
    path = write(tmp_path, body, name)
    with pytest.raises(InputError) as caught:
        read_swf(path)
    err = caught.value
    bad_line = HEADER.count("\n") + 4
    assert (err.source, err.line, err.text) == (str(path), bad_line, bad)
    assert message in err.message
    assert str(err).startswith(f"{path}:{bad_line}:")
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(("bad", "message"), list(MALFORMED.values()), ids=list(MALFORMED))
def test_lenient_skips_and_counts_malformed_lines(tmp_path: Path, bad: str, message: str) -> None:
    body = HEADER + line(1, 0) + "\n" + line(2, 5) + "\n" + bad + "\n" + line(4, 9) + "\n"
    trace = read_swf(write(tmp_path, body), lenient=True)
    assert [j.id for j in trace.jobs] == ["1", "2", "4"]
    assert trace.skipped == {"malformed line": 1}
    assert trace.lines == 4


def test_lenient_compares_submit_times_with_the_last_good_line(tmp_path: Path) -> None:
    """A skipped line does not move the clock: 3 (backwards from 100) is skipped, 4 (at 50,
    after the last good job's 10) is kept."""
    body = HEADER + "\n".join([line(1, 10), line(2, 100, run="x"), line(3, 5), line(4, 50)])
    trace = read_swf(write(tmp_path, body + "\n"), lenient=True)
    assert [j.id for j in trace.jobs] == ["1", "4"]
    assert trace.skipped == {"malformed line": 2}


def test_equal_submit_times_are_in_order(tmp_path: Path) -> None:
    body = HEADER + line(1, 7) + "\n" + line(2, 7) + "\n"
    assert [j.submit for j in read_swf(write(tmp_path, body)).jobs] == [7, 7]


@pytest.mark.parametrize(
    "fields", [{"submit": "nan"}, {"run": "inf"}, {"req_procs": "nan"}], ids=str
)
def test_non_finite_numbers_are_malformed(tmp_path: Path, fields: dict[str, str]) -> None:
    bad = line(2, **{"submit": 5, **fields})
    with pytest.raises(InputError, match="number"):
        read_swf(write(tmp_path, HEADER + line(1, 0) + "\n" + bad + "\n"))


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.swf.gz"
    with pytest.raises(InputError, match="cannot read the trace") as caught:
        read_swf(path)
    assert caught.value.source == str(path)


def test_a_corrupt_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.swf.gz"
    path.write_bytes(b"this is not gzip data at all\n")
    with pytest.raises(InputError) as caught:
        read_swf(path)
    assert caught.value.source == str(path)


# --- jobs that cannot run --------------------------------------------------------------

SKIPPED = {
    # name: (fields, reason)
    "no processor count": ({"alloc": -1, "req_procs": -1}, "no processor count"),
    "zero processors": ({"alloc": 0, "req_procs": 0}, "no processor count"),
    "no run time": ({"run": -1}, "no run time"),
}


@pytest.mark.parametrize(("fields", "reason"), list(SKIPPED.values()), ids=list(SKIPPED))
def test_jobs_that_cannot_run_are_skipped_and_counted(
    tmp_path: Path, fields: dict[str, int], reason: str
) -> None:
    body = HEADER + "\n".join([line(1, 0), line(2, 1, **fields), line(3, 2, **fields), line(4, 3)])
    trace = read_swf(write(tmp_path, body + "\n"))
    assert [j.id for j in trace.jobs] == ["1", "4"]
    assert trace.skipped == {reason: 2}
    assert trace.lines == 4


def test_jobs_wider_than_the_machine_are_kept_for_the_simulation_to_report(
    tmp_path: Path,
) -> None:
    """The reader does not know the simulated cluster: wide jobs are read, and the
    engine reports them unrunnable."""
    assert only_job(tmp_path, req_procs=1000).tasks == 1000


# --- the mapping ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alloc", "req_procs", "tasks"),
    [(4, 8, 8), (4, -1, 4), (-1, 8, 8), (4, 0, 4), (16, 2, 2)],
)
def test_tasks_are_requested_else_allocated_processors(
    tmp_path: Path, alloc: int, req_procs: int, tasks: int
) -> None:
    assert only_job(tmp_path, alloc=alloc, req_procs=req_procs).tasks == tasks


@pytest.mark.parametrize("run", [0, 1, 3600, 86400 * 3])
def test_runtime_is_the_run_time_field(tmp_path: Path, run: int) -> None:
    """Field 4, 0 s included, and regardless of the wait (field 3) and requested time."""
    assert only_job(tmp_path, run=run, wait=77, req_time=60).runtime == run


@pytest.mark.parametrize(("req_time", "expected"), [(600, 600.0), (-1, None), (1, 1.0)])
def test_requested_time(tmp_path: Path, req_time: int, expected: float | None) -> None:
    assert only_job(tmp_path, req_time=req_time).requested_time == expected


def test_ids_become_names(tmp_path: Path) -> None:
    job = only_job(tmp_path, 42, user=7, group=3, queue=2, partition=5)
    assert (job.id, job.user, job.project, job.queue, job.partition) == (
        "42",
        "u7",
        "g3",
        "q2",
        "p5",
    )


def test_unknown_ids_get_default_names(tmp_path: Path) -> None:
    job = only_job(tmp_path)  # user, group, queue, partition all -1
    assert (job.user, job.project, job.queue, job.partition) == (
        "nobody",
        "default",
        "normal",
        None,
    )


def test_id_zero_is_a_name_not_unknown(tmp_path: Path) -> None:
    job = only_job(tmp_path, user=0, group=0, queue=0, partition=0)
    assert (job.user, job.project, job.queue, job.partition) == ("u0", "g0", "q0", "p0")


@pytest.mark.parametrize(
    ("req_mem", "memory", "resreq"),
    [
        (2048, True, "rusage[mem=2]"),
        (1536, True, "rusage[mem=1.5]"),
        (1024 * 1000, True, "rusage[mem=1000]"),
        (1, True, "rusage[mem=0.001]"),  # a floor, so that it stays an rusage
        (-1, True, ""),
        (2048, False, ""),
    ],
)
def test_memory_becomes_an_rusage_in_mb(
    tmp_path: Path, req_mem: int, memory: bool, resreq: str
) -> None:
    """Requested memory is KB per processor; ``memory=True`` (a cluster with ``mem``)
    turns it into MB per task."""
    path = write(tmp_path, HEADER + line(1, 0, req_mem=req_mem, used_mem=999) + "\n")
    (job,) = read_swf(path, memory=memory).jobs
    assert job.resreq == resreq


# --- limit ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "ids", "skipped"),
    [(0, [], 0), (1, ["1"], 0), (2, ["1"], 1), (3, ["1", "3"], 1), (None, ["1", "3", "4"], 1)],
)
def test_limit_counts_job_lines(
    tmp_path: Path, limit: int | None, ids: list[str], skipped: int
) -> None:
    """``limit`` reads the first N job lines, skipped ones included."""
    no_procs = {"alloc": -1, "req_procs": -1}
    body = HEADER + "\n".join([line(1, 0), line(2, 1, **no_procs), line(3, 2), line(4, 3)])
    trace = read_swf(write(tmp_path, body + "\n"), limit=limit)
    assert [j.id for j in trace.jobs] == ids
    assert sum(trace.skipped.values()) == skipped
    assert trace.lines == (4 if limit is None else limit)


def test_limit_stops_before_a_later_malformed_line(tmp_path: Path) -> None:
    body = HEADER + line(1, 0) + "\n" + line(2, 1) + "\nnot a job line\n"
    assert len(read_swf(write(tmp_path, body), limit=2).jobs) == 2
