"""xce: a batch-job scheduler core for HPC clusters.

The public API: plugins and embedders import from here (or from the subpackages'
``__all__``), never from private modules.

The names are loaded on first use (PEP 562 ``__getattr__``), so that importing a part of
xce, such as the command line, does not load numpy and the whole engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

    __version__: str

_HOMES = {
    "xce.alloc": (
        "AllocMode",
        "AllocOptions",
        "AllocatorPlugin",
        "AllocatorRegistry",
        "CancelToken",
        "Decision",
        "Dispatched",
        "PendReason",
        "Pending",
        "PlanIterator",
        "default_registry",
    ),
    "xce.cluster": ("ClusterState", "load_state", "state_from_dict"),
    "xce.core": (
        "JobPicker",
        "PickerRegistry",
        "QueueCursor",
        "SchedulerCore",
        "Session",
        "default_pickers",
        "write_state",
    ),
    "xce.errors": ("Cancelled", "InputError", "InternalError", "XceError"),
    "xce.resreq": ("parse", "requirement_for_job"),
    "xce.sim.engine": ("SimOptions", "Simulation"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then cached here)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: Any = version("xce")
        except PackageNotFoundError:  # a source tree that is not installed
            value = "unknown"
    elif name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
    else:
        raise AttributeError(f"module 'xce' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
