"""PREEMPT mode and the preemption flow (spec "Full Preemption Flow"; issue 11).

A job whose queue lists ``preempts`` and that the normal allocator cannot place may
preempt running jobs of those queues that have a lower queue priority. The session's
:class:`~xce.preempt.Preemptor` chooses victim sets; this module answers its questions
(:class:`_Probe`): a set is sufficient when the job is placed by the ordinary
allocator on a *view* of the session's books in which the set's whole footprint
(slots, host resources, shared amounts, limit usage) is available again. The view is a
separate books object with its own memo, cursors and static eligibility, and the
attempt on it runs with the unsatisfiable cache off, so no shortcut that assumes
availability only falls ever sees availability rise (design §3a).

Footprints are kept per running job for as long as the job object is the same (the
scheduling core keeps them across sessions), and for one decision as flat arrays of
claims, so releasing thousands of victims in a view is a few numpy passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xce.alloc.outcome import AllocMode, Dispatched, JobAllocation, Preemption
from xce.cluster.catalog import SLOTS
from xce.cluster.state import RunningJob
from xce.cluster.units import to_units
from xce.preempt import Preemptor, Victim

if TYPE_CHECKING:
    from xce.alloc.engine import Allocator, JobRequest

__all__ = [
    "Accept",
    "Footprint",
    "Masked",
    "Released",
    "find_preemption",
    "footprint",
    "may_preempt",
]

Amounts = tuple[tuple[str, float], ...]
IndexArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]
Masked = Sequence[IndexArray | slice]  # hosts a job may not be placed on (reservations)


@dataclass(slots=True)
class Footprint:
    """What a running job holds, in units: per claim (host, slots, amounts), and its
    shared amounts; ``job`` is the object it was computed from (valid while the same);
    ``victim`` the job as preemptors last saw it."""

    job: RunningJob
    holdings: tuple[tuple[int, float, Amounts], ...]
    shared: Amounts
    slots: int
    hosts: tuple[int, ...]
    victim: Victim | None = None
    _columns: tuple[IndexArray, dict[str, FloatArray], Amounts] | None = None

    def columns(self) -> tuple[IndexArray, dict[str, FloatArray], Amounts]:
        """The holdings as columns (computed once): host per claim; per resource
        (slots included) the units per claim; and the shared amounts."""
        if self._columns is None:
            n = len(self.holdings)
            hosts = np.fromiter((h for h, _, _ in self.holdings), dtype=np.intp, count=n)
            amounts = {SLOTS: np.fromiter((s for _, s, _ in self.holdings), np.float64, n)}
            for k, (_, _, held) in enumerate(self.holdings):
                for name, units in held:
                    amounts.setdefault(name, np.zeros(n))[k] += units
            self._columns = (hosts, amounts, self.shared)
        return self._columns


@dataclass(frozen=True, slots=True)
class Released:
    """A set of victims' claims, flat: host index, slots and amounts per claim (units),
    summed shared amounts, and the limit usage to take off."""

    hosts: IndexArray
    slots: FloatArray
    amounts: dict[str, FloatArray]
    shared: Amounts
    limit_jobs: list[tuple[tuple[int, ...], list[tuple[int, float, Amounts]], Amounts]]


def may_preempt(allocator: Allocator, queue: str) -> bool:
    """Whether jobs of ``queue`` may preempt at all (it lists queues to preempt)."""
    q = allocator.state.queues.get(queue)
    return q is not None and bool(q.preempts)


def _priority(allocator: Allocator, queue: str) -> int:
    q = allocator.state.queues.get(queue)
    return q.priority if q is not None else 0


def footprint(allocator: Allocator, job: RunningJob) -> Footprint:
    """A running job's footprint, in units."""
    scales = allocator.books.scales
    index = allocator.state.hosts.index
    holdings = tuple(
        (
            index[a.host],
            float(a.slots),
            tuple((n, to_units(v, scales[n])) for n, v in a.resources.items())
            if a.resources
            else (),
        )
        for a in job.alloc
    )
    shared = tuple((n, to_units(v, scales[n])) for n, v in job.shared.items())
    hosts = tuple(dict.fromkeys(h for h, _, _ in holdings))
    return Footprint(job, holdings, shared, int(sum(s for _, s, _ in holdings)), hosts)


def candidates(allocator: Allocator, queue: str) -> list[tuple[Victim, Footprint]]:
    """Running jobs a job of ``queue`` may preempt: of a queue it lists, of a lower queue
    priority, not already preempted this session; in the state's running order."""
    q = allocator.state.queues[queue]
    allowed = {
        name: _priority(allocator, name)
        for name in q.preempts
        if name != queue and _priority(allocator, name) < q.priority
    }
    out = []
    preempted = allocator.preempted
    for job in allocator.state.running:
        priority = allowed.get(job.queue)
        if priority is not None and job.id not in preempted:
            out.append(allocator.victim_of(job, priority))
    return out


class _Probe:
    """The :class:`~xce.preempt.VictimProbe` for one pending job."""

    def __init__(
        self,
        allocator: Allocator,
        job: JobRequest,
        found: list[tuple[Victim, Footprint]],
        masked: Masked,
    ) -> None:
        self.allocator = allocator
        self.job = job
        self.masked = masked
        self.prints = {v.id: f for v, f in found}
        self.order = {v.id: k for k, (v, _) in enumerate(found)}
        counts = np.fromiter((len(f.holdings) for _, f in found), np.intp, len(found))
        self.first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
        self.count = counts
        claims = [c for _, f in found for c in f.holdings]
        self.hosts = np.fromiter((h for h, _, _ in claims), np.intp, len(claims))
        self.slots = np.fromiter((s for _, s, _ in claims), np.float64, len(claims))
        names = {n for _, _, amounts in claims for n, _ in amounts}
        self.amounts = {n: np.zeros(len(claims)) for n in names}
        for k, (_, _, amounts) in enumerate(claims):
            for n, units in amounts:
                self.amounts[n][k] = units
        ok = allocator.books.ok
        self.slots_ok = self.slots * ok[self.hosts] if len(claims) else self.slots
        owner = np.repeat(np.arange(len(found), dtype=np.intp), counts)
        per_victim = np.bincount(owner, weights=self.slots_ok, minlength=len(found))
        self.per_victim = per_victim
        self.victim_slots_ok: list[float] = per_victim.tolist()
        self.need = min(sum(pp.tasks for pp in alt) for alt in job.requirement.alternatives)
        self.placed: dict[tuple[str, ...], JobAllocation] = {}
        self.calls = 0

    def _claims(self, victims: Sequence[Victim]) -> IndexArray:
        """The indices of the claims of ``victims`` in the flat arrays."""
        ords = np.fromiter((self.order[v.id] for v in victims), np.intp, len(victims))
        counts = self.count[ords]
        if bool((counts == 1).all()):
            return self.first[ords]
        starts = np.repeat(self.first[ords] - np.cumsum(counts) + counts, counts)
        return starts + np.arange(int(counts.sum()), dtype=np.intp)

    def may_suffice(self, victims: Sequence[Victim]) -> bool:
        if len(victims) <= 64:  # one victim at a time, as a preemptor tries them: no numpy
            slots, order = self.victim_slots_ok, self.order
            freed = sum(slots[order[v.id]] for v in victims)
        else:
            ords = np.fromiter((self.order[v.id] for v in victims), np.intp, len(victims))
            freed = float(self.per_victim[ords].sum())
        return self.allocator.books.total_slots + freed >= self.need

    def released(self, victims: Sequence[Victim]) -> Released:
        idx = self._claims(victims)
        shared: dict[str, float] = {}
        limit_jobs = []
        with_limits = bool(self.allocator.state.limits)
        for v in victims:
            f = self.prints[v.id]
            for name, units in f.shared:
                shared[name] = shared.get(name, 0.0) + units
            if with_limits:
                r = f.job
                ids = self.allocator.limits.applicable(r.user, r.queue, r.project)
                limit_jobs.append((ids, list(f.holdings), f.shared))
        return Released(
            self.hosts[idx],
            self.slots[idx],
            {n: a[idx] for n, a in self.amounts.items()},
            tuple(shared.items()),
            limit_jobs,
        )

    def sufficient(self, victims: Sequence[Victim]) -> bool:
        self.calls += 1
        view = self.allocator.preempt_view(self.released(victims), self.masked)
        decision = view.try_place(self.job, AllocMode.PREEMPT)
        if isinstance(decision, Dispatched):
            self.placed[tuple(sorted(v.id for v in victims))] = decision.allocation
            return True
        return False


Accept = Callable[[JobAllocation, Sequence[RunningJob]], bool]
"""Whether a promise, with these victims gone, can be committed (a planner's check
that it takes nothing a planned job holds: xce.alloc.planner)."""


def find_preemption(
    allocator: Allocator,
    job: JobRequest,
    preemptor: Preemptor,
    masked: Masked = (),
    accept: Accept | None = None,
) -> tuple[Preemption, Released] | None:
    """The first victim set the preemptor offers that the engine can commit, with the
    job's promised allocation and what the victims give back; None when there is none.
    Sets that break the preemptor's contract (empty, a job twice, not a candidate, not
    sufficient) are skipped. ``masked``: hosts the job may not be promised even with
    its victims gone (advance reservations that do not admit it over its run);
    ``accept``: a set whose promise it refuses cannot be committed (skipped too)."""
    found = candidates(allocator, job.queue)
    if not found:
        return None
    probe = _Probe(allocator, job, found, masked)
    sets = preemptor.victim_sets([v for v, _ in found], probe)
    try:
        for offered in sets:
            ids = tuple(v.id for v in offered)
            if not ids or len(set(ids)) != len(ids) or any(i not in probe.prints for i in ids):
                continue
            key = tuple(sorted(ids))
            if key not in probe.placed and not probe.sufficient(offered):
                continue
            if accept is not None and not accept(
                probe.placed[key], [probe.prints[i].job for i in ids]
            ):
                continue
            hosts = tuple(probe.prints[i].hosts for i in ids)
            return Preemption(ids, hosts, probe.placed[key]), probe.released(offered)
    finally:
        close = getattr(sets, "close", None)
        if close is not None:
            close()
        allocator.stats.preempt_probes += probe.calls
    return None
