"""Jobs that can never run: the ``NEVER_RUNNABLE`` pend reason.

A job that pends is checked once more against the *empty* cluster as configured: every
host ok, at full capacity, no running work, no limit usage, every shared amount free.
If it cannot be placed even there, waiting will not help, and that is what its pend
reason says (ranked first). A select that can turn true as resources fall (a volatile
select: ``select[mem<500]``) cannot be judged on the empty cluster, so it is ignored for
this check; every other select is most permissive there (availability at its highest).
Placement succeeds or fails regardless of host order (docs/allocation.md), so a job
placeable in some state of the cluster is placeable on the empty one.

Answers are memoised per requirement (and identity, when limits exist) until the
configuration changes (host capacities or attributes, shared totals, limits).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import numpy as np

from xce.alloc.cancel import CancelToken
from xce.alloc.outcome import PendInfo, Pending, PendReason
from xce.alloc.request import PreparedPrimary, PreparedRequirement
from xce.cluster.hosts import HostTable
from xce.cluster.state import ClusterState

if TYPE_CHECKING:
    from xce.alloc.books import SessionBooks
    from xce.alloc.engine import JobRequest
    from xce.alloc.limits import LimitBooks

__all__ = ["EmptyCluster"]


class _Placer(Protocol):
    """What this module needs of an allocator (the engine's :class:`Allocator`)."""

    state: ClusterState
    token: CancelToken
    books: SessionBooks
    limits: LimitBooks

    def begin_session(self) -> None: ...

    def try_place(self, job: JobRequest) -> object: ...

    def on_view(self, books: SessionBooks, limits: LimitBooks) -> _Placer: ...


class EmptyCluster:
    """The never-runnable check of one allocator (see the module docstring)."""

    def __init__(self, owner: _Placer, make: Callable[[ClusterState], _Placer]) -> None:
        self._owner = owner
        self._make = make  # an allocator like the owner, on the state given
        self._placer: _Placer | None = None
        self._seen: tuple[object, ...] = ()
        self._memo: dict[object, PendInfo | None] = {}

    def never_runnable(self, job: JobRequest) -> PendInfo | None:
        """The NEVER_RUNNABLE pend info of ``job``, or None if some state could run it."""
        state = self._owner.state
        placer = self._current(state)
        key: object = job.requirement
        if state.limits:
            key = (job.requirement, job.user, job.queue, job.project)
        if key in self._memo:
            return self._memo[key]
        placer.token = self._owner.token  # the owner's current token (cancellation)
        return self._judged(key, placer, job, "on this cluster")

    def never_within(self, job: JobRequest, name: str, hosts: Sequence[int]) -> PendInfo | None:
        """The NEVER_RUNNABLE pend info of ``job`` when it may run only on ``hosts``
        (those of its advance reservation ``name``) and the empty cluster cannot place
        it there, or None."""
        state = self._owner.state
        placer = self._current(state)
        key: object = (job.requirement, name, tuple(hosts))
        if state.limits:
            key = (key, job.user, job.queue, job.project)
        if key in self._memo:
            return self._memo[key]
        placer.token = self._owner.token
        books = placer.books
        outside = np.ones(state.hosts.n, dtype=np.bool_)
        outside[list(hosts)] = False
        avail = {}
        for resource in placer.state.hosts.units:
            units = books.units(resource).copy()
            units[outside] = np.minimum(units[outside], 0.0)
            avail[resource] = units
        shared = {n: books.shared_units(n) for n in state.shared_total}
        view = placer.on_view(books.view(avail, shared, outside=outside), placer.limits)
        return self._judged(key, view, job, f"in its reservation {name}")

    def _judged(self, key: object, placer: _Placer, job: JobRequest, where: str) -> PendInfo | None:
        """Try ``job`` (volatile selects dropped) on ``placer``'s empty books; its
        NEVER_RUNNABLE info if it fails there ("can never run ``where`` as configured"),
        else None; memoised under ``key``."""
        decision = placer.try_place(replace(job, requirement=_without_volatile(job.requirement)))
        info = None
        if isinstance(decision, Pending):
            why = decision.info
            info = PendInfo(
                PendReason.NEVER_RUNNABLE,
                f"can never run {where} as configured: {why.message}",
                why.hosts,
                why.examples,
                why.limits,
                why.reason,
            )
        self._memo[key] = info
        return info

    def _current(self, state: ClusterState) -> _Placer:
        """The placer on the empty cluster, rebuilt when the configuration changed."""
        seen = (state.hosts, state.hosts.version, tuple(state.shared_total.items()), state.limits)
        if self._placer is None or seen != self._seen:
            self._placer = self._make(_empty(state))
            self._placer.begin_session()
            self._seen = seen
            self._memo.clear()
        return self._placer


def _empty(state: ClusterState) -> ClusterState:
    t = state.hosts
    status = np.zeros(t.n, dtype=np.int8)  # every host ok
    hosts = HostTable(t.names, status, t.capacity, t.numeric, t.strings, t.tags, t.scales)
    return replace(
        state,
        hosts=hosts,
        used={k: np.zeros(t.n) for k in state.used},
        shared_used=dict.fromkeys(state.shared_used, 0.0),
        running=(),
        jobs=(),
    )


def _without_volatile(req: PreparedRequirement) -> PreparedRequirement:
    """``req`` with every volatile select dropped (it might turn true later)."""
    if all(pp.cacheable for alt in req.alternatives for pp in alt):
        return req
    return PreparedRequirement(
        req.resreq,
        tuple(tuple(_plain(pp) for pp in alt) for alt in req.alternatives),
    )


def _plain(pp: PreparedPrimary) -> PreparedPrimary:
    return pp if pp.cacheable else PreparedPrimary(pp.primary, None, pp.wants)
