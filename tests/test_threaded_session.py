"""The threaded session pipeline (issue 4, "Threaded pipeline"): a picker thread feeding an
allocator thread decides exactly as one thread does, stops at its next checkpoint when
cancelled from outside (leaving the core's state as it was), and lets an exception from
either thread out of ``run`` with both threads ended."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from strategies import USERS, Scenario, scenarios
from xce.alloc import (
    AllocatorRegistry,
    AllocContext,
    CancelToken,
    Decision,
    ParJobAllocator,
    PlanIterator,
    PreparedPrimary,
    SeqJobAllocator,
)
from xce.cluster import ClusterState, PendingJob, Queue, state_from_dict
from xce.core import (
    FcfsPicker,
    JobKilled,
    Pick,
    QueueCursor,
    SchedulerCore,
    Session,
    SessionResult,
    default_pickers,
    state_to_dict,
)
from xce.errors import Cancelled

PICKERS = ("fcfs", "strict", "fairshare")
SAFETY_NET_S = 60.0  # a guard against a hang, never a timing assertion
_THREAD_NAMES = ("xce-picker", "xce-allocator")


def _values(decisions: tuple[Decision, ...]) -> list[tuple[Any, ...]]:
    """Decisions with ``PendInfo.hosts`` (left out of ``==``) compared too."""
    out = []
    for d in decisions:
        info = getattr(d, "info", None)
        out.append((d, tuple(sorted(info.hosts.items())) if info is not None else ()))
    return out


def _work(result: SessionResult) -> tuple[Any, ...]:
    """The statistics that count work done (not time, not the thread count)."""
    s = result.stats
    return (
        s.jobs,
        s.dispatched,
        s.pending,
        dict(s.pending_by_reason),
        s.cache_hits,
        s.cache_misses,
        s.cache_inserts,
        s.plans_tried,
        s.host_tries,
        s.iterators,
    )


def _pipeline_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in _THREAD_NAMES]


def _assert_same_session(state: ClusterState, **kwargs: Any) -> None:
    single = Session(state, **kwargs).run()
    threaded = Session(state, **kwargs).run(threads=True)
    assert _values(threaded.decisions) == _values(single.decisions)
    assert _work(threaded) == _work(single)
    assert (single.stats.threads, threaded.stats.threads) == (1, 2)
    assert _pipeline_threads() == []


# -- identical decisions ------------------------------------------------------------------


@pytest.mark.parametrize("picker", PICKERS)
@given(scenario=scenarios())
def test_threaded_and_single_threaded_decisions_are_identical(
    picker: str, scenario: Scenario
) -> None:
    """Issue 4 AC (property): threaded and single-threaded decisions identical, for each
    builtin picker as the default over random states; the work counted is identical too
    and stats.threads is 2 (threaded) and 1 (single)."""
    _assert_same_session(scenario.state, picker=picker)


@st.composite
def _mixed_pickers(draw: st.DrawFn) -> ClusterState:
    """A random state whose two queues (of equal priority, sometimes) name different
    pickers, with fairshare shares, so feedback and no-feedback queues interleave."""
    builder = draw(scenarios()).builder()
    same = draw(st.booleans())
    for name, priority in (("normal", 30), ("high", 30 if same else 50)):
        shares = draw(st.dictionaries(st.sampled_from(USERS), st.integers(0, 3), max_size=3))
        builder.queue(name, priority, picker=draw(st.sampled_from(PICKERS)), shares=shares or None)
    return builder.build()


@given(_mixed_pickers())
def test_threaded_decisions_are_identical_with_a_picker_per_queue(state: ClusterState) -> None:
    """Issue 4 AC (property): threaded == single-threaded when queues name their own
    pickers (fcfs runs ahead, strict and fairshare wait for feedback) and queues of equal
    priority are merged."""
    _assert_same_session(state)


def _many_jobs(n: int) -> ClusterState:
    """More picks than the pipeline holds in flight (batches of 64, 16 batches), over two
    queues of equal priority and three users, so the picker blocks on a full queue."""
    builder = (
        ClusterBuilder()
        .hosts(40, slots=4, mem=4000, type="A")
        .hosts(40, prefix="b", slots=8, mem=2000, type="B")
        .queue("normal", 10, shares={"alice": 3, "bob": 1})
        .queue("other", 10, shares={"default": 2})
    )
    shapes = ("", "rusage[mem=500]", "select[type==B] rusage[mem=300]", "span[hosts=1]")
    for i in range(n):
        builder.job(
            f"j{i}",
            1 + i % 5,
            resreq=shapes[i % len(shapes)],
            user=USERS[i % 3],
            queue=("normal", "other")[i % 2],
            submit_time=i % 7,
        )
    return builder.build()


@pytest.mark.parametrize("picker", PICKERS)
def test_threaded_decisions_are_identical_beyond_the_pipeline_depth(picker: str) -> None:
    """Issue 4 AC: threaded == single-threaded over 1,500 jobs — more than the bounded
    queue holds — for each builtin picker."""
    _assert_same_session(_many_jobs(1_500), picker=picker)


def test_core_threaded_sessions_match_single_threaded_ones() -> None:
    """Issue 4 AC: SchedulerCore.run_session(threads=True) == threads=False, and its
    stats say two threads."""
    core = SchedulerCore(_many_jobs(300), picker="fairshare")
    single, threaded = core.run_session(), core.run_session(threads=True)
    assert _values(threaded.decisions) == _values(single.decisions)
    assert threaded.stats.threads == 2


# -- cancellation ----------------------------------------------------------------------------


class HandshakeToken(CancelToken):
    """A token that, at the ``at``-th checkpoint passed by the pipeline thread named
    ``thread``, tells the canceller (``reached``) and blocks that thread until the cancel
    was sent (``cancel_sent``); the checkpoint then returns normally, so cancellation is
    observed at each thread's *next* checkpoint. Counts, per thread, the checkpoints
    entered after the cancel.

    The handshake thread is blocked while the cancel is sent, so it still has work (and
    checkpoints) left whenever ``at`` is below its own number of checkpoints: the other
    thread cannot finish the session alone in the meantime."""

    def __init__(self, thread: str, at: int) -> None:
        super().__init__()
        self.thread = thread
        self.at = at
        self.reached = threading.Event()
        self.cancel_sent = threading.Event()
        self.after_cancel: dict[str, int] = {}
        self._mine = 0

    def checkpoint(self) -> None:
        name = threading.current_thread().name
        if self.cancel_sent.is_set():
            self.after_cancel[name] = self.after_cancel.get(name, 0) + 1
        super().checkpoint()
        if name != self.thread or self.reached.is_set():
            return
        self._mine += 1
        if self._mine == self.at:
            self.reached.set()
            assert self.cancel_sent.wait(SAFETY_NET_S)


def _canceller(token: HandshakeToken) -> threading.Thread:
    def cancel() -> None:
        if token.reached.wait(SAFETY_NET_S):
            token.cancel()
        token.cancel_sent.set()

    thread = threading.Thread(target=cancel, name="test-canceller", daemon=True)
    thread.start()
    return thread


def _checkpoints(state: ClusterState, picker: str) -> int:
    """Checkpoints of a whole single-threaded session: the allocator thread of a threaded
    one passes at least as many (the same decisions, plus polls of an empty queue)."""
    token = CancelToken()
    SchedulerCore(state, picker=picker).run_session(token=token)
    return token.checkpoints


def _assert_cancel_then_recover(state: ClusterState, picker: str, thread: str, at: int) -> None:
    reference = SchedulerCore(state, picker=picker).run_session()
    core = SchedulerCore(state, picker=picker)
    before = state_to_dict(core.state), {k: v.tolist() for k, v in core.state.used.items()}
    token = HandshakeToken(thread, at)
    canceller = _canceller(token)
    with pytest.raises(Cancelled):
        core.run_session(threads=True, token=token)
    canceller.join(SAFETY_NET_S)
    assert not canceller.is_alive()
    assert token.reached.is_set()
    assert _pipeline_threads() == []  # both threads ended before run_session returned
    assert all(n <= 1 for n in token.after_cancel.values()), token.after_cancel
    assert (state_to_dict(core.state), {k: v.tolist() for k, v in core.state.used.items()}) == (
        before
    )
    for threads in (False, True):
        again = core.run_session(threads=threads, token=CancelToken())
        assert _values(again.decisions) == _values(reference.decisions)


@pytest.mark.parametrize(
    ("thread", "where"),
    [
        ("xce-picker", "first"),
        ("xce-picker", "middle"),
        ("xce-allocator", "first"),
        ("xce-allocator", "middle"),
    ],
)
@pytest.mark.parametrize("picker", PICKERS)
def test_cancel_from_another_thread_ends_the_threaded_session(
    picker: str, thread: str, where: str
) -> None:
    """Issue 4 AC: cancelling a session in the threaded mode from another thread ends it
    at the next checkpoint (Cancelled out of run_session; each thread passes at most one
    checkpoint after the cancel, and both have ended) — cancelled while the picker or the
    allocator thread is at its first or a middle checkpoint; the core's state is
    unchanged; the core then runs the next session normally (a fresh token), with the
    decisions of a never-cancelled run."""
    state = _many_jobs(400)
    if where == "first":
        at = 1
    elif thread == "xce-picker":
        at = len(state.jobs) // 2  # the picker checkpoints at least once per pick
    else:
        at = _checkpoints(state, picker) // 2
    _assert_cancel_then_recover(state, picker, thread, at)


@settings(max_examples=25)
@given(scenarios(), st.sampled_from(PICKERS), st.data())
def test_cancel_at_any_checkpoint_leaves_the_core_ready(
    scenario: Scenario, picker: str, data: st.DataObject
) -> None:
    """Issue 4 AC (property): cancelled at a random checkpoint of its allocator thread
    (any but the last a single-threaded session would pass), over a random state, the
    threaded session ends, nothing changed, and the next session decides as a
    never-cancelled one."""
    total = _checkpoints(scenario.state, picker)
    assume(total >= 2)
    at = data.draw(st.integers(1, total - 1), label="cancel at")
    _assert_cancel_then_recover(scenario.state, picker, "xce-allocator", at)


# -- exceptions in the pipeline's threads ----------------------------------------------------


class Boom(Exception):
    pass


class ExplodingAllocator:
    """An allocator plugin that elects the 7-task primaries (only mallory's job has 7
    tasks) and raises when asked for their plans."""

    name = "exploding"

    def elect(self, primary: PreparedPrimary) -> bool:
        return primary.tasks == 7

    def prepare(self, ctx: AllocContext) -> None:
        return None

    def plans(self, primary: PreparedPrimary, ctx: AllocContext) -> PlanIterator:
        raise Boom("plugin failure")


class ExplodingPicker:
    """A picker whose cursor raises when it hands out a job of user ``mallory``."""

    name = "exploding"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return _ExplodingCursor(FcfsPicker().start(queue, jobs, state))


class _ExplodingCursor:
    needs_feedback = False

    def __init__(self, inner: QueueCursor) -> None:
        self._inner = inner

    def peek(self) -> Pick | None:
        return self._inner.peek()

    def pop(self) -> Pick | None:
        pick = self._inner.pop()
        if pick is not None and pick.job.user == "mallory":
            raise Boom("picker failure")
        return pick

    def feedback(self, pick: Pick, decision: Decision) -> None:
        self._inner.feedback(pick, decision)


def _with_mallory(position: int, n: int = 1_500) -> ClusterState:
    """_many_jobs(n) with submit times rising in file order, and job ``position`` a
    7-task job of user mallory, alone in a queue of the same priority (so every picker
    reaches it at that point of the merged order, never blocked behind another job)."""
    doc = state_to_dict(_many_jobs(n))
    doc["queues"]["mq"] = {"priority": 10}
    for i, job in enumerate(doc["jobs"]):
        job["submit_time"] = i
    doc["jobs"][position] = {
        "id": "m",
        "user": "mallory",
        "queue": "mq",
        "tasks": 7,
        "submit_time": position,
    }
    return state_from_dict(doc)


def _run_guarded(run: Callable[[], SessionResult]) -> BaseException | None:
    """Run a session in a daemon thread; the join timeout only keeps a hang from hanging
    the suite — the test asserts the session ended."""
    outcome: list[BaseException | None] = []

    def body() -> None:
        try:
            run()
        except BaseException as err:
            outcome.append(err)
        else:
            outcome.append(None)

    thread = threading.Thread(target=body, name="test-session", daemon=True)
    thread.start()
    thread.join(SAFETY_NET_S)
    assert not thread.is_alive(), "the threaded session hung"
    assert _pipeline_threads() == []
    return outcome[0]


@pytest.mark.parametrize("position", [0, 1_000, 1_499])
@pytest.mark.parametrize("picker", PICKERS)
def test_an_allocator_plugin_exception_propagates_and_both_threads_end(
    picker: str, position: int
) -> None:
    """Issue 4 ("threaded pipeline"): an exception raised by a plugin in the allocator
    thread comes out of run(threads=True) unchanged, and both threads end — whether the
    picker thread is running ahead (fcfs: blocked on the full queue) or waiting for a
    decision (strict, fairshare); the first, a middle or the last job failing."""
    state = _with_mallory(position)
    registry = AllocatorRegistry((ExplodingAllocator(), SeqJobAllocator(), ParJobAllocator()))
    session = Session(state, registry=registry, picker=picker)
    err = _run_guarded(lambda: session.run(threads=True))
    assert isinstance(err, Boom)
    assert str(err) == "plugin failure"
    with pytest.raises(Boom):  # the same failure, single-threaded
        session.run()


@pytest.mark.parametrize("position", [0, 1_000])
def test_a_picker_exception_propagates_and_both_threads_end(position: int) -> None:
    """Issue 4 ("threaded pipeline"): an exception raised by a picker plugin in the
    picker thread comes out of run(threads=True), and the allocator thread ends too."""
    pickers = default_pickers(plugins=False)
    pickers.register(ExplodingPicker())
    session = Session(_with_mallory(position), pickers=pickers, picker="exploding")
    err = _run_guarded(lambda: session.run(threads=True))
    assert isinstance(err, Boom)
    assert str(err) == "picker failure"


def test_a_session_after_a_failed_one_runs_normally() -> None:
    """Issue 4 ("threaded pipeline"): a failure leaves no partial state: once the faulty
    job is gone, the same core decides as a fresh one."""
    state = _with_mallory(10, n=200)
    registry = AllocatorRegistry((ExplodingAllocator(), SeqJobAllocator(), ParJobAllocator()))
    core = SchedulerCore(state, registry=registry)
    with pytest.raises(Boom):
        core.run_session(threads=True)
    core.apply(JobKilled("m"))
    fresh = SchedulerCore(core.state)
    assert _values(core.run_session(threads=True).decisions) == _values(
        fresh.run_session().decisions
    )
