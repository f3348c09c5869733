"""LSF's value encodings in ``-json`` output: every value is a string.

Numbers (``"4"``, ``"-"`` for none), sizes (``"5.2 Gbytes"``, ``"16G"``, ``"522 MBytes"``),
durations (``"360.0 min"``, ``"00:10:00"``), dates without a year (``"Nov 12 10:02"``,
``"Dec 28 19:56 L"``) or with one (``"2024/11/12-10:02:33"``), execution hosts
(``"4*hostA:2*hostB"``), array names (``"name[1-100]%5"``) and dependencies
(``"done(12) && ended(13)"``). Each function is pure and raises :class:`ValueError` on
text it cannot read; the caller locates the error (file, JSON path).
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo

__all__ = [
    "array_spec",
    "dependency",
    "duration",
    "exec_hosts",
    "mebibytes",
    "number",
    "percent",
    "timestamp",
]

#: What LSF prints for "no value".
NONE = frozenset({"", "-", "--", "N/A", "n/a", "UNLIMITED", "unlimited"})

_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGTPE]?)(?:B|BYTES?)?$", re.IGNORECASE)
_POWER = {"": 0, "K": -1, "M": 0, "G": 1, "T": 2, "P": 3, "E": 4}
_MINUTES = re.compile(r"^(\d+(?:\.\d+)?)\s*(?:min(?:ute)?s?)?(?:\s+of\s+\S+|/\S+)?$")
_CLOCK = re.compile(r"^(\d+):(\d{1,2})(?::(\d{1,2}))?(?:\s+of\s+\S+|/\S+)?$")
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_SHORT_DATE = re.compile(
    r"^([A-Za-z]{3})\s+(\d{1,2})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s+(\d{4}))?(?:\s+[A-Z])?$"
)
_LONG_DATE = re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})[-\s](\d{1,2}):(\d{2})(?::(\d{2}))?$")
_HOST_PIECE = re.compile(r"^(?:(\d+)\*)?([^\s*:]+)$")
_ARRAY = re.compile(r"^(?P<name>.*?)\[(?P<spec>[0-9,:\- ]+)\](?:%(?P<limit>\d+))?$")


def plain(value: float) -> int | float:
    """A whole number written as one (``16``, not ``16.0``)."""
    value = float(value)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def blank(text: str) -> bool:
    """Whether LSF printed "no value" (empty, ``-``, ``UNLIMITED``)."""
    return text.strip() in NONE


def number(text: str) -> float | None:
    """A plain number (``"4"``, ``"0.50"``), None when blank; finite only."""
    text = text.strip()
    if text in NONE:
        return None
    if not _NUMBER.match(text):
        raise ValueError(f"not a number: {text!r}")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def percent(text: str) -> float | None:
    """A utilisation (``"12%"``, ``"12.5%"``, ``"0.12"``) as a fraction 0..1, as LSF's
    select reads ``ut`` (None when blank)."""
    text = text.strip()
    if text.endswith("%"):
        value = number(text[:-1])
        return None if value is None else value / 100
    return number(text)


def mebibytes(text: str) -> float | None:
    """A size in MiB: ``"5.2 Gbytes"``, ``"522 MBytes"``, ``"16G"``, ``"900K"``, or a bare
    number (MB: LSF's default unit for limits and lshosts); None when blank. Units are
    powers of 1024 as LSF's."""
    text = text.strip()
    if text in NONE:
        return None
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    value = float(match.group(1)) * 1024.0 ** _POWER[match.group(2).upper()]
    if not math.isfinite(value):
        raise ValueError(f"not a finite size: {text!r}")
    return value


def duration(text: str) -> float | None:
    """A time limit in seconds: ``"360.0 min"``, ``"60"`` (minutes, as ``bsub -W``),
    ``"10:00"`` (hours:minutes, as ``bsub -W``), ``"00:10:00"`` (``-hms``), an ``of
    HOST`` or ``/HOST`` normalisation suffix dropped; None when blank."""
    text = text.strip()
    if text in NONE:
        return None
    match = _MINUTES.match(text)
    if match:
        return float(match.group(1)) * 60
    match = _CLOCK.match(text)
    if match:
        first, second, third = match.groups()
        if third is None:
            return int(first) * 3600.0 + int(second) * 60
        return int(first) * 3600.0 + int(second) * 60 + int(third)
    raise ValueError(f"not a duration: {text!r}")


#: A time LSF says is past may lie this far after the reference clock (clocks differ).
SKEW = 86400.0


def timestamp(
    text: str, reference: float, zone: tzinfo = UTC, *, past: bool = False
) -> float | None:
    """A date LSF printed, in Unix seconds; None when blank.

    ``Nov 12 10:02`` (optionally with seconds, a year, or a one-letter suffix such as
    ``L`` or ``E``) or ``2024/11/12-10:02:33``, read in ``zone`` (LSF prints the
    cluster's local time and says no zone). A date without a year is taken in the
    year that puts it nearest ``reference`` (the capture's time), or with ``past``
    (submit, start and finish times) in the latest year that puts it no later than a
    day after ``reference``: a capture from January reads ``Dec 28`` as last December,
    an estimate ``Jan 3`` made in December as next January."""
    text = " ".join(text.split())
    if text in NONE:
        return None
    match = _LONG_DATE.match(text)
    if match:
        y, mo, d, h, mi, s = (int(g) if g else 0 for g in match.groups())
        return _at(zone, y, mo, d, h, mi, s, text)
    match = _SHORT_DATE.match(text)
    if not match or match.group(1).lower() not in _MONTHS:
        raise ValueError(f"not an LSF date: {text!r}")
    month = _MONTHS[match.group(1).lower()]
    d, h, mi = (int(g) for g in match.group(2, 3, 4))
    s = int(match.group(5) or 0)
    if match.group(6):
        return _at(zone, int(match.group(6)), month, d, h, mi, s, text)
    year = datetime.fromtimestamp(reference, zone).year
    candidates = []
    for y in (year - 1, year, year + 1):
        try:
            candidates.append(_at(zone, y, month, d, h, mi, s, text))
        except ValueError:  # Feb 29 of a year without it
            continue
    if not candidates:
        raise ValueError(f"not an LSF date: {text!r}")
    if past:
        return max([t for t in candidates if t <= reference + SKEW] or candidates[:1])
    return min(candidates, key=lambda t: abs(t - reference))


def _at(zone: tzinfo, y: int, mo: int, d: int, h: int, mi: int, s: int, text: str) -> float:
    try:
        moment = datetime(y, mo, d, h, mi, s, tzinfo=zone)
    except ValueError:
        raise ValueError(f"not an LSF date: {text!r}") from None
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(seconds=1)


def exec_hosts(text: str) -> list[tuple[str, int]]:
    """``(host, slots)`` of an ``EXEC_HOST``: ``4*hostA:2*hostB``, ``hostA:hostA:hostB``
    (a slot each), in first-seen order with repeats summed; empty when blank."""
    out: dict[str, int] = {}
    text = text.strip()
    if text in NONE:
        return []
    for piece in text.split(":"):
        match = _HOST_PIECE.match(piece.strip())
        if not match or (match.group(1) is not None and int(match.group(1)) < 1):
            raise ValueError(f"cannot read EXEC_HOST {text!r} at {piece!r}")
        name = match.group(2)
        out[name] = out.get(name, 0) + int(match.group(1) or 1)
    return list(out.items())


def array_spec(job_name: str) -> tuple[str, str, int | None] | None:
    """``(name, indices, limit)`` of an array job's name: ``sim[1-100:2,200]%5`` ->
    ``("sim", "1-100:2,200", 5)``; ``sim[7]`` (one element) -> ``("sim", "7", None)``;
    None for a name without brackets. The index list is LSF's, which is Slurm's syntax
    (``a-b``, ``a-b:step``, commas); it is checked, never expanded."""
    match = _ARRAY.match(job_name.strip())
    if not match:
        return None
    spec = match.group("spec").replace(" ", "")
    for item in spec.split(","):
        if not re.fullmatch(r"\d+(?:-\d+(?::\d+)?)?", item):
            raise ValueError(f"cannot read the array index list of {job_name!r}")
        bounds = [int(x) for x in re.split(r"[-:]", item)]
        if len(bounds) > 1 and bounds[1] < bounds[0]:
            raise ValueError(f"array range {item!r} of {job_name!r} runs backwards")
    limit = match.group("limit")
    return match.group("name"), spec, int(limit) if limit else None


def compress(indices: Sequence[int]) -> str:
    """Sorted distinct indices as ranges: ``[1, 2, 3, 7]`` -> ``1-3,7``."""
    out: list[str] = []
    values = sorted(set(indices))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(out)


#: LSF dependency conditions the contract's (Slurm's) kinds say exactly.
_DEP_KINDS = {"done": "afterok", "ended": "afterany", "exit": "afternotok", "started": "after"}
_DEP_ITEM = re.compile(r"^(\w+)\(\s*(\d+)(?:\[(\d+)\])?\s*\)$")


def dependency(text: str) -> tuple[str | None, str | None]:
    """An LSF dependency expression in the state's (Slurm's) syntax, or why not.

    ``done(12) && ended(13)`` -> ``afterok:12,afterany:13``; ``done(12) || exit(13)`` ->
    ``afterok:12?afternotok:13``; ``done(12[3])`` (an array element) -> ``afterok:12_3``.
    Returns ``(dependency, None)``, ``(None, None)`` when blank, or ``(None, reason)``
    for what has no equivalent: ``!``, parentheses, ``&&`` mixed with ``||``, job names,
    ``exit(12, op)`` codes, ``post_done``/``post_err``, ``numdone``/``numended``,
    ``external``."""
    text = " ".join(text.split())
    if text in NONE:
        return None, None
    has_and, has_or = "&&" in text, "||" in text
    if has_and and has_or:
        return None, "&& mixed with ||"
    items = re.split(r"\s*(?:&&|\|\|)\s*", text)
    out = []
    for item in items:
        match = _DEP_ITEM.match(item.strip())
        if not match:
            return None, f"condition {item!r}"
        kind = _DEP_KINDS.get(match.group(1).lower())
        if kind is None:
            return None, f"condition {match.group(1)!r}"
        job = match.group(2) + (f"_{match.group(3)}" if match.group(3) else "")
        out.append(f"{kind}:{job}")
    return ("?" if has_or else ",").join(out), None
