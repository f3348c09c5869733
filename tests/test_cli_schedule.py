"""``xce schedule STATE [--json] [--explain]`` (design §4, §5): the decisions JSON shape,
the table, the explanations, and exit 2 with a located message for a broken state file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.alloc import PendReason
from xce.cli.main import app
from xce.cli.schedule_cmd import decisions_json
from xce.cluster import load_state
from xce.core import Session, fcfs_order

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
XCE = Path(sys.executable).parent / "xce"
REASONS = {r.value for r in PendReason}
DISPATCHED_KEYS = {"job", "alternative", "allocation", "shared"}
ALLOCATION_KEYS = {"host", "slots", "term", "resources"}
PENDING_KEYS = {"job", "reason", "message", "cached", "hosts"}
STATS_KEYS = {"jobs", "dispatched", "pending", "cache_hits", "plans_tried", "elapsed_s"}


def _invoke(*args: str) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, ["schedule", *args])


@pytest.fixture(scope="module")
def example_run() -> subprocess.CompletedProcess[str]:
    """The installed console script on the example, once for the module."""
    return subprocess.run(
        [str(XCE), "schedule", str(EXAMPLE), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _amounts(x: object) -> bool:
    return isinstance(x, dict) and all(isinstance(k, str) and _is_number(v) for k, v in x.items())


def test_json_has_the_design_shape(example_run: subprocess.CompletedProcess[str]) -> None:
    """Design §5 decisions JSON: exit 0; exactly the documented keys on dispatched,
    allocation and pending entries, with their types; the documented stats keys."""
    assert example_run.returncode == 0, example_run.stderr
    assert example_run.stderr == ""
    info = json.loads(example_run.stdout)
    assert set(info) == {"dispatched", "pending", "stats"}
    hosts = set(load_state(EXAMPLE).hosts.names)
    for d in info["dispatched"]:
        assert set(d) == DISPATCHED_KEYS, d
        assert isinstance(d["job"], str)
        assert d["alternative"] is None or _is_int(d["alternative"])
        assert _amounts(d["shared"])
        assert d["allocation"], d
        for a in d["allocation"]:
            assert set(a) == ALLOCATION_KEYS, a
            assert a["host"] in hosts
            assert _is_int(a["slots"])
            assert a["slots"] >= 1
            assert _is_int(a["term"])
            assert a["term"] >= 0
            assert _amounts(a["resources"])
    for p in info["pending"]:
        assert set(p) == PENDING_KEYS, p
        assert isinstance(p["job"], str)
        assert p["reason"] in REASONS
        assert isinstance(p["message"], str)
        assert p["message"]
        assert isinstance(p["cached"], bool)
        assert isinstance(p["hosts"], dict)
        assert all(k in REASONS and _is_int(v) and v > 0 for k, v in p["hosts"].items())
    stats = info["stats"]
    assert set(stats) >= STATS_KEYS
    assert all(_is_int(stats[k]) for k in STATS_KEYS - {"elapsed_s"})
    assert _is_number(stats["elapsed_s"])
    assert (stats["jobs"], stats["dispatched"], stats["pending"]) == (
        len(info["dispatched"]) + len(info["pending"]),
        len(info["dispatched"]),
        len(info["pending"]),
    )


def test_json_lists_every_job_once_in_dispatch_order(
    example_run: subprocess.CompletedProcess[str],
) -> None:
    """Design §5: ``job`` is the id as a string, every job appears once; ``dispatched``
    is in dispatch (picker) order; ``alternative`` is the winning index for ALTER."""
    info = json.loads(example_run.stdout)
    state = load_state(EXAMPLE)
    order = [j.id for j in fcfs_order(state)]
    dispatched = [d["job"] for d in info["dispatched"]]
    pending = [p["job"] for p in info["pending"]]
    assert sorted(dispatched + pending) == sorted(j.id for j in state.jobs)
    assert dispatched == [j for j in order if j in dispatched]
    by_id = {d["job"]: d for d in info["dispatched"]}
    assert by_id["104"]["alternative"] == 0  # an ALTER job
    assert all(d["alternative"] is None for j, d in by_id.items() if j != "104")
    assert {a["term"] for a in by_id["103"]["allocation"]} == {0, 1}  # a COMPOUND job


def test_json_is_the_library_decisions(example_run: subprocess.CompletedProcess[str]) -> None:
    """Design §1: the CLI is a thin driver — its JSON is ``decisions_json`` of a session."""
    state = load_state(EXAMPLE)
    expected = decisions_json(Session(state).run(), state)
    got = json.loads(example_run.stdout)
    for info in (expected, got):
        info["stats"].pop("elapsed_s")
    assert got == expected


def test_table_names_every_job() -> None:
    """``xce schedule STATE``: the default table output names every job, exit 0."""
    result = _invoke(str(EXAMPLE))
    assert result.exit_code == 0, result.stderr
    assert "Dispatched" in result.stdout
    assert "Pending" in result.stdout
    cells = {cell.strip() for line in result.stdout.splitlines() for cell in line.split("│")}
    for job in load_state(EXAMPLE).jobs:
        assert any(c == job.id or c.startswith(f"{job.id} ") for c in cells), job.id
    assert "hosts by reason" not in result.stdout


def test_explain_shows_host_breakdowns(tmp_path: Path) -> None:
    """``--explain``: a pending job's row shows its per-host breakdown."""
    state = (
        ClusterBuilder()
        .host("h0", 2, type="A")
        .host("h1", 2, type="B", status="closed")
        .host("h2", 2, type="B")
        .job("big", 9)
        .job("picky", 1, resreq="select[type==C]")
    )
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state.to_dict()))
    result = _invoke(str(path), "--explain")
    assert result.exit_code == 0, result.stderr
    assert "hosts by reason" in result.stdout
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "HOST_STATUS: 1" in rows["picky"]
    assert "SELECT: 2" in rows["picky"]
    assert "HOST_STATUS: 1" in rows["big"]


def test_json_marks_a_cache_hit(tmp_path: Path) -> None:
    """Design §5 ``cached`` and ``cache_hits``: the second of two identical unsatisfiable
    jobs is answered by the cache, with the first one's reason."""
    state = ClusterBuilder().hosts(2, slots=2).job("a", 3, resreq="span[hosts=1]")
    state.job("b", 3, resreq="span[hosts=1]")
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state.to_dict()))
    result = _invoke(str(path), "--json")
    assert result.exit_code == 0
    info = json.loads(result.stdout)
    assert [(p["job"], p["reason"], p["cached"]) for p in info["pending"]] == [
        ("a", "SPAN", False),
        ("b", "SPAN", True),
    ]
    assert info["stats"]["cache_hits"] == 1


BROKEN = {
    "wrong type": (
        "hosts:\n  - {name: h0, slots: 4}\n  - {name: h1, slots: four}\njobs:\n  - {id: j1}\n",
        3,
        "hosts[1].slots",
    ),
    "unknown host in running": (
        "hosts:\n  - {name: h0, slots: 4}\nrunning:\n  - id: r1\n    alloc:\n"
        "      - {host: nope, slots: 1}\njobs:\n  - {id: j1}\n",
        6,
        "running[0].alloc[0].host",
    ),
    "bad resreq": (
        "hosts:\n  - {name: h0, slots: 4}\njobs:\n  - {id: j1}\n"
        '  - {id: j2, resreq: "select[slots>1"}\n',
        5,
        "jobs[1].resreq",
    ),
    "unknown resource in a resreq": (
        'hosts:\n  - {name: h0, slots: 4}\njobs:\n  - {id: j1, resreq: "rusage[gpu=1]"}\n',
        4,
        "jobs[0].resreq",
    ),
    "unknown key": (
        "hosts:\n  - {name: h0, slots: 4, colour: red}\n",
        2,
        "hosts[0]",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_state_file_exits_2_with_file_line_and_path(tmp_path: Path, case: str) -> None:
    """Design §4: bad input exits 2, names the file, line and path on stderr, and
    schedules nothing (stdout stays empty)."""
    text, line, doc_path = BROKEN[case]
    path = tmp_path / "state.yaml"
    path.write_text(text)
    result = _invoke(str(path), "--json")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert f"{path}:{line}" in result.stderr
    assert doc_path in result.stderr


@pytest.mark.parametrize("name", ["missing.yaml", "state.txt"])
def test_an_unreadable_state_file_exits_2(tmp_path: Path, name: str) -> None:
    """Design §5 exit codes: a missing file or an unknown file type is bad input (2)."""
    path = tmp_path / name
    if name.endswith(".txt"):
        path.write_text("hosts: []\n")
    result = _invoke(str(path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert str(path) in result.stderr


def test_the_console_script_reports_a_broken_file_on_stderr(tmp_path: Path) -> None:
    """Design §4 via the installed ``xce`` script: exit 2, stderr located, stdout empty."""
    path = tmp_path / "state.json"
    path.write_text('{"hosts": [{"name": "h0", "slots": -1}]}\n')
    run = subprocess.run(
        [str(XCE), "schedule", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2
    assert run.stdout == ""
    assert f"{path}:1" in run.stderr
    assert "hosts[0].slots" in run.stderr


def test_json_shared_totals_a_license_wanted_by_several_terms(tmp_path: Path) -> None:
    """Design §5 ``shared``: the job-level shared amounts the job holds, in all."""
    state = (
        ClusterBuilder()
        .hosts(2, slots=1)
        .shared("lic", 2)
        .job("j", resreq="1*{rusage[lic=1]} + 1*{rusage[lic=1]}")
    )
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state.to_dict()))
    result = _invoke(str(path), "--json")
    assert result.exit_code == 0
    (d,) = json.loads(result.stdout)["dispatched"]
    assert d["shared"] == {"lic": 2.0}
