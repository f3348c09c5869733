"""Limits (design §3, LSF ``Limit`` sections): per host or aggregate, on slots, jobs or a
resource amount, for users/queues/projects (an intersection), counting running work.

Each case is a cluster, its limits and running work, and pending jobs in scheduling
order with what must happen to each: where it lands, or that it pends with reason
LIMIT naming the limit. Jobs the limit does not apply to must be unaffected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from builders import ClusterBuilder
from xce.alloc import Decision, Dispatched, Pending, PendReason
from xce.core import Session

Expect = str | dict[str, int]
"""``{"h1": 2, ...}``: dispatched with these slots per host; ``"LIMIT:name"``: pends with
reason LIMIT naming the limit."""


@dataclass(frozen=True)
class Case:
    build: Callable[[], ClusterBuilder]
    expect: dict[str, Expect]


def _decide(builder: ClusterBuilder) -> dict[str, Decision]:
    return {d.job: d for d in Session(builder.build()).run().decisions}


def _slots_per_host(d: Dispatched, names: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in d.allocation.claims:
        out[names[c.host]] = out.get(names[c.host], 0) + c.slots
    return out


CASES: dict[str, Case] = {
    "aggregate slots for a user, counting running work": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=4)
            .limit("alice_slots", users=["alice"], slots=4)
            .running("r", on={"h0": 2}, user="alice")
            .job("a3", 3, user="alice")
            .job("a2", 2, user="alice")
            .job("a1", 1, user="alice")
            .job("b3", 3, user="bob")
        ),
        {"a3": "LIMIT:alice_slots", "a2": {"h0": 2}, "a1": "LIMIT:alice_slots", "b3": {"h1": 3}},
    ),
    "aggregate jobs for a queue, counting running work": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=8)
            .limit("low_jobs", queues=["low"], jobs=2)
            .running("r", on={"h0": 1}, queue="low")
            .job("l1", 1, queue="low")
            .job("l2", 1, queue="low")
            .job("n1", 1, queue="normal")
        ),
        {"l1": {"h0": 1}, "l2": "LIMIT:low_jobs", "n1": {"h0": 1}},
    ),
    "aggregate mem for a project, counting running work": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=8, mem=8000)
            .limit("p1_mem", projects=["p1"], resources={"mem": 1000})
            .running("r", on={"h0": 1}, rusage={"mem": 400}, project="p1")
            .job("x", 2, resreq="rusage[mem=300]", project="p1")
            .job("y", 1, resreq="rusage[mem=100]", project="p1")
            .job("z", 1, resreq="rusage[mem=100]", project="p2")
        ),
        {"x": {"h0": 2}, "y": "LIMIT:p1_mem", "z": {"h0": 1}},
    ),
    "per-host slots for a user, counting running work": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=4)
            .limit("alice_per_host", users=["alice"], per_host=True, slots=2)
            .running("r", on={"h0": 1}, user="alice")
            .job("a3", 3, user="alice")
            .job("a1", 1, user="alice")
            .job("b2", 2, user="bob")
        ),
        # [3] fits nowhere under the limit; [2, 1]: 2 on h1, 1 on h0 (headroom 1)
        {"a3": {"h1": 2, "h0": 1}, "a1": "LIMIT:alice_per_host", "b2": {"h0": 2}},
    ),
    "per-host jobs for a user, counting running work": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=4)
            .limit("one_each", users=["alice"], per_host=True, jobs=1)
            .running("r", on={"h0": 1}, user="alice")
            .job("a1", 1, user="alice")
            .job("a2", 1, user="alice")
            .job("b1", 1, user="bob")
        ),
        {"a1": {"h1": 1}, "a2": "LIMIT:one_each", "b1": {"h0": 1}},
    ),
    "per-host mem for a project": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=4, mem=4000)
            .limit("p1_mem_per_host", projects=["p1"], per_host=True, resources={"mem": 1000})
            .job("x", 2, resreq="rusage[mem=600]", project="p1")
            .job("y", 1, resreq="rusage[mem=600]", project="p1")
            .job("z", 2, resreq="rusage[mem=600]", project="p2")
        ),
        {"x": "LIMIT:p1_mem_per_host", "y": {"h0": 1}, "z": {"h0": 2}},
    ),
    "consumers intersect: user and queue": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=8)
            .limit("alice_low", users=["alice"], queues=["low"], slots=1)
            .job("al", 2, user="alice", queue="low")
            .job("an", 2, user="alice", queue="normal")
            .job("bl", 2, user="bob", queue="low")
        ),
        {"al": "LIMIT:alice_low", "an": {"h0": 2}, "bl": {"h0": 2}},
    ),
    "a limit without consumer lists applies to everyone": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=8)
            .limit("everyone", jobs=1)
            .running("r", on={"h0": 1}, user="carol")
            .job("a", 1, user="alice")
            .job("b", 1, user="bob", queue="low", project="p9")
        ),
        {"a": "LIMIT:everyone", "b": "LIMIT:everyone"},
    ),
    "a job must fit under every limit that applies": Case(
        lambda: (
            ClusterBuilder()
            .hosts(4, slots=4)
            .limit("alice_total", users=["alice"], slots=3)
            .limit("alice_spread", users=["alice"], per_host=True, slots=1)
            .job("a2", 2, user="alice")
            .job("a2b", 2, user="alice")
            .job("a1", 1, user="alice")
        ),
        {"a2": {"h0": 1, "h1": 1}, "a2b": "LIMIT:alice_total", "a1": {"h2": 1}},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_limits_decide_who_runs_where(name: str) -> None:
    """Design §3 limits: a job runs only where it fits under every limit that applies to
    it (running work counted); jobs the limit does not apply to are unaffected."""
    case = CASES[name]
    builder = case.build()
    decisions = _decide(builder)
    names = builder.build().hosts.names
    for job, want in case.expect.items():
        got = decisions[job]
        if isinstance(want, dict):
            assert isinstance(got, Dispatched), (job, got)
            assert _slots_per_host(got, names) == want, job
            assert [names[c.host] for c in got.allocation.claims] == list(want), job
        else:
            assert isinstance(got, Pending), (job, got)


@pytest.mark.parametrize(
    "name",
    list(CASES),
)
def test_a_job_over_a_limit_pends_with_reason_limit_naming_it(name: str) -> None:
    """Design §5: a job that a limit keeps from running pends with reason LIMIT, and the
    message names the limit (issue 9: when the limit keeps it out even on the empty
    cluster, NEVER_RUNNABLE whose cause is LIMIT, naming the limit in ``limits``)."""
    decisions = _decide(CASES[name].build())
    for job, want in CASES[name].expect.items():
        if isinstance(want, str):
            got = decisions[job]
            assert isinstance(got, Pending)
            limit = want.removeprefix("LIMIT:")
            assert limit in got.info.message, got
            if got.info.reason is PendReason.NEVER_RUNNABLE:
                assert (got.info.cause, got.info.limits) == (PendReason.LIMIT, (limit,)), got
            else:
                assert got.info.reason is PendReason.LIMIT, got


def test_a_per_host_limit_counts_per_host_in_the_breakdown() -> None:
    """Design §5: ``hosts`` counts the hosts a per-host limit rules out as LIMIT; issue
    9: every host has a reason, so the host that could take a task (the job's bucket
    here) counts under the job's own reason, LIMIT too."""
    builder = (
        ClusterBuilder()
        .hosts(3, slots=4)
        .limit("alice_per_host", users=["alice"], per_host=True, slots=1)
        .running("r0", on={"h0": 1}, user="alice")
        .running("r1", on={"h1": 1}, user="alice")
        .job("a", 2, user="alice")
    )
    (got,) = Session(builder.build()).run().decisions
    assert isinstance(got, Pending)
    assert got.info.reason is PendReason.LIMIT
    assert "alice_per_host" in got.info.message
    assert dict(got.info.hosts) == {"LIMIT": 3}
    assert got.info.examples == {"LIMIT": ("h0", "h1", "h2")}


def test_an_alter_job_falls_back_when_a_per_host_limit_rules_out_an_alternative() -> None:
    """Design §3 ALTER + limits: the first alternative that fits under every limit wins."""
    builder = (
        ClusterBuilder()
        .hosts(1, slots=4, mem=4000)
        .limit("mem_per_host", users=["alice"], per_host=True, resources={"mem": 1000})
        .job("a", 2, user="alice", resreq="{rusage[mem=600]} || {rusage[mem=100]}")
    )
    (got,) = Session(builder.build()).run().decisions
    assert isinstance(got, Dispatched)
    assert got.allocation.alternative == 1


def test_an_alter_job_falls_back_when_an_aggregate_limit_rules_out_an_alternative() -> None:
    """Design §3 ALTER + limits: the first alternative that fits under every limit wins,
    for aggregate limits as for per-host ones."""
    builder = (
        ClusterBuilder()
        .hosts(1, slots=4, mem=4000)
        .limit("alice_mem", users=["alice"], resources={"mem": 1000})
        .job("a", 2, user="alice", resreq="{rusage[mem=800]} || {rusage[mem=100]}")
    )
    (got,) = Session(builder.build()).run().decisions
    assert isinstance(got, Dispatched), got
    assert got.allocation.alternative == 1


def test_an_alter_job_is_checked_against_aggregate_limits_per_alternative() -> None:
    """Design §3 ALTER + limits: alternatives of different sizes are each held to the
    aggregate limits; the first that fits wins."""
    builder = (
        ClusterBuilder()
        .hosts(2, slots=4)
        .limit("alice_slots", users=["alice"], slots=1)
        .job("a", user="alice", resreq="{1*{-} + 1*{-}} || {1*{-}}")
    )
    (got,) = Session(builder.build()).run().decisions
    assert isinstance(got, Dispatched), got
    assert got.allocation.alternative == 1


def test_a_limit_on_running_work_alone_does_not_block_other_consumers() -> None:
    """Design §3 limits: running work over a limit blocks only the limit's consumers."""
    builder = (
        ClusterBuilder()
        .hosts(1, slots=8)
        .limit("bob_slots", users=["bob"], slots=2)
        .running("r", on={"h0": 3}, user="bob")
        .job("b", 1, user="bob")
        .job("a", 4, user="alice")
    )
    got = {d.job: d for d in Session(builder.build()).run().decisions}
    assert isinstance(got["b"], Pending)
    assert got["b"].info.reason is PendReason.LIMIT
    assert isinstance(got["a"], Dispatched)
