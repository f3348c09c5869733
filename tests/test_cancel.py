"""Cancellation (spec Req 2 AC 6, Req 3 AC 6, STYLE 6): a token cancelled from another
thread stops allocation at the next checkpoint, leaving no charge and no debit."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

from builders import ClusterBuilder
from xce.alloc import (
    Allocator,
    AllocContext,
    AllocMode,
    AllocOptions,
    CancelToken,
    Decision,
    Dispatched,
    JobRequest,
)
from xce.cluster import ClusterState
from xce.core import Session
from xce.core.session import job_request
from xce.errors import Cancelled

HANDSHAKE_TIMEOUT_S = 30.0  # a safety net against a hang, not a timing assertion

BIG_STATE = (
    ClusterBuilder()
    .hosts(5_000, slots=1, mem=100)
    .shared("lic", 2)
    .job("big", tasks=5_000, resreq="rusage[mem=10:lic=1]", user="alice")
    .job("small", tasks=3, resreq="rusage[mem=10:lic=1]", user="alice")
    .build()
)


class HandshakeToken(CancelToken):
    """A token that, at the first checkpoint where ``ready()`` holds, tells the test
    thread (``reached``) and waits until that thread has cancelled (``cancel_sent``),
    then returns normally, so the cancellation is observed at the *next* checkpoint."""

    def __init__(self, ready: Callable[[], bool]) -> None:
        super().__init__()
        self.ready = ready
        self.reached = threading.Event()
        self.cancel_sent = threading.Event()
        self.checkpoints_after_cancel = 0

    def checkpoint(self) -> None:
        if self.cancel_sent.is_set():
            self.checkpoints_after_cancel += 1
        super().checkpoint()
        if not self.reached.is_set() and self.ready():
            self.reached.set()
            assert self.cancel_sent.wait(HANDSHAKE_TIMEOUT_S)


def _availability(alloc: Allocator) -> tuple[np.ndarray, np.ndarray, float]:
    books = alloc.books
    return (
        books.available("slots").copy(),
        books.available("mem").copy(),
        books.shared_available("lic"),
    )


def _request(state: ClusterState, job_id: str) -> JobRequest:
    return job_request(next(j for j in state.jobs if j.id == job_id), state.catalog)


def test_cancel_from_another_thread_mid_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec Req 2 AC 6 / Req 3 AC 6 / design (cancellation token): a 5,000-task job
    being placed over 5,000 hosts (no shortcuts: the slow path) is cancelled from another
    thread while the attempt holds over a hundred provisional debits and a shared debit;
    Cancelled is raised at the very next checkpoint, nothing was charged to the session's
    books, no debit survives, and the allocator then schedules normally."""
    contexts: list[AllocContext] = []
    real_debit = AllocContext.debit_units

    def recording_debit(self: AllocContext, host: int, taken: dict[str, float]) -> None:
        if not contexts or contexts[-1] is not self:
            contexts.append(self)
        real_debit(self, host, taken)

    monkeypatch.setattr(AllocContext, "debit_units", recording_debit)
    token = HandshakeToken(lambda: bool(contexts) and len(contexts[-1].uncommitted) >= 100)
    alloc = Allocator(BIG_STATE, options=AllocOptions(shortcuts=False), token=token)
    alloc.begin_session()
    before = _availability(alloc)
    held_at_cancel: list[tuple[int, dict[str, float]]] = []

    def canceller() -> None:
        if token.reached.wait(HANDSHAKE_TIMEOUT_S):
            ctx = contexts[-1]
            held_at_cancel.append((len(ctx.uncommitted), dict(ctx.shared_uncommitted)))
            token.cancel()
        token.cancel_sent.set()

    thread = threading.Thread(target=canceller)
    thread.start()
    try:
        with pytest.raises(Cancelled):
            alloc.decide(_request(BIG_STATE, "big"))
    finally:
        thread.join()
    assert token.reached.is_set()
    held, shared = held_at_cancel[0]
    assert held >= 100
    assert shared == {"lic": 1e6}  # one licence, in units of its resolution (1e-6)
    assert token.checkpoints_after_cancel == 1  # stopped at the next checkpoint
    after = _availability(alloc)
    assert np.array_equal(after[0], before[0])
    assert np.array_equal(after[1], before[1])
    assert after[2] == before[2]
    assert contexts[-1].uncommitted == {}
    assert contexts[-1].shared_uncommitted == {}
    assert len(alloc.cache) == 0

    # A token stays cancelled: later work is driven with a fresh one. The books the
    # cancelled attempt left behind are clean (the same session goes on), and so is
    # the next session.
    alloc.token = CancelToken()
    for _ in range(2):
        d = alloc.decide(_request(BIG_STATE, "small"))
        assert isinstance(d, Dispatched)
        assert d.allocation.slots == 3
        assert alloc.books.shared_available("lic") == before[2] - 1
        alloc.begin_session()


def test_cancelled_before_a_job_raises_at_its_start() -> None:
    """Design (checkpoints: the start of every job): a session whose token is already
    cancelled decides nothing and raises Cancelled, not an Exception."""
    state = ClusterBuilder().hosts(2, slots=1).job("j", tasks=1).build()
    token = CancelToken()
    token.cancel()
    session = Session(state, token=token)
    with pytest.raises(Cancelled):
        session.run()
    try:
        session.run()
    except Exception:
        pytest.fail("Cancelled was caught by `except Exception`")
    except Cancelled:
        pass
    else:
        pytest.fail("a cancelled session ran")
    assert token.cancelled


def test_cancelled_session_leaves_the_state_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Design (sans-I/O core; the session's books are scratch): a session cancelled after
    it dispatched a job changes nothing in the ClusterState, and a rerun with a fresh
    token decides exactly as an uncancelled session does."""
    state = ClusterBuilder().hosts(3, slots=2, mem=100).job("j1", 2).job("j2", 3).build()
    reference = Session(state).run().decisions
    used_before = {name: col.copy() for name, col in state.used.items()}
    token = CancelToken()
    real = Allocator.decide

    def cancel_after_first(
        self: Allocator, job: JobRequest, mode: AllocMode = AllocMode.NORMAL
    ) -> Decision:
        decision = real(self, job, mode)
        token.cancel()
        return decision

    monkeypatch.setattr(Allocator, "decide", cancel_after_first)
    with pytest.raises(Cancelled):
        Session(state, token=token).run()
    monkeypatch.undo()
    assert isinstance(reference[0], Dispatched)
    for name, col in state.used.items():
        assert np.array_equal(col, used_before[name])
    assert Session(state).run().decisions == reference
