"""``xce.timefmt``: times and durations a person reads (issue 25, "Times a person can
read"). One table per rule of the module docstring: dates in a zone (DST both ways),
simulated times below 1e9 s, relative phrases, durations, and values that are never
shown as dates (NaN, infinities, past the year 9999)."""

from __future__ import annotations

import math
from datetime import UTC, timedelta, timezone

import pytest

from xce.timefmt import (
    DATE_FROM,
    absolute,
    check_zone,
    duration,
    is_date,
    iso,
    relative,
    when,
    zone,
)

T0 = 1796126400.0  # 2026-12-01T12:00:00Z
INF, NAN = math.inf, math.nan


@pytest.mark.parametrize(
    ("t", "tz", "shown", "as_iso"),
    [
        (T0, None, "2026-12-01 12:00:00 UTC", "2026-12-01T12:00:00+00:00"),
        (T0, "UTC", "2026-12-01 12:00:00 UTC", "2026-12-01T12:00:00+00:00"),
        (T0, "Europe/Berlin", "2026-12-01 13:00:00 CET", "2026-12-01T13:00:00+01:00"),
        (T0, "America/New_York", "2026-12-01 07:00:00 EST", "2026-12-01T07:00:00-05:00"),
        (T0, "Asia/Kolkata", "2026-12-01 17:30:00 IST", "2026-12-01T17:30:00+05:30"),
        (T0, "Asia/Dubai", "2026-12-01 16:00:00 +04", "2026-12-01T16:00:00+04:00"),
        (T0, timezone(timedelta(hours=2)), "2026-12-01 14:00:00 UTC+02:00", None),
        # summer time: the same instant an hour later on the wall, and named so
        (1782907200.0, "Europe/Berlin", "2026-07-01 14:00:00 CEST", "2026-07-01T14:00:00+02:00"),
        # the autumn fold: 02:30 twice, told apart by the zone's name and offset
        (1792888200.0, "Europe/Berlin", "2026-10-25 02:30:00 CEST", "2026-10-25T02:30:00+02:00"),
        (1792891800.0, "Europe/Berlin", "2026-10-25 02:30:00 CET", "2026-10-25T02:30:00+01:00"),
        # the spring gap: 01:59:59 CET is followed by 03:00:00 CEST
        (1774745999.0, "Europe/Berlin", "2026-03-29 01:59:59 CET", "2026-03-29T01:59:59+01:00"),
        (1774746000.0, "Europe/Berlin", "2026-03-29 03:00:00 CEST", "2026-03-29T03:00:00+02:00"),
        # to the second, truncated (the second the instant falls in)
        (T0 + 0.999, None, "2026-12-01 12:00:00 UTC", "2026-12-01T12:00:00+00:00"),
        # the first date and the last (a day short of what datetime holds, in any zone)
        (DATE_FROM, None, "2001-09-09 01:46:40 UTC", "2001-09-09T01:46:40+00:00"),
        (253402214399.0, None, "9999-12-30 23:59:59 UTC", "9999-12-30T23:59:59+00:00"),
        (253402214399.0, "Pacific/Kiritimati", "9999-12-31 13:59:59 +14", None),
    ],
)
def test_dates_in_a_zone(t: float, tz: str | None, shown: str, as_iso: str | None) -> None:
    """A Unix time is an ISO date and time to the second in the zone (UTC when none),
    with the zone's abbreviation; JSON's ISO string carries the offset."""
    assert absolute(t, tz) == shown
    if as_iso is not None:
        assert iso(t, tz) == as_iso
    assert is_date(t)


@pytest.mark.parametrize(
    ("t", "tz", "shown"),
    [
        (0.0, None, "t=0 s"),
        (3600.0, None, "t=3600 s"),
        (3600.0, "Europe/Berlin", "t=3600 s"),  # simulated time has no zone
        (36000.5, None, "t=36000.5 s"),
        (0.1234, None, "t=0.123 s"),
        (-5.0, None, "t=-5 s"),
        (DATE_FROM - 1, None, "t=999999999 s"),
        # past 9999-12-30: seconds, never a date (and no overflow near the edge)
        (253402214400.0, None, "t=253402214400 s"),
        (253402300800.0, None, "t=253402300800 s"),
        (1e15, None, "t=1000000000000000 s"),
        (253402300799.0, "Asia/Tokyo", "t=253402300799 s"),
        # not finite: never a date
        (INF, None, "never"),
        (NAN, None, "unknown"),
        (-INF, None, "unknown"),
        (None, None, "-"),
    ],
)
def test_times_that_are_not_dates(t: float | None, tz: str | None, shown: str) -> None:
    """Before 1e9 s (2001-09-09) a time is simulated time (a replay counts from 0),
    shown as seconds; so are times past 9999 and the non-finite ones have words. None
    of them has an ISO string."""
    assert absolute(t, tz) == shown
    assert iso(t, tz) is None
    assert not is_date(t)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s"),
        (0.25, "0.25 s"),
        (1, "1 s"),
        (45, "45 s"),
        (12.5, "12.5 s"),
        (59.9996, "1 min"),  # rounds up into minutes, not "60 s"
        (60, "1 min"),
        (90, "1 min 30 s"),
        (1799, "29 min 59 s"),
        (1800, "30 min"),
        (3599.6, "1 h"),  # not "60 min"
        (3600, "1 h"),
        (3900, "1 h 5 min"),
        (3929, "1 h 5 min"),
        (3930, "1 h 6 min"),  # half up
        (7500, "2 h 5 min"),
        (86370, "1 d"),  # not "24 h"
        (90000, "1 d 1 h"),
        (3 * 86400 + 4 * 3600, "3 d 4 h"),
        (1e15, "11,574,074,074 d 2 h"),
        (-3900, "-1 h 5 min"),
        (INF, "no end"),
        (-INF, "unknown"),
        (NAN, "unknown"),
        (None, "-"),
    ],
)
def test_durations(seconds: float | None, shown: str) -> None:
    """At most two units, the smaller rounded half up, carried into the larger."""
    assert duration(seconds) == shown


@pytest.mark.parametrize(
    ("t", "now", "shown"),
    [
        (T0, T0, "now"),
        (T0 + 0.0004, T0, "now"),
        (T0 + 1800, T0, "in 30 min"),
        (T0 - 7500, T0, "2 h 5 min ago"),
        (T0 + 30, T0, "in 30 s"),
        (3600.0, 0.0, "in 1 h"),
        (INF, T0, "never"),
        (NAN, T0, "unknown"),
        (T0, NAN, "unknown"),
        (T0, INF, "unknown"),
        (-INF, T0, "unknown"),
    ],
)
def test_relative(t: float, now: float, shown: str) -> None:
    """Seen from the session's ``now`` (never the wall clock)."""
    assert relative(t, now) == shown


@pytest.mark.parametrize(
    ("t", "now", "tz", "shown"),
    [
        (T0 + 1800, T0, None, "2026-12-01 12:30:00 UTC (in 30 min)"),
        (T0 - 7500, T0, "Europe/Berlin", "2026-12-01 10:55:00 CET (2 h 5 min ago)"),
        (T0, T0, None, "2026-12-01 12:00:00 UTC (now)"),
        (T0, None, None, "2026-12-01 12:00:00 UTC"),
        (3600.0, 0.0, None, "t=3600 s (in 1 h)"),
        (43200.0, 36000.0, "Europe/Berlin", "t=43200 s (in 2 h)"),
        (INF, T0, None, "never"),
        (NAN, T0, None, "unknown"),
        (None, T0, None, "-"),
    ],
)
def test_when(t: float | None, now: float | None, tz: str | None, shown: str) -> None:
    """The one call tables and messages make: the time, then how far from now."""
    assert when(t, now, tz) == shown


@pytest.mark.parametrize(
    "name", ["Mars/Olympus", "", "../../etc/passwd", "Europe", "not a zone", "UTC\x00"]
)
def test_unknown_zones_are_value_errors(name: str) -> None:
    """A zone this machine does not know is a ValueError naming it (a loader makes it
    an InputError with the file and path), never a date in some other zone."""
    with pytest.raises(ValueError, match="unknown time zone"):
        check_zone(name)
    with pytest.raises(ValueError, match="unknown time zone"):
        absolute(T0, name)


def test_zone_accepts_names_tzinfo_and_none() -> None:
    assert zone(None) is UTC
    assert zone(UTC) is UTC
    assert check_zone("Europe/Berlin") == "Europe/Berlin"
    assert str(zone("Europe/Berlin")) == "Europe/Berlin"
