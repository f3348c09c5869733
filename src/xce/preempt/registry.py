"""Preemptors by name: the builtin ``lowest_priority_first`` and those installed
packages advertise in the entry-point group ``xce.preemptors``."""

from __future__ import annotations

from xce.entry import NamedRegistry
from xce.preempt.lowest import LowestPriorityFirst
from xce.preempt.protocol import Preemptor

__all__ = ["DEFAULT_PREEMPTOR", "PREEMPTOR_GROUP", "PreemptorRegistry", "default_preemptors"]

PREEMPTOR_GROUP = "xce.preemptors"
DEFAULT_PREEMPTOR = LowestPriorityFirst.name


class PreemptorRegistry(NamedRegistry[Preemptor]):
    """Preemptors by name; duplicate names are refused."""

    what = "preemptor"
    group = PREEMPTOR_GROUP

    def accepts(self, member: object) -> bool:
        return isinstance(member, Preemptor)


def default_preemptors(*, plugins: bool = True) -> PreemptorRegistry:
    """The builtin preemptor, plus (by default) those found through entry points."""
    registry = PreemptorRegistry()
    registry.register(LowestPriorityFirst())
    if plugins:
        registry.load_entry_points()
    return registry
