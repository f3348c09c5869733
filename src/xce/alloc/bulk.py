"""Placing a run of equal buckets at once (an exact shortcut of the per-bucket loop).

A plan of many equal buckets (``[1, 1, ..., 1]`` on a cluster of one-slot hosts) costs a
fresh host iterator and a host try per bucket. Every bucket of a run wants the same
thing (the job's first bucket joins a run only when it carries no per-job amounts), so
the per-bucket loop claims, in host order (or ``order[]``), the first hosts that pass the
exact try — each bucket's fresh scan would refuse again every host before the previous
claim. This module finds those hosts in one vectorised pass instead, and keeps them as
one :class:`~xce.alloc.outcome.ClaimRun`.

It is used only when the result is provably the same: the job is under no per-host
limit (the reason the spec forbids reusing one want across hosts), the want the prepare
fan-out builds for the run is the standard one (hooks see no host, so it cannot differ
per host), and the allocation mode is NORMAL. Otherwise the caller loops per bucket.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xce.alloc.books import SessionBooks
from xce.alloc.context import AllocContext
from xce.alloc.hosts import HostFinder
from xce.alloc.outcome import AllocMode, ClaimRun
from xce.cluster.catalog import SLOTS
from xce.cluster.units import to_units

__all__ = ["claim_run"]


def _run_want(
    ctx: AllocContext, hooks: tuple[Callable[[AllocContext], None], ...] | None, need: int
) -> dict[str, float] | None:
    """What every bucket of the run wants, or None if the prepare fan-out does not build
    the standard want (or the job's first bucket, if in the run, wants more)."""
    assert ctx.primary is not None
    wants = ctx.primary.wants
    expected = {SLOTS: float(need)}
    for name, amount in wants.for_bucket(need, False):
        expected[name] = expected.get(name, 0.0) + amount
    if hooks is None:  # the builtin fan-out builds for_bucket(need, ctx.first)
        ctx.stats.host_tries += 1 + ctx.first
        if ctx.first and wants.per_job_units:
            return None
        return expected
    first = ctx.first
    built: list[tuple[tuple[str, float], ...]] = []  # each fan-out's want, in its order
    for ctx.first in (True, False) if first else (False,):
        ctx.stats.host_tries += 1  # one fan-out per want
        ctx.request.clear()
        for hook in hooks:
            hook(ctx)
        want: dict[str, float] = {}
        for name, amount in ctx.request:
            want[name] = want.get(name, 0.0) + amount
        built.append(tuple(want.items()))
        if want != expected or built[0] != built[-1]:  # a claim keeps the fan-out's order
            ctx.first = first
            return None
    ctx.first = first
    return dict(built[0])


def claim_run(
    ctx: AllocContext,
    finder: HostFinder,
    hooks: tuple[Callable[[AllocContext], None], ...] | None,
    need: int,
    count: int,
    taken: bytearray,
    ntaken: int,
) -> ClaimRun | None:
    """Claim ``count`` buckets of ``need`` slots on distinct hosts not in ``taken`` (a
    host mask; ``ntaken`` hosts set), or None if the run cannot be placed this way (the
    caller then loops per bucket: same result). A run shorter than ``count`` means the
    plan fails; only a full run is debited. ``hooks`` is the prepare fan-out (None when
    only the builtin plugins are registered: their fan-out is known)."""
    if ctx.mode is not AllocMode.NORMAL:
        return None
    if ctx.limit_ids and any(ctx.limits.limits[i].per_host for i in ctx.limit_ids):
        return None
    want = _run_want(ctx, hooks, need)
    if want is None:
        return None
    ctx.token.checkpoint()
    books = finder.books
    amounts = tuple((n, a) for n, a in want.items() if n != SLOTS) if len(want) > 1 else ()
    scales = ctx.scales
    units = tuple((n, to_units(a, scales[n])) for n, a in amounts)
    held = ctx.uncommitted
    # At most ntaken + len(held) candidates are passed over: look no further.
    enough = _candidates(finder, books, units, need)[: count + ntaken + len(held)]
    if ntaken or held:
        keep = ~np.frombuffer(taken, dtype=np.bool_)[enough]
        if len(held) > ntaken:  # held covers taken: some host an earlier term debited
            debited = np.fromiter(held.keys(), dtype=np.intp, count=len(held))
            for k in np.flatnonzero(keep & np.isin(enough, debited)).tolist():
                h = int(enough[k])
                keep[k] = _fits_with_debits(books, h, ((SLOTS, float(need)), *units), held[h])
        enough = enough[keep]
    run = ClaimRun(enough[:count], need, amounts, ctx.term)  # keeps a compact copy
    if len(run) == count:
        ctx.debit_run(run)
    return run


def _candidates(
    finder: HostFinder, books: SessionBooks, amounts: tuple[tuple[str, float], ...], need: int
) -> np.ndarray:
    if finder.ordered_scan:
        return finder.ordered(amounts, need)
    start = books.cursors.get((finder.select_id, need, amounts), 0) if finder.cursor_ok else 0
    found: np.ndarray = finder.fits(amounts, need, start, books.hosts.n).nonzero()[0]
    return found + start if start else found


def _fits_with_debits(
    books: SessionBooks, h: int, want: tuple[tuple[str, float], ...], held: dict[str, float]
) -> bool:
    """The exact try's resource check on one host (units)."""
    return all(books.units(n)[h] - held.get(n, 0.0) >= a for n, a in want)
