"""Runtime predictors and the forward replay (xce.predict, issue 27).

1. A conformance suite over every predictor of ``default_predictors()`` (a new builtin or
   an installed plugin is covered by its name): predictions and draws within
   ``[elapsed, limit]``, purity, ``fresh()``, malformed options, and ``observe`` as the
   only thing that changes what a predictor says.
2. The ``history`` predictor (Tsafrir et al. 2007) by hand: the mean of the user's last
   two runtimes, by name, the raise ladder, the quantile option, ``learn()``.
3. The forward replay: its first session is ``xce schedule``'s; the exact candidate
   shortcut changes no start; gates and array limits hold over time; a hand-computed
   conservative-backfill case; the sampled interval of ``predict_starts``.

Hosts are ``h0``, ``h1``, ... so a host's number is its index in allocations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder, reserved_victim_site
from flow_states import acyclic, flow_doc, flow_state
from strategies import USERS, scenarios
from xce.alloc import Decision, Dispatched, Pending, PendReason
from xce.cluster import ClusterState, estimate, state_from_dict
from xce.cluster.jobflow import DepKind
from xce.core import JobFinished, JobPreempted, JobStarted, SchedulerCore, SessionResult
from xce.core.events import Event
from xce.errors import InputError
from xce.predict import (
    Asked,
    FinishedJob,
    HistoryPredictor,
    RuntimePredictor,
    default_predictors,
    learn,
)
from xce.predict.forward import ForwardRun, Policy, _Candidates, forward_replay, predict_starts
from xce.predict.predictors import MIN_OWN_RATIOS, RAISES

REGISTRY = default_predictors()
NAMES = REGISTRY.names()
BUILTINS = ("limit", "fraction", "history")
NO_SPREAD = ("limit", "fraction")  # builtins whose sample is their point prediction

# Valid options of the builtins that take one (fresh() must keep them).
OPTIONS: dict[str, tuple[str, ...]] = {"fraction": ("0.25", "0.9"), "history": ("0.5", "0.1")}
# Options a builtin must refuse: limit takes none; the others a number in (0, 1).
BAD_OPTIONS: dict[str, tuple[str, ...]] = {
    "limit": ("x", "", "0.5"),
    "fraction": ("bad", "", "0", "1", "1.5", "-0.25", "nan", "inf", "0.5x"),
    "history": ("bad", "", "0", "1", "2", "-0.5", "nan", "inf"),
}

PICKERS = ("fcfs", "strict", "priority", "fairshare")
BACKFILLS = ("none", "easy", "conservative")
JOB_NAMES = (None, "x", "y")
RESREQS = ("", "", "span[hosts=1]", "rusage[mem=500]", "select[fast]")


# ----------------------------------------------------------------------------- helpers


def done(
    user: str,
    runtime: float,
    end: float,
    *,
    name: str | None = None,
    limit: float | None = None,
    id: str = "f",
) -> FinishedJob:
    """A finished job of ``user`` that ran ``runtime`` seconds and ended at ``end``."""
    return FinishedJob(id, user, end - runtime, end, limit=limit, name=name)


def ask(
    user: str = "alice", limit: float = 1e6, *, name: str | None = None, elapsed: float = 0.0
) -> Asked:
    return Asked("q", user, limit, name=name, elapsed=elapsed)


def history_of(*jobs: FinishedJob, quantile: float | None = None) -> HistoryPredictor:
    p = HistoryPredictor(quantile)
    for j in jobs:
        p.observe(j)
    return p


def made(spec: str, history: Sequence[FinishedJob] = ()) -> RuntimePredictor:
    """A fresh predictor for ``spec`` that has learned ``history``."""
    return learn(REGISTRY.make(spec), history)


def pristine(name: str) -> RuntimePredictor:
    """A predictor of ``name`` from a registry made just now: nothing can have taught it
    (not even through state a fresh() might share with its prototype)."""
    return default_predictors().get(name).fresh()


def samples(p: RuntimePredictor, jobs: Sequence[Asked], seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [p.sample(a, rng) for a in jobs]


# ------------------------------------------------------------------ drawn jobs and asks

_USERS = ("u0", "u1", "u2")


@st.composite
def finished_jobs(draw: st.DrawFn) -> FinishedJob:
    start = draw(st.floats(0, 1e6))
    runtime = draw(st.floats(0, 2e5) | st.sampled_from([0.0, 60.0, 3600.0]))
    limit = draw(st.none() | st.floats(1, 3e5) | st.just(3600.0))
    return FinishedJob(
        draw(st.sampled_from(("a", "b", "c"))),
        draw(st.sampled_from(_USERS)),
        start,
        start + runtime,
        limit=limit,
        name=draw(st.sampled_from(JOB_NAMES)),
    )


histories = st.lists(finished_jobs(), max_size=25).map(
    lambda jobs: tuple(sorted(jobs, key=lambda j: j.end))
)


@st.composite
def asks(draw: st.DrawFn) -> Asked:
    """A job asked about: a finite or infinite limit, pending or running (elapsed up to
    the limit, often past what a predictor would say)."""
    limit = draw(st.just(math.inf) | st.floats(0, 3e5) | st.sampled_from([60.0, 3600.0]))
    if math.isfinite(limit):
        elapsed = draw(st.just(0.0) | st.just(limit) | st.floats(0, 1).map(lambda f: f * limit))
    else:
        elapsed = draw(st.just(0.0) | st.floats(0, 1e6))
    return Asked(
        "q",
        draw(st.sampled_from(_USERS)),
        limit,
        name=draw(st.sampled_from(JOB_NAMES)),
        tasks=draw(st.integers(1, 8)),
        elapsed=elapsed,
    )


ask_lists = st.lists(asks(), min_size=1, max_size=6)


# --------------------------------------------------------------- 1. conformance suite


@pytest.mark.parametrize("name", NAMES)
@given(history=histories, job=asks(), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_predictions_stay_within_elapsed_and_limit(
    name: str, history: tuple[FinishedJob, ...], job: Asked, seed: int
) -> None:
    """predict and sample return a number in ``[elapsed, limit]`` (never NaN; infinite
    only when the limit is), after any history, for pending and running jobs (also
    those that ran past what the predictor would say)."""
    p = made(name, history)
    for value in (p.predict(job), p.sample(job, np.random.default_rng(seed))):
        assert not math.isnan(value)
        assert job.elapsed <= value <= job.limit, (value, job)
        assert math.isfinite(value) or math.isinf(job.limit)


@pytest.mark.parametrize("name", NAMES)
@given(history=histories, jobs=ask_lists, seed=st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_predict_and_sample_are_pure(
    name: str, history: tuple[FinishedJob, ...], jobs: list[Asked], seed: int
) -> None:
    """Asking twice gives the same point prediction; two generators in the same state
    give the same draws; asking (predict or sample, of any job) changes nothing of what
    the predictor says next."""
    p = made(name, history)
    first = [p.predict(a) for a in jobs]
    drawn = samples(p, jobs, seed)
    assert samples(p, jobs, seed) == drawn
    assert [p.predict(a) for a in jobs] == first
    samples(p, list(reversed(jobs)), seed + 1)  # more asking ...
    assert [p.predict(a) for a in jobs] == first  # ... changes nothing
    assert samples(p, jobs, seed) == drawn


@pytest.mark.parametrize("name", NAMES)
@given(history=histories, jobs=ask_lists, seed=st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_fresh_has_learned_nothing(
    name: str, history: tuple[FinishedJob, ...], jobs: list[Asked], seed: int
) -> None:
    """``fresh()`` of a predictor that has learned a history says what an untaught one
    says (point and draws), and making it leaves the taught one as it was; teaching a
    predictor the registry made teaches its prototype nothing."""
    taught = made(name, history)
    before = [taught.predict(a) for a in jobs]
    new = taught.fresh()
    untaught = pristine(name)
    prototype = REGISTRY.get(name)
    assert [prototype.predict(a) for a in jobs] == [untaught.predict(a) for a in jobs]
    assert new is not taught
    assert new.name == name
    assert [new.predict(a) for a in jobs] == [untaught.predict(a) for a in jobs]
    assert samples(new, jobs, seed) == samples(untaught, jobs, seed)
    assert [taught.predict(a) for a in jobs] == before


@pytest.mark.parametrize(
    ("name", "option"), [(n, o) for n in NAMES for o in (None, *OPTIONS.get(n, ()))]
)
@given(history=histories, jobs=ask_lists, seed=st.integers(0, 2**32 - 1))
@settings(max_examples=25, deadline=None)
def test_fresh_keeps_settings(
    name: str, option: str | None, history: tuple[FinishedJob, ...], jobs: list[Asked], seed: int
) -> None:
    """A fresh predictor of one made with ``NAME:OPTION`` has that option: taught the
    same history, it says (and draws) what the original says."""
    spec = name if option is None else f"{name}:{option}"
    original = made(spec, history)
    again = learn(original.fresh(), history)
    assert [again.predict(a) for a in jobs] == [original.predict(a) for a in jobs]
    assert samples(again, jobs, seed) == samples(original, jobs, seed)


def test_fresh_keeps_the_option_by_hand() -> None:
    """fraction:0.25 says a quarter of the limit, and so does its fresh(); history:0.5's
    fresh() still takes the calibrated median (see test_history_quantile_option)."""
    quarter = REGISTRY.make("fraction:0.25")
    assert quarter.predict(ask(limit=400)) == 100
    assert quarter.fresh().predict(ask(limit=400)) == 100
    assert REGISTRY.make("fraction").predict(ask(limit=400)) == 200
    median = learn(REGISTRY.make("history:0.5").fresh(), QUANTILE_HISTORY)
    assert median.predict(ask(limit=1000)) == pytest.approx(175)


@pytest.mark.parametrize(
    ("name", "option"), [(n, o) for n in NAMES if n in BAD_OPTIONS for o in BAD_OPTIONS[n]]
)
def test_a_malformed_option_is_refused(name: str, option: str) -> None:
    """``fresh(OPTION)`` (``--predictor NAME:OPTION``) is bad input when the predictor
    takes no option (limit) or the option is not a number strictly between 0 and 1
    (fraction's share, history's quantile), directly and through the registry."""
    with pytest.raises(InputError, match=name):
        REGISTRY.get(name).fresh(option)
    with pytest.raises(InputError, match=name):
        REGISTRY.make(f"{name}:{option}")


def test_every_builtin_is_registered() -> None:
    """limit, fraction and history are the builtins, in that order, all predictors."""
    assert default_predictors(plugins=False).names() == list(BUILTINS)
    assert all(isinstance(p, RuntimePredictor) for p in REGISTRY)


def test_an_unknown_predictor_names_the_known_ones() -> None:
    with pytest.raises(InputError, match="nope") as info:
        REGISTRY.make("nope:0.5")
    for name in NAMES:
        assert name in str(info.value)


@pytest.mark.parametrize("name", NAMES)
@given(history=histories, jobs=ask_lists, seed=st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_observe_changes_only_what_later_predictions_see(
    name: str, history: tuple[FinishedJob, ...], jobs: list[Asked], seed: int
) -> None:
    """A predictor observing the jobs one at a time in end order, asked (predict and
    sample) between observations, says at every step exactly what a fresh one that only
    observed the same prefix says: observe is the only thing that changes a
    prediction, and what it changes is only what comes after."""
    p = REGISTRY.get(name).fresh()
    for k in range(len(history) + 1):
        prefix = learn(pristine(name), history[:k])
        assert [p.predict(a) for a in jobs] == [prefix.predict(a) for a in jobs]
        assert samples(p, jobs, seed) == samples(prefix, jobs, seed)
        if k < len(history):
            p.observe(history[k])


# ------------------------------------------------------------------------ 2. history


def test_history_is_the_mean_of_the_last_two_runtimes() -> None:
    """alice ran 100, 200, 400 (in end order): her next job is predicted (200 + 400) / 2
    = 300; bob's runs are his own."""
    p = history_of(
        done("alice", 100, 1000),
        done("bob", 5000, 1500),
        done("alice", 200, 2000),
        done("alice", 400, 3000),
    )
    assert p.predict(ask("alice", 1000)) == 300
    assert p.predict(ask("bob", 10_000)) == 5000


def test_history_is_capped_at_the_limit() -> None:
    """The mean (300) is capped at the job's limit (250): a job never runs past it."""
    p = history_of(done("alice", 200, 2000), done("alice", 400, 3000))
    assert p.predict(ask("alice", 250)) == 250
    assert p.predict(ask("alice", 300)) == 300


def test_history_by_user_and_name_when_two_of_that_name_are_known() -> None:
    """alice ran "a" 100 and 300, then "b" 1000 and 2000: an "a" job is (100 + 300) / 2
    = 200 (two of that name known); "b" 1500; "c" (none known) and a nameless job take
    her last two, (1000 + 2000) / 2 = 1500; another user's "a" jobs are not hers."""
    p = history_of(
        done("alice", 100, 10, name="a"),
        done("alice", 300, 20, name="a"),
        done("bob", 9, 25, name="a"),
        done("bob", 9, 26, name="a"),
        done("alice", 1000, 30, name="b"),
        done("alice", 2000, 40, name="b"),
    )
    assert p.predict(ask("alice", 1e6, name="a")) == 200
    assert p.predict(ask("alice", 1e6, name="b")) == 1500
    assert p.predict(ask("alice", 1e6, name="c")) == 1500
    assert p.predict(ask("alice", 1e6)) == 1500


def test_history_with_one_job_of_the_name_takes_the_user() -> None:
    """One "a" job known (50) is not enough: the user's last two, (50 + 150) / 2 = 100."""
    p = history_of(done("alice", 150, 10, name="b"), done("alice", 50, 20, name="a"))
    assert p.predict(ask("alice", 1e6, name="a")) == 100


@pytest.mark.parametrize("limit", [3600.0, math.inf])
def test_history_without_a_finished_job_is_the_limit(limit: float) -> None:
    """A user with no finished job is predicted to run to the limit (infinite for an
    unbounded job); other users' jobs do not count."""
    p = history_of(done("bob", 100, 1000), done("bob", 100, 2000))
    assert p.predict(ask("alice", limit)) == limit
    assert p.sample(ask("alice", limit), np.random.default_rng(0)) == limit
    assert HistoryPredictor().predict(ask("bob", limit)) == limit


# Predicted 300 s (alice ran 300 twice); limit 1e6. (elapsed, what the prediction is
# raised to): the first of RAISES (60, 300, 900, ...) taking 300 past the elapsed time.
LADDER = [
    (0, 300),
    (299.5, 300),
    (300, 360),
    (359, 360),
    (360, 600),
    (599.9, 600),
    (600, 1200),
    (1199, 1200),
    (2000, 2100),
    (3899, 3900),
    (300 + 179_999, 300 + 180_000),
    (300 + 180_000, 1e6),  # past the last step: the limit
]


@pytest.mark.parametrize(("elapsed", "want"), LADDER)
def test_history_raise_ladder(elapsed: float, want: float) -> None:
    """A running job that outlived its prediction (300) is predicted to run the first
    of RAISES longer that takes it past its elapsed time; past the last, its limit."""
    p = history_of(done("alice", 300, 1000), done("alice", 300, 2000))
    assert p.predict(ask("alice", 1e6, elapsed=elapsed)) == want


def test_history_raise_ladder_follows_raises() -> None:
    """Every step of RAISES in turn: at elapsed = prediction + the previous step the
    prediction is raised by the next step."""
    p = history_of(done("alice", 300, 1000), done("alice", 300, 2000))
    previous = 0.0
    for step in RAISES:
        assert p.predict(ask("alice", 1e9, elapsed=300 + previous)) == 300 + step
        previous = step


def test_history_raise_is_capped_at_the_limit() -> None:
    """Raised past the elapsed time but never past the limit: 300 + 60 capped at 330."""
    p = history_of(done("alice", 300, 1000), done("alice", 300, 2000))
    assert p.predict(ask("alice", 330, elapsed=320)) == 330
    assert p.predict(ask("alice", 330, elapsed=330)) == 330


# alice's jobs (limit 1000): 100 (base: the limit, 1000: ratio 0.1), 100 (base 100: ratio
# 1), 400 (base 100: ratio 4), 100 (base 250: ratio 0.4). Next base: (400 + 100) / 2 = 250;
# site ratios [0.1, 1, 4, 0.4] (fewer than MIN_OWN_RATIOS of her own).
QUANTILE_HISTORY = (
    done("alice", 100, 1000, limit=1000),
    done("alice", 100, 2000, limit=1000),
    done("alice", 400, 3000, limit=1000),
    done("alice", 100, 4000, limit=1000),
)


@pytest.mark.parametrize(
    ("option", "want"),
    [
        (None, 250),  # the base
        ("0.5", 175),  # sorted [0.1, 0.4, 1, 4]: median 0.7; 250 * 0.7
        ("0.25", 81.25),  # at 0.75 of 0.1..0.4: 0.325
        ("0.9", 775),  # at 0.7 of 1..4: 3.1
        ("0.1", 47.5),  # at 0.3 of 0.1..0.4: 0.19
    ],
)
def test_history_quantile_option(option: str | None, want: float) -> None:
    """history:Q predicts the base (250) times the Q quantile (numpy's linear) of the
    calibrated ratios runtime / what the predictor said just before the job ended."""
    p = made("history" if option is None else f"history:{option}", QUANTILE_HISTORY)
    assert p.predict(ask("alice", 1000)) == pytest.approx(want)


def test_history_sample_is_the_base_times_a_ratio() -> None:
    """Draws are the base (250) times one of the calibrated ratios (0.1, 1, 4, 0.4),
    each capped at the limit (1000): 25, 250, 1000, 100, all of them drawn in time."""
    p = made("history", QUANTILE_HISTORY)
    rng = np.random.default_rng(7)
    drawn = {p.sample(ask("alice", 1000), rng) for _ in range(200)}
    assert drawn == {25.0, 250.0, 1000.0, 100.0}


def test_history_spread_is_the_users_own_once_calibrated() -> None:
    """With MIN_OWN_RATIOS of her own jobs calibrated (ratios 1 after the first), carol
    draws only her own ratios; bob, with fewer, draws the site's (carol's 0.1... and
    alice's 4)."""
    jobs = [done("alice", 100, 1, limit=1000), done("alice", 100, 2), done("alice", 400, 3)]
    jobs += [done("carol", 100, 10 + i, limit=1000) for i in range(MIN_OWN_RATIOS + 1)]
    jobs += [done("bob", 100, 100, limit=1000)]
    p = history_of(*jobs)
    rng = np.random.default_rng(1)
    carol = {p.sample(ask("carol", 1e6), rng) for _ in range(100)}
    assert carol == {10.0, 100.0}  # her own ratios: 0.1 (first job) and 1
    bob = {p.sample(ask("bob", 1e6), rng) for _ in range(400)}
    assert 400.0 in bob  # alice's ratio 4 is in the site's


def test_learn_orders_by_end() -> None:
    """learn() observes in order of end whatever order it is given: alice's jobs ending
    at 1000 (100 s), 2000 (200 s), 3000 (900 s), given last first, leave (200 + 900) / 2
    = 550 — observed as given they would leave (200 + 100) / 2 = 150."""
    jobs = [done("alice", 900, 3000), done("alice", 200, 2000), done("alice", 100, 1000)]
    assert learn(HistoryPredictor(), jobs).predict(ask("alice")) == 550
    assert history_of(*jobs).predict(ask("alice")) == 150


# -------------------------------------------------------- 3. the forward replay: states


@st.composite
def replay_docs(
    draw: st.DrawFn,
    *,
    shortcut: bool = False,
    preempt: bool = False,
    gates: bool = True,
    max_jobs: int = 10,
) -> dict[str, Any]:
    """A random state document for a replay: the strategies' cluster and jobs, at now
    0 or 100, running work started at or before now with an estimate (or none: it never
    ends), jobs with estimates (or none), names, priorities, and gates (holds, begin
    times before and after now, dependencies on running and pending jobs, singletons,
    array records, with a %N limit and a running task), under a random picker and
    backfill policy — or, with ``shortcut``, fcfs without backfill and few gates (what
    the exact shortcut is for); with ``preempt`` the high queue may preempt normal."""
    scenario = draw(scenarios(max_jobs=max_jobs))
    doc = scenario.builder().to_dict()
    now = draw(st.sampled_from([0.0, 100.0]))
    doc["now"] = now
    if shortcut:
        doc["picker"], doc["backfill"] = "fcfs", "none"
    else:
        doc["picker"] = draw(st.sampled_from(PICKERS))
        doc["backfill"] = draw(st.sampled_from(BACKFILLS))
    if preempt and draw(st.booleans()):
        doc["queues"]["high"]["preempts"] = ["normal"]
    running = doc.get("running", [])
    jobs = doc.get("jobs", [])
    for run in running:
        run["start_time"] = draw(st.sampled_from([0.0, now / 2, now]))
        run["requested_time"] = draw(st.sampled_from([40, 100, 300, 300, 100, None]))
        run["name"] = draw(st.sampled_from(JOB_NAMES))
    running_ids = [str(r["id"]) for r in running]
    ids = running_ids + [str(j["id"]) for j in jobs]
    kinds = ["none"] * (6 if shortcut else 2)
    if gates:
        kinds += ["hold", "begin", "after_running", "dep", "delay", "single", "array", "limited"]
    for job in jobs:
        job["requested_time"] = draw(st.sampled_from([5, 30, 60, 60, None]))
        job["name"] = draw(st.sampled_from(JOB_NAMES))
        job["priority"] = draw(st.integers(0, 3))
        job["submit_time"] = draw(st.sampled_from([0.0, now]))
        what = draw(st.sampled_from(kinds))
        if what == "hold":
            job["hold"] = True
        elif what == "begin":
            job["begin_time"] = now + draw(st.sampled_from([-5, 20, 50]))
        elif what == "after_running" and running_ids:
            job["dependency"] = f"afterok:{draw(st.sampled_from(running_ids))}"
            if draw(st.booleans()):  # one that fits once the job it waits for ends
                _simple(job)
        elif what == "dep" and ids:
            kind = draw(st.sampled_from(["after", "afterok", "afterany"]))
            job["dependency"] = f"{kind}:{draw(st.sampled_from(ids))}"
        elif what == "delay" and ids:
            job["dependency"] = f"after:{draw(st.sampled_from(ids))}+{draw(st.integers(0, 2))}"
            if draw(st.booleans()):
                _simple(job)
        elif what == "single":
            job["dependency"] = "singleton"
        elif what == "array":
            job["array"] = draw(st.sampled_from(["1-3", "0-6:3", "5"]))
        elif what == "limited":
            job["array"] = draw(st.sampled_from(["1-6%2", "1-4%1"]))
            if draw(st.booleans()):  # tasks that fit: the limit is what stops them
                _simple(job)
            free = [r for r in running if "array_job" not in r]
            task = draw(st.booleans())  # a running job is a task of this record
            if free and task:
                draw(st.sampled_from(free))["array_job"] = str(job["id"])
    return acyclic(doc)


@st.composite
def busy_docs(draw: st.DrawFn, *, shortcut: bool = True) -> dict[str, Any]:
    """A small busy cluster (1-4 hosts of 1-4 slots, mem, a fast tag), running work
    that ends (20-100 s), 1-15 jobs of 1-6 tasks that mostly fit and all end (10-100 s),
    a few gated (held, a begin time, a %2 array, afterany on the first job, afterok on
    running work), the high queue maybe preempting normal; fcfs without backfill (or,
    without ``shortcut``, a random picker and policy). Jobs start and end here often,
    so a session's free slots keep changing: what the shortcut's count must follow."""
    b = ClusterBuilder().resource("mem", "consumable").resource("fast", "boolean").at(0)
    b.queue("normal", 30)
    b.queue("high", 50, preempts=["normal"] if draw(st.booleans()) else ())
    free: dict[str, int] = {}
    for i in range(draw(st.integers(1, 4))):
        name = f"h{i}"
        free[name] = draw(st.integers(1, 4))
        mem = draw(st.sampled_from([1000, 2000]))
        b.host(name, free[name], resources={"mem": mem}, fast=draw(st.booleans()))
    running: list[str] = []
    for i in range(draw(st.integers(0, 3))):
        host = draw(st.sampled_from(sorted(free)))
        if free[host]:
            n = draw(st.integers(1, free[host]))
            free[host] -= n
            running.append(f"r{i}")
            b.running(
                f"r{i}",
                {host: n},
                start_time=0,
                requested_time=draw(st.sampled_from([20, 50, 100])),
                user=draw(st.sampled_from(USERS)),
                queue=draw(st.sampled_from(["normal", "high"])),
            )
    gates: list[dict[str, Any]] = [{}] * 6
    gates += [{"hold": True}, {"begin_time": 40}, {"array": "1-3%2"}]
    gates += [{"dependency": f"afterok:{r}"} for r in running]
    gates += [{"dependency": f"after:{r}+1"} for r in running]
    extra: dict[str, dict[str, Any]] = {}
    for i in range(draw(st.integers(1, 15))):
        b.job(
            f"j{i}",
            draw(st.integers(1, 6)),
            resreq=draw(st.sampled_from(RESREQS)),
            user=draw(st.sampled_from(USERS)),
            queue=draw(st.sampled_from(["normal", "normal", "high"])),
            requested_time=draw(st.sampled_from([10, 30, 60, 100])),
        )
        on_first = [{"dependency": "afterany:j0"}, {"dependency": "after:j0"}]
        gate = draw(st.sampled_from(gates if i == 0 else [*gates, *on_first]))
        if gate:
            extra[f"j{i}"] = gate
    doc = flow_doc(b, extra)
    if shortcut:
        doc["picker"], doc["backfill"] = "fcfs", "none"
    else:
        doc["picker"] = draw(st.sampled_from(PICKERS))
        doc["backfill"] = draw(st.sampled_from(BACKFILLS))
    return doc


def shortcut_docs() -> st.SearchStrategy[dict[str, Any]]:
    return busy_docs() | replay_docs(shortcut=True, preempt=True, max_jobs=14)


def any_docs(max_jobs: int = 10) -> st.SearchStrategy[dict[str, Any]]:
    return replay_docs(max_jobs=max_jobs) | busy_docs(shortcut=False)


def _simple(job: dict[str, Any]) -> None:
    """Make a drawn job one task on any host."""
    for key in ("min_tasks", "max_tasks"):
        job.pop(key, None)
    job["tasks"], job["resreq"] = 1, ""


def state_of(doc: dict[str, Any]) -> ClusterState:
    return state_from_dict(doc, "<replay>")


@st.composite
def predictor_specs(draw: st.DrawFn) -> tuple[str, tuple[FinishedJob, ...]]:
    """A predictor spec and a history of the states' users to teach it."""
    spec = draw(st.sampled_from(["limit", "fraction", "fraction:0.2", "history", "history:0.5"]))
    history: tuple[FinishedJob, ...] = ()
    if spec.startswith("history"):
        jobs = draw(
            st.lists(
                st.builds(
                    done,
                    st.sampled_from(USERS),
                    st.sampled_from([1.0, 10.0, 25.0, 100.0]),
                    st.floats(-1e4, 0),
                    name=st.sampled_from(JOB_NAMES),
                    limit=st.sampled_from([None, 60.0, 200.0]),
                ),
                max_size=12,
            )
        )
        history = tuple(jobs)
    return spec, history


def taught(case: tuple[str, tuple[FinishedJob, ...]]) -> RuntimePredictor:
    return made(*case)


@dataclass(frozen=True)
class Recording(Policy):
    """A policy whose core logs every event the replay applies (with its time) and, per
    session, how many jobs it was given of how many pending. Session by session (the
    plain replay runs no core to record: tests/test_predict_plain.py checks it)."""

    plain: bool = False
    events: list[Event] = field(default_factory=list, compare=False)
    sessions: list[tuple[int, int]] = field(default_factory=list, compare=False)

    def core(self, state: ClusterState) -> SchedulerCore:
        return _RecordingCore(
            self,
            state,
            picker=self.picker,
            backfill=self.backfill,
            preemptor=self.preemptor,
            pickers=self.pickers(),
        )


class _RecordingCore(SchedulerCore):
    def __init__(self, log: Recording, state: ClusterState, **kwargs: Any) -> None:
        super().__init__(state, **kwargs)
        self.log = log

    def apply(self, *events: Event) -> None:
        self.log.events.extend(events)
        super().apply(*events)

    def run_session(self, **kwargs: Any) -> SessionResult:
        jobs = kwargs.get("jobs")
        if jobs is not None:
            kwargs["jobs"] = jobs = list(jobs)
        given = self.pending_count if jobs is None else len(jobs)
        self.log.sessions.append((given, self.pending_count))
        return super().run_session(**kwargs)


def outcomes(decisions: Sequence[Decision]) -> dict[str, object]:
    """Per job: its allocation if dispatched, else its pend reason and message."""
    return {
        d.job: d.allocation if isinstance(d, Dispatched) else (d.info.reason, d.info.message)
        for d in decisions
    }


# ----------------------------------------------- 3a. the first session is xce schedule's


@pytest.mark.parametrize("shortcuts", [False, True])
@given(
    doc=replay_docs(preempt=True) | shortcut_docs() | busy_docs(shortcut=False),
    case=predictor_specs(),
    picker=st.none() | st.none() | st.sampled_from(PICKERS),
    backfill=st.none() | st.none() | st.sampled_from(BACKFILLS),
    later=st.sampled_from([0.0, 0.0, 15.0]),
)
@settings(max_examples=40, deadline=None)
def test_first_session_decides_as_xce_schedule(
    shortcuts: bool,
    doc: dict[str, Any],
    case: tuple[str, tuple[FinishedJob, ...]],
    picker: str | None,
    backfill: str | None,
    later: float,
) -> None:
    """The replay's first session is the session ``xce schedule`` runs on the state
    (``SchedulerCore(state, picker=, backfill=).run_session(now=)``): the same jobs
    dispatched with the same allocations in the same order, and every job that pends
    there pends in the replay's first session with the same reason and message — with
    the shortcut as without it."""
    state = state_of(doc)
    now = state.session_time() + later
    policy = Policy(picker=picker, backfill=backfill, shortcuts=shortcuts, plain=False)
    run = forward_replay(state, taught(case).predict, policy=policy, now=now)
    want = SchedulerCore(state, picker=picker, backfill=backfill).run_session(now=now)
    assert run.first is not None
    got = run.first.decisions
    assert [(d.job, d.allocation) for d in run.first.dispatched] == [
        (d.job, d.allocation) for d in want.dispatched
    ]
    assert outcomes(got) == outcomes(want.decisions)
    if not shortcuts:
        assert got == want.decisions  # the very decisions, in the same order


def test_a_job_too_big_for_the_cluster_has_its_reason() -> None:
    """2 one-slot hosts: big (5 tasks) can never run, x runs. The replay (default
    policy, what ``xce predict`` runs) never starts big and says why: NEVER_RUNNABLE,
    as ``xce schedule`` and the replay without the shortcut do."""
    b = ClusterBuilder().hosts(2, slots=1).at(0)
    b.job("big", 5, requested_time=30).job("x", 1, requested_time=10)
    state = b.build()
    limit = REGISTRY.make("limit")
    plain = forward_replay(state, limit.predict, policy=Policy(shortcuts=False))
    assert plain.reasons["big"].reason is PendReason.NEVER_RUNNABLE
    run = forward_replay(state, limit.predict)
    assert run.starts == {"big": None, "x": 0.0}
    assert "big" in run.reasons, "the replay gives no reason why big never starts"
    assert run.reasons["big"].reason is PendReason.NEVER_RUNNABLE
    forecast = predict_starts(state, limit)
    (big,) = [j for j in forecast.jobs if j.job == "big"]
    assert big.reason is not None
    assert big.reason.reason is PendReason.NEVER_RUNNABLE


def test_a_prediction_never_preempts_onto_a_reserved_host() -> None:
    """docs/backfill.md, advance reservations: h1 (high, 2 tasks) could start now only by
    preempting r1 (low) on a, which maint reserves until 10000; b holds high work to
    50000. Its predicted start is the window's end, 10000 (it was now: the prediction
    preempted r1 inside the window), with and without the shortcuts."""
    state = reserved_victim_site().job("h1", 2, queue="high", requested_time=100).build()
    limit = REGISTRY.make("limit")
    for policy in (Policy(), Policy(shortcuts=False)):
        assert forward_replay(state, limit.predict, policy=policy).starts == {"h1": 10_000.0}
    (h1,) = predict_starts(state, limit).jobs
    assert h1.start == 10_000.0


# --------------------------------------------------- 3b. the shortcut changes no start


@pytest.mark.parametrize("batch", [1, 2, 32])
@given(doc=shortcut_docs(), case=predictor_specs())
@settings(max_examples=60, deadline=None)
def test_the_shortcut_changes_no_start(
    batch: int, doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]]
) -> None:
    """``Policy(shortcuts=True)`` (sessions try only the jobs that could start, fed in
    arrival-order batches of ``batch`` jobs where every queue has one priority and none
    preempts) and ``shortcuts=False`` (every session tries every job) give every job the
    same start, every array record the same last start, and end the same jobs."""
    state = state_of(doc)
    p = taught(case)
    fast = forward_replay(state, p.predict, policy=Policy(shortcuts=True, batch=batch))
    slow = forward_replay(state, p.predict, policy=Policy(shortcuts=False))
    assert fast.starts == slow.starts
    assert fast.last_starts == slow.last_starts
    assert fast.ends == slow.ends


@given(doc=shortcut_docs(), case=predictor_specs())
@settings(max_examples=40, deadline=None)
def test_the_shortcut_changes_no_reason(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]]
) -> None:
    """The jobs that never start are given the same reason with the shortcut as without
    it (the reason of their last decision: ``xce predict``'s "why never")."""
    state = state_of(doc)
    p = taught(case)
    fast = forward_replay(state, p.predict, policy=Policy(shortcuts=True))
    slow = forward_replay(state, p.predict, policy=Policy(shortcuts=False))
    never = [j for j, s in slow.starts.items() if s is None]
    assert {j: fast.reasons[j].reason if j in fast.reasons else None for j in never} == {
        j: slow.reasons[j].reason for j in never
    }


def test_the_shortcut_is_reached() -> None:
    """The states test_the_shortcut_changes_no_start draws do exercise the shortcut:
    ``_Candidates.of`` takes it in most of them, and in a good share some session is
    given fewer jobs than pend (jobs skipped). Derandomized: the share is a property of
    the strategy, not of one run's luck."""
    reached: list[bool] = []
    skipped: list[bool] = []

    @given(doc=shortcut_docs(), case=predictor_specs())
    @settings(
        max_examples=100, deadline=None, database=None, phases=[Phase.generate], derandomize=True
    )
    def draw_cases(doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]]) -> None:
        state = state_of(doc)
        policy = Recording(shortcuts=True)
        reached.append(_Candidates.of(policy.core(state), policy) is not None)
        policy.sessions.clear()
        forward_replay(state, taught(case).predict, policy=policy)
        skipped.append(any(given < pending for given, pending in policy.sessions))

    draw_cases()
    assert len(reached) >= 50
    assert sum(reached) >= 0.9 * len(reached), (sum(reached), len(reached))
    assert sum(skipped) >= 0.2 * len(skipped), (sum(skipped), len(skipped))


def test_the_batches_are_reached() -> None:
    """The same states exercise the batched sessions: the shortcut may batch (one
    queue priority, no preemption) in a third or more, and with batches of 2 a good
    share has an instant whose session is fed in two or more batches (more sessions than
    instants)."""
    batched: list[bool] = []
    split: list[bool] = []

    @given(doc=shortcut_docs(), case=predictor_specs())
    @settings(
        max_examples=100, deadline=None, database=None, phases=[Phase.generate], derandomize=True
    )
    def draw_cases(doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]]) -> None:
        state = state_of(doc)
        policy = Recording(shortcuts=True, batch=2)
        candidates = _Candidates.of(policy.core(state), policy)
        batched.append(candidates is not None and candidates.in_batches)
        policy.sessions.clear()
        run = forward_replay(state, taught(case).predict, policy=policy)
        split.append(len(policy.sessions) > run.sessions)

    draw_cases()
    assert sum(batched) >= 0.3 * len(batched), (sum(batched), len(batched))
    assert sum(split) >= 0.2 * len(split), (sum(split), len(split))


def test_the_shortcut_is_off_where_it_would_not_be_exact() -> None:
    """No shortcut under strict (a head blocks its queue), a policy that plans
    (conservative), or with shortcuts=False; one under fcfs without backfill."""
    b = ClusterBuilder().hosts(2, slots=1).at(0).job("a", 1, requested_time=10)
    for policy, taken in [
        (Policy(), True),
        (Policy(shortcuts=False), False),
        (Policy(picker="strict"), False),
        (Policy(backfill="conservative"), False),
    ]:
        state = b.build()
        assert (_Candidates.of(policy.core(state), policy) is not None) is taken, policy


# ---------------------------------------------------------- 3c. gates over replayed time


def _replayed(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]], **policy: Any
) -> tuple[ClusterState, RuntimePredictor, ForwardRun, Recording]:
    state = state_of(doc)
    p = taught(case)
    recording = Recording(**policy)
    return state, p, forward_replay(state, p.predict, policy=recording), recording


@given(doc=any_docs(), case=predictor_specs(), shortcuts=st.booleans())
@settings(max_examples=40, deadline=None)
def test_no_start_before_now_or_the_begin_time(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]], shortcuts: bool
) -> None:
    """No job (or task) is predicted to start before the replay's now or its begin
    time, and every start the replay reports is the time of its first JobStarted."""
    state, _, run, recording = _replayed(doc, case, shortcuts=shortcuts)
    begin = {j.id: j.begin_time for j in state.jobs}
    for job_id, start in run.starts.items():
        if start is None:
            continue
        assert start >= run.now
        b = begin[job_id]
        assert b is None or start >= b
    first: dict[str, float] = {}
    for e in recording.events:
        if isinstance(e, JobStarted):
            record = _record_of(e.job_id, begin)
            first.setdefault(record, e.time)
            assert e.time >= run.now
    assert {j: s for j, s in run.starts.items() if s is not None} == first


def _record_of(job_id: str, ids: dict[str, Any]) -> str:
    """The snapshot job a started id is (an array task ``A_3`` is its record ``A``)."""
    if job_id in ids:
        return job_id
    record, _, index = job_id.rpartition("_")
    assert record in ids, job_id
    assert index.isdigit(), job_id
    return record


@given(doc=any_docs(), case=predictor_specs(), shortcuts=st.booleans())
@settings(max_examples=40, deadline=None)
def test_held_jobs_never_start_and_report_held(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]], shortcuts: bool
) -> None:
    """A held job never starts in the replay (holds never lift) and its reason is
    HELD."""
    state, _, run, _ = _replayed(doc, case, shortcuts=shortcuts)
    for job in state.jobs:
        if job.hold:
            event("a held job")
            assert run.starts[job.id] is None
            assert run.reasons[job.id].reason is PendReason.HELD


def _predicted_end(run_id: str, state: ClusterState, p: RuntimePredictor, now: float) -> float:
    """When a running job of the snapshot ends in the replay: its start plus its
    predicted runtime (asked with the time it has run), never before now."""
    (r,) = [r for r in state.running if r.id == run_id]
    asked = Asked(
        r.id,
        r.user,
        estimate(r.requested_time, state.queues.get(r.queue)),
        name=r.name,
        queue=r.queue,
        tasks=r.slots,
        elapsed=max(now - r.start_time, 0.0),
    )
    return max(r.start_time + p.predict(asked), now)


@given(doc=any_docs(), case=predictor_specs(), shortcuts=st.booleans())
@settings(max_examples=80, deadline=None)
def test_afterok_on_a_running_job_waits_for_its_predicted_end(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]], shortcuts: bool
) -> None:
    """A job with ``afterok:R`` on a job R running at the snapshot starts no earlier
    than R's predicted end (its start plus the predictor's runtime, not before now),
    and the replay ends R exactly then — unless a job of a preempting queue takes R's
    resources first (R then just ends, no later than predicted)."""
    state, p, run, recording = _replayed(doc, case, shortcuts=shortcuts)
    running = {r.id for r in state.running}
    ended = {e.job_id: e.time for e in recording.events if isinstance(e, JobFinished)}
    preempted = {e.job_id: e.time for e in recording.events if isinstance(e, JobPreempted)}
    for job in state.jobs:
        dep = job.dependency
        if dep is None or len(dep.items) != 1 or dep.items[0].kind is not DepKind.AFTEROK:
            continue
        target = dep.items[0].job
        if target not in running:
            continue
        end = _predicted_end(target, state, p, run.now)
        start = run.starts[job.id]
        event(f"afterok on a running job: {'starts' if start is not None else 'never'}")
        if target in preempted:
            assert preempted[target] <= end
            assert target not in ended
            end = preempted[target]
        elif math.isinf(end):
            assert start is None
            continue
        else:
            assert ended[target] == end
        if start is not None:
            assert start >= end


@given(doc=any_docs(), case=predictor_specs(), shortcuts=st.booleans())
@settings(max_examples=40, deadline=None)
def test_an_array_limit_holds_over_time(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]], shortcuts: bool
) -> None:
    """A record with ``%N`` never has more than N tasks running at once (those running at
    the snapshot with its array_job included), at any instant of the replay."""
    state, _, _, recording = _replayed(doc, case, shortcuts=shortcuts)
    limits = {
        j.id: j.array.limit for j in state.jobs if j.array is not None and j.array.limit is not None
    }
    task_of = {r.id: r.array_job for r in state.running if r.array_job in limits}
    running = {a: sum(1 for r in task_of.values() if r == a) for a in limits}
    for e in recording.events:
        if isinstance(e, JobStarted):
            record, _, index = e.job_id.rpartition("_")
            if record in limits and index.isdigit():
                task_of[e.job_id] = record
                running[record] += 1
                assert running[record] <= limits[record], (e, running)
                if running[record] == limits[record]:
                    event("a record at its limit")
        elif isinstance(e, JobFinished | JobPreempted) and e.job_id in task_of:
            running[task_of.pop(e.job_id)] -= 1


@given(doc=any_docs(), case=predictor_specs(), shortcuts=st.booleans())
@settings(max_examples=40, deadline=None)
def test_after_starts_no_earlier_than_its_job_plus_the_delay(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]], shortcuts: bool
) -> None:
    """A job with ``after:X+M`` starts no earlier than M minutes after X starts (X
    running at the snapshot, or started in the replay; never, while X never does)."""
    state, _, run, _ = _replayed(doc, case, shortcuts=shortcuts)
    began = {r.id: r.start_time for r in state.running}
    began.update({j: s for j, s in run.starts.items() if s is not None})
    for job in state.jobs:
        dep = job.dependency
        if dep is None or len(dep.items) != 1 or dep.items[0].kind is not DepKind.AFTER:
            continue
        item = dep.items[0]
        start = run.starts[job.id]
        if start is None:
            continue
        assert item.job in began, (job.id, item.job)
        event("after: starts")
        assert start >= began[item.job] + item.delay


# name -> (dependency of j, the job it names: "r1" running since 0 or "a" pending, that
# job's limit (None: no end), now, when j starts). Two one-slot hosts: the named job
# holds one, j (10 s) has the other to itself the whole time.
AFTER_DELAYS: dict[str, tuple[str, str, float | None, float, float]] = {
    "r1+10, r1 runs until 10000": ("after:r1+10", "r1", 10_000, 100, 600),
    "r1+10, r1 has no end": ("after:r1+10", "r1", None, 100, 600),
    "r1+1, r1 ends at 20, before the delay is over": ("after:r1+1", "r1", 20, 0, 60),
    "a+5, a (10000 s) starts at 0": ("after:a+5", "a", 10_000, 0, 300),
    "a+1, a (20 s) starts at 0 and ends at 20": ("after:a+1", "a", 20, 0, 60),
    "a, a (10000 s) starts at 0": ("after:a", "a", 10_000, 0, 0),
    "a, a (no end) starts at 0": ("after:a", "a", None, 0, 0),
}


@pytest.mark.parametrize(
    ("dependency", "other", "limit", "now", "want"), AFTER_DELAYS.values(), ids=AFTER_DELAYS
)
def test_after_starts_once_its_job_has_started(
    dependency: str, other: str, limit: float | None, now: float, want: float
) -> None:
    """``after:X[+M]`` holds M minutes after X starts (docs/state-file.md), whatever else
    happens: j starts at X's start + the delay — not when some later event (X's end)
    makes the replay look again, not "never" when nothing else is left to happen, and
    not before the delay is over when X ends sooner. (Without a delay, X dispatched in a
    session opens j for the next session at the same instant, as preempted work does.)"""
    b = ClusterBuilder().hosts(2, slots=1).at(now)
    if other == "r1":
        b.running("r1", {"h0": 1}, start_time=0, requested_time=limit)
    else:
        b.job("a", 1, requested_time=limit)
    b.job("j", 1, requested_time=10)
    state = flow_state(b, {"j": {"dependency": dependency}})
    run = forward_replay(state, REGISTRY.make("limit").predict)
    assert run.starts["j"] == want, run.reasons.get("j")


# name -> (dependency of j, when j starts). One 2-slot host held by r1 until 10; record A
# (one task of 5 s) starts its last task at 10, j (5 s) has the other slot from then on.
AFTER_ARRAYS: dict[str, tuple[str, float]] = {
    "A: at its last task's start": ("after:A", 10.0),
    "A_*: the same": ("after:A_*", 10.0),
    "A+2, its task ends at 15, before the delay is over": ("after:A+2", 130.0),
}
POLICIES = {"whole": Policy(shortcuts=False), "shortcut": Policy(), "batch 1": Policy(batch=1)}


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES)
@pytest.mark.parametrize(("dependency", "want"), AFTER_ARRAYS.values(), ids=AFTER_ARRAYS)
def test_after_an_array_opens_at_its_last_task_start(
    dependency: str, want: float, policy: Policy
) -> None:
    """``after:A+M`` on an array record holds M minutes after its last task starts
    (docs/state-file.md: a record's id waits for all its tasks), with the shortcut, its
    batches and without: not at the next end, not as soon as the record is gone."""
    b = ClusterBuilder().host("h0", 2).at(0)
    b.running("r1", {"h0": 2}, start_time=0, requested_time=10)
    b.job("A", 1, requested_time=5).job("j", 1, requested_time=5)
    state = flow_state(b, {"A": {"array": "1"}, "j": {"dependency": dependency}})
    run = forward_replay(state, REGISTRY.make("limit").predict, policy=policy)
    assert run.starts == {"A": 10.0, "j": want}, run.reasons.get("j")


@pytest.mark.parametrize("limit", [3600, 120])
def test_after_an_array_whose_tasks_all_started(limit: float) -> None:
    """A snapshot at 60 whose array A has started every task (no record; A_1 since 0, its
    limit ``limit``): ``after:A+10`` waits until 600 as ``after:A_1+10`` does, in
    ``xce schedule``'s session and in the replay, even when A_1 ends before."""
    b = ClusterBuilder().host("h0", 4).at(60)
    b.running("A_1", {"h0": 1}, start_time=0, requested_time=limit)
    b.job("j", 1, requested_time=5).job("k", 1, requested_time=5)
    state = flow_state(
        b,
        {"j": {"dependency": "after:A+10"}, "k": {"dependency": "after:A_1+10"}},
        {"A_1": {"array_job": "A"}},
    )
    (j, k) = SchedulerCore(state).run_session().decisions
    assert isinstance(j, Pending), j
    assert j.info.reason is PendReason.DEPENDENCY, j
    assert isinstance(k, Pending), k
    assert k.info.reason is PendReason.DEPENDENCY, k
    for policy in POLICIES.values():
        run = forward_replay(state, REGISTRY.make("limit").predict, policy=policy)
        assert run.starts == {"j": 600.0, "k": 600.0}


def test_array_limit_by_hand() -> None:
    """4 free one-slot hosts, record A = 1-6%2 of 1-task jobs of 100 s (predictor limit):
    two tasks at a time, at 0, 100 and 200 — the record starts at 0, its last task at
    200. Without the limit four start at 0, the last two at 100."""
    for array, last in (("1-6%2", 200.0), ("1-6", 100.0)):
        b = ClusterBuilder().hosts(4, slots=1).at(0)
        b.job("A", 1, requested_time=100)
        state = flow_state(b, {"A": {"array": array}})
        run = forward_replay(state, REGISTRY.make("limit").predict)
        assert run.starts == {"A": 0.0}
        assert run.last_starts == {"A": last}


def test_gates_by_hand() -> None:
    """2 one-slot hosts at now 0, r1 on h0 until 100 (predictor fraction:0.5 of its
    200 s limit), h1 free. held never starts (HELD); late (begin 70) starts at 70 on
    h1 after first (30 s) ran from 0; dep (afterok:r1) starts when r1 ends, at 100."""
    b = ClusterBuilder().hosts(2, slots=1).at(0)
    b.running("r1", {"h0": 1}, start_time=0, requested_time=200)
    b.job("held", 1, requested_time=60).job("first", 1, requested_time=60)
    b.job("late", 1, requested_time=60).job("dep", 1, requested_time=60)
    state = flow_state(
        b,
        {"held": {"hold": True}, "late": {"begin_time": 70}, "dep": {"dependency": "afterok:r1"}},
    )
    run = forward_replay(state, REGISTRY.make("fraction:0.5").predict)
    assert run.starts == {"held": None, "first": 0.0, "late": 70.0, "dep": 100.0}
    assert run.reasons["held"].reason is PendReason.HELD
    assert set(run.reasons) == {"held"}


def test_preempted_work_by_hand() -> None:
    """One host; high preempts normal. n (normal, 100 s) starts at 0; h (high, begin
    time 50, 30 s) preempts it at 50 and runs to 80; n, back in its queue, starts again
    at 80 (its predicted start stays its first, 0). A job running at the snapshot that
    is preempted just ends."""
    b = ClusterBuilder().host("h0", 1).at(0).queue("normal", 10)
    b.queue("high", 50, preempts=["normal"])
    b.job("n", 1, queue="normal", requested_time=100).job("h", 1, queue="high", requested_time=30)
    state = flow_state(b, {"h": {"begin_time": 50}})
    for shortcuts in (True, False):
        recording = Recording(shortcuts=shortcuts)
        run = forward_replay(state, REGISTRY.make("limit").predict, policy=recording)
        assert run.starts == {"n": 0.0, "h": 50.0}
        log = [
            (type(e).__name__, e.job_id, e.time)
            for e in recording.events
            if isinstance(e, JobStarted | JobFinished | JobPreempted)
        ]
        assert log == [
            ("JobStarted", "n", 0.0),
            ("JobPreempted", "n", 50.0),
            ("JobStarted", "h", 50.0),
            ("JobFinished", "h", 80.0),
            ("JobStarted", "n", 80.0),
        ]
    b = ClusterBuilder().host("h0", 1).at(0).queue("normal", 10)
    b.queue("high", 50, preempts=["normal"])
    b.running("r", {"h0": 1}, queue="normal", start_time=0, requested_time=1000)
    b.job("h", 1, queue="high", requested_time=30)
    recording = Recording()
    run = forward_replay(b.build(), REGISTRY.make("limit").predict, policy=recording)
    assert run.starts == {"h": 0.0}
    assert not any(isinstance(e, JobStarted) and e.job_id == "r" for e in recording.events)


# ------------------------------------------------- 3d. the plans, when nothing changes
#
# 2 one-slot hosts, now 0, conservative backfill, every job running to its limit. r1
# holds h0 until 100, r2 holds h1 until 50. In order: a (2 tasks, 30 s) needs both hosts:
# from 100 to 130. b (1 task, 40 s) fits on h1 from 50 to 90, before a. c (200 s) after a,
# from 130 on one host. d (20 s): h1 is free 90-100 only (10 s, too short) — from 130 on
# the other host.
CONSERVATIVE = {"a": 100.0, "b": 50.0, "c": 130.0, "d": 130.0}


def conservative_state() -> ClusterState:
    b = ClusterBuilder().hosts(2, slots=1).at(0).backfill("conservative")
    b.running("r1", {"h0": 1}, start_time=0, requested_time=100)
    b.running("r2", {"h1": 1}, start_time=0, requested_time=50)
    b.job("a", 2, requested_time=30).job("b", 1, requested_time=40)
    b.job("c", 1, requested_time=200).job("d", 1, requested_time=20)
    return b.build()


def test_conservative_plans_are_the_predictions_when_jobs_run_to_their_limits() -> None:
    """With predictor limit (every job runs its requested time) the first session's
    conservative plans are kept: each job starts where it was planned (hand-computed
    above), and the predictions are those numbers, session by session (the first
    session read) and on the plain replay."""
    state = conservative_state()
    limit = REGISTRY.make("limit").predict
    assert forward_replay(state, limit).starts == CONSERVATIVE  # the plain replay
    run = forward_replay(state, limit, policy=Policy(plain=False))
    assert run.first is not None
    plans = {}
    for d in run.first.decisions:
        assert isinstance(d, Pending), d
        assert d.plan is not None, d
        plans[d.job] = d.plan.start
    assert plans == CONSERVATIVE
    assert run.starts == CONSERVATIVE
    assert run.ends == 4  # r1, r2, a, b: no job pends once c and d start


def test_earlier_ends_move_the_predictions_earlier() -> None:
    """The same state, every job running half its limit (fraction), sessions planning
    with the requested times: r2 ends at 25 and b (planned 25-65, before a's 100) runs
    25-45; then d (planned 45-65) runs 45-55; r1 ends at 50, but a (both hosts) waits for
    d's planned end, 65, so c (200 s, would run over a) cannot start on h0; d ends at 55:
    a runs 55-70, then c at 70."""
    run = forward_replay(conservative_state(), REGISTRY.make("fraction").predict)
    assert run.starts == {"a": 55.0, "b": 25.0, "c": 70.0, "d": 45.0}


# ------------------------------------------------------ 3e. predict_starts' intervals


@given(doc=any_docs(max_jobs=8), case=predictor_specs(), seed=st.integers(0, 1000))
@settings(max_examples=25, deadline=None)
def test_interval_is_ordered_and_reproducible(
    doc: dict[str, Any], case: tuple[str, tuple[FinishedJob, ...]], seed: int
) -> None:
    """With sampled runs every job's interval has low <= high (low unknown only when high
    is: a job that starts in too few runs), and the same seed gives the same forecast."""
    state = state_of(doc)
    first = predict_starts(state, taught(case), runs=5, seed=seed)
    again = predict_starts(state, taught(case), runs=5, seed=seed)
    assert first.jobs == again.jobs
    assert first.runs == 5
    assert [j.job for j in first.jobs] == [j.id for j in state.jobs]
    for j in first.jobs:
        if j.low is None:
            assert j.high is None, j
        elif j.high is not None:
            assert j.low <= j.high, j
        assert j.low is None or j.low >= first.now


@pytest.mark.parametrize("spec", [n for n in NO_SPREAD if n in NAMES] + ["fraction:0.3"])
@given(doc=any_docs(max_jobs=8), seed=st.integers(0, 1000))
@settings(max_examples=20, deadline=None)
def test_no_spread_gives_the_point_as_interval(spec: str, doc: dict[str, Any], seed: int) -> None:
    """A predictor without spread (its draw is its point prediction) gives every job
    low == high == its predicted start (all three None for a job that never starts)."""
    state = state_of(doc)
    forecast = predict_starts(state, REGISTRY.make(spec), runs=3, seed=seed)
    for j in forecast.jobs:
        assert j.low == j.high == j.start, j


def test_history_spread_gives_an_interval_by_hand() -> None:
    """One 1-slot host, r1 (alice, limit 1000) started at 0, now 0; p (1 task) waits for
    it. alice ran 100 s twice and once 400 s: r1 is predicted (100 + 400) / 2 = 250,
    with draws 250 times a ratio (0.1, 1, 4 ... capped at 1000), so p's point start is
    250 and over 40 runs its interval spans from below to above it."""
    b = ClusterBuilder().host("h0", 1).at(0)
    b.running("r1", {"h0": 1}, start_time=0, requested_time=1000, user="alice")
    b.job("p", 1, requested_time=10, user="bob")
    p = made("history", QUANTILE_HISTORY[:3])
    forecast = predict_starts(b.build(), p, runs=40, seed=3)
    (job,) = forecast.jobs
    assert job.start == 250
    assert job.low is not None
    assert job.high is not None
    assert job.low < 250 < job.high


def test_scheduler_start_is_passed_through() -> None:
    """A job's scheduler_start (the scheduler's own estimate) is in its forecast."""
    b = ClusterBuilder().host("h0", 1).at(0).job("p", 1, requested_time=10)
    state = flow_state(b, {"p": {"scheduler_start": 42.0}})
    (job,) = predict_starts(state, REGISTRY.make("limit")).jobs
    assert job.scheduler_start == 42.0
    assert job.start == 0.0
