"""Pend reasons (design §5): one state per reason code, the precedence between them,
the per-host breakdown, and ALTER's report.

Every case schedules one job ``j`` (after any filler jobs) that must pend with the given
reason; the message must contain each given fragment; ``hosts``, when given, is the
exact per-host breakdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from builders import ClusterBuilder
from xce.alloc import PendInfo, Pending, PendReason
from xce.core import Session

R = PendReason


@dataclass(frozen=True)
class Case:
    build: Callable[[], ClusterBuilder]
    reason: PendReason
    says: tuple[str, ...] = ()
    hosts: dict[str, int] | None = None
    marks: tuple[pytest.MarkDecorator, ...] = field(default=())


def _typed(slots: int = 2, **kw: object) -> ClusterBuilder:
    """h0 of type A and h1 of type B, ``slots`` each."""
    return ClusterBuilder().host("h0", slots, type="A", **kw).host("h1", slots, type="B", **kw)  # type: ignore[arg-type]


def _pend(builder: ClusterBuilder, job: str = "j") -> Pending:
    got = {d.job: d for d in Session(builder.build()).run().decisions}[job]
    assert isinstance(got, Pending), got
    return got


REASONS: dict[str, Case] = {
    "SELECT: no host matches": Case(
        lambda: _typed().job("j", 1, resreq="select[type==Z]"),
        R.SELECT,
        ("select[type==Z]",),
        {"SELECT": 2},
    ),
    "HOST_STATUS: only a closed host would match": Case(
        lambda: (
            ClusterBuilder()
            .host("h0", 2, type="A")
            .host("h1", 2, type="B", status="closed")
            .job("j", 1, resreq="select[type==B]")
        ),
        R.HOST_STATUS,
        ("closed or unavailable",),
        {"HOST_STATUS": 1, "SELECT": 1},
    ),
    "HOST_STATUS: only an unavailable host would match": Case(
        lambda: (
            ClusterBuilder()
            .host("h0", 2, type="A")
            .host("h1", 2, type="B", status="unavail")
            .job("j", 1, resreq="select[type==B]")
        ),
        R.HOST_STATUS,
        ("closed or unavailable",),
        {"HOST_STATUS": 1, "SELECT": 1},
    ),
    "NOT_ENOUGH_SLOTS: the eligible hosts' free slots are too few": Case(
        lambda: ClusterBuilder().hosts(2, slots=2).running("r", on={"h0": 2}).job("j", 3),
        R.NOT_ENOUGH_SLOTS,
        ("3 slot",),
        {"NOT_ENOUGH_SLOTS": 2},
    ),
    "NOT_ENOUGH_RESOURCE: a per-task resource is too little, named": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=2, mem=1000)
            .host("h2", 2, mem=500)
            .job("j", 3, resreq="rusage[mem=600]")
        ),
        R.NOT_ENOUGH_RESOURCE,
        ("mem",),
        {"NOT_ENOUGH_RESOURCE": 3},
    ),
    "LIMIT: a per-host limit's headroom is too small, named": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=4)
            .limit("alice_per_host", users=["alice"], per_host=True, slots=1)
            .running("r", on={"h1": 1}, user="alice")
            .job("j", 2, user="alice")
        ),
        R.LIMIT,
        ("alice_per_host",),
        {"LIMIT": 2},
    ),
    "LIMIT: an aggregate limit is reached, named": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=4)
            .limit("alice_total", users=["alice"], slots=2)
            .job("j", 3, user="alice")
        ),
        R.LIMIT,
        ("alice_total",),
    ),
    "SPAN: span[hosts=1] though the slots suffice in total": Case(
        lambda: ClusterBuilder().hosts(2, slots=2).job("j", 3, resreq="span[hosts=1]"),
        R.SPAN,
        ("span",),
        {"NOT_ENOUGH_SLOTS": 2},
    ),
    "SPAN: span[ptile=2] though the slots suffice in total": Case(
        lambda: ClusterBuilder().host("h0", 4).host("h1", 1).job("j", 4, resreq="span[ptile=2]"),
        R.SPAN,
        ("ptile=2",),
        {"NOT_ENOUGH_SLOTS": 1, "SPAN": 1},
    ),
    "SAME: no same[type] group holds the tasks": Case(
        lambda: _typed().job("j", 3, resreq="same[type]"),
        R.SAME,
        ("same[type]",),
        {"SAME": 2},
    ),
    "SHARED_RESOURCE: too little of a license left, named": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=4)
            .shared("lic", 2)
            .running("r", on={"h0": 1}, shared={"lic": 1})
            .job("j", 1, resreq="rusage[lic=2]")
        ),
        R.SHARED_RESOURCE,
        ("lic",),
    ),
    "SHARED_RESOURCE: the session already gave the license away": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=4)
            .shared("lic", 2)
            .job("first", 1, resreq="rusage[lic=2]")
            .job("j", 1, resreq="rusage[lic=1]")
        ),
        R.SHARED_RESOURCE,
        ("lic",),
    ),
}

PRECEDENCE: dict[str, Case] = {
    "SHARED_RESOURCE before SELECT": Case(
        lambda: _typed().shared("lic", 1).job("j", 1, resreq="select[type==Z] rusage[lic=2]"),
        R.SHARED_RESOURCE,
    ),
    "aggregate LIMIT before SELECT": Case(
        lambda: (
            _typed()
            .limit("alice_total", users=["alice"], slots=1)
            .job("j", 2, user="alice", resreq="select[type==Z]")
        ),
        R.LIMIT,
        ("alice_total",),
    ),
    "aggregate LIMIT on an amount before NOT_ENOUGH_SLOTS": Case(
        lambda: (
            ClusterBuilder()
            .hosts(1, slots=1, mem=4000)
            .limit("alice_mem", users=["alice"], resources={"mem": 1000})
            .job("j", 2, user="alice", resreq="rusage[mem=600]")
        ),
        R.LIMIT,
        ("alice_mem",),
    ),
    "HOST_STATUS before NOT_ENOUGH_SLOTS": Case(
        lambda: (
            ClusterBuilder()
            .host("h0", 8, type="A")
            .host("h1", 4, type="B", status="closed")
            .running("r", on={"h1": 3})
            .job("j", 4, resreq="select[type==B]")
        ),
        R.HOST_STATUS,
    ),
    "SELECT before NOT_ENOUGH_SLOTS": Case(
        lambda: _typed(slots=1).job("j", 9, resreq="select[type==Z]"),
        R.SELECT,
    ),
    "NOT_ENOUGH_SLOTS before NOT_ENOUGH_RESOURCE": Case(
        lambda: ClusterBuilder().hosts(2, slots=2, mem=100).job("j", 5, resreq="rusage[mem=600]"),
        R.NOT_ENOUGH_SLOTS,
    ),
    "NOT_ENOUGH_RESOURCE before LIMIT": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=4, mem=1000)
            .limit("alice_per_host", users=["alice"], per_host=True, slots=1)
            .job("j", 4, user="alice", resreq="rusage[mem=600]")
        ),
        R.NOT_ENOUGH_RESOURCE,
        ("mem",),
    ),
    "LIMIT before SPAN": Case(
        lambda: (
            ClusterBuilder()
            .hosts(2, slots=4)
            .limit("alice_per_host", users=["alice"], per_host=True, slots=1)
            .job("j", 3, user="alice", resreq="span[hosts=1]")
        ),
        R.LIMIT,
        ("alice_per_host",),
    ),
    "LIMIT before SAME": Case(
        lambda: (
            _typed(slots=4)
            .limit("alice_per_host", users=["alice"], per_host=True, slots=1)
            .job("j", 3, user="alice", resreq="same[type]")
        ),
        R.LIMIT,
        ("alice_per_host",),
    ),
    "NOT_ENOUGH_SLOTS before SPAN": Case(
        lambda: ClusterBuilder().hosts(2, slots=2).job("j", 5, resreq="span[hosts=1]"),
        R.NOT_ENOUGH_SLOTS,
    ),
    "NOT_ENOUGH_SLOTS before SAME": Case(
        lambda: _typed().job("j", 5, resreq="same[type]"),
        R.NOT_ENOUGH_SLOTS,
    ),
}


def _params(cases: dict[str, Case]) -> list[object]:
    return [pytest.param(name, id=name, marks=case.marks) for name, case in cases.items()]


def _reason(info: PendInfo) -> PendReason:
    """The reason a case is about: for a job that could not run even on the empty
    cluster (issue 9: NEVER_RUNNABLE ranks first), the reason it fails there."""
    if info.reason is R.NEVER_RUNNABLE:
        assert info.cause is not None, info
        assert info.message.startswith("can never run on this cluster"), info
        return info.cause
    return info.reason


def _check(case: Case) -> None:
    got = _pend(case.build())
    assert _reason(got.info) is case.reason, got
    for fragment in case.says:
        assert fragment in got.info.message, got
    if case.hosts is not None:
        assert dict(got.info.hosts) == case.hosts, got
        assert sum(got.info.hosts.values()) == len(case.build().build().hosts)  # every host


@pytest.mark.parametrize("name", _params(REASONS))
def test_each_reason_code(name: str) -> None:
    """Design §5 reason codes: each pend reason, its message and per-host breakdown."""
    _check(REASONS[name])


@pytest.mark.parametrize("name", _params(PRECEDENCE))
def test_precedence_first_match_wins(name: str) -> None:
    """Design §5 precedence: job-level causes; HOST_STATUS/SELECT; NOT_ENOUGH_SLOTS;
    NOT_ENOUGH_RESOURCE; LIMIT; then SPAN or SAME."""
    _check(PRECEDENCE[name])


def test_per_host_breakdown_counts_each_host_by_its_first_reason() -> None:
    """Design §5 ``hosts``: each host counted once, under the first host-level reason it
    fails on (status, select, slots, resource, limit); issue 9: hosts that could take
    a task are counted under the job's own reason, so the counts cover every host."""
    builder = (
        ClusterBuilder()
        .host("closed_B", 4, mem=4000, type="B", status="closed")  # HOST_STATUS (also SELECT)
        .host("closed_A", 4, mem=4000, type="A", status="unavail")  # HOST_STATUS
        .host("type_B", 4, mem=4000, type="B")  # SELECT
        .host("full", 4, mem=4000, type="A")  # NOT_ENOUGH_SLOTS
        .host("low_mem", 4, mem=100, type="A")  # NOT_ENOUGH_RESOURCE (and no slot limit)
        .host("no_mem", 4, type="A")  # NOT_ENOUGH_RESOURCE: lacks mem
        .host("limited", 4, mem=4000, type="A")  # LIMIT
        .host("fits", 4, mem=4000, type="A")  # the job's reason (LIMIT)
        .limit("alice_per_host", users=["alice"], per_host=True, slots=2)
        .running("r0", on={"full": 4}, user="bob")
        .running("r1", on={"limited": 2}, user="alice")
        .job("j", 6, user="alice", resreq="select[type==A] rusage[mem=500]")
    )
    got = _pend(builder)
    assert dict(got.info.hosts) == {
        "HOST_STATUS": 2,
        "SELECT": 1,
        "NOT_ENOUGH_SLOTS": 1,
        "NOT_ENOUGH_RESOURCE": 2,
        "LIMIT": 2,
    }
    assert got.info.reason is R.LIMIT
    assert got.info.examples["LIMIT"] == ("limited", "fits")
    assert got.info.limits == ("alice_per_host",)


def test_alter_reports_its_first_alternative_and_mentions_the_others() -> None:
    """Design §5 ALTER: the reason is the first alternative's; the message names it and
    summarises the other alternatives' reasons."""
    builder = (
        _typed()
        .shared("lic", 1)
        .job("j", 3, resreq="{select[type==Z]} || {rusage[lic=5]} || {span[hosts=1]}")
    )
    got = _pend(builder)
    assert _reason(got.info) is R.SELECT
    assert "select[type==Z]" in got.info.message
    assert "alternative 1: SHARED_RESOURCE" in got.info.message
    assert "alternative 2: SPAN" in got.info.message
    assert dict(got.info.hosts) == {"SELECT": 2}


def test_alter_whose_first_alternative_fits_is_not_pending() -> None:
    """Design §3 ALTER: the first alternative in written order that fully allocates wins."""
    builder = _typed().job("j", 2, resreq="{select[type==B]} || {select[type==A]}")
    (got,) = Session(builder.build()).run().decisions
    assert not isinstance(got, Pending)
    assert got.allocation.alternative == 0


def test_pend_reasons_are_values_not_exceptions() -> None:
    """STYLE 4: a job that cannot start is a decision with a reason code; every reason
    a session gives is a PendReason (issue 9: both jobs here could never run)."""
    builder = _typed(slots=1).job("a", 5).job("b", 1, resreq="select[type==Z]").job("c", 1)
    result = Session(builder.build()).run()
    assert {type(p.info.reason) for p in result.pending} == {PendReason}
    assert dict(result.stats.pending_by_reason) == {"NEVER_RUNNABLE": 2}
    assert [p.info.cause for p in result.pending] == [R.NOT_ENOUGH_SLOTS, R.SELECT]
