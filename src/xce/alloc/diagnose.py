"""Why a primary could not be placed: the pend reason, chosen by design §5's precedence.

Runs only when every plan failed (or an exact shortcut proved they would), over all hosts
at once: a per-host breakdown (the first host-level reason each host fails on) and the
job-level reason: no ok host matches the select → HOST_STATUS if a closed or unavailable
one would, else SELECT; the eligible hosts' free slots cannot hold the tasks →
NOT_ENOUGH_SLOTS; a per-task resource cannot → NOT_ENOUGH_RESOURCE; a per-host limit
cannot → LIMIT; else the placement constraint: SAME or SPAN.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from xce.alloc.context import AllocContext
from xce.alloc.outcome import PendInfo, PendReason
from xce.alloc.request import PreparedPrimary
from xce.cluster.catalog import SLOTS
from xce.cluster.state import Limit

__all__ = ["diagnose", "shared_shortfall"]

_EPS = 1e-9
FloatArray = npt.NDArray[np.float64]
_HOST_REASONS = (
    PendReason.HOST_STATUS,
    PendReason.SELECT,
    PendReason.NOT_ENOUGH_SLOTS,
    PendReason.NOT_ENOUGH_RESOURCE,
    PendReason.LIMIT,
)


def _free(ctx: AllocContext, name: str) -> FloatArray:
    """Available now minus this attempt's uncommitted debits (earlier compound terms)."""
    free = ctx.books.available(name).copy()
    for h, held in ctx.uncommitted.items():
        free[h] -= held.get(name, 0.0)
    return free


def _tasks(free: FloatArray, per_task: float, extra: float) -> FloatArray:
    with np.errstate(invalid="ignore"):
        fit = (
            np.floor((free - extra) / per_task + _EPS)
            if per_task > 0
            else np.where(free >= extra - _EPS, np.inf, 0)
        )
    return np.asarray(np.fmax(fit, 0.0), dtype=np.float64)  # NaN (lacks it) -> 0


def _limit_room(pp: PreparedPrimary, ctx: AllocContext) -> tuple[FloatArray, Limit | None]:
    """Tasks per host the per-host limits allow this job now, and the tightest limit."""
    wants = pp.wants
    per_host = dict(wants.per_host)
    return ctx.limits.task_headroom(ctx.limit_ids, dict(wants.per_task), per_host, ctx.uncommitted)


def _breakdown(
    pp: PreparedPrimary, ctx: AllocContext, sel: npt.NDArray[np.bool_]
) -> dict[str, int]:
    """Per host the first host-level reason it fails on, counted by reason."""
    ok = ctx.books.ok
    slots = _free(ctx, SLOTS)
    fails = [~ok, ~sel, ~(slots >= 1 - _EPS)]
    res_fail = np.zeros_like(ok)
    wants = pp.wants
    per_host = dict(wants.per_host)
    for name, amount in (
        *wants.per_task,
        *((n, 0.0) for n in per_host if n not in dict(wants.per_task)),
    ):
        res_fail |= _tasks(_free(ctx, name), amount, per_host.get(name, 0.0)) < 1
    fails.append(res_fail)
    room, _ = _limit_room(pp, ctx)
    fails.append(room < 1)
    counts: dict[str, int] = {}
    taken = np.zeros_like(ok)
    for reason, fail in zip(_HOST_REASONS, fails, strict=True):
        mine = fail & ~taken
        if mine.any():
            counts[reason.value] = int(mine.sum())
        taken |= fail
    return counts


def diagnose(pp: PreparedPrimary, ctx: AllocContext, *, breakdown: bool = True) -> PendInfo:
    """The pend reason of a primary none of whose plans succeeded (with, if asked, how
    many hosts fail for each host-level reason)."""
    books = ctx.books
    sel = (
        books.memo.mask(pp.select)
        if pp.select is not None
        else np.ones(books.hosts.n, dtype=np.bool_)
    )
    hosts = _breakdown(pp, ctx, sel) if breakdown else {}
    n = pp.tasks
    what = f"select[{pp.select.expr.text}]" if pp.select is not None else "the requirement"
    eligible = books.ok & sel
    if not eligible.any():
        if (sel & ~books.ok).any():
            k = int((sel & ~books.ok).sum())
            return PendInfo(
                PendReason.HOST_STATUS,
                f"the {k} host(s) matching {what} are closed or unavailable",
                hosts,
            )
        return PendInfo(PendReason.SELECT, f"no host matches {what}", hosts)
    cap = _tasks(_free(ctx, SLOTS)[eligible], 1.0, 0.0)
    if cap.sum() < n:
        return PendInfo(
            PendReason.NOT_ENOUGH_SLOTS,
            f"needs {n} slot(s); the {int(eligible.sum())} eligible host(s) "
            f"have {int(cap.sum())} free",
            hosts,
        )
    per_host = dict(pp.wants.per_host)
    for name, amount in (
        *pp.wants.per_task,
        *((k, 0.0) for k in per_host if k not in dict(pp.wants.per_task)),
    ):
        cap = np.minimum(cap, _tasks(_free(ctx, name)[eligible], amount, per_host.get(name, 0.0)))
        if cap.sum() < n:
            return PendInfo(
                PendReason.NOT_ENOUGH_RESOURCE,
                f"not enough {name}: the eligible hosts can hold {int(cap.sum())} of {n} task(s)",
                hosts,
            )
    room, limit = _limit_room(pp, ctx)
    cap = np.minimum(cap, room[eligible])
    if limit is not None and cap.sum() < n:
        return PendInfo(
            PendReason.LIMIT,
            f"limit {limit.name!r}: the hosts' headroom holds {int(cap.sum())} of {n} task(s)",
            hosts,
        )
    p = pp.primary
    if p.same:
        return PendInfo(
            PendReason.SAME,
            f"no group of hosts sharing same[{':'.join(p.same)}] can hold {n} task(s)",
            hosts,
        )
    if p.span is not None:
        return PendInfo(
            PendReason.SPAN, f"not enough hosts to meet span[{p.span}] for {n} task(s)", hosts
        )
    return PendInfo(
        PendReason.SPAN,
        f"no combination of hosts can hold all {n} task(s) with their resources",
        hosts,
    )


def shared_shortfall(pp: PreparedPrimary, ctx: AllocContext) -> PendInfo | None:
    """The job-level shared-resource check, once per primary (spec Req 4 AC 7)."""
    for name, amount in pp.wants.shared:
        left = ctx.books.shared_available(name) - ctx.shared_uncommitted.get(name, 0.0)
        if left < amount - _EPS:
            return PendInfo(
                PendReason.SHARED_RESOURCE,
                f"shared resource {name}: wants {amount:g}, "
                f"{max(left, 0):g} of {ctx.books.shared_total(name):g} left",
            )
    return None
