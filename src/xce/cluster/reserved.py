"""The hosts of an advance reservation given by a select expression, resolved at load.

A reservation's hosts must not change during a session, so its select may read only
what cannot change there: string attributes, tags, static numbers and the host name.
Consumables and shared resources (amounts available, and ``max<name>`` capacities,
which capacity events change) are refused where they are written.
"""

from __future__ import annotations

import re

import numpy as np

from xce.cluster.catalog import ResourceCatalog, ResourceKind
from xce.cluster.hosts import FloatArray, HostTable
from xce.cluster.schema import DocPath, SpecError, quote
from xce.errors import InputError

__all__ = ["select_hosts"]

_WRAP = "select["
"""The expression is checked as the select section of a requirement; the parser's columns
into the wrapped text are moved back by its length."""

_CHANGING = (ResourceKind.CONSUMABLE, ResourceKind.SHARED)


def select_hosts(
    text: str, at: DocPath, hosts: HostTable, catalog: ResourceCatalog
) -> tuple[int, ...]:
    """Indices of the hosts where ``text`` holds; a SpecError at ``at`` (its column in
    ``text``) when it does not parse, names what the cluster lacks, reads something that
    can change in a session, or matches no host."""
    from xce.resreq import PrimaryResreq, check, compile_select, parse
    from xce.resreq.expr import Name, walk

    wrapped = f"{_WRAP}{text}]"
    try:
        resreq = parse(wrapped)
        check(resreq, catalog, wrapped)
    except InputError as err:
        column = err.column - len(_WRAP) if err.column is not None else None
        raise _located(at, err.message, text, column) from None
    select = resreq.select if isinstance(resreq, PrimaryResreq) else None
    if select is None or resreq != PrimaryResreq(select=select):
        raise SpecError(at, "expected a select expression only (no sections)", column=1, text=text)
    for node in walk(select):
        if isinstance(node, Name) and (why := _changes(node.name, catalog)) is not None:
            raise _located(at, why, text, _column(text, node.name))
    mask = compile_select(select, catalog).evaluate(_StaticView(hosts))
    chosen = tuple(int(h) for h in np.flatnonzero(mask))
    if not chosen:
        raise SpecError(at, f"select {quote(text)} matches no host")
    return chosen


def _changes(name: str, catalog: ResourceCatalog) -> str | None:
    """Why a select may not read ``name`` (None if it is static)."""
    base = name[3:] if name.startswith("max") and name not in catalog else name
    if catalog.kind(base) not in _CHANGING:
        return None
    what = "capacity" if base != name else "availability"
    return (
        f"a reservation's select reads only static host attributes: {quote(name)} is the "
        f"{what} of {quote(base)}, which can change in a session"
    )


def _column(text: str, word: str) -> int | None:
    m = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text)
    return m.start() + 1 if m is not None else None


def _located(at: DocPath, message: str, text: str, column: int | None) -> SpecError:
    """A SpecError pointing into ``text`` at ``column`` (kept inside it, or just after)."""
    if column is not None:
        column = min(max(column, 1), len(text) + 1)
    return SpecError(at, message, column=column, text=text)


class _StaticView:
    """A host view for selects that read no availability (checked before evaluating)."""

    def __init__(self, hosts: HostTable) -> None:
        self.hosts = hosts

    def available(self, name: str) -> FloatArray:
        raise AssertionError(f"a reservation's select read availability of {name!r}")

    def shared_available(self, name: str) -> float:
        raise AssertionError(f"a reservation's select read shared {name!r}")

    def shared_total(self, name: str) -> float:
        raise AssertionError(f"a reservation's select read shared {name!r}")
