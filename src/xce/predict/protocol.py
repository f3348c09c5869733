"""What a runtime predictor sees and promises: the extension point of ``xce.predict``.

A predictor answers "how long will this job run?" for jobs that have not ended. It
learns from finished jobs, one at a time and in order of their end (:meth:`observe`), so
the same object serves a replay (it learns as the replay's jobs end) and a snapshot
(it learns from a history file first, :func:`xce.predict.learn`). It never sees the
runtime of a job it is asked about.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Asked", "FinishedJob", "RuntimePredictor"]


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """A job that ran to its end: one line of a history file (``sacct``, ``qstat -x``,
    ``bjobs -a``, an SWF trace) or a job a replay finished."""

    id: str
    user: str
    start: float
    end: float
    limit: float | None = None  # its requested time (walltime), if known
    name: str | None = None  # its job name, if known
    queue: str | None = None
    tasks: int | None = None
    submit: float | None = None

    @property
    def runtime(self) -> float:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Asked:
    """A job whose runtime is asked for. ``limit`` is the most it can run (its
    requested time under its queue's limit: what the scheduler plans with), ``math.inf``
    when nothing bounds it; ``elapsed`` is how long it has run so far (0 for a pending
    job)."""

    id: str
    user: str
    limit: float
    name: str | None = None
    queue: str | None = None
    tasks: int = 1
    elapsed: float = 0.0


@runtime_checkable
class RuntimePredictor(Protocol):
    """Predicts the total runtime of jobs that have not ended.

    Contract:

    - :meth:`predict` and :meth:`sample` return seconds ``>= job.elapsed`` and
      ``<= job.limit`` (``math.inf`` only when the limit is infinite and the predictor
      knows nothing better), and they are pure: asking twice changes nothing, and only
      :meth:`observe` changes what the predictor knows.
    - :meth:`predict` is the point prediction, the same on every call until the next
      :meth:`observe`; :meth:`sample` draws from the predictor's spread with ``rng`` (the
      only randomness it uses), so the same ``rng`` state gives the same draw. A
      predictor without a spread returns its point prediction.
    - :meth:`observe` is called once per finished job, in order of end time; a job's own
      runtime is never observed before it is asked about in that role.
    - :meth:`fresh` is a new predictor of the same kind and settings that has learned
      nothing; ``option`` is the text after ``:`` in ``--predictor NAME:OPTION`` (an
      :class:`~xce.errors.InputError` when the predictor takes none or it is malformed).
    """

    name: str

    def fresh(self, option: str | None = None) -> RuntimePredictor: ...

    def observe(self, job: FinishedJob) -> None: ...

    def predict(self, job: Asked) -> float: ...

    def sample(self, job: Asked, rng: np.random.Generator) -> float: ...


def bounded(value: float, job: Asked) -> float:
    """``value`` kept within ``[job.elapsed, job.limit]`` (a NaN is the limit)."""
    if math.isnan(value):
        value = job.limit
    return min(max(value, job.elapsed), job.limit)
