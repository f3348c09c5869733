"""What a state says of job priorities (its ``priority`` section, docs/priority.md): the
multifactor settings, QOS priorities, the association tree and its usage book."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xce.priority.assoc import AssocTree, UsageBook
from xce.priority.config import MultifactorConfig

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

    def copy(self) -> PrioritySetup:
        """A setup whose usage book can be charged without touching this one's."""
        return PrioritySetup(
            self.config, self.tree, self.usage.copy(), self.qos, self.default_qos, self.settings
        )
