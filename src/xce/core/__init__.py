"""The scheduling core: sessions over a cluster state, returning decisions."""

from __future__ import annotations

from xce.core.session import Session, SessionResult, SessionStats, fcfs_order, job_request

__all__ = ["Session", "SessionResult", "SessionStats", "fcfs_order", "job_request"]
