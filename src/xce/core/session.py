"""A scheduling session: every pending job, in picker order, gets exactly one decision.

Session start resets the session's books, the evaluation memo and the unsatisfiable
cache (spec Req 7 AC 2); each dispatched job is charged to the books at once, so no later
job of the session can be given the same resources.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from xce.alloc import (
    Allocator,
    AllocatorRegistry,
    AllocOptions,
    CancelToken,
    Decision,
    Dispatched,
    JobRequest,
    Pending,
    prepare_requirement,
)
from xce.cluster.catalog import ResourceCatalog
from xce.cluster.state import ClusterState, PendingJob

__all__ = ["Session", "SessionResult", "SessionStats", "fcfs_order", "job_request"]


def fcfs_order(state: ClusterState, jobs: Iterable[PendingJob] | None = None) -> list[PendingJob]:
    """Queue priority high first, then submit time, then file order."""
    pending = state.jobs if jobs is None else jobs
    return sorted(pending, key=lambda j: (-state.queue_priority(j.queue), j.submit_time, j.order))


def job_request(job: PendingJob, catalog: ResourceCatalog) -> JobRequest:
    """The allocator's view of a pending job (its requirement prepared, memoised)."""
    tasks = (job.min_tasks, job.max_tasks) if job.tasks_given else (None, None)
    return JobRequest(
        job.id, job.user, job.queue, job.project, prepare_requirement(job.resreq, catalog, *tasks)
    )


def _no_reasons() -> Mapping[str, int]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SessionStats:
    """What a session did and what it cost."""

    jobs: int = 0
    dispatched: int = 0
    pending: int = 0
    pending_by_reason: Mapping[str, int] = field(default_factory=_no_reasons)
    cache_hits: int = 0
    cache_misses: int = 0
    cache_inserts: int = 0
    plans_tried: int = 0
    host_tries: int = 0
    iterators: int = 0
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SessionResult:
    decisions: tuple[Decision, ...]
    stats: SessionStats

    @property
    def dispatched(self) -> list[Dispatched]:
        return [d for d in self.decisions if isinstance(d, Dispatched)]

    @property
    def pending(self) -> list[Pending]:
        return [d for d in self.decisions if isinstance(d, Pending)]


class Session:
    """One scheduling pass over a state's pending jobs (FCFS order)."""

    def __init__(
        self,
        state: ClusterState,
        *,
        registry: AllocatorRegistry | None = None,
        options: AllocOptions | None = None,
        token: CancelToken | None = None,
    ) -> None:
        self.state = state
        self.allocator = Allocator(state, registry, options, token)
        self._requests: dict[int, tuple[PendingJob, JobRequest]] = {}

    def _request(self, job: PendingJob) -> JobRequest:
        """The job's allocator request, kept across sessions while the job object lives."""
        entry = self._requests.get(id(job))
        if entry is None or entry[0] is not job:
            entry = self._requests[id(job)] = (job, job_request(job, self.state.catalog))
        return entry[1]

    def run(self, jobs: Iterable[PendingJob] | None = None) -> SessionResult:
        """Begin a session and decide every job (all pending jobs of the state by default)."""
        start = time.perf_counter()
        alloc = self.allocator
        alloc.begin_session()
        decisions = tuple(alloc.decide(self._request(j)) for j in fcfs_order(self.state, jobs))
        s = alloc.stats
        reasons = Counter(d.info.reason.value for d in decisions if isinstance(d, Pending))
        stats = SessionStats(
            jobs=len(decisions),
            dispatched=len(decisions) - sum(reasons.values()),
            pending=sum(reasons.values()),
            pending_by_reason=MappingProxyType(dict(sorted(reasons.items()))),
            cache_hits=s.cache_hits,
            cache_misses=s.cache_misses,
            cache_inserts=s.cache_inserts,
            plans_tried=s.plans_tried,
            host_tries=s.host_tries,
            iterators=s.iterators,
            elapsed_s=time.perf_counter() - start,
        )
        return SessionResult(decisions, stats)
