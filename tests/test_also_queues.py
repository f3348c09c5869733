"""A job that may run in several queues (Slurm's ``sbatch -p a,b``): ``jobs[].also_queues``
(issue 25). Each queue's entry is picked in that queue's order; the first that starts
wins, the others step aside; each that waits plans, and its plan is held (Slurm keeps a
reservation per partition); the session gives one decision per job."""

from __future__ import annotations

from typing import Any

import pytest

from xce.alloc import Dispatched, Pending, PendReason
from xce.cluster import state_from_dict
from xce.core import SchedulerCore
from xce.core.events import JobStarted
from xce.core.session import Session
from xce.core.snapshot import state_to_dict

HOSTS = [
    {"name": "a", "slots": 4, "attributes": {"pa": True}},
    {"name": "b", "slots": 4, "attributes": {"pb": True}},
]
QUEUES = {"qa": {"priority": 1}, "qb": {"priority": 2}}


def two_queues(job: dict[str, Any], *more: dict[str, Any], **top: Any) -> dict[str, Any]:
    """``job`` in qa (hosts a) and qb (hosts b), then ``more`` jobs."""
    entry = {"queue": "qb", "resreq": "select[pb]"}
    first = {"queue": "qa", "resreq": "select[pa]", "tasks": 4, "also_queues": [entry], **job}
    return {"hosts": HOSTS, "queues": QUEUES, "jobs": [first, *more], **top}


def decide(doc: dict[str, Any], backfill: str = "none") -> dict[str, Any]:
    decisions = Session(state_from_dict(doc, "<test>"), backfill=backfill).run().decisions
    ids = [d.job for d in decisions]
    assert len(ids) == len(set(ids)), f"a job decided twice: {ids}"
    return {d.job: d for d in decisions}


def host_of(d: Any, doc: dict[str, Any]) -> str:
    assert isinstance(d, Dispatched)
    return str(doc["hosts"][d.allocation.claims[0].host]["name"])


def test_it_starts_from_the_queue_whose_turn_comes_first() -> None:
    """qb has the higher priority: the job starts on b, from its qb entry, once."""
    doc = two_queues({"id": "j"})
    got = decide(doc)
    assert host_of(got["j"], doc) == "b"


def test_it_starts_where_it_fits() -> None:
    """b is full: the qb entry waits, the qa entry starts on a; one decision, the start."""
    doc = two_queues(
        {"id": "j"}, running=[{"id": "r", "queue": "qb", "alloc": [{"host": "b", "slots": 4}]}]
    )
    got = decide(doc)
    assert host_of(got["j"], doc) == "a"
    assert set(got) == {"j"}


def test_the_other_entries_step_aside_once_it_started() -> None:
    """j starts from qb; its qa entry does not take a as well: k, after it in qa, does."""
    doc = two_queues({"id": "j"}, {"id": "k", "queue": "qa", "resreq": "select[pa]", "tasks": 4})
    got = decide(doc)
    assert host_of(got["j"], doc) == "b"
    assert host_of(got["k"], doc) == "a"


def test_waiting_it_keeps_its_earliest_plan_and_holds_each() -> None:
    """Both hosts busy, a until 100, b until 50: the job is planned in each queue (qb at
    50 on b, qa at 100 on a) and keeps the earliest, 50; both plans are held, so k (qa,
    4 tasks) cannot be planned on a at 100 but after j's qa plan, at 150."""
    running = [
        {"id": "ra", "queue": "qa", "alloc": [{"host": "a", "slots": 4}], "requested_time": 100},
        {"id": "rb", "queue": "qb", "alloc": [{"host": "b", "slots": 4}], "requested_time": 50},
    ]
    k = {"id": "k", "queue": "qa", "resreq": "select[pa]", "tasks": 4, "requested_time": 50,
         "submit_time": 1}  # fmt: skip
    doc = two_queues({"id": "j", "requested_time": 50}, k, running=running, now=1)
    got = decide(doc, backfill="conservative")
    assert isinstance(got["j"], Pending)
    assert got["j"].plan is not None
    assert got["j"].plan.start == 50
    assert isinstance(got["k"], Pending)
    assert got["k"].plan is not None
    assert got["k"].plan.start == 150


def test_it_is_never_runnable_only_when_no_queue_could_run_it() -> None:
    """Its own queue, picked first, could never run it (5 tasks, host a has 4), while
    qb's entry waits for b (5 slots, one busy): it pends for slots, in queue qb, and the
    hosts' breakdown is that entry's. With qb unable too, NEVER_RUNNABLE as
    its own entry says."""
    hosts = [HOSTS[0], {**HOSTS[1], "slots": 5}]
    busy = [{"id": "r", "queue": "qb", "alloc": [{"host": "b", "slots": 1}]}]
    doc = two_queues({"id": "j", "tasks": 5}, running=busy)
    doc["hosts"] = hosts
    doc["queues"] = {"qa": {"priority": 3}, "qb": {"priority": 2}}  # qa's entry first
    got = decide(doc)["j"]
    assert isinstance(got, Pending)
    assert got.info.reason is PendReason.NOT_ENOUGH_SLOTS
    assert got.info.message.startswith("in queue qb: ")
    assert got.info.hosts == {"SELECT": 1, "NOT_ENOUGH_SLOTS": 1}
    doc["jobs"][0]["tasks"] = 6  # more than any host of either queue holds
    got = decide(doc)["j"]
    assert isinstance(got, Pending)
    assert got.info.reason is PendReason.NEVER_RUNNABLE
    assert not got.info.message.startswith("in queue")


def test_the_queue_named_is_its_own_when_its_own_entry_waits() -> None:
    """As above, the other way round: qb's entry, picked first, could never run it (b has
    4 slots), and its own queue qa's waits for a (5 slots, one busy): "in queue qa"."""
    hosts = [{**HOSTS[0], "slots": 5}, HOSTS[1]]
    busy = [{"id": "r", "queue": "qa", "alloc": [{"host": "a", "slots": 1}]}]
    doc = two_queues({"id": "j", "tasks": 5}, running=busy)
    doc["hosts"] = hosts
    got = decide(doc)["j"]
    assert isinstance(got, Pending)
    assert got.info.reason is PendReason.NOT_ENOUGH_SLOTS
    assert got.info.message.startswith("in queue qa: ")


@pytest.mark.parametrize("threads", [False, True])
def test_threads_decide_alike(threads: bool) -> None:
    doc = two_queues({"id": "j"}, {"id": "k", "queue": "qa", "resreq": "select[pa]", "tasks": 4})
    state = state_from_dict(doc, "<test>")
    plain = Session(state).run().decisions
    assert Session(state).run(threads=threads).decisions == plain


def test_the_core_starts_the_job_and_a_snapshot_keeps_its_queues() -> None:
    """The decision is the job's own id: the core starts it; a snapshot of a state with
    the job pending writes its further queues back as given."""
    doc = two_queues({"id": "j", "priority": 5})
    doc["jobs"][0]["also_queues"][0]["priority"] = 9
    core = SchedulerCore(state_from_dict(doc, "<test>"))
    assert state_to_dict(core.state)["jobs"][0]["also_queues"] == [
        {"queue": "qb", "priority": 9, "resreq": "select[pb]"}
    ]
    (decision,) = core.run_session().decisions
    assert isinstance(decision, Dispatched)
    core.apply(JobStarted("j", decision.allocation, 0.0))
    assert core.pending("j") is None
    assert core.running("j") is not None


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"queue": "qa"}], 'jobs[0].also_queues[0].queue: "qa" is its own queue'),
        ([{"queue": "qb"}, {"queue": "qb"}], 'jobs[0].also_queues[1].queue: "qb" is given twice'),
    ],
)
def test_a_queue_listed_twice_is_refused(entries: list[dict[str, Any]], message: str) -> None:
    doc = two_queues({"id": "j", "also_queues": entries})
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        state_from_dict(doc, "s.yaml")


def test_a_bad_requirement_in_a_further_queue_is_located() -> None:
    """An entry's requirement is checked at load as the job's is, at its own path."""
    doc = two_queues({"id": "j"})
    doc["jobs"][0]["also_queues"][0]["resreq"] = "select[nosuch]"
    with pytest.raises(ValueError, match=r"jobs\[0\]\.also_queues\[0\]\.resreq: .*nosuch"):
        state_from_dict(doc, "s.yaml")


def test_job_detail_lists_the_further_queues(tmp_path: Any) -> None:
    """``xce schedule --job`` says where else the job may run: identity.also_queues."""
    import json

    from typer.testing import CliRunner

    from xce.cli.main import app

    path = tmp_path / "s.json"
    path.write_text(json.dumps(two_queues({"id": "j"})), encoding="utf-8")
    result = CliRunner().invoke(app, ["schedule", str(path), "--job", "j", "--json"])
    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)["identity"]["also_queues"]
    assert listed == [{"queue": "qb", "priority": None, "resreq": "select[pb]"}]
