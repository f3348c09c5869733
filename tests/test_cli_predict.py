"""``xce predict STATE [--json]`` (issue 27): the JSON shape, --job, the options' bad
input (exit 2, located), history files (sacct --json, SWF) and the table.

The state (``T0`` = 2023-11-14 22:13:20 UTC, zone Europe/Berlin): two one-slot hosts;
r1 (alice) on h0 since T0 - 100, limit 3600. Pending, in order: p1 (bob, 1 task, 600 s),
p2 (carol, 2 tasks, 60 s), held (a hold), arr (array 1-2, 1 task, 100 s each), under
fcfs without backfill. Every job running to its limit (``--predictor limit``, or
``history`` with nothing learned): p1 starts at once on h1 (ends T0 + 600); arr_1 takes
h1 at T0 + 600, arr_2 at T0 + 700; r1 ends at T0 + 3500 and p2 starts on both hosts;
held never starts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders import ClusterBuilder
from flow_states import flow_doc
from test_predict_history import doc38, job38
from xce import timefmt
from xce.cli.main import app

T0 = 1_700_000_000
ZONE = "Europe/Berlin"
TOP_KEYS = {"now", "predictor", "runs", "history_jobs", "sessions", "jobs"}
JOB_KEYS = {"job", "start", "start_iso", "low", "high", "scheduler_start", "reason"}
LIMIT_STARTS = {"p1": T0, "p2": T0 + 3500, "held": None, "arr": T0 + 600}


def _invoke(*args: str) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, ["predict", *args])


def state_doc() -> dict[str, Any]:
    b = ClusterBuilder().hosts(2, slots=1).at(T0)
    b.running("r1", {"h0": 1}, start_time=T0 - 100, requested_time=3600, user="alice")
    b.job("p1", 1, user="bob", requested_time=600)
    b.job("p2", 2, user="carol", requested_time=60)
    b.job("held", 1, user="bob", requested_time=60)
    b.job("arr", 1, user="bob", requested_time=100)
    doc = flow_doc(
        b,
        {"held": {"hold": True}, "arr": {"array": "1-2"}, "p2": {"scheduler_start": T0 + 4000}},
    )
    doc["timezone"] = ZONE
    return doc


def write_state(tmp_path: Path, doc: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc if doc is not None else state_doc()))
    return path


def predicted(result: Any) -> dict[str, dict[str, Any]]:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return {j["job"]: j for j in json.loads(result.stdout)["jobs"]}


def bad_input(result: Any, *words: str) -> str:
    """Exit 2, nothing on stdout, an ``xce: error:`` naming every word."""
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith("xce: error: "), result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    return str(result.stderr)


# ------------------------------------------------------------------------- the JSON


def test_json_has_the_documented_shape(tmp_path: Path) -> None:
    """--json: exactly the top-level keys now, predictor, runs, history_jobs, sessions,
    jobs; each job exactly job, start, start_iso, low, high, scheduler_start, reason
    (plus message when there is a reason, last_start for an array record); no timing
    unless --timing."""
    result = _invoke(str(write_state(tmp_path)), "--json", "--predictor", "limit", "--runs", "3")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert set(info) == TOP_KEYS
    assert info["now"] == T0
    assert info["predictor"] == "limit"
    assert info["runs"] == 3
    assert info["history_jobs"] == 0
    assert isinstance(info["sessions"], int)
    assert info["sessions"] >= 1
    assert [j["job"] for j in info["jobs"]] == ["p1", "p2", "held", "arr"]
    for j in info["jobs"]:
        extra = ({"message"} if j["reason"] is not None else set()) | (
            {"last_start"} if j["job"] == "arr" else set()
        )
        assert set(j) == JOB_KEYS | extra, j
    began = time.perf_counter()
    timed = json.loads(
        _invoke(str(write_state(tmp_path)), "--json", "--runs", "2", "--timing").stdout
    )
    wall = time.perf_counter() - began
    assert set(timed) == TOP_KEYS | {"timing"}
    assert set(timed["timing"]) == {"elapsed_s"}
    # a figure a user sees: the forecast's own time, within the command's
    assert 0 < timed["timing"]["elapsed_s"] <= wall


def test_json_values_by_hand(tmp_path: Path) -> None:
    """The starts of the module docstring; start_iso is the start in the state's zone
    (T0 is 23:13:20 in Berlin); a predictor without spread gives low == high == start;
    scheduler_start is the state's; held never starts and says why (HELD); the array
    record's last task starts at T0 + 700."""
    jobs = predicted(_invoke(str(write_state(tmp_path)), "--json", "--predictor", "limit"))
    assert {j: v["start"] for j, v in jobs.items()} == LIMIT_STARTS
    assert jobs["p1"]["start_iso"] == "2023-11-14T23:13:20+01:00"
    for j in ("p1", "p2", "arr"):
        assert jobs[j]["start_iso"] == timefmt.iso(jobs[j]["start"], ZONE)
        assert jobs[j]["low"] == jobs[j]["high"] == jobs[j]["start"]
        assert jobs[j]["reason"] is None
    assert jobs["p2"]["scheduler_start"] == T0 + 4000
    assert jobs["p1"]["scheduler_start"] is None
    held = jobs["held"]
    assert (held["start"], held["start_iso"], held["low"], held["high"]) == (None,) * 4
    assert held["reason"] == "HELD"
    assert held["message"]
    assert jobs["arr"]["last_start"] == T0 + 700


def test_history_without_a_history_file_runs_jobs_to_their_limits(tmp_path: Path) -> None:
    """The default predictor (history) with nothing learned predicts what limit does."""
    jobs = predicted(_invoke(str(write_state(tmp_path)), "--json", "--runs", "2"))
    assert {j: v["start"] for j, v in jobs.items()} == LIMIT_STARTS


def test_json_is_reproducible(tmp_path: Path) -> None:
    """Without --timing the JSON is the same bytes on every run (same seed)."""
    path = str(write_state(tmp_path))
    first = _invoke(path, "--json", "--runs", "5", "--seed", "3")
    assert first.exit_code == 0, first.stderr
    assert _invoke(path, "--json", "--runs", "5", "--seed", "3").stdout == first.stdout


def test_job_filters(tmp_path: Path) -> None:
    """--job ID shows that job only."""
    path = str(write_state(tmp_path))
    result = _invoke(path, "--json", "--predictor", "limit", "--job", "p2")
    assert list(predicted(result)) == ["p2"]
    assert predicted(result)["p2"]["start"] == T0 + 3500


def test_a_job_that_can_never_run_says_why(tmp_path: Path) -> None:
    """A job asking more slots than the cluster has never starts, and its reason is
    NEVER_RUNNABLE (as ``xce schedule`` says), not null."""
    b = ClusterBuilder().hosts(2, slots=1).at(T0)
    b.job("big", 5, requested_time=60).job("small", 1, requested_time=60)
    jobs = predicted(_invoke(str(write_state(tmp_path, b.to_dict())), "--json"))
    assert jobs["small"]["start"] == T0
    assert jobs["big"]["start"] is None
    assert jobs["big"]["reason"] == "NEVER_RUNNABLE"


# ----------------------------------------------------------------------- bad input


def test_unknown_job_exits_2(tmp_path: Path) -> None:
    bad_input(_invoke(str(write_state(tmp_path)), "--json", "--job", "nosuch"), "nosuch")


def test_running_job_is_no_pending_job(tmp_path: Path) -> None:
    """--job of running work is bad input too (it has no start to predict)."""
    bad_input(_invoke(str(write_state(tmp_path)), "--job", "r1"), "r1")


@pytest.mark.parametrize("runs", ["-1", "1001"])
def test_runs_out_of_range_exits_2(tmp_path: Path, runs: str) -> None:
    bad_input(_invoke(str(write_state(tmp_path)), "--runs", runs, "--json"), "--runs", runs)


def test_unknown_predictor_exits_2_naming_the_known_ones(tmp_path: Path) -> None:
    bad_input(
        _invoke(str(write_state(tmp_path)), "--predictor", "nope", "--json"),
        "nope",
        "limit",
        "fraction",
        "history",
    )


@pytest.mark.parametrize("spec", ["fraction:2", "fraction:x", "history:0", "limit:1"])
def test_malformed_predictor_option_exits_2(tmp_path: Path, spec: str) -> None:
    name, _, option = spec.partition(":")
    bad_input(_invoke(str(write_state(tmp_path)), "--predictor", spec, "--json"), name, option)


# sacct --json of 22.05 with a string where a number belongs
_STRING_START = json.dumps(doc38(job38(time={"start": "soon"})), indent=1)

BAD_HISTORY: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # name: (file name, text, what stderr must name besides the file)
    "not JSON": ("h.json", '{"jobs": [\n  {"job_id": 1,}\n]}', ("h.json:2", "not JSON")),
    "unknown shape": ("h.json", '{"foo": [1]}', ("sacct --json", "foo")),
    "a string for a number": ("h.json", _STRING_START, ("jobs[0].time.start",)),
    "an SWF line of 3 fields": ("h.swf", "1 0 10\n", ("h.swf:1",)),
}


@pytest.mark.parametrize("case", list(BAD_HISTORY))
def test_a_bad_history_file_exits_2_located(tmp_path: Path, case: str) -> None:
    """A history file that is not JSON (line), of an unknown shape, with a value of the
    wrong type (JSON path), or a malformed SWF line: exit 2 naming the file and where."""
    name, text, where = BAD_HISTORY[case]
    history = tmp_path / name
    history.write_text(text)
    result = _invoke(str(write_state(tmp_path)), "--history", str(history), "--json")
    bad_input(result, str(history), *where)


def test_a_missing_history_file_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    bad_input(_invoke(str(write_state(tmp_path)), "--history", str(missing)), str(missing))


# -------------------------------------------------------------------------- history


def _swf_line(job: int, submit: float, wait: float, run: float, user: int) -> str:
    """An SWF job line (18 fields): 1 processor, requested time 3600."""
    fields = [job, submit, wait, run, 1, -1, -1, 1, 3600, -1, 1, user, 1, -1, 1, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def test_swf_history_learns_only_what_ended_before_now(tmp_path: Path) -> None:
    """One 1-slot host at simulated now 1000; r1 (u1, limit 3600) since 900, p (u2)
    waits. The trace: u1 ran 100 s (ended 110) and 200 s (ended 200), and 5000 s ending
    at 5500, after now (not learned: history_jobs 2). r1 is predicted (100 + 200) / 2 =
    150 s: it ends at 1050, p starts then (without the history: at 4500)."""
    trace = tmp_path / "past.swf"
    trace.write_text(
        "; a tiny trace\n"
        + "\n".join(
            [_swf_line(1, 0, 10, 100, 1), _swf_line(2, 0, 0, 200, 1), _swf_line(3, 500, 0, 5000, 1)]
        )
        + "\n"
    )
    b = ClusterBuilder().host("h0", 1).at(1000)
    b.running("r1", {"h0": 1}, start_time=900, requested_time=3600, user="u1")
    b.job("p", 1, user="u2", requested_time=60)
    state = str(write_state(tmp_path, b.to_dict()))
    result = _invoke(state, "--history", str(trace), "--json", "--runs", "0")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["history_jobs"] == 2
    assert info["jobs"][0]["start"] == 1050
    assert predicted(_invoke(state, "--json", "--runs", "0"))["p"]["start"] == 4500


def test_sacct_history_changes_the_predictions(tmp_path: Path) -> None:
    """alice ran 300 s twice before T0 (and once 5000 s ending after T0: not learned).
    r1 (alice, running 100 s) is predicted 300 s and ends at T0 + 200, not T0 + 3500:
    arr_1 takes h0 then (ends T0 + 300), arr_2 at T0 + 300; p2 starts when p1 ends, at
    T0 + 600."""
    jobs = [
        job38(job_id=1, user="alice", time={"start": T0 - 1000, "end": T0 - 700}),
        job38(job_id=2, user="alice", time={"start": T0 - 600, "end": T0 - 300}),
        job38(job_id=3, user="alice", time={"start": T0 - 4950, "end": T0 + 50}),
    ]
    for j in jobs:
        j["time"]["elapsed"] = j["time"]["end"] - j["time"]["start"]
        j["time"]["eligible"] = j["time"]["submission"] = j["time"]["start"] - 10
    history = tmp_path / "sacct.json"
    history.write_text(json.dumps(doc38(*jobs)))
    state = str(write_state(tmp_path))
    result = _invoke(state, "--history", str(history), "--json", "--runs", "0")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["history_jobs"] == 2
    assert info["predictor"] == "history"
    got = {j["job"]: j["start"] for j in info["jobs"]}
    assert got == {"p1": T0, "p2": T0 + 600, "held": None, "arr": T0 + 200}
    assert got != LIMIT_STARTS
    last = {j["job"]: j.get("last_start") for j in info["jobs"]}
    assert last["arr"] == T0 + 300


# ---------------------------------------------------------------------------- table


def test_table_names_each_pending_job(tmp_path: Path) -> None:
    """Without --json: a table naming every pending job, "never" for the held one, a
    summary line, and (no --history with the history predictor) the note that jobs are
    taken to run to their limits."""
    result = _invoke(str(write_state(tmp_path)), "--runs", "2")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for job in ("p1", "p2", "held", "arr"):
        assert job in out
    assert "never" in out
    assert "3 of 4 job(s) start in the replay" in out
    assert "no --history" in out


def test_table_with_a_history_has_no_note(tmp_path: Path) -> None:
    """With --history the note about running to the limit is left out."""
    history = tmp_path / "past.swf"
    history.write_text(_swf_line(1, 0, 0, 100, 1) + "\n")
    result = _invoke(str(write_state(tmp_path)), "--history", str(history), "--runs", "0")
    assert result.exit_code == 0, result.stderr
    assert "p1" in result.stdout
    assert "no --history" not in result.stdout


@pytest.mark.parametrize("text", ['{"jobs": []}', None])
def test_a_history_with_nothing_learned_says_so(tmp_path: Path, text: str | None) -> None:
    """An empty --history, or one whose jobs all end after the session's time, teaches
    nothing: the table says every job runs to its limit (docs/prediction.md), as it does
    without --history (the note was left out whenever --history was given)."""
    if text is None:
        history = tmp_path / "late.json"  # a sacct job ending after the session
        history.write_text(
            '{"jobs": [{"job_id": 1, "user": "a", "name": "n", "partition": "normal", '
            f'"time": {{"start": {T0 + 10}, "end": {T0 + 20}, "submission": {T0},'
            ' "limit": {"set": true, "infinite": false, "number": 60}}, '
            '"required": {"CPUs": 1}, "state": {"current": ["COMPLETED"], "reason": "None"}}]}'
        )
    else:
        history = tmp_path / "empty.json"
        history.write_text(text)
    result = _invoke(str(write_state(tmp_path)), "--history", str(history), "--runs", "0")
    assert result.exit_code == 0, result.stderr
    assert "note: --history holds no job ended by then: with nothing learned" in (
        " ".join(result.stdout.split())
    )


def test_workers_change_no_forecast(tmp_path: Path) -> None:
    """``--workers 2`` (sampled replays on two forked processes) prints the same JSON
    as ``--workers 1``: each run draws from its own stream. The history (u1's runtimes
    100, 200, 400, 50, 800 s) gives the predictor a spread, so the sampled runs differ."""
    trace = tmp_path / "past.swf"
    runs = [100, 200, 400, 50, 800]
    trace.write_text(
        "\n".join(_swf_line(i + 1, i * 10, 0, r, 1) for i, r in enumerate(runs)) + "\n"
    )
    b = ClusterBuilder().host("h0", 1).at(5000)
    b.running("r1", {"h0": 1}, start_time=4990, requested_time=3600, user="u1")
    for i in range(4):
        b.job(f"p{i}", 1, user="u1", requested_time=3600, submit_time=4000 + i)
    path = str(write_state(tmp_path, b.to_dict()))
    args = ("--history", str(trace), "--json", "--runs", "8", "--seed", "3")
    one = _invoke(path, *args, "--workers", "1")
    two = _invoke(path, *args, "--workers", "2")
    assert one.exit_code == 0, one.output
    assert two.exit_code == 0, two.output
    assert json.loads(one.output) == json.loads(two.output)
    jobs = json.loads(one.output)["jobs"]
    assert any(j["low"] != j["high"] for j in jobs), "the sampled runs have no spread"


@pytest.mark.parametrize("bad", ["0", "257", "-1"])
def test_bad_workers_exit_2(tmp_path: Path, bad: str) -> None:
    result = _invoke(str(write_state(tmp_path)), "--workers", bad, "--json")
    assert result.exit_code == 2
    assert "--workers" in result.output


def test_a_long_forecast_prints_one_plain_line_per_job_and_a_sane_time(
    tmp_path: Path,
) -> None:
    """More jobs than a screenful (xce.cli.tables.LONG): the table is plain columns, one
    line per job in the state's order, none boxed; the time the summary gives is the
    forecast's own, within the command's wall time."""
    from xce.cli.tables import LONG

    b = ClusterBuilder().hosts(4, slots=2).at(T0)
    ids = [f"j{k}" for k in range(LONG + 5)]
    for k, job in enumerate(ids):
        b.job(job, 1 + k % 3, user="bob", requested_time=60 + k % 7 * 30)
    began = time.perf_counter()
    result = _invoke(str(write_state(tmp_path, b.to_dict())), "--runs", "0")
    wall = time.perf_counter() - began
    assert result.exit_code == 0, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Predicted starts")
    assert lines[1].split() == [
        "job",
        "predicted",
        "start",
        "in",
        "10-90",
        "%",
        "scheduler",
        "says",
        "why",
        "never",
    ]
    assert [line.split()[0] for line in lines[3 : 3 + len(ids)]] == ids
    assert not any(c in result.stdout for c in "┏│└")
    summary = lines[3 + len(ids)]
    assert summary.startswith(f"{len(ids)} of {len(ids)} job(s) start in the replay")
    shown = summary.rsplit(", ", 1)[1]
    assert shown.endswith((" s", " ms")), summary
    seconds = float(shown.split()[0]) / (1000 if shown.endswith(" ms") else 1)
    assert 0 < seconds <= wall
