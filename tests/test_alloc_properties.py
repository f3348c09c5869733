"""Property tests of the allocation engine over random small clusters and job mixes.

Expectations are recomputed from what the strategies drew (capacities, running work,
the requirement texts), not from the engine's own books. Example counts come from the
hypothesis profile of ``conftest.py`` (``HYPOTHESIS_PROFILE=thorough`` searches harder).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from strategies import (
    SCRATCH,
    SELECTS,
    JobDraw,
    Scenario,
    capacities,
    exact,
    host_facts,
    running_use,
    scenarios,
    simple_parallel_jobs,
)
from xce.alloc import (
    AllocOptions,
    ClaimRun,
    Decision,
    Dispatched,
    Pending,
    PendReason,
    default_registry,
)
from xce.cluster import ClusterState, state_from_dict
from xce.core import Session, SessionResult, default_pickers, job_request

_EPS = 1e-6
# Plugin discovery (entry points) is most of a small session's cost: discover once.
_REGISTRY = default_registry()
_PICKERS = default_pickers()
_GRID = 10**6  # the default resolution (1e-6): amounts are whole numbers of it


def _on_grid(amount: float) -> Fraction:
    """An amount as the engine counts it: a whole number of the default resolution."""
    return Fraction(round(amount * _GRID), _GRID)


def _run(scenario: Scenario, **options: bool) -> SessionResult:
    session = Session(
        scenario.state, options=AllocOptions(**options), registry=_REGISTRY, pickers=_PICKERS
    )
    return session.run()


def _value(d: Decision) -> tuple[Any, ...]:
    """A decision as a comparable value: everything but the ``cached`` flag
    (``PendInfo.hosts`` is left out of ``==``, so it is compared here explicitly)."""
    if isinstance(d, Dispatched):
        a = d.allocation
        return ("dispatched", d.job, a.claims, a.shared, a.alternative)
    return ("pending", d.job, d.info.reason, d.info.message, tuple(sorted(d.info.hosts.items())))


def _identity(scenario: Scenario) -> dict[str, tuple[str, str, str]]:
    return {j.id: (j.user, j.queue, j.project) for j in scenario.jobs}


# -- Issue 3: no over-allocation ----------------------------------------------------------


@given(scenarios())
def test_no_host_or_shared_amount_is_ever_exceeded(scenario: Scenario) -> None:
    """Issue 3 property: no over-allocation — running plus dispatched work fits every
    host's slots and every resource it has (none of one it lacks), the shared license
    total holds, and only ok hosts get new work. Issue 9: exactly, with no tolerance
    (amounts summed as whole numbers of the resolution, capacities as written)."""
    result = _run(scenario)
    names = scenario.state.hosts.names
    caps = capacities(scenario)
    held = {h: {k: exact(v) for k, v in use.items()} for h, use in running_use(scenario).items()}
    lic = sum((exact(r.lic) for r in scenario.running), Fraction(0))
    for d in result.dispatched:
        for c in d.allocation.claims:
            host = held[names[c.host]]
            for name, amount in (("slots", float(c.slots)), *c.amounts):
                host[name] = host.get(name, Fraction(0)) + _on_grid(amount)
        lic += sum((_on_grid(a) for name, a in d.allocation.shared if name == "lic"), Fraction(0))
    for h, use in held.items():
        for name, amount in use.items():
            cap = exact(caps[h][name]) if name in caps[h] else Fraction(0)
            assert amount <= cap, (h, name, float(amount), result.dispatched)
    assert lic <= exact(scenario.lic_total or 0)
    status = {h.name: h.status for h in scenario.hosts}
    assert all(
        status[names[c.host]] == "ok" for d in result.dispatched for c in d.allocation.claims
    )


@given(scenarios())
def test_dispatched_work_keeps_every_limit(scenario: Scenario) -> None:
    """Design §3 limits property: no dispatched job takes a limit's consumers past the
    limit, per host or in aggregate, on slots, jobs or mem, counting the running work
    (issue 9: exactly, fractional amounts included)."""
    result = _run(scenario)
    names = scenario.state.hosts.names
    ident = _identity(scenario)
    usage = [
        (r.user, r.queue, r.project, False, [(h, n, n * exact(r.mem_per_task)) for h, n in r.on])
        for r in scenario.running
    ]
    usage += [
        (
            *ident[d.job],
            True,
            [
                (names[c.host], c.slots, _on_grid(dict(c.amounts).get("mem", 0.0)))
                for c in d.allocation.claims
            ],
        )
        for d in result.dispatched
    ]
    for lim in scenario.limits:
        key = "slots" if lim.slots is not None else "jobs" if lim.jobs is not None else "mem"
        cap = exact(next(v for v in (lim.slots, lim.jobs, lim.mem) if v is not None))
        total: defaultdict[str, Fraction] = defaultdict(Fraction)
        added: set[str] = set()
        for user, queue, project, new, claims in usage:
            if not all(
                allowed is None or value in allowed
                for allowed, value in (
                    (lim.users, user),
                    (lim.queues, queue),
                    (lim.projects, project),
                )
            ):
                continue
            hosts_seen: set[str] = set()
            for host, n, amount in claims:
                where = host if lim.per_host else "*"
                if key == "jobs":
                    if where in hosts_seen:
                        continue
                    hosts_seen.add(where)
                    extra = Fraction(1)
                else:
                    extra = Fraction(n) if key == "slots" else amount
                total[where] += extra
                if new and extra:
                    added.add(where)
        for where in added:
            assert total[where] <= cap, (lim, where, float(total[where]))


# -- Issue 3: one decision per job --------------------------------------------------------


@given(scenarios())
def test_every_pending_job_gets_exactly_one_decision(scenario: Scenario) -> None:
    """Issue 3 property: the decisions' job ids are the state's pending job ids, each once;
    the stats count them."""
    result = _run(scenario)
    ids = [d.job for d in result.decisions]
    assert sorted(ids) == sorted(j.id for j in scenario.state.jobs)
    assert len(set(ids)) == len(ids)
    s = result.stats
    assert (s.jobs, s.dispatched, s.pending) == (
        len(ids),
        len(result.dispatched),
        len(result.pending),
    )


# -- Req 7 / AllocOptions / threads: switches change cost, never decisions (issue 9) -----

SWITCHES = ("cache", "shortcuts", "cursors", "threads", "reuse_failures")
_FOUR = tuple(
    dict(zip(SWITCHES[:4], values, strict=True))
    for values in itertools.product((False, True), repeat=4)
)
_ALL_OFF = dict.fromkeys(SWITCHES, False)
_ALL_ON = dict.fromkeys(SWITCHES, True)
COMBINATIONS = (
    *({**c, "reuse_failures": c["cursors"]} for c in _FOUR),
    {**_ALL_OFF, "reuse_failures": True},
    {**_ALL_ON, "reuse_failures": False},
)
"""Every combination of cache, shortcuts, cursors and the threaded session (with
``reuse_failures`` following ``cursors``), plus ``reuse_failures`` alone on and alone
off (18 runs): the first is everything off, the literal algorithm."""

FEATURES = (
    "cache hit",
    "failure reused",
    "bulk run",
    "cursor advanced",
    "shortcut saved work",
    "per-job dispatched",
    "per-job with order[] dispatched",
    "per-job pend",
    "fractional amount dispatched",
    "same[] dispatched",
    "same[] pend",
    "order[] dispatched",
    "volatile select",
    "closed or unavailable host",
    "limit pend",
    "licence dispatched",
    "compound or alter dispatched",
)
"""What random cases must reach (checked by test_random_cases_reach_every_switch)."""


@dataclass
class _Run:
    switches: dict[str, bool]
    result: SessionResult
    session: Session


def _session(state: ClusterState, threads: bool, **switches: bool) -> _Run:
    options = AllocOptions(**switches)
    session = Session(state, options=options, registry=_REGISTRY, pickers=_PICKERS)
    return _Run({**switches, "threads": threads}, session.run(threads=threads), session)


def _twin(job: JobDraw) -> tuple[Any, ...]:
    return (job.resreq, job.tasks, job.user, job.queue, job.project)


def check_switches(scenario: Scenario) -> set[str]:
    """Run the scenario under every combination of cache, shortcuts, cursors and
    threads; assert the decisions agree; return the features the runs reached.

    - every run dispatches the same jobs, in the same order, with the same placements
      (claims, shared amounts, winning alternative), and pends the same jobs;
    - the cache-off runs agree on every pend in full (reason, message, per-host
      breakdown); so do the cache-on runs (the ``cached`` flag included);
    - with the cache on, a pend the cache did not answer is the cache-off pend; a hit
      (Req 7 AC 5) keeps the reason, message and breakdown of the first identical job
      that failed in that session (an ALTER pend: its outcome only, since a hit may
      answer one alternative without marking the decision ``cached``).
    """
    runs = [_session(scenario.state, **c) for c in COMBINATIONS]
    jobs = {j.id: j for j in scenario.jobs}
    reference = runs[0].result.decisions  # everything off: the literal algorithm
    ref_cache_on = next(r for r in runs if r.switches == {**runs[0].switches, "cache": True})
    for run in runs:
        got = run.result.decisions
        where = run.switches
        assert [d.job for d in got] == [d.job for d in reference], where
        for a, b in zip(got, reference, strict=True):
            assert type(a) is type(b), (where, a, b)
            if isinstance(a, Dispatched):
                assert _value(a) == _value(b), (where, a, b)
        if not where["cache"]:
            assert [_value(d) for d in got] == [_value(d) for d in reference], where
            assert not any(_cached(d) for d in got), where
            continue
        assert [(_value(d), _cached(d)) for d in got] == [
            (_value(d), _cached(d)) for d in ref_cache_on.result.decisions
        ], where
        first: dict[tuple[Any, ...], Pending] = {}
        for a, b in zip(got, reference, strict=True):
            if not isinstance(a, Pending):
                continue
            j = jobs[a.job]
            if a.cached and _is_simple(j) and _twin(j) in first:
                assert _value(a)[2:] == _value(first[_twin(j)])[2:], (where, a)
            elif not a.cached and "||" not in j.resreq:
                assert _value(a) == _value(b), (where, a, b)
            first.setdefault(_twin(j), a)
    return _features(scenario, runs)


def _features(scenario: Scenario, runs: list[_Run]) -> set[str]:
    out: set[str] = set()
    jobs = {j.id: j for j in scenario.jobs}
    full = next(r for r in runs if r.switches == _ALL_ON)  # everything on

    if full.result.stats.cache_hits:
        out.add("cache hit")
    if full.result.stats.failures_reused:
        out.add("failure reused")
    if any(n > 0 for n in getattr(full.session.allocator.books, "cursors", {}).values()):
        out.add("cursor advanced")
    plain = next(r for r in runs if r.switches == {**full.switches, "shortcuts": False})
    work = ("plans_tried", "host_tries", "iterators")
    if any(getattr(full.result.stats, k) != getattr(plain.result.stats, k) for k in work):
        out.add("shortcut saved work")
    for d in full.result.decisions:
        text = jobs[d.job].resreq
        if isinstance(d, Dispatched):
            a = d.allocation
            if any(isinstance(p, ClaimRun) for p in a.parts):
                out.add("bulk run")
            amounts = [v for c in a.claims for _, v in c.amounts] + [v for _, v in a.shared]
            if any(name == SCRATCH for c in a.claims for name, _ in c.amounts):
                out.add("per-job dispatched")
                if "order[" in text:
                    out.add("per-job with order[] dispatched")
            if any(v != int(v) for v in amounts):
                out.add("fractional amount dispatched")
            if "same[" in text:
                out.add("same[] dispatched")
            if "order[" in text:
                out.add("order[] dispatched")
            if a.shared:
                out.add("licence dispatched")
            if "||" in text or "*{" in text:
                out.add("compound or alter dispatched")
        else:
            assert isinstance(d, Pending)
            if "scratch=" in text:
                out.add("per-job pend")
            if "same[" in text:
                out.add("same[] pend")
            if d.info.reason is PendReason.LIMIT:
                out.add("limit pend")
        if "mem<500" in text or "!(mem>100)" in text:
            out.add("volatile select")
    if any(h.status != "ok" for h in scenario.hosts):
        out.add("closed or unavailable host")
    return out


@given(scenarios())
def test_decisions_do_not_depend_on_any_switch(scenario: Scenario) -> None:
    """Issue 9 / design §3 / Req 7 AC 4-5 property: with the unsatisfiable cache, the
    exact shortcuts and the host-scan cursors each on or off, single-threaded or
    threaded (16 runs), the same jobs dispatch on the same hosts with the same amounts,
    the same jobs pend, and pend reasons agree (a cache hit keeps its original reason);
    see :func:`check_switches`."""
    for feature in sorted(check_switches(scenario)):
        event(feature)


@pytest.mark.slow
@settings(max_examples=10_000)
@given(scenarios())
def test_decisions_do_not_depend_on_any_switch_10k(scenario: Scenario) -> None:
    """Issue 9: test_decisions_do_not_depend_on_any_switch over 10,000 random cases."""
    for feature in sorted(check_switches(scenario)):
        event(feature)


def test_random_cases_reach_every_switch() -> None:
    """Issue 9: the random cases of the switch property actually exercise what it is
    about: over 200 derandomized scenarios, the cache gets hits, bulk runs and cursors
    happen, shortcuts save work, and per-job, ``order[]`` with per-job, fractional,
    ``same[]``, volatile-select, closed-host, limit and licence cases occur."""
    seen: Counter[str] = Counter()

    @settings(max_examples=200, derandomize=True, database=None, phases=[Phase.generate])
    @given(scenarios())
    def collect(scenario: Scenario) -> None:
        seen.update(check_switches(scenario))

    collect()
    missing = [f for f in FEATURES if not seen[f]]
    assert not missing, (missing, sorted(seen.items()))


def _cached(d: Decision) -> bool:
    return isinstance(d, Pending) and d.cached


def _is_simple(job: JobDraw) -> bool:
    return "||" not in job.resreq and "*{" not in job.resreq


# -- Req 4: what a dispatched allocation looks like ---------------------------------------


@given(scenarios())
def test_a_dispatched_allocation_matches_its_requirement(scenario: Scenario) -> None:
    """Req 4 AC 3 property: per term, the claims sum to the term's task count, are on
    distinct hosts, and each claim holds exactly its per-task rusage × slots; shared
    amounts once per primary; span and same are honoured; ``alternative`` is set for
    ALTER jobs only."""
    result = _run(scenario)
    state = scenario.state
    jobs = {j.id: j for j in state.jobs}
    for d in result.dispatched:
        req = job_request(jobs[d.job], state.catalog).requirement
        a = d.allocation
        assert (a.alternative is None) == (not req.is_alter), d
        terms = req.alternatives[a.alternative or 0]
        shared: Counter[str] = Counter()
        for t, pp in enumerate(terms):
            claims = [c for c in a.claims if c.term == t]
            assert sum(c.slots for c in claims) == pp.tasks, (d, t)
            assert all(c.slots >= 1 for c in claims)
            assert len({c.host for c in claims}) == len(claims), d
            for i, c in enumerate(claims):
                want = Counter()
                for name, amount in pp.wants.for_bucket(c.slots, i == 0):
                    want[name] += amount
                assert dict(c.amounts) == pytest.approx(dict(want)), (d, c)
            span = pp.primary.span
            if span is not None and span.hosts == 1:
                assert len(claims) == 1, d
            if span is not None and span.ptile is not None:
                full, rest = divmod(pp.tasks, span.ptile)
                assert [c.slots for c in claims] == [span.ptile] * full + ([rest] if rest else [])
            for attr in pp.primary.same:  # one value of each same[] attribute
                hosts = scenario.hosts
                assert len({getattr(hosts[c.host], attr) for c in claims}) == 1, (attr, d)
            for name, amount in pp.wants.shared:
                shared[name] += amount
        assert all(c.term < len(terms) for c in a.claims), d
        held: Counter[str] = Counter()
        for name, amount in a.shared:
            held[name] += amount
        assert held == shared, d


# -- Req 4 AC 1-2: completeness against an exhaustive search ------------------------------


def _balanced(n: int, k: int) -> tuple[int, ...]:
    q, r = divmod(n, k)
    return (q + 1,) * r + (q,) * (k - r)


def _plans(tasks: int, resreq: str) -> list[tuple[int, ...]]:
    """The balanced plan sequence of Req 4 AC 1 (k = 1..N, buckets descending), as
    span narrows it."""
    if "span[hosts=1]" in resreq:
        return [(tasks,)]
    ptile = re.search(r"span\[ptile=(\d+)\]", resreq)
    if ptile:
        p = int(ptile.group(1))
        full, rest = divmod(tasks, p)
        return [(p,) * full + ((rest,) if rest else ())]
    return [_balanced(tasks, k) for k in range(1, tasks + 1)]


def _capacities(scenario: Scenario, job: JobDraw) -> list[int]:
    """Per host, how many of the job's tasks it can take (0 if not eligible), in exact
    arithmetic (issue 9: 3 tasks of 0.1 fit 0.3)."""
    found = re.search(r"select\[[^\]]*\]", job.resreq)
    select = found.group(0) if found else ""
    m = re.search(r"rusage\[mem=([0-9.]+)\]", job.resreq)
    per_task = Fraction(m.group(1)) if m else Fraction(0)
    caps = []
    for h in host_facts(scenario):
        if not h.ok or not SELECTS[select](h):
            caps.append(0)
            continue
        cap = h.slots
        if per_task:
            cap = 0 if h.mem is None else min(cap, math.floor(h.mem / per_task))
        caps.append(cap)
    return caps


def _assignments(buckets: tuple[int, ...], caps: list[int]) -> Iterator[list[int]]:
    """Every assignment of buckets to distinct hosts with room, by backtracking."""

    def go(i: int, used: list[int]) -> Iterator[list[int]]:
        if i == len(buckets):
            yield list(used)
            return
        for h, cap in enumerate(caps):
            if h not in used and cap >= buckets[i]:
                used.append(h)
                yield from go(i + 1, used)
                used.pop()

    return go(0, [])


def _first_fit(buckets: tuple[int, ...], caps: list[int]) -> list[int]:
    """Bucket by bucket, the first host in host order not yet claimed with room."""
    taken: list[int] = []
    for b in buckets:
        taken.append(next(h for h, cap in enumerate(caps) if h not in taken and cap >= b))
    return taken


def _fill(tasks: int, caps: list[int]) -> list[tuple[int, int]] | None:
    """The fill plan of design §3: hosts in order, each taking what it can of the rest."""
    out, left = [], tasks
    for h, cap in enumerate(caps):
        take = min(left, cap)
        if take >= 1:
            out.append((h, take))
            left -= take
        if left == 0:
            return out
    return None


@settings(max_examples=3 * settings.default.max_examples)
@given(
    scenarios(max_hosts=6, limits=False, shared=False, max_jobs=0),
    simple_parallel_jobs(spans=True),
)
def test_engine_places_a_job_whenever_an_exhaustive_search_of_its_plans_does(
    cluster: Scenario, job: JobDraw
) -> None:
    """Req 4 AC 1-3 completeness: for a simple parallel job on a fresh session, if any
    plan of the balanced sequence (k = 1..N, descending buckets, distinct hosts) has a
    placement by exhaustive search, the engine dispatches it on the first such plan, with
    each bucket on the first host in host order that has room (descending buckets make
    first-fit complete); else, without span, the fill plan of design §3; else it pends."""
    scenario = cluster.with_jobs(job)
    caps = _capacities(scenario, job)
    (decision,) = _run(scenario).decisions
    for plan in _plans(job.tasks or 1, job.resreq):
        if next(_assignments(plan, caps), None) is not None:
            assert isinstance(decision, Dispatched), (plan, caps, decision)
            claims = decision.allocation.claims
            assert tuple(c.slots for c in claims) == plan, (caps, decision)
            assert [c.host for c in claims] == _first_fit(plan, caps), (caps, decision)
            return
    fill = None if "span[" in job.resreq else _fill(job.tasks or 1, caps)
    if fill is None:
        assert isinstance(decision, Pending), (caps, decision)
    else:
        assert isinstance(decision, Dispatched), (caps, decision)
        assert [(c.host, c.slots) for c in decision.allocation.claims] == fill


# -- Issue 9: exact arithmetic and the seqjob rule, against oracles ------------------------

_AMOUNTS = (333.3, 0.1, 0.25, 2.5, 0.3, 2000, 1000, 999.9, 1.1)
_CAPACITIES = (4000, 0.3, 999.9, 2.5, 1000.25, 3.3, 1)


def _decimal(x: Fraction) -> str:
    """An exact decimal text of a fraction with a power-of-ten-friendly denominator."""
    text = f"{Decimal(x.numerator) / Decimal(x.denominator):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@st.composite
def fractional_sequences(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """One host with a fractional mem capacity, maybe running work holding some, a
    sequence of jobs wanting fractional per-task amounts; the oracle's expectation
    (exact, in Fraction) per job; then a 1-task job whose select compares mem with
    exactly what the oracle says is left (``>=``, ``<=`` or ``==``)."""
    slots = draw(st.integers(1, 8))
    cap = exact(draw(st.sampled_from(_CAPACITIES)))
    doc: dict[str, Any] = {
        "hosts": [{"name": "h", "slots": slots, "resources": {"mem": float(cap)}}],
        "jobs": [],
    }
    free_slots, free = slots, cap
    held = exact(draw(st.sampled_from((0, *_AMOUNTS))))
    if held and held <= free and slots > 1:
        doc["running"] = [
            {"id": "r", "alloc": [{"host": "h", "slots": 1, "resources": {"mem": float(held)}}]}
        ]
        free_slots, free = free_slots - 1, free - held
    expected = []
    for i in range(draw(st.integers(0, 6))):
        tasks = draw(st.integers(1, 3))
        amount = exact(draw(st.sampled_from(_AMOUNTS)))
        doc["jobs"].append(
            {"id": f"j{i}", "tasks": tasks, "resreq": f"rusage[mem={_decimal(amount)}]"}
        )
        fits = tasks <= free_slots and tasks * amount <= free
        if fits:
            free_slots, free = free_slots - tasks, free - tasks * amount
        expected.append(fits)
    op = draw(st.sampled_from((">=", "<=", "==")))
    doc["jobs"].append({"id": "last", "resreq": f"select[mem{op}{_decimal(free)}]"})
    expected.append(free_slots >= 1)
    return doc, expected


@given(fractional_sequences())
def test_fractional_amounts_add_up_exactly(case: tuple[dict[str, Any], list[Any]]) -> None:
    """Issue 9 (exact resource arithmetic) property: on one host, jobs wanting fractional
    amounts (333.3, 0.1, 0.25, ...) dispatch exactly when an exact oracle says they fit
    (3 tasks of 0.1 fit 0.3), and a last job whose select compares the available mem
    with exactly what is left (``mem>=1000`` after 4000 − 2000 − 3×333.3 − 0.1) is
    dispatched whenever a slot is free — on every switch."""
    doc, expected = case
    state = state_from_dict(doc, "<fractional>")
    for switches in (COMBINATIONS[0], COMBINATIONS[-1]):
        got = _session(state, **switches).result.decisions
        assert [isinstance(d, Dispatched) for d in got] == expected, (doc, got)


_SEQ_ORDERS = (
    "",
    "order[-slots]",
    "order[slots]",
    "order[mem]",
    "order[-mem]",
    "order[-mem:slots]",
)


def _seq_oracle(scenario: Scenario, job: JobDraw) -> str | None:
    """The seqjob rule from the drawn data: among ok hosts whose select holds and that
    have a free slot and the per-task mem, the first in the job's order (a key sorts most
    first, ``-key`` least first; a host lacking mem sorts after the others on a mem key;
    ties by host order) — same[] does not matter for one task."""
    found = re.search(r"select\[[^\]]*\]", job.resreq)
    select = SELECTS[found.group(0) if found else ""]
    m = re.search(r"rusage\[mem=([0-9.]+)\]", job.resreq)
    per_task = Fraction(m.group(1)) if m else Fraction(0)
    o = re.search(r"order\[([^\]]*)\]", job.resreq)
    keys = o.group(1).split(":") if o else []
    facts = host_facts(scenario)
    eligible = [
        i
        for i, h in enumerate(facts)
        if h.ok
        and select(h)
        and h.slots >= 1
        and (not per_task or (h.mem is not None and h.mem >= per_task))
    ]

    def sort_key(i: int) -> tuple[Any, ...]:
        h = facts[i]
        parts: list[Any] = []
        for key in keys:
            value = h.slots if key.lstrip("-") == "slots" else h.mem
            if value is None:
                parts.append((1, 0))
            else:
                parts.append((0, value if key.startswith("-") else -value))
        return (*parts, i)

    ranked = sorted(eligible, key=sort_key)
    return scenario.hosts[ranked[0]].name if ranked else None


@st.composite
def _seq_jobs(draw: st.DrawFn) -> JobDraw:
    parts = (
        draw(st.sampled_from(sorted(SELECTS))),
        draw(st.sampled_from(("", "", "rusage[mem=300]", "rusage[mem=333.3]", "rusage[mem=0.25]"))),
        draw(st.sampled_from(("", "same[type]", "same[fast]"))),
        draw(st.sampled_from(_SEQ_ORDERS)),
    )
    return JobDraw("j", " ".join(p for p in parts if p), 1, "alice", "normal", "p1")


@given(scenarios(limits=False, shared=False, max_jobs=0), _seq_jobs())
def test_a_one_task_job_lands_on_the_first_fitting_host_in_its_order(
    cluster: Scenario, job: JobDraw
) -> None:
    """Issue 9 (same[] group order, A1/A2) property: a 1-task job — with or without
    ``same[]`` — lands on the first host, in its host order (``order[]``), that is ok,
    matches its select and has room (closed or unmatched hosts do not decide the order
    of same[] groups), or pends if there is none; on every switch."""
    scenario = cluster.with_jobs(job)
    where = _seq_oracle(scenario, job)
    names = scenario.state.hosts.names
    for switches in (COMBINATIONS[0], COMBINATIONS[-1]):
        (d,) = _session(scenario.state, **switches).result.decisions
        if where is None:
            assert isinstance(d, Pending), (where, d)
        else:
            assert isinstance(d, Dispatched), (where, d)
            assert [(names[c.host], c.slots) for c in d.allocation.claims] == [(where, 1)]
