"""The host iterator (spec Req 3): candidate hosts for one bucket, lazily.

A candidate is a host whose status is ok, whose select is true (on availability now,
memoised) and which has room for the bucket by the session's books. The caller skips
hosts already claimed in the plan and makes the exact per-host try (with this attempt's
uncommitted debits and per-host limits): the iterator stays a pure filter.

A **fresh iterator per bucket** (Req 4 AC 2): a host offered to and rejected by a large
bucket is offered again to a later, smaller one.

Hosts are scanned in host order, in chunks of growing size filtered with numpy, so the
first fitting host is found without touching the rest of a large cluster. A per-session
cursor per (select, bucket want) skips the prefix of hosts that can never again fit that
want this session (availability only falls), which keeps first-fit cheap as the cluster
fills. With ``order[]``, all candidates are sorted once per iterator instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

import numpy as np
import numpy.typing as npt

from xce.alloc.books import SessionBooks
from xce.alloc.cancel import CancelToken
from xce.alloc.request import Amounts, PreparedPrimary
from xce.cluster.catalog import SLOTS, ResourceKind

__all__ = ["HostFinder", "HostIterator"]

BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]
_PROBE = 4  # hosts checked one by one before filtering chunks with numpy
_NONE: tuple[int, ...] = ()  # no candidates (yet)
_FIRST_CHUNK = 64
_MAX_CHUNK = 8192


class HostFinder:
    """Everything host iterators of one primary attempt share: the static part of the
    filter (status, select, ``same`` group) and the order."""

    __slots__ = ("books", "cursor_ok", "mask", "ordered_scan", "primary", "select_id")

    def __init__(
        self,
        primary: PreparedPrimary,
        books: SessionBooks,
        restrict: BoolArray | None = None,
        *,
        cursors: bool = True,
    ) -> None:
        self.primary = primary
        self.books = books
        mask = books.eligible(primary.select)
        if restrict is not None:
            mask = mask & restrict
        self.mask: BoolArray = mask
        self.select_id = primary.select.id if primary.select is not None else 0
        # candidates sorted (order[], or the books' host preference) rather than scanned
        self.ordered_scan = bool(primary.primary.order) or books.preference is not None
        # The cursor is exact only when nothing in the filter can turn true again.
        self.cursor_ok = (
            cursors and restrict is None and primary.cacheable and not self.ordered_scan
        )

    def fits(self, want: Amounts, nslots: int, lo: int, hi: int) -> BoolArray:
        """Hosts lo..hi-1 passing the filter with room for ``nslots`` and ``want`` (in
        resolution units, as the exact try judges it: a host lacking a wanted resource
        fails even for 0 of it)."""
        units = self.books.units
        cond = self.mask[lo:hi] & (units(SLOTS)[lo:hi] >= nslots)
        for name, amount in want:
            cond &= units(name)[lo:hi] >= amount
        return cond

    def fits_one(self, want: Amounts, nslots: int, h: int) -> bool:
        """:meth:`fits` for one host, without numpy's per-call overhead."""
        units = self.books.units
        if not (self.mask[h] and units(SLOTS)[h] >= nslots):
            return False
        for name, amount in want:  # noqa: SIM110 (a loop: no generator per host)
            if not units(name)[h] >= amount:
                return False
        return True

    def _ordering(self, want: Amounts, nslots: int) -> tuple[IndexArray, list[FloatArray]]:
        """The candidates (host order) and their lexsort keys (last key is primary): the
        books' host preference first, then ``order[]``."""
        idx = np.flatnonzero(self.fits(want, nslots, 0, self.books.hosts.n))
        keys = []
        catalog = self.books.state.catalog
        for key in reversed(self.primary.primary.order):
            values = self._key_values(key.name)[idx]
            # most first, or least first with '-'; a load index that grows with load
            # (r15s, ut, ...) the other way round, as LSF sorts it (least loaded first)
            ascending = key.ascending != catalog.lower_is_better(key.name)
            values = values if ascending else -values
            keys.append(np.where(np.isnan(values), np.inf, values))
        if self.books.preference is not None:
            keys += [key[idx] for key in reversed(self.books.preference)]
        return idx, keys

    def ordered(self, want: Amounts, nslots: int) -> IndexArray:
        """All candidates, sorted by the primary's ``order[]`` keys (ties: host order)."""
        idx, keys = self._ordering(want, nslots)
        return idx[np.lexsort(keys)] if keys else idx

    def ordered_head(self, want: Amounts, nslots: int, k: int) -> tuple[IndexArray, _Rest | None]:
        """The first ``k`` or more candidates in ``order[]`` order, and the rest unsorted.

        Exact: the head holds every candidate whose primary key is at most the k-th
        smallest, ties included, so every candidate of the rest sorts after it. Most
        host iterators stop at their first host: this spares sorting a large cluster.
        """
        idx, keys = self._ordering(want, nslots)
        if not keys or len(idx) <= 4 * k:
            return (idx[np.lexsort(keys)] if keys else idx), None
        primary = keys[-1]
        head = primary <= np.partition(primary, k - 1)[k - 1]
        sub = np.flatnonzero(head)
        first = idx[sub][np.lexsort([key[sub] for key in keys])]
        rest = ~head
        return first, (idx[rest], [key[rest] for key in keys])

    def _key_values(self, name: str) -> npt.NDArray[np.float64]:
        books = self.books
        kind = books.state.catalog.kind(name)
        if kind is ResourceKind.CONSUMABLE:
            return books.units(name)  # the same order as the amounts themselves
        if kind is ResourceKind.NUMERIC:
            return np.asarray(books.hosts.numeric[name])
        if kind is ResourceKind.BOOLEAN:
            return np.asarray(books.hosts.tags[name], dtype=np.float64)
        if kind is ResourceKind.SHARED:
            return np.full(books.hosts.n, books.shared_units(name))
        base = name[3:] if name.startswith("max") else name  # order[maxmem]: capacity
        if books.state.catalog.kind(base) is ResourceKind.SHARED:
            return np.full(books.hosts.n, books.shared_total(base))
        return np.asarray(books.hosts.units[base], dtype=np.float64)

    def task_capacity(self) -> npt.NDArray[np.int64]:
        """Per eligible host, an upper bound on the tasks it can take now (shortcuts):
        what its slots and its per-task and per-host amounts allow, exactly as the try
        counts them (units), and never more (per-job amounts and limits only lower it)."""
        books, wants = self.books, self.primary.wants
        idx = np.flatnonzero(self.mask)
        cap = books.units(SLOTS)[idx]
        per_host = dict(wants.per_host_units)
        with np.errstate(invalid="ignore"):
            for name, per_task in wants.per_task_units:
                free = books.units(name)[idx] - per_host.get(name, 0.0)
                if per_task > 0:
                    cap = np.minimum(cap, np.floor_divide(free, per_task))
                else:  # a host lacking the resource (NaN) cannot take the job
                    cap = np.where(free >= 0, cap, 0)
            for name, amount in wants.per_host_units:
                cap = np.where(books.units(name)[idx] >= amount, cap, 0)
        return np.asarray(np.fmax(cap, 0), dtype=np.int64)  # fmax: NaN (lacks it) -> 0


_Rest = tuple[IndexArray, list[FloatArray]]
_HEAD = 64  # order[] candidates sorted before the rest are needed


class HostIterator:
    """Candidate hosts for one bucket; ``__next__`` is a cancellation checkpoint
    (Req 3 AC 6); ``StopIteration`` when none is left (AC 3); ``close()`` releases
    (AC 5). Constructible any number of times from the same plan (AC 4)."""

    __slots__ = (
        "_chunk",
        "_cursor_key",
        "_finder",
        "_next_lo",
        "_nslots",
        "_pos",
        "_rest",
        "_size",
        "_token",
        "_want",
    )

    def __init__(
        self,
        finder: HostFinder,
        nslots: int,
        want: Amounts,
        token: CancelToken,
        after: int | None = None,
    ) -> None:
        """``after``: start past this host (exact only when the caller knows every host
        up to it was claimed or rejected for this same want, and still would be)."""
        self._finder = finder
        self._nslots = nslots
        self._want = want
        self._token = token
        self._pos = 0
        self._size = _PROBE
        self._cursor_key: object = None
        self._rest: _Rest | None = None
        self._chunk: IndexArray | Sequence[int] = _NONE
        if finder.ordered_scan:
            self._next_lo = finder.books.hosts.n
            if after is None:
                self._chunk, self._rest = finder.ordered_head(want, nslots, _HEAD)
            else:
                self._chunk = finder.ordered(want, nslots)
                self._pos = int(np.flatnonzero(np.asarray(self._chunk) == after)[0]) + 1
        else:
            self._next_lo = 0
            if finder.cursor_ok:
                self._cursor_key = (finder.select_id, nslots, want)
                self._next_lo = finder.books.cursors.get(self._cursor_key, 0)
            if after is not None:
                self._next_lo = max(self._next_lo, after + 1)

    def __iter__(self) -> HostIterator:
        return self

    def __next__(self) -> int:
        self._token.checkpoint()
        while self._pos >= len(self._chunk):
            if not self._scan():
                raise StopIteration
        h = int(self._chunk[self._pos])
        self._pos += 1
        return h

    def _scan(self) -> bool:
        """Filter the next chunk of hosts; False when the hosts are exhausted."""
        if self._rest is not None:  # order[]: the candidates after the sorted head
            idx, keys = self._rest
            self._chunk, self._pos, self._rest = idx[np.lexsort(keys)], 0, None
            return True
        n = self._finder.books.hosts.n
        lo = self._next_lo
        if lo >= n:
            return False
        hi = min(lo + self._size, n)
        if self._size == _PROBE:  # most first-fit searches end at the first host or two
            fits_one, want, nslots = self._finder.fits_one, self._want, self._nslots
            found: IndexArray | Sequence[int] = [
                h for h in range(lo, hi) if fits_one(want, nslots, h)
            ]
            self._size = _FIRST_CHUNK
        else:
            found = np.flatnonzero(self._finder.fits(self._want, self._nslots, lo, hi)) + lo
            self._size = min(self._size * 2, _MAX_CHUNK)
        self._chunk, self._pos, self._next_lo = found, 0, hi  # a list or an index array
        cursors = self._finder.books.cursors
        if self._cursor_key is not None and cursors.get(self._cursor_key, 0) == lo:
            cursors[self._cursor_key] = int(found[0]) if len(found) else hi
        return True

    def close(self) -> None:
        self._chunk = _NONE
        self._pos = 0
        self._rest = None
        self._next_lo = self._finder.books.hosts.n

    def __enter__(self) -> HostIterator:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
