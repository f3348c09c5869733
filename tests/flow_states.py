"""States with the job-flow keys of issue 25 (hold, begin_time, dependency, name, array,
priority; running name/array_job), which :class:`builders.ClusterBuilder` has no
arguments for: the builder's document with those keys added per job id, loaded through
the same loader as a state file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builders import ClusterBuilder
from xce.alloc import Decision, Dispatched, Pending, PendReason
from xce.cluster import ClusterState, state_from_dict
from xce.cluster.deadlock import dependency_cycle

__all__ = ["by_id", "flow_doc", "flow_state", "pending", "planned", "ran"]

Fields = Mapping[str, Mapping[str, Any]]


def flow_doc(
    b: ClusterBuilder, jobs: Fields | None = None, running: Fields | None = None
) -> dict[str, Any]:
    """``b``'s state document with ``jobs[id]`` / ``running[id]`` keys added."""
    doc = b.to_dict()
    for section, extra in (("jobs", jobs or {}), ("running", running or {})):
        entries = doc.get(section, [])
        unknown = set(extra) - {str(e["id"]) for e in entries}
        assert not unknown, f"no {section} entry {unknown}"
        for entry in entries:
            entry.update(extra.get(str(entry["id"]), {}))
    return doc


def flow_state(
    b: ClusterBuilder, jobs: Fields | None = None, running: Fields | None = None
) -> ClusterState:
    return state_from_dict(flow_doc(b, jobs, running), "<flow>")


def by_id(decisions: tuple[Decision, ...]) -> dict[str, Decision]:
    """Decisions by job id (asserting each job has one)."""
    out = {d.job: d for d in decisions}
    assert len(out) == len(decisions), [d.job for d in decisions]
    return out


def pending(d: Decision, reason: PendReason | None = None) -> Pending:
    assert isinstance(d, Pending), d
    if reason is not None:
        assert d.info.reason is reason, d.info
    return d


def planned(d: Decision) -> float:
    """The planned start of a pending decision (asserting it has a plan)."""
    p = pending(d)
    assert p.plan is not None, d
    return p.plan.start


def ran(d: Decision) -> list[int]:
    """The hosts (indices) of a dispatched decision (asserting it is one)."""
    assert isinstance(d, Dispatched), d
    return sorted(c.host for c in d.allocation.claims)


def acyclic(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the dependency dropped from each job that closes a cycle (random
    documents draw them; a state file with one is refused: tests/test_dependency_cycles.py)."""
    jobs = doc.get("jobs", [])
    while (
        found := dependency_cycle([(str(j["id"]), j.get("dependency")) for j in jobs])
    ) is not None:
        del jobs[found[0]]["dependency"]
    return doc
