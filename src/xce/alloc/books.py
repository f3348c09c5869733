"""The session's books: what is available now on every host and cluster-wide.

Availability = capacity − what running work holds − what this session already handed
out. It only falls within a session; that is what makes the unsatisfiable cache and the
host-scan cursors sound. The books own the select memo, and drop a host's memo entries
whenever they charge that host (design §2).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from xce.alloc.outcome import ClaimRun, JobAllocation
from xce.cluster.catalog import SLOTS
from xce.cluster.hosts import HostStatus, HostTable
from xce.cluster.state import ClusterState
from xce.resreq import CompiledSelect, SelectMemo

__all__ = ["SessionBooks"]

FloatArray = npt.NDArray[np.float64]


class SessionBooks:
    """Per-host available amounts (numpy columns) and shared amounts, for one session.

    Implements :class:`xce.resreq.HostView`, so selects evaluate against it.
    """

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.memo = SelectMemo(self)
        self._avail: dict[str, FloatArray] = {}
        self._shared: dict[str, float] = {}
        self.ok: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self.cursors: dict[object, int] = {}
        self.max_slots = 0.0
        self._static_eligible: dict[int, npt.NDArray[np.bool_]] = {}
        self._hosts_seen: HostTable | None = None  # the table ok/max_slots were made from
        self._version_seen = -1
        self.reset()

    def reset(self) -> None:
        """Session start: availability from the state; memo and cursors cleared."""
        st = self.state
        avail = self._avail
        for name, capacity in st.hosts.capacity.items():
            mine = avail.get(name)
            if mine is not None and mine.shape == capacity.shape:
                np.subtract(capacity, st.used[name], out=mine)  # no new array per session
            else:
                avail[name] = capacity - st.used[name]
        self._shared = {name: st.shared_free(name) for name in st.shared_total}
        hosts = st.hosts
        if hosts is not self._hosts_seen or hosts.version != self._version_seen:
            self._hosts_seen, self._version_seen = hosts, hosts.version  # status/capacity
            self.ok = np.asarray(hosts.status == HostStatus.OK)
            slots = hosts.capacity[SLOTS][self.ok]
            self.max_slots = float(np.nanmax(slots)) if len(slots) else 0.0  # no bucket exceeds
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

    # --- HostView --------------------------------------------------------------------
    @property
    def hosts(self) -> HostTable:
        return self.state.hosts

    def available(self, name: str) -> FloatArray:
        return self._avail[name]

    def shared_available(self, name: str) -> float:
        return self._shared[name]

    def shared_total(self, name: str) -> float:
        return self.state.shared_total[name]

    # --- charging --------------------------------------------------------------------
    def charge(self, allocation: JobAllocation) -> None:
        """Hand a dispatched job's resources out: no later job of the session gets them."""
        avail = self._avail
        for part in allocation.parts:
            if isinstance(part, ClaimRun):  # distinct hosts: one numpy pass per resource
                hosts = part.hosts
                avail[SLOTS][hosts] -= part.slots
                for name, amount in part.amounts:
                    avail[name][hosts] -= amount
                self.memo.forget_hosts(hosts.tolist())
            else:
                h = part.host
                avail[SLOTS][h] -= part.slots
                for name, amount in part.amounts:
                    avail[name][h] -= amount
                self.memo.forget_host(h)
        if allocation.shared:
            for name, amount in allocation.shared:
                self._shared[name] -= amount
            self.memo.forget_shared()  # a shared amount is seen by every host's selects
