"""The allocation engine: plan and host iterators, allocator plugins, the unsatisfiable
cache, and the per-job composition of spec Requirements 2, 3, 4, 7 and 9."""

from __future__ import annotations

from xce.alloc.books import SessionBooks
from xce.alloc.cache import CacheKey, UnsatCache
from xce.alloc.cancel import CancelToken
from xce.alloc.context import AllocContext, AllocStats
from xce.alloc.engine import Allocator, AllocOptions, JobRequest
from xce.alloc.hosts import HostFinder, HostIterator
from xce.alloc.limits import LimitBooks
from xce.alloc.outcome import (
    AllocMode,
    Claim,
    ClaimColumns,
    ClaimRun,
    Decision,
    Dispatched,
    JobAllocation,
    PendInfo,
    Pending,
    PendReason,
    PlannedStart,
    Preemption,
)
from xce.alloc.plans import (
    CombinatorialPlanIterator,
    Plan,
    PlanIterator,
    TrivialPlanIterator,
    balanced,
)
from xce.alloc.plugins import (
    AllocatorPlugin,
    AllocatorRegistry,
    ParJobAllocator,
    SeqJobAllocator,
    default_registry,
)
from xce.alloc.request import PreparedPrimary, PreparedRequirement, Wants, prepare_requirement

__all__ = [
    "AllocContext",
    "AllocMode",
    "AllocOptions",
    "AllocStats",
    "Allocator",
    "AllocatorPlugin",
    "AllocatorRegistry",
    "CacheKey",
    "CancelToken",
    "Claim",
    "ClaimColumns",
    "ClaimRun",
    "CombinatorialPlanIterator",
    "Decision",
    "Dispatched",
    "HostFinder",
    "HostIterator",
    "JobAllocation",
    "JobRequest",
    "LimitBooks",
    "ParJobAllocator",
    "PendInfo",
    "PendReason",
    "Pending",
    "Plan",
    "PlanIterator",
    "PlannedStart",
    "Preemption",
    "PreparedPrimary",
    "PreparedRequirement",
    "SeqJobAllocator",
    "SessionBooks",
    "TrivialPlanIterator",
    "UnsatCache",
    "Wants",
    "balanced",
    "default_registry",
    "prepare_requirement",
]
