"""A requirement prepared for allocation, once per distinct (text, tasks, catalog).

Preparation binds each primary's select to the catalog and splits its rusage by how it
is reserved (per task, per host, per job, shared), so that nothing is re-derived per
host try. Jobs of a trace share a handful of prepared requirements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from xce.cluster.catalog import Reservation, ResourceCatalog, ResourceKind
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
    """A primary's rusage split by reservation method (slots are not in here)."""

    per_task: Amounts = ()
    per_host: Amounts = ()
    per_job: Amounts = ()
    shared: Amounts = ()
    _buckets: dict[tuple[int, bool], Amounts] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    def for_bucket(self, nslots: int, first: bool) -> Amounts:
        """Host amounts a bucket of ``nslots`` wants; per-job amounts go on the first.

        Memoised per instance: it is asked before every host try (the prepare fan-out).
        """
        key = (nslots, first)
        out = self._buckets.get(key)
        if out is None:
            amounts = [(n, a * nslots) for n, a in self.per_task]
            amounts.extend(self.per_host)
            if first:
                amounts.extend(self.per_job)
            out = self._buckets[key] = tuple(amounts)
        return out


def wants_of(primary: PrimaryResreq, catalog: ResourceCatalog) -> Wants:
    split: dict[Reservation | None, list[tuple[str, float]]] = {}
    for name, amount in primary.rusage.amounts.items():
        d = catalog[name]
        key = None if d.kind is ResourceKind.SHARED else d.reservation
        split.setdefault(key, []).append((name, amount))
    return Wants(
        per_task=tuple(split.get(Reservation.PER_TASK, ())),
        per_host=tuple(split.get(Reservation.PER_HOST, ())),
        per_job=tuple(split.get(Reservation.PER_JOB, ())),
        shared=tuple(split.get(None, ())),
    )


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

    @property
    def is_alter(self) -> bool:
        return isinstance(self.resreq, AlterResreq)

    @property
    def tasks(self) -> int:
        return sum(p.tasks for p in self.alternatives[0])


def _prepare_primary(p: PrimaryResreq, catalog: ResourceCatalog) -> PreparedPrimary:
    select = compile_select(p.select, catalog) if p.select is not None else None
    return PreparedPrimary(p, select, wants_of(p, catalog))


def _shape(
    r: PrimaryResreq | CompoundResreq, catalog: ResourceCatalog
) -> tuple[PreparedPrimary, ...]:
    terms = r.terms if isinstance(r, CompoundResreq) else (r,)
    return tuple(_prepare_primary(t, catalog) for t in terms)


@lru_cache(maxsize=65536)
def prepare_requirement(
    text: str, catalog: ResourceCatalog, min_tasks: int | None, max_tasks: int | None
) -> PreparedRequirement:
    """Parse, check, bind tasks and prepare; memoised. Raises the resreq input errors."""
    resreq = requirement_for_job(text, catalog, min_tasks, max_tasks)
    shapes = resreq.alternatives if isinstance(resreq, AlterResreq) else (resreq,)
    return PreparedRequirement(resreq, tuple(_shape(s, catalog) for s in shapes))
