"""xce: a batch-job scheduler core for HPC clusters.

The public API: plugins and embedders import from here (or from the subpackages'
``__all__``), never from private modules.
"""

from __future__ import annotations

from xce.alloc import (
    AllocatorPlugin,
    AllocatorRegistry,
    AllocMode,
    AllocOptions,
    CancelToken,
    Decision,
    Dispatched,
    Pending,
    PendReason,
    PlanIterator,
    default_registry,
)
from xce.cluster import ClusterState, load_state, state_from_dict
from xce.core import (
    JobPicker,
    PickerRegistry,
    QueueCursor,
    SchedulerCore,
    Session,
    default_pickers,
    write_state,
)
from xce.errors import Cancelled, InputError, InternalError, XceError
from xce.resreq import parse, requirement_for_job
from xce.sim.engine import SimOptions, Simulation

__version__ = "0.1.0"

__all__ = [
    "AllocMode",
    "AllocOptions",
    "AllocatorPlugin",
    "AllocatorRegistry",
    "CancelToken",
    "Cancelled",
    "ClusterState",
    "Decision",
    "Dispatched",
    "InputError",
    "InternalError",
    "JobPicker",
    "PendReason",
    "Pending",
    "PickerRegistry",
    "PlanIterator",
    "QueueCursor",
    "SchedulerCore",
    "Session",
    "SimOptions",
    "Simulation",
    "XceError",
    "__version__",
    "default_pickers",
    "default_registry",
    "load_state",
    "parse",
    "requirement_for_job",
    "state_from_dict",
    "write_state",
]
