"""Slurm host lists: ``cn[052-067,070],gpu1`` -> names."""

from __future__ import annotations

import re

_RANGE = re.compile(r"^([^\[\],]*)\[([^\]]+)\]([^\[\],]*)$")
MAX_HOSTS = 1_000_000


def expand(text: str) -> list[str]:
    """Expand one Slurm host list (one bracket group per name, as squeue prints)."""
    names: list[str] = []
    for part in _split(text):
        match = _RANGE.match(part)
        if not match:
            names.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        for item in ranges.split(","):
            lo, _, hi = item.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise ValueError(f"cannot read host list {text!r}")
            first, last = int(lo), int(hi or lo)
            if last - first > MAX_HOSTS:
                raise ValueError(f"host list {text!r} names too many hosts")
            names.extend(f"{prefix}{n:0{len(lo)}d}{suffix}" for n in range(first, last + 1))
    return names


def _split(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]
