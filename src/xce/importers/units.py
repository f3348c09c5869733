"""Slurm's value encodings: numbers with flags, sentinels, sizes, GRES, constraints.

Every function here is pure and raises :class:`ValueError` on text it cannot read; the
caller locates the error (file, JSON path)."""

from __future__ import annotations

import re
from typing import Any

#: "No value" sentinels of releases before data_parser v0.0.39 (NO_VAL, INFINITE and
#: their 16/64-bit forms, and the -2 some fields print for "unknown").
SENTINELS = frozenset(
    {
        0xFFFFFFFE,  # NO_VAL
        0xFFFFFFFF,  # INFINITE
        0xFFFE,  # NO_VAL16
        0xFFFF,  # INFINITE16
        0xFFFFFFFFFFFFFFFE,  # NO_VAL64
        0xFFFFFFFFFFFFFFFF,  # INFINITE64
        -2,
        -1,
    }
)
#: MEM_PER_CPU: Slurm stores --mem-per-cpu in the memory field with this bit set.
MEM_PER_CPU_FLAG = 0x8000000000000000

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)B?$", re.IGNORECASE)
_SCALE = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


def number(value: Any) -> int | float | None:
    """A plain number, or None for "not set", "infinite" or an old sentinel.

    Reads both the bare numbers of older releases and the ``{"set", "infinite",
    "number"}`` objects of data_parser v0.0.39 on."""
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    if value in SENTINELS or value < 0:
        return None
    return value


def infinite(value: Any) -> bool:
    """Whether a value says "no limit" (a flagged infinite, or INFINITE of old)."""
    if isinstance(value, dict):
        return bool(value.get("infinite", False))
    return value in (0xFFFFFFFF, 0xFFFF, 0xFFFFFFFFFFFFFFFF)


def mebibytes(text: str) -> float:
    """A TRES/size string (``128G``, ``500000M``, ``62.50G``, ``16``) in MiB."""
    match = _SIZE.match(text.strip())
    if not match:
        raise ValueError(f"not a size: {text!r}")
    return float(match.group(1)) * _SCALE[match.group(2).upper()]


def tres(text: str) -> dict[str, str]:
    """``cpu=64,mem=128G,gres/gpu=2`` as a dict of name to value text."""
    out: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"not a TRES item: {item!r}")
        out[name] = value
    return out


_GRES_SUFFIX = re.compile(r"\((?:S|IDX):[^)]*\)")


def resource_name(text: str) -> str:
    """A GRES type or feature made an xce identifier: ``1g.5gb`` -> ``1g_5gb``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if name[:1].isalpha() or name[:1] == "_" else f"_{name}"


def gres(text: str) -> dict[str, int]:
    """A node's or job's GRES string as consumable amounts.

    ``gpu:h100:2(S:0-1),gpu:1g.5gb:7`` -> ``{gpu: 9, gpu_h100: 2, gpu_1g_5gb: 7}``:
    each name counts its total, and each typed entry also as ``NAME_TYPE``. The
    ``(S:…)`` socket and ``(IDX:…)`` index suffixes are dropped; ``N/A`` and ``(null)``
    are empty; ``gres/`` and ``gres:`` prefixes (TRES form) are accepted."""
    out: dict[str, int] = {}
    text = _GRES_SUFFIX.sub("", text.strip())
    if text in ("", "N/A", "(null)"):
        return out
    for item in filter(None, (part.strip() for part in text.split(","))):
        item = item.removeprefix("gres/").removeprefix("gres:")
        parts = item.split(":")
        count = 1
        if len(parts) > 1 and parts[-1].isdigit():
            count = int(parts.pop())
        elif "=" in parts[-1]:  # TRES form gres/gpu:h100=2
            parts[-1], _, amount = parts[-1].partition("=")
            count = int(amount)
        if not parts[0] or len(parts) > 2:
            raise ValueError(f"not a GRES item: {item!r}")
        name = resource_name(parts[0])
        out[name] = out.get(name, 0) + count
        if len(parts) == 2:
            typed = resource_name(f"{parts[0]}_{parts[1]}")
            out[typed] = out.get(typed, 0) + count
    return out


_CONSTRAINT_TOKEN = re.compile(r"\s*(?:([A-Za-z0-9_.\-+/]+)|(&|\||\(|\)|\[|\]))")


def constraint(text: str) -> str:
    """A ``--constraint`` expression as an xce select: ``a&b|c`` -> ``a && b || c``.

    Slurm's ``&`` binds tighter than ``|`` as xce's ``&&`` does over ``||``. Feature
    counts (``a*2``) and the bracketed "matching OR" (``[a|b]``: all nodes the same one)
    have no select equivalent: a ValueError says so."""
    out: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _CONSTRAINT_TOKEN.match(text, pos)
        if not match:
            raise ValueError(f"cannot read constraint {text!r} at {text[pos:]!r}")
        word, op = match.groups()
        if op in ("[", "]"):
            raise ValueError(f"constraint {text!r}: matching OR [...] has no select equivalent")
        if word is not None:
            out.append(resource_name(word))
        else:
            out.append({"&": "&&", "|": "||"}.get(op or "", op or ""))
        pos = match.end()
    return " ".join(out).replace("( ", "(").replace(" )", ")")


#: Node state flags (upper case, as v0.0.39+ print them) by the host status they mean.
UNAVAIL_STATES = frozenset(
    {"DOWN", "NOT_RESPONDING", "POWERED_DOWN", "POWER_DOWN", "FUTURE", "UNKNOWN", "POWERING_UP"}
)
CLOSED_STATES = frozenset(
    {
        "DRAIN",
        "DRAINING",
        "DRAINED",
        "FAIL",
        "FAILING",
        "MAINTENANCE",
        "MAINT",
        "RESERVED",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "POWERING_DOWN",
        "PLANNED",
    }
)
OK_STATES = frozenset({"IDLE", "MIXED", "ALLOCATED", "COMPLETING", "DYNAMIC_NORM", "CLOUD"})


def node_states(value: Any, flags: Any = None) -> list[str]:
    """A node's state as upper-case flags: a list (v0.0.39 on) or a string such as
    ``mixed``, ``idle+drain`` or ``down*`` (older; ``*`` is NOT_RESPONDING), plus the
    separate ``state_flags`` of v0.0.37/38."""
    items: list[str] = []
    if isinstance(value, str):
        text = value.upper()
        if text.endswith("*"):
            items.append("NOT_RESPONDING")
            text = text.rstrip("*")
        items.extend(filter(None, text.split("+")))
    elif isinstance(value, list):
        items.extend(str(v).upper() for v in value)
    else:
        raise ValueError(f"expected a node state, got {value!r}")
    if isinstance(flags, list):
        items.extend(str(v).upper() for v in flags)
    return items


StateTables = tuple[frozenset[str], frozenset[str], frozenset[str]]
"""A scheduler's node states read as (unavail, closed, ok)."""


def host_status(
    states: list[str], tables: StateTables = (UNAVAIL_STATES, CLOSED_STATES, OK_STATES)
) -> tuple[str, list[str]]:
    """The xce host status of a node's state flags (Slurm's by default; another
    scheduler's ``tables``: unavail, closed, ok), and the flags it did not know (read as
    ok). Unavail wins over closed, closed over ok."""
    unavail, closed, ok = tables
    unknown = [s for s in states if s not in unavail | closed | ok]
    if any(s in unavail for s in states):
        return "unavail", unknown
    if any(s in closed for s in states):
        return "closed", unknown
    return "ok", unknown
