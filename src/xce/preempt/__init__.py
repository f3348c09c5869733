"""Preemption: which running jobs a pending job may preempt, and which to choose.

The extension point is :class:`Preemptor` (a victim-set iterator); the builtin is
``lowest_priority_first`` (:class:`LowestPriorityFirst`). See docs/preemption.md.
"""

from xce.preempt.lowest import LowestPriorityFirst
from xce.preempt.protocol import Preemptor, VictimProbe
from xce.preempt.registry import (
    DEFAULT_PREEMPTOR,
    PREEMPTOR_GROUP,
    PreemptorRegistry,
    default_preemptors,
)
from xce.preempt.victims import Victim, preference, rank

__all__ = [
    "DEFAULT_PREEMPTOR",
    "PREEMPTOR_GROUP",
    "LowestPriorityFirst",
    "Preemptor",
    "PreemptorRegistry",
    "Victim",
    "VictimProbe",
    "default_preemptors",
    "preference",
    "rank",
]
