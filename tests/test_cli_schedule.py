"""``xce schedule STATE [--json] [--explain]`` (design §4, §5): the decisions JSON shape,
the table, the explanations, and exit 2 with a located message for a broken state file.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.alloc import Decision, PendInfo, Pending, PendReason
from xce.cli.main import app
from xce.cli.resreq_cmd import describe
from xce.cli.schedule_job import explain_job, render_job
from xce.cli.schedule_view import decisions_json
from xce.cli.schedule_view import render as render_table
from xce.cluster import load_state
from xce.core import Session, SessionResult, SessionStats, fcfs_order
from xce.resreq import parse

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
XCE = Path(sys.executable).parent / "xce"
REASONS = {r.value for r in PendReason}
DISPATCHED_KEYS = {"job", "alternative", "allocation", "shared"}
ALLOCATION_KEYS = {"host", "slots", "term", "resources"}
PENDING_KEYS = {"job", "reason", "message", "cached", "hosts", "examples"}  # + "limits" if any
STATS_KEYS = {"jobs", "dispatched", "pending", "cache_hits", "plans_tried"}


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
    allocation and pending entries, with their types; the documented stats keys
    (issue 9: pending entries carry ``examples``, ``limits`` when there are any,
    ``cause`` for NEVER_RUNNABLE; issue 11: ``preempted`` when a queue of the state
    preempts, and ``preempts``/``promise`` on a PREEMPTING entry)."""
    assert example_run.returncode == 0, example_run.stderr
    assert example_run.stderr == ""
    info = json.loads(example_run.stdout)
    preempting = any(q.preempts for q in load_state(EXAMPLE).queues.values())
    assert set(info) == {"dispatched", "pending", "stats"} | (
        {"preempted"} if preempting else set()
    )
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
        assert set(p) - {"limits", "cause", "preempts", "promise"} == PENDING_KEYS, p
        assert ("cause" in p) == (p["reason"] == "NEVER_RUNNABLE"), p
        assert ("preempts" in p) == ("promise" in p) == (p["reason"] == "PREEMPTING"), p
        assert "limits" not in p or (p["limits"] and all(isinstance(n, str) for n in p["limits"]))
        assert set(p["examples"]) <= set(p["hosts"]), p
        for code, names in p["examples"].items():
            assert 0 < len(names) <= p["hosts"][code]
            assert set(names) <= hosts
        assert isinstance(p["job"], str)
        assert p["reason"] in REASONS
        assert isinstance(p["message"], str)
        assert p["message"]
        assert isinstance(p["cached"], bool)
        assert isinstance(p["hosts"], dict)
        assert all(k in REASONS and _is_int(v) and v > 0 for k, v in p["hosts"].items())
    stats = info["stats"]
    assert set(stats) >= STATS_KEYS
    assert all(_is_int(stats[k]) for k in STATS_KEYS)
    assert "timing" not in info  # only with --timing: the JSON is the same bytes every run
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
    """``--explain``: a pending job's row shows its per-host breakdown (issue 9: jobs
    that wait for resources, which the empty cluster could run: not NEVER_RUNNABLE)."""
    state = (
        ClusterBuilder()
        .host("h0", 2, type="A", mem=1000)
        .host("h1", 2, type="B", mem=1000, status="closed")
        .host("h2", 2, type="B", mem=1000)
        .running("r1", {"h2": 1}, rusage={"mem": 600})
        .job("big", 4)
        .job("picky", 1, resreq="select[type==B && mem>500]")
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
    jobs is answered by the cache, with the first one's reason (issue 9: running work
    makes them wait; the empty cluster could run them)."""
    state = ClusterBuilder().hosts(2, slots=4).running("r", {"h0": 2, "h1": 2})
    state.job("a", 3, resreq="span[hosts=1]")
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


# --- issue 9: example hosts and limits, escaping, --job, --lenient, order[max...] ------------


def _session(*decisions: Decision) -> SessionResult:
    pending = sum(isinstance(d, Pending) for d in decisions)
    stats = SessionStats(jobs=len(decisions), dispatched=len(decisions) - pending, pending=pending)
    return SessionResult(decisions, stats)


MARKUP = "[bold]x[/]"  # a host name Rich would read as markup if it were not escaped

EXAMPLES_INFO = PendInfo(
    PendReason.LIMIT,
    "limit [cap] reached",
    hosts=MappingProxyType({"SELECT": 5, "LIMIT": 1}),
    examples=MappingProxyType({"SELECT": (MARKUP, "h1"), "LIMIT": ("h2",)}),
    limits=("cap", "[red]l2[/]"),
)


def test_pending_entries_carry_examples_and_limits() -> None:
    """issue 9: a pending entry of the decisions JSON has ``examples`` (a few host names
    per host-level reason, possibly none) and ``limits`` only when it waits on some."""
    state = ClusterBuilder().hosts(3, slots=1).job("a").job("b").build()
    result = _session(Pending("a", EXAMPLES_INFO), Pending("b", PendInfo(PendReason.SPAN, "m")))
    a, b = decisions_json(result, state)["pending"]
    assert a["examples"] == {"SELECT": [MARKUP, "h1"], "LIMIT": ["h2"]}
    assert a["limits"] == ["cap", "[red]l2[/]"]
    assert set(b) == PENDING_KEYS
    assert b["examples"] == {}


def test_explain_shows_examples_and_limits_literally() -> None:
    """issue 9: ``--explain``'s breakdown names the example hosts (``…`` when there are
    more) and the limits; names and messages print literally, never as Rich markup."""
    state = ClusterBuilder().hosts(3, slots=1).job("a").build()
    info = decisions_json(_session(Pending("[i]a[/]", EXAMPLES_INFO)), state)
    console = Console(file=io.StringIO(), width=300, highlight=False)
    render_table(info, True, console)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"SELECT: 5 ({MARKUP}, h1, …)" in out
    assert "LIMIT: 1 (h2)" in out
    assert "limits: cap, [red]l2[/]" in out
    assert "[i]a[/]" in out
    assert "limit [cap] reached" in out


def test_host_and_job_names_print_literally(tmp_path: Path) -> None:
    """issue 9: host names and job ids from the state file go through Rich escaped: a
    host named ``[bold]x[/]`` prints as written, in the table and in ``--job``."""
    state = ClusterBuilder().host(MARKUP, 2).job("[red]j[/]", 2).job("[i]p[/]", 5)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state.to_dict()))
    result = _invoke(str(path), "--explain")
    assert result.exit_code == 0, result.stderr
    assert f"{MARKUP}:2" in result.stdout
    assert "[red]j[/]" in result.stdout
    assert "[i]p[/]" in result.stdout
    result = _invoke(str(path), "--job", "[red]j[/]")
    assert result.exit_code == 0, result.stderr
    assert MARKUP in result.stdout
    assert "[red]j[/]" in result.stdout


def job_state(tmp_path: Path) -> Path:
    """Jobs of every kind: dispatched simple/compound/alter, pending on host status,
    slots, a limit — each waiting for resources (the empty cluster could run it)."""
    state = (
        ClusterBuilder()
        .host("h0", 4, mem=1000, type="A")
        .host("h1", 4, mem=1000, type="B")
        .host("h2", 4, mem=1000, type="B", status="closed")
        .running("r1", {"h1": 1}, rusage={"mem": 600})
        .queue("high", priority=50)
        .limit("alice_cap", users=["alice"], slots=1)
        .job("simple", 2, resreq="select[type==A] rusage[mem=100]", user="bob", queue="high")
        .job("compound", resreq="1*{select[type==A]} + 2*{select[type==B]}", project="p1")
        .job("alter", 1, resreq="{select[type==C]} || {select[type==B]}")
        .job("picky", 1, resreq="select[type==B && mem>500]")  # h2 would do, but is closed
        .job("big", 6)  # 1 slot is left on the ok hosts
        .job("alice1", 1, user="alice")
        .job("alice2", 1, user="alice", submit_time=5)
    )
    path = tmp_path / "jobs.yaml"
    path.write_text(json.dumps(state.to_dict(), indent=1))
    return path


JOBS = {
    # id: (status, reason, tasks)
    "simple": ("dispatched", None, 2),
    "compound": ("dispatched", None, 3),
    "alter": ("dispatched", None, 1),
    "picky": ("pending", "HOST_STATUS", 1),
    "big": ("pending", "NOT_ENOUGH_SLOTS", 6),
    "alice2": ("pending", "LIMIT", 1),
}


@pytest.mark.parametrize("job", list(JOBS))
def test_job_json_explains_one_job(tmp_path: Path, job: str) -> None:
    """issue 9: ``--job ID --json`` is one object: identity, the requirement as
    ``xce resreq --json`` describes it, the job's entry of the decisions JSON, its pick
    position, and the limits it waits on."""
    status, reason, tasks = JOBS[job]
    path = job_state(tmp_path)
    result = _invoke(str(path), "--job", job, "--json")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert set(info) - {"cause"} == {
        "job", "entry", "file", "identity", "resreq", "requirement", "pick", "picks",
        "status", "decision", "limits",
    }  # fmt: skip
    assert ("cause" in info) == (status == "pending")
    state = load_state(path)
    (entry,) = [j for j in state.jobs if j.id == job]
    assert (info["job"], info["entry"], info["file"]) == (job, f"jobs[{entry.order}]", str(path))
    assert info["status"] == status
    assert info["identity"]["user"] == entry.user
    assert info["identity"]["queue_priority"] == state.queue_priority(entry.queue)
    assert info["resreq"] == entry.resreq
    assert info["requirement"]["normalized"] == describe(parse(entry.resreq))["normalized"]
    assert info["requirement"]["validated_against"] == str(path)
    assert sum(a["tasks"] for a in info["requirement"]["alternatives"][:1]) == tasks
    full = json.loads(_invoke(str(path), "--json").stdout)
    section = "dispatched" if status == "dispatched" else "pending"
    assert info["decision"] == next(d for d in full[section] if d["job"] == job)
    assert info["picks"] == full["stats"]["jobs"]
    if reason is not None:
        assert info["decision"]["reason"] == reason
    assert all(lim["name"] in info["decision"].get("limits", []) for lim in info["limits"])


def test_job_pick_is_the_position_in_picker_order(tmp_path: Path) -> None:
    """issue 9: ``pick`` counts the session's decisions in picker order (from 1):
    the high-priority job first, then FCFS."""
    path = job_state(tmp_path)
    state = load_state(path)
    order = [j.id for j in fcfs_order(state)]
    for job in ("simple", "picky", "alice2"):
        info = json.loads(_invoke(str(path), "--job", job, "--json").stdout)
        assert info["pick"] == order.index(job) + 1


def test_job_table_names_the_job_its_requirement_and_reason(tmp_path: Path) -> None:
    """issue 9: ``--job ID`` as text: identity line, the requirement tree of
    ``xce resreq``, the reason and message, the per-host breakdown."""
    path = job_state(tmp_path)
    result = _invoke(str(path), "--job", "picky")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "picky" in out
    assert "user nobody, queue normal (priority 0), project default, tasks 1" in out
    assert "select  type==B && mem>500" in out  # the requirement tree of xce resreq
    assert "fingerprint" in out
    assert "pending      HOST_STATUS" in out
    assert "Hosts by reason" in out
    assert "SELECT" in out  # h0 and h1 fail the select: their own reason in the breakdown
    result = _invoke(str(path), "--job", "compound")
    assert result.exit_code == 0, result.stderr
    assert "dispatched" in result.stdout
    assert "Allocation" in result.stdout
    assert "tasks 3 (not given)" in result.stdout  # the compound's own total
    rows = [ln.split("│")[1:4] for ln in result.stdout.splitlines() if ln.count("│") == 5]
    assert [[c.strip() for c in row] for row in rows] == [["h0", "1", "0"], ["h1", "2", "1"]]


def test_job_limits_it_waits_on_are_described(tmp_path: Path) -> None:
    """issue 9: the limits a pending job waits on (PendInfo.limits) are described from
    the state: consumers, scope and caps, in the JSON and the table."""
    path = job_state(tmp_path)
    state = load_state(path)
    (job,) = [j for j in state.jobs if j.id == "alice2"]
    info = PendInfo(PendReason.LIMIT, "limit alice_cap", limits=("alice_cap", "gone"))
    detail = explain_job(job, (Pending("alice2", info),), state, str(path))
    assert detail["limits"] == [
        {
            "name": "alice_cap",
            "users": ["alice"],
            "queues": None,
            "projects": None,
            "per_host": False,
            "slots": 1,
            "jobs": None,
            "resources": {},
        }
    ]
    assert detail["decision"]["limits"] == ["alice_cap", "gone"]
    console = Console(file=io.StringIO(), width=200, highlight=False)
    render_job(detail, console)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "Limits it waits on" in out
    assert "alice_cap" in out
    assert "users alice" in out


UNKNOWN_JOBS = {
    # asked, what stderr must say
    "close": ("alice3", ['no pending job "alice3"', "; close matches: ", '"alice1"', '"alice2"']),
    "nothing close": ("zzz", ['no pending job "zzz"', "(7 pending jobs)"]),
    "running": ("r1", ['job "r1" is running work (running[0]), not a pending job']),
}


@pytest.mark.parametrize(("asked", "words"), UNKNOWN_JOBS.values(), ids=UNKNOWN_JOBS.keys())
def test_job_unknown_id_exits_2(tmp_path: Path, asked: str, words: list[str]) -> None:
    """issue 9: ``--job`` with an id that is no pending job: exit 2, nothing on stdout,
    a message naming the file and the id (and close matches, or running work)."""
    path = job_state(tmp_path)
    doc = json.loads(path.read_text())
    doc["running"] = [{"id": "r1", "alloc": [{"host": "h1", "slots": 1}]}]
    path.write_text(json.dumps(doc))
    for args in ((), ("--json",)):
        result = _invoke(str(path), "--job", asked, *args)
        assert result.exit_code == 2, result.stdout
        assert result.stdout == ""
        assert result.stderr.startswith(f"xce: error: {path}: ")
        for word in words:
            assert word in result.stderr


LENIENT = """\
hosts:
  - {name: h0, slots: 4, resources: {mem: 1000}}
jobs:
  - {id: a, tasks: 2}
  - {id: b, resreq: "select[foo>1]"}
  - {id: c, tasks: two}
  - {id: d, tasks: 1, colour: red}
  - {id: e, tasks: 2, resreq: "rusage[mem=100]"}
  - 7
"""
LENIENT_INVALID = [  # id, line, path
    ("b", 5, "jobs[1].resreq"),
    ("c", 6, "jobs[2].tasks"),
    ("d", 7, "jobs[3].colour"),
    ("jobs[5]", 9, "jobs[5]"),
]


def test_lenient_schedules_the_rest_and_pends_bad_jobs_invalid(tmp_path: Path) -> None:
    """issue 9: without ``--lenient`` a bad job entry fails the file (exit 2, located);
    with it, each bad entry pends INVALID with its located error, first and in file
    order, counted in the stats; the rest is scheduled as if the bad entries were gone."""
    path = tmp_path / "state.yaml"
    path.write_text(LENIENT)
    strict = _invoke(str(path), "--json")
    assert strict.exit_code == 2
    assert f"{path}:6:" in strict.stderr  # decoding comes first: jobs[2]
    assert "jobs[2].tasks" in strict.stderr
    result = _invoke(str(path), "--json", "--lenient")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    invalid = [p for p in info["pending"] if p["reason"] == "INVALID"]
    assert info["pending"][: len(invalid)] == invalid
    assert [p["job"] for p in invalid] == [job for job, _, _ in LENIENT_INVALID]
    for p, (_, line, doc_path) in zip(invalid, LENIENT_INVALID, strict=True):
        assert p["message"].startswith(f"{path}:{line}:")
        assert f": {doc_path}: " in p["message"]
        assert (p["cached"], p["hosts"], p["examples"]) == (False, {}, {})
    clean = tmp_path / "clean.yaml"
    lines = LENIENT.splitlines(keepends=True)
    clean.write_text("".join(ln for i, ln in enumerate(lines, 1) if i not in (5, 6, 7, 9)))
    expected = json.loads(_invoke(str(clean), "--json").stdout)
    assert info["dispatched"] == expected["dispatched"]
    assert info["pending"][len(invalid) :] == expected["pending"]
    stats, base = info["stats"], expected["stats"]
    assert stats["jobs"] == base["jobs"] + 4
    assert stats["pending"] == base["pending"] + 4
    assert stats["dispatched"] == base["dispatched"]
    assert stats["pending_by_reason"] == {**base["pending_by_reason"], "INVALID": 4}


def test_lenient_table_and_job_show_the_error(tmp_path: Path) -> None:
    """issue 9: the table lists INVALID jobs with their located message; ``--job`` on
    one shows its error with a caret, and as JSON a structured ``error``."""
    path = tmp_path / "state.yaml"
    path.write_text(LENIENT)
    result = _invoke(str(path), "--lenient", "--explain")
    assert result.exit_code == 0, result.stderr
    assert "INVALID" in result.stdout
    assert "INVALID 4" in result.stdout
    result = _invoke(str(path), "--lenient", "--job", "b")
    assert result.exit_code == 0, result.stderr
    assert "INVALID" in result.stdout
    assert '  - {id: b, resreq: "select[foo>1]"}\n' in result.stdout
    caret = next(ln for ln in result.stdout.splitlines() if ln.strip() == "^")
    assert caret.index("^") == len('    - {id: b, resreq: "select[')
    result = _invoke(str(path), "--lenient", "--job", "c", "--json")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert (info["status"], info["pick"], info["requirement"]) == ("pending", None, None)
    assert info["decision"]["reason"] == "INVALID"
    assert info["identity"]["tasks"] == "two"
    error = info["error"]
    assert (error["file"], error["line"], error["path"]) == (str(path), 6, "jobs[2].tasks")
    assert error["column"] == LENIENT.splitlines()[5].index("two") + 1


def test_lenient_still_fails_on_a_bad_host(tmp_path: Path) -> None:
    """issue 9: errors outside the job entries fail the file under ``--lenient`` too."""
    path = tmp_path / "state.yaml"
    path.write_text(LENIENT.replace("slots: 4", "slots: four"))
    result = _invoke(str(path), "--lenient", "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{path}:2:" in result.stderr
    assert "hosts[0].slots" in result.stderr


def test_lenient_snapshot_leaves_out_invalid_jobs_and_says_so(tmp_path: Path) -> None:
    """issue 9: ``--lenient --snapshot`` writes a state that loads strictly: the invalid
    entries are left out, and stderr names them."""
    path = tmp_path / "state.yaml"
    path.write_text(LENIENT)
    out = tmp_path / "after.json"
    result = _invoke(str(path), "--lenient", "--json", "--snapshot", str(out))
    assert result.exit_code == 0, result.stderr
    assert "snapshot leaves out 4 invalid job(s): b, c, d, jobs[5]" in result.stderr
    after = load_state(out)
    assert {r.id for r in after.running} == {
        d["job"] for d in json.loads(result.stdout)["dispatched"]
    }
    assert all(j.id not in {"b", "c", "d"} for j in after.jobs)


@pytest.mark.parametrize(
    ("resreq", "host"),
    [
        ("order[maxslots]", "h1"),  # 1 slot free, but the most capacity
        ("order[-maxslots]", "h0"),
        ("order[slots]", "h2"),  # most free slots: the contrast
        ("order[maxmem]", "h0"),
        ("order[-maxmem:maxslots]", "h1"),
    ],
)
def test_order_by_capacity_end_to_end(tmp_path: Path, resreq: str, host: str) -> None:
    """issue 9: ``order[maxslots]`` / ``order[maxmem]`` pass validation and sort hosts
    by capacity (not by what is free) through ``xce schedule``."""
    state = (
        ClusterBuilder()
        .host("h0", 2, mem=900)
        .host("h1", 8, mem=100)
        .host("h2", 4, mem=500)
        .running("r1", {"h1": 7})
        .job("j", 1, resreq=resreq)
    )
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state.to_dict()))
    result = _invoke(str(path), "--json")
    assert result.exit_code == 0, result.stderr
    (d,) = json.loads(result.stdout)["dispatched"]
    assert [a["host"] for a in d["allocation"]] == [host]


def test_an_off_grid_rusage_is_located_and_lenient_sets_it_aside(tmp_path: Path) -> None:
    """issue 9: an rusage amount finer than its resolution is a located submission error
    of that job (strict: exit 2 naming file, line and jobs[0].resreq; lenient: INVALID),
    not an unlocated failure of the session."""
    path = tmp_path / "state.yaml"
    path.write_text(
        "hosts:\n  - {name: h0, slots: 4, resources: {mem: 100}}\n"
        'jobs:\n  - {id: a, resreq: "rusage[mem=0.0000001]"}\n  - {id: b}\n'
    )
    strict = _invoke(str(path), "--json")
    assert strict.exit_code == 2
    assert strict.stderr.startswith(f"xce: error: {path}:4:")
    assert "jobs[0].resreq: rusage[]: mem: 1e-07 is finer than its resolution" in strict.stderr
    result = _invoke(str(path), "--json", "--lenient")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert [(p["job"], p["reason"]) for p in info["pending"]] == [("a", "INVALID")]
    assert [d["job"] for d in info["dispatched"]] == ["b"]


def test_job_names_the_cause_of_never_runnable(tmp_path: Path) -> None:
    """issue 9: for a job that can never run, ``--job`` names what fails even on the
    empty cluster (PendInfo.cause), in the JSON and the text."""
    path = job_state(tmp_path)
    state = load_state(path)
    (job,) = [j for j in state.jobs if j.id == "picky"]
    info = PendInfo(PendReason.NEVER_RUNNABLE, "never", cause=PendReason.SELECT)
    detail = explain_job(job, (Pending("picky", info),), state, str(path))
    assert (detail["decision"]["reason"], detail["cause"]) == ("NEVER_RUNNABLE", "SELECT")
    console = Console(file=io.StringIO(), width=200, highlight=False)
    render_job(detail, console)
    assert "NEVER_RUNNABLE (pick 1 of 1, cause SELECT)" in console.file.getvalue()  # type: ignore[attr-defined]
    detail = explain_job(job, (Pending("picky", PendInfo(PendReason.SPAN, "m")),), state, "f")
    assert detail["cause"] is None


def test_decisions_json_names_the_cause_of_a_never_runnable_job(tmp_path: Path) -> None:
    """Issue 9 (pend reasons a user can act on): a 64-task span[hosts=1] job on 32-slot
    hosts is NEVER_RUNNABLE with cause SPAN, and its breakdown covers every host, with
    example names; a job merely waiting has no cause."""
    doc = (
        ClusterBuilder()
        .hosts(3, slots=32)
        .running("r", on={"h0": 32, "h1": 32, "h2": 30})
        .job("wide", 64, resreq="span[hosts=1]")
        .job("waits", 4)
        .to_dict()
    )
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["schedule", str(path), "--json"])
    assert result.exit_code == 0, result.output
    pending = {p["job"]: p for p in json.loads(result.stdout)["pending"]}
    wide, waits = pending["wide"], pending["waits"]
    assert (wide["reason"], wide["cause"]) == ("NEVER_RUNNABLE", "SPAN")
    assert wide["hosts"] == {"NOT_ENOUGH_SLOTS": 3}
    assert wide["examples"] == {"NOT_ENOUGH_SLOTS": ["h0", "h1", "h2"]}
    assert waits["reason"] == "NOT_ENOUGH_SLOTS"
    assert "cause" not in waits
    assert sum(waits["hosts"].values()) == 3


# --- issue 10 -----------------------------------------------------------------------------


def test_decisions_json_is_the_same_bytes_on_every_run() -> None:
    """issue 10: ``stats.elapsed_s`` made the decisions JSON differ between runs. The
    JSON is now byte-identical (two processes); timing comes only with --timing, as a
    key of its own."""
    runs = [
        subprocess.run(
            [str(XCE), "schedule", str(EXAMPLE), "--json"],
            capture_output=True,
            timeout=60,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    info = json.loads(runs[0])
    assert "timing" not in info
    assert "elapsed_s" not in json.dumps(info)
    timed = json.loads(_invoke(str(EXAMPLE), "--json", "--timing").stdout)
    assert set(timed["timing"]) == {"elapsed_s"}
    assert timed["timing"]["elapsed_s"] >= 0
    assert {k: v for k, v in timed.items() if k != "timing"} == info


HOSTILE_HOSTS = ["[/]", "a\x1b[31mb", "h\x1b]0;pwned\x07", "[bold red]x[/]"]
HOSTILE_JOBS = ["[/]j", "[bold red]x[/]", "\x1b]0;pwned\x07j", "big\x1b[2J", "rtl\u202e"]


def hostile_state(tmp_path: Path) -> Path:
    """Hosts and jobs named with markup, ANSI and OSC sequences; one job pends."""
    builder = ClusterBuilder()
    for name in HOSTILE_HOSTS:
        builder.host(name, 2)
    for name in HOSTILE_JOBS:
        builder.job(name, 50 if name.startswith("big") else 1)
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(builder.to_dict()), encoding="utf-8")
    return path


def visible(name: str) -> str:
    """How a name prints: control characters as Python escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


@pytest.mark.parametrize(
    "args",
    [["--explain"], ["--job", "big\x1b[2J"], ["--job", "[/]j"]],
    ids=["table", "--job pending", "--job dispatched"],
)
def test_hostile_names_print_as_written_and_never_reach_the_terminal_raw(
    tmp_path: Path, args: list[str]
) -> None:
    """issue 10: a job id or host name containing ``[/]`` crashed the table output,
    ``[bold red]x[/]`` rendered as styling and ANSI/OSC sequences reached the terminal
    raw. Every name prints as written, its control characters made visible."""
    result = _invoke(str(hostile_state(tmp_path)), *args)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert not any(c in out for c in "\x1b\x07\u202e")
    if args == ["--explain"]:
        for name in HOSTILE_JOBS + HOSTILE_HOSTS[:3]:
            assert visible(name) in out, name
    assert "[/]" in out


def test_a_hostile_id_in_an_error_is_shown_escaped(tmp_path: Path) -> None:
    """issue 10: messages quote user input; its control characters never reach stderr raw."""
    missing = tmp_path / "no\x1b]0;pwned\x07.yaml"
    result = _invoke(str(missing))
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr
    assert "\x07" not in result.stderr
    assert visible(str(missing)) in result.stderr


# -- times a person reads (issue 25) ------------------------------------------------------

T_REAL = 1796126400  # 2026-12-01T12:00:00Z


def _timed_state(tmp_path: Path, now: float, **top: Any) -> Path:
    """Two 4-slot hosts, one held for 30 min more; ``wide`` (8 tasks) waits for it, the
    short ``small`` fits beside it, ``late`` (4 tasks, 2 h) is held behind ``wide``."""
    state = {
        "now": now,
        **top,
        "hosts": [{"name": "n1", "slots": 4}, {"name": "n2", "slots": 4}],
        "running": [
            {"id": "r", "user": "bob", "alloc": [{"host": "n1", "slots": 4}],
             "start_time": now - 1800, "requested_time": 3600},
        ],
        "jobs": [
            {"id": "wide", "user": "alice", "tasks": 8, "submit_time": now - 600,
             "requested_time": 7200},
            {"id": "late", "user": "erin", "tasks": 4, "submit_time": now - 300,
             "requested_time": 7200},
        ],
    }  # fmt: skip
    path = tmp_path / "timed.yaml"
    path.write_text(json.dumps(state))
    return path


@pytest.mark.parametrize(
    ("now", "top", "expected", "message"),
    [
        (T_REAL, {}, "2026-12-01 12:30:00 UTC (in 30 min) on n1, n2",
         "planned to start at 2026-12-01 12:30:00 UTC (in 30 min)"),
        (T_REAL, {"timezone": "Europe/Berlin"}, "2026-12-01 13:30:00 CET (in 30 min) on n1, n2",
         "planned to start at 2026-12-01 13:30:00 CET (in 30 min)"),
        (T_REAL - 150 * 86400, {"timezone": "Europe/Berlin"},  # summer time
         "2026-07-04 14:30:00 CEST (in 30 min) on n1, n2", "2026-07-04 14:30:00 CEST"),
        (36000, {}, "t=37800 s (in 30 min) on n1, n2", "planned to start at t=37800 s (in 30 min)"),
    ],
)  # fmt: skip
def test_expected_start_and_messages_read_as_times(
    tmp_path: Path, now: float, top: dict[str, Any], expected: str, message: str
) -> None:
    """Regression (issue 25): the expected start and the planner's messages said
    ``planned to start at 1.79616e+09``; now an ISO date and time in the state's zone
    (UTC by default), or ``t=N s`` for simulated time, with how far off it is."""
    path = _timed_state(tmp_path, now, **top)
    text = _invoke(str(path), "--backfill", "easy").stdout
    flat = " ".join(text.split())
    assert expected in flat
    assert message in flat
    assert "e+09" not in text


def test_json_keeps_seconds_and_adds_iso(tmp_path: Path) -> None:
    """JSON: the seconds as before, and ``now_iso``, ``planned_start_iso``,
    ``planned_end_iso`` (with the zone's offset; null where nothing is planned)."""
    path = _timed_state(tmp_path, T_REAL, timezone="Europe/Berlin")
    result = _invoke(str(path), "--backfill", "easy", "--json")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert (info["now"], info["now_iso"]) == (T_REAL, "2026-12-01T13:00:00+01:00")
    pending = {p["job"]: p for p in info["pending"]}
    wide, late = pending["wide"], pending["late"]
    assert wide["planned_start"] == T_REAL + 1800
    assert wide["planned_start_iso"] == "2026-12-01T13:30:00+01:00"
    assert wide["planned_end_iso"] == "2026-12-01T15:30:00+01:00"
    assert (late["planned_start"], late["planned_start_iso"], late["planned_end_iso"]) == (
        None,
        None,
        None,
    )


def test_simulated_times_have_no_iso_string(tmp_path: Path) -> None:
    """Before 1e9 s a time is simulated time: JSON's ISO strings are null, never 1970."""
    info = json.loads(
        _invoke(str(_timed_state(tmp_path, 36000)), "--backfill", "easy", "--json").stdout
    )
    assert info["now_iso"] is None
    wide = next(p for p in info["pending"] if p["job"] == "wide")
    assert (wide["planned_start"], wide["planned_start_iso"]) == (37800, None)


def test_job_identity_shows_times_and_durations(tmp_path: Path) -> None:
    """``--job``: the submit time as a date from the session's time, the estimate as a
    duration (not ``submit time 1796125800.0, requested time 7200.0``)."""
    path = _timed_state(tmp_path, T_REAL, timezone="Europe/Berlin")
    text = _invoke(str(path), "--job", "wide").stdout
    flat = " ".join(text.split())
    assert "submit time 2026-12-01 12:50:00 CET (10 min ago), requested time 2 h" in flat
    info = json.loads(_invoke(str(path), "--job", "wide", "--json").stdout)
    assert info["identity"]["submit_time_iso"] == "2026-12-01T12:50:00+01:00"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../etc/passwd"])
def test_an_unknown_timezone_exits_2_naming_it(tmp_path: Path, zone: str) -> None:
    """A zone no IANA database holds is bad input located at ``timezone``, never a
    traceback and never a silent UTC."""
    result = _invoke(str(_timed_state(tmp_path, T_REAL, timezone=zone)))
    assert result.exit_code == 2
    assert "timezone" in result.stderr
    assert "Traceback" not in result.stderr


# --- issue 26: the state from stdin (``xce schedule -``) ---------------------------------


def _stdin(text: str | bytes, *args: str) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, ["schedule", "-", *args], input=text)


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('{"hosts": []}', "json"),
        ("  \n{\n}\n", "json"),
        ("hosts: []\n", "yaml"),
        ("{hosts: [], jobs: []}", "yaml"),  # a YAML flow mapping: not JSON
        ('{"hosts": [],}', "yaml"),  # YAML reads it; JSON does not
        ('{"hosts": [}', "json"),  # neither: reported as the JSON it meant to be
        ("", "yaml"),
    ],
)
def test_stdin_format(text: str, fmt: str) -> None:
    """issue 26: a state on stdin is JSON when it parses as JSON, else YAML; a ``{``
    text that parses as neither is reported as JSON."""
    from xce.cli.schedule_add import stdin_format

    assert stdin_format(text) == fmt


def test_stdin_state_schedules_as_the_file_does() -> None:
    """issue 26: ``xce schedule -`` reads the state from stdin, YAML or JSON, and
    decides exactly what it decides on the file (``xce import slurm … | xce schedule -``
    works: the importer prints YAML)."""
    import yaml

    from_file = _invoke(str(EXAMPLE), "--json")
    assert from_file.exit_code == 0, from_file.output
    text = EXAMPLE.read_text(encoding="utf-8")
    as_json = json.dumps(yaml.safe_load(text))
    for given in (text, as_json):
        got = _stdin(given, "--json")
        assert got.exit_code == 0, got.output
        assert json.loads(got.stdout) == json.loads(from_file.stdout)


def test_import_piped_into_schedule() -> None:
    """issue 26: the pipe of the README, on a real Slurm sample."""
    from xce.cli.import_cmd import import_app

    sample = Path(__file__).parent / "data" / "slurm" / "slurmrestd-24.11-v0.0.42"
    imported = CliRunner().invoke(import_app, ["slurm", *map(str, sorted(sample.glob("*.json")))])
    assert imported.exit_code == 0, imported.output
    got = _stdin(imported.stdout)
    assert got.exit_code == 0, got.output
    assert "agrees with Slurm" in got.stdout


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("hosts: [{name: a, slots: 2}]\njobs:\n  - {id: j1, tasks: x}\n", "<stdin>:3:21:", "tasks"),
        ('{"hosts": [{"name": "a", "slots": 2}],\n "jobs": [}\n', "<stdin>:2:", "JSON"),
        (b"hosts: []\n# \xff\n", "<stdin>:2:3:", "not UTF-8"),
        ("", "<stdin>", "empty"),
    ],
)
def test_stdin_errors_are_located_at_stdin(text: str | bytes, where: str, words: str) -> None:
    """issue 26: a broken state on stdin exits 2 with ``<stdin>:line:col``."""
    got = _stdin(text)
    assert got.exit_code == 2, got.output
    assert got.stderr.startswith(f"xce: error: {where}"), got.stderr
    assert words in got.stderr


def test_stdin_with_lenient_and_job() -> None:
    """issue 26: --lenient and --job read a stdin state as they read a file."""
    text = "hosts: [{name: a, slots: 2}]\njobs:\n  - {id: ok, tasks: 1}\n  - {id: bad, tasks: x}\n"
    got = _stdin(text, "--lenient", "--json")
    assert got.exit_code == 0, got.output
    pending = {p["job"]: p["reason"] for p in json.loads(got.stdout)["pending"]}
    assert pending == {"bad": "INVALID"}
    missing = _stdin(text.replace("  - {id: bad, tasks: x}\n", ""), "--job", "nope")
    assert missing.exit_code == 2
    assert missing.stderr.startswith("xce: error: <stdin>: no pending job")


def test_stdin_refuses_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 26: ``xce schedule -`` typed at a prompt says what it wants, not waits."""
    from xce.cli import schedule_add
    from xce.errors import InputError

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(schedule_add.sys, "stdin", Terminal())
    with pytest.raises(InputError, match="stdin, which is a terminal"):
        schedule_add.read_stdin_state(lenient=False)


def test_a_long_schedule_prints_one_plain_line_per_pending_job(tmp_path: Path) -> None:
    """More pending jobs than a screenful (xce.cli.tables.LONG): the Pending table is
    plain columns, one line per job in pick order with its reason, the job's name as
    named (never read as markup, no escaping backslash), the hosts-by-reason breakdown
    on the same line."""
    from xce.cli.tables import LONG

    state = ClusterBuilder().hosts(2, slots=1).running("r", {"h0": 1, "h1": 1})
    ids = [f"[b]j{k}" for k in range(LONG + 3)]
    for job in ids:
        state.job(job, 1)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state.to_dict()))
    result = _invoke(str(path), "--explain")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index(f"Pending ({len(ids)})")
    assert lines[at + 1].split()[:3] == ["job", "reason", "why"]
    body = lines[at + 3 : at + 3 + len(ids)]
    assert [line.split()[0] for line in body] == ids
    assert all("NOT_ENOUGH_SLOTS" in line and "SLOTS: 2" in line for line in body), body[0]
    assert "│" not in "\n".join(lines[at:])
