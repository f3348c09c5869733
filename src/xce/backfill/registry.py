"""Backfill policies by name: the builtins and those installed packages advertise in the
entry-point group ``xce.backfill``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xce.backfill.policies import ConservativeBackfill, EasyBackfill, NoBackfill
from xce.backfill.protocol import BackfillPolicy
from xce.entry import advertised
from xce.errors import InputError, RegistryError

__all__ = ["BACKFILL_GROUP", "DEFAULT_BACKFILL", "BackfillRegistry", "default_backfills"]

BACKFILL_GROUP = "xce.backfill"
DEFAULT_BACKFILL = NoBackfill.name


class BackfillRegistry:
    """Backfill policies by name; duplicate names are refused."""

    def __init__(self) -> None:
        self._policies: dict[str, BackfillPolicy] = {}

    def register(self, policy: BackfillPolicy) -> None:
        if not isinstance(policy, BackfillPolicy):
            raise RegistryError(f"{policy!r} is not a backfill policy (see BackfillPolicy)")
        if policy.name in self._policies:
            raise RegistryError(f"a backfill policy named {policy.name!r} is already registered")
        self._policies[policy.name] = policy

    def get(self, name: str) -> BackfillPolicy:
        """The policy called ``name``; an unknown name is bad input."""
        found = self._policies.get(name)
        if found is None:
            known = ", ".join(self._policies)
            raise InputError(f"unknown backfill policy {name!r} (known: {known})")
        return found

    def names(self) -> list[str]:
        return list(self._policies)

    def __iter__(self) -> Iterator[BackfillPolicy]:
        return iter(self._policies.values())

    def load_entry_points(self, group: str = BACKFILL_GROUP) -> None:
        """Register every policy that installed packages advertise in ``group``."""
        for ep in advertised(group):
            factory: Callable[[], BackfillPolicy] = ep.load()
            self.register(factory())


def default_backfills(*, plugins: bool = True) -> BackfillRegistry:
    """The builtin policies, plus (by default) those found through entry points."""
    registry = BackfillRegistry()
    for policy in (NoBackfill(), EasyBackfill(), ConservativeBackfill()):
        registry.register(policy)
    if plugins:
        registry.load_entry_points()
    return registry
