"""Preemptors by name: the builtin ``lowest_priority_first`` and those installed
packages advertise in the entry-point group ``xce.preemptors``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xce.entry import advertised
from xce.errors import InputError, RegistryError
from xce.preempt.lowest import LowestPriorityFirst
from xce.preempt.protocol import Preemptor

__all__ = ["DEFAULT_PREEMPTOR", "PREEMPTOR_GROUP", "PreemptorRegistry", "default_preemptors"]

PREEMPTOR_GROUP = "xce.preemptors"
DEFAULT_PREEMPTOR = LowestPriorityFirst.name


class PreemptorRegistry:
    """Preemptors by name; duplicate names are refused."""

    def __init__(self) -> None:
        self._preemptors: dict[str, Preemptor] = {}

    def register(self, preemptor: Preemptor) -> None:
        if not isinstance(preemptor, Preemptor):
            raise RegistryError(f"{preemptor!r} is not a preemptor (no name or victim_sets)")
        if preemptor.name in self._preemptors:
            raise RegistryError(f"a preemptor named {preemptor.name!r} is already registered")
        self._preemptors[preemptor.name] = preemptor

    def get(self, name: str) -> Preemptor:
        """The preemptor called ``name``; an unknown name is bad input."""
        found = self._preemptors.get(name)
        if found is None:
            known = ", ".join(sorted(self._preemptors))
            raise InputError(f"unknown preemptor {name!r} (known: {known})")
        return found

    def names(self) -> list[str]:
        return list(self._preemptors)

    def __iter__(self) -> Iterator[Preemptor]:
        return iter(self._preemptors.values())

    def load_entry_points(self, group: str = PREEMPTOR_GROUP) -> None:
        """Register every preemptor that installed packages advertise in ``group``."""
        for ep in advertised(group):
            factory: Callable[[], Preemptor] = ep.load()
            self.register(factory())


def default_preemptors(*, plugins: bool = True) -> PreemptorRegistry:
    """The builtin preemptor, plus (by default) those found through entry points."""
    registry = PreemptorRegistry()
    registry.register(LowestPriorityFirst())
    if plugins:
        registry.load_entry_points()
    return registry
