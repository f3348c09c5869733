"""issue 27: the forward replay of a plain snapshot on the simulator's plain replay
(xce.predict.plain) is an exact shortcut of the replay session by session: a property
over random plain snapshots (running work ending before, at and after its estimate,
deep queues, several queues and priorities, fcfs and strict, backfill none, easy and
conservative, every predictor, sampled runs) gives every job the same start, the same
reason why never, the same session and end counts, with ``Policy.plain`` on and off;
the first session starts what ``xce schedule`` dispatches; the random cases take the
shortcut (checked, not assumed); and what it cannot replay goes session by session."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from test_predict import REGISTRY, USERS, predictor_specs, taught
from xce.cluster import ClusterState, estimate
from xce.core import SchedulerCore
from xce.predict import FinishedJob, RuntimePredictor
from xce.predict.forward import ForwardRun, Policy, forward_replay, predict_starts
from xce.predict.plain import plain_forward

EXAMPLES = 80
NOW = 100.0


@st.composite
def plain_snapshots(draw: st.DrawFn) -> tuple[ClusterState, Policy]:
    """1-6 hosts of 1-8 slots (some closed), running work on them (started up to 50 s
    ago, estimates none, past, near and far), 1-25 pending jobs of 1 task to all the ok
    hosts have (in a tenth of the cases, more), submitted at shared instants, estimates
    none (the queue's default), short and long, in the normal queue and one of the same
    or a higher priority; fcfs, strict or the state's picker; backfill none, easy or
    conservative."""
    b = ClusterBuilder().at(NOW)
    # every queue has a default runtime: a job of no estimate runs for ever under
    # ``limit``, which the plain replay cannot replay (its simulation has runtimes)
    b.queue("normal", 10, default_runtime=draw(st.sampled_from([40.0, 300.0])))
    b.queue("high", draw(st.sampled_from([10, 30])), default_runtime=25.0)
    free: dict[str, int] = {}
    for i in range(draw(st.integers(1, 6))):
        slots = draw(st.integers(1, 8))
        closed = draw(st.sampled_from([False, False, False, True]))
        b.host(f"h{i}", slots, status="closed" if closed else None)
        if not closed:
            free[f"h{i}"] = slots
    total = sum(free.values())
    for k in range(draw(st.integers(0, 6))):
        room = sorted(h for h, n in free.items() if n)
        if not room:
            break
        on = {}
        for h in draw(st.lists(st.sampled_from(room), min_size=1, max_size=2, unique=True)):
            on[h] = draw(st.integers(1, free[h]))
            free[h] -= on[h]
        b.running(
            f"r{k}",
            on,
            user=draw(st.sampled_from(USERS)),
            queue=draw(st.sampled_from(["normal", "high"])),
            start_time=NOW - draw(st.sampled_from([0.0, 10.0, 20.0, 50.0])),
            requested_time=draw(st.sampled_from([None, 30.0, 60.0, 120.0, 200.0])),
        )
    burst = draw(st.booleans())
    widths = [1, 1, 2, 3, max(total, 1)]
    if draw(st.integers(0, 9)) == 0:  # a job wider than the ok hosts (never starts)
        widths.append(max(total, 1) + 1)
    for j in range(draw(st.integers(1, 25))):
        tasks = draw(st.sampled_from(widths))
        b.job(
            f"j{j}",
            draw(st.integers(1, tasks)),
            user=draw(st.sampled_from(USERS)),
            queue=draw(st.sampled_from(["normal", "normal", "high"])),
            submit_time=float(j % 3) if burst else draw(st.sampled_from([0.0, 50.0, NOW])),
            requested_time=draw(st.sampled_from([None, 5.0, 30.0, 60.0, 60.0, 120.0])),
        )
    picker = draw(st.sampled_from([None, "fcfs", "strict"]))
    if picker is not None:
        b.picker(picker)
    backfill = draw(st.sampled_from(["none", "easy", "conservative"]))
    return b.build(), Policy(picker=draw(st.sampled_from([None, "fcfs"])), backfill=backfill)


def both_ways(state: ClusterState, predictor: RuntimePredictor, policy: Policy) -> ForwardRun:
    """The replay on the plain replay (asserted taken) and session by session: the same
    starts, reasons (code and message), sessions and ends."""
    fast = forward_replay(state, predictor.predict, policy=policy)
    slow = forward_replay(state, predictor.predict, policy=_off(policy))
    assert fast.first is None or _refused(state, policy, slow), "the shortcut was not taken"
    assert fast.starts == slow.starts
    assert {j: (i.reason, i.message) for j, i in fast.reasons.items()} == {
        j: (i.reason, i.message) for j, i in slow.reasons.items() if fast.starts[j] is None
    }
    assert fast.sessions == slow.sessions
    assert fast.ends == slow.ends
    return fast


def _refused(state: ClusterState, policy: Policy, run: ForwardRun) -> bool:
    """What the plain replay may refuse: running work that has run its estimate out,
    or a job that never starts (the module docstring of xce.predict.plain says why)."""
    return _outlived(state) or any(s is None for s in run.starts.values())


def _outlived(state: ClusterState) -> bool:
    """Some running work has run its estimate out: a predictor (capped at the
    estimate) ends it at now, after the first session, which the plain replay cannot."""
    return any(
        r.start_time + estimate(r.requested_time, state.queues.get(r.queue)) <= NOW
        for r in state.running
    )


def _off(policy: Policy) -> Policy:
    return Policy(picker=policy.picker, backfill=policy.backfill, plain=False)


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(snapshot=plain_snapshots(), case=predictor_specs())
def test_the_plain_forward_replay_starts_every_job_as_the_sessions_do(
    snapshot: tuple[ClusterState, Policy], case: tuple[str, tuple[FinishedJob, ...]]
) -> None:
    """issue 27 property: random plain snapshots replayed on the plain replay and
    session by session give every pending job the same start, every job that never
    starts the same reason, and the same session and end counts."""
    state, policy = snapshot
    both_ways(state, taught(case), policy)


@settings(max_examples=25, derandomize=True, database=None, deadline=None)
@given(snapshot=plain_snapshots(), case=predictor_specs(), seed=st.integers(0, 3))
def test_sampled_runs_draw_alike_both_ways(
    snapshot: tuple[ClusterState, Policy],
    case: tuple[str, tuple[FinishedJob, ...]],
    seed: int,
) -> None:
    """``predict_starts`` with sampled runs gives every job the same start and interval
    on the plain replay as session by session: both ask the predictor for the same
    runtimes in the same order."""
    state, policy = snapshot
    p = taught(case)
    fast = predict_starts(state, p, runs=3, seed=seed, policy=policy)
    slow = predict_starts(state, p, runs=3, seed=seed, policy=_off(policy))
    assert fast.jobs == slow.jobs


@settings(max_examples=40, derandomize=True, database=None, deadline=None)
@given(snapshot=plain_snapshots(), case=predictor_specs())
def test_its_first_session_starts_what_xce_schedule_dispatches(
    snapshot: tuple[ClusterState, Policy], case: tuple[str, tuple[FinishedJob, ...]]
) -> None:
    """The jobs the plain replay starts at the snapshot's time are the ones the session
    ``xce schedule`` runs on the state dispatches (issue 27: the replay decides as
    ``xce schedule`` for the first session)."""
    state, policy = snapshot
    run = forward_replay(state, taught(case).predict, policy=policy)
    if run.first is not None:
        assert _refused(state, policy, run)
        return
    want = SchedulerCore(state, picker=policy.picker, backfill=policy.backfill).run_session(now=NOW)
    assert {j for j, s in run.starts.items() if s == NOW} == {d.job for d in want.dispatched}


def test_the_random_snapshots_reach_the_shortcut() -> None:
    """The snapshots drawn above mostly take the plain replay (not when running work
    has run its estimate out or a job never starts), and a good share of those has what
    makes a replay hard: several sessions, planning policies, running work."""
    seen: dict[str, int] = dict.fromkeys(["taken", "sessions", "planned", "running"], 0)
    count = 0

    @given(snapshot=plain_snapshots(), case=predictor_specs())
    @settings(
        max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
        derandomize=True,
    )  # fmt: skip
    def draw_cases(
        snapshot: tuple[ClusterState, Policy], case: tuple[str, tuple[FinishedJob, ...]]
    ) -> None:
        nonlocal count
        state, policy = snapshot
        run = forward_replay(state, taught(case).predict, policy=policy)
        count += 1
        if run.first is not None:
            return
        seen["taken"] += 1
        seen["sessions"] += run.sessions >= 3
        seen["planned"] += policy.backfill != "none"
        seen["running"] += bool(state.running)

    draw_cases()
    assert count == EXAMPLES
    assert seen["taken"] >= 0.6 * count, seen
    for what, n in seen.items():
        assert n >= 0.1 * count, (what, seen)


def _small() -> ClusterBuilder:
    b = ClusterBuilder().at(NOW).hosts(2, slots=2)
    b.running("r0", {"h0": 1}, start_time=NOW - 10, requested_time=100.0)
    return b.job("a", 2, requested_time=30.0).job("b", 1, requested_time=30.0)


def _changed(**doc: Any) -> ClusterState:
    data = _small().to_dict()
    for key, value in doc.items():
        if key.startswith("job_"):
            data["jobs"][0][key[4:]] = value
        else:
            data[key] = value
    from xce.cluster import state_from_dict

    return state_from_dict(data, "<test>")


@pytest.mark.parametrize(
    ("state", "policy"),
    [
        (_changed(job_hold=True), Policy()),
        (_changed(job_begin_time=NOW + 5), Policy()),
        (_changed(job_dependency="afterok:r0"), Policy()),
        (_changed(job_array="1-3"), Policy()),
        (_changed(job_min_tasks=1, job_max_tasks=2, job_tasks=None), Policy()),
        (_changed(job_resreq="span[hosts=1]"), Policy()),
        (_changed(), Policy(picker="fairshare")),
        (_changed(), Policy(picker="priority")),
        (_changed(), Policy(plain=False)),
    ],
    ids=[
        "held", "begin time", "dependency", "array", "task range", "span", "fairshare",
        "priority", "switched off",
    ],
)  # fmt: skip
def test_what_the_plain_replay_cannot_replay_goes_session_by_session(
    state: ClusterState, policy: Policy
) -> None:
    """A gated job, a job the simulation would not see as the snapshot's, a picker with
    an order of its own, or the switch off: no plain replay (the session-by-session
    replay runs, and every job that can start does)."""
    limit = REGISTRY.make("limit")
    run = forward_replay(state, limit.predict, policy=policy)
    assert run.first is not None, "the plain replay took it"


def test_an_outlived_prediction_ending_now_goes_session_by_session() -> None:
    """Running work whose prediction it has outlived ends *at* now, after the first
    session (which sees it running): the plain replay would end it before, so it is not
    taken; a prediction ending after now is."""
    state = _small().build()
    lengths = {"a": 10.0, "b": 10.0}
    assert plain_forward(state, lengths, {"r0": 10.0}, Policy(), NOW) is None  # ends at now
    assert plain_forward(state, lengths, {"r0": 10.5}, Policy(), NOW) is not None


@settings(max_examples=40, derandomize=True, database=None, deadline=None)
@given(snapshot=plain_snapshots(), case=predictor_specs(), data=st.data())
def test_a_replay_until_some_jobs_start_gives_them_the_same_starts(
    snapshot: tuple[ClusterState, Policy],
    case: tuple[str, tuple[FinishedJob, ...]],
    data: st.DataObject,
) -> None:
    """issue 27: ``until`` (``xce predict --job``) on a plain snapshot replays on the
    plain replay (to its end: what comes before a job's start does not depend on what
    follows) and gives the jobs watched the starts of the session-by-session replay,
    which stops once they have started."""
    state, policy = snapshot
    watched = frozenset(
        data.draw(st.lists(st.sampled_from([j.id for j in state.jobs]), min_size=1, max_size=2))
    )
    predictor = taught(case)
    fast = forward_replay(state, predictor.predict, policy=policy, until=watched)
    slow = forward_replay(state, predictor.predict, policy=_off(policy), until=watched)
    assert fast.first is None or _refused(state, policy, slow), "the shortcut was not taken"
    assert {j: fast.starts[j] for j in watched} == {j: slow.starts[j] for j in watched}
    if fast.first is None:  # the plain replay ran to its end
        assert fast.starts == forward_replay(state, predictor.predict, policy=policy).starts
