"""COMPOUND (every term, atomic: bug-1766 fixed) and ALTER (first alternative that fully
allocates, in written order) above the primary path (spec Composition Algorithm,
Req 9 AC 2, design §3/§5)."""

from __future__ import annotations

import numpy as np
import pytest

from builders import ClusterBuilder, reason_under_test
from xce.alloc import (
    Allocator,
    AllocatorPlugin,
    AllocatorRegistry,
    AllocContext,
    Decision,
    Dispatched,
    Pending,
    PendReason,
    PreparedPrimary,
)
from xce.cluster import ClusterState
from xce.core.session import job_request


def cluster() -> ClusterBuilder:
    return ClusterBuilder().host("A", slots=2, type="X").host("B", slots=1, type="Y")


def allocator(state: ClusterState) -> Allocator:
    alloc = Allocator(state)
    alloc.begin_session()
    return alloc


def decide(alloc: Allocator, job_id: str) -> Decision:
    job = next(j for j in alloc.state.jobs if j.id == job_id)
    return alloc.decide(job_request(job, alloc.state.catalog))


def claims(state: ClusterState, d: Decision) -> list[tuple[str, int, int]]:
    """(host, slots, term) in claim order."""
    assert isinstance(d, Dispatched), d
    return [(state.hosts.names[c.host], c.slots, c.term) for c in d.allocation.claims]


_ROLLBACK_ALTER = '{1*{select[type=="X"]} + 1*{select[type=="Z"]}} || {select[type=="X"]}'


# --- COMPOUND --------------------------------------------------------------------------
def test_failing_term_leaves_no_trace_of_earlier_terms() -> None:
    """Design §3 / spec 'COMPOUND rollback note' (bug-1766 fixed): term 1 failing
    releases term 0's debits and no partial allocation reaches the job or the books, so a
    later job can use the hosts term 0 had claimed."""
    state = (
        cluster()
        .job("j1", resreq='1*{select[type=="X"]} + 1*{select[type=="Z"]}')
        .job("j2", 2, resreq='select[type=="X"]')
        .build()
    )
    alloc = allocator(state)
    slots_before = alloc.books.available("slots").copy()
    d1 = decide(alloc, "j1")
    assert isinstance(d1, Pending)
    assert not hasattr(d1, "allocation")
    assert reason_under_test(d1.info) is PendReason.SELECT  # term 1's reason
    assert np.array_equal(alloc.books.available("slots"), slots_before)
    assert claims(state, decide(alloc, "j2")) == [("A", 2, 0)]


def test_failed_alternative_gives_back_its_terms_to_the_next_alternative() -> None:
    """Design §3 (COMPOUND atomic) within one job: the first alternative's term 0 claims
    A, its term 1 fails; the second alternative needs all of A and gets it."""
    state = cluster().job("j", resreq=_ROLLBACK_ALTER).build()
    d = decide(allocator(state), "j")
    assert claims(state, d) == [("A", 2, 0)]
    assert isinstance(d, Dispatched)
    assert d.allocation.alternative == 1


def test_without_the_term_rollback_the_next_alternative_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec bug-1766: with the compound rollback disabled, the abandoned term's debit
    on A stays and the second alternative can no longer have A (the control case of
    the test above)."""
    monkeypatch.setattr(AllocContext, "credit", lambda self, claims: None)
    state = cluster().job("j", resreq=_ROLLBACK_ALTER).build()
    assert isinstance(decide(allocator(state), "j"), Pending)


def test_failing_term_gives_back_earlier_terms_shared_amounts() -> None:
    """Design §3 (COMPOUND atomic), shared resources: term 0's license is released when
    term 1 fails, so the next alternative can take it; the session is charged once."""
    state = (
        cluster()
        .shared("lic", 1)
        .job("j", resreq='{1*{rusage[lic=1]} + 1*{select[type=="Z"]}} || {rusage[lic=1]}')
        .build()
    )
    alloc = allocator(state)
    d = decide(alloc, "j")
    assert isinstance(d, Dispatched)
    assert d.allocation.alternative == 1
    assert d.allocation.shared == (("lic", 1.0),)
    assert alloc.books.shared_available("lic") == 0


@pytest.mark.parametrize(
    ("slots", "expected"),
    [
        (3, [("A", 1, 0), ("A", 2, 1)]),
        (2, None),
    ],
)
def test_terms_are_independent_primaries_sharing_the_attempt(
    slots: int, expected: list[tuple[str, int, int]] | None
) -> None:
    """Design §3: a later term may use a host an earlier term of the same job claimed, if
    it still has room (counting the earlier term's debit); claims carry the term index."""
    state = ClusterBuilder().host("A", slots=slots).job("j", resreq="1*{-} + 2*{-}").build()
    d = decide(allocator(state), "j")
    if expected is None:
        assert isinstance(d, Pending)
    else:
        assert claims(state, d) == expected
        assert isinstance(d, Dispatched)
        assert d.allocation.alternative is None


def test_each_term_is_placed_by_the_plugin_its_task_count_elects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec Req 9 AC 2: COMPOUND calls the per-primary path for every term, and each term
    is elected by its own task count (1 → seqjob, >1 → parjob)."""
    elected: list[tuple[int, str]] = []
    real = AllocatorRegistry.elect

    def spy(self: AllocatorRegistry, primary: PreparedPrimary) -> AllocatorPlugin:
        plugin = real(self, primary)
        elected.append((primary.tasks, plugin.name))
        return plugin

    monkeypatch.setattr(AllocatorRegistry, "elect", spy)
    state = ClusterBuilder().hosts(3, slots=2).job("j", resreq="1*{-} + 3*{-}").build()
    d = decide(allocator(state), "j")
    assert isinstance(d, Dispatched)
    assert d.allocation.slots == 4
    assert elected == [(1, "seqjob"), (3, "parjob")]


# --- ALTER -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("resreq", "alternative", "hosts"),
    [
        ('{select[type=="Z"]} || {select[type=="X"]} || {select[type=="Y"]}', 1, ["A"]),
        ('{select[type=="Y"]} || {select[type=="X"]}', 0, ["B"]),
        ('{select[type=="X"]} || {select[type=="Y"]}', 0, ["A"]),
        ('{2*{select[type=="Y"]}} || {1*{select[type=="X"]} + 1*{-}}', 1, ["A", "A"]),
        ('select[type=="Y"]', None, ["B"]),
        ('1*{select[type=="Y"]} + 1*{select[type=="X"]}', None, ["B", "A"]),
    ],
)
def test_alter_takes_the_first_alternative_in_written_order(
    resreq: str, alternative: int | None, hosts: list[str]
) -> None:
    """Spec 'ALTER: OR of compounds' / design §5: the first alternative, in written order,
    that fully allocates wins (even when a later one would also), and the decision says
    which (null when the requirement is not ALTER)."""
    state = cluster().job("j", resreq=resreq).build()
    d = decide(allocator(state), "j")
    assert isinstance(d, Dispatched)
    assert d.allocation.alternative == alternative
    assert [name for name, _, _ in claims(state, d)] == hosts


@pytest.mark.parametrize(
    ("resreq", "reason", "other"),
    [
        (
            '{select[type=="Z"]} || {3*{select[type=="X"]}}',
            PendReason.SELECT,
            "alternative 1: NOT_ENOUGH_SLOTS",
        ),
        (
            '{3*{select[type=="X"]}} || {select[type=="Z"]}',
            PendReason.NOT_ENOUGH_SLOTS,
            "alternative 1: SELECT",
        ),
    ],
)
def test_alter_reports_the_first_alternatives_reason(
    resreq: str, reason: PendReason, other: str
) -> None:
    """Design §5: when every alternative fails, the reason is the first alternative's and
    the message summarises the others."""
    state = cluster().job("j", resreq=resreq).build()
    d = decide(allocator(state), "j")
    assert isinstance(d, Pending)
    assert reason_under_test(d.info) is reason
    assert d.info.message.removeprefix("can never run on this cluster as configured: ").startswith(
        "alternative 0: "
    )
    assert other in d.info.message
