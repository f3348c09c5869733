"""Why a primary could not be placed: the pend reason, by the precedence of
docs/allocation.md ("Pend reasons").

Runs only when every plan failed (or an exact shortcut proved they would), over all hosts
at once, in resolution units (exact). Per eligible host it computes how many tasks the
free slots allow, then also the per-task/per-host resources, then also the per-host
limits; the job-level reason is the first of these stages at which the job's tasks no
longer fit — first in total, then in the shape its span asks for (one host, ptile
buckets) — and then ``same[]``. The per-host breakdown gives every host exactly one
reason: why it cannot take the job's real bucket (all N tasks for ``span[hosts=1]``, p
for ``ptile=p``, else one task), or, for a host that could, the job's own reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from xce.alloc.context import AllocContext
from xce.alloc.outcome import PendInfo, PendReason
from xce.alloc.request import PreparedPrimary
from xce.cluster.catalog import SLOTS
from xce.resreq import Span

__all__ = ["diagnose", "shared_shortfall"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
_EXAMPLES = 3  # host names shown per reason


def _free(ctx: AllocContext, name: str) -> FloatArray:
    """Available now minus this attempt's uncommitted debits (earlier compound terms),
    in units (read-only: the books' own array when nothing is held)."""
    uncommitted = ctx.uncommitted
    if not uncommitted:
        return ctx.books.units(name)
    free = ctx.books.units(name).copy()
    for h, held in uncommitted.items():
        free[h] -= held.get(name, 0.0)
    return free


def _tasks(free: FloatArray, per_task: float, fixed: float) -> FloatArray:
    """Tasks that fit in ``free`` at ``per_task`` each after ``fixed`` (units)."""
    with np.errstate(invalid="ignore"):
        if per_task == 1 and not fixed:
            fit = free  # slots: whole units already
        elif per_task > 0:
            fit = np.floor_divide(free - fixed if fixed else free, per_task)
        else:
            fit = np.where(free >= fixed, np.inf, 0)
    return np.fmax(fit, 0.0)  # NaN (lacks it) -> 0


class _Stages:
    """Per host, the tasks each stage allows: slots; and resources; and limits."""

    def __init__(self, pp: PreparedPrimary, ctx: AllocContext) -> None:
        wants = pp.wants
        self.slots = _tasks(_free(ctx, SLOTS), 1.0, 0.0)
        per_task, per_host = dict(wants.per_task_units), dict(wants.per_host_units)
        self.res = self.slots.copy()
        self.by_resource: list[tuple[str, FloatArray]] = []  # cumulative, in order
        for name in (*per_task, *(n for n in per_host if n not in per_task)):
            self.res = np.minimum(
                self.res, _tasks(_free(ctx, name), per_task.get(name, 0.0), per_host.get(name, 0.0))
            )
            self.by_resource.append((name, self.res))
        self.first = self.res  # with the per-job amounts too (the job's first host)
        for name, amount in wants.per_job_units:
            fixed = per_host.get(name, 0.0) + amount
            self.first = np.minimum(
                self.first, _tasks(_free(ctx, name), per_task.get(name, 0.0), fixed)
            )
        room, self.limit = ctx.limits.task_headroom(
            ctx.limit_ids, per_task, per_host, ctx.uncommitted
        )
        self.lim = np.minimum(self.res, room)


def _fits(cap: FloatArray, n: int, span: Span | None) -> bool:
    """Whether hosts able to take ``cap`` tasks each can hold ``n`` in the span's shape."""
    if span is not None and span.ptile is not None:
        full, rest = divmod(n, span.ptile)
        big = int(np.count_nonzero(cap >= span.ptile))
        return big >= full and (rest == 0 or int(np.count_nonzero(cap >= rest)) >= full + 1)
    if span is not None and span.hosts == 1:
        return bool(len(cap)) and float(cap.max()) >= n
    return float(cap.sum()) >= n


def _bucket(pp: PreparedPrimary) -> int:
    """The tasks one host must take for the job's shape (what a host is judged on)."""
    span, n = pp.primary.span, min(pp.tasks, 1 << 62)  # more than any host holds
    if span is not None and span.ptile is not None:
        return min(span.ptile, n)
    if span is not None and span.hosts == 1:
        return n
    return 1


def diagnose(
    pp: PreparedPrimary,
    ctx: AllocContext,
    *,
    breakdown: bool = True,
    groups: Sequence[BoolArray | None] = (None,),
) -> PendInfo:
    """The pend reason of a primary none of whose plans succeeded (with, if asked, the
    reason of every host and a few example host names per reason). ``groups`` are the
    ``same[]`` host groups the plans were tried on."""
    books = ctx.books
    n_hosts = books.hosts.n
    sel = books.memo.mask(pp.select) if pp.select is not None else np.ones(n_hosts, np.bool_)
    eligible = books.ok & sel
    if books.outside is not None:  # hosts advance reservations keep from the job
        eligible &= ~books.outside
    stages = _Stages(pp, ctx)
    reason, message, limits = _reason(pp, ctx, stages, eligible, sel, groups)
    if not breakdown:
        return PendInfo(reason, message, limits=limits)
    hosts, examples = _breakdown(pp, ctx, stages, sel, reason)
    return PendInfo(reason, message, hosts, examples, limits)


def _reason(
    pp: PreparedPrimary,
    ctx: AllocContext,
    st: _Stages,
    eligible: BoolArray,
    sel: BoolArray,
    groups: Sequence[BoolArray | None],
) -> tuple[PendReason, str, tuple[str, ...]]:
    books, n = ctx.books, pp.tasks
    span = pp.primary.span
    what = f"select[{pp.select.expr.text}]" if pp.select is not None else "the requirement"
    if not eligible.any():
        kept = sel & books.ok & books.outside if books.outside is not None else None
        if kept is not None and kept.any():
            k = int(kept.sum())
            return (
                PendReason.RESERVED,
                f"the {k} host(s) matching {what} are closed to it by advance reservations "
                "(outside the one it names, or in one it may not use over its run)",
                (),
            )
        off = sel & ~books.ok
        if off.any():
            k = int(off.sum())
            return (
                PendReason.HOST_STATUS,
                f"the {k} host(s) matching {what} are closed or unavailable",
                (),
            )
        return PendReason.SELECT, f"no host matches {what}", ()
    k = int(eligible.sum())
    slots, res, lim = st.slots[eligible], st.res[eligible], st.lim[eligible]
    if float(slots.sum()) < n:  # Python's comparison: exact for any task count
        free = _count(slots.sum())
        return (
            PendReason.NOT_ENOUGH_SLOTS,
            f"needs {n} slot(s); the {k} eligible host(s) have {free} free",
            (),
        )
    for name, cap in st.by_resource:
        if float(cap[eligible].sum()) < n:
            held = _count(cap[eligible].sum())
            return (
                PendReason.NOT_ENOUGH_RESOURCE,
                f"not enough {name}: the eligible hosts can hold {held} of {n} task(s)",
                (),
            )
    first = st.first[eligible]
    if len(pp.wants.per_job_units) and not (first >= 1).any():
        names = ", ".join(name for name, _ in pp.wants.per_job_units)
        return (
            PendReason.NOT_ENOUGH_RESOURCE,
            f"not enough {names}: no eligible host can hold the job's per-job amount with a task",
            (),
        )
    if st.limit is not None and float(lim.sum()) < n:
        return PendReason.LIMIT, _limit_message(st, lim, n), (st.limit.name,)
    if not _fits(slots, n, span):
        return (
            PendReason.SPAN,
            f"not enough hosts with free slots to meet span[{span}] for {n} task(s)",
            (),
        )
    if not _fits(res, n, span):
        return (
            PendReason.NOT_ENOUGH_RESOURCE,
            f"not enough resources on the hosts to meet span[{span}] for {n} task(s)",
            (),
        )
    if st.limit is not None and not _fits(lim, n, span):
        assert span is not None  # without a span, fitting is the total checked above
        return (
            PendReason.LIMIT,
            _limit_message(st, lim, n, _shape_shortfall(lim, n, span)),
            (st.limit.name,),
        )
    p = pp.primary
    if p.same and not any(
        _fits(st.lim[eligible & g] if g is not None else lim, n, span) for g in groups
    ):
        return (
            PendReason.SAME,
            f"no group of hosts sharing same[{':'.join(p.same)}] can hold {n} task(s)",
            (),
        )
    if span is not None:
        return PendReason.SPAN, f"not enough hosts to meet span[{span}] for {n} task(s)", ()
    return (
        PendReason.SPAN,
        f"no combination of hosts can hold all {n} task(s) with their resources",
        (),
    )


def _count(x: float) -> str:
    return str(int(x)) if np.isfinite(x) else "unlimited"


def _limit_message(st: _Stages, lim: FloatArray, n: int, shape: str | None = None) -> str:
    """The limit's per-host caps and what its headroom falls short of: the job's tasks
    in all, or (``shape``) the hosts its span asks for, though the total would do."""
    assert st.limit is not None
    caps = [
        f"{v:g} {k}"
        for k, v in (("slots", st.limit.slots), ("jobs", st.limit.jobs))
        if v is not None
    ] + [f"{v:g} {k}" for k, v in st.limit.resources.items()]
    head = f"limit {st.limit.name!r} (per host: {', '.join(caps)}): "
    if shape is None:
        return (
            head
            + f"the hosts' headroom holds {_count(lim.sum())} of the {n} task(s) wanted, in all"
        )
    return head + shape


def _shape_shortfall(cap: FloatArray, n: int, span: Span) -> str:
    """Why hosts able to take ``cap`` tasks each cannot hold ``n`` in the span's shape,
    said as the hosts the span needs against the hosts there are (the total is enough:
    saying "holds 9 of the 8 wanted" read as a contradiction, issue 26)."""
    total = f"the headroom holds {_count(cap.sum())} task(s) in all, not in that shape"
    if span.ptile is not None:
        p = span.ptile
        full, rest = divmod(n, p)
        big = int(np.count_nonzero(cap >= p))
        need = f"{full} host(s) with headroom for {p} task(s)"
        if rest:
            need += f" and one more for {rest}"
        if big >= full:  # the full hosts are there; no other host has room for the rest
            have = f"{big} host(s) have room for {p} and no other for {rest}"
        else:
            have = f"only {big} host(s) have room for {p}"
        return f"{n} task(s) at span[{span}] need {need}; {have} ({total})"
    most = _count(cap.max()) if len(cap) else "0"
    return f"span[{span}] needs room for all {n} task(s) on one host; the most is {most} ({total})"


def _breakdown(
    pp: PreparedPrimary, ctx: AllocContext, st: _Stages, sel: BoolArray, reason: PendReason
) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """Every host's reason (the first it fails the job's real bucket on; a host that
    could take it is counted under the job's reason), counted, with example names."""
    books = ctx.books
    b = _bucket(pp)
    fails = [(PendReason.HOST_STATUS, ~books.ok)]
    if books.outside is not None:
        fails.append((PendReason.RESERVED, books.outside))
    fails += [
        (PendReason.SELECT, ~sel),
        (PendReason.NOT_ENOUGH_SLOTS, st.slots < b),
        (PendReason.NOT_ENOUGH_RESOURCE, st.res < b),
        (PendReason.LIMIT, st.lim < b),
    ]
    counts: dict[str, int] = {}
    examples: dict[str, tuple[str, ...]] = {}
    names = books.hosts.names
    taken = np.zeros(books.hosts.n, dtype=np.bool_)
    for code, fail in fails:
        _count_into(counts, examples, code, fail & ~taken, names)
        taken |= fail
    _count_into(counts, examples, reason, ~taken, names)
    return counts, examples


def _count_into(
    counts: dict[str, int],
    examples: dict[str, tuple[str, ...]],
    code: PendReason,
    mine: BoolArray,
    names: list[str],
) -> None:
    idx = np.flatnonzero(mine)
    if len(idx):
        counts[code.value] = counts.get(code.value, 0) + len(idx)
        shown = examples.get(code.value, ())
        more = tuple(names[int(h)] for h in idx[: _EXAMPLES - len(shown)])
        examples[code.value] = shown + more


def shared_shortfall(pp: PreparedPrimary, ctx: AllocContext) -> PendInfo | None:
    """The job-level shared-resource check, once per primary (spec Req 4 AC 7)."""
    for name, amount in pp.wants.shared_units:
        left = ctx.books.shared_units(name) - ctx.shared_uncommitted.get(name, 0.0)
        if left < amount:
            scale = ctx.scales[name]
            return PendInfo(
                PendReason.SHARED_RESOURCE,
                f"shared resource {name}: wants {amount / scale:g}, "
                f"{max(left, 0) / scale:g} of {ctx.books.shared_total(name):g} left",
            )
    return None
