"""What a pending job waits on besides resources: dependencies and job arrays.

Both are written in Slurm's syntax in a state file (``jobs[].dependency``,
``jobs[].array``), parsed once at load into the immutable values here; errors point at
the column of the string where they are (a :class:`SyntaxProblem`, which the loader
locates in the file).

- A **dependency** (``sbatch --dependency``): ``afterok:12:13,afterany:14`` (every item
  must hold) or ``afterok:12?afterany:14`` (any one), ``after:12+10`` (ten minutes after
  12 starts), ``singleton`` (no other job of the same user and name runs).
- An **array** (``sbatch --array``): the record's remaining task indices, ``10-9999%50``,
  ``1,3,5-9:2%4``. Kept as ranges, never expanded (``1-100000`` is three numbers).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "MAX_ARRAY_INDEX",
    "ArrayIndices",
    "DepKind",
    "Dependency",
    "DependencyItem",
    "SyntaxProblem",
    "parse_array",
    "parse_dependency",
]

MAX_ARRAY_INDEX = 4_000_000_000  # Slurm's MaxArraySize is far below; a sane bound
_MAX_ITEMS = 10_000  # dependency items and array ranges per string


class SyntaxProblem(ValueError):
    """A string that does not parse; ``column`` (from 1) is where in it."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.column = column


class DepKind(StrEnum):
    """Slurm's dependency types; what each waits for in xce (docs/state-file.md)."""

    AFTER = "after"  # the job has started (plus an optional delay)
    AFTERANY = "afterany"  # the job has ended
    AFTEROK = "afterok"  # ... successfully
    AFTERNOTOK = "afternotok"  # ... unsuccessfully
    AFTERCORR = "aftercorr"  # the corresponding array task has ended successfully
    AFTERBURSTBUFFER = "afterburstbuffer"  # the job has ended and its burst buffer staged out
    SINGLETON = "singleton"  # no other job of the same user and name runs


@dataclass(frozen=True, slots=True)
class DependencyItem:
    """One ``kind:job[+minutes]``; ``job`` is None for ``singleton``."""

    kind: DepKind
    job: str | None
    delay: float = 0.0  # seconds (``after:12+10`` is 600)


@dataclass(frozen=True, slots=True)
class Dependency:
    """Items that must all hold (``,``), or any one of them (``?``)."""

    items: tuple[DependencyItem, ...]
    any_of: bool = False
    text: str = ""

    def jobs(self) -> tuple[str, ...]:
        """The job ids named, in order, once each."""
        return tuple(dict.fromkeys(i.job for i in self.items if i.job is not None))


_ID = re.compile(r"[A-Za-z0-9_.\[\]\-*]+")


def parse_dependency(text: str) -> Dependency:
    """``text`` in Slurm's ``--dependency`` syntax; :class:`SyntaxProblem` if it is not."""
    stripped = text.strip()
    if not stripped:
        raise SyntaxProblem("an empty dependency", 1)
    if "," in stripped and "?" in stripped:
        raise SyntaxProblem("a dependency is joined by ',' (all) or '?' (any), not both",
                            text.index("?") + 1)  # fmt: skip
    any_of = "?" in stripped
    items: list[DependencyItem] = []
    pos = text.index(stripped[0])
    for part in stripped.split("?" if any_of else ","):
        items.extend(_dependency_part(part, pos))
        pos += len(part) + 1
        if len(items) > _MAX_ITEMS:
            raise SyntaxProblem(f"more than {_MAX_ITEMS} dependency items", pos)
    return Dependency(tuple(items), any_of, text)


def _dependency_part(part: str, at: int) -> Iterator[DependencyItem]:
    """The items of one ``kind:id:id`` (``at``: the part's offset in the whole string)."""
    kind_text, _, rest = part.partition(":")
    try:
        kind = DepKind(kind_text.strip().lower())
    except ValueError:
        choices = ", ".join(k.value for k in DepKind)
        raise SyntaxProblem(
            f"unknown dependency type {kind_text.strip()!r}; expected one of {choices}", at + 1
        ) from None
    if kind is DepKind.SINGLETON:
        if rest:
            raise SyntaxProblem("singleton takes no job ids", at + len(kind_text) + 1)
        yield DependencyItem(kind, None)
        return
    if not rest:
        raise SyntaxProblem(f"{kind.value} needs at least one job id (e.g. {kind.value}:12)",
                            at + len(part) + 1)  # fmt: skip
    pos = at + len(kind_text) + 1
    for word in rest.split(":"):
        job, plus, minutes = word.strip().partition("+")
        if not _ID.fullmatch(job):
            raise SyntaxProblem(f"not a job id: {word!r}", pos + 1)
        delay = 0.0
        if plus:
            if kind is not DepKind.AFTER or not minutes.isdigit():
                raise SyntaxProblem(
                    "a delay (+minutes, a whole number) is only for after:", pos + len(job) + 1
                )
            delay = 60.0 * int(minutes[:12])
        yield DependencyItem(kind, job, delay)
        pos += len(word) + 1


@dataclass(frozen=True, slots=True)
class ArrayIndices:
    """A set of array task indices as sorted, disjoint ``(first, last, step)`` ranges, and
    the ``%N`` limit on how many run at once (None: no limit)."""

    ranges: tuple[tuple[int, int, int], ...]
    limit: int | None = None

    def __len__(self) -> int:
        return sum((last - first) // step + 1 for first, last, step in self.ranges)

    def __iter__(self) -> Iterator[int]:
        for first, last, step in self.ranges:
            yield from range(first, last + 1, step)

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int):
            return False
        return any(
            first <= index <= last and (index - first) % step == 0
            for first, last, step in self.ranges
        )

    @property
    def first(self) -> int:
        return self.ranges[0][0]

    def without(self, index: int) -> ArrayIndices:
        """These indices less ``index`` (which must be one of them)."""
        out: list[tuple[int, int, int]] = []
        for first, last, step in self.ranges:
            if first <= index <= last and (index - first) % step == 0:
                if index > first:
                    out.append((first, index - step, step))
                if index < last:
                    out.append((index + step, last, step))
            else:
                out.append((first, last, step))
        return ArrayIndices(tuple(_tidy(r) for r in out), self.limit)

    def text(self) -> str:
        """As Slurm writes it: ``10-20,25-31:2%4``."""
        parts = []
        for first, last, step in self.ranges:
            if first == last:
                parts.append(str(first))
            else:
                parts.append(f"{first}-{last}" + (f":{step}" if step != 1 else ""))
        limit = f"%{self.limit}" if self.limit is not None else ""
        return ",".join(parts) + limit


def _tidy(r: tuple[int, int, int]) -> tuple[int, int, int]:
    return (r[0], r[1], 1) if r[0] == r[1] else r


_RANGE = re.compile(r"\s*(\d{1,12})(?:\s*-\s*(\d{1,12})(?:\s*:\s*(\d{1,12}))?)?\s*")


def parse_array(text: str) -> ArrayIndices:
    """``text`` in Slurm's ``--array`` syntax; :class:`SyntaxProblem` if it is not (or if
    its ranges overlap: each index is one task)."""
    body, percent, limit_text = text.partition("%")
    limit: int | None = None
    if percent:
        if not limit_text.strip().isdigit() or int(limit_text.strip()[:12]) < 1:
            raise SyntaxProblem("%N needs a whole number of at least 1", len(body) + 2)
        limit = int(limit_text.strip()[:12])
    ranges: list[tuple[int, int, int, int]] = []  # first, last, step, column
    pos = 0
    for part in body.split(","):
        m = _RANGE.fullmatch(part)
        if m is None:
            raise SyntaxProblem(f"not an index range: {part.strip()!r} (e.g. 1-10:2)", pos + 1)
        first = int(m[1])
        last = int(m[2]) if m[2] is not None else first
        step = int(m[3]) if m[3] is not None else 1
        if last < first or step < 1 or last > MAX_ARRAY_INDEX:
            raise SyntaxProblem(
                f"index range {part.strip()!r}: expected first <= last <= {MAX_ARRAY_INDEX}, "
                "step >= 1",
                pos + 1,
            )
        last -= (last - first) % step  # the last index the step reaches
        column = pos + 1 + len(part) - len(part.lstrip())
        ranges.append((*_tidy((first, last, step)), column))
        pos += len(part) + 1
        if len(ranges) > _MAX_ITEMS:
            raise SyntaxProblem(f"more than {_MAX_ITEMS} index ranges", pos)
    ranges.sort()
    _check_disjoint(ranges)
    return ArrayIndices(tuple(r[:3] for r in ranges), limit)


def _check_disjoint(ranges: list[tuple[int, int, int, int]]) -> None:
    """Sorted ranges whose spans overlap share an index unless their steps interleave;
    refuse any overlap of spans (Slurm never prints one), which is simple and safe. The
    caret goes under the later range as written (each range keeps its column)."""
    for (_, a_last, _, _), (b_first, _, _, column) in itertools.pairwise(ranges):
        if b_first <= a_last:
            raise SyntaxProblem(f"index ranges overlap at {b_first}", column)
