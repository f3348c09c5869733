"""The scheduling core: events change the state, sessions return decisions, pickers
order the jobs, snapshots write the state back as a state file."""

from __future__ import annotations

from xce.core.core import SchedulerCore
from xce.core.events import (
    Event,
    HostAdded,
    HostChanged,
    JobFinished,
    JobKilled,
    JobPreempted,
    JobStarted,
    JobSubmitted,
    JobUpdated,
    LimitsChanged,
    QueuesChanged,
    SharedChanged,
    TimeLimitChanged,
)
from xce.core.pickers import (
    FairsharePicker,
    FcfsPicker,
    JobPicker,
    Pick,
    PickerRegistry,
    PlainCursor,
    PlainOrder,
    QueueCursor,
    StrictPicker,
    default_pickers,
    fairshare_priority,
)
from xce.core.session import (
    PickSequence,
    Session,
    SessionResult,
    SessionStats,
    fcfs_order,
    job_request,
)
from xce.core.snapshot import state_to_dict, write_state

__all__ = [
    "Event",
    "FairsharePicker",
    "FcfsPicker",
    "HostAdded",
    "HostChanged",
    "JobFinished",
    "JobKilled",
    "JobPicker",
    "JobPreempted",
    "JobStarted",
    "JobSubmitted",
    "JobUpdated",
    "LimitsChanged",
    "Pick",
    "PickSequence",
    "PickerRegistry",
    "PlainCursor",
    "PlainOrder",
    "QueueCursor",
    "QueuesChanged",
    "SchedulerCore",
    "Session",
    "SessionResult",
    "SessionStats",
    "SharedChanged",
    "StrictPicker",
    "TimeLimitChanged",
    "default_pickers",
    "fairshare_priority",
    "fcfs_order",
    "job_request",
    "state_to_dict",
    "write_state",
]
