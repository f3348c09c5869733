"""The host table: one numpy column per resource, so the allocator filters hosts in bulk;
and the resource catalog the hosts imply.

Hosts are addressed by index (their position in the state file, which is also the
default host order). A missing value is NaN in numeric columns, None in string
columns and False in tag columns, so a comparison on a resource a host lacks fails.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from enum import IntEnum
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from xce.cluster.catalog import (
    LOAD_INDICES,
    SLOTS,
    Reservation,
    ResourceCatalog,
    ResourceDef,
    ResourceKind,
)
from xce.cluster.schema import (
    DocPath,
    HostSpec,
    SpecError,
    StateSpec,
    format_path,
    out_of_range,
    quote,
    show,
)
from xce.cluster.units import DEFAULT_RESOLUTION, check_resolution, grid_error, grid_errors

__all__ = ["FloatArray", "HostStatus", "HostTable", "build_catalog", "describe"]

FloatArray = npt.NDArray[np.float64]
ObjectArray = npt.NDArray[np.object_]
BoolArray = npt.NDArray[np.bool_]
Int8Array = npt.NDArray[np.int8]


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BUILTIN = {SLOTS: "set the host's `slots` key", "hname": "it is the host name"}
_BUILTIN_KIND = {SLOTS: ResourceKind.CONSUMABLE, "hname": ResourceKind.STRING}
_KIND_WORDS = {
    ResourceKind.CONSUMABLE: "a consumable host resource",
    ResourceKind.NUMERIC: "a number",
    ResourceKind.STRING: "a string",
    ResourceKind.BOOLEAN: "a boolean",
    ResourceKind.SHARED: "a shared resource",
}


class HostStatus(IntEnum):
    """Whether a host takes new work; only OK hosts are allocated."""

    OK = 0
    CLOSED = 1  # administratively closed: running work stays, nothing new starts
    UNAVAIL = 2  # down or unreachable

    @classmethod
    def parse(cls, text: str) -> HostStatus:
        """The status written ``ok`` / ``closed`` / ``unavail`` in a state file."""
        return cls[text.upper()]


_A = TypeVar("_A", bound="npt.NDArray[Any]")


def _frozen(array: _A) -> _A:
    """A read-only view: readers cannot write, the owner still writes the base."""
    view = array.view()
    view.flags.writeable = False
    return view


class HostTable:
    """Static host data in columns; read-only except through :meth:`set_status`
    and :meth:`set_capacity`, which the core uses when the cluster changes.

    ``capacity`` has a column for every consumable of the catalog (``slots``
    included), ``numeric``/``strings``/``tags`` one per numeric/string/boolean
    resource; ``strings["hname"]`` is the host name. ``units`` is ``capacity`` counted
    in units of each resource's resolution (``scales`` = 1 / resolution): what the
    books compute with (:mod:`xce.cluster.units`).
    """

    __slots__ = (
        "_capacity",
        "_status",
        "_units",
        "capacity",
        "index",
        "n",
        "names",
        "numeric",
        "scales",
        "status",
        "strings",
        "tags",
        "units",
        "version",
    )

    def __init__(
        self,
        names: Sequence[str],
        status: Int8Array,
        capacity: Mapping[str, FloatArray],
        numeric: Mapping[str, FloatArray],
        strings: Mapping[str, ObjectArray],
        tags: Mapping[str, BoolArray],
        scales: Mapping[str, float] | None = None,
    ) -> None:
        """``scales``: 1 / resolution per consumable (default: the catalog default);
        capacities must be on their grid (:meth:`from_specs` checks it)."""
        self.names: list[str] = list(names)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.n = len(self.names)
        self._status = np.array(status, dtype=np.int8)
        self.version = 0  # bumped by every in-place change (status, capacity)
        self._capacity = {k: np.array(v, dtype=np.float64) for k, v in capacity.items()}
        self.status: Int8Array = _frozen(self._status)
        self.capacity: Mapping[str, FloatArray] = MappingProxyType(
            {k: _frozen(v) for k, v in self._capacity.items()}
        )
        given = dict(scales or {})
        self.scales: Mapping[str, float] = MappingProxyType(
            {k: 1.0 if k == SLOTS else given.get(k, 1 / DEFAULT_RESOLUTION) for k in capacity}
        )
        self._units = {k: np.round(v * self.scales[k]) for k, v in self._capacity.items()}
        self.units: Mapping[str, FloatArray] = MappingProxyType(
            {k: _frozen(v) for k, v in self._units.items()}
        )
        self.numeric: Mapping[str, FloatArray] = _NumericColumns(
            {k: _frozen(np.asarray(v, dtype=np.float64)) for k, v in numeric.items()}, self.n
        )
        self.strings: Mapping[str, ObjectArray] = MappingProxyType(
            {k: _frozen(np.asarray(v, dtype=object)) for k, v in strings.items()}
        )
        self.tags: Mapping[str, BoolArray] = MappingProxyType(
            {k: _frozen(np.asarray(v, dtype=np.bool_)) for k, v in tags.items()}
        )

    @classmethod
    def from_specs(cls, hosts: Sequence[HostSpec], catalog: ResourceCatalog) -> HostTable:
        """Columns for every host resource of ``catalog``, filled from decoded hosts."""
        n = len(hosts)
        capacity: dict[str, FloatArray] = {}
        for name in catalog.names(ResourceKind.CONSUMABLE):
            capacity[name] = np.full(n, np.nan)
        numeric = {name: np.full(n, np.nan) for name in catalog.names(ResourceKind.NUMERIC)}
        strings = {
            name: np.full(n, None, dtype=object) for name in catalog.names(ResourceKind.STRING)
        }
        tags = {name: np.zeros(n, dtype=np.bool_) for name in catalog.names(ResourceKind.BOOLEAN)}
        for i, host in enumerate(hosts):
            try:
                capacity[SLOTS][i] = host.slots
                strings["hname"][i] = host.name
                for key, amount in host.resources.items():
                    capacity[key][i] = amount
                for key, value in host.attributes.items():
                    _put_attribute(i, key, value, numeric, strings, tags)
            except OverflowError:  # decoding refuses such numbers; a spec built in Python
                raise _number_error(host, i) from None
        for column in numeric.values():
            if np.isinf(column).any():
                i = int(np.flatnonzero(np.isinf(column))[0])
                raise _number_error(hosts[i], i)
        for name, column in capacity.items():
            _, bad = grid_errors(column, catalog.scales[name])
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                why = grid_error(float(column[i]), catalog.scales[name], name)
                raise SpecError(("hosts", i, "resources", name), str(why))
        status = np.array([HostStatus.parse(h.status) for h in hosts], dtype=np.int8)
        names = [h.name for h in hosts]
        return cls(names, status, capacity, numeric, strings, tags, catalog.scales)

    def appended(
        self,
        name: str,
        slots: int,
        resources: Mapping[str, float],
        attributes: Mapping[str, str | bool | float],
        status: HostStatus,
    ) -> HostTable:
        """A new table with one more host at the end (names must fit the columns)."""

        def grow(
            columns: Mapping[str, npt.NDArray[Any]], fill: Any, values: Mapping[str, Any]
        ) -> dict[str, Any]:
            return {k: np.append(np.asarray(v), values.get(k, fill)) for k, v in columns.items()}

        capacity = grow(self._capacity, np.nan, {**resources, SLOTS: slots})
        numeric = grow(self.numeric, np.nan, attributes)
        strings = {
            k: np.append(
                np.asarray(v), np.array([name if k == "hname" else attributes.get(k)], dtype=object)
            )
            for k, v in self.strings.items()
        }
        tags = grow(self.tags, False, attributes)
        status_col = np.append(self._status, np.int8(status))
        names = [*self.names, name]
        return HostTable(names, status_col, capacity, numeric, strings, tags, self.scales)

    def set_status(self, i: int, status: HostStatus) -> None:
        """Open, close or mark host ``i`` unavailable."""
        self._status[i] = HostStatus(status)
        self.version += 1

    def set_capacity(self, i: int, name: str, value: float) -> None:
        """Change host ``i``'s capacity of consumable ``name`` (NaN: the host lacks it)."""
        if name not in self._capacity:
            raise KeyError(f"{name!r} is not a consumable host resource")
        if value < 0:
            raise ValueError(f"capacity of {name!r} must be >= 0, got {value}")
        why = grid_error(value, self.scales[name], name) if not math.isnan(value) else None
        if why is not None:
            raise ValueError(why)
        self._capacity[name][i] = value
        self._units[name][i] = np.round(value * self.scales[name])
        self.version += 1

    def ok(self) -> BoolArray:
        """Mask of hosts that take new work."""
        return np.asarray(self._status == HostStatus.OK)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"HostTable(n={self.n}, capacity={list(self.capacity)})"


class _NumericColumns(Mapping[str, FloatArray]):
    """The static number columns, and a load index the hosts do not give
    (:data:`~xce.cluster.catalog.LOAD_INDICES`) read as its default on every host.

    Iteration lists only the columns the hosts gave, so what is written back (a
    snapshot) holds no invented values; reading a default column is what a select,
    ``order[]`` or ``same[]`` on ``r15s`` of a state without load indices sees."""

    __slots__ = ("_columns", "_defaults", "_n")

    def __init__(self, columns: dict[str, FloatArray], n: int) -> None:
        self._columns = columns
        self._defaults: dict[str, FloatArray] = {}
        self._n = n

    def __getitem__(self, name: str) -> FloatArray:
        column = self._columns.get(name)
        if column is not None:
            return column
        if name not in LOAD_INDICES:
            raise KeyError(name)
        default = self._defaults.get(name)
        if default is None:
            default = self._defaults[name] = _frozen(np.full(self._n, LOAD_INDICES[name]))
        return default

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


def _number_error(host: HostSpec, i: int) -> SpecError:
    """The error of the first number of host ``i`` out of range (a state file's numbers
    are finite and at most MAX_NUMBER in magnitude)."""
    numbers: list[tuple[DocPath, Any]] = [(("hosts", i, "slots"), host.slots)]
    numbers += [(("hosts", i, "resources", k), v) for k, v in host.resources.items()]
    numbers += [(("hosts", i, "attributes", k), v) for k, v in host.attributes.items()]
    for path, value in numbers:
        why = out_of_range(value)
        if why is not None:
            return SpecError(path, why, shown=show(value))
    return SpecError(("hosts", i), "a number of this host is out of range")


def _put_attribute(
    i: int,
    key: str,
    value: str | bool | float,
    numeric: dict[str, FloatArray],
    strings: dict[str, ObjectArray],
    tags: dict[str, BoolArray],
) -> None:
    """Store one attribute in the column its (already checked) kind selects."""
    if isinstance(value, bool):
        tags[key][i] = value
    elif isinstance(value, str):
        strings[key][i] = value
    else:
        numeric[key][i] = value


# -- the catalog the hosts imply ------------------------------------------------------


def describe(kind: ResourceKind) -> str:
    """A resource kind as messages name it: "a consumable host resource", "a string"."""
    return _KIND_WORDS[kind]


def build_catalog(spec: StateSpec) -> ResourceCatalog:
    """Declared resources first, then every other name in order of first use, its kind
    inferred from where it appears; a name used as two kinds is an error."""
    declared: dict[str, ResourceDef] = {}
    for name, decl in spec.resources.items():
        declared[name] = _declared(name, decl.kind, decl.reservation, decl.resolution)
    seen: dict[str, tuple[ResourceKind, DocPath]] = {}
    for path, name, kind in _uses(spec):
        first = seen.get(name)
        if first is None or first[0] is not kind:  # checking each name once is enough
            _check_use(path, name, kind, declared, seen)
            seen[name] = (kind, path)
    inferred = [_default_def(n, k) for n, (k, _) in seen.items() if n not in declared]
    try:
        return ResourceCatalog([*declared.values(), *inferred])
    except ValueError as err:  # a built-in redeclared as another kind
        raise SpecError(("resources",), str(err)) from err


def _declared(
    name: str, kind_text: str, reservation: str | None, resolution: float | None
) -> ResourceDef:
    _check_name(("resources", name), name, builtin_ok=True)
    kind = ResourceKind(kind_text)
    if name in _BUILTIN_KIND and kind is not _BUILTIN_KIND[name]:
        built_in = _BUILTIN_KIND[name].value
        raise SpecError(("resources", name, "kind"), f"{quote(name)} is built in as {built_in}")
    if resolution is not None:
        where: DocPath = ("resources", name, "resolution")
        if not kind.consumable:
            raise SpecError(where, "only consumable resources have a resolution")
        if name == SLOTS:
            raise SpecError(where, "slots are counted whole: their resolution is 1")
        why = check_resolution(resolution)
        if why is not None:
            raise SpecError(where, why)
    if reservation is None:
        d = _default_def(name, kind)
        return d if resolution is None else replace(d, resolution=resolution)
    if kind is ResourceKind.SHARED and reservation != "per_job":
        raise SpecError(("resources", name, "reservation"), "shared resources are reserved per job")
    if kind not in (ResourceKind.CONSUMABLE, ResourceKind.SHARED):
        raise SpecError(
            ("resources", name, "reservation"), "only consumable resources have a reservation"
        )
    d = ResourceDef(name, kind, Reservation(reservation))
    return d if resolution is None else replace(d, resolution=resolution)


def _default_def(name: str, kind: ResourceKind) -> ResourceDef:
    shared = kind is ResourceKind.SHARED
    return ResourceDef(name, kind, Reservation.PER_JOB if shared else Reservation.PER_TASK)


def _uses(spec: StateSpec) -> Iterator[tuple[DocPath, str, ResourceKind]]:
    """Every resource name the hosts and ``shared`` use, with the kind its place implies."""
    for i, host in enumerate(spec.hosts):
        for name in host.resources:
            yield ("hosts", i, "resources", name), name, ResourceKind.CONSUMABLE
        for name, value in host.attributes.items():
            yield ("hosts", i, "attributes", name), name, _attribute_kind(value)
    for name in spec.shared:
        yield ("shared", name), name, ResourceKind.SHARED


def _attribute_kind(value: str | bool | float) -> ResourceKind:
    if isinstance(value, bool):
        return ResourceKind.BOOLEAN
    if isinstance(value, str):
        return ResourceKind.STRING
    return ResourceKind.NUMERIC


def _check_use(
    path: DocPath,
    name: str,
    kind: ResourceKind,
    declared: Mapping[str, ResourceDef],
    seen: Mapping[str, tuple[ResourceKind, DocPath]],
) -> None:
    _check_name(path, name, builtin_ok=False)
    if name in declared and declared[name].kind is not kind:
        was, decl_at = declared[name].kind.value, format_path(("resources", name))
        raise SpecError(path, f"{quote(name)} is declared {was} at {decl_at}, not {describe(kind)}")
    if name in seen and seen[name][0] is not kind:
        first, where = seen[name]
        was = f"{describe(first)} at {format_path(where)}"
        raise SpecError(path, f"{quote(name)} is {was}, but {describe(kind)} here")


def _check_name(path: DocPath, name: str, *, builtin_ok: bool) -> None:
    if not _WORD.fullmatch(name):
        raise SpecError(
            path, f"resource name {quote(name)} is not a word (letters, digits, _)", at_key=True
        )
    if name == "any":
        raise SpecError(path, '"any" is reserved: it matches every value', at_key=True)
    if name in _BUILTIN and not builtin_ok:
        raise SpecError(path, f"{quote(name)} is built in: {_BUILTIN[name]}", at_key=True)
