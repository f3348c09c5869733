"""Cluster state: the resource catalog, the host table, and loading state files."""

from __future__ import annotations

from xce.cluster.catalog import SLOTS, Reservation, ResourceCatalog, ResourceDef, ResourceKind
from xce.cluster.estimates import estimate, estimated_end
from xce.cluster.hosts import HostStatus, HostTable
from xce.cluster.load import (
    RequirementCheck,
    load_state,
    state_from_dict,
    state_from_text,
    validate_requirements,
)
from xce.cluster.state import (
    AdvanceReservation,
    ClusterState,
    HostAlloc,
    HostAllocs,
    Limit,
    PendingJob,
    Queue,
    QueueEntry,
    RunningJob,
)

__all__ = [
    "SLOTS",
    "AdvanceReservation",
    "ClusterState",
    "HostAlloc",
    "HostAllocs",
    "HostStatus",
    "HostTable",
    "Limit",
    "PendingJob",
    "Queue",
    "QueueEntry",
    "RequirementCheck",
    "Reservation",
    "ResourceCatalog",
    "ResourceDef",
    "ResourceKind",
    "RunningJob",
    "estimate",
    "estimated_end",
    "load_state",
    "state_from_dict",
    "state_from_text",
    "validate_requirements",
]
