"""Backfill: which waiting jobs hold a planned start, so that later jobs may start ahead
of them only where they delay none (docs/backfill.md).

The extension point is :class:`BackfillPolicy`; the builtins are ``none``, ``easy``,
``conservative`` and ``slurm`` (Slurm's sched/backfill, :mod:`xce.backfill.slurm`).
Planning itself (the profile over future time, and the views the allocator places jobs
on) is :mod:`xce.alloc.planner`.
"""

from xce.backfill.policies import ConservativeBackfill, EasyBackfill, NoBackfill
from xce.backfill.protocol import BackfillPolicy, plans_at_most
from xce.backfill.registry import (
    BACKFILL_GROUP,
    DEFAULT_BACKFILL,
    BackfillRegistry,
    default_backfills,
)
from xce.backfill.slurm import SlurmBackfill, SlurmPlanner

__all__ = [
    "BACKFILL_GROUP",
    "DEFAULT_BACKFILL",
    "BackfillPolicy",
    "BackfillRegistry",
    "ConservativeBackfill",
    "EasyBackfill",
    "NoBackfill",
    "SlurmBackfill",
    "SlurmPlanner",
    "default_backfills",
    "plans_at_most",
]
