"""The per-job-attempt scheduling context (the spec's ``xce_sched_ctx_t``).

Created when a job's allocation starts and torn down when it ends (``with``): it holds
this attempt's *uncommitted* per-host debits, which never touch the session's books —
those are charged only once the job is dispatched (spec: "Rollback scope").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType

from xce.alloc.books import SessionBooks
from xce.alloc.cancel import CancelToken
from xce.alloc.limits import LimitBooks
from xce.alloc.outcome import AllocMode, Claim, ClaimRun, Part
from xce.alloc.request import PreparedPrimary
from xce.cluster.catalog import SLOTS
from xce.cluster.units import to_units

__all__ = ["AllocContext", "AllocStats"]


class AllocStats:
    """Counters a session reports (plans tried, host tries, cache traffic)."""

    __slots__ = (
        "cache_hits",
        "cache_inserts",
        "cache_misses",
        "failures_reused",
        "host_tries",
        "iterators",
        "plans_tried",
        "preempt_probes",
        "preemptions",
    )

    def __init__(self) -> None:
        self.plans_tried = 0
        self.host_tries = 0
        self.iterators = 0  # plan and host iterators constructed
        self.cache_hits = 0
        self.cache_misses = 0
        self.cache_inserts = 0
        self.failures_reused = 0  # primaries answered by an identical failure, same books
        self.preemptions = 0  # jobs that pend PREEMPTING (victims chosen)
        self.preempt_probes = 0  # allocation attempts on PREEMPT views


class AllocContext:
    """Scratch state of one job's allocation attempt.

    ``nhosts``/``nslots`` describe the bucket being tried (Req 4 AC 6); ``request`` is
    the host want the prepare fan-out builds before each host try (entries are
    appended, like the spec's ``alloc_req.host``, so a plugin that does not guard on the
    jobs it owns corrupts it), in the resources' own units; ``uncommitted`` maps host ->
    resource -> debit, and ``shared_uncommitted`` resource -> debit, both in resolution
    units (exact: a rollback leaves exactly nothing). Its inner
    mappings are replaced, never changed in place: the hosts of a claim run share one.
    Claim runs are entered into it only when it is read (most jobs never read it again
    after their run: a wide job's thousands of hosts are then never entered at all).
    """

    __slots__ = (
        "_runs",
        "_uncommitted",
        "books",
        "first",
        "limit_ids",
        "limits",
        "mode",
        "nhosts",
        "nslots",
        "primary",
        "project",
        "queue",
        "request",
        "scales",
        "shared_uncommitted",
        "stats",
        "term",
        "token",
        "user",
    )

    def __init__(
        self,
        books: SessionBooks,
        limits: LimitBooks,
        *,
        user: str,
        queue: str,
        project: str,
        token: CancelToken,
        stats: AllocStats,
        mode: AllocMode = AllocMode.NORMAL,
    ) -> None:
        self.books = books
        self.scales = books.scales
        self.limits = limits
        self.user, self.queue, self.project = user, queue, project
        self.limit_ids = limits.applicable(user, queue, project)
        self.token = token
        self.stats = stats
        self.mode = mode
        self.nhosts = 1
        self.nslots = 1
        self.first = True
        self.term = 0  # the compound term being placed (0 for a simple requirement)
        self.primary: PreparedPrimary | None = None
        self.request: list[tuple[str, float]] = []
        self._uncommitted: dict[int, dict[str, float]] = {}
        self._runs: list[ClaimRun] = []  # debited, not yet entered into _uncommitted
        self.shared_uncommitted: dict[str, float] = {}

    @property
    def uncommitted(self) -> dict[int, dict[str, float]]:
        """host -> resource -> this attempt's provisional debit (do not change it)."""
        if self._runs:
            runs, self._runs = self._runs, []
            for run in runs:
                self._enter_run(run)
        return self._uncommitted

    @property
    def holds_any(self) -> bool:
        """True if this attempt holds any provisional debit."""
        return bool(self._runs or self._uncommitted or self.shared_uncommitted)

    def __enter__(self) -> AllocContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._uncommitted.clear()
        self._runs.clear()
        self.shared_uncommitted.clear()
        self.request.clear()
        self.primary = None

    def debit(self, claim: Claim) -> None:
        """Provisionally take ``claim`` for this attempt."""
        self.debit_units(claim.host, _units(claim.slots, claim.amounts, self.scales))

    def debit_units(self, host: int, taken: dict[str, float]) -> None:
        """Provisionally take ``taken`` (resource -> units, slots included) on ``host``."""
        uncommitted = self.uncommitted
        old = uncommitted.get(host)
        if not old:
            uncommitted[host] = taken
            return
        held = dict(old)
        for name, amount in taken.items():
            held[name] = held.get(name, 0.0) + amount
        uncommitted[host] = held

    def debit_run(self, run: ClaimRun) -> None:
        """:meth:`debit` for every claim of ``run`` (entered when next read)."""
        self._runs.append(run)

    def _enter_run(self, run: ClaimRun) -> None:
        hosts = run.hosts.tolist()
        uncommitted = self._uncommitted
        if uncommitted.keys().isdisjoint(hosts):  # fresh hosts share one mapping
            uncommitted.update(dict.fromkeys(hosts, _units(run.slots, run.amounts, self.scales)))
            return
        for claim in run.claims():
            self.debit(claim)

    def credit(self, parts: Iterable[Part]) -> None:
        """Give back provisional claims exactly (rollback of a failed plan or term)."""
        for part in parts:
            if isinstance(part, ClaimRun):
                if any(part is run for run in self._runs):  # never entered: drop it
                    self._runs = [run for run in self._runs if run is not part]
                    continue
                taken = _units(part.slots, part.amounts, self.scales)
                for h in part.hosts.tolist():
                    self._credit(h, taken)
            else:
                self._credit(part.host, _units(part.slots, part.amounts, self.scales))

    def _credit(self, host: int, taken: dict[str, float]) -> None:
        uncommitted = self.uncommitted
        held = uncommitted[host]
        if held == taken:
            del uncommitted[host]
            return
        left = dict(held)
        for name, amount in taken.items():
            left[name] -= amount
        if not any(left.values()):  # units: exactly nothing left
            del uncommitted[host]
        else:
            uncommitted[host] = left

    def debit_shared(self, units: Iterable[tuple[str, float]]) -> None:
        """Provisionally take shared amounts (in units) for this attempt."""
        for name, amount in units:
            self.shared_uncommitted[name] = self.shared_uncommitted.get(name, 0.0) + amount

    def credit_shared(self, units: Iterable[tuple[str, float]]) -> None:
        """Give back shared amounts (in units) exactly."""
        for name, amount in units:
            self.shared_uncommitted[name] -= amount
            if not self.shared_uncommitted[name]:
                del self.shared_uncommitted[name]


def _units(
    slots: int, amounts: Iterable[tuple[str, float]], scales: Mapping[str, float]
) -> dict[str, float]:
    """A claim's slots and amounts in resolution units."""
    out = {SLOTS: float(slots)}
    for name, amount in amounts:
        out[name] = out.get(name, 0.0) + to_units(amount, scales[name])
    return out
