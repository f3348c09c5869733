"""Slurm's value encodings: numbers with flags, sentinels, sizes, GRES, constraints.

Every function here is pure and raises :class:`ValueError` on text it cannot read; the
caller locates the error (file, JSON path)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

#: "No value" sentinels of releases before data_parser v0.0.39 (NO_VAL, INFINITE and
#: their 16/64-bit forms).
SENTINELS = frozenset(
    {
        0xFFFFFFFE,  # NO_VAL
        0xFFFFFFFF,  # INFINITE
        0xFFFE,  # NO_VAL16
        0xFFFF,  # INFINITE16
        0xFFFFFFFFFFFFFFFE,  # NO_VAL64
        0xFFFFFFFFFFFFFFFF,  # INFINITE64
    }
)
#: The signed "unset"/"unlimited" some fields of old releases print (v0.0.38 partitions'
#: ``maximum_cpus_per_node: -1``, slurmdbd's TRES ``count: -2``): read as no value only
#: where a caller says the field may hold them.
NEGATIVE_SENTINELS = frozenset({-1, -2})
#: MEM_PER_CPU: Slurm stores --mem-per-cpu in the memory field with this bit set.
MEM_PER_CPU_FLAG = 0x8000000000000000
#: The largest magnitude a state file holds (xce.cluster.schema.MAX_NUMBER).
MAX_NUMBER = 10**15

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)B?$", re.IGNORECASE)
_SCALE = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


def number(value: Any, *, negative_unset: bool = False) -> int | float | None:
    """A plain number, or None for "not set", "infinite" or an old sentinel.

    Reads both the bare numbers of older releases and the ``{"set", "infinite",
    "number"}`` objects of data_parser v0.0.39 on. A ValueError for what no field means:
    text, a number that is not finite, one beyond :data:`MAX_NUMBER`, or a negative one
    (-1 and -2 are "unset" only with ``negative_unset``, for the fields that print them)."""
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    if value in SENTINELS:
        return None
    if value < 0:
        if negative_unset and value in NEGATIVE_SENTINELS:
            return None
        raise ValueError(f"{value} is negative (expected a count, size or time)")
    if value > MAX_NUMBER:
        raise ValueError(f"{value} is too large (at most {MAX_NUMBER:.0e})")
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


def constraint(text: str, tags: Mapping[str, str] | None = None) -> str:
    """A ``--constraint`` expression as an xce select: ``a&b|c`` -> ``a && b || c``;
    ``tags``: the tag a feature became where it is not its own name (a feature named as
    a resource, ``gpu`` beside GRES ``gpu``, is the tag ``feature_gpu``).

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
            name = resource_name(word)
            out.append(tags.get(name, name) if tags else name)
        else:
            out.append({"&": "&&", "|": "||"}.get(op or "", op or ""))
        pos = match.end()
    return " ".join(out).replace("( ", "(").replace(" )", ")")


#: Every node state and state flag Slurm prints (base states of ``node_states[]`` and
#: flags of ``node_state_flags[]`` in src/common/slurm_protocol_defs.c, as the
#: data_parser's NODE_STATES lists them), each with the host status it gives and why
#: (docs/import.md, "Node states"). Unavail wins over closed, closed over ok.
NODE_STATES: dict[str, tuple[str, str]] = {
    "IDLE": ("ok", "up, nothing allocated"),
    "MIXED": ("ok", "up, partly allocated"),
    "ALLOCATED": ("ok", "up, fully allocated (its jobs hold it)"),
    "DOWN": ("unavail", "down: no job runs there"),
    "FUTURE": ("unavail", "defined for later, not yet in service"),
    "UNKNOWN": ("unavail", "not heard from since slurmctld started"),
    "ERROR": ("closed", "in an error state: up, but given no new work"),
    "COMPLETING": ("ok", "jobs finishing; what they still hold is charged as allocated"),
    "PLANNED": ("ok", "idle nodes backfill earmarked for a waiting job (22.05 on)"),
    "RESERVED": ("ok", "in an advance reservation: the reservation, when imported, restricts it"),
    "MAINTENANCE": ("ok", "in a MAINT reservation: the reservation, when imported, restricts it"),
    "POWERED_DOWN": ("ok", "powered off by power saving: Slurm boots it for a job it places there"),
    "POWERING_UP": ("ok", "booting (for a job Slurm placed there)"),
    "POWER_UP": ("ok", "a manual power-up was asked"),
    "POWER_DOWN": ("closed", "a manual power-down was asked: no new work"),
    "POWERING_DOWN": ("closed", "powering off: no new work until it is powered down"),
    "POWER_DRAIN": ("closed", "to power off as soon as it is idle: no new work"),
    "DRAIN": ("closed", "drained or draining: no new work, running jobs go on"),
    "FAIL": ("closed", "failing: no new work, running jobs go on"),
    "REBOOT_REQUESTED": ("ok", "reboots when idle; takes jobs until then (ASAP adds DRAIN)"),
    "REBOOT_ISSUED": ("closed", "rebooting now: no new work until it is back"),
    "REBOOT_CANCELED": ("ok", "a requested reboot was cancelled"),
    "NOT_RESPONDING": ("unavail", "slurmd does not answer: no new work, and its jobs are lost"),
    "INVALID_REG": ("unavail", "registered with a configuration Slurm refused"),
    "BLOCKED": ("closed", "blocked by a job with an exclusive topology segment"),
    "EXTERNAL": ("unavail", "an external node without slurmd: Slurm runs no job there"),
    "CLOUD": ("ok", "a cloud node: its power flags say whether it is up"),
    "DYNAMIC_NORM": ("ok", "a dynamic node that registered normally"),
    "DYNAMIC_FUTURE": ("unavail", "a dynamic node not yet registered"),
    "RESUME": ("ok", "a request to return it to service (no state of its own)"),
    "UNDRAIN": ("ok", "a request to clear DRAIN (no state of its own)"),
}
#: Other spellings of these (node_state_string's DRAINED/DRAINING/FAILING/MAINT/…).
STATE_ALIASES = {
    "DRAINED": "DRAIN",
    "DRAINING": "DRAIN",
    "FAILING": "FAIL",
    "MAINT": "MAINTENANCE",
    "REBOOT": "REBOOT_REQUESTED",
    "INVAL": "INVALID_REG",
    "CANCEL_REBOOT": "REBOOT_CANCELED",
    "MIX": "MIXED",
    "ALLOC": "ALLOCATED",
    "COMP": "COMPLETING",
    "RESV": "RESERVED",
    "PLND": "PLANNED",
    "NO_RESPOND": "NOT_RESPONDING",
}
#: node_state_string's one-character suffixes (``idle~``, ``down*``, ``allocated+``).
STATE_SUFFIXES = {
    "*": "NOT_RESPONDING",
    "~": "POWERED_DOWN",
    "#": "POWERING_UP",
    "!": "POWER_DOWN",
    "%": "POWERING_DOWN",
    "$": "MAINTENANCE",
    "@": "REBOOT_REQUESTED",
    "^": "REBOOT_ISSUED",
    "+": "COMPLETING",
}
#: What an unknown flag gives: ok, with a warning (the known flags beside it decide;
#: ``--strict`` refuses it). A flag of a newer Slurm is usually informational.
UNKNOWN_STATUS = "ok"


def _states(status: str) -> frozenset[str]:
    return frozenset(name for name, (s, _) in NODE_STATES.items() if s == status)


UNAVAIL_STATES = _states("unavail")
CLOSED_STATES = _states("closed")
OK_STATES = _states("ok")


def node_states(value: Any, flags: Any = None) -> list[str]:
    """A node's state as upper-case flags: a list (v0.0.39 on) or a string such as
    ``mixed``, ``idle+drain``, ``down*`` or ``idle~`` (older; the suffixes of
    :data:`STATE_SUFFIXES`), plus the separate ``state_flags`` of v0.0.37/38; spellings
    of :data:`STATE_ALIASES` made the flag they name."""
    items: list[str] = []
    if isinstance(value, str):
        text = value.upper().strip()
        while text and text[-1] in STATE_SUFFIXES:
            items.append(STATE_SUFFIXES[text[-1]])
            text = text[:-1]
        items.extend(filter(None, text.split("+")))
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items.extend(v.upper() for v in value)
    else:
        raise ValueError(f"expected a node state, got {value!r}")
    if isinstance(flags, list):
        items.extend(str(v).upper() for v in flags)
    return list(dict.fromkeys(STATE_ALIASES.get(s, s) for s in items))


StateTables = tuple[frozenset[str], frozenset[str], frozenset[str]]
"""A scheduler's node states read as (unavail, closed, ok)."""


def host_status(
    states: list[str], tables: StateTables = (UNAVAIL_STATES, CLOSED_STATES, OK_STATES)
) -> tuple[str, list[str]]:
    """The xce host status of a node's state flags (Slurm's by default; another
    scheduler's ``tables``: unavail, closed, ok), and the flags it did not know (read as
    ok: :data:`UNKNOWN_STATUS`). Unavail wins over closed, closed over ok."""
    unavail, closed, ok = tables
    unknown = [s for s in states if s not in unavail | closed | ok]
    if any(s in unavail for s in states):
        return "unavail", unknown
    if any(s in closed for s in states):
        return "closed", unknown
    return "ok", unknown
