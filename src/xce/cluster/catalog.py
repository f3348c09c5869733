"""The resource catalog: every resource name a cluster knows, and what kind it is.

Requirements are validated against it at submission (unknown names, rusage on a
non-consumable), and the select evaluator uses it to interpret a bare word.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum

from xce.cluster.units import DEFAULT_RESOLUTION

__all__ = [
    "LOAD_INDICES",
    "LOWER_IS_BETTER",
    "SLOTS",
    "Reservation",
    "ResourceCatalog",
    "ResourceDef",
    "ResourceKind",
]

SLOTS = "slots"
"""The built-in consumable: job slots (tasks) a host can run."""

LOAD_INDICES: Mapping[str, float] = {
    "r15s": 0.0,
    "r1m": 0.0,
    "r15m": 0.0,
    "ut": 0.0,
    "pg": 0.0,
    "io": 0.0,
    "ls": 0.0,
    "it": 0.0,
}
"""LSF's built-in load indices that every cluster knows, with the value a host reads
when the state gives none (an idle host: no load, no paging, no logins, idle 0 minutes),
so that LSF's default ``order[r15s:pg]`` is valid everywhere and, with no load known,
keeps host order. A state that gives one (a host attribute, as ``xce import lsf`` writes
from lsload) or declares the name makes it an ordinary resource of its kind. LSF's other
three indices, ``mem``, ``swp`` and ``tmp`` (free memory, swap, /tmp), are xce
consumables where the cluster has them: what is free now is what a select reads."""

LOWER_IS_BETTER = frozenset({"r15s", "r1m", "r15m", "ut", "pg", "io", "ls"})
"""Load indices that grow with load: LSF's ``order[r15s]`` puts the *least* loaded hosts
first (``-r15s`` the most), where for other keys more comes first."""


class ResourceKind(Enum):
    """What a resource name denotes."""

    CONSUMABLE = "consumable"  # per-host numeric amount that jobs hold (slots, mem)
    NUMERIC = "numeric"  # static per-host number (cpuf, ncores)
    STRING = "string"  # per-host string (type, model, hname)
    BOOLEAN = "boolean"  # per-host tag (fast, gpu)
    SHARED = "shared"  # cluster-wide consumable (licenses)

    @property
    def consumable(self) -> bool:
        """True for amounts that rusage may reserve."""
        return self in (ResourceKind.CONSUMABLE, ResourceKind.SHARED)


class Reservation(Enum):
    """How an rusage amount of a host consumable is multiplied for a bucket."""

    PER_TASK = "per_task"  # bucket of n slots wants n x amount (the default)
    PER_HOST = "per_host"  # each host claimed wants amount once
    PER_JOB = "per_job"  # the job wants amount once in all, on its first host


@dataclass(frozen=True, slots=True)
class ResourceDef:
    """One resource of the catalog. A consumable's amounts are counted exactly in units
    of its ``resolution`` (a power of ten; ``slots`` count whole slots): see
    :mod:`xce.cluster.units`. ``scale`` is 1 / resolution."""

    name: str
    kind: ResourceKind
    reservation: Reservation = Reservation.PER_TASK
    resolution: float = DEFAULT_RESOLUTION
    scale: float = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        resolution = 1.0 if self.name == SLOTS else self.resolution
        object.__setattr__(self, "resolution", resolution)
        object.__setattr__(self, "scale", float(round(1 / resolution)))


class ResourceCatalog(Mapping[str, ResourceDef]):
    """An immutable name -> :class:`ResourceDef` map; ``slots`` is always present.

    Names ``hname`` (the host name) and ``any`` are reserved: ``hname`` is a string
    resource of every host, ``any`` a value matching every string.
    """

    __slots__ = ("_defs", "_hash", "scales")

    def __init__(self, defs: Iterable[ResourceDef] = ()) -> None:
        table: dict[str, ResourceDef] = {
            SLOTS: ResourceDef(SLOTS, ResourceKind.CONSUMABLE),
            "hname": ResourceDef("hname", ResourceKind.STRING),
        }
        for d in defs:
            if d.name in (SLOTS, "hname"):
                if d.kind is not table[d.name].kind:
                    raise ValueError(
                        f"resource {d.name!r} is built in as {table[d.name].kind.value}"
                    )
                table[d.name] = d
                continue
            if d.name in table:
                raise ValueError(f"resource {d.name!r} declared twice")
            table[d.name] = d
        self._defs = table
        self._hash = hash(tuple(table.values()))
        self.scales: Mapping[str, float] = {
            n: d.scale for n, d in table.items() if d.kind.consumable
        }  # 1 / resolution of every consumable, host or shared

    def __getitem__(self, name: str) -> ResourceDef:
        return self._defs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._defs)

    def __len__(self) -> int:
        return len(self._defs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResourceCatalog):
            return self._defs == other._defs
        return NotImplemented

    def __hash__(self) -> int:  # hashable, so compiled selects can be memoised per catalog
        return self._hash

    def kind(self, name: str) -> ResourceKind | None:
        """The kind of ``name``, or None when the cluster has no such resource. A load
        index (:data:`LOAD_INDICES`) the cluster does not define is numeric: its host
        columns read the default (:class:`xce.cluster.hosts.HostTable`)."""
        d = self._defs.get(name)
        if d is not None:
            return d.kind
        return ResourceKind.NUMERIC if name in LOAD_INDICES else None

    def lower_is_better(self, name: str) -> bool:
        """Whether ``order[name]`` puts hosts with less of ``name`` first: a load index
        that grows with load (:data:`LOWER_IS_BETTER`), unless the cluster defines the
        name as something else."""
        return name in LOWER_IS_BETTER and self.kind(name) is ResourceKind.NUMERIC

    def names(self, kind: ResourceKind) -> list[str]:
        """Names of every resource of one kind, in declaration order."""
        return [n for n, d in self._defs.items() if d.kind is kind]

    def __repr__(self) -> str:
        return f"ResourceCatalog({list(self._defs.values())!r})"
