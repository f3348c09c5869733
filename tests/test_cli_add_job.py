"""``xce schedule STATE --add-job RESREQ --tasks N`` (issue 26): "where and when would a
job like this start?" without editing the state — the job is decided exactly as the
same job written into the state, submitted at its now, would be, and nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from xce.cli.main import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BACKFILL = EXAMPLES / "backfill.yaml"  # now: 36000, six hosts of 8 slots, mostly busy
CLUSTER = EXAMPLES / "cluster.yaml"


def _schedule(*args: str | Path, stdin: str | None = None) -> Any:
    runner = CliRunner(env={"COLUMNS": "200"})
    return runner.invoke(app, ["schedule", *map(str, args)], input=stdin)


def _ok(*args: str | Path, stdin: str | None = None) -> Any:
    got = _schedule(*args, stdin=stdin)
    assert got.exit_code == 0, got.output
    return got


CASES = {
    "fits now": (["--add-job", "", "--tasks", "4"], {"tasks": 4}),
    "backfilled": (
        ["--add-job", "", "--tasks", "6", "--requested-time", "3600"],
        {"tasks": 6, "requested_time": 3600},
    ),
    "waits, planned": (
        ["--add-job", "", "--tasks", "24", "--requested-time", "3600"],
        {"tasks": 24, "requested_time": 3600},
    ),
    "queue, user, requirement": (
        ["--add-job", "select[gpu]", "--tasks", "2", "--queue", "debug", "--user", "zoe"],
        {"tasks": 2, "queue": "debug", "user": "zoe", "resreq": "select[gpu]"},
    ),
    "its own id": (["--add-job", "", "--add-job-id", "mine"], {"id": "mine"}),
}


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_added_job_is_decided_as_the_same_job_in_the_state(
    tmp_path: Path, case: str, backfill: str
) -> None:
    """issue 26: the decisions with --add-job are those of the state with the job
    appended to its jobs, submitted at the state's now (the "added" key aside)."""
    args, fields = CASES[case]
    data = yaml.safe_load(BACKFILL.read_text(encoding="utf-8"))
    data["jobs"].append({"id": "added", "submit_time": data["now"], **fields})
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(data), encoding="utf-8")
    options = ["--backfill", backfill, "--json"]
    want = json.loads(_ok(edited, *options).stdout)
    got = json.loads(_ok(BACKFILL, *args, *options).stdout)
    added = got.pop("added")
    assert got == want
    job = fields.get("id", "added")
    entries = {e["job"]: (kind, e) for kind in ("dispatched", "pending") for e in want[kind]}
    kind, entry = entries[job]
    assert added == {"decision": kind, **entry}


def test_decision_comes_first_and_the_state_is_not_written(tmp_path: Path) -> None:
    """issue 26: the added job's decision is the first line, before the tables; the
    state file is the same bytes after."""
    state = tmp_path / "state.yaml"
    state.write_bytes(BACKFILL.read_bytes())
    before = sorted(p.name for p in tmp_path.iterdir())
    got = _ok(
        state, "--backfill", "easy", "--add-job", "", "--tasks", "6", "--requested-time", "3600"
    )
    first = got.stdout.splitlines()[0]
    assert first == 'added job "added" starts now (backfilled) on n06:6'
    assert "Dispatched" in got.stdout.split("\n", 1)[1]
    assert state.read_bytes() == BACKFILL.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_waiting_job_says_why_and_when(tmp_path: Path) -> None:
    """issue 26: with backfill planning it, the expected start (as squeue --start)."""
    args = ["--add-job", "", "--tasks", "24", "--requested-time", "3600"]
    lines = _ok(BACKFILL, "--backfill", "conservative", *args).stdout.splitlines()
    assert lines[0].startswith('added job "added" pends NOT_ENOUGH_SLOTS: needs 24 slot(s)')
    assert lines[1] == "  expected start: t=38600 s (in 43 min 20 s) on n04, n05, n06"
    easy = _ok(BACKFILL, "--backfill", "easy", *args).stdout.splitlines()
    assert easy[1] == "  expected start: none planned"  # EASY plans the first waiting job only
    state = tmp_path / "s.yaml"  # no backfill, no reservation: nothing is planned
    state.write_text("hosts: [{name: a, slots: 2}]\n", encoding="utf-8")
    alone = _ok(state, "--add-job", "", "--tasks", "3").stdout.splitlines()
    assert alone[0].startswith('added job "added" pends NEVER_RUNNABLE')
    assert "expected start" not in alone[1]


def test_add_job_with_job_explains_it_and_reads_stdin() -> None:
    """issue 26: --job added explains the added job in detail; the state may come from
    stdin."""
    text = CLUSTER.read_text(encoding="utf-8")
    got = _ok(
        "-", "--add-job", "select[mem>4000]", "--tasks", "4", "--job", "added", "--json", stdin=text
    )
    detail = json.loads(got.stdout)
    assert detail["job"] == "added"
    assert detail["identity"]["user"] == "nobody"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "3"], "--tasks: only with --add-job RESREQ"),
        (["--queue", "debug", "--user", "u"], "--queue, --user: only with --add-job RESREQ"),
        (["--add-job", "", "--tasks", "0"], "--tasks must be between 1 and"),
        (["--add-job", "", "--requested-time", "-5"], "--requested-time must be a number"),
        (["--add-job", "", "--requested-time", "inf"], "--requested-time must be a number"),
        (["--add-job", "", "--requested-time", "1e16"], "> 0 and at most 1e15, got 1e+16"),
        (["--add-job", "", "--add-job-id", ""], "--add-job-id must not be empty"),
        (["--add-job", "", "--add-job-id", "wide"], 'the state has a job "wide" already'),
        (["--add-job", "", "--add-job-id", "r1"], 'the state has a job "r1" already'),
        (["--add-job", "", "--queue", "nope"], "--queue: no queue 'nope' in the state"),
        (["--add-job", "select[gpu>]"], "--add-job: unexpected ']'"),
        (["--add-job", "select[nosuch]"], "--add-job: "),
        (["--add-job", "", "--snapshot", "s.yaml"], "--add-job asks where a job would start"),
    ],
)
def test_bad_options_exit_2_naming_the_option(args: list[str], message: str) -> None:
    """issue 26: every --add-job option checked, exit 2 naming it; a requirement's
    error with a caret under it."""
    got = _schedule(BACKFILL, *args)
    assert got.exit_code == 2, got.output
    assert message in got.stderr, got.stderr


def test_an_invalid_entrys_id_is_taken_for_an_added_job(tmp_path: Path) -> None:
    """A lenient load leaves a bad entry out, but its id stays claimed (docs/state-file.md):
    the added job may not take it (it was dispatched beside the INVALID entry of the
    same id, and ``--job added`` described the entry's position)."""
    state = tmp_path / "s.yaml"
    state.write_text("hosts: [{name: a, slots: 4}]\njobs:\n  - {id: added, tasks: two}\n")
    got = _schedule(state, "--lenient", "--add-job", "", "--json")
    assert got.exit_code == 2, got.output
    assert 'the state has a job "added" already' in got.stderr
    got = _schedule(state, "--lenient", "--add-job", "", "--add-job-id", "new", "--json")
    assert got.exit_code == 0, got.output
    assert [d["job"] for d in json.loads(got.stdout)["dispatched"]] == ["new"]


def test_bad_requirement_has_a_caret() -> None:
    got = _schedule(BACKFILL, "--add-job", "select[gpu>]")
    assert got.stderr.splitlines()[1:] == ["  select[gpu>]", " " * 13 + "^"]  # under ]


def test_default_queue_missing_from_the_state(tmp_path: Path) -> None:
    """issue 26: a state without a queue ``normal`` needs --queue, and says so."""
    state = tmp_path / "s.yaml"
    state.write_text("queues: {batch: {}}\nhosts: [{name: a, slots: 2}]\n", encoding="utf-8")
    got = _schedule(state, "--add-job", "")
    assert got.exit_code == 2
    assert (
        "the default queue 'normal': no queue 'normal' in the state (its queues: batch)"
        in got.stderr
    )
    assert _schedule(state, "--add-job", "", "--queue", "batch").exit_code == 0


def test_an_array_tasks_id_is_taken_for_an_added_job(tmp_path: Path) -> None:
    """As the loader refuses a job with the id of a task an array record still holds,
    --add-job-id refuses it (the added job took the task's decision and vanished); a
    task index past the record's range is free."""
    state = tmp_path / "s.yaml"
    state.write_text(
        'hosts: [{name: a, slots: 8}]\njobs:\n  - {id: "7", tasks: 2, array: "1-10"}\n'
    )
    got = _schedule(state, "--add-job", "", "--add-job-id", "7_2", "--tasks", "3")
    assert got.exit_code == 2, got.output
    assert '"7_2" is a task the array record "7" still holds' in got.stderr
    got = _schedule(state, "--add-job", "", "--add-job-id", "7_11", "--tasks", "3", "--json")
    assert got.exit_code == 0, got.output
    decided = json.loads(got.stdout)
    assert "7_11" in [d["job"] for d in decided["dispatched"] + decided["pending"]]
