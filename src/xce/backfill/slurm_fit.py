"""How a job fits a set of nodes, as the ``slurm`` policy's will-run test asks it
(docs/backfill.md, "slurm"): per host, how many of the job's tasks fit in what is free
(Slurm's ``avail_cpus``), then the nodes cons_tres would choose
(:func:`xce.backfill.slurm_select.choose_nodes`), then the xce allocator's placement on
exactly those nodes, so that what a plan holds or a start charges is an ordinary xce
allocation (never more than a host has).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xce.alloc import Allocator, Dispatched, JobAllocation, JobRequest
from xce.alloc.request import PreparedPrimary
from xce.backfill.slurm_select import Shape, choose_nodes
from xce.cluster.catalog import SLOTS

__all__ = ["Fitter", "Held", "bits_of", "hosts_of", "shape_of"]

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


def bits_of(hosts: npt.NDArray[np.bool_] | IndexArray, n: int) -> int:
    """Host indices (or a mask over ``n`` hosts) as a bit set."""
    mask = hosts if hosts.dtype == np.bool_ else np.bincount(hosts, minlength=n) > 0
    packed = np.packbits(np.asarray(mask, dtype=np.bool_), bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def hosts_of(bits: int, n: int) -> BoolArray:
    """A bit set over ``n`` hosts as a mask."""
    raw = np.frombuffer(bits.to_bytes((n + 7) // 8 or 1, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(np.bool_)


@dataclass(frozen=True, slots=True)
class Held:
    """What a running job (or one started this session) holds, in units: per claim
    its host and per resource (slots included) the amount; and its shared amounts."""

    hosts: IndexArray
    amounts: Mapping[str, FloatArray]
    shared: tuple[tuple[str, float], ...] = ()


def held_of(allocation: JobAllocation, scales: Mapping[str, float]) -> Held:
    """An allocation's holdings in units (as the books charge them)."""
    cols = allocation.columns()
    amounts = {SLOTS: cols.slots.astype(np.float64)}
    for name, column in cols.amounts.items():
        amounts[name] = np.round(column * scales[name])
    shared = tuple((n, float(round(a * scales[n]))) for n, a in allocation.shared)
    return Held(cols.hosts, amounts, shared)


def shape_of(request: JobRequest) -> tuple[PreparedPrimary, Shape] | None:
    """The one primary of a job Slurm's chooser is applied to, and its shape: tasks,
    and nodes from its span (``hosts=1``: one; ``ptile=p``: ceil(tasks/p), each with
    ``p``). None: several alternatives or terms (the xce allocator places those)."""
    alternatives = request.requirement.alternatives
    if len(alternatives) != 1 or len(alternatives[0]) != 1:
        return None
    pp = alternatives[0][0]
    tasks = max(request.requirement.fewest_tasks, 1)
    span = pp.primary.span
    if span is not None and span.ptile is not None:
        nodes = math.ceil(tasks / span.ptile)
        return pp, Shape(tasks, nodes, nodes)
    if span is not None and span.hosts == 1:
        return pp, Shape(tasks, 1, 1)
    return pp, Shape(tasks)


class Fitter:
    """Fits one job on candidate nodes given what some running jobs give back.
    ``order``: host indices in Slurm's node index order."""

    def __init__(self, allocator: Allocator, request: JobRequest, order: IndexArray) -> None:
        self.allocator = allocator
        self.request = request
        self.order = order
        self.simple = shape_of(request)

    def availability(self, back: list[Held]) -> tuple[dict[str, FloatArray], dict[str, float]]:
        """The books now, plus what ``back`` gives back (units)."""
        books = self.allocator.books
        state = self.allocator.state
        avail = {name: books.units(name).copy() for name in state.hosts.units}
        shared = {name: books.shared_units(name) for name in state.shared_total}
        for held in back:
            for name, column in held.amounts.items():
                np.add.at(avail[name], held.hosts, column)
            for name, units in held.shared:
                shared[name] += units
        return avail, shared

    def fit(
        self, candidates: BoolArray, back: list[Held]
    ) -> tuple[IndexArray, JobAllocation] | None:
        """The nodes the job gets among ``candidates`` (Slurm's choice, index order)
        and its allocation there, once ``back`` have ended; None: it does not fit."""
        avail, shared = self.availability(back)
        if self.simple is not None:
            pp, shape = self.simple
            caps, counts = self._caps(pp, shape, avail, candidates)
            chosen = choose_nodes(shape, caps[self.order].tolist(), counts[self.order].tolist())
            if chosen is None:
                return None
            hosts = self.order[np.asarray(chosen, dtype=np.intp)]
            tasks = _spread(shape.tasks, caps[hosts])
            allocation = self._place(avail, shared, hosts, tasks)
            if allocation is not None:
                return hosts, allocation
        allocation = self._place(avail, shared, np.flatnonzero(candidates), None)
        if allocation is None:
            return None
        return np.unique(allocation.columns().hosts), allocation

    def _caps(
        self, pp: PreparedPrimary, shape: Shape, avail: Mapping[str, FloatArray], hosts: BoolArray
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Per host: tasks of the job that fit (0 off ``hosts``), and the count the
        knapsack retry drops nodes by (tasks plus the per-host resources it asks)."""
        wants = pp.wants
        eligible = hosts & self.allocator.books.eligible(pp.select)
        with np.errstate(invalid="ignore"):
            room = np.where(eligible & ~np.isnan(avail[SLOTS]), np.floor(avail[SLOTS]), 0.0)
            need = dict(wants.per_host_units)
            if shape.most_nodes == 1:  # a per-job amount (--gpus=N) on the job's one node
                for name, units in wants.per_job_units:
                    need[name] = need.get(name, 0.0) + units
            extra = np.zeros_like(room)
            for name, units in need.items():
                have = avail[name]
                room = np.where(have >= units, room, 0.0)
                scale = self.allocator.books.scales[name]
                extra += np.where(np.isnan(have), 0.0, np.floor(have / scale))
            for name, units in wants.per_task_units:
                if units > 0:
                    left = (avail[name] - need.get(name, 0.0)) / units
                    room = np.minimum(room, np.where(np.isnan(left), 0.0, np.floor(left)))
        room = np.maximum(room, 0.0)
        span = pp.primary.span
        if span is not None and span.ptile is not None:
            room = np.where(room >= span.ptile, float(span.ptile), 0.0)
        counts = np.where(room > 0, room + extra, 0.0)
        return room.astype(np.int64), counts.astype(np.int64)

    def _place(
        self,
        avail: Mapping[str, FloatArray],
        shared: Mapping[str, float],
        hosts: IndexArray,
        tasks: npt.NDArray[np.int64] | None,
    ) -> JobAllocation | None:
        """The xce allocator's placement on ``hosts`` only (``tasks``: at most so many
        tasks on each), or None."""
        view: dict[str, FloatArray] = {}
        for name, column in avail.items():
            only = np.zeros_like(column)
            only[hosts] = column[hosts]
            view[name] = only
        if tasks is not None:
            view[SLOTS][hosts] = np.minimum(view[SLOTS][hosts], tasks)
        alloc = self.allocator
        books = alloc.books.view(view, dict(shared))
        placer = alloc.on_view(books, alloc.limits, explain=False, reasons=False)
        decision = placer.try_place(self.request)
        return decision.allocation if isinstance(decision, Dispatched) else None


def _spread(tasks: int, caps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Tasks per chosen node, in order: as many as fit, leaving one for each node after
    (Slurm gives every chosen node some of the job)."""
    out = np.zeros(len(caps), dtype=np.int64)
    left = tasks
    for i, cap in enumerate(caps.tolist()):
        give = max(min(int(cap), left - (len(caps) - 1 - i)), 1 if left > 0 else 0)
        out[i] = give
        left -= give
    return out
