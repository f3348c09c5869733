"""Hypothesis strategies for small random clusters and job mixes, shared by the suite.

``scenarios()`` draws a :class:`Scenario`: 1-12 hosts (1-8 slots, ``mem`` reserved per
task on most, ``swp`` reserved per host on some, a ``type`` of 2-3 values, a ``fast``
tag, some closed or unavailable), optionally a shared license ``lic``, limits and running
work that fits, and 1-25 pending jobs mixing sequential, parallel, ``span``, ``same``,
``order``, compound and alter requirements over a few users, queues and projects.
Jobs are drawn from a small pool of templates, so identical jobs (same requirement and
identity) recur and the unsatisfiable cache gets hits.

A scenario keeps what it drew (:class:`HostDraw`, ...) next to the built state, so tests
can compute expectations independently of the engine: :func:`capacities` and
:func:`running_use` give each host's capacities and what running work holds,
:func:`host_facts` what a select sees of it, and :data:`SELECTS` an oracle predicate per
select text the strategies use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from hypothesis import strategies as st

from builders import ClusterBuilder
from xce.cluster import ClusterState

__all__ = [
    "PROJECTS",
    "QUEUES",
    "SELECTS",
    "TYPES",
    "USERS",
    "HostDraw",
    "HostFacts",
    "JobDraw",
    "LimitDraw",
    "RunningDraw",
    "Scenario",
    "capacities",
    "compound_texts",
    "host_facts",
    "job_texts",
    "primary_texts",
    "running_use",
    "scenarios",
    "simple_parallel_jobs",
    "states",
]

TYPES = ("A", "B", "C")
USERS = ("alice", "bob", "carol")
QUEUES = ("normal", "high")
PROJECTS = ("p1", "p2")
LICENSE = "lic"


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What a select can see of a host at session start (free = capacity - running)."""

    name: str
    type: str
    fast: bool
    slots: float
    mem: float  # NaN when the host has no mem
    maxmem: float
    ok: bool


def _gt(x: float, y: float) -> bool:
    return not math.isnan(x) and x > y


SELECTS: dict[str, Callable[[HostFacts], bool]] = {
    "": lambda h: True,
    "select[type==A]": lambda h: h.type == "A",
    "select[type==B || fast]": lambda h: h.type == "B" or h.fast,
    "select[fast]": lambda h: h.fast,
    "select[!fast]": lambda h: not h.fast,
    "select[mem>=2000]": lambda h: _gt(h.mem, 1999.5),
    "select[maxmem>4000]": lambda h: _gt(h.maxmem, 4000),
    "select[slots<3]": lambda h: h.slots < 3,  # not monotone: never cached
    "select[type!=C && slots>=2]": lambda h: h.type != "C" and h.slots >= 2,
}
"""Every select text the strategies use, with an oracle predicate written independently
of the evaluator (a host lacking ``mem`` fails a comparison on it)."""

_RUSAGES = ("", "", "rusage[mem=300]", "rusage[mem=500]", "rusage[mem=1500]")
_RUSAGES_SWP = (*_RUSAGES, "rusage[swp=100]", "rusage[mem=300:swp=300]")
_RUSAGES_LIC = (*_RUSAGES_SWP, "rusage[lic=1]", "rusage[mem=300:lic=1]", "rusage[lic=2]")
_SPANS = ("", "", "", "span[hosts=1]", "span[ptile=2]", "span[ptile=3]")
_SAMES = ("", "", "", "same[type]")
_ORDERS = ("", "", "", "", "order[-slots]", "order[mem]")


@dataclass(frozen=True, slots=True)
class HostDraw:
    name: str
    slots: int
    mem: int | None
    swp: int | None
    type: str
    fast: bool
    status: str


@dataclass(frozen=True, slots=True)
class RunningDraw:
    id: str
    on: tuple[tuple[str, int], ...]  # (host, slots)
    mem_per_task: int
    swp_per_host: int
    lic: int
    user: str
    queue: str
    project: str


@dataclass(frozen=True, slots=True)
class LimitDraw:
    name: str
    users: tuple[str, ...] | None
    queues: tuple[str, ...] | None
    projects: tuple[str, ...] | None
    per_host: bool
    slots: int | None = None
    jobs: int | None = None
    mem: int | None = None


@dataclass(frozen=True, slots=True)
class JobDraw:
    id: str
    resreq: str
    tasks: int | None  # None: the requirement (a compound) fixes its own total
    user: str
    queue: str
    project: str


@dataclass(frozen=True)
class Scenario:
    """A drawn cluster and job mix; ``state`` is built through :class:`ClusterBuilder`."""

    hosts: tuple[HostDraw, ...]
    running: tuple[RunningDraw, ...] = ()
    lic_total: int | None = None
    limits: tuple[LimitDraw, ...] = ()
    jobs: tuple[JobDraw, ...] = ()

    def builder(self) -> ClusterBuilder:
        b = ClusterBuilder()
        # Declared, so hosts may lack mem and selects on type/fast are always valid.
        b.resource("mem", "consumable").resource("swp", "consumable", "per_host")
        b.resource("type", "string").resource("fast", "boolean")
        b.queue("normal", priority=30).queue("high", priority=50)
        for h in self.hosts:
            status = None if h.status == "ok" else h.status
            res = {k: v for k, v in (("mem", h.mem), ("swp", h.swp)) if v is not None}
            b.host(h.name, h.slots, status=status, resources=res, type=h.type, fast=h.fast)
        for r in self.running:
            held = [{"host": host, "slots": n, "resources": _held(r, n)} for host, n in r.on]
            b.running(
                r.id,
                alloc=held,
                shared={LICENSE: r.lic} if r.lic else None,
                user=r.user,
                queue=r.queue,
                project=r.project,
            )
        if self.lic_total is not None:
            b.shared(LICENSE, self.lic_total)
        for lim in self.limits:
            b.limit(
                lim.name,
                users=lim.users,
                queues=lim.queues,
                projects=lim.projects,
                per_host=lim.per_host,
                slots=lim.slots,
                jobs=lim.jobs,
                resources={"mem": lim.mem} if lim.mem is not None else None,
            )
        for j in self.jobs:
            b.job(j.id, j.tasks, resreq=j.resreq, user=j.user, queue=j.queue, project=j.project)
        return b

    @cached_property
    def state(self) -> ClusterState:
        return self.builder().build()

    def with_jobs(self, *jobs: JobDraw) -> Scenario:
        """The same cluster with other pending jobs."""
        return Scenario(self.hosts, self.running, self.lic_total, self.limits, jobs)


def _held(r: RunningDraw, slots: int) -> dict[str, float]:
    held = {"mem": float(r.mem_per_task * slots), "swp": float(r.swp_per_host)}
    return {k: v for k, v in held.items() if v}


def capacities(scenario: Scenario) -> dict[str, dict[str, float]]:
    """Per host name, every consumable's capacity (slots included; absent: no such)."""
    out = {}
    for h in scenario.hosts:
        caps = {"slots": float(h.slots), "mem": h.mem, "swp": h.swp}
        out[h.name] = {k: float(v) for k, v in caps.items() if v is not None}
    return out


def running_use(scenario: Scenario) -> dict[str, dict[str, float]]:
    """Per host name, what the running work holds of every consumable."""
    out: dict[str, dict[str, float]] = {h.name: {} for h in scenario.hosts}
    for r in scenario.running:
        for host, n in r.on:
            for k, v in {"slots": float(n), **_held(r, n)}.items():
                out[host][k] = out[host].get(k, 0.0) + v
    return out


def host_facts(scenario: Scenario) -> list[HostFacts]:
    """Per host (in host order) what is free after the running work."""
    slots = {h.name: float(h.slots) for h in scenario.hosts}
    mem = {h.name: float(h.mem) if h.mem is not None else math.nan for h in scenario.hosts}
    for r in scenario.running:
        for host, n in r.on:
            slots[host] -= n
            mem[host] -= n * r.mem_per_task
    return [
        HostFacts(
            h.name,
            h.type,
            h.fast,
            slots[h.name],
            mem[h.name],
            float(h.mem) if h.mem is not None else math.nan,
            h.status == "ok",
        )
        for h in scenario.hosts
    ]


# -- the cluster ------------------------------------------------------------------------


@st.composite
def _hosts(draw: st.DrawFn, max_hosts: int) -> tuple[HostDraw, ...]:
    n = draw(st.integers(1, max_hosts))
    ntypes = draw(st.integers(2, 3))
    return tuple(
        HostDraw(
            name=f"h{i}",
            slots=draw(st.integers(1, 8)),
            mem=draw(st.sampled_from((None, 1000, 2000, 2000, 4000, 8000))),
            swp=draw(st.sampled_from((None, None, 200, 500))),
            type=draw(st.sampled_from(TYPES[:ntypes])),
            fast=draw(st.booleans()),
            status=draw(st.sampled_from(("ok",) * 6 + ("closed", "unavail"))),
        )
        for i in range(n)
    )


@st.composite
def _running(
    draw: st.DrawFn, hosts: tuple[HostDraw, ...], lic_total: int | None
) -> tuple[RunningDraw, ...]:
    """Running work that fits: each job takes what is still free."""
    free_slots = {h.name: h.slots for h in hosts}
    free_mem = {h.name: h.mem for h in hosts}
    free_swp = {h.name: h.swp for h in hosts}
    lic_left = lic_total or 0
    out: list[RunningDraw] = []
    for i in range(draw(st.integers(0, 4))):
        names = draw(st.lists(st.sampled_from([h.name for h in hosts]), min_size=1, max_size=2))
        on: list[tuple[str, int]] = []
        for name in dict.fromkeys(names):
            if free_slots[name] > 0:
                on.append((name, draw(st.integers(1, free_slots[name]))))
        if not on:
            continue
        per_task = draw(st.sampled_from((0, 0, 200, 500)))
        if any(free_mem[h] is None or free_mem[h] < per_task * n for h, n in on):
            per_task = 0
        swp = draw(st.sampled_from((0, 0, 100)))
        if any(free_swp[h] is None or free_swp[h] < swp for h, _ in on):
            swp = 0
        lic = draw(st.integers(0, lic_left))
        for h, n in on:
            free_slots[h] -= n
            if free_mem[h] is not None:
                free_mem[h] -= per_task * n
            if free_swp[h] is not None:
                free_swp[h] -= swp
        lic_left -= lic
        out.append(
            RunningDraw(
                f"r{i}",
                tuple(on),
                per_task,
                swp,
                lic,
                draw(st.sampled_from(USERS)),
                draw(st.sampled_from(QUEUES)),
                draw(st.sampled_from(PROJECTS)),
            )
        )
    return tuple(out)


def _consumers(names: tuple[str, ...]) -> st.SearchStrategy[tuple[str, ...] | None]:
    subset = st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True).map(tuple)
    return st.none() | subset


@st.composite
def _limits(draw: st.DrawFn) -> tuple[LimitDraw, ...]:
    out = []
    for i in range(draw(st.integers(0, 2))):
        what = draw(st.sampled_from(("slots", "jobs", "mem")))
        per_host = draw(st.booleans())
        amount = {
            "slots": st.integers(1, 8),
            "jobs": st.integers(1, 3),
            "mem": st.sampled_from((500, 1000, 3000)),
        }[what]
        out.append(
            LimitDraw(
                name=f"L{i}",
                users=draw(_consumers(USERS)),
                queues=draw(_consumers(QUEUES)),
                projects=draw(_consumers(PROJECTS)),
                per_host=per_host,
                **{what: draw(amount)},
            )
        )
    return tuple(out)


# -- jobs -------------------------------------------------------------------------------


@st.composite
def primary_texts(draw: st.DrawFn, lic: bool = False, placement: bool = True) -> str:
    """A SIMPLE requirement: select, rusage and (with ``placement``) span and same."""
    parts = [
        draw(st.sampled_from(sorted(SELECTS))),
        draw(st.sampled_from(_RUSAGES_LIC if lic else _RUSAGES_SWP)),
    ]
    if placement:
        parts += [
            draw(st.sampled_from(_SPANS)),
            draw(st.sampled_from(_SAMES)),
            draw(st.sampled_from(_ORDERS)),
        ]
    return " ".join(p for p in parts if p)


@st.composite
def compound_texts(draw: st.DrawFn, lic: bool = False) -> str:
    """``m1*{...} + m2*{...}``; the second term is sometimes the empty ``{-}``."""
    first = draw(primary_texts(lic)) or "-"
    second = draw(st.just("-") | primary_texts(lic)) or "-"
    m1, m2 = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    return f"{m1}*{{{first}}} + {m2}*{{{second}}}"


_TASKS = st.one_of(st.just(1), st.integers(2, 12), st.integers(2, 4))


@st.composite
def job_texts(draw: st.DrawFn, lic: bool = False) -> tuple[str, int | None]:
    """A requirement and the job's task count (None when a compound fixes it)."""
    kind = draw(st.sampled_from(("simple", "simple", "simple", "compound", "alter", "alter2")))
    if kind == "simple":
        return draw(primary_texts(lic)), draw(_TASKS)
    if kind == "compound":
        return draw(compound_texts(lic)), None
    if kind == "alter":
        a, b = draw(primary_texts(lic)), draw(primary_texts(lic))
        return f"{{{a}}} || {{{b}}}", draw(_TASKS)
    # A compound alternative fixes the total the simple alternative then takes.
    return f"{{{draw(compound_texts(lic))}}} || {{{draw(primary_texts(lic))}}}", None


@st.composite
def _jobs(draw: st.DrawFn, lic: bool, min_jobs: int, max_jobs: int) -> tuple[JobDraw, ...]:
    pool = draw(
        st.lists(
            st.tuples(
                job_texts(lic),
                st.sampled_from(USERS),
                st.sampled_from(QUEUES),
                st.sampled_from(PROJECTS),
            ),
            min_size=1,
            max_size=6,
        )
    )
    picks = draw(st.lists(st.sampled_from(pool), min_size=min_jobs, max_size=max_jobs))
    return tuple(
        JobDraw(f"j{i}", text, tasks, user, queue, project)
        for i, ((text, tasks), user, queue, project) in enumerate(picks)
    )


def simple_parallel_jobs(spans: bool = False) -> st.SearchStrategy[JobDraw]:
    """One parallel job (2-12 tasks): select and per-task mem only (``spans``: also
    ``span[hosts=1]`` / ``span[ptile=n]``). No same, no license."""
    span = st.sampled_from(_SPANS) if spans else st.just("")
    text = st.tuples(st.sampled_from(sorted(SELECTS)), st.sampled_from(_RUSAGES), span).map(
        lambda parts: " ".join(p for p in parts if p)
    )
    return st.builds(
        JobDraw,
        id=st.just("j"),
        resreq=text,
        tasks=st.integers(2, 12),
        user=st.just("alice"),
        queue=st.just("normal"),
        project=st.just("p1"),
    )


@st.composite
def scenarios(
    draw: st.DrawFn,
    *,
    max_hosts: int = 12,
    limits: bool = True,
    shared: bool = True,
    running: bool = True,
    min_jobs: int = 1,
    max_jobs: int = 25,
) -> Scenario:
    """A random small cluster with a job mix (see the module docstring)."""
    hosts = draw(_hosts(max_hosts))
    lic_total = draw(st.none() | st.integers(0, 4)) if shared else None
    run = draw(_running(hosts, lic_total)) if running else ()
    lims = draw(_limits()) if limits else ()
    jobs = draw(_jobs(lic_total is not None, min_jobs, max_jobs)) if max_jobs else ()
    return Scenario(hosts, run, lic_total, lims, jobs)


def states(**kwargs: object) -> st.SearchStrategy[ClusterState]:
    """Just the built states of :func:`scenarios` (same keyword arguments)."""
    return scenarios(**kwargs).map(lambda s: s.state)  # type: ignore[arg-type]
