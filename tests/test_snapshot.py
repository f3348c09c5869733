"""Snapshots (issue 4, "Snapshots"; design §4): a state written as a state file loads back
to the same state, replays to identical decisions, keeps running work and the queue and
picker configuration, and never carries the unsatisfiable cache (spec Req 7 AC 2)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from strategies import PROJECTS, QUEUES, TYPES, USERS, Scenario, job_texts, scenarios
from xce.alloc import Decision, JobAllocation
from xce.cluster import (
    ClusterState,
    HostStatus,
    Limit,
    PendingJob,
    Queue,
    load_state,
    state_from_dict,
    state_from_text,
)
from xce.core import (
    Event,
    HostAdded,
    HostChanged,
    JobFinished,
    JobKilled,
    JobStarted,
    JobSubmitted,
    LimitsChanged,
    QueuesChanged,
    SchedulerCore,
    Session,
    SharedChanged,
    state_to_dict,
    write_state,
)
from xce.errors import EventError, StateError

PICKERS = ("fcfs", "strict", "fairshare")
SECTIONS = {"resources", "hosts", "shared", "queues", "limits", "running", "jobs", "picker"}


# -- comparing states and decisions ------------------------------------------------------


def _column(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in values]


def _books(state: ClusterState) -> dict[str, Any]:
    """What ``state_to_dict`` does not show directly: the books running work is charged
    to (recomputed by the loader, kept incrementally by the core), host columns, and the
    pending jobs' relative order."""
    return {
        "used": {k: _column(v) for k, v in state.used.items()},
        "capacity": {k: _column(v) for k, v in state.hosts.capacity.items()},
        "status": state.hosts.status.tolist(),
        "shared_total": dict(state.shared_total),
        "shared_used": dict(state.shared_used),
        "pending": [j.id for j in sorted(state.jobs, key=lambda j: j.order)],
        "default_picker": state.default_picker,
    }


def _values(decisions: tuple[Decision, ...]) -> list[tuple[Any, ...]]:
    """Decisions with ``PendInfo.hosts`` (left out of ``==``) compared too."""
    return [(d, _hosts(d)) for d in decisions]


def _hosts(d: Decision) -> tuple[tuple[str, int], ...]:
    info = getattr(d, "info", None)
    return tuple(sorted(info.hosts.items())) if info is not None else ()


def _assert_reloads_identically(state: ClusterState) -> ClusterState:
    """Issue 4 AC: snapshot -> state_from_dict gives the same snapshot, the same books
    (what running work holds, host columns, shared amounts) and the same job order."""
    snapshot = state_to_dict(state)
    loaded = state_from_dict(snapshot, "<snapshot>")
    assert state_to_dict(loaded) == snapshot
    assert _books(loaded) == _books(state)
    return loaded


def _assert_replays_identically(core: SchedulerCore, loaded: ClusterState) -> None:
    """Issue 4 AC: replaying the snapshot as ``xce schedule`` does (a fresh Session over
    the loaded state) gives the decisions of the core's own next session."""
    expected = core.run_session()
    replayed = Session(loaded).run()
    assert _values(replayed.decisions) == _values(expected.decisions)


# -- states with a queue and picker configuration ------------------------------------------


@st.composite
def configured_states(draw: st.DrawFn) -> ClusterState:
    """A random scenario whose queues name pickers and shares, with a default picker."""
    builder = draw(scenarios()).builder()
    for name, priority in (("normal", 30), ("high", 50)):
        shares = draw(
            st.dictionaries(
                st.sampled_from((*USERS, "default")), st.sampled_from((0, 0.5, 1, 2, 3)), max_size=3
            )
        )
        builder.queue(
            name,
            priority,
            picker=draw(st.none() | st.sampled_from(PICKERS)),
            shares=shares or None,
            preempts=["normal"] if name == "high" and draw(st.booleans()) else (),
        )
    doc = builder.to_dict()
    default = draw(st.none() | st.sampled_from(PICKERS))
    if default is not None:
        doc["picker"] = default
    return state_from_dict(doc, "<configured>")


@given(configured_states())
def test_snapshot_round_trips_and_replays_random_states(state: ClusterState) -> None:
    """Issue 4 AC (property): snapshot -> replay identical — over random states with
    running work, limits, shared resources and per-queue pickers and shares."""
    loaded = _assert_reloads_identically(state)
    _assert_replays_identically(SchedulerCore(state), loaded)


# -- random event sequences ----------------------------------------------------------------

_LIMITS = (
    Limit("alice_slots", users=("alice",), slots=3),
    Limit("one_per_host", per_host=True, slots=1, queues=("high",)),
    Limit("high_jobs", queues=("high",), jobs=1),
    Limit("mem_cap", projects=("p1",), resources={"mem": 2000}),
)


def _session_starts(core: SchedulerCore, data: st.DataObject, now: float) -> list[Event]:
    """Some of a session's dispatched decisions, in decision order (any subset fits:
    each was placed against books charged with all earlier ones)."""
    result = core.run_session(threads=data.draw(st.booleans(), label="threads"))
    chosen = data.draw(st.sets(st.sampled_from(range(len(result.dispatched) or 1))))
    return [
        JobStarted(d.job, d.allocation, time=now)
        for i, d in enumerate(result.dispatched)
        if i in chosen
    ]


def _submitted(core: SchedulerCore, data: st.DataObject, n: int) -> Event:
    text, tasks = data.draw(job_texts(lic="lic" in core.state.shared_total), label="resreq")
    return JobSubmitted(
        PendingJob(
            id=f"n{n}",
            user=data.draw(st.sampled_from(USERS)),
            queue=data.draw(st.sampled_from(QUEUES)),
            project=data.draw(st.sampled_from(PROJECTS)),
            min_tasks=tasks or 1,
            max_tasks=tasks or 1,
            resreq=text,
            submit_time=data.draw(st.integers(0, 20)),
            runtime=data.draw(st.none() | st.integers(1, 100)),
            order=0,
            tasks_given=tasks is not None,
        )
    )


def _capacity_changed(core: SchedulerCore, data: st.DataObject) -> Event:
    """A host's slots or mem, never below what its running work holds."""
    state = core.state
    h = data.draw(st.integers(0, state.hosts.n - 1))
    name = data.draw(st.sampled_from(("slots", "mem")))
    step = 1 if name == "slots" else 250
    value = state.held(name)[h] + step * data.draw(st.integers(0, 6))
    return HostChanged(state.hosts.names[h], capacity={name: float(value)})


def _queues_changed(data: st.DataObject) -> Event:
    queues = {}
    for name, priority in (("normal", 30), ("high", 50)):
        shares = data.draw(st.dictionaries(st.sampled_from(USERS), st.integers(0, 3), max_size=2))
        preempts = ("normal",) if name == "high" and data.draw(st.booleans()) else ()
        picker = data.draw(st.none() | st.sampled_from(PICKERS))
        queues[name] = Queue(name, priority, preempts, picker, shares)
    return QueuesChanged(queues, data.draw(st.none() | st.sampled_from(PICKERS)))


def _next_events(core: SchedulerCore, data: st.DataObject, n: int) -> list[Event]:
    """One drawn step of a driver: valid events only (refusals are tested elsewhere)."""
    state = core.state
    kinds = ["session", "session", "submit", "status", "capacity", "add", "limits", "queues"]
    if state.running:
        kinds += ["finish", "finish"]
    if state.running or state.jobs:
        kinds += ["kill"]
    if "lic" in state.shared_total:
        kinds += ["shared"]
    kind = data.draw(st.sampled_from(kinds), label="event")
    now = float(n)
    if kind == "session":
        return _session_starts(core, data, now)
    if kind == "submit":
        return [_submitted(core, data, n)]
    if kind == "finish":
        return [JobFinished(data.draw(st.sampled_from([r.id for r in state.running])), now)]
    if kind == "kill":
        ids = [r.id for r in state.running] + [j.id for j in state.jobs]
        return [JobKilled(data.draw(st.sampled_from(ids)), now)]
    if kind == "status":
        host = data.draw(st.sampled_from(state.hosts.names))
        return [HostChanged(host, data.draw(st.sampled_from(list(HostStatus))))]
    if kind == "capacity":
        return [_capacity_changed(core, data)]
    if kind == "add":
        resources = {"mem": data.draw(st.sampled_from((0, 1000, 4000)))}
        attributes = {"type": data.draw(st.sampled_from(TYPES)), "fast": data.draw(st.booleans())}
        return [HostAdded(f"x{n}", data.draw(st.integers(0, 6)), resources, attributes)]
    if kind == "shared":
        total = state.shared_held("lic") + data.draw(st.integers(0, 3))
        return [SharedChanged("lic", total)]
    if kind == "limits":
        chosen = data.draw(st.lists(st.sampled_from(_LIMITS), unique=True, max_size=3))
        return [LimitsChanged(tuple(chosen))]
    return [_queues_changed(data)]


@given(scenarios(), st.sampled_from((None, *PICKERS)), st.data())
def test_core_state_after_events_equals_the_state_loaded_from_its_snapshot(
    scenario: Scenario, picker: str | None, data: st.DataObject
) -> None:
    """Issue 4 AC (property): the core's state after a sequence of events equals the state
    loaded from its snapshot — at every session boundary of a random run of sessions,
    starts, finishes, kills, submissions, host, shared, limit and queue changes; and the
    snapshot replays to the decisions the core itself takes next."""
    core = SchedulerCore(scenario.state, picker=picker)
    for n in range(data.draw(st.integers(1, 8), label="steps")):
        core.apply(*_next_events(core, data, n))
        _assert_reloads_identically(core.state)
    _assert_replays_identically(core, _assert_reloads_identically(core.state))


# -- events whose result a snapshot cannot hold ---------------------------------------------


def _small() -> SchedulerCore:
    state = (
        ClusterBuilder()
        .host("h1", 4, mem=1000)
        .shared("lic", 2)
        .queue("normal", 30)
        .queue("high", 50)
        .job("j1", 1)
        .build()
    )
    return SchedulerCore(state)


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(HostChanged("h1", capacity={"slots": 6}), id="slots-6"),
        pytest.param(
            QueuesChanged({"normal": Queue("normal", 1), "high": Queue("high", 2, ("normal",))}),
            id="preempts-known",
        ),
        pytest.param(LimitsChanged((Limit("l", slots=1),)), id="limit-slots"),
        pytest.param(
            HostChanged("h1", capacity={"slots": 2.5}),
            id="fractional-slots",
        ),
        pytest.param(
            QueuesChanged({"normal": Queue("normal", 1, ("nosuch",))}),
            id="preempts-unknown-queue",
        ),
        pytest.param(
            QueuesChanged({"normal": Queue("normal", 1, ("normal",))}),
            id="preempts-itself",
        ),
        pytest.param(
            QueuesChanged({"normal": Queue("normal", 1, shares={"alice": -1})}),
            id="negative-share",
        ),
        pytest.param(
            LimitsChanged((Limit("empty"),)),
            id="limit-sets-nothing",
        ),
        pytest.param(
            LimitsChanged((Limit("l", slots=1), Limit("l", slots=2))),
            id="duplicate-limit-names",
        ),
        pytest.param(
            SharedChanged("lic", math.nan),
            id="nan-shared-total",
        ),
        pytest.param(
            JobStarted("j1", JobAllocation(())),
            id="empty-allocation",
        ),
    ],
)
def test_an_accepted_event_leaves_a_state_its_snapshot_reproduces(event: Event) -> None:
    """Issue 4 AC: the core's state after events equals the state loaded from its
    snapshot — so an event is either refused (EventError, nothing changed) or leaves a
    state the state-file loader accepts and reproduces exactly."""
    core = _small()
    before = (state_to_dict(core.state), _books(core.state))
    try:
        core.apply(event)
    except EventError:
        assert (state_to_dict(core.state), _books(core.state)) == before
        return
    _assert_reloads_identically(core.state)


# -- files ---------------------------------------------------------------------------------


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
@given(configured_states(), st.data())
def test_write_state_and_load_state_round_trip(
    tmp_path: Path, state: ClusterState, data: st.DataObject
) -> None:
    """Issue 4 AC / design §4: write_state to .json, .yaml and .yml and load_state back
    gives the same state (running work the core started included) and the same
    decisions."""
    core = SchedulerCore(state)
    core.apply(*_session_starts(core, data, 3.0))
    expected = core.run_session().decisions
    for suffix in (".json", ".yaml", ".yml"):
        path = tmp_path / f"snapshot{suffix}"
        write_state(core.state, path)
        loaded = load_state(path)
        assert loaded.source == str(path)
        assert state_to_dict(loaded) == state_to_dict(core.state)
        assert _books(loaded) == _books(core.state)
        assert _values(Session(loaded).run().decisions) == _values(expected)


def test_write_state_refuses_an_unknown_file_type(tmp_path: Path) -> None:
    """Design §4: a state file is YAML or JSON by extension; anything else is refused
    before a file is written."""
    with pytest.raises(StateError, match="unknown file type"):
        write_state(_small().state, tmp_path / "state.txt")
    assert list(tmp_path.iterdir()) == []


def test_a_written_yaml_file_reads_as_design_section_4() -> None:
    """Design §4: the snapshot is the documented state-file format — plain mappings and
    lists, whole numbers as integers, status written as a word."""
    core = _small()
    core.apply(HostChanged("h1", HostStatus.CLOSED))
    text = yaml.safe_dump(state_to_dict(core.state), sort_keys=False)
    doc = yaml.safe_load(text)
    assert doc["hosts"] == [
        {"name": "h1", "slots": 4, "resources": {"mem": 1000}, "status": "closed"}
    ]
    assert doc["shared"] == {"lic": {"total": 2}}
    assert doc["jobs"] == [
        {
            "id": "j1",
            "user": "nobody",
            "queue": "normal",
            "project": "default",
            "tasks": 1,
            "submit_time": 0,
        }
    ]


# -- what a snapshot holds, and what it never holds -----------------------------------------


def _keys(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keys(item)


def _cache_state() -> ClusterState:
    """Six identical jobs no host can take (SELECT): one cache insert, five hits."""
    builder = ClusterBuilder().resource("type", "string").host("h1", 2, type="A")
    for i in range(6):
        builder.job(f"j{i}", 1, resreq="select[type==B]", user="alice")
    return builder.job("ok", 1, user="bob").build()


def test_the_unsatisfiable_cache_is_never_written(tmp_path: Path) -> None:
    """Issue 4 AC / spec Req 7 AC 2: a snapshot taken right after a session that filled
    the unsatisfiable cache has no key about it (in the dict or either file format); a
    session after reload starts with an empty cache, and so does the core's next session:
    both count the same misses, inserts and hits as the first session did."""
    core = SchedulerCore(_cache_state())
    first = core.run_session()
    assert first.stats.cache_inserts == 1
    assert first.stats.cache_hits == 5

    snapshot = state_to_dict(core.state)
    assert set(snapshot) <= SECTIONS
    assert not [k for k in _keys(snapshot) if "cache" in k.lower() or "unsat" in k.lower()]
    for suffix in (".json", ".yaml"):
        write_state(core.state, tmp_path / f"s{suffix}")
        text = (tmp_path / f"s{suffix}").read_text().lower()
        assert "cache" not in text
        assert "unsat" not in text

    session = Session(load_state(tmp_path / "s.json"))
    assert len(session.allocator.cache) == 0
    replayed = session.run()
    again = core.run_session()
    for stats in (replayed.stats, again.stats):
        assert (stats.cache_misses, stats.cache_inserts, stats.cache_hits) == (
            first.stats.cache_misses,
            1,
            5,
        )
    assert replayed.decisions == again.decisions == first.decisions


def _configured() -> ClusterState:
    return (
        ClusterBuilder()
        .host("h1", 4, mem=4000, type="A")
        .host("h2", 4, mem=4000, type="B")
        .shared("lic", 3)
        .queue("normal", 30, picker="fairshare", shares={"alice": 2, "bob": 1})
        .queue("high", 50, preempts=["normal"], picker="strict")
        .running(
            "r1",
            on={"h1": 2},
            rusage={"mem": 100},
            shared={"lic": 1},
            user="bob",
            start_time=-600,
            resreq="rusage[mem=100:lic=1]",
            runtime=3600,
        )
        .job("a1", 2, user="alice", submit_time=1)
        .job("b1", 2, user="bob", submit_time=0)
        .job("a2", 2, user="alice", submit_time=2)
        .job("hi1", min_tasks=1, max_tasks=3, queue="high", runtime=60)
        .build()
    )


def test_a_snapshot_holds_running_work_and_the_queue_and_picker_configuration() -> None:
    """Issue 4 AC / design §4: the snapshot includes running work (file-given and started
    by the core: hosts by name, amounts, shared, resreq, start time, runtime), each
    queue's picker, shares and preempts, and the default ``picker``; reloaded, it makes
    the same fairshare and strict decisions."""
    state_doc = state_to_dict(_configured())
    assert "picker" not in state_doc
    core = SchedulerCore(_configured(), picker="strict")
    first = core.run_session()
    started = first.dispatched[0]
    core.apply(JobStarted(started.job, started.allocation, time=42))
    snapshot = state_to_dict(core.state)

    assert snapshot["picker"] == "strict"
    assert snapshot["queues"] == {
        "normal": {
            "priority": 30,
            "preempts": [],
            "picker": "fairshare",
            "shares": {"alice": 2, "bob": 1},
        },
        "high": {"priority": 50, "preempts": ["normal"], "picker": "strict"},
    }
    r1, new = snapshot["running"]
    assert r1 == {
        "id": "r1",
        "user": "bob",
        "queue": "normal",
        "project": "default",
        "start_time": -600,
        "alloc": [{"host": "h1", "slots": 2, "resources": {"mem": 200}}],
        "shared": {"lic": 1},
        "resreq": "rusage[mem=100:lic=1]",
        "runtime": 3600,
    }
    run = core.running(started.job)
    assert run is not None
    assert new["id"] == started.job
    assert new["start_time"] == 42
    assert new["alloc"] == [
        {"host": a.host, "slots": a.slots, "resources": dict(a.resources)} for a in run.alloc
    ]
    assert {j["id"] for j in snapshot["jobs"]} == {j.id for j in core.state.jobs}
    ranged = next(j for j in state_doc["jobs"] if j["id"] == "hi1")
    assert (ranged["min_tasks"], ranged["max_tasks"], ranged["runtime"]) == (1, 3, 60)

    loaded = _assert_reloads_identically(core.state)
    assert loaded.default_picker == "strict"
    assert loaded.queues == core.state.queues
    _assert_replays_identically(core, loaded)


# -- issue 12: runtime estimates and advance reservations ----------------------------------

PLANNING = """\
hosts:
  - {name: h1, slots: 4, attributes: {type: A}}
  - {name: h2, slots: 4, attributes: {type: B}}
  - {name: h3, slots: 4, attributes: {type: A}}
queues:
  normal: {priority: 30, default_runtime: 600, max_runtime: 86400}
  short: {priority: 40, max_runtime: 0.5}
reservations:
  - {name: maint, hosts: [h2], start: 3600, end: 7200}
  - {name: course, select: "type==A", start: -60, end: 1e6, users: [alice], queues: [short]}
running:
  - {id: r1, alloc: [{host: h1, slots: 2}], start_time: -600, requested_time: 1200}
jobs:
  - {id: j1, user: alice, tasks: 2, requested_time: 300, reservation: course}
  - {id: j2, queue: short, tasks: 1}
"""


def test_estimates_and_reservations_reload_identically() -> None:
    """Issue 12: requested times (running and pending), a queue's default_runtime and
    max_runtime, the reservations and a job's reservation survive state_to_dict and
    state_from_dict; the snapshot carries them in the state file's own keys."""
    state = state_from_text(PLANNING)
    loaded = _assert_reloads_identically(state)
    assert loaded.reservations == state.reservations
    assert loaded.queues == state.queues
    assert loaded.running == state.running
    assert loaded.jobs == state.jobs
    doc = state_to_dict(state)
    assert doc["queues"]["short"] == {"priority": 40, "preempts": [], "max_runtime": 0.5}
    assert doc["running"][0]["requested_time"] == 1200
    assert doc["jobs"][0]["reservation"] == "course"
    assert doc["reservations"][1] == {
        "name": "course",
        "select": "type==A",
        "start": -60,
        "end": 1000000,
        "users": ["alice"],
        "queues": ["short"],
    }


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_estimates_and_reservations_survive_write_state(tmp_path: Path, suffix: str) -> None:
    state = state_from_text(PLANNING)
    path = tmp_path / f"snapshot{suffix}"
    write_state(state, path)
    loaded = load_state(path)
    assert state_to_dict(loaded) == state_to_dict(state)
    assert loaded.reservations == state.reservations
    assert [r.hosts for r in loaded.reservations] == [(1,), (0, 2)]
    assert _values(Session(loaded).run().decisions) == _values(Session(state).run().decisions)


def test_a_snapshot_without_estimates_or_reservations_has_no_new_keys() -> None:
    """Issue 12: defaults are left out, so older snapshots are written as before."""
    doc = state_to_dict(_configured())
    assert set(doc) == SECTIONS - {"picker"}
    for queue in doc["queues"].values():
        assert not {"default_runtime", "max_runtime"} & set(queue)
    for item in doc["running"] + doc["jobs"]:
        assert "reservation" not in item
    assert all("requested_time" not in r for r in doc["running"])


def test_an_imported_schedulers_reasons_survive_a_snapshot() -> None:
    """Issue 13: the scheduler a state was imported from and each job's own reason
    from it (free text, not used by scheduling) are written back by a snapshot."""
    text = PLANNING.replace("reservation: course}", "reservation: course, reason: Resources}")
    state = state_from_text("scheduler: Slurm\n" + text)
    assert state.scheduler == "Slurm"
    assert [j.reason for j in state.jobs] == ["Resources", None]
    loaded = _assert_reloads_identically(state)
    assert loaded.scheduler == "Slurm"
    assert loaded.jobs == state.jobs
    doc = state_to_dict(state)
    assert doc["scheduler"] == "Slurm"
    assert doc["jobs"][0]["reason"] == "Resources"
    assert "reason" not in doc["jobs"][1]
