"""Submission-time checks: a requirement against a cluster's catalog and a job's tasks.

Errors are :class:`~xce.errors.ResreqError` naming the problem and, where it is a word of
the text, its column. :func:`requirement_for_job` is what ingest calls: parse, check,
bind task counts, memoised.
"""

from __future__ import annotations

import re
from functools import lru_cache

from xce.cluster.catalog import SLOTS, ResourceCatalog, ResourceKind
from xce.cluster.units import grid_error
from xce.errors import ResreqError, clip
from xce.resreq.evaluate import compile_select
from xce.resreq.model import AlterResreq, CompoundResreq, PrimaryResreq, Resreq
from xce.resreq.parser import parse

__all__ = ["bind_tasks", "check", "requirement_for_job"]

_ORDERABLE = (
    ResourceKind.CONSUMABLE,
    ResourceKind.NUMERIC,
    ResourceKind.BOOLEAN,
    ResourceKind.SHARED,
)
_ATTRIBUTES = (ResourceKind.STRING, ResourceKind.NUMERIC, ResourceKind.BOOLEAN)


def _fail(
    message: str, text: str | None, word: str | None, section: str | None = None
) -> ResreqError:
    column = _column_of(text, word, section) if text is not None and word else None
    return ResreqError(message, column=column, text=text if column is not None else None)


_QUOTED = r"'[^'\n]*'|\"[^\"\n]*\""


def _column_of(text: str, word: str, section: str | None) -> int | None:
    """1-based column of ``word`` used as a name in ``text`` (inside ``section[...]``).

    Quoted strings are skipped, and an occurrence used as a compared value
    (``type==word``) only counts when there is no other.
    """
    if section is None:
        spans = [(0, len(text))]
    else:
        spans = []
        for m in re.finditer(rf"\b{section}\s*\[", text):
            close = text.find("]", m.end())
            spans.append((m.end(), close if close >= 0 else len(text)))
    pattern = re.compile(rf"{_QUOTED}|(?<![\w.]){re.escape(word)}(?![\w.])")
    found = [
        m.start()
        for lo, hi in spans
        for m in pattern.finditer(text, lo, hi)
        if m.group(0)[0] not in "'\""
    ]
    as_name = [at for at in found if not re.search(r"[=!]=?\s*$", text[:at])]
    best = as_name or found
    return best[0] + 1 if best else None


def _is_capacity(name: str, catalog: ResourceCatalog) -> bool:
    """``max<name>`` of a consumable or shared resource: its capacity (as in select)."""
    return (
        name not in catalog
        and name.startswith("max")
        and catalog.kind(name[3:]) in (ResourceKind.CONSUMABLE, ResourceKind.SHARED)
    )


def _check_primary(p: PrimaryResreq, catalog: ResourceCatalog, text: str | None) -> None:
    if p.select is not None:
        try:
            compile_select(p.select, catalog)
        except ResreqError as err:
            raise _fail(err.message, text, err.token, None) from None
    for key in p.order:
        if catalog.kind(key.name) not in _ORDERABLE and not _is_capacity(key.name, catalog):
            what = "unknown resource" if key.name not in catalog else "a string resource"
            raise _fail(
                f"order[]: {clip(key.name)!r} is {what}; order needs a number",
                text,
                key.name,
                "order",
            )
    for name, amount in p.rusage.amounts.items():
        kind = catalog.kind(name)
        if name == SLOTS:
            raise _fail(
                "rusage[]: slots are requested by the job's task count (tasks / -n), not by rusage",
                text,
                name,
                "rusage",
            )
        if kind is None:
            raise _fail(f"rusage[]: unknown resource {clip(name)!r}", text, name, "rusage")
        if not kind.consumable:
            raise _fail(
                f"rusage[]: {clip(name)!r} is not consumable (it is a {kind.value} resource)",
                text,
                name,
                "rusage",
            )
        method = p.rusage.methods.get(name)
        if kind is ResourceKind.SHARED and method not in (None, "job"):
            raise _fail(
                f"rusage[]: {clip(name)!r} is a shared resource, reserved once per job: "
                f"/{method} does not apply",
                text,
                name,
                "rusage",
            )
        why = grid_error(amount, catalog[name].scale, name)
        if why is not None:  # amounts are counted exactly, in units of the resolution
            raise _fail(f"rusage[]: {why}", text, name, "rusage")
    for name in p.same:
        kind = catalog.kind(name)
        if kind not in _ATTRIBUTES:
            what = "unknown resource" if kind is None else f"a {kind.value} resource"
            raise _fail(
                f"same[]: {clip(name)!r} is {what}; same needs a host attribute", text, name, "same"
            )


def check(resreq: Resreq, catalog: ResourceCatalog, text: str | None = None) -> None:
    """Raise :class:`ResreqError` unless every name of ``resreq`` fits ``catalog``."""
    for p in resreq.primaries:
        _check_primary(p, catalog, text)


def bind_tasks(
    resreq: Resreq, min_tasks: int | None = None, max_tasks: int | None = None
) -> Resreq:
    """Give each primary its task counts; ``None`` means the job did not say.

    A SIMPLE requirement takes the job's counts (1 when unsaid); a COMPOUND one fixes
    its own total, which a job's explicit counts must admit; in an ALTER, simple
    alternatives take the job's counts (or, unsaid, the compound alternatives' total
    when they agree on one, else 1).
    """
    if (min_tasks is None) != (max_tasks is None):
        raise ResreqError("give both min_tasks and max_tasks, or neither")
    if min_tasks is not None and max_tasks is not None and not 1 <= min_tasks <= max_tasks:
        raise ResreqError(f"task counts must satisfy 1 <= min <= max, got {min_tasks},{max_tasks}")
    if isinstance(resreq, PrimaryResreq):
        return resreq.with_tasks(min_tasks or 1, max_tasks or 1)
    if isinstance(resreq, CompoundResreq):
        _admit(resreq, min_tasks, max_tasks)
        return resreq
    totals = {a.total_tasks for a in resreq.alternatives if isinstance(a, CompoundResreq)}
    for a in resreq.alternatives:
        if isinstance(a, CompoundResreq):
            _admit(a, min_tasks, max_tasks)
    if min_tasks is None and len(totals) == 1:
        min_tasks = max_tasks = next(iter(totals))
    return AlterResreq(
        tuple(
            a if isinstance(a, CompoundResreq) else a.with_tasks(min_tasks or 1, max_tasks or 1)
            for a in resreq.alternatives
        )
    )


def _admit(c: CompoundResreq, min_tasks: int | None, max_tasks: int | None) -> None:
    if min_tasks is None or max_tasks is None:
        return
    if not min_tasks <= c.total_tasks <= max_tasks:
        asked = str(min_tasks) if min_tasks == max_tasks else f"{min_tasks},{max_tasks}"
        raise ResreqError(
            f"the job asks for {asked} tasks but its compound requirement totals {c.total_tasks}"
        )


@lru_cache(maxsize=65536)
def requirement_for_job(
    text: str,
    catalog: ResourceCatalog | None,
    min_tasks: int | None = None,
    max_tasks: int | None = None,
) -> Resreq:
    """Parse, check against ``catalog`` (when given) and bind task counts; memoised.

    Raises :class:`ResreqSyntaxError` or :class:`ResreqError`.
    """
    resreq = parse(text)
    if catalog is not None:
        check(resreq, catalog, text)
    try:
        return bind_tasks(resreq, min_tasks, max_tasks)
    except ResreqError as err:  # a compound's total against the counts: its start
        compound = isinstance(resreq, CompoundResreq) or (
            isinstance(resreq, AlterResreq)
            and any(isinstance(a, CompoundResreq) for a in resreq.alternatives)
        )
        if err.column is not None or not compound:
            raise
        column = len(text) - len(text.lstrip()) + 1
        raise ResreqError(err.message, column=column, text=text) from None
