"""Backfill, advance reservations and "when will my job start" through the CLI (issue 12,
docs/backfill.md): ``xce schedule --backfill/--now`` and the state keys ``backfill:`` and
``now:``, the decisions JSON's planning keys, the ``expected start`` column and
``--job``'s ``expected`` line, ``xce simulate --backfill`` (metrics and jobs.csv),
``xce compare`` with a backfill modifier, and ``--snapshot`` keeping the planning keys.

Every expected value is worked out by hand on a tiny state, ``TINY``:

    hosts h0, h1, h2 with 4 slots each; r1 holds all of h0 since 0, estimate 100 s
    big    12 tasks, estimate  50 s  (needs all three hosts: waits for r1)
    small   4 tasks, estimate  50 s
    long    4 tasks, estimate 200 s
    no ``now:``: the session's time is the latest submit time, 10

EASY: big is the first job that cannot start; its shadow time is r1's estimated end,
100, on h0, h1, h2 until 150. small ends by its estimate at 60 <= 100 and starts ahead
of big (backfilled) on h1; long would end at 210 > 100 on h2, which big holds from 100:
it pends RESERVED, and EASY plans nobody but big. Conservative plans long too: the
earliest window of 200 s on 4 slots opens when big ends, at 150 (on h0, the first host,
all three being free from 150).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "backfill.yaml"

DISPATCHED_KEYS = {"job", "alternative", "allocation", "shared"}
PLANNED_KEYS = {"planned_start", "planned_end", "planned"}
PLAN_OBJECT_KEYS = {"alternative", "allocation", "shared"}  # a dispatched job's, less "job"
PLANNING_STATS = {"planned", "backfilled"}


# -- helpers ------------------------------------------------------------------------------


def _xce(*args: str | Path) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [str(a) for a in args])


def _ok(*args: str | Path) -> Any:
    result = _xce(*args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def _schedule(state: Path, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_ok("schedule", state, "--json", *args).stdout)
    return data


def _tiny(**top: Any) -> ClusterBuilder:
    """TINY of the module docstring; ``top`` adds top-level keys (``now``, ``backfill``)."""
    b = (
        ClusterBuilder()
        .hosts(3, slots=4)
        .running("r1", on={"h0": 4}, start_time=0, requested_time=100)
        .job("big", 12, submit_time=5, requested_time=50)
        .job("small", 4, submit_time=6, requested_time=50)
        .job("long", 4, submit_time=10, requested_time=200)
    )
    if "now" in top:
        b.at(top["now"])
    if "backfill" in top:
        b.backfill(top["backfill"])
    return b


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "state.json") -> Path:
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return _write(tmp_path, _tiny().to_dict())


def _alloc(*hosts: str, slots: int = 4) -> list[dict[str, Any]]:
    return [{"host": h, "slots": slots, "term": 0, "resources": {}} for h in hosts]


def _plan(*hosts: str, slots: int = 4) -> dict[str, Any]:
    return {"alternative": None, "allocation": _alloc(*hosts, slots=slots), "shared": {}}


def _by_job(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["job"]: e for e in entries}


def _row(text: str, job: str) -> str:
    """The table line of ``job`` (the first cell starts with its id)."""
    lines = [line for line in text.splitlines() if line.startswith(f"│ {job} ")]
    assert len(lines) == 1, text
    return lines[0]


# -- xce schedule: the decisions JSON ----------------------------------------------------


@pytest.mark.parametrize("picker", ["fcfs", "strict"])
def test_easy_decisions_json_hand_computed(tiny: Path, picker: str) -> None:
    """issue 12: ``--backfill easy`` on TINY: top-level ``now`` (10, the latest submit
    time); small dispatched on h1 with ``backfilled: true``; big planned 100-150 on
    h0, h1, h2 (its ``planned`` shaped like a dispatched job's allocation); long pends
    RESERVED naming big and 100, with null planned keys; stats planned 1, backfilled 1.
    The same under ``--picker strict`` (a strict queue under easy *is* EASY)."""
    info = _schedule(tiny, "--backfill", "easy", "--picker", picker)
    assert info["now"] == 10
    assert [d["job"] for d in info["dispatched"]] == ["small"]
    small = info["dispatched"][0]
    assert set(small) == DISPATCHED_KEYS | {"backfilled"}
    assert small["allocation"] == _alloc("h1")
    assert small["backfilled"] is True
    pending = _by_job(info["pending"])
    assert list(pending) == ["big", "long"]
    for p in pending.values():
        assert set(p) >= PLANNED_KEYS
    big = pending["big"]
    assert big["reason"] == "NOT_ENOUGH_SLOTS"
    assert (big["planned_start"], big["planned_end"]) == (100, 150)
    assert set(big["planned"]) == PLAN_OBJECT_KEYS
    assert big["planned"] == _plan("h0", "h1", "h2")
    long = pending["long"]
    assert long["reason"] == "RESERVED"
    assert "big" in long["message"]
    assert "100" in long["message"]
    assert (long["planned_start"], long["planned_end"], long["planned"]) == (None, None, None)
    assert info["stats"]["planned"] == 1
    assert info["stats"]["backfilled"] == 1
    assert info["stats"]["dispatched"] == 1
    assert info["stats"]["pending_by_reason"] == {"NOT_ENOUGH_SLOTS": 1, "RESERVED": 1}


def test_conservative_plans_every_waiting_job(tiny: Path) -> None:
    """issue 12: ``--backfill conservative`` on TINY: as EASY, and long (RESERVED) is
    planned too, at 150 (when big ends) until 350, on h0; stats planned 2."""
    info = _schedule(tiny, "--backfill", "conservative")
    assert info["now"] == 10
    assert [(d["job"], d["backfilled"]) for d in info["dispatched"]] == [("small", True)]
    pending = _by_job(info["pending"])
    big, long = pending["big"], pending["long"]
    assert (big["planned_start"], big["planned_end"], big["planned"]) == (
        100,
        150,
        _plan("h0", "h1", "h2"),
    )
    assert long["reason"] == "RESERVED"
    assert (long["planned_start"], long["planned_end"], long["planned"]) == (
        150,
        350,
        _plan("h0"),
    )
    assert {k: info["stats"][k] for k in PLANNING_STATS} == {"planned": 2, "backfilled": 1}


def test_no_estimate_gives_a_null_planned_end(tmp_path: Path) -> None:
    """issue 12: a planned job without any estimate holds its resources for ever: its
    ``planned_start`` is a number (100), its ``planned_end`` null; a queue's
    ``default_runtime`` is an estimate (planned_end = 100 + 30)."""
    doc = _tiny().to_dict()
    del doc["jobs"][0]["requested_time"]
    info = _schedule(_write(tmp_path, doc), "--backfill", "easy")
    big = _by_job(info["pending"])["big"]
    assert (big["planned_start"], big["planned_end"]) == (100, None)
    assert big["planned"] == _plan("h0", "h1", "h2")
    doc["queues"] = {"normal": {"default_runtime": 30}}
    info = _schedule(_write(tmp_path, doc, "with_default.json"), "--backfill", "easy")
    big = _by_job(info["pending"])["big"]
    assert (big["planned_start"], big["planned_end"]) == (100, 130)


def test_none_is_byte_identical_to_no_option(tmp_path: Path, tiny: Path) -> None:
    """issue 12: with backfill none and no reservation the decisions JSON is exactly
    as before: ``--backfill none`` (also with ``--now``) gives the same bytes as no
    option, with no ``now``, no planned keys, no ``backfilled``, no planning stats; a
    file's top-level ``backfill: easy`` overridden by ``--backfill none`` too. fcfs
    without a plan starts small and long."""
    plain = _ok("schedule", tiny, "--json").stdout
    assert _ok("schedule", tiny, "--json", "--backfill", "none").stdout == plain
    assert _ok("schedule", tiny, "--json", "--backfill", "none", "--now", "60").stdout == plain
    easy_file = _write(tmp_path, _tiny(backfill="easy").to_dict(), "easy.json")
    assert _ok("schedule", easy_file, "--json", "--backfill", "none").stdout == plain
    info = json.loads(plain)
    assert "now" not in info
    assert not PLANNING_STATS & set(info["stats"])
    assert [d["job"] for d in info["dispatched"]] == ["small", "long"]
    for d in info["dispatched"]:
        assert set(d) == DISPATCHED_KEYS
    for p in info["pending"]:
        assert not PLANNED_KEYS & set(p)
    assert [p["job"] for p in info["pending"]] == ["big"]


def test_where_the_policy_comes_from(tmp_path: Path, tiny: Path) -> None:
    """issue 12: the file's top-level ``backfill: easy`` plans without any option (the
    same JSON as ``--backfill easy``); ``--backfill`` wins over that default; a queue's
    own ``backfill: conservative`` wins over ``--backfill`` (none or easy)."""
    easy = _ok("schedule", tiny, "--json", "--backfill", "easy").stdout
    conservative = _ok("schedule", tiny, "--json", "--backfill", "conservative").stdout
    top = _write(tmp_path, _tiny(backfill="easy").to_dict(), "top.json")
    assert _ok("schedule", top, "--json").stdout == easy
    assert _ok("schedule", top, "--json", "--backfill", "conservative").stdout == conservative
    doc = _tiny(backfill="easy").to_dict()
    doc["queues"] = {"normal": {"backfill": "conservative"}}
    own = _write(tmp_path, doc, "own.json")
    for option in ("none", "easy"):
        assert _ok("schedule", own, "--json", "--backfill", option).stdout == conservative
    assert _ok("schedule", own, "--json").stdout == conservative


def test_a_reservation_in_force_plans_under_backfill_none(tmp_path: Path) -> None:
    """issue 12: an advance reservation makes a session plan with backfill none: ``now``,
    planned keys and stats appear. x (4 tasks, 150 s) fits h1 now but its run would
    overlap maint (h1, 100-200): RESERVED, naming maint; y (60 s) ends at 70, before
    the window, and starts on h1, not backfilled (no job holds a planned start)."""
    doc = (
        ClusterBuilder()
        .hosts(2, slots=4)
        .reservation("maint", 100, 200, hosts=["h1"])
        .running("r1", on={"h0": 4}, start_time=0, requested_time=300)
        .job("x", 4, submit_time=5, requested_time=150)
        .job("y", 4, submit_time=6, requested_time=60)
        .at(10)
        .to_dict()
    )
    info = _schedule(_write(tmp_path, doc))
    assert info["now"] == 10
    assert [(d["job"], d["allocation"], d["backfilled"]) for d in info["dispatched"]] == [
        ("y", _alloc("h1"), False)
    ]
    (x,) = info["pending"]
    assert x["job"] == "x"
    assert x["reason"] == "RESERVED"
    assert "maint" in x["message"]
    assert (x["planned_start"], x["planned_end"], x["planned"]) == (None, None, None)
    assert {k: info["stats"][k] for k in PLANNING_STATS} == {"planned": 0, "backfilled": 0}


def test_now_moves_planned_starts(tiny: Path) -> None:
    """issue 12: ``--now`` is the session's time. At 60 small would end at 110, after
    big's shadow time 100: it pends RESERVED, nobody is backfilled (conservative plans
    small and long at 150, on h0 and h1). At 120 r1 is past its estimate and ends
    "now" in the plan: big is planned at 120 (until 170), and the RESERVED messages say
    120; conservative then plans small and long at 170."""
    info = _schedule(tiny, "--backfill", "easy", "--now", "60")
    assert info["now"] == 60
    assert info["dispatched"] == []
    pending = _by_job(info["pending"])
    assert (pending["big"]["planned_start"], pending["big"]["planned_end"]) == (100, 150)
    assert pending["small"]["reason"] == "RESERVED"
    assert pending["small"]["planned_start"] is None
    assert {k: info["stats"][k] for k in PLANNING_STATS} == {"planned": 1, "backfilled": 0}

    info = _schedule(tiny, "--backfill", "conservative", "--now", "60")
    pending = _by_job(info["pending"])
    got = {j: (p["planned_start"], p["planned_end"], p["planned"]) for j, p in pending.items()}
    assert got == {
        "big": (100, 150, _plan("h0", "h1", "h2")),
        "small": (150, 200, _plan("h0")),
        "long": (150, 350, _plan("h1")),
    }

    info = _schedule(tiny, "--backfill", "easy", "--now", "120")
    assert info["now"] == 120
    assert info["dispatched"] == []
    pending = _by_job(info["pending"])
    assert (pending["big"]["planned_start"], pending["big"]["planned_end"]) == (120, 170)
    assert "planned to start at t=120 s" in pending["small"]["message"]
    info = _schedule(tiny, "--backfill", "conservative", "--now", "120")
    pending = _by_job(info["pending"])
    assert [pending[j]["planned_start"] for j in ("big", "small", "long")] == [120, 170, 170]


def test_now_option_wins_over_the_state_now(tmp_path: Path) -> None:
    """issue 12: a state's ``now: 60`` is the session's time (not the latest submit
    time, 10): small pends RESERVED; ``--now 10`` wins over it (``xce schedule --help``:
    "default: the state's now"), and small is backfilled again."""
    at60 = _write(tmp_path, _tiny(now=60).to_dict())
    info = _schedule(at60, "--backfill", "easy")
    assert info["now"] == 60
    assert _by_job(info["pending"])["small"]["reason"] == "RESERVED"
    info = _schedule(at60, "--backfill", "easy", "--now", "10")
    assert info["now"] == 10
    assert [d["job"] for d in info["dispatched"]] == ["small"]


# -- xce schedule: the table and --job ---------------------------------------------------


def test_expected_start_column(tiny: Path) -> None:
    """issue 12: the pending table gains ``expected start``: "t=100 s (in 1 min 30 s) on
    h0, h1, h2" for big, "-" for long under easy; "t=150 s (in 2 min 20 s) on h0" for
    long under conservative (issue 25: times as a person reads them); the dispatched
    table marks "small (backfilled)". Without planning there is no such column."""
    text = _ok("schedule", tiny, "--backfill", "easy").stdout
    assert "expected start" in text
    assert "t=100 s (in 1 min 30 s) on h0, h1, h2" in _row(text, "big")
    assert _row(text, "long").rstrip().rstrip("│").rstrip().endswith("│ -")
    assert "small (backfilled)" in text
    text = _ok("schedule", tiny, "--backfill", "conservative").stdout
    assert "t=150 s (in 2 min 20 s) on h0" in _row(text, "long")
    text = _ok("schedule", tiny).stdout
    assert "expected start" not in text
    assert "backfilled" not in text


def test_expected_start_of_the_example(tmp_path: Path) -> None:
    """issue 12: examples/backfill.yaml under conservative (now 36000): wide is planned
    at r1's estimated end 44400 on n01-n04 (the table shows three hosts and "…"), short
    starts ahead of it on n05 (backfilled), long and gpujob pend RESERVED by the
    course window (12:00-14:00 on the gpu hosts) and are planned at its end, 50400;
    lesson waits for its reservation (RESERVATION) and is planned at its start, 43200,
    on n05, n06."""
    info = _schedule(EXAMPLE, "--backfill", "conservative")
    assert info["now"] == 36000
    assert [(d["job"], d["backfilled"]) for d in info["dispatched"]] == [
        ("quick", False),
        ("short", True),
    ]
    pending = _by_job(info["pending"])
    got = {
        j: (p["reason"], p["planned_start"], p["planned_end"], p["planned"])
        for j, p in pending.items()
    }
    assert got == {
        "wide": ("NOT_ENOUGH_SLOTS", 44400, 51600, _plan("n01", "n02", "n03", "n04", slots=8)),
        "long": ("RESERVED", 50400, 79200, _plan("n05", slots=8)),
        "gpujob": ("RESERVED", 50400, 61200, _plan("n06", slots=8)),
        "lesson": ("RESERVATION", 43200, 46800, _plan("n05", "n06", slots=8)),
    }
    assert {k: info["stats"][k] for k in PLANNING_STATS} == {"planned": 4, "backfilled": 1}
    text = _ok("schedule", EXAMPLE, "--backfill", "conservative").stdout
    assert "t=44400 s (in 2 h 20 min) on n01, n02, n03, …" in _row(text, "wide")
    assert "t=43200 s (in 2 h) on n05, n06" in _row(text, "lesson")


def test_job_shows_expected(tiny: Path) -> None:
    """issue 12: ``--job ID`` shows an ``expected`` line (big: "t=100 s (in 1 min 30 s) on h0,
    h1, h2"; long under easy: "-"), and its JSON ``now`` and the decision's planned
    keys; without planning there is no ``expected`` line."""
    text = _ok("schedule", tiny, "--backfill", "easy", "--job", "big").stdout
    lines = [line for line in text.splitlines() if line.startswith("expected")]
    assert lines == ["expected     t=100 s (in 1 min 30 s) on h0, h1, h2"]
    text = _ok("schedule", tiny, "--backfill", "easy", "--job", "long").stdout
    lines = [line for line in text.splitlines() if line.startswith("expected")]
    assert lines == ["expected     -"]
    detail = json.loads(
        _ok("schedule", tiny, "--backfill", "easy", "--job", "big", "--json").stdout
    )
    assert detail["now"] == 10
    decision = detail["decision"]
    assert (decision["planned_start"], decision["planned_end"]) == (100, 150)
    assert decision["planned"] == _plan("h0", "h1", "h2")
    text = _ok("schedule", tiny, "--job", "big").stdout
    assert not any(line.startswith("expected") for line in text.splitlines())


# -- xce schedule: bad input --------------------------------------------------------------


@pytest.mark.parametrize("value", ["bogus", "EASY", ""])
def test_an_unknown_backfill_option_exits_2(tmp_path: Path, value: str) -> None:
    """issue 12: ``--backfill NAME`` naming no policy: exit 2 before any input is read
    (the state file does not exist), nothing on stdout, "--backfill: unknown backfill
    policy" and the known ones on stderr."""
    result = _xce("schedule", tmp_path / "missing.yaml", "--backfill", value)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"--backfill: unknown backfill policy {value!r}" in result.stderr
    assert "known: none, easy, conservative" in result.stderr


@pytest.mark.parametrize(
    ("extra", "location", "name"),
    [
        ("backfill: eazy\n", "backfill", "eazy"),
        ("queues: {normal: {backfill: consrvative}}\n", "queues.normal.backfill", "consrvative"),
    ],
)
def test_an_unknown_backfill_in_the_state_file_exits_2_located(
    tmp_path: Path, extra: str, location: str, name: str
) -> None:
    """issue 12: an unknown ``backfill:`` in the state file (top level or a queue's):
    exit 2, stdout empty, stderr names the file and the path in it."""
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(_tiny().to_dict(), sort_keys=False) + extra)
    result = _xce("schedule", path, "--json")
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    assert str(path) in result.stderr
    assert f" {location}: unknown backfill policy {name!r}" in result.stderr


def test_an_unknown_backfill_in_the_state_file_has_line_and_column(tmp_path: Path) -> None:
    """issue 12: the unknown top-level ``backfill: eazy`` (line 3, column 11) is located
    like every state-file error: ``FILE:3:11: backfill: ...``, then the line and a caret."""
    path = tmp_path / "state.yaml"
    path.write_text("hosts: [{name: h0, slots: 1}]\njobs: [{id: j}]\nbackfill: eazy\n")
    result = _xce("schedule", path)
    assert result.exit_code == 2
    assert f"{path}:3:11: backfill: unknown backfill policy 'eazy'" in result.stderr
    assert "backfill: eazy\n" in result.stderr
    assert "^" in result.stderr


@pytest.mark.parametrize("command", ["schedule", "predict"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "1.000001e15", "-2e15"])
def test_a_now_no_state_holds_exits_2(tmp_path: Path, value: str, command: str) -> None:
    """issue 12: ``--now`` must be a time a state holds (finite, at most 1e15 s: 1e300
    once gave a 300-digit session time and other decisions): exit 2 before any input
    is read, naming --now."""
    result = _xce(command, tmp_path / "missing.yaml", f"--now={value}")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--now: " in result.stderr
    assert "is not a time a state holds (at most 1e15 s)" in result.stderr


def test_a_job_submitted_after_now_waits_for_its_submission(tiny: Path, tmp_path: Path) -> None:
    """``--now`` before a pending job's submission (as for sprio's row at the last
    priority recalculation, docs/import.md) is a session in which that job is not there
    yet: it pends BEGIN_TIME until its submit time and a prediction never starts it
    before (long, submitted at 10, was predicted to start at 9). Nothing else changes:
    small still starts at 9."""
    info = _schedule(tiny, "--now", "9")
    pending = _by_job(info["pending"])
    assert pending["long"]["reason"] == "BEGIN_TIME"
    assert pending["long"]["message"].startswith("it is submitted at t=10 s")
    assert [d["job"] for d in info["dispatched"]] == ["small"]
    for backfill in ("none", "conservative"):
        result = _ok("predict", tiny, "--now=9", "--json", "--backfill", backfill)
        starts = {j["job"]: j["start"] for j in json.loads(result.stdout)["jobs"]}
        assert starts["long"] >= 10, (backfill, starts)
        assert starts["small"] == 9


def test_running_work_started_after_now_is_said_to_hold(tmp_path: Path) -> None:
    """Running work that starts after ``--now`` still holds its slots in the session (the
    state says what it holds, not what it did before): a note on stderr says so, for
    schedule and predict, JSON or not; none when nothing starts after --now."""
    state = _write(tmp_path, _tiny().to_dict())
    doc = _tiny().to_dict()
    doc["running"][0]["start_time"] = 9
    late = _write(tmp_path, doc, "late.json")
    note = "xce: note: 1 running job(s) start after --now (first 'r1' at 9)"
    for command, extra in (("schedule", ()), ("schedule", ("--json",)), ("predict", ())):
        assert note in _ok(command, late, "--now", "5", *extra).stderr
        assert "xce: note: " not in _ok(command, state, "--now", "5", *extra).stderr


def test_a_snapshot_is_at_the_sessions_time(tiny: Path, tmp_path: Path) -> None:
    """``--snapshot`` writes the state after the session at the session's time: with
    ``--now 200`` small starts at 200 and the snapshot's ``now`` is 200 (it kept the
    state's time, 10, so the snapshot held a job from after its now and did not load).
    With a ``--now`` before a pending job's submission there is no snapshot to write:
    exit 2 naming the job, nothing written."""
    snap = tmp_path / "after.yaml"
    _ok("schedule", tiny, "--now", "200", "--snapshot", snap)
    written = yaml.safe_load(snap.read_text(encoding="utf-8"))
    assert written["now"] == 200
    started = {r["id"]: r["start_time"] for r in written["running"]}
    assert started["small"] == 200
    _ok("schedule", snap)
    early = tmp_path / "early.yaml"
    result = _xce("schedule", tiny, "--now", "9", "--snapshot", early)
    assert result.exit_code == 2, result.output
    assert "--snapshot with --now 9: job 'long' is submitted at 10, after it" in result.stderr
    assert not early.exists()


@pytest.mark.parametrize("zone", ["Mars/X", ""])
def test_predict_names_an_unknown_timezone(tmp_path: Path, zone: str) -> None:
    """``xce predict --timezone`` with a zone this machine does not know: exit 2 naming
    the option, as ``xce import`` does (it was an internal error)."""
    result = _xce("predict", tmp_path / "missing.yaml", f"--timezone={zone}")
    assert result.exit_code == 2, result.output
    assert "--timezone: unknown time zone" in result.stderr


def test_a_replay_past_the_largest_time_exits_2(tmp_path: Path) -> None:
    """A replay whose events pass 1e15 s (a state's largest time: a now near it plus a
    running job's length, or a huge --interval) is bad input, exit 2 naming what took
    it there, with nothing written (it was an internal error, a failed event)."""
    state = tmp_path / "s.yaml"
    state.write_text(
        "now: 999999999990000\nhosts: [{name: h0, slots: 1}]\n"
        "running: [{id: r, alloc: [{host: h0, slots: 1}], start_time: 999999999990000,"
        " requested_time: 20000}]\njobs: [{id: j, requested_time: 10}]\n"
    )
    result = _xce("predict", state, "--runs", "0")
    assert result.exit_code == 2, result.output
    assert "the replay reaches time" in result.stderr
    assert "(the end of job r)" in result.stderr
    workload = tmp_path / "w.jsonl"
    workload.write_text(
        '{"id": "a", "submit_time": 5, "runtime": 10}\n'
        '{"id": "b", "submit_time": 6, "runtime": 10}\n'
    )
    out = tmp_path / "out"
    result = _xce(
        "simulate", "--workload", workload, "--hosts", "1", "--interval", "1e15", "--out", out
    )
    assert result.exit_code == 2, result.output
    assert "past the largest time a state holds" in result.stderr
    assert not out.exists()


# -- xce simulate ---------------------------------------------------------------------------

CLUSTER = {"hosts": [{"name": "h0", "slots": 1}, {"name": "h1", "slots": 1}]}
WORKLOAD = [  # a ends at 60, before its estimate (100): b starts 40 s before its plan
    {"id": "a", "submit_time": 0, "runtime": 60, "requested_time": 100, "tasks": 1},
    {"id": "b", "submit_time": 1, "runtime": 50, "requested_time": 50, "tasks": 2},
    {"id": "c", "submit_time": 2, "runtime": 50, "requested_time": 50, "tasks": 1},
    {"id": "d", "submit_time": 3, "runtime": 200, "requested_time": 200, "tasks": 1},
]
# per policy, by hand: job -> (start, backfilled, planned_start in jobs.csv)
# none: fcfs starts d at 52 when c ends; b waits for both hosts until d ends at 252.
# easy: b reserved at 100 (a's estimate); c (ends 52) backfills; d (ends >= 252) may
#   not, and is not planned; a ends at 60, b runs 60-110, then d. A job started by its
#   first session has that session's time as planned start.
# conservative: as easy, but d is planned at its first session, at 150 (after b).
REPLAYS: dict[str, dict[str, tuple[str, str, str]]] = {
    "none": {"a": ("0", "0", ""), "b": ("252", "0", ""), "c": ("2", "0", ""), "d": ("52", "0", "")},
    "easy": {
        "a": ("0", "0", "0"),
        "b": ("60", "0", "100"),
        "c": ("2", "1", "2"),
        "d": ("110", "0", ""),
    },
    "conservative": {
        "a": ("0", "0", "0"),
        "b": ("60", "0", "100"),
        "c": ("2", "1", "2"),
        "d": ("110", "0", "150"),
    },
}
# |planned - actual| over jobs planned ahead at their first session: b (|100 - 60|),
# and under conservative d (|150 - 110|)
PREDICTION = {
    "none": {"jobs": 0, "mean": None, "median": None, "p90": None, "p95": None, "max": None},
    "easy": {"jobs": 1, "mean": 40.0, "median": 40.0, "p90": 40.0, "p95": 40.0, "max": 40.0},
    "conservative": {
        "jobs": 2,
        "mean": 40.0,
        "median": 40.0,
        "p90": 40.0,
        "p95": 40.0,
        "max": 40.0,
    },
}


@pytest.fixture(scope="module")
def replay_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("replay")
    cluster = _write(tmp, CLUSTER, "cluster.json")
    jobs = tmp / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(j) + "\n" for j in WORKLOAD), encoding="utf-8")
    return cluster, jobs


@pytest.mark.parametrize("policy", list(REPLAYS))
def test_simulate_backfill_metrics_and_jobs_csv(
    tmp_path: Path, replay_inputs: tuple[Path, Path], policy: str
) -> None:
    """issue 12: ``xce simulate --backfill POLICY`` on a 4-job workload on 2 one-slot
    hosts: the metrics JSON's ``backfilled`` and ``prediction_error_s`` ({jobs, mean,
    p95, max}) and jobs.csv's per-job start, ``backfilled`` and ``planned_start`` are
    the hand-computed ones; ``--json`` prints metrics.json."""
    cluster, jobs = replay_inputs
    out = tmp_path / "out"
    args: list[str | Path] = ["simulate", "--workload", jobs, "--cluster", cluster]
    args += ["--backfill", policy]
    metrics = json.loads(_ok(*args, "--out", out, "--json").stdout)
    assert metrics == json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    want = REPLAYS[policy]
    assert metrics["backfilled"] == sum(b == "1" for _, b, _ in want.values())
    assert metrics["prediction_error_s"] == PREDICTION[policy]
    with (out / "jobs.csv").open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert {"backfilled", "planned_start"} <= set(reader.fieldnames or ())
        rows = list(reader)
    got = {r["job"]: (r["start"], r["backfilled"], r["planned_start"]) for r in rows}
    assert got == want


def test_simulate_summary_shows_backfill_only_when_any(replay_inputs: tuple[Path, Path]) -> None:
    """issue 12: the summary table shows "jobs started by backfill" (1, under easy) when
    any job was; not under none."""
    cluster, jobs = replay_inputs
    base: list[str | Path] = ["simulate", "--workload", jobs, "--cluster", cluster]
    text = _ok(*base, "--backfill", "easy").stdout
    (line,) = [x for x in text.splitlines() if "jobs started by backfill" in x]
    assert line.rstrip().rstrip("│").split()[-1] == "1"
    assert "jobs started by backfill" not in _ok(*base).stdout


def test_simulate_queue_backfill_from_the_cluster_file(
    tmp_path: Path, replay_inputs: tuple[Path, Path]
) -> None:
    """issue 12: a queue's ``backfill: easy`` in the cluster file replays as ``--backfill
    easy`` does (the same metrics), and wins over ``--backfill none``."""
    cluster, jobs = replay_inputs
    want = json.loads(
        _ok(
            "simulate", "--workload", jobs, "--cluster", cluster, "--backfill", "easy", "--json"
        ).stdout
    )
    own = _write(tmp_path, {**CLUSTER, "queues": {"normal": {"backfill": "easy"}}}, "own.json")
    for extra in ([], ["--backfill", "none"]):
        got = json.loads(
            _ok("simulate", "--workload", jobs, "--cluster", own, *extra, "--json").stdout
        )
        # the policy names the command's (the session's default) backfill, not the queue's
        assert (got.pop("policy"), want["policy"]) == ("fcfs", "fcfs+easy")
        assert got == {k: v for k, v in want.items() if k != "policy"}


def test_simulate_unknown_backfill_exits_2(replay_inputs: tuple[Path, Path]) -> None:
    """issue 12: ``xce simulate --backfill bogus``: exit 2, naming the option."""
    cluster, jobs = replay_inputs
    result = _xce("simulate", "--workload", jobs, "--cluster", cluster, "--backfill", "bogus")
    assert result.exit_code == 2
    assert "--backfill: unknown backfill policy 'bogus'" in result.stderr


# -- xce compare ----------------------------------------------------------------------------


def test_compare_backfill_modifier(replay_inputs: tuple[Path, Path]) -> None:
    """issue 12: in ``xce compare`` a backfill policy name is a modifier: the JSON policy
    objects carry ``backfill`` ("easy", null, "conservative"), and each policy's metrics
    are ``xce simulate``'s with that picker and backfill (hand-computed backfilled and
    prediction error). Two backfill modifiers in one policy exit 2."""
    cluster, jobs = replay_inputs
    base: list[str | Path] = ["--workload", jobs, "--cluster", cluster]
    policies = ["fcfs+easy", "strict", "strict+conservative"]
    args = [a for p in policies for a in ("--policy", p)]
    data = json.loads(_ok("compare", *base, *args, "--json").stdout)
    entries = data["policies"]
    assert [p["policy"] for p in entries] == policies
    assert [(p["picker"], p["backfill"]) for p in entries] == [
        ("fcfs", "easy"),
        ("strict", None),
        ("strict", "conservative"),
    ]
    assert entries[0]["metrics"]["prediction_error_s"] == PREDICTION["easy"]
    assert entries[2]["metrics"]["prediction_error_s"] == PREDICTION["conservative"]
    assert [p["metrics"]["backfilled"] for p in entries] == [1, 0, 1]
    for entry in entries:
        picker, backfill = entry["picker"], entry["backfill"] or "none"
        alone = json.loads(
            _ok("simulate", *base, "--picker", picker, "--backfill", backfill, "--json").stdout
        )
        for key in ("mean_wait_s", "p95_wait_s", "mean_bsld", "backfilled", "prediction_error_s"):
            assert entry["metrics"][key] == alone[key], (entry["policy"], key)
    bad = _xce("compare", *base, "--policy", "fcfs+easy+conservative")
    assert bad.exit_code == 2
    assert "--policy 'fcfs+easy+conservative'" in bad.stderr


# -- xce schedule --snapshot --------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_snapshot_keeps_backfill_and_now(tmp_path: Path, suffix: str) -> None:
    """issue 12: ``--snapshot`` writes the top-level ``backfill`` and ``now`` and a
    queue's own ``backfill`` (and ``default_runtime``); small is running in it, big and
    long pending, and scheduling the snapshot plans them as the session did (big at
    100, long RESERVED)."""
    doc = _tiny(now=10, backfill="easy").to_dict()
    doc["queues"] = {
        "normal": {"priority": 0},
        "batch": {"priority": 5, "backfill": "conservative", "default_runtime": 40},
    }
    state = _write(tmp_path, doc, "state.yaml")
    snap = tmp_path / f"snap{suffix}"
    first = json.loads(_ok("schedule", state, "--json", "--snapshot", snap).stdout)
    text = snap.read_text(encoding="utf-8")
    written = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    assert written["backfill"] == "easy"
    assert written["now"] == 10
    assert written["queues"]["batch"]["backfill"] == "conservative"
    assert written["queues"]["batch"]["default_runtime"] == 40
    assert "backfill" not in written["queues"]["normal"]
    assert [r["id"] for r in written["running"]] == ["r1", "small"]
    assert [j["id"] for j in written["jobs"]] == ["big", "long"]
    again = json.loads(_ok("schedule", snap, "--json").stdout)
    assert again["now"] == 10
    assert again["dispatched"] == []
    keys = ("job", "reason", *sorted(PLANNED_KEYS))
    assert [[p[k] for k in keys] for p in again["pending"]] == [
        [p[k] for k in keys] for p in first["pending"]
    ]


def test_snapshot_records_the_session_time_as_start(tmp_path: Path) -> None:
    """issue 12: conservative at now 10 on one 4-slot host: a (50 s) starts, b is planned
    at 60. The snapshot records a as started at 10 (the session's time), so scheduling
    the snapshot, nothing having happened, plans b at 60 again (a promise kept)."""
    doc = (
        ClusterBuilder()
        .host("h0", slots=4)
        .job("a", 4, requested_time=50)
        .job("b", 4, requested_time=50)
        .at(10)
        .backfill("conservative")
        .to_dict()
    )
    state = _write(tmp_path, doc)
    snap = tmp_path / "snap.json"
    first = json.loads(_ok("schedule", state, "--json", "--snapshot", snap).stdout)
    assert first["pending"][0]["planned_start"] == 60
    written = json.loads(snap.read_text(encoding="utf-8"))
    assert written["running"][0]["start_time"] == 10
    again = json.loads(_ok("schedule", snap, "--json").stdout)
    assert again["pending"][0]["planned_start"] == 60


@pytest.mark.parametrize("command", ["schedule", "simulate", "compare"])
def test_help_names_every_builtin_picker_and_policy(command: str) -> None:
    """The help of ``--picker``/``--policy`` and ``--backfill`` names every builtin
    the registries hold (it once left out lsf-fairshare and slurm)."""
    from xce.backfill.registry import default_backfills
    from xce.core.pickers import default_pickers

    text = " ".join(_xce(command, "--help").stdout.split())
    for name in [
        *default_pickers(plugins=False).names(),
        *default_backfills(plugins=False).names(),
    ]:
        assert name in text, name
