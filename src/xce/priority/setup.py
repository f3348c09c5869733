"""What a state says of job priorities (its ``priority`` section, docs/priority.md): the
multifactor settings, QOS priorities, the association tree and its usage book."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xce.priority.assoc import AssocTree, UsageBook
from xce.priority.config import MultifactorConfig

if TYPE_CHECKING:
    from xce.priority.lsf import LsfConfig, LsfUsage

__all__ = ["PrioritySetup"]


@dataclass(slots=True)
class PrioritySetup:
    """The multifactor settings, the QOS priorities, the association tree and its usage
    book (which the core charges as work ends, as the state's ``used`` books)."""

    config: MultifactorConfig
    tree: AssocTree
    usage: UsageBook
    qos: Mapping[str, int]  # QOS name -> its priority
    default_qos: str | None = None
    settings: Mapping[str, object] | None = None  # as the state gave them (Slurm's names)
    lsf: LsfConfig | None = None  # the lsf-fairshare picker's factors and groups
    lsf_usage: LsfUsage | None = None  # its decayed slot-hours per queue and user
    lsf_settings: Mapping[str, object] | None = None  # priority.lsf as given

    def copy(self) -> PrioritySetup:
        """A setup whose usage books can be charged without touching this one's."""
        return PrioritySetup(
            self.config,
            self.tree,
            self.usage.copy(),
            self.qos,
            self.default_qos,
            self.settings,
            self.lsf,
            self.lsf_usage.copy() if self.lsf_usage is not None else None,
            self.lsf_settings,
        )

    def charge(
        self, user: str, project: str, queue: str, slots: float, start: float, end: float
    ) -> None:
        """Work that held ``slots`` over ``[start, end]``, charged to every usage book."""
        self.usage.charge(self.tree.association_of(user, project), slots, start, end)
        if self.lsf_usage is not None:
            self.lsf_usage.charge(queue, user, slots, start, end)
