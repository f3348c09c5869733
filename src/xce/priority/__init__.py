"""Job priority as sites compute it (issue 28): Slurm's multifactor priority with its
association tree, usage decay, Fair Tree and classic fair share (docs/priority.md).

The ``multifactor`` picker (:mod:`xce.priority.multifactor`) is registered with the
builtin pickers; it reads the state's ``priority`` section (:class:`PrioritySetup`)."""

from xce.priority.assoc import ROOT, Association, AssocTree, UsageBook, run_usage
from xce.priority.config import MultifactorConfig, config_from_mapping, config_from_slurm_conf
from xce.priority.setup import PrioritySetup

__all__ = [
    "ROOT",
    "AssocTree",
    "Association",
    "MultifactorConfig",
    "PrioritySetup",
    "UsageBook",
    "config_from_mapping",
    "config_from_slurm_conf",
    "run_usage",
]
