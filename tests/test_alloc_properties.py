"""Property tests of the allocation engine over random small clusters and job mixes.

Expectations are recomputed from what the strategies drew (capacities, running work,
the requirement texts), not from the engine's own books. Example counts come from the
hypothesis profile of ``conftest.py`` (``HYPOTHESIS_PROFILE=thorough`` searches harder).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings

from strategies import (
    SELECTS,
    JobDraw,
    Scenario,
    capacities,
    host_facts,
    running_use,
    scenarios,
    simple_parallel_jobs,
)
from xce.alloc import AllocOptions, Decision, Dispatched, Pending
from xce.core import Session, SessionResult, job_request

_EPS = 1e-6


def _run(scenario: Scenario, **options: bool) -> SessionResult:
    return Session(scenario.state, options=AllocOptions(**options)).run()


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
    total holds, and only ok hosts get new work."""
    result = _run(scenario)
    names = scenario.state.hosts.names
    caps = capacities(scenario)
    held = running_use(scenario)
    lic = float(sum(r.lic for r in scenario.running))
    for d in result.dispatched:
        for c in d.allocation.claims:
            host = held[names[c.host]]
            for name, amount in (("slots", float(c.slots)), *c.amounts):
                host[name] = host.get(name, 0.0) + amount
        lic += sum(amount for name, amount in d.allocation.shared if name == "lic")
    for h, use in held.items():
        for name, amount in use.items():
            assert amount <= caps[h].get(name, 0.0) + _EPS, (h, name, result.dispatched)
    assert lic <= (scenario.lic_total or 0) + _EPS
    status = {h.name: h.status for h in scenario.hosts}
    assert all(
        status[names[c.host]] == "ok" for d in result.dispatched for c in d.allocation.claims
    )


@given(scenarios())
def test_dispatched_work_keeps_every_limit(scenario: Scenario) -> None:
    """Design §3 limits property: no dispatched job takes a limit's consumers past the
    limit, per host or in aggregate, on slots, jobs or mem, counting the running work."""
    result = _run(scenario)
    names = scenario.state.hosts.names
    ident = _identity(scenario)
    usage = [
        (r.user, r.queue, r.project, False, [(h, n, n * r.mem_per_task) for h, n in r.on])
        for r in scenario.running
    ]
    usage += [
        (
            *ident[d.job],
            True,
            [
                (names[c.host], c.slots, dict(c.amounts).get("mem", 0.0))
                for c in d.allocation.claims
            ],
        )
        for d in result.dispatched
    ]
    for lim in scenario.limits:
        key = "slots" if lim.slots is not None else "jobs" if lim.jobs is not None else "mem"
        cap = float(next(v for v in (lim.slots, lim.jobs, lim.mem) if v is not None))
        total: defaultdict[str, float] = defaultdict(float)
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
                    extra = 1.0
                else:
                    extra = float(n) if key == "slots" else amount
                total[where] += extra
                if new and extra:
                    added.add(where)
        for where in added:
            assert total[where] <= cap + _EPS, (lim, where, total[where])


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


# -- Req 7 / AllocOptions: switches change cost, never decisions --------------------------


@given(scenarios())
def test_decisions_do_not_depend_on_the_shortcuts(scenario: Scenario) -> None:
    """Design §3 property (exact shortcuts): decisions — allocations, pend reasons,
    messages and per-host breakdowns, and the ``cached`` flag too — are identical with
    the shortcuts on or off, with the unsatisfiable cache on and off."""
    for cache in (True, False):
        on = _run(scenario, cache=cache, shortcuts=True).decisions
        off = _run(scenario, cache=cache, shortcuts=False).decisions
        assert [(_value(d), _cached(d)) for d in on] == [(_value(d), _cached(d)) for d in off]


def _cached(d: Decision) -> bool:
    return isinstance(d, Pending) and d.cached


def _is_simple(job: JobDraw) -> bool:
    return "||" not in job.resreq and "*{" not in job.resreq


@given(scenarios())
def test_decisions_do_not_depend_on_the_cache(scenario: Scenario) -> None:
    """Req 7 AC 4-5 property: with the unsatisfiable cache on or off, the same jobs
    dispatch with the same allocations, and every pend the cache did not answer is
    identical (reason, message, per-host breakdown).

    A cache hit reports the *original* failure (Req 7 AC 5, design §3), so its reason,
    message and breakdown are those of the first identical job that failed, which a fresh
    diagnosis may no longer give: availability fell in between (e.g. NOT_ENOUGH_SLOTS
    then, SELECT now for ``select[slots>=2]``). That is what is checked for hits of simple
    jobs; an ALTER pend is compared on its outcome only, since a hit may answer one
    alternative without marking the whole decision ``cached``."""
    on = _run(scenario, cache=True).decisions
    off = _run(scenario, cache=False).decisions
    jobs = {j.id: j for j in scenario.jobs}
    first: dict[tuple[Any, ...], Pending] = {}
    for a, b in zip(on, off, strict=True):
        assert type(a) is type(b)
        if isinstance(a, Dispatched):
            assert _value(a) == _value(b)
            continue
        assert isinstance(a, Pending)
        j = jobs[a.job]
        twin = (j.resreq, j.tasks, j.user, j.queue, j.project)
        if a.cached and _is_simple(j) and twin in first:
            original = first[twin]
            assert _value(a)[2:] == _value(original)[2:], (a, original)
        elif not a.cached and "||" not in j.resreq:
            assert _value(a) == _value(b)
        first.setdefault(twin, a)
    assert not any(_cached(d) for d in off)


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
    types = [h.type for h in scenario.hosts]
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
            if pp.primary.same:
                assert len({types[c.host] for c in claims}) == 1, d
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
    """Per host, how many of the job's tasks it can take (0 if not eligible)."""
    found = re.search(r"select\[[^\]]*\]", job.resreq)
    select = found.group(0) if found else ""
    m = re.search(r"rusage\[mem=(\d+)\]", job.resreq)
    per_task = int(m.group(1)) if m else 0
    caps = []
    for h in host_facts(scenario):
        if not h.ok or not SELECTS[select](h):
            caps.append(0)
            continue
        cap = int(h.slots)
        if per_task:
            cap = 0 if math.isnan(h.mem) else min(cap, int(h.mem) // per_task)
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
