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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xce.alloc.outcome import AllocMode, Dispatched, JobAllocation, Preemption
from xce.cluster.catalog import SLOTS
from xce.cluster.state import RunningJob
from xce.cluster.units import to_units
from xce.preempt import Preemptor, Victim

if TYPE_CHECKING:
    from xce.alloc.engine import Allocator, JobRequest

__all__ = ["Footprint", "find_preemption", "footprint", "given_back", "may_preempt"]

Amounts = tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a running job holds, in units: per claim (host, slots, amounts), its shared
    amounts, the limits that count it, and its slots on ok hosts (for the cheap bound)."""

    victim: Victim
    holdings: tuple[tuple[int, float, Amounts], ...]
    shared: Amounts
    limit_ids: tuple[int, ...]
    slots_ok: float


def may_preempt(allocator: Allocator, queue: str) -> bool:
    """Whether jobs of ``queue`` may preempt at all (it lists queues to preempt)."""
    q = allocator.state.queues.get(queue)
    return q is not None and bool(q.preempts)


def _priority(allocator: Allocator, queue: str) -> int:
    q = allocator.state.queues.get(queue)
    return q.priority if q is not None else 0


def footprint(allocator: Allocator, job: RunningJob) -> Footprint:
    """A running job's footprint (memoised for the session by the allocator)."""
    state, scales = allocator.state, allocator.books.scales
    index = state.hosts.index
    holdings = tuple(
        (
            index[a.host],
            float(a.slots),
            tuple((n, to_units(v, scales[n])) for n, v in a.resources.items()),
        )
        for a in job.alloc
    )
    hosts = tuple(dict.fromkeys(h for h, _, _ in holdings))
    ok = allocator.books.ok
    victim = Victim(
        job.id,
        job.queue,
        _priority(allocator, job.queue),
        job.start_time,
        int(sum(s for _, s, _ in holdings)),
        hosts,
    )
    return Footprint(
        victim,
        holdings,
        tuple((n, to_units(v, scales[n])) for n, v in job.shared.items()),
        allocator.limits.applicable(job.user, job.queue, job.project),
        float(sum(s for h, s, _ in holdings if ok[h])),
    )


def candidates(allocator: Allocator, queue: str) -> list[Footprint]:
    """Running jobs a job of ``queue`` may preempt: of a queue it lists, of a lower queue
    priority, not already preempted this session; in the state's running order."""
    q = allocator.state.queues[queue]
    mine = q.priority
    allowed = {name for name in q.preempts if name != queue and _priority(allocator, name) < mine}
    out = []
    for job in allocator.state.running:
        if job.queue in allowed and job.id not in allocator.preempted:
            out.append(allocator.footprint_of(job))
    return out


class _Probe:
    """The :class:`~xce.preempt.VictimProbe` for one pending job."""

    def __init__(self, allocator: Allocator, job: JobRequest, prints: dict[str, Footprint]):
        self.allocator = allocator
        self.job = job
        self.prints = prints
        self.placed: dict[tuple[str, ...], JobAllocation] = {}
        self.need = min(sum(pp.tasks for pp in alt) for alt in job.requirement.alternatives)
        self.calls = 0

    def may_suffice(self, victims: Sequence[Victim]) -> bool:
        freed = sum(self.prints[v.id].slots_ok for v in victims)
        return self.allocator.books.total_slots + freed >= self.need

    def sufficient(self, victims: Sequence[Victim]) -> bool:
        self.calls += 1
        prints = [self.prints[v.id] for v in victims]
        view = self.allocator.preempt_view(prints)
        decision = view.try_place(self.job, AllocMode.PREEMPT)
        if isinstance(decision, Dispatched):
            self.placed[tuple(sorted(v.id for v in victims))] = decision.allocation
            return True
        return False


def find_preemption(
    allocator: Allocator, job: JobRequest, preemptor: Preemptor
) -> tuple[Preemption, list[Footprint]] | None:
    """The first victim set the preemptor offers that the engine can commit, with the
    job's promised allocation; None when there is none. Sets that break the
    preemptor's contract (empty, a job twice, not a candidate, not sufficient) are
    skipped."""
    prints = {f.victim.id: f for f in candidates(allocator, job.queue)}
    if not prints:
        return None
    probe = _Probe(allocator, job, prints)
    victims = [f.victim for f in prints.values()]
    sets = preemptor.victim_sets(victims, probe)
    try:
        for offered in sets:
            ids = tuple(v.id for v in offered)
            if not ids or len(set(ids)) != len(ids) or any(i not in prints for i in ids):
                continue
            key = tuple(sorted(ids))
            if key not in probe.placed and not probe.sufficient(offered):
                continue
            chosen = [prints[i] for i in ids]
            found = Preemption(ids, tuple(f.victim.hosts for f in chosen), probe.placed[key])
            return found, chosen
    finally:
        close = getattr(sets, "close", None)
        if close is not None:
            close()
        allocator.stats.preempt_probes += probe.calls
    return None


def given_back(prints: Sequence[Footprint]) -> tuple[dict[int, dict[str, float]], dict[str, float]]:
    """What the victims hold, per host and resource and cluster-wide, in units."""
    per_host: dict[int, dict[str, float]] = {}
    shared: dict[str, float] = {}
    for f in prints:
        for h, slots, amounts in f.holdings:
            mine = per_host.setdefault(h, {})
            mine[SLOTS] = mine.get(SLOTS, 0.0) + slots
            for name, units in amounts:
                mine[name] = mine.get(name, 0.0) + units
        for name, units in f.shared:
            shared[name] = shared.get(name, 0.0) + units
    return per_host, shared
