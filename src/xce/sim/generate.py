"""Synthetic workloads: a seeded generator with the full requirement mix (jobs files
are read and written by :mod:`xce.sim.workload`). docs/workload-generator.md describes
the model at length; in short:

- **arrivals**: a Poisson process (exponential gaps, mean ``mean_interarrival``), with
  an optional daily cycle (rate × (1 + a·cos(2π(t − peak)/day)), by thinning), so the
  mean gap over a day stays ``mean_interarrival``; whole seconds from 0.
- **sizes**: 60 % sequential (1 task); 30 % parallel, 2–64 tasks, mostly powers of two
  (a fifth are 3·2^k); 10 % compound or alternative requirements (half each).
- **runtimes**: log-normal (median 10 min, σ 1.5) capped at 24 h, whole seconds ≥ 1;
  requested time = runtime × U(1, 3), rounded up to a minute.
- **requirements**: selects on the host type and on tags, a few on available memory;
  per-task memory rusage; a few jobs take a licence; some parallel jobs have
  ``span[ptile=n]`` or ``span[hosts=1]``; compound ``a*{select[..] rusage[..]} + b*{-}``
  and alternative ``{select[type==A] ..} || {select[type==B] ..}``.
- **who**: users Zipf-like over 20 users (each in one project); queues normal 80 %,
  high 15 %, low 5 %.

Names (types, tags, memory resource, licence) come from a cluster, by default the one of
``examples/cluster.yaml``. Every job is valid there and can run alone on it once all work
that ends has ended: sizes, memory and licences are shrunk to what its open hosts, less
what never-ending running work holds, and the limits that apply to the job's user, queue
and project can ever hold.

Same seed, model and cluster → the same jobs and a byte-identical file, on any Python:
only ``random.Random.random()`` is used, whose sequence Python keeps stable. Arrivals,
runtimes and the job mix draw from separate streams, so changing the load
(``mean_interarrival``) or the runtimes keeps the very same jobs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from xce.cluster import ClusterState, state_from_text
from xce.errors import InputError
from xce.sim.capacity import Bound, ClusterCapacity, Primary, Select
from xce.sim.model import SimJob

__all__ = [
    "MAX_GENERATED_JOBS",
    "MAX_HOSTS",
    "MAX_USERS",
    "WorkloadModel",
    "default_cluster",
    "generate_workload",
]

MAX_GENERATED_JOBS = 10_000_000
"""Most jobs one call may generate: every job is held in memory (about 1 kB each)."""
MAX_HOSTS = 1_000_000
"""Most hosts a generated or SWF-derived cluster may have (``--hosts``, ``MaxNodes``)."""
MAX_USERS = 1_000_000
"""Most users a workload model may have (each gets a weight held in memory)."""


T = TypeVar("T")
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_DAY = 86400.0
_USER_NAMES = (
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
    "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter",
    "yolanda",
)  # fmt: skip
_PROJECTS = ("climate", "cfd", "bio", "ml", "astro", "chem")
_SIZES = (2, 4, 8, 16, 32, 64, 3, 6, 12, 24, 48)
_SIZE_WEIGHTS = (16, 14, 10, 8, 4, 2, 4, 3, 2, 1, 1)  # a fifth are 3·2^k
_PTILES = (1, 2, 4, 8, 16)
_MEM_MB = (250, 500, 1000, 2000, 4000, 8000, 16000)
_MEM_WEIGHTS = (1, 2, 4, 4, 3, 2, 1)
_TERM_SIZES = (1, 2, 4, 8)
_ALT_SIZES = (1, 1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class WorkloadModel:
    """The generator's knobs. Fractions are of all jobs; what is left after
    ``sequential`` and ``parallel`` is compound or alternative, half each."""

    mean_interarrival: float = 40.0  # seconds between submissions, on average
    load: float | None = None  # if set, the offered load instead (sets mean_interarrival)
    daily_amplitude: float = 0.0  # 0: flat Poisson; 0.5: peak rate 1.5x, trough 0.5x
    peak_hour: float = 14.0  # hour of the day the arrival rate peaks
    sequential: float = 0.60
    parallel: float = 0.30
    max_tasks: int = 64  # largest parallel size drawn (the cluster may cap it lower)
    runtime_median: float = 600.0  # seconds
    runtime_sigma: float = 1.5  # of the log of the runtime
    runtime_cap: float = _DAY  # seconds
    max_overestimate: float = 3.0  # requested time <= runtime x this
    users: int = 20
    zipf_exponent: float = 1.1  # user k submits in proportion to 1 / k^s
    queues: tuple[tuple[str, float], ...] = (("normal", 0.80), ("high", 0.15), ("low", 0.05))
    licence_fraction: float = 0.03  # of simple requirements and compound first terms

    def check(self) -> None:
        """Raise :class:`InputError` naming the first knob out of range."""
        for name, value in (
            ("mean_interarrival", self.mean_interarrival),
            ("runtime_median", self.runtime_median),
        ):
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"{name} must be a positive number of seconds, got {value}")
        if not (math.isfinite(self.runtime_cap) and self.runtime_cap >= 1):
            raise InputError(f"runtime_cap must be at least 1 second, got {self.runtime_cap}")
        fractions = {
            "daily_amplitude": (self.daily_amplitude, 0.0, 1.0),
            "sequential": (self.sequential, 0.0, 1.0),
            "parallel": (self.parallel, 0.0, 1.0 - self.sequential),
            "licence_fraction": (self.licence_fraction, 0.0, 1.0),
        }
        for name, (value, lo, hi) in fractions.items():
            if not lo <= value <= hi + 1e-12:
                raise InputError(f"{name} must be between {lo:g} and {hi:g}, got {value}")
        if not (math.isfinite(self.runtime_sigma) and self.runtime_sigma >= 0):
            raise InputError(
                f"runtime_sigma must be a finite number >= 0, got {self.runtime_sigma}"
            )
        if not (math.isfinite(self.max_overestimate) and self.max_overestimate >= 1):
            raise InputError(f"max_overestimate must be at least 1, got {self.max_overestimate}")
        if not (math.isfinite(self.peak_hour) and 0 <= self.peak_hour < 24):
            raise InputError(
                f"peak_hour must be an hour from 0 to 24 (not included), got {self.peak_hour}"
            )
        if self.load is not None and not (math.isfinite(self.load) and self.load > 0):
            raise InputError(f"load must be a positive fraction of the slots, got {self.load}")
        if self.max_tasks < 2:
            raise InputError(f"max_tasks must be at least 2, got {self.max_tasks}")
        if not 1 <= self.users <= MAX_USERS:
            raise InputError(f"users must be from 1 to {MAX_USERS:,}, got {self.users}")
        if not (math.isfinite(self.zipf_exponent) and self.zipf_exponent >= 0):
            raise InputError(
                f"zipf_exponent must be a finite number >= 0, got {self.zipf_exponent}"
            )
        if not self.queues or any(w < 0 for _, w in self.queues) or _total(self.queues) <= 0:
            raise InputError("queues need at least one positive weight")


def _total(weighted: Sequence[tuple[str, float]]) -> float:
    return sum(w for _, w in weighted)


# -- randomness ---------------------------------------------------------------------------


class _Draw:
    """One random stream, built on ``random()`` alone (stable across Python versions)."""

    def __init__(self, seed: int, purpose: str) -> None:
        self._rng = random.Random(f"xce-workload:{seed}:{purpose}")

    def uniform(self, lo: float = 0.0, hi: float = 1.0) -> float:
        return lo + (hi - lo) * self._rng.random()

    def chance(self, p: float) -> bool:
        return self._rng.random() < p

    def exponential(self, mean: float) -> float:
        return -mean * math.log(1.0 - self._rng.random())

    def normal(self) -> float:
        """Box–Muller."""
        u1, u2 = 1.0 - self._rng.random(), self._rng.random()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def pick(self, items: Sequence[T], weights: Sequence[float]) -> T:
        x = self._rng.random() * sum(weights)
        for item, w in zip(items, weights, strict=True):
            x -= w
            if x < 0:
                return item
        return items[-1]


# -- drawing jobs --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    tasks: int | None  # None: the compound requirement fixes it
    resreq: str
    total: int  # tasks the job runs


class _Mixer:
    """Draws what a job asks for and shrinks it to what the cluster can ever run."""

    def __init__(self, cluster: ClusterCapacity, model: WorkloadModel, draw: _Draw) -> None:
        self.c = cluster
        self.m = model
        self.d = draw

    def shape(self, limits: Sequence[Bound]) -> _Shape:
        m, d = self.m, self.d
        r = d.uniform()
        if r < m.sequential:
            return self._simple(self._primary(1), 1, limits)
        if r < m.sequential + m.parallel:
            size = min(d.pick(_SIZES, _SIZE_WEIGHTS), m.max_tasks)
            return self._simple(self._primary(size), size, limits)
        if d.chance(0.5):
            return self._compound(limits)
        return self._alternative(limits)

    def _primary(self, tasks: int) -> Primary:
        d, c = self.d, self.c
        r = d.uniform()
        select: Select | None = None
        mem = d.pick(_MEM_MB, _MEM_WEIGHTS) if d.chance(0.7) and c.mem_name else 0
        if r < 0.25 and c.types:
            select = d.pick(c.types, [float(c.slots[s.hosts].sum()) for s in c.types])
        elif r < 0.35 and c.tags:
            select = d.pick(c.tags, [float(c.slots[s.hosts].sum()) for s in c.tags])
        elif r < 0.38 and tasks == 1 and c.bigmem is not None:
            select, mem = c.bigmem, int(c.bigmem.text.split(">")[1])
        span = ""
        s = d.uniform()
        if tasks > 1 and s < 0.2:
            ptiles = [p for p in _PTILES if p <= tasks // 2]
            span = f"ptile={d.pick(ptiles, [1.0] * len(ptiles))}"
        elif tasks > 1 and s < 0.3:
            span = "hosts=1"
        licence = None
        if d.chance(self.m.licence_fraction) and c.licences:
            licence = d.pick(c.licences, [1.0] * len(c.licences))
        return Primary(select, mem, span, licence)

    def _simple(self, prim: Primary, tasks: int, limits: Sequence[Bound]) -> _Shape:
        """Shrink the size first (a parallel job stays parallel), then the requirement."""
        lowest = 2 if tasks >= 2 else 1
        for candidate in prim.simpler():
            n = self.c.fit(candidate, tasks, limits)
            if n >= lowest:
                return _Shape(n, candidate.render(self.c.mem_name), n)
        if lowest > 1:
            return self._simple(prim, 1, limits)
        raise InputError(
            "no job can ever run on this cluster under its limits "
            f"(limits {', '.join(lim.name for lim in limits) or 'none'})"
        )

    def _compound(self, limits: Sequence[Bound]) -> _Shape:
        d, c = self.d, self.c
        first = self._primary(1)
        if first.select is None or first.select is c.bigmem:
            pool = c.types + c.tags
            first = replace(first, select=d.pick(pool, [1.0] * len(pool)) if pool else None)
        second = Primary(mem=d.pick(_MEM_MB, _MEM_WEIGHTS) if d.chance(0.5) else 0)
        if not c.mem_name:
            second = Primary()
        sizes = [d.pick(_TERM_SIZES, [4, 3, 2, 1]), d.pick(_TERM_SIZES, [4, 3, 2, 1])]
        firsts, seconds = list(first.simpler()), list(second.simpler())
        for level in range(max(len(firsts), len(seconds))):
            pair = (firsts[min(level, len(firsts) - 1)], seconds[min(level, len(seconds) - 1)])
            counts = list(sizes)
            while True:
                terms = list(zip(pair, counts, strict=True))
                if c.compound_fits(terms, limits):
                    text = " + ".join(f"{n}*{{{p.render(c.mem_name) or '-'}}}" for p, n in terms)
                    return _Shape(None, text, sum(counts))
                if max(counts) == 1:
                    break
                big = counts.index(max(counts))
                counts[big] //= 2
        return self._simple(Primary(), 1, limits)

    def _alternative(self, limits: Sequence[Bound]) -> _Shape:
        d, c = self.d, self.c
        pool: list[Select | None] = [*c.types, *c.tags, None]
        a = d.pick(pool, [1.0] * len(pool))
        b = d.pick(pool, [1.0] * len(pool))
        if b is a and len(pool) > 1:
            b = pool[(pool.index(a) + 1) % len(pool)]
        alts = [
            Primary(a, d.pick(_MEM_MB, _MEM_WEIGHTS) if c.mem_name else 0),
            Primary(b, d.pick(_MEM_MB, _MEM_WEIGHTS) if c.mem_name else 0),
        ]
        tasks = d.pick(_ALT_SIZES, [1.0] * len(_ALT_SIZES))
        chains = [list(p.simpler()) for p in alts]
        for level in range(max(len(ch) for ch in chains)):
            pair = [ch[min(level, len(ch) - 1)] for ch in chains]
            texts = [p.render(c.mem_name) for p in pair]
            n = min(c.fit(p, tasks, limits) for p in pair)
            if n >= 1 and texts[0] != texts[1]:
                return _Shape(n, " || ".join(f"{{{t}}}" for t in texts), n)
        return self._simple(alts[0], tasks, limits)


# -- the workload --------------------------------------------------------------------------


def generate_workload(
    n_jobs: int,
    *,
    seed: int = 0,
    cluster: ClusterState | None = None,
    model: WorkloadModel | None = None,
) -> list[SimJob]:
    """``n_jobs`` jobs in submission order, ids ``"1"``..``"n"``, valid and runnable on
    ``cluster`` (default: the cluster of ``examples/cluster.yaml``).

    Raises :class:`InputError` for a bad count or model, or a cluster that can run nothing.
    """
    if not 0 <= n_jobs <= MAX_GENERATED_JOBS:
        raise InputError(
            f"the number of jobs must be between 0 and {MAX_GENERATED_JOBS:,}, got {n_jobs}"
        )
    model = model or WorkloadModel()
    model.check()
    target = ClusterCapacity(cluster if cluster is not None else default_cluster())
    runtimes = _Draw(seed, "runtimes")
    who = _Draw(seed, "who")
    mixer = _Mixer(target, model, _Draw(seed, "mix"))
    users = _users(model.users)
    zipf = [1.0 / (k + 1) ** model.zipf_exponent for k in range(len(users))]
    queue_names = [q for q, _ in model.queues]
    queue_weights = [w for _, w in model.queues]
    drawn: list[tuple[str, str, str, _Shape, float, float]] = []
    for _ in range(n_jobs):
        k = who.pick(range(len(users)), zipf)
        user, project = users[k], _PROJECTS[k % len(_PROJECTS)]
        queue = who.pick(queue_names, queue_weights)
        shape = mixer.shape(target.limits_for(user, queue, project))
        drawn.append((user, queue, project, shape, *_runtime(model, runtimes)))
    if model.load is not None and drawn:
        work = sum(shape.total * runtime for _, _, _, shape, runtime, _ in drawn)
        gap = work / len(drawn) / (model.load * float(target.slots.sum()))
        model = replace(model, mean_interarrival=gap)
    arrivals = _arrivals(n_jobs, model, _Draw(seed, "arrivals"))
    return [
        SimJob(
            id=str(i + 1),
            submit=submit,
            runtime=runtime,
            tasks=shape.tasks,
            user=user,
            queue=queue,
            project=project,
            resreq=shape.resreq,
            requested_time=requested,
        )
        for i, (submit, (user, queue, project, shape, runtime, requested)) in enumerate(
            zip(arrivals, drawn, strict=True)
        )
    ]


def _users(n: int) -> list[str]:
    return [_USER_NAMES[k] if k < len(_USER_NAMES) else f"user{k + 1:03d}" for k in range(n)]


def _arrivals(n: int, model: WorkloadModel, d: _Draw) -> list[float]:
    """Submit times in whole seconds: Poisson, thinned to the daily cycle if any."""
    a = model.daily_amplitude
    peak_rate_gap = model.mean_interarrival / (1.0 + a)  # candidates at the peak rate
    times: list[float] = []
    t = 0.0
    while len(times) < n:
        t += d.exponential(peak_rate_gap)
        if a > 0:
            phase = 2.0 * math.pi * (t - model.peak_hour * 3600.0) / _DAY
            if not d.chance((1.0 + a * math.cos(phase)) / (1.0 + a)):
                continue
        times.append(float(round(t)))
    return times


def _runtime(model: WorkloadModel, d: _Draw) -> tuple[float, float]:
    """(runtime, requested time), in whole seconds; requested in whole minutes."""
    raw = model.runtime_median * math.exp(model.runtime_sigma * d.normal())
    runtime = float(min(max(round(raw), 1), math.floor(model.runtime_cap)))
    requested = math.ceil(runtime * d.uniform(1.0, model.max_overestimate) / 60.0) * 60.0
    return runtime, max(requested, runtime)


_DEFAULT_CLUSTER = """
resources: {mem: {kind: consumable, reservation: per_task}, gpu: {kind: boolean}}
hosts:
  - {name: node01, slots: 16, resources: {mem: 64000}, attributes: {type: X86_64}}
  - {name: node02, slots: 16, resources: {mem: 64000}, attributes: {type: X86_64}}
  - {name: node03, slots: 16, resources: {mem: 64000}, attributes: {type: X86_64}}
  - {name: node04, slots: 16, resources: {mem: 64000}, attributes: {type: X86_64}}
  - {name: node05, slots: 32, resources: {mem: 128000}, attributes: {type: X86_64, fast: true}}
  - {name: node06, slots: 32, resources: {mem: 128000}, attributes: {type: X86_64, fast: true}}
  - {name: node07, slots: 16, resources: {mem: 64000}, attributes: {type: X86_64}, status: closed}
  - {name: bigmem01, slots: 32, resources: {mem: 1024000}, attributes: {type: X86_64, fast: true}}
  - {name: bigmem02, slots: 32, resources: {mem: 1024000}, attributes: {type: X86_64, fast: true}}
  - {name: arm01, slots: 16, resources: {mem: 32000}, attributes: {type: ARM}}
  - {name: arm02, slots: 16, resources: {mem: 32000}, attributes: {type: ARM}}
  - {name: gpu01, slots: 16, resources: {mem: 256000},
     attributes: {type: X86_64, fast: true, gpu: true}}
shared: {lic_x: {total: 4}}
queues: {high: {priority: 50, preempts: [normal]}, normal: {priority: 30}, low: {priority: 10}}
limits:
  - {name: alice_per_host, users: [alice], per_host: true, slots: 8}
  - {name: low_queue, queues: [low], jobs: 4, resources: {mem: 64000}}
running:  # no runtime: they hold these for ever
  - {id: r1, user: bob, queue: normal, project: climate, start_time: -3600,
     alloc: [{host: node01, slots: 8, resources: {mem: 16000}},
             {host: node02, slots: 8, resources: {mem: 16000}}]}
  - {id: r2, user: carol, queue: high, project: cfd, start_time: -600, shared: {lic_x: 1},
     alloc: [{host: bigmem01, slots: 4, resources: {mem: 80000}}]}
  - {id: r3, user: dave, start_time: -7200,
     alloc: [{host: node07, slots: 16, resources: {mem: 32000}}]}
"""
"""What the generator uses of ``examples/cluster.yaml`` (a test keeps the two alike)."""


def default_cluster() -> ClusterState:
    """The hosts, licences, queues, limits and running work of ``examples/cluster.yaml``."""
    return state_from_text(_DEFAULT_CLUSTER, "<default cluster: examples/cluster.yaml>")
