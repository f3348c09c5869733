"""Extension points by name: the registry the pickers, preemptors and backfill policies
share, and the entry points of installed packages, scanned once per ``sys.path``.

Every registry finds its third-party members through an entry-point group (an entry
point loads a class or factory called with no arguments). Scanning the installed
distributions costs ~10 ms; a driver that makes many sessions (tests, sweeps) would pay
it for each. The scan is kept for as long as ``sys.path`` is the same, so a package made
importable later (a plugin installed into a new path) is still found.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, Protocol, TypeVar

from xce.errors import InputError, RegistryError

__all__ = ["Named", "NamedRegistry", "advertised"]


class Named(Protocol):
    name: str


T = TypeVar("T", bound=Named)


def advertised(group: str) -> tuple[EntryPoint, ...]:
    """The entry points installed packages advertise in ``group``."""
    return _scan(tuple(sys.path), group)


@lru_cache(maxsize=64)
def _scan(path: tuple[str, ...], group: str) -> tuple[EntryPoint, ...]:
    del path  # the cache key: a new search path means a new scan
    return tuple(entry_points(group=group))


class NamedRegistry(Generic[T]):
    """Members by name, in registration order; duplicate names are refused, an unknown
    name is bad input. Subclasses say what a member is (``what``, for messages), the
    entry-point ``group`` they load, and how to tell a member (``accepts``)."""

    what = "member"
    group = ""
    sort_known = True  # list known names sorted in messages (else as registered)

    def __init__(self) -> None:
        self._members: dict[str, T] = {}

    def accepts(self, member: object) -> bool:
        """Whether ``member`` is one (default: it has a name)."""
        return isinstance(getattr(member, "name", None), str)

    def register(self, member: T) -> None:
        if not self.accepts(member):
            raise RegistryError(f"{member!r} is not a {self.what} (see its protocol)")
        if member.name in self._members:
            raise RegistryError(f"a {self.what} named {member.name!r} is already registered")
        self._members[member.name] = member

    def get(self, name: str) -> T:
        """The member called ``name``; an unknown name is bad input."""
        found = self._members.get(name)
        if found is None:
            names = sorted(self._members) if self.sort_known else list(self._members)
            raise InputError(f"unknown {self.what} {name!r} (known: {', '.join(names)})")
        return found

    def names(self) -> list[str]:
        return list(self._members)

    def __iter__(self) -> Iterator[T]:
        return iter(self._members.values())

    def load_entry_points(self, group: str | None = None) -> None:
        """Register every member installed packages advertise in ``group`` (default:
        this registry's)."""
        for ep in advertised(group or self.group):
            try:
                factory: Callable[[], T] = ep.load()
                self.register(factory())
            except Exception as err:  # a package's plugin, not xce, is at fault: say which
                dist = getattr(ep.dist, "name", None)
                origin = f" of package {dist}" if dist else ""
                raise InputError(
                    f"the {self.what} plugin {ep.name} = {ep.value} (entry point group "
                    f"{ep.group}{origin}) cannot be used: {type(err).__name__}: {err}"
                ) from err
