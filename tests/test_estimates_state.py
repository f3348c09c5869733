"""Runtime estimates in the state file (issue 12): ``requested_time`` on running and
pending jobs, a queue's ``default_runtime`` and ``max_runtime``, and the two rules
planning assumes (:mod:`xce.cluster.estimates`)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from xce.cluster import Queue, load_state, state_from_text
from xce.cluster.estimates import estimate, estimated_end
from xce.core.snapshot import state_to_dict, write_state
from xce.errors import StateError

MARK = "# <-"


def _load_error(tmp_path: Path, text: str) -> tuple[StateError, Path]:
    path = tmp_path / "state.yaml"
    path.write_text(text)
    with pytest.raises(StateError) as info:
        load_state(path)
    return info.value, path


def _marked(text: str) -> int:
    (line,) = [i for i, row in enumerate(text.splitlines(), 1) if MARK in row]
    return line


# -- the rules --------------------------------------------------------------------------

Q_NONE = Queue("q")
Q_DEFAULT = Queue("q", default_runtime=600.0)
Q_MAX = Queue("q", max_runtime=3600.0)
Q_BOTH = Queue("q", default_runtime=600.0, max_runtime=3600.0)


@pytest.mark.parametrize(
    ("requested", "queue", "expected"),
    [
        (100.0, None, 100.0),  # the job's own estimate
        (100.0, Q_NONE, 100.0),
        (100.0, Q_BOTH, 100.0),  # its own, not the queue's default
        (7200.0, Q_MAX, 3600.0),  # capped at MaxTime / RUNLIMIT
        (7200.0, Q_BOTH, 3600.0),
        (0.0, Q_BOTH, 0.0),
        (None, Q_DEFAULT, 600.0),  # DefaultTime
        (None, Q_BOTH, 600.0),
        (None, Q_MAX, 3600.0),  # Slurm: no DefaultTime -> MaxTime
        (None, Q_NONE, math.inf),  # no end: holds its resources for planning
        (None, None, math.inf),
    ],
)
def test_estimate(requested: float | None, queue: Queue | None, expected: float) -> None:
    assert estimate(requested, queue) == expected


@pytest.mark.parametrize(
    ("start", "length", "now", "expected"),
    [
        (0.0, 100.0, 50.0, 100.0),  # still inside its estimate
        (0.0, 100.0, 100.0, 100.0),
        (0.0, 100.0, 250.0, 250.0),  # past its estimate: ends "now"
        (-50.0, math.inf, 10.0, math.inf),  # no estimate: no end
    ],
)
def test_estimated_end(start: float, length: float, now: float, expected: float) -> None:
    assert estimated_end(start, length, now) == expected


# -- in the state file --------------------------------------------------------------------

STATE = """\
hosts: [{name: a, slots: 4}]
queues:
  normal: {priority: 1, default_runtime: 600, max_runtime: 3600.5}
  short: {max_runtime: 60}
running:
  - {id: r1, alloc: [{host: a, slots: 1}], requested_time: 1800}
  - {id: r2, alloc: [{host: a, slots: 1}]}
jobs:
  - {id: j1, requested_time: 7200}
  - {id: j2, queue: short}
"""


def test_estimates_load() -> None:
    state = state_from_text(STATE)
    normal, short = state.queues["normal"], state.queues["short"]
    assert (normal.default_runtime, normal.max_runtime) == (600.0, 3600.5)
    assert (short.default_runtime, short.max_runtime) == (None, 60.0)
    assert [r.requested_time for r in state.running] == [1800.0, None]
    assert [j.requested_time for j in state.jobs] == [7200.0, None]
    j1, j2 = state.jobs
    assert estimate(j1.requested_time, state.queues.get(j1.queue)) == 3600.5
    assert estimate(j2.requested_time, state.queues.get(j2.queue)) == 60.0


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_estimates_round_trip_through_the_snapshot(tmp_path: Path, suffix: str) -> None:
    state = state_from_text(STATE)
    path = tmp_path / f"snap{suffix}"
    write_state(state, path)
    loaded = load_state(path)
    assert state_to_dict(loaded) == state_to_dict(state)
    assert loaded.queues == state.queues
    assert loaded.running == state.running
    assert loaded.jobs == state.jobs
    written = state_to_dict(state)
    assert written["queues"]["normal"]["max_runtime"] == 3600.5
    assert written["running"][0]["requested_time"] == 1800
    assert "requested_time" not in written["running"][1]
    assert "default_runtime" not in written["queues"]["short"]


# Written by the snapshot writer before issue 12 (commit e2ffec5), byte for byte.
BEFORE = """\
resources:
  type:
    kind: string
hosts:
- name: a
  slots: 2
  attributes:
    type: X86
shared: {}
queues:
  normal:
    priority: 3
    preempts: []
limits: []
running:
- id: r1
  user: nobody
  queue: normal
  project: default
  start_time: -5
  alloc:
  - host: a
    slots: 1
    resources: {}
jobs:
- id: j1
  user: nobody
  queue: normal
  project: default
  tasks: 1
  submit_time: 0
  requested_time: 60
"""


def test_a_state_without_the_new_fields_is_written_as_before(tmp_path: Path) -> None:
    state = state_from_text(
        """\
hosts: [{name: a, slots: 2, attributes: {type: X86}}]
queues: {normal: {priority: 3}}
running: [{id: r1, alloc: [{host: a, slots: 1}], start_time: -5}]
jobs: [{id: j1, tasks: 1, requested_time: 60}]
"""
    )
    assert state.queues["normal"] == Queue("normal", 3)
    assert state.running[0].requested_time is None
    assert state.reservations == ()
    path = tmp_path / "snap.yaml"
    write_state(state, path)
    assert path.read_bytes() == BEFORE.encode()


# -- checks: each located --------------------------------------------------------------------

BROKEN = {
    "default_runtime zero": (
        "queues.normal.default_runtime",
        "expected a number > 0, got 0",
        "queues:\n  normal:\n    default_runtime: 0  # <-\n",
    ),
    "max_runtime negative": (
        "queues.normal.max_runtime",
        "expected a number > 0, got -5",
        "queues:\n  normal:\n    max_runtime: -5  # <-\n",
    ),
    "max_runtime too large": (
        "queues.normal.max_runtime",
        "1e16 is too large",
        "queues:\n  normal:\n    max_runtime: 1e16  # <-\n",
    ),
    "max_runtime infinite": (
        "queues.normal.max_runtime",
        ".inf is too large",
        "queues:\n  normal:\n    max_runtime: .inf  # <-\n",
    ),
    "max_runtime not a number": (
        "queues.normal.max_runtime",
        'expected a number or null, got "1h"',
        "queues:\n  normal:\n    max_runtime: 1h  # <-\n",
    ),
    "default above max": (
        "queues.normal.default_runtime",
        "default_runtime (7200.0) is more than max_runtime (3600.0)",
        "queues:\n  normal:\n    default_runtime: 7200  # <-\n    max_runtime: 3600\n",
    ),
    "running requested_time negative": (
        "running[0].requested_time",
        "expected a number >= 0, got -1",
        "hosts: [{name: a, slots: 1}]\nrunning:\n  - id: r1\n    alloc: [{host: a, slots: 1}]\n"
        "    requested_time: -1  # <-\n",
    ),
    "running requested_time nan": (
        "running[0].requested_time",
        ".nan is not a number",
        "hosts: [{name: a, slots: 1}]\nrunning:\n  - id: r1\n    alloc: [{host: a, slots: 1}]\n"
        "    requested_time: .nan  # <-\n",
    ),
}


@pytest.mark.parametrize(("path", "message", "text"), BROKEN.values(), ids=list(BROKEN))
def test_broken_estimates_are_located(tmp_path: Path, path: str, message: str, text: str) -> None:
    err, file = _load_error(tmp_path, text)
    assert err.source == str(file)
    assert err.path == path
    assert message in err.message
    assert err.line == _marked(text)
    line = text.splitlines()[err.line - 1]
    assert err.column == len(line) - len(line.lstrip(" ")) + len(path.rsplit(".", 1)[-1]) + 3
    assert str(err).startswith(f"{file}:{err.line}:{err.column}: {path}: ")


def test_broken_estimates_are_located_in_json(tmp_path: Path) -> None:
    text = '{"queues": {"normal": {"default_runtime": 9, "max_runtime": 5}}}'
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(StateError) as info:
        load_state(path)
    err = info.value
    assert (err.path, err.line, err.column) == ("queues.normal.default_runtime", 1, 43)
    assert "is more than max_runtime" in err.message
