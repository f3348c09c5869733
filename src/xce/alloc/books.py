"""The session's books: what is available now on every host and cluster-wide.

Availability = capacity − what running work holds − what this session already handed
out, counted exactly in units of each resource's resolution (:mod:`xce.cluster.units`):
no comparison needs a tolerance. It only falls within a session; that is what makes the
unsatisfiable cache and the host-scan cursors sound. The books own the select memo, and
drop a host's memo entries whenever they charge that host (design §2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xce.alloc.outcome import ClaimRun, JobAllocation
from xce.cluster.catalog import SLOTS
from xce.cluster.hosts import HostStatus, HostTable
from xce.cluster.state import ClusterState
from xce.cluster.units import to_units
from xce.resreq import CompiledSelect, SelectMemo

if TYPE_CHECKING:
    from xce.alloc.preemption import Masked, Released

__all__ = ["SessionBooks"]

FloatArray = npt.NDArray[np.float64]


class SessionBooks:
    """Per-host available amounts (numpy columns) and shared amounts, for one session.

    :meth:`units` and :meth:`shared_units` count in resolution units (what the allocator
    computes with); :meth:`available` and :meth:`shared_available` give the same in the
    resources' own unit, kept in step, for selects: it implements
    :class:`xce.resreq.HostView`.
    """

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.memo = SelectMemo(self)
        self._avail: dict[str, FloatArray] = {}  # units
        self._real: dict[str, FloatArray] = {}  # _avail / scale (the same array if 1)
        self._stale = False  # _real lags behind charges (brought up to date when read)
        self._shared: dict[str, float] = {}  # units
        self.scales = state.catalog.scales
        self.ok: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self.cursors: dict[object, int] = {}
        # a view's host preference: sort keys (lower first; the first key decides, then
        # the next...), ahead of order[] and host order (None: none; the session's own
        # books never have one)
        self.preference: tuple[FloatArray, ...] | None = None
        # a view's hosts the job may not use at all (advance reservations: their
        # availability is nothing; a failure's reason counts them apart, as RESERVED)
        self.outside: npt.NDArray[np.bool_] | None = None
        self.version = 0  # bumped whenever availability changes (see :meth:`charge`)
        self.max_slots = 0.0
        self.n_ok = 0
        self.total_slots = 0.0
        self._static_eligible: dict[int, npt.NDArray[np.bool_]] = {}
        self._hosts_seen: HostTable | None = None  # the table ok/max_slots were made from
        self._version_seen = -1
        self._ok_weight: npt.NDArray[np.float64] | None = None
        self.reset()

    def reset(self) -> None:
        """Session start: availability from the state; memo and cursors cleared."""
        st = self.state
        avail, real = self._avail, self._real
        self.scales = st.catalog.scales
        for name, capacity in st.hosts.units.items():
            mine = avail.get(name)
            if mine is not None and mine.shape == capacity.shape:
                np.subtract(capacity, st.used[name], out=mine)  # no new array per session
            else:
                mine = avail[name] = capacity - st.used[name]
            scale = self.scales[name]
            if scale == 1.0:
                real[name] = mine
            elif name in real and real[name].shape == mine.shape and real[name] is not mine:
                np.divide(mine, scale, out=real[name])
            else:
                real[name] = mine / scale
        self._stale = False
        self._shared = {name: st.shared_free_units(name) for name in st.shared_total}
        hosts = st.hosts
        if hosts is not self._hosts_seen or hosts.version != self._version_seen:
            self._hosts_seen, self._version_seen = hosts, hosts.version  # status/capacity
            self.ok = np.asarray(hosts.status == HostStatus.OK)
            slots = hosts.capacity[SLOTS][self.ok]
            self.max_slots = float(np.nanmax(slots)) if len(slots) else 0.0  # no bucket exceeds
            self.n_ok = int(np.count_nonzero(self.ok))  # no plan has more buckets
            # the ok hosts' free slots, summed as a dot product when no host lacks a
            # slot count (whole numbers of units: any order of summing gives the same)
            lacking = np.isnan(hosts.capacity[SLOTS]).any()  # NaN * 0 would poison the dot
            self._ok_weight = None if lacking else self.ok.astype(np.float64)
        weight = self._ok_weight
        free = avail[SLOTS]
        self.total_slots = (  # falls as jobs start
            float(np.nansum(free[self.ok])) if weight is None else float(free @ weight)
        )
        self.version += 1
        self.memo.reset()
        self.cursors.clear()
        self._static_eligible.clear()

    def eligible(self, select: CompiledSelect | None) -> npt.NDArray[np.bool_]:
        """Hosts whose status is ok and whose select is true now (read-only)."""
        if select is None:
            return self.ok
        if select.dynamic:
            return self.ok & self.memo.mask(select)
        mask = self._static_eligible.get(select.id)
        if mask is None:  # a static select's result holds for the whole session
            mask = self._static_eligible[select.id] = self.ok & self.memo.mask(select)
        return mask

    # --- PREEMPT mode ------------------------------------------------------------------
    def _given_back(self, back: Released) -> dict[str, FloatArray]:
        """Per resource, per host, what ``back``'s claims hold (units)."""
        n = self.state.hosts.n
        out = {SLOTS: back.slots} | dict(back.amounts)
        return {
            name: np.asarray(np.bincount(back.hosts, weights=w, minlength=n), dtype=np.float64)
            for name, w in out.items()
        }

    def released(self, back: Released, masked: Masked = ()) -> SessionBooks:
        """These books with the claims of ``back`` given back: what PREEMPT mode counts
        as available (design §3a), with nothing available on the hosts of ``masked``
        (advance reservations the job may not use). These books are left exactly as
        they were."""
        avail = {name: units.copy() for name, units in self._avail.items()}
        for name, amounts in self._given_back(back).items():
            avail[name] += amounts
        for hosts in masked:
            for held in avail.values():
                held[hosts] = np.minimum(held[hosts], 0.0)
        shared = dict(self._shared)
        for name, units in back.shared:
            shared[name] += units
        return self.view(avail, shared, outside=self.outside_of(masked))

    def outside_of(self, masked: Masked) -> npt.NDArray[np.bool_] | None:
        """The hosts of ``masked`` as a mask (None: none)."""
        if not masked:
            return None
        outside = np.zeros(self.state.hosts.n, dtype=np.bool_)
        for hosts in masked:
            outside[hosts] = True
        return outside

    def view(
        self,
        available: dict[str, FloatArray],
        shared: dict[str, float],
        preference: tuple[FloatArray, ...] | None = None,
        total_slots: float | None = None,
        outside: npt.NDArray[np.bool_] | None = None,
    ) -> SessionBooks:
        """Books of the same cluster with ``available`` (units per resource, every
        resource of these books; taken, not copied) and ``shared`` (units): the one
        mechanism of the availability views (design §3a) — PREEMPT (:meth:`released`)
        and a planned start (the window minimum of a profile). ``preference``: per-host
        keys host iterators sort on first (lower first; the first key decides, ties go
        to the next), before the job's ``order[]`` and the host order (a planned
        placement prefers the hosts freed latest). ``total_slots``: the slots of
        ``available`` on the ok hosts together, if the caller has summed them.
        ``outside``: hosts the job may not use (nothing is available on them in
        ``available`` already); a failure's reason counts them apart, as RESERVED.

        A separate object: its own select memo, cursors and static eligibility
        (availability in it is not the session's, and only falls while an attempt runs
        against it), so every shortcut stays exact there.
        """
        view = object.__new__(SessionBooks)
        view.state, view.scales = self.state, self.scales
        view._avail = available
        view._real = {
            name: units if self.scales[name] == 1.0 else units / self.scales[name]
            for name, units in available.items()
        }
        view._stale = False
        view._shared = shared
        view.memo = SelectMemo(view)
        view.cursors = {}
        view.preference = preference
        view.outside = outside
        view._static_eligible = {}
        view.ok, view.max_slots, view.n_ok = self.ok, self.max_slots, self.n_ok
        view.total_slots = (
            float(np.nansum(available[SLOTS][self.ok])) if total_slots is None else total_slots
        )
        view._hosts_seen, view._version_seen = self._hosts_seen, self._version_seen
        view.version = 0
        return view

    def charge_beyond(self, allocation: JobAllocation, back: Released) -> None:
        """Hand out what a preemptor is promised, except what its victims give back
        (their holdings stay charged to them until they release): per host and resource
        ``max(0, promised - given back)``, so no later job of the session gets either."""
        avail, scales = self._avail, self.scales
        given = self._given_back(back)
        self.version += 1
        for claim in allocation.claims:
            h = claim.host
            wanted = [(SLOTS, float(claim.slots))]
            wanted += [(n, float(round(a * scales[n]))) for n, a in claim.amounts]
            for name, units in wanted:
                beyond = units - float(given[name][h]) if name in given else units
                if beyond > 0:
                    avail[name][h] -= beyond
                    if name == SLOTS:
                        self.total_slots -= beyond
                    else:
                        self._stale = True
            self.memo.forget_host(h)
        shared_back = dict(back.shared)
        for name, amount in allocation.shared:
            beyond = to_units(amount, scales[name]) - shared_back.get(name, 0.0)
            if beyond > 0:
                self._shared[name] -= beyond
                self.memo.forget_shared()

    # --- HostView --------------------------------------------------------------------
    @property
    def hosts(self) -> HostTable:
        return self.state.hosts

    def available(self, name: str) -> FloatArray:
        """Available now, in the resource's own unit (for selects; read-only)."""
        if self._stale:
            self._refresh()
        return self._real[name]

    def _refresh(self) -> None:
        """Bring the own-unit view up to date (the exact value, correctly rounded)."""
        for name, real in self._real.items():
            units = self._avail[name]
            if real is not units:
                np.divide(units, self.scales[name], out=real)
        self._stale = False

    def shared_available(self, name: str) -> float:
        return self._shared[name] / self.scales[name]

    # --- units -----------------------------------------------------------------------
    def units(self, name: str) -> FloatArray:
        """Available now, in units of the resource's resolution (read-only)."""
        return self._avail[name]

    def shared_units(self, name: str) -> float:
        """Shared amount available now, in units of its resolution."""
        return self._shared[name]

    def shared_total(self, name: str) -> float:
        return self.state.shared_total[name]

    # --- charging --------------------------------------------------------------------
    def charge(self, allocation: JobAllocation) -> None:
        """Hand a dispatched job's resources out: no later job of the session gets them."""
        avail, scales = self._avail, self.scales
        self.version += 1  # every result computed from the books before is now stale
        self.total_slots -= allocation.slots
        for part in allocation.parts:
            if isinstance(part, ClaimRun):  # distinct hosts: one numpy pass per resource
                hosts = part.hosts
                avail[SLOTS][hosts] -= part.slots
                for name, amount in part.amounts:
                    avail[name][hosts] -= round(amount * scales[name])
                    self._stale = True
                self.memo.forget_hosts(hosts.tolist())
            else:
                h = part.host
                avail[SLOTS][h] -= part.slots
                for name, amount in part.amounts:
                    avail[name][h] -= round(amount * scales[name])
                    self._stale = True
                self.memo.forget_host(h)
        if allocation.shared:
            for name, amount in allocation.shared:
                self._shared[name] -= to_units(amount, scales[name])
            self.memo.forget_shared()  # a shared amount is seen by every host's selects
