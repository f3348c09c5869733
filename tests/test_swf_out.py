"""``xce simulate --out`` writes the replayed schedule as SWF (issue 14), readable by
xce's own reader and by other tools: wait and run time filled in, status 1 or 0."""

from __future__ import annotations

import csv
from pathlib import Path

from typer.testing import CliRunner

from xce.cli.main import app
from xce.sim.swf import read_swf


def _trace(path: Path) -> Path:
    # job submit wait run alloc cpu mem req_procs req_time req_mem status user group
    # exe queue partition preceding think
    lines = [
        "; MaxNodes: 4",
        "; MaxProcs: 4",
        "1 0 -1 100 -1 -1 -1 4 200 -1 1 3 1 -1 2 -1 -1 -1",
        "2 10 -1 50 -1 -1 -1 2 60 -1 1 5 1 -1 2 -1 -1 -1",
        "3 20 -1 30 -1 -1 -1 2 -1 -1 1 3 2 -1 1 -1 -1 -1",
        "4 30 -1 10 -1 -1 -1 8 -1 -1 1 7 2 -1 1 -1 -1 -1",  # 8 > 4 slots: never runs
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_schedule_swf_round_trips_with_the_replays_waits(tmp_path: Path) -> None:
    """issue 14 (SWF out): schedule.swf holds every job in workload order with its id,
    submit time, run time, processors, requested time, user, group and queue numbers of
    the input, the replay's wait (= jobs.csv's); a job that never ran has status 0 and
    wait/run time -1, and is skipped when read back."""
    trace = _trace(tmp_path / "t.swf")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["simulate", "--workload", str(trace), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "schedule.swf").read_text(encoding="utf-8")
    rows = [line.split() for line in text.splitlines() if not line.startswith(";")]
    assert [r[0] for r in rows] == ["1", "2", "3", "4"]
    jobs_csv = {r["job"]: r for r in csv.DictReader((out / "jobs.csv").open(encoding="utf-8"))}
    for r in rows[:3]:
        assert r[2] == jobs_csv[r[0]]["wait"]
        assert r[10] == "1"
    assert (rows[3][2], rows[3][3], rows[3][10]) == ("-1", "-1", "0")
    assert [r[11] for r in rows] == ["3", "5", "3", "7"]
    assert [r[14] for r in rows] == ["2", "2", "1", "1"]
    back = read_swf(str(out / "schedule.swf"), lenient=True)
    original = read_swf(str(trace))
    keep = ("id", "submit", "runtime", "tasks", "user", "queue", "project", "requested_time")
    want = [tuple(getattr(j, k) for k in keep) for j in original.jobs[:3]]
    assert [tuple(getattr(j, k) for k in keep) for j in back.jobs] == want
    assert back.header_int("MaxProcs") == 4


def test_names_without_a_number_take_none_the_trace_keeps(tmp_path: Path) -> None:
    """A job with no group or queue in the trace (-1) is in 'default' / 'normal'; their
    numbers in schedule.swf come after the trace's own (they were 1, the number of the
    other job's real group 1 and queue 1, so reading the file back merged them)."""
    trace = tmp_path / "n.swf"
    trace.write_text(
        "; MaxNodes: 2\n; MaxProcs: 2\n"
        "1 0 -1 100 1 -1 -1 1 200 -1 1 1 -1 -1 -1 -1 -1 -1\n"
        "2 0 -1 100 1 -1 -1 1 200 -1 1 2 1 -1 1 -1 -1 -1\n",
        encoding="utf-8",
    )
    out = tmp_path / "o"
    result = CliRunner().invoke(app, ["simulate", "--workload", str(trace), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "schedule.swf").read_text(encoding="utf-8")
    assert "; Note: group 2 is 'default'" in text
    assert "; Note: queue 2 is 'normal'" in text
    back = read_swf(out / "schedule.swf")
    assert len({j.queue for j in back.jobs}) == 2
    assert len({j.project for j in back.jobs}) == 2
