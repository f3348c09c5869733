"""Exact resource arithmetic: amounts are kept as whole numbers of a resolution.

Every consumable (host or shared) has a *resolution*, a power of ten (default
:data:`DEFAULT_RESOLUTION`, ``slots`` 1), declared in the catalog. The books that add and
subtract amounts — what running work holds, what a session has handed out, a job
attempt's provisional debits, limit usage — count in *units* of that resolution, kept as
integer-valued float64 (exact below 2**53, and NaN still marks a host lacking the
resource). So 4000 − 2000 − 3 × 333.3 − 0.1 is exactly 1000 and no comparison needs a
tolerance. Amounts at the API (state files, claims, events, JSON) stay in the resource's
own unit; an amount off the resolution's grid, or too large for it, is refused where it
is read.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from xce.errors import clip

__all__ = [
    "DEFAULT_RESOLUTION",
    "MAX_UNITS",
    "check_resolution",
    "grid_error",
    "grid_errors",
    "to_units",
]

DEFAULT_RESOLUTION = 1e-6
"""A millionth of the resource's unit: fine enough for fractional amounts such as 333.3
or 0.25, coarse enough for 9 × 10**9 of the unit (a host's mem in MB or KB)."""

MAX_UNITS = float(2**53)
"""Units are exact integers in a float64 below this."""

_RELATIVE = 1e-15  # how far x * scale may sit from its grid point by binary rounding (< 3 ulp)


def check_resolution(value: float) -> str | None:
    """Why ``value`` is not a valid resolution (None if it is): a power of ten from
    1e-12 to 1."""
    if not (math.isfinite(value) and value > 0):
        return f"a resolution must be a positive power of ten, got {value!r}"
    digits = -math.log10(value)
    if abs(digits - round(digits)) > 1e-9 or not 0 <= round(digits) <= 12:
        return f"a resolution must be a power of ten from 1e-12 to 1, got {value!r}"
    return None


def to_units(amount: float, scale: float) -> float:
    """``amount`` in units of a resolution (``scale`` = 1 / resolution), exactly, for an
    amount on the grid (the hot path: no check; :func:`grid_error` checks)."""
    return float(round(amount * scale))


def grid_error(amount: float, scale: float, name: str) -> str | None:
    """Why ``amount`` of ``name`` cannot be counted exactly (None if it can)."""
    if isinstance(amount, float) and not math.isfinite(amount):
        return f"{clip(name)}: amount must be a finite number, got {amount!r}"
    try:
        units = float(amount) * scale
    except OverflowError:  # an int beyond any float
        units = math.inf
    if not abs(units) < MAX_UNITS:
        return (
            f"{clip(name)}: {_short(amount)} is too large to count exactly at resolution "
            f"{1 / scale:g} (at most {MAX_UNITS / scale:.4g}; declare a coarser resolution)"
        )
    exact = round(units)
    if abs(units - exact) > _RELATIVE * max(1.0, abs(exact)):
        return (
            f"{clip(name)}: {amount!r} is finer than its resolution {1 / scale:g} "
            f"(declare a finer one: resources: {{{clip(name)}: {{resolution: ...}}}})"
        )
    return None


def _short(amount: float) -> str:
    """A number as a message quotes it (never thousands of digits)."""
    try:
        return f"{float(amount):.4g}"
    except OverflowError:
        return f"a number of {len(str(abs(int(amount))))} digits"


def grid_errors(
    amounts: npt.NDArray[np.float64], scale: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Vectorised :func:`to_units` of an array (NaN stays NaN) and a mask of the entries
    that are off the grid or too large (NaN entries are fine)."""
    units = amounts * scale
    exact = np.round(units)
    with np.errstate(invalid="ignore"):
        bad = (np.abs(units - exact) > _RELATIVE * np.maximum(1.0, np.abs(exact))) | (
            np.abs(exact) >= MAX_UNITS
        )
    return exact, bad & ~np.isnan(amounts)
