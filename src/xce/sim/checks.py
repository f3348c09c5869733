"""What a workload must be before a replay starts: checked whole, so that a bad job is
an error at its file and line before any time is spent, never a replay stopped halfway
(issue 10) or a value read as something else without a word.

- :func:`check_workload`: each job's id is unique, its submit time and runtime finite;
- :func:`check_against`: against the cluster, each requirement's names (its catalog)
  and each QOS (its priority section's).

Errors name the job's file (``SimJob.source``) and, where it is known (JSONL), its line
(``SimJob.line``); a requirement's error draws its caret under the requirement's column.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from xce.cluster import ResourceCatalog
from xce.core import job_request
from xce.errors import InputError, clip
from xce.priority.setup import PrioritySetup
from xce.sim.model import SimJob, pending_job

__all__ = ["check_against", "check_workload", "qos_problem"]


def check_workload(jobs: Sequence[SimJob]) -> None:
    """Each job's id is unique, and its submit time and runtime are finite (a runtime at
    least 0)."""
    seen: dict[str, SimJob] = {}
    for job in jobs:
        first = seen.setdefault(job.id, job)
        if first is not job:
            also = f" (also line {first.line})" if first.line is not None else ""
            raise InputError(
                f"workload: job id {clip(job.id)!r} appears twice{also}",
                source=job.source,
                line=job.line,
            )
        if not (math.isfinite(job.submit) and math.isfinite(job.runtime) and job.runtime >= 0):
            raise InputError(
                f"workload: job {clip(job.id)!r} needs a finite submit time and runtime",
                source=job.source,
                line=job.line,
            )


def check_against(
    jobs: Sequence[SimJob], catalog: ResourceCatalog, priority: PrioritySetup | None
) -> None:
    """Each job's requirement against the cluster's ``catalog`` (each distinct one
    once), and each job's QOS against the ``priority`` section's (when it names any, as
    a state file's job's must be: else the multifactor factor would read it as 0)."""
    checked: set[tuple[str, int | None]] = set()
    for job in jobs:
        key = (job.resreq, job.tasks)
        if not job.resreq or key in checked:
            continue
        try:
            job_request(pending_job(job), catalog)
        except InputError as err:
            raise _requirement_error(job, err) from None
        except RecursionError:
            message = "the requirement nests too deeply to check"
            raise _requirement_error(job, InputError(message)) from None
        checked.add(key)
    known = priority.qos if priority is not None else {}
    for job in jobs:
        problem = qos_problem(job, known)
        if problem is not None:
            raise InputError(f"workload: {problem}", source=job.source, line=job.line)


def qos_problem(job: SimJob, known: Collection[str]) -> str | None:
    """What is wrong with ``job``'s QOS, given the cluster's QOS names ``known`` (none:
    any QOS is taken, as a state file without them takes it): None when nothing."""
    if job.qos is None or not known or job.qos in known:
        return None
    names = ", ".join(sorted(known))
    quoted = f"job {clip(job.id)!r}: unknown QOS {clip(job.qos)!r}"
    return f"{quoted} (the cluster's priority.qos has {names})"


def _requirement_error(job: SimJob, err: InputError) -> InputError:
    """``err`` about ``job``'s requirement, at the job's file and line; the requirement
    is quoted with a caret under the column (the column is into the requirement, not the
    line, so it is drawn in the message)."""
    message = f"job {clip(job.id)!r}: resreq: {err.message}"
    if err.column is not None and job.line is not None:
        shown = InputError("", column=err.column, text=job.resreq).context()
        message = f"{message}\n{shown}"
        return InputError(message, source=job.source, line=job.line)
    return InputError(message, source=job.source, column=err.column, text=job.resreq)
