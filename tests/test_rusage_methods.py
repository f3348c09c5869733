"""Reservation methods written in rusage (LSF 10.1.0.9: ``mem=10/job``, ``/host``,
``/task``): a method overrides the resource's declared one, for that amount only."""

from __future__ import annotations

import pytest

from xce.alloc import Dispatched, Pending
from xce.cluster import state_from_dict
from xce.core.session import Session
from xce.errors import ResreqSyntaxError, StateError
from xce.resreq import PrimaryResreq, parse

GPU_HOSTS = [
    {"name": "a", "slots": 8, "resources": {"gpu": 2}},
    {"name": "b", "slots": 8, "resources": {"gpu": 4}},
]


def _gpu_used(resreq: str, tasks: int, declared: str = "per_host") -> dict[str, float]:
    doc = {
        "resources": {"gpu": {"kind": "consumable", "reservation": declared}},
        "hosts": GPU_HOSTS,
        "jobs": [{"id": "j", "tasks": tasks, "resreq": resreq}],
    }
    state = state_from_dict(doc)
    (decision,) = Session(state).run().decisions
    assert isinstance(decision, Dispatched)
    names = state.hosts.names
    return {names[c.host]: dict(c.amounts).get("gpu", 0.0) for c in decision.allocation.claims}


@pytest.mark.parametrize(
    ("resreq", "tasks", "declared", "expected"),
    [
        pytest.param("rusage[gpu=4/job]", 4, "per_host", {"b": 4.0}, id="job-once"),
        pytest.param("rusage[gpu=1/task]", 2, "per_host", {"a": 2.0}, id="task-times-slots"),
        pytest.param("rusage[gpu=2/host]", 2, "per_task", {"a": 2.0}, id="host-once-per-host"),
        pytest.param("rusage[gpu=1]", 2, "per_task", {"a": 2.0}, id="declared-per-task"),
        pytest.param("rusage[gpu=1]", 2, "per_host", {"a": 1.0}, id="declared-per-host"),
    ],
)
def test_a_written_method_overrides_the_declared_one(
    resreq: str, tasks: int, declared: str, expected: dict[str, float]
) -> None:
    """``gpu=4/job`` wants 4 in all (on the job's first host), ``/task`` per task,
    ``/host`` once per host, whatever the catalog declares; without a method the
    declaration decides."""
    assert _gpu_used(resreq, tasks, declared) == expected


def test_a_job_amount_no_host_holds_pends() -> None:
    """A job asking 5 GPUs per job, on hosts of 2 and 4, never runs (it is not
    dispatched without them)."""
    doc = {
        "resources": {"gpu": {"kind": "consumable", "reservation": "per_host"}},
        "hosts": GPU_HOSTS,
        "jobs": [{"id": "j", "tasks": 1, "resreq": "rusage[gpu=5/job]"}],
    }
    (decision,) = Session(state_from_dict(doc)).run().decisions
    assert isinstance(decision, Pending)
    assert decision.info.reason.value == "NEVER_RUNNABLE"


def test_the_method_is_part_of_the_text_and_the_fingerprint() -> None:
    """The normalized text keeps the method, so two requirements differing only in it
    are different requirements (the unsatisfiable cache keys on the rusage hash)."""
    job = parse("rusage[gpu=4/job:mem=10]")
    task = parse("rusage[gpu=4/task:mem=10]")
    assert str(job) == "rusage[gpu=4/job:mem=10]"
    assert str(job) != str(task)
    assert isinstance(job, PrimaryResreq)
    assert isinstance(task, PrimaryResreq)
    assert job.rusage.hash != task.rusage.hash


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        pytest.param("rusage[gpu=4/jobs]", "unknown reservation method /jobs", 14, id="unknown"),
        pytest.param("rusage[mem=1:duration=5/job]", "takes no reservation method", 25, id="dur"),
    ],
)
def test_a_bad_method_is_a_syntax_error_at_its_column(text: str, message: str, column: int) -> None:
    with pytest.raises(ResreqSyntaxError, match=message) as info:
        parse(text)
    assert info.value.column == column


def test_a_shared_resource_is_per_job_only() -> None:
    """A license is reserved once per job: ``/task`` or ``/host`` on one is refused at
    load, located in the requirement."""
    doc = {
        "hosts": [{"name": "a", "slots": 4}],
        "shared": {"lic": {"total": 4}},
        "jobs": [{"id": "j", "resreq": "rusage[lic=1/task]"}],
    }
    with pytest.raises(StateError, match="shared resource, reserved once per job"):
        state_from_dict(doc, "s.yaml")
    doc["jobs"] = [{"id": "j", "resreq": "rusage[lic=1/job]"}]
    (decision,) = Session(state_from_dict(doc)).run().decisions
    assert isinstance(decision, Dispatched)
    assert decision.allocation.shared == (("lic", 1.0),)
