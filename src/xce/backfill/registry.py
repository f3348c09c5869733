"""Backfill policies by name: the builtins and those installed packages advertise in the
entry-point group ``xce.backfill``."""

from __future__ import annotations

from xce.backfill.policies import ConservativeBackfill, EasyBackfill, NoBackfill
from xce.backfill.protocol import BackfillPolicy
from xce.backfill.slurm import SlurmBackfill
from xce.entry import NamedRegistry

__all__ = ["BACKFILL_GROUP", "DEFAULT_BACKFILL", "BackfillRegistry", "default_backfills"]

BACKFILL_GROUP = "xce.backfill"
DEFAULT_BACKFILL = NoBackfill.name


class BackfillRegistry(NamedRegistry[BackfillPolicy]):
    """Backfill policies by name; duplicate names are refused."""

    what = "backfill policy"
    group = BACKFILL_GROUP
    sort_known = False  # none, easy, conservative, slurm: in the order they add planning

    def accepts(self, member: object) -> bool:
        return isinstance(member, BackfillPolicy)


def default_backfills(*, plugins: bool = True) -> BackfillRegistry:
    """The builtin policies, plus (by default) those found through entry points."""
    registry = BackfillRegistry()
    for policy in (NoBackfill(), EasyBackfill(), ConservativeBackfill(), SlurmBackfill()):
        registry.register(policy)
    if plugins:
        registry.load_entry_points()
    return registry
