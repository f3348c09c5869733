"""What a replay gives back: :class:`SimResult` (records, timeline, what ran before it
began) and :class:`SimStats` (its counts and costs), made alike by the engine
(:mod:`xce.sim.engine`) and the plain replay (:mod:`xce.sim.plain`), and read by the
metrics, the checks and the reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xce.sim.model import JobRecord, Timeline

__all__ = ["PROGRESS_EVERY", "Progress", "SimResult", "SimStats"]

PROGRESS_EVERY = 2048
"""Instants handled between two calls of a replay's progress callback (and one at the
end): often enough for a progress bar, rarely enough to cost nothing."""


@dataclass(slots=True)
class SimStats:
    """What a replay did and what it cost (its decisions, cache, wall time, preemptions,
    backfilled starts), counted as it runs."""

    sessions: int = 0
    decisions: int = 0
    dispatched: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    alloc_seconds: float = 0.0
    wall_seconds: float = 0.0
    events: int = 0
    preemptions: int = 0  # running jobs preempted (each time counts)
    lost_slot_seconds: float = 0.0  # work the preempted runs had done, thrown away
    backfilled: int = 0  # starts ahead of a job holding a planned start
    idle_skipped: int = 0  # idle sessions skipped (xce.sim.idle), each with its stretch

    @property
    def cache_hit_rate(self) -> float:
        looked = self.cache_hits + self.cache_misses
        return self.cache_hits / looked if looked else 0.0


@dataclass(slots=True)
class SimResult:
    records: Sequence[JobRecord]  # in workload order (a RecordTable from a replay)
    timeline: Timeline
    stats: SimStats
    total_slots: int
    host_capacity: dict[str, int] = field(default_factory=dict)
    # claims of work running when the simulation began: (host, start, end, slots)
    base_load: list[tuple[str, float, float, int]] = field(default_factory=list)
    host_names: list[str] = field(default_factory=list)  # what record host indices index
    # what the user should know before reading the figures (xce.sim.caveats), one line each
    warnings: list[str] = field(default_factory=list)

    @property
    def unrunnable(self) -> list[JobRecord]:
        return [r for r in self.records if r.unrunnable is not None]


Progress = Callable[[int, float], None]
"""Called now and then with (jobs ended or reported so far, simulated time)."""
