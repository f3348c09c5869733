"""Hypothesis strategies for small random clusters and job mixes, shared by the suite.

``scenarios()`` draws a :class:`Scenario`: 1-12 hosts (1-8 slots, ``mem`` reserved per
task on most, ``swp`` reserved per host on some, ``scratch`` reserved *per job* on some,
a ``type`` of 2-3 values, a ``fast`` tag, some closed or unavailable), optionally a
shared license ``lic``, limits and running work that fits, and 1-25 pending jobs mixing
sequential, parallel, ``span``, ``same``, ``order``, compound and alter requirements over
a few users, queues and projects. Jobs are drawn from a small pool of templates, so
identical jobs (same requirement and identity) recur and the unsatisfiable cache gets
hits.

By default (``extended=True``) the mix also reaches what exact resource arithmetic and
the per-job fill plan are about (issue 9): fractional amounts (333.3, 0.1, 0.25, 2.5, ...)
in capacities, running work, limits, licences and rusage; per-job ``rusage[scratch=...]``,
alone and with ``order[]`` on a dynamic or static key; selects that can turn true as
resources fall (``select[mem<500]``, ``select[!(mem>100)]``) and one that float drift
breaks (``select[mem>=1000]``). Half of the extended scenarios use the :data:`PER_JOB` mix,
biased to where per-job amounts make a placement depend on host order (few hosts, scratch
only on 1-slot hosts, job templates with near-twins differing only in ``order[]``): the
unsatisfiable cache's key and the fill plan are wrong there unless they account for it.
``extended=False`` draws only the original integer mix. ``rusage[slots=...]`` is never
drawn (a submission error).

A scenario keeps what it drew (:class:`HostDraw`, ...) next to the built state, so tests
can compute expectations independently of the engine: :func:`capacities` and
:func:`running_use` give each host's capacities and what running work holds,
:func:`host_facts` what a select sees of it (exactly, in :class:`~fractions.Fraction`),
and :data:`SELECTS` an oracle predicate per select text the strategies use.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from hypothesis import strategies as st

from builders import ClusterBuilder
from xce.cluster import ClusterState

__all__ = [
    "PROJECTS",
    "QUEUES",
    "SCRATCH",
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
    "exact",
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
SCRATCH = "scratch"  # a consumable reserved once per job (on the job's first host)


def exact(x: float) -> Fraction:
    """The decimal a drawn amount was written as (333.3 is 3333/10, not its binary float)."""
    return Fraction(str(x))


def _float(x: Fraction) -> float | int:
    return int(x) if x.denominator == 1 else float(x)


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What a select can see of a host at session start (free = capacity - running),
    exactly; ``None`` when the host lacks ``mem``."""

    name: str
    type: str
    fast: bool
    slots: int
    mem: Fraction | None
    maxmem: Fraction | None
    ok: bool


def _ge(x: Fraction | None, y: float) -> bool:
    return x is not None and x >= exact(y)


def _gt(x: Fraction | None, y: float) -> bool:
    return x is not None and x > exact(y)


def _lt(x: Fraction | None, y: float) -> bool:
    return x is not None and x < exact(y)


SELECTS: dict[str, Callable[[HostFacts], bool]] = {
    "": lambda h: True,
    "select[type==A]": lambda h: h.type == "A",
    "select[type==B || fast]": lambda h: h.type == "B" or h.fast,
    "select[fast]": lambda h: h.fast,
    "select[!fast]": lambda h: not h.fast,
    "select[mem>=2000]": lambda h: _ge(h.mem, 2000),
    "select[maxmem>4000]": lambda h: _gt(h.maxmem, 4000),
    "select[slots<3]": lambda h: h.slots < 3,  # can turn true: never cached
    "select[type!=C && slots>=2]": lambda h: h.type != "C" and h.slots >= 2,
    # extended: float drift (4000 - 2000 - 3 x 333.3 - 0.1 must be exactly 1000) ...
    "select[mem>=1000]": lambda h: _ge(h.mem, 1000),
    # ... and selects that turn true as mem falls (never cached, no cursor)
    "select[mem<500]": lambda h: _lt(h.mem, 500),
    "select[!(mem>100)]": lambda h: not _gt(h.mem, 100),  # a host lacking mem: true
}
"""Every select text the strategies use, with an oracle predicate written independently
of the evaluator, in exact arithmetic (a host lacking ``mem`` fails a comparison on it,
so ``!(mem>100)`` holds there)."""

_BASIC_SELECTS = (
    "",
    "select[type==A]",
    "select[type==B || fast]",
    "select[fast]",
    "select[!fast]",
    "select[mem>=2000]",
    "select[maxmem>4000]",
    "select[slots<3]",
    "select[type!=C && slots>=2]",
)
_ALL_SELECTS = tuple(sorted(SELECTS))


_TASKS = st.one_of(st.just(1), st.integers(2, 12), st.integers(2, 4))


@dataclass(frozen=True, slots=True)
class _Mix:
    """What a strategy draws from: the original integer mix or the extended one."""

    selects: tuple[str, ...]
    rusages: tuple[str, ...]  # mem only (simple_parallel_jobs' oracle reads them)
    rusages_host: tuple[str, ...]  # + swp (per host) and scratch (per job)
    rusages_lic: tuple[str, ...]
    sames: tuple[str, ...]
    orders: tuple[str, ...]
    host_mem: tuple[float | None, ...]
    host_swp: tuple[float | None, ...]
    host_scratch: tuple[float | None, ...]
    run_mem: tuple[float, ...]
    run_swp: tuple[float, ...]
    run_scratch: tuple[float, ...]
    lic_totals: st.SearchStrategy[float | None]
    limit_mem: tuple[float, ...]
    spans: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ("simple", "simple", "simple", "compound", "alter", "alter2")
    min_hosts: int = 1
    max_hosts: int = 12
    max_slots: int = 8
    scratch_small: bool = False  # hosts with scratch have 1 slot
    max_running: int = 4
    max_limits: int = 2
    tasks: st.SearchStrategy[int] = _TASKS
    max_templates: int = 6  # distinct job templates (jobs recur: cache hits)
    twins: int = 0  # near-twin templates (only order[] changed) added to the job pool
    max_jobs: int = 25


_RUSAGES = ("", "", "rusage[mem=300]", "rusage[mem=500]", "rusage[mem=1500]")
_RUSAGES_SWP = (*_RUSAGES, "rusage[swp=100]", "rusage[mem=300:swp=300]")
_LIC = ("rusage[lic=1]", "rusage[mem=300:lic=1]", "rusage[lic=2]")
_SPANS = ("", "", "", "span[hosts=1]", "span[ptile=2]", "span[ptile=3]")
_SAMES = ("", "", "", "same[type]")
_ORDERS = ("", "", "", "", "order[-slots]", "order[mem]")

_X_RUSAGES = (
    *_RUSAGES,
    "rusage[mem=333.3]",
    "rusage[mem=0.1]",
    "rusage[mem=0.25]",
    "rusage[mem=2.5]",
)
_X_RUSAGES_HOST = (
    *_X_RUSAGES,
    "rusage[swp=100]",
    "rusage[mem=300:swp=300]",
    "rusage[swp=0.25]",
    # per job: charged once, on the job's first host (the fill plan depends on host order)
    "rusage[scratch=10]",
    "rusage[scratch=10]",
    "rusage[scratch=2.5]",
    "rusage[mem=333.3:scratch=10]",
    "rusage[mem=0.1:scratch=0.1]",
)

BASIC = _Mix(
    selects=_BASIC_SELECTS,
    rusages=_RUSAGES,
    rusages_host=_RUSAGES_SWP,
    rusages_lic=(*_RUSAGES_SWP, *_LIC),
    sames=_SAMES,
    orders=_ORDERS,
    host_mem=(None, 1000, 2000, 2000, 4000, 8000),
    host_swp=(None, None, 200, 500),
    host_scratch=(None,),
    run_mem=(0, 0, 200, 500),
    run_swp=(0, 0, 100),
    run_scratch=(0,),
    lic_totals=st.none() | st.integers(0, 4),
    limit_mem=(500, 1000, 3000),
    spans=_SPANS,
)
EXTENDED = _Mix(
    selects=_ALL_SELECTS,
    rusages=_X_RUSAGES,
    rusages_host=_X_RUSAGES_HOST,
    rusages_lic=(*_X_RUSAGES_HOST, *_LIC, "rusage[lic=0.5]", "rusage[mem=0.25:lic=2.5]"),
    sames=(*_SAMES, "same[type]", "same[fast]"),
    orders=(
        *_ORDERS,
        "order[scratch]",  # hosts with the most scratch first (dynamic key)
        "order[-scratch]",
        "order[-mem:slots]",
        "order[swp]",
    ),
    host_mem=(None, 1000, 2000, 2000, 4000, 8000, 999.9, 4000.25, 2.5, 0.3),
    host_swp=(None, None, 200, 500, 0.25),
    host_scratch=(None, None, 0, 10, 10, 2.5, 20),
    run_mem=(0, 0, 200, 500, 333.3, 0.1, 2.5),
    run_swp=(0, 0, 100, 0.25),
    run_scratch=(0, 0, 10, 2.5),
    lic_totals=st.none() | st.integers(0, 4) | st.sampled_from((0.5, 2.5)),
    limit_mem=(500, 1000, 3000, 666.6, 0.5),
    spans=_SPANS,
    twins=2,
)
PER_JOB = dataclasses.replace(
    EXTENDED,
    selects=("", "", "", "", "", "select[mem<500]"),
    lic_totals=st.sampled_from((None, None, None, 1)),
    max_limits=1,
    rusages_host=(
        "rusage[scratch=10]",
        "rusage[scratch=10]",
        "rusage[scratch=10]",
        "rusage[scratch=2.5]",
        "rusage[mem=333.3:scratch=10]",
        "rusage[mem=0.1:scratch=0.1]",
    ),
    rusages_lic=("rusage[scratch=10]", "rusage[scratch=10:lic=1]", "rusage[scratch=2.5]"),
    spans=("", "", "", "", "", "span[ptile=2]"),
    sames=("", "", "", "", "", "same[type]"),
    orders=("", "order[scratch]", "order[-scratch]", "order[mem]", "order[-slots]", "order[slots]"),
    kinds=("simple", "simple", "simple", "simple", "simple", "alter"),
    host_scratch=(None, 0, 10, 10),
    max_hosts=4,
    max_slots=4,
    tasks=st.integers(2, 6),
    twins=3,
    max_templates=2,
    max_jobs=5,
    min_hosts=2,
    max_running=1,
    scratch_small=True,
)
"""Biased to where per-job amounts make the fill plan depend on host order (the
unsatisfiable cache's key must cover everything that changes the outcome): few hosts,
scratch on some, most jobs wanting scratch without a span, order[] twins."""


def _mix(extended: bool) -> _Mix:
    return EXTENDED if extended else BASIC


@dataclass(frozen=True, slots=True)
class HostDraw:
    name: str
    slots: int
    mem: float | None
    swp: float | None
    type: str
    fast: bool
    status: str
    scratch: float | None = None


@dataclass(frozen=True, slots=True)
class RunningDraw:
    id: str
    on: tuple[tuple[str, int], ...]  # (host, slots)
    mem_per_task: float
    swp_per_host: float
    lic: float
    user: str
    queue: str
    project: str
    scratch: float = 0  # held once, on its first host


@dataclass(frozen=True, slots=True)
class LimitDraw:
    name: str
    users: tuple[str, ...] | None
    queues: tuple[str, ...] | None
    projects: tuple[str, ...] | None
    per_host: bool
    slots: int | None = None
    jobs: int | None = None
    mem: float | None = None


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
    lic_total: float | None = None
    limits: tuple[LimitDraw, ...] = ()
    jobs: tuple[JobDraw, ...] = ()

    def builder(self) -> ClusterBuilder:
        b = ClusterBuilder()
        # Declared, so hosts may lack mem and selects on type/fast are always valid.
        b.resource("mem", "consumable").resource("swp", "consumable", "per_host")
        b.resource(SCRATCH, "consumable", "per_job")
        b.resource("type", "string").resource("fast", "boolean")
        b.queue("normal", priority=30).queue("high", priority=50)
        for h in self.hosts:
            status = None if h.status == "ok" else h.status
            res = {
                k: v
                for k, v in (("mem", h.mem), ("swp", h.swp), (SCRATCH, h.scratch))
                if v is not None
            }
            b.host(h.name, h.slots, status=status, resources=res, type=h.type, fast=h.fast)
        for r in self.running:
            held = [
                {"host": host, "slots": n, "resources": _held(r, n, i == 0)}
                for i, (host, n) in enumerate(r.on)
            ]
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


def _held_exact(r: RunningDraw, slots: int, first: bool) -> dict[str, Fraction]:
    held = {
        "mem": exact(r.mem_per_task) * slots,
        "swp": exact(r.swp_per_host),
        SCRATCH: exact(r.scratch) if first else Fraction(0),
    }
    return {k: v for k, v in held.items() if v}


def _held(r: RunningDraw, slots: int, first: bool) -> dict[str, float]:
    """What a running job holds on one of its hosts, as written in the state file (the
    float nearest the exact decimal: 3 x 333.3 is written 999.9)."""
    return {k: float(v) for k, v in _held_exact(r, slots, first).items()}


def capacities(scenario: Scenario) -> dict[str, dict[str, float]]:
    """Per host name, every consumable's capacity (slots included; absent: no such)."""
    out = {}
    for h in scenario.hosts:
        caps = {"slots": float(h.slots), "mem": h.mem, "swp": h.swp, SCRATCH: h.scratch}
        out[h.name] = {k: float(v) for k, v in caps.items() if v is not None}
    return out


def running_use(scenario: Scenario) -> dict[str, dict[str, float]]:
    """Per host name, what the running work holds of every consumable."""
    out: dict[str, dict[str, Fraction]] = {h.name: {} for h in scenario.hosts}
    for r in scenario.running:
        for i, (host, n) in enumerate(r.on):
            for k, v in {"slots": Fraction(n), **_held_exact(r, n, i == 0)}.items():
                out[host][k] = out[host].get(k, Fraction(0)) + v
    return {h: {k: float(v) for k, v in use.items()} for h, use in out.items()}


def host_facts(scenario: Scenario) -> list[HostFacts]:
    """Per host (in host order) what is free after the running work, exactly."""
    slots = {h.name: h.slots for h in scenario.hosts}
    mem = {h.name: exact(h.mem) if h.mem is not None else None for h in scenario.hosts}
    for r in scenario.running:
        for host, n in r.on:
            slots[host] -= n
            m = mem[host]
            if m is not None:
                mem[host] = m - exact(r.mem_per_task) * n
    return [
        HostFacts(
            h.name,
            h.type,
            h.fast,
            slots[h.name],
            mem[h.name],
            exact(h.mem) if h.mem is not None else None,
            h.status == "ok",
        )
        for h in scenario.hosts
    ]


# -- the cluster ------------------------------------------------------------------------


@st.composite
def _hosts(draw: st.DrawFn, max_hosts: int, mix: _Mix) -> tuple[HostDraw, ...]:
    n = draw(st.integers(min(mix.min_hosts, max_hosts), max_hosts))
    ntypes = draw(st.integers(2, 3))
    out = []
    for i in range(n):
        scratch = draw(st.sampled_from(mix.host_scratch))
        # PER_JOB: scratch on 1-slot hosts only, so a job's first bucket (which takes the
        # scratch) is small and the rest must come from other hosts.
        most = 1 if mix.scratch_small and scratch else mix.max_slots
        out.append(
            HostDraw(
                name=f"h{i}",
                slots=draw(st.integers(1, most)),
                mem=draw(st.sampled_from(mix.host_mem)),
                swp=draw(st.sampled_from(mix.host_swp)),
                type=draw(st.sampled_from(TYPES[:ntypes])),
                fast=draw(st.booleans()),
                status=draw(st.sampled_from(("ok",) * 6 + ("closed", "unavail"))),
                scratch=scratch,
            )
        )
    return tuple(out)


def _fits(free: Fraction | None, want: Fraction) -> bool:
    return want == 0 or (free is not None and free >= want)


@st.composite
def _running(
    draw: st.DrawFn, hosts: tuple[HostDraw, ...], lic_total: float | None, mix: _Mix
) -> tuple[RunningDraw, ...]:
    """Running work that fits (exactly): each job takes what is still free."""

    def amounts(attr: str) -> dict[str, Fraction | None]:
        return {
            h.name: exact(getattr(h, attr)) if getattr(h, attr) is not None else None for h in hosts
        }

    free_slots = {h.name: h.slots for h in hosts}
    free = {"mem": amounts("mem"), "swp": amounts("swp"), SCRATCH: amounts(SCRATCH)}
    lic_left = exact(lic_total or 0)
    out: list[RunningDraw] = []
    for i in range(draw(st.integers(0, mix.max_running))):
        names = draw(st.lists(st.sampled_from([h.name for h in hosts]), min_size=1, max_size=2))
        on: list[tuple[str, int]] = []
        for name in dict.fromkeys(names):
            if free_slots[name] > 0:
                on.append((name, draw(st.integers(1, free_slots[name]))))
        if not on:
            continue
        per_task = draw(st.sampled_from(mix.run_mem))
        if not all(_fits(free["mem"][h], exact(per_task) * n) for h, n in on):
            per_task = 0
        swp = draw(st.sampled_from(mix.run_swp))
        if not all(_fits(free["swp"][h], exact(swp)) for h, _ in on):
            swp = 0
        scratch = draw(st.sampled_from(mix.run_scratch))
        if not _fits(free[SCRATCH][on[0][0]], exact(scratch)):
            scratch = 0
        lic = _float(Fraction(draw(st.integers(0, int(2 * lic_left))), 2))
        draft = RunningDraw(f"r{i}", tuple(on), per_task, swp, lic, "", "", "", scratch)
        for k, (h, n) in enumerate(on):
            free_slots[h] -= n
            for name, amount in _held_exact(draft, n, k == 0).items():
                left = free[name][h]
                assert left is not None
                free[name][h] = left - amount
        lic_left -= exact(lic)
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
                scratch,
            )
        )
    return tuple(out)


def _consumers(names: tuple[str, ...]) -> st.SearchStrategy[tuple[str, ...] | None]:
    subset = st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True).map(tuple)
    return st.none() | subset


@st.composite
def _limits(draw: st.DrawFn, mix: _Mix) -> tuple[LimitDraw, ...]:
    out = []
    for i in range(draw(st.integers(0, mix.max_limits))):
        what = draw(st.sampled_from(("slots", "jobs", "mem")))
        per_host = draw(st.booleans())
        amount = {
            "slots": st.integers(1, 8),
            "jobs": st.integers(1, 3),
            "mem": st.sampled_from(mix.limit_mem),
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
def _primary(draw: st.DrawFn, mix: _Mix, lic: bool, placement: bool = True) -> str:
    parts = [
        draw(st.sampled_from(mix.selects)),
        draw(st.sampled_from(mix.rusages_lic if lic else mix.rusages_host)),
    ]
    if placement:
        parts += [
            draw(st.sampled_from(mix.spans)),
            draw(st.sampled_from(mix.sames)),
            draw(st.sampled_from(mix.orders)),
        ]
    return " ".join(p for p in parts if p)


@st.composite
def _compound(draw: st.DrawFn, mix: _Mix, lic: bool) -> str:
    first = draw(_primary(mix, lic)) or "-"
    second = draw(st.just("-") | _primary(mix, lic)) or "-"
    m1, m2 = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    return f"{m1}*{{{first}}} + {m2}*{{{second}}}"


@st.composite
def _job_text(draw: st.DrawFn, mix: _Mix, lic: bool) -> tuple[str, int | None]:
    kind = draw(st.sampled_from(mix.kinds))
    primary, compound = _primary(mix, lic), _compound(mix, lic)
    if kind == "simple":
        return draw(primary), draw(mix.tasks)
    if kind == "compound":
        return draw(compound), None
    if kind == "alter":
        a, b = draw(primary), draw(primary)
        return f"{{{a}}} || {{{b}}}", draw(mix.tasks)
    # A compound alternative fixes the total the simple alternative then takes.
    return f"{{{draw(compound)}}} || {{{draw(primary)}}}", None


def primary_texts(
    lic: bool = False, placement: bool = True, *, extended: bool = True
) -> st.SearchStrategy[str]:
    """A SIMPLE requirement: select, rusage and (with ``placement``) span, same, order."""
    return _primary(_mix(extended), lic, placement)


def compound_texts(lic: bool = False, *, extended: bool = True) -> st.SearchStrategy[str]:
    """``m1*{...} + m2*{...}``; the second term is sometimes the empty ``{-}``."""
    return _compound(_mix(extended), lic)


def job_texts(
    lic: bool = False, *, extended: bool = True
) -> st.SearchStrategy[tuple[str, int | None]]:
    """A requirement and the job's task count (None when a compound fixes it)."""
    return _job_text(_mix(extended), lic)


_ORDER = re.compile(r"\s*order\[[^\]]*\]")


@st.composite
def _jobs(
    draw: st.DrawFn, mix: _Mix, lic: bool, min_jobs: int, max_jobs: int
) -> tuple[JobDraw, ...]:
    pool = draw(
        st.lists(
            st.tuples(
                _job_text(mix, lic),
                st.sampled_from(USERS),
                st.sampled_from(QUEUES),
                st.sampled_from(PROJECTS),
            ),
            min_size=1,
            max_size=mix.max_templates,
        )
    )
    # Near-twins: a simple template again with only its order[] changed (same identity),
    # so jobs sharing a cache key (order[] is not in the fingerprint) may place differently.
    simple = [t for t in pool if "{" not in t[0][0]]
    if simple and mix.twins:
        for (text, tasks), *who in draw(st.lists(st.sampled_from(simple), max_size=mix.twins)):
            order = draw(st.sampled_from(mix.orders))
            twin = " ".join(p for p in (_ORDER.sub("", text).strip(), order) if p)
            pool.append(((twin, tasks), *who))
    most = max(min_jobs, min(max_jobs, mix.max_jobs))
    picks = draw(st.lists(st.sampled_from(pool), min_size=min_jobs, max_size=most))
    return tuple(
        JobDraw(f"j{i}", text, tasks, user, queue, project)
        for i, ((text, tasks), user, queue, project) in enumerate(picks)
    )


def simple_parallel_jobs(
    spans: bool = False, *, extended: bool = True
) -> st.SearchStrategy[JobDraw]:
    """One parallel job (2-12 tasks): select and per-task mem only (``spans``: also
    ``span[hosts=1]`` / ``span[ptile=n]``). No same, no order, no license, nothing per
    host or per job; with ``extended``, fractional mem and the volatile selects."""
    mix = _mix(extended)
    span = st.sampled_from(mix.spans) if spans else st.just("")
    text = st.tuples(st.sampled_from(mix.selects), st.sampled_from(mix.rusages), span).map(
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
    extended: bool = True,
) -> Scenario:
    """A random small cluster with a job mix (see the module docstring)."""
    mix = draw(st.sampled_from((EXTENDED, PER_JOB))) if extended else BASIC
    hosts = draw(_hosts(min(max_hosts, mix.max_hosts), mix))
    lic_total = draw(mix.lic_totals) if shared else None
    run = draw(_running(hosts, lic_total, mix)) if running else ()
    lims = draw(_limits(mix)) if limits else ()
    jobs = draw(_jobs(mix, lic_total is not None, min_jobs, max_jobs)) if max_jobs else ()
    return Scenario(hosts, run, lic_total, lims, jobs)


def states(**kwargs: object) -> st.SearchStrategy[ClusterState]:
    """Just the built states of :func:`scenarios` (same keyword arguments)."""
    return scenarios(**kwargs).map(lambda s: s.state)  # type: ignore[arg-type]
