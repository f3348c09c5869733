"""The ``priority`` picker (issue 25 contract): the scheduler's own job priority
(``jobs[].priority``) high first, then submit time, then file order, within the queue's
priority; queues of equal priority merged by the same key; a job without a priority
counts 0. Through sessions, the core's default picker, threads and ``xce schedule``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from builders import ClusterBuilder
from flow_states import by_id, flow_doc, flow_state, pending, planned, ran
from xce.alloc import Decision, Dispatched, PendReason
from xce.cli.main import app
from xce.cluster import ClusterState, PendingJob
from xce.core import JobSubmitted, SchedulerCore, Session

Job = tuple[str, str, float, float | None]  # id, queue, submit time, priority (None: none)


def state_of(
    queues: dict[str, int], jobs: list[Job], *, slots: int = 100, queue_pickers: bool = False
) -> ClusterState:
    """One host of ``slots``; the jobs in file order. ``queue_pickers``: each declared
    queue names the priority picker (else the state's default picker is priority)."""
    b = ClusterBuilder().host("h0", slots=slots)
    if not queue_pickers:
        b.picker("priority")
    for name, prio in queues.items():
        b.queue(name, priority=prio, picker="priority" if queue_pickers else None)
    for job_id, queue, submit, _ in jobs:
        b.job(job_id, queue=queue, submit_time=submit)
    extra = {j: {"priority": p} for j, _, _, p in jobs if p is not None}
    return flow_state(b, extra)


def order(decisions: tuple[Decision, ...]) -> list[str]:
    return [d.job for d in decisions]


# (declared queues {name: priority}, jobs in file order, expected order)
ORDERS: dict[str, tuple[dict[str, int], list[Job], list[str]]] = {
    "priority high first": (
        {},
        [("a", "normal", 0, 1), ("b", "normal", 0, 5), ("c", "normal", 0, 3)],
        ["b", "c", "a"],
    ),
    "priority beats submit time": (
        {},
        [("early", "normal", 0, 1), ("late", "normal", 9, 2)],
        ["late", "early"],
    ),
    "equal priority: submit time": (
        {},
        [("a", "normal", 3, 5), ("b", "normal", 1, 5), ("c", "normal", 2, 5)],
        ["b", "c", "a"],
    ),
    "equal priority and submit time: file order": (
        {},
        [("c", "normal", 1, 5), ("a", "normal", 1, 5), ("b", "normal", 1, 5)],
        ["c", "a", "b"],
    ),
    "no priority counts 0": (
        {},
        [("none", "normal", 0, None), ("neg", "normal", 0, -1), ("pos", "normal", 0, 1)],
        ["pos", "none", "neg"],
    ),
    "no priority ties with 0 by submit time": (
        {},
        [("zero", "normal", 2, 0), ("none", "normal", 1, None)],
        ["none", "zero"],
    ),
    "fractional priorities": (
        {},
        [("a", "normal", 0, 1.25), ("b", "normal", 0, 1.5), ("c", "normal", 0, 1)],
        ["b", "a", "c"],
    ),
    "huge priorities": (
        {},
        [("a", "normal", 0, 4294967295), ("b", "normal", 0, 4294967296)],
        ["b", "a"],
    ),
    "queue priority first": (
        {"low": 10, "high": 50},
        [("l", "low", 0, 1000), ("h", "high", 5, 0), ("h2", "high", 6, None)],
        ["h", "h2", "l"],
    ),
    "equal-priority queues merge by job priority": (
        {"qa": 30, "qb": 30},
        [("a1", "qa", 0, 1), ("a2", "qa", 5, 9), ("b1", "qb", 1, 5), ("b2", "qb", 0, 0)],
        ["a2", "b1", "a1", "b2"],
    ),
    "merged queues, equal priority: submit time": (
        {"qa": 30, "qb": 30},
        [("a1", "qa", 4, 7), ("b1", "qb", 2, 7), ("a2", "qa", 3, 7)],
        ["b1", "a2", "a1"],
    ),
    "merged queues, equal priority and submit: file order": (
        {"qa": 30, "qb": 30},
        [("b1", "qb", 0, 7), ("a1", "qa", 0, 7), ("b2", "qb", 0, 7)],
        ["b1", "a1", "b2"],
    ),
    "an undeclared queue merges with a declared one of priority 0": (
        {"zero": 0, "top": 5},
        [("u", "adhoc", 0, 3), ("z", "zero", 0, 8), ("t", "top", 0, -4)],
        ["t", "z", "u"],
    ),
}


@pytest.mark.parametrize(("queues", "jobs", "want"), list(ORDERS.values()), ids=list(ORDERS))
@pytest.mark.parametrize("queue_pickers", [False, True], ids=["state default", "per queue"])
@pytest.mark.parametrize("threads", [False, True])
def test_priority_order(
    queues: dict[str, int], jobs: list[Job], want: list[str], queue_pickers: bool, threads: bool
) -> None:
    """Queue priority high first; within it (merging queues of equal priority) job
    priority high first, none counting 0, then submit time, then file order; the same
    whether the state's default picker or each queue names it, and with threads."""
    if queue_pickers:  # an undeclared queue would take the default picker: declare it
        queues = {q: 0 for _, q, _, _ in jobs} | queues
    state = state_of(queues, jobs, queue_pickers=queue_pickers)
    got = Session(state).run(threads=threads).decisions
    assert order(got) == want
    assert all(isinstance(d, Dispatched) for d in got)


def test_session_picker_argument_chooses_priority() -> None:
    """``Session(picker="priority")`` (as ``xce schedule --picker priority``) orders a
    state that names no picker by priority; the default (fcfs) by submit time."""
    jobs: list[Job] = [("a", "normal", 0, 1), ("b", "normal", 1, 9)]
    b = ClusterBuilder().host("h0", slots=10)
    for job_id, queue, submit, _ in jobs:
        b.job(job_id, queue=queue, submit_time=submit)
    state = flow_state(b, {"a": {"priority": 1}, "b": {"priority": 9}})
    assert order(Session(state, picker="priority").run().decisions) == ["b", "a"]
    assert order(Session(state).run().decisions) == ["a", "b"]


def test_mixed_pickers_at_one_priority_merge_by_submit_time() -> None:
    """Queues of one priority merge by job priority only when every one of them orders by
    it; with a fcfs queue beside a priority queue the heads go by submit time (the
    QueueCursor merge_key contract)."""
    b = ClusterBuilder().host("h0", slots=10)
    b.queue("qa", 30, picker="priority").queue("qb", 30, picker="fcfs")
    b.job("a", queue="qa", submit_time=5).job("b", queue="qb", submit_time=1)
    state = flow_state(b, {"a": {"priority": 100}})
    assert order(Session(state).run().decisions) == ["b", "a"]


def test_a_job_that_cannot_start_holds_nobody() -> None:
    """A high-priority job waiting for resources does not hold its queue (as fcfs): the
    lower-priority job behind it runs."""
    b = ClusterBuilder().host("h0", slots=2).picker("priority")
    b.running("r", {"h0": 1}, queue="elsewhere")
    b.job("big", 2).job("small", 1)
    got = by_id(Session(flow_state(b, {"big": {"priority": 10}})).run().decisions)
    pending(got["big"], PendReason.NOT_ENOUGH_SLOTS)
    assert ran(got["small"]) == [0]


@pytest.mark.parametrize(
    ("picker", "big_start", "long_runs"),
    [("priority", 100, False), ("fcfs", 1005, True)],
)
def test_priority_decides_who_is_planned_first(
    picker: str, big_start: float, long_runs: bool
) -> None:
    """Conservative backfill plans in picker order; the session is at 5. r holds h0
    until 100. big (2 tasks, estimate 10, priority 10, submitted later) and long (1
    task, estimate 1000, priority 1). priority: big first, planned at 100; long would
    run over it on h1: RESERVED. fcfs: long first, starts on h1 at 5; big planned when
    it ends, 1005."""
    b = ClusterBuilder().hosts(2, slots=1).at(5).backfill("conservative").picker(picker)
    b.running("r", {"h0": 1}, start_time=0, requested_time=100)
    b.job("long", 1, submit_time=0, requested_time=1000)
    b.job("big", 2, submit_time=5, requested_time=10)
    state = flow_state(b, {"big": {"priority": 10}, "long": {"priority": 1}})
    got = by_id(Session(state).run().decisions)
    assert planned(got["big"]) == big_start
    if long_runs:
        assert ran(got["long"]) == [1]
    else:
        pending(got["long"], PendReason.RESERVED)


def test_core_default_picker_is_the_states() -> None:
    """A SchedulerCore over a state naming ``picker: priority`` orders by it."""
    state = state_of({}, [("a", "normal", 0, 1), ("b", "normal", 1, 2)], slots=1)
    result = SchedulerCore(state).run_session()
    assert [d.job for d in result.dispatched] == ["b"]
    pending(by_id(result.decisions)["a"], PendReason.NOT_ENOUGH_SLOTS)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["qa", "qb", "qc", "undeclared"]),
            st.integers(0, 3),  # submit time: plenty of ties
            st.none() | st.integers(-2, 2),  # priority: plenty of ties, some none
        ),
        max_size=12,
    ),
    st.lists(st.integers(-1, 2), min_size=3, max_size=3),
)
def test_priority_order_is_the_documented_key(
    jobs: list[tuple[str, int, int | None]], prios: list[int]
) -> None:
    """Whatever the queues and ties: the session's order is jobs sorted by queue priority
    (high first), job priority (high first, none as 0), submit time, file order."""
    queues = dict(zip(("qa", "qb", "qc"), prios, strict=True))
    listed: list[Job] = [(f"j{i}", q, s, p) for i, (q, s, p) in enumerate(jobs)]
    state = state_of(queues, listed)
    key = {j: (-queues.get(q, 0), -(p or 0), s, i) for i, (j, q, s, p) in enumerate(listed)}
    assert order(Session(state).run().decisions) == sorted(key, key=key.__getitem__)


# ------------------------------------------------------------------------ xce schedule


def _schedule(path: Path, *args: str) -> Any:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["schedule", str(path), *args])
    return result


@pytest.mark.parametrize("how", ["state", "flag"])
def test_xce_schedule_with_the_priority_picker(tmp_path: Path, how: str) -> None:
    """``xce schedule`` on a state with ``picker: priority`` (or ``--picker priority``):
    one slot, the higher-priority job (submitted later) runs, the other pends."""
    b = ClusterBuilder().host("h0", slots=1)
    if how == "state":
        b.picker("priority")
    b.job("early", submit_time=0).job("urgent", submit_time=10)
    doc = flow_doc(b, {"early": {"priority": 1}, "urgent": {"priority": 50}})
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(doc))
    args = ["--json"] + (["--picker", "priority"] if how == "flag" else [])
    result = _schedule(path, *args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [d["job"] for d in out["dispatched"]] == ["urgent"]
    assert [(p["job"], p["reason"]) for p in out["pending"]] == [("early", "NOT_ENOUGH_SLOTS")]


def test_xce_schedule_refuses_a_bad_priority(tmp_path: Path) -> None:
    """A priority that is not a number is bad input: exit 2, naming the file and
    jobs[0].priority."""
    doc = flow_doc(ClusterBuilder().host("h0", slots=1).job("a"), {"a": {"priority": "high"}})
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = _schedule(path, "--json")
    assert result.exit_code == 2
    assert "jobs[0].priority" in result.output
    assert "state.yaml" in result.output


def test_a_submitted_job_keeps_its_priority() -> None:
    """JobSubmitted of a job with a priority: the core keeps it, so the priority picker
    puts it before an earlier-submitted job of priority 1 (one slot)."""
    core = SchedulerCore(state_of({}, [("a", "normal", 0, 1)], slots=1))
    job = PendingJob("b", "alice", "normal", "default", 1, 1, "", 5.0, None, 0)
    core.apply(JobSubmitted(replace(job, priority=9.0)))
    kept = core.pending("b")
    assert kept is not None
    assert kept.priority == 9.0
    assert [d.job for d in core.run_session().dispatched] == ["b"]
