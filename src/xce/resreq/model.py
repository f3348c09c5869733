"""The resource-requirement model: frozen objects, comparable and hashable.

A requirement is one of three shapes (design §2): a :class:`PrimaryResreq` (SIMPLE),
a :class:`CompoundResreq` (``n*{...} + m*{...}``: every term must allocate) or an
:class:`AlterResreq` (``{...} || {...}``: the first alternative that allocates wins).
Only primaries carry sections and task counts; the allocator works on primaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from xce.resreq.expr import Expr, format_number, stable_hash

__all__ = [
    "AlterResreq",
    "CompoundResreq",
    "Fingerprint",
    "OrderKey",
    "PrimaryResreq",
    "Resreq",
    "Rusage",
    "RusageGroup",
    "Span",
    "fingerprint_text",
]


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One ``order[]`` key: hosts with *more* of it first, unless ``ascending`` (``-key``)."""

    name: str
    ascending: bool = False

    def __str__(self) -> str:
        return f"-{self.name}" if self.ascending else self.name


RUSAGE_METHODS = ("task", "host", "job")
"""The reservation methods an rusage amount may name (LSF 10.1.0.9: ``mem=10/job``)."""


@dataclass(frozen=True, slots=True)
class RusageGroup:
    """Colon-separated amounts sharing one ``duration``/``decay`` (kept, not used yet).
    ``methods``: the amounts written with a reservation method (``gpu=4/job``: per job,
    ``/host``, ``/task``), which overrides the resource's declared one."""

    amounts: tuple[tuple[str, float], ...]
    duration: float | None = None
    decay: float | None = None
    methods: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        method = dict(self.methods)
        items = [
            f"{n}={format_number(v)}" + (f"/{method[n]}" if n in method else "")
            for n, v in sorted(self.amounts)
        ]
        if self.duration is not None:
            items.append(f"duration={format_number(self.duration)}")
        if self.decay is not None:
            items.append(f"decay={format_number(self.decay)}")
        return ":".join(items)


@dataclass(frozen=True, slots=True)
class Rusage:
    """The ``rusage[]`` section: comma-separated groups; each resource appears once."""

    groups: tuple[RusageGroup, ...] = ()
    hash: int = field(init=False, compare=False, repr=False)  # the spec's stable rusage_hash

    def __post_init__(self) -> None:
        object.__setattr__(self, "hash", stable_hash(str(self)) if self.groups else 0)

    @property
    def amounts(self) -> dict[str, float]:
        """Resource name -> amount wanted (per task, per host or per job: see the catalog,
        and :attr:`methods`)."""
        return {n: v for g in self.groups for n, v in g.amounts}

    @property
    def methods(self) -> dict[str, str]:
        """Resource name -> the reservation method written with its amount (``task``,
        ``host``, ``job``); a resource not here is reserved as the catalog says."""
        return {n: m for g in self.groups for n, m in g.methods}

    def __str__(self) -> str:
        return ",".join(str(g) for g in self.groups)


@dataclass(frozen=True, slots=True)
class Span:
    """``span[hosts=1]`` (one host), ``span[hosts=-1]`` (no constraint), ``span[ptile=n]``."""

    hosts: int | None = None
    ptile: int | None = None

    def __str__(self) -> str:
        if self.ptile is not None:
            return f"ptile={self.ptile}"
        return f"hosts={self.hosts}"

    @property
    def key(self) -> tuple[int, int]:
        """A compact form for fingerprints: (hosts or 0, ptile or 0); ``hosts=-1`` is no span."""
        if self.ptile is None and self.hosts == -1:
            return (0, 0)
        return (self.hosts or 0, self.ptile or 0)


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The spec's ``xce_resreq_fingerprint_t`` extended with span and same (Req 7 AC 1).

    Equal fingerprints mean "the allocator sees the same requirement"; ``__str__`` is a
    stable hex digest, the same in every process.
    """

    min_tasks: int
    max_tasks: int
    select_node_id: int
    rusage_hash: int
    span: tuple[int, int]
    same: tuple[str, ...]
    select_digest: int = field(default=0, compare=False)
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        key = (
            self.min_tasks,
            self.max_tasks,
            self.select_node_id,
            self.rusage_hash,
            self.span,
            self.same,
        )
        object.__setattr__(self, "_hash", hash(key))

    def __hash__(self) -> int:  # precomputed: cache lookups hash it once per job
        return self._hash

    def __str__(self) -> str:
        stable = (
            f"{self.min_tasks},{self.max_tasks},{self.select_digest:x},"
            f"{self.rusage_hash:x},{self.span},{':'.join(self.same)}"
        )
        return f"{stable_hash(stable):016x}"


@dataclass(frozen=True, slots=True)
class PrimaryResreq:
    """A SIMPLE requirement with its task counts: the allocator's leaf (spec Req 2 AC 1)."""

    select: Expr | None = None
    order: tuple[OrderKey, ...] = ()
    rusage: Rusage = Rusage()
    span: Span | None = None
    same: tuple[str, ...] = ()
    affinity: str | None = None
    cu: str | None = None
    min_tasks: int = 1
    max_tasks: int = 1
    fingerprint: Fingerprint = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        fp = Fingerprint(
            self.min_tasks,
            self.max_tasks,
            self.select.id if self.select is not None else 0,
            self.rusage.hash,
            self.span.key if self.span is not None else (0, 0),
            tuple(sorted(self.same)),  # same[a:b] and same[b:a] are one constraint
            self.select.digest if self.select is not None else 0,
        )
        object.__setattr__(self, "fingerprint", fp)

    kind = "simple"

    def with_tasks(self, min_tasks: int, max_tasks: int) -> PrimaryResreq:
        """This requirement for a job of ``min_tasks``..``max_tasks`` tasks."""
        if (min_tasks, max_tasks) == (self.min_tasks, self.max_tasks):
            return self
        return replace(self, min_tasks=min_tasks, max_tasks=max_tasks)

    @property
    def is_empty(self) -> bool:
        """No section at all: any host (written ``-`` inside a compound term)."""
        return self.sections() == []

    def sections(self) -> list[tuple[str, str]]:
        """``(section, body)`` pairs in canonical order, only those present."""
        out: list[tuple[str, str]] = []
        if self.select is not None:
            out.append(("select", self.select.text))
        if self.order:
            out.append(("order", ":".join(str(k) for k in self.order)))
        if self.rusage.groups:
            out.append(("rusage", str(self.rusage)))
        if self.span is not None:
            out.append(("span", str(self.span)))
        if self.same:
            out.append(("same", ":".join(self.same)))
        if self.affinity is not None:
            out.append(("affinity", self.affinity))
        if self.cu is not None:
            out.append(("cu", self.cu))
        return out

    def __str__(self) -> str:
        return " ".join(f"{s}[{body}]" for s, body in self.sections())

    @property
    def primaries(self) -> tuple[PrimaryResreq, ...]:
        return (self,)


@dataclass(frozen=True, slots=True)
class CompoundResreq:
    """``n*{...} + m*{...}``: each term a primary whose task count is its multiplier."""

    terms: tuple[PrimaryResreq, ...]

    kind = "compound"

    @property
    def total_tasks(self) -> int:
        return sum(t.max_tasks for t in self.terms)

    @property
    def primaries(self) -> tuple[PrimaryResreq, ...]:
        return self.terms

    def __str__(self) -> str:
        return " + ".join(
            f"{t.max_tasks}*{{{str(t) if not t.is_empty else '-'}}}" for t in self.terms
        )


@dataclass(frozen=True, slots=True)
class AlterResreq:
    """``{...} || {...}``: alternatives in written order; the first that allocates wins."""

    alternatives: tuple[PrimaryResreq | CompoundResreq, ...]

    kind = "alter"

    @property
    def primaries(self) -> tuple[PrimaryResreq, ...]:
        return tuple(p for a in self.alternatives for p in a.primaries)

    def __str__(self) -> str:
        return " || ".join(f"{{{a}}}" for a in self.alternatives)


Resreq = PrimaryResreq | CompoundResreq | AlterResreq


def fingerprint_text(resreq: Resreq) -> str:
    """A stable hex fingerprint of a whole requirement (a primary's own for SIMPLE)."""
    if isinstance(resreq, PrimaryResreq):
        return str(resreq.fingerprint)
    if isinstance(resreq, CompoundResreq):
        parts = ["compound", *(str(t.fingerprint) for t in resreq.terms)]
    else:
        parts = ["alter", *(fingerprint_text(a) for a in resreq.alternatives)]
    return f"{stable_hash('|'.join(parts)):016x}"
