"""Finished jobs from a history file, for a predictor to learn from.

The format is told by the file: ``.swf`` / ``.swf.gz`` is a Standard Workload Format
trace (start = submit + recorded wait, end = start + run time, limit = requested time;
users ``uN`` as the simulator names them; times shifted by the ``UnixStartTime``
header when it has one, so they compare with a real state's dates); anything else is
JSON, told by its shape (:mod:`xce.predict.history_json`: ``sacct --json``, ``qstat -x -f -F json``,
``bjobs -a -json``). Bad input is an :class:`~xce.errors.InputError` at the file and
line or JSON path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from xce.inputs import read_input_text
from xce.predict.protocol import FinishedJob

__all__ = ["History", "read_history"]


@dataclass(frozen=True, slots=True)
class History:
    """The finished jobs of one history file, in order of end time."""

    source: str
    jobs: tuple[FinishedJob, ...]
    format: str  # "swf" or "json"

    def before(self, now: float) -> History:
        """Only the jobs that had ended by ``now`` (a predictor learns no future)."""
        return History(self.source, tuple(j for j in self.jobs if j.end <= now), self.format)


def read_history(path: str | os.PathLike[str], *, timezone: str | None = None) -> History:
    """The history in ``path``; ``timezone`` is the zone of local times in the file
    (PBS and LSF print local times; default UTC)."""
    source = os.fspath(path)
    if source.endswith((".swf", ".swf.gz")):
        return History(source, _by_end(_swf(source)), "swf")
    from xce.predict.history_json import read_json_history

    text = read_input_text(source, what="history file")
    jobs = read_json_history(source, text, timezone=timezone)
    return History(source, _by_end(jobs), "json")


def _by_end(jobs: list[FinishedJob]) -> tuple[FinishedJob, ...]:
    return tuple(sorted(jobs, key=lambda j: j.end))


def _swf(source: str) -> list[FinishedJob]:
    from xce.sim.swf import read_swf

    trace = read_swf(source)
    offset = float(trace.header_int("UnixStartTime") or 0)  # to the dates of a real state
    out = []
    for job, wait in zip(trace.jobs, trace.waits, strict=True):
        start = offset + job.submit + max(wait, 0.0)
        out.append(
            FinishedJob(
                job.id,
                job.user,
                start,
                start + job.runtime,
                limit=job.requested_time,
                queue=job.queue,
                tasks=job.tasks,
                submit=offset + job.submit,
            )
        )
    return out
