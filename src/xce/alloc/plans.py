"""Plan iterators (spec Req 2): lazy, most preferred plan first.

A plan partitions a primary's task count into per-host buckets, largest first (a real
correctness property, not a heuristic: see the spec's "descending buckets"). Iterators
are constructed with the primary and the session (the spec's ``init``), produce one plan
per ``next`` (a cancellation checkpoint each), end with a stable ``StopIteration``, and
release everything in ``close()`` (also ``with``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from itertools import groupby
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from xce.alloc.cancel import CancelToken
from xce.alloc.request import PreparedPrimary

__all__ = [
    "CombinatorialPlanIterator",
    "Plan",
    "PlanIterator",
    "TrivialPlanIterator",
    "balanced",
]


@dataclass(frozen=True, slots=True)
class Plan:
    """Bucket sizes, descending; ``fill`` marks the final fill plan (design §3), whose
    buckets are decided from live state as hosts are walked.

    ``runs`` optionally gives the buckets as (size, count) runs of equal sizes, in order
    (a plan iterator that knows them saves the allocator a pass over wide plans); it
    must describe ``buckets`` exactly.
    """

    buckets: tuple[int, ...]
    fill: bool = False
    runs: tuple[tuple[int, int], ...] | None = field(default=None, compare=False, repr=False)

    @property
    def nbuckets(self) -> int:
        return len(self.buckets)

    def size_runs(self) -> tuple[tuple[int, int], ...]:
        """The buckets as (size, count) runs of equal consecutive sizes, in order."""
        if self.runs is not None:
            return self.runs
        return tuple((size, len(list(group))) for size, group in groupby(self.buckets))


@runtime_checkable
class PlanIterator(Protocol):
    """Contract of every plan iterator.

    - ``__next__`` returns exactly one plan and materialises no other (Req 2 AC 2);
      plans come most preferred first (AC 3); after the last plan it raises
      ``StopIteration``, and again on every later call (AC 4).
    - ``__next__`` is a cancellation checkpoint (AC 6).
    - ``close()`` releases everything; no other cleanup exists (AC 5). Idempotent.
    """

    def __iter__(self) -> PlanIterator: ...

    def __next__(self) -> Plan: ...

    def close(self) -> None: ...


class _Base:
    __slots__ = ("_done", "_token")

    def __init__(self, token: CancelToken) -> None:
        self._token = token
        self._done = False

    def __iter__(self) -> Self:
        return self

    def close(self) -> None:
        self._done = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class TrivialPlanIterator(_Base):
    """The seqjob plan: one host, one slot (``[1]``), once."""

    __slots__ = ()

    def __next__(self) -> Plan:
        self._token.checkpoint()
        if self._done:
            raise StopIteration
        self._done = True
        return _ONE


_ONE = Plan((1,), runs=((1, 1),))


@lru_cache(maxsize=4096)
def balanced(n: int, k: int) -> tuple[int, ...]:
    """``n`` tasks over ``k`` buckets: ``n mod k`` of ceil(n/k), the rest floor(n/k)."""
    q, r = divmod(n, k)
    return (q + 1,) * r + (q,) * (k - r)


@lru_cache(maxsize=4096)
def _balanced_plan(n: int, k: int) -> Plan:
    """Plans are immutable: wide jobs of one size share theirs."""
    q, r = divmod(n, k)
    runs = tuple((size, count) for size, count in ((q + 1, r), (q, k - r)) if count)
    return Plan(balanced(n, k), runs=runs)


class CombinatorialPlanIterator(_Base):
    """The parjob plans (Req 4 AC 1): k = 1..N hosts, balanced split, descending.

    ``span[hosts=1]`` leaves only ``[N]``; ``span[ptile=p]`` gives the one plan of
    p-sized buckets plus a remainder bucket. Without span (or with ``hosts=-1``) a
    final fill plan follows the balanced plans (design §3).

    ``max_buckets`` (the scheduler state's ``init`` argument: the hosts that take work)
    leaves out plans with more buckets than that: their buckets need distinct hosts, so
    they cannot succeed (design §3). It keeps a job of 10**10 tasks from making 10**10
    plans or a plan of 10**10 buckets.
    """

    __slots__ = ("_k", "_last_k", "_n", "_ptile", "_with_fill")

    def __init__(
        self, primary: PreparedPrimary, token: CancelToken, max_buckets: int | None = None
    ) -> None:
        super().__init__(token)
        span = primary.primary.span
        self._n = primary.tasks
        self._k = 1
        self._ptile = span.ptile if span is not None else None
        self._last_k = 1 if (span is not None and span.hosts == 1) or self._ptile else self._n
        if max_buckets is not None:
            if self._ptile is not None and -(-self._n // self._ptile) > max_buckets:
                self._last_k = 0  # the one ptile plan has too many buckets
            else:
                self._last_k = min(self._last_k, max_buckets)
        self._with_fill = span is None or (span.hosts == -1 and span.ptile is None)

    def __next__(self) -> Plan:
        self._token.checkpoint()
        if self._done:
            raise StopIteration
        k = self._k
        self._k += 1
        if k <= self._last_k:
            if self._ptile is not None:
                return _ptile_plan(self._n, self._ptile)
            return _balanced_plan(self._n, k)
        if k == self._last_k + 1 and self._with_fill:
            return Plan((), fill=True)
        self._done = True
        raise StopIteration

    def skip_buckets_over(self, size: int) -> None:
        """Jump past the balanced plans whose largest bucket exceeds ``size`` (an exact
        shortcut for a caller that knows no host can take more; the order is kept)."""
        if self._ptile is None and size >= 1:
            self._k = max(self._k, -(-self._n // size))

    def skip_buckets_beyond(self, count: int) -> None:
        """Leave out the balanced plans of more than ``count`` buckets (an exact shortcut
        for a caller that knows at most ``count`` hosts can take a task: each bucket
        needs its own); the fill plan, if any, still follows."""
        if self._ptile is None:  # (never below the plans given: the fill plan is next)
            self._last_k = max(min(self._last_k, count), self._k - 1)


@lru_cache(maxsize=4096)
def _ptile_plan(n: int, p: int) -> Plan:
    """``span[ptile=p]``: p-sized buckets and a remainder (immutable: shared)."""
    full, rest = divmod(n, p)
    runs = tuple((size, count) for size, count in ((p, full), (rest, 1 if rest else 0)) if count)
    return Plan((p,) * full + ((rest,) if rest else ()), runs=runs)
