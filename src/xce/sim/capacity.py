"""What a cluster can ever offer a synthetic job: its open hosts' free capacity (less
what never-ending running work holds), the host types, tags and memory to select on, the
licences, and the limits that apply to a job — the bounds the workload generator
(:mod:`xce.sim.generate`) draws within, so that every job it writes can run."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from xce.cluster import SLOTS, ClusterState, Limit, Reservation, ResourceKind
from xce.errors import InputError

__all__ = ["MEM_MIN", "Bound", "ClusterCapacity", "Primary", "Select"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MEM_MIN = 250  # MB: the least memory a generated job asks for
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True, eq=False)
class Select:
    """A select expression and the open hosts it matches (on static attributes and
    capacities)."""

    text: str
    hosts: BoolArray


@dataclass(frozen=True, slots=True)
class Primary:
    """One simple requirement; tasks are kept apart."""

    select: Select | None = None
    mem: int = 0  # MB per task (or per host/job, as the cluster reserves it); 0: none
    span: str = ""  # "", "hosts=1" or "ptile=N"
    licence: str | None = None

    def render(self, mem_name: str | None) -> str:
        parts = [f"select[{self.select.text}]"] if self.select else []
        usage = [f"{mem_name}={self.mem}"] if self.mem and mem_name else []
        usage += [f"{self.licence}=1"] if self.licence else []
        parts += [f"rusage[{':'.join(usage)}]"] if usage else []
        parts += [f"span[{self.span}]"] if self.span else []
        return " ".join(parts)

    def simpler(self) -> Iterator[Primary]:
        """This requirement, then ever simpler ones, ending with no requirement."""
        yield self
        mem = self.mem
        while mem // 2 >= MEM_MIN:
            mem //= 2
            yield replace(self, mem=mem)
        yield (step := replace(self, mem=0))
        yield (step := replace(step, span=""))
        yield (step := replace(step, select=None))
        yield Primary()


@dataclass(frozen=True, slots=True, eq=False)
class Bound:
    """A limit that applies to a job, less what never-ending work under it holds: per
    open host (arrays) for a per-host limit, else in all; ``inf`` where it sets none."""

    name: str
    per_host: bool
    slots: FloatArray | float
    jobs: FloatArray | float
    resources: dict[str, FloatArray | float]


class ClusterCapacity:
    """What the open hosts can ever hold, their names, and the limits: the bounds of
    what to draw. Running work without a runtime never ends (as in the simulator), so
    what it holds is never free."""

    def __init__(self, state: ClusterState) -> None:
        hosts = state.hosts
        self.ok = hosts.ok()
        self.index = hosts.index
        self.forever = [r for r in state.running if r.runtime is None]
        held, shared_held = self._held(state)
        self.slots: FloatArray = np.nan_to_num(hosts.capacity[SLOTS] - held[SLOTS])[self.ok]
        if self.slots.sum() < 1:
            raise InputError(
                f"the cluster ({state.source or 'given in code'}) has no open host with a "
                "free slot: no job could run"
            )
        self.mem_name = _memory_resource(state)
        mem = hosts.capacity[self.mem_name] - held[self.mem_name] if self.mem_name else None
        self.mem: FloatArray = self.slots * 0 if mem is None else np.nan_to_num(mem)[self.ok]
        reservation = state.catalog[self.mem_name].reservation if self.mem_name else None
        self.mem_per_task = reservation is Reservation.PER_TASK
        self.types = _type_selects(state, self.ok, self.slots)
        self.tags = [
            Select(name, np.asarray(col[self.ok]))
            for name, col in sorted(hosts.tags.items())
            if self.slots[col[self.ok]].sum() >= 1
        ]
        self.shared_total = {k: v - shared_held[k] for k, v in state.shared_total.items()}
        self.licences = [name for name, total in self.shared_total.items() if total >= 1]
        self.limits = state.limits
        self.bigmem = self._bigmem()

    def _held(self, state: ClusterState) -> tuple[dict[str, FloatArray], dict[str, float]]:
        held = {name: np.zeros(state.hosts.n) for name in state.hosts.capacity}
        shared = dict.fromkeys(state.shared_total, 0.0)
        for run in self.forever:
            for a in run.alloc:
                held[SLOTS][self.index[a.host]] += a.slots
                for name, amount in a.resources.items():
                    held[name][self.index[a.host]] += amount
            for name, amount in run.shared.items():
                shared[name] += amount
        return held, shared

    def _bigmem(self) -> Select | None:
        """``mem>Y`` for a quarter of the largest host memory (a big-memory job)."""
        if not self.mem_name or self.mem.max() < 4 * MEM_MIN:
            return None
        amount = _round_down(float(self.mem.max()) / 4)
        return Select(f"{self.mem_name}>{amount}", self.mem > amount)

    def limits_for(self, user: str, queue: str, project: str) -> list[Bound]:
        return [self._bound(lim) for lim in self.limits if lim.applies_to(user, queue, project)]

    def _bound(self, lim: Limit) -> Bound:
        runs = [r for r in self.forever if lim.applies_to(r.user, r.queue, r.project)]
        n = len(self.ok)
        if lim.per_host:
            slots, jobs = np.zeros(n), np.zeros(n)
            amounts = {name: np.zeros(n) for name in lim.resources}
            for a in (a for r in runs for a in r.alloc):
                h = self.index[a.host]
                slots[h] += a.slots
                jobs[h] += 1
                for name in amounts:
                    amounts[name][h] += a.resources.get(name, 0.0)
            held: tuple[Any, Any, dict[str, Any]] = (
                slots[self.ok],
                jobs[self.ok],
                {k: v[self.ok] for k, v in amounts.items()},
            )
        else:
            held = (
                sum(r.slots for r in runs),
                len(runs),
                {
                    name: sum(sum(a.resources.get(name, 0.0) for a in r.alloc) for r in runs)
                    + sum(r.shared.get(name, 0.0) for r in runs)
                    for name in lim.resources
                },
            )
        return Bound(
            lim.name,
            lim.per_host,
            math.inf if lim.slots is None else lim.slots - held[0],
            math.inf if lim.jobs is None else lim.jobs - held[1],
            {name: amount - held[2][name] for name, amount in lim.resources.items()},
        )

    def host_caps(self, prim: Primary, bounds: Sequence[Bound]) -> FloatArray:
        """Tasks of ``prim`` each open host could take, alone on the cluster."""
        cap = self.slots if prim.select is None else np.where(prim.select.hosts, self.slots, 0)
        for b in (b for b in bounds if b.per_host):
            cap = np.where(np.asarray(b.jobs) >= 1, np.minimum(cap, b.slots), 0)
            if prim.mem and self.mem_name and self.mem_name in b.resources:
                cap = self._mem_cap(cap, b.resources[self.mem_name], prim.mem)
        return self._mem_cap(cap, self.mem, prim.mem) if prim.mem else cap

    def _mem_cap(self, cap: FloatArray, mem: FloatArray | float, want: int) -> FloatArray:
        if self.mem_per_task:
            return np.minimum(cap, np.floor(np.asarray(mem) / want))
        return np.where(np.asarray(mem) >= want, cap, 0)

    def most_tasks(self, prim: Primary, bounds: Sequence[Bound]) -> int:
        """The most tasks of ``prim`` that its span lets the hosts hold at once."""
        cap = np.maximum(self.host_caps(prim, bounds), 0)
        if prim.span == "hosts=1":
            return int(cap.max(initial=0))
        if prim.span.startswith("ptile="):
            ptile = int(prim.span[6:])
            return ptile * int((cap >= ptile).sum())
        return int(cap.sum())

    def within_limits(
        self, bounds: Sequence[Bound], tasks: int, mem: float, licences: Mapping[str, int]
    ) -> bool:
        """Whether the job-level amounts fit the licences and every aggregate limit."""
        if any(self.shared_total.get(name, 0) < n for name, n in licences.items()):
            return False
        for b in (b for b in bounds if not b.per_host):
            if float(b.jobs) < 1 or float(b.slots) < tasks:
                return False
            for name, amount in b.resources.items():
                need = mem if name == self.mem_name else licences.get(name, 0)
                if need > float(amount):
                    return False
        return True

    def job_mem(self, prim: Primary, tasks: int) -> float:
        """An upper bound of the memory the job holds in all (for aggregate limits)."""
        return float(prim.mem * tasks)

    def fit(self, prim: Primary, tasks: int, bounds: Sequence[Bound]) -> int:
        """The most tasks, up to ``tasks``, that ``prim`` can ever run with (0: none)."""
        n = min(tasks, self.most_tasks(prim, bounds))
        licences = {prim.licence: 1} if prim.licence else {}
        while n >= 1 and not self.within_limits(bounds, n, self.job_mem(prim, n), licences):
            n -= 1
        return n

    def compound_fits(self, terms: Sequence[tuple[Primary, int]], bounds: Sequence[Bound]) -> bool:
        """Sufficient: each term fits even where the other terms took the most they
        could from its hosts (a task wanting m MB removes at most max(1, ⌈m/m_i⌉)
        tasks of term i from a host)."""
        for i, (prim, n) in enumerate(terms):
            taken = sum(
                other * max(1, math.ceil(o.mem / prim.mem) if prim.mem else 1)
                for j, (o, other) in enumerate(terms)
                if j != i
            )
            if self.most_tasks(prim, bounds) < n + taken:
                return False
        total = sum(n for _, n in terms)
        mem = sum(self.job_mem(p, n) for p, n in terms)
        licences: dict[str, int] = {}
        for p, _ in terms:
            if p.licence:
                licences[p.licence] = licences.get(p.licence, 0) + 1
        return self.within_limits(bounds, total, mem, licences)


def _memory_resource(state: ClusterState) -> str | None:
    """``mem`` if the hosts have it, else the first per-task host consumable."""
    consumables = [n for n in state.catalog.names(ResourceKind.CONSUMABLE) if n != SLOTS]
    if "mem" in consumables:
        return "mem"
    per_task = [n for n in consumables if state.catalog[n].reservation is Reservation.PER_TASK]
    return per_task[0] if per_task else None


def _type_selects(state: ClusterState, ok: BoolArray, slots: FloatArray) -> list[Select]:
    """``type==X`` for each value X of the host type on open hosts (``type``, else the
    first string attribute), in host order."""
    names = [n for n in state.hosts.strings if n != "hname"]
    if not names:
        return []
    attr = "type" if "type" in names else names[0]
    column = state.hosts.strings[attr][ok]
    values = dict.fromkeys(v for v in column if v is not None)
    return [
        Select(f"{attr}=={word}", np.asarray(column == v, dtype=np.bool_))
        for v in values
        if slots[column == v].sum() >= 1 and (word := _word(str(v))) is not None
    ]


def _word(value: str) -> str | None:
    """``value`` as the requirement language writes it: a bare word, else in the quotes
    it does not hold (the language has no escapes: one with both, or a line break,
    cannot be written, None)."""
    if _NAME.match(value):
        return value
    if "\n" in value or ("'" in value and '"' in value):
        return None
    return f"'{value}'" if '"' in value else f'"{value}"'


def _round_down(x: float) -> int:
    """Down to two significant digits: 256000 -> 250000."""
    if x < 100:
        return max(int(x), 1)
    scale = 10 ** (len(str(int(x))) - 2)
    return int(x // scale * scale)
