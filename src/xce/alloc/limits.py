"""Limits (LSF ``Limit`` sections): per host or aggregate, on slots, jobs or amounts.

A limit applies to a job when its user, queue and project are each in the limit's lists
(a list left out means everyone). A job must fit under every limit that applies:
per-host limits are checked in every host try, aggregate ones once per job. Usage and
caps are counted in resolution units (:mod:`xce.cluster.units`): exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from xce.alloc.outcome import JobAllocation
from xce.cluster.catalog import SLOTS
from xce.cluster.state import ClusterState, Limit
from xce.cluster.units import to_units

__all__ = ["LimitBooks"]

_JOBS = "jobs"
Amounts = tuple[tuple[str, float], ...]


def _tasks_within(
    left: npt.NDArray[np.float64], per_task: float, fixed: float
) -> npt.NDArray[np.float64]:
    """Tasks that fit in ``left`` at ``per_task`` each after ``fixed`` (all or none if 0)."""
    if per_task <= 0:
        return np.where(left >= fixed, np.inf, 0.0)
    return np.maximum(np.floor_divide(left - fixed, per_task), 0.0)


class LimitBooks:
    """What each limit's consumers hold: in all, and per host for per-host limits."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.scales = state.catalog.scales
        self.limits: tuple[Limit, ...] = state.limits
        self._total: list[dict[str, float]] = []
        self._per_host: list[dict[str, npt.NDArray[np.float64]]] = []
        self._applicable = lru_cache(maxsize=4096)(self._find_applicable)
        self.reset()

    def reset(self) -> None:
        """Session start: usage of every limit from the running work."""
        if not self.limits:
            self._total, self._per_host = [], []
            return
        n = self.state.hosts.n
        self._total = [dict.fromkeys(self._keys(lim), 0.0) for lim in self.limits]
        self._per_host = [
            {k: np.zeros(n) for k in self._keys(lim)} if lim.per_host else {} for lim in self.limits
        ]
        index = self.state.hosts.index
        for job in self.state.running:
            claims = [
                (index[a.host], float(a.slots), self._units(a.resources.items())) for a in job.alloc
            ]
            shared = self._units(job.shared.items())
            self._add(self.applicable(job.user, job.queue, job.project), claims, shared)

    def _units(self, amounts: Iterable[tuple[str, float]]) -> Amounts:
        scales = self.scales
        return tuple((n, to_units(a, scales[n])) for n, a in amounts)

    @staticmethod
    def _keys(lim: Limit) -> list[str]:
        keys = [k for k, v in ((SLOTS, lim.slots), (_JOBS, lim.jobs)) if v is not None]
        return keys + list(lim.resources)

    def _cap(self, lim: Limit, key: str) -> float:
        """The limit on ``key``, in units."""
        if key == SLOTS:
            return float(lim.slots if lim.slots is not None else np.inf)
        if key == _JOBS:
            return float(lim.jobs if lim.jobs is not None else np.inf)
        return to_units(lim.resources[key], self.scales[key])

    def _find_applicable(self, user: str, queue: str, project: str) -> tuple[int, ...]:
        return tuple(i for i, lim in enumerate(self.limits) if lim.applies_to(user, queue, project))

    def applicable(self, user: str, queue: str, project: str) -> tuple[int, ...]:
        """Indices of the limits that apply to this consumer (memoised)."""
        return self._applicable(user, queue, project)

    def host_violation(
        self, which: Iterable[int], h: int, want: Mapping[str, float], already: Mapping[str, float]
    ) -> Limit | None:
        """The first per-host limit that ``want`` more on host ``h`` would exceed.

        ``want`` and ``already`` (what this job attempt holds on ``h`` uncommitted) are
        in units; a job counts once per host towards a ``jobs`` limit.
        """
        for i in which:
            lim = self.limits[i]
            if not lim.per_host:
                continue
            for key, used in self._per_host[i].items():
                if key == _JOBS:
                    extra, held = (0.0 if already else 1.0), 0.0
                else:
                    extra, held = want.get(key, 0.0), already.get(key, 0.0)
                if extra and used[h] + held + extra > self._cap(lim, key):
                    return lim
        return None

    def host_headroom(self, which: Iterable[int], h: int, key: str) -> float:
        """How much more of ``key`` (units; ``jobs``: jobs) the per-host limits allow on
        host ``h``."""
        room = np.inf
        for i in which:
            lim = self.limits[i]
            if lim.per_host and key in self._per_host[i]:
                room = min(room, self._cap(lim, key) - float(self._per_host[i][key][h]))
        return float(room)

    def task_headroom(
        self,
        which: Iterable[int],
        per_task: Mapping[str, float],
        fixed: Mapping[str, float],
        held: Mapping[int, Mapping[str, float]],
    ) -> tuple[npt.NDArray[np.float64], Limit | None]:
        """Per host, how many more tasks the per-host limits allow, and the tightest limit.

        ``per_task``/``fixed`` are the job's amounts per task and per host; ``held`` is
        what this attempt already holds per host (a job counts once per host for ``jobs``).
        """
        n = self.state.hosts.n
        cap = np.full(n, np.inf)
        tightest: Limit | None = None
        for i in which:
            lim = self.limits[i]
            for key, used in self._per_host[i].items() if lim.per_host else ():
                if key not in (SLOTS, _JOBS) and not (per_task.get(key) or fixed.get(key)):
                    continue  # the job adds none of it: the try does not check it either
                left = self._cap(lim, key) - used
                if held:
                    left = left.copy()
                    for h, amounts in held.items():
                        if key == _JOBS:
                            left[h] = np.inf  # the job is already counted on that host
                        else:
                            left[h] -= amounts.get(key, 0.0)
                if key == _JOBS:
                    room = _tasks_within(left, 0.0, 1.0)
                elif key == SLOTS:
                    room = _tasks_within(left, 1.0, 0.0)
                else:
                    room = _tasks_within(left, per_task.get(key, 0.0), fixed.get(key, 0.0))
                if np.any(room < cap):
                    tightest = lim
                cap = np.minimum(cap, room)
        return cap, tightest

    def aggregate_violation(
        self, which: Iterable[int], slots: float, amounts: Mapping[str, float]
    ) -> tuple[Limit, str, float, float, float] | None:
        """The first aggregate limit a job of ``slots`` and ``amounts`` (units) would
        exceed, as (limit, key, in use, cap, wanted) in units; None if it fits."""
        for i in which:
            lim = self.limits[i]
            if lim.per_host:
                continue
            for key, used in self._total[i].items():
                extra = slots if key == SLOTS else 1.0 if key == _JOBS else amounts.get(key, 0.0)
                cap = self._cap(lim, key)
                if extra and used + extra > cap:
                    return lim, key, used, cap, extra
        return None

    def charge(self, which: tuple[int, ...], allocation: JobAllocation) -> None:
        """Count a dispatched job against every limit that applies to it."""
        claims = [(c.host, float(c.slots), self._units(c.amounts)) for c in allocation.claims]
        self._add(which, claims, self._units(allocation.shared))

    def charge_beyond(
        self,
        which: tuple[int, ...],
        allocation: JobAllocation,
        jobs: Sequence[tuple[tuple[int, ...], list[tuple[int, float, Amounts]], Amounts]],
    ) -> None:
        """Count a preemptor's promise beyond what its victims ``jobs`` give back (as
        :meth:`released` takes them): per limit, key and host, the usage becomes the
        larger of today's (the victims still hold theirs until they release) and the
        usage with the victims gone and the promise charged. A limit the victims and
        the preemptor share is then never counted twice for the same work."""
        after = self.released(jobs)
        after.charge(which, allocation)
        for i in which:
            total, done = self._total[i], after._total[i]
            for key, used in done.items():
                total[key] = max(total[key], used)
            for key, column in self._per_host[i].items():
                np.maximum(column, after._per_host[i][key], out=column)

    def released(
        self, jobs: Sequence[tuple[tuple[int, ...], list[tuple[int, float, Amounts]], Amounts]]
    ) -> LimitBooks:
        """A copy of these books without the usage of ``jobs``: (the limits that apply
        to the job, its claims (host, slots, amounts), its shared amounts), in units.
        What PREEMPT mode counts (design §3a); these books are left as they were."""
        view = object.__new__(LimitBooks)
        view.state, view.scales, view.limits = self.state, self.scales, self.limits
        view._applicable = self._applicable
        view._total = [dict(t) for t in self._total]
        view._per_host = [{k: a.copy() for k, a in ph.items()} for ph in self._per_host]
        for which, claims, shared in jobs:
            view._add(which, claims, shared, sign=-1.0)
        return view

    def _add(
        self,
        which: tuple[int, ...],
        claims: list[tuple[int, float, Amounts]],
        shared: Amounts,
        *,
        sign: float = 1.0,
    ) -> None:
        for i in which:
            total, per_host = self._total[i], self._per_host[i]
            for key, amount in shared:  # cluster-wide amounts count towards aggregate limits
                if key in total:
                    total[key] += sign * amount
            hosts_seen: set[int] = set()
            for h, slots, amounts in claims:
                for key, amount in ((SLOTS, slots), *amounts):
                    if key in total:
                        total[key] += sign * amount
                        if per_host:
                            per_host[key][h] += sign * amount
                if per_host and _JOBS in per_host and h not in hosts_seen:
                    per_host[_JOBS][h] += sign
                hosts_seen.add(h)
            if _JOBS in total:
                total[_JOBS] += sign
