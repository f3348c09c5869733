"""Allocator plugins (the spec's ``xce_sched_plugin_t``): a Protocol and a registry.

The engine elects one plugin per primary (``elect``), asks it for its plan iterator
(``plans``: each allocator brings its own plan strategy, host iteration is shared), and
before *every* host try calls the prepare hook of *every* registered plugin — the
spec's prepare-allocation fan-out — so each hook must guard on the primaries it owns
(Req 4 AC 6: seqjob on ``maxTasks == 1``, parjob on ``maxTasks > 1``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

from xce.alloc.context import AllocContext
from xce.alloc.plans import CombinatorialPlanIterator, PlanIterator, TrivialPlanIterator
from xce.alloc.request import PreparedPrimary
from xce.cluster.catalog import SLOTS
from xce.entry import advertised
from xce.errors import RegistryError

__all__ = [
    "AllocatorPlugin",
    "AllocatorRegistry",
    "ParJobAllocator",
    "SeqJobAllocator",
    "default_registry",
]


@runtime_checkable
class AllocatorPlugin(Protocol):
    """Contract of an allocator plugin.

    - ``name``: unique in a registry.
    - ``elect(primary)``: True if this plugin places ``primary``. The registry asks
      plugins in registration order; the first that elects wins.
    - ``prepare(ctx)``: called before every host try for *every* primary, whichever
      plugin was elected. If ``ctx.primary`` is one this plugin owns, append the host
      want of the bucket being tried (``ctx.nslots`` slots, ``ctx.first`` for per-job
      amounts) to ``ctx.request`` — including ``("slots", n)``; otherwise do nothing.
      Must not touch anything else.
    - ``plans(primary, ctx)``: a new :class:`PlanIterator` for this primary.
    """

    name: str

    def elect(self, primary: PreparedPrimary) -> bool: ...

    def prepare(self, ctx: AllocContext) -> None: ...

    def plans(self, primary: PreparedPrimary, ctx: AllocContext) -> PlanIterator: ...


def request_host_want(ctx: AllocContext, nslots: int) -> None:
    """Append the want of a bucket of ``nslots`` on one host to ``ctx.request``."""
    assert ctx.primary is not None
    ctx.request.append((SLOTS, float(nslots)))
    ctx.request.extend(ctx.primary.wants.for_bucket(nslots, ctx.first))


class SeqJobAllocator:
    """Sequential jobs (maxTasks == 1): the trivial plan, first matching host."""

    name = "seqjob"

    def elect(self, primary: PreparedPrimary) -> bool:
        return primary.tasks == 1

    def prepare(self, ctx: AllocContext) -> None:
        if ctx.primary is not None and ctx.primary.tasks == 1:  # the Req 4 AC 6 guard
            request_host_want(ctx, 1)

    def plans(self, primary: PreparedPrimary, ctx: AllocContext) -> PlanIterator:
        return TrivialPlanIterator(ctx.token)


class ParJobAllocator:
    """Parallel jobs (maxTasks > 1): combinatorial plans over 1..N hosts, then fill."""

    name = "parjob"

    def elect(self, primary: PreparedPrimary) -> bool:
        return primary.tasks > 1

    def prepare(self, ctx: AllocContext) -> None:
        if ctx.primary is not None and ctx.primary.tasks > 1:
            request_host_want(ctx, ctx.nslots)

    def plans(self, primary: PreparedPrimary, ctx: AllocContext) -> PlanIterator:
        return CombinatorialPlanIterator(primary, ctx.token, max_buckets=ctx.books.n_ok)


class AllocatorRegistry:
    """Allocator plugins by name, in registration order; duplicate names are refused."""

    __slots__ = ("_builtin_only", "_hooks", "_plugins")

    def __init__(self, plugins: tuple[AllocatorPlugin, ...] = ()) -> None:
        self._plugins: dict[str, AllocatorPlugin] = {}
        self._hooks: tuple[Callable[[AllocContext], None], ...] = ()
        self._builtin_only = False
        for p in plugins:
            self.register(p)

    def register(self, plugin: AllocatorPlugin) -> None:
        if plugin.name in self._plugins:
            raise RegistryError(f"an allocator plugin named {plugin.name!r} is already registered")
        self._plugins[plugin.name] = plugin
        self._hooks = tuple(p.prepare for p in self._plugins.values())
        kinds = [type(p) for p in self._plugins.values()]
        self._builtin_only = len(kinds) == 2 and set(kinds) == {SeqJobAllocator, ParJobAllocator}

    def __iter__(self) -> Iterator[AllocatorPlugin]:
        return iter(self._plugins.values())

    def __getitem__(self, name: str) -> AllocatorPlugin:
        return self._plugins[name]

    def names(self) -> list[str]:
        return list(self._plugins)

    def elect(self, primary: PreparedPrimary) -> AllocatorPlugin:
        for p in self._plugins.values():
            if p.elect(primary):
                return p
        raise RegistryError(f"no allocator plugin takes a primary of {primary.tasks} task(s)")

    def prepare_hooks(self) -> tuple[Callable[[AllocContext], None], ...]:
        """Every plugin's prepare hook, in order: the fan-out."""
        return self._hooks

    def builtin_only(self) -> bool:
        """True when the plugins are exactly the two builtins, whose fan-out always
        builds the standard want of a bucket (one of them, by its guard, contributes)."""
        return self._builtin_only


ALLOCATOR_GROUP = "xce.allocators"


def default_registry(
    *, plugins: bool = True, extra: tuple[AllocatorPlugin, ...] = ()
) -> AllocatorRegistry:
    """A fresh registry: ``extra`` plugin objects first (a researcher's, not packaged),
    then allocators advertised through the entry-point group ``xce.allocators`` (an
    entry point loads a class or factory called with no arguments), so they can elect
    the primaries they target, then the two builtins, which together elect every
    primary."""
    registry = AllocatorRegistry(extra)
    if plugins:
        for ep in advertised(ALLOCATOR_GROUP):
            factory: Callable[[], AllocatorPlugin] = ep.load()
            registry.register(factory())
    registry.register(SeqJobAllocator())
    registry.register(ParJobAllocator())
    return registry
