"""Slurm's ``priority/multifactor`` settings, by Slurm's own names (slurm.conf).

A state gives them as a mapping (``priority: {PriorityWeightAge: 1000, ...}``) or as the
slurm.conf lines themselves (``priority: {slurm_conf: "PriorityWeightAge=1000\\n..."}``);
:func:`config_from_mapping` and :func:`config_from_slurm_conf` read either into a
:class:`MultifactorConfig`. Defaults are Slurm 22.05's (``PriorityMaxAge`` and
``PriorityDecayHalfLife`` 7 days, every weight 0, ``PriorityFlags`` with Fair Tree on).
Times are Slurm time strings read as Slurm reads them (``7-00:00:00``, ``2:00:00``, or a
bare number of minutes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from xce.errors import InputError

__all__ = [
    "FLAGS",
    "MultifactorConfig",
    "config_from_mapping",
    "config_from_slurm_conf",
    "setting",
    "slurm_conf_settings",
    "slurm_seconds",
]

WEEK = 7 * 86400.0

FLAGS = frozenset(
    {
        "ACCRUE_ALWAYS",
        "CALCULATE_RUNNING",
        "DEPTH_OBLIVIOUS",
        "FAIR_TREE",
        "INCR_ONLY",
        "MAX_TRES",
        "NO_FAIR_TREE",
        "NO_NORMAL_ALL",
        "NO_NORMAL_ASSOC",
        "NO_NORMAL_PART",
        "NO_NORMAL_QOS",
        "NO_NORMAL_TRES",
        "SMALL_RELATIVE_TO_TIME",
    }
)
"""The ``PriorityFlags`` Slurm 22.05 knows."""

_SUPPORTED = frozenset({"ACCRUE_ALWAYS", "FAIR_TREE", "NO_FAIR_TREE", "SMALL_RELATIVE_TO_TIME"})

_WEIGHTS = {
    "PriorityWeightAge": "age",
    "PriorityWeightAssoc": "assoc",
    "PriorityWeightFairshare": "fairshare",
    "PriorityWeightJobSize": "jobsize",
    "PriorityWeightPartition": "partition",
    "PriorityWeightQOS": "qos",
}
_TIMES = {"PriorityMaxAge": "max_age", "PriorityDecayHalfLife": "half_life"}
_KEYS = frozenset(
    {
        *_WEIGHTS,
        *_TIMES,
        "PriorityType",
        "PriorityFlags",
        "PriorityFavorSmall",
        "FairShareDampeningFactor",
        "PriorityWeightTRES",
        "PriorityCalcPeriod",
        "PriorityUsageResetPeriod",
    }
)
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


@dataclass(frozen=True, slots=True)
class MultifactorConfig:
    """The multifactor plugin's settings (weights are Slurm's unsigned integers;
    ``max_age`` and ``half_life`` in seconds, a ``half_life`` of 0 meaning no decay)."""

    age: int = 0
    assoc: int = 0
    fairshare: int = 0
    jobsize: int = 0
    partition: int = 0
    qos: int = 0
    tres: Mapping[str, float] = field(default_factory=dict)  # TRES name -> weight
    max_age: float = WEEK
    half_life: float = WEEK
    favor_small: bool = False
    fair_tree: bool = True
    accrue_always: bool = False
    small_relative_to_time: bool = False
    dampening: int = 1

    @property
    def decay(self) -> float:
        """The per-second decay factor, ``2 ** (-1 / half-life)`` (1: no decay): usage
        halves in one half-life. Slurm uses ``1 - 0.693 / half-life``, its first-order
        approximation, which halves usage in a half-life to within 0.02 % at a half-life
        of an hour or more (docs/priority.md)."""
        return 2.0 ** (-1.0 / self.half_life) if self.half_life > 0 else 1.0


def slurm_seconds(text: str) -> float:
    """A Slurm time string as slurm.conf reads one for these settings (``days-h:m:s``,
    ``days-h``, ``h:m:s``, ``m:s``, or minutes), in seconds; ValueError if it is not one."""
    m = _TIME.match(text.strip())
    if m is None:
        raise ValueError(f"not a Slurm time: {text!r}")
    days_text, first_text, second, third = m.groups()
    days, first = int(days_text or 0), int(first_text)
    if third is not None:
        total = first * 3600 + int(second) * 60 + int(third)
    elif second is not None:
        total = first * 3600 + int(second) * 60 if days_text else first * 60 + int(second)
    else:
        total = first * 3600 if days_text else first * 60
    return float(days * 86400 + total)


def config_from_mapping(
    values: Mapping[str, object], where: str | None = "priority"
) -> MultifactorConfig:
    """The settings a state's ``priority`` section gives (keys: Slurm's names); errors
    say ``where.KEY`` (``where`` None: the message alone)."""
    kwargs: dict[str, object] = {}
    for key, value in values.items():
        try:
            kwargs.update(setting(key, value))
        except InputError as err:
            if where is None:
                raise
            raise InputError(f"{where}.{key}: {err}") from None
    return MultifactorConfig(**kwargs)  # type: ignore[arg-type]


def setting(key: str, value: object) -> dict[str, object]:
    """One setting as :class:`MultifactorConfig` fields; InputError if it is not one."""
    if key not in _KEYS:
        raise InputError(f"unknown setting (known: {', '.join(sorted(_KEYS))})")
    if key in _WEIGHTS:
        return {_WEIGHTS[key]: _weight(value)}
    if key in _TIMES:
        return {_TIMES[key]: _seconds(value)}
    if key == "PriorityType":
        if value == "priority/basic":
            raise InputError("priority/basic has no factors: use the fcfs picker instead")
        if value != "priority/multifactor":
            raise InputError(f"{value!r} (known: priority/multifactor)")
        return {}
    if key == "PriorityFlags":
        return _flags(value)
    if key == "PriorityFavorSmall":
        return {"favor_small": _yes_no(value)}
    if key == "FairShareDampeningFactor":
        return {"dampening": max(1, _weight(value))}
    if key == "PriorityWeightTRES":
        return {"tres": _tres_weights(value)}
    if key == "PriorityCalcPeriod":
        _seconds(value)  # checked; xce computes priorities at every session
    return {}  # PriorityUsageResetPeriod: read, not modelled (docs/priority.md)


def config_from_slurm_conf(lines: Iterable[str], source: str = "slurm.conf") -> MultifactorConfig:
    """The priority settings of slurm.conf lines (:func:`slurm_conf_settings`)."""
    return config_from_mapping(slurm_conf_settings(lines, source))


def slurm_conf_settings(lines: Iterable[str], source: str = "slurm.conf") -> dict[str, object]:
    """The priority settings of slurm.conf lines, checked, by Slurm's names (other
    settings are skipped; ``#`` starts a comment; keys match without regard to case, as
    Slurm's do); an error says ``SOURCE:LINE``."""
    known = {k.lower(): k for k in _KEYS}
    values: dict[str, object] = {}
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        for item in line.split():
            key, eq, value = item.partition("=")
            name = known.get(key.lower())
            if name is None:
                continue
            if not eq:
                raise InputError(f"{source}:{n}: {key} without a value")
            try:
                setting(name, value)
            except InputError as err:
                raise InputError(f"{source}:{n}: {name}: {err}") from None
            values[name] = value
    return values


def _weight(value: object) -> int:
    number = _number(value)
    if number < 0 or number != int(number) or number > 0xFFFFFFFF:
        raise InputError(f"a weight is a whole number from 0 to 4294967295, not {value!r}")
    return int(number)


def _number(value: object) -> float:
    if isinstance(value, bool):
        raise InputError(f"a number, not {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise InputError(f"a number, not {value!r}") from None
    else:
        raise InputError(f"a number, not {value!r}")
    if not math.isfinite(number):
        raise InputError(f"a finite number, not {value!r}")
    return number


def _seconds(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        minutes = _number(value)
        if minutes < 0:
            raise InputError(f"a time, not {value!r}")
        return minutes * 60.0  # a bare number is minutes, as in slurm.conf
    if not isinstance(value, str):
        raise InputError(f"a Slurm time (7-00:00:00, or minutes), not {value!r}")
    try:
        return slurm_seconds(value)
    except ValueError:
        raise InputError(f"a Slurm time (7-00:00:00, or minutes), not {value!r}") from None


def _yes_no(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.upper() in ("YES", "NO"):
        return value.upper() == "YES"
    raise InputError(f"YES or NO, not {value!r}")


def _flags(value: object) -> dict[str, object]:
    if not isinstance(value, str):
        raise InputError(f"comma-separated flags, not {value!r}")
    given = {f.strip().upper() for f in value.split(",") if f.strip()}
    unknown = given - FLAGS
    if unknown:
        raise InputError(f"unknown flag {sorted(unknown)[0]!r} (known: {', '.join(sorted(FLAGS))})")
    unsupported = given - _SUPPORTED
    if unsupported:
        raise InputError(
            f"{sorted(unsupported)[0]} is a Slurm flag xce does not model yet "
            f"(supported: {', '.join(sorted(_SUPPORTED))})"
        )
    return {
        "fair_tree": "NO_FAIR_TREE" not in given,
        "accrue_always": "ACCRUE_ALWAYS" in given,
        "small_relative_to_time": "SMALL_RELATIVE_TO_TIME" in given,
    }


def _tres_weights(value: object) -> dict[str, float]:
    if not isinstance(value, str):
        raise InputError(f"TYPE=WEIGHT,... (CPU=1000,Mem=2000), not {value!r}")
    out: dict[str, float] = {}
    for item in value.split(","):
        name, eq, weight = item.strip().partition("=")
        if not eq or not name:
            raise InputError(f"{item!r} is not TYPE=WEIGHT")
        if not re.fullmatch(r"\d+(\.\d+)?", weight):
            raise InputError(f"{item!r}: the weight is a number (no unit suffix)")
        if name.lower() not in ("cpu", "node"):
            raise InputError(f"{item!r}: xce weighs the cpu and node TRES (not {name!r} yet)")
        out[name.lower()] = float(weight)
    return out
