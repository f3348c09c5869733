"""A requirement prepared for allocation, once per distinct (text, tasks, catalog).

Preparation binds each primary's select to the catalog and splits its rusage by how it
is reserved (per task, per host, per job, shared), so that nothing is re-derived per
host try. Jobs of a trace share a handful of prepared requirements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from xce.cluster.catalog import Reservation, ResourceCatalog, ResourceKind
from xce.cluster.units import grid_error, to_units
from xce.errors import ResreqError
from xce.resreq import (
    AlterResreq,
    CompiledSelect,
    CompoundResreq,
    PrimaryResreq,
    Resreq,
    compile_select,
    requirement_for_job,
)

__all__ = ["PreparedPrimary", "PreparedRequirement", "Wants", "prepare_requirement"]

Amounts = tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class Wants:
    """A primary's rusage split by reservation method (slots are not in here), in the
    resources' own units, and again in units of each resource's resolution
    (``*_units``, :mod:`xce.cluster.units`: what the books compute with, exactly)."""

    per_task: Amounts = ()
    per_host: Amounts = ()
    per_job: Amounts = ()
    shared: Amounts = ()
    per_task_units: Amounts = ()
    per_host_units: Amounts = ()
    per_job_units: Amounts = ()
    shared_units: Amounts = ()
    scales: tuple[tuple[str, float], ...] = ()
    _buckets: dict[tuple[int, bool], tuple[Amounts, Amounts]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    def for_bucket(self, nslots: int, first: bool) -> Amounts:
        """Host amounts a bucket of ``nslots`` wants, in the resources' own units;
        per-job amounts go on the first. Memoised per instance: it is asked before
        every host try (the prepare fan-out)."""
        return self._bucket(nslots, first)[0]

    def units_for_bucket(self, nslots: int, first: bool) -> Amounts:
        """:meth:`for_bucket` in resolution units (what the books compare with)."""
        return self._bucket(nslots, first)[1]

    def _bucket(self, nslots: int, first: bool) -> tuple[Amounts, Amounts]:
        key = (nslots, first)
        out = self._buckets.get(key)
        if out is None:
            units = [(n, a * nslots) for n, a in self.per_task_units]
            units.extend(self.per_host_units)
            if first:
                units.extend(self.per_job_units)
            scales = dict(self.scales)
            real = tuple((n, a / scales[n]) for n, a in units)  # exact decimals, no drift
            out = self._buckets[key] = (real, tuple(units))
        return out


def wants_of(primary: PrimaryResreq, catalog: ResourceCatalog, text: str | None = None) -> Wants:
    """Split ``primary``'s rusage, in units; an amount finer than its resource's
    resolution (or too large to count exactly) is a :class:`ResreqError`."""
    split: dict[Reservation | None, list[tuple[str, float]]] = {}
    units: dict[Reservation | None, list[tuple[str, float]]] = {}
    scales: dict[str, float] = {}
    methods = primary.rusage.methods
    for name, amount in primary.rusage.amounts.items():
        d = catalog[name]
        why = grid_error(amount, d.scale, name) if d.kind.consumable else None
        if why is not None:
            column = text.find(f"{name}=") if text else -1
            raise ResreqError(
                f"rusage[]: {why}",
                column=column + 1 if column >= 0 else None,
                text=text if column >= 0 else None,
            )
        key = _reserved_as(d.kind, d.reservation, methods.get(name), name, text)
        split.setdefault(key, []).append((name, amount))
        units.setdefault(key, []).append((name, to_units(amount, d.scale)))
        scales[name] = d.scale
    return Wants(
        per_task=tuple(split.get(Reservation.PER_TASK, ())),
        per_host=tuple(split.get(Reservation.PER_HOST, ())),
        per_job=tuple(split.get(Reservation.PER_JOB, ())),
        shared=tuple(split.get(None, ())),
        per_task_units=tuple(units.get(Reservation.PER_TASK, ())),
        per_host_units=tuple(units.get(Reservation.PER_HOST, ())),
        per_job_units=tuple(units.get(Reservation.PER_JOB, ())),
        shared_units=tuple(units.get(None, ())),
        scales=tuple(scales.items()),
    )


_METHODS = {"task": Reservation.PER_TASK, "host": Reservation.PER_HOST, "job": Reservation.PER_JOB}


def _reserved_as(
    kind: ResourceKind,
    declared: Reservation,
    method: str | None,
    name: str,
    text: str | None,
) -> Reservation | None:
    """How an amount is reserved: its written method (``gpu=4/job``) over the
    resource's declared one; a shared resource is per job, always (None)."""
    if kind is ResourceKind.SHARED:
        if method not in (None, "job"):
            column = text.find(f"{name}=") if text else -1
            raise ResreqError(
                f"rusage[]: {name!r} is a shared resource, reserved once per job: "
                f"/{method} does not apply",
                column=column + 1 if column >= 0 else None,
                text=text if column >= 0 else None,
            )
        return None
    return _METHODS[method] if method is not None else declared


@dataclass(frozen=True, slots=True, eq=False)
class PreparedPrimary:
    """One primary, ready for the allocator."""

    primary: PrimaryResreq
    select: CompiledSelect | None
    wants: Wants
    tasks: int = field(init=False)  # to place: plans partition max_tasks (spec Req 2 AC 2)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", self.primary.max_tasks)

    @property
    def cacheable(self) -> bool:
        """False when the select can turn true as resources fall (design §3)."""
        return self.select is None or self.select.monotone


@dataclass(frozen=True, slots=True, eq=False)
class PreparedRequirement:
    """Alternatives (one for SIMPLE/COMPOUND), each a sequence of primaries (terms)."""

    resreq: Resreq
    alternatives: tuple[tuple[PreparedPrimary, ...], ...]
    shared: bool = field(init=False)  # some primary wants a shared amount
    fewest_tasks: int = field(init=False)  # the fewest tasks (so slots) any alternative needs

    def __post_init__(self) -> None:
        wants = any(pp.wants.shared for alt in self.alternatives for pp in alt)
        object.__setattr__(self, "shared", wants)
        fewest = min((sum(p.tasks for p in alt) for alt in self.alternatives), default=0)
        object.__setattr__(self, "fewest_tasks", fewest)

    @property
    def is_alter(self) -> bool:
        return isinstance(self.resreq, AlterResreq)

    @property
    def tasks(self) -> int:
        return sum(p.tasks for p in self.alternatives[0])


def _prepare_primary(p: PrimaryResreq, catalog: ResourceCatalog, text: str) -> PreparedPrimary:
    select = compile_select(p.select, catalog) if p.select is not None else None
    return PreparedPrimary(p, select, wants_of(p, catalog, text))


def _shape(
    r: PrimaryResreq | CompoundResreq, catalog: ResourceCatalog, text: str
) -> tuple[PreparedPrimary, ...]:
    terms = r.terms if isinstance(r, CompoundResreq) else (r,)
    return tuple(_prepare_primary(t, catalog, text) for t in terms)


@lru_cache(maxsize=65536)
def prepare_requirement(
    text: str, catalog: ResourceCatalog, min_tasks: int | None, max_tasks: int | None
) -> PreparedRequirement:
    """Parse, check, bind tasks and prepare; memoised. Raises the resreq input errors."""
    resreq = requirement_for_job(text, catalog, min_tasks, max_tasks)
    shapes = resreq.alternatives if isinstance(resreq, AlterResreq) else (resreq,)
    return PreparedRequirement(resreq, tuple(_shape(s, catalog, text) for s in shapes))
