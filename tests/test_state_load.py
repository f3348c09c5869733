"""Loading state files: the example loads; every broken field is a located StateError."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from builders import ClusterBuilder
from xce.cluster import (
    ClusterState,
    Reservation,
    ResourceKind,
    load_state,
    state_from_dict,
    state_from_text,
    validate_requirements,
)
from xce.errors import InputError, ResreqSyntaxError, StateError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
MARK = "# <-"


def _marked_line(text: str) -> int:
    """The 1-based line a case marks with ``# <-`` as the one the error must name."""
    lines = [i for i, line in enumerate(text.splitlines(), 1) if MARK in line]
    assert len(lines) == 1, "mark exactly one line"
    return lines[0]


def _load_error(tmp_path: Path, text: str, name: str = "state.yaml") -> tuple[StateError, Path]:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(StateError) as info:
        load_state(path)
    return info.value, path


# -- the example --------------------------------------------------------------------------


def test_example_loads() -> None:
    state = load_state(EXAMPLE)
    assert state.source == str(EXAMPLE)
    assert state.hosts.n == 12
    assert len(state.jobs) == 11
    assert [r.id for r in state.running] == ["r1", "r2", "r3"]
    assert state.catalog.kind("gpu") is ResourceKind.BOOLEAN
    assert state.catalog["swp"].reservation is Reservation.PER_HOST
    assert state.shared_free("lic_x") == 3
    assert state.queue_priority("high") == 50
    assert state.queues["high"].preempts == ("normal",)


def test_example_as_json_gives_the_same_state(tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data, indent=2))
    assert _summary(load_state(path)) == _summary(load_state(EXAMPLE))


def _summary(state: ClusterState) -> dict[str, Any]:
    """Everything a state holds, in comparable form (NaN made equal to itself)."""

    def cols(columns: Any) -> dict[str, list[Any]]:
        return {
            k: [None if isinstance(x, float) and math.isnan(x) else x for x in v.tolist()]
            for k, v in columns.items()
        }

    hosts = state.hosts
    return {
        "catalog": list(state.catalog.values()),
        "hosts": (
            hosts.names,
            hosts.status.tolist(),
            cols(hosts.capacity),
            cols(hosts.numeric),
            cols(hosts.strings),
            cols(hosts.tags),
        ),
        "used": cols(state.used),
        "shared": (state.shared_total, state.shared_used),
        "queues": state.queues,
        "limits": state.limits,
        "running": state.running,
        "jobs": state.jobs,
        "reservations": state.reservations,
    }


def test_estimates_and_reservations_load_the_same_from_yaml_and_json(tmp_path: Path) -> None:
    """Issue 12: the new fields read alike in both formats (JSON through its fast decoder)."""
    text = """\
hosts:
  - {name: a, slots: 2, attributes: {type: X}}
  - {name: b, slots: 2, attributes: {type: Y}}
queues: {normal: {default_runtime: 60, max_runtime: 120}}
reservations:
  - {name: r, select: "type==Y", start: 0, end: 10, projects: [p]}
  - {name: s, hosts: [a], start: 5.5, end: 6}
running: [{id: r1, alloc: [{host: a, slots: 1}], requested_time: 30}]
jobs: [{id: j1, requested_time: 90, reservation: s}]
"""
    yaml_path, json_path = tmp_path / "s.yaml", tmp_path / "s.json"
    yaml_path.write_text(text)
    json_path.write_text(json.dumps(yaml.safe_load(text)))
    from_yaml, from_json = load_state(yaml_path), load_state(json_path)
    assert _summary(from_json) == _summary(from_yaml)
    assert [r.hosts for r in from_yaml.reservations] == [(1,), (0,)]
    assert from_yaml.running[0].requested_time == 30.0
    assert from_yaml.jobs[0].reservation == "s"
    assert from_yaml.queues["normal"].max_runtime == 120.0


# -- one broken field at a time -------------------------------------------------------------

BROKEN = {
    "wrong type": (
        "hosts[1].slots",
        'expected an integer, got "four"',
        """\
hosts:
  - {name: a, slots: 4}
  - name: b
    slots: four  # <-
""",
    ),
    "unknown host in running": (
        "running[0].alloc[0].host",
        'unknown host "c"',
        """\
hosts: [{name: a, slots: 4}]
running:
  - id: r1
    alloc:
      - host: c  # <-
        slots: 1
""",
    ),
    "negative capacity": (
        "hosts[0].resources.mem",
        "expected a number >= 0, got -1",
        """\
hosts:
  - name: a
    slots: 4
    resources:
      swp: 10
      mem: -1  # <-
""",
    ),
    "negative slots": (
        "hosts[0].slots",
        "expected an integer >= 0, got -2",
        "hosts:\n  - {name: a, slots: -2}  # <-\n",
    ),
    "wrong type in a mapping of amounts": (
        "hosts[0].resources.swp",
        'expected a number, got "lots"',
        """\
hosts:
  - name: a
    slots: 4
    resources:
      mem: 10
      swp: lots  # <-
""",
    ),
    "duplicate host name": (
        "hosts[2].name",
        'duplicate host "a" (also hosts[0])',
        """\
hosts:
  - {name: a, slots: 4}
  - {name: b, slots: 4}
  - name: a  # <-
    slots: 2
""",
    ),
    "unknown key": (
        "hosts[0].slot",
        'unknown key "slot"; expected one of: name, slots, resources, attributes, status',
        """\
hosts:
  - name: a
    slot: 4  # <-
""",
    ),
    "unknown top-level key": (
        "host",
        'unknown key "host"',
        "queues: {}\nhost: []  # <-\n",
    ),
    "missing required key": (
        "hosts[1]",
        'missing required key "slots"',
        """\
hosts:
  - {name: a, slots: 4}
  - name: b  # <-
    status: ok
""",
    ),
    "bad status": (
        "hosts[0].status",
        'expected one of ok | closed | unavail, got "broken"',
        """\
hosts:
  - name: a
    slots: 4
    status: broken  # <-
""",
    ),
    "duplicate yaml key": (
        "hosts[0].slots",
        'duplicate key "slots"',
        """\
hosts:
  - name: a
    slots: 4
    slots: 8  # <-
""",
    ),
    "tasks and min_tasks both": (
        "jobs[1].min_tasks",
        "give either tasks or min_tasks/max_tasks, not both",
        """\
jobs:
  - {id: 1, tasks: 2}
  - id: 2
    tasks: 2
    min_tasks: 1  # <-
""",
    ),
    "min_tasks above max_tasks": (
        "jobs[0].max_tasks",
        "max_tasks (2) is less than min_tasks (4)",
        "jobs:\n  - id: 1\n    min_tasks: 4\n    max_tasks: 2  # <-\n",
    ),
    "zero tasks": (
        "jobs[0].tasks",
        "expected an integer >= 1, got 0",
        "jobs:\n  - id: 1\n    tasks: 0  # <-\n",
    ),
    "float job id": (
        "jobs[0].id",
        "expected an integer or a string, got 1.5",
        "jobs:\n  - id: 1.5  # <-\n",
    ),
    "duplicate job id across running and jobs": (
        "jobs[0].id",
        'duplicate job id "7" (also running[0])',
        """\
hosts: [{name: a, slots: 4}]
running:
  - {id: "7", alloc: [{host: a, slots: 1}]}
jobs:
  - id: 7  # <-
""",
    ),
    "running over slot capacity": (
        "running[1].alloc[0].slots",
        'running work holds 5 slots on host "a" but there are only 4',
        """\
hosts: [{name: a, slots: 4}]
running:
  - {id: r1, alloc: [{host: a, slots: 3}]}
  - id: r2
    alloc:
      - host: a
        slots: 2  # <-
""",
    ),
    "running over resource capacity": (
        "running[0].alloc[0].resources.mem",
        'running work holds 600 mem on host "a" but there are only 500',
        """\
hosts: [{name: a, slots: 4, resources: {mem: 500}}]
running:
  - id: r1
    alloc:
      - host: a
        slots: 1
        resources: {mem: 600}  # <-
""",
    ),
    "running over a shared total": (
        "running[0].shared.lic",
        'running work holds 3 of shared "lic" but there are only 2',
        """\
hosts: [{name: a, slots: 4}]
shared: {lic: {total: 2}}
running:
  - id: r1
    alloc: [{host: a, slots: 1}]
    shared:
      lic: 3  # <-
""",
    ),
    "unknown resource in running": (
        "running[0].alloc[0].resources.gpus",
        'unknown resource "gpus"',
        """\
hosts: [{name: a, slots: 4, resources: {mem: 500}}]
running:
  - id: r1
    alloc:
      - host: a
        slots: 1
        resources:
          gpus: 1  # <-
""",
    ),
    "host lacks the resource running work holds": (
        "running[0].alloc[0].resources.mem",
        'host "b" has no "mem"',
        """\
hosts: [{name: a, slots: 4, resources: {mem: 500}}, {name: b, slots: 4}]
running:
  - id: r1
    alloc:
      - host: b
        slots: 1
        resources:
          mem: 1  # <-
""",
    ),
    "unknown queue in preempts": (
        "queues.high.preempts[1]",
        'unknown queue "nromal"',
        """\
queues:
  normal: {priority: 30}
  low: {priority: 10}
  high:
    priority: 50
    preempts:
      - low
      - nromal  # <-
""",
    ),
    "limit without slots, jobs or resources": (
        "limits[0]",
        'limit "l1" sets none of slots, jobs, resources',
        "limits:\n  - name: l1  # <-\n    users: [alice]\n",
    ),
    "limit on an unknown resource": (
        "limits[0].resources.gpus",
        'unknown resource "gpus"',
        """\
hosts: [{name: a, slots: 4, resources: {mem: 500}}]
limits:
  - name: l1
    resources:
      gpus: 1  # <-
""",
    ),
    "host resource declared non-consumable": (
        "hosts[0].resources.gpu",
        '"gpu" is declared boolean at resources.gpu, not a consumable host resource',
        """\
resources:
  gpu: {kind: boolean}
hosts:
  - name: a
    slots: 4
    resources:
      gpu: 1  # <-
""",
    ),
    "attribute type clash between hosts": (
        "hosts[1].attributes.type",
        '"type" is a string at hosts[0].attributes.type, but a number here',
        """\
hosts:
  - {name: a, slots: 4, attributes: {type: X86_64}}
  - name: b
    slots: 4
    attributes:
      type: 86  # <-
""",
    ),
    "attribute clashing with a declaration": (
        "hosts[0].attributes.cpuf",
        '"cpuf" is declared numeric at resources.cpuf, not a string',
        """\
resources: {cpuf: {kind: numeric}}
hosts:
  - name: a
    slots: 4
    attributes:
      cpuf: fast  # <-
""",
    ),
    "yaml syntax error": (
        None,
        "YAML syntax error",
        """\
hosts:
  - name: a
    slots: 4: 5  # <-
""",
    ),
    "top level is a list": (None, "expected a mapping, got a list", "- a  # <-\n- b\n"),
}


@pytest.mark.parametrize(("path", "message", "text"), BROKEN.values(), ids=BROKEN.keys())
def test_broken_field_is_located(tmp_path: Path, path: str | None, message: str, text: str) -> None:
    err, file = _load_error(tmp_path, text)
    line = _marked_line(text)
    assert (err.path, err.line) == (path, line)
    assert message in err.message
    assert err.source == str(file)
    assert err.text == text.splitlines()[line - 1]
    assert str(err).startswith(f"{file}:{line}:{err.column}: ")
    assert isinstance(err, ValueError)


def test_column_points_at_the_value_or_the_key(tmp_path: Path) -> None:
    err, _ = _load_error(tmp_path, "hosts:\n  - {name: a, slots: four, bogus: 1}\n")
    assert err.path == "hosts[0].slots"
    assert err.text is not None
    assert err.column is not None
    assert err.text[err.column - 1 :].startswith("four")
    err, _ = _load_error(tmp_path, "hosts:\n  - {name: a, slots: 4, bogus: 1}\n")
    assert err.path == "hosts[0].bogus"
    assert err.text is not None
    assert err.column is not None
    assert err.text[err.column - 1 :].startswith("bogus")


def test_a_compound_total_the_task_count_contradicts_points_at_the_requirement(
    tmp_path: Path,
) -> None:
    """``tasks: 3`` beside a compound of 4 tasks: the error has the requirement's line
    and a column, with the caret under its first character (it had a line only)."""
    text = 'hosts: [{name: a, slots: 4}]\njobs:\n  - {id: j1, tasks: 3, resreq: " 2*{-} + 2*{-}"}\n'
    err, file = _load_error(tmp_path, text)
    assert "compound requirement totals 4" in err.message
    assert (err.path, err.line) == ("jobs[0].resreq", 3)
    assert err.text is not None
    assert err.column is not None
    assert err.text[err.column - 1 :].startswith("2*{-} + 2*{-}")
    assert str(err).startswith(f"{file}:3:{err.column}: ")


def test_message_format(tmp_path: Path) -> None:
    err, file = _load_error(tmp_path, "hosts:\n  - name: a\n    slots: four\n")
    assert str(err) == (
        f'{file}:3:12: hosts[0].slots: expected an integer, got "four"\n'
        "      slots: four\n"
        "             ^"
    )


# -- JSON -------------------------------------------------------------------------------------

JSON_BROKEN = {
    "wrong type": (
        "hosts[1].slots",
        '"four"',
        {"hosts": [{"name": "a", "slots": 4}, {"name": "b", "slots": "four"}]},
    ),
    "unknown host in running": (
        "running[0].alloc[0].host",
        '"nowhere"',
        {
            "hosts": [{"name": "a", "slots": 4}],
            "running": [{"id": 1, "alloc": [{"host": "nowhere", "slots": 1}]}],
        },
    ),
    "negative amount": ("shared.lic.total", "-1", {"shared": {"lic": {"total": -1}}}),
}


@pytest.mark.parametrize(("path", "needle", "data"), JSON_BROKEN.values(), ids=JSON_BROKEN.keys())
def test_json_errors_are_located(tmp_path: Path, path: str, needle: str, data: Any) -> None:
    text = json.dumps(data, indent="\t")  # tabs: JSON allows them, YAML does not
    err, file = _load_error(tmp_path, text, "state.json")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)
    assert (err.path, err.line, err.source) == (path, line, str(file))
    assert str(err).startswith(f"{file}:{line}:")


def test_yaml_error_names_where_the_unclosed_part_starts(tmp_path: Path) -> None:
    text = "hosts:\n  - {name: a, slots: 4}\n  - {name: b, slots: 4\njobs: []\n"
    err, _ = _load_error(tmp_path, text)
    assert err.line == 4
    assert "flow mapping that starts at line 3" in err.message


def test_json_syntax_error(tmp_path: Path) -> None:
    err, file = _load_error(tmp_path, '{"hosts": [\n  {"name": "a" "slots": 4}\n]}\n', "s.json")
    assert (err.line, err.column, err.path) == (2, 16, None)
    assert str(err).startswith(f"{file}:2:16: JSON syntax error")


def test_state_from_text_json() -> None:
    state = state_from_text('{"hosts": [{"name": "a", "slots": 2}]}', "x.json", "json")
    assert state.hosts.names == ["a"]
    assert state.source == "x.json"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("state.txt", "hosts: []", "unknown file type"),
        ("missing.yaml", None, "cannot read the file"),
        ("empty.yaml", "", "the document is empty"),
    ],
)
def test_file_problems(tmp_path: Path, name: str, content: str | None, message: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(StateError, match=message) as info:
        load_state(path)
    assert info.value.source == str(path)


# -- defaults and normalisation -----------------------------------------------------------------


def test_job_defaults_and_task_ranges() -> None:
    state = state_from_text(
        "jobs:\n  - id: 1\n  - {id: b, min_tasks: 3}\n  - {id: c, max_tasks: 5}\n"
        "  - {id: d, min_tasks: 2, max_tasks: 4, user: u, queue: q, project: p}\n"
    )
    first = state.jobs[0]
    assert (first.id, first.user, first.queue, first.project) == (
        "1",
        "nobody",
        "normal",
        "default",
    )
    assert (first.resreq, first.submit_time, first.runtime, first.order) == ("", 0.0, None, 0)
    ranges = [(j.min_tasks, j.max_tasks) for j in state.jobs]
    assert ranges == [(1, 1), (3, 3), (1, 5), (2, 4)]
    assert state.queue_priority("q") == 0


def test_catalog_inference_and_declarations() -> None:
    state = (
        ClusterBuilder()
        .resource("scratch", "consumable", "per_host")
        .host("a", slots=2, mem=100, scratch=10, type="X86_64", fast=True, attributes={"cpuf": 2})
        .shared("lic", 4)
        .build()
    )
    cat = state.catalog
    kinds = {name: cat[name].kind for name in cat}
    assert kinds == {
        "slots": ResourceKind.CONSUMABLE,
        "hname": ResourceKind.STRING,
        "scratch": ResourceKind.CONSUMABLE,
        "mem": ResourceKind.CONSUMABLE,
        "type": ResourceKind.STRING,
        "fast": ResourceKind.BOOLEAN,
        "cpuf": ResourceKind.NUMERIC,
        "lic": ResourceKind.SHARED,
    }
    assert cat["scratch"].reservation is Reservation.PER_HOST
    assert cat["mem"].reservation is Reservation.PER_TASK
    assert cat["lic"].reservation is Reservation.PER_JOB


def test_yaml_exponent_floats_are_numbers() -> None:
    state = state_from_text("hosts:\n  - {name: a, slots: 1, resources: {mem: 1e6}}\n")
    assert state.hosts.capacity["mem"][0] == 1e6


def test_state_from_dict_error_has_path_but_no_line() -> None:
    with pytest.raises(StateError) as info:
        state_from_dict({"hosts": [{"name": "a", "slots": "x"}]}, "<test>")
    assert (info.value.path, info.value.line, info.value.source) == (
        "hosts[0].slots",
        None,
        "<test>",
    )


def test_builder_dict_round_trips_through_yaml() -> None:
    builder = (
        ClusterBuilder()
        .hosts(3, slots=4, mem=1000, type="X86_64")
        .shared("lic", 2)
        .queue("high", priority=50, preempts=["normal"])
        .queue("normal", priority=30)
        .limit("l1", users=["alice"], per_host=True, slots=2)
        .running("r1", on={"h0": 2}, rusage={"mem": 100}, shared={"lic": 1})
        .job("j1", 2, resreq="rusage[mem=10]", user="alice")
    )
    from_text = state_from_text(yaml.safe_dump(builder.to_dict()))
    assert _summary(from_text) == _summary(builder.build())
    assert builder.build().held("mem").tolist() == [200.0, 0.0, 0.0]  # used is in units


# -- resource requirement checks ------------------------------------------------------------------

CHECKED = """\
hosts: [{name: a, slots: 4, resources: {mem: 10}, attributes: {ok: true, type: X86_64}}]
running:
  - {id: r1, alloc: [{host: a, slots: 2}], resreq: "rusage[mem=1]"}
jobs:
  - {id: 1, tasks: 3, resreq: "select[ok]"}
  - {id: 2}
  - id: 3
    min_tasks: 2
    max_tasks: 4
    resreq: "select[type==X86_64 &&]"  # <-
"""


def _checker(calls: list[tuple[str, int, int]]) -> Any:
    def check(resreq: str, low: int, high: int) -> None:
        calls.append((resreq, low, high))
        if resreq.endswith("&&]"):
            raise ResreqSyntaxError("expected an expression", column=22, text=resreq)

    return check


def test_check_resreq_errors_point_into_the_requirement(tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    path = tmp_path / "s.yaml"
    path.write_text(CHECKED)
    with pytest.raises(StateError) as info:
        load_state(path, check_resreq=_checker(calls))
    err = info.value
    assert calls == [
        ("rusage[mem=1]", 2, 2),
        ("select[ok]", 3, 3),
        ("select[type==X86_64 &&]", 2, 4),
    ]
    # A one-line requirement: the column is mapped into the file line, under the bad token.
    assert (err.path, err.line) == ("jobs[2].resreq", _marked_line(CHECKED))
    assert err.column is not None
    assert err.text is not None
    assert err.text[err.column - 1 :].startswith('&]"')
    assert str(err).endswith(err.text + "\n" + " " * (err.column + 1) + "^")


def test_loading_checks_requirements_against_the_catalog_by_default() -> None:
    """Issue 2: a job's requirement naming an unknown resource refuses the whole state."""
    text = CHECKED.replace("select[ok]", "select[foo>1]").replace(" &&]", "]")
    with pytest.raises(StateError) as info:
        state_from_text(text, "s.yaml")
    err = info.value
    assert (err.path, err.line) == ("jobs[0].resreq", 5)
    assert err.column is not None
    assert err.text is not None
    assert err.text[err.column - 1 :].startswith("foo>1]")
    assert "unknown resource 'foo'" in str(err)


def test_compound_job_without_tasks_takes_its_total() -> None:
    """A compound requirement fixes its own task count when the job gives none."""
    text = "hosts: [{name: a, slots: 4}]\njobs: [{id: 1, resreq: '2*{-} + 1*{-}'}]\n"
    state = state_from_text(text, "s.yaml")
    assert not state.jobs[0].tasks_given
    with pytest.raises(StateError, match="totals 3"):
        state_from_text(text.replace("id: 1,", "id: 1, tasks: 2,"), "s.yaml")


def test_validate_requirements_on_a_built_state() -> None:
    state = state_from_text(CHECKED.replace(" &&]", "]"), "s.yaml")
    calls: list[tuple[str, int, int]] = []
    validate_requirements(state, _checker(calls))
    assert len(calls) == 3

    def reject(resreq: str, low: int, high: int) -> None:
        raise InputError("no")

    with pytest.raises(StateError) as info:
        validate_requirements(state, reject)
    assert (info.value.path, info.value.source) == ("running[0].resreq", "s.yaml")


def test_used_is_filled_from_running() -> None:
    """What running work holds, read in each resource's own unit (``used`` counts in
    units of its resolution)."""
    state = load_state(EXAMPLE)
    i = state.hosts.index["node01"]
    assert state.held("slots")[i] == 8
    assert state.held("mem")[i] == 16000
    assert state.free("mem")[i] == state.hosts.capacity["mem"][i] - 16000
    assert np.all(state.held("swp") == 0)


# -- issue 9: lenient loading ---------------------------------------------------------------

LENIENT_HEAD = """\
hosts:
  - {"name": "h0", "slots": 4, "resources": {"mem": 100}}
running:
  - {"id": "r1", "alloc": [{"host": "h0", "slots": 1}]}
jobs:
  - {"id": "ok1", "tasks": 2}
"""

# A bad job entry: (the entry as YAML flow text — JSON is YAML —, the path of its error,
# words of the message, the id the invalid job is known by)
BAD_JOBS: dict[str, tuple[str, str, str, str]] = {
    "resreq syntax": ('{"id": "b", "resreq": "select[mem>"}', "jobs[1].resreq", "expected", "b"),
    "resreq unknown resource": (
        '{"id": "b", "resreq": "select[foo>1]"}',
        "jobs[1].resreq",
        "unknown resource 'foo'",
        "b",
    ),
    "rusage slots": (
        '{"id": "b", "resreq": "rusage[slots=2]"}',
        "jobs[1].resreq",
        "task count",
        "b",
    ),
    "compound contradicts tasks": (
        '{"id": "b", "tasks": 2, "resreq": "2*{-} + 1*{-}"}',
        "jobs[1].resreq",
        "totals 3",
        "b",
    ),
    "tasks wrong type": (
        '{"id": "b", "tasks": "two"}',
        "jobs[1].tasks",
        "expected an integer",
        "b",
    ),
    "tasks zero": ('{"id": "b", "tasks": 0}', "jobs[1].tasks", ">= 1", "b"),
    "unknown key": ('{"id": "b", "colour": "red"}', "jobs[1].colour", 'unknown key "colour"', "b"),
    "user wrong type": ('{"id": "b", "user": ["x"]}', "jobs[1].user", "expected a string", "b"),
    "missing id": ('{"tasks": 1}', "jobs[1]", 'missing required key "id"', "jobs[1]"),
    "id wrong type": ('{"id": 1.5}', "jobs[1].id", "expected", "jobs[1]"),
    "not a mapping": ("7", "jobs[1]", "expected a mapping", "jobs[1]"),
    "id of running work": ('{"id": "r1"}', "jobs[1].id", "duplicate job id", "r1"),
    "id of an earlier job": ('{"id": "ok1"}', "jobs[1].id", "(also jobs[0])", "ok1"),
    "tasks and min_tasks": (
        '{"id": "b", "tasks": 2, "min_tasks": 1}',
        "jobs[1].min_tasks",
        "not both",
        "b",
    ),
    "min above max": (
        '{"id": "b", "min_tasks": 3, "max_tasks": 2}',
        "jobs[1].max_tasks",
        "less than",
        "b",
    ),
}


def _lenient_doc(bad: str, fmt: str) -> str:
    yaml_text = LENIENT_HEAD + f"  - {bad}  # <-\n" + '  - {"id": "ok2", "resreq": "mem>1"}\n'
    if fmt == "yaml":
        return yaml_text
    return json.dumps(yaml.safe_load(yaml_text), indent=2)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize(("bad", "path", "words", "name"), BAD_JOBS.values(), ids=BAD_JOBS.keys())
def test_lenient_leaves_out_a_bad_job_with_the_strict_error(
    tmp_path: Path, fmt: str, bad: str, path: str, words: str, name: str
) -> None:
    """issue 9: with lenient=True a malformed job entry (decoding, id, task counts,
    requirement) is left out with exactly the error a strict load raises (file, line,
    column, path, caret); the other jobs load, keeping their file positions."""
    text = _lenient_doc(bad, fmt)
    file = tmp_path / f"state.{fmt}"
    file.write_text(text)
    with pytest.raises(StateError) as info:
        load_state(file)
    strict = info.value
    assert strict.path == path
    assert words in strict.message
    state, invalid = load_state(file, lenient=True)
    assert [(j.id, j.order) for j in state.jobs] == [("ok1", 0), ("ok2", 2)]
    (job,) = invalid
    assert (job.id, job.order) == (name, 1)
    assert str(job.error) == str(strict)
    assert job.message == str(strict).splitlines()[0]
    column = f":{strict.column}" if strict.column is not None else ""
    assert job.message.startswith(f"{file}:{strict.line}{column}: {path}: ")
    if fmt == "yaml":
        assert strict.line == _marked_line(text)
    assert (job.entry is None) == (bad == "7")


def test_lenient_duplicate_key_in_a_job_is_that_jobs_error(tmp_path: Path) -> None:
    """issue 9: a YAML duplicate key inside a job entry makes that job invalid; one
    outside the jobs still fails the whole file."""
    text = LENIENT_HEAD + "  - id: dk\n    user: a\n    user: b\n"
    state, (job,) = state_from_text(text, "s.yaml", lenient=True)
    assert [j.id for j in state.jobs] == ["ok1"]
    assert (job.id, job.error.path, job.error.line) == ("dk", "jobs[1].user", 9)
    assert 'duplicate key "user"' in job.message
    with pytest.raises(StateError, match="duplicate key"):
        state_from_text(text.replace('"slots": 4,', '"slots": 4, "slots": 2,'), lenient=True)


@pytest.mark.parametrize(
    ("text", "path", "column"),
    [
        ('{"hosts": [{"name": "a", "slots": 4, "slots": 5}]}', "hosts[0].slots", 38),
        ('{"hosts": [], "hosts": [{"name": "a", "slots": 1}]}', "hosts", 15),
        ('{"hosts": [{"name": "a", "slots": 1, "resources": {"m": 1, "m": 1}}]}', None, 60),
        ('{"jobs": [{"id": 1, "user": "x", "user": "x"}]}', "jobs[0].user", 34),
    ],
)
def test_json_duplicate_keys_are_refused(
    tmp_path: Path, text: str, path: str | None, column: int
) -> None:
    """Issue 10 (Silent acceptance): a JSON key written twice in one object was accepted
    (the last kept, silently); it is refused like YAML's, at its second place, even when
    both values are equal and the document is otherwise valid."""
    file = tmp_path / "s.json"
    file.write_text(text)
    with pytest.raises(StateError, match="duplicate key") as caught:
        load_state(file)
    err = caught.value
    assert (err.line, err.column) == (1, column)
    if path is not None:
        assert err.path == path
    assert file.read_text() == text


def test_json_lenient_duplicate_key_in_a_job_is_that_jobs_error() -> None:
    """Issue 10 (Silent acceptance): with --lenient, a JSON duplicate key inside a job
    entry makes that job invalid (as in YAML); one outside the jobs fails the file."""
    data = {"hosts": [{"name": "h0", "slots": 4}], "jobs": [{"id": "ok1"}, {"id": "dk"}]}
    text = json.dumps(data).replace('{"id": "dk"}', '{"id": "dk", "user": "a", "user": "b"}')
    state, (job,) = state_from_text(text, "s.json", "json", lenient=True)
    assert [j.id for j in state.jobs] == ["ok1"]
    assert (job.id, job.error.path) == ("dk", "jobs[1].user")
    assert 'duplicate key "user"' in job.message
    bad_host = text.replace('"slots": 4', '"slots": 4, "slots": 4')
    with pytest.raises(StateError, match="duplicate key"):
        state_from_text(bad_host, "s.json", "json")
    with pytest.raises(StateError, match="duplicate key"):
        state_from_text(bad_host, "s.json", "json", lenient=True)


NOT_A_JOB_ERROR = {
    "host slots": ('"slots": 4,', '"slots": "four",', "hosts[0].slots"),
    "unknown host key": ('"slots": 4,', '"slots": 4, "colour": 1,', "hosts[0].colour"),
    "running on an unknown host": ('"host": "h0"', '"host": "nope"', "running[0].alloc[0].host"),
    "running resreq": ('"slots": 1}]}', '"slots": 1}], "resreq": "foo>1"}', "running[0].resreq"),
    "jobs not a list": ('jobs:\n  - {"id": "ok1", "tasks": 2}\n', "jobs: 5\nx:\n", "jobs"),
}


@pytest.mark.parametrize(("old", "new", "path"), NOT_A_JOB_ERROR.values(), ids=NOT_A_JOB_ERROR)
def test_lenient_still_fails_on_errors_outside_job_entries(old: str, new: str, path: str) -> None:
    """issue 9: a problem outside the job entries (hosts, running work, the jobs list
    itself) fails the file in both modes, even when a job entry is bad too (which the
    strict load may report first)."""
    text = LENIENT_HEAD.replace(old, new) + '  - {"id": "bad", "tasks": 0}\n'
    assert new in text
    with pytest.raises(StateError):
        state_from_text(text, "s.yaml")
    with pytest.raises(StateError) as lenient:
        state_from_text(text, "s.yaml", lenient=True)
    assert lenient.value.path == path
    assert lenient.value.line is not None
    with pytest.raises(StateError) as strict:  # without the bad job: the same error
        state_from_text(text.replace('  - {"id": "bad", "tasks": 0}\n', ""), "s.yaml")
    assert str(strict.value) == str(lenient.value)


def test_lenient_fails_on_problems_checked_after_the_jobs() -> None:
    """issue 9: checks the strict load makes after the job checks (a queue preempting
    an unknown queue, a limit setting nothing) still fail a lenient load."""
    for extra, path in [
        ("queues: {q: {preempts: [nope]}}\n", "queues.q.preempts[0]"),
        ("limits: [{name: l}]\n", "limits[0]"),
    ]:
        text = LENIENT_HEAD + '  - {"id": "ok1"}\n' + extra
        with pytest.raises(StateError) as info:
            state_from_text(text, "s.yaml", lenient=True)
        assert info.value.path == path


LATE = """\
hosts: [{name: h0, slots: 4}]
now: 100
running:
  - {id: r1, alloc: [{host: h0, slots: 1}], start_time: 100}
jobs:
  - {id: ok1, submit_time: 100}
  - {id: late, submit_time: 2e3}  # <-
"""


def test_a_snapshot_holds_nothing_after_its_now() -> None:
    """A pending job submitted, or running work started, after the state's ``now``
    would let a session start a job before it exists: a located error naming the
    value as written (``2e3``). At ``now`` itself both are whole."""
    with pytest.raises(StateError) as info:
        state_from_text(LATE, "s.yaml")
    err = info.value
    assert (err.path, err.line) == ("jobs[1].submit_time", _marked_line(LATE))
    assert "2e3 is after the snapshot's now (100): a snapshot holds only jobs submitted" in (
        err.message
    )
    started = LATE.replace("start_time: 100", "start_time: 100.5")
    with pytest.raises(StateError) as info:
        state_from_text(started.replace("2e3", "50"), "s.yaml")
    assert info.value.path == "running[0].start_time"
    assert "100.5 is after the snapshot's now (100)" in info.value.message
    state = state_from_text(LATE.replace("2e3", "100"), "s.yaml")
    assert state.later_than(100) is None
    assert state.later_than(99) == "job 'ok1' is submitted at 100"


def test_lenient_leaves_out_a_job_submitted_after_now_as_a_strict_load_says() -> None:
    """A lenient load leaves the late job out with the strict load's very error: the
    value as written (``2e3``, not ``2000.0``) also for an entry after the first."""
    with pytest.raises(StateError) as info:
        state_from_text(LATE, "s.yaml")
    state, (job,) = state_from_text(LATE, "s.yaml", lenient=True)
    assert [j.id for j in state.jobs] == ["ok1"]
    assert (job.id, job.order) == ("late", 1)
    assert str(job.error) == str(info.value)


def test_lenient_reports_every_bad_entry_in_file_order() -> None:
    """issue 9: several bad entries are each reported, in file order; an entry left out
    still claims its id, so a later entry with the same id is a duplicate."""
    text = LENIENT_HEAD + (
        '  - {"id": "x", "tasks": 0}\n'
        '  - {"id": "y"}\n'
        '  - {"id": "x"}\n'
        "  - 7\n"
        '  - {"id": "z", "resreq": "select[foo>1]"}\n'
    )
    state, invalid = state_from_text(text, "s.yaml", lenient=True)
    assert [(j.id, j.order) for j in state.jobs] == [("ok1", 0), ("y", 2)]
    assert [(j.id, j.order, j.error.path) for j in invalid] == [
        ("x", 1, "jobs[1].tasks"),
        ("x", 3, "jobs[3].id"),
        ("jobs[4]", 4, "jobs[4]"),
        ("z", 5, "jobs[5].resreq"),
    ]
    assert "(also jobs[1])" in invalid[1].message


def test_lenient_on_a_good_file_is_the_strict_load(tmp_path: Path) -> None:
    """issue 9: a well-formed file loads the same either way, with nothing left out."""
    state, invalid = load_state(EXAMPLE, lenient=True)
    strict = load_state(EXAMPLE)
    assert invalid == ()
    assert state.jobs == strict.jobs
    assert state.hosts.names == strict.hosts.names
    path = tmp_path / "example.json"
    path.write_text(json.dumps(yaml.safe_load(EXAMPLE.read_text())))
    state, invalid = load_state(path, lenient=True)
    assert invalid == ()
    assert state.jobs == strict.jobs


def test_lenient_from_a_dict_has_a_path_but_no_line() -> None:
    """issue 9: state_from_dict(lenient=True): errors keep their path (no text: no line)."""
    doc = ClusterBuilder().host("h0", 2).job("a").to_dict()
    doc["jobs"].append({"id": "b", "tasks": "two"})
    state, (job,) = state_from_dict(doc, "<d>", lenient=True)
    assert [j.id for j in state.jobs] == ["a"]
    assert (job.id, job.error.path, job.error.line) == ("b", "jobs[1].tasks", None)
    assert job.message == '<d>: jobs[1].tasks: expected an integer or null, got "two"'
