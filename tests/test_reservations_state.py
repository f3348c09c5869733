"""Advance reservations in the state file (issue 12): ``reservations`` and a pending
job's ``reservation``, loaded, checked with located errors, and written back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from xce.cluster import load_state, state_from_text
from xce.cluster.state import AdvanceReservation
from xce.core.snapshot import state_to_dict, write_state
from xce.errors import StateError

MARK = "# <-"

HOSTS = """\
hosts:
  - {name: a, slots: 4, resources: {mem: 100}, attributes: {type: X86, fast: true, cpuf: 2}}
  - {name: b, slots: 4, resources: {mem: 100}, attributes: {type: ARM, cpuf: 1}}
  - {name: c, slots: 4, attributes: {type: X86, cpuf: 1}}
"""

STATE = (
    HOSTS
    + """\
shared: {lic: {total: 2}}
reservations:
  - {name: maint, hosts: [c, a], start: 100, end: 200}
  - name: x86
    select: "type==X86 && cpuf>=1"
    start: -10
    end: 3600.5
    users: [alice]
    queues: [normal, high]
    projects: [climate]
jobs:
  - {id: j1, reservation: maint, requested_time: 50}
  - {id: j2}
"""
)


def _load_error(tmp_path: Path, text: str, name: str = "state.yaml") -> tuple[StateError, Path]:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(StateError) as info:
        load_state(path)
    return info.value, path


def _marked(text: str) -> int:
    (line,) = [i for i, row in enumerate(text.splitlines(), 1) if MARK in row]
    return line


def test_reservations_load() -> None:
    state = state_from_text(STATE)
    maint, x86 = state.reservations
    assert maint == AdvanceReservation("maint", (2, 0), 100.0, 200.0)
    assert x86 == AdvanceReservation(
        "x86",
        (0, 2),
        -10.0,
        3600.5,
        users=("alice",),
        queues=("normal", "high"),
        projects=("climate",),
        select="type==X86 && cpuf>=1",
    )
    assert [j.reservation for j in state.jobs] == ["maint", None]


@pytest.mark.parametrize(
    ("reservation", "named", "user", "queue", "project", "admitted"),
    [
        ("maint", "maint", "bob", "low", "p", True),  # naming it: always
        ("maint", None, "bob", "low", "p", False),  # no lists: only jobs naming it
        ("maint", "x86", "bob", "low", "p", False),  # naming another
        ("x86", None, "alice", "high", "climate", True),  # matches every list
        ("x86", None, "alice", "low", "climate", False),  # not its queue
        ("x86", None, "bob", "high", "climate", False),  # not its user
    ],
)
def test_who_may_use_a_reservation(
    reservation: str, named: str | None, user: str, queue: str, project: str, admitted: bool
) -> None:
    rsv = {r.name: r for r in state_from_text(STATE).reservations}[reservation]
    assert rsv.admits(named, user, queue, project) is admitted


def test_a_select_reads_host_names_strings_tags_and_static_numbers() -> None:
    for select, hosts in [
        ("fast", (0,)),
        ("hname==b || hname==c", (1, 2)),
        ("cpuf>1.5", (0,)),
        ("type!=X86", (1,)),
        ("defined(fast)", (0,)),
    ]:
        text = HOSTS + f'reservations: [{{name: r, select: "{select}", start: 0, end: 1}}]\n'
        assert state_from_text(text).reservations[0].hosts == hosts, select


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_reservations_round_trip_through_the_snapshot(tmp_path: Path, suffix: str) -> None:
    state = state_from_text(STATE)
    path = tmp_path / f"snap{suffix}"
    write_state(state, path)
    loaded = load_state(path)
    assert loaded.reservations == state.reservations
    assert loaded.jobs == state.jobs
    assert state_to_dict(loaded) == state_to_dict(state)
    written = state_to_dict(state)["reservations"]
    assert written[0] == {"name": "maint", "hosts": ["c", "a"], "start": 100, "end": 200}
    assert written[1]["select"] == "type==X86 && cpuf>=1"
    assert "hosts" not in written[1]


def test_a_state_without_reservations_writes_none() -> None:
    data = state_to_dict(state_from_text(HOSTS + "jobs: [{id: j1}]\n"))
    assert "reservations" not in data
    assert "reservation" not in data["jobs"][0]


def test_the_example_in_the_docs_loads() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "state-file.md").read_text()
    block = doc.split("## Advance reservations", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    state = state_from_text(block)
    assert [r.name for r in state.reservations] == ["maint", "gpu_course"]
    assert all(r.hosts for r in state.reservations)


# -- checks: each located ----------------------------------------------------------------------

BROKEN = {
    "unknown host": (
        "reservations[0].hosts[1]",
        'unknown host "d"',
        "d",
        HOSTS + "reservations:\n  - name: r\n    hosts:\n      - a\n      - d  # <-\n"
        "    start: 0\n    end: 1\n",
    ),
    "host twice": (
        "reservations[0].hosts[1]",
        'host "a" is listed twice (also [0])',
        "a",
        HOSTS + "reservations:\n  - name: r\n    hosts:\n      - a\n      - a  # <-\n"
        "    start: 0\n    end: 1\n",
    ),
    "no hosts listed": (
        "reservations[0].hosts",
        "expected a list with at least 1 entry",
        "[]",
        HOSTS + "reservations:\n  - name: r\n    hosts: []  # <-\n    start: 0\n    end: 1\n",
    ),
    "an empty users list": (
        "reservations[0].users",
        "expected a list with at least 1 entry",
        "[]",
        HOSTS + "reservations:\n  - name: r\n    hosts: [a]\n    users: []  # <-\n"
        "    start: 0\n    end: 1\n",
    ),
    "neither hosts nor select": (
        "reservations[0]",
        'reservation "r" gives neither hosts nor select',
        "name: r",
        HOSTS + "reservations:\n  - name: r  # <-\n    start: 0\n    end: 1\n",
    ),
    "both hosts and select": (
        "reservations[0].select",
        "give either hosts or select, not both",
        "select",
        HOSTS + "reservations:\n  - name: r\n    hosts: [a]\n    select: fast  # <-\n"
        "    start: 0\n    end: 1\n",
    ),
    "end before start": (
        "reservations[0].end",
        "end (5.0) is not after start (10.0)",
        "5",
        HOSTS + "reservations:\n  - name: r\n    hosts: [a]\n    start: 10\n    end: 5  # <-\n",
    ),
    "empty window": (
        "reservations[0].end",
        "end (10.0) is not after start (10.0)",
        "10",
        HOSTS + "reservations:\n  - name: r\n    hosts: [a]\n    start: 10\n    end: 10  # <-\n",
    ),
    "infinite end": (
        "reservations[0].end",
        ".inf is too large",
        ".inf",
        HOSTS + "reservations:\n  - name: r\n    hosts: [a]\n    start: 10\n    end: .inf  # <-\n",
    ),
    "nan start": (
        "reservations[0].start",
        ".nan is not a number",
        ".nan",
        HOSTS + "reservations:\n  - name: r\n    hosts: [a]\n    start: .nan  # <-\n    end: 1\n",
    ),
    "missing end": (
        "reservations[0]",
        'missing required key "end"',
        "name: r",
        HOSTS + "reservations:\n  - name: r  # <-\n    hosts: [a]\n    start: 0\n",
    ),
    "unknown key": (
        "reservations[0].user",
        'unknown key "user"',
        "user",
        HOSTS + "reservations:\n  - name: r\n    hosts: [a]\n    start: 0\n    end: 1\n"
        "    user: [alice]  # <-\n",
    ),
    "duplicate name": (
        "reservations[1].name",
        'duplicate reservation "r" (also reservations[0])',
        "r  #",
        HOSTS + "reservations:\n  - {name: r, hosts: [a], start: 0, end: 1}\n"
        "  - name: r  # <-\n    hosts: [b]\n    start: 0\n    end: 1\n",
    ),
    "job names an unknown reservation": (
        "jobs[1].reservation",
        'unknown reservation "nope"',
        "nope",
        HOSTS + "reservations: [{name: r, hosts: [a], start: 0, end: 1}]\njobs:\n"
        "  - {id: j1, reservation: r}\n  - id: j2\n    reservation: nope  # <-\n",
    ),
    "job names a reservation when there are none": (
        "jobs[0].reservation",
        'unknown reservation "r"',
        "r  #",
        HOSTS + "jobs:\n  - id: j1\n    reservation: r  # <-\n",
    ),
    "select: unknown resource": (
        "reservations[0].select",
        "unknown resource 'gpu' in select",
        "gpu",
        HOSTS + 'reservations:\n  - name: r\n    select: "type==X86 && gpu"  # <-\n'
        "    start: 0\n    end: 1\n",
    ),
    "select: syntax": (
        "reservations[0].select",
        "unexpected",
        "& fast",
        HOSTS + 'reservations:\n  - name: r\n    select: "type==X86 &&& fast"  # <-\n'
        "    start: 0\n    end: 1\n",
    ),
    "select: reads availability": (
        "reservations[0].select",
        '"mem" is the availability of "mem", which can change in a session',
        "mem>10",
        HOSTS + 'reservations:\n  - name: r\n    select: "fast && mem>10"  # <-\n'
        "    start: 0\n    end: 1\n",
    ),
    "select: reads a capacity": (
        "reservations[0].select",
        '"maxmem" is the capacity of "mem", which can change in a session',
        "maxmem",
        HOSTS
        + 'reservations:\n  - name: r\n    select: "maxmem>10"  # <-\n    start: 0\n    end: 1\n',
    ),
    "select: reads slots": (
        "reservations[0].select",
        '"slots" is the availability of "slots"',
        "slots>=4",
        HOSTS
        + 'reservations:\n  - name: r\n    select: "slots>=4"  # <-\n    start: 0\n    end: 1\n',
    ),
    "select: reads a shared resource": (
        "reservations[0].select",
        '"lic" is the availability of "lic"',
        "lic>0",
        HOSTS + "shared: {lic: {total: 2}}\n"
        'reservations:\n  - name: r\n    select: "fast || lic>0"  # <-\n    start: 0\n    end: 1\n',
    ),
    "select: a section after the expression": (
        "reservations[0].select",
        "expected a select expression only (no sections)",
        "fast]",
        HOSTS + 'reservations:\n  - name: r\n    select: "fast] rusage[mem=1"  # <-\n'
        "    start: 0\n    end: 1\n",
    ),
    "select: matches no host": (
        "reservations[0].select",
        'select "type==SPARC" matches no host',
        '"type==SPARC"',
        HOSTS + 'reservations:\n  - name: r\n    select: "type==SPARC"  # <-\n'
        "    start: 0\n    end: 1\n",
    ),
}


@pytest.mark.parametrize(("path", "message", "caret", "text"), BROKEN.values(), ids=list(BROKEN))
def test_broken_reservations_are_located(
    tmp_path: Path, path: str, message: str, caret: str, text: str
) -> None:
    """Each error names the file, line, column and path; the caret is under ``caret``
    (inside a select string: under the word at fault)."""
    err, file = _load_error(tmp_path, text)
    assert err.source == str(file)
    assert err.path == path
    assert message in err.message
    assert err.line == _marked(text)
    assert err.column is not None
    assert str(err).startswith(f"{file}:{err.line}:{err.column}: {path}: ")
    line = text.splitlines()[err.line - 1]
    assert err.text == line
    assert line[err.column - 1 :].startswith(caret)


def test_a_broken_select_is_located_in_json(tmp_path: Path) -> None:
    data = yaml.safe_load(HOSTS)
    data["reservations"] = [{"name": "r", "select": "fast && mem>1", "start": 0, "end": 1}]
    text = json.dumps(data)
    err, _ = _load_error(tmp_path, text, "state.json")
    assert (err.path, err.line) == ("reservations[0].select", 1)
    assert err.column == text.index("fast && mem>1") + len("fast && ") + 1


def test_lenient_leaves_out_only_the_job_naming_an_unknown_reservation(tmp_path: Path) -> None:
    text = HOSTS + (
        "reservations: [{name: r, hosts: [a], start: 0, end: 1}]\n"
        "jobs:\n  - {id: j1, reservation: r}\n  - {id: j2, reservation: nope}\n  - {id: j3}\n"
    )
    path = tmp_path / "state.yaml"
    path.write_text(text)
    state, invalid = load_state(path, lenient=True)
    assert [j.id for j in state.jobs] == ["j1", "j3"]
    assert [(i.id, i.error.path) for i in invalid] == [("j2", "jobs[1].reservation")]
    assert invalid[0].error.line == 8


def test_a_bad_reservation_fails_a_lenient_load_too(tmp_path: Path) -> None:
    text = HOSTS + "reservations: [{name: r, hosts: [z], start: 0, end: 1}]\njobs: [{id: j1}]\n"
    err, _ = _load_error(tmp_path, text)
    path = tmp_path / "state.yaml"
    with pytest.raises(StateError) as info:
        load_state(path, lenient=True)
    assert info.value.path == err.path == "reservations[0].hosts[0]"


def test_the_scheduling_core_keeps_reservations_and_estimates(tmp_path: Path) -> None:
    """issue 12: the core's state view (what sessions plan against, and what its
    snapshots write) keeps the reservations, and a job it starts keeps its
    ``requested_time`` as running work."""
    from xce.alloc import Dispatched
    from xce.core import JobStarted, SchedulerCore

    state = state_from_text(STATE.replace("reservation: maint, ", ""))  # j1 may start now
    core = SchedulerCore(state)
    assert core.state.reservations == state.reservations
    result = core.run_session()
    started = next(d for d in result.decisions if d.job == "j1")
    assert isinstance(started, Dispatched)
    core.apply(JobStarted("j1", started.allocation, 0.0))
    (run,) = [r for r in core.state.running if r.id == "j1"]
    assert run.requested_time == 50
    out = tmp_path / "after.yaml"
    write_state(core.state, out)
    again = load_state(out)
    assert again.reservations == state.reservations
    assert next(r for r in again.running if r.id == "j1").requested_time == 50
