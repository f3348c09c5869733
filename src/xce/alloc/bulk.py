"""Placing a run of equal buckets at once (an exact shortcut of the per-bucket loop).

A plan of many equal buckets (``[1, 1, ..., 1]`` on a cluster of one-slot hosts) costs a
fresh host iterator and a host try per bucket. For the buckets after the first (the
first carries the per-job amounts), every bucket of a run wants the same thing, so the
per-bucket loop claims, in host order (or ``order[]``), the first hosts that pass the
exact try — each bucket's fresh scan would refuse again every host before the previous
claim. This module finds those hosts in one vectorised pass instead.

It is used only when the result is provably the same: the job is under no per-host
limit (the reason the spec forbids reusing one want across hosts), the want the prepare
fan-out builds for the run is the standard one (hooks see no host, so it cannot differ
per host), and the allocation mode is NORMAL. Otherwise the caller loops per bucket.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from xce.alloc.books import SessionBooks
from xce.alloc.context import AllocContext
from xce.alloc.hosts import HostFinder
from xce.alloc.outcome import AllocMode, Claim
from xce.cluster.catalog import SLOTS

__all__ = ["claim_run"]

_EPS = 1e-9
_CHECK_EVERY = 256  # cancellation checkpoints while walking candidates


def _standard_want(
    ctx: AllocContext, hooks: tuple[Callable[[AllocContext], None], ...], need: int
) -> dict[str, float] | None:
    """Run the prepare fan-out once; the want if it is the standard one, else None."""
    assert ctx.primary is not None
    ctx.request.clear()
    for hook in hooks:
        hook(ctx)
    want: dict[str, float] = {}
    for name, amount in ctx.request:
        want[name] = want.get(name, 0.0) + amount
    expected = {SLOTS: float(need)}
    for name, amount in ctx.primary.wants.for_bucket(need, False):
        expected[name] = expected.get(name, 0.0) + amount
    return want if want == expected else None


def claim_run(
    ctx: AllocContext,
    finder: HostFinder,
    hooks: tuple[Callable[[AllocContext], None], ...],
    need: int,
    count: int,
    taken: set[int],
) -> list[Claim] | None:
    """Claim ``count`` buckets of ``need`` slots on distinct hosts, or None if the run
    cannot be placed this way (the caller then loops per bucket: same result)."""
    limited = any(ctx.limits.limits[i].per_host for i in ctx.limit_ids)
    if limited or ctx.mode is not AllocMode.NORMAL or ctx.first:
        return None
    want = _standard_want(ctx, hooks, need)
    if want is None:
        return None
    ctx.stats.host_tries += 1
    books = finder.books
    amounts = tuple((n, a) for n, a in want.items() if n != SLOTS)
    candidates = _candidates(finder, books, amounts, need)
    claims: list[Claim] = []
    held = ctx.uncommitted
    # At most len(taken) + len(held) candidates are passed over: look no further.
    enough = candidates[: count + len(taken) + len(held)]
    for seen, h in enumerate(enough.tolist()):
        if seen % _CHECK_EVERY == 0:
            ctx.token.checkpoint()
        if h in taken:
            continue
        if h in held and not _fits_with_debits(books, h, want, held[h]):
            continue
        claims.append(
            _slots_only(h, need, ctx.term) if not amounts else Claim(h, need, amounts, ctx.term)
        )
        if len(claims) == count:
            break
    ctx.debit_all(claims)
    return claims


@lru_cache(maxsize=1 << 16)
def _slots_only(host: int, slots: int, term: int) -> Claim:
    """Claims are immutable: wide jobs of slots alone share them."""
    return Claim(host, slots, (), term)


def _candidates(
    finder: HostFinder, books: SessionBooks, amounts: tuple[tuple[str, float], ...], need: int
) -> np.ndarray:
    if finder.primary.primary.order:
        return finder.ordered(amounts, need)
    start = books.cursors.get((finder.select_id, need, amounts), 0) if finder.cursor_ok else 0
    return np.flatnonzero(finder.fits(amounts, need, start, books.hosts.n)) + start


def _fits_with_debits(
    books: SessionBooks, h: int, want: dict[str, float], held: dict[str, float]
) -> bool:
    return all(books.available(n)[h] - held.get(n, 0.0) >= a - _EPS for n, a in want.items())
