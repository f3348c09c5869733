"""Times and durations as a person reads them: pure functions, no clock.

Every time xce shows a person (tables, messages, ``--job``, reports) goes through
:func:`when` (or :func:`absolute`/:func:`relative`); every duration through
:func:`duration`. The rules, documented in docs/cli.md ("Times"):

* A time from :data:`DATE_FROM` (1e9 s, 2001-09-09) on is a Unix time: an ISO date and
  time to the second in the state's time zone, with the zone's abbreviation
  (``2026-12-01 10:00:00 CET``); UTC unless a zone is named.
* A time before it is simulated time (a replay counts from 0; a hand-written state says
  ``now: 36000``), never a date in 1970: ``t=3600 s``.
* Relative to the session's ``now`` (never the wall clock, so output is the same bytes
  on every run): ``in 30 min``, ``2 h 5 min ago``, ``now``.
* Not finite: ``+inf`` is ``never``; NaN and ``-inf`` are ``unknown``. A time past
  9999-12-30 is shown in seconds. None of them is ever shown as a date.

JSON keeps the seconds and adds :func:`iso` (``2026-12-01T10:00:00+01:00``, or null
when the time is not a date).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, tzinfo
from functools import lru_cache

__all__ = [
    "DATE_FROM",
    "absolute",
    "check_zone",
    "duration",
    "is_date",
    "iso",
    "relative",
    "when",
    "zone",
]

DATE_FROM = 1e9
"""Times from here on (2001-09-09T01:46:40Z) are dates; earlier ones simulated time. No
batch system's snapshot predates it, and no replay runs 31 years of simulated time."""

_DATE_UNTIL = 253402214399.0  # 9999-12-30T23:59:59Z: a day short of what datetime holds,
# so that no zone's offset (less than a day) carries a date past it
_UNITS = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))

Zone = str | tzinfo | None
"""A time zone: an IANA name (``Europe/Berlin``), a tzinfo, or None for UTC."""


def check_zone(name: str) -> str:
    """``name`` if it is an IANA zone name this machine knows; ValueError otherwise (a
    loader turns it into an InputError with the file and JSON path)."""
    zone(name)
    return name


def zone(tz: Zone) -> tzinfo:
    """The tzinfo for ``tz`` (None: UTC); ValueError for an unknown or malformed name."""
    if tz is None:
        return UTC
    if isinstance(tz, tzinfo):
        return tz
    return _named(tz)


@lru_cache(maxsize=64)
def _named(name: str) -> tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as err:
        # ValueError: a malformed key ("../etc/passwd", an empty name); OSError: a
        # directory or an unreadable file under the zone path
        raise ValueError(
            f"unknown time zone {name!r}: expected an IANA name such as 'UTC' or 'Europe/Berlin'"
        ) from err


def is_date(t: float | None) -> bool:
    """Whether ``t`` is shown as a date: a Unix time from 2001-09-09 to 9999-12-30, in
    any zone."""
    return t is not None and DATE_FROM <= t <= _DATE_UNTIL


def _local(t: float, tz: Zone) -> datetime | None:
    """``t`` as an aware datetime in ``tz``, truncated to the second; None when it is no
    date."""
    if not is_date(t):
        return None
    return datetime.fromtimestamp(math.floor(t), zone(tz))


def _number(x: float) -> str:
    """Seconds as written: whole numbers without ``.0``, else to the millisecond."""
    if x == int(x):
        return f"{int(x)}"
    return f"{x:.3f}".rstrip("0").rstrip(".")


def absolute(t: float | None, tz: Zone = None) -> str:
    """``2026-12-01 10:00:00 CET`` for a date, ``t=3600 s`` for simulated time,
    ``never`` (+inf), ``unknown`` (NaN, -inf), ``-`` (None)."""
    if t is None:
        return "-"
    if math.isnan(t) or t == -math.inf:
        return "unknown"
    if t == math.inf:
        return "never"
    local = _local(t, tz)
    if local is None:
        return f"t={_number(t)} s"
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


def iso(t: float | None, tz: Zone = None) -> str | None:
    """The ISO 8601 string JSON carries beside the seconds (``2026-12-01T10:00:00+01:00``,
    to the second); None when ``t`` is not a date (simulated time, not finite, None)."""
    if t is None:
        return None
    local = _local(t, tz)
    return None if local is None else local.isoformat(timespec="seconds")


def duration(seconds: float | None) -> str:
    """A duration in at most two units, the smaller rounded: ``1 h 5 min``, ``45 s``,
    ``3 d 4 h``, ``0.25 s``; ``no end`` for +inf, ``unknown`` for NaN, ``-`` for None."""
    if seconds is None:
        return "-"
    if math.isnan(seconds):
        return "unknown"
    if math.isinf(seconds):
        return "no end" if seconds > 0 else "unknown"
    if seconds < 0:
        return "-" + duration(-seconds)
    if round(seconds, 3) < 60:  # (59.9996 s would show as "60 s")
        return f"{_number(seconds) if seconds >= 1 else f'{seconds:.3g}'} s"
    i = next(i for i, (size, _) in enumerate(_UNITS) if seconds >= size or size == 60)
    (size, unit), (step, small) = _UNITS[i], _UNITS[i + 1]
    count = math.floor(seconds / step + 0.5)  # whole units of the smaller one, half up
    if i and count * step >= _UNITS[i - 1][0]:  # rounded up into the next unit
        return duration(count * step)
    big, rest = divmod(count, size // step)
    return f"{big:,} {unit}" + (f" {rest} {small}" if rest else "")


def relative(t: float, now: float) -> str:
    """``t`` seen from ``now``: ``in 30 min``, ``2 h 5 min ago``, ``now`` (within a
    millisecond); ``never`` for +inf, ``unknown`` when either is NaN or -inf."""
    if math.isnan(t) or math.isnan(now) or math.isinf(now) or t == -math.inf:
        return "unknown"
    if t == math.inf:
        return "never"
    delta = t - now
    if abs(delta) < 0.0005:
        return "now"
    return f"in {duration(delta)}" if delta > 0 else f"{duration(-delta)} ago"


def when(t: float | None, now: float | None = None, tz: Zone = None) -> str:
    """A time for a person: :func:`absolute` and, given the session's ``now``,
    :func:`relative` in brackets: ``2026-12-01 10:00:00 UTC (in 30 min)``,
    ``t=3600 s (in 1 h)``, ``never``. The one call messages and tables make."""
    shown = absolute(t, tz)
    if t is None or now is None or not math.isfinite(t):
        return shown
    return f"{shown} ({relative(t, now)})"
